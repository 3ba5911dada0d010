"""Attacks on the case clock: work the student's code hides from it costs the attacker its cases, nothing else.

Each test grades a real notebook (the bundled correct one with one cell appended) in a real sandbox; only
statuses and scores are asserted, never wall time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.judge.grading import Options, grade_path, support_sources
from grader.plan.cases import Plan, build_plan
from grader.rubric.schema import load_rubric
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


@pytest.fixture(scope="module")
def plan(grader_cache: Path) -> Plan:
    return build_plan(load_rubric(RUBRIC), grader_cache)


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
