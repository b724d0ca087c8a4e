"""Frame fuzzing of `kgroup serve`: a valid request for every (API key, version) a listener
advertises, and the mutations a hostile or broken client could send in its place.

The valid requests are filled in from the request classes' own schemas (kafka-python's and
`kgroup.protocol`'s), with field values chosen by name so that an unmutated frame is one the
server answers (a fuzz group and topic, no long-poll waits, one element per array). The
mutations work on the encoded frame, so they reach the framing and the decoders as well as the
handlers; `extreme_seeds` are well-formed frames with one field at the edge of its type, which
decode and so reach the handlers and the coordinator. Used by tests/server/test_serve_fuzz.py and benchmarks/fuzz_serve.py (`frame_fuzz_run` drives
the connections, `harness.FuzzTarget` runs the server); not part of the CLI.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

FUZZ_GROUP = "fuzz-g"
FUZZ_TOPIC = "fuzz-t"
FUZZ_USER, FUZZ_PASSWORD = "fuzz", "fuzz-pw"
PLAIN_TOKEN = f"\0{FUZZ_USER}\0{FUZZ_PASSWORD}".encode()  # SASL/PLAIN: authzid, user, password
PARKING_APIS = {1, 11, 14}  # Fetch, JoinGroup, SyncGroup: may hold an answer for a client's timeout
_SIZE = struct.Struct(">i")

_STRINGS = {"member_id": "", "protocol_type": "consumer", "mechanism": "PLAIN",
            "client_software_name": "fuzz", "client_software_version": "1", "key": FUZZ_GROUP,
            "rack_id": "", "server_assignor": "uniform"}
_INTS = {"session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "timeout_ms": 1000,
         "max_wait_ms": 0, "max_bytes": 1 << 20, "partition_max_bytes": 1 << 20,
         "num_partitions": 1, "replication_factor": 1, "acks": 1, "generation_id": -1,
         "generation_id_or_member_epoch": -1, "current_leader_epoch": -1, "timestamp": -1,
         "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1,
         "committed_offset": 5, "committed_leader_epoch": -1, "leader_epoch": -1,
         "last_fetched_epoch": -1, "log_start_offset": -1, "session_epoch": -1,
         "replica_id": -1, "retention_time_ms": -1, "member_epoch": 0}


def _string_for(name: str, parent: str) -> str:
    if name in _STRINGS:
        return _STRINGS[name]
    if "group" in name:
        return FUZZ_GROUP
    if name == "name" and parent == "protocols":
        return "range"
    if "topic" in name or name == "name":
        return FUZZ_TOPIC
    return "fuzz"


def _value(f, version, parent, records, extreme=None):
    name, type_str = f.name, f.type_str
    if extreme is not None and name == extreme[0]:
        return extreme[1]
    if f.is_struct_array():
        return [_fill(f, f.data_class, version, name, records, extreme)]
    if f.is_struct():
        return _fill(f, f.data_class, version, name, records, extreme)
    if f.is_array():
        if "string" in type_str:
            return [_string_for(name, parent)]
        return [0]
    if type_str == "string":
        return _string_for(name, parent)
    if type_str == "records":
        return records
    if type_str == "bytes":
        return PLAIN_TOKEN if name == "auth_bytes" else b""
    if type_str.startswith("int"):
        return _INTS.get(name, 0)
    return None  # bool, uuid, float: the schema's default


def _fill(struct_field, make, version, parent, records, extreme=None):
    values = {}
    for f in struct_field.fields.values():
        if not f.for_version_q(version):
            continue
        value = _value(f, version, parent, records, extreme)
        if value is not None:
            values[f.name] = value
    return make(**values) if make is not None else values


def valid_request(request_class, version: int, extreme=None):
    """A request of `request_class` at `version` the server answers: fields by name, one element
    in each array; `extreme` (field name, value) sets every field of that name instead."""
    from kgroup.records.writer import encode_batch

    records = encode_batch([(b"k", b"v", 1000)], compression="none")
    values = _fill(request_class._struct, None, version, "", records, extreme)
    return request_class(version=version, **values)


def encode_frame(request, correlation_id: int, client_id: str = "fuzz") -> bytes:
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


@dataclass(frozen=True)
class Seed:
    """One valid frame to mutate: its API, version and framed bytes."""
    api_key: int
    version: int
    frame: bytes

    def in_group(self, group: str) -> Seed:
        """The same frame naming `group` (as long as FUZZ_GROUP) instead of FUZZ_GROUP, so that
        connections do not all join one group and wait for each other's members."""
        assert len(group) == len(FUZZ_GROUP)
        return Seed(self.api_key, self.version,
                    self.frame.replace(FUZZ_GROUP.encode(), group.encode()))


def seeds(api_table) -> list[Seed]:
    """One valid frame per (API key, version) of `api_table` (the broker's, or a SASL listener's)."""
    out = []
    for api_key, (request_class, lo, hi, _handler) in sorted(api_table.items()):
        for version in range(lo, hi + 1):
            out.append(Seed(api_key, version, encode_frame(valid_request(request_class, version),
                                                           correlation_id=7)))
    return out


_INT_EXTREMES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(1 << 31), (1 << 31) - 1),
                 "int64": (-(1 << 63), (1 << 63) - 1)}
_STRING_EXTREMES = ("", "x" * 300, "\u00fc\u20ac\U0001f600 .. /")


def extreme_seeds(api_table) -> list[Seed]:
    """Well-formed frames with one field (by name, at every depth) set to an edge of its type:
    the smallest and largest integer, -1 and 0; an empty, a long and a non-ASCII string. They
    decode, so they reach the handlers and the coordinator."""
    out = []
    for api_key, (request_class, lo, hi, _handler) in sorted(api_table.items()):
        for version in range(lo, hi + 1):
            for name, type_str in sorted(_scalar_fields(request_class._struct, version)):
                values = (_STRING_EXTREMES if type_str == "string"
                          else (*_INT_EXTREMES[type_str], -1, 0))
                for value in values:
                    request = valid_request(request_class, version, (name, value))
                    out.append(Seed(api_key, version, encode_frame(request, correlation_id=7)))
    return out


def _scalar_fields(struct_field, version) -> set[tuple[str, str]]:
    found = set()
    for f in struct_field.fields.values():
        if not f.for_version_q(version):
            continue
        if f.is_struct_array() or f.is_struct():
            found |= _scalar_fields(f, version)
        elif not f.is_array() and (f.type_str == "string" or f.type_str in _INT_EXTREMES):
            found.add((f.name, f.type_str))
    return found


@dataclass
class Send:
    """What a connection sends for one fuzz frame: chunks written apart, and what was done."""
    seed: Seed
    mutation: str
    chunks: list[bytes] = field(default_factory=list)
    size_lie: bool = False  # the size prefix is not the frame's: the server may wait for bytes

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    def may_park(self) -> bool:
        """Whether the seed, or the API key the mutation left in the header, is a long-poll."""
        sent_key = struct.unpack_from(">h", self.data, 4)[0] if len(self.data) >= 6 else None
        return self.seed.api_key in PARKING_APIS or sent_key in PARKING_APIS


_HUGE_INT32 = [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x00\x00\xff\xff", b"\x80\x00\x00\x00",
               b"\xff\xff\xff\xff"]
_HUGE_VARINT = [b"\xff\xff\xff\xff\x07", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x01",
                b"\xfe\xff\x03"]


def _reframe(body: bytes) -> bytes:
    return _SIZE.pack(len(body)) + body


def mutate(seed: Seed, rng: random.Random, api_keys) -> Send:
    """One mutation of `seed`'s frame (the header and body, then the size prefix made to match
    unless the mutation is about the size prefix)."""
    body = bytearray(seed.frame[4:])
    kind = rng.choice(_KINDS)
    send = Send(seed, kind)
    if kind == "valid":
        pass
    elif kind == "bitflip":
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(4, len(body)) if len(body) > 4 else 0
            body[pos] ^= 1 << rng.randrange(8)
    elif kind == "byteset":
        for _ in range(rng.randint(1, 3)):
            body[rng.randrange(len(body))] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF))
    elif kind == "truncate":
        del body[rng.randrange(0, len(body)):]
    elif kind == "huge_count":  # a length/count field (int32 or varint) made huge or negative
        pos = rng.randrange(8, max(9, len(body) - 1))
        patch = rng.choice(_HUGE_INT32 + _HUGE_VARINT)
        body[pos:pos + (4 if len(patch) == 4 else rng.randint(1, 2))] = patch
    elif kind == "wrong_version":
        struct.pack_into(">h", body, 2, rng.choice((-1, seed.version + 1, seed.version - 1, 99,
                                                    rng.randrange(0, 20))))
    elif kind == "unknown_key":
        key = rng.choice((-1, 4, 5, 6, 7, 17, 36, 50, 999, 1003, 32767))
        if key in api_keys:
            key = 31000
        struct.pack_into(">h", body, 0, key)
    elif kind == "tagged_garbage":
        # a tag section (the header's, after a 4-byte client id, or the body's last) replaced by
        # unknown, duplicate, out-of-order or length-lying tags, or random bytes
        pos = rng.choice((14, len(body) - 1)) if len(body) > 14 else len(body)
        body[pos:pos + 1] = rng.choice((
            b"\x01\x00\x7f", b"\x02\x05\x01\xff\x05\x00", b"\xff\xff\xff\xff\x0f",
            b"\x01\x00\x00", b"\x02\x00\x01\x00\x00\x01\x00", b"\x01\x63\x03abc",
            b"\x01\x00\x01", bytes(rng.randrange(256) for _ in range(6))))
    elif kind == "trailing":
        body += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
    if kind == "size_short":  # the prefix claims less: the rest is read as the next frame
        cut = rng.randrange(0, len(body))
        send.chunks = [_SIZE.pack(cut) + bytes(body)]
        send.size_lie = True
    elif kind == "size_long":
        send.chunks = [_SIZE.pack(len(body) + rng.choice((1, 100, 1 << 20))) + bytes(body)]
        send.size_lie = True
    elif kind == "size_bad":
        send.chunks = [rng.choice(_HUGE_INT32) + bytes(body)]
        send.size_lie = True
    else:
        send.chunks = [_reframe(bytes(body))]
    if rng.random() < 0.2:  # the same bytes split across writes
        data = send.data
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 3))))
        send.chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
    return send


_KINDS = ("valid", "bitflip", "bitflip", "bitflip", "byteset", "truncate", "huge_count",
          "huge_count", "wrong_version", "unknown_key", "tagged_garbage", "trailing", "size_short",
          "size_long", "size_bad")
