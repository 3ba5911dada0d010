"""A case's time limit is its own: work a later case needs cannot be paid in an earlier case's spare time.

Every case has a CPU limit (the rubric's floor, or a multiple of the reference's time on it). Where the runtime held
a whole request's cases before it ran the first (before the parent sent each case once the last one answered), a
case walked the interpreter's objects (`gc`), found the runtime's later case requests, decoded their inputs with the
runtime's own `_input` and did their work on its own clock, so the later case answered at once.
Graded for real: the correct eight-puzzle notebook plus one cell whose
`astar_search` needs 2 s of CPU on the last hidden case (a medium problem whose limit is the 1 s floor) and nothing
more elsewhere. Left to that case the work is a timeout; what matters is whether another case can do it ahead: an
earlier exercise's cases (best_first_search's, which never see astar_search's requests: each exercise is its own
request) or astar_search's own earlier cases (its public part, which never sees a hidden input, and the hidden ones
before it, which did while one request held them all). A public case is no target: its input is in the student's kit
(tests/test_case_release.py), so a notebook can hard-code it and pay its work ahead whatever the child holds; a
public part comes whole (process._held).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from notebook_build import appended, write

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = ROOT / "rubrics" / "eight-puzzle-astar.yaml"
CORRECT = ROOT / "assignments" / "eight-puzzle-astar" / "submissions" / "correct.ipynb"
HARD = "astar_search.medium_problems[4]"   # the hidden part's last case
HARD_BOARD = (2, 3, 5, 0, 1, 7, 6, 8, 4)

# The slow search: HARD costs WORK seconds of CPU, paid wherever the notebook likes; every other board nothing more.
# _pay_ahead(prefix): the current case spends up to SHARE of its own limit on the boards of the requests it can find
# whose ids start with `prefix` (cases not run yet included: the runtime keeps them all until its request ends).
SLOW = r'''
import gc as _gc, sys as _sys, time as _time

_HARD = (2, 3, 5, 0, 1, 7, 6, 8, 4)   # HARD_BOARD
WORK, SHARE = 2.0, 0.7
_PAID = {}


def _work(state, seconds):
    """Pay up to `seconds` of CPU of what solving `state` costs; whether it is all paid."""
    owed = (WORK if state == _HARD else 0.0) - _PAID.get(state, 0.0)
    spend = min(max(owed, 0.0), seconds)
    end = _time.process_time() + spend
    while _time.process_time() < end:
        pass
    _PAID[state] = _PAID.get(state, 0.0) + spend
    return spend >= owed


def _runtime():
    """The runtime's frame of the running case: its `case` and its module's `_input` (how a case decodes inputs)."""
    frame = _sys._getframe()
    while frame is not None and not ("case" in frame.f_locals and "_input" in frame.f_globals):
        frame = frame.f_back
    return frame


def _boards(prefix, decode):
    found = []
    for held in _gc.get_objects():
        if type(held) is dict and isinstance(held.get("id"), str) and held["id"].startswith(prefix) \
                and isinstance(held.get("values"), dict):
            for value in held["values"].values():
                try:
                    found.append(tuple(decode(value)))
                except Exception:
                    pass
    return found


def _pay_ahead(prefix):
    frame = _runtime()
    if frame is None:
        return
    budget = SHARE * float(frame.f_locals["case"]["timeout"])
    started = _time.process_time()
    for state in _boards(prefix, frame.f_globals["_input"]):
        if not _work(state, budget - (_time.process_time() - started)):
            return


_astar = astar_search


def astar_search(problem, h=None):
    if _sys._getframe(1).f_code.co_filename == "<case>":
        _pay_ahead(PAID_BY_OWN_CASES)
    _work(problem.initial, 1e9)
    return _astar(problem, h)
'''

WAYS = {
    "slow": 'PAID_BY_OWN_CASES = "none"\n',
    "paid by an earlier exercise": 'PAID_BY_OWN_CASES = "none"\n'
                                   '_best = best_first_search\n\n\n'
                                   'def best_first_search(problem, f):\n'
                                   '    if _sys._getframe(1).f_code.co_filename == "<case>":\n'
                                   '        _pay_ahead("astar_search.")\n'
                                   '    return _best(problem, f)\n',
    "paid by its own earlier cases": 'PAID_BY_OWN_CASES = "astar_search."\n',
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, tuple[str, float | None]]]:
    """Each way's astar_search cases: status and CPU seconds, by case id."""
    folder = tmp_path_factory.mktemp("ahead")
    paths = [write(folder / f"{name.replace(' ', '_')}.ipynb", appended(CORRECT, way + SLOW))
             for name, way in WAYS.items()]
    results = grade(paths, load_rubric(RUBRIC), folder / "out", jobs=2, cache=folder / "cache")
    plan = build_plan(load_rubric(RUBRIC), folder / "cache")
    hard = next(case for case in plan.cases["astar_search"] if case.id == HARD)
    assert hard.visibility == "hidden" and plan.data(hard)["state"] == HARD_BOARD
    return {result.submission.replace("_", " "): {case.id: (case.status, case.cpu_seconds)
                                                   for exercise in result.exercises if exercise.id == "astar_search"
                                                   for case in exercise.cases}
            for result in results}


def test_the_slow_search_is_over_its_limit_on_the_hard_case_alone(graded):
    cases = graded["slow"]
    assert cases[HARD][0] == "timeout"
    assert [case for case, (status, _) in cases.items() if status != "pass"] == [HARD]


def test_an_earlier_exercise_cannot_pay_a_later_exercises_case(graded):
    """best_first_search's cases look for astar_search's requests: none is in the child while they run."""
    assert graded["paid by an earlier exercise"][HARD][0] == "timeout"


def test_an_earlier_case_cannot_pay_a_later_case_of_its_exercise(graded):
    """astar_search's earlier cases look for HARD's request: its public part never holds it (the hidden part is its
    own request), and each hidden case is sent only once the one before it answered (a hidden part's request holds
    its first case; process._case_frame)."""
    cases = graded["paid by its own earlier cases"]
    assert cases[HARD][0] == "timeout"
