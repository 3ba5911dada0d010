"""The part of a jail's root a zygote prepares once (confine.prepare_root) and each of its jails starts from
(enter_root): the very root a jail built whole had (build_root), nothing a sandbox can write, and nothing left on
the host but an empty folder while its zygote runs."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from grader import codec
from grader.sandbox import confine, supervisor
from grader.sandbox.isolation import detect
from grader.sandbox.process import CaseRequest
from sandbox_run import run_cases, statement
from testclock import within

pytestmark = pytest.mark.skipif(not (detect().namespaces and os.geteuid() == 0),
                                reason="a zygote prepares a root only as real root, where namespaces are allowed")

OWNER = confine.UID_BASE + 4242
SEEN = ("/", "/etc", "/dev", "/home", "/home/student", "/tmp", "/usr")


def _jail(trees: list[str], prepared: bool) -> dict:
    """What a jail built in a fork of this process shows its student: each mount (its root in its file system,
    where it is, its options, its kind) and the names in SEEN. `prepared`: the fork prepares the root first, as a
    zygote does, and its child enters it; else the child builds it whole."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            folder = tempfile.mkdtemp(prefix="prepared-root-test-") if prepared else ""
            if folder:
                confine.prepare_root(folder, trees)
            child = confine.clone_namespaces(user=False)
            if child == 0:
                try:
                    if folder:
                        confine.enter_root(folder, trees, 1 << 20, 64, owner=OWNER)
                    else:
                        confine.build_root(trees, 1 << 20, 64, owner=OWNER)
                    with open("/proc/self/mountinfo") as table:
                        mounts = sorted(" ".join([*fields[3:6], fields[fields.index("-") + 1]])
                                        for fields in (line.split() for line in table))
                    os.write(write, json.dumps({"mounts": mounts, **{path: sorted(os.listdir(path))
                                                                     for path in SEEN}}).encode())
                    os._exit(0)
                finally:
                    os._exit(1)
            _, status = os.waitpid(child, 0)
            if folder:
                confine.drop_prepared_root(folder)
                code = 2 if os.path.exists(folder) else os.waitstatus_to_exitcode(status)
            else:
                code = os.waitstatus_to_exitcode(status)
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    return json.loads(data)


def _prepared_folders() -> list[Path]:
    """The folders on the host of this process's zygote's prepared root (named by the zygote's pid)."""
    pid = supervisor.zygote().process.pid
    return [path for path in Path(tempfile.gettempdir()).glob(f"puzzle-grader-{os.getuid()}-{pid}-*")
            if re.fullmatch(r"puzzle-grader-\d+-\d+-[0-9a-f]{12}", path.name)]


def test_a_prepared_root_is_the_root_built_whole_with_a_tree_that_lies_under_tmp(tmp_path: Path):
    """A fresh clone's venv lies under /tmp, where the jail has its scratch: such a tree is bound in each jail, on
    its own scratch, as build_root binds it; every other mount is the prepared one."""
    under_tmp = tmp_path / "venv-like" / "lib"
    under_tmp.mkdir(parents=True)
    (under_tmp / "module.py").write_text("x = 1\n")
    assert str(under_tmp).startswith("/tmp/")
    trees = [*confine.python_trees(), str(under_tmp)]
    whole, prepared = _jail(trees, prepared=False), _jail(trees, prepared=True)
    assert prepared == whole
    assert any(f"{under_tmp} {under_tmp} ro" in mount for mount in prepared["mounts"])


def test_no_sandbox_writes_the_prepared_root_and_the_host_sees_an_empty_folder():
    """Every jail of a zygote shares its prepared file systems: nothing may write them, not even their times, so
    nothing one student does there reaches the next. On the host the zygote's folder is empty, and it goes with
    the zygote."""
    tries = statement(
        "import ctypes, os\n"
        "def tries():\n"
        "    made = []\n"
        "    for path in ('/x', '/etc/x', '/dev/x', '/home/x', '/usr/x', '/etc/passwd', '/etc/hosts'):\n"
        "        try:\n"
        "            with open(path, 'a') as file:\n"
        "                file.write('x')\n"
        "            made.append(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "    for path in ('/y', '/etc/y', '/dev/y'):\n"
        "        try:\n"
        "            os.mkdir(path)\n"
        "            made.append(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "    left = sorted(os.listdir('/tmp')), sorted(os.listdir(os.path.expanduser('~')))\n"
        "    for folder in ('/tmp', os.path.expanduser('~')):\n"
        "        with open(os.path.join(folder, 'mark'), 'w') as file:\n"
        "            file.write('x')\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    for target, flags in (('/', 32 | 4096), ('/', 32), ('/etc', 0)):\n"
        "        if libc.mount(b'tmpfs' if not flags else None, target.encode(), b'tmpfs', flags, None) == 0:\n"
        "            made.append('mount ' + target)\n"
        "    return made, left, sorted(os.listdir('/')), sorted(os.listdir('/etc')), os.stat('/etc/passwd').st_mtime\n")
    case = CaseRequest("tries#1", "tries()", timeout=30.0)
    first = run_cases([tries], [case]).outcomes[0]
    assert first.status == "ok", first
    made, left, root, etc, mtime = codec.decode(first.value)
    assert made == [] and "mark" not in left[0] and left[1] == []   # a venv under /tmp is bound in the jail's /tmp
    second = run_cases([tries], [case]).outcomes[0]
    # the next sandbox sees the same root, and a scratch of its own
    assert codec.decode(second.value) == codec.decode(first.value)
    assert "passwd" in etc and "home" in root and mtime > 0

    folders = _prepared_folders()
    assert len(folders) == 1, folders
    assert os.listdir(folders[0]) == [] and (folders[0].stat().st_mode & 0o777) == 0o700
    assert folders[0].name in Path(f"/proc/{supervisor.zygote().process.pid}/mountinfo").read_text()
    supervisor.stop()
    deadline = time.monotonic() + within(30)
    while folders[0].exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folders[0].exists()


def test_a_prepared_folder_removed_from_the_host_leaves_the_jails_built_whole():
    """Removing the zygote's empty folder on the host (a clean-up of another grader's) takes its mounts with it in
    the zygote's namespace too: the next jails are built whole, and grade as before."""
    kept, case = [statement("def f(x):\n    return x + 1\n")], CaseRequest("f#1", "f(1)", timeout=30.0)
    supervisor.stop()
    assert codec.decode(run_cases(kept, [case]).outcomes[0].value) == 2
    folders = _prepared_folders()
    assert len(folders) == 1, folders
    folders[0].rmdir()
    for _ in range(2):
        assert codec.decode(run_cases(kept, [case]).outcomes[0].value) == 2
    assert folders[0].name not in Path(f"/proc/{supervisor.zygote().process.pid}/mountinfo").read_text()
    supervisor.stop()


def test_a_killed_zygotes_prepared_folder_is_swept_by_the_next_clean_up():
    """A zygote killed outright cannot remove its folder (empty on the host: its mounts died with it): named by its
    pid, it goes with the next grader process's clean_leftovers, as a dead grader's temp folder does."""
    kept, case = [statement("def f(x):\n    return x + 1\n")], CaseRequest("f#1", "f(1)", timeout=30.0)
    supervisor.stop()
    assert codec.decode(run_cases(kept, [case]).outcomes[0].value) == 2
    folders = _prepared_folders()
    assert len(folders) == 1, folders
    supervisor.zygote().process.kill()
    supervisor.stop()     # reaps it: a zombie's pid still looks alive
    assert folders[0].exists() and os.listdir(folders[0]) == []
    assert str(folders[0]) in supervisor.clean_leftovers()
    assert not folders[0].exists()
