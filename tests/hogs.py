"""Busy processes for the tests of a busy machine: each pinned to one CPU and spinning, in a session of its own.

A session of its own, as the sandbox has (setsid): with autogroups the kernel shares a CPU between sessions first,
so busy processes of one session would together take only as much as the sandbox's one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from testclock import read_line, within

ROOT = Path(__file__).resolve().parents[1]

# Each goes with the test's process (PR_SET_PDEATHSIG), also when that is killed: a suite stopped by SIGTERM ran no
# `finally`, and its three busy processes on CPU 0 spun for an hour beside the next runs.
SPIN = ("import ctypes, os, signal, sys\nctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
        "if os.getppid() != int(sys.argv[2]):\n    sys.exit(0)\n"
        "os.sched_setaffinity(0, {int(sys.argv[1])})\nprint('spinning', flush=True)\nwhile True:\n    pass\n")


def spinners(cpu: int, count: int, timeout: float = 60) -> list[subprocess.Popen]:
    """`count` busy processes on `cpu`, each spinning by the time this returns (within `timeout` s in all). If one
    does not start, none is left behind (the run's leftover check would blame the test after it)."""
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN, str(cpu), str(os.getpid())], stdout=subprocess.PIPE,
                             text=True, start_new_session=True) for _ in range(count)]
    deadline = time.monotonic() + timeout
    try:
        for hog in hogs:
            assert read_line(hog, max(0.0, deadline - time.monotonic())).strip() == "spinning"
    except BaseException:
        stop(hogs)
        raise
    return hogs


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def run_beside_hogs(args: list[str], cpu: int, count: int, ready: str | None = "ready", timeout: float = 600) -> str:
    """Run the Python child `args` (the repository on its path) and, once it prints `ready` and waits for a line,
    `count` busy processes on `cpu` beside it until it ends (`ready` None: none, nothing awaited). Returns its
    standard output; its exit status must be 0, all within `timeout` s from its start (its `ready` line too), or
    what is left of the test's budget if less (testclock.within). Every process started here is gone when this
    returns."""
    timeout = within(timeout)
    deadline = time.monotonic() + timeout
    child = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    hogs: list[subprocess.Popen] = []
    try:
        if ready is not None:
            assert read_line(child, timeout).strip() == ready
            hogs = spinners(cpu, count)
        out, err = child.communicate("go\n" if ready is not None else None,
                                     timeout=max(0.0, deadline - time.monotonic()))
    finally:
        stop(hogs)
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err[-3000:]
    return out
