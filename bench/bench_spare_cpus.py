"""Where a lone worker's spare children cost CPU: per CPU, their start and their death.

Run (root, cgroup v1 cpuacct; two CPUs or more): .venv/bin/python bench/bench_spare_cpus.py [N]

As a lone worker on two CPUs has it (executor.worker_cpus, aside_cpus): its sandboxes keep to the first CPU, the
thread that starts the next one runs on the second. N children are started as spares (process._spawn) and then
discarded (process._discard), once started on the worker's CPU as before session 23 ("same") and once on the
spare CPU and moved once ready ("aside"); the CPU a cpuacct group around this process counted on each CPU,
per child, is printed for both. The worker's CPU is the one that grades the current student meanwhile.
"""

from __future__ import annotations

import os
import sys
import time

import treecpu
from grader.sandbox import process, supervisor
from grader.sandbox.isolation import detect


def per_cpu(group: treecpu.Group) -> list[float]:
    """Milliseconds of CPU the group counted on each CPU so far."""
    return [int(value) / 1e6 for value in (group.path / "cpuacct.usage_percpu").read_text().split()]


def starts_and_deaths(group: treecpu.Group, count: int, aside: bool, worker: int, spare: int
                      ) -> tuple[list[float], list[float]]:
    """Per child, each CPU's milliseconds of its start and of its death."""
    process.keep_children_to({worker}, starter={spare} if aside else set())
    isolation, limits = detect(), process.ProcessLimits()
    process._discard(process._spawn(isolation, limits, []))   # the zygote starts once per worker
    time.sleep(0.3)
    before = per_cpu(group)
    children = [process._spawn(isolation, limits, [], start_on=[spare] if aside else []) for _ in range(count)]
    time.sleep(0.3)
    started = per_cpu(group)
    for child in children:
        process._discard(child)
    time.sleep(0.3)
    ended = per_cpu(group)
    return ([(b - a) / count for a, b in zip(before, started, strict=True)],
            [(b - a) / count for a, b in zip(started, ended, strict=True)])


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("one CPU: no spare CPU to start children on")
    worker, spare = sorted(os.sched_getaffinity(0))[:2]
    group = treecpu.Group.join()
    if group is None:
        raise SystemExit("no cpuacct group could be made (root and cgroup v1 needed)")
    try:
        os.sched_setaffinity(0, {spare})   # as the starter thread runs (and so the zygote it starts)
        print(f"isolation: {detect().level}; {count} children each; {treecpu.load()}; ms of CPU per child")
        for name, aside in (("same", False), ("aside", True), ("same", False), ("aside", True)):
            start, death = starts_and_deaths(group, count, aside, worker, spare)
            print(f"{name:6s} start {' / '.join(f'{ms:5.2f}' for ms in start)}   "
                  f"death {' / '.join(f'{ms:5.2f}' for ms in death)}   (worker's CPU / spare CPU ...)")
    finally:
        supervisor.stop()
        group.leave()


if __name__ == "__main__":
    main()
