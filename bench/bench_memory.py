"""Benchmark: peak memory of `grader grade`, `grader report` and `grader class-report` as the class grows.

    python bench/bench_memory.py [--sizes 1000 10000] [--grade-up-to 1000] [--jobs 2] [--similarity]

For each size N it generates N distinct notebooks (copies of a few bundled examples, each with its own
comment cell so no two share a sha256: the grader grades every one), then measures, each command in its own
process, the peak resident set size (ru_maxrss) of the grader's own process, and of its largest worker for
`grade`:

- `grade` of the whole class. A class of at most --grade-up-to students is graded for real, every one of
  them. A larger class is graded in one `grade` run of all N notebooks whose first N - K students (K =
  --grade-up-to) were recorded beforehand: each is a result graded for real (of the same example notebook)
  under the student's name, file and sha256, written by the grader's own writers (`write_json`, which puts
  the shared values in the folder's store, `Gradebook.record` and `keep_notebook`), so the results folder is
  what grading them would have left. That run reads all N, finds N - K unchanged and grades the last K for
  real: grading 10,000 real notebooks takes most of an hour on 2 cores. The line says how many were graded
  and how many recorded. What the parent keeps per graded student is measured apart by tests/test_memory.py
  (retained Python objects of grading N and 2N students, tracemalloc);
- `grade` of the whole class again, with nothing changed: its wall time and the CPU of its process tree (issue
  14 judges a regrade of 200 at 2 s; this says what it is at each size);
- `grade --gradescope DIR` of the whole class with nothing changed, twice: the first writes every student's
  Gradescope file, the second finds them all made from the same results and untouched, and keeps them
  (grader.report.stamps); CPU of each;
- `class-report` of the results folder (the dashboard, the CSV and every student's report, from the
  gradebook), without the similarity check unless --similarity: the bench's class is ten notebooks copied
  N/10 times, so every copy shares all its code with N/10 others, a class no course has;
- `report` of the results folder (Markdown and HTML per student);
- the size of the results folder per student: result JSON, gradebook, notebook copies and the store of
  shared values (once per rubric: grader.store.shared).

The target of issue 14: under 300 MB for each command at 10,000 submissions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
# What the class hands in, in turn: correct work and the common mistakes that cost little grading time (a
# notebook whose search the reference's helpers must answer over the pipe, find-tile-transposed, costs seconds
# of the workers' time and nothing of the parent's memory).
MIX = ["correct", "correct", "correct", "seed-000", "old-era", "move-dir-transposed", "manhattan-counts-blank",
       "extract-move-of-tile", "main-animation", "syntax-error"]

# Runs a grader command in this process and prints its peak memory (and its children's) when it exits.
MEASURED = """
import atexit, resource, runpy, sys
def peak():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    print(f"PEAK {own.ru_maxrss} {children.ru_maxrss} {cpu}", file=sys.stderr)
atexit.register(peak)
sys.argv = ["grader", *sys.argv[1:]]
runpy.run_module("grader", run_name="__main__")
"""


def generate(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    sources = {name: json.loads((EXAMPLES / f"{name}.ipynb").read_text(encoding="utf-8")) for name in set(MIX)}
    paths = []
    for index in range(count):
        name = MIX[index % len(MIX)]
        notebook = dict(sources[name])
        notebook["cells"] = [*sources[name]["cells"], {"cell_type": "code", "execution_count": None, "id": f"b{index}",
                                                       "metadata": {}, "outputs": [],
                                                       "source": [f"# submission {index} of the benchmark class"]}]
        path = folder / f"student{index:05d}.ipynb"
        path.write_text(json.dumps(notebook), encoding="utf-8")
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Measured:
    """One grader command in its own process: wall seconds, CPU seconds of its process and its children
    (the workers and their sandboxes, once reaped), peak MB of the grader's process and of its largest child."""
    seconds: float
    cpu: float
    own: float
    children: float


def measure(*args: str, cwd: Path) -> Measured:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, *args], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"grader {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    line = next(line for line in done.stderr.splitlines() if line.startswith("PEAK "))
    own, children, cpu = line.split()[1:]
    return Measured(seconds, float(cpu), int(own) / 1024, int(children) / 1024)


def clone(results: Path, students: range, notebooks: list[Path]) -> None:
    """Record `students` (indexes into `notebooks`) in a graded results folder as copies of its graded results
    of the same example, as if they had been graded: result JSON, gradebook row and notebook copy."""
    import hashlib
    from grader.run.batch import keep_notebook
    from grader.store.gradebook import Gradebook
    from grader.store.results import read_json, write_json
    examples = {}
    for path in sorted(results.glob("student*.json")):
        examples.setdefault(MIX[int(path.stem.removeprefix("student")) % len(MIX)], read_json(path))
    from grader.store.shared import SharedWriter
    store = SharedWriter(results, examples[MIX[0]].rubric_sha256)
    with Gradebook(results / "gradebook.sqlite") as book:
        for index in students:
            path = notebooks[index]
            sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
            result = replace(examples[MIX[index % len(MIX)]], submission=path.stem, path=str(path), sha256=sha256)
            result = replace(result, notebook=keep_notebook(path, sha256, results))
            write_json(result, results, store=store)
            book.record(path.stem, str(path), result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--grade-up-to", type=int, default=1000,
                        help="grade classes up to this size for real; a larger one grades this many for real and "
                             "finds the rest recorded (copies of graded results)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--similarity", action="store_true", help="class-report with the similarity check")
    parser.add_argument("--keep", action="store_true", help="keep the generated folders")
    args = parser.parse_args()
    if args.grade_up_to < len(MIX):
        parser.error(f"--grade-up-to: at least {len(MIX)} (one of each example, to copy results from)")
    work = Path(tempfile.mkdtemp(prefix="puzzle-grader-bench-memory-"))
    cache = work / "cache"
    try:
        print(f"peak resident memory (ru_maxrss), {args.jobs} workers, Python {sys.version.split()[0]}:")
        notebooks = generate(work / "submissions", max(args.sizes))
        graded: Path | None = None      # a folder whose every result was graded for real

        def grade(results: Path, count: int, *more: str) -> Measured:
            paths = [str(p) for p in notebooks[:count]]
            return measure("grade", *paths, "--rubric", str(RUBRIC), "--out", str(results), "--cache", str(cache),
                           "--jobs", str(args.jobs), "--quiet", *more, cwd=work)

        for size in sorted(args.sizes):
            results = work / f"results-{size}"
            real = min(size, args.grade_up_to)
            if size > real:
                if graded is None:      # results to copy from: a class of `real` graded for real
                    graded = work / f"results-{real}"
                    grade(graded, real)
                shutil.copytree(graded, results)
                already = len(list(results.glob("student*.json")))
                if already > size - real:   # the last `real` students must be new to the gradebook
                    raise SystemExit(f"size {size}: the graded class to copy has {already} students, more than "
                                     f"{size} - {real}; give sizes further apart or a smaller --grade-up-to")
                clone(results, range(already, size - real), notebooks)
            run = grade(results, size)
            how = (f"all {size} graded for real" if size == real else
                   f"{real} graded for real, {size - real} recorded by the grader's writers as copies of graded "
                   f"results and found unchanged")
            print(f"  {size:>6} submissions: grade ({how}): {run.own:5.0f} MB (largest worker {run.children:.0f} "
                  f"MB) in {run.seconds:.0f} s")
            again = grade(results, size)
            print(f"  {size:>6} submissions: regrade with nothing changed: {again.own:5.0f} MB in "
                  f"{again.seconds:.2f} s ({again.cpu:.2f} s of CPU), start-up included")
            for turn in ("every file written", "nothing changed: every file kept"):
                run = grade(results, size, "--gradescope", str(work / f"gradescope-{size}"))
                print(f"  {size:>6} submissions: regrade with --gradescope ({turn}): {run.own:5.0f} MB in "
                      f"{run.seconds:.1f} s ({run.cpu:.2f} s of CPU)")
            shutil.rmtree(work / f"gradescope-{size}", ignore_errors=True)
            if size == real:
                graded = results
            more = () if args.similarity else ("--no-similarity",)
            run = measure("class-report", str(results), "-o", str(work / f"class-{size}" / "class.html"), *more,
                          cwd=work)
            print(f"  {size:>6} submissions: class-report{'' if args.similarity else ' (no similarity)'}: "
                  f"{run.own:5.0f} MB in {run.seconds:.0f} s ({run.cpu:.1f} s of CPU)")
            shutil.rmtree(work / f"class-{size}", ignore_errors=True)
            run = measure("report", str(results), "--out", str(work / f"feedback-{size}"), cwd=work)
            print(f"  {size:>6} submissions: report: {run.own:5.0f} MB in {run.seconds:.0f} s ({run.cpu:.1f} s of CPU)")
            shutil.rmtree(work / f"feedback-{size}", ignore_errors=True)
            files = [p for p in results.rglob("*") if p.is_file()]
            book = sum(p.stat().st_size for p in files if p.name.startswith("gradebook.sqlite"))
            json_files = sum(p.stat().st_size for p in files if p.suffix == ".json")
            copies = sum(p.stat().st_size for p in files if p.parent.name == "notebooks")
            store = [p for p in files if p.parent.parent.name == "shared"]
            shared_bytes = sum(p.stat().st_size for p in store)
            json_files -= shared_bytes
            total = sum(p.stat().st_size for p in files)
            print(f"  {size:>6} submissions: results folder {total / 1e6:.0f} MB = {total / size / 1e3:.0f} kB per "
                  f"student (result JSON {json_files / size / 1e3:.0f} kB, gradebook {book / size / 1e3:.0f} kB, "
                  f"notebook copy {copies / size / 1e3:.0f} kB; shared values {shared_bytes / 1e3:.0f} kB in "
                  f"{len(store)} files, once for the class)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept in {work}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
