"""The real command line, run as a subprocess the way a TA or a student runs it: exit codes and what it prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import grader
from testclock import within
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric

REPO = Path(__file__).resolve().parents[1]
RUBRIC = "rubrics/taoistic-search.yaml"              # paths below are relative to REPO, the subprocess's cwd
SUBMISSIONS = "assignments/taoistic-search/submissions"
CORRECT = f"{SUBMISSIONS}/correct.ipynb"
TRANSPOSED = f"{SUBMISSIONS}/move-dir-transposed.ipynb"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # COLUMNS pins rich's width to a common terminal's, whatever terminal runs the tests.
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=within(600))   # a hang guard only: a busy machine is slow


def flat(text: str) -> str:
    """Whitespace collapsed, so a message rich wrapped at the terminal width still reads as one line."""
    return " ".join(text.split())


def hidden_calls(cache: Path) -> list[str]:
    plan = build_plan(load_rubric(REPO / RUBRIC), cache)
    return [flat(case.shown_call) for cases in plan.cases.values() for case in cases if case.visibility == "hidden"]


# ------------------------------------------------------------------------------------------------ grade


def test_grade_writes_one_json_per_notebook_and_prints_the_class_table(tmp_path: Path, grader_cache: Path) -> None:
    out = tmp_path / "results"
    done = run("grade", CORRECT, TRANSPOSED, "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.glob("*.json")) == ["correct.json", "move-dir-transposed.json"]
    assert (out / "gradebook.sqlite").is_file() and (out / "gradebook.csv").is_file()
    totals = {p.stem: json.loads(p.read_text(encoding="utf-8"))["total"] for p in out.glob("*.json")}
    assert totals == {"correct": 30, "move-dir-transposed": 28}
    assert "Scores" in done.stdout
    assert re.search(r"^\W*correct\b", done.stdout, re.MULTILINE)          # a table row per submission
    assert re.search(r"^\W*move-dir-transposed\b", done.stdout, re.MULTILINE)
    assert "isolation" in done.stdout
    assert f"results in {out}" in flat(done.stdout)


def test_grade_table_shows_every_score_in_an_80_column_terminal(tmp_path: Path, grader_cache: Path) -> None:
    done = run("grade", CORRECT, TRANSPOSED, "--rubric", RUBRIC, "--out", str(tmp_path), "--cache",
               str(grader_cache))   # the progress bar names no submission: the row can only come from the table
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "move-dir-transposed" in line)
    # 13 exercise columns (move_dir is the second) and the total, none squeezed out or cut to '…'.
    assert re.findall(r"\d+(?:\.\d+)?(?:/\d+)?", row) == ["2", "0", "2", "2", "3", "1", "2", "2", "3", "2", "2",
                                                         "4", "3", "28/30"]
    assert "30/30" in done.stdout


def test_quiet_grade_prints_one_summary_line_with_counts_and_isolation_levels(tmp_path: Path,
                                                                              grader_cache: Path) -> None:
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ not json", encoding="utf-8")
    out = tmp_path / "results"
    done = run("grade", CORRECT, TRANSPOSED, str(broken), "--rubric", RUBRIC, "--out", str(out), "--cache",
               str(grader_cache), "--quiet")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    assert "3 submissions: 2 graded, 1 unreadable, 0 failed, 0 unchanged; 0 skipped" in lines[0]
    levels = lines[0].split("isolation: ")[1].split(";")[0]
    assert sum(int(n) for n in re.findall(r"\((\d+)\)", levels)) == 3 and "none (not run) (1)" in levels
    again = run("grade", CORRECT, TRANSPOSED, str(broken), "--rubric", RUBRIC, "--out", str(out), "--cache",
                str(grader_cache), "--quiet")
    assert "3 submissions: 0 graded, 0 unreadable, 0 failed, 3 unchanged" in again.stdout
    # with the table, which calls the broken file unreadable, the unchanged count says so too
    table = run("grade", CORRECT, TRANSPOSED, str(broken), "--rubric", RUBRIC, "--out", str(out), "--cache",
                str(grader_cache))
    assert "broken: unreadable" in flat(table.stdout)
    assert "3 submissions: 0 graded, 0 unreadable, 0 failed, 3 unchanged (1 of them unreadable); 0 skipped" in \
        flat(table.stdout)


def test_a_zip_members_result_and_reason_name_the_zip_never_the_graders_temporary_copy(tmp_path: Path,
                                                                                      grader_cache: Path) -> None:
    """A zip member is graded from a copy in a temporary folder that is gone after the batch. Its result's `path`
    and the reason a broken member cannot be read (the TA's terminal, the student's report) name the member in
    the zip, as the TA and the student know it: they named /tmp/puzzle-grader-*/intake-*/..., and the terminal
    sent the TA to the JSON file for the reason."""
    import zipfile
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.write(REPO / CORRECT, "smithjohn_12345_67890_lab.ipynb")
        archive.writestr("doeada_12346_67891_lab.ipynb", '{"cells": [{"cell_type": "code", "source": "def f(')
    out = tmp_path / "results"
    done = run("grade", str(export), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert done.returncode == 0, done.stderr
    good = json.loads((out / "smithjohn_12345.json").read_text(encoding="utf-8"))
    broken = json.loads((out / "doeada_12346.json").read_text(encoding="utf-8"))
    assert good["total"] == 30 and broken["state"] == "unreadable"
    assert good["path"] == f"{export}:smithjohn_12345_67890_lab.ipynb"
    assert broken["path"] == f"{export}:doeada_12346_67891_lab.ipynb"
    reason = broken["warnings"][0]["text"]
    assert reason.startswith(f"{export}:doeada_12346_67891_lab.ipynb: not valid JSON"), reason
    assert "intake-" not in json.dumps(broken)
    assert f"doeada_12346: unreadable: {export}:doeada_12346_67891_lab.ipynb: not valid JSON" in flat(done.stdout)
    # The similarity check leaves the broken file out saying why, by the member's name, not its copy's SHA-256.
    similar = run("similarity", str(out), "--out", str(tmp_path / "similarity.html"), "--rubric", RUBRIC)
    assert similar.returncode == 0, similar.stderr
    assert (f"doeada_12346: left out, not graded: {export}:doeada_12346_67891_lab.ipynb: not valid JSON"
            in flat(similar.stdout + similar.stderr)), similar.stdout + similar.stderr


def test_an_lms_export_keeps_a_row_for_every_student_it_names_and_skips_none_of_them(tmp_path: Path,
                                                                                     grader_cache: Path) -> None:
    """A Canvas export where one student's upload is a zip that does not open, one handed in a PDF, one an empty
    notebook: each keeps a row at zero saying why (the zip's student had none: only a "skipped" line, and the CSV
    imported into the LMS left their grade as it was), and none of their files is also counted "skipped"."""
    import csv
    import zipfile
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.write(REPO / CORRECT, "smithjohn_12345_67890_lab.ipynb")
        archive.writestr("hugoli_12346_67891_lab.zip", b"not a zip at all")
        archive.writestr("leebob_12347_67892_report.pdf", b"%PDF-1.4")
        archive.writestr("kimann_12348_67893_lab.ipynb", b"")
    out = tmp_path / "results"
    done = run("grade", str(export), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 submissions: 1 graded, 3 unreadable, 0 failed, 0 unchanged; 0 skipped" in done.stdout, done.stdout
    with open(out / "gradebook.csv", encoding="utf-8", newline="") as file:
        students = {row["student"] for row in csv.DictReader(file)}
    assert students == {"smithjohn_12345", "hugoli_12346", "leebob_12347", "kimann_12348"}
    hugo = json.loads((out / "hugoli_12346.json").read_text(encoding="utf-8"))
    assert hugo["state"] == "unreadable"
    assert "hugoli_12346_67891_lab.zip (not a readable zip archive" in hugo["warnings"][0]["text"]
    table = run("grade", str(export), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert "skipped:" not in table.stdout, table.stdout
    # One line each, whatever its length (rich wrapped them at 160 columns outside a terminal: a grep got half).
    [reason] = [line for line in table.stdout.splitlines() if line.startswith("hugoli_12346: unreadable:")]
    assert reason.endswith("(not a readable zip archive (File is not a zip file))"), reason


def test_a_notebook_of_another_assignment_is_named_and_exits_3_on_every_run(tmp_path: Path,
                                                                             grader_cache: Path) -> None:
    """The first run named it and exited 3; the rerun, finding it unchanged, exited 0 without a word, so a TA who
    ran the class twice (or a script that only saw the second run) took its zero for the student's."""
    import shutil
    other = str(shutil.copy(REPO / "assignments/sliding-3x3/submissions/correct.ipynb", tmp_path / "sliding.ipynb"))
    out = tmp_path / "results"
    common = ("--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    for quiet in ((), ("--quiet",), ()):
        done = run("grade", CORRECT, other, *common, *quiet)
        assert done.returncode == 3, (quiet, done.stdout, done.stderr)
        assert "does not look like taoistic-search" in done.stdout, done.stdout
        assert "1 of 2 submissions do not look like taoistic-search" in flat(done.stdout)
    assert "0 graded, 0 unreadable, 0 failed, 2 unchanged" in flat(done.stdout)
    assert run("grade", CORRECT, other, *common, "--allow-mismatch").returncode == 0


def test_a_pipe_in_the_class_folder_is_that_students_unreadable_row_and_never_read(tmp_path: Path,
                                                                                   grader_cache: Path) -> None:
    """A FIFO named lab.ipynb in a student's folder (an archive extracted by hand can make one): reading it waits
    for a writer that never comes, and the whole batch hung."""
    import shutil
    klass = tmp_path / "class"
    (klass / "alice").mkdir(parents=True)
    os.mkfifo(klass / "alice" / "lab.ipynb")
    shutil.copy(REPO / CORRECT, klass / "bob.ipynb")
    out = tmp_path / "results"
    done = run("grade", str(klass), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "alice: unreadable:" in flat(done.stdout) and "not a regular file" in flat(done.stdout)
    assert json.loads((out / "bob.json").read_text(encoding="utf-8"))["total"] == 30


def test_class_outputs_run_outside_the_course_folder_leave_out_the_template_the_class_was_graded_with(
        tmp_path: Path, grader_cache: Path) -> None:
    """Two students who handed in the template unchanged share only given code. From the course's folder the
    template was found (rubrics/<assignment>.yaml); from anywhere else it was not, and similarity flagged the pair at
    100 %. The results folder's mark names the rubric it was graded with: its template is used."""
    import shutil
    template = REPO / "assignments/taoistic-search/template.ipynb"
    for name in ("ann", "bob"):
        shutil.copy(template, tmp_path / f"{name}.ipynb")
    out = tmp_path / "results"
    done = run("grade", str(tmp_path / "ann.ipynb"), str(tmp_path / "bob.ipynb"), "--rubric", RUBRIC, "--out",
               str(out), "--cache", str(grader_cache), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    similar = subprocess.run([sys.executable, "-m", "grader", "similarity", str(out), "--out", "s.html"],
                             cwd=elsewhere, capture_output=True, text=True, timeout=within(600))
    assert similar.returncode == 0, similar.stderr
    assert f"template: {template} (from {REPO / RUBRIC};" in similar.stdout
    assert "0 at or above 0.6" in similar.stdout, similar.stdout


def test_a_class_graded_into_a_folder_inside_it_takes_a_browsers_copy_for_its_student_and_skips_nothing(
        tmp_path: Path, grader_cache: Path) -> None:
    """`grade class --out class/results`: its own results folder was "1 skipped" on every run; a browser's second
    download `bob (1).ipynb` was a second student `bob_1`; and a student's folder holding a `.assignment` file and
    a `notebooks/` folder was taken for a results folder and skipped, with no row. Now the run's own --out is left
    out unsaid, bob is one student (the later download graded, the other named), and dave has his row."""
    import shutil
    klass = tmp_path / "class"
    (klass / "dave" / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / TRANSPOSED, klass / "bob.ipynb")
    shutil.copy(REPO / CORRECT, klass / "bob (1).ipynb")
    for copy in ("bob.ipynb", "bob (1).ipynb"):   # copied without their times: content and time do not decide
        os.utime(klass / copy, (1_700_000_000, 1_700_000_000))
    shutil.copy(REPO / TRANSPOSED, klass / "dave" / "notebooks" / "lab.ipynb")
    (klass / "dave" / ".assignment").write_text('{"assignment": "taoistic-search"}\n', encoding="utf-8")
    out = klass / "results"
    common = ("--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    first = run("grade", str(klass), *common)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (f"note: bob: 2 notebooks, graded {klass / 'bob (1).ipynb'} (the later browser download"
            in flat(first.stdout)), first.stdout
    assert f"not graded: {klass / 'bob.ipynb'}" in flat(first.stdout)
    assert sorted(p.name for p in out.glob("*.json")) == ["bob.json", "dave.json"]
    assert json.loads((out / "bob.json").read_text(encoding="utf-8"))["total"] == 30
    assert json.loads((out / "dave.json").read_text(encoding="utf-8"))["total"] == 28
    for _ in range(2):
        again = run("grade", str(klass), *common, "--quiet")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "2 submissions: 0 graded, 0 unreadable, 0 failed, 2 unchanged; 0 skipped" in again.stdout, again.stdout


def test_every_student_an_lms_lists_keeps_a_row_even_with_nothing_in_the_export(tmp_path: Path,
                                                                               grader_cache: Path) -> None:
    """Moodle's worksheet lists a participant whose Status is "No submission" (its export has no folder for them),
    and a Gradescope export holds a submission's folder with no file in it: neither student had a row, so the CSV
    imported into the LMS left their grade as it was. Each has one now, at zero with the reason, and the state
    `no submission` (no file came: not a notebook that did not open)."""
    import csv
    import zipfile
    moodle = tmp_path / "moodle"
    (moodle / "Ann Bell_2101_assignsubmission_file_").mkdir(parents=True)
    (moodle / "Ann Bell_2101_assignsubmission_file_" / "lab.ipynb").write_bytes((REPO / CORRECT).read_bytes())
    sheet = tmp_path / "grades.csv"
    sheet.write_text('"Identifier","Full name","Email address","Status","Last modified (submission)"\n'
                     '"Participant 2101","Ann Bell","ann@example.org","Submitted for grading",'
                     '"Friday, 20 November 2026, 10:00 PM"\n'
                     '"Participant 2103","Eve Fox","eve@example.org","No submission","-"\n', encoding="utf-8")
    export = tmp_path / "gradescope.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("assignment_7_export/submission_metadata.yml", (
            "submission_1001:\n  :submitters:\n  - :name: Gil Hart\n    :sid: '501'\n"
            "submission_1002:\n  :submitters:\n  - :name: Ida Jones\n    :sid: '502'\n"))
        archive.write(REPO / TRANSPOSED, "assignment_7_export/submission_1001/lab.ipynb")
        archive.writestr(zipfile.ZipInfo("assignment_7_export/submission_1002/"), b"")
    out = tmp_path / "results"
    done = run("grade", str(moodle), str(sheet), str(export), "--rubric", RUBRIC, "--out", str(out), "--cache",
               str(grader_cache))
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out / "gradebook.csv", encoding="utf-8", newline="") as file:
        rows = {row["student"]: (row["total"], row["state"]) for row in csv.DictReader(file)}
    assert rows == {"Ann_Bell_2101": ("30", "graded"), "Eve_Fox_2103": ("0", "no submission"),
                    "Gil_Hart_501": ("28", "graded"), "Ida_Jones_502": ("0", "no submission")}
    shown = flat(done.stdout)
    assert (f"Eve_Fox_2103: no submission: {sheet}: handed in nothing (the worksheet's Status: 'No submission')"
            in shown)
    assert (f"Ida_Jones_502: no submission: {export}:assignment_7_export/submission_1002: handed in no notebook or "
            f"script to grade: submission_1002 (a folder with no file in it)") in shown, shown
    assert "skipped" not in shown.split("4 submissions:")[0]
    assert "4 submissions: 2 graded, 0 unreadable, 2 no submission, 0 failed, 0 unchanged; 0 skipped" in shown


def test_a_later_no_submission_keeps_the_graded_row(tmp_path: Path, grader_cache: Path) -> None:
    """A student graded from an earlier Moodle export, whom a later export's worksheet lists as "No submission":
    their graded row was replaced by a 0 ("handed in nothing"). The notebook graded is still their last hand-in
    in our records: the row is kept, and a note says the latest export had no submission for them."""
    import csv
    sheet_head = '"Identifier","Full name","Email address","Status","Last modified (submission)"\n'
    first = tmp_path / "first"
    (first / "Eve Fox_2103_assignsubmission_file_").mkdir(parents=True)
    (first / "Eve Fox_2103_assignsubmission_file_" / "lab.ipynb").write_bytes((REPO / CORRECT).read_bytes())
    first_sheet = tmp_path / "first.csv"
    first_sheet.write_text(sheet_head + '"Participant 2103","Eve Fox","eve@example.org","Submitted for grading",'
                           '"Friday, 20 November 2026, 10:00 PM"\n', encoding="utf-8")
    second = tmp_path / "second"
    (second / "Ann Bell_2101_assignsubmission_file_").mkdir(parents=True)
    (second / "Ann Bell_2101_assignsubmission_file_" / "lab.ipynb").write_bytes((REPO / TRANSPOSED).read_bytes())
    second_sheet = tmp_path / "second.csv"
    second_sheet.write_text(sheet_head + '"Participant 2101","Ann Bell","ann@example.org","Submitted for grading",'
                            '"Friday, 20 November 2026, 10:00 PM"\n'
                            '"Participant 2103","Eve Fox","eve@example.org","No submission","-"\n', encoding="utf-8")
    out = tmp_path / "results"
    common = ("--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    graded = run("grade", str(first), str(first_sheet), *common)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    (out / "Eve_Fox_2103.json").unlink()   # a kept row's result file deleted since is written back
    later = run("grade", str(second), str(second_sheet), *common)
    assert later.returncode == 0, later.stdout + later.stderr
    with open(out / "gradebook.csv", encoding="utf-8", newline="") as file:
        rows = {row["student"]: (row["total"], row["state"]) for row in csv.DictReader(file)}
    assert rows == {"Ann_Bell_2101": ("28", "graded"), "Eve_Fox_2103": ("30", "graded")}
    assert json.loads((out / "Eve_Fox_2103.json").read_text(encoding="utf-8"))["total"] == 30
    assert (f"note: Eve_Fox_2103: no file of theirs in this intake ({second_sheet}: No submission): their graded "
            f"row is kept") in flat(later.stdout), later.stdout
    assert "2 submissions: 1 graded, 0 unreadable, 0 failed, 1 unchanged; 0 skipped" in flat(later.stdout)


def test_no_submission_is_a_state_of_its_own_and_an_emptied_folder_keeps_the_graded_row(
        tmp_path: Path, grader_cache: Path) -> None:
    """A student Moodle lists as "No submission" had a row at 0 whose state said `unreadable`, as a notebook that did
    not open: a TA uploading the CSV could not tell the two apart. Their state is `no submission`, counted apart in
    the summary and in the class report. And a student whose folder a later export holds empty (the file removed)
    had their graded row replaced by that 0: no file came, as with "No submission", so the row is kept, said in a
    note, and its result file, deleted since, written back."""
    import csv
    sheet = tmp_path / "sheet.csv"
    sheet.write_text('"Identifier","Full name","Email address","Status","Last modified (submission)"\n'
                     '"Participant 2101","Ann Bell","ann@example.org","Submitted for grading",'
                     '"Friday, 20 November 2026, 10:00 PM"\n'
                     '"Participant 2104","Bo Cy","bo@example.org","No submission","-"\n', encoding="utf-8")
    export = tmp_path / "export"
    folder = export / "Ann Bell_2101_assignsubmission_file_"
    folder.mkdir(parents=True)
    (folder / "lab.ipynb").write_bytes((REPO / CORRECT).read_bytes())
    out = tmp_path / "results"
    common = ("--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))

    def states() -> dict[str, tuple[str, str]]:
        with open(out / "gradebook.csv", encoding="utf-8", newline="") as file:
            return {row["student"]: (row["total"], row["state"]) for row in csv.DictReader(file)}

    graded = run("grade", str(export), str(sheet), *common)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert states() == {"Ann_Bell_2101": ("30", "graded"), "Bo_Cy_2104": ("0", "no submission")}
    assert "2 submissions: 1 graded, 0 unreadable, 1 no submission, 0 failed, 0 unchanged" in flat(graded.stdout)
    (folder / "lab.ipynb").unlink()
    (out / "Ann_Bell_2101.json").unlink()
    later = run("grade", str(export), str(sheet), *common)
    assert later.returncode == 0, later.stdout + later.stderr
    assert states() == {"Ann_Bell_2101": ("30", "graded"), "Bo_Cy_2104": ("0", "no submission")}
    assert json.loads((out / "Ann_Bell_2101.json").read_text(encoding="utf-8"))["total"] == 30
    assert (f"note: Ann_Bell_2101: no file of theirs in this intake ({folder}: a folder with no file in it): their "
            f"graded row is kept") in flat(later.stdout), later.stdout
    assert "2 unchanged (1 of them no submission)" in flat(later.stdout), later.stdout
    page = tmp_path / "class.html"
    made = run("class-report", str(out), "-o", str(page), "--no-similarity")
    assert made.returncode == 0, made.stdout + made.stderr
    shown = page.read_text(encoding="utf-8")
    assert "could not be graded (1 with no submission)" in shown
    assert '<span class="badge missing">no submission</span>' in shown


def test_a_no_submission_row_recorded_as_unreadable_before_is_recorded_again(tmp_path: Path,
                                                                          grader_cache: Path) -> None:
    """A gradebook written before the state `no submission` existed holds a Moodle "No submission" student as
    `unreadable`: the same worksheet graded again found the row unchanged and kept it, so the CSV never said it.
    It is recorded again, as `no submission` (nothing runs: the row is the intake's)."""
    import csv
    import sqlite3
    sheet = tmp_path / "sheet.csv"
    sheet.write_text('"Identifier","Full name","Email address","Status","Last modified (submission)"\n'
                     '"Participant 2104","Bo Cy","bo@example.org","No submission","-"\n', encoding="utf-8")
    out = tmp_path / "results"
    common = ("--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert run("grade", str(sheet), *common).returncode == 0
    with sqlite3.connect(out / "gradebook.sqlite") as book:   # as a grader before the state recorded it
        book.execute("UPDATE results SET state = 'unreadable'")
    (out / "gradebook.csv").unlink()   # and its CSV, written from that state
    again = run("grade", str(sheet), *common)
    assert again.returncode == 0, again.stdout + again.stderr
    with open(out / "gradebook.csv", encoding="utf-8", newline="") as file:
        assert [(row["student"], row["state"]) for row in csv.DictReader(file)] == [("Bo_Cy_2104", "no submission")]
    assert "1 submission: 0 graded, 0 unreadable, 1 no submission, 0 failed, 0 unchanged" in flat(again.stdout)


def test_an_unreadable_students_feedback_names_their_own_file_never_the_tas_path_to_the_export(
        tmp_path: Path, grader_cache: Path) -> None:
    """Why a file was not graded is `<source>: <why>`, the source as the TA gave it: the student's report and
    Gradescope's results.json showed the TA's path to the export (`/home/ta/Downloads/canvas.zip:...`). The TA's
    terminal and the JSON keep it; what the student reads names their own file only."""
    import zipfile
    export = tmp_path / "downloads" / "canvas-export.zip"
    export.parent.mkdir()
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("doeada_12346_67891_lab.ipynb", '{"cells": [{"cell_type": "code", "source": "def f(')
    out, feedback, scope = tmp_path / "results", tmp_path / "feedback", tmp_path / "gradescope"
    done = run("grade", str(export), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache),
               "--gradescope", str(scope))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"doeada_12346: unreadable: {export}:doeada_12346_67891_lab.ipynb: not valid JSON" in flat(done.stdout)
    assert run("report", str(out), "--out", str(feedback)).returncode == 0
    pages = {path.name: path.read_text(encoding="utf-8") for path in (
        feedback / "doeada_12346.md", feedback / "doeada_12346.html", scope / "doeada_12346.json")}
    for name, page in pages.items():
        assert "downloads" not in page and "canvas-export.zip" not in page, name
    assert "doeada\\_12346\\_67891\\_lab.ipynb: not valid JSON" in pages["doeada_12346.md"]
    assert "could not be graded: doeada_12346_67891_lab.ipynb: not valid JSON" in pages["doeada_12346.json"]


class _Stopped:
    """The local pool, with every worker stopped by its watchdog (a submission that hung its worker): the first
    student's failure is recorded, the second's is the machine's (reported, not recorded, tried again)."""

    def __init__(self, setup, jobs=None, watchdog_seconds=None, plan=None) -> None:
        pass

    def run(self, jobs):
        from grader.run.executor import Done
        for n, job in enumerate(sorted(jobs, key=lambda job: job.student)):
            yield Done(job, None, f"worker stopped {n}", record=n == 0)


def test_a_student_the_grader_could_not_finish_is_named_once_with_the_reason(tmp_path: Path, capsys,
                                                                            monkeypatch, grader_cache: Path) -> None:
    """The table's notes named a failed student with the reason, and a red line below named them again."""
    from grader.cli import main
    from grader.run import executor
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(executor, "LocalPool", _Stopped)
    common = [CORRECT, TRANSPOSED, "--rubric", RUBRIC, "--out", str(tmp_path / "results"), "--cache",
              str(grader_cache)]
    assert main(["grade", *common]) == 1
    shown = flat(capsys.readouterr().out)
    assert shown.count("worker stopped 0") == 1 and shown.count("worker stopped 1") == 1, shown
    assert "correct: failed: worker stopped 0" in shown
    assert "move-dir-transposed: the grader could not finish this submission: worker stopped 1" in shown
    assert main(["grade", *common, "--force", "--quiet"]) == 1
    shown = flat(capsys.readouterr().out)
    assert "correct: the grader could not finish this submission: worker stopped 0" in shown, shown
    assert "move-dir-transposed: the grader could not finish this submission: worker stopped 1" in shown


def test_the_table_of_a_regrade_names_the_students_whose_exported_score_a_ta_override_changed(
        tmp_path: Path, grader_cache: Path) -> None:
    """The table shows automatic scores; the CSV, Gradescope and the reports the overridden ones. The TA who reran
    the class read 30/30 where the CSV said 28: the table is followed by each overridden student's final score."""
    out = tmp_path / "results"
    first = run("grade", CORRECT, TRANSPOSED, "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert first.returncode == 0, first.stderr
    assert "with TA overrides" not in first.stdout
    made = run("override", "correct", "search", "--points", "2", "--why", "copied the search", "--by", "ta",
               "--gradebook", str(out))   # the results folder, taken for its gradebook ("no such gradebook")
    assert made.returncode == 0, made.stderr
    again = run("grade", CORRECT, TRANSPOSED, "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert again.returncode == 0, again.stderr
    assert "correct: 28/30 with TA overrides (automatic 30): search: 4 -> 2 by ta (copied the search)" in flat(
        again.stdout), again.stdout
    assert "move-dir-transposed: 28/30 with" not in flat(again.stdout)
    assert "correct,2,2,2,2,3,1,2,2,3,2,2,2,3,28,30" in (out / "gradebook.csv").read_text(encoding="utf-8")


def test_rerunning_the_class_after_a_one_student_regrade_says_it_replaces_that_students_newer_file(
        tmp_path: Path, grader_cache: Path) -> None:
    """The TA grades the class, then the notebook a student sent later (`grade fixed/ada.ipynb`), then reruns the
    class's folder for its exports: the class's older file is graded again and made current. That was silent (the
    fixed notebook's 30 became 28 in the CSV); now a note names both files. A student's newer file is no note."""
    import shutil
    klass, fixed = tmp_path / "class", tmp_path / "fixed"
    klass.mkdir()
    fixed.mkdir()
    shutil.copy(REPO / TRANSPOSED, klass / "ada.ipynb")
    shutil.copy(REPO / CORRECT, fixed / "ada.ipynb")
    out = str(tmp_path / "results")
    common = ("--rubric", RUBRIC, "--out", out, "--cache", str(grader_cache))
    assert run("grade", str(klass), *common).returncode == 0
    newer = run("grade", str(fixed / "ada.ipynb"), *common)
    assert newer.returncode == 0, newer.stderr
    assert "older" not in newer.stdout
    again = run("grade", str(klass), *common)
    assert again.returncode == 0, again.stderr
    assert (f"note: ada: {klass / 'ada.ipynb'} is older than its current result's file, {fixed / 'ada.ipynb'} "
            f"(graded ") in flat(again.stdout), again.stdout
    assert f"to keep that one, grade {fixed / 'ada.ipynb'} again" in flat(again.stdout)
    assert "ada,2,0," in (Path(out) / "gradebook.csv").read_text(encoding="utf-8")   # what it says happened


def test_a_note_naming_a_students_file_stays_one_line_whatever_the_name_holds(
        tmp_path: Path, grader_cache: Path) -> None:
    """A file name is the student's: one holding a carriage return or a newline printed its note over two lines
    (terminal() keeps newlines), so a name could print a made-up line (a fake warning) in the TA's terminal. The
    note is one line, the name's CR and LF shown as U+FFFD as its escape sequence is."""
    import shutil
    bob = tmp_path / "class" / "bob"
    bob.mkdir(parents=True)
    shutil.copy(REPO / CORRECT, bob / "lab.ipynb")
    (bob / "no\x1b[31mte\rwarning: forged\nbad.ipynb").write_text("{", encoding="utf-8")
    done = run("grade", str(tmp_path / "class"), "--rubric", RUBRIC, "--out", str(tmp_path / "results"),
               "--cache", str(grader_cache))
    assert done.returncode == 0, done.stderr
    noted = [line for line in done.stdout.splitlines() if "not graded:" in line]
    assert len(noted) == 1, done.stdout
    assert noted[0].startswith("note: bob: 2 ") and "no\ufffd[31mte\ufffdwarning: forged\ufffdbad.ipynb" in noted[0]
    assert not any(line.startswith(("warning: forged", "bad.ipynb")) for line in done.stdout.splitlines())
    assert "\x1b" not in done.stdout and "\r" not in done.stdout


def test_merging_another_results_folders_gradebook_rewrites_the_csv_and_brings_its_notebooks(
        tmp_path: Path, grader_cache: Path) -> None:
    """Two TAs grade half a class each and merge: the results folder's gradebook.csv, the file imported into the
    LMS, still listed only the first half, and the other half's reports had no student code once the other
    folder was gone."""
    import shutil
    one, two, handed = tmp_path / "one", tmp_path / "two", tmp_path / "handed"
    handed.mkdir()
    shutil.copy(REPO / TRANSPOSED, handed / "move-dir-transposed.ipynb")   # gone with the other machine's folder
    for out, notebook in ((one, CORRECT), (two, str(handed / "move-dir-transposed.ipynb"))):
        done = run("grade", notebook, "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache), "--quiet")
        assert done.returncode == 0, done.stderr
    merged = run("merge", str(two / "gradebook.sqlite"), "--into", str(one / "gradebook.sqlite"))
    assert merged.returncode == 0, merged.stderr
    rows = [line.split(",")[0] for line in (one / "gradebook.csv").read_text(encoding="utf-8").splitlines()]
    assert rows == ["student", "correct", "move-dir-transposed"]
    assert f"{one / 'gradebook.csv'} written again: 2 students" in flat(merged.stdout)
    shutil.rmtree(two)
    shutil.rmtree(handed)
    report = run("report", str(one), "--out", str(tmp_path / "feedback"))
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "feedback" / "move-dir-transposed.html").read_text(encoding="utf-8")
    assert "<h3>Your code</h3>" in page and "move_dir" in page


def test_a_results_folder_merges_in_only_its_own_assignments_gradebook(tmp_path: Path, grader_cache: Path) -> None:
    """Another assignment's gradebook merged into a results folder made its CSV (the LMS's import) a file of both:
    two `correct` rows under two sets of columns. It is refused before anything is touched, as `grade` refuses to
    mix them; results folders are taken for their gradebooks, and a file that is no gradebook makes no target."""
    taoistic, sliding = tmp_path / "taoistic", tmp_path / "sliding"
    for out, notebook, rubric in ((taoistic, CORRECT, RUBRIC), (sliding, "assignments/sliding-3x3/submissions/"
                                                                 "correct.ipynb", "rubrics/sliding-3x3.yaml")):
        done = run("grade", notebook, "--rubric", rubric, "--out", str(out), "--cache", str(grader_cache), "--quiet")
        assert done.returncode == 0, done.stderr
    before = (taoistic / "gradebook.csv").read_bytes()
    refused = run("merge", str(sliding / "gradebook.sqlite"), "--into", str(taoistic / "gradebook.sqlite"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip() == (f"{sliding / 'gradebook.sqlite'}: holds results of sliding-3x3, and {taoistic} is"
                                      f" a results folder of taoistic-search; merge it into that assignment's results "
                                      f"folder (--into)")
    assert (taoistic / "gradebook.csv").read_bytes() == before
    merged = run("merge", str(taoistic), "--into", str(tmp_path / "both.sqlite"))   # a plain gradebook: any
    assert merged.returncode == 0, merged.stderr
    assert run("merge", str(sliding), "--into", str(tmp_path / "both.sqlite")).returncode == 0
    not_one = run("merge", CORRECT, "--into", str(tmp_path / "never.sqlite"))
    assert not_one.returncode == 2 and "not a gradebook" in not_one.stderr and not (tmp_path / "never.sqlite").exists()


# ------------------------------------------------------------------------------------------------ check


def test_regrading_one_student_says_one_submission(tmp_path: Path, grader_cache: Path) -> None:
    """A TA regrading one student (`grade that.ipynb --force`) reads "1 submission: 1 graded", not "1 submissions"."""
    done = run("grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp_path), "--cache", str(grader_cache), "--force",
               "--quiet")
    assert done.returncode == 0, done.stderr
    assert flat(done.stdout).startswith("1 submission: 1 graded, 0 unreadable"), done.stdout


def test_a_regrade_says_whose_score_changed_and_why(tmp_path: Path, grader_cache: Path) -> None:
    """A TA fixing the rubric regrades the class: the summary said "2 graded" and nothing of whose grade moved.
    Each student whose score is not what the grading before said is named, before -> after, with what differs."""
    out = str(tmp_path / "results")
    first = run("grade", CORRECT, TRANSPOSED, "--rubric", RUBRIC, "--out", out, "--cache", str(grader_cache), "--quiet")
    assert first.returncode == 0, first.stderr
    assert "changed from the grading before" not in flat(first.stdout)
    tile = "  - id: find_tile\n    title: Find a tile\n    points: {}\n"
    fixed = (REPO / RUBRIC).read_text(encoding="utf-8").replace("../", f"{REPO}/").replace(tile.format(2),
                                                                                          tile.format(4))
    assert "points: 4" in fixed
    (tmp_path / "taoistic-search.yaml").write_text(fixed, encoding="utf-8")
    again = run("grade", CORRECT, TRANSPOSED, "--rubric", str(tmp_path / "taoistic-search.yaml"), "--out", out,
                "--cache", str(grader_cache), "--quiet")
    assert again.returncode == 0, again.stderr
    assert ("2 scores changed from the grading before: correct 30 -> 32 (the rubric changed); "
            "move-dir-transposed 28 -> 30 (the rubric changed)") in flat(again.stdout), again.stdout
    same = run("grade", CORRECT, "--rubric", str(tmp_path / "taoistic-search.yaml"), "--out", out,
               "--cache", str(grader_cache), "--quiet", "--force")
    assert same.returncode == 0 and "changed from the grading before" not in flat(same.stdout), same.stdout


def test_the_ta_sees_each_incident_in_every_view_and_forgives_one_found_honest(tmp_path: Path,
                                                                                grader_cache: Path) -> None:
    """An attack the sandbox stopped (grader.incidents: a frame forged during find_tile#1, answers right) cost
    its exercise, but the TA was told nowhere: grade's summary, the CSV and the class report name the student
    with the facts (what, where, seen by whom, what the policy took); the student's own report says only the
    exercise's note. A TA who finds it honest had to work out the points for `override --points`, and nothing said
    what the policy took: `override --forgive` gives back the judge's score (ExerciseResult.forfeited), recorded as
    an override with its reason in the CSV and Gradescope, and the student's note no longer says "no points"."""
    import csv
    import json
    from notebook_build import appended, write
    from test_hostile_incidents import FORGED_IN_FIND_TILE
    forged = write(tmp_path / "forged.ipynb", appended(REPO / CORRECT, FORGED_IN_FIND_TILE))
    out = tmp_path / "results"
    done = run("grade", CORRECT, str(forged), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert done.returncode == 0, done.stderr
    # find_tile#1, the case the frame was forged in, errored: the judge gave 1.8333 of 2, the policy took that
    said = ("forged frame in find_tile (case find_tile#1), seen by the parent frame check; points the policy took: "
            "find_tile 1.8333")
    assert "1 submission with incidents" in flat(done.stdout) and f"forged: {said}" in flat(done.stdout), done.stdout
    assert "--forgive" in flat(done.stdout)
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as stream:
        rows = {row["student"]: row for row in csv.DictReader(stream)}
    assert (rows["forged"]["incidents"], rows["forged"]["find_tile"], rows["correct"]["incidents"]) == (said, "0", "")
    report = run("class-report", str(out), "--out", str(tmp_path / "class.html"))
    assert report.returncode == 0, report.stderr
    assert "incidents of forged" in (tmp_path / "class.html").read_text(encoding="utf-8")
    with open(tmp_path / "class.csv", newline="", encoding="utf-8") as stream:      # the class report's own CSV
        assert {row["student"]: row["incidents"] for row in csv.DictReader(stream)} == {"correct": "", "forged": said}
    feedback = run("report", str(out), "--out", str(tmp_path / "feedback"), "--format", "md")
    assert feedback.returncode == 0, feedback.stderr
    page = (tmp_path / "feedback" / "forged.md").read_text(encoding="utf-8")
    assert "forged frame" not in page and "parent frame check" not in page and "earns no points" in page

    book = str(out / "gradebook.sqlite")
    refused = run("override", "correct", "find_tile", "--forgive", "--why", "honest", "--gradebook", book)
    assert refused.returncode == 2 and "the incident policy took nothing from find_tile" in refused.stderr, refused
    forgiven = run("override", "forged", "find_tile", "--forgive", "--why", "course helper library, not an attack",
                   "--by", "ta-anna", "--gradebook", book)
    assert forgiven.returncode == 0, forgiven.stderr
    assert "forged find_tile: 0 -> 1.8333 (forgiven" in flat(forgiven.stdout), forgiven.stdout
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as stream:
        row = {row["student"]: row for row in csv.DictReader(stream)}["forged"]
    assert (row["find_tile"], row["automatic_total"]) == ("1.8333", rows["forged"]["total"])
    assert float(row["total"]) == pytest.approx(float(rows["forged"]["total"]) + 1.8333)
    assert "find_tile: 0 -> 1.8333 by ta-anna (course helper library, not an attack)" in row["overrides"]
    exported = run("export", str(out), "--out", str(tmp_path / "export"), "--format", "gradescope")
    assert exported.returncode == 0, exported.stderr
    scored = json.loads((tmp_path / "export" / "gradescope" / "forged.json").read_text(encoding="utf-8"))
    assert scored["score"] == pytest.approx(float(row["total"])) and "course helper library" in scored["output"]
    again = run("report", str(out), "--out", str(tmp_path / "feedback"), "--format", "md")
    assert again.returncode == 0, again.stderr
    page = (tmp_path / "feedback" / "forged.md").read_text(encoding="utf-8")
    assert "earns no points" not in page and "no solution needs" in page and "course helper library" in page
    # Every TA view says the forgiveness, from the override and `forfeited` (facts): grade's incident line no longer
    # asks for the --forgive it got, the class report no longer says the policy scored it, the CSVs say given back
    back = ("forged frame in find_tile (case find_tile#1), seen by the parent frame check; forgiven by a TA: "
            "find_tile 1.8333")
    assert row["incidents"] == back, row["incidents"]
    regrade = run("grade", CORRECT, str(forged), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache))
    assert regrade.returncode == 0, regrade.stderr
    assert f"forged: {back}" in flat(regrade.stdout) and "--forgive" not in flat(regrade.stdout), regrade.stdout
    report = run("class-report", str(out), "--out", str(tmp_path / "class.html"))
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "class.html").read_text(encoding="utf-8")
    assert "a TA gave back what the rubric&#39;s policy took" in html and "policy scored it" not in html
    with open(tmp_path / "class.csv", newline="", encoding="utf-8") as stream:
        assert {row["student"]: row["incidents"] for row in csv.DictReader(stream)}["forged"] == back


def test_a_graded_function_that_calls_input_is_told_the_grader_has_no_keyboard(tmp_path: Path,
                                                                               grader_cache: Path) -> None:
    """A find_tile that calls input() scored 0 with a bare "EOFError: EOF when reading a line" for every case: the
    student's report now says what happened (the grader has no keyboard), from the runtime's fact (its stdin raised
    it: error stage "input"), never from the message: a move_dir raising EOFError of its own is not told so."""
    import csv
    from grader.judge.grading import NO_KEYBOARD
    from notebook_build import appended, write
    asking = write(tmp_path / "asking.ipynb", appended(REPO / CORRECT, (
        "_own_find_tile = find_tile\n"
        "def find_tile(tile, S):\n"
        "    input(f'where is {tile}? ')\n"
        "    return _own_find_tile(tile, S)\n"
        "def move_dir(*args):\n"
        "    raise EOFError('EOF when reading a line')\n"
        "_own_next_states = next_states\n"
        "def next_states(*args):\n"
        "    import sys\n"
        "    assert sys.stdin.readline() == '' and sys.stdin.read() == ''\n"
        "    return _own_next_states(*args)\n")))
    out = tmp_path / "results"
    done = run("grade", str(asking), "--rubric", RUBRIC, "--out", str(out), "--cache", str(grader_cache), "--quiet")
    assert done.returncode == 0, done.stderr
    feedback = run("report", str(out), "--out", str(tmp_path / "feedback"), "--format", "md")
    assert feedback.returncode == 0, feedback.stderr
    sections = {part.split()[0].rstrip(":").replace("\\_", "_"): " ".join(part.split()) for part in
                (tmp_path / "feedback" / "asking.md").read_text(encoding="utf-8").split("\n## ")[1:]}
    tile, moved = sections["find_tile"], sections["move_dir"]
    assert "EOFError: EOF when reading a line" in tile and NO_KEYBOARD in tile, tile
    assert "EOFError: EOF when reading a line" in moved and NO_KEYBOARD not in moved, moved
    # sys.stdin is still the empty /dev/null: reading it gives '' as before (mend 16:01), only input() is stopped
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as stream:
        assert next(csv.DictReader(stream))["next_states"] == "2"


def test_check_on_correct_passes_and_only_counts_hidden_cases(grader_cache: Path) -> None:
    done = run("check", CORRECT, "--rubric", RUBRIC, "--cache", str(grader_cache))
    assert done.returncode == 0, done.stdout + done.stderr
    shown = flat(done.stdout)
    assert "hidden cases, results after grading" in shown
    assert "All public cases pass" in shown
    for call in hidden_calls(grader_cache):
        assert call not in shown


def test_check_on_transposed_move_dir_fails_showing_expected_got_and_the_mistake(grader_cache: Path) -> None:
    done = run("check", TRANSPOSED, "--rubric", RUBRIC, "--cache", str(grader_cache))
    assert done.returncode == 1, done.stdout + done.stderr
    shown = flat(done.stdout)
    assert "✗ move_dir: 0/2 public cases pass" in shown
    assert "✗ move_dir(Start, 0, 0, 1, 0)" in shown
    # Puzzle states are drawn as boards, expected beside got, the differing cells in [brackets]:
    # first rows "[14] [ ] 8 12" (expected) and "[10] [14] 8 12" (got).
    rows = [" ".join(line.replace("│", " ").split()) for line in done.stdout.splitlines() if "│" in line]
    assert "[14] [ ] 8 12 [10] [14] 8 12" in rows
    assert "expected: ((" not in shown   # no tuples to decipher when boards say it
    assert "Rows and columns look swapped" in shown
    # Hidden move_dir cases fail too, but a self-check never runs or shows them.
    calls = hidden_calls(grader_cache)
    assert "move_dir(S1, 2, 2, -1, 0)" in calls
    for call in calls:
        assert call not in shown


# ------------------------------------------------------------------------------------------------ validate


def test_validate_accepts_the_taoistic_rubric(grader_cache: Path) -> None:
    done = run("validate", RUBRIC, "--cache", str(grader_cache), "--mutants", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reference: 30/30" in done.stdout
    assert "template:  0/30" in done.stdout
    assert "  move_dir: mutation score 100% (threshold 90%): 1 killed, 0 survived" in done.stdout
    assert "mistake move_dir/move_dir_transposed: 0/2, ok" in done.stdout
    assert "valid" in done.stdout


def broken_rubric(tmp_path: Path, name: str, exercise_lines: str) -> Path:
    """A one-exercise rubric with the real reference module, so the only problem is the one written in."""
    reference = REPO / "reference" / "taoistic_search.py"
    path = tmp_path / name
    path.write_text(f"assignment: tiny\nreference: {reference}\nfixtures: [Start]\nexercises:\n"
                    f"  - id: find_tile\n{exercise_lines}"
                    f"    cases:\n      - call: \"find_tile('0', Start)\"\n", encoding="utf-8")
    return path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


@pytest.mark.parametrize("exercise_lines, marker, reason", [
    ("    pionts: 2\n", "pionts", "exercise 'find_tile': unknown key 'pionts' (did you mean 'points'?)"),
    ("    points: 2\n    check: equals\n", "check: equals",
     "exercise 'find_tile': unknown check 'equals' (did you mean 'equal'?)"),
], ids=["typo-key", "unknown-check"])
def test_validate_reports_a_broken_rubric_at_its_file_and_line(tmp_path: Path, grader_cache: Path,
                                                               exercise_lines: str, marker: str, reason: str) -> None:
    path = broken_rubric(tmp_path, "broken.yaml", exercise_lines)
    done = run("validate", str(path), "--cache", str(grader_cache))
    assert done.returncode != 0
    assert f"{path}:{line_of(path, marker)}: {reason}" in done.stderr.splitlines()


# ------------------------------------------------------------------------------------------------ extract, version


def test_extract_prints_the_module_with_cell_markers_and_what_it_left_out() -> None:
    done = run("extract", CORRECT)
    assert done.returncode == 0, done.stderr
    module, marker, left_out = done.stdout.partition("# ---- left out ----\n")
    assert marker
    assert module.startswith("# In [2] (cell 3), line 1\n")
    assert "# In [24] (cell 39), line 1\ndef find_tile(" in module
    assert "%load_ext" not in module
    assert "# In [1] (cell 1), line 1: line magic %load_ext: %load_ext nb_mypy" in left_out.splitlines()
    assert "# In [45] (cell 76), line 1: assignment calls notebook function main(): Path = main()" in left_out


def test_version_names_the_package_and_its_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"puzzle-grader {grader.__version__}"


# ------------------------------------------------------------------------------------------------ mistakes


def _mistakes(tmp: Path) -> list[tuple[list[str], str]]:
    a_file = tmp / "a-file.txt"
    a_file.write_text("not a folder\n", encoding="utf-8")
    nope = str(tmp / "nope")
    return [
        (["grade", CORRECT, "--rubric", "rubrics", "--out", str(tmp / "o")], "rubrics"),
        (["grade", CORRECT, "--rubric", "rubrics/nope.yaml", "--out", str(tmp / "o")], "rubrics/nope.yaml"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(a_file)], str(a_file)),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--gradescope", str(a_file)], str(a_file)),
        (["grade", f"{SUBMISSIONS}/nope.ipynb", "--rubric", RUBRIC, "--out", str(tmp / "o")], "nope.ipynb"),
        (["grade", f"{SUBMISSIONS}/*.nothing", "--rubric", RUBRIC, "--out", str(tmp / "o")], "*.nothing"),
        (["check", "nope.ipynb", "--rubric", RUBRIC], "nope.ipynb"),
        # A folder is checked by the notebook grading takes from it (test_kit): one without any is the mistake.
        (["check", str(tmp), "--rubric", RUBRIC], str(tmp)),
        (["check", CORRECT, "--kit", nope], nope),
        (["report", nope, "--out", str(tmp / "f")], nope),
        (["report", str(a_file), "--out", str(tmp / "f")], str(a_file)),
        (["class-report", nope, "-o", str(tmp / "c.html")], nope),
        (["class-report", str(tmp), "-o", str(tmp)], str(tmp)),
        (["export", nope, "--out", str(tmp / "e")], nope),
        (["export", str(tmp), "--out", str(a_file)], str(a_file)),
        (["validate", "rubrics"], "rubrics"),
        (["validate", nope], nope),
        (["kit", nope, "-o", str(tmp / "k.json")], nope),
        (["extract", nope], nope),
        (["merge", nope, "--into", str(tmp / "g.sqlite")], nope),
        (["gradescope", "rubrics", "-o", str(tmp / "a.zip")], "rubrics"),
        # What is written must not be made inside a file (a makedirs deep in the library raised).
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(a_file / "o")], str(a_file / "o")),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--gradescope", str(a_file / "g")],
         str(a_file / "g")),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--gradebook", str(a_file / "g.sqlite")],
         str(a_file / "g.sqlite")),
        (["report", str(tmp), "--out", str(a_file / "f")], str(a_file / "f")),
        (["export", str(tmp), "--out", str(a_file / "e")], str(a_file / "e")),
        (["class-report", str(tmp), "-o", str(a_file / "c.html")], str(a_file / "c.html")),
        (["similarity", str(tmp), "--out", str(a_file / "s.html")], str(a_file / "s.html")),
        (["kit", RUBRIC, "-o", str(a_file / "k.json")], str(a_file / "k.json")),
        (["gradescope", RUBRIC, "-o", str(a_file / "a.zip")], str(a_file / "a.zip")),
        (["merge", nope, "--into", str(a_file / "g.sqlite")], str(a_file / "g.sqlite")),
        # A mistyped number: a budget of 0 s graded the whole class 0 with exit 0, NaN failed every student.
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--submission-seconds", "0"],
         "--submission-seconds"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--submission-seconds", "-1"],
         "--submission-seconds"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--submission-seconds", "nan"],
         "--submission-seconds"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--case-seconds", "inf"], "--case-seconds"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--memory-mb", "0"], "--memory-mb"),
        # Numbers past what the sandbox can apply: 1e10 s is past setitimer's range (the child exited at every case,
        # the class graded 0 with exit 0), 1e13 MB past an rlimit's C long (no notebook loaded).
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--case-seconds", "1e10"], "--case-seconds"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--memory-mb", "10000000000000"],
         "--memory-mb 1e+13: at most 16,777,216 (past it the sandbox cannot apply it)"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--jobs", "-2"], "--jobs"),
        (["validate", RUBRIC, "--mutants", "-1"], "--mutants"),
        (["validate", RUBRIC, "--mutation-seconds", "0"], "--mutation-seconds"),
        (["similarity", str(tmp), "--out", str(tmp / "s.html"), "--threshold", "7"], "--threshold"),
        # Paths the report commands and the cache read: a folder given as the rubric ended `report` in a traceback;
        # a missing --template or --notebooks folder, or a --cache that is a file, was silently ignored (exit 0).
        (["report", str(tmp), "--out", str(tmp / "f"), "--rubric", "rubrics"], "rubrics"),
        (["report", str(tmp), "--out", str(tmp / "f"), "--template", nope], nope),
        (["report", str(tmp), "--out", str(tmp / "f"), "--notebooks", nope], nope),
        (["class-report", str(tmp), "-o", str(tmp / "c.html"), "--notebooks", nope], nope),
        (["similarity", str(tmp), "--out", str(tmp / "s.html"), "--notebooks", str(a_file)], str(a_file)),
        (["export", str(tmp), "--out", str(tmp / "e"), "--template", str(tmp)], str(tmp)),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--cache", str(a_file)], str(a_file)),
        (["kit", RUBRIC, "-o", str(tmp / "k.json"), "--cache", str(a_file / "c")], str(a_file / "c")),
        # Where access() says yes and nothing can be made (root in /proc): a traceback from deep in the library,
        # and a --cache there was silently ignored (exit 0).
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", "/proc/no-grader-out"], "/proc/no-grader-out"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--cache", "/proc/no-grader-cache"],
         "/proc/no-grader-cache"),
        (["grade", CORRECT, "--rubric", RUBRIC, "--out", str(tmp / "o"), "--gradescope", "/proc/no-grader-gs"],
         "/proc/no-grader-gs"),
        (["report", str(tmp), "--out", "/proc/no-grader-f"], "/proc/no-grader-f"),
        (["class-report", str(tmp), "-o", "/proc/no-grader.html"], "/proc/no-grader.html"),
        (["kit", RUBRIC, "-o", "/proc/no-grader.json"], "/proc/no-grader.json"),
        (["gradescope", RUBRIC, "-o", "/proc/no-grader.zip"], "/proc/no-grader.zip"),
        # Neither a file nor a folder: the line said "not a folder" of a device.
        (["grade", CORRECT, "--rubric", os.devnull, "--out", str(tmp / "o")],
         f"{os.devnull}: a rubric is a YAML file, and this is neither a file nor a folder"),
        (["check", CORRECT, "--kit", os.devnull], f"{os.devnull}: --kit must be a file, and this is neither"),
        # A device among what is graded: "no such file or folder" of a path that is there, and exit 1.
        (["grade", os.devnull, "--rubric", RUBRIC, "--out", str(tmp / "o")], f"{os.devnull}: neither a file nor"),
        # A file that is no notebook: `check` graded it, 13 failing exercises and exit 1, for a mistyped name.
        (["check", str(a_file), "--rubric", RUBRIC], str(a_file)),
    ]


def test_every_mistyped_path_or_argument_is_one_line_and_exit_2_never_a_traceback(tmp_path: Path, capsys,
                                                                                   monkeypatch) -> None:
    from grader.cli import main
    monkeypatch.chdir(REPO)
    for argv, named in _mistakes(tmp_path):
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 2, (argv, captured.out, captured.err)
        assert "Traceback" not in captured.err + captured.out, argv
        assert named in captured.err, (argv, captured.err)
        assert len(captured.err.strip().splitlines()) <= 2, (argv, captured.err)


def test_a_mistake_through_the_real_command_line_prints_no_traceback(tmp_path: Path) -> None:
    done = run("check", "nope.ipynb", "--rubric", RUBRIC)
    assert done.returncode == 2 and done.stderr.strip() == "nope.ipynb: no such file", done.stderr
    done = run("grade", "nowhere/", "--rubric", RUBRIC, "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and done.stderr.strip() == "nowhere/: no such file or folder", done.stderr
    assert not (tmp_path / "o").exists()


def test_the_not_judged_line_counts_cases_and_names_the_first_ten_submissions_in_order():
    """One line for both kinds of cases not judged (a rubric's crash, a busy machine): the counts and who."""
    from grader.cli import not_judged_line
    assert not_judged_line({"bob": 1}, "the machine was too busy") == \
        "1 case of 1 submission not judged: the machine was too busy: bob"
    many = {f"s{n:02d}": 2 for n in range(12, 0, -1)}
    line = not_judged_line(many, "grader problem")
    assert line.startswith("24 cases of 12 submissions not judged: grader problem: s01, s02, ")
    assert line.endswith("s09, s10")


def test_a_class_output_of_a_folder_without_results_says_so(tmp_path: Path, capsys) -> None:
    """`class-report feedback -o ...` (the wrong folder): one line saying there are no results there, exit 1, as
    `report` says; before, class-report and export wrote a page of nobody and exited 1 without a word."""
    from grader.cli import main
    folder = tmp_path / "feedback"
    folder.mkdir()
    for argv in (["class-report", str(folder), "-o", str(tmp_path / "class.html")],
                 ["export", str(folder), "--out", str(tmp_path / "out")],
                 ["report", str(folder), "--out", str(tmp_path / "reports")]):
        assert main(argv) == 1, argv
        assert f"{folder}: no results in this folder" in capsys.readouterr().err, argv


def test_output_piped_into_a_reader_that_leaves_early_ends_quietly() -> None:
    """`grader override ... | head -1` closed the pipe under the next print: a BrokenPipeError traceback that
    reads as the grader's bug. The command stops (status 1) and says nothing more."""
    read_end, write_end = os.pipe()
    os.close(read_end)                       # the reader already left: every write to stdout fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "grader", "extract", CORRECT], cwd=REPO, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=within(600))
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, "")


def test_each_verb_parses_as_it_does_with_every_verbs_arguments_made_and_grade_loads_no_report_module() -> None:
    """parser() makes only the running verb's arguments: what each verb parses to, and what --help lists, are
    those of the parser with every verb's arguments made (a verb that is none makes them all); `grade` leaves
    the report and authoring modules other verbs' help texts import unloaded (they cost its start-up)."""
    script = (
        "import sys\n"
        "from grader import cli\n"
        "lines = [\n"
        "    ['grade', 'a.ipynb', 'b', '--rubric', 'r.yaml', '--out', 'o', '--jobs', '2', '--quiet'],\n"
        "    ['report', 'results', '--out', 'f', '--format', 'md'], ['export', 'results', '--out', 'o'],\n"
        "    ['validate', 'r.yaml', '--mutants', '3'], ['assign', 'm.ipynb', '--no-validate'],\n"
        "    ['override', 's', 'e', '--points', '1', '--why', 'w'], ['check', 'n.ipynb', '--kit', 'k.json'],\n"
        "    ['doctor'], ['extract', 'n.ipynb'], ['merge', 'g.sqlite', '--into', 'h.sqlite'],\n"
        "]\n"
        "grade = cli.parser(lines[0]).parse_args(lines[0])\n"
        "loaded = sorted(m for m in ('grader.report.formats', 'grader.report.class_outputs',\n"
        "                            'grader.authoring.mutants') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
        "every = cli.parser(['no-such-verb'])\n"
        "for line in lines:\n"
        "    assert vars(cli.parser(line).parse_args(line)) == vars(every.parse_args(line)), line\n"
        "assert cli.parser(['grade']).format_help() == every.format_help()\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=within(120))
    assert done.stdout.strip() == "ok", done.stderr
