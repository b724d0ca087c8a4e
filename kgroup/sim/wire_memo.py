"""What a simulated classic consumer encoded, remembered for the one that decodes those very bytes.

In every classic rebalance the leader decodes each member's subscription (the JoinGroup metadata
the coordinator hands it) and each member decodes the assignment the leader encoded for it (its
SyncGroup answer): a dynamic group's rolling bounce does both some members² times. Encoder and
decoder live in this process, so the encoder notes, under the member id the bytes are for, the
bytes and the value it encoded; the decoder takes that value when the coordinator handed over
equal bytes (equal bytes decode to the same value) and decodes them otherwise (e.g. a static
member's metadata the coordinator kept from an earlier process). The bytes on the wire, and so
every outcome, are the same either way. ``check`` encodes and decodes anyway and compares (the
tests set it).

Encoding is remembered too. A subscription's bytes end with its generation and its rack (none):
every member rejoins each rebalance with the last generation and the partitions it owns or owned,
sets that recur from member to member and rebalance to rebalance (a range assignor's ranges, a
sticky assignor's holdings), so the bytes before that tail are kept per (topics, partitions) and
only the tail is written anew. The tail is checked at the first encoding of each head: bytes that
do not end with it (another layout) are never kept. An assignment's bytes are its partitions
alone: a leader assigning any member partitions an earlier assignment had hands over the bytes
encoded then.
"""

from __future__ import annotations

import struct

from kgroup.assignors import MemberInfo
from kgroup.records import decode_assignment, encode_assignment, encode_subscription

SUBSCRIPTION_VERSION = ASSIGNMENT_VERSION = 3
_SUBSCRIPTION_TAIL = struct.Struct(">ih")       # generationId, rackId's length (-1: null)
_KEPT = 1 << 14                 # encodings remembered by content; then forgotten, all at once


class WireMemo:
    check = False      # True: assert every remembered value is what encoding or decoding gives

    def __init__(self):
        self._subscriptions: dict = {}    # member id -> (bytes, topics, owned, generation)
        self._heads: dict = {}            # (topics, owned) -> (bytes before the tail, owned listed)
        self._assignments: dict = {}      # member id -> (bytes, [(topic, partition), ...])
        self._encodings: dict = {}        # partitions -> (bytes, [(topic, partition), ...])

    # ---- subscriptions (member -> leader) --------------------------------------------------
    def encode_subscription(self, member_id: str, topics: tuple, owned: list,
                            generation: int) -> bytes:
        """``owned``: (topic, partition) pairs; the bytes list them by topic, each topic once."""
        topics = tuple(topics)
        key = (topics, tuple(owned))
        known = self._heads.get(key)
        tail = _SUBSCRIPTION_TAIL.pack(generation, -1)
        if known is None:
            data, decoded = _encoded_subscription(topics, owned, generation)
            if data.endswith(tail):
                if len(self._heads) >= _KEPT:
                    self._heads.clear()
                self._heads[key] = (data[:-len(tail)], decoded)
        else:
            data, decoded = known[0] + tail, known[1]
            if self.check:
                assert (data, decoded) == _encoded_subscription(topics, owned, generation), key
        if member_id:
            self._subscriptions[member_id] = (data, topics, decoded, generation)
        return data

    def member_info(self, member_id: str, instance_id: str | None, metadata: bytes) -> MemberInfo:
        """``MemberInfo.from_bytes(member_id, instance_id, metadata)``."""
        sent = self._subscriptions.get(member_id)
        if sent is None or sent[0] != metadata:
            return MemberInfo.from_bytes(member_id, instance_id, metadata)
        info = MemberInfo(member_id, instance_id, sent[1], sent[2], sent[3])
        if self.check:
            assert info == MemberInfo.from_bytes(member_id, instance_id, metadata), info
        return info

    # ---- assignments (leader -> member) ----------------------------------------------------
    def encode_assignment(self, member_id: str, parts: list) -> bytes:
        """``parts``: the member's (topic, partition) pairs, sorted."""
        key = tuple(parts)
        known = self._encodings.get(key)
        if known is None:
            known = _encoded_assignment(parts)
            if len(self._encodings) >= _KEPT:
                self._encodings.clear()
            self._encodings[key] = known
        elif self.check:
            assert known == _encoded_assignment(parts), key
        self._assignments[member_id] = known
        return known[0]

    def assigned(self, member_id: str, assignment: bytes) -> list:
        """The (topic, partition) pairs of a SyncGroup answer's non-empty assignment, in order."""
        sent = self._assignments.get(member_id)
        if sent is not None and sent[0] == assignment:
            if self.check:
                assert sent[1] == _decoded_assignment(assignment), sent
            return list(sent[1])
        return _decoded_assignment(assignment)


def _by_topic(pairs) -> list:
    """(topic, [partition, ...]) per topic, topics sorted, partitions in the order given."""
    by_topic: dict = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return sorted(by_topic.items())


def _encoded_subscription(topics: tuple, owned: list, generation: int) -> tuple[bytes, tuple]:
    """(the bytes, the owned pairs in the order they list them)."""
    listed = _by_topic(owned)
    data = encode_subscription({
        "topics": list(topics), "userData": None,
        "ownedPartitions": [{"topic": t, "partitions": ps} for t, ps in listed],
        "generationId": generation, "rackId": None}, SUBSCRIPTION_VERSION)
    return data, tuple((t, p) for t, ps in listed for p in ps)


def _encoded_assignment(parts: list) -> tuple[bytes, list]:
    """(the bytes, the pairs in the order they list them)."""
    listed = _by_topic(parts)
    data = encode_assignment({"assignedPartitions": [{"topic": t, "partitions": ps} for t, ps in listed],
                              "userData": None}, ASSIGNMENT_VERSION)
    return data, [(t, p) for t, ps in listed for p in ps]


def _decoded_assignment(assignment: bytes) -> list:
    assigned = []
    for tp in decode_assignment(assignment)["assignedPartitions"] or ():
        assigned.extend((tp["topic"], p) for p in tp["partitions"])
    return assigned
