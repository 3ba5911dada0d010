"""A right answer's frame is recognised by its bytes (CaseRequest.right) and judged without being parsed; any
other frame is parsed and judged as before. Each test grades a real notebook in a real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.judge.grading import grade_path, support_sources
from grader.sandbox import frames
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The case ids of the `result` frames the parent parses."""
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


# find_numbers answers right and prints: its frames carry output, so they are parsed, and the output is kept.
CHATTY = '''
_right_find_numbers = find_numbers
def find_numbers(Pattern):
    print("looking")
    return _right_find_numbers(Pattern)
'''


def test_a_right_answer_that_prints_is_parsed_and_keeps_its_output(plan, parsed, tmp_path):
    path = write(tmp_path / "chatty.ipynb", appended(CORRECT, CHATTY))
    result = grade_path(path, plan, support_sources(plan))
    assert result.total == result.max_total
    cases = next(exercise for exercise in result.exercises if exercise.id == "find_numbers").cases
    assert all(case.status == "pass" and case.output == "looking\n" for case in cases), cases
    assert {case.id for case in cases} <= set(parsed)
