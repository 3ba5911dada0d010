"""The CPU time of one `grader grade` run, split by who spent it: the grader's own processes (the coordinator and
its workers) and the sandboxes (the zygotes and every process they fork), beside what the results record as the
students' cases. Wall time on a shared 2-core machine says little; CPU time of the whole tree says where it goes.

How, and why this way (each measure is exact under load, none is sampled):
- everything: a cpuacct cgroup made around the run (cgroup v1, as root). The rusage of waited children misses
  most of the sandboxes (their chain is not reaped up to us: 1.6 of 4.5 s task-clock for 20 notebooks), and
  /proc polling misses short-lived forks. The sandboxes' own CPU groups are made inside it, so it counts them.
- the grader's processes: each one's own rusage (RUSAGE_SELF, all its threads) when it ends, written by this
  file run as a wrapper around `python -m grader` (the coordinator at exit, each forked worker when it returns).
- the sandboxes: everything less the grader's processes.
- the cases: the sum of every case's `cpu_seconds` in the result files (the parent reads each sandbox's CPU
  group at a case's start and at its answer): the student's code on the case plus the child's handling of it.

    python bench/treecpu.py GROUP RECORDS grade ...    (what `measure` runs: `python -m grader grade ...`)
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@dataclass(frozen=True)
class TreeCpu:
    """CPU seconds of one run; `total` is None where no cgroup could be made around it (not root, cgroup v2)."""

    wall: float
    total: float | None          # every process of the run
    total_sys: float | None      # of which in the kernel
    coordinator: float           # the `grader grade` process itself
    workers: float               # its forked workers, together
    grader_sys: float            # the kernel's part of those two
    worker_count: int            # workers that reported (a replaced or spawned worker does not)
    started: float = 0.0         # Unix time when the run was launched, and when it had ended (idle.py's bounds)
    ended: float = 0.0

    @property
    def grader(self) -> float:
        return self.coordinator + self.workers

    @property
    def sandbox(self) -> float | None:
        return None if self.total is None else self.total - self.grader

    @property
    def sandbox_sys(self) -> float | None:
        return None if self.total_sys is None else self.total_sys - self.grader_sys


@dataclass(frozen=True)
class CasesCpu:
    """What the result files of a folder say of the cases: their CPU time (sandbox cgroup) and their number."""

    seconds: float
    cases: int
    submissions: int
    submission_seconds: float    # the results' own `seconds` (wall, each submission from its start to its end)
    # Each exercise's public cases, and its hidden ones: one request to the child each where the exercise's run is
    # its own (judge.grading.OwnRunsFirst), the child's work between two requests charged to the next one's first
    # case. A run the grader replaced (a second run) is not in the results, nor counted here.
    parts: int = 0


PACKAGE = Path(__file__).resolve().parents[1] / "grader"


@functools.cache
def installed_bytecode() -> bool:
    """Compile the grader's modules to bytecode in their __pycache__ folders (those out of date), as `pip install`
    does for an installed grader; False if some could not be. Why: with PYTHONDONTWRITEBYTECODE set (this project's
    development shells set it) in an editable install no bytecode is ever written, so every measured `grader grade`
    compiled the grader (~0.15 s of the coordinator's CPU) and every zygote its runtime's modules (0.20 s of CPU
    at each start against 0.04), all before the first submission: 20 correct notebooks, 4 rounds alternated,
    3.45-3.75 s of CPU against 3.23-3.41, idle workers before the first one 1.14-2.14 worker-s against 0.77-0.94.
    A TA's installed grader does not pay that; these scripts measure the grader, not its compiler."""
    import compileall
    return bool(compileall.compile_dir(PACKAGE, quiet=1))


def measure(arguments: list[str], cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[str], TreeCpu]:
    """Run `python -m grader ARGUMENTS` (through this file) and measure its CPU time, the grader's bytecode
    compiled first (installed_bytecode)."""
    installed_bytecode()
    group = _make_group()
    handle, records = tempfile.mkstemp(prefix="pg-bench-cpu-", suffix=".jsonl")
    os.close(handle)
    try:
        launched, started = time.time(), time.perf_counter()
        done = subprocess.run([sys.executable, __file__, str(group or "-"), records, *arguments], cwd=cwd,
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        ended = time.time()
        total = total_sys = None
        if group is not None:
            _settle(group)
            total = int((group / "cpuacct.usage").read_text()) / 1e9
            total_sys = int((group / "cpuacct.usage_sys").read_text()) / 1e9
        rows = [json.loads(line) for line in Path(records).read_text().splitlines() if line.strip()]
    finally:
        os.unlink(records)
        if group is not None:
            _remove(group)
    coordinator = [row for row in rows if row["role"] == "coordinator"]
    workers = [row for row in rows if row["role"] == "worker"]
    return done, TreeCpu(
        wall=wall, total=total, total_sys=total_sys,
        coordinator=sum(row["user"] + row["sys"] for row in coordinator),
        workers=sum(row["user"] + row["sys"] for row in workers),
        grader_sys=sum(row["sys"] for row in coordinator + workers), worker_count=len(workers),
        started=launched, ended=ended)


def cases_cpu(results: Path) -> CasesCpu:
    """The cases' CPU time and count over the result files of `results` (cases a result keeps: a run of an
    exercise that a better second run replaced is not in it)."""
    seconds, cases, submissions, wall, parts = 0.0, 0, 0, 0.0, 0
    for path in results.glob("*.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(result, dict) or "exercises" not in result:
            continue
        submissions += 1
        wall += result.get("seconds") or 0.0
        for exercise in result["exercises"]:
            parts += len({case.get("visibility") for case in exercise["cases"]})
            for case in exercise["cases"]:
                cases += 1
                seconds += case.get("cpu_seconds") or 0.0
    return CasesCpu(seconds, cases, submissions, wall, parts)


def breakdown(tree: TreeCpu, cases: CasesCpu | None, count: int, indent: str = "  ") -> list[str]:
    """Two or three short lines: where the CPU of a run went, per submission (start-up included)."""
    def ms(seconds: float) -> str:
        return f"{1000 * seconds / count:.0f} ms"

    if tree.total is None or tree.sandbox is None:
        return [f"{indent}CPU: grader processes {tree.grader:.2f} s = {ms(tree.grader)} per submission (the "
                f"sandboxes' not measured: no cpuacct cgroup could be made, run as root on cgroup v1)"]
    lines = [f"{indent}CPU of the whole run {tree.total:.2f} s (kernel {tree.total_sys or 0:.2f} s) = "
             f"{ms(tree.total)} per submission: grader {ms(tree.grader)} (coordinator {ms(tree.coordinator)}, "
             f"{tree.worker_count} workers {ms(tree.workers)}), sandboxes {ms(tree.sandbox)} "
             f"(kernel {ms(tree.sandbox_sys or 0)})"]
    if cases is not None and cases.submissions:
        own = cases.seconds
        lines.append(f"{indent}cases' CPU in the sandboxes {ms(own)} per submission ({cases.cases} cases); "
                     f"overhead = {ms(tree.total - own)} per submission (grader {ms(tree.grader)}, "
                     f"sandbox beyond its cases {ms(tree.sandbox - own)})")
    return lines


def beyond(tree: TreeCpu, indent: str = "  ") -> str:
    """How much of the wall time was not every core busy with the run: wall less CPU over cores. Under load that is
    mostly others' processes; at quiet, the kernel's own threads (the sandboxes' namespaces and cgroups torn down,
    in no count of the run's CPU) and the machine's background as well as the run's idle CPUs: selfwait.py splits
    it for one run."""
    cores = os.cpu_count() or 1
    if tree.total is None:
        return f"{indent}wall {tree.wall:.2f} s (the run's CPU not measured: no cpuacct cgroup)"
    return (f"{indent}wall {tree.wall:.2f} s = CPU / {cores} cores {tree.total / cores:.2f} s + "
            f"{tree.wall - tree.total / cores:.2f} s when not every core was busy with the run (idle, or others' "
            f"tasks: bench/selfwait.py splits it)")


def budget(wall: float, total: float | None, cases: CasesCpu | None, label: str) -> str:
    """What a target allows (`wall` seconds on every core) beside what the run spent: a reader sees how far."""
    cores = os.cpu_count() or 1
    spent = f"; the run spent {total:.2f} s" if total is not None else ""
    own = f", its cases alone {cases.seconds:.2f} s" if cases is not None and cases.submissions else ""
    return f"  {label} allows {wall:.2f} s wall = at most {cores * wall:.2f} s of CPU on {cores} cores{spent}{own}"


def load() -> str:
    """The machine's load when a bench starts, so a noisy run shows."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


class Group:
    """A cpuacct group this process joins, with everything it starts from then on (however they end: a process
    killed before its parent reaps it takes its CPU out of every rusage): what a bench reads around its work."""

    def __init__(self, path: Path):
        self.path = path
        (path / "cgroup.procs").write_text(str(os.getpid()))

    @classmethod
    def join(cls) -> Group | None:
        """None where no group can be made (not root, cgroup v2): the caller measures without one."""
        path = _make_group()
        return cls(path) if path is not None else None

    def seconds(self) -> float:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def leave(self) -> None:
        """Back to the root group, then the group removed once what this process started has left it."""
        (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        _settle(self.path)
        _remove(self.path)


def _make_group() -> Path | None:
    """A new cpuacct group for one run, or None where none can be made (the run then counts its grader only).
    Not named puzzle-grader-*: that name is the grader's own, which its leftover sweep may remove."""
    if not (CPUACCT / "cpuacct.usage").exists() or not os.access(CPUACCT, os.W_OK):
        return None
    group = CPUACCT / f"pg-bench-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def _members(group: Path) -> list[str]:
    procs = [pid for pid in (group / "cgroup.procs").read_text().split()]
    for child in group.iterdir():
        if child.is_dir():
            procs.extend(_members(child))
    return procs


def _settle(group: Path, seconds: float = 10.0) -> None:
    """Wait until the run's last process (a zygote tearing its sandboxes down) has left the group."""
    deadline = time.monotonic() + seconds
    while _members(group) and time.monotonic() < deadline:
        time.sleep(0.02)


def _remove(group: Path) -> None:
    """Remove the group and what the run left in it (its processes are ours: the run is over)."""
    for child in [c for c in group.iterdir() if c.is_dir()]:
        _remove(child)
    for pid in (group / "cgroup.procs").read_text().split():
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass
    for _ in range(100):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.02)


def _wrapped() -> None:
    """As the wrapper: join the group, have the coordinator and each forked worker write their rusage when they
    end, and run `python -m grader` with the remaining arguments."""
    import atexit
    import resource
    import runpy
    from multiprocessing import util

    group, records = sys.argv[1], sys.argv[2]
    if group != "-":
        Path(group, "cgroup.procs").write_text(str(os.getpid()))

    # The wrapper's CPU before it joined the group (its interpreter's start, this module) is in no group's count:
    # left out of the coordinator's too, or a small run's grader exceeds the whole (a regrade read "sandboxes
    # -0.05 s"). A forked worker's own rusage starts at zero.
    joined = resource.getrusage(resource.RUSAGE_SELF)
    coordinator = os.getpid()

    def record(role: str) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        before = joined if os.getpid() == coordinator else None
        user = usage.ru_utime - (before.ru_utime if before else 0.0)
        system = usage.ru_stime - (before.ru_stime if before else 0.0)
        line = json.dumps({"role": role, "pid": os.getpid(), "user": user, "sys": system})
        descriptor = os.open(records, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, (line + "\n").encode())
        finally:
            os.close(descriptor)

    class _Marker:
        pass

    marker = _Marker()

    def in_worker(_: object) -> None:
        # run by multiprocessing in a forked process once it has cleared the finalizers it inherited
        util.Finalize(None, record, args=("worker",), exitpriority=-1000)

    util.register_after_fork(marker, in_worker)
    atexit.register(record, "coordinator")     # registered first: runs last, after the grader's own handlers
    sys.argv = ["grader", *sys.argv[3:]]
    runpy.run_module("grader", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _wrapped()
