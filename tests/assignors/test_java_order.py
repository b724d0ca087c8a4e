"""kgroup.assignors.java_order against values Java 17 and Kafka 4.4 print (the hash codes and
iteration orders below were produced by ``String.hashCode``, ``HashMap``, ``HashSet`` and
``Uuid.hashCode``; tests/live/test_kafka_assignor_oracle.py checks whole assignments)."""

from kgroup.assignors.java_order import (
    copy_capacity, hash_order, int_hash, member_order, partition_set_order, string_hash,
    timeline_capacity, timeline_order, uuid_hash,
)


def test_string_hash_is_javas_over_utf16_code_units():
    cases = {"": 0, "a": 97, "hello": 99162322, "Aa": 2112, "BB": 2112, "\uff21": 65313,
             "\U0001F600": 1772899, "2kWfwmU6uyaJFaiihSHl4w": -1367749767}
    assert {text: string_hash(text) for text in cases} == cases


def test_uuid_hash_is_kafkas():
    assert uuid_hash("A4s3VTwiI5CTbEp6POw9AQ") == -1876335682


def test_hash_map_order_keeps_colliding_keys_in_put_order():
    # "Aa" and "BB" share a hash; Java printed [m-1, Aa, BB, zz, C, m-17, m-9]
    put = ["m-9", "m-1", "Aa", "BB", "m-17", "zz", "C"]
    assert hash_order(put, string_hash) == ["m-1", "Aa", "BB", "zz", "C", "m-17", "m-9"]


def test_partition_set_order_is_a_copied_hash_set():
    # new HashSet<>(List.of(3, 17, 33, 1, 20)) printed [17, 33, 1, 3, 20]: 16 buckets, 17 and 33 in 1
    assert copy_capacity(5) == 16
    assert hash_order([3, 17, 33, 1, 20], int_hash, copy_capacity(5)) == [17, 33, 1, 3, 20]
    # a record's partitions are put in ascending
    assert partition_set_order([3, 17, 33, 1, 20]) == [1, 17, 33, 3, 20]
    assert hash_order(range(20), int_hash, copy_capacity(20)) == list(range(20))


def test_timeline_table_grows_from_two_slots_and_walks_a_slot_last_put_first():
    assert [timeline_capacity(n) for n in (0, 1, 2, 3, 4, 6, 7, 12, 13)] == [2, 2, 2, 4, 4, 8, 8, 16, 16]
    keys = [f"member-{i}" for i in range(8)]
    order = timeline_order(keys, 2)                   # two slots: a long chain each
    assert sorted(order) == sorted(keys)
    # within one slot the last key put comes first
    slot = lambda k: ((string_hash(k) * 0x9E3779B97F4A7C15) & (2**64 - 1)) >> 63
    for a, b in zip(order, order[1:]):
        if slot(a) == slot(b):
            assert keys.index(a) > keys.index(b)


def test_member_order_walks_added_members_after_the_table():
    table = ["x1", "x2", "x3"]
    # "x4" added by the operation: Kafka's overlay view puts it last before the HashMap, so it
    # only matters where it shares a HashMap bucket with a table member
    assert sorted(member_order(table + ["x4"], added={"x4"})) == sorted(table + ["x4"])
    assert member_order(["Aa", "BB"], added={"Aa"}) == ["BB", "Aa"]
    assert member_order(["Aa", "BB"]) in (["Aa", "BB"], ["BB", "Aa"])
