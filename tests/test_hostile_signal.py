"""One student's sandbox must not reach another's, in every isolation mode. In rlimits mode under a grader that is
not root, every student runs as the grader's own uid; below Landlock ABI 6 (Ubuntu 24.04's 6.8 kernel: user
namespaces restricted, so rlimits mode, and Landlock ABI 4) nothing but the seccomp filter stands between one
sandbox and a signal to another: the batch's other worker, its zygote and the sandbox grading another student.

Two real grader processes (tests/hostile_signal_grader.py: two workers of one batch, one uid, Landlock hidden as on
such a kernel) grade at once: the victim the bundled correct notebook, the attacker the same with a cell that, for
as long as it sees the other worker's sandbox, SIGKILLs every process of it. Before, the victim lost points it did
not earn (its cases died from SIGKILL); now every such signal is refused, the attacker's exercises are zeroed by the
incidents the zygote reported, and the victim keeps full marks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import testclock

from grader import codec, incidents
from grader.sandbox.isolation import detect
from grader.sandbox.process import CaseRequest, ProcessLimits
from notebook_build import appended, write
from sandbox_run import run_cases, statement
from test_hostile_rlimits import NOTIFIES, _as_grader, _environment, _interpreter

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "tests" / "hostile_signal_grader.py"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"

# Top-level code, at load (within its 10 s; bound to a graded name, so the load keeps it). Its own zygote is its first
# ancestor running zygote.py whose parent does not (a sandbox is a fork of a zygote); every other zygote of the uid is
# another worker's, and each process below one is of a sandbox it runs. Each is sent SIGKILL, every few ms, until
# the other worker has gone (it saw one) or 8 s have passed. It first makes the file MARKER (no Landlock: it writes
# what its uid may), which the test waits for before it lets the victim's worker grade.
ATTACK = '''
import os as _rt_os, signal as _rt_signal, time as _rt_time
def _rt_stat(pid):
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()
def _rt_runs_zygote(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        return b"zygote.py" in cmdline.read() and _rt_stat(pid)[0] != b"Z"
def _rt_is_zygote(pid):   # its sandboxes are forks of it: they run zygote.py too
    return _rt_runs_zygote(pid) and not _rt_runs_zygote(int(_rt_stat(pid)[1]))
def _rt_below(pid):
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in _rt_os.listdir(f"/proc/{parent}/task"):
            with open(f"/proc/{parent}/task/{task}/children", "rb") as children:
                below = [int(child) for child in children.read().split()]
            found += below
            todo += below
    return found
def _rt_attack(seconds):
    _rt_os.close(_rt_os.open(MARKER, _rt_os.O_CREAT | _rt_os.O_WRONLY, 0o600))
    own = _rt_os.getpid()
    while not _rt_is_zygote(own):
        own = int(_rt_stat(own)[1])
    end, seen, sent, refused = _rt_time.monotonic() + seconds, False, 0, 0
    while _rt_time.monotonic() < end:
        others = []
        for entry in _rt_os.listdir("/proc"):
            try:
                if entry.isdigit() and int(entry) != own and _rt_os.stat(f"/proc/{entry}").st_uid == _rt_os.getuid() \\
                        and _rt_is_zygote(int(entry)):
                    others.append(int(entry))
            except OSError:
                pass
        if not others and seen:
            break
        for zygote in others:
            try:
                victims = _rt_below(zygote)
            except OSError:
                continue
            seen = seen or bool(victims)
            for victim in victims:
                try:
                    _rt_os.kill(victim, _rt_signal.SIGKILL)
                    sent += 1
                except OSError:
                    refused += 1
        _rt_time.sleep(0.005)
    return seen, sent, refused
def _rt_attacking(function):
    _rt_attack(8.0)
    return function
find_tile = _rt_attacking(find_tile)
'''


def _grading(interpreter: str, notebook: Path, cache: Path, *wait: str) -> subprocess.Popen:
    return subprocess.Popen([interpreter, str(HARNESS), str(notebook), str(cache), *wait], env=_environment(),
                            cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **_as_grader())


def _report(process: subprocess.Popen) -> dict:
    stdout, stderr = process.communicate(timeout=testclock.within(300))
    assert process.returncode == 0, stderr.decode(errors="replace")[-3000:]
    return json.loads(stdout.decode().splitlines()[-1])


def test_a_student_in_rlimits_mode_cannot_kill_another_students_sandbox_of_the_same_uid():
    interpreter = _interpreter()
    if interpreter is None:
        pytest.skip("no interpreter a non-root uid can run the grader with")
    if not NOTIFIES:
        pytest.skip("no seccomp user notifications here: the filter alone cannot tell a sandbox's own processes")
    folder = Path(tempfile.mkdtemp(prefix="hostile-signal-"))
    try:
        marker = folder / "attacking"
        attacker_notebook = write(folder / "attacker.ipynb", appended(CORRECT, f"MARKER = {str(marker)!r}\n" + ATTACK))
        for cache in ("victim-cache", "attacker-cache"):
            (folder / cache).mkdir()
        if os.geteuid() == 0:
            for path in (folder, attacker_notebook, folder / "victim-cache", folder / "attacker-cache"):
                os.chown(path, _as_grader()["user"], _as_grader()["group"])
        victim = _grading(interpreter, CORRECT, folder / "victim-cache", "--wait")
        try:
            assert victim.stdout is not None and victim.stdin is not None
            assert victim.stdout.readline() == b"ready\n", victim.communicate()[1].decode(errors="replace")[-3000:]
            attacker = _grading(interpreter, attacker_notebook, folder / "attacker-cache")
            try:
                end = time.monotonic() + testclock.within(120)
                while not marker.exists() and attacker.poll() is None and time.monotonic() < end:
                    time.sleep(0.01)
                victim.stdin.write(b"go\n")
                victim.stdin.flush()
                graded = _report(victim)
                attacked = _report(attacker)
            finally:
                attacker.kill()
        finally:
            victim.kill()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # The victim: every answer right, nothing of the attacker's reached it (before: cases "died from SIGKILL").
    assert graded["total"] == graded["max_total"] and not graded["failed"] and not graded["incidents"], graded
    # The attacker saw the victim's sandbox and every signal it sent there was refused: an incident the zygote
    # reported, at load, which costs every exercise.
    assert attacked["total"] == 0, attacked
    assert attacked["incidents"] == [[f"{incidents.REFUSED_CALL}: signal to a process not its own", ""]], attacked


def _run_harness(*arguments: str) -> dict:
    interpreter = _interpreter()
    if interpreter is None:
        pytest.skip("no interpreter a non-root uid can run the grader with")
    if not NOTIFIES:
        pytest.skip("no seccomp user notifications here: the filter alone cannot tell a sandbox's own processes")
    process = subprocess.run([interpreter, str(HARNESS), *arguments], env=_environment(), cwd="/",
                             capture_output=True, timeout=testclock.within(300), **_as_grader())
    assert process.returncode == 0, process.stderr.decode(errors="replace")[-3000:]
    report = json.loads(process.stdout.decode().splitlines()[-1])
    assert report["level"] == "rlimits" and report["uid"] != 0 and not report["landlock"], report
    return report


REFUSED_SIGNAL = f"{incidents.REFUSED_CALL}: signal to a process not its own"


def test_a_sandbox_still_signals_its_own_processes_and_groups_and_nothing_else():
    """What the zygote now answers for the sandbox: its child, a session and group of its own (subprocess's
    start_new_session), a group whose leader has gone (the runtime's sweep of an exercise's fork's group after the
    fork is reaped), itself (kill, pthread_kill, raise_signal) and its own group go through; a process that ended is
    ESRCH, as the kernel says, and no incident; a sleeper of the uid outside the sandbox, its group and kill(-1) are
    refused, one incident, and the sleeper lives."""
    report = _run_harness("own")
    [(status, found), then] = report["outcomes"]
    assert status == "ok" and then == ["ok", 45], report
    assert found == {"its child": "done", "its child ended by it": True, "a process that ended": "ProcessLookupError",
                     "its new session's group": "done", "that group ended by it": True,
                     "its group, the leader gone": "done", "that group's member ended by it": True,
                     "itself, three ways": 3, "its own group": "done", "outside": "PermissionError",
                     "outside's group": "PermissionError", "every process of the uid": "PermissionError",
                     "outside still there": True}, report
    assert report["incidents"] == [[REFUSED_SIGNAL, 3]], report


def test_a_loop_of_signals_costs_the_zygote_a_bounded_number_of_answers():
    """Each signal of the sandbox is a round trip to the zygote, which serves every sandbox of its worker: a loop of
    them ends the sandbox at zygote.MAX_SIGNALS let through (its own child's) or MAX_NOTIFIED refused (a process
    outside), reported. The zygote cannot let go of the listener as it does elsewhere: the sandbox's own sweeps wait
    for its answers (the kernel would answer them ENOSYS). The next case runs in a fresh sandbox."""
    from grader.sandbox.zygote import MAX_NOTIFIED

    for kind, incidents_seen in (("own", []), ("outside", [[REFUSED_SIGNAL, MAX_NOTIFIED]])):
        report = _run_harness("loop", kind)
        [(status, _), then] = report["outcomes"]
        assert status != "ok" and then == ["ok", 45], report
        assert report["incidents"] == incidents_seen, report


@pytest.mark.skipif(not detect().namespaces, reason="no user namespaces here: no jail, no scratch tmpfs of its own")
def test_a_jails_mountinfo_does_not_tell_its_host_pid():
    """A signal names a host pid, and a jail should not learn its own: under a root grader the scratch tmpfs was
    mounted with uid= and gid= its unused uid, UID_BASE + the runtime's host pid, which /proc/self/mountinfo shows
    as given (`uid=1073764227`). It is now given to that uid by chown, as its folders were: the student still owns
    them, and the options name no uid."""
    source = ("import os\ndef probe():\n"
              "    return open('/proc/self/mountinfo').read(), os.stat('.').st_uid == os.getuid()\n")
    ran = run_cases([statement(source)], [CaseRequest(id="probe", code="probe()", timeout=30.0)],
                    limits=ProcessLimits())
    [outcome] = ran.outcomes
    assert outcome.status == "ok", outcome
    mountinfo, owned = codec.decode(outcome.value)
    assert owned and ran.sandbox.level == "namespaces", ran.sandbox.facts
    scratch = [line for line in mountinfo.splitlines() if line.split()[4] in ("/tmp", "/home/student")]
    assert len(scratch) == 2 and not any("uid=" in line or "gid=" in line for line in scratch), scratch
    assert str(ran.sandbox.facts["host_uid"]) not in mountinfo
