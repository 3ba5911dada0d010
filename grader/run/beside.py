"""What a batch starts beside its own start-up (the isolation probe, a spare zygote per worker), kept off the CPU
the coordinator needs until the workers are forked.

The coordinator's start-up (imports, rubric, intake, plan, the judge's preparation) is what every worker waits
for: nothing is graded before the fork. Left to the scheduler, the three new interpreters started beside it and
the coordinator shared two CPUs, so the coordinator had half of one while they started: 40 ms of its imports
took 80 of wall, 12 ms of its rubric 22 (quiet, 2 cores). Kept to every CPU but one once started (`keep_aside`),
they leave that one to the coordinator, and they have what is left (on two cores, the other one: their ~0.13 s of
CPU fits in the coordinator's ~0.2 s). A zygote gets every CPU back before any worker is forked (`rejoin`): it
forks every sandbox of the worker that adopts it. The coordinator's own CPUs are never changed, so nothing it
reads of itself (process._CPUS, the pool's CPUs) sees fewer.
"""

from __future__ import annotations

import os
from typing import Iterable


def start_sandboxes(jobs: int | None) -> None:
    """The isolation probe and a spare zygote per worker (`jobs`, None: one per CPU), started ahead and kept aside:
    the workers forked later inherit the probe's answer and adopt a zygote each. One start for both callers: grade
    as it begins (a class graded for the first time) and the batch once it knows a submission will run."""
    from grader.sandbox import isolation, supervisor
    isolation.start_probe()
    supervisor.start_spares(max(1, jobs or os.cpu_count() or 1))
    keep_aside([*isolation.probe_pids(), *supervisor.spare_pids()])   # off the coordinator's CPU, until the fork


def stop_sandboxes() -> None:
    """What start_sandboxes started and no worker took."""
    from grader.sandbox import isolation, supervisor
    isolation.drop_probe()
    supervisor.stop_spares()


def _allowed() -> set[int]:
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):   # no affinity here: nothing is kept anywhere
        return set()


def aside(allowed: Iterable[int]) -> set[int]:
    """The CPUs started processes keep to: every one of `allowed` but the first (none where there is one)."""
    cpus = sorted(allowed)
    return set(cpus[1:]) if len(cpus) > 1 else set()


def keep_aside(pids: Iterable[int]) -> None:
    """Keep processes just started (the probe, the spare zygotes) to `aside` of this thread's CPUs, off the one left
    to the coordinator. This thread's own CPUs never change: narrowed around their starts instead, it waited on
    their CPU behind each new interpreter until the block ended (~13-15 ms of its start-up, perf sched)."""
    cpus = aside(_allowed())
    if not cpus:
        return
    for pid in pids:
        try:
            os.sched_setaffinity(pid, cpus)
        except (OSError, ValueError):   # gone already, or a CPU gone offline: it runs where it may, as before
            pass


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
