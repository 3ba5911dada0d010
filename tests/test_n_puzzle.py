"""Tests of the n-puzzle course content: the reference module against an independent model, its
generators, mistakes and check, and end to end the rubric with every bundled example notebook."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import numpy as np
import pytest
import yaml

from grader.plan.cases import load_reference
from grader.run.batch import grade
from grader.authoring.validate import validate

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference" / "n_puzzle.py"
RUBRIC = ROOT / "rubrics" / "n-puzzle.yaml"
ASSIGNMENT = ROOT / "assignments" / "n-puzzle"
SUBMISSIONS = ASSIGNMENT / "submissions"



ref = load_reference(REFERENCE)
RUBRIC_DATA = yaml.safe_load(RUBRIC.read_text(encoding="utf-8"))
EXERCISES = {exercise["id"]: exercise for exercise in RUBRIC_DATA["exercises"]}
MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


# ---------------------------------------------------------------------------
# An independent model of the puzzle: boards as tuples of tuples
# ---------------------------------------------------------------------------

def as_tuple(board) -> tuple:
    return tuple(tuple(int(v) for v in row) for row in board)


def hole(board) -> tuple[int, int]:
    return next((r, c) for r, row in enumerate(board) for c, v in enumerate(row) if v == 0)


def legal(board) -> set[str]:
    r, c = hole(board)
    n = len(board)
    return {a for a, (dr, dc) in MOVES.items() if 0 <= r + dr < n and 0 <= c + dc < n}


def moved(board, action) -> tuple:
    (r, c), (dr, dc) = hole(board), MOVES[action]
    cells = [list(row) for row in board]
    cells[r][c], cells[r + dr][c + dc] = cells[r + dr][c + dc], 0
    return as_tuple(cells)


def goal(n: int) -> tuple:
    return as_tuple([[(r * n + c + 1) % (n * n) for c in range(n)] for r in range(n)])


def manhattan(board) -> int:
    n = len(board)
    where = {v: (r, c) for r, row in enumerate(board) for c, v in enumerate(row)}
    return sum(abs(where[t][0] - (t - 1) // n) + abs(where[t][1] - (t - 1) % n) for t in range(1, n * n))


def state(board, dim: int | None = None):
    """A reference State of a board, with PUZZLE_DIM set to its size as a rubric case does."""
    ref.PUZZLE_DIM = dim or len(board)
    return ref.State(np.array(board))


@pytest.fixture(autouse=True)
def restore_puzzle_dim():
    yield
    ref.PUZZLE_DIM = 5


def bfs_distance(start: tuple, target: tuple) -> int | None:
    """Fewest actions from start to target by bidirectional breadth-first search (no heuristic at all).

    Whole layers are expanded, the smaller side first, and the best meeting point of a layer
    is taken, so the answer is exact.
    """
    if start == target:
        return 0
    sides = [({start: 0}, [start]), ({target: 0}, [target])]
    while sides[0][1] and sides[1][1]:
        (seen, layer), (other, _) = sorted(sides, key=lambda side: len(side[1]))
        best, following = None, []
        for board in layer:
            for action in legal(board):
                nxt = moved(board, action)
                if nxt in other:
                    total = seen[board] + 1 + other[nxt]
                    best = total if best is None else min(best, total)
                if nxt not in seen:
                    seen[nxt] = seen[board] + 1
                    following.append(nxt)
        if best is not None:
            return best
        layer[:] = following
    return None


def rubric_boards(generator: str) -> list[list[list[int]]]:
    """The boards of the rubric's solve cases made by one generator (all its seeds)."""
    boards = []
    for case in EXERCISES["solve"]["cases"]:
        if case.get("generate") == generator:
            boards += [c["board"] for c in getattr(ref, generator)(random.Random(case["seed"]), case["count"])]
    return boards


# ---------------------------------------------------------------------------
# The State methods and helpers
# ---------------------------------------------------------------------------

def test_state_methods_agree_with_an_independent_model_on_random_boards():
    for case in ref.random_boards(random.Random(11), 60):
        board = as_tuple(case["board"])
        s = state(case["board"])
        assert s.zeropos() == hole(board) and all(type(v) is int for v in s.zeropos())
        assert set(s.available_actions()) == legal(board)
        assert s.manhattan_distance() == manhattan(board)
        assert s.is_solved() is (board == goal(len(board)))


def test_manhattan_of_the_notebooks_board_is_the_82_it_printed():
    assert state(ref.Board5).manhattan_distance() == 82
    assert state(ref.Solved5Up).manhattan_distance() == 1
    assert state(ref.Solved5).manhattan_distance() == 0


def test_do_action_moves_the_hole_on_a_copy_and_records_the_step():
    for case in ref.random_actions(random.Random(12), 40):
        parent = state(case["board"])
        child = parent.do_action(case["action"])
        assert as_tuple(child.state) == moved(as_tuple(case["board"]), case["action"])
        assert as_tuple(parent.state) == as_tuple(case["board"])        # the parent keeps its board
        assert (child.depth, child.last_move, child.parent) == (2, case["action"], parent)
        assert child.parent is parent


def test_do_action_in_place_changes_and_returns_the_state_itself():
    s = state(ref.Board5)
    assert s.do_action("R", as_child=False) is s
    assert as_tuple(s.state) == moved(as_tuple(ref.Board5), "R")
    assert s.depth == 1 and s.last_move is None


def test_is_solved_only_for_the_goal_with_the_hole_last():
    assert state(ref.Solved5).is_solved() is True
    assert state(ref.Solved3).is_solved() is True
    assert state(ref.HoleFirst3).is_solved() is False
    assert state(ref.Solved5Up).is_solved() is False


def test_fixtures_describe_the_boards_their_comments_say():
    assert hole(ref.Board5) == (1, 1) and hole(ref.Board5Corner) == (4, 0) and hole(ref.Board5Edge) == (4, 3)
    assert as_tuple(ref.Solved5) == goal(5) and as_tuple(ref.Solved3) == goal(3)
    assert as_tuple(ref.Solved5Up) == moved(goal(5), "U")
    assert legal(ref.Board3) == {"D", "L"}
    walk = [as_tuple(b) for b in ref.Walk3]
    assert walk[0] == goal(3)
    assert [moved(a, m) for a, m in zip(walk[:-1], "ULLD", strict=True)] == walk[1:]


def test_reconstruct_path_walks_up_the_parents_first_action_first():
    boards = [np.array(b) for b in ref.Walk3]
    chain = ref.State(boards[0])
    for depth, (board, action) in enumerate(zip(boards[1:], "ULLD", strict=True), start=2):
        chain = ref.State(board, depth, action, chain)
    assert ref.reconstruct_path(chain) == ["U", "L", "L", "D"]
    assert ref.reconstruct_path(ref.State(boards[0])) == []


def test_hole_to_tile_gives_the_opposite_direction():
    assert [ref.hole_to_tile(a) for a in "UDLR"] == ["D", "U", "R", "L"]
    with pytest.raises(ValueError):
        ref.hole_to_tile("X")


# ---------------------------------------------------------------------------
# solve
# ---------------------------------------------------------------------------

def replay(board, actions) -> tuple:
    board = as_tuple(board)
    for action in actions:
        assert action in legal(board), (board, action)
        board = moved(board, action)
    return board


def test_solve_is_as_short_as_breadth_first_search_on_3x3_and_4x4():
    boards = rubric_boards("scrambled_3x3") + rubric_boards("scrambled_4x4")
    boards += [c["board"] for c in ref.scrambled(random.Random(3), 10, 3, 1, 26)]
    for board in boards:
        actions = ref.solve(state(board))
        assert replay(board, actions) == goal(len(board))
        assert len(actions) == bfs_distance(as_tuple(board), goal(len(board)))


def test_breadth_first_search_of_the_tests_knows_unsolvable_boards():
    assert bfs_distance(((2, 1), (3, 0)), goal(2)) is None      # two tiles swapped on a 2x2 board
    assert bfs_distance(moved(moved(goal(3), "U"), "L"), goal(3)) == 2


def test_solve_reaches_the_goal_on_the_5x5_rubric_boards():
    for board in rubric_boards("scrambled_5x5"):
        actions = ref.solve(state(board))
        assert replay(board, actions) == goal(len(board))
        assert manhattan(as_tuple(board)) <= len(actions) <= 24


def test_solve_of_a_solved_board_is_empty():
    assert ref.solve(state(ref.Solved5)) == []


# ---------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------

GENERATORS = sorted({case["generate"] for exercise in EXERCISES.values() for case in exercise["cases"]
                     if "generate" in case})


@pytest.mark.parametrize("name", GENERATORS)
def test_generators_are_deterministic_for_a_seed(name):
    generator = getattr(ref, name)
    first = generator(random.Random(7), 5)
    assert first == generator(random.Random(7), 5)
    assert first != generator(random.Random(8), 5)
    assert len(first) == 5
    for case in first:
        board = case["board"]
        assert sorted(v for row in board for v in row) == list(range(len(board) ** 2))


@pytest.mark.parametrize("name, n, low, high", [("scrambled_3x3", 3, 14, 22), ("scrambled_4x4", 4, 14, 24),
                                                ("scrambled_5x5", 5, 12, 20)])
def test_scrambled_boards_are_solvable_within_the_promised_range(name, n, low, high):
    for case in getattr(ref, name)(random.Random(5), 6):
        assert len(case["board"]) == n
        actions = ref.solve(state(case["board"]))
        assert low <= len(actions) <= high


def test_generated_actions_are_legal_and_near_goal_boards_are_half_solved():
    for case in ref.random_actions(random.Random(6), 30):
        assert case["action"] in legal(as_tuple(case["board"]))
    solved = [as_tuple(c["board"]) == goal(len(c["board"])) for c in ref.random_near_goal(random.Random(6), 40)]
    assert 15 <= sum(solved) <= 25


# ---------------------------------------------------------------------------
# Known mistakes (every one must show on some rubric case) and the check of solve
# ---------------------------------------------------------------------------

def rubric_cases(exercise: dict):
    for case in exercise["cases"]:
        if "generate" in case:
            for variables in getattr(ref, case["generate"])(random.Random(case["seed"]), case["count"]):
                yield case, variables
        else:
            yield case, {}


def evaluate(exercise: dict, case: dict, variables: dict, names: dict | None = None):
    """A case evaluated the rubric's way in plain Python against the reference (some names replaced)."""
    data = {**{name: getattr(ref, name) for name in RUBRIC_DATA["fixtures"]}, **variables}
    for name, code in (case.get("set") or {}).items():
        setattr(ref, name, eval(str(code), dict(data)))
    namespace = {**vars(ref), **data, **(names or {})}
    result = eval(case["call"], namespace)
    reduce = case.get("reduce", exercise.get("reduce"))
    if reduce:
        result = eval(reduce, {**namespace, "result": result})
    ref.PUZZLE_DIM = 5
    return result


MISTAKES = [(exercise["id"], mistake["reference"]) for exercise in EXERCISES.values()
            for mistake in exercise.get("mistakes", [])]


@pytest.mark.parametrize("exercise_id, mistake", MISTAKES)
def test_every_mistake_differs_from_the_reference_on_some_rubric_case(exercise_id, mistake):
    exercise = EXERCISES[exercise_id]
    names = {exercise.get("function", exercise_id): getattr(ref, mistake)}
    differs = 0
    for case, variables in rubric_cases(exercise):
        right = evaluate(exercise, case, variables)
        try:
            wrong = evaluate(exercise, case, variables, names)
        except (ValueError, IndexError):
            continue
        differs += repr(wrong) != repr(right)
    assert differs > 0


def test_mistake_classes_are_recognised_on_the_public_cases_that_name_them():
    tile = ref.StateMovesTile(np.array(ref.Board5)).do_action("U")
    assert as_tuple(tile.state) == moved(as_tuple(ref.Board5), "D") and tile.last_move == "U"
    parent = ref.StateSharesBoard(np.array(ref.Board5))
    child = parent.do_action("D")
    assert child.state is parent.state
    assert ref.StateManhattanWithBlank(np.array(ref.Solved5Up)).manhattan_distance() == 2
    assert ref.StateZeroposTransposed(np.array(ref.Board5Corner)).zeropos() == (0, 4)


def test_check_solution_gives_full_credit_up_to_the_ratio_and_less_above():
    board = rubric_boards("scrambled_3x3")[0]
    best = ref.solve(state(board))
    options = {"full_ratio": 1.5, "min_credit": 0.5}
    variables = {"board": board}
    assert ref.check_solution(best, best, variables, options)[0] == 1.0
    longer = best + ["U", "D"] * (len(best) // 4)                             # back and forth at the goal
    assert ref.check_solution(longer, best, variables, options)[0] == 1.0      # within 1.5 times
    detour = best + ["U", "D"] * len(best)                                     # three times as long
    credit, message = ref.check_solution(detour, best, variables, options)
    assert credit == pytest.approx(max(0.5, 1.5 * len(best) / len(detour)))
    assert f"the shortest has {len(best)}" in message
    assert ref.check_solution(tuple(best), best, variables, options)[0] == 1.0


def test_check_solution_says_why_a_solution_is_wrong():
    board = rubric_boards("scrambled_3x3")[0]
    best = ref.solve(state(board))
    options, variables = {"full_ratio": 1.5}, {"board": board}
    ok, message = ref.check_solution(None, best, variables, options)
    assert not ok and "None" in message
    ok, message = ref.check_solution([ref.hole_to_tile(a) for a in best], best, variables, options)
    assert not ok and "moves of the TILES" in message
    ok, message = ref.check_solution(best[::-1], best, variables, options)
    assert not ok and "Read last first" in message
    ok, message = ref.check_solution(best[:-1], best, variables, options)
    assert not ok and "not the goal" in message
    ok, message = ref.check_solution(["X"], best, variables, options)
    assert not ok and "'X' is not one of the actions" in message


# ---------------------------------------------------------------------------
# The module passes its own extraction: literals only, no top-level calls
# ---------------------------------------------------------------------------

def test_module_keeps_only_what_extraction_keeps():
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    for node in tree.body[1:]:      # [0] is the docstring
        assert isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign)), node.lineno
        if isinstance(node, ast.Assign):
            assert not [c for c in ast.walk(node.value) if isinstance(c, ast.Call)], node.lineno
            ast.literal_eval(node.value)


def test_rubric_fixtures_are_literals_of_the_module():
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    literals = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    for name in RUBRIC_DATA["fixtures"]:
        assert literals[name] == getattr(ref, name)


# ---------------------------------------------------------------------------
# End to end: the rubric validates, and every bundled example gets the README's scores
# ---------------------------------------------------------------------------

FULL = {"zeropos": 2, "available_actions": 2, "do_action": 3, "manhattan_distance": 3, "is_solved": 1,
        "reconstruct_path": 2, "hole_to_tile": 1, "solve": 6}

# Total of every bundled example (rubric total 20) and the exercises that lose points (assignments/n-puzzle/README.md).
EXPECTED = {
    "correct": (20, {}),
    "numpy-style": (20, {}),
    "seed-003": (14, {"solve": 0}),
    "greedy-solve": (18.4889, {"solve": 4.4889}),
    "tile-moves-solve": (14, {"solve": 0}),
    "shared-board": (13.8235, {"do_action": 3 * 16 / 17, "solve": 0}),
    "manhattan-with-hole": (17.2, {"manhattan_distance": 0.2}),
    "unreversed-path": (13, {"reconstruct_path": 1, "solve": 0}),
    # do_action's own code is right: its IndexErrors were zeropos' range(5), paid for in zeropos (isolated).
    "hardcoded-five": (11.9429, {"zeropos": 2 * 8 / 14, "available_actions": 2 * 12 / 15,
                                 "manhattan_distance": 1, "solve": 1.2}),
    "n_puzzle": (20, {}),   # the reference module graded as a submission
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("n-puzzle-cache")


@pytest.fixture(scope="module")
def bundled(tmp_path_factory, cache):
    """Every bundled example and the reference module, graded once (about 5 s: hence the slow marks)."""
    out = tmp_path_factory.mktemp("n-puzzle-results")
    results = grade([SUBMISSIONS, REFERENCE], RUBRIC, out, jobs=2, cache=cache)
    return {result.submission: result for result in results}


def test_validate_accepts_the_rubric_reference_full_template_zero(cache):
    validation = validate(RUBRIC, cache=cache, mutants=1)
    assert validation.ok, validation.problems
    assert validation.reference_result.total == 20
    template = validation.template_result
    assert template is not None and template.total == 0
    for exercise in template.exercises:
        assert all("grader problem" not in case.message for case in exercise.cases), exercise.id
        if exercise.id in ("reconstruct_path", "hole_to_tile", "solve"):
            assert {case.status for case in exercise.cases} == {"missing"}


def test_bundled_examples_are_exactly_the_readme_examples():
    assert {path.stem for path in SUBMISSIONS.glob("*.ipynb")} == set(EXPECTED) - {"n_puzzle"}


@pytest.mark.slow
@pytest.mark.parametrize("submission", sorted(EXPECTED))
def test_example_scores_its_expected_total_losing_only_the_listed_exercises(bundled, submission):
    total, losses = EXPECTED[submission]
    result = bundled[submission]
    assert result.total == pytest.approx(total, abs=1e-3)
    assert {e.id: e.score for e in result.exercises} == pytest.approx({**FULL, **losses}, abs=1e-3)


@pytest.mark.slow
def test_seed_grades_fast_without_its_randomizing_or_search(bundled):
    result = bundled["seed-003"]
    assert not any("did not finish within" in w.shown for w in result.warnings), result.warnings   # not the clock
    assert {case.status for case in result.exercise("solve").cases} == {"missing"}


@pytest.mark.slow
def test_known_mistakes_and_check_messages_reach_the_student(bundled):
    def messages(submission, exercise):
        return [case.message for case in bundled[submission].exercise(exercise).cases if case.status != "pass"]

    assert messages("shared-board", "do_action") and all(
        "must get a copy" in m for m in messages("shared-board", "do_action"))
    assert all("You also count the hole" in m for m in messages("manhattan-with-hole", "manhattan_distance"))
    assert all("moves of the TILES" in m for m in messages("tile-moves-solve", "solve"))
    assert all("Read last first" in m for m in messages("unreversed-path", "solve"))
    assert all("reverse the list" in m for m in messages("unreversed-path", "reconstruct_path"))
    assert any("smaller than 5x5" in m for m in messages("hardcoded-five", "manhattan_distance"))
