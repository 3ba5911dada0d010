"""Tests of the 3x3 sliding puzzle course content: reference module, support search, rubric, notebooks, grading."""

from __future__ import annotations

import ast
import itertools
import contextlib
import io
import random
import re
from collections import deque
from pathlib import Path

import nbformat
import pytest
import yaml

from grader.syntax.analysis import is_stub
from grader.run.batch import grade
from grader.authoring.validate import validate
from grader.plan.cases import load_reference, build_plan
from grader.rubric.schema import load_rubric
from grader import codec

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference" / "sliding_3x3.py"
RUBRIC = ROOT / "rubrics" / "sliding-3x3.yaml"
ASSIGNMENT = ROOT / "assignments" / "sliding-3x3"
SUPPORT = ASSIGNMENT / "support" / "Breadth-First-Fast.py"
SEED = ASSIGNMENT / "submissions" / "seed-002.ipynb"
SEED_FIXTURE = ROOT / "tests" / "fixtures" / "seeds" / "002_f30b892f30367653.ipynb"

RUBRIC_DATA = yaml.safe_load(RUBRIC.read_text(encoding="utf-8"))
EXERCISES = {e["id"]: e for e in RUBRIC_DATA["exercises"]}



ref = load_reference(REFERENCE)
support = load_reference(SUPPORT)


# ---------------------------------------------------------------------------
# An independent model of the puzzle: the blank swaps with an orthogonal neighbour
# ---------------------------------------------------------------------------

def swapped(S, a, b):
    cells = [list(row) for row in S]
    (r1, c1), (r2, c2) = a, b
    cells[r1][c1], cells[r2][c2] = cells[r2][c2], cells[r1][c1]
    return tuple(map(tuple, cells))


def blank(S):
    return next((r, c) for r in range(3) for c in range(3) if S[r][c] == 0)


def neighbours(S):
    r, c = blank(S)
    return {swapped(S, (r, c), (r + dr, c + dc))
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)) if 0 <= r + dr < 3 and 0 <= c + dc < 3}


@pytest.fixture(scope="module")
def distance_to_goal() -> dict:
    """Moves from every state to Goal, by breadth-first search over the model (moves are reversible)."""
    dist = {ref.Goal: 0}
    queue = deque([ref.Goal])
    while queue:
        state = queue.popleft()
        for ns in neighbours(state):
            if ns not in dist:
                dist[ns] = dist[state] + 1
                queue.append(ns)
    return dist


def assert_legal_path(path, start, goal):
    assert type(path) is tuple and path[0] == start and path[-1] == goal
    for before, after in itertools.pairwise(path):
        assert after in neighbours(before)


def all_states_with_blank_at(r, c, count=5, seed=0):
    rng = random.Random(seed * 9 + 3 * r + c)
    return [ref._state_with_blank_at(rng, r, c) for _ in range(count)]


# ---------------------------------------------------------------------------
# The reference against the model
# ---------------------------------------------------------------------------

def test_fixtures_are_the_notebooks_states_and_reachable(distance_to_goal):
    assert ref.start == ref.Start == ((8, 0, 6), (5, 4, 7), (2, 3, 1))
    assert ref.goal == ref.Goal == ((0, 1, 2), (3, 4, 5), (6, 7, 8))
    assert len(distance_to_goal) == 181440              # half of 9!: the solvable states
    assert distance_to_goal[ref.Start] == 31            # the notebook's path has 32 states
    assert distance_to_goal[ref.Medium] == 16
    assert ref.Middle == ref.moveUp(ref.Start, 0, 1)
    assert (blank(ref.Corner), blank(ref.LeftEdge), blank(ref.Middle)) == ((2, 2), (1, 0), (1, 1))


def test_find_zero_gives_row_then_column_for_every_square():
    for r, c in ref.POSITIONS:
        for S in all_states_with_blank_at(r, c):
            assert ref.findZero(S) == (r, c)


def test_each_move_swaps_the_blank_with_the_named_tile():
    for r, c in ref.POSITIONS:
        for S in all_states_with_blank_at(r, c, count=2):
            if r < 2:
                assert ref.moveUp(S, r, c) == swapped(S, (r, c), (r + 1, c))
                assert ref.moveDown(ref.moveUp(S, r, c), r + 1, c) == S
            if r > 0:
                assert ref.moveDown(S, r, c) == swapped(S, (r, c), (r - 1, c))
            if c > 0:
                assert ref.moveRight(S, r, c) == swapped(S, (r, c), (r, c - 1))
                assert ref.moveLeft(ref.moveRight(S, r, c), r, c - 1) == S
            if c < 2:
                assert ref.moveLeft(S, r, c) == swapped(S, (r, c), (r, c + 1))


def test_next_states_is_the_set_of_neighbours_with_two_three_or_four_members():
    sizes = {}
    for r, c in ref.POSITIONS:
        for S in all_states_with_blank_at(r, c, count=3):
            successors = ref.nextStates(S)
            assert type(successors) is set and successors == neighbours(S)
            sizes[(r, c)] = len(successors)
    assert sorted(sizes.values()) == [2, 2, 2, 2, 3, 3, 3, 3, 4]


def test_list_and_tuple_conversions_are_inverse_and_fresh():
    lists = ref.listOfLists(ref.Start)
    assert lists == [[8, 0, 6], [5, 4, 7], [2, 3, 1]] and all(type(row) is list for row in lists)
    assert ref.tupleOfTuples(lists) == ref.Start and all(type(row) is tuple for row in ref.tupleOfTuples(lists))
    lists[0][0] = 99
    assert ref.listOfLists(ref.Start)[0][0] == 8


def test_reference_search_finds_a_shortest_path(plan, distance_to_goal):
    path = codec.decode(plan.expected["solve.seed-start"].value)    # search(nextStates, Start, Goal), computed once
    assert len(path) == 32
    assert_legal_path(path, ref.Start, ref.Goal)
    path = ref.search(ref.nextStates, ref.Medium, ref.Goal)
    assert len(path) - 1 == distance_to_goal[ref.Medium]
    assert ref.search(ref.nextStates, ref.Goal, ref.Goal) == (ref.Goal,)


def test_reference_search_returns_none_for_an_unreachable_goal():
    def along_the_top_row(S):
        return {t for t in neighbours(S) if blank(t)[0] == 0}

    assert ref.search(along_the_top_row, ref.Goal, ref.Start) is None
    assert ref.search(along_the_top_row, ref.Goal, ref.moveLeft(ref.moveLeft(ref.Goal, 0, 0), 0, 1))[-1][0] == (1, 2, 0)


# ---------------------------------------------------------------------------
# The support module: the notebook's `search`
# ---------------------------------------------------------------------------

def seed_layer_counts() -> list[int]:
    """The layer sizes the course's Breadth-First-Fast printed in the seed's saved output (cut by the dump)."""
    nb = nbformat.read(SEED, as_version=4)
    text = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   and "search(nextStates" in cell.source for out in cell.outputs)
    return [int(k) for k in re.findall(r"Iteration \d+: (\d+) new states found\.", text)]


def test_support_search_prints_the_seeds_layers_and_finds_its_32_states():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        path = support.search(ref.nextStates, ref.Start, ref.Goal)
    assert len(path) == 32
    assert_legal_path(path, ref.Start, ref.Goal)
    counts = [int(k) for k in re.findall(r"Iteration \d+: (\d+) new states found\.", printed.getvalue())]
    expected = seed_layer_counts()
    assert len(expected) >= 27 and counts[:len(expected)] == expected
    assert len(counts) == 31


def test_support_search_handles_lists_of_successors_trivial_and_unreachable_goals():
    with contextlib.redirect_stdout(io.StringIO()):
        assert support.search(lambda s: sorted(neighbours(s)), ref.Goal, ref.Goal) == (ref.Goal,)
        assert len(support.search(lambda s: sorted(neighbours(s)), ref.Middle, ref.Start)) == 2
        assert support.search(lambda s: set(), ref.Start, ref.Goal) is None


# ---------------------------------------------------------------------------
# The goal check, mistakes and generators
# ---------------------------------------------------------------------------

def test_check_goal_accepts_only_the_tuple_goal_and_explains_common_slips():
    assert ref.check_goal(ref.Goal, ref.Goal) == (True, "")
    ok, message = ref.check_goal(ref.BLANK_LAST, ref.Goal)
    assert not ok and "blank last" in message
    ok, message = ref.check_goal([list(row) for row in ref.Goal], ref.Goal)
    assert not ok and "tuple of tuples" in message
    ok, message = ref.check_goal(tuple(list(row) for row in ref.Goal), ref.Goal)
    assert not ok and "tuple of tuples" in message
    assert not ref.check_goal(None, ref.Goal)[0]
    assert not ref.check_goal(tuple(tuple(bool(t) if t == 1 else t for t in row) for row in ref.Goal), ref.Goal)[0]
    assert not ref.check_goal(ref.Start, ref.Goal)[0]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """Expected values are computed once (the seed's search takes about a second) and shared by all tests."""
    return tmp_path_factory.mktemp("sliding-cache")


@pytest.fixture(scope="module")
def plan(cache):
    """The rubric's cases with the reference's answers and each known mistake's answer (the grader's own plan)."""
    return build_plan(load_rubric(RUBRIC), cache)


def test_every_known_mistake_differs_from_the_reference_on_some_case_of_its_exercise(plan):
    for exercise in plan.rubric.exercises:
        for mistake in exercise.mistakes:
            differing = [case.id for case in plan.cases[exercise.id]
                         if (answer := dict(plan.expected[case.id].mistakes).get(mistake.reference)) is not None
                         and codec.same(plan.expected[case.id].value, answer) is not None]
            assert differing, f"{exercise.id}: {mistake.reference} is never recognisable"


def test_no_case_accepts_the_answer_of_a_stub(plan):
    """Stubs return None and the template's goal is None: no expected value may be None."""
    for cases in plan.cases.values():
        for case in cases:
            assert codec.decode(plan.expected[case.id].value) is not None, case.id


def test_wrapping_moves_find_a_strictly_shorter_path_from_medium(distance_to_goal):
    """So a nextStates that wraps around the board fails solve.medium whatever order its sets come in."""
    assert len(ref.search(ref.nextStates_wrapping, ref.Medium, ref.Goal)) - 1 < distance_to_goal[ref.Medium]


GENERATORS = ["random_states", "random_lists", "random_up", "random_down", "random_right", "random_left"]


@pytest.mark.parametrize("name", GENERATORS)
def test_generators_are_deterministic_for_a_seed(name):
    generator = getattr(ref, name)
    first = generator(random.Random(7), 6)
    assert first == generator(random.Random(7), 6) and len(first) == 6
    assert first != generator(random.Random(8), 6)


def test_generated_states_put_the_blank_on_every_square_and_moves_are_legal():
    assert {ref.findZero(c["state"]) for c in ref.random_states(random.Random(1), 9)} == set(ref.POSITIONS)
    for c in ref.random_lists(random.Random(2), 9):
        assert type(c["rows"]) is list and sorted(t for row in c["rows"] for t in row) == list(range(9))
    for name, legal in (("random_up", lambda r, c: r < 2), ("random_down", lambda r, c: r > 0),
                        ("random_right", lambda r, c: c > 0), ("random_left", lambda r, c: c < 2)):
        cases = getattr(ref, name)(random.Random(3), 6)
        assert {(c["r"], c["c"]) for c in cases} == {p for p in ref.POSITIONS if legal(*p)}
        assert all(ref.findZero(c["state"]) == (c["r"], c["c"]) for c in cases)


# ---------------------------------------------------------------------------
# The reference module as a submission, the rubric's fixtures
# ---------------------------------------------------------------------------

def test_reference_module_has_no_top_level_calls():
    """Graded as a submission, only imports, defs and data assignments survive extraction."""
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    for node in tree.body[1:]:      # [0] is the docstring
        assert isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign)), ast.dump(node)[:80]
        if isinstance(node, ast.Assign):
            assert not [c for c in ast.walk(node.value) if isinstance(c, ast.Call)], f"line {node.lineno}"


def test_fixtures_are_literals_and_goal_is_not_one():
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    literals = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                literals[node.targets[0].id] = ast.literal_eval(node.value)
    for name in RUBRIC_DATA["fixtures"]:
        assert literals[name] == getattr(ref, name), name
    graded = {e["function"] for e in RUBRIC_DATA["exercises"]}
    assert not graded & set(RUBRIC_DATA["fixtures"])    # a fixture would replace the notebook's own value


def test_rubric_points_sum_to_twenty_and_every_exercise_is_public_and_hidden():
    assert sum(e["points"] for e in EXERCISES.values()) == 20
    for exercise in EXERCISES.values():
        visibilities = {c.get("visibility", "public") for c in exercise["cases"]}
        assert visibilities == ({"public"} if exercise["id"] == "goal" else {"public", "hidden"}), exercise["id"]


# ---------------------------------------------------------------------------
# Notebooks
# ---------------------------------------------------------------------------

def test_bundled_seed_is_the_seed_notebook_unchanged():
    assert SEED.read_bytes() == SEED_FIXTURE.read_bytes()


def test_template_is_unexecuted_and_stubs_every_graded_function():
    nb = nbformat.read(ASSIGNMENT / "template.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is None and c.outputs == [] for c in code)
    functions, data = {}, {}
    for cell in code:
        tree = ast.parse("\n".join("" if line.startswith("%") else line for line in cell.source.splitlines()))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                data[node.targets[0].id] = node.value
    for exercise in EXERCISES.values():
        if exercise["id"] == "goal":
            assert ast.literal_eval(data["goal"]) is None
        else:
            assert is_stub(functions[exercise["function"]]), exercise["id"]
    assert "%run Breadth-First-Fast.ipynb" in [c.source for c in code]


# The template's text differs from the seed's only where the course's text is fixed (see README.md).
TEXT_EDITS = {"cell-020", "cell-023", "cell-030"}


def test_template_is_the_seed_with_outputs_cleared_and_graded_cells_stubbed():
    """The master holds the seed's text and given code: apart from the graded cells and the text edits the
    README lists, every template cell is the seed's cell of the same id."""
    build = load_reference(ASSIGNMENT / "build_examples.py")
    seed = {cell.id: cell for cell in nbformat.read(SEED, as_version=4).cells}
    template = nbformat.read(ASSIGNMENT / "template.ipynb", as_version=4)
    assert [cell.id for cell in template.cells] == list(seed)
    for cell in template.cells:
        if cell.id not in build.SLOTS and cell.id not in TEXT_EDITS:
            assert (cell.cell_type, cell.source) == (seed[cell.id].cell_type, seed[cell.id].source), cell.id
    edited = {cell.id for cell in template.cells if cell.id in TEXT_EDITS and cell.source != seed[cell.id].source}
    assert edited == TEXT_EDITS


def test_notebooks_are_what_build_examples_makes():
    build = load_reference(ASSIGNMENT / "build_examples.py")
    examples = build.example_submissions()
    for name, nb in examples.items():
        assert nb == nbformat.read(ASSIGNMENT / "submissions" / f"{name}.ipynb", as_version=4), name
    bundled = {p.stem for p in (ASSIGNMENT / "submissions").glob("*.ipynb")}
    assert bundled == set(examples) | {"seed-002"}


# ---------------------------------------------------------------------------
# End to end: the real grader on the rubric and every bundled example
# ---------------------------------------------------------------------------

# Total (of 20) and the exercises that lose points, as README.md promises; all others get full marks.
EXPECTED = {
    "seed-002": (20, {}),
    "correct": (20, {}),
    "goal-blank-last": (19, {"goal": 0}),
    "moves-reversed": (12, {"moveUp": 0, "moveDown": 0, "moveRight": 0, "moveLeft": 0}),
    "next-states-try-except": (14.3846, {"nextStates": 3 * 6 / 13, "solve": 0}),
    "tuple-of-lists": (15, {"tupleOfTuples": 0, "solve": 0}),
    "find-zero-transposed": (14.8333, {"findZero": 2 * 5 / 12, "solve": 0}),
    "move-left-keeps-tile": (14, {"moveLeft": 0, "solve": 0}),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, cache):
    results = grade([ASSIGNMENT / "submissions"], RUBRIC, tmp_path_factory.mktemp("sliding-results"),
                    jobs=2, cache=cache)
    return {result.submission: result for result in results}


@pytest.mark.slow
def test_rubric_validates_reference_full_marks_template_zero(cache):
    validation = validate(RUBRIC, cache=cache, mutants=1)
    assert validation.ok, validation.problems
    assert validation.reference_result.total == 20
    assert validation.template_result.total == 0


@pytest.mark.slow
@pytest.mark.parametrize("submission", sorted(EXPECTED))
def test_example_scores_what_the_readme_says(graded, submission):
    total, losses = EXPECTED[submission]
    result = graded[submission]
    assert result.max_total == 20
    assert result.total == pytest.approx(total, abs=1e-3)
    full = {e.id: e.max_score for e in result.exercises}
    assert {e.id: e.score for e in result.exercises} == pytest.approx({**full, **losses}, abs=1e-3)


@pytest.mark.slow
def test_the_seeds_search_gives_the_32_states_of_its_notebook(graded):
    case = graded["seed-002"].exercise("solve").cases[0]
    assert case.status == "pass" and case.message == "a valid path of 31 moves"
    assert case.output.startswith("Iteration 1: 3 new states found.\n")


@pytest.mark.slow
def test_known_mistakes_and_helper_isolation_explain_the_losses(graded):
    def messages(submission, exercise):
        return " ".join(c.message for c in graded[submission].exercise(exercise).cases)

    assert "blank last" in messages("goal-blank-last", "goal")
    assert "You moved the blank up" in messages("moves-reversed", "moveUp")
    assert "Check r > 0 before moveDown" in messages("next-states-try-except", "nextStates")
    assert "(column, row)" in messages("find-zero-transposed", "findZero")
    assert "not set to 0" in messages("move-left-keeps-tile", "moveLeft")
    # tupleOfTuples lost its own points, so moveUp is judged again, whole, with the reference's helpers.
    move_up = graded["tuple-of-lists"].exercise("moveUp")
    assert "tupleOfTuples" in move_up.isolated and move_up.score == move_up.max_score
    assert any("judged with the reference's" in note for note in move_up.notes)
    assert "unhashable type: 'list'" in messages("tuple-of-lists", "solve")
