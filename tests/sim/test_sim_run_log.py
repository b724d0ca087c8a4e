"""The simulator's event log and intervals, kept as columns: read back as the dicts and tuples
the document and the plot had before."""

from kgroup.sim.model import SimParams
from kgroup.sim.run_log import EventLog, Intervals
from kgroup.sim.scenarios import run_scenario


def test_events_read_back_as_logged_in_order():
    log = EventLog()
    log.append(0, "stop", "c0", {})
    log.append(5, "group-state", None, {"state": "PreparingRebalance", "generation": 1})
    log.append(9, "joined", "c1", {"member_id": "c1-1", "generation": 2, "leader": True})
    assert list(log) == [
        {"t_ms": 0, "event": "stop", "member": "c0"},
        {"t_ms": 5, "event": "group-state", "state": "PreparingRebalance", "generation": 1},
        {"t_ms": 9, "event": "joined", "member": "c1", "member_id": "c1-1", "generation": 2,
         "leader": True}]
    assert log[-1] == log[2] and log[1:] == list(log)[1:] and len(log) == 3
    assert [e["t_ms"] for e in log.of_kind("joined", "stop")] == [0, 9]
    assert [e["t_ms"] for e in log.of_kind("stop", start=1)] == []
    assert log.members() == ["c0", "c1"]
    assert log == list(log) and log != list(log)[:2]
    log.clear()
    assert list(log) == [] and len(log) == 0


def test_events_appended_from_a_kept_shape_read_back_as_appended_from_a_dict():
    """append_values (the simulated clients' frequent events) logs what append logs, in one shape."""
    by_dict, by_shape = EventLog(), EventLog()
    shape = ("synced", "generation", "partitions", "added_partitions")
    for log in (by_dict, by_shape):
        log.append(0, "stop", "c0", {})
    by_dict.append(3, "synced", "c1", {"generation": 2, "partitions": 1, "added_partitions": (("t", 4),)})
    by_shape.append_values(3, shape, "c1", (2, 1, (("t", 4),)))
    by_dict.append(7, "synced", "c2", {"generation": 2, "partitions": 0, "added_partitions": ()})
    by_shape.append_values(7, shape, "c2", (2, 0, ()))
    assert list(by_shape) == list(by_dict) == [
        {"t_ms": 0, "event": "stop", "member": "c0"},
        {"t_ms": 3, "event": "synced", "member": "c1", "generation": 2, "partitions": 1,
         "added_partitions": "t:4"},
        {"t_ms": 7, "event": "synced", "member": "c2", "generation": 2, "partitions": 0,
         "added_partitions": ""}]
    assert [e["member"] for e in by_shape.of_kind("synced")] == ["c1", "c2"]
    by_shape.append(9, "synced", "c3", {"generation": 3, "partitions": 0, "added_partitions": ()})
    assert len(by_shape._shapes) == 2          # the dict's event found the kept shape


def test_intervals_read_back_as_tuples():
    spans = Intervals()
    spans.append("c0", 0, 10, 3)
    spans.append("c1", 4, 12, 2)
    assert list(spans) == [("c0", 0, 10, 3), ("c1", 4, 12, 2)] and spans[1] == ("c1", 4, 12, 2)


def test_a_run_keeps_its_log_as_columns_and_its_document_as_dicts():
    result = run_scenario("rolling-bounce", SimParams(members=4, membership="dynamic"))
    assert isinstance(result.events, EventLog) and isinstance(result.intervals, Intervals)
    doc = result.as_dict()
    assert type(doc["events"]) is list and doc["events"] == list(result.events)
    assert result.document()["events"] is result.events
    assert [e["event"] for e in doc["events"]].count("synced") == len(list(result.events.of_kind("synced")))
