"""A grader process for tests/test_hostile_signal.py: one worker of a batch run by a grader that is not root, in
forced rlimits mode, on a kernel whose Landlock cannot scope signals (ABI < 6: Ubuntu 24.04's 6.8 kernel, where a
TA's laptop falls to rlimits mode, has ABI 4). Two of these graded at once are two workers of one batch: their
students' code runs as this same uid.

The test machine's kernel may have Landlock's signal scope (ABI >= 6), which refuses a signal to another sandbox by
itself; this process hides Landlock from itself, its zygote and every sandbox with a seccomp filter answering
landlock_create_ruleset ENOSYS, as a kernel without Landlock does (the grader then reads ABI 0 and restricts
nothing). Nothing of the grader is changed: the filter is the kernel's answer, inherited as a kernel's would be.

Run as `python hostile_signal_grader.py NOTEBOOK CACHE [--wait]` with PYTHONPATH naming the repo: grades NOTEBOOK
with the Taoistic rubric (expected values in CACHE; --wait: once ready, prints "ready" and grades when a line comes
on stdin) and prints one JSON line: the scores by exercise, the incidents, the
cases that did not pass and how the submission was isolated. `python hostile_signal_grader.py own` runs OWN's
probe() instead, a case that signals its own processes and groups and a sleeper of the uid outside it (this process
starts it), and `... loop KIND` a case that loops on signals (LOOPS), then a plain case: each prints its cases'
outcomes and the sandbox's incidents."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ["PUZZLE_GRADER_ISOLATION"] = "rlimits"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from probe_source import ATTEMPT  # noqa: E402

RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
LANDLOCK_CREATE_RULESET = 444   # the same number on x86-64 and arm64 (the unified syscall table)


def hide_landlock() -> None:
    """landlock_create_ruleset fails with ENOSYS from now on, in this process and everything it starts."""
    from grader.sandbox.confine import _SockFilter, _SockFprog, _libc
    ld_nr, jeq, ret = 0x20, 0x15, 0x06
    program = [_SockFilter(ld_nr, 0, 0, 0), _SockFilter(jeq, 0, 1, LANDLOCK_CREATE_RULESET),
               _SockFilter(ret, 0, 0, 0x00050000 | errno.ENOSYS), _SockFilter(ret, 0, 0, 0x7FFF0000)]
    filters = (_SockFilter * len(program))(*program)
    if _libc.prctl(38, 1, 0, 0, 0) != 0 or \
            _libc.prctl(22, 2, ctypes.byref(_SockFprog(len(program), filters)), 0, 0) != 0:   # NO_NEW_PRIVS, SECCOMP
        raise OSError(ctypes.get_errno(), "the filter hiding Landlock")


NOT_A_SIGNAL = 65   # a kernel that was let send it answers EINVAL: a probe that got through sends nothing

OWN = f"""
import os, signal, threading, time

{ATTEMPT}
def gone(pid, seconds=20):   # dead: a zombie, or reaped (an orphan's reaper is the runtime, busy until the case ends)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with open(f"/proc/{{pid}}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        time.sleep(0.01)
    return False

def sleeper(session=False):   # returns once the child is in its own session, if asked
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        if session:
            os.setsid()
        os.write(write, b"!")
        time.sleep(60)
        os._exit(0)
    os.read(read, 1)
    os.close(read)
    os.close(write)
    return pid

def probe(outside):
    found = {{}}
    child = sleeper()
    found["its child"] = attempt(lambda: os.kill(child, signal.SIGTERM))
    found["its child ended by it"] = os.waitpid(child, 0)[1] == signal.SIGTERM
    found["a process that ended"] = attempt(lambda: os.kill(child, signal.SIGTERM))
    leader = sleeper(session=True)   # a session and group of its own, as subprocess's start_new_session makes
    found["its new session's group"] = attempt(lambda: os.killpg(leader, signal.SIGKILL))
    found["that group ended by it"] = os.waitpid(leader, 0)[1] == signal.SIGKILL
    read, write = os.pipe()
    leader = os.fork()
    if leader == 0:   # a group whose leader has gone, its member orphaned (the runtime's child now)
        os.setpgid(0, 0)
        member = sleeper()
        os.write(write, str(member).encode())
        os._exit(0)
    os.waitpid(leader, 0)
    member = int(os.read(read, 32))
    found["its group, the leader gone"] = attempt(lambda: os.killpg(leader, signal.SIGKILL))
    found["that group's member ended by it"] = gone(member)
    heard = []
    signal.signal(signal.SIGUSR1, lambda *_: heard.append(1))
    os.kill(os.getpid(), signal.SIGUSR1)
    signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
    signal.raise_signal(signal.SIGUSR1)
    found["itself, three ways"] = len(heard)
    found["its own group"] = attempt(lambda: os.kill(0, signal.SIGUSR1))
    for name, target in (("outside", outside), ("outside's group", -outside), ("every process of the uid", -1)):
        found[name] = attempt(lambda: os.kill(target, {NOT_A_SIGNAL}))
    found["outside still there"] = not gone(outside, 0)
    return found

def loop(count, outside):   # the sandbox is ended before the loop is: the case does not answer
    parent, child = os.getpid(), os.fork()
    if child == 0:   # sleeps while its parent lives (an orphan holding the sandbox's pipes keeps its end unseen)
        while os.getppid() == parent:
            time.sleep(0.05)
        os._exit(0)
    for _ in range(count):
        try:
            os.kill(outside or child, signal.SIGCONT)
        except OSError:
            pass
    return "looped"
"""
# a loop of signals to its own child let through, or to a process outside it refused (see zygote.MAX_SIGNALS)
LOOPS = {"own": "loop(5000, 0)", "outside": "loop(200, OUTSIDE)"}


def own(code: str) -> None:
    from grader import codec
    from grader.sandbox.process import CaseRequest, ProcessLimits
    from sandbox_run import run_cases, statement

    outside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        ran = run_cases([statement(OWN + f"\nOUTSIDE = {outside.pid}\n", kind="other")],
                        [CaseRequest(id="first", code=code, timeout=60.0),
                         CaseRequest(id="then", code="sum(range(10))", timeout=30.0)], limits=ProcessLimits())
    finally:
        outside.kill()
        outside.wait()
    print(json.dumps({
        "outcomes": [[outcome.status, codec.decode(outcome.value) if outcome.status == "ok" else outcome.error]
                     for outcome in ran.outcomes],
        "incidents": sorted({(seen.kind, seen.count) for seen in ran.sandbox.seen}),
        "level": ran.sandbox.level, "landlock": ran.sandbox.facts.get("landlock"), "uid": os.geteuid()}))


def main() -> None:
    hide_landlock()
    if sys.argv[1:2] == ["own"]:
        own("probe(OUTSIDE)")
        return
    if sys.argv[1:2] == ["loop"]:
        own(LOOPS[sys.argv[2]])
        return
    from grader.judge.grading import grade_path, support_sources
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric

    notebook, cache = Path(sys.argv[1]), Path(sys.argv[2])
    plan = build_plan(load_rubric(RUBRIC), cache)
    if sys.argv[3:] == ["--wait"]:   # ready to grade at once (its zygote started): the test says when
        from grader.sandbox import supervisor
        supervisor.zygote()
        print("ready", flush=True)
        sys.stdin.readline()
    result = grade_path(notebook, plan, support_sources(plan))
    print(json.dumps({
        "total": result.total, "max_total": result.max_total, "uid": os.geteuid(),
        "scores": {exercise.id: [exercise.score, exercise.max_score] for exercise in result.exercises},
        "incidents": sorted({(seen.kind, seen.exercise) for seen in result.incidents}),
        "failed": [f"{case.id}: {case.status}: {case.message[:200]}" for exercise in result.exercises
                   for case in exercise.cases if case.status != "pass"][:20],
        "isolation": result.isolation}))


if __name__ == "__main__":
    main()
