"""Submission intake: LMS exports, folders, globs and plain files become one notebook per student.

Every archive here is a real zip built with zipfile in tmp_path, holding real notebooks written by nbformat.
"""

from __future__ import annotations

import dataclasses
import os
import re
import struct
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testclock import within
from grader.intake import gather as intake
from grader.intake.gather import Entry, Intake, gather

OLD = (2024, 3, 1, 9, 0, 0)
NEW = (2024, 3, 2, 9, 0, 0)
NEWEST = (2024, 3, 3, 9, 0, 0)


def notebook(text: str) -> bytes:
    """A real notebook whose one code cell says who wrote it, so tests can tell which file was picked."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(f"WHO = {text!r}"))
    return nbformat.writes(nb).encode("utf-8")


def make_zip(path: Path, members: dict[str, bytes | tuple[bytes, tuple[int, ...]]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            data, date_time = value if isinstance(value, tuple) else (value, OLD)
            archive.writestr(zipfile.ZipInfo(name, date_time), data, zipfile.ZIP_DEFLATED)
    return path


def write(path: Path, data: bytes, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def by_student(result: Intake) -> dict[str, Entry]:
    return {entry.student: entry for entry in result.entries}


def who(entry: Entry) -> str:
    return nbformat.reads(entry.path.read_text(encoding="utf-8"), as_version=4).cells[0].source


def canvas_export(tmp_path: Path) -> Path:
    return make_zip(tmp_path / "export.zip", {
        "smithjohn_12345_67890_taoistic.ipynb": (notebook("smith attempt 0"), NEWEST),
        "smithjohn_12345_67891_taoistic-1.ipynb": (notebook("smith attempt 1"), NEW),
        "smithjohn_12345_67892_taoistic-2.ipynb": (notebook("smith attempt 2"), OLD),
        "doejane_LATE_23456_78901_puzzle.ipynb": notebook("doe late"),
        "leeann_34567_89012_scratch.ipynb": (notebook("lee scratch"), OLD),
        "leeann_34567_89013_taoistic.ipynb": (notebook("lee final"), NEW),
    })


# --- Canvas -------------------------------------------------------------------------------------------

def test_canvas_export_names_each_student_by_name_and_user_id(tmp_path: Path) -> None:
    result = gather([canvas_export(tmp_path)], tmp_path / "work")
    assert [e.student for e in result.entries] == ["doejane_23456", "leeann_34567", "smithjohn_12345"]
    assert {e.convention for e in result.entries} == {"canvas"}
    doe = by_student(result)["doejane_23456"]
    assert doe.source == f"{tmp_path / 'export.zip'}:doejane_LATE_23456_78901_puzzle.ipynb"
    assert doe.path.is_file() and doe.path.is_relative_to(tmp_path / "work")
    assert who(doe) == "WHO = 'doe late'"
    assert result.problems == ()


def test_canvas_highest_resubmission_is_graded_even_when_its_date_is_older(tmp_path: Path) -> None:
    result = gather([canvas_export(tmp_path)], tmp_path / "work")
    smith = by_student(result)["smithjohn_12345"]
    assert who(smith) == "WHO = 'smith attempt 2'"
    assert [s.rsplit(":", 1)[1] for s in smith.others] == [
        "smithjohn_12345_67891_taoistic-1.ipynb", "smithjohn_12345_67890_taoistic.ipynb"]
    [note] = [n for n in result.notes if n.startswith("smithjohn_12345:")]
    assert "3 notebooks, graded" in note
    assert "taoistic-2.ipynb (highest Canvas resubmission number, -2)" in note
    assert "not graded:" in note and "taoistic-1.ipynb" in note


def test_student_with_two_different_canvas_notebooks_gets_the_newest(tmp_path: Path) -> None:
    result = gather([canvas_export(tmp_path)], tmp_path / "work")
    lee = by_student(result)["leeann_34567"]
    assert who(lee) == "WHO = 'lee final'"
    assert lee.others == (f"{tmp_path / 'export.zip'}:leeann_34567_89012_scratch.ipynb",)
    [note] = [n for n in result.notes if n.startswith("leeann_34567:")]
    assert "(newest modification time, 2024-03-02 09:00:00)" in note


def test_a_dash_number_without_its_base_file_is_not_a_resubmission(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {
        "kimsam_45678_90123_lab-2023.ipynb": (notebook("year in the name"), OLD),
        "kimsam_45678_90124_final.ipynb": (notebook("final"), NEW),
    })
    kim = by_student(gather([export], tmp_path / "work"))["kimsam_45678"]
    assert who(kim) == "WHO = 'final'"


def test_same_time_ties_go_to_the_last_file_name(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {
        "kimsam_45678_90124_b.ipynb": (notebook("b"), OLD),
        "kimsam_45678_90123_a.ipynb": (notebook("a"), OLD),
    })
    result = gather([export], tmp_path / "work")
    assert who(by_student(result)["kimsam_45678"]) == "WHO = 'b'"
    assert "last by file name, modified at the same time" in result.notes[0]


def test_extracted_members_keep_their_zip_date(tmp_path: Path) -> None:
    result = gather([canvas_export(tmp_path)], tmp_path / "work")
    doe = by_student(result)["doejane_23456"]
    assert time.gmtime(doe.path.stat().st_mtime)[:6] == OLD


# --- Moodle -------------------------------------------------------------------------------------------

def test_moodle_folders_and_old_flat_names_name_students_by_full_name_and_participant_id(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "moodle.zip", {
        "John Smith_101_assignsubmission_file_/lab.ipynb": notebook("john"),
        "John Smith_101_assignsubmission_onlinetext_/onlinetext.html": b"<p>see notebook</p>",
        "Zoë Ng_102_assignsubmission_file_/work/puzzle.ipynb": notebook("zoe"),
        "Zoë Ng_102_assignsubmission_file_/work/board.png": b"\x89PNG",
        "Ann Lee_103_assignsubmission_file_taoistic.ipynb": notebook("ann"),
    })
    result = gather([export], tmp_path / "work")
    students = by_student(result)
    assert sorted(students) == ["Ann_Lee_103", "John_Smith_101", "Zoe_Ng_102"]
    assert {e.convention for e in result.entries} == {"moodle"}
    assert who(students["Zoe_Ng_102"]) == "WHO = 'zoe'"
    assert students["Ann_Lee_103"].source.endswith("moodle.zip:Ann Lee_103_assignsubmission_file_taoistic.ipynb")
    assert result.problems == () and result.notes == ()


def test_a_moodle_student_who_handed_in_online_text_only_keeps_a_row_saying_so(tmp_path: Path) -> None:
    """Moodle's other plugins are never notebooks, and their folders were skipped whole: a student who typed "see
    attached" and attached nothing had no row and was named nowhere (the CSV left their grade as it was)."""
    members = {
        "John Smith_101_assignsubmission_file_/lab.ipynb": notebook("john"),
        "John Smith_101_assignsubmission_onlinetext_/onlinetext.html": b"<p>see notebook</p>",
        "Dee Ra_104_assignsubmission_onlinetext_/onlinetext.html": b"<p>see attached</p>",
        "._Dee Ra_105_assignsubmission_onlinetext_/onlinetext.html": b"macOS debris",
    }
    export = make_zip(tmp_path / "moodle.zip", members)
    folder = tmp_path / "moodle"
    for name, data in members.items():
        write(folder / name, data)
    for source in (export, folder):
        result = gather([source], tmp_path / f"work-{source.name}")
        students = by_student(result)
        assert sorted(students) == ["Dee_Ra_104", "John_Smith_101"], source
        assert not students["John_Smith_101"].problem
        assert students["Dee_Ra_104"].problem == ("handed in no notebook or script to grade: onlinetext.html "
                                                  "(Moodle's onlinetext submission, not a notebook)")
        assert result.problems == (), source


def test_a_canvas_upload_of_only_refused_members_keeps_its_students_row(tmp_path: Path) -> None:
    """A student's zip whose members are all refused (a link, a '..' path) left the student no row, only
    "skipped" lines, as a zip that did not open did."""
    import io
    import stat
    import zipfile
    upload = io.BytesIO()
    with zipfile.ZipFile(upload, "w") as archive:
        link = zipfile.ZipInfo("lab.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
        archive.writestr("../escape.ipynb", notebook("out"))
    export = make_zip(tmp_path / "export.zip", {"smithjohn_12345_67890_lab.zip": upload.getvalue(),
                                                "doejane_23456_78901_lab.ipynb": notebook("doe")})
    result = gather([export], tmp_path / "work")
    students = by_student(result)
    assert sorted(students) == ["doejane_23456", "smithjohn_12345"]
    assert students["smithjohn_12345"].problem == (
        "handed in no notebook or script to grade: lab.ipynb (symbolic link, not extracted); escape.ipynb (unsafe "
        "member path (absolute or '..'), not extracted)")
    assert result.problems == ()


def test_an_export_given_with_its_extracted_folder_names_each_unusable_file_once(tmp_path: Path) -> None:
    """The zip and the folder it was extracted to, given together: the row of a student who handed in only a PDF
    named it twice, once from each."""
    members = {"kimsam_45678_90123_lab.pdf": b"%PDF", "parkjo_56789_90125_lab.ipynb": notebook("park")}
    export = make_zip(tmp_path / "export.zip", members)
    for name, data in members.items():
        write(tmp_path / "export" / name, data)
    students = by_student(gather([export, tmp_path / "export"], tmp_path / "work"))
    assert students["kimsam_45678"].problem == ("handed in no notebook or script to grade: kimsam_45678_90123_lab.pdf "
                                                "(not a notebook)")


def test_moodle_student_folder_given_directly_is_still_that_student(tmp_path: Path) -> None:
    folder = tmp_path / "Mary Major_104_assignsubmission_file_"
    write(folder / "lab.ipynb", notebook("mary"))
    [entry] = gather([folder], tmp_path / "work").entries
    assert (entry.student, entry.convention) == ("Mary_Major_104", "moodle")


# --- folders, plain files, globs ----------------------------------------------------------------------

def test_folder_of_student_folders_names_each_student_by_folder(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    write(subs / "alice" / "anything.ipynb", notebook("alice"))
    write(subs / "bob" / "work" / "x.ipynb", notebook("bob"))
    write(subs / "bob" / ".ipynb_checkpoints" / "x-checkpoint.ipynb", notebook("bob checkpoint"))
    write(subs / "bob" / "__pycache__" / "x.py", b"x = 1\n")
    write(subs / "__MACOSX" / "alice" / "._anything.ipynb", b"\0\0")
    write(subs / ".git" / "hook.py", b"x = 1\n")
    write(subs / "README.md", b"# hw1\n")
    result = gather([subs], tmp_path / "work")
    assert [(e.student, e.convention) for e in result.entries] == [("alice", "folder"), ("bob", "folder")]
    assert by_student(result)["bob"].path == subs / "bob" / "work" / "x.ipynb"
    assert result.problems == () and result.notes == ()


def test_two_folders_whose_names_make_one_id_are_two_students(tmp_path: Path) -> None:
    """"Søren Ødegaard" and "Soren Odegaard" are both Soren_Odegaard, and the old intake took them for one
    student with two notebooks, graded one and dropped the other silently. The name the id spells whole keeps
    the id (its gradebook rows stay), the other is graded apart, with a note; a student alone with such a name
    keeps the id it had."""
    subs = tmp_path / "subs"
    write(subs / "Søren Ødegaard" / "lab.ipynb", notebook("soren"))
    write(subs / "Soren Odegaard" / "lab.ipynb", notebook("sren"))
    write(subs / "Łukasz" / "lab.ipynb", notebook("lukasz"))
    write(tmp_path / "files" / "Åse Berg.ipynb", notebook("ase"))
    write(tmp_path / "files" / "Ase Berg.ipynb", notebook("ase too"))
    result = gather([subs, tmp_path / "files"], tmp_path / "work")
    students = by_student(result)
    assert sorted(students) == sorted(["Soren_Odegaard", "Soren_Odegaard-" + _sha1("Søren Ødegaard"), "Lukasz",
                                       "Ase_Berg", "Ase_Berg-" + _sha1("Åse Berg")])
    assert who(students["Soren_Odegaard"]) == "WHO = 'sren'" and who(students["Lukasz"]) == "WHO = 'lukasz'"
    assert who(students["Soren_Odegaard-" + _sha1("Søren Ødegaard")]) == "WHO = 'soren'"
    assert who(students["Ase_Berg"]) == "WHO = 'ase too'"
    assert any("'Søren Ødegaard' makes the same id as 'Soren Odegaard'" in note for note in result.notes)


@pytest.mark.parametrize("name, ident", [("Søren Ødegaard", "Soren_Odegaard"), ("Straße", "Strasse"),
                                         ("Ærø", "AEro"), ("Łukasz Wójcik", "Lukasz_Wojcik"), ("Zoë", "Zoe"),
                                         ("Þóra Ðís", "Thora_Dis")])
def test_letters_that_do_not_decompose_are_spelt_not_dropped(name: str, ident: str) -> None:
    """NFKD has no base letter for ø ß æ ł: safe_id dropped them ("Søren Ødegaard" was "Sren_degaard")."""
    assert intake.safe_id(name) == ident


def test_a_class_graded_before_transliteration_keeps_its_ids_rows_and_overrides(tmp_path: Path) -> None:
    """The fixture is the gradebook the grader before transliteration made (main at 91fd1ac): 'Søren
    Ødegaard/lab.ipynb' (taoistic correct) and 'Łukasz Wójcik/lab.ipynb' (int-tiles) graded with
    `grader grade subs --rubric rubrics/taoistic-search.yaml --out out` as Sren_degaard and ukasz_Wojcik, then
    `grader override ukasz_Wojcik move_dir --points 1`. Graded again by this grader, the two keep those ids,
    their rows and the override, with a note each; without keep_former_ids they became two new students and the
    export listed four."""
    import gzip
    import subprocess
    import sys
    from conftest import REPO, RUBRIC, SUBMISSIONS
    from grader.store.gradebook import Gradebook
    subs = tmp_path / "subs"
    write(subs / "Søren Ødegaard" / "lab.ipynb", (SUBMISSIONS / "correct.ipynb").read_bytes())
    write(subs / "Łukasz Wójcik" / "lab.ipynb", (SUBMISSIONS / "int-tiles.ipynb").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    fixture = REPO / "tests" / "fixtures" / "transliteration" / "gradebook-before.sqlite.gz"
    (out / "gradebook.sqlite").write_bytes(gzip.decompress(fixture.read_bytes()))
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(subs), "--rubric", str(RUBRIC),
                           "--out", str(out), "--jobs", "1"], capture_output=True, text=True, timeout=within(600),
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    with Gradebook(out / "gradebook.sqlite") as book:
        assert book.students("taoistic-search") == ["Sren_degaard", "ukasz_Wojcik"]
    export = (out / "gradebook.csv").read_text(encoding="utf-8")
    assert "Lukasz_Wojcik" not in export and "Soren_Odegaard" not in export and "ukasz_Wojcik" in export
    text = done.stdout + done.stderr
    assert "ukasz_Wojcik:" in text and "keeps the id its gradebook rows have" in text and "Lukasz_Wojcik" in text
    assert sorted(p.name for p in out.glob("*.json")) == ["Sren_degaard.json", "ukasz_Wojcik.json"]


def test_a_gradescope_class_graded_before_transliteration_keeps_its_ids_rows_and_overrides(tmp_path: Path) -> None:
    """As above, for students a Gradescope export's submission_metadata.yml names: the fixture is the gradebook
    the grader before transliteration (91fd1ac) made of `assignment_7301_export/` (submission_5001: 'Søren
    Ødegaard' sid 1001, taoistic correct; submission_5002: 'Łukasz Wójcik' sid 1002, int-tiles) as
    Sren_degaard_1001 and ukasz_Wojcik_1002, then `grader override ukasz_Wojcik_1002 move_dir --points 1`.
    The metadata's names had no former id (only file and folder names had one): graded again, the two became
    Soren_Odegaard_1001 and Lukasz_Wojcik_1002 beside their old rows, the export listed four and the override
    was on a row no longer graded."""
    import gzip
    import subprocess
    import sys
    from conftest import REPO, RUBRIC, SUBMISSIONS
    from grader.store.gradebook import Gradebook
    fixtures = REPO / "tests" / "fixtures" / "transliteration"
    export = tmp_path / "export" / "assignment_7301_export"
    write(export / "submission_metadata.yml", (fixtures / "gradescope_submission_metadata.yml").read_bytes())
    write(export / "submission_5001" / "lab.ipynb", (SUBMISSIONS / "correct.ipynb").read_bytes())
    write(export / "submission_5002" / "lab.ipynb", (SUBMISSIONS / "int-tiles.ipynb").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    (out / "gradebook.sqlite").write_bytes(gzip.decompress((fixtures / "gradescope-gradebook-before.sqlite.gz")
                                                           .read_bytes()))
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(tmp_path / "export"), "--rubric",
                           str(RUBRIC), "--out", str(out), "--jobs", "1"], capture_output=True, text=True,
                          timeout=within(600), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    with Gradebook(out / "gradebook.sqlite") as book:
        assert book.students("taoistic-search") == ["Sren_degaard_1001", "ukasz_Wojcik_1002"]
    export_csv = (out / "gradebook.csv").read_text(encoding="utf-8")
    assert "Lukasz_Wojcik" not in export_csv and "Soren_Odegaard" not in export_csv
    row = next(line for line in export_csv.splitlines() if line.startswith("ukasz_Wojcik_1002,"))
    assert row.split(",")[2] == "1"                                  # move_dir: the override still in force
    text = " ".join((done.stdout + done.stderr).split())              # the notes as the terminal wrapped them
    assert "ukasz_Wojcik_1002:" in text and "keeps the id its gradebook rows have" in text
    assert "Lukasz_Wojcik_1002" in text
    assert sorted(p.name for p in out.glob("*.json")) == ["Sren_degaard_1001.json", "ukasz_Wojcik_1002.json"]


def _sha1(text: str) -> str:
    import hashlib
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def test_a_results_folder_inside_the_graded_folder_is_no_student(tmp_path: Path) -> None:
    """`grader grade . --out results` twice: the second run found results/notebooks/<sha256>.ipynb, the copies
    of graded notebooks, and graded them as a student named "results"."""
    from grader.run.batch import RUBRIC_MARK
    subs = tmp_path / "subs"
    write(subs / "alice.ipynb", notebook("alice"))
    write(subs / "results" / "notebooks" / f"{'a' * 64}.ipynb", notebook("alice"))
    write(subs / "results" / "gradebook.sqlite", b"")
    write(subs / "results" / RUBRIC_MARK, b'{"assignment": "x"}\n')
    result = gather([subs], tmp_path / "work")
    assert [e.student for e in result.entries] == ["alice"]
    assert result.problems == (f"{subs / 'results'}: a results folder of grader grade (its notebooks are copies of "
                               f"graded ones), not a student's: not graded",)
    given = gather([subs / "results"], tmp_path / "work")   # the results folder itself: its copies are no one's
    assert given.entries == ()
    globbed = gather([str(subs / "**" / "*.ipynb")], tmp_path / "work")
    assert [e.student for e in globbed.entries] == ["alice"]


def test_a_class_graded_into_its_own_folder_is_graded_again_without_its_copies(tmp_path: Path) -> None:
    """`grader grade . --out .`: the class folder is the results folder too; a regrade takes the students'
    notebooks and leaves out the copies in notebooks/ (graded before as a student named "notebooks")."""
    from grader.run.batch import RUBRIC_MARK
    subs = tmp_path / "subs"
    write(subs / "alice.ipynb", notebook("alice"))
    write(subs / "bob" / "lab.ipynb", notebook("bob"))
    write(subs / "notebooks" / f"{'a' * 64}.ipynb", notebook("alice"))
    write(subs / RUBRIC_MARK, b'{"assignment": "x"}\n')
    write(subs / "gradebook.sqlite", b"")
    write(subs / "gradebook.sqlite-wal", b"")
    result = gather([subs], tmp_path / "work")
    assert [e.student for e in result.entries] == ["alice", "bob"]
    # nor is its own gradebook "skipped: gradebook.sqlite: not a notebook", on every run
    assert result.problems == ()
    globbed = gather([str(subs / "**" / "*.ipynb")], tmp_path / "work")
    assert [e.student for e in globbed.entries] == ["alice", "bob"]


def test_a_students_folder_is_checked_by_its_own_notebook_never_by_what_grade_wrote_in_it(tmp_path: Path) -> None:
    """`grader grade ada --out ada/results`, then `grader check ada`: the copy in ada/results/notebooks/ (same
    content, newer) was the one checked, and named by its hash. The folder's notebook is taken, as gather takes
    it; so where the folder given is a results folder itself (`--out ada`), its copies are not candidates."""
    from grader.intake.gather import RESULTS_MARK, choose_in_folder
    ada = tmp_path / "ada"
    write(ada / "lab.ipynb", notebook("ada"), mtime=1_000_000)
    for results in (ada / "results", ada):
        write(results / "notebooks" / f"{'a' * 64}.ipynb", notebook("ada"), mtime=2_000_000)
        write(results / RESULTS_MARK, b'{"assignment": "x"}\n')
        write(results / "gradebook.sqlite", b"")
        chosen, others, note = choose_in_folder(ada)
        assert (chosen, others, note) == (ada / "lab.ipynb", [], ""), results
    write(ada / "notebooks" / "old.ipynb", notebook("ada"), mtime=500_000)   # without the mark: a student's own
    (ada / "gradebook.sqlite").unlink()
    chosen, others, _ = choose_in_folder(ada)
    assert sorted([chosen, *others]) == sorted([ada / "lab.ipynb", ada / "notebooks" / "old.ipynb",
                                                ada / "notebooks" / f"{'a' * 64}.ipynb"])


GIL_AND_IDA = (b"submission_1001:\n  :submitters:\n  - :name: Gil Hart\n    :sid: '501'\n"
               b"  :created_at: 2026-11-20 21:10:05.123456000 Z\n"
               b"submission_1002:\n  :submitters:\n  - :name: Ida Jones\n    :sid: '502'\n")


def test_a_gradescope_export_of_empty_submission_folders_still_reads_its_metadata(tmp_path: Path) -> None:
    """`export/submission_metadata.yml` beside `export/submission_N/` folders that are all empty (on disk, or as a
    zip's folder entries): `export/` was not taken for a wrapper, as it is when a folder holds a file, so the
    metadata was a stray file of a student "export" ("skipped: not a notebook") and the rows were named by number
    with no hand-in time. They are the students the metadata names, at zero."""
    export = tmp_path / "download" / "assignment_7_export"
    write(export / "submission_metadata.yml", GIL_AND_IDA)
    for number in ("1001", "1002"):
        (export / f"submission_{number}").mkdir()
    archive = tmp_path / "gradescope.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("assignment_7_export/submission_metadata.yml", GIL_AND_IDA)
        for number in ("1001", "1002"):
            zipped.writestr(zipfile.ZipInfo(f"assignment_7_export/submission_{number}/"), b"")
    for source in (export.parent, archive):
        result = gather([source], tmp_path / "work")
        assert [(e.student, e.problem) for e in result.entries] == [
            ("Gil_Hart_501", "handed in no notebook or script to grade: submission_1001 (a folder with no file in it)"),
            ("Ida_Jones_502", "handed in no notebook or script to grade: submission_1002 (a folder with no file in it)")
        ], source
        assert result.entries[0].recorded.startswith("2026-11-20T21:10:05"), result.entries[0]
        assert result.problems == () and any("gradescope worksheet, 2 students" in n for n in result.notes), result


def test_notebook_is_preferred_to_a_newer_helper_script(tmp_path: Path) -> None:
    write(tmp_path / "subs" / "alice" / "lab.ipynb", notebook("alice"), mtime=1_000_000)
    write(tmp_path / "subs" / "alice" / "helpers.py", b"x = 1\n", mtime=2_000_000)
    result = gather([tmp_path / "subs"], tmp_path / "work")
    assert by_student(result)["alice"].path.name == "lab.ipynb"
    assert "(a notebook is preferred to a .py script)" in result.notes[0]
    assert "2 files, graded" in result.notes[0]


def test_plain_files_are_named_by_their_stem(tmp_path: Path) -> None:
    alice = write(tmp_path / "alice.ipynb", notebook("alice"))
    bob = write(tmp_path / "b o b.py", b"x = 1\n")
    result = gather([alice, str(bob)], tmp_path / "work")
    assert [(e.student, e.convention, e.path) for e in result.entries] == [
        ("alice", "file", alice), ("b_o_b", "file", bob)]


def test_glob_pattern_is_expanded_and_keeps_student_folders(tmp_path: Path) -> None:
    write(tmp_path / "subs" / "alice" / "lab.ipynb", notebook("alice"))
    write(tmp_path / "subs" / "bob" / "lab.ipynb", notebook("bob"))
    write(tmp_path / "subs" / "bob" / "notes.pdf", b"%PDF")
    result = gather([str(tmp_path / "subs" / "*" / "*.ipynb"), str(tmp_path / "nothing-*.ipynb")],
                    tmp_path / "work")
    assert [(e.student, e.convention) for e in result.entries] == [("alice", "folder"), ("bob", "folder")]
    assert result.problems == (f"{tmp_path / 'nothing-*.ipynb'}: no file or folder matches this pattern",)


def test_the_same_file_reached_twice_is_taken_once(tmp_path: Path) -> None:
    alice = write(tmp_path / "subs" / "alice.ipynb", notebook("alice"))
    result = gather([tmp_path / "subs", alice, str(tmp_path / "subs" / "*.ipynb")], tmp_path / "work")
    assert [(e.student, e.others) for e in result.entries] == [("alice", ())]


def test_missing_path_is_a_problem(tmp_path: Path) -> None:
    result = gather([tmp_path / "nope.ipynb"], tmp_path / "work")
    assert result.entries == () and result.problems == (f"{tmp_path / 'nope.ipynb'}: no such file or folder",)


# --- wrapped and nested archives ----------------------------------------------------------------------

def test_zip_of_a_folder_is_unwrapped(tmp_path: Path) -> None:
    plain = make_zip(tmp_path / "submissions.zip", {
        "submissions/alice.ipynb": notebook("alice"), "submissions/bob.ipynb": notebook("bob")})
    deep = make_zip(tmp_path / "course.zip", {
        "course/hw1/carol/lab.ipynb": notebook("carol"), "course/hw1/dan/lab.ipynb": notebook("dan"),
        "__MACOSX/course/hw1/carol/._lab.ipynb": b"\0"})
    result = gather([plain, deep], tmp_path / "work")
    assert [(e.student, e.convention) for e in result.entries] == [
        ("alice", "file"), ("bob", "file"), ("carol", "folder"), ("dan", "folder")]


def test_zip_upload_inside_a_canvas_export_belongs_to_that_student(tmp_path: Path) -> None:
    upload = make_zip(tmp_path / "upload.zip", {
        "taoistic/taoistic.ipynb": notebook("lee zipped"),
        "__MACOSX/taoistic/._taoistic.ipynb": b"\0\0",
        "taoistic/data.csv": b"1,2\n"})
    export = make_zip(tmp_path / "export.zip", {
        "leeann_34567_89012_submission.zip": upload.read_bytes(),
        "smithjohn_12345_67890_taoistic.ipynb": notebook("smith")})
    result = gather([export], tmp_path / "work")
    lee = by_student(result)["leeann_34567"]
    assert lee.convention == "canvas"
    assert lee.source == f"{export}:leeann_34567_89012_submission.zip:taoistic/taoistic.ipynb"
    assert who(lee) == "WHO = 'lee zipped'"
    assert result.problems == ()


def test_export_zipped_inside_a_zip_is_read_as_an_export(tmp_path: Path) -> None:
    inner = make_zip(tmp_path / "section1.zip", {"smithjohn_12345_67890_lab.ipynb": notebook("smith"),
                                                 "doejane_23456_78901_lab.ipynb": notebook("doe")})
    outer = make_zip(tmp_path / "all.zip", {"section1.zip": inner.read_bytes(),
                                            "bob.zip": make_zip(tmp_path / "b.zip", {
                                                "lab.ipynb": notebook("bob")}).read_bytes()})
    result = gather([outer], tmp_path / "work")
    assert [(e.student, e.convention) for e in result.entries] == [
        ("bob", "file"), ("doejane_23456", "canvas"), ("smithjohn_12345", "canvas")]


def test_zip_nested_two_levels_is_a_problem_not_opened(tmp_path: Path) -> None:
    deepest = make_zip(tmp_path / "deepest.zip", {"lab.ipynb": notebook("deep")})
    middle = make_zip(tmp_path / "middle.zip", {"deepest.zip": deepest.read_bytes(), "ok.ipynb": notebook("ok")})
    export = make_zip(tmp_path / "export.zip", {"smithjohn_12345_67890_middle.zip": middle.read_bytes()})
    result = gather([export], tmp_path / "work")
    assert who(by_student(result)["smithjohn_12345"]) == "WHO = 'ok'"
    assert result.problems == (f"{export}:smithjohn_12345_67890_middle.zip:deepest.zip: "
                               "zip nested more than 1 level deep, not opened",)


# --- hostile and broken archives ----------------------------------------------------------------------

def test_zip_slip_members_are_problems_and_nothing_lands_outside_workdir(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {
        "../evil.ipynb": notebook("evil"),
        "/tmp/evil-absolute.ipynb": notebook("evil"),
        "alice/../../evil2.ipynb": notebook("evil"),
        "..\\evil3.ipynb": notebook("evil"),
        "smithjohn_12345_67890_lab.ipynb": notebook("smith"),
    })
    work = tmp_path / "deep" / "work"
    result = gather([export], work)
    assert [e.student for e in result.entries] == ["smithjohn_12345"]
    assert len(result.problems) == 4
    assert all("unsafe member path (absolute or '..'), not extracted" in p for p in result.problems)
    assert not list(tmp_path.rglob("evil*"))
    assert not Path("/tmp/evil-absolute.ipynb").exists()


def test_zip_bomb_member_is_an_unreadable_row_not_a_crash(tmp_path: Path) -> None:
    export = tmp_path / "bomb.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("smithjohn_12345_67890_lab.ipynb", notebook("smith"))
        with archive.open("doejane_23456_78901_lab.ipynb", "w", force_zip64=True) as member:
            zeros = bytes(1024 * 1024)
            for _ in range((intake.MAX_MEMBER_BYTES >> 20) + 1):
                member.write(zeros)
    result = gather([export], tmp_path / "work")
    assert [e.student for e in result.entries] == ["doejane_23456", "smithjohn_12345"]
    assert result.problems == ()
    megabytes = (intake.MAX_MEMBER_BYTES >> 20) + 1
    assert result.entries[0].problem.startswith(f"{megabytes}.0 MB uncompressed, over the "
                                                f"{intake.MAX_MEMBER_BYTES >> 20} MB a submission may have")
    assert not result.entries[1].problem
    assert not list((tmp_path / "work").rglob("doejane*"))


def test_member_that_understates_its_size_is_an_unreadable_row_not_a_crash(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {"smithjohn_12345_67890_lab.ipynb": notebook("smith")})
    data = bytearray(export.read_bytes())
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 10)       # uncompressed size in the central directory
    export.write_bytes(bytes(data))
    result = gather([export], tmp_path / "work")
    [entry] = result.entries
    assert entry.student == "smithjohn_12345" and entry.problem.startswith("could not be extracted (")
    assert result.problems == ()


def test_too_many_members_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake, "MAX_MEMBERS", 3)
    export = make_zip(tmp_path / "export.zip", {f"s{i}.ipynb": notebook(str(i)) for i in range(4)})
    result = gather([export], tmp_path / "work")
    assert result.entries == ()
    assert result.problems == (f"{export}: 4 notebook, script and zip members, more than the 3 one archive may "
                               "hold; archive not read",)


def test_corrupt_zips_are_problems_and_the_rest_is_still_read(tmp_path: Path) -> None:
    garbage = write(tmp_path / "garbage.zip", b"PK\x03\x04 this is not really a zip")
    truncated = canvas_export(tmp_path)
    write(tmp_path / "truncated.zip", truncated.read_bytes()[:200])
    alice = write(tmp_path / "alice.ipynb", notebook("alice"))
    result = gather([garbage, tmp_path / "truncated.zip", alice], tmp_path / "work")
    assert [e.student for e in result.entries] == ["alice"]
    assert [p.split(": ", 1)[1].split(" (")[0] for p in result.problems] == [
        "not a readable zip archive", "not a readable zip archive"]


def test_unusable_files_are_reported_and_clear_non_submissions_are_not(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {
        "smithjohn_12345_67890_lab.ipynb": b"",
        "doejane_23456_78901_lab.ipynb.txt": notebook("doe"),
        "leeann_34567_89012_lab.rar": b"Rar!",
        "kimsam_45678_90123_lab.pdf": b"%PDF",
        "kimsam_45678_90124_plot.png": b"\x89PNG",
        "parkjo_56789_90125_lab.ipynb": notebook("park"),
        "parkjo_56789_90126_lab.pdf": b"%PDF",
        "parkjo_56789_90127_plot.png": b"\x89PNG",
        "grades.csv": b"a,b\n",
    })
    result = gather([export], tmp_path / "work")
    entries = {e.student: e for e in result.entries}
    assert list(entries) == ["doejane_23456", "kimsam_45678", "leeann_34567", "parkjo_56789", "smithjohn_12345"]
    assert entries["smithjohn_12345"].problem == "empty .ipynb file, nothing to grade"   # a row at zero, saying why
    assert not entries["parkjo_56789"].problem
    # an LMS's student who handed in nothing gradable keeps a row at zero too, naming each file and why
    assert entries["kimsam_45678"].problem == (
        "handed in no notebook or script to grade: kimsam_45678_90123_lab.pdf (not a notebook); "
        "kimsam_45678_90124_plot.png (not a notebook)")
    assert entries["leeann_34567"].problem == (
        "handed in no notebook or script to grade: leeann_34567_89012_lab.rar (.rar archives are not read "
        "(only .zip); extract it and grade the folder)")
    assert entries["doejane_23456"].problem.startswith(
        "handed in no notebook or script to grade: doejane_23456_78901_lab.ipynb.txt (looks like a notebook")
    # Their rows say why, so none of their files is also "skipped" (the batch counted those students twice).
    assert result.problems == ()


def test_a_given_file_that_is_not_a_notebook_is_a_problem(tmp_path: Path) -> None:
    pdf = write(tmp_path / "alice.pdf", b"%PDF")
    result = gather([pdf], tmp_path / "work")
    assert result.problems == (f"{pdf}: not a notebook (.pdf); expected .ipynb, .py or .zip",)


# --- identities ---------------------------------------------------------------------------------------

def test_ids_shared_by_two_conventions_get_a_suffix_and_a_note(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {"alice_12345_67890_lab.ipynb": notebook("canvas alice")})
    plain = write(tmp_path / "loose" / "alice_12345.ipynb", notebook("plain alice"))
    write(tmp_path / "subs" / "bob" / "lab.ipynb", notebook("folder bob"))
    write(tmp_path / "more" / "bob.ipynb", notebook("file bob"))
    write(tmp_path / "more" / "bob-2.ipynb", notebook("the real bob-2"))
    result = gather([export, plain, tmp_path / "subs", tmp_path / "more"], tmp_path / "work")
    students = {e.student: (e.convention, who(e)) for e in result.entries}
    assert students == {
        "alice_12345": ("canvas", "WHO = 'canvas alice'"),
        "alice_12345-2": ("file", "WHO = 'plain alice'"),
        "bob": ("folder", "WHO = 'folder bob'"),
        "bob-2": ("file", "WHO = 'the real bob-2'"),
        "bob-3": ("file", "WHO = 'file bob'"),
    }
    assert result.notes == (
        f"alice_12345-2: its file submission ({plain}) has the same id as the canvas one "
        f"({export}:alice_12345_67890_lab.ipynb); graded as alice_12345-2",
        f"bob-3: its file submission ({tmp_path / 'more' / 'bob.ipynb'}) has the same id as the folder one "
        f"({tmp_path / 'subs' / 'bob' / 'lab.ipynb'}); graded as bob-3",
    )


def test_ids_are_file_name_safe(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "moodle.zip", {
        "José Núñez-O'Brien_105_assignsubmission_file_/lab.ipynb": notebook("jose"),
        "张伟_106_assignsubmission_file_/lab.ipynb": notebook("zhang"),
        "李娜/lab.ipynb": notebook("li"),
    })
    ids = [e.student for e in gather([export], tmp_path / "work").entries]
    assert ids == ["Jose_Nunez-O_Brien_105", "张伟_106", "李娜"]
    assert all(re.fullmatch(r"[\w.-]+", i) for i in ids)


def test_a_name_in_letters_without_an_ascii_form_keeps_them(tmp_path: Path) -> None:
    """Moodle's '李 华_2110' was the id '2110' (CJK dropped, the participant number left): the TA's rows named
    nobody. The id keeps the letters; a gradebook that has rows under '2110' (and none under the new id) keeps
    them, with a note, as for the transliteration of ø."""
    export = make_zip(tmp_path / "moodle.zip", {
        "李 华_2110_assignsubmission_file_/lab.ipynb": notebook("li"),
        "Иван Петров_2111_assignsubmission_file_/lab.ipynb": notebook("ivan"),
        "नेहा शर्मा_2112_assignsubmission_file_/lab.ipynb": notebook("neha"),
    })
    entries = gather([export], tmp_path / "work").entries
    assert [e.student for e in entries] == ["Иван_Петров_2111", "नेहा_शर्मा_2112", "李_华_2110"]
    assert [e.former for e in entries] == ["2111", "2112", "2110"]
    kept, notes = intake.keep_former_ids(entries, {"2110", "李_华_2110x"})
    assert [e.student for e in kept] == ["Иван_Петров_2111", "नेहा_शर्मा_2112", "2110"]
    assert notes == [f"2110: {export}:李 华_2110_assignsubmission_file_/lab.ipynb keeps the id its gradebook rows "
                     f"have (this grader would now name it 李_华_2110)"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_ids_are_safe_stable_and_unchanged_where_nothing_was_dropped(name: str) -> None:
    """Any name: a non-empty id of letters, digits, marks and [._-] (no separator, space, control or format
    character), at most 100 UTF-8 bytes, the same each time; a name whose every character folds to ASCII or
    is no letter keeps the id graders gave it before (ascii_id)."""
    import unicodedata
    ident = intake.safe_id(name)
    assert ident == intake.safe_id(name) and ident and len(ident.encode("utf-8")) <= 100
    assert all(c in "._-" or c.isascii() and c.isalnum() or unicodedata.category(c)[0] in "LMN" for c in ident)
    assert not ident.startswith(("_", ".", "-"))
    letters = unicodedata.normalize("NFC", name.translate(intake.LETTERS))
    if not any(not c.isascii() and not unicodedata.normalize("NFKD", c).encode("ascii", "ignore")
               and unicodedata.category(c)[0] in "LN" for c in letters):
        assert ident == intake.ascii_id(name)


# --- determinism and speed ----------------------------------------------------------------------------

def test_same_input_gives_the_same_intake(tmp_path: Path) -> None:
    inputs = [canvas_export(tmp_path), make_zip(tmp_path / "moodle.zip", {
        "John Smith_101_assignsubmission_file_/lab.ipynb": notebook("john")})]
    write(tmp_path / "subs" / "alice" / "a.ipynb", notebook("a"), mtime=1_000_000)
    write(tmp_path / "subs" / "alice" / "b.ipynb", notebook("b"), mtime=1_000_000)
    inputs.append(tmp_path / "subs")

    def relative(result: Intake, work: Path) -> Intake:
        entries = tuple(dataclasses.replace(e, path=e.path.relative_to(work) if e.path.is_relative_to(work)
                                            else e.path) for e in result.entries)
        return dataclasses.replace(result, entries=entries)

    first = gather(inputs, tmp_path / "w1")
    again = gather(inputs, tmp_path / "w1")
    elsewhere = gather(inputs, tmp_path / "w2")
    assert first == again
    assert relative(first, tmp_path / "w1") == relative(elsewhere, tmp_path / "w2")
    assert len(first.entries) == 5 and len(first.notes) == 3


def test_three_thousand_students_are_taken_each_once(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    data = notebook("x")
    for i in range(3000):
        (folder / f"student{i:04d}_{10000 + i}_{50000 + i}_taoistic.ipynb").write_bytes(data)
    for i in range(0, 3000, 10):   # every tenth student resubmitted once
        (folder / f"student{i:04d}_{10000 + i}_{90000 + i}_taoistic-1.ipynb").write_bytes(data)
    result = gather([folder], tmp_path / "work")     # how fast: bench/, not an assertion on a busy machine
    assert len(result.entries) == 3000 and len(result.notes) == 300


# --- one rule picks a student's notebook, for a class and for one upload -----------------------------------

def defining(*names: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells += [nbformat.v4.new_code_cell(f"def {name}(state):\n    return state") for name in names]
    return nbformat.writes(nb).encode("utf-8")


def count_defined(path: Path) -> int:
    """What a rubric grading move_dir and find_tile would count (grading.defines_counter does it for real)."""
    try:
        source = path.read_text(encoding="utf-8")
    except OSError:
        return -1
    return sum(f"def {name}(" in source for name in ("move_dir", "find_tile"))


def test_the_notebook_defining_what_is_graded_wins_over_a_newer_scratch(tmp_path: Path) -> None:
    export = make_zip(tmp_path / "export.zip", {
        "kimsam_45678_90123_lab.ipynb": (defining("move_dir", "find_tile"), OLD),
        "kimsam_45678_90124_Untitled.ipynb": (defining("scratch"), NEWEST),
    })
    result = gather([export], tmp_path / "work", count_defined)
    kim = by_student(result)["kimsam_45678"]
    assert kim.source.endswith("_lab.ipynb")
    assert "(defines the most graded names, 2 of them)" in result.notes[0]
    # without a rubric to count with, the newest file wins, as before
    assert by_student(gather([export], tmp_path / "plain"))["kimsam_45678"].source.endswith("_Untitled.ipynb")



def test_a_copy_of_the_template_beside_the_notebook_is_not_graded(tmp_path: Path) -> None:
    """A Moodle student who uploaded their notebook and the template (its functions stubs: "your code here") at
    the same time: the old count tied them (both define every graded name) and the later name, the template's,
    was graded at zero. The rubric's own counter counts only functions with a body."""
    from grader.judge.grading import defines_counter
    from grader.rubric.schema import load_rubric
    repo = Path(__file__).resolve().parents[1]
    assignment = repo / "assignments" / "taoistic-search"
    folder = "Ada Lovelace_2101_assignsubmission_file_"
    export = make_zip(tmp_path / "moodle.zip", {
        f"{folder}/lab.ipynb": ((assignment / "submissions" / "correct.ipynb").read_bytes(), OLD),
        f"{folder}/zz_template.ipynb": ((assignment / "template.ipynb").read_bytes(), OLD),
    })
    counter = defines_counter(load_rubric(repo / "rubrics" / "taoistic-search.yaml"))
    result = gather([export], tmp_path / "work", counter)
    [ada] = result.entries
    assert ada.source.endswith("/lab.ipynb") and ada.others[0].endswith("/zz_template.ipynb")
    assert "defines the most graded names" in result.notes[0]

def test_a_canvas_resubmission_still_beats_the_count(tmp_path: Path) -> None:
    """The student's own last upload is their intent, even if it defines less (a broken function is theirs)."""
    export = make_zip(tmp_path / "export.zip", {
        "kimsam_45678_90123_lab.ipynb": (defining("move_dir", "find_tile"), NEW),
        "kimsam_45678_90124_lab-1.ipynb": (defining("move_dir"), OLD),
    })
    kim = by_student(gather([export], tmp_path / "work", count_defined))["kimsam_45678"]
    assert kim.source.endswith("_lab-1.ipynb")


@pytest.mark.parametrize("files", [
    {"lab.ipynb": (defining("move_dir"), 1000), "scratch.ipynb": (defining(), 3000), "lab.py": (b"x = 1\n", 4000)},
    {"a.ipynb": (defining("move_dir"), 2000), "b.ipynb": (defining("find_tile"), 2000)},
    {"old.ipynb": (defining("move_dir", "find_tile"), 1000), "new.ipynb": (defining("move_dir", "find_tile"), 5000)},
    {"only.py": (b"def move_dir(s):\n    return s\n", 1000), "empty.ipynb": (b"", 9000)},
])
def test_one_upload_and_a_class_folder_pick_by_the_same_rule(tmp_path: Path, files: dict) -> None:
    upload = tmp_path / "upload"
    paths = [write(upload / name, data, mtime) for name, (data, mtime) in files.items()]
    chosen, others, note = intake.choose_upload(paths, count_defined)
    assert chosen is not None and sorted(others) == sorted(p for p in paths if p != chosen)
    class_folder = tmp_path / "class"
    for name, (data, mtime) in files.items():
        write(class_folder / "student" / name, data, mtime)
    gathered = gather([class_folder], tmp_path / "work", count_defined)
    assert by_student(gathered)["student"].path.name == chosen.name
    [class_note] = gathered.notes
    assert [step for step in intake.CHOICE_RULE if step in note] == \
        [step for step in intake.CHOICE_RULE if step in class_note] != []


def test_an_upload_without_a_notebook_has_nothing_to_choose(tmp_path: Path) -> None:
    assert intake.choose_upload([write(tmp_path / "notes.txt", b"hi")]) == (None, [], "")


def test_ascii_unsafe_is_every_ascii_character_an_id_does_not_keep_and_nothing_else() -> None:
    """ASCII_UNSAFE is spelt as ranges of ASCII (a negated class over all of Unicode cost 2.5 ms of every start-up
    to compile): over every code point it matches exactly the ASCII characters outside [A-Za-z0-9._-]."""
    import string
    from grader.intake.gather import ASCII_UNSAFE
    every = "".join(map(chr, range(0x110000)))
    kept = set(string.ascii_letters + string.digits + "._-")
    assert set("".join(ASCII_UNSAFE.findall(every))) == {chr(code) for code in range(128)} - kept


def test_a_results_folders_mark_is_read_one_way_and_a_damaged_one_is_none(tmp_path: Path) -> None:
    """The batch's claim, the class outputs' template guess and merge read `.assignment` three ways (one took a
    number for an assignment, another refused it); a mark is a JSON object with a non-empty string `assignment`."""
    from grader.intake.gather import RESULTS_MARK, ResultsMark, read_mark
    assert read_mark(tmp_path) is None
    for damaged in ("", "{", "[]", '{"assignment": 5}', '{"assignment": ""}', '{"rubric": "r.yaml"}'):
        (tmp_path / RESULTS_MARK).write_text(damaged, encoding="utf-8")
        assert read_mark(tmp_path) is None, damaged
    (tmp_path / RESULTS_MARK).write_text('{"assignment": "lab", "rubric": 3}', encoding="utf-8")
    assert read_mark(tmp_path) == ResultsMark("lab", "")
    (tmp_path / RESULTS_MARK).write_text('{"assignment": "lab", "rubric": "rubrics/lab.yaml"}', encoding="utf-8")
    assert read_mark(tmp_path) == ResultsMark("lab", "rubrics/lab.yaml")
