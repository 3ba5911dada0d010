"""Gradescope: results.json in Gradescope's published schema, and the autograder zip run against a fake /autograder.

The schema checked here is the one of Gradescope's "Autograder Specifications" page
(gradescope-autograders.readthedocs.io/en/latest/specs/). The zip's run_autograder is run with bash exactly
as Gradescope would, with $AUTOGRADER_ROOT pointing at a tree under tmp_path and $PYTHON at this interpreter
(setup.sh is never run: it installs packages).
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from testclock import within
from grader.run.autograder import MANIFEST, build_autograder, run
from grader.run.batch import grade
from grader.plan.cases import build_plan
from grader.report.gradescope import split_units, to_gradescope, write_gradescope
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult
from grader.rubric.schema import load_rubric
from grader import codec
from grader.intake.warning import GraderWarning, Kind

from conftest import NOTEBOOKS, RUBRIC, SUBMISSIONS

TRANSPOSED = SUBMISSIONS / "move-dir-transposed.ipynb"     # fails move_dir's public cases: expected vs got
INT_TILES = SUBMISSIONS / "int-tiles.ipynb"      # 23.1667: replace_numbers's 7/12 share, so the split must round

# From the specification's results.json example and its "Output String Formatting" and visibility sections.
TOP_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
            "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
             "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "simple_format", "html", "md", "ansi"}


def assert_gradescope_schema(data: dict) -> None:
    """Every key is one the specification names, with the type it shows there."""
    assert json.loads(json.dumps(data)) == data           # plain JSON data
    assert set(data) <= TOP_KEYS, set(data) - TOP_KEYS
    assert isinstance(data["score"], (int, float)) and not isinstance(data["score"], bool)
    assert isinstance(data["output"], str)
    assert data["visibility"] in VISIBILITIES and data["stdout_visibility"] in VISIBILITIES
    for key in ("output_format", "test_output_format", "test_name_format"):
        assert data.get(key, "text") in FORMATS
    assert isinstance(data.get("execution_time", 0), int)
    assert isinstance(data.get("extra_data", {}), dict)
    assert isinstance(data["tests"], list)
    for test in data["tests"]:
        assert set(test) <= TEST_KEYS, set(test) - TEST_KEYS
        assert isinstance(test["name"], str) and test["name"]
        assert isinstance(test["number"], str)
        assert all(isinstance(test[k], float) for k in ("score", "max_score"))
        assert 0 <= test["score"] <= test["max_score"]
        assert test["status"] in ("passed", "failed")
        assert isinstance(test["output"], str)
        assert isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])
        assert test["visibility"] in VISIBILITIES
        assert isinstance(test["extra_data"], dict)


def decimal_sum(values) -> Decimal:
    return sum((Decimal(str(v)) for v in values), Decimal(0))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> dict[str, SubmissionResult]:
    out = tmp_path_factory.mktemp("gradescope-graded")
    results = grade([TRANSPOSED, INT_TILES], RUBRIC, out, jobs=2, cache=grader_cache)
    return {result.submission: result for result in results}


# ------------------------------------------------------------------------------------------- results.json


def test_results_json_follows_the_gradescope_schema(graded: dict[str, SubmissionResult]) -> None:
    for result in graded.values():
        data = to_gradescope(result)
        assert_gradescope_schema(data)
        assert data["score"] == result.total
        assert data["stdout_visibility"] == "hidden"


def test_each_case_is_one_test_and_the_tests_add_up_exactly_to_the_total(graded: dict[str, SubmissionResult]) -> None:
    for result in graded.values():
        tests = to_gradescope(result)["tests"]
        cases = [(exercise, case) for exercise in result.exercises for case in exercise.cases]
        assert len(tests) == len(cases)
        assert decimal_sum(t["score"] for t in tests) == Decimal(str(result.total))
        assert decimal_sum(t["max_score"] for t in tests) == Decimal(str(result.max_total))
        for exercise in result.exercises:
            own = [t for t in tests if t["extra_data"]["exercise"] == exercise.id]
            assert decimal_sum(t["score"] for t in own) == Decimal(str(exercise.score)), exercise.id
            assert decimal_sum(t["max_score"] for t in own) == Decimal(str(exercise.max_score)), exercise.id
        for test, (exercise, case) in zip(tests, cases, strict=True):
            assert test["name"].startswith(f"{exercise.id}: ")
            assert test["status"] == ("passed" if case.status == "pass" else "failed")
    assert graded["int-tiles"].total == 23.1667     # the split really had to round


def test_hidden_cases_are_shown_after_publishing_without_their_answers(graded: dict[str, SubmissionResult]) -> None:
    result = graded["move-dir-transposed"]
    tests = to_gradescope(result)["tests"]
    cases = [case for exercise in result.exercises for case in exercise.cases]
    hidden = [(t, c) for t, c in zip(tests, cases, strict=True) if c.visibility == "hidden"]
    public = [(t, c) for t, c in zip(tests, cases, strict=True) if c.visibility == "public"]
    assert hidden and public
    assert all(t["visibility"] == "after_published" for t, _ in hidden)
    assert all(t["visibility"] == "visible" for t, _ in public)
    failed_hidden = [(t, c) for t, c in hidden if c.status == "fail"]
    assert failed_hidden                               # move_dir's hidden cases fail too
    for test, case in failed_hidden:
        assert "expected" not in test["output"] and "got" not in test["output"]
        # the message quotes the expected value and the notebook's answer, which can spell the hidden input
        assert case.message and case.message not in test["output"]
        assert codec.describe(case.got, 600) not in test["output"]


def test_the_summary_counts_only_public_failures_before_grades_are_published(
        graded: dict[str, SubmissionResult]) -> None:
    """The top-level text every student sees at once said "13 cases fail the same way" of move_dir, whose 11 hidden
    cases Gradescope shows only once grades are published: it counts the 2 public cases now."""
    result = graded["move-dir-transposed"]
    move_dir = result.exercise("move_dir")
    public = [c for c in move_dir.cases if c.visibility == "public"]
    counted = [int(note.split()[0]) for note in move_dir.notes if " cases fail the same way" in note]
    assert counted and counted[0] > len(public)            # the judge's note counts the hidden failures too
    output = to_gradescope(result)["output"]
    assert f"{counted[0]} cases fail the same way" not in output
    assert f"note: {len(public)} cases fail the same way" in output
    assert "x runs along a row" in output                  # the rubric's hints stay, in their place


def test_a_failing_public_case_shows_expected_beside_got(graded: dict[str, SubmissionResult]) -> None:
    result = graded["move-dir-transposed"]
    case = next(c for c in result.exercise("move_dir").cases if c.visibility == "public" and c.status == "fail")
    test = next(t for t in to_gradescope(result)["tests"] if t["extra_data"]["case"] == case.id)
    assert test["name"] == f"move_dir: {case.call}"
    assert f"expected: {codec.describe(case.expected, 600)}" in test["output"]
    assert f"got:      {codec.describe(case.got, 600)}" in test["output"]
    assert case.message in test["output"]
    assert test["score"] == 0.0 and test["max_score"] > 0


def test_the_summary_names_the_isolation_level_and_every_warning(graded: dict[str, SubmissionResult]) -> None:
    import dataclasses
    # A missing module is the TA's information now (`environment`), so this notebook has no warning of its own.
    result = dataclasses.replace(graded["int-tiles"],
                                 warnings=(GraderWarning(Kind.SYNTAX, "cell left out: SyntaxError: expected ':'",
                                                         "SyntaxError", cell=53, label="In [17] (cell 54)", line=1),))
    output = to_gradescope(result)["output"]
    assert f"isolation: {result.isolation}" in output
    assert html.escape("In [17] (cell 54), line 1: cell left out: SyntaxError: expected ':'", quote=False) in output
    assert "23.1667 / 30" in output


def test_write_gradescope_writes_the_same_json(graded: dict[str, SubmissionResult], tmp_path: Path) -> None:
    result = graded["move-dir-transposed"]
    path = write_gradescope(result, tmp_path / "results" / "results.json")
    data = to_gradescope(result)
    assert json.loads(path.read_text(encoding="utf-8")) == data
    # A line per top-level key and per test ({, the keys, "tests": [, the tests, ], }): a TA can grep a case.
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(data) + len(data["tests"]) + 3


def test_split_units_is_exact_and_respects_caps() -> None:
    assert split_units(20000, [1.0] * 12) == [1667] * 8 + [1666] * 4
    assert split_units(10, [1, 1, 1], caps=[2, 5, 5]) == [2, 4, 4]
    assert split_units(7, [0, 0]) == [0, 7]                      # nothing to go by: the sum still holds
    assert split_units(0, [1, 2, 3]) == [0, 0, 0]


def test_a_passing_case_of_a_zero_scored_exercise_is_marked_passed() -> None:
    """All-or-nothing: one failure zeroes the exercise, yet the case that passed must not look failed."""
    cases = (CaseResult("x#1", "pass", "public", "", call="x(1)", fraction=1.0),
             CaseResult("x#2", "fail", "public", "wrong", call="x(2)", expected=1, got=2))
    exercise = ExerciseResult("x", "X", 0.0, 3.0, cases)
    result = SubmissionResult("s", "s.ipynb", "", "r", "", "0", "rlimits", 0.0, 3.0, (exercise,))
    tests = to_gradescope(result)["tests"]
    assert [(t["score"], t["max_score"], t["status"]) for t in tests] == [(0.0, 1.5, "passed"), (0.0, 1.5, "failed")]


def test_a_case_the_submission_budget_skipped_says_so_in_every_writer() -> None:
    """Its status is "error" (it shows as one), but its reason is the budget: no writer may say it raised."""
    from grader.report.student import hidden_summary, html_page, markdown_page
    from grader.report.formats import Page
    skipped = dict(status="error", message="the submission's time budget is spent", reason="budget",
                   cause="not run: the submission's time budget was spent")
    cases = (CaseResult("x#1", visibility="public", call="x(1)", **skipped),
             CaseResult("x#2", visibility="hidden", call="x(2)", **skipped),
             CaseResult("x#3", "error", "hidden", "KeyError: 5", call="x(3)", reason="error", error="KeyError: 5"))
    result = SubmissionResult("s", "s.ipynb", "", "r", "", "0", "rlimits", 0.0, 3.0,
                              (ExerciseResult("x", "X", 0.0, 3.0, cases),))
    outputs = [t["output"] for t in to_gradescope(result)["tests"]]
    assert outputs[0].startswith("not run (the submission's time budget was spent)")
    assert outputs[1].startswith("not run (the submission's time budget was spent)")
    assert outputs[2].startswith("raised an error") and "KeyError: 5" not in outputs[2]   # hidden: 5 may be its input
    markdown = markdown_page(Page(result, hidden_details=True))
    assert "— not run (the submission's time budget was spent)" in markdown
    assert "raised an error" in markdown     # the third case did raise
    assert hidden_summary(cases) == ("2 hidden cases: 1 not run (the submission's time budget was spent), "
                                     "1 raised an error")
    page = html_page(Page(result))
    assert "not run (the submission&#39;s time budget was spent)" in page or \
        "not run (the submission's time budget was spent)" in page
    from grader.report.class_report import class_report_html
    dashboard = class_report_html([result])      # the troubles table names the first case's status in words
    assert "not run (the submission&#39;s time budget was spent)</span>" in dashboard or \
        "not run (the submission's time budget was spent)</span>" in dashboard


# ---------------------------------------------------------------------------------------------- the zip


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: building the wheel takes a few seconds (pip fetches the build backend)."""
    return build_autograder(RUBRIC, tmp_path_factory.mktemp("gradescope-zip") / "autograder.zip")


slow = pytest.mark.slow     # every test below uses the zip, whose wheel takes 5-15 s to build


def fake_tree(zip_path: Path, root: Path, submission: Path | None) -> Path:
    """/autograder as Gradescope lays it out: the zip in source/, the student's files in submission/."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir(parents=True)
    if submission is not None:
        shutil.copy(submission, root / "submission" / submission.name)
    return root


def run_autograder(root: Path, python: str = sys.executable) -> dict:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": python}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=within(300))
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@slow
def test_the_zip_holds_the_scripts_the_course_files_and_the_wheel_only(autograder_zip: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        manifest = json.loads(archive.read(MANIFEST))
        rubric = yaml.safe_load(archive.read(manifest["rubric"]))
    names = set(infos)
    assert {"setup.sh", "run_autograder", "course/taoistic-search.yaml", "course/reference/taoistic_search.py",
            "course/support/Set.py"} <= names
    for script in ("setup.sh", "run_autograder"):
        assert (infos[script].external_attr >> 16) & 0o111, f"{script} is not executable"
    assert manifest["package"] == "wheel", manifest["package_note"]
    assert [n for n in names if n.startswith("wheels/")] == [n for n in names if n.endswith(".whl")]
    assert len([n for n in names if n.endswith(".whl")]) == 1
    assert not [n for n in names if n.endswith(".ipynb")]               # no template, no example submissions
    assert [n for n in names if n.endswith((".yaml", ".yml"))] == ["course/taoistic-search.yaml"]
    assert not [n for n in names if "__pycache__" in n]
    assert rubric["reference"] == "reference/taoistic_search.py" and rubric["support"] == "support"
    assert "submissions" not in rubric and "template" not in rubric


@slow
def test_a_second_zip_of_the_same_source_takes_the_sealed_wheel_from_the_cache(tmp_path: Path) -> None:
    """`grader gradescope` ran `pip wheel` for every zip (~9 s wall: an isolated build installs its backend).
    The second zip of the same checkout takes the wheel the first built, byte for byte (a new build differs in
    its files' times), from the cache folder; a cached wheel whose seal does not verify is built again."""
    cache = tmp_path / "cache"

    def zip_of(name: str) -> tuple[subprocess.CompletedProcess[str], bytes]:
        target = tmp_path / name
        done = subprocess.run([sys.executable, "-m", "grader", "gradescope", str(RUBRIC), "-o", str(target),
                               "--cache", str(cache)], capture_output=True, text=True, timeout=within(600))
        assert done.returncode == 0, done.stderr
        with zipfile.ZipFile(target) as archive:
            [wheel] = [n for n in archive.namelist() if n.startswith("wheels/")]
            return done, archive.read(wheel)

    first, built = zip_of("first.zip")
    assert "from the same source" not in first.stdout
    second, kept = zip_of("second.zip")
    assert kept == built and "is the one built before from the same source" in second.stdout
    [cached] = (cache / "wheels").glob("*.whl")
    cached.write_bytes(cached.read_bytes()[:-1] + b"!")        # not what the grader sealed
    third, rebuilt = zip_of("third.zip")
    assert "from the same source" not in third.stdout
    with zipfile.ZipFile(tmp_path / "third.zip") as archive:
        assert archive.testzip() is None
    assert rebuilt[:2] == b"PK"


def test_the_zip_holds_no_bytecode_whether_python_writes_it_or_not(tmp_path: Path, monkeypatch) -> None:
    """The bundle check imports the staged reference: where Python writes bytecode (a TA's machine, a fresh
    clone's CI without PYTHONDONTWRITEBYTECODE) course/reference/__pycache__ went into the zip, and the test
    above failed only there."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with zipfile.ZipFile(build_autograder(RUBRIC, tmp_path / "autograder.zip", wheel=False)) as archive:
        names = archive.namelist()
    assert "course/reference/taoistic_search.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyo"))]


@slow
def test_the_setup_script_installs_the_bundled_wheel(autograder_zip: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as archive:
        wheel = next(n for n in archive.namelist() if n.endswith(".whl"))
        setup = archive.read("setup.sh").decode()
        archive.extractall(tmp_path)
    assert f'-m pip install "$SOURCE/{wheel}"' in setup
    assert 'SOURCE="$ROOT/source"' in setup and "AUTOGRADER_ROOT" in setup
    for script in ("setup.sh", "run_autograder"):
        syntax = subprocess.run(["bash", "-n", str(tmp_path / script)], capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr


@slow
def test_the_bundled_rubric_grades_exactly_like_the_original(autograder_zip: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(tmp_path)
    original = build_plan(load_rubric(RUBRIC), None)
    bundled = build_plan(load_rubric(tmp_path / "course" / "taoistic-search.yaml"), None)
    assert [e.points for e in bundled.rubric.exercises] == [e.points for e in original.rubric.exercises]
    assert {k: [(c.id, c.call, c.visibility, c.weight) for c in v] for k, v in bundled.cases.items()} == \
        {k: [(c.id, c.call, c.visibility, c.weight) for c in v] for k, v in original.cases.items()}
    assert {k: v.value for k, v in bundled.expected.items()} == {k: v.value for k, v in original.expected.items()}


@slow
def test_run_autograder_scores_a_notebook_as_the_grader_does(autograder_zip: Path, tmp_path: Path,
                                                             graded: dict[str, SubmissionResult]) -> None:
    root = fake_tree(autograder_zip, tmp_path / "autograder", INT_TILES)
    data = run_autograder(root)
    assert_gradescope_schema(data)
    direct = to_gradescope(graded["int-tiles"])
    assert data["score"] == graded["int-tiles"].total == 23.1667
    assert [(t["name"], t["score"], t["max_score"]) for t in data["tests"]] == \
        [(t["name"], t["score"], t["max_score"]) for t in direct["tests"]]
    assert decimal_sum(t["score"] for t in data["tests"]) == Decimal("23.1667")


@slow
def test_run_autograder_gives_an_invalid_notebook_a_valid_zero(autograder_zip: Path, tmp_path: Path) -> None:
    root = fake_tree(autograder_zip, tmp_path / "autograder", NOTEBOOKS / "invalid_json.ipynb")
    data = run_autograder(root)
    assert_gradescope_schema(data)
    assert data["score"] == 0
    assert all(t["score"] == 0 for t in data["tests"])
    assert "could not be graded" in data["output"] and "not valid JSON" in data["output"]
    assert all("not graded" in t["output"] and "not graded: not graded" not in t["output"] for t in data["tests"])


@slow
def test_run_autograder_writes_results_when_the_grader_cannot_start(autograder_zip: Path, tmp_path: Path) -> None:
    root = fake_tree(autograder_zip, tmp_path / "no-python", TRANSPOSED)
    data = run_autograder(root, python=str(tmp_path / "no" / "python"))
    assert data["score"] == 0 and "could not start" in data["output"]

    root = fake_tree(autograder_zip, tmp_path / "no-rubric", TRANSPOSED)
    (root / "source" / "course" / "taoistic-search.yaml").unlink()
    data = run_autograder(root)
    assert data["score"] == 0 and "could not grade" in data["output"] and "taoistic-search.yaml" in data["output"]


@slow
def test_an_upload_without_a_notebook_gets_zero_and_says_so(autograder_zip: Path, tmp_path: Path) -> None:
    root = fake_tree(autograder_zip, tmp_path / "autograder", None)
    (root / "submission" / "answers.txt").write_text("my answers\n", encoding="utf-8")
    data = run(root, root / "source" / "course" / "taoistic-search.yaml")
    assert data["score"] == 0 and "No notebook" in data["output"] and "answers.txt" in data["output"]
    assert json.loads((root / "results" / "results.json").read_text(encoding="utf-8")) == data


@slow
def test_a_link_to_the_course_reference_in_the_upload_is_not_graded(autograder_zip: Path, tmp_path: Path) -> None:
    """An upload holding `lab.py`, a symbolic link to the bundled reference (its path is the same in every
    Gradescope image; a GitHub submission or an unpacked zip can hold links): graded, it earned full marks with
    the reference as the student's code. A link is not followed: the upload has no notebook and gets zero."""
    root = fake_tree(autograder_zip, tmp_path / "autograder", None)
    reference = root / "source" / "course" / "reference" / "taoistic_search.py"
    assert reference.is_file()
    (root / "submission" / "lab.py").symlink_to(reference)
    data = run(root, root / "source" / "course" / "taoistic-search.yaml")
    assert data["score"] == 0 and "No notebook" in data["output"], data["output"]


@slow
def test_of_several_notebooks_the_one_with_the_graded_functions_is_graded(autograder_zip: Path, tmp_path: Path,
                                                                          graded: dict[str, SubmissionResult]) -> None:
    root = fake_tree(autograder_zip, tmp_path / "autograder", INT_TILES)
    shutil.copy(NOTEBOOKS / "empty.ipynb", root / "submission" / "a-scratch.ipynb")
    data = run(root, root / "source" / "course" / "taoistic-search.yaml")
    assert data["score"] == graded["int-tiles"].total
    assert "a-scratch.ipynb" in data["output"] and "not graded" in data["output"]


def test_without_a_wheel_the_zip_ships_the_package_source_and_still_grades(tmp_path: Path,
                                                                           graded: dict[str, SubmissionResult]) -> None:
    zip_path = build_autograder(RUBRIC, tmp_path / "source-autograder.zip", wheel=False)
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        setup = archive.read("setup.sh").decode()
        manifest = json.loads(archive.read(MANIFEST))
    assert manifest["package"] == "source"
    assert {"python/grader/__init__.py", "python/grader/run/autograder.py", "requirements.txt"} <= names
    assert not [n for n in names if n.endswith(".whl")]
    assert '-m pip install -r "$SOURCE/requirements.txt"' in setup
    root = fake_tree(zip_path, tmp_path / "autograder", TRANSPOSED)
    assert run_autograder(root)["score"] == graded["move-dir-transposed"].total
