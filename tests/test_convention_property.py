"""Correct notebooks in any convention the assignment's words allow earn full marks; a known-wrong answer
loses exactly its own exercise's points, whatever conventions the rest of the notebook uses.

Hypothesis draws, per assignment, a notebook from the bundled correct one (assignments/*/build_examples.py)
with each exercise written in one of the conventions its text leaves open (the session 18 matrix: tuple, list
or numpy positions, None or failure where unsaid, int or float costs, sets or lists where order is unsaid,
helpers inlined, loops or recursion; a class the template gives kept, left out or imported from a library the
grader lacks; given code its words describe two ways, as the 8-puzzle's default goal), and grades a batch of
such notebooks at once with the real grader.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grader.run.batch import grade
from grader.store.results import SubmissionResult
from grader.store.status import machine_busy

from conftest import REPO


def _method(source: str) -> str:
    """n-puzzle's methods sit in the State class's cell, one level in."""
    return textwrap.indent(textwrap.dedent(source), "    ")


def _code(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


# exercise -> {convention: source}; the reference itself is always one more choice.
RIGHT: dict[str, dict[str, dict[str, str]]] = {
    "sliding-3x3": {
        "findZero": {
            "list": _code("""
                def findZero(S):
                    for r in range(3):
                        for c in range(3):
                            if S[r][c] == 0:
                                return [r, c]"""),
            "numpy_ints": _code("""
                import numpy as np
                def findZero(S):
                    r, c = np.where(np.array(S) == 0)
                    return r[0], c[0]"""),
            "numpy_array": _code("""
                import numpy as np
                def findZero(S):
                    return np.argwhere(np.array(S) == 0)[0]"""),
            "generator": _code("""
                def findZero(S):
                    return next((r, c) for r, row in enumerate(S) for c, t in enumerate(row) if t == 0)"""),
        },
        "nextStates": {
            "list": _code("""
                def nextStates(S):
                    r, c = findZero(S)
                    L = []
                    if r < 2: L.append(moveUp(S, r, c))
                    if r > 0: L.append(moveDown(S, r, c))
                    if c > 0: L.append(moveRight(S, r, c))
                    if c < 2: L.append(moveLeft(S, r, c))
                    return L"""),
            "moves_inlined": _code("""
                def nextStates(S):
                    r, c = findZero(S)
                    out = set()
                    for dr, dc in ((1, 0), (-1, 0), (0, -1), (0, 1)):
                        rr, cc = r + dr, c + dc
                        if 0 <= rr < 3 and 0 <= cc < 3:
                            L = [list(row) for row in S]
                            L[r][c], L[rr][cc] = L[rr][cc], 0
                            out.add(tuple(map(tuple, L)))
                    return out"""),
            "frozenset": _code("""
                def nextStates(S):
                    r, c = findZero(S)
                    moves = [(r < 2, moveUp), (r > 0, moveDown), (c > 0, moveRight), (c < 2, moveLeft)]
                    return frozenset(move(S, r, c) for ok, move in moves if ok)"""),
        },
        "moveUp": {
            "via_lists": _code("""
                def swap(S, r1, c1, r2, c2):
                    L = listOfLists(S)
                    L[r1][c1], L[r2][c2] = L[r2][c2], L[r1][c1]
                    return tupleOfTuples(L)

                def moveUp(S, r, c):
                    L = [list(x) for x in S]
                    L[r][c], L[r + 1][c] = L[r + 1][c], 0
                    return tuple(tuple(x) for x in L)"""),
        },
    },
    "eight-puzzle-astar": {
        "h1": {
            "numpy": _code("""
                def h1(self, node):
                    import numpy as np
                    s, g = np.array(node.state), np.array(self.goal)
                    return np.sum((s != g) & (s != 0))"""),
            "with_blank": _code("""
                def h1(self, node):
                    return sum(s != g for s, g in zip(node.state, self.goal))"""),
        },
        "h2": {
            "numpy_int": _code("""
                def h2(self, node):
                    import numpy as np
                    s = np.array(node.state); g = np.array(self.goal)
                    d = 0
                    for t in range(1, 9):
                        i = int(np.where(s == t)[0][0]); j = int(np.where(g == t)[0][0])
                        d += abs(i // 3 - j // 3) + abs(i % 3 - j % 3)
                    return np.int64(d)"""),
            "helper_method": _code("""
                def distance_of(self, state):
                    goal = self.goal
                    return sum(abs(i // 3 - goal.index(t) // 3) + abs(i % 3 - goal.index(t) % 3)
                               for i, t in enumerate(state) if t)

                def h2(self, node):
                    return self.distance_of(node.state)"""),
            "float": _code("""
                def h2(self, node):
                    d = 0.0
                    for i, t in enumerate(node.state):
                        if t:
                            j = self.goal.index(t)
                            d += abs(i // 3 - j // 3) + abs(i % 3 - j % 3)
                    return d"""),
        },
        "inversions": {
            "recursive": _code("""
                def inversions(board):
                    tiles = [t for t in board if t]
                    if not tiles:
                        return 0
                    return sum(t < tiles[0] for t in tiles[1:]) + inversions(tiles[1:])"""),
        },
        "best_first_search": {
            "none": _code("""
                def best_first_search(problem, f):
                    node = Node(problem.initial)
                    frontier = PriorityQueue([node], key=f)
                    reached = {problem.initial: node}
                    while frontier:
                        node = frontier.pop()
                        if problem.is_goal(node.state):
                            return node
                        if node.path_cost > reached[node.state].path_cost:
                            continue
                        for child in expand(problem, node):
                            s = child.state
                            if s not in reached or child.path_cost < reached[s].path_cost:
                                reached[s] = child
                                frontier.add(child)
                    return None"""),
            "float_cost": _code("""
                def best_first_search(problem, f):
                    node = Node(problem.initial, path_cost=0.0)
                    frontier = PriorityQueue([node], key=f)
                    reached = {problem.initial: node}
                    pruned = set()
                    while frontier:
                        node = frontier.pop()
                        if node in pruned: continue
                        if problem.is_goal(node.state): return node
                        for child in expand(problem, node):
                            s = child.state
                            if s not in reached:
                                reached[s] = child; frontier.add(child)
                            elif child.path_cost < reached[s].path_cost:
                                pruned.add(reached[s]); reached[s] = child; frontier.add(child)
                    return failure"""),
        },
    },
    "n-puzzle": {
        "zeropos": {
            "np_where": _method("""
                def zeropos(self):
                    return np.where(self.state == 0)"""),
            "argwhere": _method("""
                def zeropos(self):
                    return np.argwhere(self.state == 0)[0]"""),
            "list": _method("""
                def zeropos(self):
                    r, c = np.argwhere(self.state == 0)[0]
                    return [int(r), int(c)]"""),
        },
        "available_actions": {
            "set": _method("""
                def available_actions(self):
                    r, c = self.zeropos()
                    n = len(self.state)
                    out = set()
                    if r > 0: out.add('U')
                    if r < n - 1: out.add('D')
                    if c > 0: out.add('L')
                    if c < n - 1: out.add('R')
                    return out"""),
        },
        "manhattan_distance": {
            "float": _method("""
                def manhattan_distance(self):
                    n = len(self.state)
                    d = 0.0
                    for (r, c), t in np.ndenumerate(self.state):
                        if t:
                            d += abs((t - 1) // n - r) + abs((t - 1) % n - c)
                    return d"""),
        },
        "is_solved": {
            "all": _method("""
                def is_solved(self):
                    return (self.state == State.getSolution().state).all()"""),
            "flat": _method("""
                def is_solved(self):
                    f = self.state.flatten().tolist()
                    return f == list(range(1, len(f))) + [0]"""),
        },
        "reconstruct_path": {
            "recursive": _code("""
                def reconstruct_path(state: State):
                    if state.parent is None:
                        return []
                    return reconstruct_path(state.parent) + [state.last_move]"""),
        },
    },
    "taoistic-search": {
        "find_tile": {
            "numpy_ints": _code("""
                def find_tile(tile: str, S: State) -> tuple[int, int]:
                    import numpy as np
                    r, c = np.argwhere(np.array(S) == tile)[0]
                    return r, c"""),
            "loops": _code("""
                def find_tile(tile: str, S: State) -> tuple[int, int]:
                    for r in range(len(S)):
                        for c in range(len(S[r])):
                            if S[r][c] == tile:
                                return (r, c)"""),
        },
        "next_states": {
            "helper_renamed": _code("""
                def neighbours(S, r, c):
                    n = len(S)
                    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                        if 0 <= r + dy < n and 0 <= c + dx < n:
                            yield move_dir(S, r, c, dx, dy)

                def next_states(S: State) -> set[State]:
                    return set(neighbours(S, *find_tile('0', S)))"""),
            "list": _code("""
                def next_states(S: State) -> set[State]:
                    n = len(S); r, c = find_tile('0', S)
                    return [move_dir(S, r, c, dx, dy) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
                            if 0 <= r + dy < n and 0 <= c + dx < n]"""),
        },
        "manhattan": {
            "float": _code("""
                def manhattan(S1: State, S2: State) -> int:
                    n = len(S1); d = 0.0
                    for r in range(n):
                        for c in range(n):
                            t = S2[r][c]
                            if t not in ('*', '0'):
                                r1, c1 = find_tile(t, S1)
                                d += abs(r - r1) + abs(c - c1)
                    return d"""),
        },
        "find_numbers": {
            "smallest_first": _code("""
                def find_numbers(Pattern: State) -> list[str]:
                    return sorted((t for row in Pattern for t in row if t != '*'), key=int)"""),
        },
        "matches": {
            "loops": _code("""
                def matches(Pattern: State, S: State) -> bool:
                    for prow, srow in zip(Pattern, S):
                        for p, t in zip(prow, srow):
                            if p != '*' and p != t:
                                return False
                    return True"""),
        },
        "replace_numbers": {
            "tuples_built": _code("""
                def replace_numbers(Pattern: State, Tiles: list[str]) -> State:
                    keep = set(Tiles)
                    return tuple(tuple(t if t in keep else '*' for t in row) for row in Pattern)"""),
        },
        "intermediate_goals": {
            "prefixes": _code("""
                def intermediate_goals(Goal: State, TilesList: list[list[str]]) -> list[State]:
                    return [replace_numbers(Goal, [t for T in TilesList[:i + 1] for t in T])
                            for i in range(len(TilesList))]"""),
        },
    },
}

# (exercise, source, the rubric's name of the mistake or "" where it names none)
WRONG: dict[str, dict[str, tuple[str, str, str]]] = {
    "sliding-3x3": {
        "findZero_transposed": ("findZero", _code("""
            def findZero(S):
                for r, row in enumerate(S):
                    for c, tile in enumerate(row):
                        if tile == 0:
                            return c, r"""), "findZero_transposed"),
        "nextStates_missing_a_move": ("nextStates", _code("""
            def nextStates(S):
                r, c = findZero(S)
                Result = set()
                if r + 1 < 3: Result.add(moveUp(S, r, c))
                if r - 1 >= 0: Result.add(moveDown(S, r, c))
                if c - 1 >= 0: Result.add(moveRight(S, r, c))
                return Result"""), ""),
    },
    "eight-puzzle-astar": {
        "h2_counts_the_blank": ("h2", _code("""
            def h2(self, node):
                d = 0
                for i, t in enumerate(node.state):
                    j = self.goal.index(t)
                    d += abs(i // 3 - j // 3) + abs(i % 3 - j % 3)
                return d"""), "EightPuzzleH2WithBlank"),
        "inversions_off_by_one": ("inversions", _code("""
            def inversions(board):
                tiles = [t for t in board if t != 0]
                return sum(tiles[i] > tiles[j] for i in range(len(tiles)) for j in range(i + 1, len(tiles) - 1))"""),
            ""),
    },
    "n-puzzle": {
        "zeropos_transposed": ("zeropos", _method("""
            def zeropos(self):
                r, c = np.argwhere(self.state == 0)[0]
                return int(c), int(r)"""), "StateZeroposTransposed"),
        "manhattan_counts_the_blank": ("manhattan_distance", _method("""
            def manhattan_distance(self):
                n = len(self.state)
                d = 0
                for (r, c), t in np.ndenumerate(self.state):
                    g = (t - 1) % (n * n)
                    d += abs(g // n - r) + abs(g % n - c)
                return d"""), "StateManhattanWithBlank"),
    },
    "taoistic-search": {
        "find_tile_transposed": ("find_tile", _code("""
            def find_tile(tile: str, S: State) -> tuple[int, int]:
                for row, line in enumerate(S):
                    if tile in line:
                        return line.index(tile), row"""), "find_tile_transposed"),
        "find_numbers_without_blank": ("find_numbers", _code("""
            def find_numbers(Pattern: State) -> list[str]:
                return [t for row in Pattern for t in row if t not in ('*', '0')]"""), "find_numbers_without_blank"),
    },
}

# What the assignment gives (the rubric's `given`), each drawn kept as the template has it, left out, or imported
# from a module the grading machine lacks (AIMA's own library: `from search import Node`; the 3x3 course module
# under a name it does not have): the notebook's graded code is the same in all three, so is its grade. Each
# given name with the first line of what gives it in the notebook (a class's lines go with it).
GIVEN_FORMS = ("kept", "omitted", "imported")
GIVEN: dict[str, dict[str, tuple[str, str]]] = {
    "eight-puzzle-astar": {"Problem": (r"class Problem\b", "from search import Problem"),
                           "Node": (r"class Node\b", "from search import Node")},
    "sliding-3x3": {"search": (r"%run Breadth-First-Fast", "from breadth_first_fast import search")},
}
GIVEN_KEY = "given "

# Code outside the exercises' slots written another way, as a text edit of the notebook: the 8-puzzle template's
# docstring draws the goal as (1, 2, ..., 8, 0) while its code defaults to (0, 1, ..., 8), and a notebook that made
# the default match the drawing is right (no exercise grades the default; cases pass their goal); the given
# `def h(self, node): return self.h2(node)` as a class alias `h = h2` or a lambda attribute is the same method.
_GIVEN_H = "    def h(self, node):\n      return self.h2(node)"
EDITS: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
    "eight-puzzle-astar": {"default goal": {"as_drawn": ("goal=(0, 1, 2, 3, 4, 5, 6, 7, 8)",
                                                         "goal=(1, 2, 3, 4, 5, 6, 7, 8, 0)")},
                           "h": {"alias": (_GIVEN_H, "    h = h2"),
                                 "lambda": (_GIVEN_H, "    h = lambda self, node: self.h2(node)")}},
}
EDIT_KEY = "edit "


def _given_form(notebook: nbformat.NotebookNode, assignment: str, name: str, form: str) -> None:
    """What gives `name` in the notebook left out or replaced by an import of it."""
    first, imported = GIVEN[assignment][name]
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.split("\n")   # not ast: a cell may hold magics (%matplotlib inline)
        starts = [i for i, line in enumerate(lines) if re.match(first, line)]
        if starts:
            start = end = starts[0]
            end += 1   # a class's lines: to the next one at column 0 that is code, not a comment
            while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
                end += 1
            lines[start:end] = [imported] if form == "imported" else []
            cell.source = "\n".join(lines)
            return
    raise AssertionError(f"nothing gives {name} in the notebook")


# Exercises that run the notebook's own chain end to end, nothing isolated, as their rubric says: sliding's solve
# ("End to end with the notebook's own nextStates (and whatever it calls)": 181,440 states, no pipe round trip
# per call), n-puzzle's solve ("solve runs your State methods and reconstruct_path as they are") and taoistic's main
# ("main is given: when it fails, the error comes from a function it calls"). A wrong helper there costs the
# chain's points too, the same whatever the conventions.
END_TO_END = {"sliding-3x3": {"solve"}, "n-puzzle": {"solve"}, "taoistic-search": {"main"}}
ASSIGNMENTS = sorted(RIGHT)
# Bounded: two examples of a batch each, no shrinking (each example grades real notebooks); a failure prints the
# conventions drawn, which is the fixture to write.
PROPERTY = settings(max_examples=2, deadline=None, database=None, phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _examples(assignment: str) -> ModuleType:
    name = f"{assignment.replace('-', '_')}_examples"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, REPO / "assignments" / assignment / "build_examples.py")
        assert spec is not None and spec.loader is not None
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _notebook(assignment: str, overrides: dict[str, str]) -> nbformat.NotebookNode:
    examples = _examples(assignment)
    forms = {key[len(GIVEN_KEY):]: form for key, form in overrides.items() if key.startswith(GIVEN_KEY)}
    edits = [EDITS[assignment][key[len(EDIT_KEY):]][form] for key, form in overrides.items()
             if key.startswith(EDIT_KEY)]
    overrides = {key: source for key, source in overrides.items() if not key.startswith((GIVEN_KEY, EDIT_KEY))}
    if hasattr(examples, "submission"):
        notebook = examples.submission(overrides)
    else:
        notebook = examples.render({**examples.SOLUTIONS, **overrides})
    for name, form in forms.items():
        if form != "kept":
            _given_form(notebook, assignment, name, form)
    for before, after in edits:
        cells = [cell for cell in notebook.cells if cell.cell_type == "code" and before in cell.source]
        assert len(cells) == 1, f"{before!r} in {len(cells)} cells"
        cells[0].source = cells[0].source.replace(before, after)
    return notebook


def conventions(assignment: str) -> st.SearchStrategy[dict[str, str]]:
    """One allowed convention (or the reference's) per exercise: exercise -> convention name."""
    return st.fixed_dictionaries({**{exercise: st.sampled_from(["reference", *sorted(options)])
                                     for exercise, options in RIGHT[assignment].items()},
                                  **{GIVEN_KEY + name: st.sampled_from(GIVEN_FORMS)
                                     for name in GIVEN.get(assignment, ())},
                                  **{EDIT_KEY + name: st.sampled_from(["reference", *sorted(forms)])
                                     for name, forms in EDITS.get(assignment, {}).items()}})


def _grade(assignment: str, notebooks: dict[str, dict[str, str]], folder: Path,
           cache: Path) -> dict[str, SubmissionResult]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, overrides in notebooks.items():
        path = folder / f"{name}.ipynb"
        nbformat.write(_notebook(assignment, overrides), path)
        paths.append(path)
    results = grade(paths, REPO / "rubrics" / f"{assignment}.yaml", folder / "out", jobs=2, cache=cache)
    for _ in range(2):   # a case a busy machine kept from being judged is graded by the next run, as a TA's is
        if not any(machine_busy(c.status, c.reason) for r in results for e in r.exercises for c in e.cases):
            break
        results = grade(paths, REPO / "rubrics" / f"{assignment}.yaml", folder / "out", jobs=2, cache=cache)
    return {result.submission: result for result in results}


def _sources(assignment: str, chosen: dict[str, str]) -> dict[str, str]:
    return {exercise: name if exercise.startswith((GIVEN_KEY, EDIT_KEY)) else RIGHT[assignment][exercise][name]
            for exercise, name in chosen.items() if name not in ("reference", "kept")}


def _label(chosen: dict[str, str]) -> str:
    return "-".join(f"{exercise}_{name}" for exercise, name in sorted(chosen.items())
                    if name not in ("reference", "kept")) or "ref"


def _lost(result: SubmissionResult) -> dict[str, tuple[float, float]]:
    return {e.id: (e.score, e.max_score) for e in result.exercises if e.score < e.max_score}


def _unpassed(result: SubmissionResult, but: str = "") -> str:
    """What a failed comparison shows: every case that did not pass (of exercises other than `but`), its status,
    reason and message, and the result's budget facts; as text, which pytest prints whole (a flake under load
    failed here with the lost points alone, then with its cases cut off by pytest's repr)."""
    return "\n".join([f"{result.submission}: {result.extra.get('budget')}"] + [
        f"  {e.id} {c.id}: {c.status} ({c.reason}) {c.message[:300]!r}" for e in result.exercises if e.id != but
        for c in e.cases if c.status != "pass"])


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@PROPERTY
@given(data=st.data())
def test_a_right_notebook_in_conventions_its_words_allow_earns_full_marks(
        assignment: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> None:
    drawn = data.draw(st.lists(conventions(assignment), min_size=3, max_size=3, unique_by=_label), label="notebooks")
    notebooks = {f"n{i}": _sources(assignment, chosen) for i, chosen in enumerate(drawn)}
    results = _grade(assignment, notebooks, tmp_path_factory.mktemp("right"), grader_cache)
    for i, chosen in enumerate(drawn):
        result = results[f"n{i}"]
        assert _lost(result) == {}, (chosen, [(e.id, c.id, c.message) for e in result.exercises
                                              for c in e.cases if c.status != "pass"])
        assert result.total == result.max_total


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@PROPERTY
@given(data=st.data())
def test_a_wrong_answer_loses_its_own_points_whatever_the_other_conventions(
        assignment: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> None:
    wrong = data.draw(st.sampled_from(sorted(WRONG[assignment])), label="wrong")
    exercise, source, mistake = WRONG[assignment][wrong]
    others = data.draw(st.lists(conventions(assignment).map(
        lambda chosen: {name: choice for name, choice in chosen.items() if name != exercise}),
        min_size=2, max_size=2, unique_by=_label), label="conventions")
    notebooks = {"alone": {exercise: source}}
    notebooks.update({f"n{i}": {**_sources(assignment, chosen), exercise: source} for i, chosen in enumerate(others)})
    results = _grade(assignment, notebooks, tmp_path_factory.mktemp("wrong"), grader_cache)
    alone = results["alone"]
    lost = _lost(alone)
    assert exercise in lost and set(lost) - {exercise} <= END_TO_END.get(assignment, set()), \
        f"{lost}\n{_unpassed(alone)}"
    if mistake:
        assert any(c.mistake == mistake for c in alone.exercise(exercise).cases), _unpassed(alone)
    for i, chosen in enumerate(others):
        result = results[f"n{i}"]
        assert _lost(result) == lost, f"{chosen} lost {_lost(result)}, alone {lost}\n{_unpassed(result, exercise)}" \
                                      f"\n{_unpassed(alone, exercise)}"
        if mistake:
            assert any(c.mistake == mistake for c in result.exercise(exercise).cases), f"{chosen}\n{_unpassed(result)}"
