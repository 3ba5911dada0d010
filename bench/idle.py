"""Where a batch's workers had nothing to grade, from what its results record: each result's `seconds` (its
worker's time on it, from reading the file to the verdict) ending at its gradebook row's `graded_at` (when the
coordinator recorded it). Idle worker time is split into start-up (before the first submission began), the middle
(fewer submissions running than workers: hand-offs, and the tail where the last worker grades alone) and the end
(after the last result: exports, the workers' exit). Read from the run's own records, so load stretches it but does
not make it up, unlike a difference of two wall times on a shared machine.

Not all of it is idle CPU: between two submissions a worker sends one's result and takes the next (its sandbox's
spare child, its file read ahead), which no result's `seconds` covers, and a span ends when the coordinator
recorded it, after the result's transit. At quiet (200 correct, session 25) the middle read 0.51 worker-s while
the kernel's scheduler events (bench/selfwait.py) found 0.04 CPU-s idle over the submissions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class Idle:
    """Worker-seconds with no submission running, over a run of `workers` workers."""

    startup: float
    middle: float
    end: float
    workers: int

    @property
    def total(self) -> float:
        return self.startup + self.middle + self.end

    def line(self, indent: str = "  ") -> str:
        return (f"{indent}workers outside a submission (the results' own times; busy between two, selfwait.py reads "
                f"the idle CPU): {self.total:.2f} worker-s = {self.startup:.2f} before "
                f"the first submission began + {self.middle:.2f} while fewer than {self.workers} ran (hand-offs, the "
                f"last one alone) + {self.end:.2f} after the last result")


def spans(gradebook: Path) -> list[tuple[float, float]]:
    """(start, end) in Unix seconds of every result in the gradebook: a fresh run's own."""
    with sqlite3.connect(f"file:{gradebook}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT graded_at, json_extract(json, '$.seconds') FROM results").fetchall()
    found = []
    for graded_at, seconds in rows:
        end = datetime.fromisoformat(graded_at).timestamp()
        found.append((end - float(seconds or 0.0), end))
    return found


def idle(runs: list[tuple[float, float]], started: float, ended: float, workers: int) -> Idle:
    """Sweep the run from `started` to `ended` (Unix seconds): at each moment, workers less what ran."""
    if not runs:
        return Idle(workers * (ended - started), 0.0, 0.0, workers)
    first, last = min(start for start, _ in runs), max(end for _, end in runs)
    edges = sorted([(max(start, started), 1) for start, _ in runs] + [(min(end, ended), -1) for _, end in runs])
    middle, running, at = 0.0, 0, first
    for moment, step in edges:
        if moment > at:
            middle += max(0, workers - running) * (moment - at)
            at = moment
        running += step
    return Idle(workers * max(0.0, first - started), middle, workers * max(0.0, ended - last), workers)
