"""A test's waits on its subprocesses, bounded: timeouts within what is left of the test's own time under pytest's
net, a child's next line read with a time limit, and a forked child's answer (in_a_fork).

pytest-timeout (pyproject: 900 s, timeout_method "thread") stops the whole run when one test passes 900 s, counting
its setup: a test of three `grader` subprocesses at 600 s each could be starved into it, each one within its own
timeout. `within(600)` is 600 s or what is left of the test's budget, whichever is less, so such a test fails alone,
with the subprocess's TimeoutExpired, before the net.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from typing import Any, Callable

BUDGET = 840.0          # seconds of a test, its setup included: the 900 s net less room to fail and report
started = time.monotonic()   # set again as each test's setup starts (conftest.pytest_runtest_setup)


def within(seconds: float) -> float:
    """A subprocess's timeout: `seconds`, or what is left of the test's BUDGET if less (at least 1 s)."""
    return max(1.0, min(seconds, started + BUDGET - time.monotonic()))


def read_line(process: subprocess.Popen, timeout: float) -> str:
    """The next line `process` prints, waited for at most `timeout` s: a child stuck before its line (a load starved
    for good, a hang) fails the test with AssertionError instead of holding it past pytest's net, which stops the
    whole run. The process is killed then (its pipe closes, so the reading ends too)."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        process.kill()
        reader.join(10)
        raise AssertionError(f"process {process.pid} printed no line within {timeout:g} s")
    return lines[0]


def in_a_fork(actions: Callable[[], Any], seconds: float = 120.0) -> Any:
    """What `actions` returns (JSON data), run in a forked child of the test's process (what it changes there, a
    seccomp filter or its uid, stays there), read through a pipe waited on for at most within(seconds): a child that
    never answers (a lock another thread held at the fork) is killed and fails its test instead of holding the run."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.write(write, json.dumps(actions()).encode())
        finally:
            os._exit(0)
    os.close(write)
    answered: list = []
    try:
        with os.fdopen(read, "rb") as pipe:
            answered = select.select([pipe], [], [], within(seconds))[0]
            text = pipe.read() if answered else b""
    finally:
        if not answered:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert answered, "the forked child never answered"
    return json.loads(text)
