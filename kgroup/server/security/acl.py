"""`--acl` rules and the authorizer that reads them, as Kafka's `StandardAuthorizer` decides (ALLOW
rules only): pure, so a decision is (principal, operation, resource type, name) → the rule that
allows it, or None.

A rule is `PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME`, e.g. `User:ops:Read:Group:orders-*`. What Kafka
compares exactly is exact here too: the principal (type and name: `User:app` is not `user:app` nor
`User:App`; `User:*` is Kafka's wildcard principal, `*` alone short for it) and the resource name
(case-sensitive; `*` is Kafka's wildcard name, a NAME ending in `*` its PREFIXED pattern, any other
NAME a LITERAL one). Operation and resource type are Kafka's names, case-insensitive as kafka-acls
reads them (`Read`, `IdempotentWrite` or `IDEMPOTENT_WRITE`; `*` any). A rule grants what Kafka's
StandardAuthorizer implies from an ALLOW rule: Read, Write, Delete and Alter imply Describe;
AlterConfigs implies DescribeConfigs; All implies every operation.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from kgroup.errors import EXIT_USAGE, KgroupError

# Kafka's AclOperation codes (the bit positions of AuthorizedOperations fields).
OPERATIONS = {"All": 2, "Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7, "Describe": 8,
              "ClusterAction": 9, "DescribeConfigs": 10, "AlterConfigs": 11, "IdempotentWrite": 12,
              "CreateTokens": 13, "DescribeTokens": 14, "TwoPhaseCommit": 15}
RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId")
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name, as Kafka calls it
ANY = "*"
USER_TYPE = "User"              # Kafka's KafkaPrincipal.USER_TYPE: the type of every connection's principal
WILDCARD_PRINCIPAL = "User:*"   # Kafka's StandardAuthorizerData.WILDCARD_PRINCIPAL

# Kafka's AclEntry.supportedOperations: what AuthorizedOperations reports on, per resource type.
SUPPORTED_OPERATIONS = {
    "Topic": ("Read", "Write", "Create", "Describe", "Delete", "Alter", "DescribeConfigs",
              "AlterConfigs"),
    "Group": ("Read", "Describe", "Delete", "DescribeConfigs", "AlterConfigs"),
    "Cluster": ("Create", "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite",
                "Alter", "Describe"),
    "TransactionalId": ("Describe", "Write", "TwoPhaseCommit"),
}
# What a granted operation implies besides itself (StandardAuthorizerData's IMPLIES_DESCRIBE and
# IMPLIES_DESCRIBE_CONFIGS, which hold for ALLOW rules).
_IMPLIED_BY = {"Describe": {"Read", "Write", "Delete", "Alter"}, "DescribeConfigs": {"AlterConfigs"}}


class AclError(KgroupError):
    """An --acl value the server cannot read."""

    exit_code = EXIT_USAGE


def _canonical(value: str, names, what: str, rule: str) -> str:
    if value == ANY:
        return ANY
    folded = value.replace("_", "").lower()
    for name in names:
        if name.lower() == folded:
            return name
    raise AclError(f"--acl {rule!r}: unknown {what} {value!r} (one of {', '.join(names)}, or *)")


def kafka_enum_name(name: str) -> str:
    """Kafka's enum spelling of an operation or resource type: IdempotentWrite → IDEMPOTENT_WRITE."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


@dataclass(frozen=True)
class Acl:
    principal: str        # "User:ops", "User:*" (any principal); another type matches no connection
    operation: str        # a key of OPERATIONS, or "*" (All)
    resource_type: str    # one of RESOURCE_TYPES, or "*"
    name: str             # a literal name, "*", or a prefix ending in "*"

    def grants(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) \
            and self.resource_type in (ANY, resource_type) \
            and self.grants_operation(operation) and self.matches_name(name)

    def grants_operation(self, operation: str) -> bool:
        return self.operation in (ANY, "All", operation) or self.operation in _IMPLIED_BY.get(operation, ())

    def matches_name(self, name: str) -> bool:
        if self.pattern_type == "PREFIXED":
            return name.startswith(self.resource_name)
        return self.name in (ANY, name)

    @property
    def pattern_type(self) -> str:
        """Kafka's PatternType of the NAME: `*` is the LITERAL wildcard, `orders-*` PREFIXED `orders-`."""
        return "PREFIXED" if self.name.endswith(ANY) and self.name != ANY else "LITERAL"

    @property
    def resource_name(self) -> str:
        """The NAME as Kafka stores it (a prefix without its `*`)."""
        return self.name[:-1] if self.pattern_type == "PREFIXED" else self.name

    def standard_acl(self, resource_type: str) -> str:
        """The rule as Kafka's authorizer log shows the ACL it matched (a Java record's toString),
        for a check on `resource_type` (a `*` type or operation stands for that type, All)."""
        operation = "All" if self.operation == ANY else self.operation
        return (f"StandardAcl[resourceType={kafka_enum_name(resource_type)}, resourceName={self.resource_name}, "
                f"patternType={self.pattern_type}, principal={self.principal}, host=*, "
                f"operation={kafka_enum_name(operation)}, permissionType=ALLOW]")

    def _scan_key(self):
        """Where Kafka's scan meets the rule (StandardAcl's order: pattern type, operation,
        principal; the name, descending, is sorted on separately)."""
        operation = "All" if self.operation == ANY else self.operation
        return (self.pattern_type != "LITERAL", OPERATIONS[operation], self.principal)


def _refuse_surrounding_whitespace(value: str, what: str, text: str) -> None:
    if text != text.strip():
        raise AclError(f"--acl {value!r}: the {what} {text!r} has surrounding whitespace (Kafka "
                       f"compares {what}s exactly, so the rule would match nothing)")


def parse_acl(value: str) -> Acl:
    """`PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME` (PRINCIPAL is `TYPE:NAME`, or `*` for `User:*`) → Acl."""
    if value.startswith(ANY + ":"):
        principal, rest = WILDCARD_PRINCIPAL, value[2:]
    else:
        kind, _, rest = value.partition(":")
        who, _, rest = rest.partition(":")
        principal = f"{kind}:{who}" if kind.strip() and who.strip() else ""
    fields = rest.split(":", 2)
    if not principal or len(fields) != 3 or not all(fields):
        raise AclError(f"--acl {value!r}: expected PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME, "
                       f"e.g. User:ops:Read:Group:orders-*")
    operation, resource_type, name = fields
    _refuse_surrounding_whitespace(value, "principal", principal)
    _refuse_surrounding_whitespace(value, "resource name", name)
    operation = _canonical(operation, OPERATIONS, "operation", value)
    resource_type = _canonical(resource_type, RESOURCE_TYPES, "resource type", value)
    if resource_type == "Cluster" and name not in (ANY, CLUSTER_NAME):
        raise AclError(f"--acl {value!r}: the Cluster resource is named {CLUSTER_NAME} (or *)")
    if ANY in name[:-1]:
        raise AclError(f"--acl {value!r}: * may only end a NAME (a prefix)")
    return Acl(principal, operation, resource_type, name)


def principal_warnings(acls, users) -> list[str]:
    """One line for each distinct principal of `acls` that can match no connection: a type other
    than `User` (every connection's principal is `User:...`, and Kafka compares types exactly), or,
    when the SASL users are known (`users` not empty), a `User:NAME` naming none of them. Exempt:
    `User:*`, `User:ANONYMOUS`, and a certificate subject (`User:CN=...`)."""
    lines, seen = [], set()
    for acl in acls:
        principal = acl.principal
        if principal in seen or principal == WILDCARD_PRINCIPAL:
            continue
        seen.add(principal)
        kind, _, name = principal.partition(":")
        if kind != USER_TYPE:
            lines.append(f"--acl principal {principal} matches no connection: principal types are "
                         f"compared exactly and every connection's is {USER_TYPE} "
                         f"(did you mean {USER_TYPE}:{name}?)")
        elif users and name not in users and name != "ANONYMOUS" and "=" not in name:
            near = difflib.get_close_matches(name, list(users), 1) or \
                [u for u in users if u.lower() == name.lower()]
            hint = f" (did you mean {USER_TYPE}:{near[0]}?)" if near else ""
            lines.append(f"--acl principal {principal} names no user of --user/--users{hint}: "
                         f"its rules match no connection")
    return lines


def kafka_choice(matches: list[Acl]) -> Acl:
    """The one of several ALLOW rules matching a check that Kafka's StandardAuthorizer names (its
    `based on rule` in the authorizer log): it scans the rules of the resource type by name,
    descending, then the wildcard name `*`, and keeps the last ALLOW it meets."""
    ordered = sorted(matches, key=Acl._scan_key)
    ordered.sort(key=lambda acl: acl.resource_name, reverse=True)   # stable: ties keep the order above
    ordered.sort(key=lambda acl: acl.name == ANY)
    return ordered[-1]


_UNDECIDED = object()


class Authorizer:
    """The decisions of a set of ALLOW rules: anything no rule grants is denied."""

    audited = True   # its decisions are logged (kgroup.server.security.audit); AllowEverything's are not

    def __init__(self, acls):
        self.acls = tuple(acls)
        self._decisions: dict = {}

    def matching_rule(self, principal: str, operation: str, resource_type: str, name: str) -> Acl | None:
        """The rule that allows the operation (the one Kafka would name), or None: denied."""
        key = (principal, operation, resource_type, name)
        rule = self._decisions.get(key, _UNDECIDED)
        if rule is _UNDECIDED:
            if len(self._decisions) > 65536:  # names come from clients: keep the memo bounded
                self._decisions.clear()
            matches = [acl for acl in self.acls if acl.grants(principal, operation, resource_type, name)]
            rule = self._decisions[key] = kafka_choice(matches) if matches else None
        return rule

    def allows(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        return self.matching_rule(principal, operation, resource_type, name) is not None

    def allows_any(self, principal: str, operation: str, resource_type: str) -> bool:
        """Whether some rule grants `operation` on some resource of the type (Kafka's
        `authorizeByResourceType`, e.g. Write on any topic for an idempotent producer)."""
        return any(acl.resource_type in (ANY, resource_type)
                   and acl.grants(principal, operation, acl.resource_type, acl.resource_name)
                   for acl in self.acls)

    def authorized_operations(self, principal: str, resource_type: str, name: str) -> set[int]:
        """Kafka's AuthorizedOperations: the codes of the supported operations the principal may do
        (kafka-python's bit-field fields take the set; `operations_field` makes Kafka's int)."""
        return {OPERATIONS[op] for op in SUPPORTED_OPERATIONS[resource_type]
                if self.allows(principal, op, resource_type, name)}


class AllowEverything:
    """No authorizer (no --acl): every operation allowed, as Kafka without authorizer.class.name,
    which reports every supported operation as authorized and logs no decision."""

    acls = ()
    audited = False

    def matching_rule(self, principal, operation, resource_type, name):
        return self

    def allows(self, principal, operation, resource_type, name) -> bool:
        return True

    def allows_any(self, principal, operation, resource_type) -> bool:
        return True

    def authorized_operations(self, principal, resource_type, name) -> set[int]:
        return {OPERATIONS[op] for op in SUPPORTED_OPERATIONS[resource_type]}


def operations_field(codes) -> int:
    """Kafka's Utils.to32BitField of operation codes."""
    field = 0
    for code in codes:
        field |= 1 << code
    return field
