"""`grader check --kit`: a notebook self-checked on a kit's public cases, in the grader's own sandbox.

Extraction, the child process, its isolation and limits are the real grader's; only the expected values
come from the kit instead of the reference, so it works where nothing but the grader package is installed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from grader import __version__
from grader.extract import extract
from grader.grading import (Options, empty_result, child_statements, file_sha256, grade_exercise,
                            hidden_folders)
from grader.kit import Kit, KitCases, kit_plan, load_kit, report, settle
from grader.notebook import NotebookError, read_notebook
from grader.sandbox.isolation import isolation_report
from grader.results import SubmissionResult
from grader.sandbox.process import ProcessLimits, Sandbox, SandboxError
from grader.scoring import total


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
    rubric = plan.rubric
    extracted = extract(notebook, rubric.policy)
    limits = rubric.limits.merged({"submission_seconds": options.submission_seconds, "memory_mb": options.memory_mb})
    deadline = started + limits.submission_seconds
    warnings = [*kit.warnings, *notebook.warnings, *extracted.warnings]
    process_limits = ProcessLimits(memory_mb=limits.memory_mb, cpu_seconds=int(limits.submission_seconds) + 5,
                                   load_seconds=limits.load_seconds, disk_mb=limits.disk_mb, files=limits.files)
    # The kit's folder stands in for the course's: hidden like it, with the notebook's folder, temp and home.
    with Sandbox(child_statements(extracted), kit.support, process_limits, limits.output_bytes,
                 hidden_folders(plan, path), allow_root=options.allow_root_sandbox) as sandbox:
        level = sandbox.isolation.level
        try:
            load = sandbox.load(deadline)
            loaded: tuple[str, ...] = load.names
            warnings.extend(load.warnings)
        except SandboxError as error:
            warnings.append(str(error))
            loaded = ()
        judged: dict[str, Any] = {}
        for exercise, kx in zip(rubric.exercises, kit.exercises, strict=True):
            judged[exercise.id] = grade_exercise(plan, exercise, KitCases(sandbox, kx) if loaded else None, notebook,
                                                 extracted, loaded, deadline, options, judged)
        exercises = tuple(judged.values())
        level = sandbox.level or level
        held = isolation_report(level, sandbox.facts, process_limits)
    result = SubmissionResult(
        submission=path.stem, path=str(path), sha256=sha256, rubric=kit.assignment, rubric_sha256=kit.rubric_sha256,
        grader_version=__version__, isolation=level, total=0.0, max_total=rubric.max_total, exercises=(),
        warnings=tuple(warnings), seconds=0.0, extra={"isolation": held})
    return _finished(result, kit, settle(kit, exercises, loaded), started), kit.hidden


def _finished(result: SubmissionResult, kit: Kit, exercises: tuple[Any, ...],
              started: float | None = None) -> SubmissionResult:
    from dataclasses import replace
    return replace(result, exercises=exercises, total=total(e.score for e in exercises),
                   rubric_sha256=kit.rubric_sha256,
                   seconds=round(time.monotonic() - started, 3) if started is not None else result.seconds,
                   extra={**result.extra, "kit": kit.sha256, "hidden": kit.hidden})


def run_check(notebook_path: str | Path, kit_path: str | Path, console: Any = None,
              options: Options = Options()) -> int:
    """The `grader check --kit KIT NOTEBOOK` verb: print the report; exit status 0 when no public case failed."""
    result, hidden = check_with_kit(notebook_path, kit_path, options=options)
    return 0 if report(result, hidden, console) else 1
