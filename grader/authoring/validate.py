"""Proving a rubric before a class is graded: the reference scores full marks, the template zero."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from grader import codec
from grader.authoring.findings import authoring_findings, student_names
from grader.judge.grading import grade_path, support_sources
from grader.judge.options import Options
from grader.kit.kit import FULL_CHECKS
from grader.authoring.mutants import DEFAULT_MUTANTS, DEFAULT_SECONDS
from grader.authoring.mutation import MutationReport, report_problems, run_mutation
from grader.plan.cases import Case, Plan, PlanTimeout, build_plan
from grader.sandbox.alarm import TimeLimit
from grader.syntax.calls import ExpressionError, call_arguments, evaluate_data, free_names, submission_code
from grader.kit.public import PublicError, is_public, public_code, solution_helpers_shipped
from grader.store.results import SubmissionResult
from grader.rubric.schema import Rubric, load_rubric


@dataclass(frozen=True)
class Validation:
    rubric: Rubric
    reference_result: SubmissionResult
    template_result: SubmissionResult | None
    problems: tuple[str, ...]
    warnings: tuple[str, ...] = ()     # what does not fail validation but an instructor should know
    mutation: MutationReport | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def kit_warnings(plan: Plan) -> list[str]:
    """Public cases a student's kit cannot judge: their check needs the course's code and is not public."""
    warnings = []
    for exercise in plan.rubric.exercises:
        later = [case for case in plan.cases[exercise.id] if case.visibility == "public"
                 and case.check.name not in FULL_CHECKS and not is_public(case.check)]
        if later:
            checks = ", ".join(dict.fromkeys(case.check.name for case in later))
            warnings.append(f"{plan.rubric.path}:{later[0].line}: exercise '{exercise.id}': {len(later)} public "
                            f"case{'s' if len(later) != 1 else ''} cannot be judged by the student's kit (check "
                            f"{checks} needs the course's code): a wrong answer there is only 'checked after "
                            f"submission'; mark the check 'public: true' if its code reveals no solution")
    return warnings


def _asks(plan: Plan, case: Case) -> tuple[str, ...] | None:
    """What a case asks, as values: the callee, its arguments, the globals it sets, its probes and reduce. Two cases
    that ask the same get the same answer whatever the notebook; None when a value cannot be known here."""
    data = plan.data(case)

    def value(code: str) -> str:
        return codec.canonical(codec.encode(evaluate_data(ast.parse(code, mode="eval").body, data)))

    try:
        tree = ast.parse(case.call, mode="eval").body
        asked: tuple[str, ...]
        if isinstance(tree, ast.Call):
            arguments = call_arguments(case.call, data)
            if arguments is None:
                return None
            # An argument naming submission code (`Node(state)`) is the same question when its text and the values
            # of the generated variables it reads are; so is the callee (`EightPuzzle(state).h1`).
            positional, named = ([_as_asked(a) for a in arguments[0]],
                                 {k: _as_asked(a) for k, a in arguments[1].items()})
            texts = [ast.unparse(tree.func), *(text for a in [*arguments[0], *arguments[1].values()]
                                               if (text := submission_code(a)) is not None)]
            read = sorted(set().union(*(free_names(text) for text in texts)) & set(case.variables))
            asked = (ast.unparse(tree.func), codec.canonical(codec.encode(
                [positional, named, [[name, case.variables[name]] for name in read]])))
        else:
            asked = (value(case.call),) if free_names(case.call) <= set(data) else (ast.unparse(tree),)
        settings = tuple(f"{name}={value(code)}" for name, code in case.set)
    except (SyntaxError, ExpressionError, codec.CodecError, ValueError, TypeError):
        return None
    return (*asked, *settings, repr(case.probe), case.reduce or "")


def _as_asked(argument: object) -> object:
    """An argument as a value the codec can encode: submission code as its text, marked so."""
    expression = submission_code(argument)
    return ("submission code", expression) if expression is not None else argument


def hidden_in_kit_warnings(plan: Plan) -> list[str]:
    """Hidden cases that ask exactly what a public case of their exercise asks (the same call on equal data: a
    hidden case written twice, or a generator that drew a public case's board): the public case's input and answer
    are in every student's kit, so that hidden case tests nothing a student could not copy."""
    warnings = []
    for exercise in plan.rubric.exercises:
        public: dict[tuple[str, ...], Case] = {}
        for case in plan.cases[exercise.id]:
            if case.visibility == "public":
                asked = _asks(plan, case)
                if asked is not None:
                    public.setdefault(asked, case)
        for case in plan.cases[exercise.id]:
            shown = public.get(_asks(plan, case) or ("",)) if case.visibility == "hidden" else None
            if shown is not None:
                warnings.append(f"{plan.rubric.path}:{case.line}: exercise '{exercise.id}': hidden case {case.id} "
                                f"asks what public case {shown.id} ({shown.shown_call}) asks: that input and its "
                                f"answer are in every student's kit; give the hidden case another input")
    return warnings


def _spellings(value: object) -> set[str]:
    """A value as an author may have written it in a sentence, without spaces: its repr, and a tuple's as a list or
    a list's as a tuple. Short ones (a count, a small number) say nothing of a case: left out."""
    forms = {repr(value)}
    if isinstance(value, (tuple, list)):
        forms |= {repr(list(value)), repr(tuple(value))}
    return {form.replace(" ", "") for form in forms if len(form.replace(" ", "")) >= 8}


def hidden_in_text_warnings(plan: Plan) -> list[str]:
    """Hidden cases whose input is written in a text every student reads: the exercise's hints, a known mistake's
    or a variant's `say`, an error hint. An author who quotes 'try the board (1, 2, ..., 0, 14, 15)' in a hint and
    tests that board hidden has published it (the kit ships the hints)."""
    warnings = []
    for exercise in plan.rubric.exercises:
        texts = [("hint", text, exercise.line) for text in exercise.hints]
        texts += [(f"mistake {m.reference}'s say", m.say, m.line or exercise.line) for m in exercise.mistakes]
        texts += [(f"variant {v.reference}'s say", v.say, v.line or exercise.line) for v in exercise.variants]
        texts += [("error hint", h.say, h.line or exercise.line) for h in exercise.error_hints]
        squeezed = [(what, text.replace(" ", ""), line) for what, text, line in texts if text]
        for case in plan.cases[exercise.id]:
            if case.visibility != "hidden":
                continue
            arguments = call_arguments(case.call, plan.data(case)) or ((), {})
            values = [*(a for a in [*arguments[0], *arguments[1].values()] if submission_code(a) is None),
                      *case.variables.values()]
            found = next(((what, line, value) for value in values for form in _spellings(value)
                          for what, text, line in squeezed if form in text), None)
            if found is not None:
                what, line, value = found
                warnings.append(f"{plan.rubric.path}:{line}: exercise '{exercise.id}': the {what} writes out "
                                f"{codec.describe(codec.encode(value), 80)}, the input of hidden case {case.id} "
                                f"(line {case.line}): every student reads it; test another input or leave it out")
    return warnings


def reference_problems(plan: Plan, result: SubmissionResult) -> list[str]:
    """The reference, graded as a submission, loses points: each case it fails at its line of the rubric (at most
    three an exercise). A case with `expect:` that the reference's own answer fails says that the expect is what
    the reference does not make, with both values: the message the grader would show a student ends with a known
    mistake's advice when the reference's answer is also that mistake's, which is no advice to the author."""
    problems = []
    cases = {case.id: case for exercise in plan.rubric.exercises for case in plan.cases[exercise.id]}
    for exercise in result.exercises:
        if exercise.score >= exercise.max_score:
            continue
        failing = [c for c in exercise.cases if c.status != "pass"]
        for case in failing[:3]:
            planned = cases.get(case.id)
            where = f"{plan.rubric.path}:{planned.line}" if planned is not None and planned.line else \
                str(plan.rubric.path)
            if planned is not None and planned.expect is not None and case.status == "fail":
                why = (f"its expect: {planned.expect} is not what the reference makes: it returns "
                       f"{codec.describe(case.got, 200)}, and check {planned.check.name} rejects it against "
                       f"{codec.describe(case.expected, 200)}")
            else:
                why = f"{case.status}: {case.message}"
            problems.append(f"{where}: exercise '{exercise.id}', case {case.id}: the reference, graded as a "
                            f"submission, scores {exercise.score:g}/{exercise.max_score:g} on the exercise: {why}")
        if len(failing) > 3:
            problems.append(f"{plan.rubric.path}: exercise '{exercise.id}': the reference fails {len(failing) - 3} "
                            f"more case{'s' if len(failing) > 4 else ''}")
    return problems


def sibling_sources(reference: Path) -> dict[str, str]:
    """Modules of the reference's own folder that it imports: graded as a submission, the reference gets them
    as support modules (the child sees nothing of the course folder)."""
    try:
        tree = ast.parse(reference.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    names: set[str] = set()
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


def validate(rubric_path: str | Path, *, cache: Path | None = None, options: Options = Options(),
             mutants: int = DEFAULT_MUTANTS, mutation_seconds: float = DEFAULT_SECONDS,
             jobs: int | None = None) -> Validation:
    """A rubric is valid when it parses, no authoring mistake is found, the reference scores full marks, the
    template zero, each known mistake loses points and is recognised, each accepted variant earns full marks,
    and each exercise's mutation score reaches the rubric's `mutation_score` (`mutants` per exercise, 0: none)."""
    rubric = load_rubric(rubric_path)
    plan = build_plan(rubric, cache, limit=lambda seconds: TimeLimit(seconds, PlanTimeout, cpu=True))
    support = {**support_sources(plan), **sibling_sources(rubric.reference)}
    problems: list[str] = [str(finding) for finding in authoring_findings(plan)]
    try:
        public_code(rubric)
    except PublicError as error:
        problems.extend(error.problems)
    warnings = [*plan.warnings, *kit_warnings(plan), *hidden_in_kit_warnings(plan),
                *hidden_in_text_warnings(plan), *solution_helpers_shipped(rubric, student_names(plan) or ())]
    reference_result = grade_path(rubric.reference, plan, support, options, submission="reference")
    problems.extend(reference_problems(plan, reference_result))
    template_result = None
    if rubric.template is not None:
        template_result = grade_path(rubric.template, plan, support, options, submission="template")
        for exercise in template_result.exercises:
            if exercise.score > 0:
                problems.append(f"{rubric.path}: the template already scores {exercise.score:g} on exercise "
                                f"'{exercise.id}' (its stub should score zero)")
            crashed = [c for c in exercise.cases if c.status == "problem"]   # a field, not a message to parse
            if crashed:
                problems.append(f"{rubric.path}: exercise '{exercise.id}': {crashed[0].message}")
    mutation = None
    if mutants > 0 or any(e.mistakes or getattr(e, "variants", ()) for e in rubric.exercises):
        mutation = run_mutation(plan, support, per_exercise=mutants, seconds=mutation_seconds, jobs=jobs,
                                options=options)
        problems.extend(report_problems(mutation, rubric.path, {e.id: e.line for e in rubric.exercises}))
    return Validation(rubric, reference_result, template_result, tuple(problems), tuple(warnings), mutation)
