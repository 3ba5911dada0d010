"""`grader check --kit`: a notebook self-checked on a kit's public cases, in the grader's own sandbox.

Extraction, the child process, its isolation and limits are the real grader's (the same grade_notebook);
only the expected values come from the kit instead of the reference, so it works where nothing but the
grader package is installed.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.judge.grading import empty_result, grade_notebook, hidden_folders
from grader.judge.options import Options
from grader.kit.kit import Kit, kit_cases, kit_plan, load_kit, report, settle
from grader.intake.notebook import NotebookError, file_sha256, read_notebook
from grader.store.results import SubmissionResult
from grader.judge.scoring import total


def check_with_kit(notebook_path: str | Path, kit_path: str | Path | Kit, *,
                   options: Options = Options()) -> tuple[SubmissionResult, dict[str, int]]:
    """A student's self-check from a kit: the result of the public cases and the hidden-case count per exercise."""
    started = time.monotonic()
    kit = kit_path if isinstance(kit_path, Kit) else load_kit(kit_path)
    plan = kit_plan(kit)
    path = Path(notebook_path)
    sha256 = file_sha256(path)
    try:
        notebook = read_notebook(path)
    except NotebookError as error:
        empty = empty_result(path, plan, sha256, str(error), started)
        return _finished(empty, kit, settle(kit, empty.exercises, ())), kit.hidden
    # The kit's folder stands in for the course's: hidden like it, with the notebook's folder, temp and home.
    missed: set[str] = set()
    result = grade_notebook(notebook, plan, path=path, sha256=sha256, support=kit.support, data=kit.data,
                            options=options,
                            submission=path.stem, hide_paths=hidden_folders(plan, path), warnings=kit.warnings,
                            cases=kit_cases(kit, missed),
                            settle=lambda exercises, loaded: settle(kit, exercises, loaded, missed))
    return _finished(result, kit, result.exercises), kit.hidden


def _finished(result: SubmissionResult, kit: Kit, exercises: tuple[Any, ...]) -> SubmissionResult:
    return replace(result, exercises=exercises, total=total(e.score for e in exercises),
                   rubric=kit.assignment, rubric_sha256=kit.rubric_sha256,
                   extra={**result.extra, "kit": kit.sha256, "hidden": kit.hidden})


def graded_in(folder: Path, rubric: Any) -> tuple[Path | None, str]:
    """The notebook `grader grade` grades among a student's folder (grader.intake.gather.CHOICE_RULE, as the
    Gradescope runner picks in an upload), and a note saying which and why ("" when it is the only one): a student
    with lab.ipynb and lab-old.ipynb in the last hour checks the one that counts."""
    from grader.intake.gather import choose_in_folder
    from grader.judge.grading import defines_counter
    chosen, _, note = choose_in_folder(folder, defines_counter(rubric), student=str(folder))
    return chosen, note


def run_check(notebook_path: str | Path, kit_path: str | Path, console: Any = None,
              options: Options = Options()) -> int:
    """The `grader check --kit KIT NOTEBOOK` verb: print the report; exit status 0 when no public case failed."""
    result, hidden = check_with_kit(notebook_path, kit_path, options=options)
    return 0 if report(result, hidden, console) else 1
