"""Live progress of a batch in the terminal: a bar with ETA and running counts; one line per result when quiet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.store.status import machine_busy

if TYPE_CHECKING:   # rich.progress is imported when a bar is drawn: a quiet batch (CI, benchmarks) starts sooner
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from grader.store.results import SubmissionResult


class BatchProgress:
    """Counts cases by status as results stream in, so a TA sees trouble (errors, timeouts) while it happens."""

    def __init__(self, console: Console | None, quiet: bool = False):   # None: quiet, nothing is drawn
        self.console, self.quiet = console, quiet
        # "busy": cases a busy machine kept from being judged, apart from the rubric's problems (the TA's fix
        # differs: wait, the next run grades them again; fix the rubric, then --force)
        self.counts = {"pass": 0, "fail": 0, "error": 0, "timeout": 0, "problem": 0, "busy": 0}
        self.unchanged = 0
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> "BatchProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _summary(self) -> str:
        c = self.counts
        return (f"[green]{c['pass']} pass[/] [red]{c['fail']} fail[/] [red]{c['error']} error[/] "
                f"[yellow]{c['timeout']} timeout[/]"
                + (f" [magenta]{c['problem']} grader problem[/]" if c["problem"] else "")
                + (f" [magenta]{c['busy']} not judged: machine busy[/]" if c["busy"] else "")
                + (f" · {self.unchanged} unchanged" if self.unchanged else ""))

    def start(self, total: int, unchanged: int) -> None:
        if self.quiet:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        # Redrawn when a result comes in, not by rich's refresh thread: the batch forks its workers after this
        # (a process with a second thread must spawn them, and each would import the grader and build the plan
        # again, and could not take over the zygotes started for it).
        self.progress = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[summary]}"),
                                 console=self.console, transient=False, auto_refresh=False)
        self.progress.start()
        self.task = self.progress.add_task("grading", total=total, summary="")
        self.progress.refresh()

    def result(self, result: SubmissionResult, unchanged: bool) -> None:
        if unchanged:
            self.unchanged += 1
        else:
            for exercise in result.exercises:
                for case in exercise.cases:
                    if machine_busy(case.status, case.reason):
                        self.counts["busy"] += 1
                    elif case.status in self.counts:
                        self.counts[case.status] += 1
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1, summary=self._summary())
            self.progress.refresh()
