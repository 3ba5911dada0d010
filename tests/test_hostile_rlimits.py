"""Rlimits mode with a grader that is not root: student code runs as the grader's own uid. What that uid could do
to the grader (signal or stop it, read its environment or memory, open its descriptors, change its limits), to its
zygote, to every process of the uid (kill(-1): the TA's shell), and what it could reach (abstract unix sockets,
TCP, the session's keyring): each is refused, by Landlock's scopes where the kernel has them (ABI >= 6), by the
seccomp filter and by the grader and the zygote being non-dumpable elsewhere.

The grader here is tests/hostile_grader.py, a real grader process run as a uid of its own (the test runs as root)
or as the test's own uid; it needs an interpreter that uid can read."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import testclock

from grader import incidents
from grader.sandbox import confine

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "tests" / "hostile_grader.py"
# A uid nothing else on the machine runs as (below the sandboxes' unused uids), for the grader when we are root.
GRADER_UID = 0x3FFF0000 + os.getpid() % 0xFFFF
NOT_A_SIGNAL = 65   # as tests/hostile_grader.py's
NOTIFIES = confine._FILTERS[True, True] is not None and \
    tuple(int(part) for part in os.uname().release.split(".")[:2] if part.isdigit()) >= (5, 0)


def _as_grader() -> dict:
    """What subprocess needs to run the harness as a non-root grader: its uid when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": GRADER_UID, "group": GRADER_UID, "extra_groups": []}


def _interpreter() -> str | None:
    """An interpreter the grader's uid can run and import the grader with: ours, or the system's (ours may live
    where only root reads, e.g. pyenv under /root)."""
    candidates = [sys.executable, "/usr/bin/python3"]
    for candidate in candidates:
        if os.geteuid() == 0 and not all(confine.readable_by_anyone(path) for path in
                                          (candidate, os.path.realpath(candidate), str(HARNESS), str(REPO))):
            continue
        try:
            subprocess.run([candidate, "-c", "import grader.sandbox.process"], env=_environment(), cwd="/",
                           check=True, capture_output=True, timeout=testclock.within(120), **_as_grader())
        except (OSError, subprocess.SubprocessError):
            continue
        return candidate
    return None


def _environment() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}


def test_a_student_running_as_the_graders_uid_can_reach_neither_it_nor_the_uid():
    """On the old code (Landlock without scopes, no argument filter) the student's case stopped the grader with
    SIGSTOP (it hung until killed), and could signal it, its zygote and every process of the uid, read and set
    their limits, reach an abstract socket the grader listened on and a pathname socket of the uid (an
    ssh-agent's), bind TCP, send UDP, use the session's keyring and the uid's shared memory segments."""
    interpreter = _interpreter()
    if interpreter is None:
        pytest.skip("no interpreter a non-root uid can run the grader with")
    process = subprocess.Popen([interpreter, str(HARNESS)], env=_environment(), cwd="/", stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, **_as_grader())
    try:
        stdout, stderr = process.communicate(timeout=testclock.within(180))
    except subprocess.TimeoutExpired:   # stopped by the student: let it go on to its end, then fail
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        stdout, stderr = process.communicate()
        pytest.fail("the grader was stopped by the student's case")
    assert process.returncode == 0, stderr.decode(errors="replace")[-3000:]
    report = json.loads(stdout.decode().splitlines()[-1])
    assert report["level"] == "rlimits" and report["uid"] != 0, report
    # Where the kernel's Landlock has no scopes the zygote and the grader are not dumpable, which keeps /proc's
    # environ, mem and fd from the uid; the rest holds through the seccomp filter or is left (README).
    assert report["dumpable"] == 0 and report["zygote_proc_owner"] == 0, report
    found = report.get("found")
    assert found is not None, report
    assert found.pop("grader_found")
    refused_anyway = {"environ grader", "environ zygote", "descriptors grader", "descriptors zygote",
                      "prlimit grader", "prlimit zygote", "signal every process of the uid", "keyring", "tcp", "udp",
                      "unix socket of the uid", "abstract socket", "shared memory of the uid"}
    if (report["landlock"] or 0) >= 6:
        assert set(found.values()) == {"PermissionError"}, found
    else:
        assert {name: found[name] for name in refused_anyway} == dict.fromkeys(refused_anyway, "PermissionError")
    # Each refusal of the seccomp filter was reported by the zygote, as incidents of the case (grader.incidents);
    # the sockets refused are no incident (honest code may try the network).
    if NOTIFIES:   # a kernel with seccomp user notifications (Linux >= 5.0): they must have come
        assert report["incidents"] == [f"{incidents.REFUSED_CALL}: {what}" for what in (
            "keyring", "signal to a process not its own")], report   # prlimit and IPC: honest code may try them


def test_what_honest_notebooks_do_works_under_a_grader_that_is_not_root():
    """tests/honest_code.py at load and in a case, the student running as the grader's own uid. Before: os.nice(0)
    raised PermissionError, faulthandler.enable() AttributeError, and os.kill(os.getppid(), 0) at load (the zygote,
    a protected pid) was an incident, "signal to a process not its own", which zeroed every exercise."""
    from honest_code import EXPECTED
    interpreter = _interpreter()
    if interpreter is None:
        pytest.skip("no interpreter a non-root uid can run the grader with")
    process = subprocess.run([interpreter, str(HARNESS), "honest"], env=_environment(), cwd="/", capture_output=True,
                             timeout=testclock.within(300), **_as_grader())
    assert process.returncode == 0, process.stderr.decode(errors="replace")[-3000:]
    report = json.loads(process.stdout.decode().splitlines()[-1])
    assert report["level"] == "rlimits" and report["uid"] != 0, report
    assert report.get("found") == [EXPECTED, EXPECTED], report
    assert report["incidents"] == [] and report["warnings"] == [], report


@pytest.mark.skipif(not confine._FILTERS[True, False], reason="no seccomp filter known for this architecture")
def test_a_sandbox_in_the_hosts_network_namespace_opens_no_socket_but_a_unix_one():
    """rlimits mode shares the host's network namespace. As an unused uid (the grader root) without Landlock's TCP
    rules (ABI < 4: Gradescope's kernels), a notebook connected to the batch's own Dask scheduler on 127.0.0.1 and
    had the workers run its function as root (session 18, Landlock turned off in a copy). Its filter
    (keep_scheduling(network=False), as the zygote installs it there) refuses socket() of every family but AF_UNIX:
    no network, as in a jail; a unix socket, a socketpair and the rest of the process work as before."""
    def actions() -> list:
        confine.keep_scheduling(own_uid=True, network=False)
        results: list = []
        for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM),
                             (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_NETLINK, socket.SOCK_RAW),
                             (getattr(socket, "AF_VSOCK", 40), socket.SOCK_STREAM),
                             (socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_UNIX, socket.SOCK_DGRAM)):
            try:
                socket.socket(family, kind).close()
                results.append("done")
            except OSError as error:
                results.append(error.errno)
        socket.socketpair()[0].close()
        os.kill(os.getpid(), 0)
        results.append("socketpair")
        return results

    assert testclock.in_a_fork(actions) == [errno.EPERM] * 5 + ["done", "done", "socketpair"]


def _ipc_objects() -> list:
    """Make a System V segment, semaphore set and message queue, each private and removed at once (IPC_RMID): the
    errno each got, or "done"."""
    libc = ctypes.CDLL(None, use_errno=True)
    results: list = []
    for make, remove in ((lambda: libc.shmget(0, 4096, 0o1666), lambda made: libc.shmctl(made, 0, None)),
                         (lambda: libc.semget(0, 1, 0o1666), lambda made: libc.semctl(made, 0, 0)),
                         (lambda: libc.msgget(0, 0o1666), lambda made: libc.msgctl(made, 0, None))):
        made = make()
        results.append(ctypes.get_errno() if made < 0 else "done")
        if made >= 0:
            remove(made)
    return results


@pytest.mark.skipif(not confine._FILTERS[True, False], reason="no seccomp filter known for this architecture")
def test_a_sandbox_in_the_hosts_ipc_namespace_makes_no_ipc_object_whatever_its_uid():
    """rlimits mode shares the host's IPC namespace. As an unused uid (the grader root) a System V segment made
    with mode 0666 outlived its sandbox and a later sandbox (another unused uid) read it: a hidden case's inputs
    reached a later public case (the student's own reload, a classmate's, the next submission's), Landlock on, as
    it does not cover IPC; and it stayed on the host. The filter refuses IPC there as it does under the grader's
    uid; a jail (its own IPC namespace, network=True) keeps it."""
    def actions() -> list:
        confine.keep_scheduling(own_uid=True, network=False)
        return _ipc_objects()

    def in_a_jail() -> list:
        confine.keep_scheduling(own_uid=True, network=True)
        return _ipc_objects()

    assert testclock.in_a_fork(actions) == [errno.EPERM] * 3
    assert testclock.in_a_fork(in_a_jail) == ["done"] * 3


@pytest.mark.skipif(not confine._FILTERS[True, False], reason="no seccomp filter known for this architecture")
def test_the_filter_refuses_other_processes_limits_keyrings_kill_all_sockets_and_the_graders_pids():
    """Without Landlock's scopes (Linux < 6.12: most TA laptops) the seccomp filter is what stands between a
    student running as the grader's uid and every process of it: kill(-1), prlimit of another pid, the keyrings,
    socket() (a pathname unix socket of the uid, UDP), and any signal to the pids and groups the grader names
    (kill, tgkill, sigqueue, a pidfd, SIGIO through F_SETOWN), System V IPC, and pidfd_send_signal on an fd of
    /proc/PID (a pidfd too: it reached the grader on the old code). The process's own limits (pid 0,
    as setrlimit does it), a signal to itself and a socketpair still work; so does a signal 0 to any pid (it sends
    nothing: os.kill(os.getppid(), 0) at load asks whether the zygote lives, and was an incident), and a nice value
    of 0 or more or its own CPUs seem set and change nothing (os.nice(0) raised PermissionError)."""
    parent, group = os.getpid(), os.getpgid(0)
    read, write = os.pipe()   # only F_SETOWN's target: the results come back through testclock.in_a_fork

    def actions() -> list:
        confine.keep_scheduling(own_uid=False, protected=[parent, -group])
        libc = ctypes.CDLL(None, use_errno=True)
        results: list = []

        def keyring():
            if libc.syscall(confine._KEYRING_CALLS[os.uname().machine][2], 0, -3, 0) < 0:
                raise OSError(ctypes.get_errno(), "keyctl")

        def owner():
            fcntl.fcntl(write, fcntl.F_SETOWN, parent)

        def segment():
            if libc.shmget(0, 4096, 0o1600) < 0:   # IPC_PRIVATE, IPC_CREAT
                raise OSError(ctypes.get_errno(), "shmget")

        def tgkill(signal_number):
            def send():
                if libc.tgkill(parent, parent, signal_number) != 0:
                    raise OSError(ctypes.get_errno(), "tgkill")
            return send

        def through_proc(signal_number):   # a pidfd from the folder /proc/PID, never from pidfd_open
            def send():
                folder = os.open(f"/proc/{parent}", os.O_RDONLY | os.O_DIRECTORY)
                try:
                    signal.pidfd_send_signal(folder, signal_number)
                finally:
                    os.close(folder)
            return send

        nice = os.getpriority(os.PRIO_PROCESS, 0)
        # NOT_A_SIGNAL where a real signal would be: a kernel that was let the call answers EINVAL, not EPERM
        for action in (lambda: os.kill(-1, NOT_A_SIGNAL), lambda: resource.prlimit(parent, resource.RLIMIT_NOFILE),
                       lambda: resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE), keyring,
                       lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
                       lambda: os.kill(parent, NOT_A_SIGNAL), lambda: os.kill(-group, NOT_A_SIGNAL),
                       lambda: os.pidfd_open(parent), tgkill(NOT_A_SIGNAL), owner, segment,
                       lambda: os.setpriority(os.PRIO_PROCESS, 0, -1), through_proc(NOT_A_SIGNAL),
                       # let through, or seeming done
                       lambda: os.kill(-1, 0), lambda: os.kill(parent, 0), lambda: os.kill(-group, 0), tgkill(0),
                       through_proc(0),
                       lambda: os.nice(5), lambda: os.setpriority(os.PRIO_PROCESS, 0, 19),
                       lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})):
            try:
                action()
                results.append("done")
            except OSError as error:
                results.append(error.errno)
        socket.socketpair()[0].close()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), 0)
        results.append(resource.getrlimit(resource.RLIMIT_CORE))
        results.append(os.getpriority(os.PRIO_PROCESS, 0) == nice)
        return results

    try:
        assert testclock.in_a_fork(actions) == [1] * 13 + ["done"] * 8 + [[0, 0], True]
    finally:
        os.close(read)
        os.close(write)


def test_the_rlimits_scratch_is_bounded_in_all_not_per_file_only():
    """Rlimits mode has no tmpfs: its scratch is a folder on the host's disk, and RLIMIT_FSIZE bounds one file.
    On the old code a load wrote 2.3 GB of 64 MB files in 6 s (and a notebook could fill the disk its results go
    to); here 40 files of 4 MB at load and in a case, and 3,000 empty files, all went through with a limit of
    8 MB and 1,000 files. The zygote now kills a sandbox whose scratch is over (Zygote.watch): the statement is
    left out and the case is an error, each saying why, and the next case runs in a fresh child."""
    from grader.sandbox.isolation import Isolation
    from grader.sandbox.process import CaseRequest, ProcessLimits
    from sandbox_run import run_cases, statements

    fill = "def fill(count, mb):\n" \
           "    for number in range(count):\n" \
           "        with open(f'{prefix}{number}', 'wb') as handle:\n" \
           "            for _ in range(mb):\n" \
           "                handle.write(b'x' * (1 << 20))\n" \
           "    time.sleep(30)\n" \
           "    return len(os.listdir('.'))\n"
    # Each holds what it wrote (30 s at most) until the zygote has looked, however late a busy machine lets it.
    load = "import os, time\nprefix = 'load'\n" + fill + "fill(40, 4)\n"
    cases = "import os, time\nprefix = 'case'\n" + fill + \
        "def many():\n" \
        "    for number in range(3000):\n" \
        "        open(f'empty{number}', 'w').close()\n" \
        "    time.sleep(30)\n" \
        "    return len(os.listdir('.'))\n" \
        "def fine():\n" \
        "    return 42\n"
    ran = run_cases(statements(load, cases),
                    [CaseRequest(name, call, timeout=5) for name, call in
                     (("big", "fill(40, 4)"), ("many", "many()"), ("fine", "fine()"))],
                    limits=ProcessLimits(disk_mb=8, file_mb=4, files=1000),
                    isolation=Isolation(namespaces=False, pids_root=None), allow_root=True)
    [left_out] = ran.report.warnings
    assert left_out.label == "In [1] (cell 1)" and "went over the sandbox's limit (8 MB, 1000 files" in left_out.text
    big, many, fine = ran.outcomes
    for outcome in (big, many):
        assert outcome.status == "crash", outcome
        assert outcome.error["message"] == "the sandbox's files went over their limit (8 MB, 1000 files in all)"
    assert fine.status == "ok" and fine.value == 42


def test_files_unlinked_while_held_open_count_toward_the_rlimits_scratch():
    """No name reaches a file the notebook unlinked and keeps open, so the folder's walk cannot see it, yet it holds
    its blocks on the host's disk: 40 such files of 4 MB (limit 8 MB) were all written and held for 30 s on the old
    code. The zygote also reads the sandbox's processes' descriptors (every fifth look) and kills it."""
    from grader.sandbox.isolation import Isolation
    from grader.sandbox.process import CaseRequest, ProcessLimits
    from sandbox_run import run_cases, statements

    hold = "import os, time\n" \
           "def hold(count, mb):\n" \
           "    kept = []\n" \
           "    for number in range(count):\n" \
           "        handle = open(f'gone{number}', 'wb')\n" \
           "        os.unlink(f'gone{number}')\n" \
           "        for _ in range(mb):\n" \
           "            handle.write(b'x' * (1 << 20))\n" \
           "        handle.flush()\n" \
           "        kept.append(handle)\n" \
           "    time.sleep(30)\n" \
           "    return len(kept), len(os.listdir('.'))\n" \
           "def fine():\n" \
           "    return 42\n"
    ran = run_cases(statements(hold), [CaseRequest("held", "hold(40, 4)", timeout=5),
                                       CaseRequest("fine", "fine()", timeout=5)],
                    limits=ProcessLimits(disk_mb=8, file_mb=4, files=1000),
                    isolation=Isolation(namespaces=False, pids_root=None), allow_root=True)
    held, fine = ran.outcomes
    assert held.status == "crash", held
    # The zygote's word (it killed for these files), not a look at the folder, which holds none of them: the case
    # said only "the submission's process died from SIGKILL (killed: out of memory or time?)".
    assert held.error == {"type": "OSError", "message": "the sandbox's files went over their limit (8 MB, 1000 "
                                                        "files in all, counting files it deleted but kept open)"}
    assert fine.status == "ok" and fine.value == 42


def test_tree_use_counts_allocated_bytes_and_stops_counting_entries(tmp_path):
    """What the zygote's look at a scratch costs is bounded by the entries it counts, whatever the student made,
    and it reads allocated blocks (a sparse file costs what it wrote), never through a link."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data").write_bytes(b"x" * (1 << 20))
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(1 << 30)
    (tmp_path / "link").symlink_to("/usr")
    used, entries = confine.tree_use(str(tmp_path), 100)
    assert entries == 4 and (1 << 20) <= used < (1 << 20) + (1 << 16)
    for number in range(50):
        (tmp_path / f"empty{number}").touch()
    assert confine.tree_use(str(tmp_path), 10)[1] == 11
    assert confine.tree_use(str(tmp_path), 60)[1] == 54
    with open(tmp_path / "gone", "wb") as handle:   # unlinked, held open: no name reaches it, its blocks stay
        handle.write(b"x" * (1 << 20))
        handle.flush()
        os.unlink(tmp_path / "gone")
        held = confine.held_unlinked(confine.tree_pids(os.getpid(), None), os.lstat(tmp_path).st_dev)
    assert (1 << 20) <= held < (1 << 20) + (1 << 16)
    assert confine.held_unlinked([os.getpid()], os.lstat(tmp_path).st_dev) == 0


def test_doctor_says_a_non_root_grader_without_landlock_leaves_the_terminals_open(monkeypatch):
    """Without root, namespaces and Landlock, the student runs as the TA's uid and may open /dev/pts/N (escape
    sequences into the TA's terminal, reading its typing); nothing else can refuse that open (README). The TA
    learns it from `grader doctor`, which named files only."""
    from grader.run import doctor
    from grader.sandbox.isolation import Isolation

    monkeypatch.setattr(doctor, "probe", lambda: {})
    monkeypatch.setattr(doctor, "detect", lambda: Isolation(namespaces=False, pids_root=None))
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 4242)
    [advice] = [line for line in doctor.diagnose().advice if line.startswith("No Landlock")]
    assert "open your terminals" in advice and "every file of yours" in advice


@pytest.mark.skipif(os.geteuid() != 0, reason="gives files to another uid: needs root")
def test_the_zygote_tells_the_grader_it_killed_for_files_left_in_tmp(tmp_path):
    """Without Landlock, as root, what a sandbox's unused uid owns in /tmp and the like counts toward its scratch's
    bound and the zygote kills it when over; the case said only "died from SIGKILL (killed: out of memory or
    time?)", since the grader looked at the scratch folder again and found it within bounds. The zygote now sends
    why it killed after the exit status, on the pipe the sandbox holds no end of, and the grader's Jail reads it."""
    from grader.sandbox import zygote
    from grader.sandbox.supervisor import Jail

    uid = confine.UID_BASE + 23456
    scratch, shared = tmp_path / "scratch", tmp_path / "tmp"
    scratch.mkdir()
    shared.mkdir()
    (shared / "big").write_bytes(b"x" * (3 << 20))
    os.chown(shared / "big", uid, uid)
    pid = os.fork()
    if pid == 0:   # the sandbox, as the zygote sees it: a child of its own
        try:
            signal.sigtimedwait([signal.SIGUSR1], 60)
        finally:
            os._exit(0)
    try:
        pidfd, watched = os.pidfd_open(pid), os.pidfd_open(pid)
        status_read, status_write = os.pipe()
        keeper = zygote.Zygote(control=None)
        keeper.children[pidfd] = (pid, uid, status_write, os.open(os.devnull, os.O_WRONLY))
        keeper.scratches[pidfd] = (str(scratch), 2 << 20, 100, pid, None, uid, (str(shared),))
        keeper.elsewhere[pidfd] = (str(shared),)
        keeper.watch()
        assert select.select([pidfd], [], [], 60)[0], "the zygote did not kill it"
        keeper._ended(pidfd)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    jail = Jail(pid, watched, status_read)
    assert jail.wait(10) == -signal.SIGKILL and jail.over == "shared"
    jail.close()
    assert os.listdir(shared) == []   # and what it left there went with it


@pytest.mark.skipif(os.geteuid() != 0, reason="gives files to another uid: needs root")
def test_what_an_unused_uid_left_in_world_writable_folders_is_counted_and_removed(tmp_path):
    """Without Landlock (a Gradescope 4.14 kernel) the sandbox's unused uid writes /tmp, /var/tmp and /dev/shm as
    well as its scratch: the zygote counts what that uid owns there toward the scratch's bound and removes it
    once the sandbox is gone (it stayed for good, and nothing bounded it). Never through a link, never another
    uid's file."""
    uid = confine.UID_BASE + 12345
    shared, victim = tmp_path / "tmp", tmp_path / "victim"
    shared.mkdir()
    victim.mkdir()
    (victim / "keep").write_bytes(b"k" * 4096)
    (shared / "big").write_bytes(b"x" * (1 << 20))
    (shared / "tree" / "deep").mkdir(parents=True)
    (shared / "tree" / "deep" / "more").write_bytes(b"y" * (1 << 20))
    (shared / "link").symlink_to(victim)
    (shared / "someone else's").write_bytes(b"z" * (1 << 20))
    for path in (shared / "big", shared / "tree", shared / "tree" / "deep", shared / "tree" / "deep" / "more"):
        os.chown(path, uid, uid)
    os.lchown(shared / "link", uid, uid)
    used, entries = confine.owned_use([str(shared)], uid, 1000)
    assert (2 << 20) <= used < (2 << 20) + (1 << 16) and entries == 5
    assert confine.owned_use([str(shared)], uid, 2)[1] <= 4   # counting stops near the bound
    confine.remove_owned([str(shared)], uid)
    assert sorted(os.listdir(shared)) == ["someone else's"]
    assert (victim / "keep").read_bytes() == b"k" * 4096
    confine.remove_owned([str(shared)], 0)   # never anyone's but an unused uid's
    assert sorted(os.listdir(shared)) == ["someone else's"]
