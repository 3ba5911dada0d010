"""CPU and wall time per sandbox start: a fork from the zygote against a new interpreter per submission.

Run: .venv/bin/python bench/bench_sandbox_start.py [N]

"zygote" is the grader's real path (Sandbox._start through grader.sandbox.process._spawn), "interpreter" the
former design, kept here only as the baseline: `unshare ... python -s -P runtime.py` per submission. Both wait
until the child says it is ready, then end it. The CPU of both is what a cpuacct group around this process
counted (bench/treecpu.Group: every process, whatever ends it). Without such a group (not root, cgroup v2) it is
this process's own plus its reaped children's and the zygote's cumulative counters, which miss the jail: a
discarded child is killed, and its PID 1 and runtime are then reaped outside the zygote's chain (about 6 of the
~20 ms a start costs were counted that way until session 7).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import treecpu
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


def zygote_starts(count: int, group: treecpu.Group | None) -> tuple[float, float]:
    isolation, limits = detect(), ProcessLimits()
    _discard(_spawn(isolation, limits, []))            # the zygote itself starts once per worker
    zygote = supervisor.zygote().process.pid
    time.sleep(0.5)                                   # the first child gone
    counted = group.seconds() if group is not None else 0.0
    cpu, zygote_cpu, wall = time.process_time(), _ticks(zygote), time.perf_counter()
    for _ in range(count):
        _discard(_spawn(isolation, limits, []))
    elapsed = time.perf_counter() - wall
    time.sleep(0.5)                                   # let the zygote reap the last child
    if group is not None:
        return (group.seconds() - counted) / count, elapsed / count
    spent = time.process_time() - cpu + _ticks(zygote) - zygote_cpu
    return spent / count, elapsed / count


def interpreter_starts(count: int, group: treecpu.Group | None) -> tuple[float, float]:
    counted = group.seconds() if group is not None else 0.0
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
    after, elapsed = os.times(), time.perf_counter() - wall
    if group is not None:
        return (group.seconds() - counted) / count, elapsed / count
    spent = (after.children_user - before.children_user) + (after.children_system - before.children_system) + \
        (after.user - before.user) + (after.system - before.system)
    return spent / count, elapsed / count


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    group = treecpu.Group.join()      # before anything starts: the sandboxes' CPU groups are made inside it
    try:
        clock = "a cpuacct group around this process" if group is not None else "rusage (misses the jail)"
        print(f"isolation: {detect().level}; {count} starts each; {treecpu.load()}; CPU from {clock}")
        for name, measure in (("interpreter (before)", interpreter_starts), ("zygote fork (after)", zygote_starts)):
            cpu, wall = measure(count, group)
            print(f"{name:22s} {cpu * 1000:6.1f} ms CPU  {wall * 1000:6.1f} ms wall  per sandbox start")
        supervisor.stop()
    finally:
        if group is not None:
            group.leave()


if __name__ == "__main__":
    main()
