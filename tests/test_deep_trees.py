"""A sandbox's scratch, or a dead grader's temp folder, holding a tree deeper than Python's recursion limit: what the
grader and the zygote remove goes, however deep, and never through a link (real folders, real processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader import codec
from grader.sandbox import confine
from grader.sandbox.confine import EMPTY_TMPFS_FOLDER, empty_folder, remove_tree
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import run_cases, statement
from testclock import in_a_fork, within

ROOT = Path(__file__).resolve().parents[1]
DEPTH = 1500   # past the recursion limit of a process that has not raised it (1,000: the zygote, a grader's start)


def deep_tree(folder: Path, depth: int = DEPTH) -> None:
    """`depth` nested folders under `folder`, a file in each, made through descriptors as a student's code can."""
    current = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=current))
        os.mkdir("d", dir_fd=current)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
        os.close(current)
        current = inner
    os.close(current)


def dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_deep_tree_is_removed(tmp_path: Path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    deep_tree(scratch)
    remove_tree(str(scratch))
    assert not scratch.exists()


def test_a_link_inside_is_removed_as_a_link(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    deep_tree(scratch, 5)
    (scratch / "d" / "d" / "link").symlink_to(outside)
    (scratch / "file-link").symlink_to(outside / "keep")
    remove_tree(str(scratch))
    assert not scratch.exists() and (outside / "keep").read_text() == "mine"


def test_a_deep_scratch_is_emptied_and_kept(tmp_path: Path):
    """What the runtime does to the scratch after the load and between exercises (confine.empty_folder): it walked
    one call per level and raised RecursionError past the limit (as low as a notebook sets it: the runtime is the
    process the notebook loaded in). 300 levels under a limit 100 frames above this test's own."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    deep_tree(scratch, 300)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    (scratch / "d" / "d" / "link").symlink_to(outside)
    frame, frames = sys._getframe(), 0
    while frame is not None:
        frame, frames = frame.f_back, frames + 1
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(frames + 100)
    try:
        empty_folder(str(scratch))
    finally:
        sys.setrecursionlimit(limit)
    assert scratch.is_dir() and not list(scratch.iterdir()) and (outside / "keep").read_text() == "mine"


def test_a_scratch_too_long_for_a_path_is_emptied(tmp_path: Path):
    """20 folders of 250-character names: no path to the last one fits in PATH_MAX, and the walk by paths left the
    chain and its files for the next exercise (ENAMETOOLONG, swallowed; mend's /tmp/mend/longp)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    current = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(20):
        os.mkdir("x" * 250, dir_fd=current)
        inner = os.open("x" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
        os.close(current)
        current = inner
    os.close(os.open("secret", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=current))
    os.close(current)
    empty_folder(str(scratch))
    assert scratch.is_dir() and not list(scratch.iterdir())


# Exercise A leaves files in its working folder (the scratch) and takes the write bit off the folder and a subfolder;
# exercise B lists the folder.
CLOSED = """
import os
def close():
    open("left.txt", "w").write("from a")
    os.mkdir("inner")
    open("inner/left.txt", "w").write("from a")
    os.chmod("inner", 0)
    os.chmod(".", 0o500)
    return sorted(os.listdir("."))
def look():
    return sorted(os.listdir("."))
"""


def test_a_scratch_the_student_closed_is_still_emptied_for_the_next_exercise():
    """The runtime runs as the student's uid: a working folder of mode 0o500 kept exercise A's files for exercise B
    (a jail, rlimits mode alike): the scratch was not 'emptied between exercises'."""
    with Sandbox([statement(CLOSED, kind="other")], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        seen = []
        for number, call in enumerate(("look()", "close()", "look()")):
            outcome = sandbox.run_exercise([CaseRequest(id=f"c#{number}", code=call, timeout=10.0)], (),
                                           lambda *args: None, time.monotonic() + 120, more=number < 2)[0]
            assert outcome.status == "ok", outcome.error
            seen.append(codec.decode(outcome.value))
    assert seen == [[], ["inner", "left.txt"], []]


def test_without_root_a_folder_the_student_closed_is_removed():
    """rlimits mode under a grader that is not root: the scratch's files are the grader's uid's, and remove_tree
    (the sandbox's end, the zygote's cleanup) could not empty a folder of mode 0o500 or 0: the scratch stayed in the
    grader's temp folder. Run as a uid of its own when the test is root (root needs no mode)."""
    folder = Path(tempfile.mkdtemp(prefix="redteam-closed-"))
    uid = 0x3FFE0000 + os.getpid() % 0xFFFF
    try:
        scratch = folder / "scratch"
        scratch.mkdir()
        deep_tree(scratch, 3)
        if os.geteuid() == 0:
            for path in (folder, *folder.rglob("*")):
                os.lchown(path, uid, uid)
        (scratch / "d" / "d").chmod(0)
        (scratch / "d").chmod(0o500)
        scratch.chmod(0o500)

        def remove_as_the_owner() -> str:   # in a fork: its uid changes there, and it is waited on bounded
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            remove_tree(str(scratch))
            return "gone" if not os.path.lexists(scratch) else "left"

        assert in_a_fork(remove_as_the_owner) == "gone"
    finally:
        for path in (folder, *folder.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o700)
        shutil.rmtree(folder, ignore_errors=True)



def _tmpfs_folder() -> str | None:
    """A tmpfs mounted on this machine that this process may write (/dev/shm on most), from /proc/self/mounts."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and fields[2] == "tmpfs" and os.access(fields[1], os.W_OK) and "ro" not in \
                fields[3].split(","):
            return fields[1]
    return None


# Each kind of name a case can leave in a folder (made with the folder's descriptor `at`; `outside`: a folder of the
# same tmpfs beside it), as the shortcut of confine.empty_folder must see it.
NAMES = {
    "file": lambda at, outside: os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=at)),
    "empty folder": lambda at, outside: os.mkdir("d", dir_fd=at),
    "link": lambda at, outside: os.symlink("/nowhere", "l", dir_fd=at),
    "dangling link to itself": lambda at, outside: os.symlink("s", "s", dir_fd=at),
    "pipe": lambda at, outside: os.mkfifo("p", dir_fd=at),
    "hard link": lambda at, outside: os.link(os.path.join(outside, "kept"), "h", dst_dir_fd=at),
    "renamed in": lambda at, outside: os.rename(os.path.join(outside, "moved"), "m", dst_dir_fd=at),
    "hidden name": lambda at, outside: os.close(os.open(".x", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=at)),
}


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_tmpfs_folder_is_empty_by_its_size_whatever_name_a_case_leaves(kind: str):
    """confine.empty_folder leaves a folder of the jail's tmpfs alone when its size is EMPTY_TMPFS_FOLDER (one lstat
    instead of a walk of 12 system calls, twice at every exercise's end). The kernel fact that rests on: any name in
    the folder, of any kind, makes it longer, and the walk then empties it back to that size."""
    top = _tmpfs_folder()
    if top is None:
        pytest.skip("no writable tmpfs on this machine")
    with tempfile.TemporaryDirectory(dir=top, prefix="pg-tmpfs-") as base:
        folder, outside = os.path.join(base, "scratch"), os.path.join(base, "outside")
        os.mkdir(folder)
        os.mkdir(outside)
        Path(outside, "kept").write_text("mine")
        Path(outside, "moved").write_text("moved")
        device = os.lstat(folder).st_dev
        assert os.lstat(folder).st_size == EMPTY_TMPFS_FOLDER
        at = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            NAMES[kind](at, outside)
        finally:
            os.close(at)
        assert os.lstat(folder).st_size > EMPTY_TMPFS_FOLDER
        empty_folder(folder, device)
        assert os.listdir(folder) == [] and os.lstat(folder).st_size == EMPTY_TMPFS_FOLDER
        assert Path(outside, "kept").read_text() == "mine"


def test_an_empty_tmpfs_folder_is_not_walked_but_gets_its_owner_bits_back(monkeypatch):
    """The shortcut opens nothing, and still gives the folder its owner's bits back (a case's os.chmod('.', 0o500)
    of an empty working folder would have the next exercise's writes fail); another device is walked as before."""
    top = _tmpfs_folder()
    if top is None:
        pytest.skip("no writable tmpfs on this machine")
    opened: list[object] = []
    real_open = confine._open
    monkeypatch.setattr(confine, "_open", lambda *args, **kwargs: opened.append(args) or real_open(*args, **kwargs))
    with tempfile.TemporaryDirectory(dir=top, prefix="pg-tmpfs-") as folder:
        os.chmod(folder, 0o500)
        empty_folder(folder, os.lstat(folder).st_dev)
        assert opened == [] and os.lstat(folder).st_mode & 0o700 == 0o700
        empty_folder(folder, os.lstat(folder).st_dev + 1)   # not the scratch's device: walked
        assert len(opened) == 1
        empty_folder(folder)
        assert len(opened) == 2


# Exercise A leaves one name of each kind in the working folder and in /tmp (one tmpfs in a jail), then another
# empties its folder and takes the write bit off it; each exercise after lists both and writes a file.
LEFT = """
import os
def leave():
    for folder in (".", "/tmp"):
        open(f"{folder}/file", "w").write("a")
        os.mkdir(f"{folder}/folder")
        open(f"{folder}/folder/inner", "w").write("a")
        os.symlink("/nowhere", f"{folder}/link")
        os.mkfifo(f"{folder}/pipe")
        os.link(f"{folder}/file", f"{folder}/hard")
    return look()
def close():
    os.chmod(".", 0o500)
    return listed()
def look():
    seen = listed()
    open("mine", "w").write("b")
    os.remove("mine")
    return seen
def listed():   # /tmp less what the load found there (a grader's tree bound below /tmp)
    return [sorted(os.listdir(".")), sorted(set(os.listdir("/tmp")) - BOUND)]
BOUND = set(os.listdir("/tmp"))
"""


def test_what_an_exercise_leaves_in_a_jails_tmpfs_is_gone_for_the_next_and_its_closed_folder_open():
    """The shortcut in a real sandbox: a case leaving every kind of name (a file, a folder, a link, a pipe, a hard
    link) in its working folder and in /tmp, and one leaving its empty working folder closed: each next exercise
    finds both empty and can write. A case that writes and removes its file leaves the folder empty by its size."""
    with Sandbox([statement(LEFT, kind="other")], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        seen = []
        calls = ("look()", "leave()", "look()", "close()", "look()")
        for number, call in enumerate(calls):
            outcome = sandbox.run_exercise([CaseRequest(id=f"c#{number}", code=call, timeout=10.0)], (),
                                           lambda *args: None, time.monotonic() + 120,
                                           more=number < len(calls) - 1)[0]
            assert outcome.status == "ok", outcome.error
            seen.append(codec.decode(outcome.value))
    names = ["file", "folder", "hard", "link", "pipe"]
    assert seen == [[[], []], [names, names], [[], []], [[], []], [[], []]]


# What a case sees of its working folder at the load and in an exercise, and of /tmp (None: not readable).
LISTS = """
import getpass, os, sys
AT_LOAD = sorted(os.listdir("."))
def look():
    try:
        tmp = sorted(os.listdir("/tmp"))
    except OSError:
        tmp = None
    return [AT_LOAD, sorted(os.listdir(".")), tmp, sys.argv, sys.orig_argv, getpass.getuser()]
"""
# A grader whose interpreter's trees live under /tmp runs LISTS in a real sandbox (as root where it must: the code is
# this test's), and prints the isolation level and the case's answer.
LOOK_FROM_TMP = f"""
import json, sys, time
from grader import codec
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import statement
with Sandbox([statement({LISTS!r}, kind="other")], {{}}, ProcessLimits(), allow_root=True) as sandbox:
    sandbox.load()
    [outcome] = sandbox.run_exercise([CaseRequest(id="look#0", code="look()", timeout=10.0)], (), lambda *a: None,
                                     time.monotonic() + 120)
    print(json.dumps([sandbox.isolation.level, outcome.status,
                      codec.decode(outcome.value) if outcome.status == "ok" else outcome.error]))
"""


@pytest.mark.parametrize("forced", ["", "rlimits"])
def test_the_working_folder_holds_nothing_of_where_the_grader_lives(forced: str):
    """A grader installed under /tmp (a fresh clone in /tmp/fresh21-1 with its .venv): the jail binds the
    interpreter's trees at their paths, and the scratch was the jail's /tmp, so a case listing its working folder read
    'fresh21-1', on that machine only. rlimits mode's working folder held the child's output.log at the load, and
    sys.argv was the zygote's command line (the grader's path and pid). Now the working folder is empty at the load
    and in every exercise, wherever the grader lives (in a jail the tree is still bound where it lives, under /tmp),
    and sys.argv is an interactive interpreter's; getpass.getuser() says 'student' (it raised KeyError in rlimits
    mode as root)."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="redteam-venv-") as top:
        venv = Path(top) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=within(120))
        environment = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
                       "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
                       **({"PUZZLE_GRADER_ISOLATION": forced} if forced else {})}
        done = subprocess.run([str(venv / "bin" / "python"), "-c", LOOK_FROM_TMP], capture_output=True, text=True,
                              env=environment, cwd="/", timeout=within(300))
        assert done.returncode == 0, done.stderr[-2000:]
        level, status, value = json.loads(done.stdout.splitlines()[-1])
    assert status == "ok", value
    at_load, in_exercise, tmp, argv, orig_argv, user = value
    assert (at_load, in_exercise) == ([], [])
    assert (argv, orig_argv) == ([""], ["python"])   # not the zygote's command line: its path, the grader's pid
    assert user == "student"   # not a KeyError (an unused uid has no passwd entry), nor the TA's login
    if level == "namespaces":
        assert Path(top).name in tmp   # the tree is bound, under /tmp: the test grades from where it means to


# A load that leaves the deepest chain of folders its scratch allows (its `files`), each level made from the one above.
DEEP_AT_LOAD = """
import os
def _chain():
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        while True:
            os.mkdir("d", dir_fd=here)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = inner
    except OSError:
        os.close(here)
_chain()
def answer(n):
    return [n, os.listdir(".")]
"""


def test_a_scratch_left_deep_by_the_load_costs_no_case():
    """The runtime empties the scratch after the load: a chain of ~1,000 folders made its walk raise RecursionError,
    the runtime died before any exercise, at every reload, and every case was 'the submission's process kept
    dying'. Now the cases run in an empty scratch."""
    ran = run_cases([statement(DEEP_AT_LOAD, kind="other")],
                    [CaseRequest(id=f"answer#{n}", code=f"answer({n})", timeout=10.0) for n in range(2)])
    assert [(outcome.status, codec.decode(outcome.value) if outcome.status == "ok" else outcome.error)
            for outcome in ran.outcomes] == [("ok", [0, []]), ("ok", [1, []])]


# A fresh process (the recursion limit as a grader starts with it, or the zygote keeps) sweeps the folders of dead
# graders, as a grader's first temp folder does, then a zygote removes its dead grader's. Prints what is left.
SWEEP = r'''
import json, os, sys, tempfile
from grader.sandbox import zygote
from grader.sandbox.supervisor import clean_leftovers
swept, left, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    clean_leftovers()
    zygote.remove_grader_folders(pid, tempfile.gettempdir())
    print(json.dumps({"swept": os.path.exists(swept), "left": os.path.exists(left)}))
except RecursionError:
    print(json.dumps({"error": "RecursionError"}))
'''


def test_a_dead_graders_deep_folder_is_swept_and_removed_by_its_zygote(tmp_path: Path):
    """A grader killed while its rlimits-mode sandbox's scratch held a deep tree: the next grader's sweep of leftovers
    raised RecursionError (each later grader process then failed to make its temp folder, and so every sandbox), and
    the zygote's removal of its dead grader's folder likewise. A temp dir of the test's own: another grader's sweep on
    this machine would take a dead pid's folder in /tmp while it is being made."""
    swept = tmp_path / f"puzzle-grader-{os.getuid()}-{dead_pid()}-abcd1234"
    pid = dead_pid()
    left = tmp_path / f"puzzle-grader-{os.getuid()}-{pid}-efgh5678"
    for folder in (swept, left):
        folder.mkdir(mode=0o711)
        deep_tree(folder)
    # the zygote's own: its grader's folder is not swept first (clean_leftovers would take it too)
    os.rename(left, tmp_path / "aside")
    found = subprocess.run([sys.executable, "-c", SWEEP, str(swept), str(left), str(pid)], capture_output=True,
                           text=True, timeout=within(300),
                           env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    assert found.returncode == 0, found.stderr[-2000:]
    assert json.loads(found.stdout) == {"swept": False, "left": False}
    os.rename(tmp_path / "aside", left)
    found = subprocess.run([sys.executable, "-c", SWEEP.replace("    clean_leftovers()\n", ""), str(swept), str(left),
                            str(pid)], capture_output=True, text=True, timeout=within(300),
                           env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    assert found.returncode == 0, found.stderr[-2000:]
    assert json.loads(found.stdout) == {"swept": False, "left": False}


@pytest.mark.parametrize("holding", [False, True])
def test_the_folder_itself_is_put_back_as_made_empty_or_not(holding: bool):
    """The scratch's folder carried what an exercise set on it to the next (test_hostile_carriers): with `made`
    (confine.folder_as_made, read as the runtime starts), empty_folder puts back its mode, removes every extended
    attribute it did not have and sets its times as made, on the shortcut (an empty tmpfs folder) and after a walk."""
    top = _tmpfs_folder()
    if top is None:
        pytest.skip("no writable tmpfs on this machine")
    with tempfile.TemporaryDirectory(dir=top, prefix="pg-tmpfs-") as folder:
        made = confine.folder_as_made(folder)
        assert made is not None
        try:
            os.setxattr(folder, "user.carried", b"x" * 4096)
        except OSError:
            pytest.skip("this tmpfs keeps no user.* attributes")
        os.chmod(folder, 0o1755)
        os.utime(folder, ns=(12345, 67890))
        if holding:
            Path(folder, "left").write_text("left")
        before = os.lstat(folder)
        empty_folder(folder, before.st_dev, made)
        after = os.lstat(folder)
        assert os.listdir(folder) == [] and os.listxattr(folder) == [a for a, _ in made[2] or ()]
        assert stat_mode(after) == made[0] and (after.st_atime_ns, after.st_mtime_ns) == made[1]
        assert after.st_ctime_ns >= before.st_ctime_ns


def stat_mode(status: os.stat_result) -> int:
    return status.st_mode & 0o7777
