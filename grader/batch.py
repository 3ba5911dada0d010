"""Library entry points behind the CLI: grade many submissions, self-check one, validate a rubric."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

from grader.grading import Options, grade_path, submission_id, support_sources
from grader.plan import Plan, build_plan
from grader.results import SubmissionResult, write_json
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


def unique_ids(paths: Sequence[Path]) -> list[str]:
    """Ids from file names; where two files share a name, their folders are prefixed so results never collide."""
    ids = [submission_id(p) for p in paths]
    seen: dict[str, int] = {}
    for index, path in enumerate(paths):
        if ids.count(ids[index]) > 1:
            ids[index] = submission_id(Path(f"{path.parent.name}_{path.name}"))
        count = seen.get(ids[index], 0)
        seen[ids[index]] = count + 1
        if count:
            ids[index] = f"{ids[index]}-{count + 1}"
    return ids


@dataclass(frozen=True)
class Graded:
    result: SubmissionResult
    json_path: Path | None


def grade(paths: Iterable[str | Path], rubric: str | Path | Rubric, out: str | Path | None = None, *,
          jobs: int | None = None, options: Options = Options(), cache: Path | None = None,
          on_result: Callable[[SubmissionResult], None] | None = None) -> list[SubmissionResult]:
    """Grade submissions (files or folders), write DIR/<submission>.json for each, return results in input order."""
    rubric = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    cache_dir = cache if cache is not None else default_cache()
    plan = build_plan(rubric, cache_dir)
    files = collect(paths)
    ids = unique_ids(files)
    support = support_sources(plan)
    out_dir = Path(out) if out is not None else None
    results: dict[int, SubmissionResult] = {}

    def one(index: int) -> SubmissionResult:
        result = grade_path(files[index], plan, support, options, submission=ids[index],
                            hide=(out_dir, cache_dir))
        if out_dir is not None:
            write_json(result, out_dir)
        return result

    workers = max(1, jobs or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(one, index): index for index in range(len(files))}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if on_result is not None:
                on_result(result)
    return [results[i] for i in range(len(files))]


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


@dataclass(frozen=True)
class Validation:
    rubric: Rubric
    reference_result: SubmissionResult
    template_result: SubmissionResult | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def validate(rubric_path: str | Path, *, cache: Path | None = None, options: Options = Options()) -> Validation:
    """A rubric is valid when it parses, the reference scores full marks and the template scores zero."""
    rubric = load_rubric(rubric_path)
    plan = build_plan(rubric, cache)
    support = support_sources(plan)
    problems: list[str] = []
    reference_result = grade_path(rubric.reference, plan, support, options, submission="reference")
    for exercise in reference_result.exercises:
        if exercise.score < exercise.max_score:
            failing = [f"{c.id}: {c.status}: {c.message}" for c in exercise.cases if c.status != "pass"]
            problems.append(f"{rubric.path}: the reference scores {exercise.score:g}/{exercise.max_score:g} on "
                            f"exercise '{exercise.id}': " + "; ".join(failing[:3]))
    template_result = None
    if rubric.template is not None:
        template_result = grade_path(rubric.template, plan, support, options, submission="template")
        for exercise in template_result.exercises:
            if exercise.score > 0:
                problems.append(f"{rubric.path}: the template already scores {exercise.score:g} on exercise "
                                f"'{exercise.id}' (its stub should score zero)")
            crashed = [c for c in exercise.cases if c.status == "error" and "grader problem" in c.message]
            if crashed:
                problems.append(f"{rubric.path}: exercise '{exercise.id}': {crashed[0].message}")
    return Validation(rubric, reference_result, template_result, tuple(problems))
