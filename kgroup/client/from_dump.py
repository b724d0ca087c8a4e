"""`describe --from-dump`: the group view rebuilt offline by replaying `__consumer_offsets`
(and the Connect draft's `__worker_offsets`, whose worker groups get ``kgroup.views.connect``'s view).

The embedded coordinator (GroupCoordinator.from_records) gives the state a new coordinator would
load. The log also knows what DescribeGroups never says: each classic member's session timeout, when
the log last saw each member and, replayed up to a time, whether a later record shows its session
ended (`dump_members`: heartbeats are never logged, so not when a live member would expire), and the
history of every group.instance.id — a static member that keeps changing member id or host is
restarting in a loop or running twice.

This module reads the dump's files (``kgroup.decode.inputs``) and lists its groups; the replay and the
views are ``dump_replay``'s, which `decode-offsets --view state` shares.
"""

from __future__ import annotations

from kgroup.views.dump_replay import (  # noqa: F401  (re-exported: the replay and its views)
    DumpReplay, InstanceHistory, ReplayBuilder, consumer_group_view, group_views)
from kgroup.errors import KgroupError


def replay_dump(paths, report=None, until_time=None) -> DumpReplay:
    """Read segments/partition dirs/log dirs and replay them (records up to `until_time` epoch ms,
    when given: the groups as they were then); problems are reported, not fatal. When nothing could
    be read they are not reported one by one but named in the one error that says so."""
    from kgroup.decode.decoder import ProblemLog
    from kgroup.decode.inputs import in_log_order, iter_input, resolve_inputs

    problems = ProblemLog()     # reported at the end: a dump that yields nothing is one line
    # each path's family from its topic name; each partition's segments in log order
    inputs = in_log_order(resolve_inputs(list(paths), None, problems))
    if not inputs:
        raise KgroupError("no __consumer_offsets segment found in " + ", ".join(map(str, paths))
                          + _why(problems))
    builder = ReplayBuilder()
    for inp in inputs:
        share_state = inp.family == "share-state"  # share-partition state (types 0-1 are not offset commits)
        connect = inp.family == "connect"
        inp.family = inp.family or "consumer"
        for batch, rows in iter_input(inp, problems):
            if not batch.crc_valid:   # reported; corrupt bytes never change the state (decode --view state)
                continue
            if share_state:           # a share group's offsets, replayed in full (the topic is not compacted)
                builder.add_share_state([row for row in rows if until_time is None or row.timestamp <= until_time])
                continue
            if until_time is not None:  # replayed up to the cut-off; what comes after can only end sessions
                if not connect:
                    builder.times.later([row for row in rows if row.timestamp > until_time])
                rows = [row for row in rows if row.timestamp <= until_time]
            builder.add(rows, connect)
    if builder.empty:
        where = ", ".join(map(str, paths))
        if until_time is not None and problems.records_ok:     # records were read, all of them later
            from kgroup.writers import iso_ms

            raise KgroupError(f"no record of {where} was written at or before --until-time "
                              f"{iso_ms(until_time) or until_time} (the dump starts later)" + _why(problems))
        raise KgroupError("no records could be read from " + where + _why(problems))
    for problem in problems.problems if report is not None else ():
        report(problem)
    replay = builder.replay(log_dir_topic_names(paths))
    replay.problems = problems.problems
    return replay


def log_dir_topic_names(paths) -> dict:
    """topic id -> name, from the ``partition.metadata`` file (``topic_id: <base64url>``) Kafka and
    serve keep in every partition directory of the log dirs the dump comes from: since Kafka 4.1 no
    consumer-group record names the topic ids of an assignment."""
    import base64
    import pathlib
    import uuid

    log_dirs = set()
    for raw in paths:
        path = pathlib.Path(raw)
        if path.is_file():
            path = path.parent
        if path.is_dir():
            log_dirs.add(path)          # a log dir itself
            log_dirs.add(path.parent)   # or one of its partition directories
    names = {}
    for log_dir in log_dirs:
        try:
            candidates = list(log_dir.glob("*/partition.metadata"))[:100_000]
        except OSError:
            continue
        for meta in candidates:
            topic = meta.parent.name.rpartition("-")[0]
            try:
                for line in meta.read_text().splitlines():
                    key, _, value = line.partition(":")
                    if key.strip() == "topic_id" and topic:
                        text = value.strip()
                        names[uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))] = topic
            except (OSError, ValueError, UnicodeDecodeError):
                continue
    return names


def _why(problems, shown: int = 2) -> str:
    """The problems behind an empty dump, for its one error line: ` (A; B; and 3 more)`."""
    found = [str(p) for p in problems.problems]
    if not found:
        return ""
    more = f"; and {len(found) - shown} more" if len(found) > shown else ""
    return f" ({'; '.join(found[:shown])}{more})"


def listed_groups(replay: DumpReplay, states=(), types=()) -> list:
    """`list --from-dump`: every replayed group as ListGroups would list it (a group known only by
    its committed offsets is an Empty classic group, as Kafka's coordinator loads it), filtered by
    state and type (case-insensitive), sorted by name."""
    from kgroup.client.groups import ListedGroup, filter_listed

    coord = replay.coordinator
    rows = {gid: (protocol_type, state, group_type)
            for gid, protocol_type, state, group_type in (g.listed() for g in coord.all_groups())}
    for gid, group in (replay.share_streams.groups.items() if replay.share_streams is not None else ()):
        rows[gid] = (group.group_type, group.state, group.group_type)   # ListGroups v5: protocol type = type
    for gid in (coord.offsets.groups() if coord.offsets is not None else ()):
        rows.setdefault(gid, ("", "Empty", "classic"))
    return filter_listed([ListedGroup(gid, state, protocol_type, group_type, None)
                          for gid, (protocol_type, state, group_type) in sorted(rows.items())], states, types)


