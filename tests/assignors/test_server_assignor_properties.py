"""Properties of the server-side assignors over random groups (hypothesis): every subscribed
partition assigned exactly once to a subscriber, balance, stickiness, determinism."""

import base64
import random

from helpers.server_assignors import group, member
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.assignors.server_api import GroupSpec, TopicMetadata, get_server_assignor
from kgroup.assignors.server_order import topic_order_key

TOPIC_IDS = ["T1-A4s3VTwiI5CTbEp6POw", "T2-B4s3VTwiI5YHbPp6YUe", "T3-CU8fVTLCz5YMkLoDQsa", "T4-Tw9fVTLCz5HbPp6YQsa"]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def groups(draw, homogeneous: bool):
    """(GroupSpec, topics): random subscriptions and a random valid current target assignment."""
    counts = draw(st.lists(st.integers(0, 12), min_size=1, max_size=4))
    topics = {t: TopicMetadata(t, f"topic{i}", n) for i, (t, n) in enumerate(zip(TOPIC_IDS, counts))}
    ids = draw(st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=1, max_size=8, unique=True))
    topic_sets = st.frozensets(st.sampled_from(sorted(topics)), min_size=1)
    if homogeneous:
        shared = draw(topic_sets)
        subscriptions = {m: shared for m in ids}
    else:
        subscriptions = {m: draw(topic_sets) for m in ids}
    rows = {m: {} for m in ids}
    for topic, meta in topics.items():
        subscribers = [m for m in ids if topic in subscriptions[m]]
        for p in range(meta.num_partitions):
            owner = draw(st.sampled_from(subscribers + [None])) if subscribers else None
            if owner is not None:
                rows[owner].setdefault(topic, set()).add(p)
    members = {m: member(subscriptions[m], rows[m]) for m in ids}
    return group(members, None if not homogeneous else "HOMOGENEOUS"), topics


def assert_valid(g: GroupSpec, topics, result):
    assert set(result) == set(g.members)
    seen = set()
    for m, row in result.items():
        for topic, parts in row.items():
            assert topic in g.members[m].subscribed_topic_ids
            for p in parts:
                assert 0 <= p < topics[topic].num_partitions and (topic, p) not in seen
                seen.add((topic, p))
    subscribed = set().union(*(s.subscribed_topic_ids for s in g.members.values()))
    assert seen == {(t, p) for t in subscribed for p in range(topics[t].num_partitions)}


def sizes(result):
    return [sum(len(parts) for parts in row.values()) for row in result.values()]


def as_current(g: GroupSpec, result) -> GroupSpec:
    members = {m: member(s.subscribed_topic_ids, result[m], s.instance_id) for m, s in g.members.items()}
    return GroupSpec(members, g.subscription_type)


@SETTINGS
@given(groups(homogeneous=True), st.sampled_from(["uniform", "range"]))
def test_homogeneous_valid_and_balanced(case, name):
    g, topics = case
    result = get_server_assignor(name).assign(g, topics)
    assert_valid(g, topics, result)
    if name == "uniform":
        assert max(sizes(result)) - min(sizes(result)) <= 1
    else:                                     # range balances each topic on its own
        for topic in g.members[next(iter(g.members))].subscribed_topic_ids:
            per_member = [len(row.get(topic, ())) for row in result.values()]
            assert max(per_member) - min(per_member) <= 1


@SETTINGS
@given(groups(homogeneous=False), st.sampled_from(["uniform", "range"]))
def test_heterogeneous_valid(case, name):
    g, topics = case
    assert_valid(g, topics, get_server_assignor(name).assign(g, topics))


@SETTINGS
@given(st.booleans(), st.data(), st.sampled_from(["uniform", "range"]))
def test_deterministic_whatever_the_topic_order(homogeneous, data, name):
    # the members' order is part of the input (Kafka walks them in its hash maps' order, which
    # the order they joined decides between members sharing a bucket); the topics' is not
    g, topics = data.draw(groups(homogeneous))
    assignor = get_server_assignor(name)
    assert assignor.assign(g, topics) == assignor.assign(g, dict(reversed(topics.items())))


@SETTINGS
@given(st.booleans(), st.data(), st.sampled_from(["uniform", "range"]))
def test_sticky_when_nothing_changes(homogeneous, data, name):
    g, topics = data.draw(groups(homogeneous))
    assignor = get_server_assignor(name)
    first = assignor.assign(g, topics)
    assert assignor.assign(as_current(g, first), topics) == first


@SETTINGS
@given(groups(homogeneous=True), st.data())
def test_uniform_one_member_leaves_moves_only_its_partitions(case, data):
    g, topics = case
    uniform = get_server_assignor("uniform")
    before = uniform.assign(g, topics)
    if len(before) < 2:
        return
    leaving = data.draw(st.sampled_from(sorted(before)))
    remaining = as_current(g, before)
    remaining = GroupSpec({m: s for m, s in remaining.members.items() if m != leaving}, g.subscription_type)
    after = uniform.assign(remaining, topics)
    for m in after:                       # everyone keeps what it had; only the leaver's partitions move
        for topic, parts in before[m].items():
            assert parts <= after[m].get(topic, frozenset())
    assert max(sizes(after)) - min(sizes(after)) <= 1


def test_topic_order_is_kafka_uuid_order_signed_halves():
    negative = bytes([0x80]) + bytes(15)               # most significant long < 0 sorts first
    positive = bytes([0x01]) + bytes(15)
    low_negative = bytes(8) + bytes([0xFF]) * 8        # same msb, least significant long -1 < 0
    low_zero = bytes(16)
    assert sorted([positive, low_zero, negative, low_negative], key=topic_order_key) == [
        negative, low_negative, low_zero, positive]
    # the text form (Uuid.toString, url-safe base64) orders like the bytes
    as_text = {base64.urlsafe_b64encode(b).decode().rstrip("="): b for b in (negative, positive)}
    assert [as_text[t] for t in sorted(as_text, key=topic_order_key)] == [negative, positive]
