"""kgroup.views: what kgroup shows of a group, asked of a cluster or replayed from a dump.

Modules: `model` (`GroupView`, `MemberView`, `OffsetRow`: a classic or consumer group, built from
DescribeGroups / ConsumerGroupDescribe or a replay), `connect` (a Connect worker group's view),
`dump_replay` (a dump's rows replayed into the embedded coordinator, and the views of the groups it
holds), `dump_members` (when the log last saw each member, and whether a later record shows it gone).
They read no files and send nothing: the client (`describe`, `list --from-dump`) and the decode wing
(`decode-offsets --view state`) both show them, so they sit below both.
"""
