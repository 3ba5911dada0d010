"""TA overrides: a grade a person set (a regrade request, partial credit the rubric could not see), with who,
why and when, kept apart from the automatic score and across regrades.

Stored in the gradebook file as their own table, `overrides`, created on first use (an older grader ignores
it). Every override is a row and none is ever updated or deleted: the newest row of a (student, rubric,
exercise, case) is in force, the older ones are its history, and `remove` records a row without points
(back to the automatic score). Results are never edited: `apply` derives the exported view of a result (the
exercise's score as overridden, the total again) and records the facts under `extra["overrides"]`, so every
writer shows the automatic score beside the override, and regrading the same file changes nothing here.

An override remembers the sha256 of the file it was made for. When the student's current file differs
(a resubmission), the override still applies but is flagged `review`: a TA must look at it again.

    overrides (id, student, rubric, exercise, case_id, points, reason, author, created_at, sha256, automatic)
               case_id '' for the whole exercise; points NULL for "back to automatic"
"""

from __future__ import annotations

import difflib
import sqlite3
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

from grader.rubric.lateness import LATE_SHARE, penalty_of
from grader.store.results import ExerciseResult, SubmissionResult

TABLE = """CREATE TABLE IF NOT EXISTS overrides (
               id INTEGER PRIMARY KEY,
               student TEXT NOT NULL,
               rubric TEXT NOT NULL,
               exercise TEXT NOT NULL,
               case_id TEXT NOT NULL DEFAULT '',
               points REAL,
               reason TEXT NOT NULL,
               author TEXT NOT NULL,
               created_at TEXT NOT NULL,
               sha256 TEXT NOT NULL,
               automatic REAL NOT NULL,
               UNIQUE (student, rubric, exercise, case_id, created_at, author))"""
COLUMNS = "student, rubric, exercise, case_id, points, reason, author, created_at, sha256, automatic"


class OverrideError(ValueError):
    """An override that cannot be recorded: unknown student, exercise or case, points out of range."""


@dataclass(frozen=True)
class Override:
    student: str
    rubric: str
    exercise: str
    case: str                    # '' for the whole exercise
    points: float | None         # None: back to the automatic score
    reason: str
    author: str
    at: str                      # UTC ISO time, fixed width: text order is time order
    sha256: str                  # of the file the TA looked at
    automatic: float             # the automatic score of the exercise (or case) then


# ---------------------------------------------------------------------------------------------- the file


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    from grader.store.gradebook import GradebookError
    path = Path(path)
    if not path.is_file():
        raise GradebookError(f"{path}: no such gradebook (grade the class first: grader grade ... --out FOLDER)")
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'submissions'").fetchone():
            raise GradebookError(f"{path}: not a puzzle-grader gradebook (no submissions table)")
        if create:
            db.execute(TABLE)
    except sqlite3.DatabaseError as error:
        db.close()
        raise GradebookError(f"{path}: not a usable gradebook: {error}") from error
    except BaseException:
        db.close()
        raise
    return db


def _has_table(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'overrides'").fetchone() is not None


def history(gradebook: Path, rubric: str | None = None, student: str | None = None) -> list[Override]:
    """Every override ever recorded (oldest first), of one rubric and student when given."""
    if not Path(gradebook).is_file():
        return []
    db = _connect(gradebook, create=False)
    try:
        if not _has_table(db):
            return []
        rows = db.execute(f"SELECT {COLUMNS} FROM overrides WHERE (? IS NULL OR rubric = ?) AND "
                          f"(? IS NULL OR student = ?) ORDER BY created_at, id", (rubric, rubric, student, student))
        return [Override(*row) for row in rows]
    finally:
        db.close()


def in_force(overrides: Iterable[Override]) -> list[Override]:
    """The newest override of each (student, rubric, exercise, case), without those that were removed."""
    newest: dict[tuple[str, str, str, str], Override] = {}
    for override in sorted(overrides, key=lambda o: o.at):
        newest[(override.student, override.rubric, override.exercise, override.case)] = override
    return [o for o in newest.values() if o.points is not None]


def current_results(gradebook: Path, rubric: str) -> list[SubmissionResult]:
    """The current result of every student of the rubric, as recorded (without overrides), by student."""
    from grader.store.gradebook import Gradebook
    _connect(gradebook, create=False).close()     # a missing file or another SQLite file: its clear error
    with Gradebook(gradebook) as book:            # results share their rubric's case values: read them whole
        return book.current(rubric)


def rubrics(gradebook: Path) -> list[str]:
    db = _connect(gradebook, create=False)
    try:
        return [r for (r,) in db.execute("SELECT DISTINCT rubric FROM submissions ORDER BY rubric")]
    finally:
        db.close()


def record(gradebook: Path, student: str, exercise: str, *, points: float | None, reason: str, author: str,
           case: str = "", rubric: str | None = None, at: str | None = None, forgive: bool = False) -> Override:
    """Check the override against the student's current result and add it to the history. `forgive`: the points
    are those the rubric's incident policy took from the exercise (ExerciseResult.forfeited), for an incident the
    TA found honest; `points` is then not given."""
    from grader.store.gradebook import utc_now
    if not reason.strip():
        raise OverrideError("an override needs a reason (--why): the student and the next TA will read it")
    if not author.strip():
        raise OverrideError("an override needs an author (--by)")
    known = rubrics(gradebook)
    if rubric is None:
        if len(known) != 1:
            raise OverrideError(f"{gradebook}: holds {len(known)} rubrics ({', '.join(known) or 'none'}); "
                                f"name one with --rubric")
        rubric = known[0]
    elif rubric not in known:
        raise OverrideError(f"{gradebook}: no rubric {rubric!r}{_did_you_mean(rubric, known)}")
    results = {r.submission: r for r in current_results(gradebook, rubric)}
    if student not in results:
        raise OverrideError(f"{gradebook}: no student {student!r} under {rubric}{_did_you_mean(student, results)}")
    result = results[student]
    exercises = {e.id: e for e in result.exercises}
    if exercise not in exercises:
        raise OverrideError(f"{student}: no exercise {exercise!r}{_did_you_mean(exercise, exercises)}")
    graded = exercises[exercise]
    if forgive:
        if case:
            raise OverrideError("--forgive gives back an exercise's points, not a case's: leave out --case")
        if graded.forfeited is None:
            raise OverrideError(f"{student}: the incident policy took nothing from {exercise} (its score "
                                f"{graded.score:g} is the judge's): --points sets another")
        if not graded.forfeited:   # a forgiveness of nothing would read as one in every export
            raise OverrideError(f"{student}: the incident policy took nothing from {exercise}: the judge gave it 0 "
                                f"before the incident (its cases say why); --points sets another")
        points = graded.forfeited
    if case:
        cases = {c.id: c for c in graded.cases}
        if case not in cases:
            raise OverrideError(f"{student}: exercise {exercise} has no case {case!r}{_did_you_mean(case, cases)}")
        automatic, most = case_points(graded, case), case_points(graded, case, full=True)
    else:
        automatic, most = graded.score, graded.max_score
    if points is not None and not 0 <= points <= most:
        raise OverrideError(f"{student}: {points:g} points for {exercise}{' case ' + case if case else ''} is "
                            f"outside 0 to {most:g}")
    override = Override(student, rubric, exercise, case, points, reason.strip(), author.strip(),
                        at or utc_now(), result.sha256, automatic)
    db = _connect(gradebook, create=True)
    try:
        db.execute(f"INSERT INTO overrides ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (override.student, override.rubric, override.exercise, override.case, override.points,
                    override.reason, override.author, override.at, override.sha256, override.automatic))
    finally:
        db.close()
    return override


def merge(other: Path, into: Path) -> int:
    """Copy the overrides of another gradebook (its whole history); one already here is skipped. Returns how
    many were added."""
    mine = {(o.student, o.rubric, o.exercise, o.case, o.at, o.author) for o in history(into)}
    added = [o for o in history(other) if (o.student, o.rubric, o.exercise, o.case, o.at, o.author) not in mine]
    if not added:
        return 0
    db = _connect(into, create=True)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.executemany(f"INSERT INTO overrides ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [(o.student, o.rubric, o.exercise, o.case, o.points, o.reason, o.author, o.at, o.sha256,
                         o.automatic) for o in added])
        db.execute("COMMIT")
    finally:
        db.close()
    return len(added)


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ---------------------------------------------------------------------------------------------- applying


def case_points(exercise: ExerciseResult, case_id: str, *, full: bool = False) -> float:
    """The points a case earned (or could earn, `full`): its weighted share of the exercise's points."""
    weights = sum(c.weight for c in exercise.cases)
    for case in exercise.cases:
        if case.id == case_id:
            share = exercise.max_score * case.weight / weights if weights else 0.0
            return round(share * (1.0 if full else min(1.0, max(0.0, case.fraction))), 4)
    raise KeyError(case_id)


def apply(result: SubmissionResult, overrides: Sequence[Override]) -> SubmissionResult:
    """The result as exported: each overridden exercise's score replaced (a case override moves the exercise by
    the difference), the total summed again, and the facts under extra["overrides"] (automatic and final score
    of each exercise, each override with author, reason, time, and whether the file changed since)."""
    mine = [o for o in in_force(overrides) if o.student == result.submission and o.rubric == result.rubric]
    if not mine:
        return result
    exercises = []
    facts = []
    for exercise in result.exercises:
        own = [o for o in mine if o.exercise == exercise.id]
        if not own:
            exercises.append(exercise)
            continue
        whole = [o for o in own if not o.case]
        score = whole[-1].points if whole and whole[-1].points is not None else exercise.score
        for override in own:
            if override.case and override.points is not None and not whole and any(
                    c.id == override.case for c in exercise.cases):
                score += override.points - case_points(exercise, override.case)
        score = round(min(exercise.max_score, max(0.0, float(score))), 4)
        exercises.append(replace(exercise, score=score, notes=_policy_notes(result, exercise, score)))
        facts.append({"exercise": exercise.id, "automatic": exercise.score, "score": score,
                      "max_score": exercise.max_score,
                      "by": [{"case": o.case, "points": o.points, "automatic": o.automatic, "why": o.reason,
                              "author": o.author, "at": o.at, "review": o.sha256 != result.sha256}
                             for o in own]})
    total = round(sum(e.score for e in exercises), 4)
    extra = {**result.extra, "overrides": facts, "automatic_total": result.total}
    # The late policy takes a share of the score: of the score the TA set, not of the automatic one
    share = result.extra.get(LATE_SHARE)
    penalty = penalty_of(total, share) if isinstance(share, (int, float)) and result.late else result.penalty
    return replace(result, exercises=tuple(exercises), total=total, extra=extra, penalty=penalty)


def _policy_notes(result: SubmissionResult, exercise: ExerciseResult, score: float) -> tuple[str, ...]:
    """The exercise's notes under a TA's score: the incident policy's "this exercise earns no points" is no longer
    true once a TA gave points back (--forgive, or any points), so the student reads what was stopped, not a cost.
    Which note the policy wrote is chosen from the facts (`forfeited`: the policy scored it; an incident placed in
    this exercise, or during the load), never read out of the notes."""
    if exercise.forfeited is None or score <= 0:
        return exercise.notes
    from grader import incidents
    own = any(incident.exercise == exercise.id for incident in result.incidents)
    wrote, shown = ((incidents.STUDENT_NOTE, incidents.STUDENT_NOTE_SHOWN) if own
                    else (incidents.STUDENT_NOTE_LOAD, incidents.STUDENT_NOTE_SHOWN_LOAD))
    return tuple(shown if note == wrote else note for note in exercise.notes)


def forgiven(result: SubmissionResult) -> tuple[str, ...]:
    """The exercises of an exported result (apply's) whose incident-policy score a TA replaced with points (a
    whole-exercise override in force: --forgive, or --points above 0): the policy's cost no longer stands."""
    given = {fact["exercise"] for fact in result.extra.get("overrides", ())
             if any(not entry["case"] and entry["points"] for entry in fact["by"])}
    return tuple(e.id for e in result.exercises if e.forfeited is not None and e.id in given)


def forgiven_in(gradebook: Path, rubric: str) -> dict[str, set[str]]:
    """Student -> the exercises a whole-exercise override in force gives points (above 0) under `rubric`: with a
    result's `forfeited`, which incident costs a TA forgave (forgiven, from the overrides alone)."""
    given: dict[str, set[str]] = {}
    for override in in_force(history(gradebook, rubric)):
        if not override.case and override.points:
            given.setdefault(override.student, set()).add(override.exercise)
    return given


def apply_all(results: Iterable[SubmissionResult], gradebook: Path | None) -> list[SubmissionResult]:
    """Every result with the overrides in force in the gradebook (none when there is no gradebook file)."""
    overrides = history(gradebook) if gradebook is not None else []
    return [apply(result, overrides) for result in results]


def needs_review(result: SubmissionResult) -> bool:
    return any(entry["review"] for fact in result.extra.get("overrides", ()) for entry in fact["by"])


def describe(result: SubmissionResult) -> list[str]:
    """One line per override of an exported result: 'move_dir: 0 -> 2 by ta (why) [review: file changed]'."""
    lines = []
    for fact in result.extra.get("overrides", ()):
        for entry in fact["by"]:
            where = f"{fact['exercise']}" + (f" case {entry['case']}" if entry["case"] else "")
            lines.append(f"{where}: {entry['automatic']:g} -> {entry['points']:g} by {entry['author']} "
                         f"({entry['why']})" + (" [review: the submission changed since]" if entry["review"] else ""))
    return lines
