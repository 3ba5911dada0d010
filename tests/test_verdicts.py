"""Hidden verdict bits: a student who resubmits many times can read the hidden cases' verdicts from how the score
moves. Each grading keeps its case verdicts as bits in the gradebook (a real SQLite file), and the TA's class report
names a student whose resubmissions moved hidden verdicts while every public one stayed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import given, strategies as st

from grader.store.gradebook import SCHEMA_VERSION, Gradebook
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult
from grader.store import verdicts
from testclock import within

RUBRIC = "taoistic-search"
REPO = Path(__file__).resolve().parents[1]


def graded(student: str, sha: str, public: str, hidden: str, *, rubric_sha256: str = "r1") -> SubmissionResult:
    """A result of one exercise whose cases pass where the pattern says 1: public cases first, then hidden."""
    cases = tuple(CaseResult(f"f#{n}", "pass" if bit == "1" else "fail", visibility, "", call=f"f({n})",
                             expected=n, got=n if bit == "1" else -1, fraction=1.0 if bit == "1" else 0.0)
                  for n, (bit, visibility) in enumerate([(b, "public") for b in public]
                                                        + [(b, "hidden") for b in hidden]))
    score = round(sum(c.fraction for c in cases) / len(cases) * 10, 4)
    exercise = ExerciseResult("f", "F", score, 10.0, cases)
    return SubmissionResult(submission=student, path=f"{student}.ipynb", sha256=sha * 64, rubric=RUBRIC,
                            rubric_sha256=rubric_sha256, grader_version="0.1.0", isolation="namespaces",
                            total=score, max_total=10.0, exercises=(exercise,))


def a_class(path: Path) -> None:
    with Gradebook(path) as book:
        # ada: three files, public always 11, hidden 000 -> 100 -> 110: she reads the hidden cases one by one
        for sha, hidden in (("1", "000"), ("2", "100"), ("3", "110")):
            book.record("ada", "ada.ipynb", graded("ada", sha, "11", hidden))
        # bob: his public verdicts move with the hidden ones (he fixes his code)
        for sha, public, hidden in (("4", "00", "000"), ("5", "10", "100"), ("6", "11", "110")):
            book.record("bob", "bob.ipynb", graded("bob", sha, public, hidden))
        # cat: one file, graded again under two rubric fixes (her verdicts move, she sent nothing)
        for rubric_sha256, hidden in (("r1", "000"), ("r2", "100"), ("r3", "110")):
            book.record("cat", "cat.ipynb", graded("cat", "7", "11", hidden, rubric_sha256=rubric_sha256))
        # dan: three files, one hidden-only move (an edge case fixed): no pattern
        for sha, public, hidden in (("8", "10", "000"), ("9", "11", "000"), ("a", "11", "100")):
            book.record("dan", "dan.ipynb", graded("dan", sha, public, hidden))
        # eve: once, all hidden failing
        book.record("eve", "eve.ipynb", graded("eve", "b", "11", "000"))


def test_resubmissions_that_move_only_hidden_verdicts_are_found_from_the_gradebook(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    a_class(path)
    with Gradebook(path) as book:
        assert book.probing(RUBRIC) == [verdicts.Probing("ada", 3, 2)]
    # Bounded: bits, one a case, no value
    stored = sqlite3.connect(path).execute(
        "SELECT r.verdicts FROM results r JOIN submissions s ON s.id = r.submission_id WHERE s.student = 'ada' "
        "ORDER BY r.id").fetchall()
    assert stored == [("PPfff",), ("PPpff",), ("PPppf",)]


def test_a_version_6_gradebook_is_read_from_each_results_json(tmp_path: Path) -> None:
    """A gradebook written before the bits: opened, its results keep '' and the check reads their json."""
    path = tmp_path / "gradebook.sqlite"
    a_class(path)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE results DROP COLUMN verdicts")
    db.execute("UPDATE schema_version SET version = 6")
    db.commit()
    db.close()
    with Gradebook(path) as book:
        assert book.probing(RUBRIC) == [verdicts.Probing("ada", 3, 2)]
        book.record("eve", "eve.ipynb", graded("eve", "c", "11", "100"))
    assert sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert sqlite3.connect(path).execute("SELECT count(*) FROM results WHERE verdicts = ''").fetchall() == [(13,)]


def test_the_class_report_names_the_student_on_its_page_and_the_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    a_class(folder / "gradebook.sqlite")
    done = subprocess.run([sys.executable, "-m", "grader", "class-report", str(folder), "--out",
                           str(tmp_path / "class.html"), "--no-similarity"],
                          capture_output=True, text=True, timeout=within(300), cwd=REPO)
    assert done.returncode == 0, done.stderr
    said = "hidden verdicts moved while every public one stayed"
    assert said in done.stdout and "ada (2 of 2 resubmissions)" in " ".join(done.stdout.split()), done.stdout
    page = (tmp_path / "class.html").read_text(encoding="utf-8")
    assert said in page and "ada (2 of 2 resubmissions)" in page
    assert not any(f"{name} (" in page.split(said)[1].split("<")[0] for name in ("bob", "cat", "dan", "eve"))


@given(st.text("PFpf-", max_size=12), st.text("PFpf-", max_size=12))
def test_a_move_is_hidden_only_exactly_when_no_public_verdict_moved(before: str, after: str) -> None:
    moved = [(a, b) for a, b in zip(before, after, strict=False) if "-" not in (a, b) and a != b]
    comparable = len(before) == len(after) and all(a.isupper() == b.isupper() for a, b in moved)
    expected = comparable and bool(moved) and all(a.islower() for a, _ in moved)
    assert verdicts.hidden_only(before, after) == expected


def test_bits_from_a_result_and_from_its_json_agree() -> None:
    from grader.store.results import to_dict
    result = graded("ada", "1", "10", "01")
    problem = replace(result.exercises[0].cases[0], status="problem")
    result = replace(result, exercises=(replace(result.exercises[0],
                                                cases=(problem, *result.exercises[0].cases[1:])),))
    assert verdicts.bits(result.exercises) == verdicts.bits_of_json(to_dict(result)) == "-Ffp"
