"""Proving a rubric before a class is graded: the reference scores full marks, the template zero."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from grader.authoring import authoring_findings
from grader.grading import Options, grade_path, support_sources
from grader.plan import build_plan
from grader.results import SubmissionResult
from grader.rubric import Rubric, load_rubric


@dataclass(frozen=True)
class Validation:
    rubric: Rubric
    reference_result: SubmissionResult
    template_result: SubmissionResult | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def sibling_sources(reference: Path) -> dict[str, str]:
    """Modules of the reference's own folder that it imports: graded as a submission, the reference gets them
    as support modules (the child sees nothing of the course folder)."""
    try:
        tree = ast.parse(reference.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    found = {}
    for name in sorted(names):
        path = reference.parent / f"{name}.py"
        if path.is_file() and path != reference:
            found[name] = path.read_text(encoding="utf-8")
    return found


def validate(rubric_path: str | Path, *, cache: Path | None = None, options: Options = Options()) -> Validation:
    """A rubric is valid when it parses, the reference scores full marks and the template scores zero."""
    rubric = load_rubric(rubric_path)
    plan = build_plan(rubric, cache)
    support = {**support_sources(plan), **sibling_sources(rubric.reference)}
    problems: list[str] = [str(finding) for finding in authoring_findings(plan)]
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
