"""Benchmark: what each kind of notebook costs, in CPU, and who spends it.

    python bench/bench_examples.py [--copies 4] [--examples correct int-tiles ...] [--rubric R --submissions DIR]

For each bundled example (default: the ten Taoistic Search examples of bench_nbgrader's batch), grades `copies`
distinct copies (each cell the student wrote ends with a comment of its own, as in a real class) with `grader grade
--jobs 1` as a new process and prints per notebook the CPU of the whole run and by who spent it (bench/treecpu.py:
the grader's processes, the sandboxes, the cases as the results record them, the kernel's part), start-up left out.
The start-up is measured once: a run of one correct copy, less one correct notebook. CPU, not wall: it holds on a
busy machine, and it is what the 2 cores of the targets share. Where a batch's time goes is then the sum over its
kinds (bench_nbgrader's 40 are 4 of each example).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import bench_grading
import treecpu
from bench_nbgrader import CALM, compile_grader


@dataclass(frozen=True)
class Cost:
    """CPU seconds per notebook of one example, start-up left out."""

    total: float
    kernel: float
    grader: float
    sandbox: float
    cases: float
    seconds: float     # the results' own wall seconds per notebook


def run(folder: Path, out: Path, rubric: Path, cache: Path) -> tuple[treecpu.TreeCpu, treecpu.CasesCpu]:
    done, tree = treecpu.measure(["grade", str(folder), "--rubric", str(rubric), "--out", str(out), "--cache",
                                  str(cache), "--jobs", "1", "--quiet"])
    if done.returncode != 0:
        raise SystemExit(f"grader grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return tree, treecpu.cases_cpu(out)


def per_notebook(tree: treecpu.TreeCpu, cases: treecpu.CasesCpu, start: treecpu.TreeCpu, copies: int) -> Cost:
    """A run of `copies` notebooks less the start-up, per notebook."""
    def each(value: float | None, fixed: float | None) -> float:
        return ((value or 0.0) - (fixed or 0.0)) / copies
    return Cost(each(tree.total, start.total), each(tree.total_sys, start.total_sys),
                each(tree.grader, start.grader), each(tree.sandbox, start.sandbox), cases.seconds / copies,
                cases.submission_seconds / copies)


def startup(one: treecpu.TreeCpu, many: treecpu.TreeCpu, copies: int) -> treecpu.TreeCpu:
    """The start-up of a run: a run of one correct notebook less one correct notebook (the difference of a run
    of `copies` and of one, over copies - 1)."""
    def fixed(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - (b - a) / (copies - 1)
    return treecpu.TreeCpu(wall=one.wall - (many.wall - one.wall) / (copies - 1),
                           total=fixed(one.total, many.total), total_sys=fixed(one.total_sys, many.total_sys),
                           coordinator=fixed(one.coordinator, many.coordinator) or 0.0,
                           workers=fixed(one.workers, many.workers) or 0.0,
                           grader_sys=fixed(one.grader_sys, many.grader_sys) or 0.0, worker_count=one.worker_count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4, help="distinct copies graded per example (at least 2)")
    parser.add_argument("--examples", nargs="*", default=CALM, help="bundled example names (file stems)")
    parser.add_argument("--rubric", type=Path, default=bench_grading.RUBRIC)
    parser.add_argument("--submissions", type=Path, default=bench_grading.EXAMPLES, help="where the examples are")
    args = parser.parse_args()
    copies = max(2, args.copies)
    loaded = treecpu.load()
    compile_grader()
    with tempfile.TemporaryDirectory(prefix="pg-bench-") as tmp:
        root, cache = Path(tmp), Path(tmp) / "cache"

        def graded(name: str, count: int) -> tuple[treecpu.TreeCpu, treecpu.CasesCpu]:
            folder = root / f"{name}-{count}"
            folder.mkdir()
            bench_grading.generate(folder, count, mix=[(name, 1)], examples=args.submissions, own_cells=True)
            try:
                return run(folder, root / f"{name}-{count}-out", args.rubric, cache)
            finally:
                shutil.rmtree(folder)

        graded("correct", 1)                  # expected values computed and cached
        one, _ = graded("correct", 1)
        many, many_cases = graded("correct", copies)
        start = startup(one, many, copies)
        costs = {"correct": per_notebook(many, many_cases, start, copies)}
        for name in args.examples:
            if name not in costs:
                costs[name] = per_notebook(*graded(name, copies), start, copies)

    print(f"CPU per notebook, `grader grade --jobs 1` of {copies} distinct copies each less the start-up "
          f"({loaded} at start):")
    print(f"  {'example':24s} {'total':>6s} {'kernel':>6s} {'grader':>6s} {'sandbox':>7s} {'cases':>6s} "
          f"{'beyond':>6s}  results' seconds")
    for name, cost in sorted(costs.items(), key=lambda item: -item[1].total):
        print(f"  {name:24s} {1000 * cost.total:4.0f}ms {1000 * cost.kernel:4.0f}ms {1000 * cost.grader:4.0f}ms "
              f"{1000 * cost.sandbox:5.0f}ms {1000 * cost.cases:4.0f}ms {1000 * (cost.sandbox - cost.cases):4.0f}ms"
              f"  {cost.seconds:.2f} s")
    print(f"  ('beyond': the sandbox's CPU beyond its cases) start-up of a `grader grade`: {start.total or 0:.2f} s "
          f"of CPU (coordinator {start.coordinator:.2f} s, worker {start.workers:.2f} s, sandboxes "
          f"{start.sandbox or 0:.2f} s), {start.wall:.2f} s wall")


if __name__ == "__main__":
    main()
