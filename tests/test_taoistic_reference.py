"""Tests of the Taoistic Search course content: reference module, Set.py, rubric and notebooks."""

from __future__ import annotations

import ast
import itertools
import heapq
import random
from collections import deque
from pathlib import Path

import nbformat
import pytest
import yaml

from grader.plan.cases import load_reference
ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference" / "taoistic_search.py"
RUBRIC = ROOT / "rubrics" / "taoistic-search.yaml"
ASSIGNMENT = ROOT / "assignments" / "taoistic-search"


ref = load_reference(REFERENCE)
SetModule = load_reference(ASSIGNMENT / "support" / "Set.py")
RUBRIC_DATA = yaml.safe_load(RUBRIC.read_text(encoding="utf-8"))
EXERCISES = RUBRIC_DATA["exercises"]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def bfs_moves(start, goal) -> int | None:
    """Length of a shortest path by breadth-first search (independent of the reference's A*)."""
    seen = {start}
    frontier = deque([(start, 0)])
    while frontier:
        state, dist = frontier.popleft()
        if ref.matches(goal, state):
            return dist
        for ns in ref.next_states(state):
            if ns not in seen:
                seen.add(ns)
                frontier.append((ns, dist + 1))
    return None


def naive_search(start, goal, next_states, heuristic):
    """A student's path-copying A* (as in the 2023 seed notebook); also counts the states it expands."""
    visited = set()
    queue = [(heuristic(start, goal), [start])]
    while queue:
        _, path = heapq.heappop(queue)
        state = path[-1]
        if state in visited:
            continue
        if ref.matches(goal, state):
            return path, len(visited)
        for ns in next_states(state):
            if ns not in visited:
                heapq.heappush(queue, (heuristic(ns, goal) + len(path), path + [ns]))
        visited.add(state)
    return None, len(visited)


def assert_legal_path(path, start, goal):
    assert path[0] == start
    for a, b in itertools.pairwise(path):
        assert b in ref.next_states(a)
    assert ref.matches(goal, path[-1])


def rubric_cases():
    """(exercise, case, variables) for every case of the rubric, generated ones expanded."""
    for exercise in EXERCISES:
        for case in exercise["cases"]:
            if "generate" in case:
                generator = getattr(ref, case["generate"])
                for variables in generator(random.Random(case["seed"]), case["count"]):
                    yield exercise, case, variables
            else:
                yield exercise, case, {}


def case_id(item) -> str:
    exercise, case, variables = item
    return f"{exercise['id']}:{case.get('generate', case['call'])}"


CASES = list(rubric_cases())


class module_globals:
    """Set module globals of the reference for the duration of a with block, as a case's `set:` does."""

    def __init__(self, module, values: dict):
        self.module, self.values, self.saved = module, values, {}

    def __enter__(self):
        for name, value in self.values.items():
            self.saved[name] = getattr(self.module, name)
            setattr(self.module, name, value)

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            setattr(self.module, name, value)


def evaluate_case(exercise, case, variables):
    """Evaluate a case the way the rubric says, in plain Python against the reference module.

    Namespace: the reference module's dict + the fixtures + the generated variables. Returns
    (args, result, probes).
    """
    fixtures = {name: getattr(ref, name) for name in RUBRIC_DATA["fixtures"]}
    data = {**fixtures, **variables}
    namespace = {**vars(ref), **data}
    settings = {name: eval(expr, namespace) for name, expr in (case.get("set") or {}).items()}
    with module_globals(ref, settings):
        namespace = {**vars(ref), **data}
        call = case["call"]
        args = eval("(lambda *a, **k: a)" + call[call.index("("):], namespace)
        result = eval(call, namespace)
        probes = {name: eval(expr, {**namespace, "result": result})
                  for name, expr in (case.get("probe") or {}).items()}
    return args, result, probes


def check_of(exercise, case):
    """The case's check: a reference check function's mapping, or the name of a built-in check (a built-in given
    with options, `{name: equal, any_number_type: true}`, is that built-in)."""
    check = case.get("check", exercise.get("check", "equal"))
    if isinstance(check, dict) and check["name"] in ("equal", "unordered"):
        return check["name"]
    return check


# ---------------------------------------------------------------------------
# The reference's search and main
# ---------------------------------------------------------------------------

def test_search_finds_paths_as_short_as_breadth_first_search():
    problems = [(ref.Start1, ref.Goal1)]
    problems += [(c["start"], c["goal"]) for c in ref.random_search(random.Random(99), 12)]
    for start, goal in problems:
        path = ref.search(start, goal, ref.next_states, ref.manhattan)
        assert_legal_path(path, start, goal)
        assert len(path) - 1 == bfs_moves(start, goal)


def test_search_is_optimal_on_a_3x3_puzzle_too():
    goal = (('0', '1', '2'), ('3', '4', '5'), ('6', '7', '8'))
    rng = random.Random(5)
    for _ in range(5):
        state = goal
        for _ in range(30):
            state = rng.choice(sorted(ref.next_states(state)))
        path = ref.search(state, goal, ref.next_states, ref.manhattan)
        assert_legal_path(path, state, goal)
        assert len(path) - 1 == bfs_moves(state, goal)


def test_search_returns_none_when_no_state_matches_the_goal():
    unsolvable = (('0', '1'), ('3', '2'))      # two tiles swapped on a 2x2 board
    assert ref.search(unsolvable, (('0', '1'), ('2', '3')), ref.next_states, ref.manhattan) is None


def test_search_returns_the_start_alone_when_it_already_matches():
    assert ref.search(ref.Goal, ref.Goal1, ref.next_states, ref.manhattan) == [ref.Goal]


def test_main_solves_the_notebooks_start_with_legal_moves_ending_in_goal():
    solution = ref.main()
    assert_legal_path(solution, ref.Start, ref.Goal)
    assert solution[-1] == ref.Goal
    assert ref.S1 in solution and ref.S2 in solution   # the states the notebook shows after stages 1 and 2


@pytest.mark.parametrize("easy", ["EasyStart", "EasyStart2"])
def test_main_reads_start_at_call_time(monkeypatch, easy):
    start = getattr(ref, easy)
    monkeypatch.setattr(ref, "Start", start)
    solution = ref.main()
    assert_legal_path(solution, start, ref.Goal)


@pytest.mark.parametrize("easy", ["EasyStart", "EasyStart2"])
def test_easy_starts_are_easy_for_a_naive_student_search(easy):
    """The stages of main on the easy starts stay small for a path-copying A* (expansions, not seconds)."""
    state = getattr(ref, easy)
    for pattern in ref.Patterns:
        extended = ref.replace_numbers(state, ref.find_numbers(pattern) + ['0'])
        path, expanded = naive_search(extended, pattern, ref.next_states, ref.manhattan)
        assert expanded < 1500
        state = ref.apply_move_list(state, ref.extract_move_list(path))[-1]
    assert state == ref.Goal


# ---------------------------------------------------------------------------
# The other graded functions
# ---------------------------------------------------------------------------

def test_move_dir_moves_the_blank_along_the_row_for_dx():
    assert ref.move_dir(ref.Start, 0, 0, 1, 0)[0][:2] == ('14', '0')
    assert ref.move_dir(ref.Start, 0, 0, 0, 1) == ref.StartDown


def test_next_states_has_two_three_or_four_successors():
    assert len(ref.next_states(ref.Start)) == 2
    assert len(ref.next_states(ref.move_dir(ref.Start, 0, 0, 1, 0))) == 3
    assert len(ref.next_states(ref.S1)) == 4


def test_matches_treats_wildcards_of_the_pattern_only_as_jokers():
    assert ref.matches(ref.Goal1, ref.Goal)
    assert not ref.matches(ref.Goal1, ref.Start1)       # '*' in the state is not '14'
    assert ref.matches(ref.Goal1, ref.Goal1)


def test_manhattan_ignores_the_blank_and_wildcards():
    assert ref.manhattan(ref.S1, ref.Goal1) == 0
    renamed = ref.replace_numbers(ref.Goal, [str(k) for k in range(1, 16)])
    assert ref.manhattan(ref.S1, ref.Goal) == ref.manhattan(ref.S1, renamed)
    assert ref.manhattan_with_blank(ref.S1, ref.Goal) == ref.manhattan(ref.S1, ref.Goal) + 4


def test_find_tiles_is_an_alias_of_find_numbers():
    assert ref.find_tiles is ref.find_numbers
    assert ref.find_numbers(ref.Start1) == ['0', '14', '15']


def test_extract_and_apply_move_lists_are_inverse():
    moves = ref.extract_move_list(ref.SeedPath)
    assert ref.apply_move_list(ref.SeedPath[0], moves) == ref.SeedPath
    assert ref.extract_move(ref.Start, ref.StartDown) == (0, 1)


# ---------------------------------------------------------------------------
# Fixtures: literal, consistent, and the module passes the extraction policy
# ---------------------------------------------------------------------------

def test_fixtures_agree_with_the_functions_that_define_them():
    assert ref.intermediate_goals(ref.Goal, ref.TilesList) == ref.Patterns
    assert (ref.Goal1, ref.Goal2) == (ref.Patterns[0], ref.Patterns[1])
    assert ref.replace_numbers(ref.Start, ['14', '15', '0']) == ref.Start1
    assert ref.replace_numbers(ref.S1, ['12', '13', '14', '15', '0']) == ref.Start2
    assert ref.matches(ref.Goal1, ref.S1) and ref.matches(ref.Goal2, ref.S2)
    assert ref.StartDown == ref.move_dir(ref.Start, 0, 0, 0, 1)
    assert ref.S1Left == ref.move_dir(ref.S1, 2, 2, -1, 0)
    assert ref.Start2Up == ref.move_dir(ref.Start2, 2, 2, 0, -1)
    assert_legal_path(ref.SeedPath, ref.Start, ref.SeedPath[-1])
    assert_legal_path(ref.PatternPath, ref.Start1, ref.PatternPath[-1])
    for stage, start in ((3, ref.Start3), (5, ref.Start5), (7, ref.Start7)):
        assert ref.find_numbers(start) != []
        assert set(ref.find_numbers(ref.Patterns[stage - 1])) <= set(ref.find_numbers(start))


def test_module_keeps_only_what_extraction_keeps():
    """Graded as a submission, only imports, defs and data assignments survive: no calls at top level."""
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    for node in tree.body[1:]:      # [0] is the docstring
        assert isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign)), ast.dump(node)[:80]
        if isinstance(node, ast.Assign):
            calls = [c for c in ast.walk(node.value) if isinstance(c, ast.Call)]
            assert not calls, f"line {node.lineno}: a top-level assignment calls something"
            names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            assert not names & defined - {"find_numbers"}, f"line {node.lineno}"


def test_rubric_fixtures_are_literals_of_the_module():
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    literals = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                literals[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    for name in RUBRIC_DATA["fixtures"]:
        assert name in literals, name
        assert literals[name] == getattr(ref, name)


# ---------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------

GENERATORS = sorted({case["generate"] for exercise in EXERCISES for case in exercise["cases"] if "generate" in case})


@pytest.mark.parametrize("name", GENERATORS)
def test_generators_are_deterministic_for_a_seed(name):
    generator = getattr(ref, name)
    first = generator(random.Random(7), 6)
    assert first == generator(random.Random(7), 6)
    assert first != generator(random.Random(8), 6)
    assert len(first) == 6


def test_generated_moves_are_legal_in_todays_convention():
    for case in ref.random_moves(random.Random(1), 30):
        assert ref.find_tile('0', case["state"]) == (case["row"], case["col"])
        moved = ref.move_dir(case["state"], case["row"], case["col"], case["dx"], case["dy"])
        assert moved in ref.next_states(case["state"])
    for case in ref.random_extract(random.Random(2), 30):
        assert case["p2"] in ref.next_states(case["p1"])
        assert ref.find_tile('0', case["p1"]) == (case["row"], case["col"])
    for case in ref.random_move_lists(random.Random(3), 30):
        states = ref.apply_move_list(case["state"], case["moves"])
        assert all(b in ref.next_states(a) for a, b in itertools.pairwise(states))
    for case in ref.random_pattern_paths(random.Random(4), 30):
        states = case["states"]
        assert all(b in ref.next_states(a) for a, b in itertools.pairwise(states))
        assert [ref.find_tile('0', s) for s in states[:-1]] == list(zip(case["rows"], case["cols"], strict=True))


def test_generated_manhattan_states_keep_the_tiles_of_the_pattern():
    with_blank = 0
    for case in ref.random_manhattan(random.Random(5), 30):
        tiles = ref.find_numbers(case["s2"])
        assert all(ref.find_tile(t, case["s1"]) is not None for t in tiles + ['0'])
        with_blank += '0' in tiles
    assert 0 < with_blank < 30


def test_about_half_of_the_generated_patterns_match():
    cases = ref.random_matches(random.Random(4), 40)
    matching = sum(ref.matches(c["pattern"], c["state"]) for c in cases)
    assert 12 <= matching <= 28
    assert any('*' in row for c in cases for row in c["state"])


def test_generated_search_problems_are_small_for_a_naive_search():
    for case in ref.random_search(random.Random(10), 12):
        moves = bfs_moves(case["start"], case["goal"])
        assert 1 <= moves <= 12
        path, expanded = naive_search(case["start"], case["goal"], ref.next_states, ref.manhattan)
        assert len(path) - 1 == moves
        assert expanded < 1500
        assert 2 <= len(ref.find_numbers(case["start"])) - 1 <= 4


# ---------------------------------------------------------------------------
# Known mistakes and relational checks
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.get("mistakes")], ids=lambda e: e["id"])
def test_every_mistake_differs_from_the_reference_on_some_rubric_case(exercise):
    for mistake in exercise["mistakes"]:
        wrong = getattr(ref, mistake["reference"])
        differs = 0
        for ex, case, variables in CASES:
            if ex is not exercise:
                continue
            args, result, _ = evaluate_case(ex, case, variables)
            try:
                differs += wrong(*args) != result
            except (IndexError, TypeError):
                differs += 1
        assert differs, mistake["reference"]


def test_check_extract_move_accepts_a_move_consistent_with_the_notebooks_move_dir():
    P1, P2 = ref.Start, ref.StartDown
    transposed = (1, 0)                          # the 2020/21 move_dir moves the blank down with dx = 1
    probes = {"applied": ref.move_dir_transposed(P1, 0, 0, *transposed)}
    assert ref.check_extract_move(transposed, [P1, P2], probes, {"convention": "notebook"})[0]
    assert ref.check_extract_move(transposed, [P1, P2], probes, {"convention": "either"})[0]
    assert not ref.check_extract_move(transposed, [P1, P2], probes, {"convention": "reference"})[0]
    assert ref.check_extract_move((0, 1), [P1, P2], {}, {})[0]


def test_check_extract_move_explains_failures():
    P1, P2 = ref.Start, ref.StartDown
    ok, message = ref.check_extract_move((0, -1), [P1, P2], {"applied": IndexError("list index out of range")},
                                         {"convention": "notebook"})
    assert not ok and "your move_dir raised IndexError" in message
    ok, message = ref.check_extract_move([0, 1], [P1, P2], {}, {})
    assert not ok and "tuple of two ints" in message
    ok, message = ref.check_extract_move(None, [P1, P2], {}, {})
    assert not ok
    with pytest.raises(ValueError):
        ref.check_extract_move((0, 1), [P1, P2], {}, {"convention": "sideways"})


def test_check_extract_move_list_judges_every_step():
    states = ref.SeedPath
    moves = ref.extract_move_list(states)
    assert ref.check_extract_move_list(moves, [states], {}, {}) == (True, "")
    wrong = moves[:2] + [ref.extract_move_of_tile(states[2], states[3])] + moves[3:]
    ok, message = ref.check_extract_move_list(wrong, [states], {}, {})
    assert not ok and message.startswith("move 2 ")
    ok, message = ref.check_extract_move_list(moves[:-1], [states], {}, {})
    assert not ok and "need 4 moves" in message
    old = [(dy, dx) for dx, dy in moves]
    applied = [ref.move_dir_transposed(s, *ref.find_tile('0', s), *m) for s, m in zip(states[:-1], old, strict=True)]
    assert ref.check_extract_move_list(old, [states], {"applied": applied}, {"convention": "either"})[0]


# ---------------------------------------------------------------------------
# The rubric against the reference
# ---------------------------------------------------------------------------

def test_rubric_points_sum_to_thirty_and_every_exercise_has_public_and_hidden_cases():
    assert sum(e["points"] for e in EXERCISES) == 30
    for exercise in EXERCISES:
        visibilities = [c.get("visibility", "public") for c in exercise["cases"]]
        # main is end to end and slow to fail (a hanging search costs case_seconds): one public case
        assert visibilities.count("public") >= (1 if exercise["id"] == "main" else 2), exercise["id"]
        assert "hidden" in visibilities, exercise["id"]
        assert hasattr(ref, exercise["function"])
        for name in exercise.get("aliases", []) + exercise.get("isolate", []):
            assert hasattr(ref, name)


@pytest.mark.parametrize("item", CASES, ids=case_id)
def test_every_rubric_case_evaluates_against_the_reference(item):
    exercise, case, variables = item
    args, result, probes = evaluate_case(exercise, case, variables)
    if "expect" in case:
        assert eval(case["expect"], {**vars(ref), **variables}) == result
    check = check_of(exercise, case)
    if isinstance(check, dict) and check["name"] == "path":
        namespace = {**vars(ref), **variables, "args": args}
        start, goal = (eval(str(check[k]), namespace) for k in ("start", "goal"))
        assert_legal_path(result, start, goal)
        assert callable(getattr(ref, check["next_states"]))
    elif isinstance(check, dict):
        options = {k: v for k, v in check.items() if k != "name"}
        verdict = getattr(ref, check["name"])(got=result, args=list(args), probes=probes, options=options)
        assert verdict == (True, ""), verdict


@pytest.mark.parametrize("item", CASES, ids=case_id)
def test_a_stub_answer_fails_every_rubric_case(item):
    """Template stubs return None: no case may accept None, so the template scores zero."""
    exercise, case, variables = item
    args, result, probes = evaluate_case(exercise, case, variables)
    assert result is not None
    check = check_of(exercise, case)
    if isinstance(check, dict) and check["name"] != "path":
        options = {k: v for k, v in check.items() if k != "name"}
        assert not getattr(ref, check["name"])(got=None, args=list(args), probes={}, options=options)[0]


# ---------------------------------------------------------------------------
# Set.py (the 2020/21 frontier)
# ---------------------------------------------------------------------------

def test_set_behaves_like_a_sorted_list_under_random_operations():
    rng = random.Random(11)
    s, model = SetModule.Set(), []
    for _ in range(5000):
        x = rng.randint(0, 200)
        operation = rng.random()
        if operation < 0.4:
            s.insert(x)
            if x not in model:
                model.append(x)
                model.sort()
        elif operation < 0.65:
            s.delete(x)
            if x in model:
                model.remove(x)
        elif operation < 0.8:
            if model:
                assert s.pop() == model.pop(0)
            else:
                with pytest.raises(IndexError):
                    s.pop()
        else:
            assert s.member(x) == (x in model)
        assert len(s) == len(model)
        assert s.isEmpty() == (not model)
    assert list(s) == model


def test_set_stays_balanced_when_filled_in_order():
    s = SetModule.Set()
    for x in range(4096):
        s.insert(x)
    assert s._root.height <= 14          # an AVL tree of 4096 nodes has height 13 or 14; a list would have 4096
    for x in range(0, 4096, 2):
        s.delete(x)
    assert list(s) == list(range(1, 4096, 2))


def test_set_pops_frontier_pairs_by_estimate_and_prints_nicely():
    s = SetModule.Set()
    assert repr(s) == "Set()"
    for pair in [(5, ref.Start), (3, ref.Goal), (5, ref.S1), (3, ref.Goal)]:
        s.insert(pair)
    assert len(s) == 3 and s.member((5, ref.S1)) and (5, ref.S1) in s
    assert s.pop() == (3, ref.Goal)
    assert repr(SetModule.Set()) == "Set()"
    t = SetModule.Set()
    t.insert(2)
    t.insert(1)
    assert repr(t) == "{1, 2}"


def test_the_2020_21_search_with_set_finds_optimal_paths():
    """The search given in the 2020/21 notebook, run on this Set, agrees with the reference's lengths."""
    Set = SetModule

    def path_to(state, parent):
        path = [state]
        while parent[path[-1]] != path[-1]:
            path.append(parent[path[-1]])
        return path[::-1]

    def search(start, goal, next_states, heuristic):
        parent, distance = {start: start}, {start: 0}
        estimate = {start: heuristic(start, goal)}
        frontier = Set.Set()
        frontier.insert((estimate[start], start))
        while not frontier.isEmpty():
            _, state = frontier.pop()
            if ref.matches(goal, state):
                return path_to(state, parent)
            for ns in next_states(state):
                old = estimate.get(ns)
                new = distance[state] + 1 + heuristic(ns, goal)
                if old is None or new < old:
                    parent[ns], distance[ns], estimate[ns] = state, distance[state] + 1, new
                    frontier.insert((new, ns))
                    if old is not None:
                        frontier.delete((old, ns))
        return None

    for case in ref.random_search(random.Random(3), 8) + [{"start": ref.Start1, "goal": ref.Goal1}]:
        path = search(case["start"], case["goal"], ref.next_states, ref.manhattan)
        assert_legal_path(path, case["start"], case["goal"])
        assert len(path) == len(ref.search(case["start"], case["goal"], ref.next_states, ref.manhattan))


# ---------------------------------------------------------------------------
# Template and example submissions
# ---------------------------------------------------------------------------

def test_template_is_valid_unexecuted_and_stubs_every_graded_function():
    nb = nbformat.read(ASSIGNMENT / "template.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is None and c.outputs == [] for c in code)
    stubs = {}
    for cell in code:
        tree = ast.parse("\n".join("" if line.startswith("%") else line for line in cell.source.splitlines()))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                stubs[node.name] = ast.get_source_segment(cell.source, node.body[0]) if len(node.body) == 1 else None
    for exercise in EXERCISES:
        if exercise["id"] != "main":
            assert stubs[exercise["function"]] == '"your code here"', exercise["id"]
    assert stubs["main"] is None                 # given, not a stub


def test_notebooks_are_what_build_examples_makes():
    """template.ipynb and the example submissions are rebuilt outputs of build_examples.py, kept in sync."""
    build = load_reference(ASSIGNMENT / "build_examples.py")
    assert build.template() == nbformat.read(ASSIGNMENT / "template.ipynb", as_version=4)
    for name, nb in build.example_submissions().items():
        assert nb == nbformat.read(ASSIGNMENT / "submissions" / f"{name}.ipynb", as_version=4), name
