"""kgroup against Tansu, a Kafka-compatible broker that is not Kafka: where a broker answers in its
own way, kgroup picks what Kafka's tools would ask and still shows the group.

Tansu answers ConsumerGroupDescribe for a classic group (as an empty consumer group), and cannot
answer OffsetFetch v2–v7 for all topics; its ListGroups v5 gives each group's type (KIP-1043), so
describe asks DescribeGroups for a classic group, and OffsetFetch goes out in the batched v8+
form Kafka's AdminClient sends.
"""

import json

import pytest
from click.testing import CliRunner

from helpers.kafka_groups import PythonMember, close_all, create_topic, produce, wait_for
from kgroup.commands.cli import cli

pytestmark = pytest.mark.tansu

RECORDS = {0: 3, 1: 4, 2: 5}


def kgroup(tansu, *args):
    result = CliRunner().invoke(cli, [*args, "--bootstrap-server", tansu.bootstrap, "-o", "json",
                                      "--timeout", "20"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_classic_group_on_tansu_is_described_with_its_members_and_offsets(tansu):
    create_topic(tansu.bootstrap, "tansu-orders", 3)
    produce(tansu.bootstrap, "tansu-orders", RECORDS)
    members = [PythonMember(tansu.bootstrap, "tansu-app", ["tansu-orders"], f"node-{i}") for i in range(2)]
    try:
        wait_for(lambda: sorted(p for m in members for _, p in m.assignment) == [0, 1, 2], 60,
                 "the two members owning the three partitions")
        def described():
            (group,) = kgroup(tansu, "describe", "tansu-app", "--offsets")
            committed = {r["partition"]: r["committed"] for r in group["offsets"]}
            # Tansu says "Unknown" for a moment while the group forms
            return group if committed == RECORDS and group["state"] == "Stable" else None

        group = wait_for(described, 60, "a Stable group with the consumers' commits of every record")
        assert group["type"] == "classic"
        assert len(group["members"]) == 2           # not Tansu's empty "consumer group"
        assert {m["member_type"] for m in group["members"]} == {"classic"}
        listed = kgroup(tansu, "list")
        assert [(g["group"], g["type"]) for g in listed] == [("tansu-app", "classic")]
    finally:
        close_all(members)
