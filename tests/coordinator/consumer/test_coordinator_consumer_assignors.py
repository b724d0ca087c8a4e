"""Consumer groups with the built-in server-side assignors: the default (uniform) and range, end to end."""

import itertools
import uuid

from helpers.consumer import TOPICS, assignment_of, heartbeat, owned

from kgroup.assignors.server_api import HETEROGENEOUS, HOMOGENEOUS, register_server_assignor
from kgroup.coordinator import GroupCoordinator


def _coordinator(**config):
    counter = itertools.count(1)
    coord = GroupCoordinator(config=config, uuid_source=lambda: str(uuid.UUID(int=next(counter))))
    coord.set_topics(TOPICS)
    return coord


def _converge(coord, members):
    """Heartbeat every member with what it was given until nobody's assignment changes."""
    held = {m: {} for m in members}
    epochs = {m: e for m, e in members.items()}
    for _ in range(10):
        changed = False
        for member_id in members:
            response = heartbeat(coord, member_id=member_id, epoch=epochs[member_id],
                                 owned_partitions=owned(held[member_id]))
            assert response.error_code == 0, response
            epochs[member_id] = response.member_epoch
            new = assignment_of(response)
            if new is not None and new != held[member_id]:
                held[member_id], changed = new, True
        if not changed:
            return held, epochs
    raise AssertionError("the group did not converge")


def _join_three(coord, topics=("foo", "bar")):
    members = {}
    for n in range(3):
        response = heartbeat(coord, member_id=f"member-{n}", topics=list(topics))
        assert response.error_code == 0, response
        members[response.member_id] = response.member_epoch
    return members


def test_default_assignor_is_uniform_and_balances_every_partition():
    coord = _coordinator()
    held, _ = _converge(coord, _join_three(coord))
    counts = sorted(sum(len(p) for p in a.values()) for a in held.values())
    assert counts == [3, 3, 3]                               # 6 + 3 partitions over three members
    everything = [(t, p) for a in held.values() for t, ps in a.items() for p in ps]
    assert len(everything) == len(set(everything)) == 9
    group = coord.group("g")
    assert group.state == "Stable"


def test_range_assignor_by_name_gives_contiguous_ranges_per_topic():
    coord = _coordinator(**{"group.consumer.assignors": "range,uniform"})
    held, _ = _converge(coord, _join_three(coord, topics=("foo",)))
    ranges = sorted(sorted(a[next(iter(a))]) for a in held.values() if a)
    assert ranges == [[0, 1], [2, 3], [4, 5]]


def test_unknown_assignor_in_config_is_a_config_error():
    import pytest

    from kgroup.coordinator import CoordinatorConfigError

    with pytest.raises(CoordinatorConfigError, match="group.consumer.assignors"):
        _coordinator(**{"group.consumer.assignors": "no-such-assignor"})


@register_server_assignor
class _RecordingAssignor:
    """Gives nothing; remembers the subscription type of every GroupSpec it was handed."""

    name = "test-recording"
    seen: list = []

    def assign(self, group, topics):
        self.seen.append(group.subscription_type)
        return {member_id: {} for member_id in group.members}


def test_subscription_type_compares_topic_names_not_the_topics_that_exist():
    """Kafka's ModernGroup.subscriptionType counts subscribers per subscribed topic *name*: a member
    that also names a topic the image lacks makes the group HETEROGENEOUS, though both members
    end up with the same existing topics (the uniform assignor then takes its heterogeneous path)."""
    coord = _coordinator(**{"group.consumer.assignors": "test-recording"})
    _RecordingAssignor.seen.clear()
    heartbeat(coord, member_id="a", topics=["foo"])
    heartbeat(coord, member_id="b", topics=["foo"])
    assert _RecordingAssignor.seen == [HOMOGENEOUS, HOMOGENEOUS]
    heartbeat(coord, member_id="c", topics=["foo", "not-created-yet"])
    assert _RecordingAssignor.seen[-1] == HETEROGENEOUS
