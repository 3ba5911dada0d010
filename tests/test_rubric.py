"""Rubric loading: a valid YAML rubric becomes frozen dataclasses; an invalid one fails with file:line: reason."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.rubric.schema import Policy
from grader.rubric.schema import MAX_SECONDS, CheckSpec, Limits, Mistake, RubricError, load_rubric
from testclock import within

FIXTURES = Path(__file__).parent / "fixtures" / "rubrics"
MINI = FIXTURES / "mini.yaml"
BROKEN = FIXTURES / "broken.yaml"


def write_rubric(folder: Path, text: str, name: str = "rubric.yaml") -> Path:
    """A rubric file next to a copy of the mini reference module; `text` starts at line 1."""
    shutil.copy(FIXTURES / "mini_reference.py", folder / "mini_reference.py")
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    """The problems a rubric fails with, each checked to start with the file name and stripped of it."""
    with pytest.raises(RubricError) as failure:
        load_rubric(path)
    problems = failure.value.problems
    assert all(problem.startswith(f"{path}:") for problem in problems), problems
    assert str(failure.value) == "\n".join(problems)
    return [problem[len(f"{path}:"):] for problem in problems]


# ---------------------------------------------------------------- every problem of a file, each at its line


def test_broken_rubric_reports_every_problem_at_once_each_at_its_own_line() -> None:
    assert problems_of(BROKEN) == [
        "6: rubric: unknown limit 'case_secnds' (did you mean 'case_seconds'?)",
        "7: rubric: limit 'memory_mb': expected a positive number, got 'lots'",
        "10: exercise 'double': unknown key 'poinst' (did you mean 'points'?)",
        "11: exercise 'double': unknown scoring 'proportionnal' (did you mean 'proportional'?)",
        "14: exercise 'double', case 1: unknown visibility 'pubic' (did you mean 'public'?)",
        "15: exercise 'double', case 2: case has no 'call'",
        "16: exercise 'double', case 3: call: not a Python expression: '(' was never closed in 'double(3'",
        "22: exercise 'double', case 6: 'seed' only applies to generated cases (add 'generate')",
        "19: exercise 'double': duplicate case id 'four' (first at line 17)",
        "24: exercise 'double': check must be a name or a mapping with 'name'",
        "23: duplicate exercise id 'double' (first at line 9)",
    ]


HEADER = """\
assignment: t
reference: mini_reference.py
exercises:
  - id: double
"""


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param("""\
    poinst: 2
    cases:
      - call: double(1)
""", ["5: exercise 'double': unknown key 'poinst' (did you mean 'points'?)"], id="misspelled_exercise_key"),
    pytest.param("""\
    cases:
      - call: double(1)
        wieght: 2
""", ["7: exercise 'double', case 1: unknown key 'wieght' (did you mean 'weight'?)"], id="misspelled_case_key"),
    pytest.param("""\
    scoring: all-or-nothing
    cases:
      - call: double(1)
""", ["5: exercise 'double': unknown scoring 'all-or-nothing' (did you mean 'all_or_nothing'?)"],
        id="unknown_scoring"),
    pytest.param("""\
    cases:
      - call: double(1)
        visibility: secret
""", ["7: exercise 'double', case 1: unknown visibility 'secret'"], id="unknown_visibility_without_close_match"),
    pytest.param("""\
    cases:
      - call: double(1)
      - id: no-call
        visibility: hidden
""", ["7: exercise 'double', case 2: case has no 'call'"], id="case_without_call"),
    pytest.param("""\
    cases:
      - call: double(1)
      - call: double(1) +
""", ["7: exercise 'double', case 2: call: not a Python expression: invalid syntax in 'double(1) +'"],
        id="call_that_is_not_python"),
    pytest.param("""\
    cases:
      - call: "x = 1"
""", ["6: exercise 'double', case 1: call: not a Python expression: invalid syntax in 'x = 1'"],
        id="call_that_is_a_statement"),
    pytest.param("""\
    cases:
      - call: double(1)
        count: 3
""", ["7: exercise 'double', case 1: 'count' only applies to generated cases (add 'generate')"],
        id="count_without_generate"),
    pytest.param("""\
    cases:
      - call: double(1)
        id: same
      - call: double(2)
      - call: double(3)
        id: same
""", ["9: exercise 'double': duplicate case id 'same' (first at line 6)"], id="duplicate_case_id"),
    pytest.param("""\
    limits: {case_seconds: fast}
    cases:
      - call: double(1)
""", ["5: exercise 'double': limit 'case_seconds': expected a positive number, got 'fast'"], id="non_numeric_limit"),
    # YAML's .nan and .inf are floats: a NaN case limit failed every student, an infinite memory limit ended `grade`
    # in a traceback, NaN points scored the class 0 with exit 0. A timer of 1e10 s is past setitimer's range: the
    # child exited at every case (a class graded 0, exit 0); an rlimit of 1e13 MB past a C long: nothing loaded.
    pytest.param("""\
    points: .nan
    limits: {case_seconds: .nan, memory_mb: .inf, submission_seconds: -.inf}
    cases:
      - call: double(1)
""", ["5: exercise 'double': points: expected a number >= 0, got nan",
      "6: exercise 'double': limit 'case_seconds': expected a positive number, got nan",
      "6: exercise 'double': limit 'memory_mb': expected a positive number, got inf",
      "6: exercise 'double': limit 'submission_seconds': expected a positive number, got -inf"],
        id="limits_and_points_not_finite"),
    pytest.param("""\
    limits:
      case_seconds: 10000000000
      load_seconds: 10000000000
      case_factor: 1000000000000
      memory_mb: 10000000000000
      files: 100000000000000000000
    cases:
      - call: double(1)
""", ["6: exercise 'double': limit 'case_seconds': at most 1,000,000, got 10000000000 (past it the sandbox cannot "
      "apply it)",
      "7: exercise 'double': limit 'load_seconds': at most 1,000,000, got 10000000000 (past it the sandbox cannot "
      "apply it)",
      "8: exercise 'double': limit 'case_factor': at most 1,000,000, got 1000000000000 (past it the sandbox cannot "
      "apply it)",
      "9: exercise 'double': limit 'memory_mb': at most 16,777,216, got 10000000000000 (past it the sandbox cannot "
      "apply it)",
      "10: exercise 'double': limit 'files': at most 2,147,483,647, got 100000000000000000000 (past it the sandbox "
      "cannot apply it)"], id="limits_past_what_the_sandbox_applies"),
    pytest.param("""\
    limits:
      timeout: 3
    cases:
      - call: double(1)
""", ["6: exercise 'double': unknown limit 'timeout' (did you mean 'max_timeouts'?)"], id="unknown_limit_name"),
    pytest.param("""\
    mistakes:
      - reference: double_wrong
        sy: "Twice, not once."
    cases:
      - call: double(1)
""", ["6: exercise 'double': mistakes: unknown key 'sy' (did you mean 'say'?); each entry needs exactly the keys "
      "reference, say"], id="misspelled_mistake_key"),
    pytest.param("""\
    error_hints:
      - mach: TypeError
        say: "Return a number."
    cases:
      - call: double(1)
""", ["6: exercise 'double': error_hints: unknown key 'mach' (did you mean 'match'?); each entry needs the keys "
      "match, say (and may have when)"], id="misspelled_error_hint_key"),
    pytest.param("""\
    error_hints:
      - match: TypeError
        when: {double: fine}
        say: "Return a number."
    cases:
      - call: double(1)
""", ["7: exercise 'double': error hint 'when' must map exercise ids to right or wrong"], id="error_hint_when_verdict"),
    pytest.param("""\
    error_hints:
      - match: TypeError
        when: {double: right}
        say: "Return a number."
    cases:
      - call: double(1)
""", ["6: exercise 'double': error hint 'TypeError' depends on 'double', which is not an exercise listed before it"],
        id="error_hint_when_looks_back"),
    pytest.param("""\
    check: "equal!"
    cases:
      - call: double(1)
""", ["5: exercise 'double': check 'equal!' is not a name"], id="check_that_is_not_a_name"),
    pytest.param("""\
    cases:
      - call: double(1)
        check:
          tolerance: 0.1
""", ["8: exercise 'double', case 1: check needs a 'name'"], id="check_mapping_without_name"),
    pytest.param("""\
    cases:
      - generate: random_lists
        count: 0
        seed: seven
        call: total(xs)
""", ["7: exercise 'double', case 1: count must be a positive integer, got 0",
      "8: exercise 'double', case 1: seed must be an integer, got 'seven'"], id="bad_count_and_seed"),
    pytest.param("""\
    mistakes:
      - reference: double_plus_one
    cases:
      - call: double(1)
""", ["6: exercise 'double': mistakes: each entry needs exactly the keys reference, say"],
        id="mistake_without_say"),
    pytest.param("""\
    cases: []
""", ["5: exercise 'double': needs a non-empty list of cases"], id="no_cases"),
    pytest.param("""\
    isolate: [Board.h]
    cases:
      - call: double(1)
""", ["5: exercise 'double': isolate: the method Board.h needs a call the reference answers it with: "
      "{method: Board.h, call: <expression over its parameters>}"], id="isolated_method_without_call"),
    pytest.param("""\
    isolate:
      - {method: h, call: "Board(self.size).h()"}
      - {method: Board.h, call: "Board(self.size"}
    cases:
      - call: double(1)
""", ["6: exercise 'double': isolate: 'method' must be Class.method, got 'h'",
      "7: exercise 'double': isolate: method Board.h needs 'call', a Python expression"],
        id="isolated_method_malformed"),
])
def test_exercise_problem_is_reported_with_its_line_and_reason(tmp_path: Path, body: str,
                                                                 expected: list[str]) -> None:
    path = write_rubric(tmp_path, "")
    path.write_text(HEADER + body, encoding="utf-8")
    assert problems_of(path) == expected


def test_a_case_with_a_bad_call_still_has_its_other_problems_reported(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: double
            cases:
              - call: double(
                set: {1: "2"}
                check: "not a name"
        """)
    assert problems_of(path) == [
        "6: exercise 'double', case 1: call: not a Python expression: '(' was never closed in 'double('",
        "7: exercise 'double', case 1: set: '1' is not a name",
        "8: exercise 'double', case 1: check 'not a name' is not a name",
    ]


def test_duplicate_exercise_ids_name_both_lines(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: double
            cases: [{call: double(1)}]
          - id: scaled
            cases: [{call: scaled(1)}]
          - id: double
            cases: [{call: double(2)}]
        """)
    assert problems_of(path) == ["8: duplicate exercise id 'double' (first at line 4)"]


def test_unknown_top_level_key_and_missing_reference_file_are_both_reported(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: ../elsewhere/missing_reference.py
        fixturs: [Start]
        exercises:
          - id: double
            cases: [{call: double(1)}]
        """)
    missing = (tmp_path.parent / "elsewhere" / "missing_reference.py").resolve()
    assert problems_of(path) == [
        "3: rubric: unknown key 'fixturs' (did you mean 'fixtures'?)",
        f"2: 'reference': ../elsewhere/missing_reference.py does not exist (looked for {missing})",
    ]


def test_rubric_without_reference_or_exercises_says_what_is_missing(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        # nothing but an id
        assignment: t
        """)
    assert problems_of(path) == ["2: missing required key 'reference'", "2: needs a non-empty list of 'exercises'"]


def test_missing_template_path_is_reported_at_its_line(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: double
            cases: [{call: double(1)}]
        template: template.ipynb
        """)
    assert problems_of(path) == [
        f"6: 'template': template.ipynb does not exist (looked for {(tmp_path / 'template.ipynb').resolve()})"]


@pytest.mark.parametrize("held", ["link", "hard link", "folder"])
def test_a_support_folder_holding_the_reference_is_refused(tmp_path: Path, held: str) -> None:
    """The sandbox is given the support folder's modules (links followed): the reference there, linked as
    course.py, let a notebook import the answers and the hidden inputs' generators. The old code loaded it."""
    support = tmp_path if held == "folder" else tmp_path / "support"
    support.mkdir(exist_ok=True)
    (support / "Set.py").write_text("class Set: pass\n", encoding="utf-8")
    path = write_rubric(tmp_path, f"""
        assignment: t
        reference: mini_reference.py
        support: {support.name if held != "folder" else "."}
        exercises:
          - id: double
            cases: [{{call: double(1)}}]
        """)
    if held == "link":
        (support / "course.py").symlink_to(tmp_path / "mini_reference.py")
    elif held == "hard link":
        (support / "course.py").hardlink_to(tmp_path / "mini_reference.py")
    name = "mini_reference.py" if held == "folder" else "course.py"
    assert problems_of(path) == [f"3: support: {name} is the reference mini_reference.py (a link or the same file): "
                                 "the support folder goes to the students' code, and with it the answers and hidden "
                                 "inputs; keep the reference out of it"]
    (support / name).unlink()
    if held != "folder":
        assert load_rubric(path).support == support.resolve()


# ---------------------------------------------------------------- YAML that is not a rubric


def test_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: double
            cases:
              - call: double(1)
             points: 2
        """)
    assert problems_of(path) == ["7: expected <block end>, but found '<block mapping start>' (this line is indented "
                                 "differently from the keys above it: the keys of one mapping line up, those of a "
                                 "list item after its '- ')"]


@pytest.mark.parametrize("due", ["2026-13-01", "2026-02-30"])
def test_a_date_that_is_no_date_is_named_at_its_line_not_a_traceback(tmp_path: Path, due: str) -> None:
    """PyYAML reads anything shaped YYYY-MM-DD as a date and let datetime's ValueError escape the loader."""
    path = write_rubric(tmp_path, f"""
        assignment: t
        reference: mini_reference.py
        late: {{due: {due}, per_day: 0.1}}
        exercises:
          - id: double
            cases: [{{call: double(1)}}]
        """)
    [problem] = problems_of(path)
    assert problem.startswith(f"3: '{due}' is not a date (") and problem.endswith("write YYYY-MM-DD, e.g. 2026-11-20")
    shown = subprocess.run([sys.executable, "-m", "grader", "validate", str(path)], capture_output=True, text=True,
                           timeout=within(120))
    assert (shown.returncode, shown.stdout + shown.stderr) == (2, f"{path}:{problem}\n")


def test_duplicate_yaml_key_is_a_syntax_error_at_the_second_key(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        assignment: u
        """)
    assert problems_of(path) == ["3: duplicate key 'assignment'"]


def test_top_level_list_is_not_a_rubric_and_says_where_it_starts(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        # a list, not a mapping
        - assignment: t
        """)
    assert problems_of(path) == ["2: a rubric must be a YAML mapping"]


def test_empty_file_is_not_a_rubric(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, "")
    assert problems_of(path) == ["1: a rubric must be a YAML mapping"]


def test_missing_rubric_file_is_a_rubric_error(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "nowhere.yaml") == ["0: file not found"]


# ---------------------------------------------------------------- a valid rubric


def test_valid_rubric_fills_in_defaults() -> None:
    rubric = load_rubric(MINI)
    scaled = rubric.exercise("scaled")
    assert (scaled.title, scaled.points, scaled.function, scaled.aliases) == ("scaled", 1, "scaled", ())
    assert scaled.scoring == "proportional"
    assert scaled.check == CheckSpec("equal", {}, 32)
    assert (scaled.hints, scaled.error_hints, scaled.mistakes, scaled.isolate) == ((), (), (), ())
    first = scaled.cases[0]
    assert (first.visibility, first.weight, first.check, first.id, first.expect) == ("public", 1, None, None, None)
    assert (first.generate, first.count, first.seed) == (None, 0, 0)
    assert (rubric.template, rubric.support, rubric.submissions) == (None, None, None)


def test_valid_rubric_reads_every_field_it_was_given() -> None:
    rubric = load_rubric(MINI)
    assert (rubric.assignment, rubric.title) == ("mini", "Mini assignment")
    assert rubric.reference == (FIXTURES / "mini_reference.py").resolve()
    assert rubric.fixtures == ("Start", "Goal")
    assert [exercise.id for exercise in rubric.exercises] == ["double", "scaled", "total", "solve", "blanks",
                                                              "parity"]
    double = rubric.exercise("double")
    assert (double.points, double.names, double.line) == (3, ("double", "twice"), 13)
    assert double.hints == ("doubling means times two",)
    assert [(hint.match, hint.say) for hint in double.error_hints] == [("unsupported operand", "x is a number")]
    assert double.mistakes == (Mistake("double_plus_one", "You added one.", 21),
                               Mistake("double_if_small", "Large numbers crash.", 23))
    assert [(case.line, case.call, case.id, case.visibility, case.weight) for case in double.cases] == [
        (26, "double(3)", None, "public", 1),
        (27, "double(len(Start))", "double-len", "hidden", 2),
        (31, "double(500)", None, "public", 1),
    ]
    scaled = rubric.exercise("scaled")
    assert scaled.cases[0].set == (("Scale", "3"),)
    assert scaled.cases[1].expect == "5"
    generated = rubric.exercise("total").cases[0]
    assert (generated.generate, generated.count, generated.seed, generated.call) == ("random_lists", 6, 7, "total(xs)")
    assert rubric.exercise("total").scoring == "all_or_nothing"
    assert rubric.exercise("solve").check == CheckSpec(
        "path", {"next_states": "next_states", "start": "args[0]", "goal": "args[1]", "optimal": True}, 49)
    assert rubric.exercise("blanks").check.name == "unordered"
    assert rubric.exercise("parity").function == "double"
    assert rubric.max_total == 3 + 1 + 1 + 2 + 1 + 1
    with pytest.raises(KeyError):
        rubric.exercise("nope")


def test_exercise_limits_override_rubric_limits_which_override_defaults() -> None:
    rubric = load_rubric(MINI)
    assert rubric.limits == Limits(case_seconds=2.0, memory_mb=512)
    assert type(rubric.limits.memory_mb) is int and type(rubric.limits.case_seconds) is float
    assert rubric.exercise("scaled").limits == Limits(case_seconds=5.0, memory_mb=512)
    assert rubric.exercise("double").limits == rubric.limits


def test_case_timeout_is_the_floor_or_the_factor_times_the_reference_time() -> None:
    limits = Limits(case_seconds=2.0, case_factor=20.0)
    assert limits.case_timeout(0.01) == 2.0
    assert limits.case_timeout(0.5) == 10.0
    assert limits.merged({"case_seconds": 30, "memory_mb": None}).case_timeout(0.5) == 30
    # A factor and a slow reference, each within bounds, multiply past what a timer holds: the bound, not 1e9 s.
    assert Limits(case_factor=1e6).case_timeout(1e4) == MAX_SECONDS
    # Options a library caller gives are held to the same bounds as the rubric and the command line.
    for wrong in ({"case_seconds": 1e10}, {"memory_mb": float("inf")}, {"submission_seconds": float("nan")}):
        with pytest.raises(ValueError, match="not from 0 to"):
            limits.merged(wrong)


def test_extraction_policy_is_parsed() -> None:
    policy = load_rubric(MINI).policy
    assert (policy.allow_calls, policy.drop) == (frozenset({"setup"}), frozenset({"Board"}))


def test_extraction_policy_defaults_to_the_plain_policy(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: double
            cases: [{call: double(1)}]
        """)
    policy = load_rubric(path).policy
    assert (policy.allow_calls, policy.drop) == (Policy().allow_calls, Policy().drop)
    # The slice starts from what the rubric needs: the graded function and every name its cases call.
    assert policy.roots == frozenset({"double"})


def test_fixture_lines_point_at_each_fixture_name(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        fixtures:
          - Start
          - Goal
        exercises:
          - id: double
            cases: [{call: double(1)}]
        """)
    assert load_rubric(path).fixture_lines == (4, 5)
    assert load_rubric(MINI).fixture_lines == (5, 5)


def test_sha256_depends_on_the_reference_source_as_well_as_the_rubric(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, MINI.read_text(encoding="utf-8"))
    first = load_rubric(path).sha256
    assert load_rubric(path).sha256 == first
    reference = tmp_path / "mini_reference.py"
    reference.write_text(reference.read_text(encoding="utf-8") + "\nExtra = 1\n", encoding="utf-8")
    changed_reference = load_rubric(path).sha256
    assert changed_reference != first
    path.write_text(path.read_text(encoding="utf-8") + "# a comment\n", encoding="utf-8")
    assert load_rubric(path).sha256 not in (first, changed_reference)


def test_check_names_are_resolved_later_against_the_reference(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: double
            check: equals
            cases: [{call: double(1)}]
        """)
    assert load_rubric(path).exercise("double").check == CheckSpec("equals", {}, 5)


def test_yaml_merge_keys_share_settings_and_written_keys_override_them(tmp_path: Path) -> None:
    path = write_rubric(tmp_path, """
        assignment: t
        reference: mini_reference.py
        exercises:
          - id: solve
            check: &path {name: path, next_states: next_states, start: "args[0]", goal: "args[1]", optimal: true}
            cases:
              - call: solve(("*", "1"), ("1", "*"))
              - call: solve(("*", "1"), ("1", "*"))
                check:
                  <<: *path
                  optimal: false
        """)
    solve = load_rubric(path).exercise("solve")
    assert solve.check.options["optimal"] is True
    overridden = solve.cases[1].check
    assert overridden.options == {"next_states": "next_states", "start": "args[0]", "goal": "args[1]",
                                  "optimal": False}
    assert overridden.line == 10


# ---------------------------------------------------------------- libyaml and pure-Python parsing agree


def _marks(node: object) -> object:
    """A parsed tree with every line mark spelled out, to compare two parsers' trees exactly."""
    from grader.rubric.yamlmarks import Marked, MarkedList
    if isinstance(node, Marked):
        return ("map", node.line, dict(node.key_lines), {key: _marks(value) for key, value in node.items()})
    if isinstance(node, MarkedList):
        return ("seq", node.line, list(node.item_lines), [_marks(value) for value in node])
    return (type(node).__name__, node)


def _both(text: str) -> tuple[object, object]:
    import yaml
    from grader.rubric.yamlmarks import _FastLoader, _Loader
    results = []
    for loader in (_FastLoader, _Loader):
        try:
            results.append(_marks(yaml.load(text, Loader=loader)))  # noqa: S506 - both are safe loaders
        except yaml.YAMLError:
            results.append("rejected")
    return results[0], results[1]


def test_the_fast_loader_parses_with_libyaml_when_pyyaml_has_it() -> None:
    import yaml
    from grader.rubric.yamlmarks import _FastLoader
    assert issubclass(_FastLoader, yaml.CSafeLoader) == yaml.__with_libyaml__


@pytest.mark.parametrize("rubric", sorted((Path(__file__).parents[1] / "rubrics").glob("*.yaml"))
                         + sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.name)
def test_libyaml_gives_every_rubric_the_same_tree_and_lines(rubric: Path) -> None:
    fast, pure = _both(rubric.read_text(encoding="utf-8"))
    assert fast == pure


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8),
                     st.floats(allow_nan=False, allow_infinity=False))
_TREES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=4)), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_TREES, st.booleans())
def test_libyaml_and_pure_python_agree_on_any_document(tree: object, flow: bool) -> None:
    import yaml
    text = yaml.safe_dump({"root": tree}, default_flow_style=flow, allow_unicode=True)
    fast, pure = _both(text)
    assert fast == pure


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "x:\n  - 1\n - 2\n", "a: &x {b: 1}\nc: *y\n",
                                  "k: 'unterminated\n", "a: 1\na: 2\n", "? [1, 2]\n: x\n"])
def test_a_document_libyaml_rejects_is_explained_in_the_pure_python_parsers_words(tmp_path: Path, text: str) -> None:
    import yaml
    from grader.rubric.yamlmarks import YamlError, _Loader, load_marked
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(YamlError) as caught:
        load_marked(path)
    with pytest.raises(yaml.MarkedYAMLError) as pure:
        yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    assert caught.value.reason.startswith(pure.value.problem)
    assert caught.value.line == (pure.value.problem_mark or pure.value.context_mark).line + 1


def test_the_statement_walk_finds_the_imports_a_full_walk_finds() -> None:
    """course_files walks statements only; on real modules (the standard library's, ours) it finds every import
    a walk of every node finds, nested in functions, classes, try, with, match and if included."""
    import ast
    import json
    from grader.rubric.schema import _imports_in

    def every_node(source: bytes) -> set[str]:
        names = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        return names

    ours = Path(__file__).parents[1] / "grader"
    modules = sorted(Path(json.__file__).parents[1].glob("*.py"))[:120] + sorted(ours.rglob("*.py"))
    nested = b"def f():\n    try:\n        import a\n    except E:\n        import b\n" \
             b"    finally:\n        import c\n" \
             b"class K:\n    with x:\n        from d.e import f\n" \
             b"    match y:\n        case 1:\n            import g\n" \
             b"if z:\n    pass\nelse:\n    for i in j:\n        while k:\n            import h\n" \
             b"from . import own\n"
    assert set(_imports_in(nested, "<nested>")) == set("abcdgh") == every_node(nested)
    for module in modules:
        source = module.read_bytes()
        assert set(_imports_in(source, str(module))) == every_node(source), module


def _course_files_parsing_every_module(reference: Path, support: Path | None) -> list[tuple[str, Path]]:
    """course_files as it was before a module naming no course module went unparsed: every module parsed."""
    from unittest import mock

    from grader.rubric import schema
    with mock.patch.object(schema, "_course_names", lambda folders: None):
        return schema.course_files(reference, support)


@pytest.mark.parametrize("rubric", sorted((Path(__file__).parents[1] / "rubrics").glob("*.yaml"))
                         + sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.name)
def test_a_reference_naming_no_course_module_gives_the_course_files_a_parse_gives(rubric: Path) -> None:
    from grader.rubric.schema import RubricError, course_files, load_rubric
    try:
        loaded = load_rubric(rubric)
    except RubricError:
        pytest.skip("a rubric with a problem: its reference is not hashed")
    assert course_files(loaded.reference, loaded.support) == \
        _course_files_parsing_every_module(loaded.reference, loaded.support)


@pytest.mark.parametrize("source", [
    b"import helper\n", b"def f():\n    from helper.sub import x\n", b"import os\n# helper, not imported\n",
    b"import os\n", b"x = 1\n", b"import Helper\n", b"import pkg.mod\n", b"from . import helper\n",
    b"# -*- coding: raw_unicode_escape -*-\nimport \\u0068elper\n", "import hélper\n".encode("utf-8"),
    b"import helper as h\nimport other\n", b"def broken(:\n import helper\n"])
def test_the_course_modules_found_without_a_parse_are_those_a_parse_finds(tmp_path: Path, source: bytes) -> None:
    """A module is left unparsed only when it spells no course module's name; whatever it imports (nested, a
    package, a relative import, a name decoded by its PEP 263 declaration, a broken module), the list is the same."""
    from grader.rubric.schema import _course_names, course_files
    (tmp_path / "reference.py").write_bytes(source)
    (tmp_path / "helper.py").write_text("import other\n", encoding="utf-8")
    (tmp_path / "other.py").write_text("VALUE = 1\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "mod.py").write_text("from helper import x\n", encoding="utf-8")
    support = tmp_path / "support"
    support.mkdir()
    (support / "Set.py").write_text("import helper\n", encoding="utf-8")
    assert _course_names([tmp_path, support]) is not None   # this file system keeps case: names are compared
    assert course_files(tmp_path / "reference.py", support) == \
        _course_files_parsing_every_module(tmp_path / "reference.py", support)


def test_a_course_folder_with_a_name_not_ascii_has_every_module_parsed(tmp_path: Path) -> None:
    from grader.rubric.schema import _course_names
    (tmp_path / "modulé.py").write_text("", encoding="utf-8")
    assert _course_names([tmp_path]) is None
    assert _course_names([tmp_path / "missing"]) is None


def test_support_reads_follow_an_edited_support_module(tmp_path):
    """What the support modules read is remembered per text (load_rubric and the plan both ask): an edited module
    is read again, a module read twice gives the same names, a notebook's cells count, and magics are skipped."""
    from grader.rubric.schema import support_reads
    support = tmp_path / "support"
    support.mkdir()
    module = support / "Set.py"
    module.write_text("def shown(S):\n    return nextStates(S) + helper\nhelper = 1\n", encoding="utf-8")
    assert support_reads(support) == {"nextStates"}
    assert support_reads(support) == {"nextStates"}
    module.write_text("def shown(S):\n    return moves(S, Goal)\n", encoding="utf-8")
    assert support_reads(support) == {"moves", "Goal"}
    (support / "Draw.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "source": ["%matplotlib inline\\n", "draw(Board)"]}]}', encoding="utf-8")
    assert support_reads(support) == {"moves", "Goal", "draw", "Board"}


def test_a_support_source_parsed_out_of_memory_once_is_parsed_again(monkeypatch):
    """A MemoryError is the moment's, not the source's: it must not be remembered as "reads nothing"."""
    import ast
    from grader.rubric import schema

    source = "def helper_once_out_of_memory():\n    return SOME_GLOBAL_NAME + 1\n"
    real = ast.parse
    calls = []

    def parse_once_out_of_memory(code: str, *args: object, **kwargs: object) -> ast.Module:
        calls.append(code)
        if len(calls) == 1:
            raise MemoryError
        return real(code, *args, **kwargs)

    monkeypatch.setattr(schema.ast, "parse", parse_once_out_of_memory)
    assert schema._source_reads(source) == frozenset()
    assert schema._source_reads(source) == frozenset({"SOME_GLOBAL_NAME"})
    assert schema._source_reads(source) == frozenset({"SOME_GLOBAL_NAME"}) and len(calls) == 2   # then remembered
