"""Which failing cases are "the same failure", so a report shows it once and names the other cases."""

from __future__ import annotations

from typing import Sequence

from grader.results import CaseResult


def failure_key(case: CaseResult) -> tuple[str, str]:
    """What makes two failing cases 'the same failure': the known mistake when the result names one (a fact of
    the judged case); for timeouts the status alone (where a case was stopped is a sample, not a cause); else
    the status and the whole message."""
    mistake = str(getattr(case, "mistake", "") or "")
    if mistake:
        return case.status, "mistake:" + mistake
    return (case.status, "") if case.status == "timeout" else (case.status, case.message)


def failure_groups(cases: Sequence[CaseResult]) -> list[tuple[CaseResult, list[CaseResult]]]:
    """(first case, the other cases that failed the same way), in case order."""
    groups: dict[tuple[str, str], tuple[CaseResult, list[CaseResult]]] = {}
    for case in cases:
        key = failure_key(case)
        if key in groups:
            groups[key][1].append(case)
        else:
            groups[key] = (case, [])
    return list(groups.values())
