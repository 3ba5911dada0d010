"""Memory flat in class size (issue 14 item 9): what the grader's own process keeps per student.

Measured with tracemalloc (Python objects the process allocates and keeps), never with wall time or a busy
machine's RSS: a class of N and one of 2N are handled the same way, and the second may keep only a little
more per extra student (names, counters), never a student's result (a decoded result is hundreds of kB).
Real notebooks, real workers, real SQLite.
"""

from __future__ import annotations

import csv
import gc
import json
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest

from grader.report import formats
from grader.report.class_outputs import OUTPUTS, Classroom
from grader.report.student import iter_results
from grader.run.batch import grade_batch, keep_notebook
from grader.store.gradebook import Gradebook
from grader.judge.grading import file_sha256
from grader.store.results import read_json, write_json

from conftest import RUBRIC, SUBMISSIONS

EXAMPLES = ("correct", "seed-000", "syntax-error", "move-dir-transposed")
SMALL, LARGE = 6, 12
KEPT_PER_STUDENT = 1_000   # bytes kept per extra student once done: a name, a count (a score row is ~2 kB) ...
KEPT_SLACK = 32_000        # ... beyond what caches of bounded size (pygments, matplotlib, the codec) fill up to
REPORTED = 15, 30          # the classes the reports test: recorded, not graded, so they can be larger
PEAK_PER_STUDENT = 40_000  # bytes held at once per extra student: a decoded result is ~500 kB


def _class(folder: Path, count: int, start: int = 0) -> list[Path]:
    """`count` distinct notebooks (bundled examples, each with its own comment cell: no two share a hash)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(start, start + count):
        name = EXAMPLES[index % len(EXAMPLES)]
        notebook = json.loads((SUBMISSIONS / f"{name}.ipynb").read_text(encoding="utf-8"))
        notebook["cells"].append({"cell_type": "code", "execution_count": None, "id": f"m{index}", "metadata": {},
                                  "outputs": [], "source": [f"# student {index} of the memory test"]})
        path = folder / f"student{index:03d}.ipynb"
        path.write_text(json.dumps(notebook), encoding="utf-8")
        paths.append(path)
    return paths


def _measured(work: Callable[[], object]) -> tuple[int, int]:
    """(the most Python memory `work` held at once, what it still holds once done, its return value kept),
    in bytes, beyond what existed before it."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        kept = work()
        peak = tracemalloc.get_traced_memory()[1]
        gc.collect()     # garbage in reference cycles is not kept, only not collected yet
        current = tracemalloc.get_traced_memory()[0]
        del kept
        return peak - base, current - base
    finally:
        tracemalloc.stop()


def _flat(small: tuple[int, int], large: tuple[int, int], more: int) -> None:
    """`large` (a class `more` students larger) keeps no more than a name's worth per extra student, and holds at
    once no result per extra student (the peak moves by less than a result's decoded size, whatever the order
    the results arrived in)."""
    (small_peak, small_kept), (large_peak, large_kept) = small, large
    print(small, large)
    assert large_kept - small_kept < KEPT_SLACK + KEPT_PER_STUDENT * more, (small, large)
    assert (large_peak - small_peak) / more < PEAK_PER_STUDENT, (small, large)


def test_grading_twice_the_class_keeps_no_result_per_student(tmp_path: Path, grader_cache: Path) -> None:
    def graded(count: int, start: int) -> Callable[[], object]:
        paths = _class(tmp_path / f"class-{count}", count, start)
        return lambda: grade_batch(paths, RUBRIC, tmp_path / f"out-{count}", jobs=1, cache=grader_cache)

    graded(2, 900)()       # imports, the plan and its caches: once per process, not per student
    small, large = _measured(graded(SMALL, 0)), _measured(graded(LARGE, 100))
    _flat(small, large, LARGE - SMALL)
    # Nor does a batch keep its plan once done: results.fitting held every batch's expected answers (~0.5 MB of
    # the Taoistic plan's) for the process's life, and the growth of its table failed _flat now and then.
    assert small[1] < KEPT_SLACK + KEPT_PER_STUDENT * SMALL, small
    with Gradebook(tmp_path / f"out-{LARGE}" / "gradebook.sqlite") as book:
        assert len(book.students("taoistic-search")) == LARGE


@pytest.fixture(scope="module")
def one_of_each(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Path:
    """A results folder with one graded student per example, to copy into larger classes."""
    out = tmp_path_factory.mktemp("graded")
    paths = _class(out / "notebooks-in", len(EXAMPLES))
    batch = grade_batch(paths, RUBRIC, out / "results", jobs=2, cache=grader_cache)
    assert batch.graded == len(EXAMPLES)
    return out / "results"


def _recorded(graded: Path, folder: Path, count: int) -> Path:
    """A results folder of `count` students, each recorded as a copy of a graded result (JSON, gradebook row,
    notebook copy), as grading them would have left it."""
    results = folder / "results"
    results.mkdir(parents=True)
    originals = [read_json(p) for p in sorted(graded.glob("student*.json"))]
    notebooks = _class(folder / "notebooks-in", count)
    with Gradebook(results / "gradebook.sqlite") as book:
        for index, path in enumerate(notebooks):
            sha256 = file_sha256(path)
            result = replace(originals[index % len(originals)], submission=path.stem, path=str(path), sha256=sha256)
            result = replace(result, notebook=keep_notebook(path, sha256, results))
            write_json(result, results)
            book.record(path.stem, str(path), result)
    return results


def test_class_report_and_reports_of_twice_the_class_keep_no_result_per_student(
        tmp_path: Path, one_of_each: Path) -> None:
    small_class, large_class = (_recorded(one_of_each, tmp_path / f"class-{n}", n) for n in REPORTED)

    def class_report(results: Path) -> Callable[[], object]:
        return lambda: OUTPUTS["dashboard"].write(Classroom(results, similarity=False),
                                                  results.parent / "page" / "class.html")

    def reports(results: Path) -> Callable[[], object]:
        return lambda: formats.write(iter_results(results), results.parent / "feedback", ("md", "html"),
                                     results_folder=results)

    class_report(one_of_each)()    # imports and template caches, once per process
    for work in (class_report, reports):
        _flat(_measured(work(small_class)), _measured(work(large_class)), REPORTED[1] - REPORTED[0])

    # Every export still lists every student.
    students = {f"student{index:03d}" for index in range(REPORTED[1])}
    with (large_class.parent / "page" / "class.csv").open(encoding="utf-8", newline="") as table:
        assert {row["student"] for row in csv.DictReader(table)} == students
    assert {p.stem for p in (large_class.parent / "page" / "students").glob("*.html")} == students
    assert {p.stem for p in (large_class.parent / "feedback").glob("*.md")} == students
    page = (large_class.parent / "page" / "class.html").read_text(encoding="utf-8")
    assert all(student in page for student in students)


def test_reports_of_twice_the_class_return_no_list_of_their_files(tmp_path: Path) -> None:
    """`grader report` of 10,000 students kept the list of their 20,000 written paths to print its length (~7 MB of
    the 75 MB at 10,000, session 19): what writing a class's reports keeps once done is a count, flat in class
    size (the results here are made in memory: a real result's decoding is the other test's)."""
    from grader.store.results import ExerciseResult, SubmissionResult

    def reports(count: int) -> Callable[[], object]:
        made = [SubmissionResult(f"student{index:04d}", f"/class/student{index:04d}.ipynb", "a" * 64, "demo", "b" * 64,
                                 "0.1.0", "namespaces", 1.0, 2.0, (ExerciseResult("f", "F", 1.0, 2.0, ()),))
                for index in range(count)]
        return lambda: formats.write(iter(made), tmp_path / f"feedback-{count}", ("md",))

    reports(5)()    # imports and template caches, once per process
    (_, small), (_, large) = _measured(reports(200)), _measured(reports(400))
    assert large - small < 200 * 100, (small, large)    # old code: a path per file, ~300 bytes each
    assert len(list((tmp_path / "feedback-400").glob("*.md"))) == 400


def test_the_stamps_of_twice_the_class_hold_one_string_a_file(tmp_path: Path) -> None:
    """What `grader report` keeps while it writes is the stamps of every file it wrote before (grader.report.stamps):
    at 10,000 students, 20,000 of them. Held as read and again as a tuple of a digest and three integers they were
    ~380 bytes a file; as the one string stored, ~200 (a name and a stamp)."""
    from grader.report.stamps import STAMPS, Stamps, stamped

    def held(count: int) -> int:
        folder = tmp_path / f"results-{count}"
        folder.mkdir()
        files = tmp_path / f"files-{count}"
        files.mkdir()
        stamps = Stamps({})
        for index in range(count):
            written = files / f"student{index:05d}.md"
            written.write_text(str(index), encoding="utf-8")
            stamps.wrote(written, f"result {index}")
        with stamped(folder, "report md", files) as saved:
            saved.files.update(stamps.files)
            saved.changed = True
        assert (folder / STAMPS).is_file()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            with stamped(folder, "report md", files) as read:
                inside = tracemalloc.get_traced_memory()[0] - base
                assert read.holds(files / "student00001.md", "result 1")
            return inside
        finally:
            tracemalloc.stop()

    small, large = held(1000), held(2000)
    assert (large - small) / 1000 < 300, (small, large)
