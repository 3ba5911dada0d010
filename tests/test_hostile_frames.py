"""What student code sends the parent during a case costs that case, never the grader's time or memory.

Each test grades a real notebook (the bundled correct one with one cell appended) in a real sandbox.
"""

from __future__ import annotations

from pathlib import Path


from grader.judge.grading import grade_path, support_sources
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


# find_numbers, called from a case, writes well-formed frames to the runtime's own answer pipe (found through the
# runtime's frames, as any student can): an answer to a case that does not exist and a `loaded` frame. Each is
# 2 MB here; the same frames of 60 MB each, three per case, held a worker 38 s on a notebook that kept full marks.
NOISE_FRAMES = '''
import json as _rt_json, os as _rt_os, struct as _rt_struct, sys as _rt_sys
def _rt_frame(message):
    body = _rt_json.dumps(message).encode()
    return _rt_struct.pack(">I", len(body)) + body
_rt_find_numbers = find_numbers
def find_numbers(Pattern):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        frame = _rt_sys._getframe(1)
        while "self" not in frame.f_locals or not hasattr(frame.f_locals["self"], "response_fd"):
            frame = frame.f_back
        fd = frame.f_locals["self"].response_fd
        pad = "x" * 2_000_000
        for message in ({"op": "result", "case": "zz", "status": "ok", "value": pad},
                        {"op": "loaded", "warnings": [], "output": "", "names": [pad[:3000]]}):
            _rt_os.write(fd, _rt_frame(message))
    return _rt_find_numbers(Pattern)
'''


def test_noise_frames_written_during_a_case_cost_their_case_and_only_that_exercise(plan, tmp_path):
    path = write(tmp_path / "noise-frames.ipynb", appended(CORRECT, NOISE_FRAMES))
    result = grade_path(path, plan, support_sources(plan))
    lost = {exercise.id for exercise in result.exercises if exercise.score < exercise.max_score}
    assert lost == {"find_numbers"}
    cases = next(exercise for exercise in result.exercises if exercise.id == "find_numbers").cases
    assert all(case.status == "error" and "ProtocolError" in case.message for case in cases), cases


# Every find_numbers and replace_numbers case answers a different 1 MB string (a wrong answer each time).
UNIQUE_HUGE_ANSWERS = '''
import sys as _rt_sys
_RT_N = [0]
def _rt_big():
    _RT_N[0] += 1
    return "x" * 1_000_000 + str(_RT_N[0])
_rt_find_numbers, _rt_replace_numbers = find_numbers, replace_numbers
def find_numbers(Pattern):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        return _rt_big()
    return _rt_find_numbers(Pattern)
def replace_numbers(Pattern, Tiles):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        return _rt_big()
    return _rt_replace_numbers(Pattern, Tiles)
'''


def _kept_chars(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, tuple):
        return sum(_kept_chars(part) for part in value)
    return 0


def test_unique_huge_answers_do_not_grow_what_the_parent_keeps_per_answer(plan, tmp_path):
    """The judge keeps each distinct answer's verdict for the batch; what it keeps per answer must not grow with
    the answer (13 MB of answers here; the keys alone held all of it before)."""
    path = write(tmp_path / "unique-huge-answers.ipynb", appended(CORRECT, UNIQUE_HUGE_ANSWERS))
    result = grade_path(path, plan, support_sources(plan))
    lost = {exercise.id for exercise in result.exercises if exercise.score < exercise.max_score}
    assert lost == {"find_numbers", "replace_numbers"}
    kept = sum(_kept_chars(key) for key in plan.memo._values if key and key[0] == "verdict")
    assert 0 < kept < 100_000, kept
