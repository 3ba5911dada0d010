"""A grader process for tests/test_hostile_rlimits.py: run as a uid that is not root, in forced rlimits mode, so
the student's code runs as this process's own uid (the mode the README calls unprotected by uid). It holds what a
student would want (a secret in its environment, an abstract unix socket listening), grades one statement whose
case probes what it can do to this process, its zygote and the uid's other processes, and prints the case's answer
as one JSON line (or its status and error). Run as `python hostile_grader.py`, with PYTHONPATH naming the repo;
`python hostile_grader.py honest` grades tests/honest_code.py instead (what honest notebooks do, at load and in a
case), printing its answer, load warnings and incidents."""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import textwrap
from pathlib import Path

os.environ["PUZZLE_GRADER_ISOLATION"] = "rlimits"
os.environ["GRADER_SECRET"] = "expected-value-7171"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grader import codec  # noqa: E402
from grader.sandbox import supervisor  # noqa: E402
from grader.sandbox.confine import _KEYRING_CALLS, _libc  # noqa: E402
from grader.sandbox.process import CaseRequest, ProcessLimits  # noqa: E402
from probe_source import ATTEMPT  # noqa: E402
from sandbox_run import run_cases, statement  # noqa: E402

KEYCTL = _KEYRING_CALLS.get(os.uname().machine, (0, 0, 0))[2]
# A number no signal has: the filter refuses it to a protected pid as any signal (signal 0 it lets through: it sends
# nothing), and a kernel that was let it answers EINVAL, so a probe that got through still sends nothing.
NOT_A_SIGNAL = 65

STUDENT = textwrap.dedent(f"""
import ctypes, os, resource, signal, socket
libc = ctypes.CDLL(None, use_errno=True)

def parent_of(pid):
    return int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])

{ATTEMPT}
def keyring():
    if {KEYCTL} == 0 or libc.syscall({KEYCTL}, 0, -3, 0) < 0:   # KEYCTL_GET_KEYRING_ID of the session keyring
        raise OSError(ctypes.get_errno(), "keyctl")

def abstract():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect("\\0puzzle-grader-hostile-{os.getpid()}")

def tcp():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))

def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.sendto(b"x", ("127.0.0.1", 9))

def agent():   # a pathname socket of the uid in a folder of its own, as an ssh-agent's
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(AGENT)

def segment():   # the grader's System V shared memory, by its key
    if libc.shmget(SEGMENT, 0, 0) < 0:
        raise OSError(ctypes.get_errno(), "shmget")

def probe():
    runtime = os.getppid()            # the case runs in an exercise's fork of the runtime
    zygote = parent_of(runtime)
    grader = parent_of(zygote)
    found = {{"grader_found": grader == {os.getpid()}}}
    for name, pid in (("grader", grader), ("zygote", zygote)):
        found[f"signal {{name}}"] = attempt(lambda: os.kill(pid, {NOT_A_SIGNAL}))
        found[f"prlimit {{name}}"] = attempt(lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE))
        found[f"environ {{name}}"] = attempt(lambda: open(f"/proc/{{pid}}/environ", "rb").read())
        found[f"descriptors {{name}}"] = attempt(lambda: [os.open(f"/proc/{{pid}}/fd/{{fd}}", os.O_RDONLY)
                                                       for fd in os.listdir(f"/proc/{{pid}}/fd")])
    found["signal every process of the uid"] = attempt(lambda: os.kill(-1, {NOT_A_SIGNAL}))
    found["keyring"] = attempt(keyring)
    found["abstract socket"] = attempt(abstract)
    found["tcp"] = attempt(tcp)
    found["udp"] = attempt(udp)
    found["unix socket of the uid"] = attempt(agent)
    found["shared memory of the uid"] = attempt(segment)
    found["stop the grader"] = attempt(lambda: os.kill(grader, signal.SIGSTOP))
    return found
""")


def main() -> None:
    if sys.argv[1:] == ["honest"]:
        from honest_code import HONEST
        grade(HONEST, "work()", "other")
        return
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(f"\0puzzle-grader-hostile-{os.getpid()}")
    listening.listen(1)
    with tempfile.TemporaryDirectory(prefix="hostile-agent-") as folder:   # 0700, the grader's uid
        agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        agent.bind(os.path.join(folder, "agent.sock"))
        agent.listen(1)
        key = 0x7171_0000 + os.getpid() % 0xFFFF
        shared = _libc.shmget(key, 4096, 0o1600)   # IPC_CREAT, 0600
        try:
            grade(f"AGENT = {os.path.join(folder, 'agent.sock')!r}\nSEGMENT = {key}\n" + STUDENT)
        finally:
            _libc.shmctl(shared, 0, None)   # IPC_RMID


def grade(source: str, call: str = "probe()", kind: str = "def") -> None:
    ran = run_cases([statement(source, kind=kind)], [CaseRequest(id="probe", code=call, timeout=30.0)],
                    limits=ProcessLimits())
    [outcome] = ran.outcomes
    facts = {"level": ran.sandbox.level, "landlock": ran.sandbox.facts.get("landlock"), "uid": os.geteuid(),
             "dumpable": _libc.prctl(3, 0, 0, 0, 0),   # PR_GET_DUMPABLE: this grader's, and its zygote's /proc owner
             "zygote_proc_owner": os.stat(f"/proc/{supervisor.zygote().process.pid}/fd").st_uid,
             "incidents": sorted({seen.kind for seen in ran.sandbox.seen}),
             "warnings": [warning.text for warning in ran.report.warnings]}
    if outcome.status == "ok":
        print(json.dumps({"found": codec.decode(outcome.value), **facts}))
    else:
        print(json.dumps({"status": outcome.status, "error": str(outcome.error)[:2000], **facts}))


if __name__ == "__main__":
    main()
