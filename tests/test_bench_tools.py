"""The benchmarks' measuring tools count what they say they count (how fast is never asserted: bench/ prints it).

bench/treecpu.py splits a `grader grade` run's CPU into the grader's processes and the sandboxes; bench/owncode.py
runs a notebook's own code on the grader's very requests. Both are checked on real notebooks, in subprocesses (the
in-process run forks, which a test process with pytest-timeout's thread must not do).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import bench_grading  # noqa: E402
from grader.rubric.schema import load_rubric  # noqa: E402
import treecpu  # noqa: E402


def test_tree_cpu_counts_the_coordinator_each_worker_and_the_sandboxes_around_their_cases(tmp_path):
    (tmp_path / "class").mkdir()
    bench_grading.generate(tmp_path / "class", 3, mix=[("correct", 1)])
    done, tree = treecpu.measure(["grade", str(tmp_path / "class"), "--rubric", str(bench_grading.RUBRIC), "--out",
                                  str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), "--jobs", "2", "--quiet"])
    assert done.returncode == 0, done.stderr
    cases = treecpu.cases_cpu(tmp_path / "out")
    assert (cases.submissions, tree.worker_count) == (3, 2)
    assert cases.cases > 100 * 3
    assert tree.coordinator > 0 and tree.workers > 0
    if tree.total is not None:      # a cgroup counted the whole tree: the cases ran in its sandboxes
        assert tree.sandbox is not None and tree.sandbox > cases.seconds > 0
        assert not list(treecpu.CPUACCT.glob(f"pg-bench-{os.getpid()}-*")), "the run's group is removed"
    lines = treecpu.breakdown(tree, cases, 3)
    assert "grader" in lines[0] and "2 workers" in lines[0]
    # A correct notebook's exercises run their own runs only: one request for an exercise's public cases and one
    # for its hidden ones (OwnRunsFirst), as many as the rubric's exercises have of each.
    exercises = load_rubric(bench_grading.RUBRIC).exercises
    assert cases.parts == 3 * sum(len({case.visibility for case in exercise.cases}) for exercise in exercises)


def test_the_isolation_lines_share_the_cases_cpu_beyond_the_own_code_out_over_the_requests():
    """Each request's first case is charged the child's work since the last answer (its pristine check, the read):
    the 1-worker lines show what that costs a request, the cost fewer requests would save."""
    from owncode import OwnCode
    run = treecpu.TreeCpu(wall=3.0, total=3.0, total_sys=0.5, coordinator=0.3, workers=0.4, grader_sys=0.1,
                          worker_count=1)
    one = treecpu.TreeCpu(wall=0.5, total=0.6, total_sys=0.1, coordinator=0.2, workers=0.1, grader_sys=0.05,
                          worker_count=1)
    cases = treecpu.CasesCpu(seconds=2.0, cases=200, submissions=10, submission_seconds=2.5, parts=40)
    own = OwnCode(load=0.01, cases=1.5, load_cpu=0.01, cases_cpu=1.6, run=200, passed=200)
    lines = bench_grading.isolation_lines(run, one, cases, own, 10)
    assert lines[-1].startswith("  the cases took 40 ms more in the sandbox than here: 10.00 ms for each of the 4 "
                                "requests a submission"), lines


def test_the_grader_is_measured_with_its_bytecode_as_installed():
    """What the zygote loads from the package (it never imports `grader`, and runs with PYTHONDONTWRITEBYTECODE)
    has current bytecode once a bench measures: every zygote compiled it otherwise, 0.16 s of CPU at each start."""
    import importlib.util
    runtime = REPO / "grader" / "sandbox" / "runtime.py"
    cached = Path(importlib.util.cache_from_source(str(runtime)))
    cached.unlink(missing_ok=True)
    assert treecpu.installed_bytecode.__wrapped__()
    header = cached.read_bytes()[:16]
    assert header[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(header[8:12], "little") == int(runtime.stat().st_mtime) & 0xFFFFFFFF


OWN_CODE = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import owncode
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
plan = build_plan(load_rubric(Path(sys.argv[2])), Path(sys.argv[3]))
print(json.dumps([owncode.own_code([Path(path)], plan).row() for path in sys.argv[4:]]))
"""


def test_own_code_runs_the_cases_the_grader_sends_and_gets_the_graders_verdicts(tmp_path):
    """A correct notebook's own code answers every case right (main's cases need their `set: Start: EasyStart`),
    a broken one does not: the in-process run is the grader's work, not an easier one."""
    right = bench_grading.generate(tmp_path, 1, mix=[("correct", 1)])[0]
    (tmp_path / "w").mkdir()
    wrong = bench_grading.generate(tmp_path / "w", 1, mix=[("find-tile-transposed", 1)])[0]
    done = subprocess.run([sys.executable, "-c", OWN_CODE, str(BENCH), str(bench_grading.RUBRIC),
                           str(tmp_path / "cache"), str(right), str(wrong)], capture_output=True, text=True,
                          check=True)
    (load, cases, load_cpu, cases_cpu, run, passed), wrong_row = json.loads(done.stdout)
    assert run > 100 and passed == run
    assert cases > 0 and cases_cpu > 0
    assert wrong_row[4] == run and wrong_row[5] < run
