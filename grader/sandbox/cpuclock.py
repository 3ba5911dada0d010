"""The case clock the parent trusts: CPU time of the student's exercise processes, read from the kernel.

A case's time limit is CPU time, not wall time: on a busy machine (or while the parent answers thousands of
isolated-helper calls, one pipe round trip each) the student's process waits, and waiting for a CPU or for the
grader is not the student's doing. The child sets its own soft alarm in CPU time (ITIMER_PROF), but the child is
hostile (it may reset its itimers or block signals), so the parent never takes the child's word: it reads the
sandbox's cgroup where one counts CPU (`isolation.CpuMeter`, which process.py's case clock reads first), else the
`utime + stime` of every process of the exercise (all their threads, plus children they waited for) from
`/proc/<pid>/stat` (this module), and the fork's run-queue delay from `/proc/<pid>/schedstat`, all kept by the
kernel. A generous wall-clock backstop (WALL_FACTOR times the limit) ends a case that sleeps or blocks;
`wall_verdict` tells that from a case the machine starved, which goes on until its CPU time is spent. Where
neither can be read the clock falls back to wall time, as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

WALL_FACTOR = 10.0            # the wall backstop: this many times the case's CPU limit
STARVED_SHARE = 0.5           # waited for a CPU at least this share of the wall time: the machine's fault
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Usage:
    """What the kernel has charged one process so far, in seconds."""

    cpu: float        # user + system time of all its threads and of the children it waited for
    waiting: float    # time its main thread was runnable but kept off a CPU (0.0 where the kernel does not say)
    chosen: bool = False   # it was waiting by its own choice when read (waits_by_choice): its waiting is 0.0


@dataclass(frozen=True)
class Exercise:
    """The two processes whose accounting makes an exercise's CPU time: the sandbox's first process, below which
    every process counts (the runtime, which reaps the forks, is it or below it), and the fork, whose waiting
    for a CPU is read."""

    runtime: int
    fork: int


def read_usage(process: Exercise | None) -> Usage | None:
    """The kernel's accounting of an exercise so far, or None when it cannot be read (no /proc, runtime gone).

    Every process of the sandbox counts (from `process.runtime`, its first process, down), not only the fork:
    a case that does its work in a process it never waits for (a pipe read costs the fork nothing) was charged
    for none of it, and got up to the wall backstop, ten times its limit, of CPU time. So: the reaped children's
    times (a fork that has ended moves its times there, so the sum goes on counting after the last answer), plus
    each live process below it, its own times and those of the children it has reaped. Read parents before
    children: a process reaped between two reads is then missed for this reading (too little), never counted
    twice. The waiting time is the fork's, unless it waits by its own choice (waits_by_choice).
    """
    if process is None:
        return None
    runtime = _stat(process.runtime)
    if runtime is None:
        return None
    cpu = sum(runtime[13:15]) / _TICK + _below_cpu(process.runtime)   # cutime, cstime: the children it has reaped
    waiting = _schedstat_delay(f"/proc/{process.fork}/schedstat")
    chosen = bool(waiting) and waits_by_choice(process.fork)
    return Usage(cpu, 0.0 if chosen else waiting, chosen)


def run_delay(pid: int) -> float:
    """Process `pid`'s run-queue time so far, in seconds: 0.0 where the kernel does not say, or where the process
    waits by its own choice (waits_by_choice)."""
    delay = _schedstat_delay(f"/proc/{pid}/schedstat")
    return 0.0 if delay and waits_by_choice(pid) else delay


def queued(pid: int) -> float:
    """Run-queue time so far of process `pid`, one of the grader's own (no choice of the student's to look for), in
    seconds: 0.0 where the kernel does not say."""
    return _schedstat_delay(f"/proc/{pid}/schedstat")


def tree_cpu(pid: int) -> float | None:
    """The CPU time of process `pid` and of every process below it (their own, and their reaped children's), in
    seconds, or None when `pid` cannot be read: what a sandbox computed, from its first process down."""
    top = _stat(pid)
    if top is None:
        return None
    return sum(top[11:15]) / _TICK + _below_cpu(pid)


def own_waiting() -> float:
    """This thread's run-queue time so far, in seconds (0.0 where the kernel does not say): the parent's, which
    reads and answers the child's isolated-helper calls. While it waits for a CPU the child waits for its
    answer, blocked on a pipe as if it slept: the machine's fault, which the child's own count does not show."""
    return _schedstat_delay("/proc/thread-self/schedstat")


def full_stall(pressure: bytes) -> float | None:
    """The "full" total of a cgroup's cpu.pressure (microseconds), in seconds, or None where it has none: the wall
    time in which the group had a task waiting for a CPU and none of its tasks running (weighted over the CPUs)."""
    for line in pressure.splitlines():
        if line.startswith(b"full "):
            for field in line.split():
                if field.startswith(b"total="):
                    try:
                        return int(field[6:]) / 1e6
                    except ValueError:
                        return None
    return None


def _schedstat_delay(path: str) -> float:
    """The run-queue time in a schedstat file (its second field, ns), in seconds; 0.0 where it cannot be read."""
    try:
        with open(path, "rb") as schedstat:
            return int(schedstat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def waits_by_choice(pid: int) -> bool:
    """Whether process `pid` is kept off a CPU by its own choice: a lower priority (nice), another scheduling
    policy (SCHED_IDLE, SCHED_BATCH) or fewer CPUs than the grader's own, which every sandbox inherits. The
    fork is the one the child's `forked` frame names: a decoy at the lowest priority on a busy CPU piles up
    run-queue time while using almost no CPU, and named as the fork of a case that sleeps, it had that case
    "starved" at the wall backstop (a grader problem, the case going on until the submission's time ran out)
    instead of a timeout. At the grader's own priority, waiting that long costs a process its CPU time too."""
    try:
        return (os.getpriority(os.PRIO_PROCESS, pid) != os.getpriority(os.PRIO_PROCESS, 0)
                or os.sched_getscheduler(pid) != os.sched_getscheduler(0)
                or os.sched_getaffinity(pid) != os.sched_getaffinity(0))
    except OSError:
        return True


MAX_PROCESSES = 4096          # a walk of the sandbox's tree stops here (its pids group allows 256)


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children (breadth first), at most MAX_PROCESSES."""
    found: list[int] = []
    level = [pid]
    seen = {pid}
    while level and len(found) < MAX_PROCESSES:
        below = []
        for parent in level:
            for child in children(parent):
                if child not in seen and len(found) < MAX_PROCESSES:
                    seen.add(child)
                    found.append(child)
                    below.append(child)
        level = below
    return found


def _below_cpu(pid: int) -> float:
    """The CPU time of every live process below `pid` (utime, stime, cutime, cstime of each), in seconds, parents
    read before their children (_descendants): one reaped between two reads is missed, never counted twice."""
    cpu = 0.0
    for below in _descendants(pid):
        fields = _stat(below)
        if fields is not None:
            cpu += sum(fields[11:15]) / _TICK
    return cpu


def _stat(pid: int) -> list[int] | None:
    """The numeric fields of /proc/<pid>/stat after the command (index 0 is field 4, the parent's pid)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return [0] + [int(value) for value in fields[1:15]]
    except (OSError, IndexError, ValueError):
        return None


def children(pid: int) -> list[int]:
    """The kernel's list of `pid`'s children (every thread's), or a scan of /proc where that list is absent."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
                found.extend(int(child) for child in listing.read().split())
        return found
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _parent(int(entry)) == pid:
            found.append(int(entry))
    return found


def _parent(pid: int) -> int | None:
    fields = _stat(pid)
    return fields[1] if fields is not None else None


def _innermost_pid(pid: int) -> int | None:
    """The pid a process has in its own (innermost) pid namespace: the last number of its NSpid line."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, IndexError, ValueError):
        return None
    return None


def exercise_process(outer: int, reported: int) -> Exercise | None:
    """An exercise's fork and its runtime, by host pid, found by walking the sandbox's tree in the kernel's /proc.

    `outer` is the sandbox's first process (the grader holds its pidfd); the fork is a child of the runtime,
    which is `outer` itself (the jail's PID 1 with namespaces, the zygote's child in rlimits mode).
    `reported` is the pid the child said it forked, in its own pid namespace: advice, used only to pick among
    the processes of this sandbox's tree, whose numbers the kernel gives, the one whose run-queue time is read.
    The CPU time is summed from `outer` down, whatever was reported: a runtime patched at load named a sleeping
    child of the fork, whose parent (the fork) was then taken for the runtime, and the fork's own CPU time went
    uncounted (a case computing 4 s under a 1 s limit answered "ok" with 0.0 s).
    """
    level = [(outer, outer)]
    for _ in range(3):
        level = [(pid, child) for _, pid in level for child in children(pid)]
        for _, pid in level:
            if _innermost_pid(pid) == reported:
                return Exercise(outer, pid)
    return None


def over(used: float, allowed: float) -> bool:
    """Whether a case used more CPU time than it may: strictly more. The kernel's counts are rounded down (to a
    clock tick in /proc, summed over processes; to a nanosecond or microsecond in a cgroup), so a measure equal to
    the allowance may stand for a little more, and one above it surely is more: a tie goes to the student, and a
    timeout is never given for time that may not have been used. The parent applies this one rule to a case it
    stops and to an answer it judges late."""
    return used > allowed


# A submission's deadline moves by at most this share of its budget for waiting for a CPU: at load 11 on 2 cores
# eight-puzzle's A* rerun needed about 1.5 times its 60 s. The watchdog allows for it (executor.watchdog_for).
SLACK_SHARE = 1.0


def credit(waited: float, elapsed: float, computed: float) -> float:
    """The wall time a busy machine took from a submission's budget: the kernel's run-queue time of the processes
    that grade it (`waited`), but never more than the wall time its sandbox spent not computing (`elapsed` less
    the sandbox's CPU time `computed`). Busy processes of the submission's own make the grader and the sandbox
    wait too, yet they compute, so they earn nothing; sleeping is no run-queue time at all. The caller caps it
    (SLACK_SHARE of the budget), so the watchdog still ends every submission."""
    return max(0.0, min(waited, elapsed - computed))


def wall_verdict(wall: float, waiting: float) -> str:
    """Why a case reached the wall backstop without using its CPU time: "starved" when the kernel kept it
    waiting for a CPU for at least half of that time (the grader's machine: let it go on), else "waited" (it
    slept, blocked on input or a lock, or was stopped: the student's code chose to wait)."""
    return "starved" if wall > 0 and waiting >= STARVED_SHARE * wall else "waited"
