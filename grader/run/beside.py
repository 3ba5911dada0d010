"""What a batch starts beside its own start-up (the isolation probe, a spare zygote per worker), kept off the CPU
the coordinator needs until the workers are forked.

The coordinator's start-up (imports, rubric, intake, plan, the judge's preparation) is what every worker waits
for: nothing is graded before the fork. Left to the scheduler, the three new interpreters started beside it and
the coordinator shared two CPUs, so the coordinator had half of one while they started: 40 ms of its imports
took 80 of wall, 12 ms of its rubric 22 (quiet, 2 cores). Started kept to every CPU but one, they leave that one
to the coordinator alone, and they have what is left (on two cores, the other one: their ~0.1 s of CPU fits in
the coordinator's ~0.2 s). A zygote gets every CPU back before any worker is forked (`rejoin`): it forks every
sandbox of the worker that adopts it. The coordinator's own CPUs are never changed for longer than the start
of those processes (they inherit what it has when they start), so nothing it reads of itself (process._CPUS,
the pool's CPUs) sees one CPU.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator


def _allowed() -> set[int]:
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):   # no affinity here: nothing is kept anywhere
        return set()


def aside(allowed: Iterable[int]) -> set[int]:
    """The CPUs started processes keep to: every one of `allowed` but the first (none where there is one)."""
    cpus = sorted(allowed)
    return set(cpus[1:]) if len(cpus) > 1 else set()


@contextlib.contextmanager
def started_aside() -> Iterator[None]:
    """Processes started inside keep to `aside` of this thread's CPUs, which are set back as they were after, this
    thread moved first to the CPU left to it (the scheduler would leave it beside what it started)."""
    allowed = _allowed()
    cpus = aside(allowed)
    if not cpus:
        yield
        return
    try:
        os.sched_setaffinity(0, cpus)
    except (OSError, ValueError):   # a CPU gone offline since: they start where this thread runs, as before
        yield
        return
    try:
        yield
    finally:
        try:   # moved to the CPU left to it first: set back to all at once, it stayed where they are (traced)
            os.sched_setaffinity(0, set(allowed) - cpus)
            os.sched_setaffinity(0, allowed)
        except (OSError, ValueError):   # a CPU gone offline meanwhile: every CPU this process may still use
            os.sched_setaffinity(0, range(os.cpu_count() or 1))


def rejoin(pids: Iterable[int]) -> None:
    """Give processes started aside (the spare zygotes not yet adopted) every CPU this thread has."""
    allowed = _allowed()
    if not allowed:
        return
    for pid in pids:
        try:
            os.sched_setaffinity(pid, allowed)
        except (OSError, ValueError):   # gone (a worker will start its own), or a CPU gone offline
            pass
