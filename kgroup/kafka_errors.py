"""Kafka's error codes and their names: one table, read once from kafka-python's `kafka.errors`.

Every module that answers or reads an error code (coordinator, server, client, simulation) takes its
constants from here, so no number is written by hand: `from kgroup.kafka_errors import NONE,
NOT_COORDINATOR`. kafka-python's error classes carry Kafka's code (`errno`) and the name of Kafka's
`Errors` enum constant (`message`), so the table follows Kafka's numbering by construction.

Importing `kafka.errors` imports all of kafka-python (~0.1 s): modules that must stay light at import
time (the client and the `kgroup` CLI) import this one inside the function that needs it.
"""

from __future__ import annotations

import kafka.errors as _kafka

# The name printed for a code: kafka-python's, except that success is Kafka's NONE (kafka-python:
# NO_ERROR). kafka-python spells -1 UNKNOWN where Kafka's Errors has UNKNOWN_SERVER_ERROR.
NAMES: dict[int, str] = {code: ("NONE" if code == 0 else cls.message)
                         for code, cls in _kafka.kafka_errors.items() if code is not None}
# Codes newer than kafka-python's table, with the name of Kafka's Errors constant.
NAMES.setdefault(128, "INVALID_REGULAR_EXPRESSION")

# Kafka's Errors enum names for the codes kafka-python spells differently; they name constants only.
KAFKA_SPELLINGS = {"UNKNOWN_SERVER_ERROR": -1, "INVALID_TOPIC_EXCEPTION": 17}

CODES: dict[str, int] = {name: code for code, name in NAMES.items()} | KAFKA_SPELLINGS
globals().update(CODES)  # NONE = 0, NOT_COORDINATOR = 16, ... one constant per name
__all__ = sorted(CODES) + ["CODES", "NAMES", "name_of"]


def name_of(code: int) -> str:
    """The name of an error code; a code kafka-python does not know keeps its number."""
    return NAMES.get(code) or f"UNKNOWN_ERROR_CODE_{code}"
