"""Sizes as operators type them (`64m`, `1g`, `10GiB`, `1048576`) and as kgroup prints them: one rule
for every option that takes bytes (decode-offsets' --split-size and --spark-threshold, simulate's
state size and restore rate)."""

from __future__ import annotations


def parse_size(text: str) -> int:
    """`64m`, `1g`, `512k`, `1048576` -> bytes (binary units)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    raw = str(text).strip().lower().removesuffix("ib").removesuffix("b")
    try:
        if raw and raw[-1] in units:
            value = float(raw[:-1]) * units[raw[-1]]
        else:
            value = float(raw)
    except ValueError:
        raise ValueError(f"{text!r} is not a size (e.g. 64m, 1g, 1048576)") from None
    if value <= 0:
        raise ValueError(f"{text!r}: a size must be positive")
    return int(value)


def size_text(size: float) -> str:
    """In the binary units sizes are given in: 1g is 1.0 GiB, not 1.07 GB."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):,.1f} {unit}"
    return f"{round(size)} bytes"
