"""Benchmark: grade a generated class and print ratios measured in one run.

    python bench/bench_grading.py [--submissions 200] [--nbconvert-sample 4] [--jobs N]

Prints submissions per second, the per-submission overhead of isolation over running the same cases
in-process, the speedup from 1 worker to all cores, the time of a regrade with nothing changed, and the
ratio against executing the same notebooks with `jupyter nbconvert --execute` (the kernel cost that
nbgrader and Otter pay per notebook). Needs `pip install -e '.[bench]'` for the nbconvert part.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
# The mix of a real class: mostly right, some wrong, a few hostile (the infinite loop costs seconds).
MIX = [("correct", 40), ("main-animation", 10), ("seed-000", 10), ("old-era", 8), ("move-dir-transposed", 6),
       ("manhattan-counts-blank", 6), ("extract-move-of-tile", 5), ("find-tile-transposed", 5),
       ("syntax-error", 4), ("int-tiles", 4), ("infinite-search", 2)]


def generate(folder: Path, count: int, seed: int = 1, mix: list[tuple[str, int]] = MIX) -> list[Path]:
    """`count` distinct notebooks: example submissions with a unique comment cell (so no two share a hash)."""
    rng = random.Random(seed)
    names = [name for name, weight in mix for _ in range(weight)]
    paths = []
    for index in range(count):
        name = names[index % len(names)] if index < len(names) else rng.choice(names)
        notebook = nbformat.read(EXAMPLES / f"{name}.ipynb", as_version=4)
        notebook.cells.append(nbformat.v4.new_code_cell(f"# submission {index} of the benchmark class"))
        path = folder / f"student{index:04d}_{name}.ipynb"
        nbformat.write(notebook, path)
        paths.append(path)
    return paths


def in_process_seconds(paths: list[Path], cache: Path) -> float:
    """The same cases run in this process with no isolation at all: the floor our overhead is measured against."""
    from grader.syntax.calls import for_child
    from grader.checks.registry import CheckContext, resolve
    from grader.extract.source import extract
    from grader.intake.notebook import read_notebook
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric
    from grader import codec
    plan = build_plan(load_rubric(RUBRIC), cache)
    support = {p.stem: p.read_text() for p in (plan.rubric.support or Path("/nonexistent")).glob("*.py")}
    started = time.perf_counter()
    for path in paths:
        extracted = extract(read_notebook(path), plan.rubric.policy)
        namespace: dict = {"__name__": "__main__", "display": lambda *a, **k: None}
        sys.modules.update({name: _module(name, source) for name, source in support.items()})
        for statement in extracted.statements:
            try:
                exec(compile("\n" * (statement.line - 1) + statement.code, statement.label, "exec"), namespace)
            except BaseException:  # noqa: BLE001 - a missing import, a style.css: as the grader does
                pass
        for exercise in plan.rubric.exercises:
            for case in plan.cases[exercise.id]:
                call = for_child(case.call, plan.data(case))
                scope = {**namespace, **dict(call.values)}
                try:
                    with open(os.devnull, "w") as sink:
                        stdout, sys.stdout = sys.stdout, sink
                        try:
                            got = codec.encode(eval(compile(call.code, "<case>", "eval"), scope))
                        finally:
                            sys.stdout = stdout
                except BaseException:  # noqa: BLE001
                    continue
                check = resolve(case.check.name, plan.reference)
                try:
                    check(CheckContext(plan.expected[case.id].value, got, options=dict(case.check.options),
                                       reference=plan.reference, data=plan.data(case)))
                except Exception:  # noqa: BLE001
                    pass
    return time.perf_counter() - started


def _module(name: str, source: str):
    import types
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def graded_seconds(paths: list[Path], out: Path, cache: Path, jobs: int, force: bool = True) -> tuple[float, object]:
    from grader.run.batch import grade_batch
    started = time.perf_counter()
    batch = grade_batch(paths, RUBRIC, out, jobs=jobs, cache=cache, force=force)
    return time.perf_counter() - started, batch


def cli_seconds(folder: Path, out: Path, cache: Path, jobs: int) -> float:
    """`grader grade` of a folder as a TA runs it: a new process, so start-up (imports, rubric, plan) counts."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--rubric", str(RUBRIC), "--out", str(out),
                    "--cache", str(cache), "--jobs", str(jobs), "--quiet"], check=True, capture_output=True)
    return time.perf_counter() - started


def nbconvert_seconds(paths: list[Path], scratch: Path) -> float | None:
    """Execute notebooks with nbconvert the way kernel-based graders do (errors allowed, like a real class)."""
    try:
        import ipykernel  # noqa: F401
    except ImportError:
        return None
    times = []
    for path in paths:
        target = scratch / path.name
        shutil.copy(path, target)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                        "--allow-errors", "--ExecutePreprocessor.timeout=120", "--output", target.name,
                        str(target)], cwd=scratch, capture_output=True, timeout=600)
        times.append(time.perf_counter() - started)
    return statistics.mean(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--nbconvert-sample", type=int, default=4, help="notebooks executed with nbconvert")
    parser.add_argument("--speedup-sample", type=int, default=40, help="submissions timed with 1 and all workers")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--correct", type=int, default=200, help="distinct correct notebooks graded on their own")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="puzzle-grader-bench-") as tmp:
        root = Path(tmp)
        (root / "class").mkdir()
        cache = root / "cache"
        paths = generate(root / "class", args.submissions)
        from bench_nbgrader import compile_grader
        compile_grader()    # as an installed grader has its bytecode
        from grader.run.batch import grade_batch
        grade_batch([paths[0]], RUBRIC, root / "warm", jobs=1, cache=cache)   # expected values computed and cached

        (root / "correct").mkdir()
        correct = generate(root / "correct", args.correct, mix=[("correct", 1)])
        correct_seconds = cli_seconds(root / "correct", root / "correct-out", cache, args.jobs)   # start-up in it
        correct_regrade, correct_batch = graded_seconds(correct, root / "correct-out", cache, args.jobs, force=False)
        # the same regrade as a TA runs it: a new process, imports included
        cli_regrade = cli_seconds(root / "correct", root / "correct-out", cache, args.jobs)
        full = sum(row.total == row.max_total for row in correct_batch.rows)

        batch_seconds, batch = graded_seconds(paths, root / "out", cache, args.jobs)
        regrade_seconds, regrade = graded_seconds(paths, root / "out", cache, args.jobs, force=False)

        calm = [p for p in paths if "infinite" not in p.name][:args.speedup_sample]
        one_seconds, _ = graded_seconds(calm, root / "one", cache, 1)
        all_seconds, _ = graded_seconds(calm, root / "all", cache, args.jobs)
        # Overhead: correct notebooks, the same cases in both runs (a wrong one may run an exercise a second
        # time with the reference's helpers, which the in-process run cannot imitate).
        same_work = correct[:args.speedup_sample]
        isolated_seconds, _ = graded_seconds(same_work, root / "same", cache, 1)
        fixed_seconds, _ = graded_seconds(same_work[:1], root / "fixed", cache, 1)   # pool start-up + one
        inproc = in_process_seconds(same_work, cache)

        sample = calm[:args.nbconvert_sample]
        (root / "nbconvert").mkdir()
        nbconvert = nbconvert_seconds(sample, root / "nbconvert") if args.nbconvert_sample else None

    n, m = len(paths), len(calm)
    ours_per_notebook = one_seconds / m
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, isolation: "
          f"{', '.join(f'{level} ({count})' for level, count in batch.isolation.items())}")
    print(f"{args.correct} distinct correct notebooks, {args.jobs} workers: {correct_seconds:.1f} s = "
          f"{args.correct / correct_seconds:.1f} submissions/s as `grader grade` (start-up included), {full} of "
          f"{args.correct} with full marks; "
          f"regrade with nothing changed: {correct_regrade:.2f} s ({cli_regrade:.2f} s as `grader grade`, "
          f"start-up included)")
    print(f"class of {n} submissions (correct, wrong and hostile mixed), {args.jobs} workers:")
    print(f"  graded in {batch_seconds:.1f} s = {n / batch_seconds:.1f} submissions/s "
          f"({batch.graded} graded, {len(batch.failed)} failed)")
    print(f"  regrade with nothing changed: {regrade_seconds:.2f} s ({regrade.unchanged} unchanged)")
    print(f"{m} submissions without deliberate infinite loops:")
    print(f"  1 worker: {one_seconds:.1f} s ({1000 * ours_per_notebook:.0f} ms per submission), "
          f"{args.jobs} workers: {all_seconds:.1f} s, speedup {one_seconds / all_seconds:.2f}x")
    k = len(same_work)
    print(f"{k} distinct correct notebooks, 1 worker, graded in the sandbox and run in this process:")
    isolated = (isolated_seconds - fixed_seconds) / (k - 1)   # per submission, the pool's start-up left out
    print(f"  isolated {1000 * isolated:.0f} ms, in-process with no isolation {1000 * inproc / k:.0f} ms per "
          f"submission: {isolated / (inproc / k):.2f}x its own code's time, isolation overhead "
          f"{1000 * (isolated - inproc / k):.0f} ms per submission "
          f"(the worker pool starts once per batch in {fixed_seconds - isolated:.2f} s)")
    if nbconvert is not None:
        print(f"  jupyter nbconvert --execute: {nbconvert:.2f} s per notebook ({len(sample)} executed); "
              f"ours {1000 * ours_per_notebook:.0f} ms per notebook on 1 worker: {nbconvert / ours_per_notebook:.0f}x "
              f"faster, {nbconvert / (all_seconds / m):.0f}x with {args.jobs} workers")
    else:
        print("  nbconvert: not measured (pip install -e '.[bench]' for ipykernel)")


if __name__ == "__main__":
    main()
