"""A busy machine makes grading slower, never different: the submission's deadline moves by the time the kernel says
the grading waited for a CPU (grader/sandbox/budget.py), and a notebook cannot earn that time by making itself wait.

Real subprocesses: the grading runs in a child process pinned to one CPU, next to busy processes pinned to the same
CPU, so the thousands of round trips of an isolated helper each wait for a time slice. No wall time is asserted:
the deadline is set far below what the starved run needs and far above its CPU time, and only verdicts (and the
kernel's counts the result keeps) are compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from grader.sandbox import cpuclock
from grader.sandbox.budget import Budget, Mark
from hogs import run_beside_hogs, spinners, stop
from testclock import read_line, within

ROOT = Path(__file__).resolve().parents[1]

# Grades one exercise in a sandbox (run in a child process, pinned to `cpu` with its sandbox, at its own priority:
# niced, it got under 1% of the CPU where the kernel's autogroups are off, as test_busy_sessions' grader did), its
# deadline `budget` s after the load, which may move by `slack` s; prints the outcomes and the budget's facts as
# JSON. With a cpu, it says "loaded" and waits for a line before the exercise (the busy processes start between).
GRADE = r'''
import json, os, sys, time
cpu, budget, slack = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
source, cases = sys.argv[4], json.loads(sys.argv[5])
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
from grader import codec
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
requests = [CaseRequest(f"c{i}", call, timeout=timeout, oracle_calls=5000) for i, (call, timeout) in enumerate(cases)]
with Sandbox(statements, {}, ProcessLimits(load_seconds=30), slack=slack) as sandbox:
    sandbox.load(time.monotonic() + 600)
    if cpu >= 0:
        print("loaded", flush=True)
        sys.stdin.readline()
    outcomes = sandbox.run_exercise(requests, ["helper"], lambda name, args, kwargs: args[0], time.monotonic() + budget,
                                   max_timeouts=10)
    print(json.dumps({"outcomes": [{"status": o.status, "reason": o.error.get("reason", "") if o.error else "",
                                    "message": o.error.get("message", "") if o.error else "",
                                    "value": codec.decode(o.value) if o.status == "ok" else None} for o in outcomes],
                      "reached": sandbox.budget.reached, "granted": sandbox.budget.granted}))
'''

# Thousands of round trips to the parent for an isolated helper: eight-puzzle's A* rerun, in small.
# First a case that needs CPU (about 0.65 s here, its limit 5 s): a round trip can be woken ahead of the busy
# processes and a fresh clone's run saw all 2,000 within the 1 s deadline. CPU-bound work cannot be: beside three
# busy processes at the same priority it gets at most a quarter of the CPU, with the kernel's autogroups (the
# sandbox and each busy process in a session of its own) or without them (half with the busy processes in one
# group, as 1783533's 0.3 s case had it): at least 1.3 s of wall time, so the 1 s deadline certainly passes while
# it waits, and certainly moves.
ROUND_TRIPS = ("def many(helper, a, b):\n    return sum(helper(i) for i in range(a, b))\n\n"
               "def helper(x):\n    return 0\n\n"
               "def burn(n):\n    return sum(range(n))\n")
STARVED = [("burn(40_000_000)", 5.0), ("many(helper, 0, 1000)", 0.1), ("many(helper, 1000, 2000)", 0.1),
           ("many(helper, 0, 5)", 0.1)]


def grade(source: str, cases: list[tuple[str, float]], budget: float, slack: float, cpu: int = -1,
          busy: int = 0) -> dict:
    """The exercise graded in a child process; with a `cpu`, beside `busy` busy processes on that CPU from the load's
    end to the last answer. Within 300 s: a test grades twice, under pytest's 900 s net."""
    out = run_beside_hogs(["-c", GRADE, str(cpu), str(budget), str(slack), source, json.dumps(cases)], cpu, busy,
                          ready="loaded" if cpu >= 0 else None, timeout=300)
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_grading_starved_of_cpu_past_its_deadline_keeps_the_verdicts_of_a_quiet_one():
    """The grading and three busy processes share one CPU: each of the 2,000 round trips waits for a
    time slice, and the exercise needs several times its 1 s budget with a fraction of a second of CPU. The deadline
    moves by that waiting (here by up to 600 s, to see it work; a rubric's by up to its own budget), so every case is
    judged as on a quiet machine; without the move the later cases were "not run: the budget is spent". And the
    parent's waiting while it answers is not the reference's time: each case's 1,000 answers took more than the
    share of 10 times its 0.1 s limit, and the case was a timeout "while the reference answered"."""
    starved = grade(ROUND_TRIPS, STARVED, budget=1.0, slack=600.0, cpu=min(os.sched_getaffinity(0)), busy=3)
    quiet = grade(ROUND_TRIPS, STARVED, budget=600.0, slack=0.0)
    assert [o["status"] for o in quiet["outcomes"]] == ["ok", "ok", "ok", "ok"]
    assert starved["outcomes"] == quiet["outcomes"], starved
    assert starved["reached"] and starved["granted"] > 0   # the deadline passed, and the kernel's waiting moved it



# One case of five isolated-helper calls, limit 0.3 s; the reference's answer to the call of 3 takes 0.6 s: of wall
# time asleep (what a busy machine does to the parent's thread: it computes nothing), or of CPU time computing.
# Prints the outcome's status and message.
HELD_ANSWER = r'''
import json, sys, time
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
computing = sys.argv[1] == "computing"
source = "def many(helper, a, b):\n    return sum(helper(i) for i in range(a, b))\n"

def reference(name, args, kwargs):
    if args[0] == 3 and computing:
        end = time.thread_time() + 0.6
        while time.thread_time() < end:
            pass
    elif args[0] == 3:
        time.sleep(0.6)
    return args[0]

statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
with Sandbox(statements, {}, ProcessLimits(load_seconds=30)) as sandbox:
    sandbox.load(time.monotonic() + 600)
    [outcome] = sandbox.run_exercise([CaseRequest("c", "many(helper, 0, 5)", timeout=0.3, oracle_calls=10)],
                                     ["helper"], reference, time.monotonic() + 600)
    print(json.dumps([outcome.status, (outcome.error or {}).get("message", "")]))
'''


@pytest.mark.parametrize("reference", ["asleep", "computing"])
def test_the_references_answer_is_bounded_by_the_cpu_time_it_computes_not_by_the_wall_clock(reference: str):
    """The reference's answer to an isolated-helper call may take the case's limit of the parent's CPU time; the wall
    time the parent's thread spends off a CPU is the machine's. At load 18-36 on 2 cores one answer of about 0.01 s
    of CPU outlasted its case's 1 s of wall time, and int-tiles lost a search case it answered right ("stopped while
    the reference answered its call", 3 gradings of 14, test_gradescope's one flake). An answer that computes past
    the limit still ends the case: the child's arguments must not hold the parent."""
    out = subprocess.run([sys.executable, "-c", HELD_ANSWER, reference], cwd=ROOT, capture_output=True, text=True,
                         timeout=within(300))
    status, message = json.loads(out.stdout.strip().splitlines()[-1])
    if reference == "asleep":
        assert status == "ok", message
    else:
        assert status == "timeout" and "while the reference answered" in message, message


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_grading_starved_past_its_moved_deadline_is_the_machines_fault_not_the_students():
    """The same starved grading, its deadline 0.5 s away and allowed to move by 0.05 s only: the machine took more
    than that, so the case stopped and the cases not run are the grader's problem ("starved"), never the budget
    the student spent."""
    starved = grade(ROUND_TRIPS, STARVED, budget=0.5, slack=0.05, cpu=min(os.sched_getaffinity(0)), busy=3)
    lost = [o for o in starved["outcomes"] if o["status"] != "ok"]
    assert lost and all(o["reason"] == "starved" for o in lost), starved
    assert starved["outcomes"][-1]["status"] == "skipped"


def test_a_result_with_cases_a_busy_machine_kept_from_being_judged_is_graded_again_by_the_next_run(tmp_path):
    """Its gradebook row says how many (the result's `extra.budget.busy_cases`, kept in the row's `busy` column):
    the next run does not keep it as unchanged, and the others stay unchanged."""
    import shutil
    import sqlite3
    examples = ROOT / "assignments" / "taoistic-search" / "submissions"
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in ("correct", "seed-000"):
        shutil.copy(examples / f"{name}.ipynb", submissions / f"{name}.ipynb")
    command = [sys.executable, "-m", "grader", "grade", str(submissions), "--rubric",
               str(ROOT / "rubrics" / "taoistic-search.yaml"), "--out", str(tmp_path / "out"), "--cache",
               str(tmp_path / "cache"), "--quiet"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=within(300))
    assert "2 graded" in first.stdout, first.stdout + first.stderr
    with sqlite3.connect(tmp_path / "out" / "gradebook.sqlite") as db:   # as a starved grading would have stored it
        db.execute("""UPDATE results SET json = json_set(json, '$.extra.budget',
                          json('{"slack_seconds": 60, "waited_seconds": 75.5, "busy_cases": 3}')), busy = 3
                      WHERE id = (SELECT current_result FROM submissions WHERE student = 'seed-000')""")
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=within(300))
    assert "1 graded, 0 unreadable, 0 failed, 1 unchanged" in again.stdout, again.stdout + again.stderr
    third = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=within(300))
    assert "0 graded, 0 unreadable, 0 failed, 2 unchanged" in third.stdout, third.stdout + third.stderr


# One fork serves several exercises while it stays pristine: the first one waits for a CPU beside busy processes,
# the next eight sleep. Prints what the budget has counted as the sandbox's waiting after each exercise.
SAME_FORK = r'''
import json, os, sys, time
cpu = int(sys.argv[1])
os.sched_setaffinity(0, {cpu})
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
source = "import os, time\ndef spin():\n    end = time.process_time() + 0.3\n    while time.process_time() < end:\n" \
         "        pass\n    return os.getpid()\ndef nap():\n    time.sleep(0.3)\n    return os.getpid()\n"
statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
with Sandbox(statements, {}, ProcessLimits(load_seconds=30), slack=1000.0) as sandbox:
    sandbox.load(time.monotonic() + 600)
    forks, counted = [], []
    for index, call in enumerate(["spin()"] + ["nap()"] * 8):
        print("ready", flush=True)
        sys.stdin.readline()
        [outcome] = sandbox.run_exercise([CaseRequest(f"c{index}", call, timeout=5.0)], (), lambda *a: None,
                                         time.monotonic() + 600)
        forks.append(outcome.value)
        counted.append(sandbox.budget.gone)
    print(json.dumps({"forks": forks, "counted": counted}))
'''


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_a_fork_that_serves_several_exercises_has_its_waiting_counted_once():
    """Its reading is its whole life's run-queue time: added again at each exercise's end, eight sleeping exercises
    after a starved one were credited nine times its waiting (redteam's probe), and an honest notebook on a busy
    machine could reach the cap and have its cases "busy" at every run."""
    cpu = min(os.sched_getaffinity(0))
    child = subprocess.Popen([sys.executable, "-c", SAME_FORK, str(cpu)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdin is not None
    try:
        assert read_line(child, 240).strip() == "ready"
        hogs = spinners(cpu, 3)
        try:
            child.stdin.write("go\n")
            child.stdin.flush()
            assert read_line(child, 120).strip() == "ready"   # the first exercise is done
        finally:
            stop(hogs)
        out, err = child.communicate(input="go\n" * 8, timeout=within(240))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err[-3000:]
    found = json.loads(out.strip().splitlines()[-1])
    assert len(set(found["forks"])) == 1   # one fork served all nine (otherwise there is nothing to count twice)
    first, last = found["counted"][0], found["counted"][-1]
    assert first > 0                        # the busy processes kept it waiting
    assert last < 2 * first                 # the sleeping exercises added little, not eight times as much again


# A notebook that tries to earn time: its case forks busy children (they and it wait for a CPU, which the kernel
# counts as run-queue time) and its next case sleeps (time the sandbox spends not computing, room for that waiting
# in the credit); then many short cases, which only a deadline moved without bound would let run.
GREEDY = r'''
import os, time
def hog():
    for _ in range(4):
        if os.fork() == 0:
            while True:
                pass
    while True:
        pass
def nap():
    time.sleep(600)
def quick():
    time.sleep(0.05)
    return 1
def helper(x):
    return x
'''


def test_a_notebook_that_makes_itself_wait_still_times_out_and_gets_no_more_than_the_slack():
    """Its busy children and its sleep make the kernel count run-queue time with room for it in the credit (about a
    second here): the deadline moves by at most the slack whatever it does, its two cases time out as they would
    with no budget at all, and what is left when the moved deadline passes is not run. (Whether that last part is
    its own time or the machine's is left to the kernel's counts: on a busy machine it can be either, and a case
    the machine kept from running costs the same as one of a spent budget, so nothing is gained by faking it.)"""
    cases = [("hog()", 0.5), ("nap()", 0.3)] + [("quick()", 1.0)] * 400
    # The budget leaves nap() its whole wall backstop (10 x 0.3 s) however long hog() takes to be stopped on a busy
    # machine: with 4 s, a slow hog() had nap() stopped by the deadline ("the submission's time ran out") instead.
    outcomes = grade(GREEDY, cases, budget=8.0, slack=1.0)["outcomes"]
    assert outcomes[0]["status"] == "timeout" and "CPU time" in outcomes[0]["message"]   # as without a budget
    assert outcomes[1]["status"] == "timeout" and "waiting" in outcomes[1]["message"]
    statuses = [o["status"] for o in outcomes[2:]]
    ran = statuses.index("skipped")
    assert set(statuses[:ran]) <= {"ok", "timeout"} and set(statuses[ran:]) == {"skipped"}
    # 20 s of quick cases against a deadline 8 s away that may move by 1 s: at most 180 could run.
    assert len(statuses) - ran > 200


@given(waited=st.floats(0, 1e4), elapsed=st.floats(0, 1e4), computed=st.floats(0, 1e4))
def test_the_credit_is_never_more_than_the_waiting_nor_than_the_sandboxs_idle_wall_time(waited, elapsed, computed):
    granted = cpuclock.credit(waited, elapsed, computed)
    assert 0.0 <= granted <= waited
    assert granted <= max(0.0, elapsed - computed)


def test_the_grading_threads_own_cpu_time_is_not_idle_time_the_credit_may_use():
    """The credit is at most the wall time nobody of the grading computed: the sandbox's CPU time, and the grading
    thread's own (answering isolated helpers, parsing), which counted as idle. Pinned beside its sandbox, a worker
    answering a flood of cheap calls made the fork spinning beside it wait, and that waiting (run-queue time the
    kernel counts) was credited within the idle time the worker's own work made. Here the thread computes 0.3 s
    while the sandbox is said to have waited without end: the credit leaves those 0.3 s out."""
    import time

    from grader.sandbox.budget import Budget

    budget = Budget.start(slack=1e6, since=Mark.now())
    spun = time.thread_time()
    while time.thread_time() < spun + 0.3:
        pass
    budget.gone = 1e6                 # waiting of the sandbox's processes: more than any wall time here
    budget.until(deadline=0.0, now=time.monotonic(), runtime=None, cpu=0.0)
    elapsed = time.monotonic() - budget.started
    assert budget.granted <= elapsed - 0.3, (budget.granted, elapsed)


def test_a_reload_a_busy_machine_kept_past_the_moved_deadline_is_the_machines_not_a_crash():
    """A case stopped by the grader (it caught its own timeout) leaves the child's state unknown: the next case's
    child loads the notebook again. Where the machine kept that reload past the deadline as far as it may move
    (process.MachineBusy), the cases left are the machine's (`starved`, graded again), as when the deadline stops
    them between cases, not a crash of the student's that scores 0 for good. The kernel's credit is stood in for
    (the reload's slow statement is the wait): always past the slack."""
    import time

    from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

    source = ("import time\nSLOW = time.sleep(4)\n"
              "def bad():\n    while True:\n        try:\n            while True:\n                pass\n"
              "        except BaseException:\n            pass\n"
              "def ok():\n    return 3\n")
    statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    with Sandbox(statements, {}, ProcessLimits(), slack=5.0) as sandbox:
        sandbox.load()
        sandbox.budget.until = lambda deadline, now, runtime, cpu: deadline    # type: ignore[method-assign]
        sandbox.budget.starved = lambda deadline, now: True                    # type: ignore[method-assign]
        bad, ok = sandbox.run_exercise([CaseRequest("bad", "bad()", timeout=0.3), CaseRequest("ok", "ok()")],
                                       (), None, time.monotonic() + 2.5)
    assert bad.status != "ok"
    assert ok.status == "skipped" and ok.error["reason"] == "starved", (ok.status, ok.error)
    assert "too busy" in ok.error["message"]


def test_a_load_the_machine_took_more_than_the_slack_from_is_graded_again_not_charged():
    """A starved load's credit is a lower bound of what the machine took: loads beside busy processes on one CPU were
    credited 2.4-3.5 s against a 0.5 s slack and still ran out ~1 s past deadline + credit, and the whole notebook
    scored 0 as "the submission's time budget ran out" (test_busy_sessions, now and then). Past the slack a load is
    the machine's (graded again); within it, as for a case, only when all the credit would have kept it on time."""
    budget = Budget(slack=0.5, started=0.0, granted=3.469)
    assert not budget.starved(deadline=0.5, now=4.935)          # a case's rule: all the credit, still late
    assert budget.load_starved(deadline=0.5, now=4.935)         # the load's: the machine took more than the slack
    within_slack = Budget(slack=0.5, started=0.0, granted=0.3)
    assert not within_slack.load_starved(deadline=0.5, now=4.0)  # the student's own time, as on a quiet machine
    assert within_slack.load_starved(deadline=0.5, now=0.7) == within_slack.starved(deadline=0.5, now=0.7)
    assert not Budget(slack=0.0, started=0.0, granted=9.0).load_starved(deadline=0.5, now=20.0)   # no slack: never


def test_what_the_grading_thread_waited_before_the_sandbox_was_made_is_credited():
    """The deadline counts from the submission's start, before its sandbox is made (the notebook's reading and
    extraction, the course's given code, the sandbox's making); the credit counted from the sandbox's making, so the
    grading thread's waiting before it was on the student's time: at load 16 a worker's first eight-puzzle notebook
    took 2.3 s from its start to its sandbox. A reading said to have waited 2.9 s of its 3 s stands in for it."""
    budget = Budget.start(slack=10.0, since=Mark.now(spent=3.0, waited=2.9, computed=0.05))
    now = __import__("time").monotonic()
    moved = budget.until(deadline=now - 1.0, now=now, runtime=None, cpu=0.0)
    assert budget.granted >= 2.89 and moved >= now + 1.89, (budget.granted, moved - now)


def test_a_notebook_whose_reading_waited_past_its_deadline_is_not_charged_for_it(tmp_path: Path):
    """End to end: a notebook read (as grade_read gets it) in 3 s of wall time, of which its thread waited 2.9 s for a
    CPU, with a 1 s budget: its deadline passed before its sandbox was made, by the machine's doing. Before, the load
    then ran out of "the submission's time budget" at once (credited nothing: its count began at the sandbox) and the
    notebook scored 0 for good. Now that wait moves the deadline (by at most the slack, the budget): the notebook
    is graded, or where the machine keeps it waiting past that too, its cases are `busy machine`, never the
    student's `missing`."""
    from dataclasses import replace

    from grader.judge.grading import grade_read, read_submission, support_sources
    from grader.judge.options import Options
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric
    from grader.store.status import BUSY

    from conftest import RUBRIC, SUBMISSIONS
    plan = build_plan(load_rubric(RUBRIC), tmp_path / "cache")
    read = replace(read_submission(SUBMISSIONS / "correct.ipynb", plan), seconds=3.0, waited=2.9, computed=0.05)
    result = grade_read(read, plan, support_sources(plan), Options(submission_seconds=1.0))
    said = [warning.text for warning in result.warnings]
    assert not any("could not be loaded" in text and "budget ran out" in text for text in said), said
    assert result.extra["budget"]["waited_seconds"] >= 2.89, result.extra
    for exercise in result.exercises:
        for case in exercise.cases:
            assert case.status == "pass" or case.reason == BUSY, (exercise.id, case.id, case.status, case.message)
