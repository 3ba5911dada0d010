"""Terminal views of results: the TA's class table and the student's self-check report."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from grader.report import boards
from grader.report.grouping import (alike_inputs, failure_groups, group_cause, listed, own_messages, shown_before,
                                    shown_notes)
from grader.store.gradebook import ScoreRow
from grader.store.results import CaseResult, SubmissionResult
from grader import codec
from grader.store.status import COLOURS, FAILING, SYMBOLS, alike_words, limit_note, machine_busy
from grader.textsafe import one_line, terminal

if TYPE_CHECKING:
    from grader.run.batch import Batch

MARKS = {status: (SYMBOLS[status], COLOURS[status]) for status in SYMBOLS}


def _score(value: float) -> str:
    """A score as the table shows it: one decimal, more where one would read as a whole number (2.0294 was "2.0"
    beside a full 2, and 29.97 of 30 was "30.0/30")."""
    if value == int(value):
        return f"{value:g}"
    for digits in (1, 2, 3):
        text = f"{value:.{digits}f}"
        if text.rstrip("0")[-1] != ".":
            return text
    return f"{value:g}"


def print_rows(rows: Sequence[ScoreRow], console: Console | None = None, reasons: Mapping[str, str] | None = None,
               overridden: Sequence[SubmissionResult] = ()) -> None:
    """The class table from score rows (what a batch keeps), which submissions could not be read and why
    (`reasons`: student -> the result's first warning), and the students whose exported scores are not the
    table's automatic ones (`overridden`: their results with the TA overrides in force applied)."""
    console = console or Console()
    exercises = list(rows[0].scores) if rows else []
    numbered = len(exercises) > 6
    legend = "  ".join(f"{n}={e}" for n, e in enumerate(exercises, start=1)) if numbered else None
    table = Table(title="Scores", caption=legend, caption_justify="left", pad_edge=False, box=box.SIMPLE_HEAD,
                  collapse_padding=True)
    table.add_column("submission", no_wrap=True, overflow="ellipsis", max_width=22)
    for number, exercise in enumerate(exercises, start=1):
        table.add_column(str(number) if numbered else exercise, justify="right", no_wrap=True)
    table.add_column("total", justify="right", style="bold", no_wrap=True, min_width=7)
    late = any(row.late for row in rows)
    if late:   # the late policy's penalty, apart from the score (as the CSV's late_penalty)
        table.add_column("late", justify="right", no_wrap=True)
    for row in rows:
        cells = []
        for exercise in exercises:
            score = row.scores.get(exercise)
            cells.append(Text("" if score is None else _score(score),
                              style="red" if not score else ""))
        more = [f"−{_score(row.penalty)}" if row.penalty else "late" if row.late else ""] if late else []
        table.add_row(Text(terminal(row.student)), *cells,
                      f"{_score(row.total)}/{_score(row.max_total)}", *more)
    console.print(table)
    reasons = reasons or {}
    for row in rows:
        if row.state != "graded":
            why = reasons.get(row.student)
            console.print(Text.assemble((one_line(row.student), "yellow"), f": {row.state}: {one_line(why)}" if why
                                        else f": {row.state} (the reason is in its JSON result)"), highlight=False,
                          soft_wrap=True)   # one line each, never wrapped: a log is grepped by student
    for result in overridden:   # the CSV, Gradescope and the reports have these scores, not the table's
        from grader.store.overrides import describe
        automatic = result.extra.get("automatic_total", result.total)
        console.print(Text.assemble((one_line(result.submission), "yellow"),
                                    f": {_score(result.total)}/{_score(result.max_total)} with TA overrides "
                                    f"(automatic {_score(automatic)}): {one_line('; '.join(describe(result)))}"),
                      highlight=False, soft_wrap=True)


def student_console() -> Console:
    """The student's terminal: its own width; outside a terminal (a log, a pipe, an editor's output pane) lines
    are never wrapped, so no continuation line loses its indentation."""
    return Console() if sys.stdout.isatty() else Console(soft_wrap=True, width=10_000)


def student_report(result: SubmissionResult, hidden: Mapping[str, int], console: Console | None = None) -> bool:
    """The self-check: every public case, hidden ones only counted. Returns whether all public cases pass.

    A failing case whose values are puzzle states also gets them drawn as boards, expected beside got, the
    differing cells in [brackets] (and red where the terminal has colour). Cases that failed the same way
    (same status, same known mistake or same message) are shown once, with the others named. The last line
    is always one summary line.
    """
    console = console or student_console()
    failing: list[str] = []
    unverified_total = problems_total = busy_total = 0
    drawn_inputs: dict[tuple[str, str], str] = {}    # each input drawn so far -> the exercise it was drawn under
    console.print(f"[bold]{escape(terminal(result.submission))}[/] — public cases of {escape(result.rubric)}")
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(terminal(warning.shown))}", highlight=False)
    for exercise in result.exercises:
        public = [c for c in exercise.cases if c.visibility == "public"]
        passed = sum(c.status == "pass" for c in public)
        unverified = sum(c.status == "unverified" for c in public)
        unverified_total += unverified
        ok = not any(c.status in FAILING for c in public)
        # Not judged: the rubric's fault (tell the instructor) or the machine's (run the check again), never the
        # student's; a busy case is not a "grader problem" to report: nothing is wrong but this machine's load.
        busy = sum(machine_busy(c.status, c.reason) for c in public)
        problems = sum(c.status == "problem" for c in public) - busy
        problems_total += problems
        busy_total += busy
        if not ok:
            failing.append(exercise.id)
        # A tick means something passed here: an exercise whose public cases all wait for submission gets "?".
        mark, style = ("✓", "green") if ok and passed else ("?", "yellow") if ok else ("✗", "red")
        line = f"[{style}]{mark}[/] {escape(exercise.id)}: {passed}/{len(public)} public cases pass"
        if unverified:
            line += f", {unverified} checked after submission"
        if problems:
            line += f", {problems} not judged (a grader problem, not your mistake: tell your instructor)"
        if busy:
            line += f", {busy} not judged (this machine was too busy, not your mistake: run the check again)"
        if hidden.get(exercise.id):
            count = hidden[exercise.id]
            line += f"; {count} hidden case{'s' if count != 1 else ''}, results after grading"
        console.print(line, highlight=False)
        # Every case passing: no hints among the notes, only what the student should know (an accepted variant
        # and why it is discouraged, helpers judged with the reference's, a global the code reads).
        complete = all(case.status == "pass" for case in exercise.cases)
        drawn = [c for c in public if c.status != "pass"]
        for note in shown_notes(exercise, drawn):
            if not ok or complete or exercise.globals_read:
                console.print(f"    note: {terminal(note)}", highlight=False, markup=False)
        for first, alike in failure_groups(drawn):
            _print_case(console, first, drawn_inputs, exercise.id)
            if alike:
                cause = group_cause(first, alike)
                own = own_messages(first, alike)
                names = ", ".join(terminal(c.call or c.id) for c in listed(alike, own))
                console.print(f"      and {len(alike)} more case{'s' if len(alike) != 1 else ''} "
                              f"{alike_words(first.status)}{f' ({terminal(cause)})' if cause else ''}:"
                              + (f" {names}" if names else ""), highlight=False, markup=False)
                for other, text in own:
                    console.print(f"        {terminal(other.call or other.id)}: {terminal(text)}",
                                  highlight=False, markup=False)
                _print_inputs(console, alike_inputs(first, alike), drawn_inputs, exercise.id)
    console.print(summary_line(len(result.exercises), failing, unverified_total, sum(hidden.values()),
                               problems_total, busy_total), highlight=False)
    return not failing


def summary_line(exercises: int, failing: list[str], unverified: int, hidden: int, problems: int = 0,
                 busy: int = 0) -> str:
    """The closing line of a self-check, in every case: what failed, or that nothing public did; and what could not
    be judged, apart: a grader problem (tell the instructor) from a busy machine (run the check again)."""
    later = f"{hidden} hidden case{'s' if hidden != 1 else ''} are graded after submission." if hidden else \
        "Hidden cases are graded after submission."
    again = (f"{busy} public case{'s' if busy != 1 else ''} could not be judged because this machine was too busy "
             f"(not your mistake): run the check again when it is less busy. ") if busy else ""
    if failing:
        names = ", ".join(failing[:6]) + (f" and {len(failing) - 6} more" if len(failing) > 6 else "")
        return (f"[red]✗ {len(failing)} of {exercises} exercises have failing public cases:[/] {escape(names)}. "
                + again + later)
    if problems:   # never "all pass" when the grader could not judge some: they are not the student's mistake
        return (f"[green]No public case failed;[/] {problems} could not be judged because of a grader problem "
                f"(not your mistake). " + again + later)
    if busy:
        return "[yellow]No public case failed so far;[/] " + again + later
    if unverified:
        return f"[green]✓ No public case failed;[/] {unverified} can only be checked after submission. " + later
    return "[green]✓ All public cases pass.[/] " + later


CASE_INDENT = 6
OUTPUT_LINES = 4              # printed output shown per failing case; the rest is counted
OUTPUT_CHARS = 400


def folded_output(text: str) -> str:
    """What a case printed, folded: its first lines, and how many more there were."""
    lines = text.rstrip("\n").splitlines() or [""]
    shown = "\n".join(lines[:OUTPUT_LINES])
    if len(shown) > OUTPUT_CHARS:
        shown = shown[:OUTPUT_CHARS] + " ..."
    more = len(lines) - OUTPUT_LINES
    return shown + (f"\n... ({more} more line{'s' if more != 1 else ''} printed)" if more > 0 else "")


def _print_inputs(console: Console, inputs: list[tuple[str, Any]], drawn: dict[tuple[str, str], str],
                  exercise: str) -> None:
    """Each input of a failing case, a board where it is a state. An input drawn already in this report is named,
    not drawn again (grouping.shown_before); `drawn` maps each drawn input to the exercise it was drawn under."""
    pad = " " * CASE_INDENT
    for name, value in inputs:
        named = shown_before(name, value, drawn, exercise)
        if named:
            console.print(f"{pad}{terminal(name)}: {terminal(named)}", highlight=False, markup=False)
            continue
        for segments in boards.input_lines(name, value):
            parts = [(text, style) if style else text for text, style in segments]
            console.print(Text(pad).append_text(Text.assemble(*parts)), highlight=False, soft_wrap=True)


def _print_case(console: Console, case: CaseResult, drawn: dict[tuple[str, str], str], exercise: str) -> None:
    """One failing public case: call, message, expected and got (as boards when they are puzzle states,
    else one line each), its inputs (_print_inputs), traceback and printed output."""
    pad = " " * CASE_INDENT
    lines = [f"    {MARKS[case.status][0]} {case.call}"]
    if machine_busy(case.status, case.reason):
        # The grader's message says how long the kernel kept it waiting: in a self-check, what to do about it.
        lines.append(pad + "not judged: this machine was too busy to run it in time (not your mistake); run the "
                           "check again when it is less busy")
    elif case.message:
        lines.append(pad + case.message + limit_note(case.status, case.limit))
    comparison = boards.compare(case.expected, case.got, path=case.path_answer) if case.status == "fail" else None
    if comparison is not None and not comparison.drawn:
        lines.append(f"{pad}expected: {codec.describe(case.expected, 400)}")
        lines.append(f"{pad}got:      {codec.describe(case.got, 400)}")
    console.print(terminal("\n".join(lines)), highlight=False, markup=False)
    _print_inputs(console, list(case.inputs.items()), drawn, exercise)
    if comparison is not None:
        if comparison.drawn:
            width = max((console.width or 80) - CASE_INDENT, 40)
            for segments in boards.comparison_lines(comparison, width):
                safe = [(terminal(text), style) if style else terminal(text) for text, style in segments]
                console.print(Text(pad).append_text(Text.assemble(*safe)), highlight=False, soft_wrap=True)
    lines = []
    if case.traceback and case.status == "error":
        lines.extend(pad + line for line in case.traceback.splitlines()[-6:])
    if case.output:
        lines.append(pad + "output: " + folded_output(case.output).replace("\n", "\n" + pad + "        "))
    if lines:
        console.print(terminal("\n".join(lines)), highlight=False, markup=False)


def table_notes(batch: Batch, not_graded: Collection[str]) -> tuple[dict[str, str], list[SubmissionResult]]:
    """Why each of `not_graded` was not (its result's first warning: "export.zip:x.ipynb: empty file"), and the
    results of this batch's students that TA overrides change (what the CSV and reports show, not the table's
    automatic scores). Only those students' results are read: a class of 10,000 reads none when all are graded
    and nobody has an override."""
    from grader.store import overrides
    from grader.store.gradebook import Gradebook
    unread = set(not_graded)
    if batch.gradebook is None:
        return {r.submission: r.warnings[0].shown for r in batch.results if r.submission in unread
                and r.warnings}, []
    students = set(batch.students)
    forced = [o for o in overrides.in_force(overrides.history(batch.gradebook, batch.rubric)) if o.student in students]
    wanted = unread | {o.student for o in forced}
    reasons: dict[str, str] = {}
    changed: list[SubmissionResult] = []
    if wanted:
        with Gradebook(batch.gradebook) as book:
            for result in book.iter_current(batch.rubric, wanted):
                if result.submission in unread and result.warnings:
                    reasons[result.submission] = result.warnings[0].shown
                final = overrides.apply(result, forced)
                if final is not result:
                    changed.append(final)
    return reasons, changed
