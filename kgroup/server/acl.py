"""`--acl` rules and the authorizer that reads them, as Kafka's `StandardAuthorizer` decides (ALLOW
rules only): pure, so a decision is (principal, operation, resource type, name) → bool.

A rule is `PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME`, e.g. `User:ops:Read:Group:orders-*`. Operation and
resource type are Kafka's names, case-insensitive (`Read`, `IdempotentWrite` or `IDEMPOTENT_WRITE`);
`*` in any field matches anything (an operation `*` is `All`); a NAME ending in `*` is a prefix (Kafka's
PREFIXED pattern). A rule grants what Kafka's `AclAuthorizer` implies from it: Read, Write, Delete
and Alter imply Describe; AlterConfigs implies DescribeConfigs; All implies every operation.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.errors import EXIT_USAGE, KgroupError

# Kafka's AclOperation codes (the bit positions of AuthorizedOperations fields).
OPERATIONS = {"All": 2, "Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7, "Describe": 8,
              "ClusterAction": 9, "DescribeConfigs": 10, "AlterConfigs": 11, "IdempotentWrite": 12,
              "CreateTokens": 13, "DescribeTokens": 14, "TwoPhaseCommit": 15}
RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId")
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name, as Kafka calls it
ANY = "*"

# Kafka's AclEntry.supportedOperations: what AuthorizedOperations reports on, per resource type.
SUPPORTED_OPERATIONS = {
    "Topic": ("Read", "Write", "Create", "Describe", "Delete", "Alter", "DescribeConfigs",
              "AlterConfigs"),
    "Group": ("Read", "Describe", "Delete", "DescribeConfigs", "AlterConfigs"),
    "Cluster": ("Create", "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite",
                "Alter", "Describe"),
    "TransactionalId": ("Describe", "Write", "TwoPhaseCommit"),
}
# What a granted operation implies besides itself (Kafka's implied operations).
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


@dataclass(frozen=True)
class Acl:
    principal: str        # "User:ops", "User:*" or "*"
    operation: str        # a key of OPERATIONS, or "*" (All)
    resource_type: str    # one of RESOURCE_TYPES, or "*"
    name: str             # a literal name, "*", or a prefix ending in "*"

    def grants(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        return (self.principal in (ANY, principal) or self.principal == principal.split(":")[0] + ":*") \
            and self.resource_type in (ANY, resource_type) \
            and self.grants_operation(operation) and self.matches_name(name)

    def grants_operation(self, operation: str) -> bool:
        return self.operation in (ANY, "All", operation) or self.operation in _IMPLIED_BY.get(operation, ())

    def matches_name(self, name: str) -> bool:
        if self.name.endswith(ANY):
            return name.startswith(self.name[:-1])   # "*" alone: any name
        return name == self.name


def parse_acl(value: str) -> Acl:
    """`PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME` (PRINCIPAL is `TYPE:NAME` or `*`) → Acl."""
    if value.startswith(ANY + ":"):
        principal, rest = ANY, value[2:]
    else:
        kind, _, rest = value.partition(":")
        who, _, rest = rest.partition(":")
        kind = "User" if kind.lower() == "user" else kind  # Kafka's principal type
        principal = f"{kind}:{who}" if kind and who else ""
    fields = rest.split(":", 2)
    if not principal or len(fields) != 3 or not all(fields):
        raise AclError(f"--acl {value!r}: expected PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME, "
                       f"e.g. User:ops:Read:Group:orders-*")
    operation, resource_type, name = fields
    operation = _canonical(operation, OPERATIONS, "operation", value)
    resource_type = _canonical(resource_type, RESOURCE_TYPES, "resource type", value)
    if resource_type == "Cluster" and name not in (ANY, CLUSTER_NAME):
        raise AclError(f"--acl {value!r}: the Cluster resource is named {CLUSTER_NAME} (or *)")
    if ANY in name[:-1]:
        raise AclError(f"--acl {value!r}: * may only end a NAME (a prefix)")
    return Acl(principal, operation, resource_type, name)


class Authorizer:
    """The decisions of a set of ALLOW rules: anything no rule grants is denied."""

    def __init__(self, acls):
        self.acls = tuple(acls)
        self._decisions: dict = {}

    def allows(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        key = (principal, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) > 65536:  # names come from clients: keep the memo bounded
                self._decisions.clear()
            decision = self._decisions[key] = any(
                acl.grants(principal, operation, resource_type, name) for acl in self.acls)
        return decision

    def allows_any(self, principal: str, operation: str, resource_type: str) -> bool:
        """Whether some rule grants `operation` on some resource of the type (Kafka's
        `authorizeByResourceType`, e.g. Write on any topic for an idempotent producer)."""
        return any(acl.resource_type in (ANY, resource_type)
                   and acl.grants(principal, operation, acl.resource_type, acl.name.rstrip(ANY))
                   for acl in self.acls)

    def authorized_operations(self, principal: str, resource_type: str, name: str) -> set[int]:
        """Kafka's AuthorizedOperations: the codes of the supported operations the principal may do
        (kafka-python's bit-field fields take the set; `operations_field` makes Kafka's int)."""
        return {OPERATIONS[op] for op in SUPPORTED_OPERATIONS[resource_type]
                if self.allows(principal, op, resource_type, name)}


class AllowEverything:
    """No authorizer (no --acl): every operation allowed, as Kafka without authorizer.class.name,
    which reports every supported operation as authorized."""

    acls = ()

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
