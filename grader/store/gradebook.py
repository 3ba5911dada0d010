"""The class gradebook: every student's results in one SQLite file, current result and regrade history.

Why SQLite: a TA grades thousands of notebooks, regrades after fixing a rubric and may kill the grader at
any moment. Each `record` is one transaction in a WAL journal, so a kill -9 loses at most the result being
written and never leaves half of one; the next batch asks `unchanged_row` and grades only what is missing.

Tables (schema version 7):

    schema_version  (id = 1, version)                      what `open` compares with SCHEMA_VERSION
    submissions     (id, student, rubric, sha256, source, current_result)
                    one row per (student, rubric); sha256/source are those of the current result
    results         (id, submission_id, sha256, source, rubric_sha256, grader_version, isolation, total,
                     max_total, exercise_count, graded_at, json)
                    every grading ever recorded (regrades are history); json is results.to_dict's form
    scores          (result_id, position, exercise, score, max_score, forfeited)
                    one row per exercise of a result, in rubric order, for SQL reports; forfeited (version 6): the
                    score the incident policy took (NULL none)
    shared_values   (rubric_sha256, exercise, case_id, call, expected)
                    what every result of a rubric shares (a case's call and expected value), stored once per
                    rubric: a result's json leaves out `call` and `expected` of a case whose values are the
                    shared ones, and reading puts them back (a class of 10,000 stores 136 expected values, not
                    1.36 million)
    results.state   graded | unreadable | failed | no submission (results.STATES), for counts in SQL (version 2)
    results.late, penalty, busy, seconds
                    the result's lateness, late penalty, cases a busy machine kept from being judged (counted from
                    its cases, results.not_judged, as every report counts them) and grading time, as columns
                    (version 3; version 4 counts busy cases again): what a regrade of an unchanged class, the CSV
                    and the order of a regrade read of every student; read out of the json they cost a parse of the
                    whole result each (~100 us, most of a 10,000-student regrade)
    results.verdicts
                    the grading's case verdicts as bits, one character a case (grader.store.verdicts; version 7,
                    '' before): what shows a student whose resubmissions moved only hidden verdicts
"""

from __future__ import annotations

import functools
import json
import pickle
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from grader import textsafe
from grader.incidents import Incident, for_the_ta, from_json as incident_from_json, to_json as incident_to_json
from grader.store.results import (
    ExerciseResult, SubmissionResult, bound_result, from_dict, not_judged, stored_form)
from grader.store.twins import SameFile, same_files, warning_lines
from grader.store.verdicts import FILES as VERDICT_FILES, Probing, bits as verdict_bits, bits_of_json, probing

SCHEMA_VERSION = 7

# A result's cases that a busy machine kept from being judged, counted in SQL over its json as results.not_judged
# counts them (the one source of that count).
_BUSY_CASES = """SELECT count(*) FROM json_each(results.json, '$.exercises') AS exercise,
                                    json_each(exercise.value, '$.cases') AS one
               WHERE json_extract(one.value, '$.status') = 'problem'
                 AND json_extract(one.value, '$.reason') = 'busy machine'"""

# MIGRATIONS[n] takes a gradebook from version n to n + 1, one statement at a time (sqlite3's executescript
# would commit halfway). A new schema appends a step; opening an older file upgrades it in one transaction.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE schema_version (
               id INTEGER PRIMARY KEY CHECK (id = 1),
               version INTEGER NOT NULL)""",
        """CREATE TABLE submissions (
               id INTEGER PRIMARY KEY,
               student TEXT NOT NULL,
               rubric TEXT NOT NULL,
               sha256 TEXT NOT NULL,
               source TEXT NOT NULL,
               current_result INTEGER REFERENCES results (id),
               UNIQUE (student, rubric))""",
        """CREATE TABLE results (
               id INTEGER PRIMARY KEY,
               submission_id INTEGER NOT NULL REFERENCES submissions (id),
               sha256 TEXT NOT NULL,
               source TEXT NOT NULL,
               rubric_sha256 TEXT NOT NULL,
               grader_version TEXT NOT NULL,
               isolation TEXT NOT NULL,
               total REAL NOT NULL,
               max_total REAL NOT NULL,
               exercise_count INTEGER NOT NULL,
               graded_at TEXT NOT NULL,
               json TEXT NOT NULL)""",
        # What makes two results "the same" when gradebooks are merged.
        """CREATE UNIQUE INDEX results_identity
               ON results (submission_id, sha256, rubric_sha256, grader_version, graded_at)""",
        """CREATE TABLE scores (
               result_id INTEGER NOT NULL REFERENCES results (id),
               position INTEGER NOT NULL,
               exercise TEXT NOT NULL,
               score REAL NOT NULL,
               max_score REAL NOT NULL,
               PRIMARY KEY (result_id, position))""",
        "CREATE INDEX scores_exercise ON scores (exercise)",
    ),
    (
        "ALTER TABLE results ADD COLUMN state TEXT NOT NULL DEFAULT 'graded'",
        """CREATE TABLE shared_values (
               rubric_sha256 TEXT NOT NULL,
               exercise TEXT NOT NULL,
               case_id TEXT NOT NULL,
               call TEXT NOT NULL,
               expected TEXT NOT NULL,
               PRIMARY KEY (rubric_sha256, exercise, case_id))""",
    ),
    (
        "ALTER TABLE results ADD COLUMN late INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE results ADD COLUMN penalty REAL NOT NULL DEFAULT 0",
        "ALTER TABLE results ADD COLUMN busy INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE results ADD COLUMN seconds REAL NOT NULL DEFAULT 0",
        # What a regrade asks of every student's current result, read from this index: the table's row holds
        # the json (tens of kB in overflow pages) before these columns.
        """CREATE INDEX results_heads ON results (id, sha256, rubric_sha256, grader_version, state, isolation, total,
                                                  max_total, late, penalty, busy, seconds)""",
        # Once, from each result's json (what score_rows and durations read there before). Busy cases are
        # counted from the cases, as results.not_judged counts them (the one source of that count).
        f"""UPDATE results SET
               late = coalesce(json_extract(json, '$.late'), 0) != 0,
               penalty = CASE WHEN json_type(json, '$.penalty') IN ('integer', 'real')
                              THEN json_extract(json, '$.penalty') ELSE 0 END,
               busy = ({_BUSY_CASES}),
               seconds = CASE WHEN json_type(json, '$.seconds') IN ('integer', 'real')
                              THEN json_extract(json, '$.seconds') ELSE 0 END""",
    ),
    (
        # A version 3 file written before the count came from the cases has 0 where grading did not set
        # extra.budget.busy_cases (set only when the submission's deadline was reached): a case starved at its wall
        # backstop, or an isolated rerun's. A regrade asks this column, so that student was never graded again
        # and kept cases not judged at 0 points. Counted again, in results whose text names a busy case at all.
        f"""UPDATE results SET busy = ({_BUSY_CASES})
            WHERE busy = 0 AND instr(json, '"busy machine"') > 0""",
    ),
    (
        # What the sandbox stopped that only hostile code does (grader.incidents), as the result's JSON list, ''
        # for none: the CSV and grade's summary read it from the heads index, with the scores, no json decoded.
        "ALTER TABLE results ADD COLUMN incidents TEXT NOT NULL DEFAULT ''",
        """UPDATE results SET incidents = json_extract(json, '$.incidents')
            WHERE instr(json, '"observer"') > 0 AND json_array_length(json, '$.incidents') > 0""",
        "DROP INDEX results_heads",
        """CREATE INDEX results_heads ON results (id, sha256, rubric_sha256, grader_version, state, isolation, total,
                                                  max_total, late, penalty, busy, seconds, incidents)""",
    ),
    (
        # The score the judge gave an exercise before the rubric's incident policy zeroed it (results.ExerciseResult.
        # forfeited), NULL for none: what grade's incident line and the CSV say a TA's --forgive gives back. Results
        # stored before it existed have none (NULL): nothing to fill in, nothing to regrade.
        "ALTER TABLE scores ADD COLUMN forfeited REAL",
    ),
    (
        # Each grading's case verdicts as bits (grader.store.verdicts: pass or not, public or hidden, no value):
        # what the class report's resubmission check reads. Results stored before it existed have '' and are
        # read from their json by that check (only students with several files): nothing to fill in here.
        "ALTER TABLE results ADD COLUMN verdicts TEXT NOT NULL DEFAULT ''",
    ),
)
assert len(MIGRATIONS) == SCHEMA_VERSION


class GradebookError(Exception):
    """A gradebook file that cannot be used: not a gradebook, damaged, or written by a newer grader."""


def utc_now() -> str:
    """Fixed-width UTC ISO time, so text order is time order (history and merge sort on it)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


class Gradebook:
    """One gradebook file. Use from one thread at a time (the batch's coordinator)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._shared: dict[str, dict[tuple[str, str], tuple[str, str]]] = {}   # rubric_sha256 -> shared values
        self._same: dict[int, tuple[Any, str]] = {}    # values found to be a shared value's JSON (see _compact)
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE ... COMMIT), never implicit.
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as error:
            raise GradebookError(f"{self.path}: cannot open the gradebook: {error}") from error
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA journal_mode = WAL")
            # With WAL, NORMAL survives any crash of the grader (kill -9); only an OS crash or power loss may
            # drop the last few commits, and even then the file stays consistent.
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise GradebookError(f"{self.path}: not a usable gradebook: {error}") from error
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def checkpoint(self) -> None:
        """Copy what the write-ahead log holds into the database file now, as closing the last connection does
        (a passive checkpoint: it waits for no reader and no writer). A batch asks while its last submission is
        graded, so that closing at its end has only the last results left to copy and sync."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:   # busy or not possible now: closing does it, as before
            pass

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """All or nothing, also on Ctrl-C: BaseException rolls back before it propagates."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            self._shared.clear()      # it may hold shared values of the rolled-back transaction
            self._same.clear()
            raise
        self._db.execute("COMMIT")

    def _migrate(self) -> None:
        with self._transaction() as db:
            version = _schema_version(db, self.path)
            if version > SCHEMA_VERSION:
                raise GradebookError(
                    f"{self.path}: gradebook schema version {version} is newer than this grader understands "
                    f"(version {SCHEMA_VERSION}); upgrade puzzle-grader to open it")
            if version == 0 and _user_tables(db):
                raise GradebookError(f"{self.path}: this SQLite file is not a puzzle-grader gradebook "
                                     f"(it has tables but no schema_version)")
            for step in MIGRATIONS[version:]:
                for statement in step:
                    db.execute(statement)
            if version < SCHEMA_VERSION:
                db.execute("INSERT OR REPLACE INTO schema_version (id, version) VALUES (1, ?)", (SCHEMA_VERSION,))

    # -- queries -----------------------------------------------------------------------------------------

    def current(self, rubric: str) -> list[SubmissionResult]:
        """The latest result of every student graded under this rubric id, sorted by student."""
        return list(self.iter_current(rubric))

    def iter_current(self, rubric: str, students: Iterable[str] | None = None) -> Iterator[SubmissionResult]:
        """The current results of a rubric (or of `students` among them), one at a time, sorted by student.

        One result is decoded at a time, so a report over 10,000 students holds one in memory, not the class.
        """
        ids = self._db.execute(
            """SELECT s.student, s.current_result FROM submissions s
               WHERE s.rubric = ? AND s.current_result IS NOT NULL ORDER BY s.student""", (rubric,)).fetchall()
        wanted = set(students) if students is not None else None
        for student, result_id in ids:
            if wanted is None or student in wanted:
                yield self._load(result_id)

    def result(self, student: str, rubric: str) -> SubmissionResult | None:
        """The student's current result under this rubric, whole (every case), or None."""
        row = self._db.execute("SELECT current_result FROM submissions WHERE student = ? AND rubric = ?",
                               (student, rubric)).fetchone()
        return self._load(row[0]) if row and row[0] is not None else None

    def _load(self, result_id: int) -> SubmissionResult:
        rubric_sha256, text = self._db.execute("SELECT rubric_sha256, json FROM results WHERE id = ?",
                                               (result_id,)).fetchone()
        return from_dict(_restore(json.loads(text), self._shared_values(self._db, rubric_sha256)))

    def _insert(self, db: sqlite3.Connection, submission_id: int, source: str, result: SubmissionResult,
                graded_at: str, *, skip_existing: bool = False, bounded: bool = False,
                form: dict | None = None) -> int | None:
        shared = self._shared_values(db, result.rubric_sha256)
        if not bounded:
            result, form = bound_result(result), None   # bounded like the JSON file: no answer too big for SQLite
        if len(self._same) > _SAME_LIMIT:
            self._same.clear()
        data = _compact(db, form if form is not None else stored_form(result), result.rubric_sha256, shared,
                        self._same)
        return _insert_result(db, submission_id, source, result, graded_at, data, skip_existing=skip_existing)

    def _shared_values(self, db: sqlite3.Connection, rubric_sha256: str) -> dict[tuple[str, str], tuple[str, str]]:
        if rubric_sha256 not in self._shared:
            self._shared[rubric_sha256] = _read_shared(db, rubric_sha256)
        return self._shared[rubric_sha256]

    def columns(self, rubric: str) -> list[str]:
        """Exercise ids of the rubric's current results, in rubric order (first position seen)."""
        rows = self._db.execute(
            """SELECT sc.exercise, min(sc.position), min(sc.result_id) FROM scores sc
               JOIN submissions s ON s.current_result = sc.result_id WHERE s.rubric = ?
               GROUP BY sc.exercise ORDER BY min(sc.position), min(sc.result_id)""", (rubric,))
        return [exercise for exercise, _, _ in rows]

    def score_rows(self, rubric: str, student: str | None = None) -> Iterator[ScoreRow]:
        """Every student's current scores (no cases), sorted by student: what the CSV and the table need.
        With `student`, that student's row alone (none when the student has no result)."""
        if student is None:
            return self._score_rows("s.rubric = ?", (rubric,))
        return self._score_rows("s.rubric = ? AND s.student = ?", (rubric, student))

    def unchanged_row(self, rubric: str, student: str, sha256: str, rubric_sha256: str,
                      grader_version: str) -> ScoreRow | None:
        """The student's current scores when its CURRENT result was graded from this file with this rubric and
        grader, else None: what a regrade asks of every student (a second query, for the scores, only when it is).
        Only the current result counts: a student who goes back to an older file after submitting a newer one
        is graded again, or the gradebook would keep showing the newer file's grade."""
        return next(self._score_rows(
            "s.rubric = ? AND s.student = ? AND r.sha256 = ? AND r.rubric_sha256 = ? AND r.grader_version = ?",
            (rubric, student, sha256, rubric_sha256, grader_version)), None)

    def back_to_older(self, rubric: str, student: str, sha256: str) -> tuple[str, str] | None:
        """When grading this file would make an older file the student's current one again: (source, graded_at) of
        the current result, a file graded after this one was, else None. A TA who regraded one student from the
        file they sent later (`grade fixed/smith.ipynb`) and then reran the class's export had the export's older
        file graded again and made current without a word (a student's pick among files is not the batch's)."""
        # One query (the batch asks it of every student it grades): the file's latest grading is looked up under
        # the student's submission row, by the results_identity index, and compared with the current result's.
        found = self._db.execute(
            """SELECT s.source, r.graded_at FROM submissions s JOIN results r ON r.id = s.current_result
               WHERE s.rubric = ? AND s.student = ? AND s.sha256 != ?
                 AND (SELECT max(o.graded_at) FROM results o WHERE o.submission_id = s.id AND o.sha256 = ?)
                     < r.graded_at""", (rubric, student, sha256, sha256)).fetchone()
        return (found[0], found[1]) if found is not None else None

    def _score_rows(self, where: str, parameters: tuple[str, ...]) -> Iterator[ScoreRow]:
        # Columns only, from the results_heads index: the result's json is neither parsed nor read. The heads
        # and the scores are two queries walked side by side (both by student), not a join that repeats a
        # head's columns on each of its dozen score rows.
        current = "FROM submissions s JOIN results r INDEXED BY results_heads ON r.id = s.current_result"
        heads = self._db.execute(
            f"""SELECT s.student, r.total, r.max_total, r.state, r.isolation, r.late, r.penalty, r.busy, r.incidents
                {current} WHERE {where} ORDER BY s.student""", parameters)
        scores: Iterator[tuple[str, str, float, float | None]] | None = None
        pending: tuple[str, str, float, float | None] | None = None
        for student, total, max_total, state, isolation, late, penalty, busy, seen in heads:
            row = ScoreRow(student, total, max_total, state, isolation, {}, bool(late), float(penalty), busy,
                           _incidents(seen))
            if scores is None:   # asked once a head is found: a changed student's check makes one query
                scores = self._db.execute(
                    f"""SELECT s.student, sc.exercise, sc.score, sc.forfeited {current}
                        JOIN scores sc ON sc.result_id = r.id
                        WHERE {where} ORDER BY s.student, sc.position""", parameters)
                pending = next(scores, None)
            while pending is not None and pending[0] == student:
                row.scores[pending[1]] = pending[2]
                if pending[3] is not None:
                    row.forfeited[pending[1]] = pending[3]
                pending = next(scores, None)
            yield row

    def incident_rows(self, rubric: str) -> Iterator[ScoreRow]:
        """The score rows of the students whose current result holds incidents (grader.incidents)."""
        return self._score_rows("s.rubric = ? AND r.incidents != ''", (rubric,))

    def identities(self, rubric: str) -> Iterator[tuple[str, str]]:
        """(student, identity) of every student's current result, sorted by student: the identity names one
        grading (when, of which file, rubric and grader), so an output written from a result it names is what the
        result would give again (a result row is never changed; a regrade or a merge makes a new current one).
        Read from the rows' columns: no result is decoded."""
        rows = self._db.execute(
            """SELECT s.student, r.graded_at, r.sha256, r.rubric_sha256, r.grader_version
               FROM submissions s JOIN results r ON r.id = s.current_result
               WHERE s.rubric = ? ORDER BY s.student""", (rubric,))
        for student, graded_at, sha256, rubric_sha256, grader_version in rows:
            yield student, f"{graded_at} {sha256} {rubric_sha256} {grader_version}"

    def same_files(self, rubric: str) -> tuple[SameFile, ...]:
        """Ids whose current results were graded from the same file's bytes from different places (twins.py):
        one student graded under two ids, or a copy, for the TA to decide. Read from the rows' columns: the state
        from the results_heads index, as a row's columns after its json are read only through that json's overflow
        pages (200 correct Taoistic results: 4.0-5.5 ms of CPU, at every `grade`'s end, against 1.1-1.2)."""
        rows = self._db.execute(
            """SELECT s.student, h.sha256, r.source, h.state
               FROM submissions s JOIN results h INDEXED BY results_heads ON h.id = s.current_result
               JOIN results r ON r.id = s.current_result
               WHERE s.rubric = ? ORDER BY s.student""", (rubric,))
        return same_files(rows)

    def probing(self, rubric: str) -> list[Probing]:
        """Students whose graded files moved hidden verdicts while every public one stayed (store.verdicts), by
        student. Only students with enough gradings of two files or more are read (their rows' verdict bits, or a
        row's json when it was stored before the bits were): a class that each submitted once reads none."""
        rows = self._db.execute(
            """SELECT s.student, r.sha256, r.rubric_sha256, r.verdicts, CASE WHEN r.verdicts = '' THEN r.json END
               FROM submissions s JOIN results r ON r.submission_id = s.id
               WHERE s.rubric = ? AND r.state = 'graded' AND s.id IN (
                   SELECT submission_id FROM results WHERE state = 'graded' GROUP BY submission_id
                   HAVING count(*) >= ? AND count(DISTINCT sha256) >= 2)
               ORDER BY s.student, r.graded_at, r.id""", (rubric, VERDICT_FILES))
        found: list[Probing] = []
        gradings: list[tuple[str, str, str]] = []
        student = None
        for name, sha256, rubric_sha256, verdicts, text in rows:
            if name != student and student is not None:
                found += [p for p in (probing(student, gradings),) if p is not None]
                gradings = []
            student = name
            gradings.append((sha256, rubric_sha256, verdicts if text is None else _json_bits(text)))
        if student is not None:
            found += [p for p in (probing(student, gradings),) if p is not None]
        return found

    def durations(self, rubric: str) -> dict[str, float]:
        """How long each student's current result took to grade (its `seconds`), by student: what orders a
        regrade longest first. Failed results (stopped, or their worker died) and unknown times are left out.
        From the results_heads index: the two columns come after the json (see same_files)."""
        rows = self._db.execute(
            """SELECT s.student, r.seconds FROM submissions s JOIN results r INDEXED BY results_heads
               ON r.id = s.current_result WHERE s.rubric = ? AND r.state = 'graded' AND r.seconds > 0""", (rubric,))
        return {student: float(seconds) for student, seconds in rows}

    def counts(self, rubric: str) -> dict[str, int]:
        """How many students of the rubric are in each state (results.STATES)."""
        rows = self._db.execute(
            """SELECT r.state, count(*) FROM submissions s JOIN results r ON r.id = s.current_result
               WHERE s.rubric = ? GROUP BY r.state""", (rubric,))
        return {state: count for state, count in rows}

    def summaries(self, rubric: str) -> dict[str, SubmissionResult]:
        """The current result of every student as scores only (exercises without their cases), by student.

        What a regrade of an unchanged class needs for its table and CSV, without decoding every full result.
        """
        heads = self._db.execute(
            """SELECT s.student, r.id, r.sha256, r.source, r.rubric_sha256, r.grader_version, r.isolation,
                      r.total, r.max_total
               FROM submissions s JOIN results r ON r.id = s.current_result
               WHERE s.rubric = ? ORDER BY s.student""", (rubric,)).fetchall()
        scores: dict[int, list[ExerciseResult]] = {}
        for result_id, exercise, score, max_score in self._db.execute(
                """SELECT sc.result_id, sc.exercise, sc.score, sc.max_score FROM scores sc
                   JOIN submissions s ON s.current_result = sc.result_id
                   WHERE s.rubric = ? ORDER BY sc.result_id, sc.position""", (rubric,)):
            scores.setdefault(result_id, []).append(ExerciseResult(exercise, exercise, score, max_score, ()))
        return {student: SubmissionResult(
                    submission=student, path=source, sha256=sha256, rubric=rubric, rubric_sha256=rubric_sha256,
                    grader_version=version, isolation=isolation, total=total, max_total=max_total,
                    exercises=tuple(scores.get(result_id, ())))
                for student, result_id, sha256, source, rubric_sha256, version, isolation, total, max_total in heads}

    def history(self, student: str, rubric: str) -> list[tuple[str, float, str]]:
        """(graded_at, total, rubric_sha256) of every grading of the student's work, oldest first."""
        rows = self._db.execute(
            """SELECT r.graded_at, r.total, r.rubric_sha256 FROM results r
               JOIN submissions s ON s.id = r.submission_id
               WHERE s.student = ? AND s.rubric = ? ORDER BY r.graded_at, r.id""", (student, rubric))
        return [(graded_at, total, rubric_sha256) for graded_at, total, rubric_sha256 in rows]

    def changed_since(self, rubric: str, since: str) -> list[GradeChange]:
        """Students graded at or after `since` whose score (after the late penalty) is not what their grading
        before said, with what differs between the two: a TA who regrades after a rubric fix, or a grader update,
        learns whose grade moved. Read from the rows' columns: no result is decoded."""
        rows = self._db.execute(
            """SELECT s.student, cur.total - cur.penalty, cur.sha256, cur.rubric_sha256, cur.grader_version,
                      cur.state, old.total - old.penalty, old.sha256, old.rubric_sha256, old.grader_version,
                      old.state
               FROM submissions s JOIN results cur ON cur.id = s.current_result
               JOIN results old ON old.id = (SELECT r.id FROM results r WHERE r.submission_id = s.id
                                             AND r.graded_at < cur.graded_at ORDER BY r.graded_at DESC, r.id DESC
                                             LIMIT 1)
               WHERE s.rubric = ? AND cur.graded_at >= ? ORDER BY s.student""", (rubric, since))
        changes = []
        for student, after, sha256, rubric_sha256, version, state, before, *old in rows:
            if abs(after - before) < 1e-9 and state == old[3]:
                continue
            why = tuple(said for differs, said in ((sha256 != old[0], "another file"),
                                                   (rubric_sha256 != old[1], "the rubric changed"),
                                                   (version != old[2], f"grader {old[2]} -> {version}"),
                                                   (state != old[3], f"was {old[3]}")) if differs)
            changes.append(GradeChange(student, before, after, why))
        return changes

    def rubrics(self) -> list[str]:
        """Rubric ids with at least one current result, sorted."""
        return [rubric for (rubric,) in self._db.execute(
            "SELECT DISTINCT rubric FROM submissions WHERE current_result IS NOT NULL ORDER BY rubric")]

    def students(self, rubric: str) -> list[str]:
        rows = self._db.execute(
            "SELECT student FROM submissions WHERE rubric = ? AND current_result IS NOT NULL ORDER BY student",
            (rubric,))
        return [student for (student,) in rows]

    # -- writes ------------------------------------------------------------------------------------------

    def record(self, student: str, source: str, result: SubmissionResult, *, bounded: bool = False,
               form: dict | None = None) -> None:
        """Store a fresh grading as the student's current result; earlier ones stay as history.

        `bounded`: the result is already within every bound (as grade_path returns it): not measured again.
        `form`: that bounded result's results.stored_form, when the caller made it for its file too (the
        gradebook is its last reader: it is changed here).
        """
        with self._transaction() as db:
            submission_id = _submission(db, student, result.rubric, result.sha256, source)
            latest = db.execute("SELECT max(graded_at) FROM results WHERE submission_id = ?",
                                (submission_id,)).fetchone()[0]
            result_id = self._insert(db, submission_id, source, result, _after(utc_now(), latest), bounded=bounded,
                                     form=form)
            assert result_id is not None   # a fresh insert always has an id (only skip_existing gives None)
            _make_current(db, submission_id, result_id)

    def merge(self, other: Path) -> int:
        """Import every result of another gradebook file (graded on another machine, say).

        For each (student, rubric) the result with the newest graded_at becomes current, whichever file it
        came from. A result already here (same student, rubric, sha256, rubric_sha256, grader_version and
        graded_at) is skipped, so merging the same file twice imports nothing the second time. One
        transaction: an interrupted merge imports nothing. Returns the number of results imported.
        """
        other = Path(other)
        if not other.is_file():
            raise GradebookError(f"{other}: no such gradebook file")
        try:
            source_db = sqlite3.connect(other.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
        except sqlite3.Error as error:
            raise GradebookError(f"{other}: cannot open the gradebook: {error}") from error
        try:
            try:
                version = _schema_version(source_db, other)
            except sqlite3.DatabaseError as error:
                raise GradebookError(f"{other}: not a usable gradebook: {error}") from error
            if version != SCHEMA_VERSION:
                newer = version > SCHEMA_VERSION
                raise GradebookError(
                    f"{other}: gradebook schema version {version} cannot be merged into version {SCHEMA_VERSION}"
                    + ("; upgrade puzzle-grader" if newer else
                       "; open it once with this grader to upgrade it" if version else
                       " (not a puzzle-grader gradebook)"))
            rows = source_db.execute(
                """SELECT s.student, s.rubric, r.source, r.graded_at, r.rubric_sha256, r.json FROM results r
                   JOIN submissions s ON s.id = r.submission_id ORDER BY r.graded_at, r.id""")
            imported = 0
            touched: set[int] = set()
            theirs: dict[str, dict[tuple[str, str], tuple[str, str]]] = {}
            with self._transaction() as db:
                for student, rubric, source, graded_at, rubric_sha256, text in rows:
                    if rubric_sha256 not in theirs:
                        theirs[rubric_sha256] = _read_shared(source_db, rubric_sha256)
                    result = from_dict(_restore(json.loads(text), theirs[rubric_sha256]))
                    submission_id = _submission(db, student, rubric, result.sha256, source)
                    if self._insert(db, submission_id, source, result, graded_at, skip_existing=True):
                        imported += 1
                        touched.add(submission_id)
                for submission_id in touched:
                    newest = db.execute(
                        "SELECT id FROM results WHERE submission_id = ? ORDER BY graded_at DESC, id DESC LIMIT 1",
                        (submission_id,)).fetchone()[0]
                    _make_current(db, submission_id, newest)
            return imported
        finally:
            source_db.close()


@dataclass(frozen=True)
class GradeChange:
    """A student's score moved between two gradings (Gradebook.changed_since)."""

    student: str
    before: float                  # the score after the late penalty, as graded before
    after: float                   # and now
    why: tuple[str, ...]           # what differs between the two gradings (none: the same inputs scored again)

    def text(self) -> str:
        return f"{self.student} {self.before:g} -> {self.after:g} ({', '.join(self.why) or 'graded again'})"


SHOWN_CHANGES = 10


def grade_change_line(path: Path | None, rubric: str, since: str) -> str:
    """For the terminal after a batch: whose score moved from its grading before (the first ten), and why. ""
    when none did (or there is no gradebook)."""
    if path is None or not path.is_file():
        return ""
    with Gradebook(path) as book:
        changes = book.changed_since(rubric, since)
    if not changes:
        return ""
    more = len(changes) - SHOWN_CHANGES
    return (f"{len(changes)} score{'s' if len(changes) != 1 else ''} changed from the grading before: "
            f"{'; '.join(change.text() for change in changes[:SHOWN_CHANGES])}"
            + (f"; and {more} more (the gradebook's history keeps each)" if more > 0 else ""))


def incident_line(path: Path | None, rubric: str, students: Iterable[str],
                  given: Mapping[str, set[str]] | None = None) -> str:
    """For the terminal after a batch: which of `students` have incidents in their current result (the sandbox
    stopped what only hostile code does: grader.incidents), with the facts; "" when none (or no gradebook). The
    --forgive hint only while some policy cost stands: `given`, student -> the exercises a TA's override gives
    points (overrides.forgiven_in), are said forgiven."""
    if path is None or not path.is_file():
        return ""
    given = given or {}
    wanted = set(students)
    with Gradebook(path) as book:
        seen = [row for row in book.incident_rows(rubric) if row.student in wanted]
    if not seen:
        return ""
    cells = [(row.student, row.forfeited, sorted(given.get(row.student, set()) & set(row.forfeited)), row.incidents)
             for row in seen]
    standing = any(points for _, taken, gone, _ in cells for exercise, points in taken.items() if exercise not in gone)
    forgive = (" (an incident the TA finds honest: `grader override STUDENT EXERCISE --forgive --why ...` gives "
               "back what the policy took)" if standing else "")
    return (f"{len(seen)} submission{'s' if len(seen) != 1 else ''} with incidents (the sandbox stopped what no "
            f"solution does; the rubric's `incidents:` policy scored it): "
            + "; ".join(f"{student}: {incident_cell(incidents, taken, gone)}"
                        for student, taken, gone, incidents in cells[:SHOWN_CHANGES])
            + (f"; and {len(seen) - SHOWN_CHANGES} more (the CSV's incidents column)" if len(seen) > SHOWN_CHANGES
               else "") + forgive)


def incident_cell(incidents: Iterable[Incident], taken: Mapping[str, float], forgiven: Iterable[str] = ()) -> str:
    """What the TA reads of a result's incidents (the CSV's `incidents` cell, grade's line, the class report): what
    was seen (grader.incidents.for_the_ta), then the points the policy took from each exercise (ExerciseResult.
    forfeited), which `grader override STUDENT EXERCISE --forgive` gives back, and those a TA gave back
    (`forgiven`: overrides.forgiven)."""
    seen = for_the_ta(tuple(incidents))
    gone = set(forgiven)
    took = ", ".join(f"{exercise} {points:g}" for exercise, points in taken.items() if points and exercise not in gone)
    back = ", ".join(f"{exercise} {points:g}" for exercise, points in taken.items() if points and exercise in gone)
    return "; ".join(part for part in (seen, f"points the policy took: {took}" if took and seen else "",
                                       f"forgiven by a TA: {back}" if back and seen else "") if part)


def same_file_lines(path: Path | None, rubric: str) -> list[str]:
    """For the terminal after a batch: the class's ids graded from one file's bytes from different places
    (store.twins): one student under two ids, or a copy. Of the whole gradebook at `path`, not of one batch: a
    renamed file's old id is there. None or no gradebook yet: nothing to say."""
    if path is None or not path.is_file():
        return []
    with Gradebook(path) as book:
        return warning_lines(book.same_files(rubric))


def merge_files(into: Path, others: Iterable[Path]) -> list[tuple[Path, int]]:
    """Merge each gradebook of `others` into the one at `into` (Gradebook.merge): each with how many of its
    results were merged."""
    with Gradebook(into) as book:
        return [(other, book.merge(other)) for other in others]


def _schema_version(db: sqlite3.Connection, path: Path) -> int:
    """0 for a file without a schema_version table (new, or not a gradebook)."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").fetchone():
        return 0
    row = db.execute("SELECT version FROM schema_version WHERE id = 1").fetchone()
    if row is None:
        raise GradebookError(f"{path}: the gradebook's schema_version table is empty")
    return int(row[0])


def _user_tables(db: sqlite3.Connection) -> list[str]:
    return [name for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]


def _after(now: str, latest: str | None) -> str:
    """`now`, or one microsecond after the latest grading if the clock is not past it (a fast loop, a clock
    set back, a merged result from a machine whose clock runs ahead): history order is recording order."""
    if latest is None or now > latest:
        return now
    return (datetime.fromisoformat(latest) + timedelta(microseconds=1)).isoformat(timespec="microseconds")


def _submission(db: sqlite3.Connection, student: str, rubric: str, sha256: str, source: str) -> int:
    """The id of the (student, rubric) row, created if new; its sha256/source follow the current result.

    `source` names a file: an undecodable byte in it (a surrogate escape) is stored as U+FFFD, since SQLite
    text is UTF-8.
    """
    source = textsafe.unicode(source)
    db.execute("INSERT OR IGNORE INTO submissions (student, rubric, sha256, source) VALUES (?, ?, ?, ?)",
               (student, rubric, sha256, source))
    return db.execute("SELECT id FROM submissions WHERE student = ? AND rubric = ?",
                      (student, rubric)).fetchone()[0]



@dataclass
class ScoreRow:
    """One student's current scores, without cases: a row of the CSV or the terminal table."""

    student: str
    total: float
    max_total: float
    state: str
    isolation: str
    scores: dict[str, float]          # exercise id -> score
    late: bool = False
    penalty: float = 0.0              # the late policy's, apart from `total`
    busy: int = 0                     # cases a busy machine kept from being judged: the next run grades it again
    incidents: tuple[Incident, ...] = ()   # what the sandbox stopped that only hostile code does (grader.incidents)
    forfeited: dict[str, float] = field(default_factory=dict)   # exercise id -> score the incident policy took


def _incidents(text: str) -> tuple[Incident, ...]:
    """A results row's `incidents` column: the result's own list, as JSON ('' none)."""
    if not text:
        return ()
    try:
        return tuple(incident_from_json(item) for item in json.loads(text) if isinstance(item, dict))
    except (ValueError, TypeError):
        return ()


def _json_bits(text: str) -> str:
    try:
        return bits_of_json(json.loads(text))
    except ValueError:
        return ""


def _read_shared(db: sqlite3.Connection, rubric_sha256: str) -> dict[tuple[str, str], tuple[str, str]]:
    return {(exercise, case): (call, expected) for exercise, case, call, expected in db.execute(
        "SELECT exercise, case_id, call, expected FROM shared_values WHERE rubric_sha256 = ?", (rubric_sha256,))}


def _value_text(value: object) -> str:
    return textsafe.json_text(value, sort_keys=True, separators=(",", ":"))


def _compact(db: sqlite3.Connection, data: dict, rubric_sha256: str,
             shared: dict[tuple[str, str], tuple[str, str]], same: dict[int, tuple[Any, str]]) -> dict:
    """`data` without the call and expected value of every case whose values are the rubric's shared ones.

    The first result of a rubric defines them; a case whose values differ (a result graded with another
    `expect:`, say) keeps its own, so reading back always gives exactly what was recorded. `same` remembers,
    by identity, the values already found to be a shared value's JSON: a batch's results hold the plan's own
    expected objects, so each is compared once per batch, not once per student.
    """
    for exercise in data["exercises"]:
        for case in exercise["cases"]:
            key = (exercise["id"], case["id"])
            if key not in shared:   # first come, first stored; another process may have come first
                db.execute("INSERT OR IGNORE INTO shared_values (rubric_sha256, exercise, case_id, call, expected) "
                           "VALUES (?, ?, ?, ?, ?)",
                           (rubric_sha256, key[0], key[1], case["call"], _value_text(case["expected"])))
                shared[key] = db.execute(
                    "SELECT call, expected FROM shared_values WHERE rubric_sha256 = ? AND exercise = ? AND case_id = ?",
                    (rubric_sha256, key[0], key[1])).fetchone()
            call, shared_expected = shared[key]
            if case["call"] == call:
                del case["call"]
            if _known_same(case["expected"], shared_expected, same):
                # A right answer is the expected value: most of a class stores nothing. The judge hands a
                # right answer over as the expected value itself, so most need no comparison at all.
                if "got" in case and (case["got"] is case["expected"] or _same_json(case["got"], shared_expected)):
                    del case["got"]
                del case["expected"]
    return data


_SAME_LIMIT = 100_000    # values a gradebook remembers as shared (a plan has a few hundred)


def _known_same(value: Any, text: str, same: dict[int, tuple[Any, str]]) -> bool:
    """_same_json, remembered by the value's identity (the value is held, so its id names no other object)."""
    known = same.get(id(value))
    if known is not None and known[0] is value and known[1] == text:
        return True
    if not _same_json(value, text):
        return False
    same[id(value)] = (value, text)
    return True


def _same_json(value: Any, text: str) -> bool:
    """Whether `value`'s JSON is `text` (a shared value's), mostly without encoding it: `==` first (different
    values differ there at C speed), then the pickled forms, which match only for the same types (1 is not
    True, 0.0 is not -0.0); when they do not match (keys in another order), the JSON texts decide."""
    try:
        shared = _parsed(text)
        if value != shared:
            return False
        if pickle.dumps(value, protocol=5) == _pickled(text):
            return True
    except RecursionError:   # too deep for == or pickle: the encoder decides
        pass
    return _value_text(value) == text


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Any:
    """A shared value, parsed once per batch (the same text object comes back for every student). Read only."""
    return json.loads(text)


@functools.lru_cache(maxsize=4096)
def _pickled(text: str) -> bytes:
    return pickle.dumps(_parsed(text), protocol=5)


def _restore(data: dict, shared: dict[tuple[str, str], tuple[str, str]]) -> dict:
    """The whole result again: a case without `call` or `expected` takes the rubric's shared value, and one
    without `got` (only ever left out when it equals the shared expected value) takes that too.

    The shared value is parsed once and the same object is every result's (as a batch's results share the
    plan's expected objects): parsing it again for each case of each student was most of reading a class back.
    Values are read only."""
    for exercise in data["exercises"]:
        for case in exercise["cases"]:
            if "call" not in case or "expected" not in case or "got" not in case:
                call, expected = shared[(exercise["id"], case["id"])]
                case.setdefault("call", call)
                if "expected" not in case:
                    case["expected"] = _parsed(expected)
                if "got" not in case:
                    case["got"] = _parsed(expected)
    return data


def _insert_result(db: sqlite3.Connection, submission_id: int, source: str, result: SubmissionResult,
                   graded_at: str, data: dict, *, skip_existing: bool = False) -> int | None:
    """Insert a result and its per-exercise scores; with skip_existing, None when it is already stored.

    Any string: a lone surrogate stays as a \\udXXX escape in the JSON (textsafe.json_text); the source, a file
    name that may hold an undecodable byte, is stored with U+FFFD (SQLite text is UTF-8).
    """
    # In the result's own key order (not sorted): a result JSON rewritten from this row is the same bytes as the first.
    text = textsafe.json_text(data)
    cursor = db.execute(
        f"""INSERT {'OR IGNORE' if skip_existing else ''} INTO results
                (submission_id, sha256, source, rubric_sha256, grader_version, isolation, total, max_total,
                 exercise_count, graded_at, json, state, late, penalty, busy, seconds, incidents, verdicts)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (submission_id, result.sha256, textsafe.unicode(source), result.rubric_sha256, result.grader_version,
         result.isolation, float(result.total), float(result.max_total), len(result.exercises), graded_at, text,
         result.state, int(bool(result.late)), float(result.penalty), not_judged(result)[1], float(result.seconds),
         textsafe.json_text([incident_to_json(i) for i in result.incidents]) if result.incidents else "",
         verdict_bits(result.exercises)))
    if cursor.rowcount == 0:
        return None
    result_id = cursor.lastrowid
    db.executemany(
        "INSERT INTO scores (result_id, position, exercise, score, max_score, forfeited) VALUES (?, ?, ?, ?, ?, ?)",
        [(result_id, position, exercise.id, float(exercise.score), float(exercise.max_score),
          None if exercise.forfeited is None else float(exercise.forfeited))
         for position, exercise in enumerate(result.exercises)])
    return result_id


def _make_current(db: sqlite3.Connection, submission_id: int, result_id: int) -> None:
    # Plain UPDATE (no UPDATE ... FROM, no upsert): works with the SQLite of older Python builds too.
    sha256, source = db.execute("SELECT sha256, source FROM results WHERE id = ?", (result_id,)).fetchone()
    db.execute("UPDATE submissions SET current_result = ?, sha256 = ?, source = ? WHERE id = ?",
               (result_id, sha256, source, submission_id))
