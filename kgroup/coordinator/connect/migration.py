"""Migration between Kafka Connect's classic protocol and the ``connect`` worker group.

The Connect draft migrates by rolling the workers: the group converts from classic to ``connect``
when the first worker on the new protocol joins, and back when the last one leaves, the group epoch
starting at the classic generation (and the generation at the group epoch). The draft leaves the
classic requests inside a worker group unspecified, so kgroup converts only an **empty** group (as
Kafka lets a classic JoinGroup replace an empty consumer group, ``maybeDeleteEmptyConsumerGroup``,
kgroup's ``migration.delete_empty_consumer_group``) and answers GROUP_ID_NOT_FOUND to the other
protocol while the group has members:

* classic -> connect: a ConnectGroupHeartbeat join (or kgroup's ConnectGroupSetConnectors, which a
  new-protocol worker sends first) to an empty classic group of protocol type ``connect``. The
  classic GroupMetadata tombstone, then the worker group's records: its connector set (when
  given), an empty target at the generation and the group epoch = the generation. A worker joining
  it starts at member epoch = the generation and its join bumps the group epoch once.
* connect -> classic: a classic JoinGroup of protocol type ``connect`` to an empty worker group.
  The worker group's tombstones, then a classic GroupMetadata record at generation = the group
  epoch; the join goes on in that classic group (its first rebalance makes it epoch + 1).

Both logs keep their own records, so ``from_records(records, worker_records=...)`` rebuilds a
migrated group whichever way it went: a tombstone in one log leaves the group id to the other.
"""

from __future__ import annotations

from .. import codes
from ..classic.records import group_metadata_record
from ..classic.responses import join_error
from . import records as rec

CONNECT_PROTOCOL_TYPE = "connect"


def convertible_classic(group) -> bool:
    """An empty classic group of Connect workers: a new-protocol worker may take it over."""
    return (group is not None and group.group_type == "classic"
            and group.protocol_type == CONNECT_PROTOCOL_TYPE and group.is_empty())


def convertible_worker_group(group, protocol_type: str) -> bool:
    """An empty worker group a classic Connect worker's JoinGroup may turn back into a classic group."""
    return (group is not None and group.group_type == "connect" and protocol_type == CONNECT_PROTOCOL_TYPE
            and not group.members)      # not is_empty(): that keeps a worker group from deletion


def upgrade(coord, classic, connectors: dict | None = None):
    """The empty classic group gives way to a worker group at epoch = its generation; returns it."""
    group_id, epoch = classic.group_id, classic.generation_id
    coord.delete_group_metadata(group_id)
    records = [] if connectors is None else [rec.connectors_record(group_id, epoch, connectors)]
    records += [rec.target_record(group_id, epoch, 0, {}, {}), rec.group_epoch_record(group_id, epoch)]
    rec.write(coord, records)
    return coord.get_group(group_id)


def downgrade(coord, group):
    """The empty worker group gives way to an Empty classic group at generation = its group epoch."""
    group_id, epoch = group.group_id, group.group_epoch
    rec.write(coord, rec.group_tombstones(group))
    classic = coord.get_or_create_classic_group(group_id, persist=False)
    classic.generation_id = epoch
    classic.protocol_type = CONNECT_PROTOCOL_TYPE
    coord.append_records([group_metadata_record(classic)])
    return classic


def classic_join(coord, group, joining: tuple):
    """A classic JoinGroup on a worker group (``ClassicProtocol.join``): an empty one turns back into a
    classic group the join goes on in; any other is "not found" to the classic protocol."""
    version, member_id, protocol_type = joining[0], joining[1], joining[5]
    if not convertible_worker_group(group, protocol_type):
        return coord.done_reply(join_error(version, codes.GROUP_ID_NOT_FOUND, member_id)), None
    return None, downgrade(coord, group)        # the last new-protocol worker has left
