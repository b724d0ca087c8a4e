"""reset-offsets' plan as pure functions: Kafka's targets, clamping into the log, the CSV format."""

import pytest

from kgroup.errors import KgroupUsageError
from kgroup.client.reset import (PartitionPlan, Target, active_members_error, empty_group_steps, parse_datetime_ms,
                                 parse_duration_ms, parse_topic_selector, plan_partition, read_offsets_csv,
                                 write_offsets_csv)
from kgroup.views.model import MemberView


def plan(target, current=5, start=2, end=10, **kw):
    return plan_partition("t", 0, target, current, start, end, **kw)


@pytest.mark.parametrize("target, new, clamped", [
    (Target("to-earliest"), 2, False), (Target("to-latest"), 10, False), (Target("to-current"), 5, False),
    (Target("to-offset", 7), 7, False), (Target("to-offset", 0), 2, True), (Target("to-offset", 99), 10, True),
    (Target("shift-by", -2), 3, False), (Target("shift-by", -9), 2, True), (Target("shift-by", 9), 10, True),
])
def test_targets_and_clamping(target, new, clamped):
    row = plan(target)
    assert (row.new, row.clamped, row.error) == (new, clamped, None)
    assert (row.lag_before, row.lag_after) == (5, 10 - new)


def test_timestamp_target_uses_list_offsets_answer_or_the_log_end():
    assert plan(Target("to-datetime", 1), timestamp_offset=4).new == 4
    assert plan(Target("by-duration", 1), timestamp_offset=-1).new == 10   # no record at or after it
    assert plan(Target("to-datetime", 1), timestamp_offset=None).new == 10


def test_no_committed_offset():
    assert plan(Target("to-current"), current=None).new == 10
    row = plan(Target("shift-by", 1), current=None)
    assert row.new is None and row.error == "no committed offset to shift from"
    assert row.lag_before is None


def test_unreadable_partition_is_an_error_row():
    row = plan_partition("t", 3, Target("to-earliest"), 1, "NOT_LEADER_OR_FOLLOWER", 5)
    assert row.error == "NOT_LEADER_OR_FOLLOWER" and row.new is None and row.log_end == 5
    assert plan_partition("t", 3, Target("to-earliest"), 1, None, None).error == "UNKNOWN_TOPIC_OR_PARTITION"


def test_from_file_and_export_round_trip():
    offsets = read_offsets_csv("# saved\norders,0,5\n\norders,1,7\ng1,other,2,0\n")
    assert offsets == {("orders", 0): 5, ("orders", 1): 7, ("other", 2): 0}
    rows = [plan_partition(t, p, Target("from-file"), None, 0, 6, file_offset=o) for (t, p), o in offsets.items()]
    rows.append(PartitionPlan("x", 0, None, None, None, None, error="UNKNOWN_TOPIC_OR_PARTITION"))
    text = write_offsets_csv(rows)
    assert text == "orders,0,5\norders,1,6\nother,2,0\n"
    assert read_offsets_csv(text) == {("orders", 0): 5, ("orders", 1): 6, ("other", 2): 0}


def test_a_several_group_export_gives_only_the_groups_lines():
    text = "g1,orders,0,5\ng2,orders,0,9\ng2,orders,1,3\ng1,other,2,0\n"
    assert read_offsets_csv(text, group="g1") == {("orders", 0): 5, ("other", 2): 0}
    assert read_offsets_csv(text, group="g2") == {("orders", 0): 9, ("orders", 1): 3}
    assert read_offsets_csv("orders,0,5\n", group="g1") == {("orders", 0): 5}   # no group column: every line
    with pytest.raises(KgroupUsageError, match=r"^f.csv: no line for group 'g3' \(the file has lines for g1, g2\)$"):
        read_offsets_csv(text, "f.csv", group="g3")


@pytest.mark.parametrize("text", ["orders,x,1", "orders,1", ",0,1", "orders,-1,3", ""])
def test_bad_csv_is_a_usage_error(text):
    with pytest.raises(KgroupUsageError) as info:
        read_offsets_csv(text)
    assert info.value.exit_code == 2


def test_selectors_durations_datetimes():
    assert parse_topic_selector("orders") == ("orders", None)
    assert parse_topic_selector("orders:2,0,2") == ("orders", [0, 2])
    for bad in ("orders:", ":1", "orders:a", "orders:-1", "orders:2147483648"):
        with pytest.raises(KgroupUsageError):
            parse_topic_selector(bad)
    assert parse_duration_ms("PT1H30M") == 5_400_000
    assert parse_duration_ms("P1DT2H") == 93_600_000
    assert parse_duration_ms("PT10S") == 10_000
    for bad in ("P", "PT", "1H", "P1DT", "PT-1H"):
        with pytest.raises(KgroupUsageError):
            parse_duration_ms(bad)
    assert parse_datetime_ms("1970-01-01T00:00:01Z") == 1000
    assert parse_datetime_ms("1970-01-01T00:00:01") == 1000          # UTC without an offset
    assert parse_datetime_ms("1970-01-01T02:00:01+02:00") == 1000
    with pytest.raises(KgroupUsageError):
        parse_datetime_ms("yesterday")


def test_the_active_members_message():
    members = [MemberView("m-1", "a", "c", "h", assignment=[{"topic": "t", "partitions": [0, 2]}]),
               MemberView("m-2", "b", "c", "h", assignment=[{"topic": "t", "partitions": [1]}]),
               MemberView("m-3", None, "c", "h", assignment=[{"topic": "t", "partitions": [3]}])]
    message = active_members_error("g", "Stable", members)
    assert "is Stable, not Empty or Dead" in message and "(a, b, m-3)" in message
    # a KIP-848 static member that stopped (member epoch -2) is not asked to stop again
    members[1].member_epoch = -2
    assert active_members_error("g", "Reconciling", members[1:]) == (
        "group 'g' is Reconciling, not Empty or Dead: offsets can only be reset while no consumer is in the "
        "group; stop its members first (m-3); b stopped but the group keeps them until their session times "
        "out: wait (kgroup wait g --state Empty) or remove them (kgroup remove-members g --instance-id b)")
    assert active_members_error("g", "Reconciling", members[1:2]).endswith(
        "no consumer is in the group; b stopped but the group keeps them until their session times out: wait "
        "(kgroup wait g --state Empty) or remove them (kgroup remove-members g --instance-id b)")


def test_running_static_members_are_told_the_wait_and_remove_members_commands_too():
    """Not only KIP-848 members that stopped: a classic static fleet stays after it stops as well."""
    static = [MemberView("m-1", "a", "c", "h"), MemberView("m-2", "b", "c", "h")]
    assert active_members_error("g", "Stable", static).endswith(
        "no consumer is in the group; stop its members first (a, b), then wait (kgroup wait g --state Empty) or "
        "remove them, as the group keeps static members until their session times out (kgroup remove-members g "
        "--instance-id a,b)")
    mixed = static[:1] + [MemberView("m-3", None, "c", "h")]
    assert empty_group_steps("g", mixed) == (
        "stop its members first (a, m-3), then wait (kgroup wait g --state Empty) or remove the static ones, as "
        "the group keeps static members until their session times out (kgroup remove-members g --instance-id a)")
    assert empty_group_steps("g", mixed[1:]) == "stop its members first (m-3), then wait (kgroup wait g --state Empty)"


def test_a_reset_that_selects_nothing_says_which_instance_id_owns_nothing():
    from kgroup.client.last_assignment import InstanceAssignment
    from kgroup.client.offsets_admin import _why_none

    held = InstanceAssignment("node-0", {("orders", 0)}, "current")
    empty = InstanceAssignment("node-1", set(), "last", log="__consumer_offsets-7", offset=42, timestamp=0)
    assert _why_none([held, empty], all_topics=False) == (
        " (--instance-id node-1 (the last assignment) owns no partition: an empty assignment, or one that "
        "is not the consumer protocol's)")
    assert _why_none(None, all_topics=True) == " (it has no committed offset for --all-topics)"
    assert _why_none([held], all_topics=False) == ""
