"""Partition assignors of the classic consumer protocol: range, roundrobin, sticky, cooperative-sticky.

The leader of a classic group runs one of these on the members' subscriptions; kgroup runs them to
simulate rebalances (`kgroup simulate`) and to predict what removing members moves
(`kgroup remove-members --dry-run`). They are library code with no simulation or network in them:
the server-side assignors of KIP-848 consumer groups (uniform, range) belong here too.

    assignor = get_assignor("range")
    plan = assignor.assign(members, {"orders": 9})          # member id -> [(topic, partition)]
    predict_after_removal(members, ["c-2"], {"orders": 9}, "range")

Modules: ``common`` (MemberInfo, Kafka's member order, the Assignor base), one module per assignor
family (``range``, ``roundrobin``, ``sticky``), ``registry`` (by protocol name) and ``prediction``.
Server-side: ``server_api`` (the contract and ``get_server_assignor``), ``server_order`` and
``java_order`` (with ``topic_ids``), ``uniform`` with ``uniform_heterogeneous``, and ``server_range``.
Connect's worker assignors: ``connect_cooperative``, ``connect_classic``, and ``connect_items`` (what
they assign).
"""

from .common import Assignor, MemberInfo, TopicPartition, sort_key
from .prediction import RemovalPrediction, predict_after_removal
from .range import RangeAssignor
from .registry import ASSIGNORS, get_assignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

__all__ = [
    "ASSIGNORS", "Assignor", "CooperativeStickyAssignor", "MemberInfo", "RangeAssignor",
    "RemovalPrediction", "RoundRobinAssignor", "StickyAssignor", "TopicPartition", "get_assignor",
    "predict_after_removal", "sort_key",
]
