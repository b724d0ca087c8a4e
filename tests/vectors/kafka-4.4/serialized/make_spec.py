"""Spec of the Kafka-serialized vectors: every share/streams record type of Kafka 4.4 (and the share
coordinator's), filled from kgroup's schemas with deterministic values (nullable fields null in a second
record of each type), read by Kafka's JSON converters in CoordinatorRecordSegment.java."""
import base64, json, sys, uuid
sys.path.insert(0, ".")  # run from the repository root: python tests/vectors/kafka-4.4/serialized/make_spec.py consumer OUT
from kgroup.records.schema import record_schemas

def uuid_text(n):
    return base64.urlsafe_b64encode(uuid.UUID(int=(n + 1) * 0x0123456789ABCDEF0011).bytes).decode().rstrip("=")

def value(f, kind, n, nulls, version):
    if kind == "array":
        return [value(f, f.element, n + k, nulls, version) for k in range(2)]
    if kind == "struct":
        return fill(f.struct, n, nulls, version)
    return {"bool": bool(n % 2), "int8": n % 5, "int16": 100 + n, "uint16": 60000 + n, "int32": 1000 + n,
            "int64": 1767225600000 + n, "string": f"{f.json_name}-{n}" + ("-grüße" if n % 3 == 0 else ""),
            "bytes": base64.b64encode(bytes(range(n % 5 + 1))).decode(), "uuid": uuid_text(n)}[kind]

def fill(struct, n, nulls, version):
    out = {}
    for i, f in enumerate(struct.fields):
        if version not in f.versions:
            continue
        if nulls and version in f.nullable:
            out[f.json_name] = None
        else:
            out[f.json_name] = value(f, f.type, n * 7 + i, nulls, version)
    return out

def has_nullable(struct, version):
    return any(version in f.nullable or (f.struct is not None and has_nullable(f.struct, version))
               for f in struct.fields)

def records(family, types):
    out = []
    for t in types:
        s = record_schemas(family)[t]
        for version in range(s.value.valid.low, s.value.valid.high + 1):
            for nulls in (False, True):
                if nulls and not has_nullable(s.value.struct, version):
                    continue
                if t == 0 and version > 0:  # LegacyOffsetCommitValue has version 0 only
                    continue
                out.append({"type": t, "key": fill(s.key.struct, t, False, t), "version": version,
                            "value": fill(s.value.struct, t * 3 + version + nulls, nulls, version)})
        out.append({"type": t, "key": fill(s.key.struct, t, False, t), "version": None, "value": None})
    return out

family, out = sys.argv[1], sys.argv[2]
types = [t for t in range(24) if t not in (9, 18)] if family == "consumer" else [0, 1]  # 9, 18: gone in 4.4
json.dump({"timestamp": 1767225600000, "records": records(family, types)}, open(out, "w"), ensure_ascii=False, indent=1)
