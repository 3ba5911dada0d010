"""Moving a cgroup's processes to other CPUs (isolation.Cgroup.move_members, keep_all_to) touches only the group's:
a pid listed once may end and be given to another process before its pidfd is opened, so only a pid that a listing
made after its pidfd was opened still shows is moved (Cgroup._held)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from grader.sandbox.isolation import Cgroup


def test_a_pid_the_group_no_longer_lists_once_held_keeps_its_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: nowhere else to move a process")
    stranger = subprocess.Popen(["sleep", "600"])   # stands for another process given a pid the group listed
    try:
        before = os.sched_getaffinity(stranger.pid)
        group = Cgroup(tmp_path)
        listings = iter([[stranger.pid], []])   # listed, then (once held) no longer the group's
        monkeypatch.setattr(group, "_listed", lambda: next(listings, []))
        assert group.move_members({cpus[0]}) == 0
        listings = iter([[stranger.pid], []])
        assert group.keep_all_to({cpus[0]}, expected=1)   # the group is empty by then: nothing left elsewhere
        assert os.sched_getaffinity(stranger.pid) == before
        # Listed again once held, it is the group's and is moved.
        listings = iter([[stranger.pid], [stranger.pid]])
        assert group.move_members({cpus[0]}) == 1
        assert os.sched_getaffinity(stranger.pid) == {cpus[0]}
    finally:
        stranger.kill()
        stranger.wait()
