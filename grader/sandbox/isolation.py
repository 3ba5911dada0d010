"""Which containment this machine offers, detected once at run time: namespaces, a pids cgroup, or rlimits only."""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.sandbox import cpuclock
from grader.sandbox.confine import UID_BASE

NAMESPACES = "namespaces"        # every namespace kind, an allowlist root, an unprivileged uid, no capabilities
RLIMITS = "rlimits"              # own session, resource limits, an unused uid when the grader is root
PIDS_MAX = 256                   # processes (and threads) one submission may have at once
MOVED_MOST = 16                  # a finished sandbox's processes moved to a spare CPU to die (Cgroup.move_members)
_counter = itertools.count()
ZYGOTE = Path(__file__).with_name("zygote.py")


@dataclass(frozen=True)
class Isolation:
    namespaces: bool
    pids_root: Path | None       # a writable pids cgroup directory, when we may create groups in it
    memory_root: Path | None = None   # a writable memory cgroup (v1 or v2) directory, likewise
    cpu_root: Path | None = None      # where a cgroup that counts a sandbox's CPU time may be made (v1 or v2)

    @property
    def level(self) -> str:
        return NAMESPACES if self.namespaces else RLIMITS

    @property
    def counts_cpu(self) -> bool:
        """Whether a cgroup can count each sandbox's CPU time: a CPU group, or a v2 memory group (v2 keeps
        `cpu.stat` in every group)."""
        return self.cpu_root is not None or (self.memory_root is not None
                                             and not (self.memory_root / "memory.limit_in_bytes").exists())


_PROBE = [sys.executable, "-s", "-S", "-P", str(ZYGOTE), "--probe"]
_PENDING: subprocess.Popen[bytes] | None = None   # a probe started ahead (start_probe), not yet read


def _run_probe() -> subprocess.Popen[bytes]:
    return subprocess.Popen(_PROBE, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd="/", env={"PATH": "/usr/bin:/bin"})


def start_probe() -> None:
    """Start the probe now, in the background. A batch does this first thing: its workers are forked once the
    plan is built and inherit the answer, so no worker's first sandbox waits for a probe interpreter of its own
    (0.3 s each under load, while the coordinator's rubric, intake and plan ran beside it)."""
    global _PENDING
    if _PENDING is None and probe.cache_info().currsize == 0:
        try:
            _PENDING = _run_probe()
        except OSError:
            _PENDING = None


def probe_pids() -> list[int]:
    """The probe started ahead and not yet read (start_probe), as a pid list (empty: none): a coordinator keeps it
    off its own CPU while it starts (grader.run.beside)."""
    pending = _PENDING
    return [pending.pid] if pending is not None else []


def drop_probe() -> None:
    """Stop a probe started ahead that nobody asked for (a regrade with nothing to grade)."""
    global _PENDING
    pending, _PENDING = _PENDING, None
    if pending is not None:
        pending.kill()
        pending.communicate()


def _forget_pending() -> None:
    global _PENDING
    _PENDING = None      # a forked child never waits on its parent's process; it probes itself if it must


os.register_at_fork(after_in_child=_forget_pending)


@functools.cache
def probe() -> dict:
    """What this machine offers a sandbox, tried the way a real child does it (in a clean interpreter)."""
    global _PENDING
    process, _PENDING = _PENDING, None
    try:
        process = process or _run_probe()
        stdout, _ = process.communicate(timeout=30)
        return json.loads(stdout.decode() or "{}")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        if process is not None:
            process.kill()
            process.communicate()
        return {}


def _pids_root() -> Path | None:
    for candidate in (Path("/sys/fs/cgroup/pids"),):
        if (candidate / "cgroup.procs").exists() and os.access(candidate, os.W_OK):
            return candidate
    return None


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path for `controller` (v1), or its unified path ("" controller: v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") if controller else controllers == "":
            return path
    return None


def find_memory_root() -> Path | None:
    """Where this process may make memory cgroups: under its own memory cgroup (so a sandbox stays inside
    whatever limit the grader itself runs under), v1 or v2 (where the memory controller is delegated)."""
    v1 = _own_cgroup("memory")
    if v1 is not None:
        candidate = Path("/sys/fs/cgroup/memory") / v1.lstrip("/")
        if (candidate / "memory.limit_in_bytes").exists() and os.access(candidate, os.W_OK):
            return candidate
    v2 = _own_cgroup("")
    if v2 is not None:
        candidate = Path("/sys/fs/cgroup") / v2.lstrip("/")
        try:
            delegated = "memory" in (candidate / "cgroup.subtree_control").read_text().split()
        except OSError:
            delegated = False
        if delegated and os.access(candidate, os.W_OK):
            return candidate
    return None


def find_cpu_root() -> Path | None:
    """Where this process may make groups that count CPU time: the first of cpu_roots."""
    return next(iter(cpu_roots()), None)


def cpu_roots() -> list[Path]:
    """Where this process may make groups that count CPU time, best first: its own v2 group where a group made
    there keeps `cpu.pressure` (every v2 group keeps `cpu.stat`, no controller needed, and the pressure says how
    long the whole group waited while others ran: budget.py), then v1's cpuacct hierarchy under its own group,
    then its own v2 group without pressure. In v2 a process is in one group only, so where the memory group is
    v2 it is the one that counts (see cpu_meter), and none is made there. A grader before session 13 made its
    groups in v1 where both were offered: clean_leftovers looks in every one."""
    roots = []
    v2 = _own_v2_group()
    if v2 is not None and (v2 / "cpu.pressure").exists():
        roots.append(v2)
    v1 = _own_cgroup("cpuacct")
    if v1 is not None:
        for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
            candidate = Path("/sys/fs/cgroup") / mount / v1.lstrip("/")
            if (candidate / "cpuacct.usage").exists() and os.access(candidate, os.W_OK):
                roots.append(candidate)
                break
    if v2 is not None and v2 not in roots:
        roots.append(v2)
    return roots


def _own_v2_group() -> Path | None:
    """This process's own v2 group, where it may make groups (the v2 hierarchy of a hybrid machine is mounted
    at /sys/fs/cgroup/unified, that of a v2 machine at /sys/fs/cgroup)."""
    v2 = _own_cgroup("")
    if v2 is not None:
        for unified in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
            candidate = unified / v2.lstrip("/")
            if (candidate / "cpu.stat").exists() and os.access(candidate, os.W_OK):
                return candidate
    return None


@functools.cache
def detect(allow_namespaces: bool = True) -> Isolation:
    """Probe once per process; PUZZLE_GRADER_ISOLATION=rlimits forces the fallback (e.g. to test it)."""
    forced = os.environ.get("PUZZLE_GRADER_ISOLATION")
    namespaces = allow_namespaces and forced != RLIMITS and bool(probe().get("jail"))
    return Isolation(namespaces=namespaces, pids_root=_pids_root() if forced != RLIMITS else None,
                     memory_root=find_memory_root() if forced != RLIMITS else None,
                     cpu_root=find_cpu_root() if forced != RLIMITS else None)


def host_user(uid: Any, grader_uid: Any) -> str:
    """Who the student ran as on the host, as a stable word (the unused uid itself differs every run)."""
    if not isinstance(uid, int):
        return "unknown"
    if uid == 0:
        return "root"
    if uid >= UID_BASE:
        return "unused uid"
    return "the grader's uid" if uid == grader_uid else f"uid {uid}"


def isolation_report(level: str | None, facts: dict[str, Any], limits: Any) -> dict[str, Any]:
    """What held for a submission, as plain fields: the `isolation` of a result says the level word; this
    says the namespaces, who the student ran as (on the host, and its uid inside), the filesystem mode
    (allowlist: a built root; landlock: the host's, restricted to the same allowlist; none: the host's),
    whether a memory cgroup bounded the whole sandbox, what counted a case's CPU time (`cpu_clock`: "cgroup",
    the whole sandbox from the case's start; "proc", its processes in /proc from the parent's first look, so
    parallel work before it is not counted; "wall", the parent's wall clock), and the limits that applied."""
    return {
        "level": level or "none (not run)",
        "namespaces": list(facts.get("namespaces", [])),
        "host_user": host_user(facts.get("host_uid"), facts.get("grader_uid")),
        "uid": facts.get("uid"),
        "grader_uid": facts.get("grader_uid"),
        "filesystem": facts.get("filesystem", "none" if facts else "unknown"),
        "capabilities": facts.get("capabilities"),
        "landlock": facts.get("landlock"),
        "memory_cgroup": facts.get("memory_cgroup"),
        "cpu_clock": facts.get("cpu_clock"),
        "root_because": facts.get("root_because"),
        "limits": {name: getattr(limits, name) for name in ("memory_mb", "cpu_seconds", "disk_mb", "files",
                                                              "open_files", "processes") if hasattr(limits, name)},
    }


class Cgroup:
    """One cgroup made for one child, named after this process so a later run can tell it is left over:
    what every kind of group (pids, memory, CPU) shares, from its making to its removal."""

    def __init__(self, root: Path):
        self.path = root / f"puzzle-grader-{os.getpid()}-{next(_counter)}"
        self.path.mkdir()

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")

    def empty(self) -> None:
        """SIGKILL every process still in the group (escapees of every kind included)."""
        _kill_members(self.path)

    def remove(self) -> None:
        remove_group(self.path)

    def move_members(self, cpus: set[int], most: int = MOVED_MOST) -> int:
        """Keep the group's processes (at most `most`, each its main thread) to `cpus`, and return how many.

        Before a finished sandbox is killed, by a worker that has a CPU of its own to spare (process._discard):
        a killed process's exit (its memory unmapped, a jail's namespaces and tmpfs torn down: ~2-2.5 ms of CPU
        a Taoistic notebook's sandbox) runs on its CPU, the worker's, queued with the next student's load and
        cases. Never a process outside the group: each pid is held by a pidfd from before the group is read again,
        and one that is not alive after the move may have been another's pid by then (nothing is undone: none is
        ours to restore). Any error skips that process: it dies where it is, as before."""
        listed = self._listed()
        if listed is None:
            return 0
        held = self._held(listed[:most])
        moved = 0
        try:
            for pid, pidfd in held.items():
                try:
                    os.sched_setaffinity(pid, cpus)
                except OSError:
                    continue
                moved += not select.select([pidfd], [], [], 0)[0]   # alive: the pid was its own throughout
        finally:
            for pidfd in held.values():
                os.close(pidfd)
        return moved

    def _listed(self) -> list[int] | None:
        """The group's processes now (None: the group cannot be read)."""
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return None

    def _held(self, pids: list[int]) -> dict[int, int]:
        """Of `pids` (listed in the group), those a listing after their pidfds were opened still shows, each with
        its pidfd: such a pid is the group's process its pidfd holds, not another process given the pid of one
        that ended since the first listing. The caller closes the pidfds."""
        held = {}
        for pid in pids:
            try:
                held[pid] = os.pidfd_open(pid)
            except OSError:   # ended since the listing
                pass
        still = set(self._listed() or ())
        for pid in [pid for pid in held if pid not in still]:
            os.close(held.pop(pid))
        return held

    def keep_all_to(self, cpus: set[int], expected: int = 1, most: int = MOVED_MOST, rounds: int = 3,
                    wait: float = 0.5) -> bool:
        """Keep every process of the group to `cpus`, and say whether all of them are now, each one thread: the
        group as a whole moved, so whatever runs in it from now on runs there (a task inherits its maker's CPUs).

        A sandbox loaded ahead on the CPU a lone worker has to spare (process.Sandbox.to_worker): its runtime and
        the exercise's fork it makes ahead once loaded, each one thread. False where the group holds more than
        `most` processes, a process of more threads (affinity is a thread's: the others would stay), or the group
        still shows processes not moved after `rounds` listings (each lists what the last one's processes made
        before they were moved). Each process is held by a pidfd while it is moved and checked, so the pid is the
        group's process throughout (_held). PermissionError where this process may not move them (not root).

        `expected`: how many processes the group holds once settled (a loaded runtime makes its exercise's fork
        right after the load), waited for up to `wait` seconds before anything is moved: a fork in flight copies
        its maker's CPUs before the group lists it, so one made while its maker is moved could be missed.
        Fewer by then: False."""
        kept: set[int] = set()
        until = time.monotonic() + wait
        while True:
            listed = self._listed()
            if listed is None:
                return False
            if len(listed) >= expected:
                break
            if time.monotonic() >= until:
                return False
            time.sleep(0.0005)
        for turn in range(rounds):
            if turn:
                listed = self._listed()
                if listed is None:
                    return False
            if len(listed) > most:
                return False
            new = [pid for pid in listed if pid not in kept]
            if not new:
                return True
            held = self._held(new)
            try:
                for pid, pidfd in held.items():
                    try:
                        os.sched_setaffinity(pid, cpus)
                        with open(f"/proc/{pid}/status", "rb") as status:   # after the move: a thread since has it
                            threads = next((line.split()[1] for line in status if line.startswith(b"Threads:")), b"")
                        if select.select([pidfd], [], [], 0)[0]:   # ended: the pid may be another's by now
                            continue
                        if threads != b"1":
                            return False
                        kept.add(pid)
                    except PermissionError:
                        raise
                    except OSError:   # ended meanwhile
                        continue
            finally:
                for pidfd in held.values():
                    os.close(pidfd)
        return False


class PidsGroup(Cgroup):
    """A pids cgroup for one child: a fork bomb stops at PIDS_MAX instead of taking the machine."""

    def __init__(self, root: Path):
        super().__init__(root)
        (self.path / "pids.max").write_text(str(PIDS_MAX))
        self.events: int | None = None   # pids.events, opened at the first look (refused)

    def refused(self) -> int:
        """How many forks and threads the kernel refused because this group was at its cap (pids.events' `max`,
        v1 and v2 alike): the kernel's count, which nothing in the sandbox can change. 0 where it cannot be read.
        The file is kept open and read with pread (a few us: grading looks after every exercise)."""
        try:
            if self.events is None:
                self.events = os.open(self.path / "pids.events", os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self.events, 256, 0)
        except OSError:
            return 0
        for line in text.splitlines():
            name, _, value = line.partition(b" ")
            if name == b"max" and value.strip().isdigit():
                return int(value)
        return 0

    def close_events(self) -> None:
        if self.events is not None:
            try:
                os.close(self.events)
            except OSError:
                pass
            self.events = None


def remove_group(path: Path, seconds: float = 2.0) -> bool:
    """SIGKILL what is in the cgroup at `path` and remove it; True when it is gone. A killed process stays in
    its group until the kernel has torn it down (longer for a larger one), so the removal is retried for a
    moment (first after 1 ms, then twice as long each time up to 20 ms: a killed sandbox is usually torn down
    within a few ms, and a fixed 20 ms made every discard take 21); a group still busy after that is left to
    the next run's clean_leftovers. The removal is tried first: a group the kernel lets go of is empty (nothing
    to kill), as a sandbox's group usually is by then, and its member list is then not read at all."""
    deadline = time.monotonic() + seconds
    pause = 0.001
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            _kill_members(path)
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(0.02, pause * 2)


def _kill_members(path: Path) -> None:
    try:
        for pid in (path / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
    except OSError:
        pass


# Groups made by this process and not yet removed (one exit handler removes what is left, however many
# children the process started).
_LIVE: "set[Cgroup]" = set()
_LIVE_LOCK = __import__("threading").Lock()


def _made(group: Cgroup) -> None:
    with _LIVE_LOCK:
        if not _LIVE:
            atexit.register(_remove_live)
        _LIVE.add(group)


def _remove_live() -> None:
    with _LIVE_LOCK:
        groups = list(_LIVE)
    for group in groups:
        _release(group)


def _release(group: Cgroup) -> None:
    """Kill what is left in the group and remove it (retried for a moment while the kernel tears the killed
    processes down; a group still busy then stays for the exit handler or the next run's clean_leftovers)."""
    if remove_group(group.path):
        with _LIVE_LOCK:
            _LIVE.discard(group)


def acquire_group(root: Path) -> PidsGroup:
    """A new pids group for one child. Never reused: nothing of one student's sandbox (its counters, a
    process the kernel has not finished tearing down) may be another's. A worker makes it with the spare
    child, ahead of the submission, and removes it after (see process.Sandbox.close), off the critical path."""
    group = PidsGroup(root)
    _made(group)
    return group


def release_group(group: PidsGroup) -> None:
    """Kill whatever is left in the group and remove it."""
    group.close_events()
    _release(group)


class MemoryGroup(Cgroup):
    """A memory cgroup for one child: the limit holds for the whole sandbox (every process, its tmpfs
    scratch, memfd and shared pages), where RLIMIT_AS bounds one process's address space only."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.v2 = not (self.path / "memory.limit_in_bytes").exists()
        self.limit = 0
        self.kills = 0

    def set_limit(self, limit: int) -> None:
        """Memory and memory+swap both at `limit` bytes (no swap beyond it); the OOM killer acts inside."""
        if self.v2:
            (self.path / "memory.max").write_text(str(limit))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
        else:
            memsw = self.path / "memory.memsw.limit_in_bytes"
            current = int((self.path / "memory.limit_in_bytes").read_text())
            if memsw.exists() and current > limit:     # memsw >= memory at every step
                (self.path / "memory.limit_in_bytes").write_text(str(limit))
                memsw.write_text(str(limit))
            else:
                if memsw.exists():
                    memsw.write_text(str(limit))
                (self.path / "memory.limit_in_bytes").write_text(str(limit))
        self.limit = limit
        self.kills = self.oom_kills()

    def oom_kills(self) -> int:
        """How many processes the OOM killer has killed in this group so far."""
        try:
            text = (self.path / ("memory.events" if self.v2 else "memory.oom_control")).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def out_of_memory(self) -> bool:
        """True when a process of this sandbox was OOM-killed since the limit was set."""
        return self.oom_kills() > self.kills


class CpuGroup(Cgroup):
    """A cgroup that only counts: the CPU time the kernel charges every process of one sandbox (its threads,
    its children, those it never waits for), however they hide from /proc or from the child's own alarm."""


def acquire_cpu_group(root: Path) -> CpuGroup:
    """A new CPU-counting group for one child, never reused (like the pids and memory groups)."""
    group = CpuGroup(root)
    _made(group)
    return group


def release_cpu_group(group: CpuGroup) -> None:
    """Kill whatever is left in the group and remove it."""
    _release(group)


class CpuMeter:
    """Reads a sandbox's CPU time from its cgroup through one open descriptor: a pread per reading (a few
    microseconds), so the parent can afford one at each case's start and answer. A v2 group also says how long
    the whole sandbox was kept waiting (`stalled`)."""

    def __init__(self, group: Path):
        v1 = group / "cpuacct.usage"
        self.v2 = not v1.exists()
        self.fd = os.open(group / "cpu.stat" if self.v2 else v1, os.O_RDONLY | os.O_CLOEXEC)
        self.pressure = -1
        if self.v2:
            try:
                self.pressure = os.open(group / "cpu.pressure", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self.pressure = -1

    def seconds(self) -> float | None:
        """CPU seconds charged to the group so far (nanoseconds in v1, microseconds in v2), or None."""
        try:
            text = os.pread(self.fd, 64 if self.v2 else 32, 0)
            if self.v2:
                name, _, value = text.split(b"\n", 1)[0].partition(b" ")
                return int(value) / 1e6 if name == b"usage_usec" else None
            return int(text) / 1e9
        except (OSError, ValueError):
            return None

    def stalled(self) -> float | None:
        """Seconds the group had work to run and none of it ran, so far (cpu.pressure's "full" total), or None
        where the kernel does not say. Someone else ran meanwhile: the sandbox's own processes waiting for each
        other never show here, as one of them was running (cpuclock.credit)."""
        if self.pressure < 0:
            return None
        try:
            return cpuclock.full_stall(os.pread(self.pressure, 256, 0))
        except OSError:
            return None

    def close(self) -> None:
        for fd in (self.fd, self.pressure):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.fd = self.pressure = -1


def cpu_meter(cpu: CpuGroup | None, memory: MemoryGroup | None) -> CpuMeter | None:
    """The meter of a sandbox's CPU time: its CPU group's, or its memory group's where that is v2 (one group
    holds the whole sandbox there); None where neither can be read (the /proc clock applies)."""
    for group in (cpu.path if cpu is not None else None, memory.path if memory is not None and memory.v2 else None):
        if group is not None:
            try:
                return CpuMeter(group)
            except OSError:
                continue
    return None


def _forget_inherited_groups() -> None:
    """In a forked process: the parent's groups stay the parent's (their names carry its pid)."""
    global _LIVE_LOCK
    _LIVE.clear()
    _LIVE_LOCK = __import__("threading").Lock()


os.register_at_fork(after_in_child=_forget_inherited_groups)


def acquire_memory_group(root: Path, limit: int) -> MemoryGroup:
    """A new memory group with `limit` bytes for one child: never reused (an emptied v1 group still holds
    the charges of the page cache its last child read, which would count against the next student)."""
    group = MemoryGroup(root)
    _made(group)
    try:
        group.set_limit(limit)
    except OSError:
        _release(group)
        raise
    return group


def release_memory_group(group: MemoryGroup) -> None:
    """Kill whatever is left in the group and remove it."""
    _release(group)
