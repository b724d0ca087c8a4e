"""The `--acl` authorizer on its own: parsing, wildcards, prefixes, Kafka's implied operations and the
AuthorizedOperations bit field."""

from __future__ import annotations

import pytest

from kgroup.server.security.acl import OPERATIONS, AclError, Authorizer, operations_field, parse_acl


def _authorizer(*rules):
    return Authorizer([parse_acl(rule) for rule in rules])


def test_operations_and_resource_types_read_as_kafka_acls_reads_them_principals_as_given():
    assert parse_acl("User:ops:READ:group:orders") == parse_acl("User:ops:Read:Group:orders")
    acl = parse_acl("User:ops:alter_configs:TRANSACTIONAL_ID:tx-*")
    assert (acl.principal, acl.operation, acl.resource_type, acl.name) == (
        "User:ops", "AlterConfigs", "TransactionalId", "tx-*")
    assert parse_acl("User:ops:All:Cluster:*").resource_type == "Cluster"
    assert parse_acl("*:Describe:Topic:*").principal == "User:*"   # Kafka's wildcard principal
    assert parse_acl("User:ops:Read:Group:a:b").name == "a:b"  # a group id may hold colons
    # Kafka keeps the principal as written (KafkaPrincipal("user", "ops")): it is not User:ops
    assert parse_acl("user:ops:Read:Group:orders").principal == "user:ops"


@pytest.mark.parametrize("value, message", [
    ("User:ops:Read:Group", "expected PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME"),
    ("ops:Read:Group:x", "expected PRINCIPAL"),
    ("User:ops:Reed:Group:x", "unknown operation 'Reed'"),
    ("User:ops:Read:Queue:x", "unknown resource type 'Queue'"),
    ("User:ops:All:Cluster:prod", "the Cluster resource is named kafka-cluster"),
    ("User:ops:Read:Group:a*b", "may only end a NAME"),
    ("User:bob :All:Topic:*", "the principal 'User:bob ' has surrounding whitespace"),
    (" User:bob:All:Topic:*", "the principal ' User:bob' has surrounding whitespace"),
    ("User:bob:Read:Group: orders", "the resource name ' orders' has surrounding whitespace"),
    ("User:bob:Read:Topic:orders ", "the resource name 'orders ' has surrounding whitespace"),
    ("User: :Read:Topic:orders", "expected PRINCIPAL"),
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


def test_principals_match_as_kafka_compares_them_type_and_name_exactly():
    authz = _authorizer("user:app:All:Topic:*", "User:App:All:Group:*", "user:*:Read:Group:g",
                        "User:app:Describe:Cluster:kafka-cluster")
    assert not authz.allows("User:app", "Read", "Topic", "t")       # type user is not User
    assert not authz.allows("User:app", "Read", "Group", "g")       # neither App nor user:*
    assert authz.allows("User:app", "Describe", "Cluster", "kafka-cluster")
    assert not authz.allows("User:APP", "Describe", "Cluster", "kafka-cluster")


def test_resource_names_are_case_sensitive_literal_prefixed_or_wildcard():
    authz = _authorizer("User:ops:Read:Group:Orders", "User:ops:Read:Topic:ev-*",
                        "User:ops:Describe:Group:*")
    assert authz.allows("User:ops", "Read", "Group", "Orders")
    assert not authz.allows("User:ops", "Read", "Group", "orders")
    assert not authz.allows("User:ops", "Read", "Group", "Orders2")   # a literal is not a prefix
    assert not authz.allows("User:ops", "Read", "Group", "Order")
    assert authz.allows("User:ops", "Read", "Topic", "ev-")
    assert not authz.allows("User:ops", "Read", "Topic", "EV-x")
    assert not authz.allows("User:ops", "Read", "Topic", "ev")
    assert authz.allows("User:ops", "Describe", "Group", "")           # * is any name
    assert [parse_acl(f"User:a:Read:Topic:{n}").pattern_type for n in ("*", "x*", "x")] == [
        "LITERAL", "PREFIXED", "LITERAL"]


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


def test_the_rule_named_is_the_one_kafka_names():
    """StandardAuthorizer scans the rules by name, descending, then the wildcard name, and keeps the
    last ALLOW it meets: the shortest matching prefix, the wildcard above all."""
    authz = _authorizer("User:ops:Read:Group:orders-eu", "User:ops:Read:Group:orders-*",
                        "User:ops:Read:Group:o*", "User:*:Describe:Group:orders-eu")
    assert authz.matching_rule("User:ops", "Read", "Group", "orders-eu") == parse_acl("User:ops:Read:Group:o*")
    assert authz.matching_rule("User:ops", "Describe", "Group", "orders-eu") == parse_acl(
        "User:ops:Read:Group:o*")
    assert authz.matching_rule("User:bob", "Describe", "Group", "orders-eu") == parse_acl(
        "User:*:Describe:Group:orders-eu")
    same_name = _authorizer("User:ops:Read:Group:g", "User:ops:All:Group:g", "User:ops:Describe:Group:g")
    assert same_name.matching_rule("User:ops", "Describe", "Group", "g").operation == "Describe"
    wildcard = _authorizer("User:ops:All:*:*", "User:ops:Read:Group:g")
    assert wildcard.matching_rule("User:ops", "Read", "Group", "g").name == "*"
    assert authz.matching_rule("User:ops", "Delete", "Group", "g") is None


def test_a_rule_is_shown_as_kafka_shows_its_standard_acl():
    assert parse_acl("User:ops:Read:Group:orders-*").standard_acl("Group") == (
        "StandardAcl[resourceType=GROUP, resourceName=orders-, patternType=PREFIXED, principal=User:ops, "
        "host=*, operation=READ, permissionType=ALLOW]")
    assert parse_acl("*:*:*:*").standard_acl("TransactionalId") == (
        "StandardAcl[resourceType=TRANSACTIONAL_ID, resourceName=*, patternType=LITERAL, principal=User:*, "
        "host=*, operation=ALL, permissionType=ALLOW]")
    assert parse_acl("User:a:IdempotentWrite:Cluster:kafka-cluster").standard_acl("Cluster").endswith(
        "operation=IDEMPOTENT_WRITE, permissionType=ALLOW]")


def test_principals_that_match_no_connection_are_named_once_each():
    from kgroup.server.security.acl import principal_warnings

    rules = [parse_acl(r) for r in ("User:aap:Read:Group:typo-app", "User:aap:Read:Topic:t",
                                    "User:App:Read:Group:g", "user:app:All:Topic:*", "User:app:Read:Group:g",
                                    "User:ANONYMOUS:Describe:Topic:*", "User:*:Describe:Group:*",
                                    "User:CN=ops,OU=platform:Read:Group:g", "*:Read:Topic:x")]
    assert principal_warnings(rules, {"app": "pw", "ops": "pw"}) == [
        "--acl principal User:aap names no user of --user/--users (did you mean User:app?): "
        "its rules match no connection",
        "--acl principal User:App names no user of --user/--users (did you mean User:app?): "
        "its rules match no connection",
        "--acl principal user:app matches no connection: principal types are compared exactly and "
        "every connection's is User (did you mean User:app?)",
    ]
    # the users unknown (no SASL listener): only the principal type can be judged
    assert principal_warnings(rules, {}) == [
        "--acl principal user:app matches no connection: principal types are compared exactly and "
        "every connection's is User (did you mean User:app?)"]


def test_the_authorizer_log_line_is_kafkas():
    from kgroup.server.security.audit import java_host_address, message

    assert message("User:bob", None, "Describe", "/127.0.0.1", "Group", "orders-a", "DescribeGroups") == (
        "Principal = User:bob is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
        "Group:LITERAL:orders-a for request = DescribeGroups with resourceRefCount = 1 based on rule "
        "DefaultDeny")
    rule = parse_acl("User:ops:Write:Topic:ev-*")
    assert message("User:ops", rule, "Write", "::1", "Topic", "ev-1", "Produce", 3) == (
        "Principal = User:ops is Allowed operation = WRITE from host = 0:0:0:0:0:0:0:1 on resource = "
        "Topic:LITERAL:ev-1 for request = Produce with resourceRefCount = 3 based on rule "
        "MatchingAcl(acl=StandardAcl[resourceType=TOPIC, resourceName=ev-, patternType=PREFIXED, "
        "principal=User:ops, host=*, operation=WRITE, permissionType=ALLOW])")
    assert java_host_address("::ffff:10.0.0.1") == "10.0.0.1"
    assert java_host_address("fe80::1:2") == "fe80:0:0:0:0:0:1:2"
