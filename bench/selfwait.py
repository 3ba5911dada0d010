"""Where a `grader grade` run left a CPU without work of its own, read from the kernel's scheduler events, so that a
busy machine does not hide it: wall time there is mostly other people's processes, but whether any task of the
run was running or runnable on a CPU is the run's own dependency structure (a worker waiting for its sandbox's
start, the coordinator's start-up with nothing else to do).

    python bench/selfwait.py [--correct 40] [--jobs 2]      (root, `perf` installed)

Records `perf sched record -k CLOCK_MONOTONIC` around `python -m grader grade` of distinct correct notebooks and
prints, per phase of the run (its start to the first submission's start, the submissions, the last result to its
end; the submissions' times are the results' own, as bench/idle.py reads them):
- the CPU time no task of the run could use (`gaps`): on each CPU, the time with no task of the run running there
  or waiting for it. On a machine of its own that CPU was idle (under load the phases stretch, so compare
  runs alternated, as with any other number here).
- where a task of the run waited for a CPU someone else's task held (`displaced`, by the holder's name), and what
  the kernel's own threads ran meanwhile (work the kernel defers, some of it the sandboxes' teardown: in no CPU
  count of the run).
- bench_grading's "wall = CPU / cores + X" for this run (its cpuacct group, as bench_grading makes it), with X on
  every core split into the above: left idle, others' tasks where the run's waited, a task woken on an idle CPU
  not yet running. Only the first and the last are the run's own; the second is the machine's load (at quiet:
  the kernel's threads and the machine's background).
- before the first submission began: how long the coordinator waited for a CPU held by a process of its own (a
  zygote, the probe) rather than by someone else's (grader.run.beside keeps them apart).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import idle

_LINE = re.compile(r"\s*(.*?)\s+(-?\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):")
_FORK = re.compile(r"sched_process_fork: comm=.* pid=(\d+) child_comm=.* child_pid=(\d+)")
_SWITCH = re.compile(r"prev_comm=.* prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)")
_WAKE = re.compile(r"sched_wak(?:ing|eup|eup_new): comm=.* pid=(\d+) prio=\d+ target_cpu=(\d+)")
_EXEC = re.compile(r"sched_process_exec: filename=(.*) pid=(\d+) old_pid=")
_KERNEL = re.compile(r"(kworker|ksoftirqd|rcu|migration|kthreadd|kcompactd|khugepaged|kswapd|cpuhp|idle_inject|"
                     r"irq/|jbd2|writeback|oom_reaper|kauditd|netns|khungtaskd)")
_MIGRATE = re.compile(r"sched_migrate_task: comm=.* pid=(\d+) prio=\d+ orig_cpu=(\d+) dest_cpu=(\d+)")


@dataclass
class Waits:
    """What the events said, in seconds: CPU time left idle by the run per phase, and the coordinator's waits."""

    gaps: dict[str, float] = field(default_factory=dict)        # phase -> CPU-seconds with no task of the run
    spans: dict[str, float] = field(default_factory=dict)       # phase -> its wall seconds
    coordinator_ran: float = 0.0             # before the first submission began
    behind_own: float = 0.0                  # runnable, on a CPU running a zygote or the probe (a program it ran)
    behind_rest: float = 0.0                 # runnable, on a CPU running another task of the run (a worker)
    behind_others: float = 0.0               # runnable, on a CPU running someone else's
    # CPU-seconds others' tasks ran while a task of the run waited on that CPU (the kernel's workers that tear a
    # sandbox's namespaces down, other people's processes): wall time the run lost that its CPU count does not show
    displaced: dict[str, float] = field(default_factory=dict)
    displaced_by: dict[str, float] = field(default_factory=dict)    # a task's name (digits dropped) -> seconds
    ran: dict[str, float] = field(default_factory=dict)          # CPU-seconds the run's tasks ran
    others_by: dict[str, float] = field(default_factory=dict)    # every task not the run's that ran in its phases
    waking: dict[str, float] = field(default_factory=dict)       # a task of the run woken on an idle CPU, not yet in


def read(lines: list[str], root: int, phases: list[tuple[str, float, float]], cpus: int) -> Waits:
    """Replay `perf script` lines of sched events: `root` is the coordinator (every task it forks, and theirs, is
    the run's); `phases` are (name, start, end) on the events' clock; the first is the one before the first
    submission."""
    mine = {root}
    started: set[int] = set()      # the run's tasks that executed a program: the coordinator, zygotes, the probe
    state: dict[int, str] = {}     # task -> "run", "ready" or "sleep" (never seen: asleep)
    where: dict[int, int] = {}     # task -> the CPU it runs or waits on
    running: dict[int, int] = {}   # CPU -> the task running there
    names: dict[int, str] = {}     # task -> its name when it was switched in
    demand = [0] * cpus            # CPU -> tasks of the run running or waiting there
    waits = Waits(gaps={name: 0.0 for name, _, _ in phases}, spans={name: end - start for name, start, end in phases},
                  displaced={name: 0.0 for name, _, _ in phases}, ran={name: 0.0 for name, _, _ in phases},
                  waking={name: 0.0 for name, _, _ in phases})
    first = phases[0]
    last = None

    def account(start: float, end: float) -> None:
        for name, low, high in phases:
            a, b = max(start, low), min(end, high)
            if b > a:
                waits.gaps[name] += (b - a) * sum(1 for count in demand if count == 0)
                for cpu, count in enumerate(demand):
                    holder = running.get(cpu, 0)
                    if holder and holder not in mine:
                        who = re.sub(r"\d+", "N", names.get(holder, "?"))
                        waits.others_by[who] = waits.others_by.get(who, 0.0) + b - a
                    if count and holder in mine:
                        waits.ran[name] += b - a
                    elif count and not holder:
                        waits.waking[name] += b - a
                    elif count:
                        waits.displaced[name] += b - a
                        who = re.sub(r"\d+", "N", names.get(holder, "?"))
                        waits.displaced_by[who] = waits.displaced_by.get(who, 0.0) + b - a
        a, b = max(start, first[1]), min(end, first[2])
        if b > a:
            if state.get(root) == "run":
                waits.coordinator_ran += b - a
            elif state.get(root) == "ready":
                holder = running.get(where.get(root, -1))
                if holder in started and holder != root:   # a zygote or the probe (a worker runs no new program)
                    waits.behind_own += b - a
                elif holder in mine and holder != root:    # a worker, a thread, a zygote's own fork
                    waits.behind_rest += b - a
                else:
                    waits.behind_others += b - a

    def move(task: int, new: str, cpu: int) -> None:
        old = state.get(task, "sleep")
        if old != "sleep" and task in where and where[task] < cpus:
            demand[where[task]] -= 1
        if new != "sleep" and cpu < cpus:
            demand[cpu] += 1
        state[task], where[task] = new, cpu

    for line in lines:
        found = _LINE.match(line)
        if not found:
            continue
        moment, event, cpu = float(found.group(4)), found.group(5), int(found.group(3))
        if last is not None:
            account(last, moment)
        last = moment
        if event == "sched:sched_process_fork":
            fork = _FORK.search(line)
            if fork and int(fork.group(1)) in mine:
                mine.add(int(fork.group(2)))
        elif event == "sched:sched_process_exec":
            exec_ = _EXEC.search(line)
            if exec_ and int(exec_.group(2)) in mine:
                started.add(int(exec_.group(2)))
        elif event == "sched:sched_switch":
            switch = _SWITCH.search(line)
            if not switch:
                continue
            before, left, after = int(switch.group(1)), switch.group(2), int(switch.group(4))
            names[after] = switch.group(3)
            if before in mine:
                move(before, "ready" if left.startswith("R") else "sleep", cpu)
            running[cpu] = after
            if after in mine:
                move(after, "run", cpu)
        elif event in ("sched:sched_waking", "sched:sched_wakeup", "sched:sched_wakeup_new"):
            wake = _WAKE.search(line)
            if wake and int(wake.group(1)) in mine and state.get(int(wake.group(1)), "sleep") == "sleep":
                move(int(wake.group(1)), "ready", int(wake.group(2)))
        elif event == "sched:sched_migrate_task":
            migrate = _MIGRATE.search(line)
            if migrate and int(migrate.group(1)) in mine:
                task = int(migrate.group(1))
                move(task, state.get(task, "sleep"), int(migrate.group(3)))
    return waits


def record(notebooks: Path, out: Path, cache: Path, jobs: int) -> tuple[list[str], int, float | None]:
    """Run the grade under `perf sched record`, through treecpu's wrapper in a cpuacct group of its own as
    bench_grading runs it: its events (CLOCK_MONOTONIC) as `perf script` lines, the coordinator's pid, and the
    CPU-seconds the group counted (None where no group could be made)."""
    import treecpu
    from bench_grading import RUBRIC
    group = treecpu._make_group()
    with tempfile.TemporaryDirectory(prefix="pg-selfwait-") as scratch:
        data = Path(scratch) / "perf.data"
        try:
            done = subprocess.run(["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-e",
                                   "sched:sched_process_exec", "-o", str(data), "--",
                                   sys.executable, treecpu.__file__, str(group or "-"), str(Path(scratch) / "records"),
                                   "grade", str(notebooks), "--rubric", str(RUBRIC), "--out", str(out), "--cache",
                                   str(cache), "--jobs", str(jobs), "--quiet"],
                                  capture_output=True, text=True)
            counted = None
            if group is not None:
                treecpu._settle(group)
                counted = int((group / "cpuacct.usage").read_text()) / 1e9
        finally:
            if group is not None:
                treecpu._remove(group)
        if done.returncode != 0:
            raise SystemExit(f"perf sched record or grader grade failed:\n{done.stderr[-3000:]}")
        lines = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True,
                               check=True).stdout.splitlines()
    return lines, coordinator(lines, sys.executable), counted


def coordinator(lines: list[str], executable: str) -> int:
    """The pid of the recorded command: the first to execute `executable` (perf starts it once it records)."""
    for line in lines:
        found = _EXEC.search(line)
        if found and found.group(1) == executable:
            return int(found.group(2))
    raise SystemExit(f"no process executed {executable} while perf recorded")


def lifetime(lines: list[str], root: int) -> tuple[float, float]:
    """When the run's first task started (`root` executed) and its last one ended (perf's own start and end are
    not the run's)."""
    mine, started, ended = {root}, None, 0.0
    for line in lines:
        found = _LINE.match(line)
        if not found:
            continue
        moment, event = float(found.group(4)), found.group(5)
        if event == "sched:sched_process_fork":
            fork = _FORK.search(line)
            if fork and int(fork.group(1)) in mine:
                mine.add(int(fork.group(2)))
        elif event == "sched:sched_process_exec" and started is None:
            exec_ = _EXEC.search(line)
            if exec_ and int(exec_.group(2)) == root:
                started = moment
        elif event == "sched:sched_switch":
            switch = _SWITCH.search(line)
            if switch and int(switch.group(1)) in mine:
                ended = moment
    return (started if started is not None else ended), ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--correct", type=int, default=40, help="distinct correct notebooks graded")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    import bench_grading
    import treecpu
    treecpu.installed_bytecode()
    offset = time.time() - time.monotonic()    # the results' times are the wall clock's
    with tempfile.TemporaryDirectory(prefix="pg-selfwait-") as tmp:
        root_dir = Path(tmp)
        (root_dir / "class").mkdir()
        bench_grading.generate(root_dir / "class", args.correct, mix=[("correct", 1)], own_cells=True)
        subprocess.run([sys.executable, "-m", "grader", "kit", str(bench_grading.RUBRIC), "-o",
                        str(root_dir / "kit.json"), "--cache", str(root_dir / "cache")], check=True,
                       capture_output=True)     # expected values computed and cached, as bench_grading does
        loaded = treecpu.load()
        lines, root, counted = record(root_dir / "class", root_dir / "out", root_dir / "cache", args.jobs)
        spans = idle.spans(root_dir / "out" / "gradebook.sqlite")
    launched, ended = lifetime(lines, root)
    first = min(start for start, _ in spans) - offset
    last = max(end for _, end in spans) - offset
    phases = [("start-up", launched, first), ("submissions", first, last), ("end", last, ended)]
    waits = read(lines, root, phases, os.cpu_count() or 1)
    print(f"{args.correct} correct notebooks, {args.jobs} workers, {loaded}; CPU time no task of the run could use "
          f"(idle on a machine of its own):")
    for name, _, _ in phases:
        print(f"  {name}: {waits.spans[name]:.3f} s wall, {waits.gaps[name]:.3f} CPU-s left idle; the run's tasks ran "
              f"{waits.ran[name]:.3f} CPU-s, others' {waits.displaced[name]:.3f} where one of them waited, "
              f"{waits.waking[name]:.3f} one was woken on an idle CPU")
    ranked = sorted(waits.displaced_by.items(), key=lambda item: -item[1])[:6]
    print("  the others' tasks that ran where a task of the run waited: "
          + ", ".join(f"{who} {1000 * seconds:.0f} ms" for who, seconds in ranked))
    kernel = sorted(((who, seconds) for who, seconds in waits.others_by.items() if _KERNEL.match(who)),
                    key=lambda item: -item[1])
    print(f"  the kernel's own threads ran {sum(seconds for _, seconds in kernel):.3f} CPU-s over the run (in no "
          f"count of its CPU; under load not all of it the run's): "
          + ", ".join(f"{who} {1000 * seconds:.0f} ms" for who, seconds in kernel[:6]))
    cpus = os.cpu_count() or 1
    wall, ran = ended - launched, sum(waits.ran.values())
    if counted is not None:
        # bench_grading's "wall = CPU / cores + X when not every core was busy with the run", for this run: each
        # CPU's time in it is the run's tasks running, others' running where one waited, or left idle
        print(f"  wall {wall:.2f} s = CPU / {cpus} cores {counted / cpus:.2f} s (its cpuacct group) + "
              f"{wall - counted / cpus:.2f} s; that X on every core: left idle {sum(waits.gaps.values()):.2f} CPU-s, "
              f"others' tasks where the run's waited {sum(waits.displaced.values()):.2f}, woken on an idle CPU "
              f"{sum(waits.waking.values()):.2f}, the run's tasks running beyond their group's count "
              f"{ran - counted:.2f} (the wrapper's start, perf's own events)")
    waited = waits.behind_own + waits.behind_rest + waits.behind_others
    print(f"  before the first submission the coordinator ran {1000 * waits.coordinator_ran:.0f} ms and waited for a "
          f"CPU {1000 * waited:.0f} ms: behind a zygote or the probe {1000 * waits.behind_own:.0f} ms, another task "
          f"of the run (a worker) {1000 * waits.behind_rest:.0f} ms, others' {1000 * waits.behind_others:.0f} ms")


if __name__ == "__main__":
    main()
