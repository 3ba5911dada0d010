"""TA overrides: recorded with author, reason and time in the gradebook, kept across regrades of the same file,
shown beside the automatic score in the CSV and Gradescope exports, flagged when the file changes, merged."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from testclock import within
from grader.store import overrides
from grader.store.gradebook import GradebookError
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult

from conftest import RUBRIC, SUBMISSIONS

STUDENT = "move-dir-transposed"


def grader(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=within(600))


def grade(class_dir: Path, out: Path, cache: Path, *more: str) -> None:
    done = grader("grade", str(class_dir), "--rubric", str(RUBRIC), "--out", str(out), "--cache", str(cache),
                  "--quiet", "--gradescope", str(out / "gradescope"), *more)
    assert done.returncode == 0, done.stderr


def csv_row(out: Path, student: str) -> dict[str, str]:
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").read_text(encoding="utf-8").splitlines())}
    return rows[student]


def test_an_override_survives_a_regrade_and_shows_in_csv_and_gradescope(tmp_path: Path, grader_cache: Path) -> None:
    class_dir = tmp_path / "class"
    class_dir.mkdir()
    shutil.copy(SUBMISSIONS / f"{STUDENT}.ipynb", class_dir)
    shutil.copy(SUBMISSIONS / "correct.ipynb", class_dir)
    out = tmp_path / "results"
    grade(class_dir, out, grader_cache)
    automatic = csv_row(out, STUDENT)
    assert automatic["move_dir"] == "0" and "overrides" not in automatic

    book = out / "gradebook.sqlite"
    done = grader("override", STUDENT, "move_dir", "--points", "2", "--why", "regrade request: dx/dy convention "
                  "was ambiguous in the 2021 sheet", "--by", "ta-anna", "--gradebook", str(book))
    assert done.returncode == 0, done.stderr
    assert f"{STUDENT} move_dir: 0 -> 2 by ta-anna" in done.stdout
    row = csv_row(out, STUDENT)                       # the command rewrote the CSV beside the gradebook
    assert row["move_dir"] == "2" and float(row["total"]) == float(automatic["total"]) + 2
    assert row["automatic_total"] == automatic["total"]

    grade(class_dir, out, grader_cache, "--force")    # the same file graded again
    row = csv_row(out, STUDENT)
    assert row["move_dir"] == "2" and row["automatic_total"] == automatic["total"]
    assert "move_dir: 0 -> 2 by ta-anna (regrade request" in row["overrides"] and row["override_review"] == ""
    assert csv_row(out, "correct")["overrides"] == ""
    scored = json.loads((out / "gradescope" / f"{STUDENT}.json").read_text(encoding="utf-8"))
    assert scored["score"] == pytest.approx(float(row["total"]))
    assert sum(t["score"] for t in scored["tests"]) == pytest.approx(scored["score"])
    assert scored["extra_data"]["automatic_score"] == pytest.approx(float(automatic["total"]))
    assert "set by the course staff; automatic score 0" in scored["output"]
    assert "ta-anna" in scored["output"] and "regrade request" in scored["output"]
    [fact] = scored["extra_data"]["overrides"]
    assert (fact["exercise"], fact["automatic"], fact["score"]) == ("move_dir", 0, 2)

    # A resubmission: the override still applies but is flagged for review.
    notebook = nbformat.read(class_dir / f"{STUDENT}.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("resubmitted"))
    nbformat.write(notebook, class_dir / f"{STUDENT}.ipynb")
    grade(class_dir, out, grader_cache)
    row = csv_row(out, STUDENT)
    assert row["move_dir"] == "2" and row["override_review"] == "review"
    assert "[review: the submission changed since]" in row["overrides"]

    # Back to automatic: recorded as history, nothing deleted.
    assert grader("override", STUDENT, "move_dir", "--remove", "--why", "convention was stated", "--by", "prof",
                  "--gradebook", str(book)).returncode == 0
    assert csv_row(out, STUDENT)["move_dir"] == "0"
    assert [(o.author, o.points) for o in overrides.history(book)] == [("ta-anna", 2.0), ("prof", None)]


def result_with(student: str = "ada") -> SubmissionResult:
    cases = (CaseResult("f#1", "pass", "public", "", fraction=1.0), CaseResult("f#2", "fail", "public", "x"),
             CaseResult("f#3", "fail", "hidden", "y", weight=2.0))
    exercise = ExerciseResult("f", "F", 1.0, 4.0, cases)
    return SubmissionResult(student, f"/{student}.ipynb", "a" * 64, "demo", "b" * 64, "0.1.0", "rlimits", 3.0, 6.0,
                            (exercise, ExerciseResult("g", "G", 2.0, 2.0, ())))


def override(**changes) -> overrides.Override:
    base = dict(student="ada", rubric="demo", exercise="f", case="", points=3.0, reason="why", author="ta",
                at="2026-01-01T00:00:00.000000+00:00", sha256="a" * 64, automatic=1.0)
    return overrides.Override(**{**base, **changes})


def test_apply_keeps_the_automatic_score_beside_the_final_one() -> None:
    result = result_with()
    assert overrides.apply(result, []) is result
    applied = overrides.apply(result, [override()])
    assert (applied.exercise("f").score, applied.total, applied.extra["automatic_total"]) == (3.0, 5.0, 3.0)
    # A case override moves the exercise by the case's difference: f#2 is worth 1 point and earned 0.
    by_case = overrides.apply(result, [override(case="f#2", points=1.0, automatic=0.0)])
    assert by_case.exercise("f").score == 2.0
    # The newest override wins; a removal brings back the automatic score; another student is untouched.
    later = override(points=0.5, at="2026-01-02T00:00:00.000000+00:00")
    assert overrides.apply(result, [later, override()]).exercise("f").score == 0.5
    removed = override(points=None, at="2026-01-03T00:00:00.000000+00:00")
    assert overrides.apply(result, [override(), removed]) is result
    assert overrides.apply(result_with("bo"), [override()]).total == 3.0
    assert overrides.case_points(result.exercise("f"), "f#3", full=True) == 2.0


def test_a_late_penalty_is_the_share_of_the_score_the_ta_set() -> None:
    """Two days late at 10 % a day takes 20 % of the score: of the score the TA set by an override, not of the
    automatic one (old code: 0.6 of the automatic 3 off a final 5, 4.4 where the policy says 4)."""
    from dataclasses import replace
    late = replace(result_with(), late=True, penalty=0.6, extra={"late_share": 0.2})
    applied = overrides.apply(late, [override()])
    assert (applied.total, applied.penalty) == (5.0, 1.0)
    on_time = overrides.apply(result_with(), [override()])
    assert on_time.penalty == 0.0
    # a result graded before the share was kept keeps its penalty
    assert overrides.apply(replace(result_with(), late=True, penalty=0.6), [override()]).penalty == 0.6


def test_bad_overrides_are_refused_with_a_reason(tmp_path: Path) -> None:
    from grader.store.gradebook import Gradebook
    book = tmp_path / "gradebook.sqlite"
    with pytest.raises(GradebookError, match="no such gradebook"):
        overrides.record(book, "ada", "f", points=1, reason="r", author="a")
    with Gradebook(book) as gradebook:
        gradebook.record("ada", "ada.ipynb", result_with())
    for kwargs, message in (({"student": "adda"}, "did you mean 'ada'"), ({"exercise": "ff"}, "no exercise 'ff'"),
                            ({"points": 5.0}, "outside 0 to 4"), ({"case": "f#9"}, "no case 'f#9'"),
                            ({"reason": " "}, "needs a reason"), ({"case": "f#3", "points": 2.5}, "outside 0 to 2")):
        arguments = {"student": "ada", "exercise": "f", "points": 1.0, "reason": "r", **kwargs}
        student, exercise = arguments.pop("student"), arguments.pop("exercise")
        with pytest.raises(overrides.OverrideError, match=message):
            overrides.record(book, student, exercise, author="a", **arguments)
    (tmp_path / "other.sqlite").write_bytes(b"not a database at all" * 10)
    with pytest.raises(GradebookError, match="other.sqlite"):
        overrides.history(tmp_path / "other.sqlite")


def test_merge_brings_the_other_gradebooks_overrides_once(tmp_path: Path) -> None:
    from grader.store.gradebook import Gradebook
    books = [tmp_path / "a.sqlite", tmp_path / "b.sqlite"]
    for path in books:
        with Gradebook(path) as gradebook:
            gradebook.record("ada", "ada.ipynb", result_with())
    overrides.record(books[1], "ada", "f", points=4.0, reason="r", author="b")
    done = grader("merge", str(books[1]), "--into", str(books[0]))
    assert done.returncode == 0 and "1 overrides merged" in done.stdout
    assert grader("merge", str(books[1]), "--into", str(books[0])).returncode == 0
    assert [o.author for o in overrides.history(books[0])] == ["b"]


def test_the_override_history_reaches_the_terminal_without_escapes(tmp_path: Path) -> None:
    """The history lists every TA's reason (merged from other gradebooks too): an escape in one (a pasted colour
    code, a clear-screen) was written to the terminal raw."""
    from grader.store.gradebook import Gradebook
    book = tmp_path / "gradebook.sqlite"
    with Gradebook(book) as gradebook:
        gradebook.record("ada", "ada.ipynb", result_with())
    overrides.record(book, "ada", "f", points=3.0, reason="see \x1b[2J\x1b[31mthe forum\x07", author="b\x1b]0;x\x07")
    done = grader("override", "ada", "f", "--points", "2", "--why", "second look \x1b[1m", "--gradebook", str(book))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "the forum" in done.stdout and "second look" in done.stdout


def test_student_reports_show_the_adjustment_beside_the_automatic_score() -> None:
    from grader.report.student import html_report, markdown_report
    applied = overrides.apply(result_with(), [override(reason="<b>late</b> regrade", author="ta-anna")])
    page = html_report(applied)
    assert "Grade adjustments by the course staff" in page and "&lt;b&gt;late&lt;/b&gt; regrade" in page
    assert "1 &rarr; 3" in page and "ta-anna" in page
    assert "f: 1 → 3 (\\<b\\>late\\</b\\> regrade; ta-anna, 2026-01-01)" in markdown_report(applied)


def test_forgiving_refuses_an_exercise_the_incident_policy_took_nothing_from(tmp_path: Path) -> None:
    """`override --forgive` gives back ExerciseResult.forfeited. Where the judge had given 0 before the incident (a
    class of 300: an attack in an exercise whose answers were wrong anyway) it recorded "0 -> 0 (forgiven)", a
    forgiveness of nothing shown in every export; it is refused with the reason, as where no incident took any."""
    from dataclasses import replace
    from grader.store.gradebook import Gradebook
    book = tmp_path / "gradebook.sqlite"
    result = result_with()
    f, g = result.exercises
    with Gradebook(book) as gradebook:
        gradebook.record("ada", "/ada.ipynb", replace(result, exercises=(replace(f, score=0.0, forfeited=0.0),
                                                                          replace(g, score=0.0, forfeited=2.0))))
    with pytest.raises(overrides.OverrideError, match="took nothing from f: the judge gave it 0"):
        overrides.record(book, "ada", "f", points=None, reason="honest", author="ta", forgive=True)
    made = overrides.record(book, "ada", "g", points=None, reason="honest", author="ta", forgive=True)
    assert (made.points, made.automatic) == (2.0, 0.0)
    assert [o.exercise for o in overrides.history(book)] == ["g"]
