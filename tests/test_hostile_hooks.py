"""What an exercise can leave in the interpreter for the next exercise its fork serves, where no object of the
notebook's reaches it: the async generator hooks (`sys.set_asyncgen_hooks`, a closure) and the coroutine origin
depth. Graded for real (the correct Taoistic notebook plus one cell): each case's call first looks whether what is
set there came from another exercise (the runtime's request it was set under is not its own), answers None if so
(every case of that exercise lost), then sets it under its own request. A fresh fork has nothing set, so the
notebook keeps full marks exactly when the fork's check saw the change and took a fresh fork (pristine._interpreter).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
FUNCTIONS = ("find_tile", "move_dir", "next_states", "matches", "manhattan", "find_numbers", "replace_numbers",
             "intermediate_goals", "extract_move", "extract_move_list", "apply_move_list", "search", "main")

CARRY = '''
import functools as _functools, sys as _sys


def _request():
    frame = _sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "run_cases":
            return frame.f_locals.get("request")
        frame = frame.f_back
    return None


def _from_another_exercise(request):
    {look}


def _leave(request):
    {leave}


def _carried(function):
    @_functools.wraps(function)
    def call(*args, **kwargs):
        if _sys._getframe(1).f_code.co_name == "<module>":   # called by a case, not by another function
            request = _request()
            if _from_another_exercise(request):
                return None
            _leave(request)
        return function(*args, **kwargs)
    return call


'''

WAYS = {
    "asyncgen hooks": ("left = _sys.get_asyncgen_hooks().firstiter\n"
                       "    return left is not None and left.__defaults__[0] is not request",
                       "_sys.set_asyncgen_hooks(firstiter=lambda agen, seen=request: None)"),
    "coroutine origin depth": ("depth = _sys.get_coroutine_origin_tracking_depth()\n"
                               "    return depth not in (0, 1 + id(request) % 997)",
                               "_sys.set_coroutine_origin_tracking_depth(1 + id(request) % 997)"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("hooks")
    paths = []
    for name, (look, leave) in WAYS.items():
        cell = CARRY.format(look=look, leave=leave) + "".join(f"{f} = _carried({f})\n" for f in FUNCTIONS)
        paths.append(write(folder / f"{name.replace(' ', '_')}.ipynb", appended(CORRECT, cell)))
    graded = grade(paths, load_rubric(RUBRIC), folder / "out", jobs=2, cache=folder / "cache")
    return {result.submission: result for result in graded}


@pytest.mark.parametrize("name", sorted(WAYS))
def test_what_an_exercise_leaves_in_the_interpreters_hooks_never_reaches_the_next(results, name):
    result = results[name.replace(" ", "_")]
    lost = {e.id: [(c.id, c.status, c.message[:80]) for c in e.cases if c.status != "pass"][:2]
            for e in result.exercises if e.score < e.max_score}
    assert lost == {}
    assert result.total == result.max_total == 30
