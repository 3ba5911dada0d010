"""Channels between sandboxes graded at once, through what they share: the host's files, read-only in every sandbox
but the same inodes, whose locks and watches belong to the inode whatever mount or namespace reaches it. One sandbox
held flock(LOCK_EX) on the standard library's os.py and another jail saw it held; an inotify watch heard another
jail's every read of a stdlib file: a notebook's hidden cases could hand their inputs, bit by bit, to another
student's public case running beside them. Now no sandbox ever holds a lock (locks are pretended: they succeed and
lock nothing) and watches are refused, in a jail and in rlimits mode (confine._LOCKS). Real sandboxes.
"""

from __future__ import annotations

import errno
import os

import pytest

from grader import codec
from grader.sandbox.isolation import Isolation, detect
from grader.sandbox.process import CaseRequest
from sandbox_run import run_cases, statement

# What a case can make of a file every sandbox reads, and what an honest notebook's locking still does in its own
# folder (sqlite3, a lock file).
SHARED = r'''
import ctypes, fcntl, os, sqlite3, struct
_libc = ctypes.CDLL(None, use_errno=True)
LAYOUT = "hhqqi4x"   # struct flock
FANOTIFY_INIT = {"x86_64": 300, "aarch64": 262}[os.uname().machine]

def shared():
    seen = {}
    first, second = os.open(os.__file__, os.O_RDONLY), os.open(os.__file__, os.O_RDONLY)
    fcntl.flock(first, fcntl.LOCK_EX)
    try:
        fcntl.flock(second, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen["flock"] = "not held"
    except OSError:
        seen["flock"] = "held"
    fcntl.fcntl(first, 37, struct.pack(LAYOUT, fcntl.F_RDLCK, 0, 0, 0, 0))              # F_OFD_SETLK
    asked = fcntl.fcntl(second, 36, struct.pack(LAYOUT, fcntl.F_WRLCK, 0, 0, 0, 0))     # F_OFD_GETLK
    seen["ofd lock"] = "not held" if struct.unpack(LAYOUT, asked)[0] == fcntl.F_UNLCK else "held"
    watch = _libc.inotify_init1(os.O_CLOEXEC)
    seen["inotify"] = ctypes.get_errno() if watch < 0 else "watching"
    marks = _libc.syscall(FANOTIFY_INIT, 0x200, os.O_RDONLY)   # FAN_CLASS_NOTIF | FAN_REPORT_FID: no privilege
    seen["fanotify"] = ctypes.get_errno() if marks < 0 else "watching"
    folder = os.open(os.path.dirname(os.__file__), os.O_RDONLY)
    try:
        fcntl.fcntl(folder, fcntl.F_NOTIFY, fcntl.DN_ACCESS)
        seen["dnotify"] = "watching"
    except OSError as error:
        seen["dnotify"] = error.errno
    return seen

def honest():
    with open("work.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(lock, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_UN)
    with sqlite3.connect("moves.db") as db:
        db.execute("create table moves (board text, cost int)")
        db.executemany("insert into moves values (?, ?)", [("123", 1), ("456", 2)])
    with sqlite3.connect("moves.db") as db:
        return db.execute("select sum(cost) from moves").fetchone()[0]
'''


@pytest.mark.parametrize("jail", [True, False], ids=["detected", "rlimits"])
def test_no_sandbox_holds_a_lock_or_watch_another_could_see(jail: bool):
    isolation = detect() if jail else Isolation(namespaces=False, pids_root=None)
    ran = run_cases([statement(SHARED, kind="other")],
                    [CaseRequest(id="shared#0", code="shared()", timeout=20.0),
                     CaseRequest(id="honest#0", code="honest()", timeout=20.0)],
                    isolation=isolation, allow_root=True)
    found = [codec.decode(outcome.value) if outcome.status == "ok" else (outcome.status, outcome.error)
             for outcome in ran.outcomes]
    assert found == [{"flock": "not held", "ofd lock": "not held", "inotify": errno.EPERM,
                      "fanotify": errno.EPERM, "dnotify": errno.EPERM},
                     3]


# The machine's counters a procfs shows beside the processes: every sandbox's at once, whatever its namespaces. One
# jail's case held 200 descriptors open and another jail read /proc/sys/fs/file-nr 200 +- 15 higher; 60 threads moved
# /proc/loadavg's count by 60 (100 of 100 bits right at 100 ms a bit, load 6-8). What honest code reads of them still
# works: the CPUs it may use, its own process's files; not the load (sysinfo(2): below).
COUNTERS = r'''
import os
MACHINE = ("/proc/sys/fs/file-nr", "/proc/sys/fs/inode-nr", "/proc/sys/fs/dentry-state", "/proc/sys/fs/aio-nr",
           "/proc/loadavg", "/proc/stat", "/proc/meminfo", "/proc/vmstat", "/proc/pressure/cpu", "/proc/locks",
           "/proc/interrupts", "/proc/uptime", "/proc/sys/kernel/random/entropy_avail")

def counters():
    found = {}
    for path in MACHINE:
        try:
            with open(path, "rb") as counter:
                found[path] = len(counter.read())
        except OSError as error:
            found[path] = error.errno
    return found

def honest():
    with open("/proc/self/status", "rb") as status:
        mine = status.read().startswith(b"Name:")
    cpus = os.cpu_count() == len(os.sched_getaffinity(0))
    return [mine, cpus, sorted(os.listdir("/proc"))[-2:]]
'''


@pytest.mark.skipif(not detect().namespaces, reason="no user namespaces here: rlimits mode shares the host's procfs")
def test_a_jail_reads_no_counter_of_the_machine_in_its_procfs():
    ran = run_cases([statement(COUNTERS, kind="other")],
                    [CaseRequest(id="counters#0", code="counters()", timeout=20.0),
                     CaseRequest(id="honest#0", code="honest()", timeout=20.0)],
                    isolation=detect(), allow_root=True)
    found = [codec.decode(outcome.value) if outcome.status == "ok" else (outcome.status, outcome.error)
             for outcome in ran.outcomes]
    assert found[0] == dict.fromkeys(found[0], errno.ENOENT)
    assert found[1] == [True, True, ["self", "thread-self"]]


# The same counters without a file: sysinfo(2) gives every sandbox the machine's count of threads (and its free memory
# and load). A case starting 0-210 threads in steps of 30 moved it for another jail graded at once: 55 of 60 symbols
# of 3 bits read right at 100 ms (load 10-12). Refused in every mode (confine._SYSINFO): os.getloadavg() raises, as
# where a kernel keeps no load averages. Real sandboxes, both modes.
SYSINFO = r'''
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)

def machine():
    buffer = ctypes.create_string_buffer(128)
    told = _libc.sysinfo(buffer)
    seen = {"sysinfo": ctypes.get_errno() if told == -1 else "told", "zeros": buffer.raw == bytes(128)}
    try:
        seen["getloadavg"] = len(os.getloadavg())
    except OSError:
        seen["getloadavg"] = "OSError"
    return seen
'''


@pytest.mark.parametrize("jail", [True, False], ids=["detected", "rlimits"])
def test_no_sandbox_reads_the_machines_counters_through_sysinfo(jail: bool):
    isolation = detect() if jail else Isolation(namespaces=False, pids_root=None)
    ran = run_cases([statement(SYSINFO, kind="other")], [CaseRequest(id="machine#0", code="machine()", timeout=20.0)],
                    isolation=isolation, allow_root=True)
    outcome = ran.outcomes[0]
    assert outcome.status == "ok", outcome.error
    assert codec.decode(outcome.value) == {"sysinfo": errno.EPERM, "zeros": True, "getloadavg": "OSError"}


# The page cache, written and read as only the kernel's own reads should: posix_fadvise(POSIX_FADV_DONTNEED) needs no
# write access and evicted a stdlib file's pages for every later sandbox, and preadv2(RWF_NOWAIT) told a cached page
# from one that is not without reading it in (an exact bit, written again and again: 64 of 64 from one jail to the
# next). cachestat, mincore and Linux AIO (RWF_NOWAIT in an IOCB) would tell too where the uid owns the file. The
# eviction now seems to succeed and does nothing (the grader sees the page still cached), the looks are refused, and
# honest advice and reads still work (confine._CACHE_PROBES).
CACHE = r'''
import ctypes, errno, mmap, os
_libc = ctypes.CDLL(None, use_errno=True)
CALLS = {"x86_64": {"cachestat": 451, "io_setup": 206},
         "aarch64": {"cachestat": 451, "io_setup": 0}}[os.uname().machine]

def evict(path, page):
    seen = {}
    fd = os.open(path, os.O_RDONLY)
    os.pread(fd, 1, page * 4096)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    seen["fadvise"] = "done"
    try:
        seen["nowait"] = len(os.preadv(fd, [bytearray(1)], page * 4096, os.RWF_NOWAIT) * "x")
    except OSError as error:
        seen["nowait"] = error.errno
    stat, span = ctypes.create_string_buffer(40), ctypes.create_string_buffer(16)
    seen["cachestat"] = _libc.syscall(CALLS["cachestat"], fd, span, stat, 0) or "told"
    seen["cachestat"] = ctypes.get_errno() if seen["cachestat"] == -1 else seen["cachestat"]
    context = ctypes.c_ulong(0)
    seen["io_setup"] = ctypes.get_errno() if _libc.syscall(CALLS["io_setup"], 1, ctypes.byref(context)) else "set up"
    _libc.mmap.restype, _libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                                ctypes.c_int, ctypes.c_int, ctypes.c_long]
    mapped, resident = _libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, page * 4096), ctypes.c_ubyte()
    told = _libc.mincore(ctypes.c_void_p(mapped), 4096, ctypes.byref(resident))
    seen["mincore"] = ctypes.get_errno() if told else "told"
    os.close(fd)
    return seen

def honest(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    first, buffer = os.pread(fd, 16, 0), bytearray(16)
    read = os.preadv(fd, [buffer], 0, os.RWF_HIPRI)
    os.close(fd)
    return [first == bytes(buffer), read]
'''


def _cached(path: str, page: int) -> bool:
    """Whether the page of the file is in the host's page cache: the grader's own look, which the filter never sees."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.preadv(fd, [bytearray(1)], page * 4096, os.RWF_NOWAIT) == 1
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize("jail", [True, False], ids=["detected", "rlimits"])
def test_no_sandbox_evicts_or_looks_at_the_page_cache(jail: bool):
    # a page of a file no grading reads, so the grader's look below is not warmed by anyone else meanwhile
    path = os.path.join(os.path.dirname(os.__file__), "test", "test_decimal.py")
    page = 7 if jail else 11
    isolation = detect() if jail else Isolation(namespaces=False, pids_root=None)
    ran = run_cases([statement(CACHE, kind="other")],
                    [CaseRequest(id="evict#0", code=f"evict({path!r}, {page})", timeout=20.0),
                     CaseRequest(id="honest#0", code=f"honest({path!r})", timeout=20.0)],
                    isolation=isolation, allow_root=True)
    still = _cached(path, page)
    found = [codec.decode(outcome.value) if outcome.status == "ok" else (outcome.status, outcome.error)
             for outcome in ran.outcomes]
    assert found == [{"fadvise": "done", "nowait": errno.EOPNOTSUPP, "cachestat": errno.EPERM,
                      "io_setup": errno.EPERM, "mincore": errno.EPERM},
                     [True, 16]]
    assert still, "the sandbox's posix_fadvise(DONTNEED) evicted a host file's page"
