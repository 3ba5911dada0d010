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
