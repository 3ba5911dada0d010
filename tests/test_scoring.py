"""Scoring: a pure function from case outcomes and the exercise's scoring mode to points."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import pytest

from grader.store.results import CaseResult
from grader.judge.scoring import exercise_score as score_of
from grader.judge.scoring import total

_made = itertools.count()


def case(status: str, fraction: float | None = None, weight: float = 1.0) -> CaseResult:
    if fraction is None:
        fraction = 1.0 if status == "pass" else 0.0
    return CaseResult(id=f"c{next(_made)}-{status}", status=status, visibility="public", message="",
                      fraction=fraction, weight=weight)


def exercise_score(cases: Iterable[CaseResult], points: float, scoring: str) -> float:
    """The score when every planned case has its result."""
    cases = list(cases)
    return score_of(cases, points, scoring, planned={c.id: c.weight for c in cases})


def test_proportional_gives_the_share_of_cases_passed() -> None:
    assert exercise_score([case("pass"), case("fail"), case("pass"), case("timeout")], 2, "proportional") == 1.0


def test_proportional_counts_each_case_by_its_weight() -> None:
    cases = [case("pass", weight=3), case("fail", weight=1)]
    assert exercise_score(cases, 2, "proportional") == 1.5


def test_proportional_counts_partial_credit() -> None:
    cases = [case("fail", fraction=0.5), case("pass"), case("error")]
    assert exercise_score(cases, 3, "proportional") == 1.5


def test_proportional_clamps_credit_to_between_zero_and_one() -> None:
    assert exercise_score([case("pass", fraction=2.0), case("fail", fraction=-1.0)], 2, "proportional") == 1.0


def test_proportional_score_is_rounded() -> None:
    assert exercise_score([case("pass"), case("fail"), case("fail")], 1, "proportional") == 0.3333


def test_proportional_with_only_zero_weights_scores_nothing() -> None:
    assert exercise_score([case("pass", weight=0)], 2, "proportional") == 0.0


def test_all_or_nothing_needs_every_case_to_pass() -> None:
    assert exercise_score([case("pass"), case("pass")], 2, "all_or_nothing") == 2.0
    assert exercise_score([case("pass"), case("fail", fraction=0.5)], 2, "all_or_nothing") == 0.0
    assert exercise_score([case("pass"), case("missing")], 2, "all_or_nothing") == 0.0


@pytest.mark.parametrize("scoring", ["proportional", "all_or_nothing"])
def test_zero_points_score_zero(scoring: str) -> None:
    assert exercise_score([case("pass")], 0, scoring) == 0.0


@pytest.mark.parametrize("scoring", ["proportional", "all_or_nothing"])
def test_no_cases_score_zero(scoring: str) -> None:
    assert exercise_score([], 3, scoring) == 0.0


def test_scores_accept_a_generator_of_cases() -> None:
    assert exercise_score((case(s) for s in ("pass", "fail")), 4, "proportional") == 2.0


def test_total_adds_and_rounds() -> None:
    assert total([0.1, 0.2, 1.33333]) == 1.6333
    assert total([]) == 0


@pytest.mark.parametrize("scoring", ["proportional", "all_or_nothing"])
def test_a_planned_case_without_a_result_earns_nothing(scoring: str) -> None:
    # An outcome lost on the way (a short list from the sandbox) must not raise the score: the share is
    # taken over the planned cases, not over the results given.
    passed, lost = case("pass"), case("pass")
    planned = {passed.id: 1.0, lost.id: 1.0}
    assert score_of([passed], 2, scoring, planned=planned) == (1.0 if scoring == "proportional" else 0.0)
    assert score_of([], 2, scoring, planned=planned) == 0.0


def test_a_result_for_an_unplanned_case_is_the_graders_bug() -> None:
    stray = case("pass")
    with pytest.raises(ValueError, match="not planned"):
        score_of([stray], 2, "proportional", planned={"other": 1.0})
