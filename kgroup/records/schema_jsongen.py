"""Generated JSON converters for data dicts: kafka-dump-log's field selection and text.

Same approach as ``codegen`` (Python source per (message, version), compiled once): fields
absent in the version are left out, tagged fields only appear when not default, bytes are
standard base64 and uuids unpadded base64url.
"""

from __future__ import annotations

from functools import cache

from .codegen import GeneratedSource
from .schema import Field, Message, Struct


class _JsonBuilder:
    """dict -> JSON-ready dict: version's fields only, bytes base64, uuids base64url."""

    def __init__(self, src: GeneratedSource):
        self.src = src
        self.v = src.version

    def struct_fn(self, struct_: Struct) -> str:
        src, v = self.src, self.v
        fn = src.name("_j")
        lines = [f"def {fn}(d):", "    r = {}"]
        for f in struct_.fields:
            if v not in f.versions:
                continue
            default = f.default(v)
            get = f"d.get({f.json_name!r}, {default!r})"
            value = self.convert(f, "_v")
            if v in f.tagged:
                lines.append(f"    _v = {get}")
                lines.append(f"    if _v != {default!r}:")
                lines.append(f"        r[{f.json_name!r}] = {value}")
            elif value == "_v":
                lines.append(f"    r[{f.json_name!r}] = {get}")
            else:
                lines.append(f"    _v = {get}")
                lines.append(f"    r[{f.json_name!r}] = {value}")
        lines += ["    return r", ""]
        src.lines += lines
        return fn

    def convert(self, f: Field, expr: str) -> str:
        kind = f.element if f.type == "array" else f.type
        if kind == "bytes":
            one = "_b64({})"
        elif kind == "uuid":
            one = "_b64url({})"
        elif kind == "struct":
            one = self.struct_fn(f.struct) + "({})"
        else:
            one = None
        if f.type == "array":
            if one is None:
                return f"(None if {expr} is None else list({expr}))"
            return f"(None if {expr} is None else [{one.format('_x')} for _x in {expr}])"
        if one is None:
            return expr
        if kind == "struct":
            return f"(None if {expr} is None else {one.format(expr)})"
        return one.format(expr)

@cache
def json_converter(message: Message, version: int):
    src = GeneratedSource(version, version in message.flexible)
    entry = _JsonBuilder(src).struct_fn(message.struct)
    return src.compile(entry, f"json {message.name} v{version}")


class _TextBuilder:
    """dict -> Jackson JSON text directly (same selection as _JsonBuilder, no dict in between)."""

    def __init__(self, src: GeneratedSource):
        self.src = src
        self.v = src.version

    def struct_fn(self, struct_: Struct) -> str:
        src, v = self.src, self.v
        fn = src.name("_x")
        present = [f for f in struct_.fields if v in f.versions]
        lines = [f"def {fn}(d):"]
        if not any(v in f.tagged for f in present):
            fmt = "{" + ",".join(f'"{f.json_name}":%s' for f in present) + "}"
            args = "".join(f"{self.text(f, self.get(f))}, " for f in present)
            lines.append(f"    return {fmt!r} % ({args})")
        else:
            lines.append("    _p = []")
            for f in present:
                label = repr(f'"{f.json_name}":')
                if v in f.tagged:
                    default = f.default(v)
                    lines.append(f"    _v = {self.get(f)}")
                    lines.append(f"    if _v != {default!r}:")
                    lines.append(f"        _p.append({label} + {self.text(f, '_v')})")
                else:
                    lines.append(f"    _p.append({label} + {self.text(f, self.get(f))})")
            lines.append("    return '{' + ','.join(_p) + '}'")
        src.lines += lines + [""]
        return fn

    def get(self, f: Field) -> str:
        return f"d.get({f.json_name!r}, {f.default(self.v)!r})"

    def one(self, kind: str, f: Field) -> str:
        """A format for one non-null item of ``kind`` ({} is the item expression)."""
        if kind == "string":
            return "_js({})"
        if kind == "bytes":
            return "_jb({})"
        if kind == "uuid":
            return "_ju({})"
        if kind == "struct":
            return self.struct_fn(f.struct) + "({})"
        if kind == "bool":
            return "('true' if {} else 'false')"
        return "_int({})"

    def text(self, f: Field, expr: str) -> str:
        nullable = self.v in f.nullable
        if f.type == "array":
            item = self.one(f.element, f).format("_i")
            inner = f"'[' + ','.join([{item} for _i in _a]) + ']'"
            return f"(lambda _a: 'null' if _a is None else {inner})({expr})"
        item = self.one(f.type, f)
        if nullable or f.type == "struct":
            return f"(lambda _o: 'null' if _o is None else {item.format('_o')})({expr})"
        return item.format(expr)


@cache
def text_emitter(message: Message, version: int):
    src = GeneratedSource(version, version in message.flexible)
    entry = _TextBuilder(src).struct_fn(message.struct)
    return src.compile(entry, f"text {message.name} v{version}")
