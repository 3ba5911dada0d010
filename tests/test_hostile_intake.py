"""A submission file too large to be code is refused unread, with one line saying why; the class goes on.

Real files graded by the real CLI in a subprocess. The large file is sparse (its size costs no disk): a notebook
start, then zeros up to 200 MB. Read whole, it cost a worker twice its size in memory and was copied whole into
the results folder (a 400 MB notebook of saved output took a worker to 850 MB).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grader.intake.notebook import MAX_SUBMISSION_BYTES
from grader.rubric.lateness import HandIn, LatePolicy, assess
from testclock import within

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


def test_a_submission_over_the_size_limit_is_unreadable_and_the_others_are_graded(tmp_path, grader_cache):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(CORRECT, folder / "alice.ipynb")
    huge = folder / "mallory.ipynb"
    with huge.open("wb") as stream:
        stream.write(b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "x": "')
        stream.truncate(MAX_SUBMISSION_BYTES * 2)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--rubric", str(RUBRIC),
                           "--out", str(out), "--jobs", "1", "--cache", str(grader_cache)],
                          capture_output=True, text=True, cwd=REPO, timeout=within(600))
    assert "Traceback" not in done.stderr, done.stderr
    alice = json.loads((out / "alice.json").read_text())
    mallory = json.loads((out / "mallory.json").read_text())
    assert alice["total"] == alice["max_total"]
    assert mallory["total"] == 0 and mallory["state"] == "unreadable"
    assert any(f"over the {MAX_SUBMISSION_BYTES >> 20} MB a submission may have" in str(w)
               for w in mallory["warnings"]), mallory["warnings"]
    kept = [path.stat().st_size for path in (out / "notebooks").iterdir()]
    assert kept and max(kept) < MAX_SUBMISSION_BYTES   # the correct notebook's copy, not the huge file


def _zipped_notebook_of(path: Path, member: str, megabytes: int) -> Path:
    """A zip holding the correct notebook with a saved output of `megabytes` MB, streamed (zeros compress well)."""
    import zipfile

    nb = json.loads(CORRECT.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "saved-output", "metadata": {},
                        "source": "print('0' * N)", "outputs": [
                            {"output_type": "stream", "name": "stdout", "text": "@"}]})
    head, tail = json.dumps(nb).encode().split(b'"@"')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open(member, "w", force_zip64=True) as stream:
            stream.write(head + b'"')
            for _ in range(megabytes):
                stream.write(b"0" * (1024 * 1024))
            stream.write(b'"' + tail)
    return path


def test_a_zip_member_is_held_to_the_same_size_rule_as_a_file_and_refused_by_name(tmp_path):
    """One rule for every submission, a file or a zip member (uncompressed): at most MAX_SUBMISSION_BYTES. A
    notebook of 60 MB of saved output is graded from a zip as it is from a folder (before, the zip's own 50 MB
    member cap refused it); one over the rule is its student's row at zero, saying which member and why."""
    from grader.intake.gather import gather

    assert MAX_SUBMISSION_BYTES > 61 * 1024 * 1024
    export = _zipped_notebook_of(tmp_path / "export.zip", "smithjohn_12345_67890_lab.ipynb", 60)
    [entry] = gather([export], tmp_path / "work").entries
    assert entry.problem == "" and entry.path.stat().st_size > 60 * 1024 * 1024

    over = (MAX_SUBMISSION_BYTES >> 20) + 1
    export = _zipped_notebook_of(tmp_path / "over.zip", "doejane_23456_78901_lab.ipynb", over)
    [entry] = gather([export], tmp_path / "work2").entries
    assert entry.source.endswith("over.zip:doejane_23456_78901_lab.ipynb")
    assert f"over the {MAX_SUBMISSION_BYTES >> 20} MB a submission may have" in entry.problem, entry.problem
    assert not list((tmp_path / "work2").rglob("doejane*"))


def _overlapping_zip(names: list[str], kernel_bytes: int) -> bytes:
    """A zip bomb of overlapping members (Fifield's "quoted overlap"): member i's deflate stream is a stored block
    quoting member i+1's local header, then member i+1's own stream, down to one shared kernel of zeros, so every
    member extracts to the kernel and more while the archive holds the kernel's compressed bytes once."""
    import struct
    import zlib

    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    kernel = squeeze.compress(b"\0" * kernel_bytes) + squeeze.flush()
    content, stream = b"\0" * kernel_bytes, kernel
    headers: list[bytes] = []
    for name in reversed([n.encode() for n in names]):
        crc = zlib.crc32(content)
        header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(stream), len(content),
                             len(name), 0) + name
        headers.insert(0, header)
        stream = struct.pack("<BHH", 0, len(header), len(header) ^ 0xFFFF) + header + stream
        content = header + content
    body, directory = b"", b""
    for index, header in enumerate(headers):
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *struct.unpack("<HHHHHIIIHH", header[4:30]),
                                 0, 0, 0, 0, len(body)) + header[30:]
        body += header
        if index + 1 < len(headers):
            body += struct.pack("<BHH", 0, len(headers[index + 1]), len(headers[index + 1]) ^ 0xFFFF)
    body += kernel
    return body + directory + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(headers), len(headers), len(directory),
                                          len(body), 0)


def test_a_zip_bomb_of_overlapping_members_extracts_once_not_once_per_member(tmp_path):
    """A student's upload of 40 members that share one compressed kernel of 2 MB (a 10 kB zip declaring 80 MB;
    the same trick in 1 MB declares MAX_MEMBERS members of 100 MB, terabytes on the TA's disk, each member within
    the size rule): the members whose bytes run into another's are refused, and a classmate in the same export is
    extracted as usual. Before, all 40 were extracted (python < 3.11.8)."""
    import zipfile

    from grader.intake.gather import OVERLAPPING, gather

    bomb = _overlapping_zip([f"lab{i:02d}.ipynb" for i in range(40)], 2 * 1024 * 1024)
    assert len(bomb) < 20_000
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("smithjohn_12345_67890_lab.zip", bomb)
        archive.write(CORRECT, "doejane_23456_78901_lab.ipynb")
    intake = gather([export], tmp_path / "work")
    jane, john = intake.entries
    assert jane.problem == "" and jane.path.read_bytes() == CORRECT.read_bytes()
    assert john.student.startswith("smithjohn") and len(john.others) == 39
    extracted = sum(path.stat().st_size for path in (tmp_path / "work").rglob("*") if path.is_file())
    assert extracted < 3 * 2 * 1024 * 1024 + len(bomb), extracted   # the bomb (once) and its one honest member
    assert john.problem in ("", OVERLAPPING)


def test_one_students_upload_extracts_at_most_the_upload_allowance(tmp_path, monkeypatch):
    """Members that do not overlap still compress 1000 to 1: the members of one student's upload (and of the zips
    inside it) extract at most MAX_UPLOAD_BYTES together; past it a member is refused by name, and the allowance
    is the student's own (a classmate's upload in the same export extracts in full)."""
    import zipfile

    from grader.intake import gather as intake_module

    monkeypatch.setattr(intake_module, "MAX_UPLOAD_BYTES", 3 * 1024 * 1024)
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
        for student in ("smithjohn_12345_67890", "doejane_23456_78901"):
            upload = tmp_path / f"{student}.zip"
            with zipfile.ZipFile(upload, "w", zipfile.ZIP_DEFLATED) as inner:
                for index in range(5):
                    inner.writestr(f"lab{index}.ipynb", b"\0" * (1024 * 1024))
            archive.write(upload, f"{student}_lab.zip")
    intake = intake_module.gather([export], tmp_path / "work")
    for student in ("smithjohn", "doejane"):
        extracted = [p for p in (tmp_path / "work").rglob("*.ipynb") if student in str(p)]
        assert len(extracted) == 3, extracted
    assert [entry.problem for entry in intake.entries] == ["", ""]   # each graded from a member that extracted


def test_a_link_to_a_classmates_notebook_or_to_the_reference_is_not_graded(tmp_path, grader_cache):
    """A class folder of student folders (git clones, unpacked uploads) can hold symbolic links. Alice's
    `lab.ipynb -> ../bob/lab.ipynb` took Bob's notebook (graded as hers) and left Bob without a row (the same file
    is taken once); Mallory's `lab.py -> <checkout>/reference/taoistic_search.py` earned 30/30 with the reference,
    and her results folder kept a copy of it. A link inside a folder is not followed: both rows are unreadable at
    zero, saying why, and Bob is graded."""
    folder = tmp_path / "class"
    for student in ("alice", "bob", "mallory"):
        (folder / student).mkdir(parents=True)
    shutil.copy(CORRECT, folder / "bob" / "lab.ipynb")
    (folder / "alice" / "lab.ipynb").symlink_to(Path("..") / "bob" / "lab.ipynb")
    reference = REPO / "reference" / "taoistic_search.py"
    (folder / "mallory" / "lab.py").symlink_to(reference)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--rubric", str(RUBRIC),
                           "--out", str(out), "--jobs", "1", "--cache", str(grader_cache)],
                          capture_output=True, text=True, cwd=REPO, timeout=within(600))
    assert "Traceback" not in done.stderr, done.stderr
    rows = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    assert set(rows) == {"alice", "bob", "mallory"}, sorted(rows)
    assert rows["bob"]["total"] == rows["bob"]["max_total"] == 30
    for student in ("alice", "mallory"):
        assert rows[student]["total"] == 0 and rows[student]["state"] == "unreadable", rows[student]["state"]
        assert any("symbolic link" in str(w) for w in rows[student]["warnings"]), rows[student]["warnings"]
    kept = [path.read_bytes() for path in (out / "notebooks").iterdir()]
    assert reference.read_bytes() not in kept


def test_json_python_refuses_is_an_unreadable_notebook_not_a_grader_failure(tmp_path, grader_cache):
    """Valid JSON that Python's parser refuses, in a notebook a student can hand in: an integer of 5,000 digits
    (over int's 4,300-digit conversion limit) and arrays nested 50,000 deep (past the interpreter's stack). Each
    made the grader 'fail' on the submission (ValueError, RecursionError: counted as the grader's fault, `failed`);
    each is the student's unreadable notebook, at zero with the reason."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(CORRECT, folder / "alice.ipynb")
    text = CORRECT.read_text(encoding="utf-8")
    assert '"nbformat_minor": 5' in text
    (folder / "mallory.ipynb").write_text(text.replace('"nbformat_minor": 5', '"nbformat_minor": ' + "9" * 5000),
                                          encoding="utf-8")
    (folder / "oscar.ipynb").write_text(text.rstrip()[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}",
                                        encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--rubric", str(RUBRIC),
                           "--out", str(out), "--jobs", "1", "--cache", str(grader_cache)],
                          capture_output=True, text=True, cwd=REPO, timeout=within(600))
    assert "Traceback" not in done.stderr, done.stderr
    assert "0 failed" in done.stdout + done.stderr, done.stdout + done.stderr
    rows = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    assert rows["alice"]["total"] == rows["alice"]["max_total"]
    for student in ("mallory", "oscar"):
        assert rows[student]["state"] == "unreadable" and rows[student]["total"] == 0, rows[student]["state"]
        assert any("not readable JSON" in str(w) for w in rows[student]["warnings"]), rows[student]["warnings"]


def test_a_notebook_cannot_make_the_grader_build_gigabytes(tmp_path):
    """Within the size rule a notebook chose how much the grader builds from it: 300,000 empty cells (32 MB) took
    a worker to 1.2 GB, and 100 MB of `x = 1` lines in one cell would take about 2 GB of syntax tree when extracted.
    A file of more JSON objects and arrays than a person writes is unreadable, saying why; a code cell that takes
    the notebook's code past MAX_CODE_CHARS is shown but not run (a warning at its cell) while the cells after it
    still count; a .py of more than MAX_CODE_CHARS characters is unreadable."""
    from grader.extract.source import extract
    from grader.intake.notebook import MAX_CODE_CHARS, MAX_JSON_CONTAINERS, NotebookError, read_notebook

    notebook = json.loads(CORRECT.read_text(encoding="utf-8"))
    empty = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ""}
    many = {**notebook, "cells": [{**empty, "id": f"c{index}"} for index in range(MAX_JSON_CONTAINERS // 3 + 1)]}
    path = tmp_path / "many.ipynb"
    path.write_text(json.dumps(many), encoding="utf-8")
    with pytest.raises(NotebookError, match="JSON objects and arrays"):
        read_notebook(path)
    # Brackets inside strings are text, not objects: printed lists in a saved output do not count.
    printed = {**notebook, "cells": notebook["cells"] + [{**empty, "id": "printed", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "[[]]" * MAX_JSON_CONTAINERS}]}]}
    path.write_text(json.dumps(printed), encoding="utf-8")
    assert len(read_notebook(path).cells) == len(notebook["cells"]) + 1

    big = {**empty, "id": "big", "source": "x = 1\n" * (MAX_CODE_CHARS // 6 + 1)}
    later = {**empty, "id": "later", "source": "def find_tile(*args):\n    return 'redefined after the big cell'\n"}
    path.write_text(json.dumps({**notebook, "cells": notebook["cells"] + [big, later]}), encoding="utf-8")
    read = read_notebook(path)
    assert read.cells[-2].kind == "raw" and read.cells[-1].kind == "code"
    [warning] = read.warnings
    assert warning.cell == len(notebook["cells"]) and "is not run" in warning.text
    extracted = extract(read)
    assert "x = 1" not in extracted.source() and "redefined after the big cell" in extracted.source()

    script = tmp_path / "lines.py"
    script.write_text("x = 1\n" * (MAX_CODE_CHARS // 6 + 1), encoding="utf-8")
    with pytest.raises(NotebookError, match="characters of code"):
        read_notebook(script)


def test_an_archive_whose_member_list_is_too_long_is_not_read(tmp_path, monkeypatch):
    """zipfile reads an archive's whole central directory and makes an object of each member before any member
    rule applies: 500,000 empty members (25 MB of directory, 3 MB zipped again inside a student's upload) took 270 MB
    and 3 s. Past MAX_DIRECTORY_BYTES (as the end record states it) the archive is a problem line, not read; a
    classmate's upload in the same export is read as usual. Shown here with the bound lowered to 10 kB."""
    import zipfile

    from grader.intake import gather as intake_module

    monkeypatch.setattr(intake_module, "MAX_DIRECTORY_BYTES", 10_000)
    crowded, plain = tmp_path / "crowded.zip", tmp_path / "plain.zip"
    with zipfile.ZipFile(crowded, "w") as archive:
        for index in range(1_000):
            archive.writestr(f"{index:x}", b"")
        archive.write(CORRECT, "lab.ipynb")
    with zipfile.ZipFile(plain, "w") as archive:
        archive.write(CORRECT, "lab.ipynb")
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(crowded, "smithjohn_12345_67890_lab.zip")
        archive.write(plain, "doejane_23456_78901_lab.zip")
    intake = intake_module.gather([export], tmp_path / "work")
    entries = {entry.student: entry for entry in intake.entries}
    assert list(entries) == ["doejane_23456", "smithjohn_12345"] and not entries["doejane_23456"].problem
    # Smith's row is at zero and says why (an LMS's student keeps a row: the CSV must not leave their grade as it was).
    assert "smithjohn_12345_67890_lab.zip (a member list of" in entries["smithjohn_12345"].problem
    assert "not read" in entries["smithjohn_12345"].problem and intake.problems == ()


def test_a_glob_through_a_linked_student_folder_leaves_the_classmate_graded(tmp_path):
    """`grade 'class/*/lab.ipynb'` where class/alice is a link to class/bob: alice/lab.ipynb is refused (a link on
    its way), and the refused link must not take Bob's file, which the glob reaches again as bob/lab.ipynb (the same
    file is taken once): Bob had no row."""
    from grader.intake.gather import LINKED, gather

    folder = tmp_path / "class"
    (folder / "bob").mkdir(parents=True)
    shutil.copy(CORRECT, folder / "bob" / "lab.ipynb")
    (folder / "alice").symlink_to("bob", target_is_directory=True)
    entries = {entry.student: entry for entry in gather([f"{folder}/*/lab.ipynb"], tmp_path / "work").entries}
    assert sorted(entries) == ["alice", "bob"]
    assert entries["alice"].problem == LINKED
    assert entries["bob"].problem == "" and entries["bob"].path == folder / "bob" / "lab.ipynb"


def test_a_folder_1500_levels_deep_does_not_stop_the_class(tmp_path, grader_cache):
    """A student's folder (a git clone, an unpacked upload) can nest folders as deep as paths allow. Python 3.11's
    os.walk recurses once per level: at 1,500 levels `grader grade` of the class died with RecursionError before
    grading anyone (and a realpath per folder made the walk itself take two minutes). Now the deep notebook is
    graded like any other, and so is the classmate's; the Gradescope runner's search of an upload finds it too."""
    from grader.intake.gather import collect

    folder = tmp_path / "class"
    (folder / "bob").mkdir(parents=True)
    shutil.copy(CORRECT, folder / "bob" / "lab.ipynb")
    levels = [folder / "alice"]
    levels[0].mkdir()
    for _ in range(1_500):
        levels.append(levels[-1] / "a")
        levels[-1].mkdir()
    shutil.copy(CORRECT, levels[-1] / "lab.ipynb")
    try:
        out = tmp_path / "out"
        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--rubric", str(RUBRIC),
                               "--out", str(out), "--jobs", "1", "--cache", str(grader_cache)],
                              capture_output=True, text=True, cwd=REPO, timeout=within(600))
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        rows = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
        assert sorted(rows) == ["alice", "bob"]
        assert all(row["total"] == row["max_total"] for row in rows.values())
        assert collect([folder]) == [levels[-1] / "lab.ipynb", folder / "bob" / "lab.ipynb"]
        # A TA's `**` pattern through the same folder: glob recurses per level too; a problem line, not a crash.
        done = subprocess.run([sys.executable, "-m", "grader", "grade", f"{folder}/**/*.ipynb", "--rubric",
                               str(RUBRIC), "--out", str(tmp_path / "out2"), "--jobs", "1", "--cache",
                               str(grader_cache)], capture_output=True, text=True, cwd=REPO, timeout=within(600))
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert "nested too deep for a pattern" in done.stdout + done.stderr
    finally:   # shutil.rmtree recurses too: take the levels down from the bottom
        (levels[-1] / "lab.ipynb").unlink()
        for level in reversed(levels):
            level.rmdir()


def test_a_worksheet_time_no_date_can_say_in_utc_does_not_stop_the_class(tmp_path, grader_cache):
    """Moodle's "Last modified" of "31 December 9999, 11:59 PM" read in a course zone west of Greenwich is after
    year 9999 in UTC: the old code raised ValueError out of the batch (a traceback, nothing graded written). Now
    that time says nothing: the worksheet's late flag decides (one day), and the classmate is graded as before."""
    from dataclasses import replace

    from grader.rubric.schema import load_rubric
    from grader.run.batch import grade_batch
    from test_lateness import MOODLE_WORKSHEET, moodle_export

    sheet = MOODLE_WORKSHEET.replace("Saturday, 21 November 2026, 2:00 AM", "Friday, 31 December 9999, 11:59 PM")
    export = moodle_export(tmp_path / "moodle.zip", {"grades.csv": sheet})
    policy = LatePolicy(datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc), 0.1, 0.3,
                        zone=timezone(timedelta(hours=-8)))
    batch = grade_batch([export], replace(load_rubric(RUBRIC), late=policy), tmp_path / "out", jobs=1,
                        cache=grader_cache)
    results = {r.submission: r for r in batch.results}
    ada, bo = results["Ada_Byron_2101"], results["Bo_Chen_2102"]
    assert (ada.total, ada.late, ada.penalty, ada.submitted_at) == (30, True, 3.0, "")
    assert (bo.total, bo.late, bo.penalty, bo.submitted_at) == (30, False, 0.0, "2026-11-19T16:00:00+00:00")


@given(recorded=st.one_of(st.just(""), st.datetimes().map(datetime.isoformat)),
       extended=st.one_of(st.just(""), st.datetimes().map(datetime.isoformat)), at=st.floats(),
       offset=st.integers(-14 * 60, 14 * 60), flagged=st.booleans())
@settings(max_examples=300, deadline=None)
def test_any_hand_in_time_is_assessed_without_an_error(recorded, extended, at, offset, flagged):
    """Whatever times an LMS's worksheet or a file gives (years 1 to 9999 in any zone, NaN, infinities), the
    lateness is assessed: never an exception out of the batch, a share within the policy's cap."""
    zone = timezone(timedelta(minutes=offset))
    policy = LatePolicy(datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc), 0.1, 0.3, zone=zone)
    late = assess(HandIn(flagged, at, recorded, extended), 30.0, policy)
    assert 0.0 <= late.share <= 0.3 and late.penalty <= 9.0


@given(count=st.text(alphabet=st.characters(categories=["Nd"]), max_size=6000))
@settings(max_examples=100, deadline=None)
def test_an_nbconvert_marker_with_any_count_is_read_without_an_error(count):
    """`# In[<5,000 nines>]:` in a .py hand-in raised int()'s digit limit out of the read (the old code: "the
    grader failed on this submission: ValueError"); digits of another script were read as a count too. A count
    is ASCII digits an execution counter could reach, else none; the cell is read either way."""
    from grader.intake.notebook import notebook_from_source

    notebook = notebook_from_source(f"# In[{count}]:\nx = 1\n", "mallory.py")
    [cell] = [cell for cell in notebook.cells if "x = 1" in cell.source]
    assert cell.execution_count is None or (count.isascii() and cell.execution_count == int(count))


def test_a_five_thousand_digit_marker_is_no_count():
    from grader.intake.notebook import notebook_from_source

    notebook = notebook_from_source("# In[" + "9" * 5000 + "]:\nx = 1\n", "mallory.py")
    assert [cell.execution_count for cell in notebook.cells] == [None]


HIJACK = '''import json, os, pathlib
pathlib.Path({marker!r}).write_text(str(os.getuid()))
root = os.environ.get("AUTOGRADER_ROOT", "/autograder")
os.makedirs(root + "/results", exist_ok=True)
with open(root + "/results/results.json", "w") as handle:
    json.dump({{"score": 1000.0, "output": "hijacked", "tests": []}}, handle)
os._exit(0)
'''


def test_a_module_in_the_gradescope_upload_never_runs_in_the_grader(tmp_path):
    """A student's upload holding `yaml.py` beside the notebook: run_autograder ran the grader with `python -m`,
    which puts the working folder first on the import path, so run from the upload's folder the grader imported
    the student's yaml.py as root (it wrote results.json with 1000 points). The grader now runs with -P."""
    import zipfile

    from grader.run.autograder import build_autograder

    zip_path = build_autograder(RUBRIC, tmp_path / "autograder.zip", wheel=False)   # no wheel: seconds, not 15
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    upload = root / "submission"
    upload.mkdir()
    shutil.copy(CORRECT, upload / "lab.ipynb")
    marker = tmp_path / "hijacked"
    (upload / "yaml.py").write_text(HIJACK.format(marker=str(marker)))
    environment = {"PATH": "/usr/bin:/bin", "AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable,
                   "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], cwd=upload, env=environment,
                          capture_output=True, text=True, timeout=within(600))
    assert done.returncode == 0, done.stderr
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert not marker.exists()
    assert data["score"] == 30.0, data["output"]


def test_python_m_grader_from_a_folder_of_students_files_imports_none_of_them(tmp_path):
    """`python -m grader` from a class folder (`cd class && python -m grader grade . ...`): a student's
    argparse.py there ran as the TA before the grader parsed its arguments."""
    marker = tmp_path / "hijacked"
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "argparse.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    done = subprocess.run([sys.executable, "-m", "grader", "--version"], cwd=folder, capture_output=True,
                          text=True, timeout=within(300), env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    assert not marker.exists()
    assert done.returncode == 0, done.stderr
