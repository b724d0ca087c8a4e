"""`kgroup describe`: members (static/dynamic), assignments and lag, live or from a dump."""

import click

from kgroup.commands.options import (CONTEXT_SETTINGS, DumpWarnings, cluster_options, fail, output_option,
                                     refuse_cluster_with_dump, until_time_ms)

MEMBER_COLUMNS = ["group", "state", "protocol_type", "protocol", "coordinator", "member_id",
                  "group_instance_id", "static", "client_id", "client_host", "assignment"]
OFFSET_COLUMNS = ["group", "topic", "partition", "committed", "log_end", "lag", "member_id", "group_instance_id"]


@click.command("describe", context_settings=CONTEXT_SETTINGS)
@click.argument("groups", nargs=-1, metavar="GROUP...")
@click.option("--all-groups", is_flag=True, help="Describe every group the cluster (or the dump) knows.")
@click.option("--offsets/--no-offsets", "with_offsets", default=True,
              help="Committed offset, log end and lag per partition, and lag per instance id: shown by "
                   "default, as Kafka's kafka-consumer-groups shows a group (--offsets says so explicitly). "
                   "--no-offsets skips them and their OffsetFetch and ListOffsets requests; with -o csv "
                   "it gives one row per member instead of one per partition.")
@click.option("--static-only", is_flag=True, help="Only static members (group.instance.id set).")
@click.option("--dynamic-only", is_flag=True, help="Only dynamic members.")
@click.option("--from-dump", "dumps", multiple=True, type=click.Path(exists=False), metavar="PATH",
              help="Describe offline from __consumer_offsets (or __worker_offsets: Connect worker groups; "
                   "__share_group_state: share groups' start offsets) segment files, partition directories or "
                   "a log directory (repeatable) instead of a live cluster.")
@click.option("--until-time", default=None, metavar="TIME", callback=until_time_ms,
              help="With --from-dump: replay only records up to TIME (epoch ms or ISO 8601, UTC by default): "
                   "the groups as they were then; SESSION-ENDED shows when a later record in the dump "
                   "leaves a member out.")
@cluster_options
@output_option(["table", "json", "csv"])
def describe(groups, all_groups, with_offsets, static_only, dynamic_only, dumps, until_time, cluster, output):
    """Describe groups (classic, KIP-848 consumer, KIP-932 share and KIP-1071 streams groups): coordinator,
    state, members, assignments.

    Consumer groups (KIP-848) are described with ConsumerGroupDescribe and show their epochs,
    each member's epoch and target assignment, and who is still reconciling; classic groups with
    DescribeGroups. Subscriptions and assignments are decoded for the `consumer` protocol type only; other
    protocols show their metadata sizes. With --from-dump the view is rebuilt by replaying the
    log into the embedded coordinator, and adds the generation, each classic member's session timeout,
    when the log last saw each member (LAST-SEEN: its last record; heartbeats are never logged, so a
    live member may have been seen long before), with --until-time when a later record shows its
    session ended (SESSION-ENDED), and instance ids that changed member id or host. Share and streams
    groups are rebuilt from their records as Kafka's coordinator replays them (a share group's start
    offsets from the dump's __share_group_state partitions), without assignor or lag.

    Share groups (KIP-932) are described with ShareGroupDescribe: epochs, assignor, each member's
    rack, subscription and assignment, and per share partition its start offset and the lag Kafka
    reports (DescribeShareGroupOffsets). Streams groups with StreamsGroupDescribe: epochs (group,
    target assignment, topology), the topology's subtopologies and topics, each member's process,
    endpoint and active/standby/warm-up tasks beside its target, then the input topics' lag.

    Committed offsets and lag per partition are shown unless --no-offsets; from a dump, the committed
    offsets the log holds (it has no log end offsets, so no lag).

    Exit status: 0 ok, 1 nothing could be described (unreachable broker, unknown group), 3 some
    of several groups failed, or --from-dump found problems in the dump (warnings) and described the rest.
    """
    from kgroup.errors import KgroupError

    if static_only and dynamic_only:
        raise click.UsageError("--static-only and --dynamic-only exclude each other")
    if groups and all_groups:
        raise click.UsageError("give GROUP names or --all-groups, not both")
    if not groups and not all_groups:
        raise click.UsageError("give GROUP names or --all-groups")
    if until_time is not None and not dumps:
        raise click.UsageError("--until-time needs --from-dump (a live group has only its present)")
    refuse_cluster_with_dump(dumps)
    if dumps:
        _check_no_dump_paths_as_groups(groups)
    warnings = DumpWarnings("describe")
    try:
        views = (_offline(dumps, groups, until_time, warnings) if dumps
                 else _live(cluster, groups, all_groups, with_offsets))
    except KgroupError as exc:
        fail("describe", exc)
    if not with_offsets:        # fetched for a Dead group (group_exists), or replayed offline: hidden
        for view in views:
            view.offsets = None
    before_filter = [_filter(view, static_only, dynamic_only) for view in views]
    offline = bool(dumps)
    _render(views, output, with_offsets, offline, before_filter, ended=until_time is not None)
    failed = [v for v in views if v.error]
    for view in failed:
        click.echo(f"kgroup describe: {view.error}", err=True)
    if failed:
        raise SystemExit(1 if len(failed) == len(views) else 3)
    warnings.exit_if_any()


def _check_no_dump_paths_as_groups(groups):
    """`--from-dump DIR/__consumer_offsets-*` gives the first path to --from-dump and the rest as
    GROUP names: say so, rather than report dozens of groups "not in the dump"."""
    import os

    for group in groups:
        name = os.path.basename(os.path.normpath(group))
        if os.path.exists(group) and (name.startswith(("__consumer_offsets", "__worker_offsets", "__share_group_state"))
                                      or name.endswith(".log")):
            raise click.UsageError(f"GROUP {group!r} is a dump path: give each path its own --from-dump "
                                   f"(--from-dump takes one PATH; a directory holding the partitions "
                                   f"reads them all)")


def _live(cluster, groups, all_groups, with_offsets):
    from kgroup.wire.authorization import NotAuthorized, is_denial
    from kgroup.client.groups import attach_offsets, describe_groups, group_exists, list_groups, no_such_group

    with cluster.connect() as client:
        names = [g.group for g in list_groups(client)] if all_groups else list(dict.fromkeys(groups))
        views = describe_groups(client, names) if names else []
        for view in views:
            if view.error:
                if not is_denial(view.error):  # a denial names its group already
                    view.error = f"group {view.group!r}: {view.error}"
                continue
            if view.group_type == "connect":     # a worker group commits no offsets here
                continue
            if with_offsets or view.state == "Dead":
                try:
                    attach_offsets(client, view)
                except NotAuthorized as exc:  # this group's offsets only
                    view.error = str(exc)
                    continue
            if not group_exists(view):
                view.error = no_such_group(view.group, view.coordinator)
    return views


def _offline(dumps, groups, until_time, warnings):
    from kgroup.client.from_dump import group_views, replay_dump

    replay = replay_dump(dumps, report=warnings, until_time=until_time)
    return group_views(replay, list(dict.fromkeys(groups)) or None)


def _filter(view, static_only, dynamic_only):
    """Keep the members asked for; the group's (static, dynamic) before that (the table counts the
    whole group), or None when nothing is filtered."""
    if not (static_only or dynamic_only):
        return None
    counts = (view.static_count, view.dynamic_count)
    keep = (lambda static: static) if static_only else (lambda static: not static)
    view.members = [m for m in view.members if keep(m.static)]
    if view.offsets is not None:
        view.offsets = [r for r in view.offsets
                        if r.member_id is not None and keep(r.group_instance_id is not None)]
    return counts


def _render(views, output, with_offsets, offline, before_filter, ended=False):
    from kgroup.commands.output import echo_json
    from kgroup.writers import CsvWriter

    if output == "json":
        echo_json([v.to_json(offline) for v in views])
        return
    if output == "csv":         # one row per partition, or per member with --no-offsets, live or offline
        if with_offsets and not all(v.group_type == "connect" for v in views):   # a worker group has no offsets
            writer = CsvWriter(OFFSET_COLUMNS)
            for v in views:
                for r in v.offsets or []:
                    writer.write(dict(r.to_json(), group=v.group))
        else:
            writer = CsvWriter(MEMBER_COLUMNS)
            for v in views:
                for m in v.members:
                    row = m.to_json()
                    row.update(group=v.group, state=v.state, protocol_type=v.protocol_type,
                               protocol=getattr(v, "protocol", v.protocol_type),
                               coordinator=str(v.coordinator) if v.coordinator else "",
                               assignment=_member_assignment_text(v, m))
                    writer.write(row)
        return
    if not views:  # --all-groups on a cluster (or a dump) without groups, as `list` says it
        click.echo("(none)")
    first = True
    for view, counts in zip(views, before_filter):
        if view.error and not view.members:
            continue
        if not first:
            click.echo("")
        first = False
        _table(view, with_offsets, offline, counts, ended)


def _member_assignment_text(view, member):
    """A CSV row's assignment: what a worker of a Connect worker group (the draft's type) runs, else
    the member's partitions (a classic group of Kafka Connect's own protocol shows sizes)."""
    if view.group_type == "connect":
        from kgroup.coordinator.connect.protocol import items_text
        return items_text(member.runs)
    if view.group_type == "streams":
        from kgroup.views.streams import tasks_text
        return tasks_text(member.tasks.get("active"))
    return member.assignment_text(view.protocol_type)


def _member_counts(view, before_filter) -> str:
    """The group's members, all of them even when --static-only/--dynamic-only shows some
    (``before_filter``: the group's (static, dynamic) then)."""
    static, dynamic = before_filter or (view.static_count, view.dynamic_count)
    text = f"{static + dynamic} (static {static}, dynamic {dynamic})"
    if before_filter is not None:
        text += f", {len(view.members)} shown"
    return text


def _table(view, with_offsets, offline, before_filter=None, ended=False):
    """ended: replayed up to a time (--until-time), so later records can show a session ended."""
    from kgroup.views.model import topic_partitions_text
    from kgroup.writers import iso_ms, table

    if view.group_type == "connect":
        return _connect_table(view)
    if view.group_type == "share":
        return _share_table(view, with_offsets, offline)
    if view.group_type == "streams":
        return _streams_table(view, with_offsets, offline)

    consumer = view.group_type == "consumer"
    coordinator = str(view.coordinator) if view.coordinator else "(offline)"
    protocol = f"{view.protocol_type or '-'}/{view.protocol or '-'}"
    summary = [view.group, coordinator, view.state, view.group_type, protocol,
               _member_counts(view, before_filter)]
    headers = ["GROUP", "COORDINATOR", "STATE", "TYPE", "PROTOCOL", "MEMBERS"]
    if consumer:
        summary[3:3] = [str(view.group_epoch), str(view.assignment_epoch)]
        headers[3:3] = ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
    elif offline:
        summary.insert(3, _cell(view.generation))
        headers.insert(3, "GENERATION")
    table([summary], headers)
    click.echo("")
    rows = []
    for m in view.members:
        row = [m.group_instance_id or "-", "STATIC" if m.static else "DYNAMIC", m.member_id, m.client_id,
               m.client_host, m.assignment_text(view.protocol_type)]
        if consumer:
            row[5:5] = [m.member_type, _cell(m.member_epoch)]
            row += [topic_partitions_text(m.target_assignment or []),
                    "LEFT" if m.left else "RECONCILING" if view.reconciling(m) else "caught-up"]
        if offline:
            if not consumer:
                row.append(_cell(m.session_timeout_ms))
            row.append(iso_ms(m.last_seen_ms) or "-")
            if ended:
                row.append(iso_ms(m.session_ended_ms) or "-")
        rows.append(row)
    member_headers = ["INSTANCE-ID", "KIND", "MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"]
    if consumer:
        member_headers[5:5] = ["MEMBER-TYPE", "MEMBER-EPOCH"]
        member_headers += ["TARGET", "STATUS"]
    if offline:
        member_headers += ([] if consumer else ["SESSION-TIMEOUT-MS"]) + ["LAST-SEEN"] + (["SESSION-ENDED"] if ended else [])
    table(rows, member_headers)
    if consumer and view.members:
        left = view.left_instances()
        behind = sum(1 for m in view.members if view.reconciling(m) and not m.left)
        total, epoch = len(view.members), view.group_epoch
        click.echo("")
        if behind:
            click.echo(f"{behind} of {total} member(s) still reconciling to group epoch {epoch}")
        elif left:
            click.echo(f"{total - len(left)} of {total} member(s) caught up at group epoch {epoch}")
        else:
            click.echo(f"all {total} member(s) caught up at group epoch {epoch}")
        if left:
            click.echo(f"left (static, member epoch -2): {', '.join(left)}: the group keeps their partitions until "
                       "they rejoin or their session times out (kgroup remove-members releases them now)")
    if with_offsets and view.offsets is not None and offline:     # a dump has no log end offsets, so no lag
        click.echo("")
        table([[r.topic, str(r.partition), _cell(r.committed), r.group_instance_id or "-", r.member_id or "-"]
               for r in view.offsets],
              ["TOPIC", "PARTITION", "COMMITTED", "INSTANCE-ID", "MEMBER-ID"])
    elif with_offsets and view.offsets is not None:
        click.echo("")
        table([[r.topic, str(r.partition), _cell(r.committed), _cell(r.log_end), _cell(r.lag),
                r.group_instance_id or "-", r.member_id or "-"] for r in view.offsets],
              ["TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "INSTANCE-ID", "MEMBER-ID"])
        click.echo("")
        table([[owner, _cell(lag)] for owner, lag in view.lag_by_owner()], ["OWNER", "TOTAL-LAG"])
    if offline and view.instance_moves:
        click.echo("")
        table([[mv["group_instance_id"], str(mv["member_id_changes"]), "yes" if mv["moved_host"] else "no",
                " ".join(mv["hosts"])] for mv in view.instance_moves],
              ["INSTANCE-ID", "MEMBER-ID-CHANGES", "MOVED-HOST", "HOSTS"],
              title="Instance ids that changed member id or host:")


def _connect_table(view):
    """A Connect worker group (the draft's experimental type): epochs, connectors, who runs what."""
    from kgroup.coordinator.connect.protocol import items_text
    from kgroup.writers import table

    coordinator = str(view.coordinator) if view.coordinator else "(offline)"
    table([[view.group, coordinator, view.state, view.group_type, str(view.group_epoch),
            str(view.assignment_epoch), view.assignor or "-", view.assigner or "-", str(len(view.members))]],
          ["GROUP", "COORDINATOR", "STATE", "TYPE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "ASSIGNOR", "ASSIGNER",
           "WORKERS"])
    connectors = " ".join(f"{name}:{tasks}" for name, tasks in sorted(view.connectors.items())) or "-"
    click.echo(f"\nconnectors: {connectors}; unassigned: {items_text(view.unassigned)}"
               + (f"; assignment error: {view.assignment_error}" if view.assignment_error else ""))
    click.echo("")
    table([[m.group_instance_id or "-", m.member_id, m.client_id, m.client_host, str(m.member_epoch),
            items_text(m.runs), items_text(m.target), "RECONCILING" if view.reconciling(m) else "caught-up"]
           for m in view.members],
          ["INSTANCE-ID", "MEMBER-ID", "CLIENT-ID", "HOST", "MEMBER-EPOCH", "RUNS", "TARGET", "STATUS"])
    if view.members:
        behind = sum(1 for m in view.members if view.reconciling(m))
        click.echo("")
        click.echo(f"{behind} of {len(view.members)} worker(s) still reconciling to assignment epoch "
                   f"{view.assignment_epoch}" if behind else
                   f"all {len(view.members)} worker(s) caught up at assignment epoch {view.assignment_epoch}")


def _share_table(view, with_offsets, offline=False):
    """A share group (KIP-932): epochs, assignor, members with what they subscribe to and are
    assigned, then each share partition's start offset and lag (as kafka-share-groups --describe
    --offsets shows them: a partition has no owner, the members read it together). Offline (a dump's
    __share_group_state) there is no lag: no LAG or ERROR column."""
    from kgroup.views.model import topic_partitions_text
    from kgroup.writers import table

    coordinator = str(view.coordinator) if view.coordinator else "(offline)"
    table([[view.group, coordinator, view.state, view.group_type, str(view.group_epoch),
            str(view.assignment_epoch), view.assignor or "-", str(len(view.members))]],
          ["GROUP", "COORDINATOR", "STATE", "TYPE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "ASSIGNOR", "MEMBERS"])
    click.echo("")
    table([[m.member_id, m.client_id, m.client_host, m.rack_id or "-", _cell(m.member_epoch),
            ",".join(m.subscription or []) or "-", topic_partitions_text(m.assignment)] for m in view.members],
          ["MEMBER-ID", "CLIENT-ID", "HOST", "RACK", "MEMBER-EPOCH", "SUBSCRIPTION", "ASSIGNMENT"])
    if with_offsets and view.offsets is not None:
        _offsets_table(view.offsets, offline, [
            ("TOPIC", lambda r: r.topic), ("PARTITION", lambda r: str(r.partition)),
            ("START-OFFSET", lambda r: _cell(r.start_offset)), ("LEADER-EPOCH", lambda r: _cell(r.leader_epoch)),
            ("LAG", lambda r: _cell(r.lag)), ("ERROR", lambda r: r.error or "-")])


def _streams_table(view, with_offsets, offline=False):
    """A streams group (KIP-1071): epochs, topology, members with their tasks beside their target,
    then its input topics' committed offsets and lag (an active task owns its source partitions;
    offline, from a dump, no log end offsets and so no lag)."""
    from kgroup.views.streams import tasks_text
    from kgroup.writers import table

    coordinator = str(view.coordinator) if view.coordinator else "(offline)"
    table([[view.group, coordinator, view.state, view.group_type, _cell(view.group_epoch),
            _cell(view.assignment_epoch), _cell(view.topology_epoch), view.assignor or "-", str(len(view.members))]],
          ["GROUP", "COORDINATOR", "STATE", "TYPE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH",
           "ASSIGNOR", "MEMBERS"])
    click.echo("")
    table([[s["subtopology"], ",".join(s["source_topics"]) or "-", ",".join(s["repartition_source_topics"]) or "-",
            ",".join(s["repartition_sink_topics"]) or "-", ",".join(s["state_changelog_topics"]) or "-"]
           for s in view.subtopologies],
          ["SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SOURCE-TOPICS", "REPARTITION-SINK-TOPICS",
           "CHANGELOG-TOPICS"])
    click.echo("")
    table([[m.member_id, m.group_instance_id or "-", m.process_id, m.client_id, m.client_host, m.rack_id or "-",
            m.endpoint or "-", _cell(m.member_epoch),
            tasks_text(m.tasks.get("active")), tasks_text(m.target_tasks.get("active")),
            tasks_text(m.tasks.get("standby")), tasks_text(m.target_tasks.get("standby")),
            tasks_text(m.tasks.get("warmup")), tasks_text(m.target_tasks.get("warmup")),
            "LEFT" if m.left else "RECONCILING" if view.reconciling(m) else "caught-up"] for m in view.members],
          ["MEMBER-ID", "INSTANCE-ID", "PROCESS-ID", "CLIENT-ID", "HOST", "RACK", "ENDPOINT", "MEMBER-EPOCH",
           "ACTIVE", "TARGET-ACTIVE", "STANDBY", "TARGET-STANDBY", "WARMUP", "TARGET-WARMUP", "STATUS"])
    if with_offsets and view.offsets is not None:
        _offsets_table(view.offsets, offline, [
            ("TOPIC", lambda r: r.topic), ("PARTITION", lambda r: str(r.partition)),
            ("COMMITTED", lambda r: _cell(r.committed)), ("LOG-END", lambda r: _cell(r.log_end)),
            ("LAG", lambda r: _cell(r.lag)), ("MEMBER-ID", lambda r: r.member_id or "-")])


# What a dump does not hold: no log end offsets, so no lag, and no broker errors.
_LIVE_ONLY = frozenset(("LOG-END", "LAG", "ERROR"))


def _offsets_table(rows, offline: bool, columns) -> None:
    """A share or streams group's offsets as (header, cell of a row) columns, after a blank line;
    offline (from a dump) without the live-only columns."""
    from kgroup.writers import table

    shown = [(header, cell) for header, cell in columns if not (offline and header in _LIVE_ONLY)]
    click.echo("")
    table([[cell(r) for _, cell in shown] for r in rows], [header for header, _ in shown])


def _cell(value):
    return "-" if value is None else str(value)
