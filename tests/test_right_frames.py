"""A right answer's frame is recognised by its bytes (CaseRequest.right) and judged without being parsed; any
other frame is parsed and judged as before. Each test grades a real notebook in a real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.judge.grading import grade_path, support_sources
from grader.kept import SizedMemo
from grader.sandbox import frames, process, wire
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The case ids of the `result` frames the parent parses (none heard before: the worker's memo starts empty)."""
    monkeypatch.setattr(process, "_HEARD", SizedMemo(process._HEARD.limit))
    seen: list[str] = []
    parse = frames.parse

    def counted(message, *bounds):
        typed = parse(message, *bounds)
        if isinstance(typed, frames.Result):
            seen.append(typed.case)
        return typed
    monkeypatch.setattr(frames, "parse", counted)
    return seen


def test_right_answers_to_equal_cases_are_judged_from_their_bytes(plan, parsed):
    result = grade_path(CORRECT, plan, support_sources(plan))
    assert result.total == result.max_total
    by_bytes = {case.id for exercise in plan.rubric.exercises for case in plan.cases[exercise.id]
                if case.check.name == "equal" and not case.probe}
    assert len(by_bytes) > 100
    assert not by_bytes & set(parsed), "a right answer to an equal case was parsed"
    assert parsed, "the path-checked cases (search, main) are parsed and checked"


def test_a_result_frame_heard_before_is_not_parsed_again_and_judged_the_same(plan, parsed):
    first = grade_path(CORRECT, plan, support_sources(plan))
    checked = set(parsed)
    parsed.clear()
    second = grade_path(CORRECT, plan, support_sources(plan))
    assert checked and not parsed, "the path-checked cases' frames, the same bytes again, were parsed again"

    def verdicts(result):
        return [(case.id, case.status, case.fraction, case.message, case.got, case.output)
                for exercise in result.exercises for case in exercise.cases]
    assert verdicts(second) == verdicts(first)


def test_the_frames_around_each_exercise_are_read_from_their_bytes_and_never_kept(plan, monkeypatch):
    """Every exercise request is framed by the fork's `forked` and `exited` (26 requests a Taoistic notebook): read
    from their bytes as the runtime writes them (process._framing), never parsed, and never kept among the result
    frames heard before (in rlimits mode a fork's pid is the host's, another for every fork: kept, they pushed the
    result frames out). Judged the same."""
    monkeypatch.setattr(process, "_HEARD", SizedMemo(process._HEARD.limit))
    ops: list[str] = []
    parse = frames.parse

    def counted(message, *bounds):
        ops.append(message.get("op"))
        return parse(message, *bounds)
    monkeypatch.setattr(frames, "parse", counted)
    framed: list[object] = []
    framing = process._framing

    def read(body):
        found = framing(body)
        framed.append(found)
        return found
    monkeypatch.setattr(process, "_framing", read)
    first = grade_path(CORRECT, plan, support_sources(plan))
    second = grade_path(CORRECT, plan, support_sources(plan))
    assert "exited" not in ops and "forked" not in ops, ops
    assert sum(isinstance(message, frames.Forked) for message in framed) >= 2 * 13
    assert sum(isinstance(message, frames.Exited) for message in framed) >= 2 * 13
    assert not any(key.startswith(process._FRAMING_HEADS) for key in process._HEARD._values)
    assert [(c.id, c.status, c.got) for e in second.exercises for c in e.cases] == \
        [(c.id, c.status, c.got) for e in first.exercises for c in e.cases]


@pytest.mark.parametrize("body", [
    b'{"op":"forked","pid":2}', b'{"op":"forked","pid":0}', b'{"op":"forked","pid":4194304}',
    b'{"op":"forked","pid":4194305}', b'{"op":"forked","pid":99999999}', b'{"op":"forked","pid":-1}',
    b'{"op":"forked","pid":07}', b'{"op":"forked","pid":2.0}', b'{"op":"forked", "pid":2}',
    b'{"op":"forked","pid":2,"pid":3}', b'{"op":"forked","pid":"2"}', b'{"op":"forked","pid":2}x',
    b'{"op":"exited","status":0}', b'{"op":"exited","status":-0}', b'{"op":"exited","status":-1024}',
    b'{"op":"exited","status":1024}', b'{"op":"exited","status":1025}', b'{"op":"exited","status":-1025}',
    b'{"op":"exited","status":87}', b'{"op":"exited","status":00}', b'{"op":"exited","status":1e2}',
    b'{"op":"exited","status":0,"pid":2}', b'{"op":"exited","status":true}'])
def test_a_framing_frame_read_from_its_bytes_is_what_parsing_it_gives(body):
    """Whatever the child writes (these frames are student code's too), the bytes read as the parser reads them:
    the same message, or left to the parser, which refuses what does not fit."""
    read = process._framing(body)
    try:
        parsed = frames.parse(wire.parse_body(body), frames.Bounds())
    except (frames.Invalid, wire.FrameError):
        assert read is None   # refused by the parser: never taken from its bytes either
        with pytest.raises((frames.Invalid, wire.FrameError)):
            process._parsed(body, frames.Bounds())
        return
    assert read is None or read == parsed
    assert process._parsed(body, frames.Bounds()) == parsed


def test_the_memo_of_heard_frames_keeps_no_more_than_its_bytes():
    memo: SizedMemo[bytes, int] = SizedMemo(10)
    memo.put(b"a", 1, 4)
    memo.put(b"b", 2, 4)
    memo.put(b"c", 3, 4)          # the oldest goes to make room
    assert (memo.get(b"a"), memo.get(b"b"), memo.get(b"c"), memo.size) == (None, 2, 3, 8)
    memo.put(b"d", 4, 11)         # larger than the whole: not kept, nothing lost for it
    assert (memo.get(b"d"), len(memo), memo.size) == (None, 2, 8)


# replace_numbers (an `equal` exercise: right answers have right frames) answers right and prints: its frames carry
# output, so they are parsed, and the output is kept.
CHATTY = '''
_right_replace_numbers = replace_numbers
def replace_numbers(Pattern, Tiles):
    print("looking")
    return _right_replace_numbers(Pattern, Tiles)
'''


def test_a_right_answer_that_prints_is_parsed_and_keeps_its_output(plan, parsed, tmp_path):
    path = write(tmp_path / "chatty.ipynb", appended(CORRECT, CHATTY))
    result = grade_path(path, plan, support_sources(plan))
    assert result.total == result.max_total
    cases = next(exercise for exercise in result.exercises if exercise.id == "replace_numbers").cases
    assert all(case.status == "pass" and case.output == "looking\n" for case in cases), cases
    assert {case.id for case in cases} <= set(parsed)


# Right answers that print (non-ASCII too): made from their template, bounded and measured where they are made.
CHATTY_WIDE = '''
_right_replace_numbers = replace_numbers
def replace_numbers(Pattern, Tiles):
    print("\\U0001F600 é")
    return _right_replace_numbers(Pattern, Tiles)
'''


def test_a_right_answer_measured_where_it_is_made_is_never_measured_below_its_json(plan, tmp_path):
    import json

    from grader import textsafe
    from grader.store.results import _case_dict, _known_size, _size_at_most, to_dict
    path = write(tmp_path / "chatty-wide.ipynb", appended(CORRECT, CHATTY_WIDE))
    result = grade_path(path, plan, support_sources(plan))
    cases = [case for exercise in result.exercises for case in exercise.cases]
    sized = [case for case in cases if _known_size(case) is not None]
    assert len(sized) > 100 and any(case.output for case in sized)
    for case in sized:   # in ASCII, as a result holding a lone surrogate is written
        assert _known_size(case) >= len(json.dumps(_case_dict(case), ensure_ascii=True, separators=(",", ":")))
    assert _size_at_most(result) >= len(textsafe.json_text(to_dict(result), separators=(",", ":")))
    assert _size_at_most(result) >= len(json.dumps(to_dict(result), ensure_ascii=True, separators=(",", ":")))

