"""Grade one submission: read, extract, run in the sandbox, judge against the plan, score.

Data flows one way: Notebook -> Extracted -> Outcomes (from the child) -> CaseResults -> SubmissionResult.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import hashlib
import marshal
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from grader import __version__, incidents
from grader.syntax.analysis import global_data_reads, is_stub
from grader.syntax.calls import (ExpressionError, MethodCall, call_arguments, evaluate_data, for_child,
                                free_names, isolated_call)
from grader.judge.conventions import (ReadsAs, allowed_variants, hold_to_one, spelled_alike, spelling_notes,
                                      variant_note)
from grader.judge.feedback import same_failures
from grader.judge.options import Options
from grader.checks.registry import PATH_CHECKS, CheckContext, CheckError, ProbeError, resolve as resolve_check
from grader.extract.source import Definition, Extracted, extract
from grader.intake.notebook import Notebook, NotebookError, file_sha256, read_notebook
from grader.intake.warning import GraderWarning, Kind
from grader.plan.cases import Case, Plan
from grader.plan.given import support_data, support_texts, visible_data, with_given
from grader.plan.sealed import default_cache
from grader.store.results import (CASE_BOUNDS, CaseResult, ExerciseResult, SubmissionResult, advised,
                                  bound_case, bound_result, case_from_dict, case_json_at_most, fitting, sized_case)
from grader.rubric.schema import Exercise, IsolatedMethod, Limits, Rubric
from grader import codec
from grader.kept import SizedMemo
from grader.store import status as vocabulary
from grader.sandbox import cpuclock, frames
from grader.sandbox.alarm import bounded
from grader.sandbox.budget import Budget, Mark
from grader.sandbox.isolation import isolation_report
from grader.sandbox.process import (CaseRequest, LoadReport, MachineBusy, Oracle, Outcome, ProcessLimits, PureOracle,
                                    Replies, Sandbox, SandboxError, SharedReplies, preloads, right_answer,
                                    timed_out, with_timeouts_left)
from grader.judge.scoring import exercise_score, total



class CaseRunner(Protocol):
    """What runs an exercise's cases: the sandbox, the kit's runner over it, or the live Jupyter kernel.

    Each request gets exactly one outcome, in order, whatever happens to the code under test. `more` says
    another exercise follows (a hint: the sandbox's fork prepares for it while the grader turns around).
    """

    def run_exercise(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle,
                     deadline: float, max_timeouts: int = 2,
                     methods: Mapping[str, Any] | None = None, more: bool = False) -> list[Outcome]: ...


def submission_id(path: Path) -> str:
    """A file-name-safe id from the submission's file name."""
    stem = path.stem if path.is_file() or path.suffix else path.name
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "submission"


def support_sources(plan: Plan) -> dict[str, str]:
    """The assignment's support modules by name (a support notebook is extracted like a submission)."""
    return support_texts(plan.rubric.support)


@functools.lru_cache(maxsize=8)
def _template_text(path: Path | None) -> str:
    """The template notebook's file as text ("" without one): course code, read once per process."""
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path is not None else ""
    except OSError:
        return ""


def course_preload(template: Path | None, support: Mapping[str, str]) -> tuple[str, ...]:
    """What the sandbox's zygote should have imported for this course: what its support modules or its template
    notebook name (never what a submission names: see process.preloads)."""
    return preloads([*support.values(), _template_text(template)])


def child_statements(extracted: Extracted) -> list[dict[str, Any]]:
    # "cell": the parent places the child's load warnings with it (the child itself does not read it)
    return [{"code": s.code, "filename": s.label, "line": s.line, "kind": s.kind, "names": list(s.names),
             "cell": s.cell} for s in extracted.statements]


def empty_result(path: Path, plan: Plan, sha256: str, reason: str, started: float,
                  submission: str | None = None, kind: Kind = Kind.UNREADABLE) -> SubmissionResult:
    exercises = tuple(
        ExerciseResult(e.id, e.title, 0.0, float(e.points), tuple(
            CaseResult(c.id, "missing", c.visibility, "not graded: " + reason, call=c.shown_call, weight=c.weight,
                       reason=vocabulary.NOT_GRADED, cause=UNREADABLE)
            for c in plan.cases[e.id]))
        for e in plan.rubric.exercises)
    return SubmissionResult(
        submission=submission or submission_id(path), path=str(path), sha256=sha256,
        rubric=plan.rubric.assignment, rubric_sha256=plan.rubric.sha256, grader_version=__version__,
        isolation="none (not run)", total=0.0, max_total=plan.rubric.max_total, exercises=exercises,
        warnings=(GraderWarning(kind, reason),), seconds=round(time.monotonic() - started, 3),
        state="unreadable")


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


def _kind(plan: Plan, exercise: Exercise) -> str:
    """What the graded name is, as the reference has it: a function, class, method or constant."""
    if "." in exercise.function:
        return "method"
    value = getattr(plan.reference, exercise.function, None)
    if isinstance(value, type):
        return "class"
    return "function" if callable(value) or value is None else "constant"


def _lacking(plan: Plan, exercise: Exercise, cases: Sequence[Case], name: str,
             loaded: Sequence[str]) -> dict[str, str]:
    """Case id -> the notebook names its call needs that the notebook does not define ("the class State"),
    found by the parent before anything runs, so the student reads that, not a NameError of the grader's call."""
    # The graded name under any of its names: the call is renamed to the notebook's own. What is there whatever
    # the notebook (builtins, isolated helpers, the exercise's names) is taken away first, once per plan: most
    # calls need nothing else, and the notebook's names are looked at only for those that do.
    known = plan.memo.get(("known-names", exercise.id), lambda: frozenset(exercise.isolate) | _BUILTINS
                          | {n.split(".")[0] for n in exercise.names})
    lacking = {}
    present: set[str] | None = None
    for case in cases:
        needed = _called_names(plan, case) - known
        if needed:
            present = present if present is not None else set(loaded) | {name}
            needed -= present
        if needed:
            lacking[case.id] = ", ".join(f"the {_kind_of(plan, n)} {n}" for n in sorted(needed))
    return lacking


_BUILTINS = frozenset(dir(builtins))


def _called_names(plan: Plan, case: Case) -> frozenset[str]:
    """The names a case's call calls that are not the case's own data (`Node(state)`: data reaches the child as
    values, never by name): the same for every submission, so parsed once per plan."""
    def called() -> frozenset[str]:
        try:
            tree = ast.parse(case.call, mode="eval")
        except SyntaxError:
            return frozenset()
        names = {node.func.id for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        return frozenset(names - set(plan.data(case)))
    return plan.memo.get(("called", case.id), called)


def _takes_spellings(cases: Sequence[Case]) -> bool:
    """Whether a case's check may take an answer in another spelling (an `equal` option that says so)."""
    return any(case.check.name == "equal" and (case.check.options.get("sequence_as_set")
                                               or case.check.options.get("any_number_type")) for case in cases)


def _kind_of(plan: Plan, name: str) -> str:
    value = getattr(plan.reference, name, None)
    if isinstance(value, type):
        return "class"
    return "function" if callable(value) or value is None else "constant"


def _called_method(exercise: Exercise, cases: Sequence[Case]) -> str:
    """The one method every case calls on an instance of the graded class (`EightPuzzle(s).h2(...)`), if any:
    what a class-graded exercise really grades, so its template stub is reported as missing."""
    methods = set()
    for case in cases:
        try:
            call = ast.parse(case.call, mode="eval").body
        except SyntaxError:
            return ""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
                and call.func.value.func.id in exercise.names):
            return ""
        methods.add(call.func.attr)
    return methods.pop() if len(methods) == 1 else ""


def _broken_cell(name: str, notebook: Notebook, extracted: Extracted):
    """The cell left out for a syntax error that defines `name` (read as text: the cell does not parse)."""
    for dropped in extracted.syntax_errors:
        if re.search(rf"\b(def|class)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*=",
                     notebook.cells[dropped.cell].source, re.MULTILINE):
            return dropped
    return None


def _syntax_error_note(name: str, notebook: Notebook, extracted: Extracted) -> str:
    dropped = _broken_cell(name, notebook, extracted)
    if dropped is not None:
        return f"; the cell that defines it, {dropped.label}, was left out: {dropped.reason}"   # label: "cell 3"
    text = _text_cell(name, notebook)
    if text is not None:
        return f"; it is written in {text.label}, a {text.kind} cell, which Jupyter never runs (make it a Code cell)"
    return _nested_note(name, extracted)


def _nested_note(name: str, extracted: Extracted) -> str:
    """Where `name` is defined inside a class or a function of the notebook (a method, a helper nested in its
    caller): the student sees the def, the cases call a top-level name that is not there. The definitions in force
    are searched, as extraction parsed them: a class or function defined twice is named where it was last."""
    for definition in extracted.definitions.values():
        outer = definition.node
        if isinstance(outer, _DEFINITIONS) and any(
                isinstance(node, _DEFINITIONS) and node.name == name for top in outer.body for node in ast.walk(top)):
            where = f"class {outer.name}" if isinstance(outer, ast.ClassDef) else f"the function {outer.name}"
            return f"; it is defined inside {where} ({definition.label}), not at the top level of a cell, where " \
                "the assignment calls it"
    return ""


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _renamed_note(plan: Plan, exercise: Exercise, extracted: Extracted) -> str:
    """The notebook's definition whose name is the graded one spelt otherwise (`idaStar`, `IDA_star`, `idastar`
    for `ida_star`; a letter off): the student wrote it and sees it, and 'no function named ida_star' alone does
    not say which of their names the grader looked past. Names another exercise grades are not offered."""
    wanted = exercise.function.split(".")[0]
    graded = {name.split(".")[0] for other in plan.rubric.exercises for name in other.names}
    kinds = {"data"} if _kind(plan, exercise) == "constant" else {"function", "class", "lambda"}
    candidates = {name: definition for name, definition in extracted.definitions.items()
                  if name not in graded and definition.kind in kinds}
    squeezed = {name.replace("_", "").casefold(): name for name in sorted(candidates)}
    key = wanted.replace("_", "").casefold()
    found = squeezed.get(key)
    if found is None:
        close = difflib.get_close_matches(key, list(squeezed), n=1, cutoff=0.85)
        found = squeezed[close[0]] if close else None
    if found is None:
        return ""
    definition = candidates[found]
    return f"; the notebook defines {found} ({definition.label}, line {definition.line}): name it {wanted}, " \
        "as the assignment calls it, if that is the one"


def _text_cell(name: str, notebook: Notebook):
    """The markdown or raw cell that defines `name` at a line's start (a cell's type switched by a stray key, or
    code pasted as text): the notebook never ran it, yet the student sees it there."""
    pattern = re.compile(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", re.MULTILINE)
    for cell in notebook.cells:
        if cell.kind != "code" and name in cell.source and pattern.search(cell.source) is not None:
            return cell
    return None


# Why an exercise's cases were not run (CaseResult.cause of a "not graded" case).
UNREADABLE, NOT_DEFINED, NO_METHOD, STUB, NOT_LOADED = (
    "the file could not be graded", "not defined in the notebook", "the class lacks the graded method",
    "still the template's stub", "defined but could not be loaded")
# Why a case is a `busy machine` problem (CaseResult.cause): whether it was stopped, never run or never loaded.
BUSY_CAUSE = "the machine was too busy to run it"


def _missing(exercise: Exercise, cases: Sequence[Case], message: str, cause: str,
             notes: tuple[str, ...] = ()) -> ExerciseResult:
    return ExerciseResult(exercise.id, exercise.title, 0.0, float(exercise.points), tuple(
        CaseResult(c.id, "missing", c.visibility, message, call=c.shown_call, weight=c.weight,
                   reason=vocabulary.NOT_GRADED, cause=cause) for c in cases),
        notes=notes)


def _requests(plan: Plan, exercise: Exercise, cases: Sequence[Case], name: str, options: Options) -> list[CaseRequest]:
    return plan.memo.get(("requests", exercise.id, name, options.case_seconds, len(cases)),
                         lambda: build_requests(plan, exercise, cases, name, options))


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


def build_requests(plan: Plan, exercise: Exercise, cases: Sequence[Case], name: str,
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
                                    oracle_calls=limits.oracle_calls, right=_right_frame(plan, case),
                                    hidden=case.visibility != "public", answer_bytes=answer_bytes(plan, case)))
    return requests


def _right_frame(plan: Plan, case: Case) -> tuple[bytes, frames.Result] | None:
    """What a right answer's frame is, where the judge takes an answer of the expected wire itself as right
    without looking at it (an `equal` case with a valid expected value and no probes): see CaseRequest.right."""
    if case.check.name != "equal" or case.probe or _marshalled_expected(plan, case.id) is None:
        return None
    return right_answer(case.id, plan.expected[case.id].value)


# What a case that called input() is told: the grader runs it with no one to type, so input() finds its stdin empty.
NO_KEYBOARD = ("The code called input(), but the grader has no keyboard: nobody types while it runs, so input() "
               "finds nothing to read. A graded function must not call input(): take the value as a parameter")

# Jupyter keeps what a notebook wrote; the sandbox empties its working folder after the load and after each
# exercise (runtime.reset), so a file made at the top level (a cache, a copy) is gone when a case reads it. Said of
# where the grader runs: the kit's check in a live kernel (nothing emptied) and an absolute path get it too.
MISSING_FILE = ("Where the grader runs the cases, the working folder holds the course's data files only: a file the "
                "notebook wrote while it loaded, or in another exercise, is not there, nor is a file from your own "
                "computer's folders; write a file where it is read")


def _raised(outcome: Outcome, exercise: Exercise, base: Mapping[str, Any]) -> CaseResult:
    """An exception of the student's code: its type and text, where it was raised and the rubric's advice
    on it, each a field; the message shows them together."""
    error = {**outcome.error, "message": codec.without_addresses(str(outcome.error.get("message", "")))}
    raised = f"{error.get('type', 'Error')}: {error.get('message', '')}".strip()
    where = str(error.get("where") or "")
    message = raised + (f" (at {where})" if where else "")
    advice = hints_said(exercise, raised)
    if error.get("type") == "SystemExit":
        advice.append("The code called sys.exit() (or raised SystemExit)")
    if error.get("stage") == "input":   # the runtime saw its keyboard-less stdin raise it (runtime.NoKeyboard)
        advice.append(NO_KEYBOARD)
    if error.get("type") == "FileNotFoundError":
        advice.append(MISSING_FILE)
    cause = error_cause(str(error.get("type", "Error")), str(error.get("message", "")))
    if error.get("stage") == "reduce":
        message = f"while turning the answer into data ({error.get('reduce', 'reduce')}): {message}"
        cause = f"while turning the answer into data: {cause}"
    return advised(CaseResult(status="error", message=message, reason=vocabulary.RAISED, cause=cause, error=raised,
                              where=where, **base), ". ".join(advice))


# The numbers of an exception's own text, as the child sent it (error["message"]): this is where a case's `cause`
# is born from the raw fact, not a sentence of the grader's read back (tests/test_class_report.py checks that the
# judge never parses a CaseResult.message or a warning's text).
_NUMBERS = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\b0x[0-9a-fA-F]+\b")


def error_cause(kind: str, text: str) -> str:
    """An exception without its numbers ("KeyError: #", "IndexError: list index out of range"): two students
    who raise the same error on different inputs made one mistake. Quoted names ('str', 'int') stay."""
    return " ".join(f"{kind}: {_NUMBERS.sub('#', text)}".split())


# A probe's value is the child's choice (an h2 returning a million-item list): decoded within these bounds (one
# value a check reads: a number, a state), else the check gets a ProbeError, and once per outcome, not again for
# each check of it (the case, each known mistake, each accepted variant), all outside the check's CPU bound.
PROBE_TEXT_FLOOR = 4096     # a probe's value (its nodes, and in a result frame its characters) or error text
PROBE_LIMITS = codec.Limits(max_depth=32, max_items=PROBE_TEXT_FLOOR, max_chars=16 * PROBE_TEXT_FLOOR)
_DECODED_PROBES: tuple[Any, dict[str, Any]] = (None, {})   # the last outcome's probes, decoded (one slot: atomic)


def _probes(outcome: Outcome) -> dict[str, Any]:
    """The outcome's probes decoded (PROBE_LIMITS), each a value or a ProbeError; a fresh dict each time."""
    global _DECODED_PROBES
    if not outcome.probes:
        return {}
    raw, decoded = _DECODED_PROBES
    if raw is not outcome.probes:
        decoded = {}
        for name, probe in outcome.probes.items():
            if isinstance(probe, dict) and "value" in probe:
                try:
                    decoded[name] = codec.decode(probe["value"], PROBE_LIMITS)
                except codec.CodecError as error:
                    decoded[name] = ProbeError(str(error))
            else:
                decoded[name] = ProbeError(str(probe.get("error", "failed")) if isinstance(probe, dict) else "failed")
        _DECODED_PROBES = (outcome.probes, decoded)
    return dict(decoded)


def _canonical(wire: Any) -> str | None:
    try:
        return codec.canonical(wire)
    except (TypeError, ValueError, RecursionError):   # not plain JSON data: the slow path says why
        return None


def _canonical_expected(plan: Plan, case_id: str) -> str | None:
    return plan.memo.get(("canonical", case_id), lambda: _canonical(plan.expected[case_id].value))


def _marshalled(wire: Any) -> bytes | None:
    """Marshal's bytes of a wire value (version 0: no references, so equal values of equal types give equal
    bytes, and equal bytes mean the same JSON), or None."""
    try:
        return marshal.dumps(wire, 0)
    except (ValueError, TypeError, RecursionError):
        return None


def _marshalled_expected(plan: Plan, case_id: str) -> bytes | None:
    """The expected wire's marshal bytes, when the expected value is valid plain JSON (its canonical text is)."""
    return plan.memo.get(("marshalled", case_id), lambda: _marshalled(plan.expected[case_id].value)
                         if _canonical_expected(plan, case_id) is not None else None)


def fixture_uses(code: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The fixtures an expression uses, by what it names: `Patterns[4]` (an element taken with a constant index,
    the state the case is about) rather than the whole list, a bare `Start` by its name."""
    import ast
    tree = ast.parse(code, mode="eval")
    used: dict[str, Any] = {}
    taken: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in data \
                and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int:
            try:
                used[f"{node.value.id}[{node.slice.value}]"] = data[node.value.id][node.slice.value]
                taken.add(id(node.value))
            except (IndexError, KeyError, TypeError):
                pass
    bound = free_names(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in data and node.id in bound and id(node) not in taken:
            used[node.id] = data[node.id]
    return used


def case_inputs(plan: Plan, case: Case) -> dict[str, Any]:
    """The course fixtures and generated variables a public case's call and settings use, by name, as wire values:
    feedback shows them (`Board3` means nothing to a student who never saw it, and a generated state is easier
    to read as a board). Hidden cases keep theirs secret."""
    if case.visibility != "public":
        return {}

    def make() -> dict[str, Any]:
        # The course's fixtures and the generator's variables: a generated `state` is drawn as a board too; a
        # number the call line states whole ("with m=3") is not drawn again (Case.stated).
        shown = set(plan.rubric.fixtures) | (set(case.variables) - case.stated)
        data = {name: value for name, value in plan.data(case).items() if name in shown}
        inputs: dict[str, Any] = {}
        for code in (case.call, *(code for _, code in case.set)):
            try:
                inputs.update(fixture_uses(code, data))
            except SyntaxError:
                pass
        return {name: codec.encode(inputs[name]) for name in sorted(inputs)}
    return plan.memo.get(("inputs", case.id), make)


def judge(plan: Plan, exercise: Exercise, case: Case, outcome: Outcome) -> CaseResult:
    """Turn the child's answer into a verdict, in the parent, on plain data only."""
    if outcome.status == "ok" and not outcome.unread:    # most answers: right ones
        if case.check.name == "equal":
            right = _right_template(plan, case)
            if right is not None and (outcome.value is plan.expected[case.id].value
                                      or _marshalled(outcome.value) == _marshalled_expected(plan, case.id)):
                return _from_template(right, outcome)
        elif not outcome.probes and not case.probe and _is_expected(plan, case.id, outcome.value):
            learned = _checked_template(plan, case)
            if learned[0] is not None:
                return _from_template(learned[0], outcome)
            result = _judge(plan, exercise, case, outcome)
            learned[0] = _learned_template(result)
            return result
    return _judge(plan, exercise, case, outcome)


def _is_expected(plan: Plan, case_id: str, got: Any) -> bool:
    """Whether an answer is the expected value: the same canonical text, by which judge keeps a verdict
    (_answer_key), asked only of an answer of the expected value's type and length (a wrong one is mostly not
    made canonical here). A frame a worker met before is the very object parsed then, whose text _answer_text
    keeps: a class's many equal paths are made canonical once."""
    expected = plan.expected[case_id].value
    if got is expected:
        return True
    kind = type(got)
    if kind is not type(expected) or (kind is list or kind is dict) and len(got) != len(expected):
        return False
    wanted = _canonical_expected(plan, case_id)
    return wanted is not None and _answer_text(got)[0] == wanted


def _checked_template(plan: Plan, case: Case) -> list[tuple[dict[str, Any], int | None] | None]:
    """Where a case whose check is not `equal` (unordered, a path, a course's own) keeps its right answer's
    template (_right_template's form) once an answer of the expected value's canonical text has passed it: None
    until then.

    The verdict of an answer is a function of the case, the answer and its probes (judge keeps it in the plan's
    memo under those: _answer_key), so the next answer of the same text and no probes gets the same fields; only
    its own (times, output, traceback) differ. Learned from a real verdict, not worked out ahead: the check is
    the course's code, run here as for any answer. Without it each such answer (a path: 12 of a Taoistic notebook's
    137 cases, the unordered find_numbers 9 more) was looked up in the memo and made a CaseResult through its
    __init__, then bounded field by field and measured whole (its path twice) as the result was stored."""
    return plan.memo.get(("checked right answer", case.id), lambda: [None])


def _learned_template(result: CaseResult) -> tuple[dict[str, Any], int | None] | None:
    """_right_template's form of a passing verdict of the expected value (see _checked_template), or None: a verdict
    that is not a pass is made again each time, as before."""
    if result.status != "pass":
        return None
    right = object.__new__(CaseResult)
    right.__dict__.update(result.__dict__)
    right.__dict__.update(seconds=0.0, output="", cpu_seconds=None, traceback="", inputs={})
    fields = dict(right.__dict__)
    within = bound_case(right) is right
    return fields, case_json_at_most({name: value for name, value in fields.items()
                                      if name not in _ANSWERS_OWN}) if within else None


def _judge(plan: Plan, exercise: Exercise, case: Case, outcome: Outcome) -> CaseResult:
    """judge, without the right answers' templates."""
    # The weight as a float, as results store it (bound_case would otherwise copy every case to convert it).
    base = dict(id=case.id, visibility=case.visibility, call=case.shown_call, expected=stored_expected(plan, case.id),
                seconds=round(outcome.seconds, 4), output=outcome.output, weight=float(case.weight),
                cpu_seconds=round(outcome.cpu_seconds, 4) if outcome.cpu_seconds is not None else None,
                traceback=outcome.error.get("traceback", ""), inputs=case_inputs(plan, case),
                **answer_facts(case))
    if outcome.status == "skipped":
        if outcome.error.get("reason") == "starved":
            # Not run because a busy machine took more of the submission's time than its deadline may move by.
            return CaseResult(status="problem", message=f"grader problem: {outcome.error.get('message', '')}",
                              reason=vocabulary.BUSY, cause=BUSY_CAUSE, **base)
        if outcome.error.get("reason") == "budget":
            return CaseResult(status="error", message=outcome.error.get("message", "not run"),
                              reason=vocabulary.BUDGET, cause="not run: the submission's time budget was spent",
                              **base)
        return CaseResult(status="timeout", message=outcome.error.get("message", "not run"),
                          reason=vocabulary.AFTER_TIMEOUTS, cause="not run: earlier cases of the exercise timed out",
                          **base)
    if outcome.status == "timeout" and outcome.error.get("reason") == "starved":
        # Stopped by the wall backstop while the kernel kept it waiting for a CPU: the machine's fault.
        return CaseResult(status="problem", message=f"grader problem: {outcome.error.get('message', '')}",
                          reason=vocabulary.BUSY, cause=BUSY_CAUSE, **base)
    if outcome.status == "timeout":
        where = str(outcome.error.get("where") or "")
        timeout_message = outcome.error.get("message") or "did not finish in time"
        if outcome.error.get("type") == "timeout":
            timeout_message = "did not finish in time"
        return CaseResult(status="timeout", message=timeout_message + (f"; it was still running at {where}"
                                                                       if where else ""),
                          reason=vocabulary.TOO_SLOW, cause="did not finish in time", where=where, **base)
    if outcome.status == "crash":
        return CaseResult(status="error", message=outcome.error.get("message", "the process died"),
                          reason=vocabulary.RAISED, cause="the process died", **base)
    if outcome.status == "error":
        return _raised(outcome, exercise, base)
    if outcome.unread:
        return _too_large(None, f"{outcome.unread:,} bytes", base)
    got = outcome.value
    # A right answer: the same text as the (valid) expected wire, so equal under every rule of `equal`, and valid:
    # the decode and the check's walk are skipped (most answers of a class are right). The answer is then kept as
    # the expected value itself (the same JSON): stored and sent once, and the results folder and the gradebook
    # see at once that it is the same. The same marshal bytes (exact types, the same key order) say so first,
    # at a third of the canonical text's cost; the canonical text decides when they differ.
    expected_bytes = _marshalled_expected(plan, case.id) if case.check.name == "equal" else None
    # The expected wire itself: the frame was the bytes of a right answer (CaseRequest.right), not parsed.
    if expected_bytes is not None and (got is plan.expected[case.id].value or _marshalled(got) == expected_bytes):
        return _right_answer(base)
    answer, digest = _answer_text(got)
    same = answer is not None and answer == _canonical_expected(plan, case.id)
    if same and case.check.name == "equal":
        return _right_answer(base)
    if answer is not None and case.check.name in _VALUE_CHECKS and len(answer) > ANSWER_TEXT_FLOOR:
        longest = _longest_answer(plan, case)
        if longest is not None and len(answer) > longest:
            return _too_large(got, f"{len(answer):,} characters", base)
    key = _answer_key(case, outcome, digest)
    if key is None:
        return _judged_answer(plan, exercise, case, outcome, base)
    fresh: list[CaseResult] = []

    def verdict() -> tuple[bool, dict[str, Any]]:
        fresh.append(_judged_answer(plan, exercise, case, outcome, base))
        return fresh[0].got is not None, {name: getattr(fresh[0], name) for name in _VERDICT}
    kept_got, fields = plan.memo.get(key, verdict)
    if fresh:
        return replace(fresh[0], got=base["expected"]) if same and kept_got else fresh[0]
    return CaseResult(got=(base["expected"] if same else got) if kept_got else None, **fields,
                      **(_passing(base) if fields["status"] == "pass" else base))


# An answer to a value check (equal, unordered) that cannot be right, nor a known mistake's, nor an accepted
# variant's, by its size alone: its canonical text (made anyway, for the memo key) is longer than ANSWER_TEXT_FACTOR
# times the longest of theirs, and than ANSWER_TEXT_FLOOR. Every spelling `equal` accepts for a value is at most 16
# times its text (a numpy uint64 where an int is asked: `{"dtype":"uint64","npscalar":1},` for `1,`), so the factor
# leaves twice that. Without it the parent decoded and compared whatever the codec's bounds let through, once for
# the case and again for each known mistake and variant: a sliding-3x3 nextStates answered with 19,000 10-deep
# lists (200,000 items) cost 2.4 s of the parent's CPU a case, a minute a notebook. Only its message changes: such
# an answer fails whatever it holds.
ANSWER_TEXT_FACTOR = 32
ANSWER_TEXT_FLOOR = 4096
TOO_LARGE = "an answer far larger than any right one"


def _too_large(got: Any, size: str, base: Mapping[str, Any]) -> CaseResult:
    """The fail of an answer too large to be right (TOO_LARGE), `size` its size in words."""
    return CaseResult(status="fail", got=got, message=f"the answer is {size} of data, far more than any right answer "
                                                      "to this case: it was not compared", reason=vocabulary.WRONG,
                      cause=TOO_LARGE, **base)


# The same bound before the answer is even read (CaseRequest.answer_bytes): a result frame weighing more than
# frames.BYTES_PER_CHAR bytes for each character its answer may have, its probes' PROBE_TEXT_FLOOR each, and its
# frame's own keys, holds an answer whose canonical text is longer than _longest_answer (the runtime writes the
# same compact JSON), so it fails as above, unparsed. Without it the parent parsed the answer first: a sliding-3x3
# nextStates answered with 2 MB of nested lists cost 0.42 s of its CPU a case before TOO_LARGE saw its size.
FRAME_KEYS = 256            # `{"op":"result","case":...,"status":"ok","value":...,"probes":{...},"output":...}`


def answer_bytes(plan: Plan, case: Case) -> int | None:
    """The most a result frame to `case` may weigh and still hold an answer to compare (None: no bound)."""
    if case.check.name not in _VALUE_CHECKS:
        return None
    longest = _longest_answer(plan, case)
    if longest is None:
        return None
    probes = sum(PROBE_TEXT_FLOOR + len(name) + 16 for name, _ in case.probe)
    return frames.BYTES_PER_CHAR * (longest + probes + len(case.id)) + FRAME_KEYS


def _longest_answer(plan: Plan, case: Case) -> int | None:
    """The longest canonical text an answer to a value-checked case may have and still be compared (None: no bound,
    a known answer that is not plain wire)."""
    def make() -> int | None:
        expected = plan.expected[case.id]
        texts = [_canonical(value) for value in (expected.value, *(answer for _, answer in expected.mistakes),
                                                 *(answer for _, answer in expected.variants))]
        if any(text is None for text in texts):
            return None
        return max(ANSWER_TEXT_FLOOR, ANSWER_TEXT_FACTOR * max(len(text) for text in texts if text is not None))
    return plan.memo.get(("longest answer", case.id), make)


def answer_facts(case: Case) -> dict[str, Any]:
    """What the rubric says the answer is, for the reports to draw it so: a path of states under the `path`
    check (CaseResult.path_answer). Empty for every other check: most cases of a class carry nothing more."""
    return _PATH_ANSWER if case.check.name in PATH_CHECKS else {}


_PATH_ANSWER = {"path_answer": True}


def _right_template(plan: Plan, case: Case) -> tuple[dict[str, Any], int | None] | None:
    """A right answer's CaseResult fields for an `equal` case (None: its expected value is not valid plain JSON),
    but those of the answer itself (its times, output and traceback): the same for every student, so made once
    per plan, by judging the expected value itself as an answer (the same fields in the same order). With them,
    the JSON size of all but the answer's own fields (case_json_at_most) where they are within CASE_BOUNDS, else
    None (each answer is then bounded and measured as any case)."""
    def make() -> tuple[dict[str, Any], int | None] | None:
        if _marshalled_expected(plan, case.id) is None:
            return None
        base = dict(id=case.id, visibility=case.visibility, call=case.shown_call,
                    expected=stored_expected(plan, case.id), seconds=0.0, output="", weight=float(case.weight),
                    cpu_seconds=None, traceback="", inputs=case_inputs(plan, case))
        right = _right_answer(base)
        fields = dict(right.__dict__)
        within = bound_case(right) is right
        return fields, case_json_at_most({name: value for name, value in fields.items()
                                          if name not in _ANSWERS_OWN}) if within else None
    return plan.memo.get(("right-answer", case.id), make)


_ANSWERS_OWN = ("seconds", "output", "cpu_seconds", "traceback", "inputs")   # a right answer's fields of its own


def _from_template(template: tuple[dict[str, Any], int | None], outcome: Outcome) -> CaseResult:
    """A right answer from its template (_right_template) and the outcome's own fields, as judge's full path
    makes it: no __init__ (see case_from_dict), the template's fields in their order. Its size is known
    (results.sized_case) when its own fields are within CASE_BOUNDS too: most cases of a class are bounded and
    measured here with five fields, not with all of them twice."""
    fields, fixed = template
    case = object.__new__(CaseResult)
    state = case.__dict__
    state.update(fields)
    state["seconds"] = seconds = round(outcome.seconds, 4)
    state["output"] = output = outcome.output
    state["cpu_seconds"] = cpu = round(outcome.cpu_seconds, 4) if outcome.cpu_seconds is not None else None
    state["traceback"] = traceback = outcome.error.get("traceback", "")
    state["inputs"] = {}
    if fixed is None or type(output) is not str or len(output) > CASE_BOUNDS.output \
            or type(traceback) is not str or len(traceback) > CASE_BOUNDS.traceback \
            or not _finite_time(seconds) or cpu is not None and not _finite_time(cpu):
        return case     # bound_case cuts it, or makes its times finite floats
    return sized_case(case, fixed + _own_size(output, traceback, cpu))


def _finite_time(value: Any) -> bool:
    return type(value) is float and math.isfinite(value)


# case_json_at_most of a right answer's own fields, by what it depends on: the lengths of its texts and whether
# its CPU time was read (a finite float's size is fixed). Most answers print nothing: one entry serves a class.
_OWN_SIZES: dict[tuple[int, int, bool], int] = {}


def _own_size(output: str, traceback: str, cpu: float | None) -> int:
    key = (len(output), len(traceback), cpu is None)
    size = _OWN_SIZES.get(key)
    if size is None:
        if len(_OWN_SIZES) >= 4096:
            _OWN_SIZES.clear()
        size = _OWN_SIZES[key] = case_json_at_most({"seconds": 0.0, "output": output, "cpu_seconds": cpu,
                                                    "traceback": traceback, "inputs": {}})
    return size


def _right_answer(base: Mapping[str, Any]) -> CaseResult:
    """A passing case whose answer is the expected value itself (see judge)."""
    return case_from_dict({**_passing(base), "status": "pass", "message": "", "got": base["expected"],
                           "fraction": 1.0})


def _passing(base: Mapping[str, Any]) -> dict[str, Any]:
    """A passing case's fields: without the inputs feedback draws only for a case that did not pass (see
    _without_shown_inputs), so most cases of a class are not copied to drop them."""
    return {**base, "inputs": {}} if base["inputs"] else dict(base)


# What an answer's verdict is made of: the same for every submission that gives the same answer to the case.
_VERDICT = ("status", "message", "fraction", "reason", "cause", "mistake", "advice", "detail")


def _answer_key(case: Case, outcome: Outcome, digest: str | None) -> tuple[str, ...] | None:
    """The memo key of an answer (a digest of its canonical text and its probes'): a check is a function of the
    case and the answer, so a class's many identical answers are decoded and checked once per worker (a path
    check replays every move with the reference's helpers). A digest, not the text: the child chooses the answer,
    and a notebook answering every case with a different 5 MB string kept 500 MB of keys in the worker for the
    rest of the batch. None when the answer (`digest`: its canonical text's, _answer_text) is not plain wire: the
    full path says why."""
    probes = _canonical(dict(outcome.probes)) if outcome.probes else ""
    if digest is None or probes is None:
        return None
    return ("verdict", case.id, digest, _digest(probes))


# Answers met before, by identity: a result frame the worker heard before is the very message it parsed then
# (process._parsed, frames up to 16 kB), so a class's many equal answers to a checked case (a search's path) are
# made canonical and digested once. Each value is held, so its id names it alone; bounded by the characters of
# the texts, oldest out.
_ANSWER_CHARS = 16 * 1024        # a longer answer came from a frame parsed anew: its identity is never met again
_ANSWERS: SizedMemo[int, tuple[Any, str, str]] = SizedMemo(512 * 1024)


def _answer_text(got: Any) -> tuple[str | None, str | None]:
    """An answer's canonical text and its digest (None, None: not plain wire)."""
    known = _ANSWERS.get(id(got))
    if known is not None and known[0] is got:
        return known[1], known[2]
    answer = _canonical(got)
    if answer is None:
        return None, None
    digest = _digest(answer)
    # A scalar costs less to encode than to remember.
    if (type(got) is dict or type(got) is list) and len(answer) <= _ANSWER_CHARS:
        _ANSWERS.put(id(got), (got, answer, digest), len(answer))
    return answer, digest


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _judged_answer(plan: Plan, exercise: Exercise, case: Case, outcome: Outcome,
                   base: Mapping[str, Any]) -> CaseResult:
    """An answer decoded (validated), checked and matched against the known mistakes."""
    got = outcome.value
    try:
        codec.decode(got)  # validate the untrusted wire before any check looks at it
    except codec.CodecError as error:
        return CaseResult(status="error", message=f"the result could not be read: {error}",
                          reason=vocabulary.RAISED, cause="the answer could not be read", **base)
    result = _checked(plan, case, outcome, plan.expected[case.id].value, dict(base))
    return _with_mistake(plan, exercise, case, outcome, result, plan.expected[case.id].value, base)


def _with_mistake(plan: Plan, exercise: Exercise, case: Case, outcome: Outcome, result: CaseResult,
                  expected_value: Any, base: Mapping[str, Any]) -> CaseResult:
    """A failed verdict (under the reference's convention or an accepted variant's, whose expected value is
    `expected_value`) with the known mistake the answer is, and the rubric's word on it. Its own spelling first;
    then, where the case compares values, the same values in lists where the mistake has tuples or back (see
    conventions.spelled_alike), unless they are the expected value's: then the spelling is all that is wrong."""
    if result.status == "pass":
        return result
    answers = dict(plan.expected[case.id].mistakes)   # a mistake that raised on this input is absent
    known = [mistake for mistake in exercise.mistakes if mistake.reference in answers]
    found = next((mistake for mistake in known
                  if _is_answer(plan, case, outcome, answers[mistake.reference], base)), None)
    if found is None and known and case.check.name in _VALUE_CHECKS:
        got = spelled_alike(outcome.value)
        if codec.same(spelled_alike(expected_value), got, validated=True) is not None:
            found = next((mistake for mistake in known
                          if codec.same(spelled_alike(answers[mistake.reference]), got, validated=True) is None), None)
    if found is None:
        return result
    return advised(replace(result, mistake=found.reference), found.say)


# Checks that compare an answer with an expected value by their options alone: a known mistake's answer is
# matched by the same check (a list read as a set under sequence_as_set, a float under any_number_type).
_VALUE_CHECKS = frozenset({"equal", "unordered"})


def _is_answer(plan: Plan, case: Case, outcome: Outcome, answer: Any, base: Mapping[str, Any]) -> bool:
    """Is the notebook's answer `answer` (a known mistake's) in the convention the case accepts for its expected
    value? A list with the wrap-around bug's successors, each once, is that mistake's set where the rubric reads a
    list as a set, as the right successors in a list are the right set. Other checks judge more than a value
    (a path's moves): there the answer must be the mistake's exactly."""
    if case.check.name in _VALUE_CHECKS:
        return _checked(plan, case, outcome, answer, dict(base)).status == "pass"
    return codec.same(answer, outcome.value, validated=True) is None


def _reads_as(plan: Plan) -> ReadsAs:
    """_is_answer for a case known by its id and an answer already judged (CaseResult.got): the rule by which an
    accepted variant's `when` asks whether an earlier exercise's answers were a function's (conventions)."""
    cases = plan.memo.get(("cases by id",), lambda: {case.id: case for listed in plan.cases.values()
                                                      for case in listed})
    held = plan.memo.get(("plan answers",), lambda: _plan_answers(plan))

    def reads_as(case_id: str, answer: Any, got: Any) -> bool:
        case = cases.get(case_id)
        if case is None:
            return codec.same(answer, got, validated=True) is None
        base = {"id": case.id, "visibility": case.visibility}
        known = held.get(case_id, {})
        first, second = known.get(id(answer)), known.get(id(got))
        if first is not None and first[1] is answer and second is not None and second[1] is got:
            # Both the plan's own (a known answer asked of the expected value, or of a right answer, which is the
            # stored expected value itself): the same for every notebook, so asked once per plan.
            return plan.memo.get(("reads as", case_id, first[0], second[0]), lambda: _is_answer(
                plan, case, Outcome(case.id, "ok", value=got), answer, base))
        return _is_answer(plan, case, Outcome(case.id, "ok", value=got), answer, base)
    return reads_as


def _plan_answers(plan: Plan) -> dict[str, dict[int, tuple[tuple[str, str], Any]]]:
    """Case id -> the answers the plan holds for it, by identity: its expected value, each known mistake's and
    variant's answer, and each value as results store it (stored_expected: a right answer's `got`), each under a
    name that says which it is. A value found here by its id is the plan's very object (it is held here, so no
    other object has its id), never one the child sent."""
    found: dict[str, dict[int, tuple[tuple[str, str], Any]]] = {}
    for case_id, expected in plan.expected.items():
        values: list[tuple[tuple[str, str], Any]] = [(("value", ""), expected.value)]
        values += [(("mistake", name), answer) for name, answer in expected.mistakes]
        values += [(("variant", name), answer) for name, answer in expected.variants]
        values += [(("stored", name), stored_expected(plan, case_id, name))
                   for name in ("", *(name for name, _ in expected.variants))]
        found[case_id] = {id(value): (name, value) for name, value in values}
    return found


# A check other than a value comparison runs the course's code (its check function, the path check's next_states)
# on the answer the child chose, in the parent: at most this much of the thread's CPU time a verdict. Right answers
# take microseconds; an n-puzzle solve returning 'UD' * 3,990,000 (a string within the codec's bounds, every
# action legal) had check_solution apply 8 million moves, 1.2 s a case and 13.8 s of the parent's CPU for the
# notebook (0.06 s for the right one). CPU, not wall time: a busy machine never makes it the student's fail.
CHECK_CPU_SECONDS = 0.25
CHECK_TOO_SLOW = "an answer the check could not judge in time"


class _CheckTooSlow(Exception):
    pass


def _checked(plan: Plan, case: Case, outcome: Outcome, expected_value: Any, base: dict[str, Any]) -> CaseResult:
    """The case's check run on a decoded answer against one expected value (the reference's or a variant's)."""
    got = outcome.value
    data = plan.memo.get(("data", case.id), lambda: plan.data(case))
    arguments = plan.memo.get(("arguments", case.id), lambda: call_arguments(case.call, data) or ((), {}))
    context = CheckContext(expected=expected_value, got=got, args=arguments[0], kwargs=arguments[1],
                           probes=_probes(outcome), variables=dict(case.variables), data=data,
                           options=dict(case.check.options), reference=plan.reference, validated=True)
    function = resolve_check(case.check.name, plan.reference)
    try:
        if case.check.name in _VALUE_CHECKS:    # the codec's own walk, bounded by the answer's size
            verdict = function(context)
        else:
            verdict = bounded(lambda: function(context), CHECK_CPU_SECONDS, _CheckTooSlow, cpu=True)
    except _CheckTooSlow:
        return CaseResult(status="fail", got=got, message=f"the check {case.check.name} could not judge this answer "
                                                          f"within {CHECK_CPU_SECONDS:g} s of CPU time: it is too "
                                                          "large to be the answer", reason=vocabulary.WRONG,
                          cause=CHECK_TOO_SLOW, **base)
    except (CheckError, ExpressionError) as error:
        return CaseResult(status="problem", got=got, message=f"grader problem (rubric check): {error}",
                          reason=vocabulary.GRADER_PROBLEM, cause=f"the check {case.check.name} is misconfigured",
                          **base)
    except Exception as error:  # noqa: BLE001 - a check or reference helper that crashes is the course's bug
        # Not the student's fail: a check must reject odd answers with a verdict, never by raising.
        return CaseResult(status="problem", got=got, message=f"grader problem: the check {case.check.name} "
                                                             f"crashed: {type(error).__name__}: {error}",
                          reason=vocabulary.GRADER_PROBLEM,
                          cause=f"the check {case.check.name} crashed: {type(error).__name__}", **base)
    if verdict.passed:
        return CaseResult(status="pass", message=verdict.message, got=got, fraction=verdict.fraction, **base)
    return CaseResult(status="fail", message=verdict.message, got=got, fraction=verdict.fraction,
                      reason=vocabulary.WRONG, cause=verdict.cause or f"rejected by the check {case.check.name}",
                      **base)


def judge_variants(plan: Plan, exercise: Exercise, case: Case, outcome: Outcome,
                   first: CaseResult) -> dict[str, CaseResult]:
    """The verdict of an answer under each accepted variant whose answer to this case is known."""
    if not exercise.variants or outcome.status != "ok" or first.status in ("error", "problem") \
            or first.cause == TOO_LARGE:     # longer than any variant's answer too (_longest_answer)
        return {}
    answers = dict(plan.expected[case.id].variants)
    base = dict(id=case.id, visibility=case.visibility, call=case.shown_call, seconds=first.seconds,
                output=first.output, weight=case.weight, traceback=first.traceback, inputs=first.inputs,
                **answer_facts(case))
    judged = {}
    for variant in exercise.variants:
        if variant.reference in answers:
            held = {**base, "expected": stored_expected(plan, case.id, variant.reference)}
            verdict = _checked(plan, case, outcome, answers[variant.reference], dict(held))
            judged[variant.reference] = _with_mistake(plan, exercise, case, outcome, verdict,
                                                      answers[variant.reference], held)
    return judged


def stored_expected(plan: Plan, case_id: str, variant: str = "") -> Any:
    """A case's expected value (the reference's, or an accepted variant's) as results store it: bounded once per
    plan, not measured again for each student's result (results.fitting)."""
    def bounded() -> Any:
        expected = plan.expected[case_id]
        return fitting(dict(expected.variants)[variant] if variant else expected.value, plan.memo)
    return plan.memo.get(("stored", case_id, variant), bounded)


def template_names(plan: Plan) -> frozenset[str]:
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
    return plan.memo.get(("template-names",), names)


def _notes(exercise: Exercise, name: str, extracted: Extracted, read: Sequence[str]) -> tuple[str, ...]:
    """The exercise's remarks: an alias graded, and each notebook global the function reads (`read`)."""
    notes = []
    if name != exercise.function:
        notes.append(f"graded {name} (accepted as another name for {exercise.function})")
    for global_name in read:
        where = extracted.definitions[global_name]
        notes.append(f"{name} reads the notebook's global variable {global_name} ({where.label}, line "
                     f"{where.line}); the grader keeps top-level data, so it used the last value the "
                     f"notebook assigns to {global_name}. Pass it as a parameter or compute it locally instead.")
    return tuple(notes)


def globals_read(exercise: Exercise, name: str, extracted: Extracted, plan: Plan) -> tuple[str, ...]:
    """The notebook globals the graded function reads that are worth a remark (seed 000's manhattan reads S)."""
    # Globals the course itself defines (fixtures) or that cases set on purpose are not worth a remark.
    expected_globals = (set(plan.rubric.fixtures) | {n for c in plan.cases[exercise.id] for n, _ in c.set}
                        | template_names(plan))
    definition = extracted.definitions.get(name)
    if definition is None or not isinstance(definition.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ()
    # Course fixtures, globals the rubric sets, and CONSTANTS are what they should be.
    return tuple(global_name for global_name in global_data_reads(definition.node, extracted.definitions)
                 if global_name not in expected_globals and not (len(global_name) > 1 and global_name.isupper()))


def _no_oracle(name: str, args: list, kwargs: dict) -> Any:
    raise LookupError(f"{name} is not isolated in this run")


def _method_call(plan: Plan, method: IsolatedMethod) -> MethodCall:
    if method.split is not None:
        return method.split
    owner, name = method.name.split(".")
    return plan.memo.get(("method", method.name),
                         lambda: isolated_call(method.name, method.call, getattr(getattr(plan.reference, owner), name)))


def graded_by(rubric: Any, helper: str) -> Exercise | None:
    """The exercise that grades a helper (a function by its name or an alias, a method `Class.method` by the
    exercise whose cases call it), if any."""
    for exercise in rubric.exercises:
        if exercise.grades(helper):
            return exercise
    return None


def helpers_to_isolate(plan: Plan, exercise: Exercise, judged: Mapping[str, ExerciseResult]) -> tuple[str, ...]:
    """The helpers the reference may answer for: those whose own exercise was already judged wrong.

    Isolation compensates, it does not retry. The exercise always runs with the notebook's own helpers; only
    when a helper's own (earlier) exercise lost points for this notebook is the WHOLE exercise run once more,
    every case, with the same limits, the reference answering for those helpers, and the better of the two
    exercise scores counts. What the second run does is decided before any case runs, so the child never
    learns which cases failed; a helper judged right with its own helpers (or never judged) is never swapped.
    A notebook whose own helpers are consistent with each other (moves named the other way round) keeps its
    own run.
    """
    swapped = []
    for helper in exercise.isolate:
        own = graded_by(plan.rubric, helper)
        result = judged.get(own.id) if own is not None else None
        # Full marks earned only with the reference's helpers of ITS own (next_states with a broken find_tile)
        # is not right as the notebook runs it.
        if result is not None and (result.score < result.max_score or result.isolated):
            swapped.append(helper)
    return tuple(swapped)


def _isolation_note(helpers: Sequence[str], plan: Plan) -> str:
    owners = []
    for helper in helpers:
        own = graded_by(plan.rubric, helper)
        owners.append(f"{helper} (see {own.id})" if own is not None and own.id != helper else helper)
    return (f"judged with the reference's {', '.join(owners)}: yours lost points in "
            f"{'its' if len(helpers) == 1 else 'their'} own exercise, so it is not charged again here")


def _runnable(plan: Plan, exercise: Exercise, notebook: Notebook, extracted: Extracted,
              loaded: Sequence[str]) -> ExerciseResult | tuple[str, str, dict[str, Any]]:
    """The exercise's result when it cannot run (nothing by its name, a stub, not loaded), else the notebook's
    name for what it grades, where that is (a label) and its place as facts (cell, line)."""
    cases = plan.cases[exercise.id]
    name = _resolve(exercise, extracted, loaded)
    if name is None:
        names = " or ".join(exercise.names)
        missing = _missing(exercise, cases, f"no {_kind(plan, exercise)} named {names} in the notebook"
                           + (_syntax_error_note(exercise.function, notebook, extracted)
                              or _renamed_note(plan, exercise, extracted)), NOT_DEFINED)
        broken = _broken_cell(exercise.function, notebook, extracted)
        # where the function is, although it could not run: reports put its feedback beside that cell
        return replace(missing, location=f"{broken.label}, line {broken.line}", cell=broken.cell,
                       line=broken.line) if broken is not None else missing
    definition = extracted.definitions.get(name)
    location = f"{definition.label}, line {definition.line}" if definition else ""
    # The same place as facts, for the writers that put feedback beside the cell.
    place: dict[str, Any] = dict(cell=definition.cell, line=definition.line) if definition else {}
    if definition is not None and definition.kind == "import":
        # No code of the notebook's: from a module the grader lacks it is an inert stand-in, whose answers failed
        # as "got <stand-in for search.astar_search()>"; from one it has, someone else's code.
        return replace(_missing(exercise, cases, f"{name} is imported ({location}), not written in the notebook",
                                NOT_DEFINED), location=location, function=name, **place)
    method_name = exercise.function.split(".")[1] if "." in exercise.function else \
        plan.memo.get(("called-method", exercise.id), lambda: _called_method(exercise, cases))
    if method_name and definition is not None:
        method, inherits = _method(definition, method_name)
        if method is None and not inherits:
            return replace(_missing(exercise, cases, f"class {name} ({location}) has no method {method_name}",
                                    NO_METHOD),
                           location=location, function=f"{name}.{method_name}", **place)
        if method is not None:
            location = f"{definition.label}, line {method.lineno}"
            place["line"] = method.lineno
            if is_stub(method):
                return replace(_missing(exercise, cases, f"{name}.{method_name} is still the template's stub "
                                                         f"({location})", STUB),
                               location=location, function=f"{name}.{method_name}", **place)
    if definition is not None and definition.is_stub:
        return replace(_missing(exercise, cases, f"{name} is still the template's stub ({location})", STUB),
                       location=location, function=name, **place)
    if name not in loaded:
        return replace(_missing(exercise, cases, f"{name} is defined ({location}) but could not be loaded; see the "
                                                 f"warnings", NOT_LOADED), location=location, function=name,
                       **place)
    return name, location, place


def grade_exercise(plan: Plan, exercise: Exercise, sandbox: CaseRunner | None, notebook: Notebook,
                   extracted: Extracted, loaded: Sequence[str], deadline: float, options: Options,
                   judged: Mapping[str, ExerciseResult] | None = None,
                   runnable: ExerciseResult | tuple[str, str, dict[str, Any]] | None = None) -> ExerciseResult:
    """One exercise's verdicts; `judged` holds the exercises graded before it (isolation and variants read it).
    `runnable`: what _runnable says of it, when the caller asked already."""
    judged = judged or {}
    cases = plan.cases[exercise.id]
    ready = runnable if runnable is not None else _runnable(plan, exercise, notebook, extracted, loaded)
    if isinstance(ready, ExerciseResult):
        return ready
    name, location, place = ready
    assert sandbox is not None
    requests = _requests(plan, exercise, cases, name, options)
    allowed = allowed_variants(exercise, judged, plan.expected, _reads_as(plan)) if exercise.variants else ()
    graded = exercise.function if "." in exercise.function else name
    lacking = _lacking(plan, exercise, cases, name, loaded)
    results, chosen = _run(plan, exercise, cases, requests, sandbox, deadline, (), allowed, graded, extracted, lacking)
    isolate = helpers_to_isolate(plan, exercise, judged)
    planned = {c.id: c.weight for c in cases}
    if isolate and exercise_score(results, exercise.points, exercise.scoring, planned=planned) < exercise.points:
        # The whole exercise again, every case, the same limits: the child learns nothing of which cases failed.
        second, second_chosen = _run(plan, exercise, cases, requests, sandbox, deadline, isolate, allowed, graded,
                                     extracted, lacking)
        second = after_hidden(plan, second)
        if exercise_score(second, exercise.points, exercise.scoring, planned=planned) > \
                exercise_score(results, exercise.points, exercise.scoring, planned=planned):
            results, chosen = second, second_chosen
        else:
            isolate = ()
            results = busy_in_rerun(results, second)
    else:
        isolate = ()
    results = [_judged_hints(exercise, result, judged) for result in results]
    results = [_given_wrong(plan, name, result, judged, extracted) for result in results]
    read = globals_read(exercise, name, extracted, plan)   # a walk of the function's tree: once per exercise
    notes = _notes(exercise, name, extracted, read) + variant_note(exercise, chosen)
    if _takes_spellings(cases):
        expected = {case.id: plan.expected[case.id].value for case in cases if case.id in plan.expected}
        notes += spelling_notes(results, expected, name)
    if isolate:
        notes += (_isolation_note(isolate, plan) + (
            "; that run came after the hidden cases, so each of its cases is shown by its verdict only"
            if _has_hidden(plan) else ""),)
    notes += same_failures(results)
    score = exercise_score(results, exercise.points, exercise.scoring, planned=planned)
    if score < exercise.points:
        notes += ran_as_written(plan, exercise, name, extracted, judged)
    if any(r.status != "pass" for r in results):
        notes += exercise.hints
    return ExerciseResult(exercise.id, exercise.title, score, float(exercise.points), tuple(results), notes=notes,
                          function=name, location=location, variant=chosen, isolated=isolate,
                          globals_read=read, **place)


def ran_as_written(plan: Plan, exercise: Exercise, name: str, extracted: Extracted,
                   judged: Mapping[str, ExerciseResult]) -> tuple[str, ...]:
    """When the exercise lost points: the notebook's functions its graded one reaches that lost points in their own
    exercises and that the rubric does not isolate here (an end-to-end exercise runs the notebook's chain on
    purpose; astar_search's best_first_search takes a problem object and a function, which the reference cannot be
    given), so the student reads where to look first. A helper the exercise isolates is left out: its rerun with
    the reference's helpers did not do better, so the loss is the exercise's own."""
    wrong = _wrong_helpers(plan, name, extracted, judged, besides=exercise.isolate)
    if not wrong:
        return ()
    one = len(wrong) == 1
    return (f"{name} runs your {', '.join(wrong)} as you wrote {'it' if one else 'them'} (this exercise does not "
            f"replace {'it' if one else 'them'} with the reference's), and {'it' if one else 'they'} lost points in "
            f"{'its' if one else 'their'} own exercise{'' if one else 's'}: some of the points lost here may come "
            f"from there, so fix {'it' if one else 'them'} first (see {'its' if one else 'their'} feedback)",)


def _judged_hints(exercise: Exercise, result: CaseResult, judged: Mapping[str, ExerciseResult]) -> CaseResult:
    """An error with the rubric's error hints that depend on earlier exercises' verdicts (ErrorHint.when) and hold
    for this notebook, added as _raised adds the others: a cause the facts point to, not the likeliest one."""
    if result.status != "error" or result.reason != vocabulary.RAISED or not result.error:
        return result
    said = hints_said(exercise, result.error, judged)
    if not said:
        return result
    return advised(result, ". ".join(said))


def _given_wrong(plan: Plan, name: str, result: CaseResult, judged: Mapping[str, ExerciseResult],
                 extracted: Extracted) -> CaseResult:
    """An error raised in a helper its own exercise judged right (move_dir) came from what it was given: the message
    says so and names the functions the graded one reaches whose own exercises lost points (extract_move), the
    likelier cause, instead of leaving the student to fix the helper where it raised."""
    if result.status != "error" or not result.culprit:
        return result
    owner = graded_by(plan.rubric, result.culprit)
    if owner is None or not _judged_as(judged.get(owner.id), "right"):
        return result
    wrong = _wrong_helpers(plan, name, extracted, judged, besides=(result.culprit,))
    said = (f"{result.culprit} itself was judged right in its own exercise, so what it was given is wrong"
            + (f": {', '.join(wrong)} lost points in {'its' if len(wrong) == 1 else 'their'} own exercise"
               f"{'' if len(wrong) == 1 else 's'}, see {'its' if len(wrong) == 1 else 'their'} feedback"
               if wrong else ""))
    return advised(result, said)


def _wrong_helpers(plan: Plan, name: str, extracted: Extracted, judged: Mapping[str, ExerciseResult],
                   besides: Sequence[str]) -> list[str]:
    """The notebook's functions `name` reaches (but `besides`) whose own exercises were judged wrong: `judged`
    holds the exercises judged before this one, so never the exercise that grades `name` itself."""
    return [helper for helper in reached(name, extracted) if helper not in besides
            and (owner := graded_by(plan.rubric, helper)) is not None and _judged_as(judged.get(owner.id), "wrong")]


def reached(name: str, extracted: Extracted) -> list[str]:
    """The notebook's functions `name` calls or reads, and theirs in turn (names as the notebook defines them), in
    the order first met."""
    seen: dict[str, None] = {}
    todo = [name]
    while todo:
        definition = extracted.definitions.get(todo.pop(0))
        if definition is None or not isinstance(definition.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(definition.node):
            if not isinstance(node, ast.Name) or node.id == name or node.id in seen:
                continue
            called = extracted.definitions.get(node.id)
            if called is not None and isinstance(called.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seen[node.id] = None
                todo.append(node.id)
    return list(seen)


def hints_said(exercise: Exercise, error: str, judged: Mapping[str, ExerciseResult] | None = None) -> list[str]:
    """The `say` of the exercise's error hints that match an exception as raised (`error`: CaseResult.error,
    "Type: message", the text the student reads): one text and one rule for every hint, so a hint matches the same
    whether or not it depends on earlier verdicts. Without `judged` (while a case is judged) the hints without `when`;
    with it (once the exercise is), those whose `when` holds."""
    if judged is None:
        return [hint.say for hint in exercise.error_hints if not hint.when and hint.match in error]
    return [hint.say for hint in exercise.error_hints if hint.when and hint.match in error
            and all(_judged_as(judged.get(earlier), verdict) for earlier, verdict in hint.when)]


def _judged_as(result: ExerciseResult | None, verdict: str) -> bool:
    """Was the exercise judged `verdict` ("right": all its points, "wrong": fewer)? Not judged: neither."""
    if result is None:
        return False
    right = result.score >= result.max_score
    return right if verdict == "right" else not right


def after_hidden(plan: Plan, rerun: list[CaseResult]) -> list[CaseResult]:
    """A run with the reference's helpers as the student may see it: its public cases like hidden ones, the
    verdict only, where the rubric has hidden cases. That run comes after every own run's hidden part
    (OwnRunsFirst) in a child that never heard a hidden input (Sandbox._retire_for), but the host's page cache
    outlives the child: a hidden case can evict or read pages of the interpreter's files and the next child read
    them back by the time a read takes, exactly (README "Hidden cases' inputs never reach a public case"). What
    such a public case prints, returns or raises could thus spell a hidden input; its verdict, like a hidden
    case's, is the one bit the student sees. Never changes a verdict or a score."""
    if not _has_hidden(plan):
        return rerun
    return [replace(case, visibility="hidden") if case.visibility == "public" else case for case in rerun]


def _has_hidden(plan: Plan) -> bool:
    return any(case.visibility != "public" for cases in plan.cases.values() for case in cases)


def busy_in_rerun(own: list[CaseResult], rerun: Sequence[CaseResult]) -> list[CaseResult]:
    """The own run's verdicts, but a case that earned nothing there and that the run with the reference's helpers
    could not judge because the machine was too busy is that busy case: its verdict is not final (the rerun might
    have won), so the result counts it as the machine's and the next run grades the submission again. Kept as the
    own run's failure, it cost the student the rerun's points for good. So is one the rerun judged and earned more
    on: which run counts is not known until the rerun finishes (eight-puzzle's inversions-with-blank at load 16:
    the rerun passed astar_search's seed problems 1 and 3, the machine kept 7 of its cases from being judged, and
    the own run's errors on those two, the wrong inversions' parity assert, were kept and shown as the student's).
    Never lowers the score."""
    busy = {case.id: case for case in rerun if vocabulary.machine_busy(case.status, case.reason)}
    if not busy:
        return own
    better = {case.id for case in rerun if case.id not in busy and case.fraction > 0}
    return [busy.get(case.id, _not_final(case) if case.id in better else case)
            if case.status != "pass" and not case.fraction else case for case in own]


def _not_final(case: CaseResult) -> CaseResult:
    """The own run's failure of a case the busy rerun earned more on, as a busy case: its own call, inputs,
    visibility and weight (never another case's), none of the own run's verdict."""
    return replace(case, status="problem", reason=vocabulary.BUSY, cause=BUSY_CAUSE, fraction=0.0, got=None,
                   mistake="", variant="", culprit="", traceback="", advice="", detail="", error="", where="",
                   message="grader problem: not judged: the run with the course's helpers earned more on it, but the "
                           "machine was too busy to finish that run; it is graded again")


def culprit(where: str, extracted: Extracted) -> tuple[str, str] | None:
    """The notebook function or method (and its place) holding a traceback's innermost student line, if any.

    `where` is "<cell label>, line N", the child's innermost notebook frame; it is matched against the parent's
    own parse of the notebook, so the child can at most misplace a message, never a verdict.
    """
    match = re.fullmatch(r"(.+), line (\d+)", where or "")
    if match is None:
        return None
    label, line = match[1], int(match[2])
    for definition in extracted.definitions.values():
        node = definition.node
        if definition.label != label or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        name = definition.name
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and item.lineno <= line <= (item.end_lineno or item.lineno):
                    name = f"{definition.name}.{item.name}"
        return name, f"{label}, line {line}"
    return None


def _charge(result: CaseResult, outcome: Outcome, graded: str, extracted: Extracted) -> CaseResult:
    """An error raised inside another function of the notebook names it: that is where the fix belongs."""
    if result.status != "error" or not outcome.error:
        return result
    found = culprit(str(outcome.error.get("where", "")), extracted)
    if found is None:
        return result
    name, place = found
    if name == graded or name.split(".")[0] == graded.split(".")[0]:   # its own body, or its own class
        return result
    where = f"The error is in {name} ({place}), called while running {graded}"
    return replace(result, culprit=name, message=f"{result.message}. {where}",
                   detail=f"{result.detail}. {where}" if result.advice else "")


def _run(plan: Plan, exercise: Exercise, cases: Sequence[Case], requests: Sequence[CaseRequest], sandbox: CaseRunner,
         deadline: float, isolate: Sequence[str], allowed: Sequence[Any],
         graded: str = "", extracted: Extracted | None = None,
         lacking: Mapping[str, str] | None = None) -> tuple[list[CaseResult], str]:
    """Run every case of the exercise once (with `isolate` answered by the reference) and judge the answers."""
    reference = plan.reference
    lacking = lacking or {}

    methods = {method.name: _method_call(plan, method) for method in exercise.methods if method.name in isolate}
    # Compiled once per run, not per call: A* asks for a method thousands of times per case.
    compiled = {name: compile(call.code, "<isolated method>", "eval") for name, call in methods.items()}
    module = dict(vars(reference)) if compiled else {}

    def oracle(function: str, args: list, kwargs: dict) -> Any:
        if function not in isolate:
            raise LookupError(f"{function} is not isolated in this run")
        if function in compiled:   # the child sent the data the call reads from the student's objects
            scope = dict(module)
            # As the student's method had them: a board that is a numpy array is one here too (n-puzzle's
            # State(self.state).zeropos()), not the codec's NDArray.
            scope.update((f"__m{index}", codec.with_arrays(value)) for index, value in enumerate(args))
            return eval(compiled[function], scope)  # noqa: S307 - the rubric's call over the reference
        return getattr(reference, function)(*args, **kwargs)

    # What the child needs to stand in for an isolated method: its parameters and the data to send.
    specs = {name: {"params": list(call.params), "inputs": list(call.inputs)} for name, call in methods.items()}
    # The reference's answers are shared by every submission graded with this plan (in this process).
    replies = _replies(plan)
    # Kept under what answers each helper: two exercises may isolate one method with different calls.
    answered_by = {name: call.code for name, call in methods.items()}
    outcomes = sandbox.run_exercise(requests, tuple(isolate),
                                    PureOracle(oracle, replies, answered_by) if isolate else _no_oracle,
                                    deadline, max_timeouts=exercise.limits.max_timeouts, methods=specs or None)
    results = [judge(plan, exercise, case, outcome) for case, outcome in zip(cases, outcomes, strict=True)]
    # The limit a timeout ran into: the parent's own, from the request it sent.
    results = [replace(result, limit=request.timeout) if result.status == "timeout" and outcome.status == "timeout"
               else result for result, request, outcome in zip(results, requests, outcomes, strict=True)]
    if extracted is not None:
        results = [_charge(result, outcome, graded, extracted)
                   for result, outcome in zip(results, outcomes, strict=True)]
    for index, case in enumerate(cases):
        absent = lacking.get(case.id)
        if absent and results[index].status != "pass":
            results[index] = replace(results[index], status="missing", fraction=0.0, message=(
                f"this case needs {absent}, which the notebook does not define"), reason=vocabulary.NOT_GRADED,
                cause=f"the case needs {absent}, which the notebook does not define")
    if all(r.status == "pass" and r.fraction >= 1.0 and r.weight >= 0 for r in results):
        held, chosen = results, ""   # full marks by the reference's convention: no variant can earn more
    else:
        variants = [judge_variants(plan, exercise, case, outcome, result)
                    for case, outcome, result in zip(cases, outcomes, results, strict=True)]
        held, chosen = hold_to_one(results, variants, allowed)
    # Bounded as soon as judged: a huge answer costs its case, never the memory of the batch.
    return [bound_case(_without_shown_inputs(result)) for result in held], chosen


def _replies(plan: Plan) -> Replies:
    """The reference's kept answers to isolated-helper calls, shared by every submission graded with this plan in
    this process (and by the workers forked after share_replies)."""
    return plan.memo.get(("oracle-replies",), Replies)


def share_replies(plan: Plan) -> None:
    """Let the workers forked from this process after now share the plan's kept replies (SharedReplies): called
    by a coordinator that forks its workers with the plan it built."""
    replies = _replies(plan)
    if replies.shared is None:
        replies.shared = SharedReplies()


def prepare(plan: Plan, options: Options) -> None:
    """Work out now what the judge prepares once per plan (its memo: each exercise's requests under its first
    name, each case's call as shown, inputs, stored and canonical expected values, called names; the names the
    template reads), as the first submission graded would. Called by a coordinator before it forks its workers
    with the plan: they inherit it, rather than each doing it on its first submission (~45 ms of CPU a worker
    for the Taoistic rubric's 137 cases)."""
    template_names(plan)
    for exercise in plan.rubric.exercises:
        cases = plan.cases.get(exercise.id, ())
        _requests(plan, exercise, cases, exercise.names[0], options)
        for case in cases:
            case.shown_call  # noqa: B018 - a cached_property, computed here
            case_inputs(plan, case)
            _called_names(plan, case)
            _canonical_expected(plan, case.id)
            if case.check.name == "equal":
                _marshalled_expected(plan, case.id)
                _right_template(plan, case)
            for variant in ("", *(name for name, _ in plan.expected[case.id].variants)):
                stored_expected(plan, case.id, variant)


def _without_shown_inputs(result: CaseResult) -> CaseResult:
    """Feedback draws a case's inputs only when it did not pass: a passing case does not store them (most
    cases of a class pass, and each board would be stored once per student)."""
    return replace(result, inputs={}) if result.status == "pass" and result.inputs else result


ExerciseRunner = Callable[[Exercise, CaseRunner], CaseRunner]
"""How one exercise's cases run on a submission's runner: the runner itself when grading; the kit wraps it
with the kit's expected answers (a student's self-check has no reference)."""
Settle = Callable[[Sequence[ExerciseResult], Sequence[str]], Sequence[ExerciseResult]]
"""What a caller does with the judged exercises before they are totalled, given the names the notebook
loaded (the kit marks what it cannot verify without the course's code)."""


def grade_exercises(plan: Plan, notebook: Notebook, extracted: Extracted, runner: CaseRunner | None,
                    loaded: Sequence[str], deadline: float, options: Options,
                    cases: ExerciseRunner | None = None) -> tuple[ExerciseResult, ...]:
    """Every exercise of the rubric in order, each judged knowing the ones before it (isolation and variants
    read them). `runner` is None when nothing loaded. The one loop grade, check and the kit's checks share.

    The child runs every exercise's own run (the notebook's own helpers) before any run whose helpers the
    reference answers (OwnRunsFirst): the reference's answers exist in the sandbox only once no exercise is left
    to run with the notebook's own code, whatever channel the notebook opens between its processes (memory
    shared since its load) to carry them there. Within the own runs every exercise's public cases run before
    any hidden case's input is sent, for the same reason: the student sees what public cases print, answer and
    raise. The kit's runner answers from the public kit: as it comes."""
    runnable: dict[str, ExerciseResult | tuple[str, str, dict[str, Any]]] = {}
    if runner is not None and cases is None:
        runner = OwnRunsFirst(runner)
        for exercise in plan.rubric.exercises:
            runnable[exercise.id] = _runnable(plan, exercise, notebook, extracted, loaded)
        runner.run_ahead([(_requests(plan, exercise, plan.cases[exercise.id], ready[0], options),
                           exercise.limits.max_timeouts) for exercise in plan.rubric.exercises
                          if not isinstance(ready := runnable[exercise.id], ExerciseResult)], deadline)
    judged: dict[str, ExerciseResult] = {}
    for exercise in plan.rubric.exercises:
        own = runner if runner is None or cases is None else cases(exercise, runner)
        judged[exercise.id] = grade_exercise(plan, exercise, own, notebook, extracted, loaded, deadline, options,
                                             judged, runnable.get(exercise.id))
    return tuple(judged.values())


class OwnRunsFirst:
    """A case runner that runs every exercise's own run (no isolated helpers) first (run_ahead) and keeps the
    outcomes; then, judging in order, it gives each own run its kept outcomes and runs the isolated ones for
    real. An own run's requests depend on nothing judged, so the verdicts are those of one pass; only when the
    child runs them changes."""

    def __init__(self, runner: CaseRunner):
        self.runner = runner
        self.kept: dict[tuple[str, ...], list[Outcome]] = {}
        self.replaying = False

    def run_ahead(self, runs: Sequence[tuple[Sequence[CaseRequest], int]], deadline: float) -> None:
        """Every own run (its requests, its max_timeouts), in the rubric's order: every exercise's public cases,
        then every exercise's hidden ones, each part one request to the one loaded child. No hidden input reaches
        the child while a public case, whose output, answer and message the student sees, is still to run
        there; an exercise's hidden part has the timeouts its public part left (skipped when none are left)."""
        parts = [(index, [r for r in requests if r.hidden == hidden])
                 for hidden in (False, True) for index, (requests, _) in enumerate(runs)]
        parts = [(index, part) for index, part in parts if part]
        found: dict[tuple[int, str], Outcome] = {}
        timeouts = [0] * len(runs)
        for number, (index, part) in enumerate(parts, 1):
            outcomes = with_timeouts_left(part, runs[index][1], timeouts[index],
                                          functools.partial(self._own_part, part, deadline, number < len(parts)))
            timeouts[index] += timed_out(outcomes)
            found.update(((index, request.id), outcome) for request, outcome in zip(part, outcomes, strict=True))
        for index, (requests, _) in enumerate(runs):
            self.kept[tuple(request.id for request in requests)] = [found[index, request.id] for request in requests]
        self.replaying = True

    def _own_part(self, part: Sequence[CaseRequest], deadline: float, more: bool, left: int) -> list[Outcome]:
        """One part of an own run, with the `left` timeouts of its exercise (see with_timeouts_left)."""
        return self.runner.run_exercise(part, (), _no_oracle, deadline, max_timeouts=left, more=more)

    def run_exercise(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle,
                     deadline: float, max_timeouts: int = 2,
                     methods: Mapping[str, Any] | None = None, more: bool = False) -> list[Outcome]:
        key = tuple(case.id for case in cases)
        if not isolate and self.replaying and key in self.kept:
            return self.kept.pop(key)
        return self.runner.run_exercise(cases, isolate, oracle, deadline, max_timeouts, methods, more)


def _data(rubric: Rubric, data: Mapping[str, bytes], hide_paths: Sequence[str]) -> Mapping[str, bytes]:
    """The data files the child gets: none from a folder hidden from it (given.visible_data)."""
    return visible_data(data, rubric.support, hide_paths) if data and rubric.support is not None else data


@dataclass
class _Opened:
    """A notebook's sandbox made, not yet loaded, and what grading it goes on with (grade_notebook, preload)."""

    extracted: Extracted
    said: list[GraderWarning]
    limits: Limits                    # the rubric's limits with the command line's
    process_limits: ProcessLimits
    sandbox: Sandbox


def _open(notebook: Notebook, plan: Plan, support: Mapping[str, str], options: Options, since: Mark,
          hide_paths: Sequence[str], warnings: Sequence[GraderWarning], extracted: Extracted | None,
          data: Mapping[str, bytes] | None) -> _Opened:
    """grade_notebook's first step: the extraction with the course's given code, and the sandbox for it."""
    rubric = plan.rubric
    if extracted is None:
        extracted = extract(notebook, rubric.policy, drops=False)
    limits = rubric.limits.merged({"submission_seconds": options.submission_seconds, "memory_mb": options.memory_mb})
    extracted, given_said = with_given(rubric, extracted, plan.given_code())
    said: list[GraderWarning] = [*warnings, *notebook.warnings, *extracted.warnings, *given_said]
    process_limits = ProcessLimits(memory_mb=limits.memory_mb, cpu_seconds=int(limits.submission_seconds) + 5,
                                   load_seconds=limits.load_seconds, disk_mb=limits.disk_mb, files=limits.files)
    sandbox = Sandbox(child_statements(extracted), support, process_limits, limits.output_bytes, hide_paths,
                      data=_data(rubric, support_data(rubric) if data is None else data, hide_paths),
                      allow_root=options.allow_root_sandbox,
                      prefetch=options.prefetch, spare_next=not options.last,
                      preload=course_preload(rubric.template, support),
                      slack=limits.submission_seconds * cpuclock.SLACK_SHARE, since=since)
    return _Opened(extracted, said, limits, process_limits, sandbox)


def _load(sandbox: Sandbox, deadline: float, aside: Sequence[int] = ()) -> LoadReport | SandboxError:
    """The notebook loaded in its sandbox (Sandbox.load), or why it could not be."""
    try:
        return sandbox.load(deadline, aside=aside)
    except SandboxError as error:
        return error


@dataclass
class Preloaded:
    """A submission's sandbox made and its notebook loaded ahead (preload), on the CPU a lone worker has to spare
    while it grades the submission before: grade_notebook goes on from that load.

    Its time counts as the load's would have counted when the worker came to it: from the submission's start (its
    reading, done ahead too) to the load's end, its wall time under the same limits (the load's own, moved by what
    the sandbox waited for a CPU; the submission's deadline), and what the loading thread waited and computed in
    it; the wait from the load's end until the worker is free is nobody's (Budget.handed_over). What the sandbox saw
    the notebook try there (Sandbox.seen) is the submission's as at any load."""

    opened: _Opened
    since: Mark                       # the submission's start, as the loading thread counted it
    loaded: LoadReport | SandboxError
    moved: bool                       # its child is on the worker's CPUs (Sandbox.to_worker): else loaded again
    ended: float                      # monotonic: when the load ended
    waited: float                     # the loading thread's run-queue time since the submission's start
    computed: float                   # and its CPU time

    def handed_over(self) -> Mark:
        """The submission's start for the thread that grades it from now (called on that thread)."""
        since = Mark.now(self.ended - self.since.at, self.waited, self.computed)
        self.opened.sandbox.budget.handed_over(since)
        return since

    def close(self) -> None:
        """Not graded after all (the worker is stopping): its sandbox goes."""
        self.opened.sandbox.close()


def preload(read: Read, plan: Plan, support: Mapping[str, str], options: Options, aside: Sequence[int]) -> Preloaded:
    """A read submission's sandbox made and its notebook loaded on the `aside` CPUs (process.aside_cpus), then moved
    to the worker's for its cases (Sandbox.to_worker), while the worker grades the submission before it: grade_read
    then goes on from here. The load is the one grade_notebook would run, with the same budget (see Preloaded);
    a sandbox that cannot be moved (its load left a thread running, or not all its processes could be) is not
    used: the notebook is loaded again, on the worker's CPUs, when its turn comes."""
    assert read.notebook is not None and read.extracted is not None
    since = Mark.now(read.seconds, read.waited, read.computed)
    opened = _open(read.notebook, plan, support, options, since, read.hide_paths, (), read.extracted, None)
    try:
        loaded = _load(opened.sandbox, since.at + opened.limits.submission_seconds, aside)
        moved = not isinstance(loaded, SandboxError) and opened.sandbox.to_worker()
    except BaseException:
        opened.sandbox.close()
        raise
    ended = time.monotonic()
    return Preloaded(opened, since, loaded, moved, ended, max(0.0, cpuclock.own_waiting() - since.waited),
                     max(0.0, time.thread_time() - since.computed))


def grade_notebook(notebook: Notebook, plan: Plan, *, path: Path, sha256: str, support: Mapping[str, str],
                   options: Options = Options(), submission: str | None = None,
                   hide_paths: Sequence[str] = (), warnings: Sequence[GraderWarning] = (),
                   cases: ExerciseRunner | None = None, settle: Settle | None = None,
                   extracted: Extracted | None = None, spent: float = 0.0, waited: float = 0.0,
                   computed: float = 0.0, data: Mapping[str, bytes] | None = None,
                   preloaded: Preloaded | None = None) -> SubmissionResult:
    """One notebook, extracted, loaded in its own sandbox and judged exercise by exercise: `grader grade`,
    `grader check` and `grader check --kit` all come through here. `warnings` go first (the kit's own);
    `cases` and `settle` are the kit's (see ExerciseRunner, Settle). `extracted`: the notebook's extraction
    under the rubric's policy, made ahead (read_submission), and the `spent` seconds it took, which count in the
    submission's budget and time as they would have here; of them, its thread `waited` for a CPU (credited on a
    busy machine, as the grading's own waiting is) and `computed` (budget.Mark). `data`: the course's data files
    the sandbox puts in the notebook's working folder (the kit's; None: the support folder's, given.support_data).
    `preloaded`: its sandbox made and loaded ahead (preload), from the same read."""
    if preloaded is not None:
        since = preloaded.handed_over()
        opened = preloaded.opened
    else:
        since = Mark.now(spent, waited, computed)     # the budget counts from the deadline's start (budget.Mark)
        opened = _open(notebook, plan, support, options, since, hide_paths, warnings, extracted, data)
    started = since.at
    rubric = plan.rubric
    extracted, said, process_limits = opened.extracted, opened.said, opened.process_limits
    deadline = started + opened.limits.submission_seconds
    with opened.sandbox as sandbox:
        sandbox_level = sandbox.isolation.level
        loaded_as = preloaded.loaded if preloaded is not None and preloaded.moved else _load(sandbox, deadline)
        if isinstance(loaded_as, SandboxError):
            said.append(GraderWarning(Kind.NOT_LOADED, str(loaded_as)))
            loaded: Sequence[str] = ()
            environment: tuple[GraderWarning, ...] = ()
            busy_load = isinstance(loaded_as, MachineBusy)
        else:
            loaded = loaded_as.names
            said.extend(loaded_as.warnings)
            environment = loaded_as.environment
            busy_load = False
        exercises = grade_exercises(plan, notebook, extracted, sandbox if loaded else None, loaded, deadline,
                                    options, cases)
        if busy_load:
            exercises = tuple(busy_unloaded(exercise) for exercise in exercises)
        sandbox_level = sandbox.level or sandbox_level
        held = isolation_report(sandbox_level, sandbox.facts, process_limits)
        budget = busy_facts(sandbox.budget, exercises)
    if settle is not None:
        exercises = tuple(settle(exercises, loaded))
    # After settling (the kit's, which scores again from the cases): what an attack the sandbox stopped costs.
    seen = incidents.placed(sandbox.seen, {case.id: exercise_id for exercise_id, planned in plan.cases.items()
                                           for case in planned})
    exercises = incidents.apply(exercises, seen, rubric.incidents)
    mismatch = mismatch_note(rubric.assignment, exercises, extracted)
    return bound_result(SubmissionResult(
        submission=submission or submission_id(path), path=str(path), sha256=sha256, rubric=rubric.assignment,
        rubric_sha256=rubric.sha256, grader_version=__version__, isolation=sandbox_level,
        total=total(e.score for e in exercises), max_total=rubric.max_total, exercises=exercises,
        warnings=(GraderWarning(Kind.MISMATCH, mismatch), *said) if mismatch else tuple(said), mismatch=mismatch,
        environment=environment, incidents=seen,
        seconds=round(time.monotonic() - started, 3), extra={"isolation": held, **budget}))


def busy_unloaded(exercise: ExerciseResult) -> ExerciseResult:
    """Its cases that were not run because the notebook could not be loaded, when a busy machine kept the load past
    the submission's moved deadline: the machine's fault (`busy machine`, graded again by the next run), not the
    student's `missing`. A name the notebook does not define stays missing."""
    if not any(case.cause == NOT_LOADED for case in exercise.cases):
        return exercise
    return replace(exercise, cases=tuple(
        replace(case, status="problem", reason=vocabulary.BUSY, cause=BUSY_CAUSE,
                message="grader problem: not run: the machine was too busy to load the notebook in time")
        if case.cause == NOT_LOADED else case for case in exercise.cases))


def busy_facts(budget: Budget, exercises: Sequence[ExerciseResult]) -> dict[str, Any]:
    """The result's `budget` facts, where the submission's deadline was reached: how far a busy machine moved it
    (`waited_seconds`, the kernel's run-queue time the grading was credited, of at most `slack_seconds`), and
    `busy_cases`: how many cases it kept from being judged. A result with busy cases is graded again by the next
    run, not kept as unchanged (the gradebook keeps `busy_cases` in a column a regrade's unchanged_row reads)."""
    if not budget.reached:
        return {}
    busy = sum(vocabulary.machine_busy(case.status, case.reason) for exercise in exercises for case in exercise.cases)
    return {"budget": {**budget.facts(), "busy_cases": busy}}


def mismatch_note(assignment: str, exercises: Sequence[ExerciseResult], extracted: Extracted) -> str:
    """Say so when most graded names are absent: the notebook was probably graded with the wrong rubric."""
    absent = [e for e in exercises if not e.function]    # no definition under any accepted name
    if len(exercises) < 2 or 2 * len(absent) <= len(exercises):
        return ""
    return (f"this notebook does not look like {assignment}: {len(absent)} of {len(exercises)} graded names are "
            f"not defined in it (is it the right assignment, or the right rubric?)")


def hidden_folders(plan: Plan, submission: Path, extra: Sequence[Path | None] = ()) -> list[str]:
    """Folders the child must not see: the course checkout (reference, rubrics, tests, .git), other
    submissions, results, caches and other children's scratch dirs.

    Inside them the child re-exposes only what it needs to run (its interpreter prefix and libraries).
    A folder holding the base Python installation, the root or the home folder is never hidden whole.
    """
    import sys
    from grader.sandbox.process import scratch_base

    def course_folders() -> tuple[list[Path], frozenset[Path]]:
        """The course's folders (resolved once per plan: the rubric's paths do not move), and the folders never
        hidden. What belongs to the process (its scratch, its temp folder) is asked for each submission."""
        rubric = plan.rubric
        course = Path(os.path.commonpath([rubric.path.parent.resolve(), rubric.reference.parent.resolve()]))
        never = {Path("/"), *Path(sys.base_prefix).resolve().parents} - {Path.home().resolve()}
        never |= {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
        folders = [course, rubric.reference.parent, rubric.path.parent, rubric.submissions]
        return [Path(folder).resolve() for folder in folders if folder is not None], frozenset(never)

    def shared_folders() -> tuple[Path, ...]:
        """Temporary and home folders, which hold other runs' results and caches (with hidden expected values):
        resolved once per plan (the process's own scratch, which may be made again, is asked each time)."""
        return tuple(folder.resolve() for folder in (Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm"),
                                                     Path.home(), default_cache()))

    course, never = plan.memo.get(("course-folders",), course_folders)
    # The batch's own folders (its results, its cache, its intake): resolved once per plan too.
    given = tuple(str(folder) for folder in extra if folder is not None)
    candidates = [*course, submission.resolve().parent, scratch_base().resolve(),
                  *plan.memo.get(("shared-folders",), shared_folders),
                  *plan.memo.get(("extra-folders", given), lambda: tuple(Path(folder).resolve() for folder in given))]
    hidden: list[str] = []
    for folder in candidates:
        if folder in never:
            continue
        if folder.is_dir() and str(folder) not in hidden:
            hidden.append(str(folder))
    return hidden


def defines_counter(rubric: Any) -> Callable[[Path], int]:
    """How many of the rubric's graded names a file defines with a body of its own (-1 when it cannot be read):
    what picks the real notebook of a student who left several (grader.intake.gather.choose). A stub (only a
    docstring, `pass`, `...`, `raise NotImplementedError`: the template's) is not counted, or a copy of the
    template beside the student's notebook tied with it and won by its name or time."""
    names = {name.split(".")[0] for exercise in rubric.exercises for name in exercise.names}

    def defines(path: Path) -> int:
        try:
            extracted = extract(read_notebook(path), rubric.policy)
        except (NotebookError, OSError, ValueError, SyntaxError, RecursionError):
            return -1
        return sum(1 for name in names & set(extracted.definitions) if not extracted.definitions[name].is_stub)
    return defines


@dataclass(frozen=True)
class Read:
    """A submission file read and extracted, before any of it runs (read_submission): the parent's own work,
    which a worker does for its next submission while its current one's child runs."""

    path: Path
    sha256: str
    notebook: Notebook | None          # None: the file is not a notebook that can be read (`problem` says why)
    extracted: Extracted | None        # None: not extracted yet (grade_read extracts it)
    hide_paths: tuple[str, ...] = ()
    problem: str = ""
    seconds: float = 0.0               # what reading and extracting took (wall), counted in the submission's time
    waited: float = 0.0                # of it, the reading thread's run-queue time (budget.Mark: the machine's)
    computed: float = 0.0              # and its CPU time (the grader's own)


def read_submission(path: Path, plan: Plan, hide: Sequence[Path | None] = (),
                    cells: tuple[int, int] | None = None, shown: str = "") -> Read:
    """Read and extract one submission file for `plan` (grade_read grades it). `cells`: extracted only if no
    code cell has more characters than the first and all of them not more than the second. `shown`: the file as
    the TA knows it (`export.zip:member`), named in the reason it cannot be read instead of `path`, which for a
    zip member is the grader's temporary copy (gone after the batch, and no name a student knows)."""
    started = Mark.now()
    sha256 = file_sha256(path)
    try:
        notebook = read_notebook(path)
    except NotebookError as error:
        problem = f"{shown}: {error.reason}" if shown else str(error)
        return _read(Read(path, sha256, None, None, problem=problem), started)
    if cells is not None:
        code = [len(cell.source) for cell in notebook.cells if cell.kind == "code"]
        if max(code, default=0) > cells[0] or sum(code) > cells[1]:
            return _read(Read(path, sha256, notebook, None, tuple(hidden_folders(plan, path, hide))), started)
    extracted = extract(notebook, plan.rubric.policy, drops=False)
    return _read(Read(path, sha256, notebook, extracted, tuple(hidden_folders(plan, path, hide))), started)


def _read(read: Read, started: Mark) -> Read:
    """`read` with what it took since `started` (this thread's wall, run-queue and CPU time)."""
    now = Mark.now()
    return replace(read, seconds=now.at - started.at, waited=max(0.0, now.waited - started.waited),
                   computed=max(0.0, now.computed - started.computed))


def grade_read(read: Read, plan: Plan, support: Mapping[str, str], options: Options = Options(),
               submission: str | None = None, preloaded: Preloaded | None = None) -> SubmissionResult:
    """Grade a submission read_submission read; a file that could not be read gets a result, at zero, saying why.
    `preloaded`: its sandbox loaded ahead (preload, from this read)."""
    if read.notebook is None:
        return bound_result(empty_result(read.path, plan, read.sha256, read.problem, time.monotonic() - read.seconds,
                                         submission))
    return grade_notebook(read.notebook, plan, path=read.path, sha256=read.sha256, support=support, options=options,
                          submission=submission, hide_paths=read.hide_paths, extracted=read.extracted,
                          spent=read.seconds, waited=read.waited, computed=read.computed, preloaded=preloaded)


def grade_path(path: Path, plan: Plan, support: Mapping[str, str], options: Options = Options(),
               submission: str | None = None, hide: Sequence[Path | None] = ()) -> SubmissionResult:
    """Grade one submission file; a file that cannot be read still gets a result, at zero, saying why."""
    return grade_read(read_submission(path, plan, hide), plan, support, options, submission)
