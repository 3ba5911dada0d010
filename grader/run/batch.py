"""Library entry points behind the CLI: grade many submissions, self-check one."""

from __future__ import annotations

import gc
import json
import os
import time
import hashlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Sequence

from grader.files import write_bytes
from grader import __version__
from grader.store.gradebook import Gradebook, ScoreRow
from grader.intake.gather import RESULTS_MARK, WORKSHEETS, Entry, gather, keep_former_ids, read_mark
from grader.intake.notebook import MAX_SUBMISSION_BYTES, file_sha256
from grader.rubric.lateness import LATE_SHARE, HandIn, Lateness, LatePolicy, assess, copied_times, penalty_of
from grader.judge.options import Options
from grader.plan.sealed import default_cache
from grader.store.results import (NO_CODE, NO_SUBMISSION, ExerciseResult, SubmissionResult, from_dict, not_judged,
                                  stored_form, stored_form_of, write_json)
from grader.store.shared import SharedWriter
from grader.rubric.schema import Rubric, load_rubric
from grader.run.beside import start_sandboxes, stop_sandboxes
from grader.sandbox.supervisor import can_fork, temp_root

if TYPE_CHECKING:   # the grading machinery (judge, sandbox, extractor, plan) is imported when a submission runs
    from grader.plan.cases import Plan
    from grader.run.executor import Done, Executor, Job
    from grader.run.executor_dask import Connection

SUBMISSION_SUFFIXES = (".ipynb", ".py")


@dataclass
class Batch:
    """What a batch did, as counters: results stream to disk (JSON, gradebook) as they finish, and the batch
    keeps only the students' names and counts, so its memory does not grow with the class beyond a name.

    `rows` and `results` read this batch's students back from the gradebook (or, without one, keeps them).
    """

    students: list[str] = field(default_factory=list)     # this batch's students, in intake order
    graded: int = 0                                       # graded in this run (their cases ran)
    unreadable: int = 0                                   # in this run: the file could not be read
    absent: int = 0                                       # in this run: the LMS names them, no file of theirs came
    unchanged: int = 0                                    # not graded again: same file, rubric and grader
    failed: list[str] = field(default_factory=list)       # the grader could not finish these (see their reasons)
    failed_before: list[str] = field(default_factory=list)  # unchanged, and their stored result is still `failed`
    reasons: dict[str, str] = field(default_factory=dict)  # student -> why it failed
    mismatch: dict[str, str] = field(default_factory=dict)  # student -> "does not look like <assignment>" (now, or
                                                            # unchanged since: a rerun exits 3 as the first run did)
    problems: list[str] = field(default_factory=list)     # intake: unreadable entries, skipped
    notes: list[str] = field(default_factory=list)        # intake: decisions such as several notebooks
    levels: Counter[str] = field(default_factory=Counter)  # isolation level -> this batch's students with it
    grader_problems: dict[str, int] = field(default_factory=dict)  # student -> cases a rubric check crashed on
    busy: dict[str, int] = field(default_factory=dict)   # student -> cases a busy machine kept from being judged
    seconds: float = 0.0
    gradebook: Path | None = None
    rubric: str = ""
    _kept: dict[str, SubmissionResult] = field(default_factory=dict, repr=False)   # only without a gradebook

    @property
    def skipped(self) -> int:
        return len(self.problems)

    @property
    def isolation(self) -> dict[str, int]:
        """Isolation levels of this batch's results with their counts, commonest first."""
        return dict(sorted(self.levels.items(), key=lambda item: (-item[1], item[0])))

    @property
    def rows(self) -> list[ScoreRow]:
        """This batch's students' current scores (no cases), in intake order: read when asked (the table)."""
        if self.gradebook is None:
            found = {s: _row(r) for s, r in self._kept.items()}
        else:
            wanted = set(self.students)
            with Gradebook(self.gradebook) as book:
                found = {row.student: row for row in book.score_rows(self.rubric) if row.student in wanted}
        return [found[s] for s in self.students if s in found]

    @property
    def results(self) -> list[SubmissionResult]:
        """This batch's students' current results, whole (every case), in intake order."""
        if self.gradebook is None:
            return [self._kept[s] for s in self.students if s in self._kept]
        with Gradebook(self.gradebook) as book:
            found = {r.submission: r for r in book.iter_current(self.rubric, self.students)}
        return [found[s] for s in self.students if s in found]


def _failure_result(plan: Plan, job: Job, reason: str) -> SubmissionResult:
    from grader.intake.warning import Kind
    from grader.judge.grading import empty_result
    path = Path(job.path)
    return replace(empty_result(path, plan, file_sha256(path), reason, time.monotonic(), job.student,
                                Kind.FAILED), state="failed")


def _unreadable(plan: Plan, entry: Entry, extracted: Path) -> SubmissionResult:
    """The zero of a file that cannot be read; `no submission` when the LMS says no file came (entry.nothing)."""
    from grader.judge.grading import empty_result
    return replace(empty_result(entry.path, plan, file_sha256(entry.path), f"{entry.source}: {entry.problem}",
                                 time.monotonic(),
                                 entry.student), path=_recorded_path(entry.path, entry.source, extracted),
                   state=NO_SUBMISSION if entry.nothing else "unreadable")


def _recorded_path(path: str | Path, source: str, extracted: Path, resolved: bool = False) -> str:
    """The `path` a result records: the file's absolute path, or for an archive member (extracted into the batch's
    temporary folder `extracted`, gone after it, and no name the TA or the student knows) its source made
    absolute, `/course/export.zip:smithjohn_12345_67890_lab.ipynb`. `resolved`: `path` is a job's, resolved
    when the job was made (not walked again, link by link, for each result)."""
    real = Path(path) if resolved else Path(path).resolve()
    return os.path.abspath(source) if real.is_relative_to(extracted) else str(real)


def _mismatch_before(book: Gradebook, assignment: str, row: ScoreRow) -> str:
    """An unchanged student's stored "does not look like the assignment" (judge.grading.mismatch_note), so a rerun
    names that notebook and exits 3 again: it said nothing and exited 0. Its result is read only where the note can
    be (over half the exercises scored 0: an absent function scores nothing), so a class that did its work reads
    none."""
    zeros = sum(1 for score in row.scores.values() if not score)
    if row.state != "graded" or len(row.scores) < 2 or 2 * zeros <= len(row.scores):
        return ""
    result = book.result(row.student, assignment)
    return result.mismatch if result is not None else ""


def _row(result: SubmissionResult) -> ScoreRow:
    return ScoreRow(result.submission, result.total, result.max_total, result.state, result.isolation,
                    {e.id: e.score for e in result.exercises}, result.late, result.penalty)


def keep_notebook(path: Path, sha256: str, out_dir: Path) -> str:
    """A content-addressed copy of the graded file under the results folder (`notebooks/<sha256><suffix>`), so
    reports find the student's code from anywhere, after a zip intake and on another machine. Returns its path
    relative to `out_dir`, or "" when the file no longer has the graded content."""
    suffix = path.suffix.lower() if path.suffix.lower() in SUBMISSION_SUFFIXES else ""
    relative = f"notebooks/{sha256}{suffix}"
    target = out_dir / relative
    if target.is_file():
        return relative
    try:
        if path.stat().st_size > MAX_SUBMISSION_BYTES:   # refused unread: nothing of it was graded
            return ""
        data = path.read_bytes()
    except OSError:
        return ""
    if hashlib.sha256(data).hexdigest() != sha256:
        return ""
    try:
        write_bytes(target, data)
    except FileNotFoundError:   # the batch's first copy: no `notebooks` folder yet
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(target, data)
    return relative


@dataclass(frozen=True)
class MergedFolder:
    """What `merge_results_folder` did: graded notebooks copied into `notebooks`, and the CSV written again."""
    notebooks: Path
    copied: int
    csv: Path
    students: int


def merge_results_folder(into: Path, others: Sequence[Path]) -> MergedFolder | None:
    """When `into` is a results folder's gradebook (`grade --out`): its CSV written again, now of the merged class
    (it still listed only this machine's students, and a TA imports that file), and the other results folders'
    copies of the graded notebooks brought beside it (each checked against its name, the file's SHA-256), so
    `report` shows every merged student's code on this machine too. None when `into` is no results folder's."""
    from grader.report.class_outputs import OUTPUTS, Classroom
    folder = into.parent
    if not (folder / RESULTS_MARK).is_file():
        return None
    copied = 0
    for other in others:
        theirs = other.parent / "notebooks"
        if theirs.is_dir() and theirs.resolve() != (folder / "notebooks").resolve():
            for copy in sorted(theirs.iterdir()):
                sha256 = copy.name.split(".")[0]
                if copy.is_file() and not (folder / "notebooks" / copy.name).exists() and len(sha256) == 64:
                    copied += bool(keep_notebook(copy, sha256, folder))
    written = OUTPUTS["csv"].write(Classroom(folder, gradebook=into), folder / "gradebook.csv")
    return MergedFolder(folder / "notebooks", copied, folder / "gradebook.csv", written.students)


def _defines(rubric: Rubric) -> Callable[[Path], int]:
    """grading.defines_counter, made when a student's several files are first compared: the extractor it
    reads them with is not imported by a batch that never has to choose."""
    counter: list[Callable[[Path], int]] = []

    def defines(path: Path) -> int:
        if not counter:
            from grader.judge.grading import defines_counter
            counter.append(defines_counter(rubric))
        return counter[0](path)
    return defines


def _entries(paths: Iterable[str | Path], workdir: Path, rubric: Rubric | None = None,
             out_dir: Path | None = None) -> tuple[list[Entry], list[str], list[str]]:
    """Every submission, with the intake's problems and notes (of a student's several notebooks, the rubric
    says which defines the most of what it grades). The run's own results folder (`out_dir`) is none of them."""
    intake = gather(list(paths), workdir, _defines(rubric) if rubric is not None else None,
                    own=(out_dir,) if out_dir is not None else ())
    return list(intake.entries), list(intake.problems), list(intake.notes)


def _with_lateness(result: SubmissionResult, entry: Entry, policy: LatePolicy | None) -> SubmissionResult:
    return _late(result, assess(_hand_in(entry), result.total, policy))


def _hand_in(entry: Entry) -> HandIn:
    return HandIn(entry.late, entry.handed_in, entry.recorded, entry.extended)


def _late(result: SubmissionResult, lateness: Lateness) -> SubmissionResult:
    """The result with this lateness; its share in `extra` when it has one, for a TA's overridden score. An `extra`
    with no share to set or drop (most of a class: on time) stays the very object, so the batch writes the worker's
    stored form as it came (results.stored_form_of) instead of making it again case by case."""
    if not lateness.share and LATE_SHARE not in result.extra:
        extra = result.extra
    else:
        extra = {key: value for key, value in result.extra.items() if key != LATE_SHARE}
        if lateness.share:
            extra[LATE_SHARE] = lateness.share
    return replace(result, late=lateness.late, submitted_at=lateness.submitted_at, penalty=lateness.penalty,
                   extra=extra)


def _undated(entry: Entry) -> bool:
    """Nothing in this intake says when or whether the file came late: an LMS export whose worksheet alone says
    so (Moodle's grading worksheet, Gradescope's metadata) graded without it. Its silence is no "on time": an
    unchanged file keeps the lateness its last grading had (a regrade of one student's folder dropped Moodle's
    late penalty from the CSV)."""
    return entry.convention in WORKSHEETS and not (entry.late or entry.handed_in or entry.recorded or entry.extended)


def _last_lateness(book: Gradebook | None, entry: Entry, sha256: str, assignment: str) -> tuple[str, float] | None:
    """(submitted_at, share of the score) of the student's last grading, when this run grades the same file again
    (--force, a changed rubric) and nothing in it dates the file (_undated) and that grading found it late: it
    keeps that lateness, as an unchanged file does (a forced regrade of one Moodle folder dropped its penalty)."""
    if book is None or not sha256 or not _undated(entry):
        return None
    last = book.result(entry.student, assignment)
    if last is None or not last.late or last.sha256 != sha256:
        return None
    share = last.extra.get(LATE_SHARE)
    if not isinstance(share, (int, float)):
        share = last.penalty / last.total if last.total > 0 else 0.0
    return last.submitted_at, float(share)


def _kept_late(result: SubmissionResult, last: tuple[str, float], policy: LatePolicy | None) -> SubmissionResult:
    """The result with the lateness of its file's last grading (_last_lateness), its penalty on this score."""
    submitted_at, share = last
    if policy is None:
        return _late(result, Lateness(True, submitted_at))
    return _late(result, Lateness(True, submitted_at, 0, penalty_of(result.total, share), share))


def _relate(book: Gradebook, row: ScoreRow, entry: Entry, rubric: Rubric, out_dir: Path | None,
            store: SharedWriter | None) -> ScoreRow:
    """An unchanged file's row, its lateness assessed again: the LMS's word may have come since it was graded (a
    worksheet given this time, an export made after a late resubmission's flag). Only a changed row is
    stored again (a new current result, the old one kept as history), so a regrade reads no result's JSON."""
    if rubric.late is None and (entry.late, 0.0) == (row.late, row.penalty):
        return row     # no policy: the flag is all there is, and it is the row's (the common regrade, ~1 µs)
    lateness = assess(_hand_in(entry), row.total, rubric.late)
    if (lateness.late, lateness.penalty) == (row.late, row.penalty) and (row.total or not lateness.late):
        return row     # (a late score of 0 has no penalty to tell its share by: its result is read)
    result = book.result(entry.student, rubric.assignment)
    if result is None:
        return row
    updated = _late(result, lateness)
    if updated == result:
        return row
    result = updated
    book.record(entry.student, entry.source, result)
    if out_dir is not None:
        write_json(result, out_dir, store=store)
    return replace(row, late=lateness.late, penalty=lateness.penalty)


def _kept_for_nothing(book: Gradebook | None, entry: Entry, assignment: str) -> ScoreRow | None:
    """The student's current row when the LMS says they handed in nothing this time (Moodle's "No submission", an
    empty submission folder) and an earlier intake graded a notebook of theirs: that notebook is still their last
    hand-in on record, and a 0 for "nothing" would replace a grade the TA expects kept. A row that graded no code
    (unreadable, no submission: nothing gradable before either) is replaced, its reason brought up to date."""
    if book is None or not entry.nothing:
        return None
    row = next(book.score_rows(assignment, entry.student), None)
    return row if row is not None and row.state not in NO_CODE else None


def missing_paths(paths: Iterable[str | Path]) -> list[str]:
    """Command-line paths that name nothing: no file or folder, and no match for a pattern."""
    import glob
    missing = []
    for raw in paths:
        text = str(raw)
        if os.path.lexists(text):
            continue
        if any(c in text for c in "*?["):
            try:
                if next(glob.iglob(text, recursive=True), None) is not None:
                    continue
            except RecursionError:   # `**` through a folder nested too deep: the intake says so (gather.add)
                continue
        missing.append(text)
    return missing


def grade_batch(paths: Iterable[str | Path], rubric: str | Path | Rubric, out: str | Path | None = None, *,
                jobs: int | None = None, options: Options = Options(), cache: Path | None = None,
                gradebook: Path | None = None, force: bool = False, executor: Executor | None = None,
                dask: str | None = None, gradescope: Path | None = None,
                on_start: Callable[[int, int], None] | None = None,
                on_result: Callable[[SubmissionResult, bool], None] | None = None) -> Batch:
    """Grade a class. Unchanged submissions (same file, rubric and grader version) are not graded again
    unless `force`; every result is written (JSON, gradebook) the moment it is finished, so an interrupted
    batch loses nothing and the next run does only what is missing.

    Exports (the CSV, and Gradescope files with `gradescope`) are derived from the gradebook: always every
    student of the rubric, whatever subset this batch graded. A result JSON missing from `out` is rewritten.
    `on_result` gets each result of this run whole, and each unchanged one as a score-only summary.
    """
    import tempfile
    started = time.monotonic()
    local = executor is None and dask is None
    # Absolute paths: a worker elsewhere (Dask) or in another folder reads the same course and cache.
    rubric = rubric if isinstance(rubric, Rubric) else load_rubric(Path(rubric).resolve())
    cache_dir = (Path(cache) if cache is not None else default_cache()).resolve()
    # Built once, when first needed (a regrade with nothing changed needs none); the workers share it.
    plans: list[Plan] = []

    def the_plan() -> Plan:
        if not plans:
            from grader.plan.cases import build_plan
            plans.append(build_plan(rubric, cache_dir))
            batch.notes[:0] = plans[0].warnings   # e.g. a cache file that did not verify: the TA should know
        return plans[0]

    out_dir = Path(out).resolve() if out is not None else None
    book_path = gradebook if gradebook is not None else (out_dir / "gradebook.sqlite" if out_dir else None)
    batch = Batch(gradebook=Path(book_path).resolve() if book_path else None, rubric=rubric.assignment)
    # The cluster answers first: a scheduler that cannot be reached leaves no results folder or gradebook behind.
    with _connected(dask, jobs) as connection, \
            tempfile.TemporaryDirectory(prefix="intake-", dir=temp_root()) as workdir:
        if out_dir is not None:
            claim_results_folder(out_dir, rubric)
        if gradescope is not None:   # the class's scores: the grader's alone, as the results folder
            own_folder(Path(gradescope))
        # The results folder's store of shared values: one writer for the batch, so each file is checked once.
        shared_values = SharedWriter(out_dir, rubric.sha256) if out_dir is not None else None
        # Whether the pool will fork its workers with the plan (executor.LocalPool: from a process of one thread),
        # asked before the batch starts a thread of its own
        forking = can_fork()
        # A gradebook made now (a class graded for the first time) is made on a thread: its creation waits ~25 ms
        # for the disk (SQLite syncs the new file, its journal and its folder), while this thread reads the class,
        # builds the plan and prepares it for the workers, which every readable notebook of a new gradebook needs.
        making = _NewGradebook(Path(book_path)) if book_path is not None and not Path(book_path).exists() else None
        early = False    # the probe and the spares started beside it (stopped at the end as the later ones)
        book: Gradebook | None = None
        started_cluster = None
        jobs_to_run: list[Job] = []
        sandboxes = False
        try:
            try:
                entries, batch.problems, batch.notes = _entries(paths, Path(workdir), rubric, out_dir)
                copied = copied_times([entry.handed_in for entry in entries if not entry.recorded], rubric.late)
                batch.notes += [copied] if copied else []
                if making is not None and any(not entry.problem for entry in entries):   # nothing is current in it
                    if local:
                        early = True
                        start_sandboxes(jobs)
                    the_plan()
                    if local and forking:   # the pool prepares it anyway: now, while the gradebook's thread waits
                        from grader.run.executor import prepare_workers
                        prepare_workers(the_plan(), options)
            finally:
                if making is not None:
                    making.wait()
            book = _open_gradebook(book_path)
            if book is not None and making is None:    # a class graded before: ids it knows stay theirs
                entries, kept = keep_former_ids(entries, set(book.students(rubric.assignment)))
                batch.notes += kept
            extracted = Path(workdir).resolve()   # where archive members are extracted (gone after the batch)
            batch.students = [entry.student for entry in entries]
            by_student = {entry.student: entry for entry in entries}
            summaries = _Summaries(rubric)
            kept_late: dict[str, tuple[str, float]] = {}   # graded again, undated: their last lateness (few)
            # A gradebook this batch made holds no row to compare a file with: no file is hashed for it (nor for
            # no gradebook), on the path to the first submission (~0.1-0.4 ms a Taoistic notebook, and 2 queries).
            compared = book is not None and making is None
            for entry in entries:
                student, path, source = entry.student, entry.path, entry.source
                standing = _kept_for_nothing(book, entry, rubric.assignment) if compared else None
                if book and standing is not None:
                    batch.levels[standing.isolation] += 1
                    batch.unchanged += 1
                    batch.notes.append(f"{student}: no file of theirs in this intake ({source}: {entry.nothing}): "
                                       f"their {standing.state} row is kept (the notebook it graded is still their "
                                       f"last hand-in on record)")
                    if out_dir is not None:   # its result file deleted since: written back, as an unchanged one's
                        _restore_missing(book, student, rubric.assignment, path, out_dir)
                    if on_result:
                        on_result(summaries.of(standing), True)
                    continue
                sha256 = file_sha256(path) if compared else ""
                previous = (book.unchanged_row(rubric.assignment, student, sha256, rubric.sha256, __version__)
                            if book and compared and not force else None)
                if previous is not None and previous.busy:
                    previous = None   # a busy machine kept some of its cases from being judged: graded again
                older = book.back_to_older(rubric.assignment, student, sha256) \
                    if book and compared and previous is None else None
                if older is not None:
                    batch.notes.append(f"{student}: {source} is older than its current result's file, {older[0]} "
                                       f"(graded {older[1][:16].replace('T', ' ')} UTC), and replaces it now; to keep "
                                       f"that one, grade {older[0]} again")
                if previous is not None and entry.nothing and previous.state != NO_SUBMISSION:
                    previous = None   # recorded `unreadable` before the state existed: recorded again as what it is
                if book and previous is not None:
                    batch.levels[previous.isolation] += 1
                    batch.unchanged += 1
                    if previous.state == "failed":   # not retried unless forced, and said so
                        batch.failed_before.append(student)
                    mismatch = _mismatch_before(book, rubric.assignment, previous)
                    if mismatch:
                        batch.mismatch[student] = mismatch
                    if _undated(entry):
                        if previous.late:
                            batch.notes.append(f"{student}: nothing given this run says when {source} was handed "
                                               f"in (its LMS's worksheet not among the paths): it keeps the "
                                               f"lateness of its last grading")
                    else:
                        previous = _relate(book, previous, entry, rubric, out_dir, shared_values)
                    if out_dir is not None:
                        _restore_missing(book, student, rubric.assignment, path, out_dir)
                    if on_result:
                        on_result(summaries.of(previous), True)
                elif entry.problem:    # unreadable before any worker sees it: its row says why
                    result = _with_lateness(_unreadable(the_plan(), entry, extracted), entry, rubric.late)
                    if result.state == NO_SUBMISSION:
                        batch.absent += 1
                    else:
                        batch.unreadable += 1
                    if out_dir is not None:
                        write_json(result, out_dir, store=shared_values)
                    if book:
                        book.record(student, source, result)
                    else:
                        batch._kept[student] = result
                    batch.levels[result.isolation] += 1
                    if on_result:
                        on_result(result, False)
                else:
                    from grader.run.executor import Job   # light: the pool's machinery is imported below
                    jobs_to_run.append(Job(student, str(Path(path).resolve()), source))
                    last = _last_lateness(book, entry, sha256, rubric.assignment)
                    if last is not None:
                        kept_late[student] = last
                        batch.notes.append(f"{student}: nothing given this run says when {source} was handed in "
                                           f"(its LMS's worksheet not among the paths): graded again, it keeps the "
                                           f"lateness of its last grading")
            if on_start:
                on_start(len(entries), batch.unchanged)
            sandboxes = local and bool(jobs_to_run)
            if sandboxes:
                # Only now that a submission will run (an unchanged regrade starts none): the probe and a zygote
                # per worker start beside the plan and the grading machinery's imports; the forked workers
                # inherit the probe's answer and a zygote each.
                start_sandboxes(jobs)
            plan = the_plan() if jobs_to_run else None   # before any worker: they read the expected values cached
            hide = tuple(str(p) for p in (out_dir, cache_dir, Path(workdir)) if p is not None)
            runner: Executor
            if executor is not None:
                runner = executor
            elif connection is not None:
                from grader.run.executor import Setup
                from grader.run.executor_dask import DaskExecutor
                runner = started_cluster = DaskExecutor(Setup(rubric, str(cache_dir), options, hide), connection)
            elif sandboxes:
                from grader.run.executor import LocalPool, Setup
                from grader.sandbox import isolation
                runner = LocalPool(Setup(rubric, str(cache_dir), options, hide), jobs, plan=plan)
                isolation.probe()   # read before the workers are forked (after the imports the pool made)
            else:
                runner = _Idle()
            if book is not None and len(jobs_to_run) > 1:
                jobs_to_run = longest_first(jobs_to_run, book.durations(rubric.assignment))
            exported = -1   # how many results had come when the class outputs were last written
            received = 0

            def export() -> None:
                nonlocal exported
                if book is not None and out_dir is not None:   # (an out folder always has a gradebook)
                    _export(book, rubric.assignment, out_dir, gradescope)
                exported = received

            def before_end() -> None:
                if book is not None:   # closing at the end then copies and syncs only the last results' pages
                    book.checkpoint()
                if out_dir is not None:   # the export's modules, imported before the last result rather than after
                    _load_exports(gradescope is not None)

            with results_collector():   # the plan and the grader frozen out of the collector's sight
                for done in after_last(runner.run(jobs_to_run), len(jobs_to_run), export, before_end):
                    received += 1
                    student = done.job.student
                    if done.result is not None:
                        result = read = from_dict(done.result)
                    else:
                        batch.failed.append(student)
                        batch.reasons[student] = done.failure
                        if not done.record:      # the grading machine's fault: reported, tried again next run
                            continue
                        result = _failure_result(the_plan(), done.job, done.failure)
                    result = (_kept_late(result, kept_late[student], rubric.late) if student in kept_late
                              else _with_lateness(result, by_student[student], rubric.late))
                    result = replace(result, path=_recorded_path(done.job.path, done.job.source, extracted,
                                                                 resolved=True))
                    form = None
                    if out_dir is not None:
                        copy = keep_notebook(Path(done.job.path), result.sha256, out_dir)
                        result = replace(result, notebook=copy)
                        # A worker's result is bounded: its file and its gradebook row are made from one stored form.
                        if done.result is not None and book:
                            form = stored_form_of(done.result, read, result) if done.stored else stored_form(result)
                        write_json(result, out_dir, bounded=done.result is not None, store=shared_values, form=form)
                    problems, busy = not_judged(result)
                    if problems:
                        batch.grader_problems[student] = problems
                    if busy:
                        batch.busy[student] = busy
                    if result.state == "graded":
                        batch.graded += 1
                    elif result.state == "unreadable":
                        batch.unreadable += 1
                    if book:
                        book.record(student, done.job.source, result, bounded=done.result is not None, form=form)
                    else:
                        batch._kept[student] = result
                    batch.levels[result.isolation] += 1
                    if result.mismatch:
                        batch.mismatch[student] = result.mismatch
                    if on_result:
                        on_result(result, False)
            if exported != received:   # nothing to grade, or the executor ended otherwise than after the last
                export()
        finally:   # however the batch ends (Ctrl-C too), what it opened is closed
            if sandboxes or early:
                stop_sandboxes()
            if started_cluster is not None:
                batch.notes.extend(started_cluster.notes)
            if book:
                book.close()
    batch.seconds = time.monotonic() - started
    return batch


@contextmanager
def _connected(dask: str | None, workers: int | None) -> Iterator[Connection | None]:
    """The Dask cluster's connection for the batch (None without --dask), closed however the batch ends."""
    if dask is None:
        yield None
        return
    from grader.run.executor_dask import Connection
    with Connection(dask, workers=workers) as connection:
        yield connection


@contextmanager
def results_collector() -> Iterator[None]:
    """The coordinator's garbage collector while results stream in. What it holds all batch long (the plan, the
    grader's modules) is frozen out of the collector's sight, and young objects are collected less often: each
    result arrives as a few thousand dicts that live a few milliseconds and go by reference counting, which the
    collector otherwise walked again and again (40 correct results: 49 -> 16 ms of the coordinator's CPU).
    Restored after: a library caller's process keeps its own settings (and its own freeze, if it had one). A
    worker forked meanwhile inherits them (it freezes what it was forked with anyway); sandboxes start from a
    fresh interpreter (the zygote), with Python's own. The collector is on while results stream in, even where the
    caller kept it off for its start-up (the `grade` command)."""
    threshold = gc.get_threshold()
    enabled = gc.isenabled()
    freezing = gc.get_freeze_count() == 0
    if freezing:
        gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_OBJECTS), *threshold[1:])
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()
        gc.set_threshold(*threshold)
        if freezing:
            gc.unfreeze()


YOUNG_OBJECTS = 20_000   # allocations between two collections of the youngest generation (Python's default: 700)


class _NewGradebook:
    """A gradebook file made (created, put in WAL mode, its tables made) on a thread of its own, then closed:
    the batch opens it again when it has waited for it (a fraction of a millisecond: it exists then), so the
    connection it uses is its own thread's, as sqlite3 requires. The thread is always waited for: no thread may
    be running when the pool forks its workers."""

    def __init__(self, path: Path):
        import threading
        self.path = path
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._make, name="new-gradebook", daemon=True)
        self.thread.start()

    def _make(self) -> None:
        try:
            book = _open_gradebook(self.path)
            if book is not None:
                book.close()
        except BaseException as error:  # noqa: BLE001 - raised again where the batch waits for it
            self.error = error

    def wait(self) -> None:
        """Wait for the file; what went wrong making it is raised here (the batch would have met it anyway)."""
        self.thread.join()
        if self.error is not None:
            raise self.error


def after_last(done: Iterator[Done], count: int, then: Callable[[], None],
               before: Callable[[], None] | None = None) -> Iterator[Done]:
    """The executor's results as they come; once the caller has recorded the `count`-th (the last job's), `then`
    runs before the executor is asked for more. The class outputs (the CSV) are then written while the pool's
    workers exit, their sandboxes end and their cgroups go, instead of after the pool has waited for all that:
    nothing else is left to do at the batch's end, so every millisecond there is wall time (~12 ms of 60).
    `before` runs once every result but the last is recorded (at once for one job): what the end needs that the
    last result does not change is done while the last submission is graded, alone on its worker, the other
    CPUs idle and the coordinator waiting."""
    if before is not None and count == 1:
        before()
    for seen, item in enumerate(done, 1):
        yield item
        if seen == count:
            then()
        elif seen == count - 1 and before is not None:
            before()


class _Idle:
    """The executor of a batch with nothing to grade here (every student unchanged): no pool is started."""

    def run(self, jobs: Sequence[Job]) -> Iterator[Done]:
        return iter(())


def longest_first(jobs: Sequence[Job], seconds: Mapping[str, float]) -> list[Job]:
    """The jobs in the order the workers should take them: the longest first, by how long each student's last
    grading took (`seconds`, from the gradebook), so the batch does not end with one worker on a long notebook
    while the others idle. A student graded never before counts as a typical one (the median); with no
    durations at all the intake order stays (the sort is stable)."""
    known = sorted(seconds[job.student] for job in jobs if job.student in seconds)
    if not known:
        return list(jobs)
    typical = known[len(known) // 2]
    return sorted(jobs, key=lambda job: -seconds.get(job.student, typical))


class _Summaries:
    """Score-only results (no cases) for progress callbacks of unchanged students. A class has few distinct
    score lists: each one's exercises are made once (they are frozen) and shared, up to KEPT lists at a time."""

    KEPT = 1024

    def __init__(self, rubric: Rubric):
        self.rubric = rubric
        self.maxima = {e.id: float(e.points) for e in rubric.exercises}
        self.exercises: dict[tuple[tuple[str, float], ...], tuple[ExerciseResult, ...]] = {}

    def of(self, row: ScoreRow) -> SubmissionResult:
        scores = tuple(row.scores.items())
        exercises = self.exercises.get(scores)
        if exercises is None:
            if len(self.exercises) >= self.KEPT:
                self.exercises.clear()
            exercises = self.exercises[scores] = tuple(
                ExerciseResult(e, e, score, self.maxima.get(e, 0.0), ()) for e, score in scores)
        rubric = self.rubric
        return SubmissionResult(
            submission=row.student, path="", sha256="", rubric=rubric.assignment, rubric_sha256=rubric.sha256,
            grader_version=__version__, isolation=row.isolation, total=row.total, max_total=row.max_total,
            exercises=exercises, state=row.state)


def _restore_missing(book: Gradebook, student: str, rubric: str, path: Path, out_dir: Path) -> None:
    """An unchanged student whose result JSON (or notebook copy) was deleted gets it back from the gradebook."""
    target = out_dir / f"{student}.json"
    if target.is_file():
        return
    result = book.result(student, rubric)
    if result is None:
        return
    copy = keep_notebook(path, result.sha256, out_dir)
    write_json(replace(result, notebook=copy or result.notebook), out_dir)


def _load_exports(gradescope: bool) -> None:
    """Import the writers _export will run (each output's module is imported when it is first written)."""
    import importlib
    from grader.report.class_outputs import OUTPUTS
    for name in ("csv", *(("gradescope",) if gradescope else ())):
        importlib.import_module(OUTPUTS[name].writer.partition(":")[0])


def _export(book: Gradebook, rubric: str, out_dir: Path, gradescope: Path | None) -> None:
    """The class outputs a batch keeps up to date (the CSV, and Gradescope files when asked): every student of
    the rubric, from the gradebook, TA overrides applied (grader.report.class_outputs)."""
    from grader.report.class_outputs import OUTPUTS, Classroom
    classroom = Classroom(out_dir, gradebook=book.path, rubric=rubric)
    OUTPUTS["csv"].write(classroom, out_dir / "gradebook.csv")
    if gradescope is not None:
        OUTPUTS["gradescope"].write(classroom, Path(gradescope))


RUBRIC_MARK = RESULTS_MARK   # JSON naming the assignment a results folder holds (not *.json: result readers skip it)


class ResultsFolderError(ValueError):
    """A results folder that holds another assignment's results: mixing them would overwrite students' results
    and put two assignments in one class report."""


def claim_results_folder(folder: Path, rubric: Rubric) -> None:
    """Remember which assignment a results folder holds, and refuse to mix another one in."""
    mark = folder / RUBRIC_MARK
    marked = read_mark(folder)
    held = marked.assignment if marked is not None else None
    if held is None and folder.is_dir():     # a folder written before the mark existed: ask its results
        for result in sorted(p for p in folder.glob("*.json") if p.name != RUBRIC_MARK)[:20]:
            try:
                held = json.loads(result.read_text(encoding="utf-8")).get("rubric")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(held, str):
                break
            held = None
    if held is not None and held != rubric.assignment:
        raise ResultsFolderError(f"{folder}: this results folder holds results of {held}, not {rubric.assignment}; "
                                 f"grade {rubric.assignment} into another folder (--out)")
    own_folder(folder, marked=mark.exists())
    if held is None:
        mark.write_text(json.dumps({"assignment": rubric.assignment, "rubric": str(rubric.path)}) + "\n",
                        encoding="utf-8")


def own_folder(folder: Path, marked: bool = False) -> None:
    """Make a batch's output folder, and make it the grader's alone (owner_only) when the batch makes it, finds it
    empty or finds it `marked` as a results folder: never a shared folder given as the output (`--out /tmp`)."""
    ours = marked or _made_or_empty(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if ours:
        owner_only(folder)


def _made_or_empty(folder: Path) -> bool:
    """Whether the batch makes `folder` or finds it empty: a folder the batch may make the grader's alone."""
    try:
        return not any(folder.iterdir())
    except FileNotFoundError:
        return True
    except OSError:
        return False


def owner_only(path: Path) -> None:
    """Make a batch output the grader's uid's alone (a folder 0700, a file 0600), whatever the umask made it: in
    rlimits mode without Landlock a sandbox runs as an unused uid on the host's filesystem, so a 0755 results
    folder or a 0644 gradebook let one student's code read the others' results (and read-lock the gradebook,
    stalling the batch's writes). A path another user owns is left as it is (only its owner or root may
    change it)."""
    try:
        os.chmod(path, 0o700 if path.is_dir() else 0o600, follow_symlinks=False)
    except PermissionError:
        pass
    except NotImplementedError:   # a platform without lchmod: the path is the batch's own, never a link
        os.chmod(path, 0o700 if path.is_dir() else 0o600)


def _open_gradebook(path: Path | None) -> Gradebook | None:
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    try:   # made owner-only, never readable for a moment: a sandbox may run beside a new gradebook's making
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))   # SQLite takes an empty file as new
    except FileExistsError:
        pass
    book = Gradebook(path)   # SQLite makes its -wal and -shm files with the database file's mode
    for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if each.exists():
            owner_only(each)
    return book


def grade(paths: Iterable[str | Path], rubric: str | Path | Rubric, out: str | Path | None = None, *,
          jobs: int | None = None, options: Options = Options(), cache: Path | None = None,
          on_result: Callable[[SubmissionResult], None] | None = None, **batch_options) -> list[SubmissionResult]:
    """Grade submissions and return their results, whole (see grade_batch for the gradebook and regrades)."""
    batch = grade_batch(paths, rubric, out, jobs=jobs, options=options, cache=cache,
                        on_result=(lambda r, unchanged: None if unchanged else on_result(r)) if on_result else None,
                        **batch_options)
    return batch.results


def public_plan(plan: Plan) -> Plan:
    """The student's self-check runs public cases only; hidden ones are counted, never run or shown."""
    cases = {k: tuple(c for c in v if c.visibility == "public") for k, v in plan.cases.items()}
    return replace(plan, cases=cases)


def check(notebook: str | Path, rubric: str | Path | Rubric, *, options: Options = Options(),
          cache: Path | None = None) -> tuple[SubmissionResult, dict[str, int]]:
    """A student's self-check: public cases only. Returns the result and the hidden-case count per exercise."""
    from grader.plan.cases import build_plan
    rubric = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    plan = build_plan(rubric, cache if cache is not None else default_cache())
    hidden = {k: sum(1 for c in v if c.visibility == "hidden") for k, v in plan.cases.items()}
    return grade_one(notebook, plan, options=options, public_only=True), hidden


def grade_one(path: str | Path, rubric: Plan | Rubric | str | Path, *, options: Options = Options(),
              cache: Path | None = None, hide: Iterable[Path] = (), public_only: bool = False) -> SubmissionResult:
    """One submission through the whole pipeline (intake, extraction, the sandbox, the judge): what grade does
    for each student, for callers that grade one file (the self-check, the Gradescope runner). Without a
    `cache` the expected values are computed into a private folder of this process, hidden from the child and
    removed after: nothing the reference answered is left on the machine."""
    import shutil
    from grader.judge.grading import grade_path, support_sources
    from grader.plan.cases import Plan, build_plan
    from grader.sandbox.supervisor import make_temp_folder
    temporary = None
    if isinstance(rubric, Plan):
        plan = rubric
    else:
        loaded = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
        if cache is None:
            cache = temporary = Path(make_temp_folder("cache-"))
        plan = build_plan(loaded, cache)
    try:
        return grade_path(Path(path), public_plan(plan) if public_only else plan, support_sources(plan), options,
                          hide=(*hide, *((temporary,) if temporary else ())))
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def choose_in_upload(folder: Path, rubric: Rubric) -> tuple[Path | None, list[Path]]:
    """The file to grade among one student's upload, and the other candidates left aside: by the rule a class is
    graded by (grader.intake.gather.CHOICE_RULE), so a stray scratch notebook is not graded."""
    from grader.intake.gather import choose_in_folder
    from grader.judge.grading import defines_counter
    chosen, others, _ = choose_in_folder(folder, defines_counter(rubric))
    return chosen, others


def check_course(rubric: Rubric) -> None:
    """Build the rubric's plan without a cache: raises RubricError when its reference or data do not load."""
    from grader.plan.cases import build_plan
    build_plan(rubric, None)


def __getattr__(name: str) -> object:
    """validate lives in grader.authoring.validate; kept importable from here for callers of the old place, and
    imported only when asked for (it brings mutation testing and the kit, which grading never uses)."""
    if name in ("Validation", "validate"):
        from grader.authoring import validate as module
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
