"""Terminal views of results: the TA's class table and the student's self-check report."""

from __future__ import annotations

from typing import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from grader.report import boards
from grader.gradebook import ScoreRow
from grader.results import CaseResult, SubmissionResult
from grader.sandbox import codec
from grader.textsafe import terminal

MARKS = {"pass": ("✓", "green"), "fail": ("✗", "red"), "error": ("!", "red"), "timeout": ("⏱", "yellow"),
         "missing": ("–", "bright_black"), "unverified": ("?", "yellow"), "problem": ("⚠", "magenta")}
FAILING = ("fail", "error", "timeout", "missing")   # 'unverified' (kit only) is checked after submission


def _score(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


def class_table(results: Sequence[SubmissionResult]) -> Table:
    """One row per submission, one column per exercise: what a TA scans first.

    With many exercises the columns are numbered and a legend names them, so the table fits a terminal.
    """
    exercises = results[0].exercises if results else ()
    numbered = len(exercises) > 6
    legend = "  ".join(f"{n}={e.id}" for n, e in enumerate(exercises, start=1)) if numbered else None
    table = Table(title="Scores", caption=legend, caption_justify="left", pad_edge=False, box=box.SIMPLE_HEAD,
                  collapse_padding=True)
    table.add_column("submission", no_wrap=True, overflow="ellipsis", max_width=22)
    for number, exercise in enumerate(exercises, start=1):
        table.add_column(str(number) if numbered else exercise.id, justify="right", no_wrap=True,
                         min_width=None)
    table.add_column("total", justify="right", style="bold", no_wrap=True, min_width=7)
    for result in results:
        cells = []
        for exercise in result.exercises:
            style = "green" if exercise.score == exercise.max_score else ("red" if exercise.score == 0 else "yellow")
            cells.append(Text(_score(exercise.score), style=style))
        table.add_row(Text(terminal(result.submission)), *cells,
                      f"{_score(result.total)}/{_score(result.max_total)}")
    return table


def print_class(results: Sequence[SubmissionResult], console: Console | None = None) -> None:
    console = console or Console()
    console.print(class_table(results))
    if results:
        console.print(f"isolation: {results[0].isolation}")
    for result in results:
        ungraded = all(c.message.startswith("not graded") for e in result.exercises for c in e.cases)
        if ungraded and result.warnings:
            console.print(Text.assemble((terminal(result.submission), "yellow"),
                                        f": not graded: {terminal(result.warnings[0])}"), highlight=False)


def print_rows(rows: Sequence[ScoreRow], console: Console | None = None) -> None:
    """The class table from score rows (what a batch keeps), and which submissions could not be read."""
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
    for row in rows:
        cells = []
        for exercise in exercises:
            score = row.scores.get(exercise)
            cells.append(Text("" if score is None else _score(score),
                              style="red" if not score else ""))
        table.add_row(Text(terminal(row.student)), *cells,
                      f"{_score(row.total)}/{_score(row.max_total)}")
    console.print(table)
    for row in rows:
        if row.state != "graded":
            console.print(f"[yellow]{escape(terminal(row.student))}[/]: {row.state} (the reason is in its JSON result)",
                          highlight=False)


def student_report(result: SubmissionResult, hidden: Mapping[str, int], console: Console | None = None) -> bool:
    """The self-check: every public case, hidden ones only counted. Returns whether all public cases pass.

    A failing case whose values are puzzle states also gets them drawn as boards, expected beside got, the
    differing cells in [brackets] (and red where the terminal has colour).
    """
    console = console or Console()
    all_pass = True
    unverified_total = 0
    console.print(f"[bold]{escape(terminal(result.submission))}[/] — public cases of {escape(result.rubric)}")
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(terminal(warning))}", highlight=False)
    for exercise in result.exercises:
        public = [c for c in exercise.cases if c.visibility == "public"]
        passed = sum(c.status == "pass" for c in public)
        unverified = sum(c.status == "unverified" for c in public)
        unverified_total += unverified
        ok = not any(c.status in FAILING for c in public)
        problems = sum(c.status == "problem" for c in public)
        all_pass &= ok
        # A tick means something passed here: an exercise whose public cases all wait for submission gets "?".
        mark, style = ("✓", "green") if ok and passed else ("?", "yellow") if ok else ("✗", "red")
        line = f"[{style}]{mark}[/] {escape(exercise.id)}: {passed}/{len(public)} public cases pass"
        if unverified:
            line += f", {unverified} checked after submission"
        if problems:
            line += f", {problems} not judged (a grader problem, not your mistake: tell your instructor)"
        if hidden.get(exercise.id):
            count = hidden[exercise.id]
            line += f"; {count} hidden case{'s' if count != 1 else ''}, results after grading"
        console.print(line, highlight=False)
        for note in exercise.notes:
            if not ok or "global variable" in note:
                console.print(f"    note: {terminal(note)}", highlight=False, markup=False)
        for case in public:
            if case.status != "pass":
                _print_case(console, case)
    if all_pass and unverified_total:
        console.print(f"[green]No public case failed;[/] {unverified_total} can only be checked after submission. "
                      f"Hidden cases are graded after submission.")
    elif all_pass:
        console.print("[green]All public cases pass.[/] Hidden cases are graded after submission.")
    return all_pass


CASE_INDENT = 6


def _print_case(console: Console, case: CaseResult) -> None:
    """One failing public case: call, message, expected and got (as boards when they are puzzle states,
    else one line each), traceback and printed output."""
    pad = " " * CASE_INDENT
    lines = [f"    {MARKS[case.status][0]} {case.call}"]
    if case.message:
        lines.append(pad + case.message)
    comparison = boards.compare(case.expected, case.got) if case.status == "fail" else None
    if comparison is not None and not comparison.drawn:
        lines.append(f"{pad}expected: {codec.describe(case.expected, 400)}")
        lines.append(f"{pad}got:      {codec.describe(case.got, 400)}")
    console.print(terminal("\n".join(lines)), highlight=False, markup=False)
    if comparison is not None:
        if comparison.drawn:
            width = max((console.width or 80) - CASE_INDENT, 40)
            for segments in boards.comparison_lines(comparison, width):
                safe = [(terminal(text), style) for text, style in segments]
                console.print(Text(pad).append_text(Text.assemble(*safe)), highlight=False, soft_wrap=True)
    lines = []
    if case.traceback and case.status == "error":
        lines.extend(pad + line for line in case.traceback.splitlines()[-6:])
    if case.output:
        shown = case.output if len(case.output) < 600 else case.output[:600] + " ..."
        lines.append(pad + "output: " + shown.replace("\n", "\n" + pad + "        "))
    if lines:
        console.print(terminal("\n".join(lines)), highlight=False, markup=False)
