"""Scoring: a pure function from case outcomes and the exercise's scoring mode to points."""

from __future__ import annotations

from typing import Iterable

from grader.results import CaseResult


def exercise_score(cases: Iterable[CaseResult], points: float, scoring: str) -> float:
    """Proportional: points times the weighted share of credit. All or nothing: every case must pass."""
    cases = list(cases)
    if not cases or points <= 0:
        return 0.0
    if scoring == "all_or_nothing":
        return float(points) if all(case.status == "pass" for case in cases) else 0.0
    total_weight = sum(case.weight for case in cases)
    if total_weight <= 0:
        return 0.0
    earned = sum(case.weight * max(0.0, min(1.0, case.fraction)) for case in cases)
    return round(points * earned / total_weight, 4)


def total(scores: Iterable[float]) -> float:
    return round(sum(scores), 4)
