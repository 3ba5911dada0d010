"""The grader's side of the zygote, and everything a grader process leaves on the machine, kept to one place.

One zygote per grader process (a worker, a `grader check`, a Dask worker): started on first use, stopped at
exit. The only things a grader process puts on disk or in the kernel are its temp folder
(/tmp/puzzle-grader-UID-PID-RANDOM, made like mkdtemp: a name nobody can plant in advance, mode 0711, owned
by the grader; it holds rlimits-mode scratch dirs and the Gradescope runner's expected-value cache) and its
pids, memory and CPU-counting cgroups (puzzle-grader-PID-N); all are removed at exit. A grader process that died
without exiting (SIGKILL from a watchdog, an OOM kill, a Dask worker's SIGTERM) has its temp folder removed by its
zygote as that goes too (zygote.remove_grader_folders), and what is still left (its cgroups; its folder if it had
no zygote) by the next grader process that starts. Leftovers are judged with lstat: only real folders owned by the
grader's uid are ever removed, and never through a symlink.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from grader.sandbox import cpuclock
from grader.sandbox.confine import OVER_LIMIT, PR_SET_DUMPABLE, own_folder, prctl, remove_tree

ZYGOTE = Path(__file__).with_name("zygote.py")
_LEFTOVER = re.compile(r"puzzle-grader-(\d+)-(\d+)$")
_TEMP = re.compile(r"puzzle-grader-(\d+)-(\d+)(?:-[A-Za-z0-9_]+)?$")
_LOCK = threading.Lock()
_ZYGOTE: "Zygote | None" = None
_CLEANED = False
_SPARES: "list[Zygote]" = []          # started ahead for workers this process will fork (start_spares)
_HANDED: "Zygote | None" = None       # the spare that the child of the fork under way adopts (handing_over)
_GIVEN: "list[Zygote]" = []           # spares handed to workers: this process's children, reaped when they end


STATUS_SECONDS = 2.0   # how long an ended jail's exit status may take to arrive from the zygote that reaps it


class SpawnError(RuntimeError):
    """The zygote could not start a child."""


def child_environment() -> dict[str, str]:
    """A minimal environment: nothing of the grader's (tokens, paths) reaches the zygote or student code."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        # Who getpass.getuser() says, in every mode: an unused uid (rlimits mode as root) has no passwd entry, and
        # its KeyError ended an honest statement; under a grader that is not root it said the TA's login name.
        "USER": "student", "LOGNAME": "student",
        "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8",
        "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        # Intel's and LLVM's OpenMP (conda's MKL numpy, intel-openmp, llvm-openmp) pin the thread to each CPU in
        # turn at their first use, to learn the topology: sched_setaffinity, which the seccomp filter refused
        # (confine.keep_scheduling) with EPERM, on which libiomp5 aborted (SIGABRT): every case that used it
        # crashed. The filter now pretends it succeeds and changes nothing, so what they would learn is false.
        # With affinity disabled they make no such call.
        "KMP_AFFINITY": "disabled",
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_ROOT: "Path | None" = None
_ROOT_LOCK = threading.Lock()


def temp_root() -> Path:
    """This grader process's temp folder, made on first use (mkdtemp: an unpredictable name, created
    exclusively, so nothing a student planted in /tmp can be it)."""
    global _ROOT
    with _ROOT_LOCK:
        if _ROOT is None or not own_folder(str(_ROOT)):
            clean_leftovers()
            made = Path(tempfile.mkdtemp(prefix=f"puzzle-grader-{os.getuid()}-{os.getpid()}-"))
            os.chmod(made, 0o711)   # children (another uid) reach their own folder inside, list nothing
            atexit.register(remove_tree, str(made))
            _ROOT = made
        return _ROOT


def make_temp_folder(prefix: str) -> str:
    """A fresh folder (0700, this process's uid) under this process's temp folder, which goes at exit."""
    return tempfile.mkdtemp(prefix=prefix, dir=temp_root())


def _pids_folders() -> list[Path]:
    """The grader's cgroups: pids groups, and memory and CPU-counting groups under this process's own."""
    from grader.sandbox.isolation import cpu_roots, find_memory_root
    found = []
    for root in (Path("/sys/fs/cgroup/pids"), find_memory_root(), *cpu_roots()):
        try:
            found += [p for p in root.iterdir() if p.name.startswith("puzzle-grader-")] if root else []
        except OSError:
            pass
    return found


def clean_leftovers(grader_pid: int | None = None) -> list[str]:
    """Remove the temp folders and pids cgroups of grader processes that are gone (or of `grader_pid`,
    which the caller knows is gone). Kills what is still inside such a cgroup first. Returns what went."""
    from grader.sandbox.isolation import remove_group
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"puzzle-grader-{os.getuid()}-*"):
        match = _TEMP.fullmatch(folder.name)
        if match and int(match.group(2)) != os.getpid() and \
                (int(match.group(2)) == grader_pid or not _alive(int(match.group(2)))) and own_folder(str(folder)):
            remove_tree(str(folder))   # fd-based: never follows a link inside, however deep
            removed.append(str(folder))
    for group in _pids_folders():
        match = _LEFTOVER.search(group.name)
        if match and int(match.group(1)) != os.getpid() and \
                (int(match.group(1)) == grader_pid or not _alive(int(match.group(1)))):
            if remove_group(group):
                removed.append(str(group))
    return removed


@dataclass
class Jail:
    """A started child, as the grader holds it: a pidfd (never a bare pid) and a pipe for its exit status and why
    the zygote killed it, if it did (the zygote's word, never the child's: the child holds no end of it)."""

    pid: int
    pidfd: int
    status_fd: int
    # The zygote's report of each call the sandbox's seccomp filter refused, one byte of confine.REFUSED's index
    # (zygote.Zygote.notified), read without blocking (refusals); -1: none.
    seen_fd: int = -1
    status: int | None = None
    ended: bool = False
    # Set once it ended, where the zygote killed it for its files (zygote.Zygote.watch, rlimits mode): which count
    # went over, one of confine.OVER_LIMIT.
    over: str | None = None
    preload: tuple[str, ...] = ()    # what the zygote had been asked to preload before this fork (done if installed)

    def poll(self) -> int | None:
        """None while it runs; else its exit code (-9 when its status is unknown: it was killed)."""
        if not self.ended:
            if self.pidfd < 0 or not select.select([self.pidfd], [], [], 0)[0]:
                return None
            self.ended = True
            self._read_status()
        return self.status if self.status is not None else -signal.SIGKILL

    def _read_status(self) -> None:
        """The child's exit status and why the zygote killed it (zygote._status_bytes), which the zygote writes
        once it has reaped the child (a moment after the pidfd says it ended), then closes the pipe: waited for,
        briefly (a zygote that is gone closes it at once)."""
        try:
            ready = select.select([self.status_fd], [], [], STATUS_SECONDS)[0]
            data = os.read(self.status_fd, 5) if ready else b""
        except OSError:
            data = b""
        if len(data) == 5:
            self.status = int.from_bytes(data[:4], "big", signed=True)
            self.over = OVER_LIMIT[data[4] - 1] if 0 < data[4] <= len(OVER_LIMIT) else None

    def wait(self, timeout: float) -> int | None:
        if not self.ended and self.pidfd >= 0:
            select.select([self.pidfd], [], [], timeout)
        return self.poll()

    def kill(self) -> None:
        if self.pidfd >= 0 and not self.ended:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass

    def refusals(self) -> bytes:
        """The refused calls the zygote reported since the last look (each a byte: an index of confine.REFUSED)."""
        if self.seen_fd < 0:
            return b""
        try:
            return os.read(self.seen_fd, 1 << 16)
        except (BlockingIOError, OSError):
            return b""

    def close(self) -> None:
        for fd in (self.pidfd, self.status_fd, self.seen_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.pidfd = self.status_fd = self.seen_fd = -1
        self.ended = True


def not_dumpable() -> None:
    """Make this grader process non-dumpable, as the zygote and every sandbox are: without root a sandbox runs as
    this process's uid (rlimits mode), and where no Landlock keeps ptrace inside it (Linux < 5.13, Landlock off),
    a process of the same uid may ptrace a dumpable one, read its memory (process_vm_readv, /proc/PID/mem: the
    reference, the expected values) and environment, and open its descriptors through /proc/PID/fd (the results
    database, other sandboxes' pipes). Root needs nothing: a sandbox never runs as root's uid (unless
    --allow-root-sandbox, which gives it everything anyway). The price: no debugger attaches to a non-root grader
    without root, and it dumps no core."""
    if os.geteuid() != 0:
        prctl(PR_SET_DUMPABLE, 0)


# What the zygote loads from the package by path (it never imports `grader`: see zygote.py and runtime.py).
ZYGOTE_MODULES = ("codec.py", "sandbox/confine.py", "sandbox/runtime.py", "sandbox/pristine.py", "sandbox/wire.py")
_BYTECODE = False     # this process has checked the zygote's bytecode (zygote_bytecode)


def zygote_bytecode() -> None:
    """Write the bytecode of the zygote's modules where Python looks for it (those out of date), unless this process
    writes none (PYTHONDONTWRITEBYTECODE, -B). A zygote writes none (its environment says so: nothing of a
    sandbox's chain writes into the grader's folders), and no grader process imports `runtime` or `pristine`, so
    in an editable install every zygote compiled them: 0.20 s of CPU at each start against 0.04 with their
    bytecode (a fresh interpreter importing `confine` and `runtime`), beside the coordinator's start-up. Once per
    process; a folder it may not write is left as it is."""
    global _BYTECODE
    if _BYTECODE or sys.dont_write_bytecode:
        return
    _BYTECODE = True
    import importlib.util
    package = ZYGOTE.parent.parent
    for name in ZYGOTE_MODULES:
        source = str(package / name)
        try:
            cached = importlib.util.cache_from_source(source, optimization="")   # the zygote's: no -O
        except NotImplementedError:   # an interpreter that caches no bytecode
            return
        try:
            stat = os.stat(source)
            with open(cached, "rb") as file:   # current: the header Python checks (magic, flags, mtime, size)
                if file.read(16) == importlib.util.MAGIC_NUMBER + b"\0\0\0\0" + (
                        (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") +
                        (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")):
                    continue
        except OSError:
            pass
        import py_compile
        try:
            py_compile.compile(source, cfile=cached, doraise=True, optimize=0)
        except (OSError, py_compile.PyCompileError):   # a folder it may not write: the zygote compiles, as before
            pass


_ANCESTORS: dict[int, list[int]] = {}


def protected_pids() -> list[int]:
    """The processes a sandbox running as this grader's uid must not signal, whatever Landlock holds (its signal
    scope needs ABI 6; confine._SIGNAL_BY_PID): this process and its ancestors (a pool's coordinator, the TA's shell,
    their terminal's session), as pids, and their process groups, as negative numbers. Read once per process."""
    pid = os.getpid()
    if pid not in _ANCESTORS:
        found: list[int] = []
        current = pid
        while current > 1 and len(found) < 32:   # the nearest 16 or more: the filter stays within its jumps
            try:
                with open(f"/proc/{current}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                break
            found += [current, -int(fields[2])] if int(fields[2]) > 1 else [current]
            current = int(fields[1])
        _ANCESTORS[pid] = found
    return _ANCESTORS[pid]


class Zygote:
    """A running zygote and the socket to it; one request at a time."""

    def __init__(self) -> None:
        not_dumpable()   # whoever starts a zygote will have sandboxes (or hand it to a worker that will)
        zygote_bytecode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.socket = ours
        self.lock = threading.Lock()
        self.process = subprocess.Popen(
            # Who it serves and where that one's temp folder is: a killed grader's folder is the zygote's to remove.
            # -S: the zygote runs `site` itself, all but an editable grader's finder (zygote.start_site).
            [sys.executable, "-s", "-S", "-P", str(ZYGOTE), str(theirs.fileno()), str(os.getpid()),
             tempfile.gettempdir()],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL, env=child_environment(), cwd="/", start_new_session=True, close_fds=True)
        theirs.close()
        self.pidfd = -1      # set for a spare: how a worker that adopts it (not its parent) sees it end
        self.born = time.monotonic()

    def queued(self) -> float:
        """The zygote's run-queue time so far, in seconds (0.0 where the kernel does not say): a child's start
        waits on it (budget.Budget.child_started)."""
        return cpuclock.queued(self.process.pid)

    def alive(self) -> bool:
        if self.pidfd >= 0:
            return not select.select([self.pidfd], [], [], 0)[0]
        return self.process.poll() is None

    def spawn(self, config: dict[str, Any], fds: list[int]) -> Jail:
        status_read, status_write = os.pipe()
        seen_read, seen_write = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(seen_read, False)
        try:
            with self.lock:
                socket.send_fds(self.socket, [json.dumps({"op": "spawn", "config": config}).encode()],
                                [*fds, status_write, seen_write])
                data, received, _, _ = socket.recv_fds(self.socket, 1 << 16, 2)
        except OSError as error:
            os.close(status_read)
            os.close(seen_read)
            raise SpawnError(f"the zygote is gone: {error}") from None
        finally:
            os.close(status_write)
            os.close(seen_write)
        reply = json.loads(data) if data else {"error": "the zygote closed its socket"}
        if "error" in reply or len(received) != 1:
            for fd in received:
                os.close(fd)
            os.close(status_read)
            os.close(seen_read)
            raise SpawnError(str(reply.get("error", "no pidfd")))
        preload = reply.get("preload")
        return Jail(int(reply["pid"]), received[0], status_read, seen_read, preload=tuple(
            str(name) for name in preload) if isinstance(preload, list) else ())

    def keep(self, pid: int, cpus: list[int]) -> None:
        """Have the zygote keep its ready child `pid` to `cpus` from now on (zygote.Zygote.keep); SpawnError if
        it could not (the child is then not to be used: it would run where the worker does not)."""
        try:
            with self.lock:
                socket.send_fds(self.socket, [json.dumps({"op": "keep", "pid": pid, "cpus": cpus}).encode()], [])
                data, received, _, _ = socket.recv_fds(self.socket, 1 << 16, 2)
        except OSError as error:
            raise SpawnError(f"the zygote is gone: {error}") from None
        for fd in received:
            os.close(fd)
        reply = json.loads(data) if data else {"error": "the zygote closed its socket"}
        if reply.get("kept") is not True:
            raise SpawnError(str(reply.get("error", "not kept")))

    def stop(self) -> None:
        """Close the socket: the zygote kills every child it started (and sweeps their uids), then exits."""
        try:
            self.socket.close()
        except OSError:
            pass
        if self.pidfd >= 0:    # adopted: the zygote is the coordinator's child, which reaps it; we see it end
            if not select.select([self.pidfd], [], [], 10)[0]:
                try:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                except OSError:
                    pass
            self._close_pidfd()
            return
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _close_pidfd(self) -> None:
        if self.pidfd >= 0:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
            self.pidfd = -1


def zygote() -> Zygote:
    """This process's zygote, started on first use (and again if it died)."""
    global _ZYGOTE, _CLEANED
    with _LOCK:
        if not _CLEANED:
            _CLEANED = True
            clean_leftovers()
        if _ZYGOTE is None or not _ZYGOTE.alive():
            if _ZYGOTE is None:
                atexit.register(stop)
            _ZYGOTE = Zygote()
        return _ZYGOTE


def _forget_inherited() -> None:
    """In a forked process (a worker of the local pool): the parent's zygote and temp folder stay the parent's.
    The child closes its copy of the zygote's socket (so the zygote still sees the parent go) and makes its own
    zygote and folder on first use, unless it was handed a spare (handing_over): that one is its own from now,
    and the other spares' sockets are closed here, so each spare's socket is held by one worker only and its
    zygote sees that worker go."""
    global _ZYGOTE, _ROOT, _CLEANED, _LOCK, _ROOT_LOCK, _HANDED
    for inherited in (_ZYGOTE, *_SPARES):
        if inherited is not None and inherited is not _HANDED:
            try:
                inherited.socket.close()
            except OSError:
                pass
            inherited._close_pidfd()
    _SPARES.clear()
    _ZYGOTE, _HANDED, _ROOT, _CLEANED = _HANDED, None, None, True
    _LOCK, _ROOT_LOCK = threading.Lock(), threading.Lock()


def can_fork() -> bool:
    """Whether this process may fork workers: only a single-threaded one (a fork copies locks another thread
    may hold), where fork exists."""
    import multiprocessing
    return threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()


def start_spares(count: int) -> None:
    """Start zygotes now for `count` workers this process will fork. A zygote's start (an interpreter, the
    runtime, numpy) then runs beside the coordinator's imports, rubric and plan instead of before each worker's
    first sandbox. Each is handed to one worker (handing_over); what no worker took goes with stop_spares.
    Nothing is started where workers are not forked (they could not adopt a spare)."""
    if not can_fork():
        return
    with _LOCK:
        while len(_SPARES) < count:
            spare = Zygote()
            try:
                spare.pidfd = os.pidfd_open(spare.process.pid)
            except (OSError, AttributeError):     # no pidfds: a worker could not tell when it ends; not a spare
                spare.process.kill()
                spare.process.wait()
                return
            _SPARES.append(spare)


def spare_pids() -> list[int]:
    """The spare zygotes no worker has taken yet (start_spares): a coordinator that started them kept off its own
    CPU gives them every CPU back before its workers fork (grader.run.beside)."""
    with _LOCK:
        return [spare.process.pid for spare in _SPARES]


@contextlib.contextmanager
def handing_over() -> Iterator[None]:
    """Around a fork of a worker: its child adopts a spare zygote (if one is left); this process lets it go."""
    global _HANDED
    with _LOCK:
        _HANDED = _SPARES.pop(0) if _SPARES else None
    try:
        yield
    finally:
        with _LOCK:
            handed, _HANDED = _HANDED, None
        if handed is not None:    # the worker holds the socket now; this process only reaps the zygote
            handed.socket.close()
            handed._close_pidfd()
            _GIVEN.append(handed)


def stop_spares() -> None:
    """Stop the spares no worker took (they have no children yet: a kill is enough), and reap those handed to
    workers that have ended."""
    with _LOCK:
        spares = list(_SPARES)
        _SPARES.clear()
        _GIVEN[:] = [given for given in _GIVEN if given.process.poll() is None]
    for spare in spares:
        spare.socket.close()
        spare._close_pidfd()
        spare.process.kill()
        spare.process.wait()


os.register_at_fork(after_in_child=_forget_inherited)


def stop() -> None:
    """Stop this process's zygote and with it every sandbox it started."""
    global _ZYGOTE
    with _LOCK:
        if _ZYGOTE is not None:
            _ZYGOTE.stop()
            _ZYGOTE = None
