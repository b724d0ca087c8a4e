"""What is read from a side, besides the clients' own records: the group as DescribeGroups shows it
(state, protocol type, protocol = assignor, members with instance ids, client ids and hosts, their
subscriptions and assignments decoded), its committed offsets (OffsetFetch), the answers to admin
requests (LeaveGroup removal, DeleteGroups, OffsetDelete, an admin OffsetCommit), and the group's
records in ``__consumer_offsets`` as ``kgroup decode-offsets`` decodes them, in log order.

Topic names are written short (the scenario's names); member ids are left as the broker made them
(``compare`` maps them to stable labels).

``DESCRIBERS`` maps a scenario's ``protocol`` to the function describing its group at a checkpoint:
the consumer-protocol scenarios add ConsumerGroupDescribe there.
"""

from __future__ import annotations

import json
import subprocess
import sys

from kgroup.client.wire import error_name
from kgroup.records.consumer_protocol import decode_assignment, decode_subscription

from helpers import TESTS

ROOT = TESTS.parent


class Observer:
    """One scenario's view of one side, through one kgroup ClusterClient (used by one thread)."""

    def __init__(self, bootstrap: str, scenario):
        from kgroup.client.wire import ClusterClient

        self.bootstrap, self.scenario = bootstrap, scenario
        self.client = ClusterClient(bootstrap, timeout_s=15)

    def close(self):
        self.client.close()

    def coordinator(self) -> int:
        return self.client.find_coordinator(self.scenario.group).node_id

    def send(self, request):
        return self.client.send(request, node_id=self.coordinator())

    # -- DescribeGroups ------------------------------------------------------------------------
    def describe_classic(self) -> dict:
        from kafka.protocol.admin import DescribeGroupsRequest

        response = self.send(DescribeGroupsRequest(version=5, groups=[self.scenario.group],
                                                   include_authorized_operations=False))
        g = response.groups[0]
        members = []
        for m in g.members:
            members.append({"member_id": m.member_id, "instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            **self._subscription(m.member_metadata), **self._assignment(m.member_assignment)})
        from helpers.differential.compare import in_kafka_map_order

        in_map_order = in_kafka_map_order([m["member_id"] for m in members])
        members.sort(key=lambda m: (m["client_id"], m["instance_id"] or "", m["member_id"]))
        return {"error": error_name(g.error_code), "state": g.group_state,
                "protocol_type": g.protocol_type, "protocol": g.protocol_data, "members": members,
                "members_in_kafka_map_order": in_map_order}

    def _subscription(self, raw: bytes) -> dict:
        if not raw:
            return {"subscription": None}
        try:
            data = decode_subscription(raw)
        except Exception:  # noqa: BLE001 - an undecodable one is shown as bytes
            return {"subscription": raw.hex()}
        owned = sorted(f"{self.scenario.short(t['topic'])}-{p}" for t in data.get("ownedPartitions") or []
                       for p in t["partitions"])
        return {"subscription": sorted(self.scenario.short(t) for t in data["topics"]),
                "owned": owned, "generation": data.get("generationId", -1),
                "rack": data.get("rackId")}

    def _assignment(self, raw: bytes) -> dict:
        if not raw:
            return {"assignment": []}
        try:
            data = decode_assignment(raw)
        except Exception:  # noqa: BLE001
            return {"assignment": raw.hex()}
        return {"assignment": sorted(f"{self.scenario.short(t['topic'])}-{p}"
                                     for t in data["assignedPartitions"] for p in t["partitions"])}

    def describe(self) -> dict:
        return DESCRIBERS[self.scenario.protocol](self)

    # -- offsets ---------------------------------------------------------------------------------
    def committed(self) -> dict:
        from kafka.protocol.consumer import OffsetFetchRequest

        response = self.send(OffsetFetchRequest(version=7, group_id=self.scenario.group, topics=None,
                                                require_stable=False))
        out = {}
        if response.error_code:
            return {"error": error_name(response.error_code)}
        for t in response.topics:
            for p in t.partitions:
                key = f"{self.scenario.short(t.name)}-{p.partition_index}"
                out[key] = p.committed_offset if not p.error_code else error_name(p.error_code)
        return dict(sorted(out.items()))

    # -- admin requests --------------------------------------------------------------------------
    def remove_members(self, instance_ids, reason=None) -> dict:
        from kafka.protocol.consumer import LeaveGroupRequest

        M = LeaveGroupRequest.MemberIdentity
        response = self.send(LeaveGroupRequest(
            version=5, group_id=self.scenario.group,
            members=[M(member_id="", group_instance_id=i, reason=reason) for i in instance_ids]))
        return {"error": error_name(response.error_code),
                "members": [(m.group_instance_id, error_name(m.error_code)) for m in response.members]}

    def delete_group(self) -> str:
        from kafka.protocol.admin import DeleteGroupsRequest

        response = self.send(DeleteGroupsRequest(version=2, groups_names=[self.scenario.group]))
        return error_name(response.results[0].error_code)

    def partitions(self, topic: str) -> list[int]:
        from kafka.protocol.metadata import MetadataRequest

        response = self.client.send(MetadataRequest(version=7, topics=[topic], allow_auto_topic_creation=False))
        return sorted(p.partition_index for t in response.topics for p in t.partitions)

    def delete_offsets(self, short: str) -> dict:
        from kafka.protocol.consumer import OffsetDeleteRequest

        topic = self.scenario.topic(short)
        T = OffsetDeleteRequest.OffsetDeleteRequestTopic
        P = T.OffsetDeleteRequestPartition
        response = self.send(OffsetDeleteRequest(
            version=0, group_id=self.scenario.group,
            topics=[T(name=topic, partitions=[P(partition_index=p) for p in self.partitions(topic)])]))
        return {"error": error_name(response.error_code),
                "partitions": {f"{short}-{p.partition_index}": error_name(p.error_code)
                               for t in response.topics for p in t.partitions}}

    def reset_offsets(self, short: str, offset: int) -> dict:
        from kafka.protocol.consumer import OffsetCommitRequest

        topic = self.scenario.topic(short)
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        P = T.OffsetCommitRequestPartition
        response = self.send(OffsetCommitRequest(
            version=9, group_id=self.scenario.group, generation_id_or_member_epoch=-1, member_id="",
            group_instance_id=None,
            topics=[T(name=topic, partitions=[P(partition_index=p, committed_offset=offset,
                                                committed_leader_epoch=-1, committed_metadata="")
                                              for p in self.partitions(topic)])]))
        return {f"{short}-{p.partition_index}": error_name(p.error_code)
                for t in response.topics for p in t.partitions}

    # -- __consumer_offsets ----------------------------------------------------------------------
    def records(self) -> list[dict]:
        """The group's records, decoded by ``kgroup decode-offsets`` (a subprocess: the CLI is not
        re-entrant across threads), without their positions (offsets differ with the other groups
        sharing the partition)."""
        done = subprocess.run([sys.executable, "-m", "kgroup.commands.cli", "decode-offsets",
                               "--bootstrap-server", self.bootstrap, "--group", self.scenario.group,
                               "-o", "jsonl"], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
        out = []
        for line in done.stdout.splitlines():
            row = json.loads(line)
            out.append({"type": row.get("type"), "key_version": row.get("key_version"),
                        "key": row.get("key"), "value_version": row.get("value_version"),
                        "value": row.get("value")})
        if done.returncode not in (0, 1):
            out.append({"type": "decode-offsets problem", "value": done.stderr.strip()[-500:]})
        return self._shorten(self._named_topics(out))

    def topic_names(self) -> dict:
        """Topic id (as decode-offsets writes it: URL-safe base64) -> name, from Metadata v12.
        Each side makes its own random topic ids; the records are compared with the names."""
        import base64

        from kafka.protocol.metadata import MetadataRequest

        response = self.client.send(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
        out = {}
        for t in response.topics:
            raw = getattr(t.topic_id, "bytes", None)
            key = base64.urlsafe_b64encode(raw).decode().rstrip("=") if raw else str(t.topic_id)
            out[key] = t.name
        return out

    def _named_topics(self, records: list) -> list:
        names = None

        def named(value):
            nonlocal names
            if isinstance(value, dict):
                out = {}
                for k, v in value.items():
                    if k == "topicId" and isinstance(v, str):
                        if names is None:
                            names = self.topic_names()
                        out[k] = "topic:" + self.scenario.short(names.get(v, v))
                    else:
                        out[k] = named(v)
                return out
            if isinstance(value, list):
                return [named(v) for v in value]
            return value
        return named(records)

    def _shorten(self, value):
        """Topic names shortened to the scenario's (in keys and decoded assignments), the group's
        name (in keys) written <group>."""
        if isinstance(value, dict):
            return {k: (self.scenario.short(v) if k == "topic" and isinstance(v, str)
                        else "<group>" if k == "group" and v == self.scenario.group
                        else self._shorten(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.scenario.short(v) if isinstance(v, str) and v.startswith("dt-") else self._shorten(v)
                    for v in value]
        return value


MEMBER_TYPES = {-1: "unknown", 0: "classic", 1: "consumer"}


def describe_consumer(observer: Observer) -> dict:
    """ConsumerGroupDescribe v1: state, group and assignment epochs, the server-side assignor, and
    each member's instance id, epoch, subscription (names and regex), current and target
    assignment, and type (classic or consumer protocol) — members sorted like DescribeGroups'."""
    from kgroup.client.consumer_describe import resolve_topic_ids
    from kgroup.protocol import ConsumerGroupDescribeRequest

    scenario = observer.scenario
    response = observer.send(ConsumerGroupDescribeRequest(version=1, group_ids=[scenario.group],
                                                          include_authorized_operations=False))
    g = response.groups[0]
    if g.error_code:
        return {"error": error_name(g.error_code), "error_message": g.error_message,
                "state": g.group_state or None, "members": []}
    unnamed = {tp.topic_id for m in g.members for a in (m.assignment, m.target_assignment)
               if a is not None for tp in a.topic_partitions if not tp.topic_name}
    names = resolve_topic_ids(observer.client, unnamed) if unnamed else {}

    def partitions(assignment):
        rows = assignment.topic_partitions if assignment is not None else ()
        return sorted(f"{scenario.short(tp.topic_name or names.get(tp.topic_id, str(tp.topic_id)))}-{p}"
                      for tp in rows for p in tp.partitions)

    members = [{"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                "client_host": m.client_host, "rack": m.rack_id, "member_epoch": m.member_epoch,
                "type": MEMBER_TYPES.get(m.member_type, m.member_type),
                "subscription": sorted(scenario.short(t) for t in m.subscribed_topic_names or []),
                "regex": scenario.short(m.subscribed_topic_regex) if m.subscribed_topic_regex else None,
                "assignment": partitions(m.assignment), "target": partitions(m.target_assignment)}
               for m in g.members]
    members.sort(key=lambda m: (m["client_id"], m["instance_id"] or "", m["member_id"]))
    return {"error": "NONE", "state": g.group_state, "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch, "assignor": g.assignor_name, "members": members}


def describe_migration(observer: Observer) -> dict:
    """A group that converts between classic and consumer: ConsumerGroupDescribe first, and
    DescribeGroups when that says the group is not a consumer group (as Kafka's AdminClient does);
    ``api`` says which answered, ``other_error`` what the other API said (each API refuses a group
    of the other type — that refusal is observable too)."""
    consumer = describe_consumer(observer)
    classic = observer.describe_classic()
    if consumer.get("error") == "NONE":
        return {"api": "ConsumerGroupDescribe", **consumer, "other_error": classic.get("error")}
    if classic.get("error") == "NONE" or consumer.get("error") == "GROUP_ID_NOT_FOUND":
        return {"api": "DescribeGroups", **classic, "other_error": consumer.get("error")}
    return {"api": None, **consumer, "other_error": classic.get("error")}


DESCRIBERS = {"classic": Observer.describe_classic, "consumer": describe_consumer,
              "migration": describe_migration}
