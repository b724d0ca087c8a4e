"""JoinGroup v0-v9 (Kafka's GroupMetadataManager.classicGroupJoin): new, pending, existing and static-replacement joins."""

from __future__ import annotations

from .. import codes
from .group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup,
                    Member)
from .records import empty_group_metadata_record, group_metadata_record
from .rebalance import (add_member_then_rebalance, maybe_complete_join_phase,
                        maybe_prepare_rebalance_or_complete_join, prepare_rebalance,
                        reschedule_heartbeat, reschedule_member)
from .responses import join_error, join_response, member_list, sync_response, wire_bytes


def handle_join_group(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    group_id = request.group_id or ""
    member_id = request.member_id or ""
    instance_id = request.group_instance_id if version >= 5 else None
    session_timeout = request.session_timeout_ms
    rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else session_timeout
    done = coord.done_reply

    if not group_id:
        return done(join_error(version, codes.INVALID_GROUP_ID, member_id))
    if not isinstance(session_timeout, int) or not coord.config.classic_session_timeout_allowed(session_timeout):
        return done(join_error(version, codes.INVALID_SESSION_TIMEOUT, member_id))
    if not isinstance(rebalance_timeout, int):
        rebalance_timeout = session_timeout
    protocol_type = request.protocol_type or ""
    protocols = [(p.name or "", wire_bytes(p.metadata, "JoinGroup group {!r} protocols[{}].metadata", group_id, k))
                 for k, p in enumerate(request.protocols or ())]
    join = (version, member_id, instance_id, session_timeout, rebalance_timeout, protocol_type,
            protocols, client_id, client_host)

    group = coord.get_group(group_id)
    other = coord.classic_protocol(group)
    if other is not None:       # a group of another type: it answers, converts, or gives way
        reply, group = other.join(coord, group, join)
        if reply is not None:
            return reply
    if group is not None:
        return _join_group(coord, group, *join)
    if member_id:
        return done(join_error(version, codes.UNKNOWN_MEMBER_ID, member_id))
    group = coord.get_or_create_classic_group(group_id, persist=False)
    log_size = coord.entries_appended
    reply = _join_group(coord, group, *join)
    if coord.entries_appended == log_size:
        # a join that created the group and wrote nothing persists it with an empty record,
        # after the join: its timestamp is the group's creation (or the join's transition) time
        coord.append_records([empty_group_metadata_record(group_id, group.current_state_timestamp)])
    return reply


def _join_group(coord, group: ClassicGroup, version, member_id, instance_id, session_timeout,
                rebalance_timeout, protocol_type, protocols, client_id, client_host):
    if not _accept_joining_member(group, member_id, coord.config.group_max_size):
        group.remove(member_id)
        return coord.done_reply(join_error(version, codes.GROUP_MAX_SIZE_REACHED, ""))
    join = _Join(coord, group, version, member_id, instance_id, session_timeout,
                 rebalance_timeout, protocol_type, protocols, client_id, client_host)
    if not member_id:
        return join.new_member()
    return join.existing_member()


def _accept_joining_member(group: ClassicGroup, member_id: str, max_size: int) -> bool:
    state = group.state
    if state in (EMPTY, DEAD):
        return True
    member = group.members.get(member_id)
    if state == PREPARING_REBALANCE:
        return (member is not None and member.join_reply is not None) \
            or group.num_awaiting_join < max_size
    return member is not None or len(group.members) < max_size


class _Join:
    """One JoinGroup request in flight through the decision procedure."""

    __slots__ = ("coord", "group", "version", "member_id", "instance_id", "session_timeout",
                 "rebalance_timeout", "protocol_type", "protocols", "client_id", "client_host")

    def __init__(self, coord, group, version, member_id, instance_id, session_timeout,
                 rebalance_timeout, protocol_type, protocols, client_id, client_host):
        self.coord = coord
        self.group = group
        self.version = version
        self.member_id = member_id
        self.instance_id = instance_id
        self.session_timeout = session_timeout
        self.rebalance_timeout = rebalance_timeout
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.client_id = client_id
        self.client_host = client_host

    def _supported(self) -> bool:
        return self.group.supports_protocols(self.protocol_type, [n for n, _ in self.protocols])

    def _new_member(self, member_id: str) -> Member:
        return Member(member_id, self.instance_id, self.client_id, self.client_host,
                      self.rebalance_timeout, self.session_timeout, self.protocol_type,
                      self.protocols)

    # ---- empty member id (b.1) -----------------------------------------------------------
    def new_member(self):
        coord, group, version = self.coord, self.group, self.version
        if group.state == DEAD:
            return coord.done_reply(join_error(version, codes.COORDINATOR_NOT_AVAILABLE, ""))
        if not self._supported():
            return coord.done_reply(join_error(version, codes.INCONSISTENT_GROUP_PROTOCOL, ""))
        instance_id = self.instance_id
        new_id = coord.new_member_id(instance_id if instance_id is not None else self.client_id)
        if instance_id is None:
            if version >= 4:
                # KIP-394: hand out the id and wait for the second JoinGroup
                group.undo.set_add(group.pending_members, new_id)
                reschedule_heartbeat(coord, group, new_id, self.session_timeout)
                return coord.done_reply(join_error(version, codes.MEMBER_ID_REQUIRED, new_id))
        elif instance_id in group.static_members:
            return self._replace_static_member(new_id)
        reply = coord.parked_reply()
        add_member_then_rebalance(coord, group, self._new_member(new_id), reply, version)
        return reply

    # ---- static replacement (b.3) --------------------------------------------------------
    def _replace_static_member(self, new_id: str):
        coord, group, version = self.coord, self.group, self.version
        old_id = group.static_members[self.instance_id]
        current_leader = group.leader_id
        new_member = _swap_static_member(group, self.instance_id, old_id, new_id)
        reschedule_member(coord, group, new_member)
        reply = coord.parked_reply()
        group.update_member(new_member, self.protocols, self.rebalance_timeout,
                            self.session_timeout, reply, version)
        state = group.state
        if state == STABLE:
            if (group.protocol_name or "") == (group.select_protocol() or ""):
                # restart without rebalance: persist the new id with the current assignments
                coord.append_records([group_metadata_record(group)])
                group.take_join_reply(new_member)
                is_leader = group.leader_id == new_id
                if version >= 9:
                    reply.complete(join_response(
                        version, codes.NONE, new_id, group.generation_id, group.protocol_type,
                        group.protocol_name, group.leader_id, skip_assignment=is_leader,
                        members=member_list(group) if is_leader else None))
                else:
                    # pre-KIP-814 clients must not learn they lead: they would run the assignor
                    reply.complete(join_response(
                        version, codes.NONE, new_id, group.generation_id, group.protocol_type,
                        group.protocol_name, current_leader))
            else:
                maybe_prepare_rebalance_or_complete_join(coord, group)
        elif state == COMPLETING_REBALANCE:
            prepare_rebalance(coord, group)
        else:
            maybe_complete_join_phase(coord, group)
        return reply

    # ---- known member id (b.2) -----------------------------------------------------------
    def existing_member(self):
        coord, group, version, member_id = self.coord, self.group, self.version, self.member_id
        done = coord.done_reply
        if group.state == DEAD:
            return done(join_error(version, codes.COORDINATOR_NOT_AVAILABLE, member_id))
        if not self._supported():
            return done(join_error(version, codes.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in group.pending_members:
            if self.instance_id is not None:
                # Kafka raises IllegalStateException here: a pending id is never static
                return done(join_error(version, codes.UNKNOWN_SERVER_ERROR, member_id))
            reply = coord.parked_reply()
            add_member_then_rebalance(coord, group, self._new_member(member_id), reply, version)
            return reply
        error = group.validate_member(member_id, self.instance_id)
        if error:
            return done(join_error(version, error, member_id))
        member = group.members[member_id]
        state = group.state
        if state == PREPARING_REBALANCE:
            return self._update_then_rebalance(member)
        if state == COMPLETING_REBALANCE:
            if member.matches(self.protocols):
                return done(self._current_generation(member, with_members=True))
            return self._update_then_rebalance(member)
        if state == STABLE:
            if group.leader_id == member_id or not member.matches(self.protocols):
                return self._update_then_rebalance(member)
            return done(self._current_generation(member, with_members=False))
        return done(join_error(version, codes.UNKNOWN_MEMBER_ID, member_id))

    def _update_then_rebalance(self, member: Member):
        reply = self.coord.parked_reply()
        self.group.update_member(member, self.protocols, self.rebalance_timeout,
                                 self.session_timeout, reply, self.version)
        maybe_prepare_rebalance_or_complete_join(self.coord, self.group)
        return reply

    def _current_generation(self, member: Member, with_members: bool):
        group = self.group
        is_leader = group.leader_id == member.member_id
        return join_response(
            self.version, codes.NONE, member.member_id, group.generation_id, group.protocol_type,
            group.protocol_name, group.leader_id,
            members=member_list(group) if with_members and is_leader else None)


def _swap_static_member(group: ClassicGroup, instance_id: str, old_id: str, new_id: str) -> Member:
    """Kafka's replaceStaticMember: fence the old incarnation, copy it under the new id."""
    old = group.members[old_id]
    group.save_member(old)
    group.drop_member(old_id)
    group.forget_record(old_id)
    join_reply = old.join_reply
    if join_reply is not None:
        old.join_reply = None
        group.num_awaiting_join -= 1
        join_reply.complete(join_error(old.join_version, codes.FENCED_INSTANCE_ID, old_id))
    sync_reply = old.sync_reply
    if sync_reply is not None:
        old.sync_reply = None
        sync_reply.complete(sync_response(old.sync_version, codes.FENCED_INSTANCE_ID))
    new = Member(new_id, old.group_instance_id, old.client_id, old.client_host,
                 old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                 old.protocols, old.assignment)
    group.append_member(new)      # protocol counts carry over unchanged
    group.touch_record(new_id)
    if group.leader_id == old_id:
        group.leader_id = new_id
    group.undo.dict_put(group.static_members, instance_id, new_id)
    return new
