"""A student's process that left its session outlives a sandbox the grader killed, and the grader itself, in rlimits
mode as the grader's own uid without a pids cgroup (a TA's laptop: Ubuntu 24.04 restricts user namespaces, and a
grader that is not root makes no cgroups there).

The runtime is the subreaper of its exercises' orphans and sweeps them after each exercise (README: "every process of
the student is killed, whatever session, group or parent it found"), and as root each sandbox's unused uid is swept
with kill(-1). But where the grader kills the runtime itself (a case that blocks its signals and spins: the parent
stops it at its CPU limit and replaces the child), nothing sweeps what it left: a double-forked, setsid'd process is
reparented to the machine's init, runs as the grader's uid, and outlives the zygote and the grader process (seen: a
`sleep` still running after the harness exited). What it can do there is what that uid's sandbox may (its Landlock
domain and seccomp filter stay; a signal's notification finds no zygote listening): spin beside later students'
sandboxes, read /proc, and, without Landlock, every file of the uid.

FOUND (session 26), then closed: the zygote is the subreaper of its children's orphans (PR_SET_CHILD_SUBREAPER) and
kills and reaps every child it did not start (zygote.Zygote.reap_strays). This test failed before.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess

import pytest
import testclock

from sandbox_run import processes_running
from test_hostile_rlimits import _as_grader, _environment, _interpreter

# Run as the grader's uid: one rlimits-mode sandbox, no pids cgroup; its case leaves `sleep MARK` in a session of its
# own (forked twice), then blocks every signal and spins, so the parent stops it and kills the runtime.
HARNESS = r'''
import json, sys, time
from grader.sandbox import supervisor
from grader.sandbox.isolation import Isolation
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

SOURCE = """
import os, signal

def leave(mark):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                os.execv("/bin/sleep", ["sleep", mark])
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
    signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
    while True:
        pass
"""
mark = sys.argv[1]
supervisor.zygote()
statement = {"code": SOURCE, "filename": "In [1] (cell 1)", "line": 1, "kind": "other"}
with Sandbox([statement], {}, ProcessLimits(), isolation=Isolation(namespaces=False, pids_root=None)) as sandbox:
    sandbox.load()
    outcome = sandbox.run_exercise([CaseRequest(id="leave#0", code=f"leave({mark!r})", timeout=1.0)], (),
                                   lambda *a: None, time.monotonic() + 120)[0]
supervisor.stop()
print(json.dumps({"status": outcome.status, "uid": sandbox.facts.get("host_uid"), "level": sandbox.level}))
'''


def _sleepers(mark: str) -> list[int]:
    found = []
    for pid in processes_running(mark):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if cmdline.read().startswith(b"sleep\0"):
                    found.append(pid)
        except OSError:
            pass
    return found


def test_nothing_a_killed_sandbox_left_outlives_the_grader():
    interpreter = _interpreter()
    if interpreter is None:
        pytest.skip("no interpreter a non-root uid can run the grader with")
    mark = f"{random.randrange(10**6, 10**7)}.{os.getpid()}"   # a duration of sleep's, no other process's argument
    try:
        ran = subprocess.run([interpreter, "-c", HARNESS, mark], env=_environment(), cwd="/", capture_output=True,
                             timeout=testclock.within(300), **_as_grader())
        assert ran.returncode == 0, ran.stderr.decode(errors="replace")[-3000:]
        report = json.loads(ran.stdout.decode().splitlines()[-1])
        assert report["level"] == "rlimits" and report["status"] == "timeout", report
        assert _sleepers(mark) == [], "a process the killed sandbox left runs on after the grader"
    finally:
        for pid in _sleepers(mark):   # ours to end: the test's uid or the one it ran the grader as
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
