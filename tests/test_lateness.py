"""Lateness: the LMS's flag and the file's time become a column, and a rubric's late policy a penalty shown
apart from the score."""

from __future__ import annotations

import csv
import json
import os
import zipfile
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from grader.run.batch import grade_batch
from grader.intake.gather import gather
from grader.rubric.lateness import DAY, HandIn, LatePolicy, assess, parse_due, penalty_of
from grader.rubric.schema import RubricError, load_rubric

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
DUE = datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc)
POLICY = LatePolicy(DUE, per_day=0.1, cap=0.3)


def test_penalty_counts_started_days_up_to_the_cap_and_leaves_the_score_alone():
    due = DUE.timestamp()
    assert assess(HandIn(False, due - 60), 30.0, POLICY).penalty == 0.0
    one = assess(HandIn(False, due + 60), 30.0, POLICY)
    assert (one.late, one.days, one.penalty) == (True, 1, 3.0)
    assert assess(HandIn(False, due + 2 * DAY + 1), 30.0, POLICY).penalty == pytest.approx(9.0)
    assert assess(HandIn(False, due + 30 * DAY), 30.0, POLICY).penalty == pytest.approx(9.0)      # the cap
    flagged = assess(HandIn(True), 20.0, POLICY)                                          # no time: one day
    assert (flagged.late, flagged.days, flagged.penalty) == (True, 1, 2.0)
    assert assess(HandIn(True, due + 60), 30.0, None) == assess(HandIn(True, due + 60), 30.0, None)
    assert assess(HandIn(True), 30.0, None).penalty == 0.0 and assess(HandIn(True), 30.0, None).late


@given(st.floats(-1e7, 1e7), st.floats(0, 100), st.floats(0, 1), st.floats(0, 1))
def test_a_penalty_is_never_negative_nor_above_the_cap(offset, total, per_day, cap):
    lateness = assess(HandIn(False, DUE.timestamp() + offset), total, LatePolicy(DUE, per_day, cap))
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
    # ...but a Canvas member's date is the hour Canvas made the zip, not when it was handed in
    assert entries["doejane_22345"].handed_in == 0.0 == entries["smithjohn_12345"].handed_in


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
    assert entry.late and entry.modified < DUE.timestamp() and entry.handed_in == 0.0   # the student's clock: unused
    lateness = assess(hand_in(entry), 30.0, POLICY)
    assert (lateness.late, lateness.days, lateness.penalty) == (True, 1, pytest.approx(3.0))


def hand_in(entry) -> HandIn:
    return HandIn(entry.late, entry.handed_in, entry.recorded, entry.extended)


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
    # Canvas's flag is the only word on when it came (the member's date is the export's): one day, 10 %
    assert (late.total, late.late, late.penalty, late.submitted_at) == (30, True, 3.0, "")
    assert (on_time.total, on_time.late, on_time.penalty) == (30, False, 0.0)
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "gradebook.csv").open(encoding="utf-8"))}
    assert (rows["doejane_22345"]["total"], rows["doejane_22345"]["late"], rows["doejane_22345"]["late_penalty"],
            rows["doejane_22345"]["total_after_penalty"]) == ("30", "late", "3", "27")
    assert rows["smithjohn_12345"]["late"] == ""
    # The penalty shows apart from the score where a TA or the student reads it (old code: only "late" in the
    # class report, nothing in the student's report: 30/30 there, 27 in the gradebook)
    from grader.report.class_report import class_report_html
    from grader.report.student import html_report, markdown_report
    assert "late −3</span>" in class_report_html(batch.results)
    said = "Handed in late: the late policy takes off 3, 27 / 30 after it."
    assert said in markdown_report(late) and said in html_report(late)
    assert "late" not in markdown_report(on_time).split("|")[0]
    from rich.console import Console
    from grader.report.console import print_rows
    console = Console(record=True, width=200)
    print_rows(batch.rows, console)
    table = console.export_text()
    assert "late" in table and "−3" in table
    from grader.report.gradescope import to_gradescope
    scope = to_gradescope(late)
    assert scope["score"] == 30 and (scope["extra_data"]["late"], scope["extra_data"]["late_penalty"]) == (True, 3.0)
    assert said in scope["output"] and "late" not in to_gradescope(on_time)["extra_data"]


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
    assert any("grades.csv: moodle worksheet, 3 students, 1 late, 2 hand-ins with the LMS's time" in note
               for note in intake.notes)
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


# --- Session 14: which time says when a hand-in came, the LMS's flag against the rubric's own due date -------------

def canvas_export(path: Path, made: tuple[int, ...] = (2026, 11, 25, 9, 30, 0)) -> Path:
    """A Canvas "Download Submissions" zip as Canvas writes it: rubyzip's get_output_stream with no time, so
    every member is dated the hour the zip was made (here five days after the due date)."""
    notebook = (EXAMPLES / "correct.ipynb").read_bytes()
    with zipfile.ZipFile(path, "w") as archive:
        for name in ("doejane_LATE_22345_67891_lab.ipynb", "smithjohn_12345_67890_lab.ipynb"):
            archive.writestr(zipfile.ZipInfo(name, made), notebook)
    return path


def test_a_canvas_export_made_after_the_due_date_charges_no_one_who_was_on_time(tmp_path: Path):
    """Old code: every Canvas student was days late by the date Canvas gave its zip's members (the download's)."""
    entries = {e.student: e for e in gather([canvas_export(tmp_path / "canvas.zip")], tmp_path / "work").entries}
    on_time, late = assess(hand_in(entries["smithjohn_12345"]), 30.0, POLICY), \
        assess(hand_in(entries["doejane_22345"]), 30.0, POLICY)
    assert (on_time.late, on_time.penalty) == (False, 0.0)
    assert (late.late, late.days, late.penalty) == (True, 1, pytest.approx(3.0))


def test_an_extension_in_the_rubric_is_honoured_when_the_lms_says_when_the_work_came(tmp_path: Path):
    """Moodle flagged Ada late against its own due date (20 Nov); the rubric extends to 22 Nov; Moodle's own
    record says she handed in on 21 Nov, 2:00: not charged (old code: the flag cost a day). Against the
    original due date the same record is one day late, and a record after the extension is charged."""
    export = moodle_export(tmp_path / "moodle.zip", {"grades.csv": MOODLE_WORKSHEET})
    entries = {e.student: e for e in gather([export], tmp_path / "work").entries}
    ada = entries["Ada_Byron_2101"]
    assert ada.late and ada.recorded == "2026-11-21T02:00:00"
    extended = LatePolicy(datetime(2026, 11, 22, 23, 59, tzinfo=timezone.utc), 0.1, 0.3)
    on_time = assess(hand_in(ada), 30.0, extended)
    assert (on_time.late, on_time.days, on_time.penalty) == (False, 0, 0.0)
    assert assess(hand_in(ada), 30.0, extended).submitted_at == "2026-11-21T02:00:00+00:00"
    really = assess(hand_in(ada), 30.0, POLICY)
    assert (really.late, really.days, really.penalty) == (True, 1, pytest.approx(3.0))
    later = replace(ada, recorded="2026-11-24T08:00:00")
    assert assess(hand_in(later), 30.0, extended).days == 2
    # Moodle writes the TA's local time: the rubric's zone reads it (Berlin: 02:00 is 01:00 UTC)
    from zoneinfo import ZoneInfo
    berlin = replace(POLICY, zone=ZoneInfo("Europe/Berlin"))
    assert assess(hand_in(ada), 30.0, berlin).submitted_at == "2026-11-21T01:00:00+00:00"


def test_a_students_own_clock_never_says_when_the_work_came(tmp_path: Path):
    """Inside a student's own zip the dates are the student's clock: its members were handed in when the zip
    was. A folder's `alice/lab.zip` dated after the due date is late whatever its notebook says (old code: the
    notebook's date, a year early, made it on time); Canvas's flag still charges a backdated upload."""
    upload = tmp_path / "lab.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        archive.writestr(zipfile.ZipInfo("lab.ipynb", (2025, 11, 20, 8, 0, 0)), "{}")
    folder = tmp_path / "class" / "alice"
    folder.mkdir(parents=True)
    (folder / "lab.zip").write_bytes(upload.read_bytes())
    late = DUE.timestamp() + 3600
    os.utime(folder / "lab.zip", (late, late))
    [entry] = gather([tmp_path / "class"], tmp_path / "work").entries
    assert entry.handed_in == late
    assert assess(hand_in(entry), 30.0, POLICY).days == 1


def test_the_rubric_says_whether_an_lms_flag_without_a_time_costs_a_day(tmp_path: Path):
    """Canvas gives no time of a hand-in: a rubric that extends Canvas's due date says `lms_flag: ignore`, and
    then the flag costs nothing; by default (`trust`) it costs a day."""
    text = RUBRIC.read_text(encoding="utf-8").replace("../", str(RUBRIC.parent.parent) + "/")
    path = tmp_path / "late.yaml"
    path.write_text(text + "late: {due: '2026-11-22T23:59:00+00:00', per_day: 0.1, lms_flag: ignore}\n",
                    encoding="utf-8")
    ignoring = load_rubric(path).late
    assert ignoring is not None and ignoring.lms_flag == "ignore"
    flagged = HandIn(flagged=True)
    assert assess(flagged, 30.0, ignoring).penalty == 0.0 and not assess(flagged, 30.0, ignoring).late
    assert assess(flagged, 30.0, replace(ignoring, lms_flag="trust")).penalty == pytest.approx(3.0)
    path.write_text(text + "late: {due: '2026-11-22T23:59:00+00:00', lms_flag: sometimes}\n", encoding="utf-8")
    with pytest.raises(RubricError) as error:
        load_rubric(path)
    assert any("lms_flag is 'trust'" in p for p in error.value.problems)


def test_a_due_date_without_a_zone_is_read_in_the_courses_zone_or_refused(tmp_path: Path, monkeypatch):
    """Old code read `due: 2026-11-20` as midnight UTC starting that day: a course in New York charged a day
    for work handed in at 10 pm on the 20th. A date is due as it ends, in the rubric's `zone` (daylight saving
    included); without a zone the rubric says what is missing."""
    from zoneinfo import ZoneInfo
    new_york = ZoneInfo("America/New_York")
    due = parse_due("2026-11-20", new_york)
    assert due.astimezone(timezone.utc) == datetime(2026, 11, 21, 5, 0, tzinfo=timezone.utc)
    evening = datetime(2026, 11, 20, 22, 0, tzinfo=new_york).timestamp()
    assert not assess(HandIn(False, evening), 30.0, LatePolicy(due)).late
    # Berlin's summer time starts on 29 March 2026: 23:59 that evening is 21:59 UTC, not 22:59
    berlin = parse_due("2026-03-29T23:59", ZoneInfo("Europe/Berlin"))
    assert berlin.astimezone(timezone.utc) == datetime(2026, 3, 29, 21, 59, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        parse_due("2026-11-20T23:59")
    text = RUBRIC.read_text(encoding="utf-8").replace("../", str(RUBRIC.parent.parent) + "/")
    path = tmp_path / "late.yaml"
    path.write_text(text + "late: {due: '2026-11-20T23:59'}\n", encoding="utf-8")
    monkeypatch.setenv("TZ", "UTC")
    with pytest.raises(RubricError) as error:
        load_rubric(path)
    assert any("zone: Europe/Berlin" in p for p in error.value.problems)
    path.write_text(text + "late: {due: '2026-11-20', zone: America/New_York}\n", encoding="utf-8")
    assert load_rubric(path).late == LatePolicy(due, zone=new_york)
    path.write_text(text + "late: {due: '2026-11-20', zone: Mars/Olympus}\n", encoding="utf-8")
    with pytest.raises(RubricError) as error:
        load_rubric(path)
    assert any("no IANA time zone" in p for p in error.value.problems)


def test_a_zone_less_due_date_is_refused_with_the_fix_to_write(tmp_path: Path, monkeypatch):
    """The refusal says what is missing (a zone, not a readable date) and what to write: the date with an offset,
    or `zone:` with this machine's zone where it is a course's (a TA's laptop in Chicago), never offering a
    server's UTC, the very guess that charged a course west of Greenwich a day. Nothing is read in a zone the
    rubric does not name."""
    from grader.rubric.lateness import NoZone, local_zone_name
    text = RUBRIC.read_text(encoding="utf-8").replace("../", str(RUBRIC.parent.parent) + "/")
    path = tmp_path / "late.yaml"
    path.write_text(text + "late: {due: '2026-11-20'}\n", encoding="utf-8")
    line = len(text.splitlines()) + 1

    def problems(zone: str) -> list[str]:
        monkeypatch.setenv("TZ", zone)
        with pytest.raises(RubricError) as error:
            load_rubric(path)
        return [p for p in error.value.problems if "late:" in p]

    [chicago] = problems("America/Chicago")
    assert chicago.startswith(f"{path}:{line}: late: due '2026-11-20' has no time zone and the rubric names none")
    assert "2026-11-20T23:59+01:00" in chicago and "(zone: America/Chicago, this machine's, if it is the course's)" \
        in chicago
    for utc in ("UTC", "Etc/UTC", ":Etc/UTC", "Etc/GMT", "Universal"):
        [refused] = problems(utc)
        assert "(e.g. zone: Europe/Berlin)" in refused and "this machine's," not in refused
    path.write_text(text + "late: {due: '2026-11-31'}\n", encoding="utf-8")   # no such day: not a zone's matter
    [unreadable] = problems("America/Chicago")
    assert "must be an ISO date-time" in unreadable and "has no time zone" not in unreadable
    with pytest.raises(NoZone):
        parse_due("2026-11-20")
    etc = tmp_path / "etc"
    etc.mkdir()
    assert local_zone_name({}, etc) is None
    (etc / "localtime").symlink_to("/usr/share/zoneinfo/Europe/Oslo")
    assert local_zone_name({}, etc) == "Europe/Oslo"
    (etc / "timezone").write_text("Asia/Kolkata\n", encoding="utf-8")
    assert local_zone_name({}, etc) == "Asia/Kolkata" and local_zone_name({"TZ": ":Pacific/Auckland"}, etc) == \
        "Pacific/Auckland"
    assert local_zone_name({"TZ": "EST5EDT,M3.2.0,M11.1.0"}, etc) is None   # a POSIX rule is no IANA name


def test_a_regrade_takes_the_lms_word_that_came_since_and_force_keeps_it(tmp_path: Path, grader_cache: Path):
    """Graded once without Moodle's worksheet, then with it: the unchanged notebooks are not graded again, but
    Ada's lateness is the worksheet's (old code kept the first run's: no one late). A forced regrade keeps it."""
    export = moodle_export(tmp_path / "moodle.zip")
    sheet = tmp_path / "grades.csv"
    sheet.write_text(MOODLE_WORKSHEET, encoding="utf-8")
    rubric = replace(load_rubric(RUBRIC), late=POLICY)
    out = tmp_path / "out"
    first = grade_batch([export], rubric, out, jobs=1, cache=grader_cache)
    assert not any(r.late for r in first.results)
    again = grade_batch([export, sheet], rubric, out, jobs=1, cache=grader_cache)
    assert again.unchanged == 2
    results = {r.submission: r for r in again.results}
    assert (results["Ada_Byron_2101"].late, results["Ada_Byron_2101"].penalty) == (True, 3.0)
    assert results["Ada_Byron_2101"].submitted_at == "2026-11-21T02:00:00+00:00"
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open(encoding="utf-8"))}
    assert (rows["Ada_Byron_2101"]["late_penalty"], rows["Ada_Byron_2101"]["total_after_penalty"]) == ("3", "27")
    assert json.loads((out / "Ada_Byron_2101.json").read_text(encoding="utf-8"))["penalty"] == 3.0
    forced = grade_batch([export, sheet], rubric, out, jobs=1, cache=grader_cache, force=True)
    assert forced.unchanged == 0
    assert {r.submission: (r.late, r.penalty) for r in forced.results} == {   # Cy: "No submission", a row at 0
        "Ada_Byron_2101": (True, 3.0), "Bo_Chen_2102": (False, 0.0), "Cy_Late-Ness_2103": (False, 0.0)}


def test_a_regrade_without_the_worksheet_keeps_the_lateness_it_said(tmp_path: Path, grader_cache: Path):
    """Graded with Moodle's worksheet (Ada a day late: 3 points), then one student's folder or the export alone
    graded again into the same results, without the worksheet: Moodle's export says nothing of when, and old code
    read that silence as "on time", dropping Ada's penalty from the gradebook and the CSV without a word. An
    unchanged file that nothing this run dates keeps its lateness, and a note says so."""
    export = moodle_export(tmp_path / "moodle.zip")
    sheet = tmp_path / "grades.csv"
    sheet.write_text(MOODLE_WORKSHEET, encoding="utf-8")
    rubric = replace(load_rubric(RUBRIC), late=POLICY)
    out = tmp_path / "out"
    first = grade_batch([export, sheet], rubric, out, jobs=1, cache=grader_cache)
    assert {r.submission: (r.late, r.penalty) for r in first.results}["Ada_Byron_2101"] == (True, 3.0)
    again = grade_batch([export], rubric, out, jobs=1, cache=grader_cache)
    assert again.unchanged == 2
    results = {r.submission: r for r in again.results}
    assert (results["Ada_Byron_2101"].late, results["Ada_Byron_2101"].penalty) == (True, 3.0)
    assert results["Ada_Byron_2101"].submitted_at == "2026-11-21T02:00:00+00:00"
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open(encoding="utf-8"))}
    assert rows["Ada_Byron_2101"]["late_penalty"] == "3"
    assert any(note.startswith("Ada_Byron_2101: ") and "keeps the lateness" in note for note in again.notes)
    assert not any(note.startswith("Bo_Chen_2102: ") for note in again.notes)      # on time: nothing to keep
    # Graded again (--force; a changed rubric likewise), still without the worksheet: the same file keeps it too
    # (it was graded on time: the penalty left the gradebook and the CSV).
    forced = grade_batch([export], rubric, out, jobs=1, cache=grader_cache, force=True)
    assert forced.unchanged == 0 and forced.graded == 2
    results = {r.submission: r for r in forced.results}
    assert (results["Ada_Byron_2101"].late, results["Ada_Byron_2101"].penalty) == (True, 3.0)
    assert results["Ada_Byron_2101"].submitted_at == "2026-11-21T02:00:00+00:00"
    assert (results["Bo_Chen_2102"].late, results["Bo_Chen_2102"].penalty) == (False, 0.0)
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open(encoding="utf-8"))}
    assert rows["Ada_Byron_2101"]["late_penalty"] == "3"
    assert any(note.startswith("Ada_Byron_2101: ") and "graded again, it keeps the lateness" in note
               for note in forced.notes)


def test_a_zip_the_ta_made_is_dated_in_the_courses_zone_unless_it_says_its_own(tmp_path: Path):
    """A zip's DOS dates are the zipping machine's local time, with no zone: a TA in Berlin zipped Alice's
    notebook saved at 23:30 on the due day. Old code read 23:30 as UTC (00:30 in Berlin) and charged a day. The
    date is read in the rubric's zone; a member with an extended timestamp (Info-ZIP, macOS) says its own."""
    import struct
    berlin = LatePolicy(datetime(2026, 11, 20, 23, 59, tzinfo=timezone(timedelta(hours=1))), 0.1, 0.3)
    exact = datetime(2026, 11, 20, 23, 10, tzinfo=timezone.utc).timestamp()     # 00:10 in Berlin: late
    with zipfile.ZipFile(tmp_path / "class.zip", "w") as archive:
        archive.writestr(zipfile.ZipInfo("alice/lab.ipynb", (2026, 11, 20, 23, 30, 0)), "{}")
        stamped = zipfile.ZipInfo("bob/lab.ipynb", (2026, 11, 20, 12, 0, 0))   # a wrong DOS date
        stamped.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(exact))
        archive.writestr(stamped, "{}")
    entries = {e.student: e for e in gather([tmp_path / "class.zip"], tmp_path / "work").entries}
    alice, bob = assess(hand_in(entries["alice"]), 30.0, berlin), assess(hand_in(entries["bob"]), 30.0, berlin)
    assert (alice.late, alice.submitted_at) == (False, "2026-11-20T22:30:00+00:00")
    assert (bob.late, bob.days, bob.submitted_at) == (True, 1, "2026-11-20T23:10:00+00:00")


def test_a_class_whose_files_carry_one_copys_time_is_named_to_the_ta(tmp_path: Path):
    """Copied without their times (cp, a browser's downloads), every file is dated the copy's minute, after the
    due date: each student would be charged. The batch notes it; a real spread of hand-ins, or one before the
    due date, is not noted."""
    from grader.rubric.lateness import copied_times
    folder = tmp_path / "class"
    copy = DUE.timestamp() + 3 * DAY
    for n, name in enumerate(("ada", "bo", "cy", "dee", "eve")):
        (folder / name).mkdir(parents=True)
        (folder / name / "lab.ipynb").write_text("{}", encoding="utf-8")
        os.utime(folder / name / "lab.ipynb", (copy + n, copy + n))
    times = [e.handed_in for e in gather([folder], tmp_path / "work").entries]
    assert "all dated within 4 s of each other" in copied_times(times, POLICY)
    assert copied_times(times, None) == ""
    assert copied_times([*times[:-1], DUE.timestamp() - 60], POLICY) == ""
    assert copied_times([copy + n * 3600 for n in range(5)], POLICY) == ""


def test_an_extension_moodle_granted_one_student_moves_that_students_due_date(tmp_path: Path):
    """Moodle's Status names a student's extension ("Extension granted until ..."), and its late flag knows it;
    now that Moodle's time of the hand-in decides (not its flag), the extension must too: Ada handed in on
    21 Nov at 2:00 with an extension to 23 Nov, not late. Without the extension the same time is a day late."""
    sheet = MOODLE_WORKSHEET.replace(
        '"Submitted for grading - 1 day 2 hours late - Graded"',
        '"Submitted for grading - Extension granted until Monday, 23 November 2026, 11:59 PM - Graded"')
    export = moodle_export(tmp_path / "moodle.zip", {"grades.csv": sheet})
    ada = {e.student: e for e in gather([export], tmp_path / "work").entries}["Ada_Byron_2101"]
    assert (ada.late, ada.recorded, ada.extended) == (False, "2026-11-21T02:00:00", "2026-11-23T23:59:00")
    assert assess(hand_in(ada), 30.0, POLICY).penalty == 0.0
    assert assess(hand_in(replace(ada, extended="")), 30.0, POLICY).days == 1
    assert assess(hand_in(replace(ada, recorded="2026-11-24T09:00:00")), 30.0, POLICY).days == 1


def test_a_worksheet_reader_that_gives_bare_flags_still_works(tmp_path: Path, monkeypatch):
    """`@worksheet` readers were {id: late} before they could give times: such a reader's flags still count."""
    from grader.intake import gather as intake
    monkeypatch.setitem(intake.WORKSHEETS, "moodle",
                        lambda text: {k: r.late for k, r in (intake.moodle_worksheet(text) or {}).items()} or None)
    export = moodle_export(tmp_path / "moodle.zip", {"grades.csv": MOODLE_WORKSHEET})
    entries = {e.student: e for e in gather([export], tmp_path / "work").entries}
    assert entries["Ada_Byron_2101"].late and entries["Ada_Byron_2101"].recorded == ""


def test_moodles_times_are_read_in_its_12_and_24_hour_english_forms():
    from grader.intake.gather import moodle_time
    assert moodle_time("Saturday, 21 November 2026, 2:00 AM") == "2026-11-21T02:00:00"
    assert moodle_time("Saturday, 21 November 2026, 12:30 PM") == "2026-11-21T12:30:00"
    assert moodle_time("Saturday, 21 November 2026, 12:30 AM") == "2026-11-21T00:30:00"
    assert moodle_time("21 November 2026, 14:05") == "2026-11-21T14:05:00"      # en_gb-style 24-hour
    assert moodle_time("-") == moodle_time("samedi 21 novembre 2026, 02:00") == ""


def test_a_resubmission_counts_with_its_own_lateness(tmp_path: Path):
    """Two Canvas exports, one made before the due date and one after a late resubmission (`lab-1.ipynb`, flagged
    `_LATE_`): the resubmission is graded, and it is the late one. The first export's file, on time, is named
    among the others, and no time of either export counts."""
    notebook = (EXAMPLES / "correct.ipynb").read_bytes()
    for name, member, made in (("before.zip", "smithjohn_12345_67890_lab.ipynb", (2026, 11, 20, 12, 0, 0)),
                               ("after.zip", "smithjohn_LATE_12345_67999_lab-1.ipynb", (2026, 11, 23, 9, 0, 0))):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            archive.writestr(zipfile.ZipInfo(member, made), notebook)
    [entry] = gather([tmp_path / "before.zip", tmp_path / "after.zip"], tmp_path / "work").entries
    assert entry.source.endswith("lab-1.ipynb") and entry.others[0].endswith("smithjohn_12345_67890_lab.ipynb")
    lateness = assess(hand_in(entry), 30.0, POLICY)
    assert (lateness.late, lateness.days, lateness.submitted_at) == (True, 1, "")


# --- Session 15: Gradescope's "Download Submissions" export --------------------------------------------------------

GRADESCOPE_METADATA = REPO / "tests" / "fixtures" / "fair" / "gradescope_submission_metadata.yml"


def gradescope_export(path: Path, metadata: str | None = None, extra: dict[str, str] | None = None,
                      made: tuple[int, ...] = (2026, 11, 25, 9, 30, 0)) -> Path:
    """A Gradescope export as its zip holds it: `assignment_<id>_export/` with `submission_metadata.yml` and one
    folder per submission, `submission_<number>/`, every member dated when the export was made (after the due
    date). The metadata's three submissions: Ada on time, Bo a day late, Cy and Eve's group on time."""
    notebook = (EXAMPLES / "correct.ipynb").read_bytes()
    root = "assignment_7301_export"
    with zipfile.ZipFile(path, "w") as archive:
        if metadata is not None:
            archive.writestr(zipfile.ZipInfo(f"{root}/submission_metadata.yml", made), metadata)
        for number in ("409194023", "409194024", "409194025"):
            archive.writestr(zipfile.ZipInfo(f"{root}/submission_{number}/lab.ipynb", made), notebook)
        for name, text in (extra or {}).items():
            archive.writestr(zipfile.ZipInfo(f"{root}/{name}", made), text)
    return path


def test_a_gradescope_export_names_its_students_and_dates_them_by_gradescopes_record(tmp_path: Path):
    """Old code: the folder convention named three students `submission_409194023`..., left Eve (in Cy's group)
    without a row, and dated every hand-in by the export's zip (25 Nov): all four days late. Now the export's
    `submission_metadata.yml` names each submitter, and its `:created_at:` (with its zone) says when."""
    export = gradescope_export(tmp_path / "assignment_7301_export.zip", GRADESCOPE_METADATA.read_text("utf-8"))
    intake = gather([export], tmp_path / "work")
    entries = {e.student: e for e in intake.entries}
    assert sorted(entries) == ["Ada_Lovelace_1815", "Bo_Chen_2102", "Cy_Dee_3001", "Eve_Fox_eve_example.org"]
    assert {e.convention for e in intake.entries} == {"gradescope"}
    assert entries["Cy_Dee_3001"].path == entries["Eve_Fox_eve_example.org"].path
    lateness = {student: assess(hand_in(entry), 30.0, POLICY) for student, entry in entries.items()}
    assert {s: (v.late, v.days) for s, v in lateness.items()} == {
        "Ada_Lovelace_1815": (False, 0), "Bo_Chen_2102": (True, 1), "Cy_Dee_3001": (False, 0),
        "Eve_Fox_eve_example.org": (False, 0)}
    assert lateness["Ada_Lovelace_1815"].submitted_at == "2026-11-20T21:10:05+00:00"
    # Gradescope's times carry their zone: a course's own zone does not move them
    from zoneinfo import ZoneInfo
    tokyo = replace(POLICY, zone=ZoneInfo("Asia/Tokyo"))
    assert not assess(hand_in(entries["Ada_Lovelace_1815"]), 30.0, tokyo).late
    assert intake.problems == ()
    assert any("submission_metadata.yml: gradescope worksheet, 4 students" in note for note in intake.notes)
    assert any("submission_409194025: a group's hand-in, graded for each of its 2 students" in note
               for note in intake.notes)


def test_a_gradescope_export_without_its_metadata_charges_no_one_by_the_exports_date(tmp_path: Path):
    """Without the metadata (a forged one inside a student's folder is never read) the students are named by
    number, no time says when they handed in (the members' dates are the export's), and the TA is told."""
    forged = GRADESCOPE_METADATA.read_text("utf-8").replace("Ada Lovelace", "Mallory").replace(
        "2026-11-21 09:00:00.5", "2026-11-20 09:00:00.5")
    export = gradescope_export(tmp_path / "export.zip", None,
                               {"submission_409194024/submission_metadata.yml": forged})
    intake = gather([export], tmp_path / "work")
    entries = {e.student: e for e in intake.entries}
    assert sorted(entries) == ["submission_409194023", "submission_409194024", "submission_409194025"]
    assert not any(assess(hand_in(e), 30.0, POLICY).late for e in intake.entries)
    assert all(assess(hand_in(e), 30.0, POLICY).submitted_at == "" for e in intake.entries)
    assert any("submission_409194023, submission_409194024, submission_409194025: a Gradescope export's "
               "submissions that its submission_metadata.yml does not name" in note for note in intake.notes)


def test_gradescopes_metadata_is_read_safely_whatever_it_holds():
    """The metadata is the TA's file, but odd: Ruby tags PyYAML does not know (read as the plain value, never an
    object), quoted or zone-less times, missing or wrong-typed fields, an empty group, no YAML at all. Nothing
    raises; what cannot be read is left out."""
    from grader.intake.gather import gradescope_metadata
    odd = ("submission_1: !ruby/hash:ActiveSupport::HashWithIndifferentAccess\n"
           "  :submitters:\n  - :name: !ruby/object:Name Ada\n    :sid: !ruby/object:BigDecimal 18:0.7e1\n"
           "  :created_at: '2026-11-20 23:00:00.123456789 -0800'\n"
           "  :score: !ruby/object:BigDecimal 18:0.3e2\n"
           "submission_2:\n  :submitters: []\n  :created_at: 2026-11-20 10:00:00\n"
           "submission_3:\n  :submitters: {name: x}\n  :created_at: [1, 2]\n"
           "submission_4: just text\nnot_a_submission:\n  :submitters: [{':name': Eve}]\n"
           "submission_5:\n  submitters:\n  - name: Plain Keys\n    sid: 5\n  created_at: 2026-11-20T10:00:00Z\n"
           "submission_6:\n  :submitters:\n  - :name: \"Zo\\u00eb\\u202e\\x1b[2J\"\n    :sid: [a, b]\n"
           "submission_7:\n  :submitters:\n  - !!python/object/apply:os.system [echo owned]\n")
    records = gradescope_metadata(odd)
    assert records is not None
    assert (records["1"].students, records["1"].recorded) == (("Ada_18_0.7e1",), "2026-11-20T23:00:00.123456-08:00")
    assert (records["2"].students, records["2"].recorded) == ((), "2026-11-20T10:00:00")
    assert (records["3"].students, records["3"].recorded) == ((), "")
    assert "4" not in records and len(records) == 6
    assert (records["5"].students, records["5"].recorded) == (("Plain_Keys_5",), "2026-11-20T10:00:00+00:00")
    assert records["6"].students and all(c.isascii() and c.isprintable() for c in records["6"].students[0])
    assert records["7"].students == ()
    for text in ("", "a,b\n1,2\n", "- 1\n- 2\n", "[" * 5000, "a: &a [*a]\n", "submission_1: [\n", "\x00\x01"):
        assert gradescope_metadata(text) is None


def test_a_gradescope_exports_students_each_get_a_graded_row_and_their_own_lateness(tmp_path: Path,
                                                                                  grader_cache: Path):
    export = gradescope_export(tmp_path / "assignment_7301_export.zip", GRADESCOPE_METADATA.read_text("utf-8"))
    batch = grade_batch([export], replace(load_rubric(RUBRIC), late=POLICY), tmp_path / "out", jobs=1,
                        cache=grader_cache)
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "gradebook.csv").open(encoding="utf-8"))}
    assert {s: (r["total"], r["late"], r["late_penalty"]) for s, r in rows.items()} == {
        "Ada_Lovelace_1815": ("30", "", "0"), "Bo_Chen_2102": ("30", "late", "3"),
        "Cy_Dee_3001": ("30", "", "0"), "Eve_Fox_eve_example.org": ("30", "", "0")}
    assert {r.submission: r.submitted_at for r in batch.results}["Bo_Chen_2102"] == "2026-11-21T09:00:00+00:00"


@given(st.floats(0, 1000, allow_nan=False), st.floats(0, 1, allow_nan=False))
def test_a_penalty_has_four_decimals_at_most_and_never_exceeds_its_share(total: float, share: float):
    """Old code: when rounding went up it kept the exact share (2.11666...: the CSV read 2.11667 and
    total_after_penalty 19.05003, ta's Canvas class)."""
    exact = total * share
    penalty = penalty_of(total, share)
    assert round(penalty, 4) == penalty
    assert exact - 1e-4 - 1e-9 * max(1.0, exact) <= penalty <= exact + 1e-9 * max(1.0, exact)


def test_a_penalty_of_a_whole_share_is_exact():
    assert (penalty_of(30, 0.1), penalty_of(21.1667, 0.1), penalty_of(12.7, 1 / 6)) == (3.0, 2.1166, 2.1166)
