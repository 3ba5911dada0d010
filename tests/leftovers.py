"""What a test run leaves on the machine (processes, grader temp folders, grader cgroups), checked at its end.

Every process the run starts stays in a freezer cgroup made for the run (cgroup v1: children inherit it, and
an orphan re-parented to init, a double fork or a new session stays in it too; the grader moves sandboxes only
into pids and memory groups), so the processes still alive in it at the end are exactly the run's leftovers.
A grader process names its temp folder (/tmp/puzzle-grader-UID-PID-...) and its cgroups (puzzle-grader-PID-N)
by its pid, and removes them at exit; a grader killed with SIGKILL leaves them to the next grader's
clean_leftovers. A watcher process outside the run's group notes when each pid was in it, so a folder or a
cgroup of a dead pid is the run's if it was made while that pid was the run's: pids are reused, the times tell,
and another run on the same machine is never blamed. Where there is no writable freezer hierarchy (cgroup v2,
no root) nothing is checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FREEZER = Path("/sys/fs/cgroup/freezer")
POLL_SECONDS = 0.05
SETTLE_SECONDS = 10.0    # a SIGKILLed process leaves its cgroup when the kernel has torn it down

# Reads the run's cgroup.procs every POLL_SECONDS until stdin closes, then prints {pid: [first, last]} seen.
# It forks away at once, so it is no child of the run's (a test that kills "a child of pytest" cannot hit it).
_WATCHER = """
import json, os, select, sys, time
if os.fork():
    os._exit(0)
procs, seen = sys.argv[1], {}
while not select.select([sys.stdin], [], [], %r)[0]:
    now = time.time()
    try:
        with open(procs) as table:
            pids = table.read().split()
    except OSError:
        break
    for pid in pids:
        seen.setdefault(pid, [now, now])[1] = now
print(json.dumps(seen))
""" % POLL_SECONDS


@dataclass
class RunGroup:
    """The run's freezer cgroup and the watcher noting its members."""

    path: Path
    watcher: subprocess.Popen
    started: float

    @classmethod
    def enter(cls) -> RunGroup | None:
        """Put this process (and so everything it starts) into a new freezer cgroup; None where it cannot."""
        if not (FREEZER / "cgroup.procs").is_file() or not os.access(FREEZER, os.W_OK):
            return None
        path = FREEZER / f"grader-tests-{os.getpid()}"
        try:
            path.mkdir()
        except OSError:
            return None
        watcher = subprocess.Popen([sys.executable, "-c", _WATCHER, str(path / "cgroup.procs")],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        watcher.wait()             # the parent of the watcher proper, which goes on with the pipes
        try:
            (path / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            watcher.kill()
            watcher.wait()
            path.rmdir()
            return None
        return cls(path, watcher, time.time())

    def members(self) -> list[int]:
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def leave(self) -> list[str]:
        """End the run's group: what it left behind, in words (killed and removed, so the machine stays clean)."""
        from grader.sandbox import supervisor
        supervisor.stop_spares()
        supervisor.stop()          # this process's zygote, which its exit would stop
        problems = []
        ours = {os.getpid(), *_helpers()}
        settle = time.monotonic() + SETTLE_SECONDS
        while (others := [p for p in self.members() if p not in ours]) and time.monotonic() < settle:
            time.sleep(0.1)
        for pid in others:
            problems.append(f"process {pid} still running: {_command(pid)}")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.watcher.stdin.close()
            seen = {int(pid): times for pid, times in json.loads(self.watcher.stdout.read() or "{}").items()}
        except (OSError, ValueError) as error:
            problems.append(f"the leftover watcher failed ({error}): grader folders and cgroups not checked")
            seen = {}
        self.watcher.stdout.close()
        for pid in ours:         # this process and its helpers leave the group before it goes
            try:
                (FREEZER / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass
        settle = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                self.path.rmdir()
                break
            except OSError:
                if time.monotonic() > settle:
                    problems.append(f"{self.path} could not be removed: {self.members()} still in it")
                    break
                time.sleep(0.1)
        for pid, made in _grader_leftovers(supervisor):
            times = seen.get(pid)
            # Made while the pid was the run's (a second of slack: the watcher looks every POLL_SECONDS).
            if pid != os.getpid() and times and self.started - 1 <= made <= times[1] + 1 and not _alive(pid):
                problems.append(f"left by grader process {pid}, which is gone: {_leftovers_of(supervisor, pid)}")
                supervisor.clean_leftovers(pid)
        return problems


def _helpers() -> set[int]:
    """multiprocessing's resource tracker and fork server of this process: they end when it exits."""
    import multiprocessing.forkserver
    import multiprocessing.resource_tracker
    return {pid for pid in (getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None),
                            getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)) if pid}


def _grader_leftovers(supervisor) -> list[tuple[int, float]]:
    """(pid, change time) of every grader temp folder of this uid and every grader cgroup on the machine."""
    found = []
    for folder in Path(tempfile.gettempdir()).glob(f"puzzle-grader-{os.getuid()}-*"):
        match = supervisor._TEMP.fullmatch(folder.name)
        if match:
            found.append((int(match.group(2)), _changed(folder)))
    for group in supervisor._pids_folders():
        match = supervisor._LEFTOVER.search(group.name)
        if match:
            found.append((int(match.group(1)), _changed(group)))
    return [(pid, made) for pid, made in found if made is not None]


def _leftovers_of(supervisor, pid: int) -> list[str]:
    folders = [str(f) for f in Path(tempfile.gettempdir()).glob(f"puzzle-grader-{os.getuid()}-{pid}-*")]
    groups = [str(g) for g in supervisor._pids_folders() if g.name.startswith(f"puzzle-grader-{pid}-")]
    return sorted(folders + groups)


def _changed(path: Path) -> float | None:
    try:
        return os.lstat(path).st_ctime
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"
