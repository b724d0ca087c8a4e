"""`reset-offsets` as pure functions: the selectors and targets operators know from
kafka-consumer-groups.sh, and the plan from current offsets, log bounds and a target to new offsets.

Nothing here talks to a cluster: `client.offsets_admin` fetches the inputs and commits the plan.
The rules are Kafka's `ConsumerGroupCommand.ResetOffsets`: a new offset outside the log is clamped
to its start or end; a timestamp with no record at or after it resets to the log end; `--to-current`
and `--shift-by` fall back to the log end where nothing is committed (shift: an error, as Kafka).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from kgroup.errors import KgroupUsageError

TARGETS = ("to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime", "by-duration",
           "to-current", "from-file")
TIMESTAMP_TARGETS = ("to-datetime", "by-duration")


@dataclass(frozen=True)
class Target:
    kind: str                    # one of TARGETS
    value: int | None = None     # the offset, the shift, or the timestamp in ms


@dataclass
class PartitionPlan:
    topic: str
    partition: int
    current: int | None
    new: int | None
    log_start: int | None
    log_end: int | None
    clamped: bool = False
    error: str | None = None

    @property
    def lag_before(self) -> int | None:
        return _lag(self.log_end, self.current)

    @property
    def lag_after(self) -> int | None:
        return _lag(self.log_end, self.new)

    def to_json(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "current": self.current, "new": self.new,
                "log_start": self.log_start, "log_end": self.log_end, "lag_before": self.lag_before,
                "lag_after": self.lag_after, "clamped": self.clamped, "error": self.error}


def _lag(end, offset):
    return None if end is None or offset is None or offset < 0 else end - offset


MAX_PARTITION = 2**31 - 1


def parse_topic_selector(text: str) -> tuple[str, list[int] | None]:
    """`T` (every partition) or `T:P,P` -> (topic, partitions or None)."""
    topic, sep, parts = text.partition(":")
    if not topic or (sep and not parts):
        raise KgroupUsageError(f"bad --topic {text!r}: expected TOPIC or TOPIC:PARTITION[,PARTITION...]")
    if not sep:
        return topic, None
    try:
        partitions = sorted({int(p) for p in parts.split(",")})
    except ValueError:
        raise KgroupUsageError(f"bad --topic {text!r}: partitions must be numbers, as in {topic}:0,1") from None
    if partitions[0] < 0:
        raise KgroupUsageError(f"bad --topic {text!r}: partitions are not negative")
    if partitions[-1] > MAX_PARTITION:  # a partition is an INT32 on the wire
        raise KgroupUsageError(f"bad --topic {text!r}: a partition is at most {MAX_PARTITION}")
    return topic, partitions


_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """ISO-8601 `PnDTnHnMnS` (the form Kafka's `--by-duration` takes) -> milliseconds."""
    match = _DURATION.match(text.strip())
    if not match or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        raise KgroupUsageError(f"bad --by-duration {text!r}: expected PnDTnHnMnS, e.g. PT1H30M or P1D")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


def parse_datetime_ms(text: str) -> int:
    """--to-datetime as epoch ms (`writers.parse_iso_ms`: UTC without an offset, where Kafka takes
    local time, which a runbook run on another machine would silently shift)."""
    from kgroup.writers import parse_iso_ms

    try:
        return parse_iso_ms(text)
    except ValueError:
        raise KgroupUsageError(f"bad --to-datetime {text!r}: expected ISO-8601 such as "
                              "2024-05-01T12:00:00Z or 2024-05-01T12:00:00.000+02:00") from None


def read_offsets_csv(text: str, source: str = "--from-file", group: str | None = None) -> dict[tuple[str, int], int]:
    """Kafka's `topic,partition,offset` lines, or its `group,topic,partition,offset` export of several
    groups, of which only `group`'s lines count (as Kafka's tool reads them; every line when `group`
    is None); blank lines and `#` comments are skipped."""
    offsets = {}
    other_groups = set()
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in row]
        if len(fields) == 4:
            if group is not None and fields[0] != group:
                other_groups.add(fields[0])
                continue
            fields = fields[1:]
        try:
            topic, partition, offset = fields[0], int(fields[1]), int(fields[2])
            if not topic or partition < 0:
                raise ValueError
        except (ValueError, IndexError):
            raise KgroupUsageError(f"{source} line {number}: expected TOPIC,PARTITION,OFFSET, got "
                                  f"{','.join(row)!r}") from None
        offsets[(topic, partition)] = offset
    if not offsets and other_groups:
        raise KgroupUsageError(f"{source}: no line for group {group!r} (the file has lines for "
                              f"{', '.join(sorted(other_groups))})")
    if not offsets:
        raise KgroupUsageError(f"{source}: no TOPIC,PARTITION,OFFSET line")
    return offsets


def write_offsets_csv(plans: list[PartitionPlan]) -> str:
    """The plan's new offsets in Kafka's `--export` format, readable by `--from-file`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for p in plans:
        if p.error is None and p.new is not None:
            writer.writerow([p.topic, p.partition, p.new])
    return out.getvalue()


def plan_partition(topic: str, partition: int, target: Target, current: int | None, log_start, log_end,
                   timestamp_offset: int | None = None, file_offset: int | None = None) -> PartitionPlan:
    """One partition's new offset. `log_start`/`log_end` are ints, or an error name when the
    partition cannot be read; `timestamp_offset` is ListOffsets' answer for a timestamp target
    (-1 or None: no record at or after it)."""
    plan = PartitionPlan(topic, partition, current, None,
                         log_start if isinstance(log_start, int) else None,
                         log_end if isinstance(log_end, int) else None)
    for bound in (log_start, log_end):
        if isinstance(bound, str):
            plan.error = bound
            return plan
    if log_start is None or log_end is None:
        plan.error = "UNKNOWN_TOPIC_OR_PARTITION"
        return plan
    kind = target.kind
    if kind == "to-earliest":
        wanted = log_start
    elif kind == "to-latest":
        wanted = log_end
    elif kind == "to-offset":
        wanted = target.value
    elif kind == "shift-by":
        if current is None:
            plan.error = "no committed offset to shift from"
            return plan
        wanted = current + target.value
    elif kind in TIMESTAMP_TARGETS:
        wanted = timestamp_offset if timestamp_offset is not None and timestamp_offset >= 0 else log_end
    elif kind == "to-current":
        wanted = current if current is not None else log_end
    elif kind == "from-file":
        wanted = file_offset
    else:  # pragma: no cover - the command only builds known targets
        raise ValueError(kind)
    plan.new = min(max(wanted, log_start), log_end)
    plan.clamped = plan.new != wanted
    return plan


def active_members_error(group: str, state: str, members) -> str:
    """Kafka's rule for committing as an admin (ConsumerGroupCommand: the group must be inactive),
    as one line naming who is still in the group and what makes it Empty."""
    return (f"group {group!r} is {state}, not Empty or Dead: offsets can only be reset while no consumer is in "
            f"the group; {empty_group_steps(group, members)}")


def empty_group_steps(group: str, members) -> str:
    """What makes GROUP Empty, naming its members: stop the running ones, then wait until it is Empty
    (`kgroup wait`), or remove the static ones (`kgroup remove-members`), which the group keeps until
    their session times out — classic static members and KIP-848 ones that stopped (member epoch -2).
    One wording for --execute's refusal and a plan's note that --execute will be refused."""
    def listed(names):
        return ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")

    running = [m.group_instance_id or m.member_id for m in members if not m.left]
    left = [m.group_instance_id for m in members if m.left]
    static = [m.group_instance_id for m in members if m.group_instance_id and not m.left] + left
    wait = f"wait (kgroup wait {group} --state Empty)"
    if static:
        whom = "them" if static == left or len(static) == len(members) else "the static ones"
        why = "" if left else ", as the group keeps static members until their session times out"
        wait += (f" or remove {whom}{why} (kgroup remove-members {group} --instance-id "
                 f"{','.join(static)})")
    steps = []
    if running or not left:
        steps.append(f"stop its members first ({listed(running) or 'none listed'})")
    if left:   # KIP-848 static members that stopped: kept until their session times out
        steps.append(f"{listed(left)} stopped but the group keeps them until their session times out: {wait}")
    else:
        steps[-1] += f", then {wait}"
    return "; ".join(steps)
