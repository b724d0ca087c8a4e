"""Record schemas as data: the JSON files under ``schemas/`` loaded into a small model.

The files (package ``kgroup.records.schemas``, whose docstring also records the choices made
for the malformed Connect draft) follow the shape of Kafka's message specs (``validVersions``, ``flexibleVersions``,
per-field ``versions``/``nullableVersions``/``taggedVersions``/``tag``/``default``) so that the
layouts can be read and checked against the spec tables without reading any Python.
Field names are kept as Kafka spells them; ``json_name`` (first letter lowercased) is the
name used in data dicts and in kafka-dump-log output.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache

PRIMITIVES = ("bool", "int8", "int16", "int32", "int64", "uint16", "string", "bytes", "uuid")
ZERO_UUID = bytes(16)


class SchemaError(ValueError):
    """A schema file is malformed (a bug in the package data, not in a record)."""


@dataclass(frozen=True, slots=True)
class VersionRange:
    """Kafka's version-range notation: ``"none"``, ``"3"``, ``"1-2"``, ``"4+"``."""

    low: int
    high: int  # inclusive; a large number stands for "+"

    @classmethod
    def parse(cls, text: str | None) -> "VersionRange":
        if text is None or text == "none":
            return cls(1, 0)  # empty
        text = str(text).strip()
        try:
            if text.endswith("+"):
                return cls(int(text[:-1]), 0x7FFF)
            if "-" in text[1:]:
                low, high = text.split("-", 1)
                return cls(int(low), int(high))
            return cls(int(text), int(text))
        except ValueError:
            raise SchemaError(f"bad version range {text!r}") from None

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high


@dataclass(slots=True)
class Field:
    name: str
    json_name: str
    type: str  # one of PRIMITIVES, "struct", or "array"
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    has_default: bool
    default_spec: object
    element: str | None = None  # array element type: a primitive or "struct"
    struct: "Struct | None" = None  # for struct fields and arrays of structs

    def default(self, version: int):
        """Kafka's value for this field when it is absent (a fresh object, safe to mutate)."""
        if self.has_default and self.default_spec is None:
            return None
        if self.type == "array":
            return []
        if self.type == "struct":
            return self.struct.defaults(version)
        if self.has_default:
            return self.default_spec
        return {"string": "", "bytes": b"", "uuid": ZERO_UUID, "bool": False}.get(self.type, 0)

    def required_for_encode(self) -> bool:
        return not self.has_default and self.tag is None and self.type not in ("array", "struct")


@dataclass(slots=True)
class Struct:
    name: str
    fields: list[Field] = field(default_factory=list)

    def defaults(self, version: int) -> dict:
        return {f.json_name: f.default(version) for f in self.fields}

    def fields_in(self, version: int) -> list[Field]:
        return [f for f in self.fields if version in f.versions]


@dataclass(slots=True, eq=False)
class Message:
    """One top-level schema (a key, a value or an embedded message)."""

    name: str
    valid: VersionRange
    flexible: VersionRange
    struct: Struct

    def clamp(self, version: int) -> int:
        """The layout trunk's generated reader applies to an out-of-range version.

        Its ``version >= N`` / ``version <= N`` tests make any version above the highest
        behave like the highest and any version below the lowest like the lowest.
        """
        return min(max(version, self.valid.low), self.valid.high)


@dataclass(slots=True, eq=False)
class RecordSchema:
    family: str
    record_types: tuple[int, ...]
    name: str
    key: Message
    value: Message
    comment: str = ""


def lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


def _parse_fields(spec_fields: list, owner: str) -> list[Field]:
    fields = []
    for spec in spec_fields:
        try:
            name = spec["name"]
            type_text = spec["type"]
        except KeyError as exc:
            raise SchemaError(f"{owner}: field without {exc.args[0]}") from None
        element = struct = None
        if type_text.startswith("[]"):
            kind, inner = "array", type_text[2:]
            element = inner if inner in PRIMITIVES else "struct"
            if element == "struct":
                struct = Struct(inner, _parse_fields(spec.get("fields", []), f"{owner}.{name}"))
        elif type_text in PRIMITIVES:
            kind = type_text
        else:
            kind = "struct"
            struct = Struct(type_text, _parse_fields(spec.get("fields", []), f"{owner}.{name}"))
        if "fields" in spec and struct is None:
            raise SchemaError(f"{owner}.{name}: nested fields on a {type_text} field")
        fields.append(Field(
            name=name,
            json_name=lower_first(name),
            type=kind,
            versions=VersionRange.parse(spec.get("versions")),
            nullable=VersionRange.parse(spec.get("nullableVersions")),
            tagged=VersionRange.parse(spec.get("taggedVersions")),
            tag=spec.get("tag"),
            has_default="default" in spec,
            default_spec=spec.get("default"),
            element=element,
            struct=struct,
        ))
    return fields


def _parse_message(spec: dict, valid: str | None = None) -> Message:
    name = spec["name"]
    return Message(
        name=name,
        valid=VersionRange.parse(valid if valid is not None else spec.get("validVersions")),
        flexible=VersionRange.parse(spec.get("flexibleVersions")),
        struct=Struct(name, _parse_fields(spec["fields"], name)),
    )


@cache
def _schema_specs() -> tuple[dict, ...]:
    """Every JSON file of the ``kgroup.records.schemas`` package, parsed once."""
    specs = []
    for name, text in _schema_files():
        try:
            spec = json.loads(text)
        except ValueError as exc:
            raise SchemaError(f"{name}: {exc}") from None
        spec["_file"] = name
        specs.append(spec)
    return tuple(specs)


def _schema_files() -> list[tuple[str, str]]:
    """(name, text) of the schema JSON files by name: from the package's folder when it is one
    (importlib.resources costs a tenth of decode-offsets' start-up), else through it (a zip)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")
    if os.path.isdir(folder):
        names = sorted(name for name in os.listdir(folder) if name.endswith(".json"))
        out = []
        for name in names:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                out.append((name, f.read()))
        return out
    from importlib import resources

    paths = sorted((p for p in resources.files("kgroup.records.schemas").iterdir() if p.name.endswith(".json")),
                   key=lambda p: p.name)
    return [(p.name, p.read_text(encoding="utf-8")) for p in paths]


@cache
def record_schemas(family: str) -> dict[int, RecordSchema]:
    """Record type -> schema for one family ("consumer", "connect" or "share-state")."""
    table: dict[int, RecordSchema] = {}
    for spec in _schema_specs():
        if spec.get("family") != family or "recordTypes" not in spec:
            continue
        types = tuple(spec["recordTypes"])
        record = RecordSchema(
            family=family,
            record_types=types,
            name=spec["name"],
            key=_parse_message(spec["key"], f"{min(types)}-{max(types)}"),
            value=_parse_message(spec["value"]),
            comment=spec.get("comment", ""),
        )
        for record_type in types:
            if record_type in table:
                raise SchemaError(f"{spec['_file']}: record type {record_type} defined twice")
            table[record_type] = record
    inherit = spec_inherits(family)
    if inherit:
        for record_type, record in record_schemas(inherit[0]).items():
            if record_type in inherit[1]:
                table.setdefault(record_type, record)
    return dict(sorted(table.items()))


def spec_inherits(family: str) -> tuple[str, tuple[int, ...]] | None:
    """Families that reuse another family's record types.

    The Connect draft numbers its keys from 3 because "the current protocol already uses
    versions from 0 to 2 (included) for the keys": types 0-2 keep their consumer meaning.
    """
    return ("consumer", (0, 1, 2)) if family == "connect" else None


@cache
def embedded_message(name: str) -> Message:
    """An embedded message (ConsumerProtocolSubscription / ConsumerProtocolAssignment)."""
    for spec in _schema_specs():
        if "message" in spec and spec["message"]["name"] == name:
            return _parse_message(spec["message"])
    raise SchemaError(f"no embedded schema named {name}")
