"""Which containment this machine offers, detected once at run time: namespaces, a pids cgroup, or rlimits only."""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NAMESPACES = "namespaces"        # user, pid, net, mount: no network, read-only world, course hidden
RLIMITS = "rlimits"              # own process group and resource limits only
UNSHARE = ("unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child", "--net", "--mount",
           "--mount-proc")
PIDS_MAX = 256                   # processes (and threads) one submission may have at once
_counter = itertools.count()


@dataclass(frozen=True)
class Isolation:
    namespaces: bool
    pids_root: Path | None       # a writable pids cgroup directory, when we may create groups in it

    @property
    def level(self) -> str:
        return NAMESPACES if self.namespaces else RLIMITS


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        probe = subprocess.run([*UNSHARE, sys.executable, "-I", "-c", "import os; assert os.getpid() == 1"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _pids_root() -> Path | None:
    for candidate in (Path("/sys/fs/cgroup/pids"),):
        if (candidate / "cgroup.procs").exists() and os.access(candidate, os.W_OK):
            return candidate
    return None


@functools.lru_cache(maxsize=None)
def detect(allow_namespaces: bool = True) -> Isolation:
    """Probe once per process; PUZZLE_GRADER_ISOLATION=rlimits forces the fallback (e.g. to test it)."""
    forced = os.environ.get("PUZZLE_GRADER_ISOLATION")
    namespaces = allow_namespaces and forced != RLIMITS and _unshare_works()
    return Isolation(namespaces=namespaces, pids_root=_pids_root() if forced != RLIMITS else None)


class PidsGroup:
    """A pids cgroup for one child: a fork bomb stops at PIDS_MAX instead of taking the machine."""

    def __init__(self, root: Path):
        self.path = root / f"puzzle-grader-{os.getpid()}-{next(_counter)}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(PIDS_MAX))

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")

    def empty(self) -> None:
        """SIGKILL every process still in the group (escapees of every kind included)."""
        try:
            for pid in (self.path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
        except OSError:
            pass

    def remove(self) -> None:
        self.empty()
        try:
            self.path.rmdir()
        except OSError:
            pass  # still busy for a moment; an empty group costs nothing


_FREE: list[PidsGroup] = []
_FREE_LOCK = __import__("threading").Lock()


def acquire_group(root: Path) -> PidsGroup:
    """A pids group no running child uses: made once per grader process and reused, since creating and
    removing one costs more than starting the child."""
    with _FREE_LOCK:
        for group in _FREE:
            if group.path.parent == root:
                _FREE.remove(group)
                return group
    group = PidsGroup(root)
    atexit.register(group.remove)
    return group


def release_group(group: PidsGroup) -> None:
    """Kill whatever is left in the group and make it available to the next child."""
    group.empty()
    with _FREE_LOCK:
        _FREE.append(group)


def command(isolation: Isolation, runtime: list[str], pids: PidsGroup | None) -> list[str]:
    """The child's command line: the runtime, inside namespaces and a pids group where available."""
    line = [*UNSHARE, *runtime] if isolation.namespaces else list(runtime)
    if pids is not None:
        # The shell joins the group before exec, so every process of the child is counted from the start.
        line = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', pids.procs, *line]
    return line
