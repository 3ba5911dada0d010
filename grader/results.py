"""The result model: plain data that every report format reads, and its schema-versioned JSON form."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
STATUSES = ("pass", "fail", "error", "timeout", "missing")
KIT_STATUSES = (*STATUSES, "unverified")   # a self-check without the reference may not be able to decide


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

    def exercise(self, exercise_id: str) -> ExerciseResult:
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        raise KeyError(exercise_id)


def to_dict(result: SubmissionResult) -> dict:
    return asdict(result)


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
    temporary.write_text(json.dumps(to_dict(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, target)
    return target


def read_json(path: Path) -> SubmissionResult:
    return from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
