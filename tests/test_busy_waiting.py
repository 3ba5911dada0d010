"""What a busy machine's credit is made of: waiting the machine caused, never waiting a notebook makes itself.

Real subprocesses, pinned to one CPU; no wall time is asserted. A notebook's own processes waiting for each other
earn nothing (the sandbox's cgroup stall, budget.py), and a slow honest load starved of CPU is not cut as if it
hung (budget.LoadClock, runtime.LoadClock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox.isolation import detect
from hogs import run_beside_hogs
from testclock import within

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")


def _stall_kept() -> bool:
    """Whether this machine gives a sandbox a v2 group whose CPU pressure the budget reads."""
    isolation = detect()
    root = isolation.cpu_root or isolation.memory_root
    return root is not None and (root / "cpu.pressure").exists()


# One exercise whose case forks three busy children and spins beside them, all on the sandbox's one CPU: its
# processes wait for each other the whole time. Prints what the budget counted as the sandbox's waiting, and the
# wall and CPU time of the exercise (the kernel's: the sandbox's cgroup).
SELF_MADE = r'''
import json, os, sys, time
cpu = int(sys.argv[1])
os.sched_setaffinity(0, {cpu})
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
source = ("import os, signal, time\n"
          "def crowd():\n"
          "    kids = [os.fork() for _ in range(3)]\n"
          "    if 0 in kids:\n"
          "        while True:\n"
          "            pass\n"
          "    end = time.process_time() + 0.4\n"
          "    while time.process_time() < end:\n"
          "        pass\n"
          "    for kid in kids:\n"
          "        os.kill(kid, signal.SIGKILL)\n"
          "        os.waitpid(kid, 0)\n"
          "    return 1\n")
statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
with Sandbox(statements, {}, ProcessLimits(load_seconds=30, cpu_seconds=60), slack=1000.0) as sandbox:
    sandbox.load(time.monotonic() + 600)
    sandbox.budget.exercise_ended(time.monotonic())   # what the load waited is counted before the exercise
    before, cpu_before, started = sandbox.budget.gone, sandbox._computed(), time.monotonic()
    [outcome] = sandbox.run_exercise([CaseRequest("c", "crowd()", timeout=10.0)], (), lambda *a: None,
                                     time.monotonic() + 600)
    sandbox.budget.child_stopping(sandbox.process.pid, None)   # what the child waited, into `gone`
    waited = sandbox.budget.gone - before
    print(json.dumps({"status": outcome.status, "waited": waited, "wall": time.monotonic() - started,
                      "cpu": sandbox._computed() - cpu_before}))
'''


@pytest.mark.skipif(not _stall_kept(), reason="no cgroup v2 CPU pressure here: the run-queue reading applies")
def test_a_notebooks_processes_waiting_for_each_other_earn_no_credit():
    """Four busy processes of the notebook's own share its one CPU: each waits about three quarters of the time,
    run-queue time the kernel counts, and counted so the fork's earned about that much credit (redteam's notes 12,
    item 1: several such waits at once had a notebook that computes and sleeps by turns "starved" at every run).
    The sandbox's group stalls only while something else runs, so what is counted stays within the wall time in
    which none of the sandbox's processes ran (its wall time less its CPU time): the machine's, whatever its load,
    where the fork's own run-queue time is at least three quarters of that CPU time more."""
    cpu = min(os.sched_getaffinity(0))
    found = subprocess.run([sys.executable, "-c", SELF_MADE, str(cpu)], capture_output=True, text=True,
                           timeout=within(600), env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert found.returncode == 0, found.stderr[-3000:]
    run = json.loads(found.stdout.strip().splitlines()[-1])
    assert run["status"] == "ok", run
    assert run["cpu"] > 0.4, run                                       # the fork and its three children computed
    assert run["waited"] <= run["wall"] - run["cpu"] + 0.05, run       # none of it counted as waiting


# A load whose one statement needs a third of a second of CPU, graded pinned to one CPU beside three busy processes
# of sessions of their own (the kernel shares a CPU between sessions first: each takes as much as the sandbox), with
# a 1 s load budget: the statement takes several seconds of wall time, nearly all of it waiting for a CPU.
STARVED_LOAD = r'''
import json, os, sys, time
cpu = int(sys.argv[1])
os.sched_setaffinity(0, {cpu})
from grader.sandbox.process import ProcessLimits, Sandbox
source = "VALUE = sum(range(12_000_000))\ndef value():\n    return VALUE\n"
statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def", "names": ["VALUE", "value"]}]
print("ready", flush=True)
sys.stdin.readline()
with Sandbox(statements, {}, ProcessLimits(load_seconds=1.0)) as sandbox:
    report = sandbox.load()
    print(json.dumps({"names": list(report.names), "warnings": [w.text for w in report.warnings],
                      "restarts": sandbox.restarts}))
'''


def test_a_slow_load_starved_of_cpu_is_not_cut_as_if_it_hung():
    """Its wall time is far beyond the load's 1 s, its CPU time well within: the runtime's alarm and the parent's
    limit both move by what the kernel kept it waiting, so VALUE is defined as on a quiet machine, where it used
    to be left out ("did not finish within 1 s"), the student's fault."""
    cpu = min(os.sched_getaffinity(0))
    out = run_beside_hogs(["-c", STARVED_LOAD, str(cpu)], cpu, 3, timeout=600)
    report = json.loads(out.strip().splitlines()[-1])
    assert "VALUE" in report["names"] and report["warnings"] == [] and report["restarts"] == 0, report


# A first load in a fresh process (its zygote and child started for it), pinned to one CPU beside twelve busy
# processes of sessions of their own: the start alone waits about a second. Prints the credit as the load left it,
# and the wall and CPU time the grading spent from the sandbox's making (the kernel's: the child's cgroup, this
# thread's).
FIRST_LOAD = r'''
import json, os, sys, time
cpu = int(sys.argv[1])
os.sched_setaffinity(0, {cpu})
from grader.sandbox.isolation import detect
from grader.sandbox.process import ProcessLimits, Sandbox
detect()                  # the isolation probe, which a batch runs ahead of its first submission
print("ready", flush=True)
sys.stdin.readline()
statements = [{"code": "X = 1\n", "filename": "In [1] (cell 1)", "line": 1, "kind": "def", "names": ["X"]}]
started, computed = time.monotonic(), time.thread_time()
with Sandbox(statements, {}, ProcessLimits(load_seconds=30), slack=1000.0) as sandbox:
    sandbox.load(started + 600)
    now = time.monotonic()
    sandbox.budget.until(started, now, sandbox.process.pid, sandbox._computed())
    print(json.dumps({"granted": sandbox.budget.granted, "elapsed": now - started,
                      "computed": sandbox._computed() + time.thread_time() - computed}))
'''


def test_a_childs_start_on_a_busy_machine_is_credited_as_the_machines():
    """The zygote's fork, the jail and the runtime's start are on the submission's time: at a thirteenth of a CPU
    they took about a second, of which the budget credited a few hundredths (only what the child waited once it
    was ready), and a first load whose deadline passed there ran out of "the submission's time" (ta's notes 12:
    0.42 s granted after ~1.8 s starved). Now its group counts from its making, and the zygote's waiting for it
    too: most of the wall time the grading did not compute is credited."""
    cpu = min(os.sched_getaffinity(0))
    out = run_beside_hogs(["-c", FIRST_LOAD, str(cpu)], cpu, 12, timeout=600)
    run = json.loads(out.strip().splitlines()[-1])
    assert run["granted"] >= 0.5 * (run["elapsed"] - run["computed"]), run


# A statement that tries every way a notebook could choose to wait for a CPU: a lower priority (its own, a thread's, a
# fork's), SCHED_IDLE, fewer CPUs. Prints what each attempt got (an errno, or "done") and what the thread kept.
LOWER = r"""
import ctypes, json, os, threading
tried = {}
def attempt(name, call):
    try:
        call()
        tried[name] = "done"
    except OSError as error:
        tried[name] = error.errno
attempt("nice", lambda: os.nice(19))
attempt("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, 0, 10))
attempt("idle", lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)))
attempt("batch", lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)))
attempt("pin", lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
params = ctypes.create_string_buffer(120)   # io_uring_setup(4, params): its workers' CPUs are the ring's to set
ring = ctypes.CDLL(None, use_errno=True).syscall(425, 4, params)
tried["io_uring"] = ctypes.get_errno() if ring < 0 else "done"
ioprio_set = 251 if os.uname().machine == "x86_64" else 30
idle_io = ctypes.CDLL(None, use_errno=True).syscall(ioprio_set, 3, os.getuid(), 3 << 13)
tried["ioprio"] = ctypes.get_errno() if idle_io < 0 else "done"   # IOPRIO_WHO_USER, the idle class
thread = threading.Thread(target=attempt, args=("thread", lambda: os.nice(19)))
thread.start()
thread.join()
kid = os.fork()
if kid == 0:
    try:
        os.nice(19)
        os._exit(0)
    except OSError:
        os._exit(1)
tried["fork"] = "done" if os.waitstatus_to_exitcode(os.waitpid(kid, 0)[1]) == 0 else "refused"
print(json.dumps({"tried": tried, "nice": os.getpriority(os.PRIO_PROCESS, 0), "policy": os.sched_getscheduler(0)}))
"""


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="the filter knows these architectures")
def test_a_notebook_cannot_choose_to_wait_for_a_cpu():
    """How long the sandbox waited for a CPU is the busy machine's credit (its group's stall, budget.py), and a
    thread at nice 19 or SCHED_IDLE beside one busy process waits nearly all the time by its own choice: a statement
    that did so and spun forever had its notebook "machine too busy" (graded again at every run, never judged) on a
    busy machine, where it is cut at its own limit. So no way to lower a priority, change the policy or pin to
    fewer CPUs changes anything, for the runtime's thread, another thread and a fork: a nice value or CPUs seem set
    (honest notebooks call os.nice(5), libraries pin to their own CPUs: in Jupyter they succeed), the rest fails
    as raising a priority does (EPERM)."""
    import errno
    from grader.sandbox.process import ProcessLimits, Sandbox
    statements = [{"code": LOWER, "filename": "In [1] (cell 1)", "line": 1, "kind": "statement", "names": []}]
    with Sandbox(statements, {}, ProcessLimits(load_seconds=30.0)) as sandbox:
        report = sandbox.load()
    assert report.warnings == (), report.warnings
    found = json.loads(report.output.strip().splitlines()[-1])
    assert found["tried"] == {"nice": "done", "setpriority": "done", "idle": errno.EPERM,
                              "batch": errno.EPERM, "pin": "done", "io_uring": errno.EPERM, "ioprio": errno.EPERM,
                              "thread": "done", "fork": "done"}, found
    assert found["nice"] == os.getpriority(os.PRIO_PROCESS, 0) and found["policy"] == os.SCHED_OTHER, found
