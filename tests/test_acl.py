"""The `--acl` authorizer on its own: parsing, wildcards, prefixes, Kafka's implied operations and the
AuthorizedOperations bit field."""

from __future__ import annotations

import pytest

from kgroup.server.acl import OPERATIONS, AclError, Authorizer, operations_field, parse_acl


def _authorizer(*rules):
    return Authorizer([parse_acl(rule) for rule in rules])


def test_parse_is_case_insensitive_and_accepts_kafka_spellings():
    assert parse_acl("user:ops:READ:group:orders") == parse_acl("User:ops:Read:Group:orders")
    acl = parse_acl("User:ops:alter_configs:TRANSACTIONAL_ID:tx-*")
    assert (acl.principal, acl.operation, acl.resource_type, acl.name) == (
        "User:ops", "AlterConfigs", "TransactionalId", "tx-*")
    assert parse_acl("User:ops:All:Cluster:*").resource_type == "Cluster"
    assert parse_acl("*:Describe:Topic:*").principal == "*"
    assert parse_acl("User:ops:Read:Group:a:b").name == "a:b"  # a group id may hold colons


@pytest.mark.parametrize("value, message", [
    ("User:ops:Read:Group", "expected PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME"),
    ("ops:Read:Group:x", "expected PRINCIPAL"),
    ("User:ops:Reed:Group:x", "unknown operation 'Reed'"),
    ("User:ops:Read:Queue:x", "unknown resource type 'Queue'"),
    ("User:ops:All:Cluster:prod", "the Cluster resource is named kafka-cluster"),
    ("User:ops:Read:Group:a*b", "may only end a NAME"),
])
def test_bad_rules_name_the_value_and_the_problem(value, message):
    with pytest.raises(AclError, match=message) as caught:
        parse_acl(value)
    assert value in str(caught.value) and caught.value.exit_code == 2


def test_literal_prefix_and_wildcard_names():
    authz = _authorizer("User:ops:Read:Group:orders-*", "User:ops:Read:Topic:events",
                        "User:ops:Describe:Topic:*")
    assert authz.allows("User:ops", "Read", "Group", "orders-eu")
    assert authz.allows("User:ops", "Read", "Group", "orders-")
    assert not authz.allows("User:ops", "Read", "Group", "order")
    assert authz.allows("User:ops", "Read", "Topic", "events")
    assert not authz.allows("User:ops", "Read", "Topic", "events2")
    assert authz.allows("User:ops", "Describe", "Topic", "anything")
    assert not authz.allows("User:ops", "Read", "Topic", "anything")


def test_principals_match_exactly_or_by_wildcard():
    authz = _authorizer("User:ops:Read:Group:g", "User:*:Describe:Group:g", "*:Delete:Group:d")
    assert authz.allows("User:ops", "Read", "Group", "g")
    assert not authz.allows("User:alice", "Read", "Group", "g")
    assert authz.allows("User:alice", "Describe", "Group", "g")
    assert authz.allows("User:ANONYMOUS", "Delete", "Group", "d")
    assert not authz.allows("User:Ops", "Read", "Group", "g")  # names are case-sensitive


@pytest.mark.parametrize("granted, implied", [
    ("Read", "Describe"), ("Write", "Describe"), ("Delete", "Describe"), ("Alter", "Describe"),
    ("AlterConfigs", "DescribeConfigs")])
def test_kafka_implied_operations(granted, implied):
    authz = _authorizer(f"User:ops:{granted}:Topic:t")
    assert authz.allows("User:ops", implied, "Topic", "t")
    assert not _authorizer(f"User:ops:{implied}:Topic:t").allows("User:ops", granted, "Topic", "t")


def test_all_implies_every_operation_but_only_on_its_resource_type():
    authz = _authorizer("User:ops:All:Group:*")
    assert all(authz.allows("User:ops", op, "Group", "x") for op in OPERATIONS)
    assert not authz.allows("User:ops", "Read", "Topic", "x")
    assert _authorizer("User:ops:*:*:*").allows("User:ops", "IdempotentWrite", "Cluster", "kafka-cluster")


def test_nothing_is_allowed_that_no_rule_grants():
    authz = _authorizer("User:ops:Read:Group:g")
    assert not authz.allows("User:ops", "Delete", "Group", "g")
    assert not authz.allows("User:ops", "Describe", "Cluster", "kafka-cluster")


def test_authorized_operations_and_kafka_bit_field():
    authz = _authorizer("User:ops:Read:Group:g", "User:ops:Delete:Group:g")
    codes = authz.authorized_operations("User:ops", "Group", "g")
    assert codes == {OPERATIONS["Read"], OPERATIONS["Describe"], OPERATIONS["Delete"]}
    assert operations_field(codes) == (1 << 3) | (1 << 8) | (1 << 6)
    assert authz.authorized_operations("User:alice", "Group", "g") == set()
    every = _authorizer("User:ops:All:Group:*").authorized_operations("User:ops", "Group", "g")
    assert every == {OPERATIONS[op] for op in ("Read", "Describe", "Delete", "DescribeConfigs",
                                               "AlterConfigs")}


def test_allows_any_is_kafka_authorize_by_resource_type():
    authz = _authorizer("User:ops:Write:Topic:events-*", "User:alice:Read:Topic:*")
    assert authz.allows_any("User:ops", "Write", "Topic")
    assert not authz.allows_any("User:alice", "Write", "Topic")
    assert not authz.allows_any("User:ops", "Write", "Group")
