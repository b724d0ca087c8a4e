"""Client-side assignors: exact plans, KIP-345's sort-key example, removal predictions."""

import pytest

from kgroup.records import encode_assignment, encode_subscription
from kgroup.assignors import (ASSIGNORS, MemberInfo, get_assignor, predict_after_removal,
                                  sort_key)


def members(*specs, topics=("t",)):
    """specs: (member_id, instance_id or None, owned list)."""
    return [MemberInfo(mid, inst, tuple(topics), tuple((topics[0], n) for n in owned), 1)
            for mid, inst, owned in specs]


def parts(*numbers, topic="t"):
    return [(topic, n) for n in numbers]


# ---- KIP-345: "instance id as the first sort key" (3 members, 9 partitions, range) ----------
def test_kip345_range_example_member_id_order_shuffles_after_restart():
    range_by_member_id = get_assignor("range", by_instance_id=False)
    before = range_by_member_id.assign(members(("1", "A", []), ("2", "B", []), ("3", "C", [])),
                                       {"t": 9})
    assert before == {"1": parts(0, 1, 2), "2": parts(3, 4, 5), "3": parts(6, 7, 8)}
    # A restarts and comes back as member 4: every member's range changes.
    after = range_by_member_id.assign(members(("4", "A", []), ("2", "B", []), ("3", "C", [])),
                                      {"t": 9})
    assert after == {"2": parts(0, 1, 2), "3": parts(3, 4, 5), "4": parts(6, 7, 8)}


def test_kip345_range_example_instance_id_order_is_stable_across_restart():
    range_by_instance = get_assignor("range")
    before = range_by_instance.assign(members(("1", "A", []), ("2", "B", []), ("3", "C", [])),
                                      {"t": 9})
    after = range_by_instance.assign(members(("4", "A", []), ("2", "B", []), ("3", "C", [])),
                                     {"t": 9})
    assert before == {"1": parts(0, 1, 2), "2": parts(3, 4, 5), "3": parts(6, 7, 8)}
    assert after == {"4": parts(0, 1, 2), "2": parts(3, 4, 5), "3": parts(6, 7, 8)}


def test_sort_key_puts_static_members_first_then_dynamic_by_member_id():
    group = [MemberInfo("a", None), MemberInfo("z", "inst-b"), MemberInfo("b", None),
             MemberInfo("y", "inst-a")]
    assert [m.member_id for m in sorted(group, key=sort_key)] == ["y", "z", "a", "b"]
    assert [m.member_id for m in sorted(group, key=lambda m: sort_key(m, False))] == \
        ["a", "b", "y", "z"]


# ---- exact plans -----------------------------------------------------------------------------
def test_range_per_topic_with_remainders_go_to_the_first_members():
    plan = get_assignor("range").assign(
        members(("m1", None, []), ("m2", None, []), topics=("a", "b")), {"a": 3, "b": 5})
    assert plan == {"m1": [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)],
                    "m2": [("a", 2), ("b", 3), ("b", 4)]}


def test_range_only_subscribers_of_a_topic_share_it():
    group = [MemberInfo("m1", None, ("a",)), MemberInfo("m2", None, ("a", "b"))]
    plan = get_assignor("range").assign(group, {"a": 2, "b": 2})
    assert plan == {"m1": [("a", 0)], "m2": [("a", 1), ("b", 0), ("b", 1)]}


def test_roundrobin_deals_partitions_across_topics():
    plan = get_assignor("roundrobin").assign(
        members(("m1", None, []), ("m2", None, []), ("m3", None, []), topics=("a", "b")),
        {"a": 2, "b": 3})
    assert plan == {"m1": [("a", 0), ("b", 1)], "m2": [("a", 1), ("b", 2)], "m3": [("b", 0)]}


def test_sticky_keeps_owned_partitions_and_balances_a_newcomer():
    group = members(("m1", None, [0, 1, 2, 3, 4]), ("m2", None, [5, 6, 7, 8, 9]), ("m3", None, []))
    plan = get_assignor("sticky").assign(group, {"t": 10})
    assert plan == {"m1": parts(0, 1, 2, 3), "m2": parts(5, 6, 7), "m3": parts(4, 8, 9)}
    moved = {tp for tp in plan["m3"]}
    assert moved == {("t", 4), ("t", 8), ("t", 9)}


def test_sticky_higher_generation_wins_a_double_claim():
    group = [MemberInfo("m1", None, ("t",), (("t", 0), ("t", 1)), 3),
             MemberInfo("m2", None, ("t",), (("t", 1),), 4)]
    plan = get_assignor("sticky").assign(group, {"t": 2})
    assert plan == {"m1": parts(0), "m2": parts(1)}


def test_sticky_with_differing_subscriptions_is_balanced_where_eligible():
    group = [MemberInfo("m1", None, ("a",)), MemberInfo("m2", None, ("a", "b"))]
    plan = get_assignor("sticky").assign(group, {"a": 2, "b": 2})
    assert plan == {"m1": [("a", 0), ("a", 1)], "m2": [("b", 0), ("b", 1)]}


def test_cooperative_sticky_withholds_partitions_still_owned_elsewhere():
    group = members(("m1", None, [0, 1, 2, 3, 4]), ("m2", None, [5, 6, 7, 8, 9]), ("m3", None, []))
    assignor = get_assignor("cooperative-sticky")
    first = assignor.assign(group, {"t": 10})
    assert first == {"m1": parts(0, 1, 2, 3), "m2": parts(5, 6, 7), "m3": []}
    # Second round: m1 and m2 revoked 4, 8, 9; now nobody owns them.
    second = assignor.assign(members(("m1", None, [0, 1, 2, 3]), ("m2", None, [5, 6, 7]),
                                     ("m3", None, [])), {"t": 10})
    assert second == {"m1": parts(0, 1, 2, 3), "m2": parts(5, 6, 7), "m3": parts(4, 8, 9)}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_every_assignor_assigns_each_partition_once_and_balances(name):
    group = members(*[(f"m{i}", f"i{i}", []) for i in range(7)])
    plan = get_assignor(name).assign(group, {"t": 100})
    flat = sorted(tp for ps in plan.values() for tp in ps)
    assert flat == parts(*range(100))
    assert {len(ps) for ps in plan.values()} == {14, 15}


def test_get_assignor_rejects_unknown_name():
    with pytest.raises(ValueError, match="unknown assignor 'hash'; choose from range"):
        get_assignor("hash")


def test_assign_names_an_unknown_topic_and_member():
    with pytest.raises(ValueError, match="member 'm1' subscribes to unknown topic 'x'"):
        get_assignor("range").assign([MemberInfo("m1", None, ("x",))], {"t": 1})
    with pytest.raises(ValueError, match=r"member 'm1' owns 3, not a \(topic, partition\) pair"):
        get_assignor("sticky").assign([MemberInfo("m1", None, ("t",), (3,))], {"t": 1})
    with pytest.raises(ValueError, match="member 'm1' listed twice"):
        get_assignor("range").assign([MemberInfo("m1", None, ("t",))] * 2, {"t": 1})


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_assign_without_checking_owned_pairs_gives_the_same_plan(name):
    """check_owned=False (the simulated leader's own members) skips only the look at each owned
    pair: the plan is the same, and unknown topics and duplicates are still refused."""
    group = members(("m0", None, [0, 1, 2]), ("m1", "i1", [3, 4]), ("m2", None, []),
                    ("m3", "i3", [5, 6, 7, 8, 9]), topics=("t", "u"))
    topics = {"t": 10, "u": 4}
    assignor = get_assignor(name)
    assert assignor.assign(group, topics, check_owned=False) == assignor.assign(group, topics)
    assert assignor.assign(group, topics) == assignor.assign(group, topics)       # kept pairs reused
    with pytest.raises(ValueError, match="member 'm1' subscribes to unknown topic 'x'"):
        assignor.assign([MemberInfo("m1", None, ("x",))], {"t": 1}, check_owned=False)
    with pytest.raises(ValueError, match="member 'm1' listed twice"):
        assignor.assign([MemberInfo("m1", None, ("t",))] * 2, {"t": 1}, check_owned=False)


# ---- predict_after_removal (used by remove-members --dry-run) -------------------------------
def test_predict_after_removal_range_by_instance_id():
    group = members(("m-a", "A", [0, 1, 2]), ("m-b", "B", [3, 4, 5]), ("m-c", "C", [6, 7, 8]))
    prediction = predict_after_removal(group, ["B"], {"t": 9}, "range")
    assert prediction.assignment == {"m-a": parts(0, 1, 2, 3, 4), "m-c": parts(5, 6, 7, 8)}
    assert prediction.moves == [("t", 3, "m-b", "m-a"), ("t", 4, "m-b", "m-a"),
                                ("t", 5, "m-b", "m-c")]
    assert prediction.moved_from("m-b") == [("t", 3, "m-a"), ("t", 4, "m-a"), ("t", 5, "m-c")]
    assert prediction.rounds == 1


def test_predict_after_removal_sticky_moves_only_the_removed_members_partitions():
    group = members(("m-a", "A", [0, 1, 2]), ("m-b", "B", [3, 4, 5]), ("m-c", "C", [6, 7, 8]))
    prediction = predict_after_removal(group, ["m-b"], {"t": 9}, "cooperative-sticky")
    assert prediction.moves == [("t", 3, "m-b", "m-a"), ("t", 4, "m-b", "m-c"),
                                ("t", 5, "m-b", "m-a")]
    assert prediction.rounds == 1
    grow = predict_after_removal(group, ["C"], {"t": 12}, "cooperative-sticky")
    # free partitions are handed out round-robin, as Kafka's and librdkafka's sticky assignors do
    assert grow.assignment == {"m-a": parts(0, 1, 2, 6, 8, 10), "m-b": parts(3, 4, 5, 7, 9, 11)}
    assert grow.rounds == 1


def test_predict_after_removal_names_an_unknown_member():
    with pytest.raises(ValueError, match="member 'nobody' is not in the group"):
        predict_after_removal(members(("m", "A", [])), ["nobody"], {"t": 1})


def test_member_info_from_describe_bytes():
    subscription = encode_subscription({"topics": ["t", "u"], "userData": None,
                                        "ownedPartitions": [{"topic": "t", "partitions": [9]}],
                                        "generationId": 4, "rackId": None}, 3)
    assignment = encode_assignment({"assignedPartitions": [{"topic": "t", "partitions": [0, 1]},
                                                           {"topic": "u", "partitions": [2]}],
                                    "userData": None}, 3)
    info = MemberInfo.from_bytes("m1", "inst-1", subscription, assignment)
    assert info == MemberInfo("m1", "inst-1", ("t", "u"), (("t", 0), ("t", 1), ("u", 2)), 4)
    assert MemberInfo.from_bytes("m1", None, subscription).owned == (("t", 9),)


def test_prediction_from_a_real_group_metadata_record(kafka_vectors):
    """Kafka-serialized GroupMetadata (2 members, consumer protocol v0) -> removal prediction."""
    from kgroup.records import decode_value

    vector = next(v for v in kafka_vectors
                  if v["name"] == "GroupMetadata value v0 (2 members, consumer protocol v0)")
    value = decode_value(2, bytes.fromhex(vector["hex"]["value"])).data
    group = [MemberInfo.from_bytes(m["memberId"], m.get("groupInstanceId"), m["subscription"],
                                   m["assignment"]) for m in value["members"]]
    assert group[0] == MemberInfo("member-1", None, ("orders", "payments"),
                                  (("orders", 0), ("orders", 1), ("payments", 2)), -1)
    assert group[1].owned == ()
    prediction = predict_after_removal(group, ["member-1"], {"orders": 2, "payments": 3},
                                       value["protocol"])
    assert prediction.assignment == {"member-2": [("orders", 0), ("orders", 1), ("payments", 0),
                                                  ("payments", 1), ("payments", 2)]}
    assert prediction.moved_from("member-1") == [("orders", 0, "member-2"),
                                                 ("orders", 1, "member-2"),
                                                 ("payments", 2, "member-2")]
    assert ("payments", 0, None, "member-2") in prediction.moves


def test_sticky_fills_round_robin_then_extras_first_come_first_served():
    fresh = members(("m-a", "A", []), ("m-b", "B", []), ("m-c", "C", []))
    plan = get_assignor("sticky").assign(fresh, {"t": 8})
    assert plan == {"m-a": parts(0, 3, 6), "m-b": parts(1, 4, 7), "m-c": parts(2, 5)}
