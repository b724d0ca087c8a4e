"""`write_json`: json.dumps(indent=2)'s text, with lazy arrays streamed a chunk at a time."""

import io
import json
from collections.abc import Sequence

import pytest

from kgroup.writers import write_json


def _written(obj, chunk=2000) -> str:
    out = io.StringIO()
    write_json(obj, out, chunk=chunk)
    return out.getvalue()


def _expected(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


EVENTS = [{"t_ms": i, "event": "joined", "member": f"c{i}", "name": "é\x01\n\"\\\u2028",
           "leader": i % 2 == 0, "none": None, "nested": {"a": [1, {"b": []}], "c": {}}}
          for i in range(7)]


class Lazy(Sequence):
    """A sequence that is not a list (as the simulator's event log): write_json streams it."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]



@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 2000])
@pytest.mark.parametrize("shape", ["top", "in-dict", "in-list-of-dicts", "generator"])
def test_a_streamed_array_is_written_as_json_writes_the_list(shape, chunk):
    plain = {"scenario": "x", "ratio": 0.001, "errors": [], "migration": {"k": [1, 2]},
             "events": EVENTS}
    lazy = dict(plain, events=Lazy(EVENTS))
    if shape == "top":
        plain, lazy = EVENTS, Lazy(EVENTS)
    elif shape == "in-list-of-dicts":
        plain, lazy = [plain, dict(plain, events=[])], [lazy, dict(lazy, events=Lazy([]))]
    elif shape == "generator":
        lazy = dict(plain, events=(e for e in EVENTS))
    assert _written(lazy, chunk) == _expected(plain)


def test_elements_orjson_refuses_are_written_by_json():
    items = [{"big": 2 ** 70}, {1: "int key"}, {"plain": 1}]
    assert _written({"a": Lazy(items)}, chunk=2) == _expected({"a": items})


def test_a_document_without_streamed_arrays_is_json_text():
    doc = {"a": [1, 2.5, None, {"b": "ü"}], 3: True, "e": {}, "f": []}
    assert _written(doc) == _expected(doc)
