"""The authorizer log: each `--acl` decision as Kafka's StandardAuthorizer writes it to
`kafka.authorizer.logger` (`StandardAuthorizerData.logAuditMessage`), on the logger
`kgroup.server.authorizer`.

A denial is logged at INFO when the check asked for it (Kafka's `Action.logIfDenied`: a request for
the resource itself, not a filter — an all-topics Metadata, ListGroups' groups, the cluster checks
made only to pick a path); an allow at DEBUG (`logIfAllowed`, true for every check served here).
AuthorizedOperations are computed without logging, as Kafka logs them only at TRACE. Without
`--acl` nothing is logged (Kafka without an authorizer).

    Principal = User:bob is Denied operation = DESCRIBE from host = 127.0.0.1 on resource =
    Group:LITERAL:orders-a for request = DescribeGroups with resourceRefCount = 1 based on rule DefaultDeny
"""

from __future__ import annotations

import functools
import ipaddress
import logging

from kgroup.server.security.acl import kafka_enum_name

log = logging.getLogger("kgroup.server.authorizer")

DENIED_RULE = "DefaultDeny"   # Kafka's rule when no ACL allows (allow.everyone.if.no.acl.found=false)


def api_name(request) -> str:
    """Kafka's ApiKeys name of a request (`DescribeGroups`): its message class, less `Request`."""
    return type(request).__name__.removesuffix("Request")


@functools.lru_cache(maxsize=1024)
def java_host_address(host: str) -> str:
    """A client address as Java's InetAddress.getHostAddress writes it: IPv4 dotted, IPv6 in full
    (`0:0:0:0:0:0:0:1`, no `::`), an IPv4-mapped IPv6 address as its IPv4 one."""
    host = host.lstrip("/")
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))
    return str(address)


def message(principal: str, rule, operation: str, host: str, resource_type: str, name: str,
            api: str, refs: int = 1) -> str:
    """Kafka's audit line for one decision: `rule` is the matching Acl (allowed) or None (denied)."""
    allowed = rule is not None
    based_on = f"MatchingAcl(acl={rule.standard_acl(resource_type)})" if allowed else DENIED_RULE
    return (f"Principal = {principal} is {'Allowed' if allowed else 'Denied'} operation = "
            f"{kafka_enum_name(operation)} from host = {java_host_address(host)} on resource = "
            f"{resource_type}:LITERAL:{name} for request = {api} with resourceRefCount = {refs} "
            f"based on rule {based_on}")
