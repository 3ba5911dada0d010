"""CSV gradebook for LMS import: one row per student, one column per exercise, total and max_total."""

from __future__ import annotations

import csv
import functools
import math
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Mapping, Protocol, Sequence

from grader.files import atomic_open
from grader.incidents import Incident
from grader.report.class_outputs import Classroom, Written, same_file_warnings
from grader.store.gradebook import incident_cell
from grader.store.results import SubmissionResult
from grader.textsafe import display

# A spreadsheet runs a cell that starts with one of these as a formula; student names come from uploaded
# file names, so they are quoted with a leading apostrophe (OWASP's advice for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@functools.lru_cache(maxsize=4096)    # a class's cells repeat a few scores: 10,000 rows are 170,000 cells
def number(value: float) -> str:
    """28.8, not 28.799999999999997; 30, not 30.0: twelve significant digits hide float noise."""
    if not math.isfinite(value):
        return str(value)
    rounded = float(f"{value:.12g}")
    if rounded == int(rounded):
        return str(int(rounded))
    return repr(rounded)


def text(value: str) -> str:
    """A text cell: valid UTF-8 without NULs (textsafe.display), never read as a formula."""
    value = display(value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def exercise_columns(results: Sequence[SubmissionResult]) -> list[str]:
    """Exercise ids in rubric order: the order of the results' exercises, first seen first.

    Results of one rubric share their exercises, but a result with none (an unreadable file) must not
    remove the columns, and one graded before a rubric gained an exercise must not reorder them.
    """
    columns: dict[str, None] = {}
    for result in results:
        for exercise in result.exercises:
            columns.setdefault(exercise.id, None)
    return list(columns)


def write_csv(results: Sequence[SubmissionResult], path: Path, students: Sequence[str] | None = None) -> None:
    """Write atomically (temp file + os.replace): an LMS import never reads half a file.

    `students` names the rows (parallel to `results`); by default each result's submission id. An exercise
    a result does not have is left empty, not 0, so "not graded" stays distinguishable from "scored 0".
    """
    if students is not None and len(students) != len(results):
        raise ValueError(f"{len(students)} students for {len(results)} results")
    names = list(students) if students is not None else [result.submission for result in results]
    # TA overrides (grader.store.overrides.apply) put the final score in the exercise columns; the automatic total and
    # what was overridden, by whom and why, get their own columns (only in a class that has overrides).
    overridden = any("overrides" in result.extra for result in results)
    rows = (ScoreLine(name, result.total, result.max_total, result.state,
                 {exercise.id: exercise.score for exercise in result.exercises},
                 override_cells(result) if overridden else (), result.late, result.penalty, result.incidents,
                 forfeited(result), forgiven(result) if overridden else ())
            for name, result in zip(names, results, strict=True))
    write_score_csv(exercise_columns(results), rows, path, OVERRIDE_COLUMNS if overridden else ())


OVERRIDE_COLUMNS = ("automatic_total", "overrides", "override_review")


def forfeited(result: SubmissionResult) -> dict[str, float]:
    """Exercise id -> the score the rubric's incident policy took from it (ExerciseResult.forfeited)."""
    return {exercise.id: exercise.forfeited for exercise in result.exercises if exercise.forfeited is not None}


def forgiven(result: SubmissionResult) -> tuple[str, ...]:
    from grader.store.overrides import forgiven as given_back
    return given_back(result)


def override_cells(result: SubmissionResult) -> tuple[str, ...]:
    from grader.store.overrides import describe, needs_review
    return (number(result.extra.get("automatic_total", result.total)), text("; ".join(describe(result))),
            "review" if needs_review(result) else "")


class ScoreRowLike(Protocol):
    """What one CSV row needs (a gradebook.ScoreRow is one)."""

    @property
    def student(self) -> str: ...
    @property
    def total(self) -> float: ...
    @property
    def max_total(self) -> float: ...
    @property
    def state(self) -> str: ...
    @property
    def scores(self) -> Mapping[str, float]: ...


@dataclass(frozen=True)
class ScoreLine:
    student: str
    total: float
    max_total: float
    state: str
    scores: dict[str, float]
    more: tuple[str, ...] = ()      # cells of the extra columns
    late: bool = False
    penalty: float = 0.0
    incidents: tuple[Incident, ...] = ()
    forfeited: Mapping[str, float] | tuple[tuple[str, float], ...] = ()   # exercise -> the score the policy took
    forgiven: tuple[str, ...] = ()  # of those, the exercises a TA gave points back (overrides.forgiven)


def write_score_csv(columns: Sequence[str], rows: Iterable[ScoreRowLike], path: Path,
                    more: Sequence[str] = ()) -> None:
    """The CSV from score rows, streamed: one row per student, then `state` (graded, unreadable, failed, no
    submission: a zero the LMS's import must not read as a notebook's), the
    lateness (`late`, the late policy's `late_penalty` and `total_after_penalty`: the score itself stays in
    `total`), `incidents` (what the sandbox stopped that only hostile code does, for the TA: grader.incidents;
    the rubric's policy already took its cost from the exercise's score) and the `more` columns (a row's `more`
    cells, when it has them)."""
    with atomic_open(path, newline="", durable=True) as stream:   # an LMS import never reads half a file
        writer = csv.writer(stream)
        writer.writerow(["student", *columns, "total", "max_total", "state", "late", "late_penalty",
                         "total_after_penalty", "incidents", *more])
        for row in rows:
            scores = row.scores
            late, penalty = getattr(row, "late", False), getattr(row, "penalty", 0.0)
            writer.writerow([text(row.student),
                             *(number(scores[column]) if column in scores else "" for column in columns),
                             number(row.total), number(row.max_total), row.state, "late" if late else "",
                             number(penalty), number(max(0.0, row.total - penalty)),
                             text(incident_cell(getattr(row, "incidents", ()), dict(getattr(row, "forfeited", ())),
                                               getattr(row, "forgiven", ()))),
                             *(getattr(row, "more", ()) if more else ())])


def write_class_csv(classroom: Classroom, target: Path) -> Written:
    """The class output `csv`: every student of the gradebook, TA overrides applied. Without overrides it streams
    from the gradebook's score rows; with them each result is read, overridden and kept as scores only (no
    cases), so memory stays a row per student."""
    from grader.report.stamps import stamped
    target.parent.mkdir(parents=True, exist_ok=True)
    made_from, count = class_identity(classroom, "csv")
    with stamped(classroom.folder, "csv", target.parent) as stamps:
        if stamps.holds(target, made_from):   # the class is what it was when this file was written
            written = Written((target,), count)
        else:
            written = _write_class_csv(classroom, target)
            stamps.wrote(target, made_from)
    return replace(written, lines=(*written.lines, *same_file_warnings(classroom)))


def class_identity(classroom: Classroom, output: str) -> tuple[str | None, int]:
    """What a file of the whole class is made from (every student's identity, Classroom.entries, and the writer's
    version), as a digest, and how many students: None when a student's is not known (no gradebook: nothing is
    read then)."""
    import hashlib

    from grader import __version__
    if classroom.book() is None:
        return None, 0
    digest = hashlib.blake2b(f"{output} {__version__}".encode(), digest_size=16)
    count = 0
    known = True
    for entry in classroom.entries():
        count += 1
        known = known and entry.identity is not None
        if known:
            digest.update(b"\0" + str(entry.identity).encode("utf-8", "surrogatepass"))
    return (digest.hexdigest() if known else None), count


def _write_class_csv(classroom: Classroom, target: Path) -> Written:
    from dataclasses import replace
    book_path = classroom.book()
    if book_path is not None:
        from grader.store.gradebook import Gradebook
        from grader.store.overrides import history
        with Gradebook(book_path) as book:
            rubrics = [classroom.rubric] if classroom.rubric else book.rubrics()
            if len(rubrics) == 1 and not history(book_path, rubrics[0]):
                count = 0

                def counted(rows: Iterable[ScoreRowLike]) -> Iterator[ScoreRowLike]:
                    nonlocal count
                    for row in rows:
                        count += 1
                        yield row

                write_score_csv(book.columns(rubrics[0]), counted(book.score_rows(rubrics[0])), target)
                return Written((target,), count)
    results = [replace(r, exercises=tuple(replace(e, cases=()) for e in r.exercises), warnings=())
               for r in classroom.results()]
    write_csv(results, target)
    return Written((target,), len(results))
