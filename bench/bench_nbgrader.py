"""Benchmark: this grader beside nbgrader autograde, on the same batch, in one run.

    python bench/bench_nbgrader.py [--submissions 40] [--jobs 2] [--venv DIR]

Installs nbgrader from PyPI into its own virtual environment (DIR, default
~/.cache/puzzle-grader-bench/nbgrader-venv, reused when present), builds an nbgrader course whose assignment is
the Taoistic Search template with one autograder test cell, submits the same generated class to both graders
(the bundled examples without deliberate infinite loops, each with its own comment cell so none share a
hash), and prints the wall time per submission of `nbgrader autograde` and of `grader grade` with `--jobs`
workers, and their ratio. nbgrader runs one kernel per notebook, serially, as `nbgrader autograde` does.
Ours is timed as a TA runs it, a new `grader grade` process, so its start-up (interpreter, imports, rubric,
plan from the cache, workers) is in the time; the script also prints where our CPU went (the grader's
processes, the sandboxes, the students' cases: see treecpu.py), the notebooks' own code on the same cases
(owncode.py: the floor, which no grader goes below), the machine's load when it started, that start-up alone and
an unchanged regrade of the same class.
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
from pathlib import Path

import idle
import owncode
import treecpu

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
ASSIGNMENT = REPO / "assignments" / "taoistic-search"
EXAMPLES = ASSIGNMENT / "submissions"
CALM = ["correct", "main-animation", "seed-000", "old-era", "move-dir-transposed", "manhattan-counts-blank",
        "extract-move-of-tile", "find-tile-transposed", "syntax-error", "int-tiles"]
NAME = "taoistic"
# The autograder tests nbgrader runs after the student's cells: a few calls per graded function (nbgrader
# itself only executes the notebook; what is checked is up to the course).
TESTS = """\
find_tile('0', Start)
assert len(next_states(Start)) > 0
"""


def venv_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"installing nbgrader into {venv} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "nbgrader", "ipykernel"], check=True)
        subprocess.run([str(python), "-m", "ipykernel", "install", "--prefix", str(venv), "--name", "python3"],
                       check=True, stdout=subprocess.DEVNULL)
    return python


def grade_cell() -> dict:
    return {"cell_type": "code", "execution_count": None, "id": "autograder-tests", "outputs": [],
            "metadata": {"nbgrader": {"grade": True, "grade_id": "tests", "points": 30, "solution": False,
                                      "locked": True, "schema_version": 3}},
            "source": TESTS.splitlines(keepends=True)}


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def with_cell(notebook: dict, index: int | None, template: frozenset[str] = frozenset()) -> dict:
    """The notebook with the autograder's test cell, and for a submission its own comment cell; each of its code
    cells that is not one of the `template`'s ends with a comment of its own too, as a real class's cells
    differ from student to student (what the grader keeps per cell text is then not shared)."""
    extra = [] if index is None else [{"cell_type": "code", "execution_count": None, "id": f"bench-{index}",
                                       "metadata": {}, "outputs": [],
                                       "source": [f"# submission {index} of the benchmark class"]}]
    cells = [dict(c) for c in notebook["cells"] if c.get("id") != "autograder-tests"]   # the caller's untouched
    for position, cell in enumerate(cells):
        cell.setdefault("id", f"c{position}")
        if index is not None and cell.get("cell_type") == "code" and template and _text(cell) not in template:
            cell["source"] = _text(cell) + f"\n# written by student {index}"
    return {**notebook, "cells": [*cells, *extra, grade_cell()], "nbformat": 4,
            "nbformat_minor": max(5, notebook.get("nbformat_minor", 5))}


def build_course(root: Path, count: int) -> list[Path]:
    """An nbgrader course (source assignment, submitted class) and the same class as plain files for us."""
    source = root / "course" / "source" / NAME
    source.mkdir(parents=True)
    template = json.loads((ASSIGNMENT / "template.ipynb").read_text(encoding="utf-8"))
    given = frozenset(_text(cell) for cell in template["cells"])
    (source / f"{NAME}.ipynb").write_text(json.dumps(with_cell(template, None)), encoding="utf-8")
    for support in (ASSIGNMENT / "support").iterdir():
        shutil.copy(support, source / support.name)
    ours = root / "class"
    ours.mkdir()
    paths = []
    for index in range(count):
        name = CALM[index % len(CALM)]
        student = f"student{index:03d}"
        notebook = json.loads((EXAMPLES / f"{name}.ipynb").read_text(encoding="utf-8"))
        submitted = root / "course" / "submitted" / student / NAME
        submitted.mkdir(parents=True)
        (submitted / f"{NAME}.ipynb").write_text(json.dumps(with_cell(notebook, index, given)), encoding="utf-8")
        for support in (ASSIGNMENT / "support").iterdir():
            shutil.copy(support, submitted / support.name)
        (submitted / "timestamp.txt").write_text("2026-11-20 12:00:00 UTC\n", encoding="utf-8")
        path = ours / f"{student}.ipynb"
        path.write_text(json.dumps(with_cell(notebook, index, given)), encoding="utf-8")
        paths.append(path)
    (root / "course" / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root / 'course')!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / 'course' / 'gradebook.db'}'\n"
        "c.ExecutePreprocessor.timeout = 60\n"
        "c.Execute.timeout = 60\n", encoding="utf-8")
    return paths


def run_nbgrader(python: Path, course: Path, students: int) -> float:
    jupyter = [str(python), "-m", "nbgrader"]
    env = {**os.environ, "JUPYTER_PATH": str(python.parent.parent / "share" / "jupyter"),
           "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"}    # nbgrader runs `alembic`
    subprocess.run([*jupyter, "generate_assignment", NAME, "--force", "--create"], cwd=course, env=env, check=True,
                   capture_output=True)
    started = time.perf_counter()
    done = subprocess.run([*jupyter, "autograde", NAME, "--force", "--create"], cwd=course, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    graded = list((course / "autograded").glob(f"*/{NAME}/{NAME}.ipynb"))
    if done.returncode != 0 or len(graded) != students:
        raise SystemExit(f"nbgrader autograde graded {len(graded)} of {students} ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
    return seconds


def compile_grader() -> None:
    """Write the grader's bytecode, as pip does when it installs a package: run from a checkout with
    PYTHONDONTWRITEBYTECODE set, every `grader` start would otherwise compile its modules again (about 0.15 s)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "grader")], check=True,
                   capture_output=True)


def run_ours(paths: list[Path], root: Path, jobs: int) -> tuple[treecpu.TreeCpu, str]:
    """`grader grade` of the class as a new process (wall time and CPU of its whole tree), the cache warm."""
    cache = root / "cache"
    compile_grader()
    subprocess.run([sys.executable, "-m", "grader", "kit", str(RUBRIC), "-o", str(root / "kit.json"), "--cache",
                    str(cache)], check=True, capture_output=True)     # expected values cached, as on any rerun
    done, tree = treecpu.measure(["grade", *map(str, paths), "--rubric", str(RUBRIC), "--out", str(root / "ours"),
                                  "--cache", str(cache), "--jobs", str(jobs), "--quiet"])
    if done.returncode != 0:
        raise SystemExit(f"grader grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return tree, done.stdout.strip().split("; results in ")[0]    # the counts, not the temp folder


STARTUP = """
import json, sys, time
started = time.perf_counter()
import grader.cli, grader.run.batch
imported = time.perf_counter()
from grader.rubric.schema import load_rubric
rubric = load_rubric(sys.argv[1])
loaded = time.perf_counter()
from grader.plan.cases import build_plan
build_plan(rubric, __import__("pathlib").Path(sys.argv[2]))
print(json.dumps([imported - started, loaded - imported, time.perf_counter() - loaded]))
"""


def startup(root: Path) -> tuple[float, list[float]]:
    """The wall time of a Python process that does nothing, and in a new process the grader's imports, the
    rubric and the plan from the warm cache: what any `grader grade` pays before its first submission."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    interpreter = time.perf_counter() - started
    done = subprocess.run([sys.executable, "-c", STARTUP, str(RUBRIC), str(root / "cache")], check=True,
                          capture_output=True, text=True)
    return interpreter, json.loads(done.stdout)


def own_code(paths: list[Path], cache: Path) -> owncode.OwnCode:
    """The class's own code (owncode.py: each notebook's load and own runs in a fork of this process, no
    isolation, no second run), run before this process starts any thread (owncode forks it). The plan is built
    here into the run's cache, as `grader kit` would (its expected values are then found cached)."""
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric
    return owncode.own_code(paths, build_plan(load_rubric(RUBRIC), cache))


def floor(own: owncode.OwnCode, allowed: float, total: float | None, n: int) -> str:
    """What the notebooks' own code takes of what a target allows (`allowed` s of CPU): the rest is all the
    grader may spend (its processes, the sandboxes beyond the code, the second runs with isolated helpers)."""
    spent = f" (this run spent {total - own.cpu:.2f} s on them)" if total is not None else ""
    return (f"  the notebooks' own code alone (owncode.py: load and own runs in this process, no second run): "
            f"{own.cpu:.2f} s of CPU = {1000 * own.cpu / n:.0f} ms per submission, which leaves "
            f"{allowed - own.cpu:.2f} s for the rest{spent}")


def by_example(results: Path) -> str:
    """The results' own seconds summed per bundled example (studentNNN is CALM[NNN % len(CALM)]), slowest first:
    which kinds of notebook the batch's time goes to."""
    seconds: dict[str, float] = {}
    for path in results.glob("student*.json"):
        kind = CALM[int(path.stem.removeprefix("student")) % len(CALM)]
        seconds[kind] = seconds.get(kind, 0.0) + json.loads(path.read_text(encoding="utf-8"))["seconds"]
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    shown = ", ".join(f"{kind} {total:.1f} s" for kind, total in ranked[:3])
    rest = [total for _, total in ranked[3:]]
    return shown + (f", the other {len(rest)} {min(rest):.1f}-{max(rest):.1f} s" if rest else "")


def regrade(paths: list[Path], root: Path, jobs: int) -> treecpu.TreeCpu:
    """An unchanged regrade of the class, as a new `grader grade` process: its wall time and CPU."""
    done, tree = treecpu.measure(["grade", *map(str, paths), "--rubric", str(RUBRIC), "--out", str(root / "ours"),
                                  "--cache", str(root / "cache"), "--jobs", str(jobs), "--quiet"])
    if done.returncode != 0:
        raise SystemExit(f"grader grade (regrade) failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "puzzle-grader-bench" / "nbgrader-venv")
    args = parser.parse_args()
    python = venv_python(args.venv)
    loaded = treecpu.load()
    root = Path(tempfile.mkdtemp(prefix="puzzle-grader-bench-nbgrader-"))
    try:
        paths = build_course(root, args.submissions)
        own = own_code(paths, root / "cache")
        nbgrader = run_nbgrader(python, root / "course", args.submissions)
        tree, summary = run_ours(paths, root, args.jobs)
        ours = tree.wall
        cases = treecpu.cases_cpu(root / "ours")
        kinds = by_example(root / "ours")
        waited = idle.idle(idle.spans(root / "ours" / "gradebook.sqlite"), tree.started, tree.ended, args.jobs)
        again = regrade(paths, root, args.jobs)
        interpreter, (imports, rubric, plan) = startup(root)
        n = args.submissions
        compiled = "compiled ahead, as pip compiles nbgrader's" if treecpu.installed_bytecode() else "NOT all compiled"
        print(f"the same {n} Taoistic Search submissions, one run, {os.cpu_count()} cores ({loaded} at start; the "
              f"grader's bytecode {compiled}):")
        print(f"  nbgrader autograde:          {nbgrader:7.1f} s = {nbgrader / n:.2f} s per submission")
        print(f"  grader grade --jobs {args.jobs}:       {ours:7.1f} s = {ours / n:.3f} s per submission  ({summary})")
        print(f"  ratio: {nbgrader / ours:.1f}x nbgrader autograde")
        print("\n".join(treecpu.breakdown(tree, cases, n)))
        print(treecpu.beyond(tree))
        print(waited.line())
        print(treecpu.budget(nbgrader / 30, tree.total, cases, "30x"))
        print(floor(own, nbgrader / 30 * (os.cpu_count() or 1), tree.total, n))
        print(f"  results' seconds per example, summed: {kinds}")
        cpu = f"of the grader {again.grader:.2f} s" if again.total is None or again.sandbox is None else \
            f"{again.total:.2f} s (grader {again.grader:.2f} s, sandboxes {again.sandbox:.2f} s)"
        print(f"  regrade with nothing changed: {again.wall:.2f} s as `grader grade`, start-up included; CPU {cpu}")
        print(f"  start-up: Python {interpreter:.2f} s, then imports {imports:.3f} s, rubric {rubric:.3f} s, "
              f"plan from the cache {plan:.3f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
