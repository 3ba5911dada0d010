"""Busy processes for the tests of a busy machine: each pinned to one CPU and spinning, in a session of its own.

A session of its own, as the sandbox has (setsid): with autogroups the kernel shares a CPU between sessions first,
so busy processes of one session would together take only as much as the sandbox's one.
"""

from __future__ import annotations

import subprocess
import sys

SPIN = ("import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nprint('spinning', flush=True)\n"
        "while True:\n    pass\n")


def spinners(cpu: int, count: int) -> list[subprocess.Popen]:
    """`count` busy processes on `cpu`, each spinning by the time this returns. If one does not start, none is
    left behind (the run's leftover check would blame the test after it)."""
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN, str(cpu)], stdout=subprocess.PIPE, text=True,
                             start_new_session=True) for _ in range(count)]
    try:
        for hog in hogs:
            assert hog.stdout is not None and hog.stdout.readline().strip() == "spinning"
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
