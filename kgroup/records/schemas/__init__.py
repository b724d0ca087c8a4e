"""Record schemas as data: one JSON file per record (key + value) or embedded message.

Layouts are written from the field tables of the project's consumer-offsets format spec, in the
shape of Kafka's message specs. Each record file names its ``family`` ("consumer" for
``__consumer_offsets``, "share-state" for the share coordinator's ``__share_group_state``, "connect" for
the draft ``__worker_offsets``) and its ``recordTypes``;
embedded messages (the consumer protocol) have a top-level ``message`` instead.

The streams-group files (types 17, 19-23) and ``share_snapshot`` / ``share_update`` are Kafka 4.4's
``*Key.json`` + ``*Value.json`` copied as they are, with their ``commonStructs`` inlined where used, key
fields valid in every version (a key's version is its record type) and a JSON ``null`` default read as
Kafka's generator reads it: no default (an empty array), not ``"null"``.

Choices made where the Connect draft's JSON (seed 004, "Records") is malformed:

* Trailing commas are dropped.
* ``[]String`` and the typos ``[[]string`` / ``[[]Assignor`` are read as ``[]string`` /
  ``[]Assignor``.
* ``Tasks`` is typed ``[]ConnectorsTasks`` (self-referential, impossible to encode). Elsewhere the
  draft gives tasks as ``ConnectorTaskID``, which it never defines; Connect's task id is a
  connector name plus a task number, so tasks are ``[]ConnectorTaskId {Connector string, Task int32}``.
* Type 6 (target assignment): the brackets do not balance. Read literally, ``Version`` and
  ``Metadata`` fall inside each ``Members`` element (after ``ConnectorsTasks``), which is also
  where KIP-848's early target-assignment member record kept them: they are per member.
* Type 7 (current member assignment): ``Version``/``Metadata`` are top-level fields after
  ``ConnectorsTasks``, as the brackets read once the trailing comma is dropped.
* Key 6 declares field versions "5" against validVersions "6": key fields exist in the key's one
  version, like every other key.
* Value names that do not match their keys (``GroupTargetAssignmentValue``,
  ``ConnectGroupCurrentMemberAssignmentValue``) are named after the key
  (``ConnectWorkerGroupTargetAssignmentValue``, ``ConnectWorkerGroupCurrentMemberAssignmentValue``).
* Nothing is nullable or tagged (``InstanceId`` and ``SubscribedTopicRegex`` are plain strings),
  so each value is flexible v0 with only empty tagged-field sections.
* Types 0-2 keep their ``__consumer_offsets`` meaning (the draft numbers its keys from 3 to avoid
  them); types 9-15 do not exist in this family.
"""
