"""What hand-offs cost a stateful application: the state each new owner restores before it can serve.

A partition handed to another process (a hand-off: ``metrics.Ledger``) must have its state rebuilt
there — a Kafka Streams task replays its changelog — before it is available again; a process that
comes back to its own partitions keeps its local state and restores nothing. Each process restores
its partitions one after another at ``--restore-rate`` (its restore bandwidth), in the order it got
them; a partition it gives up before its restore finishes stops costing it (the bytes done so far
count as restored). The model runs lazily: a process's queue moves on only when that process gains
or loses a partition, and at the end, so a run of thousands of hand-offs costs as many steps.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class ProcessRestore:
    """One process's restore queue and what it has restored."""
    queue: deque = field(default_factory=deque)   # partitions still to restore, head first
    head_started: float = 0.0                      # when the head's restore began (ms from start)
    partitions: int = 0                            # restores finished
    bytes: float = 0.0                             # bytes restored (partial restores included)
    busy_ms: float = 0.0                           # time spent restoring
    done_at: float = 0.0                           # when the queue last ran empty


class Restores:
    def __init__(self, bytes_per_partition: int, rate_bytes_per_s: int):
        self.bytes_per_partition = bytes_per_partition
        self.rate = rate_bytes_per_s
        self.one_ms = bytes_per_partition * 1000 / rate_bytes_per_s   # one partition's restore
        self.processes: dict[str, ProcessRestore] = {}
        self._changes: list = []               # (t_ms, +1 / -1): partitions owned but restoring

    def gain(self, t_ms: float, name: str, tp) -> None:
        """``name`` got ``tp`` from another process: its state is restored there, after the queue."""
        process = self.processes.get(name)
        if process is None:
            process = self.processes[name] = ProcessRestore()
        self._advance(process, t_ms)
        if not process.queue:
            process.head_started = t_ms
        process.queue.append(tp)
        self._changes.append((t_ms, 1))

    def drop(self, t_ms: float, name: str, tp) -> None:
        """``name`` gave up ``tp``: a restore still queued or under way stops there."""
        process = self.processes.get(name)
        if process is None or not process.queue:
            return
        self._advance(process, t_ms)
        queue = process.queue
        if tp not in queue:
            return
        if queue[0] == tp:
            worked = t_ms - process.head_started
            process.bytes += worked * self.rate / 1000
            process.busy_ms += worked
            queue.popleft()
            process.head_started = t_ms
            if not queue:
                process.done_at = t_ms
        else:
            queue.remove(tp)
        self._changes.append((t_ms, -1))

    def _advance(self, process: ProcessRestore, t_ms: float) -> None:
        """Finish every restore of ``process`` that ends by ``t_ms``."""
        queue, one = process.queue, self.one_ms
        while queue and process.head_started + one <= t_ms:
            end = process.head_started + one
            queue.popleft()
            process.partitions += 1
            process.bytes += self.bytes_per_partition
            process.busy_ms += one
            process.head_started = process.done_at = end
            self._changes.append((end, -1))

    def finish(self) -> None:
        """The run is over and nothing changes hands any more: every queue runs to its end."""
        for process in self.processes.values():
            self._advance(process, float("inf"))

    # ---- figures ------------------------------------------------------------------------------
    def steps(self) -> list:
        """(t_ms, partitions owned but restoring) at every change, in time order."""
        out: list = []
        count = 0
        for t, delta in sorted(self._changes, key=lambda c: c[0]):
            count += delta
            t = round(t)
            if out and out[-1][0] == t:
                out[-1] = (t, count)
            else:
                out.append((t, count))
        return out

    def figures(self) -> dict:
        """The JSON document's ``restore`` part (times rounded to ms)."""
        steps = self.steps()
        partition_ms = sum((b[0] - a[0]) * a[1] for a, b in zip(steps, steps[1:]))
        members = [{"member": name, "partitions": p.partitions, "bytes": round(p.bytes),
                    "restore_ms": round(p.busy_ms), "done_at_ms": round(p.done_at)}
                   for name, p in sorted(self.processes.items())]
        return {"bytes_per_partition": self.bytes_per_partition, "rate_bytes_per_s": self.rate,
                "partitions": sum(p.partitions for p in self.processes.values()),
                "bytes": sum(m["bytes"] for m in members),
                "restore_ms_total": sum(m["restore_ms"] for m in members),
                "longest_member_restore_ms": max((m["restore_ms"] for m in members), default=0),
                "all_restored_at_ms": max((m["done_at_ms"] for m in members), default=0),
                "restoring_partition_seconds": round(partition_ms / 1000, 3),
                "peak_restoring_partitions": max((c for _, c in steps), default=0),
                "members": members}
