"""Every scenario module's list, for the report script (benchmarks/differential.py). A new module
with its SCENARIOS is added to MODULES."""

from __future__ import annotations

import importlib

MODULES = ["helpers.differential.classic_scenarios", "helpers.differential.consumer_scenarios"]


def all_scenarios() -> list:
    out = []
    for name in MODULES:
        out.extend(importlib.import_module(name).SCENARIOS)
    names = [s.name for s in out]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"scenario names repeat: {sorted(duplicates)}")
    return out
