"""Benchmark: grade a generated class and print ratios measured in one run.

    python bench/bench_grading.py [--submissions 200] [--nbconvert-sample 4] [--jobs N]

Prints the machine's load at start, submissions per second with where their CPU went (the grader's processes,
the sandboxes, the students' cases: treecpu.py), a correct notebook's time against its own code's on the same
cases in this process (owncode.py), the speedup from 1 worker to all cores, the time of a regrade with nothing
changed, and the ratio against executing the same notebooks with `jupyter nbconvert --execute` (the kernel cost that
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
import idle
import owncode
import treecpu

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
EXAMPLES = REPO / "assignments" / "taoistic-search" / "submissions"
# The mix of a real class: mostly right, some wrong, a few hostile (the infinite loop costs seconds).
MIX = [("correct", 40), ("main-animation", 10), ("seed-000", 10), ("old-era", 8), ("move-dir-transposed", 6),
       ("manhattan-counts-blank", 6), ("extract-move-of-tile", 5), ("find-tile-transposed", 5),
       ("syntax-error", 4), ("int-tiles", 4), ("infinite-search", 2)]


def generate(folder: Path, count: int, seed: int = 1, mix: list[tuple[str, int]] = MIX,
             examples: Path = EXAMPLES, own_cells: bool = False) -> list[Path]:
    """`count` distinct notebooks: example submissions with a unique comment cell (so no two share a hash).
    `own_cells`: each code cell that is not the template's also ends with a comment of its own, as a real
    class's cells differ from student to student (what the grader keeps per cell text is then not shared)."""
    rng = random.Random(seed)
    names = [name for name, weight in mix for _ in range(weight)]
    template = {cell.source for cell in nbformat.read(examples.parent / "template.ipynb", as_version=4).cells} \
        if own_cells else set()
    paths = []
    for index in range(count):
        name = names[index % len(names)] if index < len(names) else rng.choice(names)
        notebook = nbformat.read(examples / f"{name}.ipynb", as_version=4)
        for cell in notebook.cells:
            if own_cells and cell.cell_type == "code" and cell.source not in template:
                cell.source += f"\n# written by student {index}"
        notebook.cells.append(nbformat.v4.new_code_cell(f"# submission {index} of the benchmark class"))
        path = folder / f"student{index:04d}_{name}.ipynb"
        nbformat.write(notebook, path)
        paths.append(path)
    return paths


def graded_seconds(paths: list[Path], out: Path, cache: Path, jobs: int, force: bool = True) -> tuple[float, object]:
    from grader.run.batch import grade_batch
    started = time.perf_counter()
    batch = grade_batch(paths, RUBRIC, out, jobs=jobs, cache=cache, force=force)
    return time.perf_counter() - started, batch


def cli_run(sources: list[Path], out: Path, cache: Path, jobs: int) -> treecpu.TreeCpu:
    """`grader grade` of folders or files as a TA runs it: a new process, so start-up (imports, rubric, plan)
    counts; its wall time and the CPU of its whole process tree."""
    done, tree = treecpu.measure(["grade", *map(str, sources), "--rubric", str(RUBRIC), "--out", str(out),
                                  "--cache", str(cache), "--jobs", str(jobs), "--quiet"])
    if done.returncode != 0:
        raise SystemExit(f"grader grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return tree


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
    loaded = treecpu.load()
    with tempfile.TemporaryDirectory(prefix="pg-bench-") as tmp:
        root = Path(tmp)
        (root / "class").mkdir()
        cache = root / "cache"
        paths = generate(root / "class", args.submissions, own_cells=True)
        from bench_nbgrader import compile_grader
        compile_grader()    # as an installed grader has its bytecode
        subprocess.run([sys.executable, "-m", "grader", "kit", str(RUBRIC), "-o", str(root / "kit.json"), "--cache",
                        str(cache)], check=True, capture_output=True)     # expected values computed and cached
        (root / "correct").mkdir()
        correct = generate(root / "correct", args.correct, mix=[("correct", 1)], own_cells=True)
        same_work = correct[:args.speedup_sample]
        # First, while this process has started no thread (owncode forks it): a correct notebook's own code.
        from grader.plan.cases import build_plan
        from grader.rubric.schema import load_rubric
        own = owncode.own_code(same_work, build_plan(load_rubric(RUBRIC), cache))

        correct_run = cli_run([root / "correct"], root / "correct-out", cache, args.jobs)   # start-up in it
        correct_cases = treecpu.cases_cpu(root / "correct-out")
        correct_idle = idle.idle(idle.spans(root / "correct-out" / "gradebook.sqlite"), correct_run.started,
                                 correct_run.ended, args.jobs)
        correct_regrade, correct_batch = graded_seconds(correct, root / "correct-out", cache, args.jobs, force=False)
        # the same regrade as a TA runs it: a new process, imports included
        cli_regrade = cli_run([root / "correct"], root / "correct-out", cache, args.jobs).wall
        full = sum(row.total == row.max_total for row in correct_batch.rows)

        batch_seconds, batch = graded_seconds(paths, root / "out", cache, args.jobs)
        regrade_seconds, regrade = graded_seconds(paths, root / "out", cache, args.jobs, force=False)

        calm = [p for p in paths if "infinite" not in p.name][:args.speedup_sample]
        one_seconds, _ = graded_seconds(calm, root / "one", cache, 1)
        all_seconds, _ = graded_seconds(calm, root / "all", cache, args.jobs)
        # A correct notebook against its own code: the same cases in both (a wrong one may run an exercise a
        # second time with the reference's helpers, which its own code alone never does). Per submission, as the
        # difference of `grader grade --jobs 1` of k notebooks and of one: start-up and the pool left out.
        isolated_run = cli_run(same_work, root / "same", cache, 1)
        isolated_cases = treecpu.cases_cpu(root / "same")
        fixed_run = cli_run(same_work[:1], root / "fixed", cache, 1)

        sample = calm[:args.nbconvert_sample]
        (root / "nbconvert").mkdir()
        nbconvert = nbconvert_seconds(sample, root / "nbconvert") if args.nbconvert_sample else None

    n, m = len(paths), len(calm)
    ours_per_notebook = one_seconds / m
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {loaded} at start, isolation: "
          f"{', '.join(f'{level} ({count})' for level, count in batch.isolation.items())}, the grader's bytecode "
          f"{'compiled ahead, as installed' if treecpu.installed_bytecode() else 'NOT all compiled (read-only?)'}")
    print(f"{args.correct} distinct correct notebooks (the student's cells differ), {args.jobs} workers: "
          f"{correct_run.wall:.1f} s = "
          f"{args.correct / correct_run.wall:.1f} submissions/s as `grader grade` (start-up included), {full} of "
          f"{args.correct} with full marks; "
          f"regrade with nothing changed: {correct_regrade:.2f} s ({cli_regrade:.2f} s as `grader grade`, "
          f"start-up included)")
    print("\n".join(treecpu.breakdown(correct_run, correct_cases, args.correct)))
    print(treecpu.beyond(correct_run))
    print(correct_idle.line())
    print(treecpu.budget(args.correct / 15, correct_run.total, correct_cases, "15 per second"))
    print(f"class of {n} submissions (correct, wrong and hostile mixed), {args.jobs} workers:")
    print(f"  graded in {batch_seconds:.1f} s = {n / batch_seconds:.1f} submissions/s "
          f"({batch.graded} graded, {len(batch.failed)} failed)")
    print(f"  regrade with nothing changed: {regrade_seconds:.2f} s ({regrade.unchanged} unchanged)")
    print(f"{m} submissions without deliberate infinite loops:")
    print(f"  1 worker: {one_seconds:.1f} s ({1000 * ours_per_notebook:.0f} ms per submission), "
          f"{args.jobs} workers: {all_seconds:.1f} s, speedup {one_seconds / all_seconds:.2f}x")
    k = len(same_work)
    print(f"{k} distinct correct notebooks, 1 worker, graded in the sandbox and run in this process:")
    print("\n".join(isolation_lines(isolated_run, fixed_run, isolated_cases, own, k)))
    if nbconvert is not None:
        print(f"  jupyter nbconvert --execute: {nbconvert:.2f} s per notebook ({len(sample)} executed); "
              f"ours {1000 * ours_per_notebook:.0f} ms per notebook on 1 worker: {nbconvert / ours_per_notebook:.0f}x "
              f"faster, {nbconvert / (all_seconds / m):.0f}x with {args.jobs} workers")
    else:
        print("  nbconvert: not measured (pip install -e '.[bench]' for ipykernel)")


def isolation_lines(isolated: treecpu.TreeCpu, fixed: treecpu.TreeCpu, cases: treecpu.CasesCpu,
                    own: owncode.OwnCode, k: int) -> list[str]:
    """A correct notebook graded (per submission: `grader grade` of k less that of one, over k - 1) against
    its own code in this process: wall time (the judged ratio) and CPU time (which load disturbs less)."""
    wall = (isolated.wall - fixed.wall) / (k - 1)
    own_wall, own_cpu = own.seconds / k, own.cpu / k
    lines = [f"  isolated {1000 * wall:.0f} ms, in-process with no isolation {1000 * own_wall:.0f} ms per submission "
             f"(load {1000 * own.load / k:.1f} ms, {own.run // k} cases {1000 * own.cases / k:.0f} ms; "
             f"{own.passed} of {own.run} cases judged right): {wall / own_wall:.2f}x its own code's time (1.3x: "
             f"{1300 * own_wall:.0f} ms), "
             f"isolation overhead {1000 * (wall - own_wall):.0f} ms per submission "
             f"(start-up and one notebook {fixed.wall:.2f} s)"]
    if isolated.total is not None and fixed.total is not None:
        cpu = (isolated.total - fixed.total) / (k - 1)
        grader = (isolated.grader - fixed.grader) / (k - 1)
        lines.append(f"  CPU per submission: graded {1000 * cpu:.0f} ms (grader {1000 * grader:.0f}, sandbox "
                     f"{1000 * (cpu - grader):.0f} of which cases {1000 * cases.seconds / k:.0f}), own code in "
                     f"this process {1000 * own_cpu:.0f} ms (cases {1000 * own.cases_cpu / k:.0f}): "
                     f"{cpu / own_cpu:.2f}x")
        if cases.parts:
            beyond = cases.seconds / k - own.cases_cpu / k
            lines.append(f"  the cases took {1000 * beyond:.0f} ms more in the sandbox than here: "
                         f"{1000 * beyond * k / cases.parts:.2f} ms for each of the {cases.parts / k:.0f} requests a "
                         f"submission (an exercise's public cases, then its hidden ones: between two, the child "
                         f"checks its fork is still pristine and reads the next)")
    return lines

if __name__ == "__main__":
    main()
