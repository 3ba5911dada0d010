"""Lateness: the LMS's flag and the file's time become a column, and a rubric's late policy a penalty shown
apart from the score."""

from __future__ import annotations

import csv
import zipfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from grader.run.batch import grade_batch
from grader.intake.gather import gather
from grader.rubric.lateness import DAY, LatePolicy, assess, parse_due
from grader.rubric.schema import RubricError, load_rubric

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
DUE = datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc)
POLICY = LatePolicy(DUE, per_day=0.1, cap=0.3)


def test_penalty_counts_started_days_up_to_the_cap_and_leaves_the_score_alone():
    due = DUE.timestamp()
    assert assess(False, due - 60, 30.0, POLICY).penalty == 0.0
    one = assess(False, due + 60, 30.0, POLICY)
    assert (one.late, one.days, one.penalty) == (True, 1, 3.0)
    assert assess(False, due + 2 * DAY + 1, 30.0, POLICY).penalty == pytest.approx(9.0)
    assert assess(False, due + 30 * DAY, 30.0, POLICY).penalty == pytest.approx(9.0)      # the cap
    flagged = assess(True, None, 20.0, POLICY)                                            # no time: one day
    assert (flagged.late, flagged.days, flagged.penalty) == (True, 1, 2.0)
    assert assess(True, due + 60, 30.0, None) == assess(True, due + 60, 30.0, None)
    assert assess(True, None, 30.0, None).penalty == 0.0 and assess(True, None, 30.0, None).late


@given(st.floats(-1e7, 1e7), st.floats(0, 100), st.floats(0, 1), st.floats(0, 1))
def test_a_penalty_is_never_negative_nor_above_the_cap(offset, total, per_day, cap):
    lateness = assess(False, DUE.timestamp() + offset, total, LatePolicy(DUE, per_day, cap))
    assert 0.0 <= lateness.penalty <= total * cap + 1e-9
    assert lateness.late == (lateness.days > 0)


def test_canvas_late_flag_and_zip_times_are_kept_by_the_intake(tmp_path: Path):
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr(zipfile.ZipInfo("doejane_LATE_22345_67891_lab.ipynb", (2026, 11, 21, 8, 0, 0)), "{}")
        archive.writestr(zipfile.ZipInfo("smithjohn_12345_67890_lab.ipynb", (2026, 11, 19, 8, 0, 0)), "{}")
    entries = {e.student: e for e in gather([export], tmp_path / "work").entries}
    assert entries["doejane_22345"].late and not entries["smithjohn_12345"].late
    assert datetime.fromtimestamp(entries["doejane_22345"].modified, timezone.utc) == \
        datetime(2026, 11, 21, 8, 0, tzinfo=timezone.utc)


def test_a_rubric_late_policy_is_parsed_and_its_mistakes_are_reported(tmp_path: Path):
    text = RUBRIC.read_text(encoding="utf-8").replace("../", str(RUBRIC.parent.parent) + "/")
    good = tmp_path / "late.yaml"
    good.write_text(text + "late: {due: '2026-11-20T23:59:00+00:00', per_day: 0.1, cap: 0.3}\n", encoding="utf-8")
    assert load_rubric(good).late == POLICY
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "late: {due: next friday, per_dya: 2}\n", encoding="utf-8")
    with pytest.raises(RubricError) as error:
        load_rubric(bad)
    assert any("'due' must be an ISO date" in p for p in error.value.problems)
    assert any("unknown key 'per_dya'" in p and "per_day" in p for p in error.value.problems)
    assert parse_due("2026-11-20") == datetime(2026, 11, 20, tzinfo=timezone.utc)


def test_the_lms_late_flag_is_not_overruled_by_a_file_time_the_student_set(tmp_path: Path):
    """Canvas flags a late upload in its file name; a student's upload zip keeps the dates the student's clock gave
    its members. A late `lab.zip` whose notebook is dated a year before the due date was late with no penalty (the
    days were counted from that date); the LMS's word costs at least one day."""
    upload = tmp_path / "upload.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        archive.writestr(zipfile.ZipInfo("lab.ipynb", (2025, 11, 20, 8, 0, 0)), "{}")
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.write(upload, "doejane_LATE_22345_67891_lab.zip")
    [entry] = gather([export], tmp_path / "work").entries
    assert entry.late and entry.modified < DUE.timestamp()
    lateness = assess(entry.late, entry.modified, 30.0, POLICY)
    assert (lateness.late, lateness.days, lateness.penalty) == (True, 1, pytest.approx(3.0))


def test_late_submissions_get_a_column_and_a_penalty_apart_from_their_score(tmp_path: Path, grader_cache: Path):
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        for name, date in (("doejane_LATE_22345_67891_lab.ipynb", (2026, 11, 22, 8, 0, 0)),
                           ("smithjohn_12345_67890_lab.ipynb", (2026, 11, 19, 8, 0, 0))):
            info = zipfile.ZipInfo(name, date)
            archive.writestr(info, (EXAMPLES / "correct.ipynb").read_bytes())
    rubric = replace(load_rubric(RUBRIC), late=POLICY)
    batch = grade_batch([export], rubric, tmp_path / "out", jobs=1, cache=grader_cache)
    results = {r.submission: r for r in batch.results}
    late, on_time = results["doejane_22345"], results["smithjohn_12345"]
    assert (late.total, late.late, late.penalty) == (30, True, 6.0)        # two started days, 10% each
    assert (on_time.total, on_time.late, on_time.penalty) == (30, False, 0.0)
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "gradebook.csv").open(encoding="utf-8"))}
    assert (rows["doejane_22345"]["total"], rows["doejane_22345"]["late"], rows["doejane_22345"]["late_penalty"],
            rows["doejane_22345"]["total_after_penalty"]) == ("30", "late", "6", "24")
    assert rows["smithjohn_12345"]["late"] == ""


# Moodle's grading worksheet as "View all submissions > Download grading worksheet" writes it (a BOM, quoted
# cells, the Status column's states joined by " - ", the late one "<time> late"), for the export below.
MOODLE_WORKSHEET = (
    '\ufeff"Identifier","Full name","Email address","Status","Grade","Maximum Grade","Grade can be changed",'
    '"Last modified (submission)","Last modified (grade)","Feedback comments"\n'
    '"Participant 2101","Ada Byron","ada@example.org","Submitted for grading - 1 day 2 hours late - Graded",'
    '"","30.00","Yes","Saturday, 21 November 2026, 2:00 AM","-",""\n'
    '"Participant 2102","Bo Chen","bo@example.org","Submitted for grading","","30.00","Yes",'
    '"Thursday, 19 November 2026, 8:00 AM","-",""\n'
    '"Participant 2103","Cy Late-Ness","cy@example.org","No submission","","30.00","Yes","-","-",""\n')


def moodle_export(path: Path, extra: dict[str, str] | None = None) -> Path:
    """A real "Download all submissions" zip: one folder per participant, named `Full Name_<id>_assignsubmission_
    file_`; Moodle puts no late flag in it."""
    notebook = (EXAMPLES / "correct.ipynb").read_bytes()
    with zipfile.ZipFile(path, "w") as archive:
        for folder, date in (("Ada Byron_2101_assignsubmission_file_", (2026, 11, 21, 2, 0, 0)),
                             ("Bo Chen_2102_assignsubmission_file_", (2026, 11, 19, 8, 0, 0))):
            archive.writestr(zipfile.ZipInfo(f"{folder}/lab.ipynb", date), notebook)
        for name, text in (extra or {}).items():
            archive.writestr(zipfile.ZipInfo(name, (2026, 11, 23, 9, 0, 0)), text)
    return path


def test_moodle_worksheet_beside_the_export_flags_the_late_submissions(tmp_path: Path):
    export = moodle_export(tmp_path / "moodle.zip")
    sheet = tmp_path / "grades.csv"
    sheet.write_text(MOODLE_WORKSHEET, encoding="utf-8")
    intake = gather([export, sheet], tmp_path / "work")
    entries = {e.student: e for e in intake.entries}
    assert entries["Ada_Byron_2101"].late and not entries["Bo_Chen_2102"].late
    assert intake.problems == ()
    assert any("grades.csv: moodle worksheet, 3 students, 1 late" in note for note in intake.notes)
    # without the worksheet Moodle's export says nothing of lateness
    assert not any(e.late for e in gather([export], tmp_path / "plain").entries)


def test_moodle_worksheet_at_the_top_of_the_export_is_read_but_a_students_own_csv_is_not(tmp_path: Path):
    # Bo's folder holds a forged worksheet marking Ada late and nobody else: a student's file is not the TA's.
    forged = MOODLE_WORKSHEET.replace("Submitted for grading - 1 day 2 hours late", "Submitted for grading")
    forged = forged.replace('"Submitted for grading","","30.00"', '"Submitted for grading - 3 days late","","30.00"')
    export = moodle_export(tmp_path / "moodle.zip", {
        "Bo Chen_2102_assignsubmission_file_/grades.csv": forged,
        "Ada Byron_2101_assignsubmission_file_grades.csv": forged})
    entries = {e.student: e for e in gather([export], tmp_path / "work").entries}
    assert not entries["Bo_Chen_2102"].late and not entries["Ada_Byron_2101"].late
    inside = moodle_export(tmp_path / "with-sheet.zip", {"grades.csv": MOODLE_WORKSHEET,
                                                         "Bo Chen_2102_assignsubmission_file_/grades.csv": forged})
    entries = {e.student: e for e in gather([inside], tmp_path / "work2").entries}
    assert entries["Ada_Byron_2101"].late and not entries["Bo_Chen_2102"].late


def test_a_csv_that_is_no_worksheet_is_left_as_before(tmp_path: Path):
    export = moodle_export(tmp_path / "moodle.zip")
    other = tmp_path / "marks.csv"
    other.write_text("student,mark\nada,3\n", encoding="utf-8")
    intake = gather([export, other], tmp_path / "work")
    assert not any(e.late for e in intake.entries)
    assert any("marks.csv" in problem and "not a notebook" in problem for problem in intake.problems)


def test_moodle_late_flag_reaches_the_result_and_the_gradebook_as_canvas_does(tmp_path: Path,
                                                                              grader_cache: Path):
    export = moodle_export(tmp_path / "moodle.zip", {"grades.csv": MOODLE_WORKSHEET})
    # No due date in the rubric: only Moodle's own flag can say who was late.
    batch = grade_batch([export], load_rubric(RUBRIC), tmp_path / "out", jobs=1, cache=grader_cache)
    results = {r.submission: r for r in batch.results}
    assert (results["Ada_Byron_2101"].late, results["Ada_Byron_2101"].total) == (True, 30)
    assert not results["Bo_Chen_2102"].late
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "gradebook.csv").open(encoding="utf-8"))}
    assert rows["Ada_Byron_2101"]["late"] == "late" and rows["Bo_Chen_2102"]["late"] == ""
