"""Benchmark: peak memory of `grader grade`, `grader report` and `grader class-report` as the class grows.

    python bench/bench_memory.py [--sizes 1000 10000] [--grade-up-to 1000] [--jobs 2]

For each size N it generates N distinct notebooks (copies of a few bundled examples, each with its own
comment cell so no two share a sha256), then measures, each command in its own process, the peak resident
set size (ru_maxrss) of the grader's own process, and of its largest worker for `grade`:

- `grade` of the whole class (when N <= --grade-up-to; larger classes take minutes per thousand on 2 cores,
  so by default they are built by recording copies of the graded results under new students: the gradebook,
  JSON files and notebook copies are then exactly what grading them would have left);
- `report` of the results folder (Markdown and HTML per student);
- `class-report` of the results folder (the dashboard and the CSV, from the gradebook).

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
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
MIX = ["correct", "correct", "correct", "seed-000", "old-era", "move-dir-transposed", "manhattan-counts-blank",
       "extract-move-of-tile", "find-tile-transposed", "syntax-error"]

# Runs a grader command in this process and prints its peak memory (and its children's) when it exits.
MEASURED = """
import atexit, resource, runpy, sys
def peak():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"PEAK {own} {children}", file=sys.stderr)
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


def measure(*args: str, cwd: Path) -> tuple[float, float, float]:
    """(seconds, peak MB of the grader's process, peak MB of its largest child) of one grader command."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, *args], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"grader {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    line = next(line for line in done.stderr.splitlines() if line.startswith("PEAK "))
    own, children = (int(v) / 1024 for v in line.split()[1:])
    return seconds, own, children


def clone(results: Path, count: int, notebooks: list[Path]) -> None:
    """Grow a graded class to `count` students by recording copies of its results under new names."""
    from grader.run.batch import keep_notebook
    from grader.store.gradebook import Gradebook
    from grader.store.results import read_json, write_json
    graded = sorted(p for p in results.glob("*.json"))
    originals = [read_json(p) for p in graded]
    with Gradebook(results / "gradebook.sqlite") as book:
        for index in range(len(originals), count):
            path = notebooks[index]
            import hashlib
            sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
            result = replace(originals[index % len(originals)], submission=path.stem, path=str(path), sha256=sha256)
            result = replace(result, notebook=keep_notebook(path, sha256, results))
            write_json(result, results)
            book.record(path.stem, str(path), result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--grade-up-to", type=int, default=1000,
                        help="grade classes up to this size; larger ones are grown from graded results")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the generated folders")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="puzzle-grader-bench-memory-"))
    cache = work / "cache"
    try:
        print(f"peak resident memory (ru_maxrss), {args.jobs} workers, Python {sys.version.split()[0]}:")
        notebooks = generate(work / "submissions", max(args.sizes))
        graded: Path | None = None
        for size in sorted(args.sizes):
            results = work / f"results-{size}"
            paths = [str(p) for p in notebooks[:size]]
            if size <= args.grade_up_to or graded is None:
                seconds, own, worker = measure("grade", *paths, "--rubric", str(RUBRIC), "--out", str(results),
                                               "--cache", str(cache), "--jobs", str(args.jobs), "--quiet", cwd=work)
                print(f"  {size:>6} submissions: grade (all graded):       {own:5.0f} MB "
                      f"(largest worker {worker:.0f} MB) in {seconds:.0f} s")
                graded = results
            else:
                shutil.copytree(graded, results)
                clone(results, size, notebooks)
                seconds, own, worker = measure("grade", *paths, "--rubric", str(RUBRIC), "--out", str(results),
                                               "--cache", str(cache), "--jobs", str(args.jobs), "--quiet", cwd=work)
                print(f"  {size:>6} submissions: grade (all unchanged):    {own:5.0f} MB in {seconds:.1f} s "
                      f"(the class grown from graded results)")
            seconds, own, _ = measure("class-report", str(results), "-o", str(work / f"class-{size}.html"), cwd=work)
            print(f"  {size:>6} submissions: class-report:             {own:5.0f} MB in {seconds:.0f} s")
            seconds, own, _ = measure("report", str(results), "--out", str(work / f"feedback-{size}"), cwd=work)
            print(f"  {size:>6} submissions: report:                   {own:5.0f} MB in {seconds:.0f} s")
            shutil.rmtree(work / f"feedback-{size}", ignore_errors=True)
            size_mb = sum(p.stat().st_size for p in results.rglob("*") if p.is_file()) / 1e6
            print(f"  {size:>6} submissions: results folder {size_mb:.0f} MB "
                  f"(gradebook {(results / 'gradebook.sqlite').stat().st_size / 1e6:.0f} MB)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept in {work}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
