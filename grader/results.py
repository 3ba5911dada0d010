"""The result model: plain data that every report format reads, and its schema-versioned JSON form."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
STATUSES = ("pass", "fail", "error", "timeout", "missing")
# What happened to a submission as a whole: graded (its cases ran), unreadable (the file could not be read or
# parsed: a zero with the reason in `warnings`), failed (the grader could not finish it: its worker died or was
# stopped by the watchdog; not retried unless forced).
STATES = ("graded", "unreadable", "failed")


@dataclass(frozen=True)
class CaseResult:
    id: str
    status: str                  # pass | fail | error | timeout | missing
    visibility: str              # public | hidden
    message: str
    call: str = ""
    expected: Any = None         # wire form; kept for every case, shown to students only for public ones
    got: Any = None
    fraction: float = 0.0        # credit earned in [0, 1]
    seconds: float = 0.0
    output: str = ""             # what the student's code printed during this case (truncated)
    traceback: str = ""          # student frames only, pointing at notebook cells
    weight: float = 1.0


@dataclass(frozen=True)
class ExerciseResult:
    id: str
    title: str
    score: float
    max_score: float
    cases: tuple[CaseResult, ...]
    notes: tuple[str, ...] = ()  # exercise-level remarks: stub, alias used, globals read, hints
    function: str = ""           # the notebook name that was graded (an alias, maybe)
    location: str = ""           # where the graded definition is, e.g. "In [50] (cell 37), line 1"


@dataclass(frozen=True)
class SubmissionResult:
    submission: str
    path: str
    sha256: str
    rubric: str
    rubric_sha256: str
    grader_version: str
    isolation: str
    total: float
    max_total: float
    exercises: tuple[ExerciseResult, ...]
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0
    schema: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict)
    state: str = "graded"        # one of STATES
    notebook: str = ""           # the graded file's content-addressed copy, relative to the results folder
    late: bool = False           # the LMS flagged it late, or its file time is after the rubric's due date
    submitted_at: str = ""       # the file's time as the intake saw it (UTC ISO)
    penalty: float = 0.0         # points the rubric's late policy takes off; `total` is the score before it

    def exercise(self, exercise_id: str) -> ExerciseResult:
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        raise KeyError(exercise_id)


def _case_dict(case: CaseResult) -> dict:
    return {f: getattr(case, f) for f in _CASE_FIELDS}


def to_dict(result: SubmissionResult) -> dict:
    """The JSON form. Not dataclasses.asdict: that deep-copies every expected and got value (slow on 400 KB)."""
    data = {}
    for name in _ALL_RESULT_FIELDS:
        if name == "exercises":
            data[name] = [{f: ([_case_dict(c) for c in e.cases] if f == "cases" else
                               list(e.notes) if f == "notes" else getattr(e, f)) for f in _EXERCISE_FIELDS}
                          for e in result.exercises]
        elif name == "warnings":
            data[name] = list(result.warnings)
        elif name == "extra":
            data[name] = dict(result.extra)
        else:
            data[name] = getattr(result, name)
    return data


_CASE_FIELDS = tuple(f.name for f in fields(CaseResult))
_EXERCISE_FIELDS = tuple(f.name for f in fields(ExerciseResult))
_ALL_RESULT_FIELDS = tuple(f.name for f in fields(SubmissionResult))


def from_dict(data: dict) -> SubmissionResult:
    exercises = tuple(
        ExerciseResult(**{**e, "cases": tuple(CaseResult(**c) for c in e["cases"]), "notes": tuple(e["notes"])})
        for e in data["exercises"])
    return SubmissionResult(**{**data, "exercises": exercises, "warnings": tuple(data["warnings"])})


def write_json(result: SubmissionResult, directory: Path) -> Path:
    """Write atomically, so an interrupted batch never leaves half a result behind."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{result.submission}.json"
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    # Compact: the C encoder is ten times faster than an indented dump (pretty-print with `jq` or `python -m json.tool`).
    temporary.write_text(json.dumps(to_dict(result), ensure_ascii=False, separators=(",", ":")) + "\n",
                         encoding="utf-8")
    os.replace(temporary, target)
    return target


def read_json(path: Path) -> SubmissionResult:
    return from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
