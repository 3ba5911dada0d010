"""A case's limit is CPU time read from the kernel: waiting (for a CPU on a busy machine, for the parent's answers
to isolated-helper calls, or asleep) is not computing. Real children; only statuses are asserted, never wall time:
each test makes the wall time far exceed the limit while the CPU time stays far below it, or the reverse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

from grader import codec
from grader.sandbox import cpuclock
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox


def run(source: str, *cases: CaseRequest, isolate=(), oracle=None):
    statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    with Sandbox(statements, {}, ProcessLimits(load_seconds=5)) as sandbox:
        sandbox.load(time.monotonic() + 60)
        return sandbox.run_exercise(list(cases), isolate, oracle or (lambda *a: None), time.monotonic() + 120)


class _IdleMeter:
    """The sandbox's cgroup as a case clock reads it: the case itself used next to no CPU."""

    def seconds(self) -> float:
        return 0.01


def _hogs(cpu: int, count: int = 3) -> list[subprocess.Popen]:
    """`count` processes spinning on `cpu`: whatever else may run only there waits for a CPU."""
    hog = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(count)]


def _waited(pid: int) -> float:
    """Process `pid`'s run-queue time so far, as the kernel counts it (not waits_by_choice's reading)."""
    with open(f"/proc/{pid}/schedstat", "rb") as schedstat:
        return int(schedstat.read().split()[1]) / 1e9


def test_a_case_that_sleeps_past_its_limit_is_not_charged_for_waiting():
    source = "import time\ndef nap():\n    time.sleep(1.5)\n    return 7\n"
    [outcome] = run(source, CaseRequest("c1", "nap()", timeout=0.3))
    assert outcome.status == "ok" and codec.decode(outcome.value) == 7
    assert outcome.cpu_seconds is not None and outcome.cpu_seconds < 0.3


def test_a_case_that_waits_past_the_wall_backstop_is_stopped_and_says_it_was_waiting():
    source = "import time\ndef forever():\n    time.sleep(600)\n"
    [outcome] = run(source, CaseRequest("c1", "forever()", timeout=0.2))
    assert outcome.status == "timeout"
    assert "waiting" in outcome.error["message"] and outcome.error.get("reason") != "starved"


def test_a_case_that_computes_past_its_limit_with_every_alarm_ignored_is_stopped_by_its_cpu_time():
    source = ("import signal\ndef spin():\n    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
              "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n"
              "def fine():\n    return 1\n")
    outcomes = run(source, CaseRequest("c1", "spin()", timeout=1.0), CaseRequest("c2", "fine()"))
    assert [o.status for o in outcomes] == ["timeout", "ok"]
    # Stopped by its CPU time, however busy the machine: starved, it only takes longer (never a wall-clock verdict).
    assert "CPU time (stopped)" in outcomes[0].error["message"]


def test_round_trips_to_the_parent_for_isolated_helpers_are_not_charged_to_the_case():
    """Thousands of oracle calls: each is a pipe round trip through the parent, which on a busy machine costs
    far more wall time than the case's limit; the child's CPU time for them is small."""
    source = "def many(helper):\n    return sum(helper(i) for i in range(3000))\n\ndef helper(x):\n    return 0\n"
    [outcome] = run(source, CaseRequest("c1", "many(helper)", timeout=0.5, oracle_calls=5000),
                    isolate=["helper"], oracle=lambda name, args, kwargs: args[0])
    assert outcome.status == "ok", outcome
    assert codec.decode(outcome.value) == sum(range(3000))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_case_slowed_by_other_processes_is_judged_by_its_own_cpu_time():
    """Three busy processes share one CPU with the case, which needs 0.6 s of CPU under a 1 s limit: at least 1.2 s
    of wall time (the sandbox's own session is a scheduling group of its own: half the CPU at most), a timeout by
    any wall clock, an answer by the kernel's CPU accounting. The grader keeps the child to the CPUs of the thread
    that starts it (process._cpus): a notebook may no longer pin itself (cd21128's seccomp filter)."""
    mask = os.sched_getaffinity(0)
    cpu = min(mask)
    hogs = _hogs(cpu)
    try:
        source = ("import time\ndef work():\n"
                  "    end = time.process_time() + 0.6\n    while time.process_time() < end:\n        pass\n"
                  "    return 'done'\n")
        os.sched_setaffinity(0, {cpu})
        try:
            [outcome] = run(source, CaseRequest("c1", "work()", timeout=1.0))
        finally:
            os.sched_setaffinity(0, mask)
    finally:
        for process in hogs:
            process.kill()
            process.wait()
    assert outcome.status == "ok", outcome
    assert codec.decode(outcome.value) == "done"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_run_queue_time_a_process_chose_by_its_priority_cannot_make_a_case_starved():
    """The fork whose run-queue time is read is the one the child's `forked` frame names. A decoy at the lowest
    priority, on a CPU a busy process holds, piles up run-queue time using almost no CPU: named as the fork of a
    case that sleeps, it made that case "starved" (a grader problem) at the wall backstop instead of a timeout."""
    cpu = min(os.sched_getaffinity(0))
    hog = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    decoy = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nos.nice(19)\nwhile True:\n    pass\n"
    honest = "import time\ntime.sleep(600)\n"
    processes = [subprocess.Popen([sys.executable, "-c", source]) for source in (hog, decoy, honest)]
    try:
        decoy_pid = processes[1].pid
        stop = time.monotonic() + 60     # not a verdict: only how long to wait for the kernel's counts to move
        while os.getpriority(os.PRIO_PROCESS, decoy_pid) != 19 and time.monotonic() < stop:
            time.sleep(0.01)
        before = _waited(decoy_pid)      # its interpreter's start waited for a CPU like any other process
        while _waited(decoy_pid) < before + 0.05 and time.monotonic() < stop:
            time.sleep(0.02)
        assert _waited(decoy_pid) >= before + 0.05   # kept waiting for a CPU at its chosen priority
        usage = cpuclock.read_usage(cpuclock.Exercise(runtime=decoy_pid, fork=decoy_pid))
        assert usage is not None and usage.waiting == 0.0
        assert cpuclock.waits_by_choice(processes[1].pid)
        assert not cpuclock.waits_by_choice(processes[2].pid)   # a process scheduled as the grader is
    finally:
        for process in processes:
            process.kill()
            process.wait()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_case_waiting_for_answers_while_the_parent_waits_for_a_cpu_is_not_a_timeout():
    """A rerun with isolated helpers waits on the parent's answers; on a busy machine the parent waits for a CPU
    before it reads each call, a wait the child's own run-queue time does not show. eight-puzzle's
    inversions-with-blank lost its astar_search rerun at load 14 (cases "did not finish within 10 s of wall time,
    having used 0.37 s of CPU time: it was waiting"), and the test of its total failed. Here the parent (this
    thread) is kept runnable on one CPU with three busy processes while the sandbox's count stays small."""
    from grader.sandbox import process

    mask = os.sched_getaffinity(0)
    cpu = min(mask)
    hogs = _hogs(cpu)
    case = CaseRequest("c1", "f()", timeout=0.1)
    deadline = time.monotonic() + 600
    try:
        clock = process._CaseClock(case.timeout, time.monotonic(), None, _IdleMeter(), spent=0.0)
        assert clock.expired(case, deadline) is None          # the first look: the counts start here
        os.sched_setaffinity(0, {cpu})
        try:
            while time.monotonic() < clock.backstop:          # runnable, as while reading and answering calls
                pass
        finally:
            os.sched_setaffinity(0, mask)
        assert clock.expired(case, deadline) is None          # starved: it goes on until its CPU time is spent
    finally:
        for hog_process in hogs:
            hog_process.kill()
            hog_process.wait()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_run_queue_time_from_before_the_first_check_cannot_make_a_case_starved():
    """A fork waiting by its own choice (here pinned to a CPU three busy processes hold) is read as waiting 0.0.
    Read so at the case's first check and set free before the next, its run-queue time since the first check was
    its whole life's: a fork that piled up waiting in its earlier cases (or pinned, before the check), then
    stopped or slept, was "starved" at the wall backstop (a grader problem held until the submission's time ran
    out) instead of a timeout. Here it is stopped (never runnable) from the first check on."""
    from grader.sandbox import process

    mask = os.sched_getaffinity(0)
    cpu = min(mask)
    hogs = _hogs(cpu)
    fork = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    case = CaseRequest("c1", "f()", timeout=0.1)

    try:
        os.sched_setaffinity(fork.pid, {cpu})            # its choice: one CPU, a busy one
        stop = time.monotonic() + 60     # not a verdict: only how long to wait for the kernel's counts to move
        while _waited(fork.pid) < 1.0 and time.monotonic() < stop:
            time.sleep(0.02)
        assert _waited(fork.pid) >= 1.0
        clock = process._CaseClock(case.timeout, time.monotonic(), lambda: cpuclock.Exercise(fork.pid, fork.pid),
                                   _IdleMeter(), spent=0.0)
        assert clock.expired(case, time.monotonic() + 600) is None     # the first look: the counts start here
        os.kill(fork.pid, signal.SIGSTOP)                 # never runnable again: it cannot wait for a CPU
        os.sched_setaffinity(fork.pid, mask)              # and no longer waiting by choice
        usage = clock.usage()
        assert usage is not None and usage.waiting < 0.5, usage
    finally:
        for child in [*hogs, fork]:
            child.kill()
            child.wait()


@given(wall=st.floats(0.01, 1e4), share=st.floats(0.0, 1.0))
def test_a_wall_backstop_is_the_machines_fault_exactly_when_it_kept_the_case_waiting_for_a_cpu(wall, share):
    verdict = cpuclock.wall_verdict(wall, share * wall)
    assert verdict == ("starved" if share >= cpuclock.STARVED_SHARE else "waited")


def test_a_case_that_answers_in_time_costs_no_proc_reading_and_one_past_it_is_read_from_the_kernel():
    """Where a cgroup counts the sandbox, every case's CPU time is its count (a pread at each end); elsewhere a
    case in time by the wall clock costs no reading, and one past it is read from the tree in /proc."""
    from grader.sandbox.isolation import detect

    source = "import time\ndef quick():\n    return 1\ndef late():\n    time.sleep(1.0)\n    return 2\n"
    quick, late = run(source, CaseRequest("c1", "quick()"), CaseRequest("c2", "late()", timeout=0.2))
    assert late.status == "ok" and late.cpu_seconds is not None     # the kernel's number, not the child's
    assert quick.status == "ok"
    if detect().cpu_root is None:
        assert quick.cpu_seconds is None       # in time by the wall clock: nothing read
    else:
        assert quick.cpu_seconds is not None and quick.cpu_seconds < late.cpu_seconds + 0.2


def test_a_case_keeps_the_cpu_time_the_parent_measured_and_old_results_still_read(tmp_path, grader_cache):
    """CaseResult.cpu_seconds: the kernel's count as the parent read it (a case late by the wall clock, above),
    kept by the judge, stored in the JSON and the gradebook and shown in the class report beside the wall time;
    a case it did not measure, and a result stored before the field existed, read as None."""
    import json
    from dataclasses import replace
    from pathlib import Path

    from grader.judge.grading import judge
    from grader.plan.cases import build_plan
    from grader.report.class_outputs import OUTPUTS, Classroom
    from grader.rubric.schema import load_rubric
    from grader.sandbox.process import Outcome
    from grader.store.gradebook import Gradebook
    from grader.store.results import ExerciseResult, SubmissionResult, read_json, write_json

    plan = build_plan(load_rubric(Path(__file__).resolve().parents[1] / "rubrics" / "taoistic-search.yaml"),
                      grader_cache)
    exercise = plan.rubric.exercises[0]
    first, second = plan.cases[exercise.id][:2]
    measured = judge(plan, exercise, first, Outcome(first.id, "ok", value=plan.expected[first.id].value,
                                                    seconds=1.5, cpu_seconds=0.25))
    unmeasured = judge(plan, exercise, second, Outcome(second.id, "ok", value=plan.expected[second.id].value,
                                                       seconds=0.01))
    assert (measured.status, measured.cpu_seconds, unmeasured.cpu_seconds) == ("pass", 0.25, None)
    result = SubmissionResult("s", "s.ipynb", "0" * 64, plan.rubric.assignment, plan.rubric.sha256, "0", "rlimits",
                              2.0, 2.0, (ExerciseResult(exercise.id, exercise.title, 2.0, 2.0,
                                                        (measured, unmeasured)),))
    folder = tmp_path / "results"
    written = write_json(result, folder)
    assert read_json(written) == result
    with Gradebook(folder / "gradebook.sqlite") as book:
        book.record("s", "s.ipynb", result)
        assert book.result("s", result.rubric).exercises[0].cases[0].cpu_seconds == 0.25
    data = json.loads(written.read_text(encoding="utf-8"))
    for case in data["exercises"][0]["cases"]:    # as stored before the field existed
        case.pop("cpu_seconds", None)
    written.write_text(json.dumps(data), encoding="utf-8")
    assert read_json(written) == replace(result, exercises=(replace(result.exercises[0], cases=(
        replace(measured, cpu_seconds=None), unmeasured)),))
    pytest.importorskip("jinja2")
    OUTPUTS["dashboard"].write(Classroom(folder, similarity=False), tmp_path / "class.html")
    page = (tmp_path / "class.html").read_text(encoding="utf-8")
    assert "their CPU, seconds" in page and '<td class="num">0.25</td>' in page



def test_a_case_that_computes_in_a_process_it_never_waits_for_is_charged_for_it():
    """The fork only reads a pipe (no CPU of its own) while its child computes without end: the child's CPU time
    is the case's. Before, only the fork's was counted, so the case ran on to the wall backstop (ten times its
    limit) charged nothing, and a hidden worker that finished before it answered in time. Judged by the CPU
    time charged, which any busy machine leaves far above 0.1 s in the 9 s the case may run after its first
    check."""
    source = ("import os\ndef elsewhere():\n    r, w = os.pipe()\n    if os.fork() == 0:\n"
              "        while True:\n            pass\n    os.read(r, 1)\n"
              "def fine():\n    return 1\n")
    outcomes = run(source, CaseRequest("c1", "elsewhere()", timeout=1.0), CaseRequest("c2", "fine()"))
    assert [o.status for o in outcomes] == ["timeout", "ok"], outcomes
    assert outcomes[0].cpu_seconds is not None and outcomes[0].cpu_seconds > 0.1, outcomes[0]


@settings(deadline=None)   # no test asserts on wall time
@given(used=st.integers(0, 10_000), allowed=st.integers(0, 10_000), tick=st.sampled_from([1, 10]))
def test_a_tie_between_the_measure_and_the_limit_goes_to_the_student(used, allowed, tick):
    """/proc counts CPU time in ticks (10 ms here), rounded down and summed over processes; a cgroup in ns.
    A measure equal to the allowance may stand for more or for exactly it: only a measure above it is over,
    so a timeout is never given for time the case may not have used (milliseconds as integers: exact)."""
    measured = used - used % tick
    if cpuclock.over(measured / 1000, allowed / 1000):
        assert used > allowed
    assert not cpuclock.over(allowed / 1000, allowed / 1000)


def test_an_answer_whose_cpu_time_ties_its_allowance_is_in_time_and_one_tick_more_is_late():
    """The parent judges an answer by the one rule (cpuclock.over), the same that stops a running case."""
    from grader.sandbox import frames
    from grader.sandbox.process import GRACE_SECONDS

    sandbox = Sandbox([], {}, ProcessLimits())
    case = CaseRequest("c1", "f()", timeout=1.0)
    answer = frames.Result("c1", "ok", value=1)
    tie = sandbox._outcome(case, answer, 0.1, 1.0 + GRACE_SECONDS)
    late = sandbox._outcome(case, answer, 0.1, 1.0 + GRACE_SECONDS + 0.01)
    assert (tie.status, late.status) == ("ok", "timeout")


def test_a_forked_frame_naming_a_process_below_the_fork_does_not_hide_the_forks_cpu_time():
    """The pid a `forked` frame names is the child's word. Patched at load (the runtime's objects are the
    student's to reach), the runtime named a sleeping child of the fork; with the kernel's /proc as the clock (no
    cgroup), that child's parent was taken for the runtime, the fork's own CPU time was never counted, and a case
    computing four times its limit answered "ok" having used 0.0 s."""
    from grader.sandbox.isolation import Isolation
    source = ("import os, signal, sys, time\n"
              "def slow():\n    signal.setitimer(signal.ITIMER_PROF, 0)\n"
              "    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n    end = time.process_time() + 4\n"
              "    while time.process_time() < end:\n        pass\n    return 1\n"
              "_child = sys._getframe(1).f_locals['self']\n_send = type(_child).send\n"
              "def _forged(self, message, _send=_send):\n"
              "    if type(message) is dict and message.get('op') == 'forked':\n        me = os.getpid()\n"
              "        pid = os.fork()\n        if pid == 0:\n"       # it sleeps while the fork lives
              "            while os.getppid() == me:\n                time.sleep(0.05)\n            os._exit(0)\n"
              "        message = dict(message, pid=pid)\n    return _send(self, message)\n"
              "type(_child).send = _forged\n")
    statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    proc_clock = Isolation(namespaces=False, pids_root=None)   # no cgroup: /proc is the clock
    with Sandbox(statements, {}, ProcessLimits(load_seconds=5), isolation=proc_clock, allow_root=True) as sandbox:
        sandbox.load(time.monotonic() + 60)
        [outcome] = sandbox.run_exercise([CaseRequest("c1", "slow()", timeout=1.0)], (), lambda *a: None,
                                         time.monotonic() + 120)
    assert outcome.status == "timeout", outcome


def test_work_between_exercises_is_charged_to_the_next_exercises_first_case():
    """Between two exercises the sandbox does its own work (the pristine check, emptying the scratch, a fork),
    and student code can run there too: here numpy.geterr, replaced at load, which the check calls, spins 0.3 s
    of CPU (little enough to end within RUNTIME_SECONDS at any load). That time was charged to no case (up to
    RUNTIME_SECONDS of wall time per exercise, work a notebook could do outside every limit); the next
    exercise's first case is charged from the last answer. The spin keeps no count of its calls: a count kept
    in a library module is a change the check sees (a fresh fork, whose check never runs), so it spins at every
    call in a fork of the loaded runtime and never in the runtime itself."""
    source = ("import numpy, os, time\n_real = numpy.geterr\n_LOADED_IN = os.getpid()\n"
              "def _slow():\n    if os.getpid() != _LOADED_IN:\n        end = time.process_time() + 0.3\n"
              "        while time.process_time() < end:\n            pass\n    return _real()\n"
              "numpy.geterr = _slow\ndef quick():\n    return 1\n")
    statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    with Sandbox(statements, {}, ProcessLimits(load_seconds=5)) as sandbox:
        sandbox.load(time.monotonic() + 60)
        if sandbox.facts.get("cpu_clock") != "cgroup":
            pytest.skip("no cgroup counts the sandbox's CPU time here")
        [first] = sandbox.run_exercise([CaseRequest("c1", "quick()")], (), lambda *a: None, time.monotonic() + 60)
        [second] = sandbox.run_exercise([CaseRequest("c2", "quick()")], (), lambda *a: None, time.monotonic() + 60)
    assert first.status == second.status == "ok"
    assert second.cpu_seconds is not None and second.cpu_seconds >= 0.25
