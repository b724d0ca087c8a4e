"""A streams group's topics and rules as kafka-streams-groups has them (client.streams_offsets,
client.streams_topics), without a broker: which topics are its input, its subscription and its
deletable internal topics, what makes it Empty, and what `delete` says of its internal topics. (The verbs themselves against Kafka 4.4 and a Kafka Streams
application: tests/live/test_kafka_streams_offsets.py.)"""

import pytest

from kgroup.client.streams_offsets import (active_group_error, member_removal_refusal, require_streams_selectors,
                                           subscribed_topics)
from kgroup.client.streams_topics import (inferred_internal, input_topics, internal_topic_failures, internal_topic_lines,
                                          internal_topics, settle_internal_topics)
from kgroup.errors import KgroupUsageError
from kgroup.views.streams import StreamsGroupView, StreamsMemberView

APP = "wc"
SUBTOPOLOGIES = [
    {"subtopology": "0", "source_topics": ["in"], "repartition_sink_topics": ["wc-by-value-repartition"],
     "state_changelog_topics": [], "repartition_source_topics": []},
    {"subtopology": "1", "source_topics": [], "repartition_sink_topics": [],
     "state_changelog_topics": ["wc-counts-changelog", "shared-changelog"],
     "repartition_source_topics": ["wc-by-value-repartition"]},
]


def view(state="Stable", members=()):
    return StreamsGroupView(APP, state, subtopologies=SUBTOPOLOGIES, members=list(members))


def member(member_id, instance=None, epoch=3):
    return StreamsMemberView(member_id, instance, "c", "/h", epoch, "p")


def test_input_topics_are_the_source_topics_and_the_subscription_adds_the_repartition_ones():
    assert input_topics(view()) == {"in"}
    assert subscribed_topics(view("Stable")) == {"in", "wc-by-value-repartition"}
    assert subscribed_topics(view("NotReady")) == {"in", "wc-by-value-repartition"}
    # StreamsGroup.isSubscribedToTopic: an Empty or Dead group subscribes to nothing
    assert subscribed_topics(view("Empty")) == subscribed_topics(view("Dead")) == set()


@pytest.mark.parametrize("topic, internal", [
    ("wc-counts-changelog", True), ("wc-by-value-repartition", True),
    ("wc-x-subscription-registration-topic", True), ("wc-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000007-topic", True),
    ("shared-changelog", False),              # not the application's prefix
    ("wc-counts", False),                     # no internal suffix
    ("wcx-counts-changelog", False),          # the prefix is the application id and a dash
])
def test_internal_topics_are_named_as_kafka_streams_names_them(topic, internal):
    assert inferred_internal(topic, APP) is internal


def test_deletable_internal_topics_are_the_repartition_and_changelog_topics_named_as_internal():
    assert internal_topics(view()) == (["wc-by-value-repartition", "wc-counts-changelog"], ["shared-changelog"])


def test_the_execute_refusal_names_the_running_instances_and_those_that_closed_static():
    line = active_group_error(view(members=[member("m1"), member("m2", "host-2-1"),
                                            member("m3", "host-3-1", epoch=-2)]))
    assert line.startswith("streams group 'wc' is Stable, not Empty: ")
    assert "stop the application's instances (m1, host-2-1)" in line
    assert "host-3-1 closed but the group keeps static members until their session times out" in line
    assert line.endswith("then wait (kgroup wait wc --state Empty)")
    assert "\n" not in line and "remove-members" not in line


def test_remove_members_and_instance_ids_do_not_apply():
    assert "Kafka 4.4 cannot remove its members" in member_removal_refusal(APP)
    require_streams_selectors(())
    with pytest.raises(KgroupUsageError, match="--instance-id"):
        require_streams_selectors(("host-1",))


FOUND = {"wc": (["wc-by-value-repartition", "wc-counts-changelog"], ["shared-changelog"])}


def rows(error=None):
    return [{"group": "wc", "state": None, "error": error}, {"group": "classic", "state": None, "error": None}]


def test_without_the_flag_the_internal_topics_are_kept_and_named():
    done = rows()
    settle_internal_topics(None, done, FOUND, delete=False, dry_run=False)
    assert [e["action"] for e in done[0]["internal_topics"]] == ["kept", "kept"]
    assert "internal_topics" not in done[1]            # other groups' rows stay as they were
    lines = internal_topic_lines(done, FOUND)
    assert lines[0] == ("group 'wc': internal topics kept: wc-by-value-repartition, wc-counts-changelog "
                        "(--internal-topics deletes them with the group)")
    assert "shared-changelog is not named as an internal topic" in lines[1]
    assert internal_topic_failures(done) == 0


def test_a_dry_run_with_the_flag_would_delete_them_and_a_refused_group_keeps_them():
    planned = rows()
    settle_internal_topics(None, planned, FOUND, delete=True, dry_run=True)
    assert [e["action"] for e in planned[0]["internal_topics"]] == ["would-delete", "would-delete"]
    refused = rows("NON_EMPTY_GROUP")
    settle_internal_topics(None, refused, FOUND, delete=True, dry_run=False)   # nothing to delete: no request
    assert [e["action"] for e in refused[0]["internal_topics"]] == ["kept", "kept"]
    assert "(the group was not deleted)" in internal_topic_lines(refused, FOUND)[0]


def test_a_topic_deletion_failure_counts_but_one_already_gone_does_not(monkeypatch):
    import kgroup.client.streams_topics as streams

    answers = {"wc-by-value-repartition": "TOPIC_AUTHORIZATION_FAILED", "wc-counts-changelog": None}
    monkeypatch.setattr(streams, "delete_topics", lambda client, topics: {t: answers[t] for t in topics})
    done = rows()
    settle_internal_topics(object(), done, FOUND, delete=True, dry_run=False)
    assert [(e["topic"], e["action"], e["error"]) for e in done[0]["internal_topics"]] == [
        ("wc-by-value-repartition", "failed", "TOPIC_AUTHORIZATION_FAILED"), ("wc-counts-changelog", "deleted", None)]
    assert internal_topic_failures(done) == 1
    assert ("group 'wc': internal topic wc-by-value-repartition not deleted: TOPIC_AUTHORIZATION_FAILED"
            in internal_topic_lines(done, FOUND))
    done[0]["internal_topics"][0]["error"] = "UNKNOWN_TOPIC_OR_PARTITION"
    assert internal_topic_failures(done) == 0


def test_internal_topics_that_cannot_be_read_fail_only_when_they_were_to_be_deleted():
    from kgroup.client.streams_topics import streams_internal_topics
    from kgroup.errors import KgroupError

    class Unreachable:
        def max_version(self, request_class, floor=0):
            raise KgroupError("ListGroups on broker 1 failed: COORDINATOR_NOT_AVAILABLE")

    assert streams_internal_topics(Unreachable(), ["wc"], required=False) == ({}, {})
    with pytest.raises(KgroupError, match="COORDINATOR_NOT_AVAILABLE"):
        streams_internal_topics(Unreachable(), ["wc"], required=True)
    assert internal_topic_lines([], {}, {"wc": "GROUP_AUTHORIZATION_FAILED"}) == [
        "group 'wc': its internal topics could not be read, none is deleted: GROUP_AUTHORIZATION_FAILED"]
