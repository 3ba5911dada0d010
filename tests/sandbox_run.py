"""Student code run in a real Sandbox from a test: the statements extraction would send, one call that loads
them and runs cases, and the host processes a marker names. Shared by the sandbox and wire-trust suites so
that their setup is one piece of code and each test file says only what it checks."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from grader.sandbox.isolation import Isolation
from grader.sandbox.process import CaseRequest, LoadReport, Outcome, ProcessLimits, Sandbox

# Generous: a case limit, never this, decides a test's outcome; on a busy 2-core machine a child may be slow.
RUN_SECONDS = 120.0


def statement(source: str, count: int = 1, cell: int = 1, kind: str = "def") -> dict[str, Any]:
    """One kept statement as the extractor sends it, labelled as notebook cell `cell` run as In [count]."""
    return {"code": source, "filename": f"In [{count}] (cell {cell})", "line": 1, "kind": kind}


def statements(*sources: str, kind: str = "other") -> list[dict[str, Any]]:
    """One statement per source, as cells 1, 2, ... of a notebook run top to bottom."""
    return [statement(source, n, n, kind) for n, source in enumerate(sources, start=1)]


@dataclass(frozen=True)
class Ran:
    """What one sandbox run gave: the load report, one outcome per case, and the (closed) sandbox."""

    report: LoadReport
    outcomes: list[Outcome]
    sandbox: Sandbox


def run_cases(kept: Sequence[dict[str, Any]], cases: Sequence[CaseRequest], *, isolate: Sequence[str] = (),
              oracle: Callable[..., Any] | None = None, limits: ProcessLimits = ProcessLimits(),
              isolation: Isolation | None = None, load_deadline: float | None = None, **options: Any) -> Ran:
    """Load the statements in a fresh sandbox, run the cases as one exercise, and close it."""
    with Sandbox(kept, {}, limits, isolation=isolation, **options) as sandbox:
        report = sandbox.load(load_deadline)
        outcomes = sandbox.run_exercise(list(cases), isolate, oracle or (lambda *a: None),
                                        time.monotonic() + RUN_SECONDS)
    return Ran(report, outcomes, sandbox)


def processes_running(marker: str) -> list[int]:
    """Host pids (not zombies) whose command line holds `marker` (pids inside a pid namespace mean nothing
    here, so tests mark their sleepers with an argument and look for it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker.encode() not in cmdline.read():
                        continue
                with open(f"/proc/{entry}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(int(entry))
            except OSError:
                pass
    return found


def processes_left(marker: str, seconds: float = 30.0) -> list[int]:
    """The marked processes still there once they had `seconds` to go: a SIGKILLed process leaves /proc only
    when the kernel next runs it, which on a busy machine is not at once. Returns as soon as none is left."""
    end = time.monotonic() + seconds
    while (found := processes_running(marker)) and time.monotonic() < end:
        time.sleep(0.05)
    return found
