"""The in-process time limit (grader/sandbox/alarm.py): it stops code that swallows one alarm, and it never
breaks the interpreter's hook that reports the swallowed exception (pytest's or IPython's)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.sandbox.alarm import TimeLimit, can_interrupt
from testclock import within

pytestmark = pytest.mark.skipif(not can_interrupt(), reason="needs interval timers on the main thread")


class _Stop(Exception):
    pass


def _spin(seconds: float) -> None:
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        pass


class _SwallowsTheAlarm:
    def __del__(self) -> None:
        _spin(0.3)                 # the first ring lands here; its exception is lost ("Exception ignored in")


def test_a_slow_unraisable_hook_runs_to_its_end_and_the_loop_is_still_stopped(monkeypatch: pytest.MonkeyPatch):
    reported: list[str] = []

    def slow_hook(unraisable: object) -> None:   # as pytest's hook does: format the lost exception, slowly
        _spin(0.3)                               # several repeat rings land here
        reported.append(type(getattr(unraisable, "exc_value", None)).__name__)

    monkeypatch.setattr(sys, "unraisablehook", slow_hook)
    with pytest.raises(_Stop):
        with TimeLimit(0.05, _Stop) as limit:
            _SwallowsTheAlarm()
            _spin(60)                            # only a later ring, outside the hook, ends this
    assert reported == ["_Stop"]                 # the hook saw the lost exception and was not cut short
    assert limit.expired


def test_the_hook_is_found_through_functools_partial(monkeypatch: pytest.MonkeyPatch):
    import functools
    reported: list[str] = []

    def slow_hook(unraisable: object, append: object) -> None:
        _spin(0.3)
        reported.append("done")

    monkeypatch.setattr(sys, "unraisablehook", functools.partial(slow_hook, append=None))
    with pytest.raises(_Stop):
        with TimeLimit(0.05, _Stop):
            _SwallowsTheAlarm()
            _spin(60)
    assert reported == ["done"]


def test_code_in_a_folder_whose_name_only_starts_like_the_packages_is_stopped():
    """The alarm stays quiet inside the grader's own frames. A course kept beside the package under a longer
    name (the package at /x/grader, the reference at /x/grader-course/reference.py) is not the grader's: a
    reference that never ends on a student's arguments must still be stopped at the first ring."""
    import grader
    package = Path(grader.__file__).resolve().parent
    namespace: dict[str, object] = {}
    exec(compile("def search(limit):\n    while not limit.expired:\n        pass\n    return 'ran on'\n",
                 f"{package}-course/reference.py", "exec"), namespace)
    with pytest.raises(_Stop):
        with TimeLimit(0.05, _Stop) as limit:
            namespace["search"](limit)   # type: ignore[operator]


def test_the_grader_imported_through_a_symlink_knows_its_own_frames(tmp_path: Path):
    """A frame names its file by the path its module was imported by. Installed through a symlinked folder, the
    grader's frames are not under the resolved folder, and a ring inside them (where the alarm must stay quiet, so
    that the limit is always taken down) would raise in the grader's own code."""
    import grader
    link = tmp_path / "linked"
    link.symlink_to(Path(grader.__file__).resolve().parent.parent, target_is_directory=True)
    probe = ("import grader.sandbox.alarm as alarm, grader.kit.kit as kit\n"
             "for code in (alarm.TimeLimit.__exit__.__code__, kit.build_kit.__code__):\n"
             "    assert code.co_filename.startswith(alarm.PACKAGE_FOLDERS), code.co_filename\n"
             "print('known')\n")
    environment = {**os.environ, "PYTHONPATH": str(link)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=within(120))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "known"
