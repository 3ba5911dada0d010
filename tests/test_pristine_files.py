"""The /proc files a pristine check keeps open (pristine.Files): read through them, a check says what it said by
path, and a descriptor the student's code closed or replaced never makes it say "the same". Each test runs in a
fork of this process, single-threaded as an exercise's fork starts, its files opened there as the fork opens them
(its states taken with and without the kept files must agree)."""

from __future__ import annotations

import functools
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import pytest

import testclock
from grader.sandbox import pristine


def in_a_fork(test: Callable[..., None]) -> Callable[..., None]:
    """Run the test in a fork of this process with `files` opened there; its failure is reported here, and a fork
    that never answers is killed and fails the test (testclock.in_a_fork) instead of holding the run."""
    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        def actions() -> str | None:
            try:
                files = pristine.Files.open()
                assert files is not None
                test(files, *args, **kwargs)
                return None
            except BaseException:  # noqa: BLE001 - reported to the test's own process
                return traceback.format_exc()
        report = testclock.in_a_fork(actions)
        assert report is None, report
    run.__signature__ = None  # type: ignore[attr-defined]
    return run


@in_a_fork
def test_the_kept_files_say_what_reading_by_path_says(files):
    started = pristine.process(files=files)
    assert started == pristine.process()
    assert pristine.company(files) == pristine.company()
    assert pristine.process(pristine.company(files), files, started) == started
    assert files.threads   # this kernel counts threads in a task folder's links
    if tuple(map(int, os.uname().release.split(".")[:2])) >= (6, 2):
        assert files.counted   # and open descriptors in /proc/PID/fd's size


@in_a_fork
def test_a_descriptor_opened_or_closed_shows(files):
    started = pristine.process(files=files)
    extra = os.open(os.devnull, os.O_RDONLY)
    try:
        assert pristine.process(files=files, before=started)["descriptors"] != started["descriptors"]
    finally:
        os.close(extra)
    assert pristine.process(files=files, before=started) == started
    # One closed and another opened at its number: as many open as recorded, one of them another file (where
    # /proc/PID/fd's size counts them, the reading that fstats each recorded number instead of listing).
    number = os.open(os.devnull, os.O_RDONLY)
    try:
        recorded = pristine.process(files=files, before=started)
        other = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        os.dup2(other, number)
        os.close(other)
        now = pristine.process(files=files, before=recorded)
        assert len(now["descriptors"]) == len(recorded["descriptors"])
        assert now["descriptors"] != recorded["descriptors"] and now != recorded
    finally:
        os.close(number)


@pytest.mark.parametrize("name", sorted(pristine.Files.PATHS))
def test_a_kept_file_replaced_makes_the_state_another(tmp_path, name):
    replaced(tmp_path, name)


@in_a_fork
def replaced(files, tmp_path, name):
    """A file of the student's at a kept number, holding what /proc said (a folder for a folder): the inode
    differs, so the descriptors do, and the check reads nothing through it."""
    started = pristine.process(files=files)
    single = files.links("parent_task") == 1   # else its threads' children are listed by path (pytest's threads)
    fd = files.fds[name]
    if pristine.Files.PATHS[name][2]:
        (tmp_path / "one").mkdir()
        forged = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    else:
        copy = tmp_path / "copy"
        copy.write_bytes(os.pread(fd, 1 << 16, 0))
        forged = os.open(copy, os.O_RDONLY)
    kept = os.dup(fd)
    try:
        os.dup2(forged, fd)
        assert pristine.process(pristine.company(files), files, started) != started
        if name in ("task", "children", "parent_task") or name == "parent_children" and single:
            assert pristine.company(files) is None   # who else could read the pipes: not known
    finally:
        os.dup2(kept, fd)
        os.close(kept)
        os.close(forged)
    assert pristine.process(pristine.company(files), files, started) == started


@in_a_fork
def test_a_kept_file_closed_is_no_company_known(files):
    assert pristine.process(files=files) is not None   # the state as the fork starts (the first reading lists)
    os.close(files.fds["children"])
    assert pristine.company(files) is None
    del files.fds["children"]


@in_a_fork
def test_a_thread_left_shows_in_the_company(files):
    pristine.process(files=files)
    before = pristine.company(files)
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    try:
        during = pristine.company(files)
        assert during is not None and before is not None
        assert during[0] == before[0] + 1
        assert during == pristine.company()   # the same as listed by path
    finally:
        done.set()
        thread.join()
    # join returns once the thread's Python code is done; the kernel drops its task from /proc a moment later
    # (on a busy machine the next reading still counted 2 threads), so wait for that, bounded.
    gone = time.monotonic() + 60
    while os.path.exists(f"/proc/self/task/{thread.native_id}") and time.monotonic() < gone:
        time.sleep(0.001)
    assert pristine.company(files) == before


@in_a_fork
def test_a_child_left_shows_in_the_company(files):
    pristine.process(files=files)
    before = pristine.company(files)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(reader, 1)
        os._exit(0)
    try:
        during = pristine.company(files)
        assert during is not None and before is not None
        assert during[1] == sorted([*before[1], str(pid).encode()])
    finally:
        os.write(writer, b"x")
        os.waitpid(pid, 0)
        os.close(reader)
        os.close(writer)
    assert pristine.company(files) == before
