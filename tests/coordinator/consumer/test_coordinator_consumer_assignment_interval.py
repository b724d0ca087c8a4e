"""KIP-1263 (Kafka 4.3+): a consumer group's target assignment is computed at most once per
``group.consumer.assignment.interval.ms`` (default 1000 ms). Kafka's
``canComputeNextTargetAssignment``: at once when the last target's time is unknown (0: a new
group, or one whose members were all fenced) or the interval is 0; else when the interval has
passed, at the next heartbeat. Until then members reconcile towards the last target, and classic
members are only told to rejoin when a newer target exists (KAFKA-20272)."""

from helpers.consumer import FOO, assignment_of, heartbeat, new_coordinator


def _group(coord):
    return coord.get_group("g")


def test_a_join_within_the_interval_waits_for_the_next_heartbeat_after_it():
    coord = new_coordinator()
    coord.advance(10_000)                               # a clock past 0: the timestamp is known
    a = heartbeat(coord, member_id="a")
    assert (a.member_epoch, assignment_of(a)) == (2, {FOO: frozenset(range(6))})
    assert _group(coord).assignment_timestamp == 10_000

    coord.advance(200)
    b = heartbeat(coord, member_id="b")
    group = _group(coord)
    # the epoch moved, the target did not: b stays at the last target's epoch, with nothing
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 2, "Assigning")
    assert (b.member_epoch, assignment_of(b)) == (2, {})

    coord.advance(500)                                  # 700 ms after the last target: not yet
    heartbeat(coord, member_id="a", epoch=2)
    assert _group(coord).assignment_epoch == 2

    coord.advance(300)                                  # 1,000 ms: a's next heartbeat computes it
    a = heartbeat(coord, member_id="a", epoch=2)
    group = _group(coord)
    assert (group.assignment_epoch, group.assignment_timestamp) == (3, 11_000)
    assert sum(len(p) for p in group.target_row("a").values()) == 3
    assert sum(len(p) for p in group.target_row("b").values()) == 3


def test_an_interval_of_zero_computes_every_target_at_once():
    coord = new_coordinator(**{"group.consumer.assignment.interval.ms": "0"})
    coord.advance(10_000)
    heartbeat(coord, member_id="a")
    coord.advance(1)
    heartbeat(coord, member_id="b")
    group = _group(coord)
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 3, "Reconciling")


def test_the_target_time_is_replayed_from_the_target_epoch_record():
    from kgroup.coordinator import GroupCoordinator

    coord = new_coordinator()
    coord.advance(10_000)
    heartbeat(coord, member_id="a")
    rebuilt = GroupCoordinator.from_records(coord.records, config=coord.config.as_dict())
    assert rebuilt.get_group("g").assignment_timestamp == 10_000
