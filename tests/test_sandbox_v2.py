"""The sandbox's own suite, with real children (in the spirit of DOMjudge's runguard tests): what the child can
see, who it runs as, what it shares, what it may write, and that nothing of it outlives its grading.

Tests that need the jail (user namespaces) skip where the machine has none; `grader doctor` says why.
No test asserts on wall time: bounded waits poll until something is true or give up generously.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from grader import codec
from grader.sandbox import confine, supervisor
from grader.sandbox.isolation import Isolation, detect
from grader.sandbox.process import MAX_RESTARTS, CaseRequest, ProcessLimits, Sandbox, SandboxError
from testclock import read_line, within
from sandbox_run import processes_running, run_cases, statement

REPO = Path(__file__).resolve().parents[1]
ISOLATION = detect()
needs_jail = pytest.mark.skipif(not ISOLATION.namespaces, reason="no user namespaces here (see grader doctor)")
# How many notebooks the leftover test grades; the issue asks for 100, which takes minutes on 2 busy cores.
PERSIST_COUNT = int(os.environ.get("PUZZLE_GRADER_PERSIST_COUNT", "20"))


def _statements(source: str) -> list[dict]:
    return [statement(textwrap.dedent(source))]


def _case(code: str, timeout: float = 10.0) -> CaseRequest:
    return CaseRequest(id=f"c{abs(hash(code)) % 100000}", code=code, timeout=timeout)


DEFAULT_LIMITS = ProcessLimits()


def _run(source: str, *codes: str, limits: ProcessLimits = DEFAULT_LIMITS, isolation: Isolation | None = None,
         **options) -> tuple[list, Sandbox]:
    ran = run_cases(_statements(source), [_case(code) for code in codes], limits=limits, isolation=isolation,
                    **options)
    return ran.outcomes, ran.sandbox


def _value(outcome):
    assert outcome.status == "ok", (outcome.status, outcome.error)
    return codec.decode(outcome.value)


def _until(condition, seconds: float = 60.0) -> bool:
    """Poll `condition` until it holds or `seconds` pass (generous: a busy machine is slow, never wrong)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


# ------------------------------------------------------------------------------------------------ what it sees

WALK = """
import os, stat
def walk(allowed):
    outside = []
    for folder, folders, files in os.walk("/"):
        if folder == "/proc" or folder in allowed:
            folders[:] = []
            continue
        for name in folders + files:
            path = os.path.join(folder, name)
            if path in allowed or path == "/proc":
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            readable = stat.S_ISREG(info.st_mode) and os.access(path, os.R_OK)
            outside.append((path, info.st_uid, readable))
    return outside
"""


@needs_jail
def test_a_walk_of_the_root_finds_only_the_allowlist():
    allowed = sorted({*confine.python_trees(), *(p for p in confine.SYSTEM_TREES if os.path.isdir(p))})
    [outcome], sandbox = _run(WALK, f"walk({allowed!r})")
    outside = {path: (uid, readable) for path, uid, readable in _value(outcome)}
    skeleton = {str(parent) for tree in allowed for parent in Path(tree).parents}
    generated = {"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname", *confine.ETC_FILES}
    devices = {f"/dev/{name}" for name in (*confine.DEVICES, "fd", "stdin", "stdout", "stderr", "shm")}
    unexpected = set(outside) - skeleton - generated - devices - {"/tmp", "/dev", "/etc", confine.HOME,
                                                                  os.path.dirname(confine.HOME)}
    assert unexpected == set(), sorted(unexpected)[:20]
    assert str(REPO / "reference") not in outside and \
        not any(p.startswith(str(REPO) + "/") for p in set(outside) - skeleton)   # only the way to a tree
    # Files readable inside that belong to someone other than the student: only what the jail generated.
    foreign = {path for path, (uid, readable) in outside.items() if readable and uid != confine.STUDENT_ID}
    assert foreign <= generated, foreign
    assert sandbox.facts["filesystem"] == "allowlist"


@needs_jail
def test_the_course_the_class_and_host_secrets_do_not_exist_inside():
    probe = """
    import os
    def look(paths):
        return {path: os.path.exists(path) for path in paths}
    """
    paths = [str(REPO), str(REPO / "reference"), "/etc/shadow", "/root/.bash_history", str(Path.home()),
             "/work", "/sys/fs/cgroup", "/proc/1/environ"]
    [outcome], _ = _run(probe, f"look({paths!r})")
    seen = _value(outcome)
    # A folder may exist only as the way to an allowed tree (e.g. the checkout holding the venv), empty else.
    skeleton = {str(parent) for tree in confine.python_trees() for parent in Path(tree).parents}
    assert [p for p in paths if seen[p] and p not in skeleton and p != "/proc/1/environ"] == [], seen


def test_the_child_never_had_the_grader_or_a_reference_in_memory():
    probe = """
    import sys
    def modules():
        return sorted(name for name in sys.modules if name.split(".")[0] in ("grader", "reference", "taoistic_search",
                                                                           "codec", "wire", "confine", "runtime"))
    """
    [outcome], _ = _run(probe, "modules()")
    assert _value(outcome) == []   # the runtime's own modules are referenced privately, not importable by name


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="numpy is not installed")
def test_numpy_is_preloaded_and_its_global_generator_seeded_as_pythons_random():
    """The zygote imports numpy's core once, so a notebook that imports it pays nothing; numpy.random is left
    to each child, and its global generator is seeded with 0 when it is imported and at each case's start, as
    Python's `random` is: a draw is the same on every run (numpy's own seed, from the OS, gave each run another
    verdict), and no state passes between students (each child starts from the same seed)."""
    probe = """
    import sys
    preloaded = sorted(name for name in ("numpy", "numpy.random") if name in sys.modules)
    import numpy as np
    def draw():
        return {"preloaded": preloaded, "draw": float(np.random.random())}
    """
    first, second = (_value(_run(probe, "draw()", preload=("numpy",))[0][0]) for _ in range(2))
    assert first["preloaded"] == second["preloaded"] == ["numpy"]
    import numpy
    assert first["draw"] == second["draw"] == numpy.random.RandomState(0).random_sample()


def test_a_notebook_that_imports_numpy_does_not_make_the_zygote_preload_it():
    """numpy is preloaded where the course names it only (its mappings make every fork and exit of the chain
    dearer). A submission never asks: the zygote keeps what it imported for every later child, so the next
    student of the worker could tell from sys.modules that someone did."""
    supervisor.stop()     # a fresh zygote, asked for nothing yet
    probe = """
    import sys
    before = "numpy" in sys.modules
    import numpy
    def loaded():
        return before
    """
    assert _value(_run(probe, "loaded()")[0][0]) is False
    assert _value(_run(probe, "loaded()")[0][0]) is False


def test_what_a_course_asks_the_zygote_to_preload(tmp_path: Path):
    from grader.judge.grading import course_preload
    template = tmp_path / "template.ipynb"
    template.write_text('{"cells": [{"cell_type": "code", "source": "import numpy as np"}]}')
    assert course_preload(template, {}) == ("numpy",)
    assert course_preload(None, {"Set": "from numpy import array"}) == ("numpy",)
    assert course_preload(None, {"Set": "import random"}) == ()
    assert course_preload(REPO / "assignments" / "taoistic-search" / "template.ipynb", {}) == ("heapq",)
    assert course_preload(REPO / "assignments" / "n-puzzle" / "template.ipynb", {}) == ("numpy", "heapq")


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="numpy is not installed")
def test_the_preload_does_not_come_out_of_the_students_memory_limit():
    """Every child's address-space limit is raised by what the preloaded modules take (numpy's core: tens of
    MB of mappings), so a student of a course that has the zygote preload numpy may allocate what they could
    before."""
    probe = """
    import resource
    import numpy
    def limit():
        return resource.getrlimit(resource.RLIMIT_AS)[0]
    """
    mib = 1024 * 1024
    budget = (800 if ISOLATION.namespaces else 900) * mib     # memory_mb, less the scratch tmpfs with namespaces
    raised = _value(_run(probe, "limit()", limits=ProcessLimits(memory_mb=900, disk_mb=100), preload=("numpy",))[0][0])
    assert budget + 8 * mib < raised < budget + 512 * mib


# ------------------------------------------------------------------------------------------------ who it is

@needs_jail
def test_the_zygote_clones_the_jails_pid_1_itself():
    """No process waits in the host's pid namespace between the zygote and the jail: the zygote's child is PID 1
    of the sandbox's pid namespace, in the sandbox's own cgroups, and it is the runtime (no init above it)."""
    probe = """
    import os
    def leave():
        os._exit(7)
    """
    with Sandbox(_statements(probe), {}, DEFAULT_LIMITS) as sandbox:
        sandbox.load()
        assert sandbox.process is not None
        with open(f"/proc/{sandbox.process.pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status.read().splitlines())
        assert fields["NSpid"].split() == [str(sandbox.process.pid), "1"]
        assert int(fields["PPid"]) == supervisor.zygote().process.pid
        if sandbox.pids is not None:
            assert str(sandbox.process.pid) in (sandbox.pids.path / "cgroup.procs").read_text().split()
        [outcome] = sandbox.run_exercise([_case("leave()")], (), lambda *a: None, time.monotonic() + 60)
    assert outcome.status == "crash" and "exited with status 7" in outcome.error["message"], outcome


@needs_jail
def test_student_code_cannot_kill_the_runtime_which_is_pid_1():
    """The runtime is the jail's PID 1: a signal from inside the namespace that it does not handle never reaches
    it, so an exercise that strikes at its parent (or at PID 1) costs nothing, and no fresh child is started."""
    probe = """
    import os, signal
    def strike():
        parent = os.getppid()
        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):
            os.kill(parent, sig)
            os.kill(1, sig)
        return parent
    """
    [first, second], sandbox = _run(probe, "strike()", "strike()")
    assert _value(first) == _value(second) == 1
    assert sandbox.restarts == 0


@needs_jail
def test_each_jail_has_a_small_tcp_table_of_its_own_and_the_hosts_setting_stays():
    """As root, a jail's network namespace owns a small TCP table (whose end costs a kernel worker no walk of the
    host's), made from a namespace of the zygote's own: the host's setting is not touched, and no jail holds a
    descriptor of the host's network namespace or of the zygote's."""
    if os.geteuid() != 0:
        pytest.skip("only root may make a network namespace for the zygote")
    host = Path("/proc/sys/net/ipv4/tcp_child_ehash_entries")
    if not host.exists():
        pytest.skip("no per-namespace TCP tables in this kernel (Linux < 6.1)")
    before = host.read_text()
    with Sandbox(_statements("def f():\n    return 1\n"), {}, DEFAULT_LIMITS) as sandbox:
        sandbox.load()
        assert sandbox.process is not None
        networks = set()
        for fd in os.listdir(f"/proc/{sandbox.process.pid}/fd"):
            try:
                networks.add(os.readlink(f"/proc/{sandbox.process.pid}/fd/{fd}"))
            except OSError:
                pass
        assert not [link for link in networks if link.startswith("net:")]
        table = _sysctl_in_network_of(sandbox.process.pid, "/proc/sys/net/ipv4/tcp_ehash_entries")
    assert 0 < table <= 1024
    assert host.read_text() == before


def _sysctl_in_network_of(pid: int, path: str) -> int:
    """The number in the sysctl file `path` as a process in `pid`'s network namespace reads it (a sysctl of net/ is
    the reader's namespace's): read by a fork of this process that enters it. The jail's own procfs shows its
    processes only (confine._mount_proc), so it is read from outside."""
    import ctypes
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:   # pragma: no cover - the fork
        try:
            network = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
            if ctypes.CDLL(None, use_errno=True).setns(network, 0x40000000) == 0:   # CLONE_NEWNET
                with open(path, "rb") as entries:
                    os.write(writable, entries.read())
        finally:
            os._exit(0)
    os.close(writable)
    with os.fdopen(readable, "rb") as answer:
        found = answer.read()
    os.waitpid(child, 0)
    return int(found)


@pytest.mark.parametrize("namespaces", [pytest.param(True, marks=needs_jail), False])
def test_no_sandbox_holds_an_exit_status_pipe(namespaces):
    """The zygote writes a sandbox's exit status and why it killed it (never the sandbox itself): no sandbox holds
    an end of its own pipe or of another live sandbox's, so none can forge a status or a reason for the grader.
    In rlimits mode too, where the pipe now carries why the zygote killed a sandbox for its files."""
    isolation = ISOLATION if namespaces else Isolation(namespaces=False, pids_root=None)
    with Sandbox(_statements("x = 1\n"), {}, DEFAULT_LIMITS, isolation=isolation, allow_root=True) as first, \
            Sandbox(_statements("x = 2\n"), {}, DEFAULT_LIMITS, isolation=isolation, allow_root=True) as second:
        first.load()
        second.load()
        jails = [sandbox.process for sandbox in (first, second)]
        assert all(jail is not None for jail in jails)
        pipes = {os.fstat(jail.status_fd).st_ino for jail in jails if jail is not None}
        for jail in jails:
            assert jail is not None
            held = set()
            for fd in os.listdir(f"/proc/{jail.pid}/fd"):
                try:
                    held.add(os.stat(f"/proc/{jail.pid}/fd/{fd}").st_ino)
                except OSError:
                    pass
            assert held and not held & pipes
        first.process.kill()
        assert first.process.wait(timeout=30) == -signal.SIGKILL   # the zygote reaped it and said so
        assert first.process.over is None


@needs_jail
def test_student_code_runs_unprivileged_without_capabilities():
    probe = """
    import os
    def who():
        with open("/proc/self/uid_map") as uid_map:
            inside, outside, count = uid_map.read().split()
        with open("/proc/self/status") as status:
            caps = {line.split(":")[0]: int(line.split()[1], 16) for line in status if line.startswith("Cap")}
        try:
            os.unshare_check = __import__("ctypes").CDLL(None).unshare(0x10000000)
        except Exception:
            os.unshare_check = -2
        return {"uid": os.getuid(), "outside": int(outside), "caps": caps, "userns": os.unshare_check}
    """
    [outcome], sandbox = _run(probe, "who()")
    who = _value(outcome)
    assert who["uid"] == confine.STUDENT_ID
    assert who["outside"] != 0
    if os.geteuid() == 0:
        assert who["outside"] != os.geteuid() and who["outside"] >= confine.UID_BASE
    assert who["caps"]["CapEff"] == who["caps"]["CapPrm"] == who["caps"]["CapBnd"] == 0
    assert who["userns"] == -1, "the student could make a user namespace (and mount a tmpfs in it)"
    assert sandbox.facts["host_uid"] == who["outside"]
    assert set(sandbox.facts["namespaces"]) == {"user", "mount", "pid", "net", "ipc", "uts", "cgroup"}


def test_without_namespaces_root_is_refused_unless_allowed():
    if os.geteuid() != 0:
        pytest.skip("only root can be refused")
    rlimits = Isolation(namespaces=False, pids_root=None)
    probe = "import os\ndef who():\n    return os.geteuid()\n"
    if all(confine.readable_by_anyone(tree) for tree in confine.python_trees()):
        [outcome], sandbox = _run(probe, "who()", isolation=rlimits)
        assert _value(outcome) >= confine.UID_BASE and sandbox.facts["host_uid"] == _value(outcome)
    else:   # this interpreter lives where no unused uid can read it: refused, and said why
        with pytest.raises(SandboxError, match="allow-root-sandbox"):
            _run(probe, "who()", isolation=rlimits)
        [outcome], sandbox = _run(probe, "who()", isolation=rlimits, allow_root=True)
        assert _value(outcome) == 0 and sandbox.facts["root_because"]


# ------------------------------------------------------------------------------------------------ what it shares

@needs_jail
def test_sysv_and_posix_ipc_objects_die_with_the_child():
    key = 0x71710000 + os.getpid() % 0xFFFF
    probe = f"""
    import ctypes, os
    def publish():
        libc = ctypes.CDLL(None, use_errno=True)
        made = {{"shm": libc.shmget({key}, 4096, 0o1000 | 0o666), "msg": libc.msgget({key}, 0o1000 | 0o666),
                "sem": libc.semget({key}, 1, 0o1000 | 0o666)}}
        with open("/dev/shm/hx-posix-{key}", "w") as handle:
            handle.write("published")
        return made
    def look():
        libc = ctypes.CDLL(None, use_errno=True)
        return {{"shm": libc.shmget({key}, 0, 0), "posix": os.path.exists("/dev/shm/hx-posix-{key}")}}
    """

    def host_keys() -> set[int]:
        keys = set()
        for table in ("shm", "msg", "sem"):
            with open(f"/proc/sysvipc/{table}") as rows:
                keys |= {int(row.split()[0]) for row in rows.readlines()[1:] if row.split()}
        return keys

    before = host_keys()
    with Sandbox(_statements(probe), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        [made] = sandbox.run_exercise([_case("publish()")], (), None, time.monotonic() + 60)
        assert all(number >= 0 for number in _value(made).values())
        assert key not in host_keys(), "the child's segment is visible on the host"
        [later] = sandbox.run_exercise([_case("look()")], (), None, time.monotonic() + 60)
        assert _value(later)["posix"] is False      # the scratch (and /dev/shm in it) is fresh per exercise
    assert key not in host_keys() and host_keys() <= before | host_keys()
    assert not os.path.exists(f"/dev/shm/hx-posix-{key}")
    with Sandbox(_statements(probe), {}, ProcessLimits()) as other:   # another submission sees nothing
        other.load()
        [seen] = other.run_exercise([_case("look()")], (), None, time.monotonic() + 60)
    assert _value(seen)["shm"] == -1


# What a notebook makes at load for every fork to share, and where an isolated helper's answers went from one
# exercise's fork to the next exercise's: a MAP_SHARED page, a pipe the runtime holds, SysV shared memory, a POSIX
# message queue, and the runtime's own memory, made ptrace-able by the notebook's load (/proc/1/mem).
SHARED_AT_LOAD = """
import ctypes, json, mmap, os
PAGE = mmap.mmap(-1, 4096)
R, W = os.pipe()
BOX = bytearray(64)
KEY = 0x5EC12E7
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_made = [_libc.prctl(4, 1, 0, 0, 0), _libc.prctl(0x59616D61, -1, 0, 0, 0)]   # DUMPABLE, PTRACER_ANY
def _mq(flags):
    try:
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
    except OSError:
        return None, -1
    return rt, rt.mq_open(b"/hx-answers", flags, 0o600, None)
def helper(x):
    return -1
def record():
    answer = str(helper(7)).encode()
    PAGE[:8] = answer.ljust(8)
    os.write(W, answer)
    segment = _libc.shmget(KEY, 4096, 0o1000 | 0o600)
    if segment >= 0:
        ctypes.memmove(_libc.shmat(segment, None, 0), answer + b"\\0", len(answer) + 1)
    rt, queue = _mq(0o100 | 0o2)
    if queue >= 0:
        rt.mq_send(queue, answer, len(answer), 0)
    buffer = ctypes.c_void_p.from_address(id(BOX) + 40).value   # a bytearray's ob_bytes (CPython, 64 bits)
    try:
        with open("/proc/1/mem", "r+b", buffering=0) as memory:
            memory.seek(buffer)
            memory.write(answer + b"\\0")
    except OSError:
        pass
    return answer.decode()
def reuse():
    found = [PAGE[:8].rstrip(b"\\0 ").decode(), bytes(BOX).split(b"\\0")[0].decode()]
    os.set_blocking(R, False)
    try:
        found.append(os.read(R, 100).decode())
    except BlockingIOError:
        pass
    segment = _libc.shmget(KEY, 0, 0)
    if segment >= 0:
        found.append(ctypes.string_at(_libc.shmat(segment, None, 0)).decode())
    rt, queue = _mq(0o2 | 0o4000)
    if queue >= 0:
        received = ctypes.create_string_buffer(9000)
        found.append(received.raw[:max(0, rt.mq_receive(queue, received, 9000, None))].decode())
    return [text for text in found if text]
"""


@needs_jail
def test_what_the_reference_answered_an_isolated_exercise_does_not_reach_the_next_one():
    """DESIGN: an exercise that asked the reference ends its process, and nothing the reference answered may
    outlive it. Ending the fork was not enough: each channel above carried the reference's answer (42) to the
    next exercise, which may run the notebook's own broken helper replaying the course's answers. The child that
    ran an isolated exercise is replaced before one that does not isolate that helper (its namespaces die with
    it), and kept for one that does; six replacements are not six deaths."""
    with Sandbox(_statements(SHARED_AT_LOAD), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        for _ in range(MAX_RESTARTS + 2):
            for _ in range(2):
                [recorded] = sandbox.run_exercise([_case("record()")], ["helper"], lambda name, args, kwargs: 42,
                                                  time.monotonic() + 60)
                assert _value(recorded) == "42"   # the reference answered the isolated helper
            kept = sandbox.process
            [reused] = sandbox.run_exercise([_case("reuse()")], (), None, time.monotonic() + 60)
            assert _value(reused) == []
            assert sandbox.process is not kept


SLOW_LOAD = """
import time
SLOW = time.sleep(4.0)
def helper(x):
    return -1
def ask():
    return helper(SLOW)
def quick():
    return SLOW
"""


@needs_jail
def test_the_reload_after_an_isolated_exercise_is_not_taken_from_the_submissions_budget():
    """The fresh child that follows an isolated exercise is the grader's choice: the notebook's slow top-level
    statement (4 s here) runs again, and that time is given back to the deadline, so a quick case 2 s before it
    still runs instead of the reload being stopped by a budget the student did not spend."""
    with Sandbox(_statements(SLOW_LOAD), {}, ProcessLimits(), slack=5.0) as sandbox:
        sandbox.load()
        [asked] = sandbox.run_exercise([_case("ask()")], ["helper"], lambda name, args, kwargs: 42,
                                       time.monotonic() + 60)
        assert _value(asked) == 42
        [quick] = sandbox.run_exercise([_case("quick()")], (), None, time.monotonic() + 2.0)
    assert _value(quick) is None
    assert sandbox.reloaded > 2.0


@needs_jail
def test_a_reload_the_machine_kept_past_the_deadline_leaves_its_cases_to_the_grader_not_the_student():
    """A child is loaded again within an exercise (after an isolated one, or after a death): where that load ran
    past the moved deadline because the machine kept it waiting (MachineBusy, as the first load may), the cases
    not run are the machine's ("starved": a grader problem, graded again), not a crash of the notebook's."""
    from grader.sandbox.process import MachineBusy
    with Sandbox(_statements(SLOW_LOAD.replace("4.0", "0.0")), {}, ProcessLimits(), slack=5.0) as sandbox:
        sandbox.load()
        [asked] = sandbox.run_exercise([_case("ask()")], ["helper"], lambda name, args, kwargs: 42,
                                       time.monotonic() + 60)
        assert _value(asked) == 42

        def starved(deadline=None, reuse=True):
            raise MachineBusy("the notebook's code could not be loaded: the machine was too busy")
        sandbox.load = starved   # the reload, as a starved machine ends it
        outcomes = sandbox.run_exercise([_case("quick()"), _case("quick() or 1")], (), None, time.monotonic() + 60)
    assert [(o.status, o.error.get("reason")) for o in outcomes] == [("skipped", "starved")] * 2


# ------------------------------------------------------------------------------------------------ what it may write

@needs_jail
def test_scratch_size_and_file_count_are_limited():
    probe = """
    import os
    def fill():
        written = 0
        try:
            with open("big", "wb") as handle:
                for _ in range(64):
                    handle.write(b"x" * (1 << 20))
                    handle.flush()
                    written += 1
        except OSError as error:
            size_error = error.errno
        else:
            size_error = None
        os.remove("big")
        made = 0
        try:
            for number in range(5000):
                open(f"f{number}", "w").close()
                made += 1
        except OSError as error:
            files_error = error.errno
        else:
            files_error = None
        try:
            open("/hx-root-file", "w").close()
            root_writable = True
        except OSError:
            root_writable = False
        return written, size_error, made, files_error, root_writable
    """
    [outcome], _ = _run(probe, "fill()", limits=ProcessLimits(disk_mb=4, files=50))
    written, size_error, made, files_error, root_writable = _value(outcome)
    assert written <= 4 and size_error is not None
    assert made < 50 and files_error is not None
    assert root_writable is False


@needs_jail
def test_each_exercise_starts_with_an_empty_scratch():
    source = """
    import os
    Left = open("left-by-load.txt", "w").write("load")
    def write(name):
        open(name, "w").write(name)
        return sorted(n for n in os.listdir(".") if os.path.isfile(n))   # a bound tree (a venv in /tmp) is no file
    """
    with Sandbox(_statements(source), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        first = sandbox.run_exercise([_case("write('one')"), _case("write('two')")], (), None,
                                     time.monotonic() + 60)
        second = sandbox.run_exercise([_case("write('three')")], (), None, time.monotonic() + 60)
    assert [_value(o) for o in first] == [["one"], ["one", "two"]]   # cases of one exercise share it
    assert _value(second[0]) == ["three"]


@pytest.mark.parametrize("jail", [pytest.param(True, marks=needs_jail), False])
def test_each_exercise_finds_the_scratch_folder_itself_as_made(jail):
    """The scratch's folder, not only its entries: an extended attribute, the times and the mode an exercise set on
    it were the next exercise's to read (in the same fork, or a fresh one after the runtime's reset); the runtime
    puts them back at each emptying (confine.empty_folder's `made`), in a jail's tmpfs and in rlimits mode's host
    folder alike."""
    source = """
    import os
    def leave():
        try:
            os.setxattr(".", "user.carried", b"left")
        except OSError:
            pass   # a file system without user.* attributes
        os.chmod(".", 0o1751)
        os.utime(".", ns=(12345, 67890))
        return look()
    def look():
        status = os.stat(".")
        return [os.listxattr("."), status.st_mode & 0o7777, status.st_atime_ns, status.st_mtime_ns]
    """
    isolation = None if jail else Isolation(namespaces=False, pids_root=None)
    with Sandbox(_statements(source), {}, ProcessLimits(), isolation=isolation, allow_root=True) as sandbox:
        sandbox.load()
        [made] = sandbox.run_exercise([_case("look()")], (), None, time.monotonic() + 60, more=True)
        [left] = sandbox.run_exercise([_case("leave()")], (), None, time.monotonic() + 60, more=True)
        [found] = sandbox.run_exercise([_case("look()")], (), None, time.monotonic() + 60)
    assert _value(left)[1:] == [0o1751, 12345, 67890]   # the exercise did set them
    assert _value(found) == _value(made)


# ------------------------------------------------------------------------------------------------ what outlives it

def _mark(number: int) -> str:
    """A sleeper's seconds that name it and this run: the checks below scan the whole machine, where another run
    of these tests at the same moment (another checkout's CI) has sleepers of its own, and the cleanups killed
    them. Fixed width, so that no run's mark is a part of another's."""
    return f"313.{number}{os.getpid():07d}"


@pytest.mark.parametrize("session", [False, True])
def test_the_process_tree_is_killed_after_a_timeout(session):
    marker = _mark(4 + session)
    source = f"""
    import subprocess
    def stuck():
        subprocess.Popen(["sleep", "{marker}"], start_new_session={session})
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    def fine():
        return 1
    """
    with Sandbox(_statements(source), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        outcomes = sandbox.run_exercise([_case("stuck()", timeout=0.5), _case("fine()")], (), None,
                                        time.monotonic() + 60)
        assert [o.status for o in outcomes] == ["timeout", "ok"]
        assert _until(lambda: not processes_running(marker)), "the timed-out case's sleeper survived"


WORKER = """
import sys, time
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
source = '''import subprocess, time
def hold():
    subprocess.Popen(["sleep", "313.6"], start_new_session=True)
    time.sleep(600)
'''
with Sandbox([{"code": source, "filename": "cell", "line": 1, "kind": "def"}], {}, ProcessLimits()) as box:
    box.load()
    print("loaded", flush=True)
    box.run_exercise([CaseRequest("c", "hold()", timeout=600)], (), None, time.monotonic() + 600)
""".replace("313.6", _mark(6))


def test_a_killed_worker_takes_its_sandboxes_and_leftovers_with_it():
    worker = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True, cwd=str(REPO))
    try:
        assert read_line(worker, 120).strip() == "loaded"
        assert _until(lambda: bool(processes_running(_mark(6)))), "the sleeper never started"
        zygotes = [pid for pid in processes_running("zygote.py") if _parent(pid) == worker.pid]
        assert zygotes, "no zygote under the worker"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert _until(lambda: not processes_running(_mark(6))), "a sandbox outlived its worker"
        assert _until(lambda: not [pid for pid in zygotes if supervisor._alive(pid) and _state(pid) != "Z"])
        supervisor.clean_leftovers(worker.pid)
        assert not list(Path("/tmp").glob(f"puzzle-grader-*-{worker.pid}-*"))
        assert not list(Path("/sys/fs/cgroup/pids").glob(f"puzzle-grader-{worker.pid}-*"))
        # every root the grader makes groups in: pids, memory and the CPU-counting ones
        assert not [p for p in supervisor._pids_folders() if p.name.startswith(f"puzzle-grader-{worker.pid}-")]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        for pid in processes_running(_mark(6)):
            os.kill(pid, signal.SIGKILL)


# A grader process with its temp folder and its zygote: says where they are, then sleeps until it is killed (or, with
# "stop", stops its zygote itself, waits for its end and says whether its folder is still there).
HOLDER = """
import os, sys, time
from grader.sandbox import supervisor
folder, zygote = supervisor.temp_root(), supervisor.zygote()
print(folder, zygote.process.pid, flush=True)
if sys.argv[1:] == ["stop"]:
    supervisor.stop()
    print(folder.is_dir(), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_graders_temp_folder_goes_with_its_zygote_and_no_sweep(signum):
    """No exit handler runs in a grader killed (a watchdog's SIGKILL; a Dask worker's SIGTERM to its process group):
    its zygote, which outlives it, removes its folder, where it stayed until the next grader process swept it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True, cwd=str(REPO),
                              start_new_session=True)
    try:
        folder, zygote = read_line(holder, 120).split()
        assert Path(folder).is_dir()
        os.killpg(holder.pid, signum)
        holder.wait()
        assert _until(lambda: not supervisor._alive(int(zygote)) or _state(int(zygote)) == "Z"), "the zygote stayed"
        assert not Path(folder).exists()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_zygote_stopped_by_its_living_grader_leaves_the_graders_folder_alone():
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, "stop"], stdout=subprocess.PIPE, text=True,
                              cwd=str(REPO))
    try:
        folder, _ = read_line(holder, 120).split()
        assert read_line(holder, 120).strip() == "True"
    finally:
        holder.kill()
        holder.wait()
    supervisor.clean_leftovers(holder.pid)
    assert not Path(folder).exists()


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return 0


PERSIST_SOURCE = '''
import os, subprocess, ctypes
ctypes.CDLL(None).prctl(36, 0, 0, 0, 0)          # the runtime's subreaper off
def _hx_persist():
    subprocess.Popen(["sleep", "313.7"])
    subprocess.Popen(["sleep", "313.7"], start_new_session=True)
    middle = os.fork()
    if middle == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "313.7"])
        finally:
            os._exit(0)
    os.waitpid(middle, 0)
    libc = ctypes.CDLL(None)
    libc.shmget(0x7171BEEF, 4096, 0o1000 | 0o666)
    for place in ("/tmp", "/dev/shm", os.path.expanduser("~"), "."):
        try:
            open(os.path.join(place, "hx-persist-313.7"), "w").write("still here")
        except OSError:
            pass
    return 1
_hx_persist()
'''.replace("313.7", _mark(7))
# A kept top-level statement (an assignment of a library call), run at load in the loaded child itself.
# Bound to `Start`, which main reads, so the top-level dependency slice keeps (and runs) the statement.
PERSIST = f"Start = exec(compile({PERSIST_SOURCE!r}, 'hx-persist', 'exec'), {{}}) or Start\n"


@needs_jail
def test_nothing_outlives_a_batch_of_notebooks_that_try_to_persist(tmp_path: Path):
    from grader.run.batch import grade
    correct = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
    notebook = nbformat.read(correct, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(PERSIST))
    folder = tmp_path / "class"
    folder.mkdir()
    for number in range(PERSIST_COUNT):
        nbformat.write(notebook, folder / f"student-{number:03d}.ipynb")
    from grader.extract.source import extract
    from grader.intake.notebook import read_notebook
    kept = extract(read_notebook(folder / "student-000.ipynb")).statements
    assert any("hx-persist" in statement.code for statement in kept), "the attack would not even run"
    groups_before = {p.name for p in Path("/sys/fs/cgroup/pids").glob("puzzle-grader-*")}
    results = grade([folder], REPO / "rubrics" / "taoistic-search.yaml", tmp_path / "out", jobs=2,
                    cache=tmp_path / "cache")
    assert len(results) == PERSIST_COUNT and all(r.total == 30 for r in results), \
        [(r.submission, r.total, r.warnings[:2]) for r in results if r.total != 30]
    assert not [w for r in results for w in r.warnings if "hx-persist" in w.shown or "Persisted" in w.shown]
    assert _until(lambda: not processes_running(_mark(7))), "a process of the batch survived it"
    with open("/proc/sysvipc/shm") as rows:
        assert 0x7171BEEF not in {int(row.split()[0]) for row in rows.readlines()[1:] if row.split()}
    for place in ("/tmp", "/dev/shm", str(Path.home())):
        assert not os.path.exists(os.path.join(place, f"hx-persist-{_mark(7)}"))
    mine = [p for p in Path("/tmp").glob(f"puzzle-grader-{os.getuid()}-*") if supervisor._TEMP.fullmatch(p.name)
            and not supervisor._alive(int(supervisor._TEMP.fullmatch(p.name).group(2)))]
    assert mine == [], "a grader temp folder outlived its process"
    new_groups = {p.name for p in Path("/sys/fs/cgroup/pids").glob("puzzle-grader-*")} - groups_before
    dead = [name for name in new_groups if not supervisor._alive(int(name.split("-")[2]))]
    assert dead == [], "a pids cgroup outlived its grader process"


def test_doctor_says_what_this_machine_offers():
    from grader.run.doctor import diagnose, render
    diagnosis = diagnose()
    text = render(diagnosis)
    assert f"isolation level: {ISOLATION.level}" in text
    assert diagnosis.jail == ISOLATION.namespaces
    assert diagnosis.memory_cgroup == (ISOLATION.memory_root is not None)
    assert ("memory cgroup (one limit for the whole sandbox): " + ("yes" if diagnosis.memory_cgroup else "no")) in text
    if not ISOLATION.namespaces:
        assert "To get full isolation" in text


# Bound to `Start`, which main reads, so the top-level dependency slice keeps (and runs) the statement.
HANG_AT_LOAD = '''Start = exec(compile("""
import subprocess, time
subprocess.Popen(["sleep", "313.8"], start_new_session=True)
while True:
    time.sleep(0.05)
""", "hx-hang", "exec"), {}) or Start
'''.replace("313.8", _mark(8))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
def test_a_batch_stopped_by_ctrl_c_or_kill_leaves_nothing_behind(tmp_path: Path, stop: int):
    """Ctrl-C in the TA's terminal (SIGINT to the whole foreground group), or the grader killed outright:
    the sandboxes die with their workers, and the temp folders and cgroups go (at once, or when the next
    grader process starts)."""
    correct = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
    notebook = nbformat.read(correct, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(HANG_AT_LOAD))
    folder = tmp_path / "class"
    folder.mkdir()
    for number in range(2):
        nbformat.write(notebook, folder / f"hang-{number}.ipynb")
    grader = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(folder), "--rubric",
                               str(REPO / "rubrics" / "taoistic-search.yaml"), "--out", str(tmp_path / "out"),
                               "--jobs", "2", "--quiet", "--cache", str(tmp_path / "cache")],
                              cwd=str(REPO), start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        assert _until(lambda: bool(processes_running(_mark(8))), 120), "the hanging notebooks never started"
        zygotes = [pid for pid in processes_running("zygote.py") if grader.pid in _ancestors(pid)]
        assert zygotes, "no zygote under the grader"
        os.killpg(grader.pid, stop)
        grader.wait(timeout=within(120))
        assert _until(lambda: not processes_running(_mark(8))), "a sandbox outlived the stopped batch"
        assert _until(lambda: not [pid for pid in zygotes if supervisor._alive(pid) and _state(pid) != "Z"])
        # What the batch left goes at once or when the next grader process starts (clean_leftovers): a killed
        # sandbox stays in its groups until the kernel has torn it down, which on a busy machine can take longer
        # than one clean_leftovers waits, so it is called until nothing is left. Every root the grader makes
        # groups in is looked at: a memory group left here failed the whole run in its own leftover check. The
        # killed workers are orphans whose reaper may be slow: a zombie is gone too (clean_leftovers of its pid).
        def dead(pid: int) -> bool:
            return _state(pid) in ("Z", "gone")

        def nothing_left() -> bool:
            temp = [p for p in Path("/tmp").glob(f"puzzle-grader-{os.getuid()}-*") if supervisor._TEMP.fullmatch(p.name)
                    and dead(int(supervisor._TEMP.fullmatch(p.name).group(2)))]
            groups = [p for p in supervisor._pids_folders() if dead(int(p.name.split("-")[2]))]
            for pid in {int(supervisor._TEMP.fullmatch(p.name).group(2)) for p in temp} | \
                    {int(p.name.split("-")[2]) for p in groups}:
                supervisor.clean_leftovers(pid)
            return not temp and not groups
        assert _until(nothing_left), "a temp folder or a cgroup of the stopped batch stayed"
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.wait()
        for pid in processes_running(_mark(8)):
            os.kill(pid, signal.SIGKILL)


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1 and len(chain) < 16:
        pid = _parent(pid)
        chain.append(pid)
    return chain


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


PLANTED = """
import os, sys
from pathlib import Path
from grader.sandbox import supervisor
planted = Path(f"/tmp/puzzle-grader-{os.getuid()}-{os.getpid()}")
planted.mkdir()
os.chmod(planted, 0o777)
root = supervisor.temp_root()
folder = supervisor.make_temp_folder("submission-")
status = os.lstat(root)
print(root != planted, Path(folder).parent == root, status.st_uid == os.getuid(), oct(status.st_mode & 0o777))
planted.rmdir()
"""


def test_a_planted_temp_folder_is_never_the_graders():
    """Attack 2 of the red-team report: a student plants world-writable /tmp/puzzle-grader-UID-PID folders
    for future grader pids; the grader's temp folder has a name no one can plant (mkdtemp), and is its own."""
    done = subprocess.run([sys.executable, "-c", PLANTED], capture_output=True, text=True, cwd=str(REPO),
                          timeout=within(120))
    assert done.stdout.split() == ["True", "True", "True", "0o711"], done.stderr


def test_the_scratch_is_handed_over_by_descriptor_never_through_a_symlink(tmp_path):
    """zygote._outer gives the scratch to the sandbox's uid as root: a symlink swapped in its place (the
    red-team's inotify race) must make it refuse, leaving the link's target untouched."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    (tmp_path / "scratch").symlink_to(victim)
    before = os.stat(victim)
    with pytest.raises(OSError):
        confine.hand_over(str(tmp_path / "scratch"), os.getuid() + 1)
    after = os.stat(victim)
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)    # a folder others may write into is not the grader's to hand over
    with pytest.raises(OSError):
        confine.hand_over(str(shared), os.getuid())


def test_clean_leftovers_follows_no_link_and_removes_only_the_graders_folders(tmp_path):
    """Leftovers of dead grader processes go; a symlink or a folder of another uid named like one stays,
    and what it points to is never touched."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    link = Path(f"/tmp/puzzle-grader-{os.getuid()}-{gone.pid}")
    real = Path(f"/tmp/puzzle-grader-{os.getuid()}-{gone.pid}-leftover")
    try:
        link.symlink_to(victim)
        real.mkdir(mode=0o711)
        (real / "cache-x").mkdir()
        removed = supervisor.clean_leftovers(gone.pid)
        assert str(real) in removed and not real.exists()
        assert link.is_symlink() and (victim / "keep.txt").read_text() == "keep"
        if os.geteuid() == 0:   # a folder a sandbox uid made, named like ours: not ours to delete
            link.unlink()
            link.mkdir()
            os.chown(link, confine.UID_BASE + 7, confine.UID_BASE + 7)
            supervisor.clean_leftovers(gone.pid)
            assert link.is_dir()
    finally:
        if link.is_symlink():
            link.unlink()
        elif link.is_dir():
            link.rmdir()
        if real.exists():
            import shutil
            shutil.rmtree(real)


RLIMITS = Isolation(namespaces=False, pids_root=None)


@pytest.mark.skipif(confine.landlock_abi() <= 0, reason="no Landlock in this kernel")
def test_rlimits_mode_reads_only_the_allowlist_with_landlock(tmp_path):
    """Attack 1 of the red-team report: without namespaces the child found the course through the grader's
    command line and read the (world-readable) reference. Landlock keeps it to the allowlist."""
    course = tmp_path / "course"
    course.mkdir()
    (course / "reference.py").write_text("SECRET = 1\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(course / "reference.py", 0o644)
    source = f"""
    import os
    def peek():
        try:
            return open({str(course / "reference.py")!r}).read()
        except OSError as error:
            return type(error).__name__
    def scratch():
        with open("mine.txt", "w") as file:
            file.write("ok")
        return open("mine.txt").read(), os.path.exists("/etc/passwd")
    """
    outcomes, sandbox = _run(source, "peek()", "scratch()", isolation=RLIMITS, allow_root=True)
    assert _value(outcomes[0]) == "PermissionError"
    assert _value(outcomes[1]) == ("ok", True)
    assert sandbox.facts["filesystem"] == "landlock" and sandbox.facts["landlock"] >= 1


@pytest.mark.skipif(ISOLATION.memory_root is None, reason="no memory cgroup may be made here")
def test_memory_is_bounded_per_sandbox_not_per_process():
    """Attack 6 of the red-team report: memfd pages are not in RLIMIT_AS, and three processes each stay under
    it. The sandbox's memory cgroup holds all of it: such a case is a memory error, and the next case runs."""
    source = """
    import os
    def hog(megabytes):
        chunk = b"x" * (1 << 20)
        fds = []
        for _ in range(megabytes // 16):
            fd = os.memfd_create("hog")
            for _ in range(16):
                os.write(fd, chunk)
            fds.append(fd)
        return len(fds)
    def split(count, megabytes):
        # Each child holds its memory until every child has touched its own (or died): else, on a busy CPU, one
        # could finish before the next began, and three 100 MB children would never be in the cgroup at once.
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        children = []
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                os.close(ready_r)
                os.close(go_w)
                block = bytearray(megabytes << 20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                os.write(ready_w, b"x")
                os.close(ready_w)
                os.read(go_r, 1)
                os._exit(0)
            children.append(pid)
        os.close(ready_w)
        os.close(go_r)
        while os.read(ready_r, 16):   # the end: each child has touched its memory and said so, or died
            pass
        os.close(go_w)
        return sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children)
    def small():
        return 1
    """
    limits = ProcessLimits(memory_mb=160, disk_mb=16)
    with Sandbox(_statements(source), {}, limits) as sandbox:
        sandbox.load()
        outcomes = sandbox.run_exercise([_case("hog(400)"), _case("small()")], (), None, time.monotonic() + 120)
        # Each child stays well under RLIMIT_AS (memory_mb less the scratch: 144 MB, of which the runtime's own
        # ~24 MB of address space): 120 MB children left half a megabyte, and failed with MemoryError, not
        # the cgroup, as soon as the runtime grew by that much.
        split = sandbox.run_exercise([_case("split(3, 100)")], (), None, time.monotonic() + 120)
        assert sandbox.facts["memory_cgroup"] == 160 + (16 if sandbox.isolation.namespaces else 0)
    assert outcomes[0].status == "crash" and outcomes[0].error.get("type") == "MemoryError", outcomes[0]
    assert _value(outcomes[1]) == 1
    # three forks of 100 MB each under one 176 MB cgroup (memory and scratch): not all of them can finish
    assert split[0].status != "ok" or -signal.SIGKILL in _value(split[0]), split[0]


@needs_jail
@pytest.mark.skipif(not confine.unrelated_site_packages(), reason="not run from a venv over another Python")
def test_the_base_interpreters_site_packages_are_not_visible():
    """The red-team saw the whole base prefix bound (its unrelated site-packages with them): only what the
    interpreter needs is, and the base site-packages inside the standard library's tree is covered."""
    base = confine.unrelated_site_packages()[0]
    source = """
    import os
    def look(path):
        return sorted(os.listdir(path)) if os.path.isdir(path) else None
    def stdlib():
        import json, decimal
        return json.dumps(str(decimal.Decimal(1)))
    """
    outcomes, _ = _run(source, f"look({base!r})", "stdlib()", "look('/root/.pyenv/versions')")
    assert _value(outcomes[0]) in (None, [])
    assert _value(outcomes[1]) == '"1"'


def _current_bytecode(source: Path) -> bool:
    """Whether `source` has bytecode where Python looks for it, made from the source as it is now."""
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.exists():
        return False
    header, stat = cached.read_bytes()[:16], source.stat()
    return header[:8] == importlib.util.MAGIC_NUMBER + bytes(4) and \
        header[8:16] == (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + stat.st_size.to_bytes(4, "little")


def test_a_zygote_finds_its_modules_compiled_where_the_grader_may_write_bytecode():
    """The zygote writes no bytecode and no grader process imports `runtime` or `pristine`: the grader that starts
    it writes theirs (every zygote compiled them, 0.16 s of CPU a start), unless it is told to write none (-B)."""
    sources = [Path(supervisor.__file__).with_name(name) for name in ("runtime.py", "pristine.py")]
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    start = "from grader.sandbox import supervisor; supervisor.zygote(); supervisor.stop()"
    for flags, written in ((["-B"], False), ([], True)):
        for source in sources:
            Path(importlib.util.cache_from_source(str(source))).unlink(missing_ok=True)
        subprocess.run([sys.executable, *flags, "-c", start], env=environment, check=True, timeout=within(120))
        assert [_current_bytecode(source) for source in sources] == [written] * 2, flags
