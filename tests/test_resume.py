"""A batch killed with kill -9 and run again ends with exactly the results of an uninterrupted batch."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from testclock import within

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
CALM = ["correct", "seed-000", "old-era", "move-dir-transposed", "manhattan-counts-blank", "syntax-error",
        "extract-move-of-tile", "int-tiles", "find-tile-transposed", "main-animation"]
TIMING = {"seconds", "cpu_seconds"}    # CPU time read from the kernel varies between runs too


def comparable(value):
    """A result without what legitimately differs between runs: timings."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def start(out: Path, cache: Path, submissions: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "grader", "grade", str(submissions), "--rubric", str(RUBRIC),
                             "--out", str(out), "--cache", str(cache), "--jobs", "2", "--quiet"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def differences(a, b, where: str = "") -> list[str]:
    """Where two results differ, field by field (a failure names the fields instead of pytest's truncated dicts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r:.300} != {b!r:.300}"]


def results(out: Path) -> dict:
    return {p.stem: comparable(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(out.glob("*.json"))}


def test_a_batch_killed_with_kill_9_and_rerun_ends_as_if_never_interrupted(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in CALM:
        shutil.copy(EXAMPLES / f"{name}.ipynb", submissions / f"{name}.ipynb")
    cache = tmp_path / "cache"

    whole = start(tmp_path / "whole", cache, submissions)
    assert whole.wait(timeout=within(300)) == 0, whole.stderr.read()

    interrupted = tmp_path / "interrupted"
    process = start(interrupted, cache, submissions)
    deadline = time.monotonic() + 120
    while len(list(interrupted.glob("*.json"))) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)        # the coordinator and its workers, mid-batch
    process.wait(timeout=30)
    finished_before = len(list(interrupted.glob("*.json")))
    assert 0 < finished_before < len(CALM), "the kill should land mid-batch"

    with sqlite3.connect(interrupted / "gradebook.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    again = start(interrupted, cache, submissions)
    output, errors = again.communicate(timeout=within(300))
    assert again.returncode == 0, errors
    unchanged = int(output.split(" unchanged")[0].rsplit(" ", 1)[-1])
    assert unchanged >= finished_before - 2      # at most the results in flight were lost, and redone
    assert results(interrupted).keys() == results(tmp_path / "whole").keys()
    for student, result in results(tmp_path / "whole").items():
        assert results(interrupted)[student] == result, (student, differences(result, results(interrupted)[student]))
    assert (interrupted / "gradebook.csv").read_text() == (tmp_path / "whole" / "gradebook.csv").read_text()


def test_a_regrade_with_nothing_changed_grades_nothing(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in CALM[:3]:
        shutil.copy(EXAMPLES / f"{name}.ipynb", submissions / f"{name}.ipynb")
    first = start(tmp_path / "out", tmp_path / "cache", submissions)
    assert first.wait(timeout=within(300)) == 0
    again = start(tmp_path / "out", tmp_path / "cache", submissions)
    output, _ = again.communicate(timeout=within(300))
    assert "0 graded, 0 unreadable, 0 failed, 3 unchanged" in output
    forced = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--rubric", str(RUBRIC),
                             "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), "--quiet",
                             "--force"], cwd=REPO, capture_output=True, text=True, timeout=within(300))
    assert "3 graded, 0 unreadable, 0 failed, 0 unchanged" in forced.stdout


def test_exports_are_the_whole_class_and_a_rerun_rewrites_what_is_missing(tmp_path: Path) -> None:
    """Regrading one student keeps every student in the CSV and the Gradescope folder; a rerun writes the same
    Gradescope files (every case, not score-only stubs) and puts back a deleted result JSON, byte for byte."""
    from grader.run.batch import grade, grade_batch
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in CALM[:3]:
        shutil.copy(EXAMPLES / f"{name}.ipynb", submissions / f"{name}.ipynb")
    out, cache, scope = tmp_path / "out", tmp_path / "cache", tmp_path / "gradescope"
    first = grade_batch([submissions], RUBRIC, out, jobs=2, cache=cache, gradescope=scope)
    assert first.graded == 3
    files = {p.name: p.read_text(encoding="utf-8") for p in scope.glob("*.json")}
    assert len(files) == 3
    one = grade_batch([submissions / f"{CALM[0]}.ipynb"], RUBRIC, out, jobs=1, cache=cache, gradescope=scope,
                      force=True)
    assert (one.graded, one.students) == (1, [CALM[0]])
    with open(out / "gradebook.csv", encoding="utf-8") as stream:
        assert sorted(line.split(",")[0] for line in stream.read().splitlines()[1:]) == sorted(CALM[:3])
    written = (out / f"{CALM[1]}.json").read_bytes()
    (out / f"{CALM[1]}.json").unlink()
    again = grade_batch([submissions], RUBRIC, out, jobs=2, cache=cache, gradescope=scope)
    assert (again.graded, again.unchanged) == (0, 3)
    # The same bytes as the first write: a gradebook row kept its keys sorted, and a case read back kept the
    # order of the dict it came from (cmp and a checksum saw two files where there was one result).
    assert (out / f"{CALM[1]}.json").read_bytes() == written
    rewritten = {p.name: p.read_text(encoding="utf-8") for p in scope.glob("*.json")}
    assert {k: comparable(json.loads(v)) for k, v in rewritten.items() if k != f"{CALM[0]}.json"} == \
        {k: comparable(json.loads(v)) for k, v in files.items() if k != f"{CALM[0]}.json"}
    assert all(len(json.loads(v)["tests"]) > 100 for v in rewritten.values())     # one test per case
    returned = grade([submissions], RUBRIC, out, jobs=2, cache=cache)
    assert all(len(e.cases) for r in returned for e in r.exercises)                # whole results, no stubs


def test_gradebooks_graded_apart_merge_into_one(tmp_path: Path) -> None:
    for half, names in (("a", CALM[:2]), ("b", CALM[2:4])):
        folder = tmp_path / half
        folder.mkdir()
        for name in names:
            shutil.copy(EXAMPLES / f"{name}.ipynb", folder / f"{name}.ipynb")
        assert start(tmp_path / f"out-{half}", tmp_path / "cache", folder).wait(timeout=within(300)) == 0
    merged = tmp_path / "all.sqlite"
    done = subprocess.run([sys.executable, "-m", "grader", "merge", str(tmp_path / "out-a" / "gradebook.sqlite"),
                           str(tmp_path / "out-b" / "gradebook.sqlite"), "--into", str(merged)],
                          cwd=REPO, capture_output=True, text=True, timeout=within(600))
    assert done.returncode == 0, done.stderr
    from grader.store.gradebook import Gradebook
    with Gradebook(merged) as book:
        assert book.students("taoistic-search") == sorted(CALM[:4])


HASHED = """
import json, sys
from pathlib import Path
import grader.run.batch as batch
hashed = []
real = batch.file_sha256
batch.file_sha256 = lambda path: hashed.append(Path(path).name) or real(path)
counts = []
for _ in range(2):
    hashed.clear()
    done = batch.grade_batch([sys.argv[1]], sys.argv[2], sys.argv[3], jobs=1, cache=Path(sys.argv[4]))
    counts.append((sorted(hashed), done.graded, done.unchanged))
print(json.dumps(counts))
"""


def test_a_class_graded_into_a_new_gradebook_hashes_no_file_before_grading(tmp_path: Path) -> None:
    """A gradebook the batch makes holds no row to compare a file with: no file is hashed for it on the way to the
    first submission (the worker hashes what it grades). A regrade compares each file with its row."""
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in ("correct", "syntax-error"):
        shutil.copy(EXAMPLES / f"{name}.ipynb", submissions / f"{name}.ipynb")
    done = subprocess.run([sys.executable, "-c", HASHED, str(submissions), str(RUBRIC), str(tmp_path / "out"),
                           str(tmp_path / "cache")], cwd=REPO, capture_output=True, text=True, timeout=within(300))
    assert done.returncode == 0, done.stderr[-3000:]
    names = ["correct.ipynb", "syntax-error.ipynb"]
    assert json.loads(done.stdout.splitlines()[-1]) == [[[], 2, 0], [names, 0, 2]]
