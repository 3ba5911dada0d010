"""Authoring mistakes are found before a class is graded: each with its file, line and (where it helps) a guess."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.authoring.findings import authoring_findings
from grader.plan.cases import build_plan
from grader.rubric.schema import RubricError, load_rubric
from testclock import within

REFERENCE = '''
import random

Start = (3, 1, 2)


def rotate(state):
    return state[1:] + state[:1]


def rotate_back(state):
    return state[-1:] + state[:-1]


def rotate_same(state):
    """Listed as a mistake, but it is the reference itself."""
    return state[1:] + state[:1]


def rotate_tuple(state):
    """Listed as a mistake: it does differ, but the loose check accepts it."""
    return tuple(reversed(state))


def check_loose(got, expected, options):
    """Any permutation passes; the option `strict` is the only one it reads."""
    if options.get("strict"):
        return got == expected
    return sorted(got) == sorted(expected), "not a permutation"


def check_broken(got, expected):
    if got == expected:
        return "yes"                                   # not a verdict: the contract says bool or (x, message)
    return False, "differs"


def check_crashes(got, expected):
    return got[10] == expected                          # IndexError on every answer


def tuples(rng, count):
    return [{"state": tuple(rng.sample(range(9), rng.randint(2, 5)))} for _ in range(count)]


def short(rng, count):
    return [{"state": (1, 2)}]
'''

RUBRIC = '''
assignment: rot
reference: rot.py
fixtures: [Start]
exercises:
  - id: rotate
    mistakes:
      - reference: rotate_back
        say: "The other way round."
    cases:
      - call: rotate(Start)
      - generate: tuples
        count: 4
        seed: 1
        call: rotate(state)
'''


def write(tmp_path: Path, rubric: str = RUBRIC, reference: str = REFERENCE) -> Path:
    (tmp_path / "rot.py").write_text(textwrap.dedent(reference))
    path = tmp_path / "rot.yaml"
    path.write_text(textwrap.dedent(rubric))
    return path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def findings(path: Path) -> list[str]:
    return [str(f) for f in authoring_findings(build_plan(load_rubric(path)))]


def problems(path: Path) -> list[str]:
    with pytest.raises(RubricError) as raised:
        build_plan(load_rubric(path))
    return raised.value.problems


def test_a_sound_rubric_has_no_findings(tmp_path: Path) -> None:
    assert findings(write(tmp_path)) == []


def test_misspelt_options_of_builtin_and_reference_checks_get_a_guess(tmp_path: Path) -> None:
    rubric = write(tmp_path, RUBRIC.replace("    mistakes:", "    check: {name: equal, tolerence: 0.1}\n    mistakes:")
                   + "      - call: rotate(Start)\n        check: {name: check_loose, strikt: true}\n"
                   + "      - call: rotate(Start)\n"
                     "        check: {name: path, next_states: rotate, start: Start, goal: Start, "
                     "suboptimal_credt: 0.2}\n")
    found = problems(rubric)
    assert f"{rubric}:{line_of(rubric, 'tolerence')}: exercise 'rotate': unknown option 'tolerence' of the equal " \
           f"check (did you mean 'tolerance'?)" in found
    assert any(f":{line_of(rubric, 'strikt')}:" in p and "unknown option 'strikt' of check check_loose (did you "
               "mean 'strict'?)" in p for p in found)
    assert any("unknown option 'suboptimal_credt' of the path check (did you mean 'suboptimal_credit'?)" in p
               for p in found)


def test_a_misspelt_mistake_name_gets_a_guess(tmp_path: Path) -> None:
    rubric = write(tmp_path, RUBRIC.replace("reference: rotate_back", "reference: rotate_bak"))
    assert problems(rubric) == [f"{rubric}:{line_of(rubric, 'rotate_bak')}: exercise 'rotate': mistake 'rotate_bak' "
                                f"is not a function of the reference module (did you mean 'rotate_back'?)"]


def test_a_generator_short_of_its_count_is_a_problem(tmp_path: Path) -> None:
    rubric = write(tmp_path, RUBRIC.replace("generate: tuples", "generate: short"))
    assert problems(rubric) == [f"{rubric}:{line_of(rubric, 'generate: short')}: generator 'short' returned 1 case "
                                f"for count 4: lower the count or make it produce more"]


def test_a_generated_case_without_seed_is_found_when_its_generator_uses_it(tmp_path: Path) -> None:
    rubric = write(tmp_path, RUBRIC.replace("        seed: 1\n", ""))
    assert findings(rubric) == [f"{rubric}:{line_of(rubric, 'generate: tuples')}: exercise 'rotate': generated case "
                                f"'tuples' has no 'seed', but its cases depend on it: write one (e.g. seed: 1) so "
                                f"the cases are chosen on purpose and stay the same"]


def test_a_mistake_identical_to_the_reference_and_one_the_check_accepts_are_found(tmp_path: Path) -> None:
    rubric = write(tmp_path, RUBRIC.replace('''        say: "The other way round."''',
                                            '''        say: "The other way round."
      - reference: rotate_same
        say: "Same."
      - reference: rotate_tuple
        say: "Reversed."
    check: check_loose'''))
    found = findings(rubric)
    assert f"{rubric}:{line_of(rubric, 'rotate_same')}: exercise 'rotate': mistake 'rotate_same' gives the " \
           f"reference's answer on every case: it is not a mistake, or no case tells them apart" in found
    assert f"{rubric}:{line_of(rubric, 'rotate_tuple')}: exercise 'rotate': mistake 'rotate_tuple' passes every " \
           f"case's check: it would lose no points" in found
    assert f"{rubric}:{line_of(rubric, 'rotate_back')}: exercise 'rotate': mistake 'rotate_back' passes every " \
           f"case's check: it would lose no points" in found


def test_check_contract_errors_name_the_references_own_file_and_line(tmp_path: Path) -> None:
    rubric = write(tmp_path, RUBRIC.replace("    mistakes:", "    check: check_broken\n    mistakes:"))
    reference = tmp_path / "rot.py"
    found = findings(rubric)
    assert found[0] == (f"{reference}:{line_of(reference, 'def check_broken')}: exercise 'rotate': check "
                        f"check_broken fails on the reference's own answer to case rotate#1: CheckError: check "
                        f"check_broken returned 'yes'; expected bool, (bool, message) or (fraction, message) "
                        f"(and 4 more cases)")
    rubric = write(tmp_path, RUBRIC.replace("    mistakes:", "    check: check_crashes\n    mistakes:"))
    found = findings(rubric)
    assert f"{reference}:{line_of(reference, 'got[10]')}: exercise 'rotate': check check_crashes fails on the " \
           f"reference's own answer to case rotate#1: IndexError: tuple index out of range (and 4 more cases)" in found
    assert any(f.startswith(f"{reference}:{line_of(reference, 'got[10]')}:") and "answer of mistake 'rotate_back'"
               in f for f in found)


def test_the_reference_imports_sibling_modules_and_support_modules(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text("SIZE = 3\n")
    support = tmp_path / "support"
    support.mkdir()
    (support / "helpers.py").write_text("def first(t):\n    return t[0]\n")
    reference = REFERENCE.replace("import random\n", "import random\nimport shapes\nfrom helpers import first\n")
    rubric = write(tmp_path, "support: support\n" + RUBRIC, reference)
    assert findings(rubric) == []


def test_a_failing_import_in_the_reference_names_its_line(tmp_path: Path) -> None:
    reference = REFERENCE.replace("import random\n", "import random\n\n\nimport no_such_sibling\n")
    rubric = write(tmp_path, RUBRIC, reference)
    path = tmp_path / "rot.py"
    [problem] = problems(rubric)
    assert problem.startswith(f"{path}:{line_of(path, 'import no_such_sibling')}: the reference module fails to "
                              f"import: ModuleNotFoundError: No module named 'no_such_sibling'")


def test_a_reference_with_sibling_imports_validates_graded_as_a_submission(tmp_path: Path) -> None:
    from grader.authoring.validate import validate
    (tmp_path / "shapes.py").write_text("def turn(t):\n    return t[1:] + t[:1]\n")
    reference = REFERENCE.replace("import random\n", "import random\nfrom shapes import turn\n").replace(
        "def rotate(state):\n    return state[1:] + state[:1]", "def rotate(state):\n    return turn(state)")
    validation = validate(write(tmp_path, RUBRIC, reference), cache=tmp_path / "cache", mutants=2)
    assert validation.problems == ()
    assert validation.reference_result.total == 1


def test_a_variant_that_answers_like_a_known_mistake_is_found(tmp_path: Path) -> None:
    """Variants come from the rubric's `variants:`; here an exercise carries one the way the parser gives it."""
    from dataclasses import replace

    from grader.rubric.schema import Variant

    rubric_path = write(tmp_path)
    plan = build_plan(load_rubric(rubric_path))
    [exercise] = plan.rubric.exercises
    copied = replace(exercise, variants=(Variant("rotate_back", line=99), Variant("rotate_tuple", line=98),
                                         Variant("rotate_back", when=(("rotate", "rotate_back"),), line=97)))
    plan = replace(plan, rubric=replace(plan.rubric, exercises=(copied,)))
    found = [str(f) for f in authoring_findings(plan)]
    assert found == [f"{rubric_path}:99: exercise 'rotate': variant 'rotate_back' gives the answers of mistake "
                     f"'rotate_back' on every case: the same notebook would be accepted and told it is wrong"]


def test_a_case_naming_what_only_the_reference_defines_is_found(tmp_path: Path) -> None:
    """`Other` is the reference's but neither a fixture nor the template's: the reference passes, every student's
    case would end in a NameError. Names the template defines, fixtures, variables and a case's own walrus are fine."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    reference = REFERENCE + "\nOther = (2, 3, 1)\n"
    rubric = RUBRIC.replace("reference: rot.py", "reference: rot.py\ntemplate: template.ipynb") + (
        "      - call: rotate(Other)\n      - call: rotate(GIVEN)\n"
        "      - call: (s := rotate(Start)) and rotate(s)\n")
    path = write(tmp_path, rubric, reference + "\nGIVEN = (1, 2)\n")
    nbformat.write(new_notebook(cells=[new_code_cell("GIVEN = (1, 2)\n\ndef rotate(state):\n    ...")]),
                   tmp_path / "template.ipynb")
    line = line_of(path, "rotate(Other)")
    assert findings(path) == [
        f"{path}:{line}: exercise 'rotate': case rotate#3 uses 'Other', which students' notebooks do not define (the "
        f"template does not, and it is neither a fixture nor a generated variable): every student's case would fail "
        f"with a NameError while the reference passes. Add 'Other' to 'fixtures:' if it is data of the reference, or "
        f"define it in code the template gives"]


def test_an_expect_the_reference_does_not_make_is_named_at_its_case_with_both_values(tmp_path: Path) -> None:
    """A case's `expect:` the reference's answer fails: validate said 'rot.yaml: the reference scores 0.8/1 on
    exercise rotate: rotate#1: fail: ... <the known mistake's advice>' (no line, and the advice of a mistake whose
    answer the reference's happens to be there, which is none to the author). Now the case's line, the expect and
    what the reference returns; `grader validate` as a subprocess."""
    import subprocess
    import sys
    reference = REFERENCE + textwrap.dedent('''

        def rotate_when_three(state):
            """A known mistake that answers as the reference does on three tiles only."""
            return state[1:] + state[:1] if len(state) == 3 else state
        ''')
    rubric = RUBRIC.replace("      - reference: rotate_back\n", "      - reference: rotate_when_three\n").replace(
        "      - call: rotate(Start)\n", "      - call: rotate(Start)\n        expect: \"(2, 3, 1)\"\n")
    path = write(tmp_path, rubric, reference)
    done = subprocess.run([sys.executable, "-m", "grader", "validate", str(path), "--mutants", "0", "--cache",
                           str(tmp_path / "cache")], capture_output=True, text=True, timeout=within(300), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    shown = done.stdout + done.stderr
    assert (f"{path}:{line_of(path, 'call: rotate(Start)')}: exercise 'rotate', case rotate#1: the reference, graded "
            f"as a submission, scores ") in shown, shown
    assert "its expect: (2, 3, 1) is not what the reference makes: it returns (1, 2, 3), and check equal rejects " \
           "it against (2, 3, 1)" in shown, shown
    assert "The other way round" not in shown


def test_an_object_sent_as_a_fixture_is_found_at_its_first_case(tmp_path: Path) -> None:
    """`CLASSIC = Problem(3, 3, 2)` in `fixtures:` (session 21's river-crossing master): the notebook got an opaque
    stand-in and the reference itself failed on "'Opaque' object has no attribute 'initial'", which names neither
    the fixture nor the cause. A fixture read for its data (`Box.items`) is fine."""
    reference = REFERENCE + (
        "\n\nclass Box:\n    def __init__(self, items):\n        self.items = items\n\n"
        "    def __getitem__(self, index):\n        return self.items[index]\n\n\nBOX = Box((1, 2, 3))\n")
    rubric = RUBRIC.replace("fixtures: [Start]", "fixtures: [Start, BOX]") + (
        "      - call: rotate(BOX)\n      - call: rotate(BOX)\n      - call: rotate(BOX.items)\n")
    path = write(tmp_path, rubric, reference)
    found = [f for f in findings(path) if "opaque" in f]
    assert found == [
        f"{path}:{line_of(path, 'rotate(BOX)')}: exercise 'rotate': case rotate#3 sends fixture 'BOX', a Box, to the "
        f"notebook, which gets an opaque stand-in, not the object: a case's fixtures and variables reach the notebook "
        f"as data (None, bool, int, float, str, bytes, tuple, list, dict, set, frozenset). Send the data the object "
        f"is made of and build it in the call (`Box(...)`, the notebook's own class), or send only its data "
        f"(`BOX.attribute`) (1 more cases)"]
