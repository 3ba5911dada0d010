"""A course's check functions run in the parent on the answer the child chose: bounded in CPU time, the student's.

A check other than a value comparison (a check function of the reference, the path check's next_states) is course
code the grader trusts, but its argument is the child's: within the codec's bounds (8 million characters, 200,000
items) an answer can make a linear check run for seconds in the parent, for every case. Each such check gets at
most grading.CHECK_CPU_SECONDS of its thread's CPU time (main thread: an alarm; a Dask worker's pool thread: the
ringer), past which the case is the student's fail. CPU time, so a busy machine costs nobody a case.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from grader import codec
from grader.judge import grading
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.sandbox.alarm import bounded
from grader.sandbox.process import Outcome
from grader.store import status

REPO = Path(__file__).resolve().parents[1]
N_PUZZLE = REPO / "rubrics" / "n-puzzle.yaml"


@pytest.fixture(scope="module")
def solve(tmp_path_factory: pytest.TempPathFactory):
    """n-puzzle's solve exercise, its first case (a scrambled 3x3 board), and the two hole actions (up and down, or
    down and up) that are legal back and forth from its board: millions of them, as a string within the codec's
    bounds, are what check_solution reads as the text's wrong convention and still replays, one by one."""
    plan = build_plan(load_rubric(N_PUZZLE), tmp_path_factory.mktemp("plan"))
    exercise = next(e for e in plan.rubric.exercises if e.id == "solve")
    case = plan.cases["solve"][0]
    board = case.variables["board"]
    hole_row = next(r for r, row in enumerate(board) if 0 in row)
    pair = "UD" if hole_row > 0 else "DU"
    return plan, exercise, case, pair


def _judged(plan, exercise, case, got):
    return grading.judge(plan, exercise, case, Outcome(case.id, "ok", value=got, seconds=0.5))


def test_a_huge_answer_costs_the_check_its_cpu_bound_and_the_student_the_case(solve, monkeypatch):
    plan, exercise, case, pair = solve
    got = codec.encode(pair * 3_990_000)
    checks: list[str] = []
    resolve = grading.resolve_check

    def watched(name, reference):
        check = resolve(name, reference)

        def run(context):
            checks.append("started")
            verdict = check(context)
            checks.append("returned")
            return verdict
        return run
    monkeypatch.setattr(grading, "resolve_check", watched)
    result = _judged(plan, exercise, case, got)
    assert (result.status, result.reason, result.cause) == ("fail", status.WRONG, grading.CHECK_TOO_SLOW)
    assert result.fraction == 0.0
    assert "could not judge this answer" in result.message
    # The bound stopped the check mid-replay (never its clock read afterwards: 0.30 s of CPU here, 1.66 s unbounded,
    # figures for the README, not for a test on a busy machine).
    assert checks == ["started"]


def test_off_the_main_thread_the_check_is_bounded_too(solve):
    plan, exercise, case, pair = solve
    got = codec.encode(pair * 3_989_999)      # not the answer the plan's memo holds a verdict for
    results = []
    worker = threading.Thread(target=lambda: results.append(_judged(plan, exercise, case, got)))
    worker.start()
    worker.join(600)
    assert not worker.is_alive()
    assert [(r.status, r.cause) for r in results] == [("fail", grading.CHECK_TOO_SLOW)]


def test_the_right_answer_is_still_judged_by_the_check(solve):
    plan, exercise, case, _ = solve
    result = _judged(plan, exercise, case, plan.expected[case.id].value)
    assert result.status == "pass", result.message


class _Stop(Exception):
    pass


def _spin() -> None:
    while True:
        pass


@pytest.mark.parametrize("in_thread", [False, True])
def test_a_cpu_bound_lets_a_call_that_waits_run_on(in_thread: bool):
    """Waiting (a busy machine's run queue, here a sleep) is no CPU time: the wall clock passing the bound stops
    nothing. A call that computes is stopped."""
    answers: list[object] = []

    def both() -> None:
        answers.append(bounded(lambda: time.sleep(0.3) or "slept", 0.05, _Stop, cpu=True))
        try:
            bounded(_spin, 0.05, _Stop, cpu=True)
        except _Stop:
            answers.append("stopped")

    if in_thread:
        worker = threading.Thread(target=both)
        worker.start()
        worker.join(600)
        assert not worker.is_alive()
    else:
        both()
    assert answers == ["slept", "stopped"]
