"""Mutation testing in validate: a rubric is good when wrong code loses points, not only when the reference passes."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from grader.authoring.mutants import OPERATORS, mutants, sample, swapped
from grader.authoring.validate import validate

REFERENCE = '''
"""Count steps: a tiny reference whose functions exercise every mutation operator."""
import random


def clamp(x, low, high):
    """x limited to [low, high]."""
    if x < low:
        return low
    if x > high:
        return high
    return x


def walk(n):
    """The squares 0, 1, 4, ... below n*n, as (index, square) pairs."""
    pairs = []
    i = 0
    while i < n:
        pairs.append((i, pow(i, 2)))
        i += 1
    return pairs


def total(xs):
    return sum(xs) + 0 * len(xs)


def total_plus_one(xs):
    return sum(xs) + 1


def total_same(xs):
    return sum(xs)


def numbers(rng, count):
    return [{"x": rng.randint(-20, 20), "low": -5, "high": 5} for _ in range(count)]


def sizes(rng, count):
    return [{"n": rng.randint(0, 12)} for _ in range(count)]
'''

STRONG = '''
assignment: steps
reference: steps.py
exercises:
  - id: clamp
    cases:
      - call: clamp(0, -5, 5)
      - call: clamp(-5, -5, 5)
      - call: clamp(5, -5, 5)
      - generate: numbers
        count: 20
        seed: 1
        call: clamp(x, low, high)
  - id: walk
    cases:
      - generate: sizes
        count: 8
        seed: 2
        call: walk(n)
  - id: total
    mistakes:
      - reference: total_plus_one
        say: "Nothing to add: the total is the sum."
    cases:
      - call: total([1, 2, 3])
      - call: total([])
'''

# Two cases, both inside the bounds: the mutants of the bounds' tests survive them.
WEAK = '''
assignment: steps
reference: steps.py
limits: {mutation_score: 0.9}
exercises:
  - id: clamp
    cases:
      - call: clamp(0, -5, 5)
      - generate: numbers     # seed 7 draws x = 0: inside the bounds again
        count: 1
        seed: 7
        call: clamp(x, low, high)
        visibility: hidden
'''


def course(tmp_path: Path, rubric: str) -> Path:
    (tmp_path / "steps.py").write_text(textwrap.dedent(REFERENCE))
    path = tmp_path / "steps.yaml"
    path.write_text(textwrap.dedent(rubric))
    return path


def test_every_operator_makes_mutants_that_compile_and_change_only_the_function() -> None:
    source = textwrap.dedent(REFERENCE)
    found = mutants(source, "clamp") + mutants(source, "walk") + mutants(source, "total")
    assert {m.operator for m in found} == set(OPERATORS) - {"boolean"}
    descriptions = {m.description for m in found}
    assert {"< -> <=", "remove line 21: i += 1", "not (x < low)", "return sum(xs)",
            "swap the first two tuple elements", "+ -> -", "0 -> 1"} <= descriptions
    untouched = source.split("def total(")[1]
    for mutant in mutants(source, "clamp"):
        compile(mutant.source, "<mutant>", "exec")
        assert mutant.source.endswith(untouched)
        assert mutant.diff.startswith("--- reference clamp\n+++ mutant clamp\n")
    assert len({m.source for m in found}) == len(found)       # no two mutants are the same code


def test_a_sample_spreads_over_the_operators_and_is_the_same_every_time() -> None:
    found = mutants(textwrap.dedent(REFERENCE), "walk")
    chosen = sample(found, 4, "walk")
    assert chosen == sample(found, 4, "walk")
    assert len({m.operator for m in chosen}) == 4


def test_a_renamed_mutant_keeps_its_recursion_and_a_swapped_mistake_reaches_the_original() -> None:
    source = "def f(n):\n    return 1 if n <= 1 else n * f(n - 1)\n\n\ndef g(n):\n    return f(n) + 1\n"
    mutant = next(m for m in mutants(source, "f") if m.description == "* -> +")
    assert "n + f__m(n - 1)" in mutant.renamed("f__m")
    module = ast.parse(swapped(source, "f", "g"))
    assert [node.name for node in module.body] == ["_reference_f", "f"]
    assert "_reference_f(n) + 1" in ast.unparse(module.body[1])


def test_a_strong_rubric_kills_every_mutant_and_catches_its_known_mistake(tmp_path: Path) -> None:
    validation = validate(course(tmp_path, STRONG), cache=tmp_path / "cache", mutants=5, jobs=2)
    assert validation.problems == ()
    report = validation.mutation
    assert report is not None
    for exercise in report.exercises:
        assert exercise.score == 1.0, [(v.mutant.id, v.status) for v in exercise.verdicts]
        assert exercise.count("killed") >= 3
    [known] = report.known
    assert (known.name, known.kind, known.score, known.recognised, known.problem) == (
        "total_plus_one", "mistake", 0.0, True, "")


def test_a_weak_rubric_shows_its_survivors_with_a_diff_and_the_input_that_would_kill_them(tmp_path: Path) -> None:
    rubric = course(tmp_path, WEAK)
    validation = validate(rubric, cache=tmp_path / "cache", mutants=8, jobs=2)
    clamp = validation.mutation.exercise("clamp")
    assert clamp.score is not None and clamp.score < 0.9
    survivor = clamp.survivors[0]
    assert survivor.mutant.diff.count("\n-") >= 1
    killed_by = [v.killer for v in clamp.survivors if v.killer]
    assert killed_by and all(k.startswith("clamp(x, low, high)  with x=") for k in killed_by)
    assert f"{rubric}:6: exercise 'clamp': mutation score {clamp.score:.0%} is below its threshold 90% " \
           f"({len(clamp.survivors)} surviving mutants)" in validation.problems


def test_a_mutant_that_never_ends_is_dropped_not_counted(tmp_path: Path) -> None:
    validation = validate(course(tmp_path, STRONG), cache=tmp_path / "cache", mutants=40, jobs=2)
    walk = validation.mutation.exercise("walk")
    endless = [v for v in walk.verdicts if v.status == "endless"]
    assert any(v.mutant.description == "remove line 21: i += 1" for v in endless)
    assert walk.score == 1.0


def test_a_known_mistake_that_loses_no_points_fails_validation(tmp_path: Path) -> None:
    rubric = course(tmp_path, STRONG.replace("reference: total_plus_one", "reference: total_same"))
    validation = validate(rubric, cache=tmp_path / "cache", mutants=0)
    line = next(n for n, text in enumerate(rubric.read_text().splitlines(), start=1) if "id: total" in text)
    assert f"{rubric}:{line}: exercise 'total': mistake 'total_same': the known mistake loses no points" \
        in validation.problems


@pytest.mark.parametrize("score", ["1.5", "-1"])
def test_a_mutation_threshold_outside_zero_to_one_is_a_rubric_error(tmp_path: Path, score: str) -> None:
    from grader.rubric.schema import RubricError, load_rubric
    with pytest.raises(RubricError):
        load_rubric(course(tmp_path, WEAK.replace("mutation_score: 0.9", f"mutation_score: {score}")))


TILES = '''
def misplaced(tiles):
    """Tiles out of place, the blank 0 not counted."""
    count = 0
    for tile in tiles:
        if tile != 0:
            count += 1
    return count


def misplaced_with_blank(tiles):
    """The blank counted too: an accepted variant."""
    return len(tiles)
'''

TILES_RUBRIC = '''
assignment: tiles
reference: tiles.py
limits: {mutation_score: 1.0}
exercises:
  - id: misplaced
    variants:
      - reference: misplaced_with_blank
        say: "counting the blank too is accepted"
    cases:
      - call: misplaced((0, 1, 2))
      - call: misplaced((3, 0, 0, 4))
      - call: misplaced((5,))
      - call: misplaced((1, 2, 3))
'''


def test_a_mutant_that_answers_as_an_accepted_variant_is_equivalent_not_a_survivor(tmp_path: Path) -> None:
    """`tile != 0` -> `tile != -1` counts the blank: that is the accepted variant, which grading gives full marks."""
    (tmp_path / "tiles.py").write_text(TILES)
    (tmp_path / "tiles.yaml").write_text(TILES_RUBRIC)
    validation = validate(tmp_path / "tiles.yaml", cache=tmp_path / "cache", mutants=40, jobs=2)
    misplaced = validation.mutation.exercise("misplaced")
    blank = [v for v in misplaced.verdicts if "tile != -1" in v.mutant.diff]
    assert [(v.status, v.reason) for v in blank] == [
        ("equivalent", "answers as the accepted variant 'misplaced_with_blank' on every case")]
    assert misplaced.score == 1.0 and misplaced.count("killed") >= 2, [
        (v.mutant.description, v.status) for v in misplaced.verdicts]
    assert validation.problems == ()


def test_mutants_of_a_reference_that_imports_course_modules_are_screened_as_the_plain_ones(tmp_path: Path) -> None:
    """A reference importing a support module at its top (`import bounds`) and a sibling of its folder inside a
    function, at call time: every mutant failed to load ('No module named bounds': only the reference's folder
    was on sys.path, and only while it loaded), so none was screened, each was graded in the sandbox, and one that
    answers as the reference (equivalent) was called a survivor. Now its verdicts are the plain reference's."""
    (tmp_path / "plain").mkdir()
    plain = validate(course(tmp_path / "plain", STRONG), cache=tmp_path / "cache1", mutants=40, jobs=2)
    folder = tmp_path / "imports"
    (folder / "support").mkdir(parents=True)
    (folder / "support" / "bounds.py").write_text("LOW, HIGH = -5, 5\n")
    (folder / "zero.py").write_text("ZERO = 0\n")
    reference = textwrap.dedent(REFERENCE).replace("import random\n", "import random\n\nimport bounds\n").replace(
        "def total(xs):\n    return sum(xs) + 0 * len(xs)",
        "def total(xs):\n    from zero import ZERO\n    return sum(xs) + ZERO * len(xs)")
    (folder / "steps.py").write_text(reference)
    (folder / "steps.yaml").write_text(textwrap.dedent(STRONG).replace("reference: steps.py\n",
                                                                       "reference: steps.py\nsupport: support\n"))
    imports = validate(folder / "steps.yaml", cache=tmp_path / "cache2", mutants=40, jobs=2)
    assert imports.problems == (), imports.problems
    for exercise in imports.mutation.exercises:
        assert not any("fails to load" in v.reason for v in exercise.verdicts), \
            [(v.mutant.id, v.reason) for v in exercise.verdicts]
        assert exercise.count("equivalent") == plain.mutation.exercise(exercise.exercise).count("equivalent")
        assert exercise.count("survived") == 0
    assert imports.mutation.exercise("clamp").count("equivalent") >= 1


def test_a_score_from_few_graded_mutants_says_so_and_how_to_grade_more() -> None:
    """A search's sampled mutants mostly never end: '100%' from 2 graded mutants of 6 read as proof (session 19: a
    15-puzzle IDA* whose check accepted the start board alone as a path; --mutants 40 showed the survivors)."""
    from grader.authoring.mutants import Mutant
    from grader.authoring.mutation import ExerciseMutation, MutantVerdict, MutationReport, describe

    def verdicts(*statuses: str) -> tuple[MutantVerdict, ...]:
        return tuple(MutantVerdict(Mutant(f"ida:m{i}", "ida", "statement", 1, "remove a line", "", ""), status)
                     for i, status in enumerate(statuses))

    few = ExerciseMutation("ida_star", 51, verdicts("killed", "killed", *["endless"] * 4))
    enough = ExerciseMutation("manhattan", 30, verdicts(*["killed"] * 5, "equivalent"))
    every = ExerciseMutation("tiny", 6, verdicts("killed", *["endless"] * 5))     # no other mutant to sample
    lines = describe(MutationReport((few, enough, every), (), 1.0, 6))
    assert lines[2] == ("    only 2 of the 6 sampled mutants could be graded (4 endless, 0 equivalent): a score of so "
                        "few says little; --mutants 24 samples more of the 51")
    assert not any(line.startswith("    only") for line in lines[3:])


LENIENT = """
assignment: steps
reference: steps.py
exercises:
  - id: walk
    check: a_list
    cases:
      - generate: sizes
        count: 8
        seed: 2
        call: walk(n)
"""


def test_a_survivor_the_check_let_through_says_its_answer_was_accepted(tmp_path: Path) -> None:
    """A mutant whose answers differ from the reference's and lose nothing was taken by the rubric's checks: the
    report says so beside the answer, the first thing to read when a check is too lenient (session 19: a path check
    that took the start board alone as a path; the survivor read only 'differs on case ida_star#2: [...]')."""
    rubric = course(tmp_path, LENIENT)
    with (tmp_path / "steps.py").open("a") as reference:
        reference.write("\n\ndef a_list(got):\n    return isinstance(got, list)\n")
    validation = validate(rubric, cache=tmp_path / "cache", mutants=8, jobs=2)
    walk = validation.mutation.exercise("walk")
    taken = [v for v in walk.survivors if v.reason.startswith("differs on case walk.sizes[")]
    assert taken and all(v.reason.endswith(", an answer the rubric accepted") for v in taken), walk.survivors


HIDDEN_TWICE = """
assignment: steps
reference: steps.py
exercises:
  - id: total
    cases:
      - call: total([1, 2, 3])
      - call: total([1, 2, 3])
        visibility: hidden
      - call: total([4])
        visibility: hidden
  - id: clamp
    cases:
      - call: clamp(0, -5, 5)
      - call: clamp(0 * 7, -5, 5)
        visibility: hidden
      - call: clamp(1, -5, 5)
        visibility: hidden
"""


def _none_on_the_bundled_rubrics(warnings_of, cache: Path) -> None:
    """A validate warning about hidden cases says nothing of the bundled rubrics' plans."""
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric

    for bundled in sorted((Path(__file__).resolve().parents[1] / "rubrics").glob("*.yaml")):
        assert warnings_of(build_plan(load_rubric(bundled), cache)) == [], bundled


def test_a_hidden_case_that_asks_what_a_public_one_asks_is_a_warning(tmp_path: Path, grader_cache: Path) -> None:
    """A hidden case asking what a public case asks (written twice, or a generator drawing a public case's board:
    session 19's 15-puzzle drew EASY for a hidden manhattan case) has its input and answer in every kit. Calls on
    submission code are compared by their text and the generated values they read: the bundled 8-puzzle's
    `EightPuzzle(state).h1(Node(state))` asks something else for each state."""
    from grader.authoring.validate import hidden_in_kit_warnings

    rubric = course(tmp_path, HIDDEN_TWICE)
    validation = validate(rubric, cache=tmp_path / "cache", mutants=0)
    assert validation.ok, validation.problems
    twice = [w for w in validation.warnings if "hidden case" in w]
    assert twice == [
        f"{rubric}:8: exercise 'total': hidden case total#2 asks what public case total#1 (total([1, 2, 3])) asks: "
        "that input and its answer are in every student's kit; give the hidden case another input",
        f"{rubric}:15: exercise 'clamp': hidden case clamp#2 asks what public case clamp#1 (clamp(0, -5, 5)) asks: "
        "that input and its answer are in every student's kit; give the hidden case another input"]
    _none_on_the_bundled_rubrics(hidden_in_kit_warnings, grader_cache)


ENDLESS = """
assignment: steps
reference: steps.py
limits: {case_seconds: 0.2, submission_seconds: 1}
exercises:
  - id: total
    mistakes:
      - reference: total_forever
        say: "A loop that never ends."
    cases:
      - call: total([1, 2, 3])
"""


def test_a_reference_answer_that_never_ends_is_a_rubric_error_and_a_mistake_that_never_ends_is_left_out(
        tmp_path: Path) -> None:
    """Expected values had no limit: a known mistake that never ends on a case (a search without its visited set)
    or a reference case no student could finish (a 15-puzzle board of Korf's set) left validate, assign and grade
    running with no word (session 19). The reference gets a whole submission's CPU time, a known mistake a
    student's time for the case; both at the rubric's limits (here 1 s and 0.2 s)."""
    from grader.rubric.schema import RubricError

    rubric = course(tmp_path, ENDLESS)
    forever = "\n\ndef total_forever(xs):\n    while True:\n        pass\n"
    with (tmp_path / "steps.py").open("a") as reference:
        reference.write(forever)
    validation = validate(rubric, cache=tmp_path / "cache", mutants=0)
    assert validation.problems == (f"{rubric}:6: exercise 'total': mistake 'total_forever': the known mistake loses "
                                   "points but its message is never shown (no failing case has its answer)",)
    rubric.write_text(rubric.read_text().replace("call: total([1, 2, 3])", "call: total_forever([1, 2, 3])"))
    with pytest.raises(RubricError) as error:
        validate(rubric, cache=tmp_path / "cache", mutants=0)
    assert f"{rubric}:11: exercise 'total', case total#1: the reference did not answer 'total_forever([1, 2, 3])' " \
           "within 1 s of CPU time (limits.submission_seconds" in str(error.value)


QUOTED = """
assignment: steps
reference: steps.py
exercises:
  - id: total
    hints: ["Try it on [10, 20, 30, 40] by hand first."]
    mistakes:
      - reference: total_plus_one
        say: "Nothing to add: the total of (7, 7, 7, 7) is 28."
    cases:
      - call: total([1, 2, 3])
      - call: total([10, 20, 30, 40])
        visibility: hidden
      - call: total((7, 7, 7, 7))
        visibility: hidden
      - call: total([5, 6, 7])
        visibility: hidden
"""


def test_a_hidden_input_written_in_a_hint_or_a_mistakes_say_is_a_warning(tmp_path: Path, grader_cache: Path) -> None:
    """Hints and a known mistake's `say` are read by every student (the kit ships them): a hidden case whose input
    they write out is published (session 19: a 15-puzzle hint quoting the board a hidden case tests). A tuple
    written as a list counts; short values (a count) and the bundled rubrics' texts do not."""
    from grader.authoring.validate import hidden_in_text_warnings

    rubric = course(tmp_path, QUOTED)
    validation = validate(rubric, cache=tmp_path / "cache", mutants=0)
    assert validation.ok, validation.problems
    quoted = [w for w in validation.warnings if "writes out" in w]
    assert quoted == [
        f"{rubric}:5: exercise 'total': the hint writes out [10, 20, 30, 40], the input of hidden case total#2 "
        "(line 12): every student reads it; test another input or leave it out",
        f"{rubric}:8: exercise 'total': the mistake total_plus_one's say writes out (7, 7, 7, 7), the input of "
        "hidden case total#3 (line 14): every student reads it; test another input or leave it out"]
    _none_on_the_bundled_rubrics(hidden_in_text_warnings, grader_cache)
