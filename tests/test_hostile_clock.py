"""Attacks on the case clock: work the student's code hides from it costs the attacker its cases, nothing else.

Each test grades a real notebook (the bundled correct one with one cell appended) in a real sandbox; only
statuses and scores are asserted, never wall time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.judge.grading import Options, grade_path, support_sources
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


# search, called from a case, leaves its work to a process it never waits for and reads the answer from a pipe
# (the worker here never finishes: the attack is in where the CPU time goes, not in what is computed).
UNREAPED_WORKER = '''
import os as _rt_os, sys as _rt_sys
_rt_search = search
def search(start, goal, next_states, heuristic):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        r, w = _rt_os.pipe()
        if _rt_os.fork() == 0:
            while True:
                pass
        _rt_os.read(r, 1)
    return _rt_search(start, goal, next_states, heuristic)
'''


def test_search_computing_in_an_unwaited_process_is_charged_for_it_and_loses_only_search(plan, tmp_path):
    """The worker's CPU time is the case's: the search cases time out charged with it (before, the fork alone was
    counted: nothing, while the worker had ten times the limit), and every other exercise keeps full marks."""
    path = write(tmp_path / "unreaped-worker.ipynb", appended(CORRECT, UNREAPED_WORKER))
    result = grade_path(path, plan, support_sources(plan), Options(case_seconds=0.5))
    lost = {exercise.id for exercise in result.exercises if exercise.score < exercise.max_score}
    assert lost == {"search"}
    search = next(exercise for exercise in result.exercises if exercise.id == "search")
    # Skipped cases read as timeouts too ("not run: earlier cases of the exercise timed out"), with no CPU time.
    charged = [case for case in search.cases if case.cpu_seconds is not None]
    assert search.score == 0 and {case.status for case in search.cases} == {"timeout"}
    assert charged and all(case.cpu_seconds > 0.1 for case in charged), charged


# search, called from a case, reads its CPU-time limit from its own alarm and leaves most of the work to two
# processes that compute beside it: about 2.1 times the limit of CPU time, in less wall time than the limit on
# two idle CPUs. The answer itself is right.
PARALLEL_WORKERS = '''
import os as _rt_os, signal as _rt_signal, sys as _rt_sys, time as _rt_time
_rt_search = search
def _rt_burn(seconds):
    end = _rt_time.process_time() + seconds
    while _rt_time.process_time() < end:
        pass
def search(start, goal, next_states, heuristic):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        limit = _rt_signal.getitimer(_rt_signal.ITIMER_PROF)[0]
        workers = []
        for _ in range(2):
            pid = _rt_os.fork()
            if pid == 0:
                _rt_burn(0.8 * limit)
                _rt_os._exit(0)
            workers.append(pid)
        _rt_burn(0.5 * limit)
        for pid in workers:
            _rt_os.waitpid(pid, 0)
    return _rt_search(start, goal, next_states, heuristic)
'''


def _cpu_clock(result) -> str | None:
    return (result.extra.get("isolation") or {}).get("cpu_clock")


def test_search_computing_in_parallel_processes_is_charged_all_their_cpu_time(plan, tmp_path):
    """Where a cgroup counts the sandbox's CPU time, a case is charged all of it from its start to its answer:
    the workers' CPU time is the case's, so every search case is a timeout (before, an answer that came within
    its limit of wall time was in time, and one after was counted only from the parent's first look: this
    notebook kept full marks with twice the CPU time). Every other exercise keeps full marks."""
    path = write(tmp_path / "parallel-workers.ipynb", appended(CORRECT, PARALLEL_WORKERS))
    result = grade_path(path, plan, support_sources(plan), Options(case_seconds=1.0))
    if _cpu_clock(result) != "cgroup":
        pytest.skip(f"no cgroup counts the sandbox's CPU time here ({_cpu_clock(result)})")
    lost = {exercise.id for exercise in result.exercises if exercise.score < exercise.max_score}
    assert lost == {"search"}
    search = next(exercise for exercise in result.exercises if exercise.id == "search")
    assert search.score == 0 and {case.status for case in search.cases} == {"timeout"}
    charged = [case for case in search.cases if case.cpu_seconds is not None]
    assert charged and all(case.cpu_seconds > 1.5 for case in charged), charged
