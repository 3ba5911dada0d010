"""Which containment this machine offers, detected once at run time: namespaces, a pids cgroup, or rlimits only."""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.sandbox.confine import UID_BASE

NAMESPACES = "namespaces"        # every namespace kind, an allowlist root, an unprivileged uid, no capabilities
RLIMITS = "rlimits"              # own session, resource limits, an unused uid when the grader is root
PIDS_MAX = 256                   # processes (and threads) one submission may have at once
_counter = itertools.count()
ZYGOTE = Path(__file__).with_name("zygote.py")


@dataclass(frozen=True)
class Isolation:
    namespaces: bool
    pids_root: Path | None       # a writable pids cgroup directory, when we may create groups in it

    @property
    def level(self) -> str:
        return NAMESPACES if self.namespaces else RLIMITS


@functools.cache
def probe() -> dict:
    """What this machine offers a sandbox, tried the way a real child does it (in a clean interpreter)."""
    try:
        done = subprocess.run([sys.executable, "-s", "-P", str(ZYGOTE), "--probe"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30, cwd="/", env={"PATH": "/usr/bin:/bin"}, check=False)
        return json.loads(done.stdout.decode() or "{}")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}


def _pids_root() -> Path | None:
    for candidate in (Path("/sys/fs/cgroup/pids"),):
        if (candidate / "cgroup.procs").exists() and os.access(candidate, os.W_OK):
            return candidate
    return None


@functools.cache
def detect(allow_namespaces: bool = True) -> Isolation:
    """Probe once per process; PUZZLE_GRADER_ISOLATION=rlimits forces the fallback (e.g. to test it)."""
    forced = os.environ.get("PUZZLE_GRADER_ISOLATION")
    namespaces = allow_namespaces and forced != RLIMITS and bool(probe().get("jail"))
    return Isolation(namespaces=namespaces, pids_root=_pids_root() if forced != RLIMITS else None)


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
    whether a memory cgroup bounded the whole sandbox, and the limits that applied."""
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
        "root_because": facts.get("root_because"),
        "limits": {name: getattr(limits, name) for name in ("memory_mb", "cpu_seconds", "disk_mb", "files",
                                                              "open_files", "processes") if hasattr(limits, name)},
    }


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
