"""Library entry points behind the CLI: grade many submissions, self-check one."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

from grader import __version__
from grader.executor import Executor
from grader.gradebook import Gradebook
from grader.intake import gather
from grader.report.csv_export import write_csv
from grader.grading import Options, file_sha256, grade_path, support_sources
from grader.plan import Plan, build_plan
from grader.results import SubmissionResult, from_dict, write_json
from grader.rubric import Rubric, load_rubric

SUBMISSION_SUFFIXES = (".ipynb", ".py")


def default_cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "puzzle-grader"


def collect(paths: Iterable[str | Path]) -> list[Path]:
    """Submission files from files and folders (folders searched recursively, checkpoints skipped)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.suffix in SUBMISSION_SUFFIXES
                and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(path).parts)))
        else:
            found.append(path)
    return found


@dataclass
class Batch:
    """What a batch did: every student's current result, and what was graded, reused or could not be read."""

    results: list[SubmissionResult] = field(default_factory=list)
    graded: int = 0
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)       # worker died or timed out on these students
    problems: list[str] = field(default_factory=list)     # intake: unreadable entries, skipped
    notes: list[str] = field(default_factory=list)        # intake: decisions such as several notebooks
    seconds: float = 0.0


def _failure_result(plan: Plan, path: Path, student: str, reason: str) -> SubmissionResult:
    from grader.grading import _empty_result, file_sha256
    return _empty_result(path, plan, file_sha256(path), reason, time.monotonic(), student)


def _entries(paths: Iterable[str | Path], workdir: Path) -> tuple[list[tuple[str, Path, str]], list[str], list[str]]:
    """(student, path, source) for every submission, with the intake's problems and notes."""
    intake = gather(list(paths), workdir)
    return ([(e.student, e.path, e.source) for e in intake.entries], list(intake.problems), list(intake.notes))


def grade_batch(paths: Iterable[str | Path], rubric: str | Path | Rubric, out: str | Path | None = None, *,
                jobs: int | None = None, options: Options = Options(), cache: Path | None = None,
                gradebook: Path | None = None, force: bool = False, executor: Executor | None = None,
                dask: str | None = None,
                on_start: Callable[[int, int], None] | None = None,
                on_result: Callable[[SubmissionResult, bool], None] | None = None) -> Batch:
    """Grade a class. Unchanged submissions (same file, rubric and grader version) are not graded again
    unless `force`; every result is written (JSON, gradebook) the moment it is finished, so an interrupted
    batch loses nothing and the next run does only what is missing.
    """
    import tempfile
    from grader.executor import Job, LocalPool, Setup
    started = time.monotonic()
    rubric = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    cache_dir = Path(cache) if cache is not None else default_cache()
    plan = build_plan(rubric, cache_dir)     # once, here: the workers then read the expected values from the cache
    out_dir = Path(out) if out is not None else None
    book_path = gradebook if gradebook is not None else (out_dir / "gradebook.sqlite" if out_dir else None)
    batch = Batch()
    with tempfile.TemporaryDirectory(prefix="puzzle-grader-intake-") as workdir:
        entries, batch.problems, batch.notes = _entries(paths, Path(workdir))
        book = _open_gradebook(book_path)
        started_cluster = None
        try:
            stored = book.summaries(rubric.assignment) if book else {}   # scores only: fast for a regrade
            jobs_to_run: list[Job] = []
            results: dict[str, SubmissionResult] = {}
            for student, path, source in entries:
                previous = stored.get(student)
                if (book and not force and previous is not None
                        and book.is_current(student, file_sha256(path), rubric.sha256, __version__)):
                    results[student] = previous
                    batch.unchanged += 1
                    if on_result:
                        on_result(previous, True)
                else:
                    jobs_to_run.append(Job(student, str(path), source))
            if on_start:
                on_start(len(entries), batch.unchanged)
            hide = tuple(str(p) for p in (out_dir, cache_dir, Path(workdir)) if p is not None)
            setup = Setup(rubric, str(cache_dir), options, hide)
            if executor is not None:
                runner = executor
            elif dask is not None:
                from grader.executor_dask import DaskExecutor
                runner = started_cluster = DaskExecutor(setup, dask, workers=jobs)
            else:
                runner = LocalPool(setup, jobs)
            sources = {job.student: job for job in jobs_to_run}
            for done in runner.run(jobs_to_run):
                if done.result is not None:
                    result = from_dict(done.result)
                else:
                    batch.failed.append(done.job.student)
                    result = _failure_result(plan, Path(done.job.path), done.job.student, done.failure)
                results[done.job.student] = result
                batch.graded += 1
                if out_dir is not None:
                    write_json(result, out_dir)
                if book and done.result is not None:   # a worker that died is retried next run, not kept
                    book.record(done.job.student, sources[done.job.student].source, result)
                if on_result:
                    on_result(result, False)
            batch.results = [results[student] for student, _, _ in entries if student in results]
            if out_dir is not None and batch.results:
                from grader.overrides import apply_all    # TA overrides kept in the gradebook, never in results
                write_csv(apply_all(batch.results, book_path), out_dir / "gradebook.csv")
        finally:   # however the batch ends (Ctrl-C too), what it opened is closed
            if started_cluster is not None:
                started_cluster.close()
            if book:
                book.close()
    batch.seconds = time.monotonic() - started
    return batch


def _open_gradebook(path: Path | None) -> Gradebook | None:
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return Gradebook(path)


def grade(paths: Iterable[str | Path], rubric: str | Path | Rubric, out: str | Path | None = None, *,
          jobs: int | None = None, options: Options = Options(), cache: Path | None = None,
          on_result: Callable[[SubmissionResult], None] | None = None, **batch_options) -> list[SubmissionResult]:
    """Grade submissions and return their results (see grade_batch for the gradebook and regrades)."""
    batch = grade_batch(paths, rubric, out, jobs=jobs, options=options, cache=cache,
                        on_result=(lambda r, _unchanged: on_result(r)) if on_result else None, **batch_options)
    return batch.results


def public_plan(plan: Plan) -> Plan:
    """The student's self-check runs public cases only; hidden ones are counted, never run or shown."""
    cases = {k: tuple(c for c in v if c.visibility == "public") for k, v in plan.cases.items()}
    return replace(plan, cases=cases)


def check(notebook: str | Path, rubric: str | Path | Rubric, *, options: Options = Options(),
          cache: Path | None = None) -> tuple[SubmissionResult, dict[str, int]]:
    """A student's self-check: public cases only. Returns the result and the hidden-case count per exercise."""
    rubric = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    plan = build_plan(rubric, cache if cache is not None else default_cache())
    hidden = {k: sum(1 for c in v if c.visibility == "hidden") for k, v in plan.cases.items()}
    result = grade_path(Path(notebook), public_plan(plan), support_sources(plan), options)
    return result, hidden


# validate lives in grader.validate; kept importable from here for callers of the old place.
from grader.validate import Validation, validate  # noqa: E402,F401
