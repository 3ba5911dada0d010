"""The grading plan: cases expanded, expected values computed by the reference once, cached by rubric hash."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from grader.plan.cases import build_plan, cache_path, expand, load_reference, patched_globals
from grader.rubric.schema import CheckSpec, RubricError, load_rubric

FIXTURES = Path(__file__).parent / "fixtures" / "rubrics"
MINI = FIXTURES / "mini.yaml"
START, MIDDLE, GOAL = ("*", "1", "2"), ("1", "*", "2"), ("1", "2", "*")


def copy_mini(folder: Path, rubric_text: str | None = None) -> Path:
    """The mini rubric (or `rubric_text`, starting at line 1) next to a private copy of its reference module."""
    shutil.copy(FIXTURES / "mini_reference.py", folder / "mini_reference.py")
    path = folder / "mini.yaml"
    text = MINI.read_text(encoding="utf-8") if rubric_text is None else textwrap.dedent(rubric_text).lstrip("\n")
    path.write_text(text, encoding="utf-8")
    return path


def plan_problems(path: Path) -> list[str]:
    with pytest.raises(RubricError) as failure:
        build_plan(load_rubric(path))
    problems = failure.value.problems
    assert all(problem.startswith(f"{path}:") for problem in problems), problems
    return [problem[len(f"{path}:"):] for problem in problems]


def values(plan, exercise: str) -> dict[str, object]:
    return {case.id: plan.expected[case.id].value for case in plan.cases[exercise]}


def answers(expected) -> dict[str, tuple]:
    """Expected values without their timings (which differ from run to run)."""
    return {case_id: (e.value, e.mistakes) for case_id, e in expected.items()}


# ---------------------------------------------------------------- expected values


def test_expected_values_are_the_reference_answers_in_wire_form() -> None:
    plan = build_plan(load_rubric(MINI))
    assert values(plan, "double") == {"double#1": 6, "double-len": 6, "double#3": 1000}
    assert values(plan, "solve") == {"solve#1": {"list": [{"tuple": list(START)}, {"tuple": list(MIDDLE)},
                                                          {"tuple": list(GOAL)}]}}
    assert values(plan, "blanks") == {"blanks#1": {"list": [2, 0]}}
    assert all(expected.seconds >= 0 for expected in plan.expected.values())


def test_case_ids_and_order_follow_the_rubric() -> None:
    plan = build_plan(load_rubric(MINI))
    assert [case.id for case in plan.cases["double"]] == ["double#1", "double-len", "double#3"]
    assert [case.id for case in plan.cases["total"]] == [f"total.random_lists[{n}]" for n in range(1, 7)]
    assert set(plan.expected) == {case.id for group in plan.cases.values() for case in group}


def test_cases_carry_their_rubric_settings() -> None:
    plan = build_plan(load_rubric(MINI))
    hidden = plan.cases["double"][1]
    assert (hidden.exercise, hidden.call, hidden.visibility, hidden.weight, hidden.line) == (
        "double", "double(len(Start))", "hidden", 2, 27)
    assert hidden.check == CheckSpec("equal", {}, 13)
    assert plan.cases["solve"][0].check.name == "path"
    assert plan.cases["parity"][0].check.name == "check_same_parity"


def test_expect_expression_replaces_the_reference_answer() -> None:
    assert values(build_plan(load_rubric(MINI)), "scaled")["scaled#2"] == 5


def test_set_patches_module_globals_for_the_reference_call_and_restores_them() -> None:
    plan = build_plan(load_rubric(MINI))
    assert values(plan, "scaled")["scaled#1"] == 15
    assert plan.reference.Scale == 1
    assert plan.cases["scaled"][0].set == (("Scale", "3"),)


def test_mistake_answers_are_recorded_and_left_out_when_the_mistake_raises() -> None:
    plan = build_plan(load_rubric(MINI))
    assert plan.expected["double#1"].mistakes == (("double_plus_one", 7), ("double_if_small", 6))
    # A mistake that raises cannot be recognised on that input; a None answer would have been recorded.
    assert plan.expected["double#3"].mistakes == (("double_plus_one", 1001),)
    assert plan.expected["scaled#1"].mistakes == ()


def test_plan_data_is_the_fixtures_then_the_case_variables() -> None:
    plan = build_plan(load_rubric(MINI))
    assert plan.data(plan.cases["double"][0]) == {"Start": START, "Goal": GOAL}
    generated = plan.cases["total"][2]
    assert plan.data(generated) == {"Start": START, "Goal": GOAL, "xs": [2, 6]}
    assert generated.shown_call == "total(xs)  with xs=[2, 6]"
    assert plan.cases["double"][0].shown_call == "double(3)"


# ---------------------------------------------------------------- generated cases


def test_generated_cases_are_sorted_smallest_first() -> None:
    plan = build_plan(load_rubric(MINI))
    cases = plan.cases["total"]
    assert [case.variables["xs"] for case in cases] == [[], [], [2, 6], [6, 1, 3], [0, 8, 3, 0], [0, 1, 8, 1, 5]]
    assert [plan.expected[case.id].value for case in cases] == [0, 0, 8, 10, 11, 15]
    assert all(case.visibility == "hidden" for case in cases)


def test_generated_cases_are_the_same_for_the_same_seed_and_differ_for_another(tmp_path: Path) -> None:
    rubric = load_rubric(MINI)
    reference = load_reference(rubric.reference)
    assert expand(rubric, reference) == expand(rubric, reference)
    other = load_rubric(copy_mini(tmp_path, MINI.read_text(encoding="utf-8").replace("seed: 7", "seed: 8")))
    first = [case.variables for case in expand(rubric, reference)["total"]]
    assert [case.variables for case in expand(other, load_reference(other.reference))["total"]] != first


def test_one_generator_feeding_two_cases_numbers_on_and_keeps_each_answer(tmp_path: Path) -> None:
    path = copy_mini(tmp_path, """
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: total
            cases:
              - generate: random_lists
                count: 2
                seed: 1
                call: total(xs)
              - generate: random_lists
                count: 3
                seed: 2
                call: total(xs)
                visibility: hidden
        """)
    plan = build_plan(load_rubric(path))
    cases = plan.cases["total"]
    assert [(case.id, case.visibility) for case in cases] == [
        ("total.random_lists[1]", "public"), ("total.random_lists[2]", "public"),
        ("total.random_lists[3]", "hidden"), ("total.random_lists[4]", "hidden"), ("total.random_lists[5]", "hidden")]
    assert [plan.expected[case.id].value for case in cases] == [sum(case.variables["xs"]) for case in cases]


def test_the_reference_time_that_sets_a_limit_is_its_cpu_time_not_the_wall_clock(tmp_path: Path) -> None:
    """A case's limit is CPU time (case_factor x the reference's time): measured as wall time, the reference's
    time grew with the load of the machine building the plan, and every student's limit with it (a test saw a
    6 s spin pass a 3 s limit at load 8). A reference that sleeps spends no CPU, so its case keeps the floor."""
    path = copy_mini(tmp_path, """
        assignment: mini
        reference: mini_reference.py
        limits: {case_seconds: 1, case_factor: 20}
        exercises:
          - id: nap
            cases:
              - call: "nap([1, 2])"
        """)
    with (tmp_path / "mini_reference.py").open("a", encoding="utf-8") as reference:
        reference.write("\n\ndef nap(xs):\n    import time\n    time.sleep(0.25)\n    return sum(xs)\n")
    rubric = load_rubric(path)
    plan = build_plan(rubric)
    [case] = plan.cases["nap"]
    assert plan.expected[case.id].value == 3
    assert rubric.limits.case_timeout(plan.expected[case.id].seconds) == 1   # wall time would give 20 x 0.25 = 5


def test_generated_case_with_an_explicit_id_uses_it_as_the_base(tmp_path: Path) -> None:
    path = copy_mini(tmp_path, """
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: total
            cases:
              - generate: random_lists
                id: lists
                count: 2
                call: total(xs)
        """)
    assert [case.id for case in build_plan(load_rubric(path)).cases["total"]] == ["lists[1]", "lists[2]"]


# ---------------------------------------------------------------- rubric problems found against the reference


@pytest.mark.parametrize(("rubric", "expected"), [
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        fixtures:
          - Start
          - Nowhere
        exercises:
          - id: double
            cases: [{call: double(1)}]
        """, ["5: fixture 'Nowhere' is not defined in mini_reference.py"], id="unknown_fixture"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases: [{call: double(1)}]
          - id: triple
            cases: [{call: triple(1)}]
        """, ["6: exercise 'triple': the reference module has no 'triple'"], id="missing_function"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            function: dubble
            cases: [{call: double(1)}]
        """, ["4: exercise 'double': the reference module has no 'dubble' (did you mean 'double'?)"],
        id="misspelled_function"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: total
            cases:
              - call: total([1])
              - generate: random_tuples
                call: total(xs)
        """, ["7: exercise 'total': generator 'random_tuples' is not a function of the reference module "
              "(did you mean 'random_lists'?)"],
        id="missing_generator"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            check: equals
            cases: [{call: double(1)}]
        """, ["5: exercise 'double': unknown check 'equals' (did you mean 'equal'?)"], id="unknown_check"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases:
              - call: double(1)
                check: {name: check_same_parit}
        """, ["7: exercise 'double': unknown check 'check_same_parit' (did you mean 'check_same_parity'?)"],
        id="unknown_case_check"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            check: scaledd
            cases: [{call: double(1)}]
        """, ["5: exercise 'double': unknown check 'scaledd' (did you mean 'scaled'?)"],
        id="unknown_check_named_like_a_function_not_starting_with_check"),   # a check may be named slide_path
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            check: {name: check_same_parity, publc: true}
            cases: [{call: double(1)}]
        """, ["5: exercise 'double': check check_same_parity has no 'options' parameter, so its options publc would "
              "be ignored (did you mean 'public'?)"],
        id="misspelt_public_of_a_check_without_options"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases: [{call: double(1)}]
          - id: scaled
            isolate: [doubel]
            cases: [{call: scaled(1)}]
        """, ["6: exercise 'scaled': isolate names 'doubel', which is not a function of the reference module "
              "(did you mean 'double'?)"], id="misspelt_isolated_helper_is_one_problem"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases:
              - call: doubel(1)
        """, ["6: exercise 'double', case double#1: unknown name(s) doubel (not a fixture, variable or reference "
              "function) (did you mean 'double'?)"], id="misspelt_name_in_a_call"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            mistakes:
              - reference: double_plus_one
                say: "one more"
              - reference: Scale
                say: "not a function"
            cases: [{call: double(1)}]
        """, ["8: exercise 'double': mistake 'Scale' is not a function of the reference module "
              "(did you mean 'scaled'?)"],
        id="mistake_that_is_not_a_function"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases:
              - call: double(1)
              - call: double(Begin) + twice(2)
        """, ["7: exercise 'double', case double#2: unknown name(s) Begin, twice (not a fixture, variable or "
              "reference function)"], id="unknown_name_in_a_call"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: broken
            cases:
              - call: broken(1)
        """, ["6: exercise 'broken', case broken#1: the reference fails on 'broken(1)': ZeroDivisionError: "
              "division by zero"], id="reference_that_raises"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases:
              - call: double(1)
                expect: "Start[9]"
        """, ["6: exercise 'double', case double#1: expect may only use fixtures and variables, not Start"],
        id="expect_naming_no_fixture"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        fixtures: [Start]
        exercises:
          - id: double
            cases:
              - call: double(1)
                expect: "Start[9]"
        """, ["7: exercise 'double', case double#1: expect 'Start[9]' fails: ExpressionError: "
              "cannot evaluate 'Start[9]': IndexError: tuple index out of range"], id="expect_that_fails"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: total
            cases:
              - generate: random_crash
                count: 3
                call: total(xs)
        """, ["6: generator 'random_crash' fails: ValueError: cannot make 3 cases"],
        id="generator_that_raises"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: total
            cases:
              - generate: check_same_parity
                call: total(xs)
        """, ["6: generator 'check_same_parity' must return a list of dicts"], id="generator_without_dicts"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        exercises:
          - id: double
            cases: [{call: double(1), id: small}]
          - id: scaled
            cases: [{call: scaled(1), id: small}]
        """, ["7: exercise 'scaled': case id 'small' is already used at line 5"], id="case_id_in_two_exercises"),
    pytest.param("""
        assignment: mini
        reference: mini_reference.py
        given: [double, Start, scaled, blanks]
        exercises:
          - id: double
            cases: [{call: double(1)}]
        """, ["3: given 'double' is graded: the course's would stand in for the notebook's answer",
              "3: given 'Start' is not a class or function of mini_reference.py or a support module",
              "3: given 'scaled' reads Scale, which is not given: it cannot stand alone"], id="given_names"),
])
def test_rubric_problem_found_against_the_reference_names_file_and_line(tmp_path: Path, rubric: str,
                                                                          expected: list[str]) -> None:
    assert plan_problems(copy_mini(tmp_path, rubric)) == expected


def test_a_given_that_is_an_accepted_answer_by_another_name_is_refused(tmp_path: Path) -> None:
    """A variant's function, or the graded function's object under a second name: given, the course's code of an
    accepted answer would reach the child, for a wrong notebook to call (the old code let both through)."""
    path = copy_mini(tmp_path, """
        assignment: mini
        reference: mini_reference.py
        given: [double_plus_one, twice]
        exercises:
          - id: double
            variants: [{reference: double_plus_one}]
            cases: [{call: double(1)}]
        """)
    with (tmp_path / "mini_reference.py").open("a", encoding="utf-8") as reference:
        reference.write("\n\ndef twice(x):\n    return x + x\n\n\ndouble = twice\n")
    assert plan_problems(path) == [
        "3: given 'double_plus_one' is an accepted answer of exercise 'double' (a variant): a notebook could call it "
        "for the points",
        "3: given 'twice' is the reference's double, which is graded: its answer would reach the notebook"]


def test_every_name_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = copy_mini(tmp_path, """
        assignment: mini
        reference: mini_reference.py
        fixtures: [Nowhere]
        exercises:
          - id: triple
            check: equals
            cases: [{call: triple(1)}]
        """)
    assert plan_problems(path) == [
        "3: fixture 'Nowhere' is not defined in mini_reference.py",
        "5: exercise 'triple': the reference module has no 'triple'",
        "6: exercise 'triple': unknown check 'equals' (did you mean 'equal'?)",
    ]


def test_reference_that_fails_to_import_is_a_rubric_error(tmp_path: Path) -> None:
    path = copy_mini(tmp_path)
    (tmp_path / "mini_reference.py").write_text("raise ImportError('no numpy here')\n", encoding="utf-8")
    with pytest.raises(RubricError, match=r"mini_reference.py:1: the reference module fails to import: "
                                          r"ImportError: no numpy here"):
        build_plan(load_rubric(path))


# ---------------------------------------------------------------- patched globals


def test_patched_globals_restores_old_values_and_removes_new_names_even_after_an_error() -> None:
    reference = load_reference(FIXTURES / "mini_reference.py")
    with pytest.raises(ZeroDivisionError):
        with patched_globals(reference, {"Scale": 4, "Fresh": 1}):
            assert reference.scaled(2) == 8
            reference.broken(1)
    assert reference.Scale == 1
    assert not hasattr(reference, "Fresh")


# ---------------------------------------------------------------- the expected-value cache


def fail(*args, **kwargs):
    raise AssertionError("the reference ran although its answers were cached")


def stored_payload(stored: Path) -> dict:
    """A cache file's JSON body (after the seal's header line, see test_cache_seal.py for the seal itself)."""
    return json.loads(stored.read_bytes().partition(b"\n")[2])


def reseal(stored: Path, text: str) -> None:
    """Write a body sealed with the folder's own key, as the grader would: the seal verifies, so what is
    tested is how the plan treats the content."""
    from grader.plan import sealed
    key = (stored.parent / sealed.KEY_FILE).read_bytes()
    sealed.write_sealed(key, stored, text.encode("utf-8"))


def cache_files(cache: Path) -> list[Path]:
    return [path for path in cache.iterdir() if not path.name.startswith(".")]


def test_expected_values_are_written_to_the_cache_and_reused(tmp_path: Path, monkeypatch) -> None:
    rubric = load_rubric(copy_mini(tmp_path))
    cache = tmp_path / "cache"
    first = build_plan(rubric, cache)
    stored = cache_path(rubric, cache)
    assert cache_files(cache) == [stored]
    assert stored_payload(stored)["rubric_sha256"] == rubric.sha256
    monkeypatch.setattr(load_reference(rubric.reference), "double", fail)
    with pytest.raises(RubricError, match="AssertionError: the reference ran"):
        build_plan(rubric)  # without the cache the broken reference is noticed
    again = build_plan(rubric, cache)
    assert again.expected == first.expected


def test_no_cache_directory_means_no_cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nor bytecode beside the course's modules: where Python writes it (a TA's machine, a fresh clone's CI
    without PYTHONDONTWRITEBYTECODE) importing the reference left a __pycache__ in the course folder."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    rubric = load_rubric(copy_mini(tmp_path))
    assert cache_path(rubric, None) is None
    build_plan(rubric)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mini.yaml", "mini_reference.py"]


def _poisoned(payload: dict) -> dict:
    """A well-formed wrong answer, so that a damaged cache that was trusted anyway shows in the plan."""
    payload["expected"]["double#1"]["value"] = 999
    return payload


def _with(payload: dict, **changes) -> str:
    return json.dumps({**_poisoned(payload), **changes})


def _with_case(payload: dict, **changes) -> str:
    _poisoned(payload)["expected"]["double#1"].update(changes)
    return json.dumps(payload)


def _without_case(payload: dict) -> str:
    del payload["expected"]["double#1"]
    return json.dumps(payload)


DAMAGES = {  # name -> the stored cache payload, damaged, as the text written back
    "not_json": lambda payload: "{not json",
    "a_list": lambda payload: "[]",
    "expected_not_a_mapping": lambda payload: _with(payload, expected=[]),
    "other_format": lambda payload: _with(payload, format=99),
    "other_rubric_hash": lambda payload: _with(payload, rubric_sha256="0" * 64),
    "malformed_value": lambda payload: _with_case(payload, value={"list": 5}),
    "malformed_mistake_answer": lambda payload: _with_case(payload, mistakes=[["double_plus_one", {"tuple": 1}]]),
    "seconds_not_a_number": lambda payload: _with_case(payload, seconds="soon"),
    "a_case_missing": _without_case,
    "generated_not_a_mapping": lambda payload: _with(payload, generated=[]),
    "generated_value_malformed": lambda payload: _with(payload, generated={"total#1": [{"xs": {"list": 5}}]}),
    "generated_spec_missing": lambda payload: _with(payload, generated={}),
    "generated_entry_not_a_mapping": lambda payload: _with(payload, generated={"total#1": [[1, 2]]}),
}


def test_a_cache_sealed_with_the_folders_key_is_trusted_as_stored(tmp_path: Path) -> None:
    rubric = load_rubric(copy_mini(tmp_path))
    cache = tmp_path / "cache"
    build_plan(rubric, cache)
    stored = cache_path(rubric, cache)
    reseal(stored, json.dumps(_poisoned(stored_payload(stored))))
    assert build_plan(rubric, cache).expected["double#1"].value == 999


def test_a_cache_edited_without_the_key_is_not_trusted(tmp_path: Path) -> None:
    rubric = load_rubric(copy_mini(tmp_path))
    cache = tmp_path / "cache"
    build_plan(rubric, cache)
    stored = cache_path(rubric, cache)
    header = stored.read_bytes().partition(b"\n")[0]
    stored.write_bytes(header + b"\n" + json.dumps(_poisoned(stored_payload(stored))).encode())
    plan = build_plan(rubric, cache)
    assert plan.expected["double#1"].value == 6
    assert any("does not verify" in warning for warning in plan.warnings)


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_damaged_cache_is_ignored_and_rewritten(tmp_path: Path, damage) -> None:
    rubric = load_rubric(copy_mini(tmp_path))
    cache = tmp_path / "cache"
    good = answers(build_plan(rubric, cache).expected)
    stored = cache_path(rubric, cache)
    reseal(stored, damage(stored_payload(stored)))
    plan = build_plan(rubric, cache)
    assert answers(plan.expected) == good
    assert plan.warnings                                   # the TA is told the cache was not used
    assert stored_payload(stored)["expected"]["double#1"]["value"] == 6


def test_changed_rubric_does_not_use_the_old_cache(tmp_path: Path) -> None:
    path = copy_mini(tmp_path)
    cache = tmp_path / "cache"
    old = load_rubric(path)
    assert build_plan(old, cache).expected["double#1"].value == 6
    path.write_text(path.read_text(encoding="utf-8").replace("call: double(3)", "call: double(4)"), encoding="utf-8")
    new = load_rubric(path)
    assert cache_path(new, cache) != cache_path(old, cache)
    assert build_plan(new, cache).expected["double#1"].value == 8
    assert len(cache_files(cache)) == 2


def test_changed_reference_is_imported_afresh_and_not_answered_from_the_cache(tmp_path: Path) -> None:
    path = copy_mini(tmp_path)
    cache = tmp_path / "cache"
    assert build_plan(load_rubric(path), cache).expected["double#1"].value == 6
    reference = tmp_path / "mini_reference.py"
    reference.write_text(reference.read_text(encoding="utf-8") + "\n\ndef double(x):\n    return 3 * x\n",
                         encoding="utf-8")
    assert build_plan(load_rubric(path), cache).expected["double#1"].value == 9


def _course_with_siblings(folder: Path) -> Path:
    """A reference that imports a sibling module, which imports another, and a support
    folder the reference does not import; next to them, another course's module nobody imports."""
    (folder / "ref.py").write_text("from helpers import scale\n\ndef double(x):\n    return scale(x)\n")
    (folder / "helpers.py").write_text("import factors\n\ndef scale(x):\n    return factors.FACTOR * x\n")
    (folder / "factors.py").write_text("FACTOR = 2\n")
    (folder / "unrelated.py").write_text("X = 1\n")
    (folder / "support").mkdir()
    (folder / "support" / "given.py").write_text("def given():\n    return 1\n")
    path = folder / "rubric.yaml"
    path.write_text("assignment: t\nreference: ref.py\nsupport: support\n"
                    "exercises:\n  - id: double\n    cases:\n      - call: double(3)\n")
    return path


def test_an_edited_module_the_reference_imports_is_not_answered_from_the_cache(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The rubric hash covers the course modules the reference imports (transitively): editing one is a new
    hash, so the cached expected values (and graded results) of the old one are not used. Where Python writes
    bytecode, the edit (the same size, in the same second) was imported from the old one's .pyc: 6, not 9."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = _course_with_siblings(tmp_path)
    cache = tmp_path / "cache"
    before = load_rubric(path)
    assert build_plan(before, cache).expected["double#1"].value == 6
    (tmp_path / "factors.py").write_text("FACTOR = 3\n")
    after = load_rubric(path)
    assert after.sha256 != before.sha256
    assert build_plan(after, cache).expected["double#1"].value == 9
    assert len(cache_files(cache)) == 2


def test_the_rubric_hash_covers_support_modules_but_not_other_courses_modules(tmp_path: Path) -> None:
    path = _course_with_siblings(tmp_path)
    first = load_rubric(path).sha256
    (tmp_path / "unrelated.py").write_text("X = 2\n")      # another assignment's reference: its own hash
    assert load_rubric(path).sha256 == first
    (tmp_path / "support" / "given.py").write_text("def given():\n    return 2\n")   # students' code sees it
    assert load_rubric(path).sha256 != first


def test_a_data_file_of_the_support_folder_fixed_mid_term_is_a_new_hash_and_new_expected_values(tmp_path: Path
                                                                                                 ) -> None:
    """A word list the reference reads by its own path (README: a data file the notebook reads): adding the word
    a case needed kept the rubric hash, so the cached expected values (None: no ladder) and every graded result
    stood. Any file of the support folder, in a subfolder too, is in the hash; hidden files are not."""
    (tmp_path / "support" / "data").mkdir(parents=True)
    words = tmp_path / "support" / "data" / "words.txt"
    words.write_text("cold\ncord\n")
    (tmp_path / "ref.py").write_text(
        "from pathlib import Path\n"
        "WORDS = (Path(__file__).parent / 'support' / 'data' / 'words.txt').read_text().split()\n\n\n"
        "def known(word):\n    return word in WORDS\n")
    path = tmp_path / "rubric.yaml"
    path.write_text("assignment: t\nreference: ref.py\nsupport: support\n"
                    "exercises:\n  - id: known\n    cases:\n      - call: known('warm')\n")
    cache = tmp_path / "cache"
    before = load_rubric(path)
    assert build_plan(before, cache).expected["known#1"].value is False
    (tmp_path / "support" / ".notes.swp").write_text("an editor's file")
    assert load_rubric(path).sha256 == before.sha256
    words.write_text("cold\ncord\nwarm\n")
    after = load_rubric(path)
    assert after.sha256 != before.sha256
    assert build_plan(after, cache).expected["known#1"].value is True


def test_a_shared_module_linked_into_the_support_folder_edited_mid_term_is_a_new_hash(tmp_path: Path) -> None:
    """A course links one shared module into each assignment's support folder; the reference does not import it,
    the students' notebooks %run it. The sandbox gave the linked module's code (given.support_texts followed the
    link) but the rubric hash skipped links: fixing the module mid-term left every cached grade standing. One list
    (schema.support_files) now says both what the sandbox gives and what the hash covers; a link to a folder is
    not entered, hidden files stay out of both."""
    from grader.plan.given import support_texts
    path = _course_with_siblings(tmp_path)
    shared = tmp_path / "shared"
    (shared / "deep").mkdir(parents=True)
    (shared / "search.py").write_text("def search():\n    return 1\n")
    (tmp_path / "support" / "search.py").symlink_to(shared / "search.py")
    (tmp_path / "support" / "loop").symlink_to(tmp_path / "support", target_is_directory=True)
    (tmp_path / "support" / ".hidden.py").write_text("X = 1\n")
    before = load_rubric(path)
    assert support_texts(before.support) == {"given": "def given():\n    return 1\n",
                                             "search": "def search():\n    return 1\n"}
    (shared / "search.py").write_text("def search():\n    return 2\n")
    after = load_rubric(path)
    assert after.sha256 != before.sha256
    assert support_texts(after.support)["search"] == "def search():\n    return 2\n"


def _course_importing_at_call_time(folder: Path, factor: int) -> Path:
    """A reference whose functions import a sibling and a support module when called, the sibling likewise."""
    folder.mkdir()
    (folder / "ref.py").write_text("def double(x):\n    import helpers\n    return helpers.scale(x)\n\n\n"
                                   "def given_twice():\n    from given import given\n    return 2 * given()\n")
    (folder / "helpers.py").write_text("def scale(x):\n    from factors import FACTOR\n    return FACTOR * x\n")
    (folder / "factors.py").write_text(f"FACTOR = {factor}\n")
    (folder / "support").mkdir()
    (folder / "support" / "given.py").write_text(f"def given():\n    return {factor}\n")
    path = folder / "rubric.yaml"
    path.write_text("assignment: t\nreference: ref.py\nsupport: support\nexercises:\n"
                    "  - id: double\n    cases:\n      - call: double(3)\n"
                    "  - id: given_twice\n    cases:\n      - call: given_twice()\n")
    return path


def test_a_reference_imports_its_course_modules_when_called_and_each_course_gets_its_own(tmp_path: Path) -> None:
    """Imports inside functions run when the expected values are computed (and when the sandbox asks the
    reference for an isolated helper), long after the reference was loaded: they find the course's modules,
    each course its own `helpers`, and none of them is left in sys.modules."""
    import sys
    two = build_plan(load_rubric(_course_importing_at_call_time(tmp_path / "two", 2)), tmp_path / "cache")
    three = build_plan(load_rubric(_course_importing_at_call_time(tmp_path / "three", 3)), tmp_path / "cache")
    assert (two.expected["double#1"].value, two.expected["given_twice#1"].value) == (6, 4)
    assert (three.expected["double#1"].value, three.expected["given_twice#1"].value) == (9, 6)
    assert (two.reference.double(5), three.reference.double(5), two.reference.double(1)) == (10, 15, 2)
    assert not {"helpers", "factors", "given"} & set(sys.modules)


def test_a_reference_imports_its_course_modules_from_several_threads_at_once(tmp_path: Path) -> None:
    """Mutation testing asks the reference from several threads: each import sees the course's modules."""
    from concurrent.futures import ThreadPoolExecutor
    plan = build_plan(load_rubric(_course_importing_at_call_time(tmp_path / "threads", 2)), tmp_path / "cache")
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(plan.reference.double, range(400))) == [2 * x for x in range(400)]


def test_a_reference_without_course_modules_keeps_its_hash(tmp_path: Path) -> None:
    """Hashes of rubrics whose reference imports nothing of the course are what they were (rubric + reference),
    so their caches and gradebooks stay valid."""
    import hashlib
    path = copy_mini(tmp_path)
    expected = hashlib.sha256(path.read_bytes() + b"\0" + (tmp_path / "mini_reference.py").read_bytes()).hexdigest()
    assert load_rubric(path).sha256 == expected


def _write_assignment(tmp_path: Path, reference: str, rubric: str) -> Path:
    (tmp_path / "ref.py").write_text(textwrap.dedent(reference))
    path = tmp_path / "rubric.yaml"
    path.write_text(textwrap.dedent(rubric))
    return path


def test_path_check_options_are_checked_when_the_plan_is_built(tmp_path: Path) -> None:
    rubric = _write_assignment(tmp_path, """
        def walk(n):
            return [n]
        """, """
        assignment: t
        reference: ref.py
        exercises:
          - id: walk
            check: {name: path, next_states: nowhere, start: "args[0]", speed: 3}
            cases:
              - call: walk(1)
        """)
    with pytest.raises(RubricError) as raised:
        build_plan(load_rubric(rubric))
    problems = "\n".join(raised.value.problems)
    assert "path check option 'next_states': the reference module has no function 'nowhere'" in problems
    assert "the path check needs 'goal: <expression>'" in problems
    assert "unknown option 'speed' of the path check" in problems


def test_check_options_are_held_to_what_the_check_declares_at_their_rubric_line(tmp_path: Path) -> None:
    """A value of the wrong kind is the rubric's error when the plan is built, at the check's line: `optimal: yes`
    as a string, a credit above 1 or a text tolerance would otherwise grade every case with a crash or a guess."""
    rubric = _write_assignment(tmp_path, """
        def walk(n):
            return [n]
        def step(n):
            return [n + 1]
        """, """
        assignment: t
        reference: ref.py
        exercises:
          - id: walk
            check: {name: path, next_states: step, start: "args[0]", goal: "args[0]", optimal: "yes",
                    suboptimal_credit: 2, public: "true"}
            cases:
              - call: walk(1)
              - call: walk(2)
                check: {name: equal, tolerance: small}
        """)
    with pytest.raises(RubricError) as raised:
        build_plan(load_rubric(rubric))
    problems = raised.value.problems
    assert f"{rubric}:6: exercise 'walk': path check option 'optimal': expected true or false, got 'yes'" in problems
    assert any(p.startswith(f"{rubric}:6:") and "option 'suboptimal_credit': expected a number between 0.0 and 1.0, "
               "got 2" in p for p in problems), problems
    assert any(p.startswith(f"{rubric}:6:") and "option 'public': expected true or false, got 'true'" in p
               for p in problems), problems
    assert any(p.startswith(f"{rubric}:11:") and "equal check option 'tolerance': expected a number" in p
               for p in problems), problems


def test_every_built_in_checks_options_are_declared_and_documented_once() -> None:
    """The README's table of checks names each option a built-in check declares, and its default where it has one
    other than off: the declaration is the one place options live."""
    from grader.checks.registry import CHECKS, COMMON, FLAG, OPTIONS
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1]: line for line in readme.splitlines() if line.startswith("| `")}
    assert set(OPTIONS) == set(CHECKS)
    for name, options in OPTIONS.items():
        for option in options:
            assert f"`{option.name}" in rows[name], (name, option.name)
            if option.default not in (None, False) and option.kind != FLAG and option.default != 0:
                assert f"(default {option.default})" in rows[name], (name, option.name)
    for option in COMMON:
        assert f"Every check also takes the option `{option.name}: true`" in readme


def test_a_reference_that_mutates_its_input_does_not_change_the_fixtures(tmp_path: Path) -> None:
    rubric = _write_assignment(tmp_path, """
        Board = [3, 1, 2]
        def sort_in_place(board):
            board.sort()
            return board
        """, """
        assignment: t
        reference: ref.py
        fixtures: [Board]
        exercises:
          - id: sort_in_place
            cases:
              - call: sort_in_place(Board)
              - call: Board
        """)
    plan = build_plan(load_rubric(rubric))
    assert plan.expected["sort_in_place#2"].value == {"list": [3, 1, 2]}


def test_an_unwritable_cache_folder_does_not_stop_grading(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    plan = build_plan(load_rubric(MINI), blocker / "cache")
    assert plan.expected["double#1"].value == 6


# ---------------------------------------------------------------- what the judge prepares once per plan


def test_a_plans_memo_is_its_own_fresh_in_a_replaced_plan_and_never_pickled() -> None:
    """What the judge prepares per case lives on the plan it came from: no global keyed by id(plan) that a
    later plan at the same address could read, nothing a public plan or a worker's copy inherits."""
    import pickle
    from dataclasses import replace

    from grader.plan.cases import Memo
    plan = build_plan(load_rubric(MINI))
    made: list[str] = []
    assert plan.memo.get(("data", "double#1"), lambda: made.append("once") or 6) == 6
    assert plan.memo.get(("data", "double#1"), lambda: made.append("twice") or 7) == 6
    assert made == ["once"]
    public = replace(plan, cases={"double": plan.cases["double"][:1]})
    assert public.memo is not plan.memo
    assert public.memo.get(("data", "double#1"), lambda: 8) == 8
    copied = pickle.loads(pickle.dumps(plan.memo))
    assert isinstance(copied, Memo) and copied.get(("data", "double#1"), lambda: 9) == 9


def test_a_memo_starts_over_rather_than_grow_without_bound() -> None:
    from grader.plan.cases import Memo
    memo = Memo()
    for n in range(Memo.LIMIT + 1):
        memo.get((n,), lambda n=n: n)
    assert memo.get((0,), lambda: "again") == "again" and memo.get((Memo.LIMIT,), lambda: "again") == Memo.LIMIT


# ---------------------------------------------------------------- generated cases in the cache

COUNTING = """
import random

GENERATED = []   # one entry per generator call: what a warm cache must not add to


class Box(tuple):
    \"\"\"A course's own type: not plain data, so its cases are generated again each time.\"\"\"


def plain(rng: random.Random, count: int) -> list[dict[str, object]]:
    GENERATED.append("plain")
    return [{"xs": [rng.randint(0, 9) for _ in range(rng.randint(0, 4))], "t": (1, "a", None, 2.5), "s": {3, 1},
             "d": {"k": [b"by"]}} for _ in range(count)]


def boxed(rng: random.Random, count: int) -> list[dict[str, object]]:
    GENERATED.append("boxed")
    return [{"xs": Box((rng.randint(0, 9), 1))} for _ in range(count)]


def total(xs):
    return sum(xs)
"""


def counting_rubric(folder: Path, generator: str) -> Path:
    (folder / "counting.py").write_text(COUNTING, encoding="utf-8")
    path = folder / "counting.yaml"
    path.write_text(textwrap.dedent(f"""
        assignment: counting
        reference: counting.py
        exercises:
          - id: total
            cases:
              - call: total([1])
              - generate: {generator}
                count: 5
                seed: 3
                call: total(xs)
        """).lstrip("\n"), encoding="utf-8")
    return path


def test_a_warm_cache_gives_the_same_cases_without_calling_a_generator(tmp_path: Path) -> None:
    rubric = load_rubric(counting_rubric(tmp_path, "plain"))
    cache = tmp_path / "cache"
    first = build_plan(rubric, cache)
    calls = first.reference.GENERATED
    assert calls == ["plain"]
    again = build_plan(rubric, cache)
    assert calls == ["plain"]                              # the cached variables were used
    assert again.cases == first.cases and again.expected == first.expected and not again.warnings
    for old, new in zip(first.cases["total"], again.cases["total"], strict=True):
        assert [type(v) for v in old.variables.values()] == [type(v) for v in new.variables.values()]
    assert stored_payload(cache_path(rubric, cache))["generated"]["total#2"][0]["t"] == \
        {"tuple": [1, "a", None, 2.5]}


def test_variables_that_are_not_plain_data_are_generated_each_time(tmp_path: Path) -> None:
    rubric = load_rubric(counting_rubric(tmp_path, "boxed"))
    cache = tmp_path / "cache"
    first = build_plan(rubric, cache)
    again = build_plan(rubric, cache)
    assert first.reference.GENERATED == ["boxed", "boxed"]
    assert type(again.cases["total"][1].variables["xs"]).__name__ == "Box"
    assert again.expected == first.expected and not again.warnings
    assert stored_payload(cache_path(rubric, cache))["generated"] is None


def test_generated_variables_sealed_with_the_folders_key_are_the_cases(tmp_path: Path) -> None:
    rubric = load_rubric(counting_rubric(tmp_path, "plain"))
    cache = tmp_path / "cache"
    build_plan(rubric, cache)
    stored = cache_path(rubric, cache)
    payload = stored_payload(stored)
    payload["generated"]["total#2"][0]["xs"] = {"list": [7, 7]}
    reseal(stored, json.dumps(payload))
    assert build_plan(rubric, cache).cases["total"][1].variables["xs"] == [7, 7]


def test_a_given_reading_a_name_bound_only_in_a_nested_scope_of_it_cannot_stand_alone(tmp_path: Path) -> None:
    """A nested def's local, a comprehension's variable or a method's local binds only there: the same name read
    elsewhere in the given definition is a module global the child lacks (it fails at load or at the first call).
    The old walk counted every binding anywhere as the whole definition's and passed all three."""
    path = copy_mini(tmp_path, """
        assignment: mini
        reference: mini_reference.py
        given: [nested_local, comprehension_variable, Methods, standing]
        exercises:
          - id: double
            cases: [{call: double(1)}]
        """)
    with (tmp_path / "mini_reference.py").open("a", encoding="utf-8") as reference:
        reference.write(textwrap.dedent("""

            Limit = Step = Width = 3


            def nested_local(x):
                def inner():
                    Limit = 3
                    return Limit
                return inner() + Limit


            def comprehension_variable(xs):
                return [Step for Step in xs] + [Step]


            class Methods:
                size = 2

                def one(self):
                    Width = 1
                    return Width

                def two(self):
                    return Width + size


            def standing(xs, n=1) -> int:
                total: Limit = 0
                for x in xs:
                    def double(y): return 2 * y
                    total += double(x) + len([k for k in range(n)]) + standing([], n - 1) * 0
                try:
                    import math
                except ImportError as error:
                    raise error
                return total + math.floor(n)
            """))
    assert plan_problems(path) == [
        "3: given 'nested_local' reads Limit, which is not given: it cannot stand alone",
        "3: given 'comprehension_variable' reads Step, which is not given: it cannot stand alone",
        "3: given 'Methods' reads Width, size, which is not given: it cannot stand alone"]
