"""The start-up's helpers (the probe, the spare zygotes) start off the coordinator's CPU and get every CPU back
before the workers fork (grader.run.beside); the judge's preparation for the workers is made once per plan."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.run import beside

CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
several = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to keep anything aside")


def test_aside_is_every_cpu_but_the_first():
    assert beside.aside([3, 1, 2]) == {2, 3}
    assert beside.aside([5]) == set() and beside.aside([]) == set()


@several
def test_a_process_kept_aside_keeps_off_the_first_cpu_and_rejoins_them_all():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        beside.keep_aside([child.pid])
        assert os.sched_getaffinity(0) == set(CPUS)          # the caller's CPUs are never changed
        assert os.sched_getaffinity(child.pid) == set(CPUS[1:])
        beside.rejoin([child.pid])
        assert os.sched_getaffinity(child.pid) == set(CPUS)
    finally:
        child.communicate(b"")
    beside.keep_aside([child.pid])   # gone: nothing to do, nothing raised
    beside.rejoin([child.pid])


SPARES = """
import os
from grader.run import beside
from grader.sandbox import supervisor
cpus = os.sched_getaffinity(0)
from grader.sandbox import isolation
beside.start_sandboxes(2)
try:
    pids = supervisor.spare_pids()
    probe = isolation.probe_pids()
    print(len(pids), sorted(os.sched_getaffinity(0)), [sorted(os.sched_getaffinity(pid)) for pid in pids + probe])
    beside.rejoin(supervisor.spare_pids())
    print([sorted(os.sched_getaffinity(pid)) for pid in pids])
finally:
    beside.stop_sandboxes()
print(supervisor.spare_pids())
"""


@several
def test_the_spare_zygotes_start_aside_and_rejoin_before_the_workers_fork():
    """In a process of one thread (a batch's coordinator: spares are started only where workers are forked)."""
    from testclock import within
    done = subprocess.run([sys.executable, "-c", SPARES], capture_output=True, text=True, timeout=within(60))
    assert done.returncode == 0, done.stderr
    started, rejoined, left = done.stdout.splitlines()
    assert started == f"2 {CPUS} {[CPUS[1:]] * 3}"     # the coordinator keeps every CPU; spares and probe aside
    assert rejoined == str([CPUS] * 2) and left == "[]"


def test_the_workers_preparation_is_made_once_per_plan_and_options(monkeypatch):
    from grader.judge import grading
    from grader.judge.options import Options
    from grader.plan.cases import Memo
    from grader.run.executor import prepare_workers

    class Plan:
        memo = Memo()

    made: list[Options] = []
    monkeypatch.setattr(grading, "prepare", lambda plan, options: made.append(options))
    plan = Plan()
    prepare_workers(plan, Options())   # type: ignore[arg-type]
    prepare_workers(plan, Options())   # type: ignore[arg-type]
    assert made == [Options(prefetch=True)]
    prepare_workers(plan, Options(case_seconds=2.0))   # type: ignore[arg-type]
    assert made == [Options(prefetch=True), Options(case_seconds=2.0, prefetch=True)]
