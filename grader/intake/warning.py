"""A warning about a graded notebook as facts: where (cell and line), what kind, about what, and the sentence.

Why: a warning used to be one line of text ("In [5] (cell 7), line 1: ModuleNotFoundError: ..."), and the
class report recovered which module was missing by cutting the place and the numbers out of it with regular
expressions. Now the stage where a warning is born (intake, extraction, the sandbox's load, the judge) fills
these fields; every writer shows `shown` (the place stays in the sentence a student reads) and the class
report groups by (kind, subject) without reading the text. It lives in the first stage so every later one,
and every writer, can use it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol


class Kind(enum.StrEnum):
    """What happened. The child of the sandbox reports only the load kinds (LOAD_KINDS)."""

    MISSING_MODULE = "missing module"      # an import the grading machine lacks: its names are inert stand-ins
    IMPORT_ERROR = "import error"          # an import that failed otherwise (stand-ins too)
    LOAD_ERROR = "error at load"           # a kept statement raised; it was skipped
    LOAD_TIMEOUT = "load timeout"          # a kept statement ran out of time; it was left out
    SYNTAX = "syntax error"                # a cell or statement that does not parse was left out
    NOTEBOOK = "notebook"                  # the file was read despite a problem (schema, version, a cell)
    UNREADABLE = "unreadable"              # the file could not be read at all: nothing was graded
    FAILED = "not finished"                # the grader could not finish it (its worker died or was stopped)
    NOT_LOADED = "not loaded"              # the sandbox could not load the notebook's code at all
    MISMATCH = "mismatch"                  # most graded names are absent: perhaps the wrong rubric
    GIVEN = "given code"                   # a name the template gives, absent from the notebook: the course's stood in
    KIT = "kit"                            # the student's kit says something about itself
    GRADER = "grader"                      # the grader's own remark on the result (cut to fit, more not kept)
    TEXT = ""                              # stored before warnings had fields: only its text is known


# What the untrusted child may claim about its own load; anything else in a `loaded` frame is invalid.
LOAD_KINDS = (Kind.MISSING_MODULE, Kind.IMPORT_ERROR, Kind.LOAD_ERROR, Kind.LOAD_TIMEOUT, Kind.SYNTAX)


@dataclass(frozen=True)
class GraderWarning:
    """One warning. `text` is the sentence without its place; `shown` puts the place in front of it."""

    kind: Kind
    text: str                    # "ModuleNotFoundError: No module named 'ipycanvas'; the imported names are ..."
    subject: str = ""            # what it is about: the module, the exception type, the names left unbound
    cell: int | None = None      # the notebook cell (0-based), when the warning has a place
    label: str = ""              # that cell as the student knows it: "In [5] (cell 7)"
    line: int = 0                # the line in that cell (0: the whole cell or no place)

    @property
    def place(self) -> str:
        """Where, as feedback names it: "In [5] (cell 7), line 1", or "" without a place."""
        return f"{self.label}, line {self.line}" if self.label and self.line else self.label

    @property
    def shown(self) -> str:
        """The sentence a student or TA reads, its place first."""
        return f"{self.place}: {self.text}" if self.place else self.text

    def __str__(self) -> str:
        return self.shown


class Cell(Protocol):
    """A notebook cell as intake reads it (grader.intake.notebook.Cell)."""

    @property
    def index(self) -> int: ...

    @property
    def label(self) -> str: ...


def at(cell: Cell, line: int, kind: Kind, text: str, subject: str = "") -> GraderWarning:
    """A warning about `line` of `cell` (0: the whole cell)."""
    return GraderWarning(kind, text, subject, cell=cell.index, label=cell.label, line=line)


def to_json(item: GraderWarning) -> dict[str, Any]:
    return {"kind": item.kind.value, "text": item.text, "subject": item.subject, "cell": item.cell,
            "label": item.label, "line": item.line}


def from_json(data: Any) -> GraderWarning:
    """A stored warning: a plain string (results written before warnings had fields) or its fields.

    Result files are ours but may have been edited: an unknown kind or a field of the wrong type reads as
    empty rather than failing the whole report.
    """
    if isinstance(data, str):
        return GraderWarning(Kind.TEXT, data)
    if not isinstance(data, dict):
        return GraderWarning(Kind.TEXT, str(data))
    try:
        kind = Kind(data.get("kind", ""))
    except ValueError:
        kind = Kind.TEXT
    cell = data.get("cell")
    line = data.get("line")
    return GraderWarning(kind, _str(data.get("text")), _str(data.get("subject")),
                         cell=cell if type(cell) is int else None, label=_str(data.get("label")),
                         line=line if type(line) is int else 0)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
