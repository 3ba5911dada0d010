"""Which failing cases are "the same failure", so a report shows it once and names the other cases."""

from __future__ import annotations

from typing import Any, Sequence

from grader import codec
from grader.store.results import CaseResult


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


def alike_inputs(first: CaseResult, alike: Sequence[CaseResult]) -> list[tuple[str, Any]]:
    """The inputs of the other cases of a failure group that the first case's do not already show.

    Every failing public case shows the value of each of its inputs, also when it is folded into a group:
    `Board5Edge` and `Board3` are drawn under "and 2 more cases failed the same way", once each. A name shown
    before with another value (a generator's `state`) says which of those cases it belongs to.
    """
    shown = {(name, codec.canonical(value)) for name, value in (first.inputs or {}).items()}
    names = set((first.inputs or {}).keys())
    out: list[tuple[str, Any]] = []
    for number, case in enumerate(alike, start=1):
        if case.status == "pass":
            continue
        for name, value in (case.inputs or {}).items():
            key = (name, codec.canonical(value))
            if key in shown:
                continue
            shown.add(key)
            out.append((f"{name}, case {number} of the {len(alike)} more" if name in names else name, value))
            names.add(name)
    return out
