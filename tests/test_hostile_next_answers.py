"""An exercise's answers come from its own cases while they run, never from frames written ahead of them.

A student holding the kit knows a public case's id and input, and with a right implementation kept under another
name, its right answer: the exact bytes of the frame the runtime writes for it (the parent takes such a frame as
that answer without parsing it, process.right_answer). Graded for real: the correct Taoistic notebook plus one
cell whose graded `manhattan` is wrong on every case (-1), while the cases of `matches` (the exercise before it)
write manhattan's right-answer frames to the runtime's answer pipe: from the case itself before it returns, and
from a thread it leaves that writes them again once the case has answered, when the next exercise's first case
would be starting. Whether one request carries one exercise or several, manhattan must score nothing, and only
matches and manhattan may lose points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from grader.sandbox.process import right_answer
from grader.sandbox.wire import frame_of
from notebook_build import appended, write

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = ROOT / "rubrics" / "taoistic-search.yaml"
CORRECT = ROOT / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"

FORGE = r'''
import os as _os, sys as _sys, threading as _threading, time as _time

_FRAMES = {frames!r}


def _answer_pipe():
    frame = _sys._getframe()
    while frame is not None and not hasattr(frame.f_locals.get("self"), "response_fd"):
        frame = frame.f_back
    return None if frame is None else frame.f_locals["self"].response_fd


def _forge(fd, pause):
    _time.sleep(pause)
    for data in _FRAMES:
        try:
            _os.write(fd, data)
        except OSError:
            return


_matches = matches


def matches(*args, **kwargs):
    if _sys._getframe(1).f_code.co_filename == "<case>":
        fd = _answer_pipe()
        if fd is not None:
            {way}
    return _matches(*args, **kwargs)


def manhattan(state, goal):
    return -1
'''

WAYS = {
    "within the case": "_forge(fd, 0.0)",
    "after the case answered": "_threading.Thread(target=_forge, args=(fd, 0.002), daemon=True).start()",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, tuple[float, float]]]:
    folder = tmp_path_factory.mktemp("next-answers")
    plan = build_plan(load_rubric(RUBRIC), folder / "cache")
    frames = []
    for case in plan.cases["manhattan"]:
        right = right_answer(case.id, plan.expected[case.id].value)
        assert right is not None
        frames.append(frame_of(right[0]))
    paths = [write(folder / f"{name.replace(' ', '_')}.ipynb",
                   appended(CORRECT, FORGE.replace("{frames!r}", repr(frames)).replace("{way}", way)))
             for name, way in WAYS.items()]
    results = grade(paths, load_rubric(RUBRIC), folder / "out", jobs=2, cache=folder / "cache")
    return {result.submission.replace("_", " "): {e.id: (e.score, e.max_score) for e in result.exercises}
            for result in results}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_right_answer_frames_written_ahead_earn_a_wrong_function_nothing(graded, way):
    scores = graded[way]
    assert scores["manhattan"][0] == 0
    assert {exercise for exercise, (score, best) in scores.items() if score < best} <= {"matches", "manhattan"}
