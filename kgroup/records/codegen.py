"""Generate a reader, a writer and a JSON converter per (message, version) from schema data.

Each function is built as Python source, compiled once and cached, so decoding runs
straight-line code: adjacent fixed-width fields (and the length prefix of the string that
follows them) are read or written with one precompiled ``struct.Struct``.

Generated reader: ``read(buf: bytes, pos: int) -> (dict, pos)``; raises ``ReadFailure`` with
Kafka's inner message, or IndexError/struct.error for an underflow (Kafka's "null").
Whole-record reader (``record_reader``): ``read(buf) -> object`` from a fixed start, building
its result object itself (the key/value decoders' hot path: one call per key or value).
In non-flexible versions a string/bytes field followed by fixed-width fields is first read
as if empty, with the fixed fields around it in one struct, then the ordinary way if not.
Generated writer: ``write(out: bytearray, data: dict)``; raises ``WriteFailure`` naming the field.
JSON converters and text emitters are generated the same way in ``schema_jsongen``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

from . import schema_runtime as rt
from .schema import Field, Message, Struct, VersionRange

_NULL_STRING = "non-nullable field {} was serialized as null"
_SHORT_ARRAY = "'Error reading byte array of %d byte(s): only %d byte(s) available' % ({}, _n - pos)"
_BIG_COLLECTION = ("'Tried to allocate a collection of size %d, but there are only %d bytes "
                   "remaining.' % ({}, _n - pos)")


class GeneratedSource:
    """Accumulates generated functions and the constants they reference."""

    def __init__(self, version: int, flexible: bool):
        self.version = version
        self.flexible = flexible
        self.lines: list[str] = []
        self.consts: dict[str, object] = {}
        self._count = 0

    def name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def const(self, value, prefix: str = "_K") -> str:
        for key, existing in self.consts.items():
            if key.startswith(prefix) and type(existing) is type(value) and existing == value:
                return key
        key = self.name(prefix)
        self.consts[key] = value
        return key

    def struct_const(self, codes: str) -> str:
        return self.const(struct.Struct(">" + codes), "_S")

    def compile(self, entry: str, label: str):
        namespace = {
            "ReadFailure": rt.ReadFailure, "WriteFailure": rt.WriteFailure,
            "_uv": rt.read_uvarint, "_uvs": rt.read_uvarint_int32, "_wuv": rt.write_uvarint, "_wtags": rt.write_tagged,
            "_utf8": rt.encode_utf8, "_bytes": rt.as_bytes, "_uuid": rt.as_uuid,
            "_unpack_from": rt.unpack_from, "_pack": rt.pack, "_b64": rt.b64, "_b64url": rt.b64url,
            "_js": rt.json_string, "_jb": rt.json_bytes, "_ju": rt.json_uuid, "_int": rt.json_int,
        }
        namespace.update(self.consts)
        source = "\n".join(self.lines) + "\n"
        exec(compile(source, f"<kgroup codegen {label}>", "exec"), namespace)
        function = namespace[entry]
        function.__source__ = source
        return function


# ---------------------------------------------------------------- readers

def _unpack_lines(src: GeneratedSource, run: list[tuple[str, str]], out: list[str]) -> None:
    """Read a run of fixed-width fields (struct code, target variable) with one struct."""
    if run:
        codes = "".join(code for code, _ in run)
        out.append(f"({', '.join(var for _, var in run)},) = "
                   f"{src.struct_const(codes)}.unpack_from(buf, pos)")
        out.append(f"pos += {struct.calcsize('>' + codes)}")


class _ReaderBuilder:
    def __init__(self, src: GeneratedSource, speculate: bool = True):
        self.src = src
        self.v = src.version
        self.speculate_empty = speculate

    def struct_fn(self, struct_: Struct, top: "TopLevel | None" = None) -> str:
        src, v = self.src, self.v
        fn = src.name("_r")
        body: list[str] = []
        run: list[tuple[str, str]] = []  # (struct code, target variable)
        results: list[tuple[str, str]] = []  # (json name, expression)

        def flush():
            if not run:
                return
            codes = "".join(code for code, _ in run)
            size = struct.calcsize(">" + codes)
            targets = ", ".join(var for _, var in run)
            body.append(f"({targets},) = {src.struct_const(codes)}.unpack_from(buf, pos)")
            body.append(f"pos += {size}")
            run.clear()

        tagged: list[Field] = []
        read: list[tuple[Field, str]] = []  # fields this version reads, in order, with their variables
        for f in struct_.fields:
            if v not in f.versions:
                results.append((f.json_name, repr(f.default(v))))
                continue
            if v in f.tagged:
                tagged.append(f)
                results.append((f.json_name, f"_t{f.tag}"))
                continue
            var = src.name("f")
            results.append((f.json_name, var))
            read.append((f, var))
        i = 0
        while i < len(read):
            f, var = read[i]
            i += 1
            if self.speculate_empty and not src.flexible and f.type in ("string", "bytes"):
                following = []
                while i < len(read) and read[i][0].type in rt.STRUCT_CODES:
                    following.append(read[i])
                    i += 1
                if following:
                    self.speculate(f, var, following, body, run)
                    continue
            self.field(f, var, body, run, flush)
        flush()
        if src.flexible:
            self.tagged_section(tagged, body)
        has_unknown = src.flexible
        if top is None:
            lines = [f"def {fn}(buf, pos):", "    _n = len(buf)"]
        else:
            lines = [f"def {fn}(buf):", "    _n = len(buf)", f"    pos = {top.start}"]
        lines += ["    " + line for line in body]
        items = ", ".join(f"{name!r}: {expr}" for name, expr in results)
        if top is not None:
            data = f"{{{items}}}"
            if has_unknown:
                lines.append(f"    _d = {data}")
                lines.append("    if _unk is not None:")
                lines.append("        _d['_unknownTaggedFields'] = _unk")
                data = "_d"
            lines += ["    " + line.replace("{data}", data) for line in top.result]
        elif has_unknown:
            lines.append(f"    _d = {{{items}}}")
            lines.append("    if _unk is not None:")
            lines.append("        _d['_unknownTaggedFields'] = _unk")
            lines.append("    return _d, pos")
        else:
            lines.append(f"    return {{{items}}}, pos")
        src.lines += lines + [""]
        return fn

    def speculate(self, f: Field, var: str, following: list[tuple[Field, str]], body: list[str],
                  run: list[tuple[str, str]]):
        """A non-flexible string/bytes field followed by fixed-width fields.

        Read at once as if the blob were empty (or null): the fixed run before it, its length
        and the fixed run after it, with one struct. That guess holds for the common empty
        metadata / null instance id; when it does not (or the buffer is too short to try), the
        blob and the run after it are read the ordinary way, so values and errors are the same.
        """
        src = self.src
        nullable = self.v in f.nullable
        ln = src.name("_l")
        head = run[:]
        run.clear()
        head.append(("h" if f.type == "string" else "i", ln))
        tail = [(rt.STRUCT_CODES[g.type], gvar) for g, gvar in following]
        codes = "".join(code for code, _ in head + tail)
        head_codes = "".join(code for code, _ in head)
        size = struct.calcsize(">" + codes)
        targets = ", ".join(target for _, target in head + tail)
        ordinary: list[str] = [f"pos += {struct.calcsize('>' + head_codes)}"]
        self.blob_body(f, var, ln, nullable, ordinary)
        _unpack_lines(src, tail, ordinary)
        ordinary = ["    " + line for line in ordinary]
        empty = "''" if f.type == "string" else "b''"
        body.append(f"if _n - pos >= {size}:")
        body.append(f"    ({targets},) = {src.struct_const(codes)}.unpack_from(buf, pos)")
        body.append(f"    if {ln} <= 0:" if nullable else f"    if {ln} == 0:")
        body.append(f"        {var} = {empty} if {ln} == 0 else None" if nullable
                    else f"        {var} = {empty}")
        body.append(f"        pos += {size}")
        body.append("    else:")
        body += ["    " + line for line in ordinary]
        body.append("else:")
        body.append(f"    ({', '.join(t for _, t in head)},) = "
                    f"{src.struct_const(head_codes)}.unpack_from(buf, pos)")
        body += ordinary

    def length(self, var: str, body: list[str], run, flush, nonflex_code: str):
        """Read a length/count prefix into ``var`` (already minus one in flexible versions)."""
        if self.src.flexible:
            flush()
            body.append(f"{var} = buf[pos]")
            body.append("pos += 1")
            body.append(f"if {var} > 127:")
            body.append(f"    {var}, pos = _uvs(buf, pos - 1)")
            body.append(f"{var} -= 1")
        else:
            run.append((nonflex_code, var))
            flush()

    def field(self, f: Field, var: str, body: list[str], run, flush):
        src, v = self.src, self.v
        nullable = v in f.nullable
        if f.type in rt.STRUCT_CODES:
            run.append((rt.STRUCT_CODES[f.type], var))
            return
        if f.type in ("string", "bytes"):
            ln = src.name("_l")
            self.length(ln, body, run, flush, "h" if f.type == "string" else "i")
            self.blob_body(f, var, ln, nullable, body)
            return
        if f.type == "array":
            cnt = src.name("_c")
            self.length(cnt, body, run, flush, "i")
            self.array_body(f, var, cnt, nullable, body)
            return
        if f.type == "struct":
            flush()
            sub = self.struct_fn(f.struct)
            if nullable:  # Kafka's presence byte: negative for null
                body.append("if buf[pos] > 127:")
                body.append(f"    {var} = None")
                body.append("    pos += 1")
                body.append("else:")
                body.append(f"    {var}, pos = {sub}(buf, pos + 1)")
            else:
                body.append(f"{var}, pos = {sub}(buf, pos)")
            return
        raise AssertionError(f.type)

    def blob_body(self, f: Field, var: str, ln: str, nullable: bool, body: list[str]):
        null = f"{var} = None" if nullable else f"raise ReadFailure({_NULL_STRING.format(f.json_name)!r})"
        body.append(f"if {ln} < 0:")
        body.append(f"    {null}")
        body.append("else:")
        if f.type == "string" and self.src.flexible:
            body.append(f"    if {ln} > 0x7fff:")
            body.append(f"        raise ReadFailure('string field {f.json_name} had invalid length %d' % {ln})")
        body.append(f"    _e = pos + {ln}")
        body.append("    if _e > _n:")
        body.append(f"        raise ReadFailure({_SHORT_ARRAY.format(ln)})")
        if f.type == "string":  # empty strings (common: metadata, instance ids) skip the decode
            body.append(f"    {var} = buf[pos:_e].decode('utf-8', 'replace') if {ln} else ''")
        else:
            body.append(f"    {var} = buf[pos:_e]")
        body.append("    pos = _e")

    def element(self, element: str, f: Field, var: str, body: list[str]):
        """Read one array element of a non-fixed type into ``var``."""
        src = self.src
        if element in ("string", "bytes"):
            ln = src.name("_l")
            inner: list[str] = []
            run: list = []

            def flush():
                if run:
                    codes = "".join(code for code, _ in run)
                    inner.append(f"({run[0][1]},) = {src.struct_const(codes)}.unpack_from(buf, pos)")
                    inner.append(f"pos += {struct.calcsize('>' + codes)}")
                    run.clear()

            self.length(ln, inner, run, flush, "h" if element == "string" else "i")
            pseudo = Field(f.json_name, f.json_name, element, f.versions, f.nullable, f.tagged,
                           None, False, None)
            self.blob_body(pseudo, var, ln, False, inner)
            body += inner
        elif element == "struct":
            sub = self.struct_fn(f.struct)
            body.append(f"{var}, pos = {sub}(buf, pos)")
        else:
            raise AssertionError(element)

    def array_body(self, f: Field, var: str, cnt: str, nullable: bool, body: list[str]):
        null = f"{var} = None" if nullable else f"raise ReadFailure({_NULL_STRING.format(f.json_name)!r})"
        body.append(f"if {cnt} < 0:")
        body.append(f"    {null}")
        body.append("else:")
        body.append(f"    if {cnt} > _n - pos:")
        body.append(f"        raise ReadFailure({_BIG_COLLECTION.format(cnt)})")
        if f.element in rt.STRUCT_CODES:
            code = rt.STRUCT_CODES[f.element]
            size = rt.STRUCT_SIZES[f.element]
            body.append(f"    {var} = list(_unpack_from('>%d{code}' % {cnt}, buf, pos))")
            body.append(f"    pos += {size} * {cnt}")
            return
        inner: list[str] = []
        item = self.src.name("_x")
        self.element(f.element, f, item, inner)
        body.append(f"    {var} = []")
        body.append(f"    for _ in range({cnt}):")
        body += ["        " + line for line in inner]
        body.append(f"        {var}.append({item})")

    def tagged_section(self, tagged: list[Field], body: list[str]):
        v = self.v
        body.append("_unk = None")
        for f in tagged:
            body.append(f"_t{f.tag} = {f.default(v)!r}")
        body.append("_nt = buf[pos]")
        body.append("pos += 1")
        body.append("if _nt > 127:")
        body.append("    _nt, pos = _uvs(buf, pos - 1)")
        body.append("for _ in range(_nt):")
        body.append("    _tag, pos = _uv(buf, pos)")
        body.append("    _size, pos = _uvs(buf, pos)")
        keyword = "if"
        for f in tagged:
            body.append(f"    {keyword} _tag == {f.tag}:")
            keyword = "elif"
            inner: list[str] = []
            var = f"_t{f.tag}"
            if f.type == "struct":
                sub = self.struct_fn(f.struct)
                if v in f.nullable:
                    inner.append("_m, pos = _uv(buf, pos)")
                    inner.append("if _m == 0:")
                    inner.append(f"    {var} = None")
                    inner.append("else:")
                    inner.append(f"    {var}, pos = {sub}(buf, pos)")
                else:
                    inner.append(f"{var}, pos = {sub}(buf, pos)")
            else:
                run: list = []
                src = self.src

                def flush():
                    if run:
                        codes = "".join(code for code, _ in run)
                        targets = ", ".join(t for _, t in run)
                        inner.append(f"({targets},) = {src.struct_const(codes)}.unpack_from(buf, pos)")
                        inner.append(f"pos += {struct.calcsize('>' + codes)}")
                        run.clear()

                self.field(f, var, inner, run, flush)
                flush()
            body += ["        " + line for line in inner]
        body.append(f"    {'else' if tagged else 'if True'}:")
        body.append("        if _size < 0:")
        body.append("            raise ReadFailure(str(_size))  # Java: NegativeArraySizeException")
        body.append("        if _size > _n - pos:")
        body.append(f"            raise ReadFailure({_SHORT_ARRAY.format('_size')})")
        body.append("        if _unk is None:")
        body.append("            _unk = {}")
        body.append("        _unk[_tag] = buf[pos:pos + _size]")
        body.append("        pos += _size")


# ---------------------------------------------------------------- writers

class _WriterBuilder:
    def __init__(self, src: GeneratedSource):
        self.src = src
        self.v = src.version

    def access(self, f: Field, data: str = "d") -> str:
        if f.required_for_encode():
            return f"{data}[{f.json_name!r}]"
        return f"{data}.get({f.json_name!r}, {f.default(self.v)!r})"

    def struct_fn(self, struct_: Struct) -> str:
        src, v = self.src, self.v
        fn = src.name("_w")
        body: list[str] = ["_f = None"]
        run: list[str] = []

        run_names: list[str] = []

        def flush():
            if run:
                codes = "".join(code for code, _ in run)
                exprs = ", ".join(expr for _, expr in run)
                body.append(f"_f = {', '.join(run_names)!r}")
                body.append(f"out += {src.struct_const(codes)}.pack({exprs})")
                if len(run_names) > 1:
                    body.append(f"_f = {run_names[-1]!r}")
                run.clear()
            run_names.clear()

        tagged: list[Field] = []
        for f in struct_.fields:
            if v not in f.versions:
                continue
            if v in f.tagged:
                tagged.append(f)
                continue
            body.append(f"_f = {f.json_name!r}")
            run_names.append(f.json_name)
            self.field(f, self.access(f), body, run, flush)
        flush()
        if src.flexible:
            self.tagged_section(tagged, body)
        lines = [f"def {fn}(out, d):", "    try:"]
        lines += ["        " + line for line in body]
        lines += [
            "    except WriteFailure as exc:",
            "        exc.path = f'{_f}.{exc.path}' if _f else exc.path",
            "        raise",
            "    except Exception as exc:",
            "        raise WriteFailure(_f or '?', exc) from exc",
            "",
        ]
        src.lines += lines
        return fn

    def write_length(self, expr: str, body: list[str], run, flush, nonflex_code: str):
        if self.src.flexible:
            flush()
            body.append(f"if {expr} < 0x7f:")     # a one-byte varint: almost every string and array
            body.append(f"    out.append({expr} + 1)")
            body.append("else:")
            body.append(f"    _wuv(out, {expr} + 1)")
        else:
            run.append((nonflex_code, expr))
            flush()

    def field(self, f: Field, expr: str, body: list[str], run, flush):
        src, v = self.src, self.v
        nullable = v in f.nullable
        if f.type in rt.STRUCT_CODES:
            if f.type == "uuid":
                expr = f"_uuid({expr})"
            run.append((rt.STRUCT_CODES[f.type], expr))
            return
        if f.type in ("string", "bytes"):
            var = src.name("_s")
            ln = src.name("_n")
            if f.type == "string":      # a str is encoded in place; anything else goes by _utf8's checks
                convert = f"{var}.encode('utf-8') if type({var}) is str else _utf8({var})"
            else:
                convert = f"_bytes({var})"
            body.append(f"{var} = {expr}")
            if nullable:
                body.append(f"if {var} is None:")
                body.append(f"    {ln} = -1")
                body.append("else:")
                body.append(f"    {var} = {convert}")
                body.append(f"    {ln} = len({var})")
            else:
                body.append(f"{var} = {convert}")
                body.append(f"{ln} = len({var})")
            if f.type == "string":
                body.append(f"if {ln} > 0x7fff:")
                body.append(f"    raise ValueError('string of %d bytes is too long to be serialized' % {ln})")
            self.write_length(ln, body, run, flush, "h" if f.type == "string" else "i")
            if nullable:
                body.append(f"if {var} is not None:")
                body.append(f"    out += {var}")
            else:
                body.append(f"out += {var}")
            return
        if f.type == "array":
            var = src.name("_a")
            ln = src.name("_n")
            body.append(f"{var} = {expr}")
            if nullable:
                body.append(f"{ln} = -1 if {var} is None else len({var})")
            else:
                body.append(f"if {var} is None:")
                body.append("    raise ValueError('non-nullable array is None')")
                body.append(f"{ln} = len({var})")
            self.write_length(ln, body, run, flush, "i")
            inner: list[str] = []
            if f.element in rt.STRUCT_CODES:
                code = rt.STRUCT_CODES[f.element]
                items = f"[_uuid(_x) for _x in {var}]" if f.element == "uuid" else var
                inner.append(f"out += _pack('>%d{code}' % {ln}, *{items})")
            else:
                inner.append(f"for _x in {var}:")
                if f.element == "struct":
                    inner.append(f"    {self.struct_fn(f.struct)}(out, _x)")
                else:
                    pseudo = Field(f.json_name, f.json_name, f.element, f.versions,
                                   VersionRange(1, 0), f.tagged, None, False, None)
                    sub: list[str] = []
                    sub_run: list = []

                    def sub_flush():
                        if sub_run:
                            codes = "".join(code for code, _ in sub_run)
                            exprs = ", ".join(e for _, e in sub_run)
                            sub.append(f"out += {src.struct_const(codes)}.pack({exprs})")
                            sub_run.clear()

                    self.field(pseudo, "_x", sub, sub_run, sub_flush)
                    sub_flush()
                    inner += ["    " + line for line in sub]
            if nullable:
                body.append(f"if {var} is not None:")
                body += ["    " + line for line in inner]
            else:
                body += inner
            return
        if f.type == "struct":
            flush()
            if nullable:  # Kafka's presence byte: -1 for null, 1 before the struct
                body.append(f"_p = {expr}")
                body.append("if _p is None:")
                body.append("    out.append(255)")
                body.append("else:")
                body.append("    out.append(1)")
                body.append(f"    {self.struct_fn(f.struct)}(out, _p)")
            else:
                body.append(f"{self.struct_fn(f.struct)}(out, {expr})")
            return
        raise AssertionError(f.type)

    def tagged_section(self, tagged: list[Field], body: list[str]):
        v = self.v
        if not tagged:
            body.append("_u = d.get('_unknownTaggedFields')")
            body.append("if _u:")
            body.append("    _wtags(out, list(_u.items()))")
            body.append("else:")
            body.append("    out.append(0)")
            return
        body.append("_tags = list((d.get('_unknownTaggedFields') or {}).items())")
        for f in tagged:
            default = self.src.const(f.default(v), "_D")    # built once, not on every write
            body.append(f"_f = {f.json_name!r}")
            body.append(f"_v = d.get({f.json_name!r}, {default})")
            body.append(f"if _v != {default}:")
            inner: list[str] = ["_o = out", "out = bytearray()"]
            if f.type == "struct":
                sub = self.struct_fn(f.struct)
                if v in f.nullable:
                    inner += ["if _v is None:", "    out.append(0)", "else:",
                              "    out.append(1)", f"    {sub}(out, _v)"]
                else:
                    inner.append(f"{sub}(out, _v)")
            else:
                run: list = []
                src = self.src

                def flush():
                    if run:
                        codes = "".join(code for code, _ in run)
                        exprs = ", ".join(e for _, e in run)
                        inner.append(f"out += {src.struct_const(codes)}.pack({exprs})")
                        run.clear()

                self.field(f, "_v", inner, run, flush)
                flush()
            inner += [f"_tags.append(({f.tag}, out))", "out = _o"]
            body += ["    " + line for line in inner]
        body.append("_wtags(out, _tags)")


@dataclass(frozen=True)
class TopLevel:
    """How a whole-record reader starts and what it returns.

    The reader is ``read(buf) -> result``: it reads the message from byte ``start`` and ends with
    ``result``, lines of Python where ``{data}`` is the decoded dict and ``_n - pos`` the count
    of bytes left unread; ``consts`` are (name, value) pairs those lines may reference.
    """

    start: int
    result: tuple[str, ...]
    consts: tuple[tuple[str, object], ...] = ()


@cache
def record_reader(message: Message, version: int, top: TopLevel):
    """``read(buf) -> result``: the message read from ``top.start`` with no (dict, pos) tuple
    in between, so one call decodes one key or value into its final object."""
    src = GeneratedSource(version, version in message.flexible)
    src.consts.update(top.consts)
    entry = _ReaderBuilder(src).struct_fn(message.struct, top)
    return src.compile(entry, f"read {message.name} v{version} record")


@cache
def reader(message: Message, version: int, *, speculate: bool = True):
    """``read(buf, pos) -> (dict, pos)``; ``speculate=False`` leaves out the empty-blob guess
    (the plain layout, which the tests hold the guessing readers to)."""
    src = GeneratedSource(version, version in message.flexible)
    entry = _ReaderBuilder(src, speculate).struct_fn(message.struct)
    return src.compile(entry, f"read {message.name} v{version}")


@cache
def writer(message: Message, version: int):
    src = GeneratedSource(version, version in message.flexible)
    entry = _WriterBuilder(src).struct_fn(message.struct)
    return src.compile(entry, f"write {message.name} v{version}")


@cache
def element_writer(message: Message, version: int, field_name: str):
    """``write(out, data)`` for one element of the top-level array of structs ``field_name``."""
    src = GeneratedSource(version, version in message.flexible)
    field = next(f for f in message.struct.fields
                 if f.json_name == field_name and f.element == "struct" and version in f.versions)
    entry = _WriterBuilder(src).struct_fn(field.struct)
    return src.compile(entry, f"write {message.name} v{version} {field_name} element")
