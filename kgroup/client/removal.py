"""KIP-345 member removal: one LeaveGroup batch, results keyed by what the operator typed.

Safety rules: an empty selection is never "everyone" (the Java Admin foot-gun) — `--all` must be
explicit and is expanded here from a fresh DescribeGroups; instance ids need LeaveGroup v3+, and an
older broker gets a clear error instead of a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.assignors import MemberInfo, get_assignor, predict_after_removal
from kgroup.views.connect import CONNECT_TYPE, worker_group_refusal
from kgroup.client.consumer_removal import predict_consumer_group_moves
from kgroup.client.groups import describe_groups, group_exists, no_such_group
from kgroup.client.streams_offsets import member_removal_refusal
from kgroup.views.streams import STREAMS_TYPE
from kgroup.views.model import GroupView
from kgroup.client.removal_targets import members_named, target_member_ids
from kgroup.errors import EXIT_USAGE, KgroupError
from kgroup.wire.authorization import check, failure
from kgroup.wire.cluster import ClusterClient, error_name

BATCH_VERSION = 3      # LeaveGroup with Members[] {MemberId, GroupInstanceId}
REASON_VERSION = 5     # Members[].Reason (KIP-800)


class SelectionError(KgroupError):
    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Target:
    """One member to remove, as the operator named it."""

    group_instance_id: str | None = None
    member_id: str = ""

    @property
    def label(self) -> str:
        return self.group_instance_id if self.group_instance_id is not None else self.member_id


@dataclass
class MemberResult:
    target: Target
    error: str | None                                   # Kafka's error name; None = removed
    status: str | None = None                           # dry run: static | dynamic | unknown
    partitions: list[tuple[str, int]] = field(default_factory=list)
    moves: list[tuple[str, int, str | None]] = field(default_factory=list)   # dry run prediction
    # --wait: the removed id is a member again once the group settled (its process still runs);
    # None where the wait saw no group or the removal failed
    rejoined: bool | None = None

    def to_json(self, dry_run: bool = False, waited: bool = False) -> dict:
        data = {"group_instance_id": self.target.group_instance_id,
                "member_id": self.target.member_id or None, "error": self.error}
        if waited:
            data["rejoined"] = self.rejoined
        if dry_run:
            data["status"] = self.status
            data["partitions"] = [{"topic": t, "partition": p} for t, p in self.partitions]
            data["moves"] = [{"topic": t, "partition": p, "to": new} for t, p, new in self.moves]
        return data


@dataclass
class RemovalReport:
    group: str
    dry_run: bool
    results: list[MemberResult]
    before: GroupView | None = None
    after: GroupView | None = None
    prediction_note: str | None = None
    # dry run: partitions of the members that stay which the assignor would also move
    other_moves: list[tuple[str, int, str | None, str | None]] = field(default_factory=list)
    leave_version: int | None = None
    waited: bool = False                # --wait was asked for (each result says whether its id rejoined)
    wait_error: str | None = None       # the wait's timeout or failure, or "interrupted"
    refused: str | None = None          # dry run: the real run would be refused (not authorized to Read ...)

    @property
    def removed(self) -> int:
        return 0 if self.dry_run else sum(1 for r in self.results if r.error is None)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if r.error is not None)

    @property
    def rejoined(self) -> list[MemberResult]:
        """Removed, and back in the group: the removal did not stick."""
        return [r for r in self.results if r.rejoined]

    def mark_rejoined(self, view: GroupView | None) -> None:
        """After --wait: each removed id that `view` (the settled group, or the last one a wait saw)
        has as a member again. A static member rejoins under its instance id with a new member id (a
        classic group) or its own (a consumer group); a dynamic one is recognisable only under its own."""
        if view is None:
            for r in self.results:
                r.rejoined = None
            return
        for r, member in zip(self.results, members_named(view, [r.target for r in self.results])):
            r.rejoined = None if r.error is not None else member is not None

    def to_json(self) -> dict:
        data = {"group": self.group, "dry_run": self.dry_run,
                "results": [r.to_json(self.dry_run, self.waited) for r in self.results],
                "removed": self.removed, "failed": self.failed}
        if self.waited:
            data["rejoined"] = len(self.rejoined)
        if self.dry_run:
            data["refused"] = self.refused
            data["other_moves"] = [{"topic": t, "partition": p, "from": old, "to": new}
                                   for t, p, old, new in self.other_moves]
            if self.prediction_note:
                data["prediction_note"] = self.prediction_note
        if self.after is not None:
            data["wait"] = {**before_after(self.before, self.after), "error": None}
        elif self.wait_error:  # the same keys: what the wait did not see is null
            data["wait"] = {"before": _summary(self.before), "after": None, "generation_advanced": None,
                            "partitions_moved": None, "error": self.wait_error}
        return data


def split_ids(values) -> list[str]:
    """Repeatable options that also take comma lists: ("a,b", "c") -> ["a", "b", "c"]."""
    out = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out


def read_id_file(path: str) -> list[str]:
    """One instance id per line (commas allowed); blank lines and `#` comments skipped; a file
    without any is a usage error naming it."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise SelectionError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SelectionError(f"{path}: cannot read: {exc}") from None
    ids = split_ids(line.split("#", 1)[0] for line in lines)
    if not ids:  # an empty selection never means everyone, and this one was surely meant to hold some
        raise SelectionError(f"{path}: no instance id in it (only blank lines and # comments)")
    return ids


def build_targets(instance_ids=(), member_ids=()) -> list[Target]:
    """Targets in the order given, duplicates dropped (a second entry would only fail as unknown)."""
    targets, seen = [], set()
    for iid in instance_ids:
        t = Target(group_instance_id=iid)
        if t not in seen:
            seen.add(t)
            targets.append(t)
    for mid in member_ids:
        t = Target(member_id=mid)
        if t not in seen:
            seen.add(t)
            targets.append(t)
    return targets


def targets_for_all(view: GroupView) -> list[Target]:
    """`--all`: static members by instance id (survives a restart race), dynamic ones by member id."""
    return [Target(group_instance_id=m.group_instance_id) if m.static else Target(member_id=m.member_id)
            for m in view.members]


def describe_existing(client: ClusterClient, group: str) -> GroupView:
    view = describe_groups(client, [group])[0]
    if view.error:
        raise failure(view.error, f"group {group!r}: DescribeGroups failed: {view.error}")
    if not group_exists(view):
        raise KgroupError(no_such_group(group, view.coordinator))
    if view.group_type == CONNECT_TYPE:  # the coordinator answers UNKNOWN_MEMBER_ID for each of them
        raise KgroupError(worker_group_refusal(group, "LeaveGroup does not remove its workers; a worker "
                                                      "leaves with its own heartbeat"))
    if view.group_type == "share":
        from kgroup.client.share_describe import NO_MEMBER_REMOVAL

        raise KgroupError(NO_MEMBER_REMOVAL.format(group=group))
    if view.group_type == STREAMS_TYPE:
        raise KgroupError(member_removal_refusal(group))
    return view


def match_results(targets, response_members) -> list[str | None]:
    """Per target, the response's error name; by position when the broker echoes in order, else by ids."""
    names = []
    rows = list(response_members or [])
    def same(t, r):
        return ((getattr(r, "group_instance_id", None) == t.group_instance_id)
                and (getattr(r, "member_id", "") or "") == t.member_id)
    if len(rows) == len(targets) and all(same(t, r) for t, r in zip(targets, rows)):
        return [error_name(r.error_code) if r.error_code else None for r in rows]
    remaining = list(rows)
    for t in targets:
        hit = next((r for r in remaining if same(t, r)), None)
        if hit is None:  # some brokers fill in the resolved member id: match on the instance id alone
            hit = next((r for r in remaining if t.group_instance_id is not None
                        and getattr(r, "group_instance_id", None) == t.group_instance_id), None)
        if hit is None:
            names.append("MISSING_FROM_RESPONSE")
            continue
        remaining.remove(hit)
        names.append(error_name(hit.error_code) if hit.error_code else None)
    return names


def send_leave(client: ClusterClient, group: str, targets, reason: str | None = None):
    """LeaveGroup for the targets -> (error name or None per target, version used)."""
    from kafka.protocol.consumer import LeaveGroupRequest

    version = client.max_version(LeaveGroupRequest)
    if version < 0:
        raise KgroupError("the broker does not support LeaveGroup")
    if version < BATCH_VERSION:
        if any(t.group_instance_id is not None for t in targets):
            raise KgroupError(f"the broker supports LeaveGroup up to v{version}; removing members by "
                              f"group.instance.id needs v{BATCH_VERSION}+ (Kafka 2.3+). Use --member-id "
                              f"for members of this group")
        results = []
        for t in targets:
            response, _ = _leave_with_retry(client, group, lambda v=version, t=t: LeaveGroupRequest(
                group_id=group, member_id=t.member_id, version=v))
            results.append(error_name(response.error_code) if response.error_code else None)
        return results, version
    version = min(version, REASON_VERSION)
    def build():
        identities = []
        for t in targets:
            fields = {"member_id": t.member_id, "group_instance_id": t.group_instance_id}
            if version >= REASON_VERSION:
                fields["reason"] = reason
            identities.append(LeaveGroupRequest.MemberIdentity(**fields))
        return LeaveGroupRequest(group_id=group, members=identities, version=version)
    first = client.find_coordinator(group)
    response, coordinator = _leave_with_retry(client, group, build, first)
    names = match_results(targets, response.members)
    if coordinator != first:
        names = _ask_again_after_a_move(client, group, targets, names, version, reason)
    return names, version


def _ask_again_after_a_move(client, group, targets, names, version, reason):
    """The coordinator moved during the removal. The new one serves reads at its high watermark,
    which trails the old leader's until the followers fetch again, so for a moment it may not know
    a member the group had: ask again for those it answered UNKNOWN_MEMBER_ID, until the timeout."""
    import time

    from kafka.protocol.consumer import LeaveGroupRequest

    from kgroup.wire.cluster import RETRY_BACKOFF_S

    deadline = time.monotonic() + client.timeout_s
    while "UNKNOWN_MEMBER_ID" in names and time.monotonic() < deadline:
        time.sleep(RETRY_BACKOFF_S)
        again = [t for t, n in zip(targets, names) if n == "UNKNOWN_MEMBER_ID"]
        fields = {"reason": reason} if version >= REASON_VERSION else {}
        request = LeaveGroupRequest(group_id=group, version=version, members=[
            LeaveGroupRequest.MemberIdentity(member_id=t.member_id, group_instance_id=t.group_instance_id,
                                             **fields) for t in again])
        response, _ = _leave_with_retry(client, group, lambda: request)
        answers = dict(zip(map(id, again), match_results(again, response.members)))
        names = [answers.get(id(t), n) for t, n in zip(targets, names)]
    return names


def _leave_with_retry(client, group, build, coordinator=None):
    """LeaveGroup to the group's coordinator, found again (and the batch resent) while it moves
    -> (response, the coordinator that answered)."""
    response, coordinator = client.to_coordinator(group, lambda _coordinator: build(),
                                                  f"LeaveGroup for group {group!r}", coordinator=coordinator)
    code = response.error_code
    check(error_name(code) if code else None, "Read", group)
    if code and hasattr(response, "members") and response.API_VERSION >= BATCH_VERSION:
        raise KgroupError(f"group {group!r}: LeaveGroup failed: {error_name(code)}; no member was removed")
    return response, coordinator


def remove_members(client: ClusterClient, group: str, targets, *, remove_all: bool = False,
                   reason: str | None = None) -> RemovalReport:
    """Remove the targets (or, with remove_all, every current member) in one LeaveGroup batch."""
    before = describe_existing(client, group)
    if remove_all:
        targets = targets_for_all(before)
        if not targets:
            raise KgroupError(f"group {group!r} has no members to remove (state {before.state})")
    if not targets:
        raise SelectionError("no members selected: give --instance-id, --member-id, --from-file or --all")
    errors, version = send_leave(client, group, targets, reason)
    report = RemovalReport(group, False, [MemberResult(t, e) for t, e in zip(targets, errors)], before=before)
    report.leave_version = version
    return report


def plan_removal(client: ClusterClient, group: str, targets, *, remove_all: bool = False) -> RemovalReport:
    """Dry run: which targets exist (static/dynamic), which are unknown, what they own, where it would go."""
    before = describe_existing(client, group)
    if remove_all:
        targets = targets_for_all(before)
        if not targets:  # as without --dry-run: --all was given, the group just has nobody
            raise KgroupError(f"group {group!r} has no members to remove (state {before.state})")
    if not targets:
        raise SelectionError("no members selected: give --instance-id, --member-id, --from-file or --all")
    results = []
    for t, member in zip(targets, members_named(before, targets)):
        if member is None:
            results.append(MemberResult(t, "UNKNOWN_MEMBER_ID", status="unknown"))
        else:
            results.append(MemberResult(t, None, status="static" if member.static else "dynamic",
                                        partitions=member.partitions()))
    report = RemovalReport(group, True, results, before=before)
    report.prediction_note = predict_moves(client, before, report)
    from kgroup.client.rights import group_refusal
    report.refused = group_refusal(client, before, "Read")     # LeaveGroup needs Read on the group
    return report


def may_rejoin(report: RemovalReport) -> list[str]:
    """The ids named (or --all) that are members of the group as described before the removal,
    except KIP-848 static members known to have stopped (member epoch -2): any of them whose
    process still runs learns of the removal at its next heartbeat and rejoins at once. Only a
    wait after the removal can tell (`mark_rejoined`); without one, the caller warns."""
    view = report.before
    if view is None:
        return []
    members = members_named(view, [r.target for r in report.results])
    return [r.target.label for r, member in zip(report.results, members)
            if r.error is None and member is not None and not member.left]


def predict_moves(client: ClusterClient, view: GroupView, report: RemovalReport) -> str | None:
    """Fill each known target's `moves` with the assignor's prediction; returns why it could not, if so."""
    if view.group_type == "consumer":
        return predict_consumer_group_moves(client, view, report)
    if view.protocol_type != "consumer":
        return f"no prediction: protocol type {view.protocol_type!r} is not the consumer protocol"
    if view.state != "Stable":
        return f"no prediction: the group is {view.state}, not Stable"
    try:
        get_assignor(view.protocol)
    except ValueError:
        return f"no prediction: assignor {view.protocol!r} is not one kgroup can simulate"
    known = [r for r in report.results if r.status in ("static", "dynamic")]
    if not known:
        return None
    members = [MemberInfo(m.member_id, m.group_instance_id, tuple(m.subscription or ()), tuple(m.partitions()))
               for m in view.members]
    topics = sorted({t for m in members for t in m.topics} | {t for m in view.members for t, _ in m.partitions()})
    counts = partition_counts(client, topics)
    owner_label = {m.member_id: (m.group_instance_id or m.member_id) for m in view.members}
    removed_ids = target_member_ids(view, known)
    try:
        prediction = predict_after_removal(members, removed_ids, counts, view.protocol)
    except ValueError as exc:
        return f"no prediction: {exc}"
    for r, mid in zip(known, removed_ids):
        r.moves = [(t, p, owner_label.get(new) if new else None) for t, p, new in prediction.moved_from(mid)]
    gone = set(removed_ids)
    report.other_moves = [(t, p, owner_label.get(old) if old else None, owner_label.get(new) if new else None)
                          for t, p, old, new in prediction.moves if old not in gone]
    return None


def partition_counts(client: ClusterClient, topics) -> dict[str, int]:
    from kgroup.client.groups import topic_partitions

    return {t: len(parts) for t, parts in topic_partitions(client, topics).items() if isinstance(parts, list)}


def _label(m):
    return m.group_instance_id or m.member_id


def _summary(view: GroupView) -> dict:
    """A view's state and members (instance id, else member id); a consumer group's epoch too. A
    group that does not exist (any more) is Dead."""
    data = {"state": view.state if group_exists(view) else "Dead",
            "members": sorted(_label(m) for m in view.members)}
    if view.group_type == "consumer":  # the epochs the wait saw advance
        data["group_epoch"] = view.group_epoch
    return data


def before_after(before: GroupView, after: GroupView) -> dict:
    """Members, state and partitions whose owner (instance id, else member id) changed."""
    old = {tp: _label(m) for tp, m in before.owners().items()}
    new = {tp: _label(m) for tp, m in after.owners().items()}
    moved = [{"topic": t, "partition": p, "from": old.get((t, p)), "to": new.get((t, p))}
             for t, p in sorted(set(old) | set(new)) if old.get((t, p)) != new.get((t, p))]
    return {"before": _summary(before), "after": _summary(after), "generation_advanced": True,
            "partitions_moved": moved}
