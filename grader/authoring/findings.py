"""Authoring mistakes a rubric can hide until a class is graded, found on the trusted side before any sandbox runs.

Every check is run on the reference's own answers (it must accept them) and on each known mistake's answers
(it must return a verdict, and some case must reject the mistake); a generator that uses its random source
needs a written `seed`. Problems are `file:line: reason` lines, with the reference's own file and line where the
fault is in the reference.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import os
import random
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from grader.syntax.calls import call_arguments, evaluate_data, for_child, free_names
from grader.extract.source import extract
from grader.intake.notebook import Notebook, NotebookError, read_notebook
from grader.checks.registry import CHECKS, CheckContext, CheckError, ProbeError, Verdict, resolve
from grader.plan.cases import Case, Plan, patched_globals
from grader.rubric.schema import Exercise
from grader import codec


@dataclass(frozen=True)
class Finding:
    """One authoring problem: where it is (rubric or reference line) and why."""

    where: str           # "file:line"
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def reference_line(error: BaseException, reference: Path) -> int:
    """The innermost line of the reference module in an error's traceback (0 when none is there)."""
    line = 0
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == reference.resolve():
            line = lineno
    return line


def definition_line(function: Any) -> int:
    try:
        return inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return 0


def parent_probes(plan: Plan, exercise: Exercise, case: Case, value: Any,
                  implementation: Callable | None = None) -> dict[str, Any]:
    """A case's probes evaluated the way the child would, with the reference (or a mistake) as the submission."""
    if not case.probe:
        return {}
    data = plan.data(case)
    namespace = {**plan.reference.__dict__, **data}
    if implementation is not None and "." not in exercise.function:
        namespace.update({name: implementation for name in exercise.names})
    probes: dict[str, Any] = {}
    settings = {}
    with contextlib.suppress(Exception):
        settings = {name: evaluate_data(code, data) for name, code in case.set}
    with patched_globals(plan.reference, settings), open(os.devnull, "w") as sink, \
            contextlib.redirect_stdout(sink):
        for name, code in case.probe:
            try:
                probes[name] = eval(compile(code, f"<probe {name}>", "eval"), {**namespace, "result": value})  # noqa: S307
            except Exception as error:  # as in the child: the check sees the error instead of a value
                probes[name] = ProbeError(f"{type(error).__name__}: {error}")
    return probes


def _judge(plan: Plan, exercise: Exercise, case: Case, answer: Any,
           implementation: Callable | None) -> Verdict | BaseException:
    data = plan.data(case)
    arguments = call_arguments(case.call, data) or ((), {})
    decoded = codec.decode(answer)
    context = CheckContext(expected=plan.expected[case.id].value, got=answer, args=arguments[0],
                           kwargs=arguments[1], probes=parent_probes(plan, exercise, case, decoded, implementation),
                           variables=dict(case.variables), data=data, options=dict(case.check.options),
                           reference=plan.reference)
    try:
        return resolve(case.check.name, plan.reference)(context)
    except Exception as error:  # noqa: BLE001 - every failure of a check is a finding here
        return error


def _located(plan: Plan, case: Case, error: BaseException) -> str:
    """Where a check's failure points: the reference's line where it raised, else the rubric's case."""
    reference = plan.rubric.reference
    line = reference_line(error, reference)
    if line == 0 and isinstance(error, CheckError) and case.check.name not in CHECKS:
        line = definition_line(getattr(plan.reference, case.check.name, None))
    return f"{reference}:{line}" if line else f"{plan.rubric.path}:{case.line}"


def check_contracts(plan: Plan) -> list[Finding]:
    """Run every case's check on the reference's answer and on each known mistake's answer."""
    findings: dict[tuple[str, str], tuple[Finding, int]] = {}

    def add(key: str, where: str, reason: str) -> None:
        """The same fault on many cases is reported once, with how many cases show it."""
        finding, count = findings.get((where, key), (Finding(where, reason), 0))
        findings[(where, key)] = (finding, count + 1)

    for exercise in plan.rubric.exercises:
        where = f"exercise '{exercise.id}'"
        mistakes = {m.reference: getattr(plan.reference, m.reference, None) for m in exercise.mistakes}
        rejected: dict[str, bool] = {name: False for name in mistakes}
        differs: dict[str, bool] = {name: False for name in mistakes}
        for case in plan.cases[exercise.id]:
            expected = plan.expected[case.id]
            verdict = _judge(plan, exercise, case, expected.value, None)
            if isinstance(verdict, BaseException):
                add(f"ref-raise {case.check.name}", _located(plan, case, verdict),
                    f"{where}: check {case.check.name} fails on the reference's own answer to case {case.id}: "
                    f"{type(verdict).__name__}: {verdict}")
            elif verdict.fraction < 1.0 or not verdict.passed:
                add(f"ref-reject {case.check.name}", f"{plan.rubric.path}:{case.line}",
                    f"{where}: check {case.check.name} rejects the reference's own answer to case {case.id}: "
                    f"{verdict.message or 'no message'}")
            answers = dict(expected.mistakes)
            for name in mistakes:
                if name not in answers:      # the mistake raised on this input: the case is lost
                    rejected[name] = differs[name] = True
                    continue
                if codec.same(expected.value, answers[name]) is not None:
                    differs[name] = True
                verdict = _judge(plan, exercise, case, answers[name], mistakes[name])
                if isinstance(verdict, BaseException):
                    add(f"mistake-raise {case.check.name} {name}", _located(plan, case, verdict),
                        f"{where}: check {case.check.name} fails on the answer of mistake '{name}' to case "
                        f"{case.id}: {type(verdict).__name__}: {verdict}")
                    rejected[name] = True
                elif not verdict.passed:
                    rejected[name] = True
        for mistake in exercise.mistakes:
            if not differs[mistake.reference]:
                add("same", f"{plan.rubric.path}:{mistake.line}",
                    f"{where}: mistake '{mistake.reference}' gives the reference's answer on every case: it is not "
                    f"a mistake, or no case tells them apart")
            elif not rejected[mistake.reference]:
                add("passes", f"{plan.rubric.path}:{mistake.line}",
                    f"{where}: mistake '{mistake.reference}' passes every case's check: it would lose no points")
    shown = []
    for finding, count in findings.values():
        suffix = f" (and {count - 1} more case{'s' if count > 2 else ''})" if count > 1 else ""
        shown.append(Finding(finding.where, finding.reason + suffix))
    return shown


def _sample(generator: Callable, seed: int, count: int) -> Any:
    try:
        return codec.canonical(codec.encode(generator(random.Random(seed), count)))
    except Exception:  # noqa: BLE001 - the plan reports a generator that fails
        return None


def unseeded_generators(plan: Plan) -> list[Finding]:
    """A generated case without `seed` whose generator uses its random source: the cases are chosen by accident."""
    findings = []
    for exercise in plan.rubric.exercises:
        for spec in exercise.cases:
            if not spec.generate or spec.seeded:
                continue
            generator = getattr(plan.reference, spec.generate)
            if _sample(generator, 0, spec.count) != _sample(generator, 1, spec.count):
                findings.append(Finding(f"{plan.rubric.path}:{spec.line}", (
                    f"exercise '{exercise.id}': generated case '{spec.generate}' has no 'seed', but its cases depend "
                    f"on it: write one (e.g. seed: 1) so the cases are chosen on purpose and stay the same")))
    return findings


def variants_like_mistakes(plan: Plan) -> list[Finding]:
    """An accepted variant that answers like a known mistake on every case: no notebook can be told apart, so
    the same code would be both right and wrong."""
    from grader.plan.cases import evaluate_reference
    findings = []
    for exercise in plan.rubric.exercises:
        for variant in getattr(exercise, "variants", ()):
            implementation = getattr(plan.reference, variant.reference, None)
            if implementation is None or variant.when:
                # A conditional variant (`when`) is a mistake where its condition fails, by design: the
                # 2020/21 extract_move is right only beside a 2020/21 move_dir.
                continue
            alike = {mistake.reference for mistake in exercise.mistakes}
            for case in plan.cases[exercise.id]:
                try:
                    answer = codec.encode(evaluate_reference(plan.reference, case, plan.data(case), exercise,
                                                             implementation))
                except Exception:  # noqa: BLE001 - a variant that raises is told apart by that case
                    alike.clear()
                    break
                answers = dict(plan.expected[case.id].mistakes)
                alike = {name for name in alike if name in answers and codec.same(answers[name], answer) is None}
                if not alike:
                    break
            for name in sorted(alike):
                line = getattr(variant, "line", 0) or exercise.line
                findings.append(Finding(f"{plan.rubric.path}:{line}", (
                    f"exercise '{exercise.id}': variant '{variant.reference}' gives the answers of mistake "
                    f"'{name}' on every case: the same notebook would be accepted and told it is wrong")))
    return findings


def _defined_names(source: Notebook) -> set[str] | None:
    """Top-level names a notebook or module binds (None when a star import makes them unknowable)."""
    extracted = extract(source)
    if any(isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
           for definition in extracted.definitions.values() for node in [definition.node]):
        return None
    if any("import *" in statement.code for statement in extracted.statements):
        return None
    return set(extracted.definitions)


def student_names(plan: Plan) -> set[str] | None:
    """What every student's notebook can be expected to define: the template's names, its support modules' and
    the builtins. None when that cannot be known (no template, a star import, a file that does not read)."""
    template = plan.rubric.template
    if template is None or not template.is_file():
        return None
    sources = [template]
    if plan.rubric.support is not None and plan.rubric.support.is_dir():
        sources += sorted(p for p in plan.rubric.support.iterdir() if p.suffix in (".py", ".ipynb"))
    names = set(dir(builtins))
    for path in sources:
        try:
            defined = _defined_names(read_notebook(path))
        except (NotebookError, OSError, SyntaxError, ValueError):
            return None
        if defined is None:
            return None
        names |= defined
    return names


def _walrus(expressions: list[str]) -> set[str]:
    """Names a case binds itself (`(s := State(...)).move()` read again by its `reduce`)."""
    names = set()
    for expression in expressions:
        with contextlib.suppress(SyntaxError):
            names |= {node.target.id for node in ast.walk(ast.parse(expression, mode="eval"))
                      if isinstance(node, ast.NamedExpr)}
    return names


def names_students_lack(plan: Plan) -> list[Finding]:
    """A case expression that names something only the reference defines (neither a fixture, a generated
    variable nor a name of the template): the reference, graded as a submission, passes, and every student's
    case fails with a NameError."""
    known = student_names(plan)
    if known is None:
        return []
    known |= {name.split(".")[0] for exercise in plan.rubric.exercises
              for name in (exercise.function, *exercise.aliases)}
    known |= set(plan.rubric.fixtures)
    findings, seen = [], set()
    for exercise in plan.rubric.exercises:
        for case in plan.cases[exercise.id]:
            expressions = [case.call, *(code for _, code in case.set), *(code for _, code in case.probe),
                           *([case.reduce] if case.reduce else [])]
            bound = known | set(case.variables) | {name for name, _ in case.set} | {"result"} | _walrus(expressions)
            for expression in expressions:
                try:
                    missing = sorted(free_names(expression) - bound)
                except SyntaxError:
                    continue     # the rubric's parser reports it
                for name in missing:
                    if (exercise.id, name) in seen:
                        continue
                    seen.add((exercise.id, name))
                    findings.append(Finding(f"{plan.rubric.path}:{case.line}", (
                        f"exercise '{exercise.id}': case {case.id} uses '{name}', which students' notebooks do not "
                        f"define (the template does not, and it is neither a fixture nor a generated variable): "
                        f"every student's case would fail with a NameError while the reference passes. Add '{name}' "
                        f"to 'fixtures:' if it is data of the reference, or define it in code the template gives")))
    return findings


def _opaque_type(wire: Any) -> str | None:
    """The type name of the first value in an encoded value that the codec could only send as an opaque stand-in."""
    stack = [wire]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("opaque"), str):
                return str(node["opaque"]).rsplit(".", 1)[-1]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def objects_sent_as_data(plan: Plan) -> list[Finding]:
    """A fixture or variable the notebook would receive as an opaque stand-in (`CLASSIC = Problem(3, 3, 2)` listed in
    `fixtures:`): the parent sends a case's data to the child encoded, and an object of a class is not data, so the
    reference itself fails on `'Opaque' object has no attribute ...` far from the cause. Said once per name."""
    findings: dict[str, tuple[Finding, int]] = {}
    for exercise in plan.rubric.exercises:
        for case in plan.cases[exercise.id]:
            data = plan.data(case)
            try:
                sent = for_child(case.call, data).values
            except (SyntaxError, ValueError):
                continue      # a case that does not parse or evaluate is reported where it is planned
            if not any(_opaque_type(_encoded(value)) for _, value in sent):
                continue
            for name in sorted(free_names(case.call) & set(data)):
                kind = _opaque_type(_encoded(data[name]))
                if kind is None:
                    continue
                what = "fixture" if name in plan.rubric.fixtures else "variable"
                reason = (f"exercise '{exercise.id}': case {case.id} sends {what} '{name}', a {kind}, to the "
                          f"notebook, which gets an opaque stand-in, not the object: a case's fixtures and variables "
                          f"reach the notebook as data (None, bool, int, float, str, bytes, tuple, list, dict, set, "
                          f"frozenset). Send the data the object is made of and build it in the call "
                          f"(`{kind}(...)`, the notebook's own class), or send only its data (`{name}.attribute`)")
                finding, count = findings.get(name, (Finding(f"{plan.rubric.path}:{case.line}", reason), 0))
                findings[name] = (finding, count + 1)
    return [Finding(f.where, f.reason + (f" ({count - 1} more cases)" if count > 1 else ""))
            for f, count in findings.values()]


def _encoded(value: Any) -> Any:
    try:
        return codec.encode(value)
    except codec.CodecError:
        return None


def authoring_findings(plan: Plan) -> list[Finding]:
    return [*unseeded_generators(plan), *objects_sent_as_data(plan), *check_contracts(plan),
            *variants_like_mistakes(plan), *names_students_lack(plan)]

