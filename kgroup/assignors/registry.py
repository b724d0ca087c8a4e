"""The assignors by the protocol name a consumer advertises in JoinGroup."""

from __future__ import annotations

from .common import Assignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

ASSIGNORS = {cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor,
                                       CooperativeStickyAssignor)}


def get_assignor(name: str, by_instance_id: bool = True) -> Assignor:
    """The assignor registered under Kafka's protocol name (range, roundrobin, sticky, cooperative-sticky)."""
    cls = ASSIGNORS.get(name)
    if cls is None:
        raise ValueError(f"unknown assignor {name!r}; choose from {', '.join(ASSIGNORS)}")
    return cls(by_instance_id=by_instance_id)
