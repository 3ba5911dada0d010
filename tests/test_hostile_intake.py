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
from pathlib import Path

from grader.intake.notebook import MAX_SUBMISSION_BYTES

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
                          capture_output=True, text=True, cwd=REPO, timeout=600)
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
