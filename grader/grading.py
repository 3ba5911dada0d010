"""Grade one submission: read, extract, run in the sandbox, judge against the plan, score.

Data flows one way: Notebook -> Extracted -> Outcomes (from the child) -> CaseResults -> SubmissionResult.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from grader import __version__
from grader.analysis import global_data_reads, is_stub
from grader.calls import ExpressionError, call_arguments, evaluate_data, for_child
from grader.checks import CheckContext, CheckError, ProbeError, resolve as resolve_check
from grader.extract import Definition, Extracted, extract
from grader.notebook import Notebook, NotebookError, read_notebook
from grader.plan import Case, Plan
from grader.results import CaseResult, ExerciseResult, SubmissionResult, bound_case, bound_result
from grader.rubric import Exercise
from grader.sandbox import codec
from grader.sandbox.isolation import isolation_report
from grader.sandbox.process import CaseRequest, Oracle, Outcome, ProcessLimits, Sandbox, SandboxError
from grader.scoring import exercise_score, total



class CaseRunner(Protocol):
    """What runs an exercise's cases: the sandbox, the kit's runner over it, or the live Jupyter kernel.

    Each request gets exactly one outcome, in order, whatever happens to the code under test.
    """

    def run_exercise(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle,
                     deadline: float, max_timeouts: int = 2) -> list[Outcome]: ...


@dataclass(frozen=True)
class Options:
    """Per-run choices a TA may change on the command line."""

    case_seconds: float | None = None        # overrides the rubric's floor
    submission_seconds: float | None = None
    memory_mb: int | None = None
    allow_root_sandbox: bool = False         # run student code as root where no unused uid can be had


def submission_id(path: Path) -> str:
    """A file-name-safe id from the submission's file name."""
    stem = path.stem if path.is_file() or path.suffix else path.name
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "submission"


def file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def support_sources(plan: Plan) -> dict[str, str]:
    """The assignment's support modules by name (a support notebook is extracted like a submission)."""
    folder = plan.rubric.support
    sources: dict[str, str] = {}
    if folder is None or not folder.is_dir():
        return sources
    for path in sorted(folder.iterdir()):
        if path.suffix == ".py":
            sources[path.stem] = path.read_text(encoding="utf-8")
        elif path.suffix == ".ipynb" and path.stem not in sources:
            sources[path.stem] = extract(read_notebook(path)).source()
    return sources


def _statements(extracted: Extracted) -> list[dict[str, Any]]:
    return [{"code": s.code, "filename": s.label, "line": s.line, "kind": s.kind} for s in extracted.statements]


def _empty_result(path: Path, plan: Plan, sha256: str, reason: str, started: float,
                  submission: str | None = None) -> SubmissionResult:
    exercises = tuple(
        ExerciseResult(e.id, e.title, 0.0, float(e.points), tuple(
            CaseResult(c.id, "missing", c.visibility, "not graded: " + reason, call=c.shown_call, weight=c.weight)
            for c in plan.cases[e.id]))
        for e in plan.rubric.exercises)
    return SubmissionResult(
        submission=submission or submission_id(path), path=str(path), sha256=sha256,
        rubric=plan.rubric.assignment, rubric_sha256=plan.rubric.sha256, grader_version=__version__,
        isolation="none (not run)", total=0.0, max_total=plan.rubric.max_total, exercises=exercises,
        warnings=(reason,), seconds=round(time.monotonic() - started, 3), state="unreadable")


def _resolve(exercise: Exercise, extracted: Extracted, loaded: Sequence[str]) -> str | None:
    """The notebook's name for the graded function (or the class of a graded method): canonical first, then aliases."""
    for name in (n.split(".")[0] for n in exercise.names):
        if name in extracted.definitions or name in loaded:
            return name
    return None


def _method(definition: Definition, method: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, bool]:
    """The last definition of `method` in a class's body, and whether the class has bases it may come from."""
    node = definition.node
    if not isinstance(node, ast.ClassDef):
        return None, True
    found = None
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
            found = item
    return found, bool(node.bases)


def _broken_cell(name: str, notebook: Notebook, extracted: Extracted):
    """The cell left out for a syntax error that defines `name` (read as text: the cell does not parse)."""
    for dropped in extracted.syntax_errors:
        if re.search(rf"\b(def|class)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*=",
                     notebook.cells[dropped.cell].source, re.MULTILINE):
            return dropped
    return None


def _syntax_error_note(name: str, notebook: Notebook, extracted: Extracted) -> str:
    dropped = _broken_cell(name, notebook, extracted)
    return f"; its cell {dropped.label} was left out: {dropped.reason}" if dropped is not None else ""


def _missing(exercise: Exercise, cases: Sequence[Case], message: str, notes: tuple[str, ...] = ()) -> ExerciseResult:
    return ExerciseResult(exercise.id, exercise.title, 0.0, float(exercise.points), tuple(
        CaseResult(c.id, "missing", c.visibility, message, call=c.shown_call, weight=c.weight) for c in cases),
        notes=notes)


_PREPARED: dict[tuple, Any] = {}


def _memo(key: tuple, make):
    """What depends only on the plan and a case is prepared once per batch, not once per submission."""
    if key not in _PREPARED:
        if len(_PREPARED) > 100_000:
            _PREPARED.clear()
        _PREPARED[key] = make()
    return _PREPARED[key]


def _requests(plan: Plan, exercise: Exercise, cases: Sequence[Case], name: str, options: Options) -> list[CaseRequest]:
    return _memo((id(plan), plan.rubric.sha256, exercise.id, name, options.case_seconds, len(cases)),
                 lambda: _build_requests(plan, exercise, cases, name, options))


def _merged(code: str, data: Mapping[str, Any], renames: Mapping[str, str], values: dict[str, Any]) -> str:
    """A further expression of a case, its placeholders renamed so they never collide with the call's; their
    encoded values are added to `values`."""
    extra = for_child(code, data, renames)
    text = extra.code
    for placeholder, value in reversed(extra.values):
        fresh = f"__p{len(values)}"
        text = re.sub(rf"\b{placeholder}\b", fresh, text)
        values[fresh] = codec.encode(value)
    return text


def _build_requests(plan: Plan, exercise: Exercise, cases: Sequence[Case], name: str,
                    options: Options) -> list[CaseRequest]:
    renames = {alias: name for alias in exercise.names if alias != name}
    limits = exercise.limits.merged({"case_seconds": options.case_seconds})
    requests = []
    for case in cases:
        data = plan.data(case)
        call = for_child(case.call, data, renames)
        values = {k: codec.encode(v) for k, v in call.values}
        probes = {probe_name: _merged(code, data, renames, values) for probe_name, code in case.probe}
        reduce = _merged(case.reduce, data, renames, values) if case.reduce else None
        settings = {k: codec.encode(evaluate_data(code, data)) for k, code in case.set}
        requests.append(CaseRequest(case.id, call.code, values, settings, probes,
                                    limits.case_timeout(plan.expected[case.id].seconds), reduce,
                                    oracle_calls=limits.oracle_calls))
    return requests


def _error_message(outcome: Outcome, exercise: Exercise) -> str:
    error = outcome.error
    message = f"{error.get('type', 'Error')}: {error.get('message', '')}".strip()
    if error.get("where"):
        message += f" (at {error['where']})"
    text = f"{error.get('type', '')}: {error.get('message', '')}"
    for hint in exercise.error_hints:
        if hint.match in text:
            message += f". {hint.say}"
    if error.get("stage") == "reduce":
        message = f"while turning the answer into data ({error.get('reduce', 'reduce')}): {message}"
    if error.get("type") == "SystemExit":
        message += ". The code called sys.exit() (or raised SystemExit)"
    return message


def _probes(outcome: Outcome) -> dict[str, Any]:
    decoded: dict[str, Any] = {}
    for name, probe in outcome.probes.items():
        if isinstance(probe, dict) and "value" in probe:
            try:
                decoded[name] = codec.decode(probe["value"])
            except codec.CodecError as error:
                decoded[name] = ProbeError(str(error))
        else:
            decoded[name] = ProbeError(str(probe.get("error", "failed")) if isinstance(probe, dict) else "failed")
    return decoded


def _canonical(wire: Any) -> str | None:
    try:
        return codec.canonical(wire)
    except (TypeError, ValueError, RecursionError):   # not plain JSON data: the slow path says why
        return None


def _canonical_expected(plan: Plan, case_id: str) -> str | None:
    return _memo((id(plan), plan.rubric.sha256, "canonical", case_id),
                 lambda: _canonical(plan.expected[case_id].value))


def judge(plan: Plan, exercise: Exercise, case: Case, outcome: Outcome) -> CaseResult:
    """Turn the child's answer into a verdict, in the parent, on plain data only."""
    expected = plan.expected[case.id]
    base = dict(id=case.id, visibility=case.visibility, call=case.shown_call, expected=expected.value,
                seconds=round(outcome.seconds, 4), output=outcome.output, weight=case.weight,
                traceback=outcome.error.get("traceback", ""))
    if outcome.status == "skipped":
        status = "error" if "budget" in outcome.error.get("message", "") else "timeout"
        return CaseResult(status=status, message=outcome.error.get("message", "not run"), **base)
    if outcome.status == "timeout":
        where = outcome.error.get("where")
        timeout_message = outcome.error.get("message") or "did not finish in time"
        if outcome.error.get("type") == "timeout":
            timeout_message = "did not finish in time"
        return CaseResult(status="timeout", message=timeout_message + (f"; it was still running at {where}"
                                                                       if where else ""), **base)
    if outcome.status == "crash":
        return CaseResult(status="error", message=outcome.error.get("message", "the process died"), **base)
    if outcome.status == "error":
        return CaseResult(status="error", message=_error_message(outcome, exercise), **base)
    got = outcome.value
    if case.check.name == "equal" and _canonical_expected(plan, case.id) == _canonical(got):
        # The same text as the (valid) expected wire: equal under every rule of `equal`, and valid, so the
        # decode and the check's walk are skipped (most answers of a class are right).
        return CaseResult(status="pass", message="", got=got, fraction=1.0, **base)
    try:
        codec.decode(got)  # validate the untrusted wire before any check looks at it
    except codec.CodecError as error:
        return CaseResult(status="error", message=f"the result could not be read: {error}", **base)
    data = _memo((id(plan), plan.rubric.sha256, "data", case.id), lambda: plan.data(case))
    arguments = _memo((id(plan), plan.rubric.sha256, "arguments", case.id),
                      lambda: call_arguments(case.call, data) or ((), {}))
    context = CheckContext(expected=expected.value, got=got, args=arguments[0], kwargs=arguments[1],
                           probes=_probes(outcome), variables=dict(case.variables), data=data,
                           options=dict(case.check.options), reference=plan.reference, validated=True)
    function = resolve_check(case.check.name, plan.reference)
    try:
        verdict = function(context)
    except (CheckError, ExpressionError) as error:
        return CaseResult(status="problem", got=got, message=f"grader problem (rubric check): {error}", **base)
    except Exception as error:  # noqa: BLE001 - a check or reference helper that crashes is the course's bug
        # Not the student's fail: a check must reject odd answers with a verdict, never by raising.
        return CaseResult(status="problem", got=got, message=f"grader problem: the check {case.check.name} "
                                                             f"crashed: {type(error).__name__}: {error}", **base)
    message = verdict.message
    if not verdict.passed:
        answers = dict(expected.mistakes)   # a mistake that raised on this input is absent
        for mistake in exercise.mistakes:
            if mistake.reference in answers and codec.same(answers[mistake.reference], got, validated=True) is None:
                message = f"{message}. {mistake.say}" if message else mistake.say
                break
    return CaseResult(status="pass" if verdict.passed else "fail", message=message, got=got,
                      fraction=verdict.fraction, **base)


def _template_names(plan: Plan) -> frozenset[str]:
    """Globals the course's own template code reads (AIMA's given best_first_search reads `failure`):
    a student's function reading them does so by design."""
    def names() -> frozenset[str]:
        template = plan.rubric.template
        if template is None or not template.is_file():
            return frozenset()
        try:
            definitions = extract(read_notebook(template), plan.rubric.policy).definitions
        except NotebookError:
            return frozenset()
        read: set[str] = set()
        for definition in definitions.values():
            if isinstance(definition.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                read.update(global_data_reads(definition.node, definitions))
        return frozenset(read)
    return _memo((id(plan), plan.rubric.sha256, "template-names"), names)


def _notes(exercise: Exercise, name: str, extracted: Extracted, plan: Plan) -> tuple[str, ...]:
    notes = []
    # Globals the course itself defines (fixtures) or that cases set on purpose are not worth a remark.
    expected_globals = (set(plan.rubric.fixtures) | {n for c in plan.cases[exercise.id] for n, _ in c.set}
                        | _template_names(plan))
    if name != exercise.function:
        notes.append(f"graded {name} (accepted as another name for {exercise.function})")
    definition = extracted.definitions.get(name)
    if definition is not None and isinstance(definition.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for global_name in global_data_reads(definition.node, extracted.definitions):
            if global_name in expected_globals or (len(global_name) > 1 and global_name.isupper()):
                continue   # course fixtures, globals the rubric sets, and CONSTANTS are what they should be
            where = extracted.definitions[global_name]
            notes.append(f"{name} reads the notebook's global variable {global_name} ({where.label}, line "
                         f"{where.line}); the grader keeps top-level data, so it used the last value the "
                         f"notebook assigns to {global_name}. Pass it as a parameter or compute it locally instead.")
    return tuple(notes)


def _no_oracle(name: str, args: list, kwargs: dict) -> Any:
    raise LookupError(f"{name} is not isolated in this run")


ISOLATED_RERUN_FACTOR = 10.0   # helper calls answered by the parent cost a round trip each


def _second_chance(plan: Plan, exercise: Exercise, cases: Sequence[Case], requests: Sequence[CaseRequest],
                   results: list[CaseResult], sandbox: CaseRunner, deadline: float) -> list[CaseResult]:
    """Re-run failed cases with the reference's helpers (answered by the parent); the better verdict counts.

    So a broken `matches` does not also fail `search`, and a notebook whose helpers work never pays for
    the round trips.
    """
    retry = [i for i, r in enumerate(results) if r.status in ("fail", "error") and r.fraction < 1.0]
    if not retry:
        return results
    reference = plan.reference

    def oracle(function: str, args: list, kwargs: dict) -> Any:
        return getattr(reference, function)(*args, **kwargs)

    rerun = [replace(requests[i], timeout=requests[i].timeout * ISOLATED_RERUN_FACTOR) for i in retry]
    outcomes = sandbox.run_exercise(rerun, exercise.isolate, oracle, deadline, max_timeouts=1)
    improved = list(results)
    helpers = ", ".join(exercise.isolate)
    for index, outcome in zip(retry, outcomes, strict=True):
        second = judge(plan, exercise, cases[index], outcome)
        first = results[index]
        if second.fraction > first.fraction or (second.status == "pass" and first.status != "pass"):
            improved[index] = replace(second, message=(
                f"{second.message + '. ' if second.message else ''}Passed with the reference's {helpers}; with "
                f"the notebook's own it failed: {first.message}" if second.status == "pass" else
                f"{second.message} (with the reference's {helpers}; with the notebook's own: {first.message})"))
    return improved


def grade_exercise(plan: Plan, exercise: Exercise, sandbox: CaseRunner | None, notebook: Notebook,
                   extracted: Extracted, loaded: Sequence[str], deadline: float, options: Options) -> ExerciseResult:
    cases = plan.cases[exercise.id]
    name = _resolve(exercise, extracted, loaded)
    if name is None:
        names = " or ".join(exercise.names)
        missing = _missing(exercise, cases, f"no function named {names} in the notebook"
                           + _syntax_error_note(exercise.function, notebook, extracted))
        broken = _broken_cell(exercise.function, notebook, extracted)
        # where the function is, although it could not run: reports put its feedback beside that cell
        return replace(missing, location=f"{broken.label}, line {broken.line}") if broken is not None else missing
    definition = extracted.definitions.get(name)
    location = f"{definition.label}, line {definition.line}" if definition else ""
    if "." in exercise.function and definition is not None:
        method_name = exercise.function.split(".")[1]
        method, inherits = _method(definition, method_name)
        if method is None and not inherits:
            return replace(_missing(exercise, cases, f"class {name} ({location}) has no method {method_name}"),
                           location=location, function=f"{name}.{method_name}")
        if method is not None:
            location = f"{definition.label}, line {method.lineno}"
            if is_stub(method):
                return replace(_missing(exercise, cases, f"{name}.{method_name} is still the template's stub "
                                                         f"({location})"),
                               location=location, function=f"{name}.{method_name}")
    if definition is not None and definition.is_stub:
        return replace(_missing(exercise, cases, f"{name} is still the template's stub ({location})"),
                       location=location, function=name)
    if name not in loaded:
        return replace(_missing(exercise, cases, f"{name} is defined ({location}) but could not be loaded; see the "
                                                 f"warnings"), location=location, function=name)
    assert sandbox is not None
    requests = _requests(plan, exercise, cases, name, options)
    outcomes = sandbox.run_exercise(requests, (), _no_oracle, deadline, max_timeouts=exercise.limits.max_timeouts)
    # Bounded as soon as judged: a huge answer costs its case, never the memory of the batch.
    results = [bound_case(judge(plan, exercise, case, outcome))
               for case, outcome in zip(cases, outcomes, strict=True)]
    del outcomes
    if exercise.isolate:
        results = [bound_case(r) for r in _second_chance(plan, exercise, cases, requests, results, sandbox,
                                                         deadline)]
    notes = _notes(exercise, name, extracted, plan)
    if any(r.status != "pass" for r in results):
        notes += exercise.hints
    score = exercise_score(results, exercise.points, exercise.scoring, planned={c.id: c.weight for c in cases})
    return ExerciseResult(exercise.id, exercise.title, score, float(exercise.points), tuple(results), notes=notes,
                          function=name, location=location)


def grade_notebook(notebook: Notebook, plan: Plan, *, path: Path, sha256: str, support: Mapping[str, str],
                   options: Options = Options(), submission: str | None = None,
                   hide_paths: Sequence[str] = ()) -> SubmissionResult:
    started = time.monotonic()
    rubric = plan.rubric
    extracted = extract(notebook, rubric.policy)
    limits = rubric.limits.merged({"submission_seconds": options.submission_seconds, "memory_mb": options.memory_mb})
    deadline = started + limits.submission_seconds
    warnings = [*notebook.warnings, *extracted.warnings]
    process_limits = ProcessLimits(memory_mb=limits.memory_mb, cpu_seconds=int(limits.submission_seconds) + 5,
                                   load_seconds=limits.load_seconds, disk_mb=limits.disk_mb, files=limits.files)
    with Sandbox(_statements(extracted), support, process_limits, limits.output_bytes, hide_paths,
                 allow_root=options.allow_root_sandbox) as sandbox:
        sandbox_level = sandbox.isolation.level
        try:
            report = sandbox.load(deadline)
            loaded: Sequence[str] = report.names
            warnings.extend(report.warnings)
        except SandboxError as error:
            warnings.append(str(error))
            loaded = ()
        exercises = tuple(grade_exercise(plan, exercise, sandbox if loaded else None, notebook, extracted, loaded,
                                         deadline, options) for exercise in rubric.exercises)
        sandbox_level = sandbox.level or sandbox_level
        held = isolation_report(sandbox_level, sandbox.facts, process_limits)
    return bound_result(SubmissionResult(
        submission=submission or submission_id(path), path=str(path), sha256=sha256, rubric=rubric.assignment,
        rubric_sha256=rubric.sha256, grader_version=__version__, isolation=sandbox_level,
        total=total(e.score for e in exercises), max_total=rubric.max_total, exercises=exercises,
        warnings=tuple(warnings), seconds=round(time.monotonic() - started, 3), extra={"isolation": held}))


def hidden_folders(plan: Plan, submission: Path, extra: Sequence[Path | None] = ()) -> list[str]:
    """Folders the child must not see: the course checkout (reference, rubrics, tests, .git), other
    submissions, results, caches and other children's scratch dirs.

    Inside them the child re-exposes only what it needs to run (its interpreter prefix and libraries).
    A folder holding the base Python installation, the root or the home folder is never hidden whole.
    """
    import sys
    from grader.sandbox.process import scratch_base
    rubric = plan.rubric
    course = Path(os.path.commonpath([rubric.path.parent.resolve(), rubric.reference.parent.resolve()]))
    never = {Path("/"), *Path(sys.base_prefix).resolve().parents} - {Path.home().resolve()}
    from grader.batch import default_cache
    # Temporary and home folders hold other runs' results and caches (with hidden expected values).
    shared = [Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm"), Path.home(), default_cache()]
    candidates = [course, rubric.reference.parent, rubric.path.parent, rubric.submissions,
                  submission.resolve().parent, scratch_base(), *shared, *extra]
    hidden: list[str] = []
    for folder in candidates:
        if folder is None:
            continue
        folder = Path(folder).resolve()
        if folder in never or folder == Path(sys.base_prefix).resolve() or folder == Path(sys.prefix).resolve():
            continue
        if folder.is_dir() and str(folder) not in hidden:
            hidden.append(str(folder))
    return hidden


def grade_path(path: Path, plan: Plan, support: Mapping[str, str], options: Options = Options(),
               submission: str | None = None, hide: Sequence[Path | None] = ()) -> SubmissionResult:
    """Grade one submission file; a file that cannot be read still gets a result, at zero, saying why."""
    started = time.monotonic()
    sha256 = file_sha256(path)
    try:
        notebook = read_notebook(path)
    except NotebookError as error:
        return _empty_result(path, plan, sha256, str(error), started, submission)
    return grade_notebook(notebook, plan, path=path, sha256=sha256, support=support, options=options,
                          submission=submission, hide_paths=hidden_folders(plan, path, hide))
