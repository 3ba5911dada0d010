"""What student code sends the parent during a case costs that case, never the grader's time or memory.

Each test grades a real notebook (the bundled correct one with one cell appended) in a real sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def _costs_find_numbers_alone(plan, path: Path) -> None:
    """The notebook at `path` (its find_numbers writes frames during its cases) loses find_numbers' cases, each
    a ProtocolError, and nothing else."""
    result = grade_path(path, plan, support_sources(plan))
    lost = {exercise.id for exercise in result.exercises if exercise.score < exercise.max_score}
    assert lost == {"find_numbers"}
    cases = next(exercise for exercise in result.exercises if exercise.id == "find_numbers").cases
    assert all(case.status == "error" and "ProtocolError" in case.message for case in cases), cases


def test_noise_frames_written_during_a_case_cost_their_case_and_only_that_exercise(plan, tmp_path):
    _costs_find_numbers_alone(plan, write(tmp_path / "noise-frames.ipynb", appended(CORRECT, NOISE_FRAMES)))


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


# find_numbers, called from a case, writes one prebuilt `progress` frame (600 kB: the most statement numbers a
# frame may hold) to the runtime's answer pipe again and again. The runtime says `progress` only while it loads:
# ignored during a case, each one cost the parent its parsing (6.5 s of the parent's CPU to the wall backstop for
# 0.05 s of the case's, and on a busy machine the parent's waiting for a CPU made the case "starved").
PROGRESS_FLOOD = '''
import json as _rt_json, os as _rt_os, struct as _rt_struct, sys as _rt_sys
_rt_body = _rt_json.dumps({"op": "progress", "index": 0, "left_out": [99_999] * 99_999}).encode()
_RT_FLOOD = _rt_struct.pack(">I", len(_rt_body)) + _rt_body
_rt_find_numbers = find_numbers
def find_numbers(Pattern):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        frame = _rt_sys._getframe(1)
        while "self" not in frame.f_locals or not hasattr(frame.f_locals["self"], "response_fd"):
            frame = frame.f_back
        fd = frame.f_locals["self"].response_fd
        while True:
            _rt_os.write(fd, _RT_FLOOD)
    return _rt_find_numbers(Pattern)
'''


def test_frames_of_a_load_written_during_a_case_cost_their_case(plan, tmp_path):
    _costs_find_numbers_alone(plan, write(tmp_path / "progress-flood.ipynb", appended(CORRECT, PROGRESS_FLOOD)))


@pytest.mark.parametrize("frame", [{"op": "progress", "index": 0}, {"op": "exited", "status": 0}])
def test_frames_written_between_exercises_are_not_read_on(monkeypatch, frame):
    """Between two exercises the fork runs the pristine check, and student code can run there (numpy.geterr,
    replaced at load, which the check calls): after its `exited`, where only the next fork's `forked` may come.
    Its frames were read and parsed until the runtime's own deadline (RUNTIME_SECONDS of the parent's CPU per
    exercise, the child paying nothing). Now the first one has the child replaced (the second `exited`: the
    runtime reports a fork's death there once); the next exercise runs."""
    import time

    from grader import codec
    from grader.sandbox import process
    from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

    source = ("import json, numpy, os, struct, sys\n_real = numpy.geterr\n"
              "_child = sys._getframe(1).f_locals['self']\n"
              f"_body = json.dumps({frame!r}).encode()\n"
              "_frame = struct.pack('>I', len(_body)) + _body\n"
              "def _flood():\n    count = __import__('codecs').__dict__.setdefault('x_calls', [0])\n"
              "    count[0] += 1\n    if count[0] == 2:\n        for _ in range(3000):\n"
              "            os.write(_child.response_fd, _frame)\n    return _real()\n"
              "numpy.geterr = _flood\ndef quick():\n    return 7\n")
    parsed: list[bytes] = []
    real = process._parsed

    def counted(body: bytes, bounds):
        parsed.append(body)
        return real(body, bounds)

    monkeypatch.setattr(process, "_parsed", counted)
    statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    with Sandbox(statements, {}, ProcessLimits(load_seconds=5)) as sandbox:
        sandbox.load(time.monotonic() + 60)
        [first] = sandbox.run_exercise([CaseRequest("c1", "quick()")], (), lambda *a: None, time.monotonic() + 60)
        [second] = sandbox.run_exercise([CaseRequest("c2", "quick()")], (), lambda *a: None, time.monotonic() + 60)
    assert first.status == second.status == "ok" and codec.decode(second.value) == 7
    assert sum(body == json.dumps(frame, separators=(",", ":")).encode() or body == json.dumps(frame).encode()
               for body in parsed) <= 4, len(parsed)   # each exercise's own, and one of the flood


def test_frames_written_by_a_statement_of_the_load_have_it_left_out(monkeypatch):
    """While the runtime loads, it says which statement it starts and then `loaded`, nothing else. A top-level
    statement writing other frames had the parent read and parse them until the load's budget ran out (10 s of
    its CPU per attempt, once for each such statement); now the first one has that statement left out, as if it
    hung, and the load goes on without it."""
    import time

    from grader import codec
    from grader.sandbox import frames
    from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

    flood = ("import json, os, struct, sys\n_fd = sys._getframe(1).f_locals['self'].response_fd\n"
             "_body = json.dumps({'op': 'done'}).encode()\n"
             "for _ in range(3000):\n    os.write(_fd, struct.pack('>I', len(_body)) + _body)\nflooded = True\n")
    statements = [{"code": source, "filename": f"In [{n}] (cell {n})", "line": 1, "kind": kind}
                  for n, (source, kind) in enumerate([(flood, "other"), ("def f():\n    return 7\n", "def")], 1)]
    parsed: list[bytes] = []
    real = frames.parse

    def counted(message, bounds):
        parsed.append(message)
        return real(message, bounds)

    monkeypatch.setattr(frames, "parse", counted)
    with Sandbox(statements, {}, ProcessLimits(load_seconds=5)) as sandbox:
        report = sandbox.load(time.monotonic() + 60)
        [outcome] = sandbox.run_exercise([CaseRequest("c1", "f()")], (), lambda *a: None, time.monotonic() + 60)
    assert sum(message == {"op": "done"} for message in parsed) <= 1, len(parsed)
    assert outcome.status == "ok" and codec.decode(outcome.value) == 7
    assert any("In [1]" in warning.shown and "left out" in warning.shown for warning in report.warnings), report
