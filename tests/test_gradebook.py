"""Gradebook (SQLite) and CSV export: regrades keep history, merges do not duplicate, kill -9 loses nothing whole."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grader.store.gradebook import SCHEMA_VERSION, Gradebook, GradebookError
from testclock import read_line, within
from grader.report.csv_export import write_csv
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult, read_json, to_dict
from grader.intake.warning import GraderWarning, Kind

REPO = Path(__file__).resolve().parents[1]
RUBRIC = "taoistic-search"


def make_result(student: str = "alice", *, sha256: str = "a" * 64, rubric_sha256: str = "r1",
                grader_version: str = "0.1.0", scores: tuple[float, ...] = (2.0, 0.8, 26.0),
                rubric: str = RUBRIC) -> SubmissionResult:
    exercises = tuple(
        ExerciseResult(f"ex{n}", f"Exercise {n}", score, 30.0 if n == 2 else 2.0,
                       (CaseResult(f"ex{n}-1", "pass" if score else "fail", "public", "", call=f"f{n}(1)",
                                   expected=[1, 2], got=[1, 2] if score else None, fraction=1.0 if score else 0.0),))
        for n, score in enumerate(scores))
    return SubmissionResult(
        submission=student, path=f"submissions/{student}.ipynb", sha256=sha256, rubric=rubric,
        rubric_sha256=rubric_sha256, grader_version=grader_version, isolation="namespaces",
        total=sum(scores), max_total=sum(e.max_score for e in exercises), exercises=exercises)


def consistency_problems(path: Path) -> list[str]:
    """Checked with plain SQL, not with the code under test: what a whole gradebook must satisfy."""
    db = sqlite3.connect(path)
    try:
        problems = [row[0] for row in db.execute("PRAGMA integrity_check") if row[0] != "ok"]
        problems += [f"foreign key: {row}" for row in db.execute("PRAGMA foreign_key_check")]
        for result_id, count, text in db.execute("SELECT id, exercise_count, json FROM results"):
            stored = json.loads(text)
            rows = db.execute("SELECT exercise, score FROM scores WHERE result_id = ? ORDER BY position",
                              (result_id,)).fetchall()
            expected = [(e["id"], e["score"]) for e in stored["exercises"]]
            if rows != expected or count != len(expected):
                problems.append(f"result {result_id}: scores {rows} but its JSON has {expected}")
        for student, current in db.execute(
                """SELECT s.student, s.current_result FROM submissions s
                   LEFT JOIN results r ON r.id = s.current_result AND r.submission_id = s.id
                   WHERE r.id IS NULL"""):
            problems.append(f"{student}: current result {current} is not one of its results")
        for student, in db.execute(
                """SELECT s.student FROM submissions s JOIN results r ON r.id = s.current_result
                   WHERE s.sha256 != r.sha256 OR s.source != r.source"""):
            problems.append(f"{student}: submission sha256/source differ from its current result")
        return problems
    finally:
        db.close()


def is_current(book: Gradebook, student: str, sha256: str, rubric_sha256: str, grader_version: str,
               rubric: str = RUBRIC) -> bool:
    """What a regrade asks of each student (Gradebook.unchanged_row): graded from this file, rubric and grader."""
    return book.unchanged_row(rubric, student, sha256, rubric_sha256, grader_version) is not None


def test_new_gradebook_uses_wal_and_records_its_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    with Gradebook(path):
        pass
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    db.close()
    with Gradebook(path) as book:                 # reopening an existing file changes nothing
        assert book.students(RUBRIC) == []


def test_recorded_result_comes_back_whole_and_is_current(tmp_path: Path) -> None:
    result = make_result()
    with Gradebook(tmp_path / "gb.sqlite") as book:
        assert not is_current(book, "alice", result.sha256, "r1", "0.1.0")
        book.record("alice", "export.zip!alice/puzzle.ipynb", result)
        assert is_current(book, "alice", result.sha256, "r1", "0.1.0")
        assert book.current(RUBRIC) == [result]
        assert book.students(RUBRIC) == ["alice"]
        assert book.current("another-rubric") == []
    assert consistency_problems(tmp_path / "gb.sqlite") == []


@pytest.mark.parametrize("changed", ["sha256", "rubric_sha256", "grader_version"])
def test_a_changed_file_rubric_or_grader_is_not_current_and_regrading_keeps_history(
        tmp_path: Path, changed: str) -> None:
    first = make_result(scores=(2.0, 0.0, 10.0))
    second = make_result(scores=(2.0, 2.0, 28.8), **{changed: "changed"})
    with Gradebook(tmp_path / "gb.sqlite") as book:
        book.record("alice", "alice.ipynb", first)
        now = (second.sha256, second.rubric_sha256, second.grader_version)
        assert not is_current(book, "alice", *now)
        book.record("alice", "alice.ipynb", second)
        assert is_current(book, "alice", *now)
        assert not is_current(book, "alice", first.sha256, first.rubric_sha256, first.grader_version)
        assert book.current(RUBRIC) == [second]
        history = book.history("alice", RUBRIC)
        assert [(total, rubric_sha256) for _, total, rubric_sha256 in history] == [
            (12.0, first.rubric_sha256), (32.8, second.rubric_sha256)]
        assert history[0][0] < history[1][0]
        assert book.students(RUBRIC) == ["alice"]


def test_going_back_to_an_older_file_is_graded_again(tmp_path: Path) -> None:
    old, new = make_result(sha256="old"), make_result(sha256="new")
    with Gradebook(tmp_path / "gb.sqlite") as book:
        book.record("alice", "a", old)
        book.record("alice", "a", new)
        assert not is_current(book, "alice", "old", "r1", "0.1.0")


def test_current_is_sorted_by_student_and_separate_per_rubric(tmp_path: Path) -> None:
    with Gradebook(tmp_path / "gb.sqlite") as book:
        for student in ("carol", "alice", "bob"):
            book.record(student, f"{student}.ipynb", make_result(student))
        book.record("alice", "alice.ipynb", make_result("alice", rubric="sliding-3x3"))
        assert [r.submission for r in book.current(RUBRIC)] == ["alice", "bob", "carol"]
        assert book.students("sliding-3x3") == ["alice"]
        assert len(book.history("alice", RUBRIC)) == 1


def test_history_stays_in_recording_order_when_records_come_faster_than_the_clock(tmp_path: Path) -> None:
    with Gradebook(tmp_path / "gb.sqlite") as book:
        for total in range(50):
            book.record("alice", "a", make_result(scores=(float(total),)))
        history = book.history("alice", RUBRIC)
    assert [total for _, total, _ in history] == [float(t) for t in range(50)]
    assert len({graded_at for graded_at, _, _ in history}) == 50


def test_unicode_zero_score_and_empty_results_round_trip(tmp_path: Path) -> None:
    unicode = make_result("zoë-søren-李")
    unicode = SubmissionResult(**{**unicode.__dict__, "warnings": (
        GraderWarning(Kind.LOAD_TIMEOUT, "⏱ timeout 🧩", "Ω", 2, "cell «In [3]»", 1),),
                                  "extra": {"note": "naïve ∑"}})
    zero = make_result("zero", scores=(0.0, 0.0, 0.0))
    empty = SubmissionResult(**{**make_result("empty").__dict__, "exercises": (), "total": 0.0,
                                "warnings": (GraderWarning(Kind.UNREADABLE, "not a notebook: Expecting value: line 1 "
                                                                            "column 1"),)})
    (tmp_path / "unicode.json").write_text(json.dumps(to_dict(unicode), ensure_ascii=False), encoding="utf-8")
    unicode = read_json(tmp_path / "unicode.json")
    with Gradebook(tmp_path / "gb.sqlite") as book:
        for result in (unicode, zero, empty):
            book.record(result.submission, f"{result.submission}.ipynb", result)
        assert {r.submission: r for r in book.current(RUBRIC)} == {
            "zoë-søren-李": unicode, "zero": zero, "empty": empty}
        assert is_current(book, "zoë-søren-李", unicode.sha256, "r1", "0.1.0")
        assert book.history("zero", RUBRIC)[0][1] == 0.0
    assert consistency_problems(tmp_path / "gb.sqlite") == []


def test_merge_imports_other_results_newest_current_and_twice_imports_nothing(tmp_path: Path) -> None:
    here, there = tmp_path / "here.sqlite", tmp_path / "there.sqlite"
    with Gradebook(here) as book:
        book.record("alice", "a", make_result("alice", sha256="alice-1"))
        book.record("bob", "b", make_result("bob", sha256="bob-new-here", scores=(1.0,)))
    with Gradebook(there) as book:
        book.record("carol", "c", make_result("carol"))
        book.record("alice", "a", make_result("alice", sha256="alice-2", scores=(2.0, 2.0, 30.0)))  # newer
    time.sleep(0.002)
    with Gradebook(here) as book:
        book.record("bob", "b", make_result("bob", sha256="bob-newest-here", scores=(2.0,)))
    with Gradebook(here) as book:
        assert book.merge(there) == 2
        assert book.merge(there) == 0
        current = {r.submission: r for r in book.current(RUBRIC)}
        assert book.students(RUBRIC) == ["alice", "bob", "carol"]
        assert current["alice"].sha256 == "alice-2" and current["alice"].total == 34.0
        assert current["bob"].sha256 == "bob-newest-here"
        assert [total for _, total, _ in book.history("alice", RUBRIC)] == [28.8, 34.0]
        assert is_current(book, "alice", "alice-2", "r1", "0.1.0")
        assert not is_current(book, "alice", "alice-1", "r1", "0.1.0")
    with Gradebook(there) as book:                # and the other way round: only what `there` lacked
        assert book.merge(here) == 3              # alice-1 and bob's two results; alice-2 and carol are there
    assert consistency_problems(here) == []


def test_merge_keeps_the_current_result_when_it_is_newer_than_the_imported_one(tmp_path: Path) -> None:
    here, there = tmp_path / "here.sqlite", tmp_path / "there.sqlite"
    with Gradebook(there) as book:
        book.record("alice", "a", make_result("alice", sha256="older-elsewhere"))
    time.sleep(0.002)
    with Gradebook(here) as book:
        book.record("alice", "a", make_result("alice", sha256="newer-here"))
        assert book.merge(there) == 1
        assert [r.sha256 for r in book.current(RUBRIC)] == ["newer-here"]
        assert len(book.history("alice", RUBRIC)) == 2


def test_merge_rejects_a_file_that_is_not_a_gradebook(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with Gradebook(tmp_path / "gb.sqlite") as book:
        with pytest.raises(GradebookError, match="other.sqlite"):
            book.merge(other)
        with pytest.raises(GradebookError, match="missing.sqlite"):
            book.merge(tmp_path / "missing.sqlite")


def test_newer_schema_version_is_refused_with_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "from-the-future.sqlite"
    with Gradebook(path):
        pass
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(GradebookError, match=r"from-the-future\.sqlite.*newer") as error:
        Gradebook(path)
    assert f"version {SCHEMA_VERSION + 1}" in str(error.value)
    with Gradebook(tmp_path / "gb.sqlite") as book, pytest.raises(GradebookError, match="from-the-future"):
        book.merge(path)


def test_files_that_are_not_gradebooks_are_refused_with_the_file_name(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, just some words that are long enough to be a header" * 10)
    with pytest.raises(GradebookError, match=r"notes\.txt"):
        Gradebook(text)
    other = tmp_path / "other-app.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE things (x)").connection.close()
    with pytest.raises(GradebookError, match=r"other-app\.sqlite.*not a puzzle-grader gradebook"):
        Gradebook(other)


CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from grader.store.gradebook import Gradebook
    from grader.store.results import CaseResult, ExerciseResult, SubmissionResult

    path, seed = Path(sys.argv[1]), int(sys.argv[2])
    # Built before the loop, small: the loop's time is then mostly spent inside record's transaction.
    exercises = [tuple(ExerciseResult(f"ex{k}", "é", float(k), 9.0, (CaseResult("c", "pass", "hidden", "ok"),))
                       for k in range(count)) for count in range(9)]     # 0..8 exercises: a torn write shows
    book = Gradebook(path)
    print("ready", flush=True)
    n = 0
    while True:
        student, count = f"s{(seed * 7 + n) % 13:02d}", n % 9
        result = SubmissionResult(student, student, f"sha-{seed}-{n}", "kill", "r", "v", "none",
                                  float(sum(range(count))), 9.0 * count, exercises[count])
        book.record(student, f"{student}.ipynb", result)
        print(f"{student} sha-{seed}-{n}", flush=True)  # after the commit: this one must survive the kill
        n += 1
""")


def test_kill_9_at_any_moment_leaves_a_consistent_gradebook(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    rng = random.Random(1)
    committed: list[tuple[str, str]] = []
    for round_ in range(10):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(round_)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: list[str] = []
        if round_ >= 2:                      # the first rounds may die while the gradebook is being created
            ready = read_line(child, within(120))
            assert ready == "ready\n", ready + (child.stderr.read() if child.poll() is not None else "")
            # A few commits first, counted rather than timed (a busy machine commits slowly), then a moment
            # anywhere in the next transactions.
            seen = [read_line(child, within(120)) for _ in range(rng.randint(3, 6))]
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        # The rest is read through the same buffered pipe object readline used: communicate() reads the raw
        # descriptor and would miss (or tear) what readline had already buffered ahead.
        out, err = child.stdout.read(), child.stderr.read()
        child.wait(timeout=within(120))
        assert child.returncode == -signal.SIGKILL, err
        committed += [tuple(line.split()) for line in "".join(seen).splitlines() + out.splitlines()
                      if line != "ready"]
    assert len(committed) > 20, "the child barely recorded anything; the kills proved little"
    assert (tmp_path / "gradebook.sqlite-wal").exists()       # left by the last kill, not yet checkpointed
    with Gradebook(tmp_path / "merged.sqlite") as merged:   # read-only, as the killed grader left it
        imported = merged.merge(path)

    assert consistency_problems(path) == []
    db = sqlite3.connect(path)
    every = set(db.execute("SELECT s.student, r.sha256 FROM results r JOIN submissions s "
                           "ON s.id = r.submission_id").fetchall())
    db.close()
    assert set(committed) <= every                   # nothing reported as recorded was lost
    with Gradebook(path) as book:
        students = book.students("kill")
        assert [r.submission for r in book.current("kill")] == students
        assert {(r.submission, r.sha256) for r in book.current("kill")} <= every
        assert sum(len(book.history(student, "kill")) for student in students) == len(every)
        book.record("s00", "s00.ipynb", make_result("s00", rubric="kill"))   # and it still takes writes
        assert is_current(book, "s00", "a" * 64, "r1", "0.1.0", rubric="kill")
    assert imported == len(every)                             # a killed gradebook merges whole, too
    assert consistency_problems(tmp_path / "merged.sqlite") == []


def read_rows(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as stream:
        return list(csv.reader(stream))


def test_csv_has_a_row_per_student_and_exercise_columns_in_rubric_order(tmp_path: Path) -> None:
    results = [make_result("bob", scores=(0.1, 0.8, 27.9)), make_result("zoë", scores=(0.0, 0.0, 0.0)),
               SubmissionResult(**{**make_result("empty").__dict__, "exercises": (), "total": 0.0})]
    path = tmp_path / "gradebook.csv"
    write_csv(results, path)
    assert read_rows(path) == [
        ["student", "ex0", "ex1", "ex2", "total", "max_total", "state", "late", "late_penalty",
         "total_after_penalty", "incidents"],
        ["bob", "0.1", "0.8", "27.9", "28.8", "34", "graded", "", "0", "28.8", ""],
        ["zoë", "0", "0", "0", "0", "34", "graded", "", "0", "0", ""],
        ["empty", "", "", "", "0", "34", "graded", "", "0", "0", ""]]
    assert results[0].total == 28.799999999999997    # the float noise the formatting hides
    assert path.read_bytes().decode("utf-8").startswith("student,")
    assert [p.name for p in tmp_path.iterdir()] == ["gradebook.csv"]   # no temp file left behind


def test_csv_takes_student_names_and_defuses_formulas(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old content\n", encoding="utf-8")
    write_csv([make_result("a", scores=(1 / 3,)), make_result("b", scores=(1.0,))], path,
              students=["=HYPERLINK(\"x\")", "Łukasz"])
    rows = read_rows(path)
    assert rows[1] == ["'=HYPERLINK(\"x\")", "0.333333333333", "0.333333333333", "2", "graded", "", "0",
                       "0.333333333333", ""]
    assert rows[2][0] == "Łukasz"
    with pytest.raises(ValueError):
        write_csv([make_result()], path, students=[])
    assert read_rows(path) == rows                    # a failed write leaves the old file as it was


def test_csv_of_no_results_has_only_the_header(tmp_path: Path) -> None:
    write_csv([], tmp_path / "empty.csv")
    assert read_rows(tmp_path / "empty.csv") == [["student", "total", "max_total", "state", "late", "late_penalty",
                                                        "total_after_penalty", "incidents"]]


def test_values_every_result_shares_are_stored_once_per_rubric_and_come_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "gradebook.sqlite"
    right = make_result("alice")
    wrong = make_result("bob", scores=(0.0, 0.8, 26.0))                      # ex0 got None: kept
    own = make_result("carol", rubric_sha256="r1")
    own = SubmissionResult(**{**own.__dict__, "exercises": tuple(
        ExerciseResult(e.id, e.title, e.score, e.max_score, tuple(
            CaseResult(**{**c.__dict__, "expected": [9, 9], "got": [9, 9]}) for c in e.cases))
        for e in own.exercises)})                                           # an `expect:` of its own: kept
    with Gradebook(path) as book:
        for result in (right, wrong, own):
            book.record(result.submission, "s", result)
    db = sqlite3.connect(path)
    stored = {student: json.loads(text) for student, text in db.execute(
        "SELECT s.student, r.json FROM results r JOIN submissions s ON s.id = r.submission_id")}
    shared = db.execute("SELECT count(*) FROM shared_values").fetchone()[0]
    db.close()
    assert shared == 3                                                      # one row per case of the rubric
    alice_cases = [c for e in stored["alice"]["exercises"] for c in e["cases"]]
    assert all("expected" not in c and "got" not in c and "call" not in c for c in alice_cases)
    assert stored["bob"]["exercises"][0]["cases"][0]["got"] is None
    assert stored["carol"]["exercises"][0]["cases"][0]["expected"] == [9, 9]
    with Gradebook(path) as book:
        assert {r.submission: r for r in book.current(RUBRIC)} == {"alice": right, "bob": wrong, "carol": own}
    assert consistency_problems(path) == []


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_a_value_is_left_out_only_when_its_json_is_the_shared_one(a: object, b: object) -> None:
    """The gradebook compares answers with shared values without encoding them: the same verdict as comparing
    their JSON texts, also for values Python calls equal (1 and True, 0.0 and -0.0, 1 and 1.0)."""
    from grader.store.gradebook import _same_json, _value_text
    assert _same_json(a, _value_text(b)) == (_value_text(a) == _value_text(b))
    assert _same_json(a, _value_text(a))
    assert _same_json(json.loads(_value_text(a)), _value_text(a))


def test_look_alike_answers_are_stored_as_given(tmp_path: Path) -> None:
    """An answer Python calls equal to the expected value but that is not the same JSON (True for 1, 1.0 for 1)
    is kept in the row, so reading it back gives exactly what was recorded."""
    path = tmp_path / "gradebook.sqlite"
    results = []
    for student, got in (("alice", [1, 2]), ("bob", [True, 2]), ("carol", [1.0, 2]), ("dave", [-0.0, 2])):
        result = make_result(student)
        results.append(SubmissionResult(**{**result.__dict__, "exercises": tuple(
            ExerciseResult(e.id, e.title, e.score, e.max_score, tuple(
                CaseResult(**{**c.__dict__, "got": got}) for c in e.cases)) for e in result.exercises)}))
    with Gradebook(path) as book:
        for result in results:
            book.record(result.submission, "s", result)
        back = {r.submission: r for r in book.current(RUBRIC)}
    for result in results:
        got = back[result.submission].exercises[0].cases[0].got
        assert json.dumps(got) == json.dumps(result.exercises[0].cases[0].got)


def test_score_rows_give_each_students_own_lateness_and_scores_in_rubric_order(tmp_path: Path) -> None:
    """The rows the CSV is made of: late and penalty (columns of each result, not per exercise row)
    stay with their own student, also for a student without exercises and for one student asked alone."""
    from dataclasses import replace
    with Gradebook(tmp_path / "gb.sqlite") as book:
        book.record("bob", "bob.ipynb", replace(make_result("bob", scores=(1.0, 0.5, 3.0)), late=True, penalty=2.5))
        book.record("amy", "amy.ipynb", make_result("amy", scores=(0.0, 2.0, 30.0)))
        book.record("cat", "cat.ipynb", replace(make_result("cat"), exercises=(), total=0.0, late=True))
        rows = list(book.score_rows(RUBRIC))
        assert [(r.student, r.late, r.penalty, r.scores) for r in rows] == [
            ("amy", False, 0.0, {"ex0": 0.0, "ex1": 2.0, "ex2": 30.0}),
            ("bob", True, 2.5, {"ex0": 1.0, "ex1": 0.5, "ex2": 3.0}),
            ("cat", True, 0.0, {})]
        assert list(book.score_rows(RUBRIC, "bob")) == [rows[1]]
        assert list(book.score_rows(RUBRIC, "nobody")) == []


def test_a_version_2_gradebook_gets_each_results_lateness_busy_cases_and_time_as_columns(tmp_path: Path) -> None:
    """Version 3 keeps late, penalty, busy cases and grading time in columns, and every student's current facts
    in an index (a regrade of an unchanged class and its CSV read them for every student; out of the json each
    cost a parse of the whole result). A version 2 file, which has them in the json only, is upgraded on opening
    with the same rows as before."""
    from dataclasses import replace
    path = tmp_path / "gb.sqlite"
    bob = make_result("bob")
    # Two of bob's cases a busy machine kept from being judged: the count is the cases' (results.not_judged),
    # whatever the budget's facts say (cat's say 2, in a field no count reads).
    busy = replace(bob.exercises[0], cases=tuple(replace(case, status="problem", reason="busy machine")
                                                 for case in bob.exercises[0].cases * 2))
    with Gradebook(path) as book:
        book.record("amy", "amy.ipynb", replace(make_result("amy"), late=True, penalty=1.5, seconds=2.25))
        book.record("bob", "bob.ipynb", replace(bob, exercises=(busy, *bob.exercises[1:]), seconds=0.5))
        book.record("cat", "cat.ipynb", replace(make_result("cat"), extra={"budget": {"busy_cases": 2}}))
        rows, seconds = list(book.score_rows(RUBRIC)), book.durations(RUBRIC)
    assert [(r.student, r.late, r.penalty, r.busy) for r in rows] == [
        ("amy", True, 1.5, 0), ("bob", False, 0.0, 2), ("cat", False, 0.0, 0)]
    assert seconds == {"amy": 2.25, "bob": 0.5}
    db = sqlite3.connect(path)       # the same file as version 2 wrote it: those facts in the json only
    db.execute("DROP INDEX results_heads")
    for column in ("late", "penalty", "busy", "seconds", "incidents"):
        db.execute(f"ALTER TABLE results DROP COLUMN {column}")
    _as_version_5(db)
    db.execute("UPDATE schema_version SET version = 2")
    db.commit()
    db.close()
    with Gradebook(path) as book:
        assert list(book.score_rows(RUBRIC)) == rows
        assert book.durations(RUBRIC) == seconds
    assert sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert consistency_problems(path) == []


def test_a_version_3_gradebook_counts_its_busy_cases_again_so_a_regrade_grades_them(tmp_path: Path) -> None:
    """A version 3 file written before the busy column was counted from the cases holds 0 for a result whose
    cases a busy machine kept from being judged without the submission's deadline being reached (no
    extra.budget.busy_cases): unchanged_row called it unchanged, and the student kept those cases at 0 points
    at every run. Opening it counts them again; a result without busy cases keeps 0."""
    from dataclasses import replace
    path = tmp_path / "gb.sqlite"
    bob = make_result("bob")
    busy = replace(bob.exercises[0], cases=tuple(replace(case, status="problem", reason="busy machine")
                                                 for case in bob.exercises[0].cases))
    with Gradebook(path) as book:
        book.record("amy", "amy.ipynb", replace(make_result("amy"), extra={"note": "busy machine"}))
        book.record("bob", "bob.ipynb", replace(bob, exercises=(busy, *bob.exercises[1:])))
    db = sqlite3.connect(path)       # as the old count left it: nothing in extra.budget, so 0
    db.execute("UPDATE results SET busy = 0")
    _as_version_4(db)
    db.execute("UPDATE schema_version SET version = 3")
    db.commit()
    db.close()
    with Gradebook(path) as book:
        assert [(r.student, r.busy) for r in book.score_rows(RUBRIC)] == [("amy", 0), ("bob", len(busy.cases))]
        unchanged = book.unchanged_row(RUBRIC, "bob", bob.sha256, bob.rubric_sha256, bob.grader_version)
        assert unchanged is not None and unchanged.busy     # what makes the batch grade bob again
    assert sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert consistency_problems(path) == []


def _as_version_6(db: sqlite3.Connection) -> None:
    """The file as version 6 wrote it: no results.verdicts."""
    db.execute("ALTER TABLE results DROP COLUMN verdicts")


def _as_version_5(db: sqlite3.Connection) -> None:
    """The file as version 5 wrote it: no scores.forfeited."""
    _as_version_6(db)
    db.execute("ALTER TABLE scores DROP COLUMN forfeited")


def _as_version_4(db: sqlite3.Connection) -> None:
    """The file as version 4 wrote it: no incidents column, its heads index without it."""
    _as_version_5(db)
    db.execute("DROP INDEX results_heads")
    db.execute("ALTER TABLE results DROP COLUMN incidents")
    db.execute("""CREATE INDEX results_heads ON results (id, sha256, rubric_sha256, grader_version, state, isolation,
                                                         total, max_total, late, penalty, busy, seconds)""")


def test_a_version_4_gradebook_reads_its_results_incidents_into_the_rows(tmp_path: Path) -> None:
    """Incidents (grader.incidents) are a column the CSV and grade's summary read with the scores, no JSON decoded.
    A gradebook written before the column fills it once, from each result's own list; a result with none: ''."""
    from dataclasses import replace
    from grader.incidents import FORGED_FRAME, PARENT, Incident
    seen = (Incident(FORGED_FRAME, PARENT, "find_tile", "find_tile#1", 2),)
    path = tmp_path / "gb.sqlite"
    with Gradebook(path) as book:
        book.record("amy", "amy.ipynb", make_result("amy"))
        book.record("bob", "bob.ipynb", replace(make_result("bob"), incidents=seen))
        rows = {row.student: row.incidents for row in book.score_rows(RUBRIC)}
        assert rows == {"amy": (), "bob": seen}
        assert [row.student for row in book.incident_rows(RUBRIC)] == ["bob"]
    db = sqlite3.connect(path)
    _as_version_4(db)
    db.execute("UPDATE schema_version SET version = 4")
    db.commit()
    db.close()
    with Gradebook(path) as book:
        assert {row.student: row.incidents for row in book.score_rows(RUBRIC)} == rows
        assert [row.student for row in book.incident_rows(RUBRIC)] == ["bob"]
    assert sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert consistency_problems(path) == []


def test_unchanged_row_is_the_current_row_only_for_the_same_file_rubric_and_grader(tmp_path: Path) -> None:
    from dataclasses import replace
    with Gradebook(tmp_path / "gb.sqlite") as book:
        book.record("amy", "amy.ipynb", make_result("amy", sha256="1" * 64))
        book.record("amy", "amy.ipynb", make_result("amy", sha256="2" * 64, scores=(1.0, 1.0, 1.0)))
        book.record("cat", "cat.ipynb", replace(make_result("cat"), exercises=(), total=0.0))
        rows = {row.student: row for row in book.score_rows(RUBRIC)}
        assert book.unchanged_row(RUBRIC, "amy", "2" * 64, "r1", "0.1.0") == rows["amy"]
        assert book.unchanged_row(RUBRIC, "cat", "a" * 64, "r1", "0.1.0") == rows["cat"]
        assert rows["amy"].scores == {"ex0": 1.0, "ex1": 1.0, "ex2": 1.0} and rows["cat"].scores == {}
        for student, sha256, rubric_sha256, version in [("amy", "1" * 64, "r1", "0.1.0"),   # an older file
                                                        ("amy", "2" * 64, "r2", "0.1.0"),
                                                        ("amy", "2" * 64, "r1", "0.2.0"),
                                                        ("bob", "2" * 64, "r1", "0.1.0")]:
            assert book.unchanged_row(RUBRIC, student, sha256, rubric_sha256, version) is None
            assert is_current(book, student, sha256, rubric_sha256, version) is False
        assert book.unchanged_row("another", "amy", "2" * 64, "r1", "0.1.0") is None


def test_a_version_5_gradebook_reads_as_nothing_forfeited_and_records_what_the_policy_took(tmp_path: Path) -> None:
    """ExerciseResult.forfeited (the judge's score an incident policy zeroed) is a scores column grade's incident line
    and the CSV read, so a TA sees what `override --forgive` gives back. A gradebook written before it opens with
    none (NULL) for its results, no regrade; a result recorded after it keeps its own."""
    from dataclasses import replace
    from grader.incidents import FORGED_FRAME, PARENT, Incident
    seen = (Incident(FORGED_FRAME, PARENT, "find_tile", "find_tile#1"),)
    path = tmp_path / "gb.sqlite"
    with Gradebook(path) as book:
        book.record("amy", "amy.ipynb", make_result("amy"))
    db = sqlite3.connect(path)
    _as_version_5(db)
    db.execute("UPDATE schema_version SET version = 5")
    db.commit()
    db.close()
    bob = make_result("bob")
    zeroed = replace(bob.exercises[0], score=0.0, forfeited=bob.exercises[0].score)
    with Gradebook(path) as book:
        assert [row.forfeited for row in book.score_rows(RUBRIC)] == [{}]
        assert all(e.forfeited is None for e in book.result("amy", RUBRIC).exercises)
        book.record("bob", "bob.ipynb", replace(bob, exercises=(zeroed, *bob.exercises[1:]), incidents=seen))
        assert {row.student: row.forfeited for row in book.score_rows(RUBRIC)} == {
            "amy": {}, "bob": {zeroed.id: zeroed.forfeited}}
        assert book.result("bob", RUBRIC).exercises[0].forfeited == zeroed.forfeited
    # Stored only where the policy took a score: every other exercise's stored form is what it was before
    stored = dict(sqlite3.connect(path).execute(
        "SELECT s.student, r.json FROM submissions s JOIN results r ON r.id = s.current_result"))
    assert '"forfeited"' not in stored["amy"] and stored["bob"].count('"forfeited"') == 1
    assert sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert consistency_problems(path) == []
