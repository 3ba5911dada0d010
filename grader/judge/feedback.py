"""An exercise's note on failures that share one cause, so a student reads the cause once, not once per case.

Cases are one failure when the judge found the same cause for them (CaseResult's fields, never its message read
back): the same known mistake; else the same `cause` (the kind of mismatch with its types, "expected str, got
int"; an exception without its numbers), an error's also raised at the same place. Their messages may differ in
where the mismatch is or which values it shows: the note gives the cause and a public case's message or two as
examples. Every case keeps its own message, which the reports show. A hidden case's message, cause and place are
never quoted: they show what the case was compared with, or words its input chose (see hidden_summary).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from grader.store.results import CaseResult
from grader.store.status import ERROR, FAILING, headline

EXAMPLES = 2   # public messages quoted per group, at most
LONG = 160     # characters: two examples longer than this together are one


def failure_cause(result: CaseResult) -> tuple[str, ...]:
    """What makes two failing cases one failure: see the module's docstring. A result without a cause (made
    before causes existed) is one failure with another only word for word."""
    if result.mistake:
        return result.status, "mistake", result.mistake
    if not result.cause:
        return result.status, "message", result.message, result.traceback
    if result.status == ERROR:
        return result.status, "cause", result.cause, result.where
    return result.status, "cause", result.cause


def same_failures(results: Sequence[CaseResult]) -> tuple[str, ...]:
    """One note per cause that several cases of the exercise failed by, in case order."""
    return tuple(note for note, _ in noted_groups(results))


def noted_groups(results: Sequence[CaseResult]) -> tuple[tuple[str, tuple[CaseResult, ...]], ...]:
    """same_failures' notes, each with the cases it is about: a report that draws those cases grouped says it
    already (grader.report.grouping.shown_notes)."""
    groups: dict[tuple[str, ...], list[CaseResult]] = {}
    for result in results:
        if result.status in FAILING and (result.cause or result.message):
            groups.setdefault(failure_cause(result), []).append(result)
    return tuple((_note(group), tuple(group)) for group in groups.values() if len(group) > 1)


def renoted(notes: Sequence[str], stale: Collection[str], fresh: Sequence[str]) -> tuple[str, ...]:
    """An exercise's `notes` with the same-failure notes among them that no longer hold (`stale`) replaced by
    `fresh` ones, said of other cases (the kit's settled verdicts, Gradescope's public cases), where the first
    stale note stood; the others are left out."""
    kept: list[str] = []
    placed = False
    for note in notes:
        if note not in stale:
            kept.append(note)
        elif not placed:
            kept.extend(fresh)
            placed = True
    return tuple(kept)


def _note(group: Sequence[CaseResult]) -> str:
    first = group[0]
    head = f"{len(group)} cases fail the same way"
    shown = list(dict.fromkeys(r.message for r in group if r.visibility == "public" and r.message))
    if len(shown) == 1 and all(r.message == shown[0] for r in group):
        return f"{head} ({first.status}: {shown[0]})"            # word for word: the message says it all
    cause = first.cause or "the same message"
    if not shown:    # hidden cases only: the grader's word for the failure and the rubric's advice on it
        # Never the cause or the place: both are the student's code's words (an exception's text and type, the
        # frame it names), which a hidden case can fill with its input.
        return f"{head} ({headline(first.status, first.reason)}{f'. {first.advice}' if first.advice else ''})"
    # A message ends with the advice (a known mistake's say, an error hint): one example says it once; so does
    # one long enough to be read alone (a set's differing elements).
    quoted = shown[:1 if first.advice or sum(map(len, shown[:EXAMPLES])) > LONG else EXAMPLES]
    more = f" (and {len(shown) - len(quoted)} more)" if len(shown) > len(quoted) else ""
    return f"{head} ({first.status}: {cause}), e.g. {'; '.join(quoted)}{more}"
