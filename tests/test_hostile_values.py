"""The parent's price for an answer to a value check is bounded by what a right or known-wrong answer could be.

Within the codec's bounds (200,000 items, 8 million characters) the child chooses its answer's size, and the parent
decoded and compared all of it, once for the case and again for each known mistake and accepted variant: a
sliding-3x3 nextStates answered with 19,000 10-deep lists cost 2.4 s of the parent's CPU a case. An answer whose
canonical text (made anyway, for the memo key) is far longer than every known answer of its case cannot equal any
of them: it fails before it is read (grading.TOO_LARGE). Within the bound, a set's unmatched elements are paired
for a tolerant comparison only when their outermost nodes could be equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grader import codec
from grader.judge import grading
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.sandbox.process import Outcome
from grader.store import status

REPO = Path(__file__).resolve().parents[1]
SLIDING = REPO / "rubrics" / "sliding-3x3.yaml"


@pytest.fixture(scope="module")
def next_states(tmp_path_factory: pytest.TempPathFactory):
    """sliding-3x3's nextStates (equal, a list read as a set, one known mistake) and its first case."""
    plan = build_plan(load_rubric(SLIDING), tmp_path_factory.mktemp("plan"))
    exercise = next(e for e in plan.rubric.exercises if e.id == "nextStates")
    case = next(c for c in plan.cases["nextStates"] if c.check.options.get("sequence_as_set"))
    assert exercise.mistakes and dict(plan.expected[case.id].mistakes)
    return plan, exercise, case


def _judged(plan, exercise, case, got):
    return grading.judge(plan, exercise, case, Outcome(case.id, "ok", value=got, seconds=0.5))


def test_an_answer_far_larger_than_any_known_one_fails_unread(next_states, monkeypatch):
    plan, exercise, case = next_states
    got = codec.encode([[[[[[[[[[i]]]]]]]]] for i in range(19_000)])
    read: list[str] = []
    decode = codec.decode
    monkeypatch.setattr(codec, "decode", lambda wire, *a, **k: read.append("decoded") or decode(wire, *a, **k))
    result = _judged(plan, exercise, case, got)
    assert (result.status, result.reason, result.cause) == ("fail", status.WRONG, grading.TOO_LARGE)
    assert result.fraction == 0.0 and not result.mistake
    # Its own size, and nothing of the expected value's or the mistake's (not even their sizes).
    assert result.message == (f"the answer is {len(codec.canonical(got)):,} characters of data, far more than any "
                              "right answer to this case: it was not compared")
    assert read == []                 # the answer was never read
    assert grading.judge_variants(plan, exercise, case, Outcome(case.id, "ok", value=got), result) == {}


def test_wrong_answers_of_a_right_answers_size_are_still_compared_and_explained(next_states):
    plan, exercise, case = next_states
    right = codec.decode(plan.expected[case.id].value)
    wrong = [*right, *(((i, i, i), (i, i, i), (i, i, i)) for i in range(60))]   # 63 states: within the floor
    result = _judged(plan, exercise, case, codec.encode(wrong))
    assert result.status == "fail" and result.cause != grading.TOO_LARGE
    assert f"got {len(wrong)}" in result.message
    mistaken = dict(plan.expected[case.id].mistakes)["nextStates_wrapping"]
    result = _judged(plan, exercise, case, mistaken)
    assert result.mistake == "nextStates_wrapping"


def _numpy_spelled(value):
    """`value` with every number a numpy scalar of its kind: the longest spelling `equal` reads as the value."""
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.uint64(value) if value >= 0 else np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_numpy_spelled(item) for item in value)
    return value


_NUMBERS = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False))
_VALUES = st.recursive(_NUMBERS, lambda inner: st.one_of(st.lists(inner, max_size=12),
                                                         st.lists(inner, max_size=12).map(tuple)), max_leaves=200)


@settings(deadline=None, max_examples=300)
@given(_VALUES)
def test_every_spelling_of_a_right_answer_is_within_the_bound(value):
    """The factor leaves twice the largest blow-up: a numpy uint64 `1` where the expected list has `1`."""
    plain = len(codec.canonical(codec.encode(value)))
    spelled = len(codec.canonical(codec.encode(_numpy_spelled(value))))
    assert spelled <= 16 * plain + 32
    assert spelled <= max(grading.ANSWER_TEXT_FLOOR, grading.ANSWER_TEXT_FACTOR * plain)


def test_a_sets_leftover_elements_are_paired_only_where_they_could_be_equal(monkeypatch):
    """Three missing states beside 1,700 ints: each pair of a state and an int was compared in full (a description
    of both for the message nobody reads), 5,100 of them; a float within tolerance is still matched."""
    calls: list[int] = []
    compare = codec._compare
    monkeypatch.setattr(codec, "_compare", lambda *a: calls.append(1) or compare(*a))
    states = {((0, 1, 2), (3, 4, 5), (6, 7, i)) for i in (8, 9, 10)}
    message = codec.same(codec.encode(states), codec.encode(set(range(1_700))))
    assert message is not None and "expected a set of 3 elements, got 1700" in message
    assert len(calls) == 1
    assert codec.same(codec.encode({(1, 0.5), (2, 0.25)}), codec.encode({(1, 0.5000001), (2, 0.25)}), 1e-3) is None
