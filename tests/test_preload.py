"""A lone worker on two CPUs loads its next notebook on the CPU it has to spare (grading.preload), while the one
before it runs its cases on the worker's: the load runs there, the cases and forks on the worker's CPU; a load
that leaves a thread or process running is not moved but loaded again; the result, its incidents and its time are
what grading it without the head start gives."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from grader import codec, incidents
from grader.judge.grading import grade_read, preload, read_submission, support_sources
from grader.intake.warning import Kind
from grader.judge.options import Options
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from notebook_build import appended, write
from sandbox_run import statement
from test_hostile_incidents import FORGED_AT_LOAD

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
TWO_CPUS = pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                              reason="one CPU: nothing to load beside")

# Where the top-level code ran, and where a case runs.
WHERE = "import os\nLOADED_ON = sorted(os.sched_getaffinity(0))\ndef where():\n" \
        "    return (LOADED_ON, sorted(os.sched_getaffinity(0)))\n"
LEAVES_A_THREAD = "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
LEAVES_A_PROCESS = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\n"


@pytest.fixture
def loads_ahead(monkeypatch):
    """This process as a lone worker that loads ahead (executor._worker): its sandboxes keep to its first CPU, its
    spare children start on the others and stay there, where it loads. Spares are dropped after."""
    from grader.sandbox import process
    allowed = sorted(os.sched_getaffinity(0))
    process._drop_spares()   # one another test left would have been started elsewhere
    monkeypatch.setattr(process, "_CHILD_CPUS", allowed[:1])
    monkeypatch.setattr(process, "_STARTER_CPUS", set(allowed[1:]))
    monkeypatch.setattr(process, "_SPARES_STAY", True)
    assert process.aside_cpus() == allowed[1:]
    yield allowed
    process._drop_spares()


def _where(sandbox: Sandbox) -> tuple[list[int], list[int]]:
    [outcome] = sandbox.run_exercise([CaseRequest("where#1", "where()", timeout=30.0)], (), None,
                                     time.monotonic() + 120)
    return codec.decode(outcome.value)


@TWO_CPUS
def test_the_load_runs_on_the_spare_cpu_and_the_cases_on_the_workers(loads_ahead):
    with Sandbox([statement(WHERE)], {}, ProcessLimits()) as sandbox:
        sandbox.load(aside=loads_ahead[1:])
        assert sandbox.process is not None and os.sched_getaffinity(sandbox.process.pid) == set(loads_ahead[1:])
        assert sandbox.to_worker()
        assert os.sched_getaffinity(sandbox.process.pid) == set(loads_ahead[:1])
        assert _where(sandbox) == (loads_ahead[1:], loads_ahead[:1])
    # Without the head start, as before: loaded and graded on the worker's CPU.
    with Sandbox([statement(WHERE)], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        assert _where(sandbox) == (loads_ahead[:1], loads_ahead[:1])


@TWO_CPUS
def test_a_spare_stays_on_the_spare_cpu_until_taken_and_goes_where_its_taker_needs_it(loads_ahead):
    """A worker that loads ahead leaves its spare where it started; a load ahead takes it there, a load in turn (the
    worker's first submission, a reload) has the zygote move it to the worker's CPU first."""
    from grader.sandbox import process
    for aside, loaded_on in ((loads_ahead[1:], loads_ahead[1:]), ((), loads_ahead[:1])):
        with Sandbox([statement(WHERE)], {}, ProcessLimits(), prefetch=True) as first:
            first.load()
            (spare,) = process._SPARES.values()
            waiting = spare.result(timeout=120)
            assert os.sched_getaffinity(waiting.process.pid) == set(loads_ahead[1:])
            with Sandbox([statement(WHERE)], {}, ProcessLimits(), prefetch=True, spare_next=False) as second:
                second.load(aside=aside)
                assert second.process is not None and second.process.pid == waiting.process.pid   # the spare
                assert second.to_worker()
                assert _where(second) == (loaded_on, loads_ahead[:1])
            assert _where(first) == (loads_ahead[:1], loads_ahead[:1])


@TWO_CPUS
def test_a_load_that_leaves_a_thread_running_is_not_moved(loads_ahead):
    """Affinity is a thread's, and the student's threads cannot move themselves: one the load left running would
    stay beside the next student's load. Refused, the sandbox is not used: grading loads the notebook again, on the
    worker's CPU."""
    with Sandbox([statement(LEAVES_A_THREAD), statement(WHERE)], {}, ProcessLimits()) as sandbox:
        sandbox.load(aside=loads_ahead[1:])
        assert not sandbox.to_worker()
        sandbox.load()   # in turn: on the worker's CPU, the thread with it
        assert _where(sandbox) == (loads_ahead[:1], loads_ahead[:1])


@TWO_CPUS
def test_a_process_the_load_left_running_is_moved_with_the_sandbox(loads_ahead):
    """Every process of the sandbox goes to the worker's CPU: the runtime and its fork made ahead (what the notebook
    forked at load the runtime ends with the load), made before or after the move."""
    with Sandbox([statement(LEAVES_A_PROCESS), statement(WHERE)], {}, ProcessLimits()) as sandbox:
        sandbox.load(aside=loads_ahead[1:])
        group = sandbox.pids or sandbox.cpu or sandbox.memory
        if group is None:
            pytest.skip("no cgroup holds the sandbox here")
        assert sandbox.to_worker()
        for pid in [int(pid) for pid in (group.path / "cgroup.procs").read_text().split()]:
            try:
                assert os.sched_getaffinity(pid) == set(loads_ahead[:1])
            except ProcessLookupError:   # ended meanwhile
                pass
        assert _where(sandbox) == (loads_ahead[1:], loads_ahead[:1])


@TWO_CPUS
def test_a_load_ahead_that_hangs_leaves_its_statement_out_as_in_turn(loads_ahead):
    """A top-level statement that never ends holds the thread that loads ahead, not the worker's current student,
    and is left out under the load's own limit as in turn; the rest is loaded and moved."""
    hang = statement("import time\nwhile True:\n    time.sleep(0.01)\n", count=2, cell=2)
    with Sandbox([hang, statement(WHERE, count=3, cell=3)], {}, ProcessLimits(load_seconds=0.5)) as sandbox:
        report = sandbox.load(time.monotonic() + 120, aside=loads_ahead[1:])
        assert [w.kind for w in report.warnings] == [Kind.LOAD_TIMEOUT]
        assert sandbox.to_worker()
        assert _where(sandbox) == (loads_ahead[1:], loads_ahead[:1])


def _graded(path: Path, plan, ahead: bool, gap: float = 0.0):
    """`path` graded as a worker's next submission: read, then (`ahead`) loaded ahead, `gap` s before its turn."""
    read = read_submission(path, plan)
    options = Options(prefetch=False)
    preloaded = preload(read, plan, support_sources(plan), options, sorted(os.sched_getaffinity(0))[1:]) \
        if ahead else None
    time.sleep(gap)
    if preloaded is not None:
        since = preloaded.handed_over()
        # What the worker spent finishing the student before is nobody's: the submission's start moves by it.
        assert since.at - preloaded.since.at >= gap
        assert preloaded.opened.sandbox.budget.started == since.at
    return grade_read(read, plan, support_sources(plan), options, preloaded=preloaded), preloaded


def _same(result, other) -> None:
    assert (result.total, result.max_total) == (other.total, other.max_total)
    assert [(e.id, e.score, [c.status for c in e.cases]) for e in result.exercises] == \
        [(e.id, e.score, [c.status for c in e.cases]) for e in other.exercises]
    assert [w.kind for w in result.warnings] == [w.kind for w in other.warnings]
    assert [(i.kind, i.exercise) for i in result.incidents] == [(i.kind, i.exercise) for i in other.incidents]


@TWO_CPUS
def test_a_notebook_graded_from_its_load_ahead_is_graded_as_without_it(loads_ahead, plan):
    result, preloaded = _graded(CORRECT, plan, ahead=True, gap=0.3)
    assert preloaded is not None and preloaded.moved
    _same(result, _graded(CORRECT, plan, ahead=False)[0])
    assert result.total == result.max_total
    assert preloaded.opened.sandbox.process is None    # closed with the grading


# Top-level code that forges a frame (left out: the load goes on) and leaves a thread running: its load ahead is
# not moved, the notebook is loaded again, and what the sandbox saw in the load ahead is still the student's.
FORGED_AND_THREADED = FORGED_AT_LOAD + '''import threading as _rt_threading, time as _rt_time
def _rt_threaded(function):
    _rt_threading.Thread(target=_rt_time.sleep, args=(30,), daemon=True).start()
    return function
find_numbers = _rt_threaded(find_numbers)
'''


@TWO_CPUS
def test_an_attack_in_a_load_ahead_costs_its_student_as_at_any_load(loads_ahead, plan, tmp_path):
    path = write(tmp_path / "forged-at-load.ipynb", appended(CORRECT, FORGED_AND_THREADED))
    result, preloaded = _graded(path, plan, ahead=True)
    assert preloaded is not None and not preloaded.moved   # loaded again, on the worker's CPU
    alone = _graded(path, plan, ahead=False)[0]
    assert alone.incidents and all(i.kind == incidents.FORGED_FRAME and i.exercise == "" for i in alone.incidents)
    assert result.total == alone.total == 0
    # Seen in the load ahead and kept with the load not used; the statement left out there is not run again.
    assert [(i.kind, i.exercise, i.count) for i in result.incidents] == \
        [(i.kind, i.exercise, i.count) for i in alone.incidents]


@TWO_CPUS
def test_a_load_ahead_that_fails_is_reported_as_the_load_in_turn(loads_ahead, plan, tmp_path):
    """A notebook whose top-level code ends its runtime: the load ahead meets it as the load in turn does (the
    statement left out, the child started again), and the result says so alike."""
    ends = "import os\ndef _rt_ends(function):\n    os._exit(3)\nfind_tile = _rt_ends(find_tile)\n"
    path = write(tmp_path / "dies.ipynb", appended(CORRECT, ends))
    result, preloaded = _graded(path, plan, ahead=True)
    assert preloaded is not None and preloaded.moved
    assert [w.kind for w in result.warnings] == [Kind.LOAD_TIMEOUT]   # the statement left out
    _same(result, _graded(path, plan, ahead=False)[0])


def test_nothing_is_loaded_ahead_without_a_spare_cpu(monkeypatch):
    """Two workers on two CPUs (or one CPU): nothing to load beside, and spares move to the worker's CPU once ready
    as before."""
    from grader.sandbox import process
    monkeypatch.setattr(process, "_SPARES_STAY", False)
    assert process.aside_cpus() == []
    process.keep_children_to({0}, set(), preload=True)
    try:
        assert process.aside_cpus() == [] and not process._SPARES_STAY
    finally:
        process.keep_children_to(set(), set())

