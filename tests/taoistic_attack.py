"""What the graded-for-real attacks on a fork's exercises share (tests/test_hostile_hooks.py, _registries, _carriers,
_frozen, _pristine): the correct Taoistic notebook plus one cell of the attack's, graded in one batch. Each cell
wraps the notebook's exercise functions so that a case's call answers None (every case of that exercise lost)
where it met what another exercise left: a notebook keeps full marks exactly when the grader kept that from
reaching a case.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from grader.store.results import SubmissionResult
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
FUNCTIONS = ("find_tile", "move_dir", "next_states", "matches", "manhattan", "find_numbers", "replace_numbers",
             "intermediate_goals", "extract_move", "extract_move_list", "apply_move_list", "search", "main")

# The cell's function naming the exercise a case runs under: the runtime's request, a local of its run_cases frame
# (the cell imports sys as _sys).
REQUEST = '''
def _request():
    frame = _sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "run_cases":
            return frame.f_locals.get("request")
        frame = frame.f_back
    return None
'''


# A cell carrying one way (test_hostile_hooks, _registries, _carriers): each case's call first looks whether what
# is left there came from another exercise ({look}: True if so, then it answers None), then leaves its own ({leave}).
CARRY = '''
import functools as _functools, sys as _sys
''' + REQUEST + '''

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


def wrapped(wrapper: str) -> str:
    """The cell's lines that wrap every exercise function in the cell's `wrapper`."""
    return "".join(f"{name} = {wrapper}({name})\n" for name in FUNCTIONS)


def graded(folder: Path, cells: Mapping[str, str], jobs: int = 2) -> dict[str, SubmissionResult]:
    """Each cell appended to the correct notebook and graded in one batch: the results by the cell's name."""
    paths = [write(folder / f"{name.replace(' ', '_')}.ipynb", appended(CORRECT, cell)) for name, cell in cells.items()]
    results = {result.submission: result
               for result in grade(paths, load_rubric(RUBRIC), folder / "out", jobs=jobs, cache=folder / "cache")}
    return {name: results[name.replace(" ", "_")] for name in cells}



def graded_ways(folder: Path, ways: Mapping[str, tuple[str, str]], setup: str = "") -> dict[str, SubmissionResult]:
    """Each way (its name: the cell's `look` and `leave` lines) carried by a CARRY cell after `setup`, every
    exercise function wrapped in it, graded in one batch: the results by the way's name."""
    return graded(folder, {name: setup + CARRY.format(look=look, leave=leave) + wrapped("_carried")
                           for name, (look, leave) in ways.items()})

def lost(result: SubmissionResult) -> dict[str, list[tuple[str, str, str]]]:
    """The exercises that lost points, each with its first two cases not passed (id, status, message's start)."""
    return {e.id: [(c.id, c.status, c.message[:80]) for c in e.cases if c.status != "pass"][:2]
            for e in result.exercises if e.score < e.max_score}
