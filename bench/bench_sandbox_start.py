"""CPU and wall time per sandbox start: a fork from the zygote against a new interpreter per submission.

Run: .venv/bin/python bench/bench_sandbox_start.py [N]

"zygote" is the grader's real path (Sandbox._start through grader.sandbox.process._spawn): the CPU is the
grader's own (all threads) plus everything the zygote and its children used (a reaped child's time is
added to its parent's, so the zygote's cumulative counters hold the whole chain). "interpreter" is the
former design, kept here only as the baseline: `unshare ... python -s -P runtime.py` per submission, with
its CPU taken from this process's reaped children. Both wait until the child says it is ready, then end it
(the baseline by closing its request pipe, so its exit is a normal one and its CPU time is counted).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from grader.sandbox import supervisor, wire
from grader.sandbox.isolation import detect
from grader.sandbox.process import ProcessLimits, _discard, _spawn

RUNTIME = Path(__file__).resolve().parents[1] / "grader" / "sandbox" / "runtime.py"
UNSHARE = ("unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child", "--net", "--mount",
           "--mount-proc")


def _ticks(pid: int) -> float:
    """utime + stime + cutime + cstime of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def zygote_starts(count: int) -> tuple[float, float]:
    isolation, limits = detect(), ProcessLimits()
    _discard(_spawn(isolation, limits, []))            # the zygote itself starts once per worker
    zygote = supervisor.zygote().process.pid
    cpu, zygote_cpu, wall = time.process_time(), _ticks(zygote), time.perf_counter()
    for _ in range(count):
        _discard(_spawn(isolation, limits, []))
    time.sleep(0.5)                                   # let the zygote reap the last child
    spent = time.process_time() - cpu + _ticks(zygote) - zygote_cpu
    return spent / count, (time.perf_counter() - wall - 0.5) / count


def interpreter_starts(count: int) -> tuple[float, float]:
    before, wall = os.times(), time.perf_counter()
    for _ in range(count):
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        child = subprocess.Popen([*UNSHARE, sys.executable, "-s", "-P", str(RUNTIME), str(request_read),
                                  str(response_write)], pass_fds=(request_read, response_write),
                                 env=supervisor.child_environment(), start_new_session=True,
                                 stdin=subprocess.DEVNULL)
        os.close(request_read)
        os.close(response_write)
        wire.send(request_write, {"limits": {}})
        wire.FrameReader(response_read).read(time.monotonic() + 30)
        os.close(request_write)        # EOF: the runtime returns, so its CPU time reaches us when reaped
        child.wait()
        os.close(response_read)
    after = os.times()
    spent = (after.children_user - before.children_user) + (after.children_system - before.children_system) + \
        (after.user - before.user) + (after.system - before.system)
    return spent / count, (time.perf_counter() - wall) / count


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    print(f"isolation: {detect().level}; {count} starts each; load average {os.getloadavg()[0]:.1f}")
    for name, measure in (("interpreter (before)", interpreter_starts), ("zygote fork (after)", zygote_starts)):
        cpu, wall = measure(count)
        print(f"{name:22s} {cpu * 1000:6.1f} ms CPU  {wall * 1000:6.1f} ms wall  per sandbox start")
    supervisor.stop()


if __name__ == "__main__":
    main()
