"""Scoring: a pure function from case outcomes and the exercise's scoring mode to points."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from grader.store.results import CaseResult


def exercise_score(results: Iterable[CaseResult], points: float, scoring: str, *,
                   planned: Mapping[str, float]) -> float:
    """Proportional: points times the weighted share of credit. All or nothing: every case must pass.

    `planned` is every case of the exercise (id -> weight), and the share is taken over all of them, not over
    the results given: a case without a result earns nothing, so an outcome lost on the way can never raise a
    score. A result for a case that was not planned is the grader's bug and raises ValueError.
    """
    by_id = {result.id: result for result in results}
    unplanned = sorted(set(by_id) - set(planned))
    if unplanned:
        raise ValueError(f"results for cases that were not planned: {', '.join(unplanned)}")
    if not planned or points <= 0:
        return 0.0
    if scoring == "all_or_nothing":
        passed = all(case_id in by_id and by_id[case_id].status == "pass" for case_id in planned)
        return float(points) if passed else 0.0
    total_weight = sum(planned.values())
    if total_weight <= 0:
        return 0.0
    earned = sum(weight * max(0.0, min(1.0, by_id[case_id].fraction))
                 for case_id, weight in planned.items() if case_id in by_id)
    return round(points * earned / total_weight, 4)


def total(scores: Iterable[float]) -> float:
    return round(sum(scores), 4)
