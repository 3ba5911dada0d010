"""Which failing cases are "the same failure", so a report shows it once and names the other cases.

Cases are one failure when the judge found the same cause for them: judge.feedback.failure_cause, the facts of
the verdict (the known mistake, else the cause, an error's with where it was raised), never its message read
back; the exercise's note on repeated failures groups by the same key. Cases of a group may differ in where the
mismatch is or which values it shows: the first is drawn in full and each other case keeps its own message.
"""

from __future__ import annotations

from typing import Any, Sequence

from grader import codec
from grader.report import boards
from grader.judge.feedback import failure_cause, noted_groups
from grader.store.results import CaseResult, ExerciseResult
from grader.store.status import TIMEOUT, limit_note


def failure_key(case: CaseResult) -> tuple[str, ...]:
    """What makes two failing cases 'the same failure': the judge's failure_cause; a timeout stored before causes
    existed by its status alone (where a case was stopped is a sample, not a cause)."""
    if case.status == TIMEOUT and not case.cause and not case.mistake:
        return (case.status,)
    return failure_cause(case)


def failure_groups(cases: Sequence[CaseResult]) -> list[tuple[CaseResult, list[CaseResult]]]:
    """(first case, the other cases that failed the same way), in case order."""
    groups: dict[tuple[str, ...], tuple[CaseResult, list[CaseResult]]] = {}
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


def group_cause(first: CaseResult, alike: Sequence[CaseResult]) -> str:
    """The cause a group shares, to say beside 'failed the same way' when its messages differ ("" when they are
    word for word the first's: its message says it all)."""
    if all(case.message == first.message for case in alike):
        return ""
    return first.cause or (f"the known mistake {first.mistake}" if first.mistake else "")


def own_messages(first: CaseResult, alike: Sequence[CaseResult]) -> list[tuple[CaseResult, str]]:
    """The other cases of a group whose message (with a timeout's limit, store.status.limit_note) is not the
    first's, each with what to show beside its call: its own message, so every case's detail stays in the report,
    without the advice the first case's message has just given (a known mistake's `say`, an error hint): the
    case's `detail` (store.results.advised), read as a field. A case stored before it existed shows its whole
    message."""
    said = first.message + limit_note(first.status, first.limit)
    shown = []
    for case in alike:
        if not case.message or case.message + limit_note(case.status, case.limit) == said:
            continue
        text = case.detail if case.detail and case.advice == first.advice else case.message
        shown.append((case, text + limit_note(case.status, case.limit)))
    return shown


def shown_notes(exercise: ExerciseResult, drawn: Sequence[CaseResult]) -> tuple[str, ...]:
    """The exercise's notes a report still needs when it draws `drawn` grouped (failure_groups): the judge's note
    on cases that failed the same way (judge.feedback.same_failures) quotes the messages the group of a drawn case
    shows right below it, so it is left out; one about cases the report does not draw (hidden ones) stays."""
    ids = {case.id for case in drawn}
    said = {note for note, group in noted_groups(exercise.cases) if any(case.id in ids for case in group)}
    return tuple(note for note in exercise.notes if note not in said) if said else exercise.notes


def listed(alike: Sequence[CaseResult], own: Sequence[tuple[CaseResult, str]]) -> Sequence[CaseResult]:
    """The cases of a group to name after "and n more cases failed the same way": all of them, unless each is
    shown below with its own message (own_messages), which names it there."""
    return () if len(own) == len(alike) else alike


# A one-line input longer than this is written once a report, then named (a word list of the course, WORDS: 213
# words were 2,000 characters under each exercise that failed on it, a real dictionary up to boards.INPUT_CHARS).
LONG_INPUT = 200


def shown_before(name: str, value: Any, drawn: dict[tuple[str, str], str], exercise: str, *,
                 name_boards: bool = True) -> str:
    """How a failing case's input is named when this report drew it already (by name and value: `Start` fails
    find_tile, manhattan and extract_move alike; a word list every exercise uses): "" when it is drawn here (and
    now counts as drawn, under `exercise`), else "as shown above" / "as drawn above, under find_tile". Only a
    board or a long line is named (a short line is cheaper to read again than to look up), and a board only with
    `name_boards`: the Markdown and HTML pages draw each section's boards in it (a section is linked to and read
    alone; a board is a few lines), the terminal's check, read top to bottom, draws one once."""
    lines = boards.input_lines(name, value)
    key = (name, codec.canonical(value))
    long_line = len(lines) == 1 and sum(len(text) for text, _ in lines[0]) > LONG_INPUT
    if key in drawn and (long_line or name_boards and len(lines) > 1):
        where = "" if drawn[key] == exercise else f", under {drawn[key]}"
        return f"as {'drawn' if len(lines) > 1 else 'shown'} above{where}"
    drawn.setdefault(key, exercise)
    return ""
