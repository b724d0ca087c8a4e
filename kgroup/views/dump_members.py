"""What a `__consumer_offsets` dump says about each member's session: when the log last saw it, and
whether a later record shows it gone (`describe --from-dump`).

Heartbeats are never logged. A classic group's member appears in the GroupMetadata records written
when the group rebalances (it or another member joins or leaves, a leader syncs); a KIP-848 consumer
group's member in its own member-metadata record (written when it joins or its subscription, client or
rack changes) and current-assignment record (a new member epoch). So the last of these is when the log
last *saw* the member — a member alive and heartbeating can have been seen hours ago — and nothing in
the log says when a live member's session would expire. Only a later record proves a session ended:
one that leaves the member out of its group (a GroupMetadata record without it or the group's
tombstone; the member's own tombstone, or its consumer group's). A dump holds such records after the
time it is replayed up to (--until-time); a member the replay still holds has none before that time.
A member moved between the two kinds of group (an online migration, either way) is removed from one
and added to the other by one batch: it is judged after each whole batch.
"""

from __future__ import annotations

GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_MEMBER_METADATA = 5
CONSUMER_CURRENT_ASSIGNMENT = 8


class MemberTimes:
    """Fed every record of a partition in log order: `seen` up to the cut-off, `later` after it (one
    batch's records per call)."""

    def __init__(self):
        self.last_seen: dict = {}  # (group, member id) -> time of the last record naming it
        self.ended: dict = {}      # (group, member id) -> time of the first later record leaving it out
        self._classic: dict = {}   # group -> member ids of its latest GroupMetadata record
        self._consumer: dict = {}  # group -> member ids holding a consumer-group member-metadata record
        self._watched: dict = {}   # group -> member ids it held at the cut-off and still holds

    def seen(self, row) -> None:
        """A data record written up to the cut-off."""
        for member_key in self._apply(row):
            self.last_seen[member_key] = row.timestamp

    def later(self, rows) -> None:
        """One batch's data records written after the cut-off."""
        gone: dict = {}
        for row in rows:
            group = _group_of(row)
            if group is None:
                continue
            watched = self._watched.get(group)
            if watched is None:  # the group's members at the cut-off, known once its records after it begin
                watched = self._watched[group] = set(self._classic.get(group, ())) | set(self._consumer.get(group, ()))
            self._apply(row)
            for member in watched:
                if not self._holds(group, member):
                    gone.setdefault((group, member), row.timestamp)
        for (group, member), when in gone.items():
            if not self._holds(group, member):  # not put back by the same batch (a migration)
                self.ended[(group, member)] = when
                self._watched[group].discard(member)

    def _holds(self, group: str, member: str) -> bool:
        return member in self._classic.get(group, ()) or member in self._consumer.get(group, ())

    def _apply(self, row) -> list:
        """Update the membership with one record; returns the (group, member id) it names (and shows)."""
        rtype = row.record_type
        if row.kind != "data" or rtype not in _TYPES:
            return []
        key = row.key.data
        if rtype == GROUP_METADATA:
            group = key["group"]
            members = [m.get("memberId") or "" for m in (row.value.data.get("members") or [])] \
                if row.value is not None else []
            self._classic[group] = set(members)
            return [(group, member) for member in members]
        group = key["groupId"]
        if rtype == CONSUMER_GROUP_METADATA:
            if row.value is None:
                self._consumer.pop(group, None)
            return []
        member = key["memberId"]
        if rtype == CONSUMER_MEMBER_METADATA:
            if row.value is None:
                self._consumer.get(group, set()).discard(member)
            else:
                self._consumer.setdefault(group, set()).add(member)
        return [] if row.value is None else [(group, member)]


_TYPES = frozenset((GROUP_METADATA, CONSUMER_GROUP_METADATA, CONSUMER_MEMBER_METADATA, CONSUMER_CURRENT_ASSIGNMENT))


def _group_of(row):
    if row.kind != "data" or row.record_type not in _TYPES:
        return None
    key = row.key.data
    return key["group"] if row.record_type == GROUP_METADATA else key["groupId"]
