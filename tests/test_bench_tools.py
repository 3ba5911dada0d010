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


def _switch(cpu: int, moment: float, before: int, state: str, after: int) -> str:
    return (f"          python {before:5d} [{cpu:03d}] {moment:.6f}:       sched:sched_switch: prev_comm=python "
            f"prev_pid={before} prev_prio=120 prev_state={state} ==> next_comm=python next_pid={after} next_prio=120")


def test_selfwait_counts_the_cpus_no_task_of_the_run_could_use_and_what_the_coordinator_waited_behind():
    """A run of a coordinator (10) that starts a zygote (11, a program of its own) and forks a worker (12), beside
    someone else's task (99), on two CPUs, from perf script's sched lines: each CPU with no task of the run running
    or waiting there is counted per phase; the coordinator's waits are told apart by what held its CPU."""
    import selfwait
    lines = [
        "          python    10 [000] 1.000000: sched:sched_process_exec: filename=/usr/bin/python pid=10 old_pid=10",
        _switch(0, 1.000001, 0, "S", 10),                  # the coordinator runs on CPU 0; CPU 1 has nothing of it
        "          python    10 [000] 1.100000: sched:sched_process_fork: comm=python pid=10 child_comm=python "
        "child_pid=11",
        "          python    10 [000] 1.100001: sched:sched_wakeup_new: comm=python pid=11 prio=120 target_cpu=001",
        "          python    11 [001] 1.100002: sched:sched_process_exec: filename=/usr/bin/python pid=11 old_pid=11",
        _switch(1, 1.100003, 0, "S", 11),                  # the zygote runs on CPU 1: both CPUs busy from here
        _switch(0, 1.200000, 10, "R", 99),                 # someone else's task preempts the coordinator: 0.1 s
        "        python    99 [000] 1.300000: sched:sched_migrate_task: comm=python pid=10 prio=120 orig_cpu=0 "
        "dest_cpu=1",
        _switch(0, 1.300001, 99, "S", 0),
        _switch(1, 1.400000, 11, "S", 10),                 # behind the zygote on CPU 1 until it sleeps: 0.1 s
        "          python    10 [001] 1.450000: sched:sched_process_fork: comm=python pid=10 child_comm=python "
        "child_pid=12",
        "          python    10 [001] 1.450001: sched:sched_wakeup_new: comm=python pid=12 prio=120 target_cpu=000",
        _switch(0, 1.450002, 0, "S", 12),                  # the worker on CPU 0
        _switch(1, 1.500000, 10, "S", 0),                  # the coordinator waits for results: CPU 1 idle
        _switch(0, 1.700000, 12, "X", 0),                  # the worker ends: both idle
    ]
    assert selfwait.coordinator(lines, "/usr/bin/python") == 10
    assert selfwait.lifetime(lines, 10) == (1.0, 1.7)
    waits = selfwait.read(lines, 10, [("start-up", 1.0, 1.45), ("submissions", 1.45, 1.6), ("end", 1.6, 1.7)], 2)
    assert abs(waits.gaps["start-up"] - (0.1 + 0.15)) < 1e-3   # CPU 1 before the zygote; CPU 0 once it moved
    assert abs(waits.gaps["submissions"] - 0.1) < 1e-3         # CPU 1 once the coordinator sleeps
    assert abs(waits.gaps["end"] - 0.1) < 1e-3                 # CPU 1; the worker runs on CPU 0 to its end
    assert abs(waits.behind_others - 0.1) < 1e-3 and abs(waits.behind_own - 0.1) < 1e-3
    assert abs(waits.coordinator_ran - 0.25) < 1e-3 and waits.behind_rest == 0
    # every CPU's time is one of: a task of the run ran, someone else's ran while one waited there, left idle
    assert abs(waits.displaced["start-up"] - 0.1) < 1e-3 and abs(waits.displaced_by["python"] - 0.1) < 1e-3
    assert abs(waits.ran["start-up"] - 0.55) < 1e-3
    for name, span in waits.spans.items():
        assert abs(waits.ran[name] + waits.displaced[name] + waits.waking[name] + waits.gaps[name] - 2 * span) < 1e-3
