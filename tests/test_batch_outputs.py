"""What a batch leaves behind stands on its own: results with absolute paths and a copy of the graded notebook,
so feedback reports work from any folder, after a zip intake, and once the submissions are gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from testclock import within

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=within(300), env={**os.environ, "COLUMNS": "160"})


def test_reports_find_the_students_code_after_a_zip_intake_from_another_folder(tmp_path: Path) -> None:
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.write(EXAMPLES / "move-dir-transposed.ipynb", "smithjohn_12345_67890_lab.ipynb")
        archive.write(EXAMPLES / "correct.ipynb", "doejane_LATE_22345_67891_lab.ipynb")
    here = tmp_path / "grading"
    here.mkdir()
    done = grader("grade", "../canvas.zip", "--rubric", str(RUBRIC), "--out", "results", "--cache",
                  str(tmp_path / "cache"), "--quiet", cwd=here)
    assert done.returncode == 0, done.stderr
    result = json.loads((here / "results" / "smithjohn_12345.json").read_text(encoding="utf-8"))
    assert Path(result["path"]).is_absolute()
    copy = here / "results" / result["notebook"]
    assert copy.is_file() and copy.name.startswith(result["sha256"])
    # Another machine: the results folder moved, the submissions and the intake's temporary folder gone.
    moved = tmp_path / "elsewhere" / "results"
    shutil.move(str(here / "results"), moved)
    export.unlink()
    elsewhere = tmp_path / "another"
    elsewhere.mkdir()
    done = grader("report", str(moved), "--out", "feedback", "--annotated", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "feedback" / "smithjohn_12345.notebook.html").is_file()
    page = (elsewhere / "feedback" / "smithjohn_12345.html").read_text(encoding="utf-8")
    assert "<h3>Your code</h3>" in page and "move_dir" in page     # the student's own code of the failing exercise


def test_an_empty_notebook_is_a_row_counted_unreadable_not_skipped(tmp_path: Path, grader_cache: Path) -> None:
    from grader.run.batch import grade_batch
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("emptyeve_32345_67892_lab.ipynb", b"")
        archive.write(EXAMPLES / "correct.ipynb", "smithjohn_12345_67890_lab.ipynb")
    batch = grade_batch([export], RUBRIC, tmp_path / "out", jobs=1, cache=grader_cache)
    assert (batch.graded, batch.unreadable, batch.skipped) == (1, 1, 0)
    rows = {line.split(",")[0]: line for line in (tmp_path / "out" / "gradebook.csv").read_text().splitlines()}
    assert ",unreadable," in rows["emptyeve_32345"] and ",graded," in rows["smithjohn_12345"]
    result = json.loads((tmp_path / "out" / "emptyeve_32345.json").read_text(encoding="utf-8"))
    assert result["state"] == "unreadable" and "empty .ipynb file" in result["warnings"][0]["text"]
    again = grade_batch([export], RUBRIC, tmp_path / "out", jobs=1, cache=grader_cache)
    assert (again.graded, again.unreadable, again.unchanged) == (0, 0, 2)



def test_an_lms_student_who_handed_in_only_a_pdf_keeps_a_row_at_zero(tmp_path: Path, grader_cache: Path) -> None:
    """Old code: the student was `skipped` with no row, so an LMS import of gradebook.csv left their grade as it was."""
    from grader.run.batch import grade_batch
    export = tmp_path / "canvas.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("pdfpat_42345_67893_lab.pdf", b"%PDF-1.7")
        archive.write(EXAMPLES / "correct.ipynb", "smithjohn_12345_67890_lab.ipynb")
    batch = grade_batch([export], RUBRIC, tmp_path / "out", jobs=1, cache=grader_cache)
    assert (batch.graded, batch.unreadable) == (1, 1)
    rows = {line.split(",")[0]: line for line in (tmp_path / "out" / "gradebook.csv").read_text().splitlines()}
    assert ",unreadable," in rows["pdfpat_42345"] and ",graded," in rows["smithjohn_12345"]
    result = json.loads((tmp_path / "out" / "pdfpat_42345.json").read_text(encoding="utf-8"))
    assert result["state"] == "unreadable" and result["total"] == 0
    assert "handed in no notebook or script to grade: pdfpat_42345_67893_lab.pdf (not a notebook)" in \
        result["warnings"][0]["text"]
    again = grade_batch([export], RUBRIC, tmp_path / "out", jobs=1, cache=grader_cache)
    assert (again.graded, again.unreadable, again.unchanged) == (0, 0, 2)

def test_report_says_which_students_notebooks_it_could_not_find(tmp_path: Path, capsys) -> None:
    from grader.cli import main
    from grader.store.results import ExerciseResult, SubmissionResult, write_json
    result = SubmissionResult(submission="alice", path=str(tmp_path / "gone.ipynb"), sha256="a" * 64,
                              rubric="taoistic-search", rubric_sha256="r", grader_version="0", isolation="none",
                              total=0.0, max_total=2.0,
                              exercises=(ExerciseResult("move_dir", "Move", 0.0, 2.0, ()),))
    write_json(result, tmp_path / "results")
    assert main(["report", str(tmp_path / "results"), "--out", str(tmp_path / "feedback")]) == 0
    assert "the notebook of 1 student(s) was not found" in capsys.readouterr().err


def test_report_does_not_send_the_ta_looking_for_an_unreadable_notebook(tmp_path: Path, capsys) -> None:
    """An empty or broken file has no code to show: its report says why it is unreadable, and the TA is not told
    its notebook "was not found" (give --notebooks FOLDER) after a zip intake that had it."""
    from grader.cli import main
    from grader.store.results import ExerciseResult, SubmissionResult, write_json
    result = SubmissionResult(submission="eve", path=str(tmp_path / "canvas.zip!eve.ipynb"), sha256="a" * 64,
                              rubric="taoistic-search", rubric_sha256="r", grader_version="0", isolation="none",
                              total=0.0, max_total=2.0, state="unreadable",
                              exercises=(ExerciseResult("move_dir", "Move", 0.0, 2.0, ()),))
    write_json(result, tmp_path / "results")
    assert main(["report", str(tmp_path / "results"), "--out", str(tmp_path / "feedback")]) == 0
    assert "was not found" not in capsys.readouterr().err


def test_cases_not_judged_are_told_apart_a_rubrics_crash_from_a_busy_machine() -> None:
    """`grader grade` names the two apart (fix the rubric and --force; the next run grades again): a busy case is
    not also counted as a grader problem, and a case that was judged is neither."""
    from grader.store import status
    from grader.store.results import CaseResult, ExerciseResult, SubmissionResult, not_judged

    def case(n: int, state: str, reason: str = "") -> CaseResult:
        return CaseResult(id=f"c{n}", status=state, visibility="public", message="", reason=reason)

    cases = (case(1, "problem", status.GRADER_PROBLEM), case(2, "problem", status.BUSY), case(3, "pass"),
             case(4, "problem", status.BUSY), case(5, "error", status.BUDGET), case(6, "problem"))
    exercise = ExerciseResult(id="ex", title="", score=0.0, max_score=6.0, cases=cases)
    result = SubmissionResult(submission="s", path="s.ipynb", sha256="0" * 64, rubric="r", rubric_sha256="1" * 64,
                              grader_version="0", isolation="none", total=0.0, max_total=6.0,
                              exercises=(exercise, exercise))
    assert not_judged(result) == (4, 4)


def test_a_class_output_of_results_that_cannot_be_read_names_them_not_no_results(bundled, tmp_path: Path,
                                                                                capsys) -> None:
    """The result files copied without the folder's shared/ store (and no gradebook): every one refers to shared
    values that are gone. class-report said "no results in this folder (grade with --out ... first)" of a folder
    of 14 results; it names each unreadable file and why."""
    import shutil
    from grader.cli import main
    copy = tmp_path / "copied"
    copy.mkdir()
    for path in bundled.out.glob("*.json"):
        shutil.copy(path, copy / path.name)
    assert main(["class-report", str(copy), "-o", str(tmp_path / "class.html"), "--no-similarity"]) == 1
    said = capsys.readouterr().err
    count = len(list(copy.glob("*.json")))
    assert f"{copy}: none of its {count} result files could be read:" in said
    assert "correct.json: not readable: " in said and "lost a shared value" in said
    assert "no results in this folder" not in said


def test_a_batchs_results_gradebook_and_gradescope_files_are_the_graders_alone(tmp_path: Path, grader_cache: Path
                                                                                ) -> None:
    """Without Landlock a sandbox of rlimits mode runs as an unused uid on the host's filesystem: results, the
    gradebook and the Gradescope scores made by the umask's rule (0755/0644) were readable by every student's code
    (and the gradebook read-lockable). Old code: the folders were 0755 and the gradebook 0644."""
    import stat
    from testclock import within
    from grader.intake.gather import RESULTS_MARK
    from grader.run.batch import grade_batch
    old = os.umask(0o022)
    try:
        out, books, scores = tmp_path / "out", tmp_path / "books", tmp_path / "scores"
        out.mkdir(mode=0o755)    # a results folder an earlier run made readable
        books.mkdir(mode=0o755)
        (out / RESULTS_MARK).write_text(json.dumps({"assignment": "taoistic-search"}), encoding="utf-8")
        (out / "earlier.json").write_text("{}", encoding="utf-8")
        shared = tmp_path / "shared"   # a folder of others given as --gradescope: left as it is
        shared.mkdir(mode=0o755)
        (shared / "theirs.txt").write_text("", encoding="utf-8")
        book = books / "class.sqlite"
        batch = grade_batch([EXAMPLES / "correct.ipynb"], RUBRIC, out, jobs=1, cache=grader_cache, gradebook=book,
                            gradescope=scores)
    finally:
        os.umask(old)
    assert batch.graded == 1
    again = grade_batch([EXAMPLES / "correct.ipynb"], RUBRIC, tmp_path / "out2", jobs=1, cache=grader_cache,
                        gradescope=shared)
    assert again.graded == 1 and stat.S_IMODE(shared.stat().st_mode) == 0o755
    for folder in (out, scores, tmp_path / "out2"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for each in books.iterdir():   # the database and any -wal/-shm SQLite left beside it
        assert stat.S_IMODE(each.stat().st_mode) & 0o077 == 0, each
    assert book.is_file()
    if os.geteuid() == 0:   # as a sandbox's unused uid: nothing of the batch opens
        result = next(out.glob("correct*.json"))
        for path in (result, book, out / "earlier.json"):
            done = subprocess.run(["cat", str(path)], user=60999, group=60999, extra_groups=[], capture_output=True,
                                  text=True, timeout=within(120), cwd="/")
            assert done.returncode != 0 and "Permission denied" in done.stderr, (path, done.stderr)


def test_a_result_records_the_real_path_of_its_file_or_the_archive_it_came_from(tmp_path: Path) -> None:
    """A job's path is resolved once, when the job is made: its result records it as it is (a link made later
    changes nothing); any other path is resolved. An archive member's records the archive, never the batch's
    temporary folder it was extracted into."""
    from grader.run.batch import _recorded_path
    real = tmp_path / "class"
    real.mkdir()
    (real / "lab.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "link").symlink_to(real)
    extracted = tmp_path / "intake"
    (extracted / "a").mkdir(parents=True)
    assert _recorded_path(tmp_path / "link" / "lab.ipynb", "link/lab.ipynb", extracted) == str(real / "lab.ipynb")
    job_path = str((tmp_path / "link" / "lab.ipynb").resolve())
    assert _recorded_path(job_path, "link/lab.ipynb", extracted, resolved=True) == str(real / "lab.ipynb")
    member = str(extracted / "a" / "lab.ipynb")
    for resolved in (False, True):
        assert _recorded_path(member, "/course/export.zip:lab.ipynb", extracted, resolved=resolved) == \
            "/course/export.zip:lab.ipynb"
