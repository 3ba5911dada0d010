"""Values every result of a rubric shares (each case's call and expected value, and a right answer) are stored
once per rubric in the results folder (grader.store.shared), not in every student's file; every reader gets
the whole result back, and a damaged store is an error naming its file, never a wrong grade."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.report.class_outputs import read_results
from grader.run.batch import grade_batch
from grader.store import shared
from grader.store.gradebook import Gradebook
from grader.store.results import SCHEMA_VERSION, read_json, write_json

from conftest import REPO, RUBRIC, SUBMISSIONS
from testclock import within

OLD_RESULTS = REPO / "tests" / "fixtures" / "results-schema1"   # written by the grader of results schema 1


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Path:
    """A results folder of three real gradings: all right, some wrong answers, a syntax error."""
    out = tmp_path_factory.mktemp("shared") / "results"
    batch = grade_batch([SUBMISSIONS / f"{name}.ipynb" for name in ("correct", "move-dir-transposed", "syntax-error")],
                        RUBRIC, out, jobs=2, cache=grader_cache)
    assert batch.graded == 3
    return out


def _store_files(results: Path) -> list[Path]:
    return sorted((results / shared.FOLDER).glob("*/*.json"))


def test_result_files_refer_to_values_stored_once_per_rubric(graded: Path) -> None:
    files = _store_files(graded)
    with Gradebook(graded / "gradebook.sqlite") as book:
        whole = {r.submission: r for r in book.current("taoistic-search")}
    assert {p.parent.name for p in files} == {whole["correct"].rubric_sha256}
    # One file per distinct (call, expected value): a case's values, or another variant's expected value (the
    # 2020/21 move_dir convention), or none for a function the notebook lacks.
    distinct = {(c.call, json.dumps(c.expected, sort_keys=True))
                for result in whole.values() for e in result.exercises for c in e.cases}
    assert len(files) == len(distinct) < sum(len(e.cases) for r in whole.values() for e in r.exercises) / 2
    for student, result in whole.items():
        stored = json.loads((graded / f"{student}.json").read_text(encoding="utf-8"))
        assert stored["schema"] == SCHEMA_VERSION == 2
        stored_cases = [c for e in stored["exercises"] for c in e["cases"]]
        assert all("call" not in c and "expected" not in c and "shared" in c for c in stored_cases)
        # A right answer is not stored again; a wrong one is, in the student's own file.
        for case, kept in zip((c for e in result.exercises for c in e.cases), stored_cases, strict=True):
            assert ("got" in kept) == (case.got != case.expected), case.id
        assert read_json(graded / f"{student}.json") == result     # the whole result back, exactly
    # A store file is the canonical text of the values, named by its hash.
    for path in files:
        assert shared.key_of(path.read_text(encoding="utf-8")) == path.stem


def test_a_class_shares_the_store_and_each_result_is_small(graded: Path, tmp_path: Path) -> None:
    correct = read_json(graded / "correct.json")
    folder = tmp_path / "class"
    from dataclasses import replace
    for index in range(20):
        write_json(replace(correct, submission=f"student{index:02d}"), folder)
    assert len(_store_files(folder)) == sum(len(e.cases) for e in correct.exercises)    # not 20 times that
    old_size = len(json.dumps(json.loads((OLD_RESULTS / "move-dir-transposed.json").read_text(encoding="utf-8"))))
    assert (folder / "student00.json").stat().st_size < old_size    # 137 cases now, 36 in the old file
    assert read_json(folder / "student19.json") == replace(correct, submission="student19")


def test_results_of_the_previous_schema_still_read_and_report(tmp_path: Path) -> None:
    [old_file] = sorted(OLD_RESULTS.glob("*.json"))
    data = json.loads(old_file.read_text(encoding="utf-8"))
    assert data["schema"] == 1
    result = read_json(old_file)
    first = result.exercises[0].cases[0]
    assert (first.call, first.expected, first.got) == ("find_tile('0', Start)", {"tuple": [0, 0]}, {"tuple": [0, 0]})
    assert [e.score for e in result.exercises] == [2.0, 0.0, 2.0]
    # Written again, it takes the new form and reads back the same values.
    from dataclasses import replace
    write_json(result, tmp_path / "again")
    assert read_json(tmp_path / "again" / old_file.name) == replace(result, schema=SCHEMA_VERSION)
    # `grader report` of a folder of old files writes the reports.
    folder = tmp_path / "old"
    shutil.copytree(OLD_RESULTS, folder)
    done = subprocess.run([sys.executable, "-m", "grader", "report", str(folder), "--out", str(tmp_path / "fb")],
                          capture_output=True, text=True, timeout=within(600))
    assert done.returncode == 0, done.stderr
    assert "move_dir" in (tmp_path / "fb" / "move-dir-transposed.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("damage", ["edited", "truncated", "missing"])
def test_a_damaged_shared_value_is_an_error_naming_its_file(graded: Path, tmp_path: Path, damage: str) -> None:
    results = tmp_path / "results"
    shutil.copytree(graded, results, ignore=shutil.ignore_patterns("gradebook.sqlite*"))
    stored = json.loads((results / "correct.json").read_text(encoding="utf-8"))
    key = stored["exercises"][0]["cases"][0]["shared"]
    [target] = [p for p in _store_files(results) if p.stem == key]
    text = target.read_text(encoding="utf-8")
    if damage == "edited":       # another expected value of the same length: a wrong grade, if it were believed
        target.write_text(text.replace("0", "1", 1), encoding="utf-8")
    elif damage == "truncated":
        target.write_text(text[: len(text) // 2], encoding="utf-8")
    else:
        target.unlink()
    with pytest.raises(shared.SharedValuesError, match=key):
        read_json(results / "correct.json")
    # Without a gradebook the class is read from the files: the damaged one is named, the others still read.
    loaded = read_results(results)
    assert {r.submission for r in loaded.results} < {"correct", "move-dir-transposed", "syntax-error"}
    assert any(key in problem and "correct.json" in problem for problem in loaded.problems), loaded.problems
    # `grader report` stops with one line naming the file, no traceback, no report written from a wrong value.
    done = subprocess.run([sys.executable, "-m", "grader", "report", str(results), "--out", str(tmp_path / "fb")],
                          capture_output=True, text=True, timeout=within(600))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert key in done.stderr and "Traceback" not in done.stderr
    # Writing a result of the rubric again puts the value back whole.
    write_json(read_json(graded / "correct.json"), results)
    assert read_json(results / "correct.json") == read_json(graded / "correct.json")


def test_a_result_cannot_send_the_reader_outside_its_store(graded: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(graded, results, ignore=shutil.ignore_patterns("gradebook.sqlite*"))
    for field, value in (("rubric_sha256", "../../../etc"), ("shared", "../../passwd")):
        data = json.loads((graded / "correct.json").read_text(encoding="utf-8"))
        if field == "rubric_sha256":
            data[field] = value
        else:
            data["exercises"][0]["cases"][0][field] = value
        (results / "correct.json").write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(shared.SharedValuesError, match="edited or damaged"):
            read_json(results / "correct.json")


@pytest.mark.parametrize("folder_age", [0, 60], ids=["just-written", "old"])
def test_a_shared_file_removed_during_a_batch_is_written_again(tmp_path: Path, folder_age: int) -> None:
    """The writer looks at each file once, then at the folder once per result (slim): a file a TA removes is
    back with the next result, whether the folder was just written (its files are looked at again) or not (its
    mtime moved)."""
    store = shared.SharedWriter(tmp_path, "r" * 64)

    def result() -> dict:
        return {"exercises": [{"cases": [{"id": f"c{n}", "call": f"f({n})", "expected": [n, "x"], "got": [n, "x"]}
                                         for n in range(5)]}]}
    keys = [case["shared"] for case in shared.slim(result(), store)["exercises"][0]["cases"]]
    files = [store.folder / f"{key}.json" for key in keys]
    if folder_age:
        old = files[0].stat().st_mtime - folder_age
        os.utime(store.folder, (old, old))
        shared.slim(result(), store)         # every file seen, under an mtime old enough to be trusted
    files[2].unlink()
    assert [case["shared"] for case in shared.slim(result(), store)["exercises"][0]["cases"]] == keys
    assert all(path.is_file() for path in files)
    assert json.loads(files[2].read_text()) == {"call": "f(2)", "expected": [2, "x"]}


def test_a_folder_put_in_the_stores_place_is_looked_at_again_even_with_the_same_mtime(tmp_path: Path) -> None:
    """The folder's mtime vouches for its files only while it is the same folder: one put in its place (a copy made
    with cp -a or rsync -a keeps the mtime, to the nanosecond) is looked at again, and a file it lacks is written."""
    store = shared.SharedWriter(tmp_path, "r" * 64)

    def result() -> dict:
        return {"exercises": [{"cases": [{"id": f"c{n}", "call": f"f({n})", "expected": [n], "got": [n]}
                                         for n in range(3)]}]}
    keys = [case["shared"] for case in shared.slim(result(), store)["exercises"][0]["cases"]]
    old = store.folder.stat().st_mtime_ns - 60 * 10**9
    os.utime(store.folder, ns=(old, old))
    shared.slim(result(), store)             # every file seen, under an mtime old enough to be trusted
    copy = tmp_path / "copy"
    shutil.copytree(store.folder, copy)
    (copy / f"{keys[1]}.json").unlink()
    os.utime(copy, ns=(old, old))
    shutil.rmtree(store.folder)
    copy.rename(store.folder)
    assert store.folder.stat().st_mtime_ns == old
    shared.slim(result(), store)
    assert (store.folder / f"{keys[1]}.json").is_file()


def test_a_new_writer_checks_the_files_it_finds_and_makes_a_removed_folder_again(tmp_path: Path) -> None:
    """A writer lists the folder once per result and reads only the files listed: one found damaged (a batch
    killed mid-write before atomic writes, a hand edit) is written again whole, one not there is written without
    being looked for, and a store folder removed between two results is made again with every file."""
    def result() -> dict:
        return {"exercises": [{"cases": [{"id": f"c{n}", "call": f"f({n})", "expected": [n], "got": [n]}
                                         for n in range(4)]}]}
    first = shared.SharedWriter(tmp_path, "r" * 64)
    keys = [case["shared"] for case in shared.slim(result(), first)["exercises"][0]["cases"]]
    files = [first.folder / f"{key}.json" for key in keys]
    files[1].write_text('{"call":"f(1)","expected":[9]}')
    files[3].unlink()
    second = shared.SharedWriter(tmp_path, "r" * 64)
    assert [case["shared"] for case in shared.slim(result(), second)["exercises"][0]["cases"]] == keys
    assert [json.loads(path.read_text()) for path in files] == [{"call": f"f({n})", "expected": [n]}
                                                                for n in range(4)]
    shutil.rmtree(tmp_path / shared.FOLDER)
    shared.slim(result(), second)
    assert all(path.is_file() for path in files)
    assert shared.SharedReader(tmp_path).values("r" * 64, keys[2]) == {"call": "f(2)", "expected": [2]}
