"""The result model: plain data that every report format reads, and its schema-versioned JSON form."""

from __future__ import annotations

import json
import math
import operator
import weakref
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from grader.files import write_text
from grader import incidents as incident_facts, textsafe
from grader.store import shared
from grader.store.status import PROBLEM, machine_busy
from grader.intake.warning import GraderWarning, Kind, from_json as warning_from_json, to_json as warning_to_json

# 2: a result file refers to its cases' shared values (call, expected, a right answer) in the results folder's
# store (grader.store.shared) instead of holding them; version 1 files hold every value and still read.
SCHEMA_VERSION = 2
# "problem": the grader or the rubric failed on this case (a reference check or helper raised), not the student.
# What happened to a submission as a whole: graded (its cases ran), unreadable (the file could not be read or
# parsed: a zero with the reason in `warnings`), failed (the grader could not finish it: its worker died or was
# stopped by the watchdog; not retried unless forced), no submission (the LMS names the student but this intake has
# no file of theirs: Moodle's Status "No submission", an empty submission folder; a zero a TA must tell from a
# notebook that scored 0 or did not open).
NO_SUBMISSION = "no submission"
STATES = ("graded", "unreadable", "failed", NO_SUBMISSION)
# The states of a result that graded no code of the student's: there is no notebook of theirs to show or compare.
NO_CODE = ("unreadable", NO_SUBMISSION)


@dataclass(frozen=True)
class CaseResult:
    id: str
    status: str                  # pass | fail | error | timeout | missing | problem
    visibility: str              # public | hidden
    message: str
    call: str = ""
    expected: Any = None         # wire form; kept for every case, shown to students only for public ones
    got: Any = None
    fraction: float = 0.0        # credit earned in [0, 1]
    seconds: float = 0.0
    output: str = ""             # what the student's code printed during this case (truncated)
    traceback: str = ""          # student frames only, pointing at notebook cells
    weight: float = 1.0
    mistake: str = ""            # the known mistake (reference function) the wrong answer equals
    variant: str = ""            # the accepted variant (reference function) the answer was judged by
    culprit: str = ""            # the other notebook function or method an error was raised in ("EightPuzzle.h")
    inputs: dict = field(default_factory=dict)   # public cases: each course fixture the call uses -> its value (wire)
    # Why it did not pass, as facts (set where the verdict is born; every writer reads these, none parses
    # `message`, which is only the sentence shown). Results stored before they existed read as "".
    reason: str = ""             # status.REASONS: wrong answer | error | timeout | budget | not graded | ...
    cause: str = ""              # what went wrong with no value of the student's in it: what a class groups by
    advice: str = ""             # what the feedback adds on why (a known mistake's `say`, an error hint, a convention)
    detail: str = ""             # the message without its advice (set by `advised`); "" when it has none
    error: str = ""              # the exception as raised ("KeyError: 5"), without its place or the advice
    where: str = ""              # the notebook place ("In [4] (cell 7), line 2") it raised in or was stopped at
    limit: float = 0.0           # seconds: the time limit a timeout ran into
    # The CPU time the kernel charged the case's process, as the parent read it (grader.sandbox.cpuclock); None
    # where it was not measured (no /proc, the kit's in-process runs, results stored before it existed).
    cpu_seconds: float | None = None
    # The rubric's check judges the answer as a path of states (the `path` check): reports caption and draw its
    # states as a path. Otherwise a list of states is just that (intermediate goals are no path). Stored before
    # it existed: False, so such a list is captioned by its container, never called a path it may not be.
    path_answer: bool = False


@dataclass(frozen=True)
class ExerciseResult:
    id: str
    title: str
    score: float
    max_score: float
    cases: tuple[CaseResult, ...]
    notes: tuple[str, ...] = ()  # exercise-level remarks: stub, alias used, globals read, hints
    function: str = ""           # the notebook name that was graded (an alias, maybe)
    location: str = ""           # where the graded definition is, e.g. "In [50] (cell 37), line 1"
    variant: str = ""            # the accepted variant the notebook follows ("" = the reference's convention)
    isolated: tuple[str, ...] = ()   # helpers answered by the reference, because their own exercise failed
    globals_read: tuple[str, ...] = ()   # notebook globals the graded function read (graded with their last value)
    cell: int | None = None      # `location` as facts: the notebook cell (0-based index) of the definition
    line: int = 0                # and its line in that cell (results stored before these existed: None, 0)
    # The score the judge gave before the rubric's incident policy zeroed it (grader.incidents.apply): what a TA who
    # finds the incident honest gives back (`grader override --forgive`). None: the policy took nothing (results
    # stored before this existed read as None).
    forfeited: float | None = None


@dataclass(frozen=True)
class SubmissionResult:
    submission: str
    path: str
    sha256: str
    rubric: str
    rubric_sha256: str
    grader_version: str
    isolation: str
    total: float
    max_total: float
    exercises: tuple[ExerciseResult, ...]
    warnings: tuple[GraderWarning, ...] = ()   # for the student: what was left out or stood in for, and where
    seconds: float = 0.0
    schema: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict)
    state: str = "graded"        # one of STATES
    notebook: str = ""           # the graded file's content-addressed copy, relative to the results folder
    late: bool = False           # late by the rubric's due date (rubric.lateness.assess); without one, the LMS's flag
    submitted_at: str = ""       # when it was handed in (UTC ISO), as far as a trustworthy time says; "" unknown
    penalty: float = 0.0         # points the rubric's late policy takes off; `total` is the score before it
    # "this notebook does not look like <assignment>: ..." when most graded names are absent
    mismatch: str = ""
    environment: tuple[GraderWarning, ...] = ()   # for the TA: what the machine lacked (modules given stand-ins)
    # What the sandbox refused or stopped that only hostile code does, as a trusted observer saw it (grader.incidents);
    # the rubric's policy has already taken its cost from `exercises`. Results stored before it existed: none.
    incidents: tuple[incident_facts.Incident, ...] = ()

    def exercise(self, exercise_id: str) -> ExerciseResult:
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        raise KeyError(exercise_id)


def advised(case: CaseResult, said: str) -> CaseResult:
    """`case` with `said` added to its advice and to its message, which says the advice last. What the message says
    without the advice is kept as its own field, `detail`: a report that says a group's advice once shows the other
    cases' detail (report.grouping.own_messages) and never cuts it off the message."""
    if not said:
        return case
    return replace(case, message=f"{case.message}. {said}" if case.message else said,
                   advice=f"{case.advice}. {said}" if case.advice else said,
                   detail=case.detail if case.advice else case.message)


def _case_dict(case: CaseResult) -> dict:
    fields_ = case.__dict__      # a dataclass's fields in their order (to_dict runs for every case of a class)
    if len(fields_) == len(_CASE_FIELDS):
        return dict(fields_)
    return {f: getattr(case, f) for f in _CASE_FIELDS}


def not_judged(result: SubmissionResult) -> tuple[int, int]:
    """Its cases not judged: those a check or reference helper of the rubric crashed on (a `problem` the rubric's
    author must fix, then --force), and those a busy machine kept from being judged (the next run grades them)."""
    problems = busy = 0
    for exercise in result.exercises:
        for case in exercise.cases:
            if machine_busy(case.status, case.reason):
                busy += 1
            elif case.status == PROBLEM:
                problems += 1
    return problems, busy


def to_dict(result: SubmissionResult) -> dict:
    """The JSON form. Not dataclasses.asdict: that deep-copies every expected and got value (slow on 400 KB)."""
    data: dict[str, Any] = {}
    for name in _ALL_RESULT_FIELDS:
        if name == "exercises":
            # `forfeited` only when the incident policy took a score: every other result is stored as before it
            # existed (and reads back as None)
            data[name] = [{f: ([_case_dict(c) for c in e.cases] if f == "cases" else
                               list(e.notes) if f == "notes" else list(e.isolated) if f == "isolated" else
                               getattr(e, f)) for f in _EXERCISE_FIELDS if f != "forfeited" or e.forfeited is not None}
                          for e in result.exercises]
        elif name in ("warnings", "environment"):
            data[name] = [warning_to_json(w) for w in getattr(result, name)]
        elif name == "incidents":
            data[name] = [incident_facts.to_json(i) for i in result.incidents]
        elif name == "extra":
            data[name] = dict(result.extra)
        else:
            data[name] = getattr(result, name)
    return data


_CASE_FIELDS = tuple(f.name for f in fields(CaseResult))
# What a stored case may leave out: fields at their default (no output, no traceback ...) read back as that
# default. A case always says its id, status, visibility and message; never are the values left out: a stored
# case without `got` means "the expected value" (grader.store.shared).
_CASE_DEFAULTS = {f.name: (f.default if f.default is not MISSING else f.default_factory())   # type: ignore[operator]
                  for f in fields(CaseResult)
                  if f.name not in ("id", "status", "visibility", "message", "call", "expected", "got")
                  and (f.default is not MISSING or f.default_factory is not MISSING)}
_EXERCISE_FIELDS = tuple(f.name for f in fields(ExerciseResult))
_ALL_RESULT_FIELDS = tuple(f.name for f in fields(SubmissionResult))


def lean(data: dict) -> dict:
    """`data` (to_dict's form) without the case fields that hold their default: a stored result is mostly
    passing cases with nothing to say. Changes `data` and returns it; from_dict reads either form."""
    for exercise in data["exercises"]:
        for case in exercise["cases"]:
            for name, default in _CASE_DEFAULTS.items():
                if name in case and type(case[name]) is type(default) and case[name] == default:
                    del case[name]
    return data


# case_from_dict sets a case's fields without __init__: a check the dataclass might gain would be skipped.
assert not hasattr(CaseResult, "__post_init__"), "case_from_dict must then call it"
_CASE_NAMES = frozenset(_CASE_FIELDS)
_CASE_REQUIRED = frozenset(f.name for f in fields(CaseResult) if f.default is MISSING and f.default_factory is MISSING)
# Every field in the dataclass's order, at its default but the one made by a factory (inputs: a fresh dict for
# each case) and the required ones (data gives them). A case read back has its fields in this order whatever
# the order of `data` (a worker's template, a gradebook row), so two writes of one result are the same bytes.
_CASE_ORDER = {f.name: f.default if f.default is not MISSING else None for f in fields(CaseResult)}


def case_from_dict(data: dict) -> CaseResult:
    """CaseResult(**data), without the frozen dataclass's __init__, which sets each of its 25 fields through
    object.__setattr__: that was most of reading a result back (a class's results hold thousands of cases).
    The same checks: a field it does not know, or a required one missing, is the TypeError __init__ raises."""
    names = data.keys()
    if not (names <= _CASE_NAMES and _CASE_REQUIRED <= names):
        return CaseResult(**data)
    case = object.__new__(CaseResult)
    state = case.__dict__
    state.update(_CASE_ORDER)
    state.update(data)
    if "inputs" not in data:
        state["inputs"] = {}
    return case


def from_dict(data: dict) -> SubmissionResult:
    exercises = tuple(
        ExerciseResult(**{**e, "cases": tuple(map(case_from_dict, e["cases"])), "notes": tuple(e["notes"]),
                          "isolated": tuple(e.get("isolated", ())), "globals_read": tuple(e.get("globals_read", ()))})
        for e in data["exercises"])
    # Warnings stored before they had fields are plain strings: they read as text alone (Kind.TEXT).
    return SubmissionResult(**{**data, "exercises": exercises,
                               "warnings": tuple(warning_from_json(w) for w in data["warnings"]),
                               "environment": tuple(warning_from_json(w) for w in data.get("environment", ())),
                               "incidents": tuple(incident_facts.from_json(i) for i in data.get("incidents", ()))})


# ---------------------------------------------------------------------------------------------- bounds


@dataclass(frozen=True)
class Bounds:
    """What one case may store, in characters. Student code controls all of these fields."""

    message: int = 4_000
    output: int = 16_000
    traceback: int = 16_000
    call: int = 2_000
    value: int = 100_000         # expected and got, each, as JSON
    warning: int = 2_000
    warnings: int = 200          # how many warnings a result keeps


CASE_BOUNDS = Bounds()
SUBMISSION_CHARS = 2_000_000     # a whole result's JSON; the gradebook row holds the same text
# Tighter and tighter bounds, tried in turn until a result fits SUBMISSION_CHARS (the last one always does for
# any rubric of sane size: values and output are gone, messages are one line).
_TIGHTER = (Bounds(1_000, 2_000, 2_000, 500, 4_000, 500, 50), Bounds(300, 300, 300, 200, 300, 200, 10),
            Bounds(120, 0, 0, 120, 0, 120, 3))


def _finite(value: Any) -> float:
    """Numbers the JSON must hold as numbers: a forged or broken one becomes 0 rather than NaN or Infinity."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


# Values many results share (a plan's expected answers, in every case of every student), known to fit
# CASE_BOUNDS.value: id -> (the value itself, its JSON size, how many owners hold it), the value held so that its
# id cannot name another object while it is here. Each is forgotten when its owners (plans' memos: a public or
# one exercise's plan shares the whole plan's values) are: held for the process's life,
# a process grading batch after batch (a test session, a notebook kernel) kept every earlier plan's answers
# (~0.5 MB a Taoistic plan) until 100,000 of them, and a batch that happened to grow this table showed as
# memory kept (test_memory).
_FITTING: dict[int, tuple[Any, int, int]] = {}
_FITTING_LIMIT = 100_000
_OWNED: weakref.WeakKeyDictionary[Any, list[int]] = weakref.WeakKeyDictionary()


def fitting(wire: Any, owner: Any) -> Any:
    """`wire` within CASE_BOUNDS.value (cut once if it is not), remembered as fitting while `owner` lives, so
    that bounding the many results that share it (a plan's expected value: the expected and, when right, the got
    of a case for every student) does not measure it again. For values that live as long as their owner (a
    plan's memo), never a student's answer."""
    bounded = cut_value(wire, CASE_BOUNDS.value)
    try:
        size = _written_size(bounded)
    except (TypeError, ValueError, RecursionError):
        return bounded      # not plain JSON: measured (and refused) like any other value
    if len(_FITTING) >= _FITTING_LIMIT:
        _FITTING.clear()
    owned = _OWNED.get(owner)
    if owned is None:
        owned = _OWNED[owner] = []
        weakref.finalize(owner, _forget, owned)
    known = _FITTING.get(id(bounded))
    _FITTING[id(bounded)] = (bounded, size, known[2] + 1 if known is not None and known[0] is bounded else 1)
    owned.append(id(bounded))
    return bounded


def _forget(ids: list[int]) -> None:
    """An owner's values are no longer known to fit unless another owner holds them too (a count gone wrong
    after the table started over only has a value measured again: `_fitting_size` checks the value itself)."""
    for key in ids:
        known = _FITTING.get(key)
        if known is not None and known[2] > 1:
            _FITTING[key] = (known[0], known[1], known[2] - 1)
        elif known is not None:
            del _FITTING[key]


def _fitting_size(wire: Any) -> int | None:
    known = _FITTING.get(id(wire))
    return known[1] if known is not None and known[0] is wire else None


def cut_value(wire: Any, limit: int) -> Any:
    """A wire value within `limit` characters of JSON: itself, or an opaque stand-in saying what was cut."""
    if wire is None or isinstance(wire, (bool, int)):
        return wire
    if limit >= CASE_BOUNDS.value and _fitting_size(wire) is not None:
        return wire
    if isinstance(wire, float):   # a bare non-finite float is not JSON: the codec's tagged form instead
        return wire if math.isfinite(wire) else {"float": "nan" if wire != wire else "inf" if wire > 0 else "-inf"}
    if isinstance(wire, str) and len(wire) <= limit // 2:
        return wire
    if isinstance(wire, dict) and wire.get("opaque") == CUT_VALUE and len(str(wire.get("repr", ""))) <= limit:
        return wire
    try:
        size = textsafe.value_size(wire)
    except (TypeError, ValueError, RecursionError):
        size = limit + 1
    if size <= limit:
        return wire
    from grader import codec
    try:
        shown = codec.describe(wire, max(0, min(limit, 2_000) - 60))
    except Exception:   # a malformed wire cannot even be described: say only how big it was
        shown = ""
    return {"opaque": CUT_VALUE, "repr": textsafe.cut(f"{shown} [value of {size:,} characters cut]", max(limit, 40))}


CUT_VALUE = "grader.cut"          # the opaque type name of a value too big to keep


# Cases bound_case returned within CASE_BOUNDS, by id, as long as they live: bounding a result bounds its cases
# again (the judge bounded each as soon as it was judged), and a case known to be within them is not measured twice.
_BOUNDED: weakref.WeakValueDictionary[int, CaseResult] = weakref.WeakValueDictionary()


# Cases made within CASE_BOUNDS with their JSON's size known where they were made (a right answer made from its
# plan's template, grading._from_template: most cases of a class), by id while they live: neither bounded nor
# measured again field by field. Each holds a weak reference to its case, so its id names no other.
_SIZED: dict[int, tuple[weakref.ref[CaseResult], int]] = {}
_SIZED_LIMIT = 100_000     # entries (those of cases gone are dropped all at once: a case still alive is measured)


def sized_case(case: CaseResult, size: int) -> CaseResult:
    """`case`, taken to be within CASE_BOUNDS and its to_dict form at most `size` characters of JSON
    (case_json_at_most): the caller made it so."""
    if len(_SIZED) >= _SIZED_LIMIT:
        _SIZED.clear()
    _SIZED[id(case)] = (weakref.ref(case), size)
    return case


def _known_size(case: CaseResult) -> int | None:
    known = _SIZED.get(id(case))
    return known[1] if known is not None and known[0]() is case else None


def bound_case(case: CaseResult, bounds: Bounds = CASE_BOUNDS) -> CaseResult:
    """The case with every stored field within `bounds` (head and tail kept, with a marker); idempotent."""
    if bounds is CASE_BOUNDS and (_known_size(case) is not None or _BOUNDED.get(id(case)) is case):
        return case
    bounded = _bound_case(case, bounds)
    if bounds is CASE_BOUNDS:
        _BOUNDED[id(bounded)] = bounded
    return bounded


def _bound_case(case: CaseResult, bounds: Bounds) -> CaseResult:
    changes: dict[str, Any] = {}
    for name, limit in (("message", bounds.message), ("output", bounds.output), ("traceback", bounds.traceback),
                        ("call", bounds.call), ("id", bounds.call), ("cause", bounds.message),
                        ("advice", bounds.message), ("detail", bounds.message), ("error", bounds.message),
                        ("where", bounds.call), ("reason", bounds.call)):
        text = getattr(case, name)
        if not isinstance(text, str):
            changes[name] = text = textsafe.cut(str(text), limit)
        elif len(text) > limit:
            changes[name] = textsafe.cut(text, limit)
    for name in ("expected", "got"):
        value = getattr(case, name)
        bounded = cut_value(value, bounds.value)
        if bounded is not value:
            changes[name] = bounded
    for name in ("fraction", "seconds", "weight", "limit"):
        value = getattr(case, name)
        if type(value) is not float or not math.isfinite(value):
            changes[name] = _finite(value)
    if case.cpu_seconds is not None and (type(case.cpu_seconds) is not float or not math.isfinite(case.cpu_seconds)):
        changes["cpu_seconds"] = _finite(case.cpu_seconds)
    return replace(case, **changes) if changes else case


def _bound_texts(texts: tuple[str, ...], bounds: Bounds) -> tuple[str, ...]:
    kept = [textsafe.cut(str(text), bounds.warning) for text in texts[:bounds.warnings]]
    if len(texts) > bounds.warnings:
        kept.append(f"... and {len(texts) - bounds.warnings} more")
    return tuple(kept)


def _bound_warnings(warnings: tuple[GraderWarning, ...], bounds: Bounds) -> tuple[GraderWarning, ...]:
    """Each warning's texts within `bounds.warning` characters, and at most `bounds.warnings` of them, the last
    saying how many more there were (so bounding twice changes nothing)."""
    if len(warnings) <= bounds.warnings:
        return tuple(_bound_warning(w, bounds.warning) for w in warnings)
    kept = [_bound_warning(w, bounds.warning) for w in warnings[:bounds.warnings - 1]]
    return (*kept, GraderWarning(Kind.GRADER, f"... and {len(warnings) - len(kept)} more"))


def _bound_warning(warning: GraderWarning, limit: int) -> GraderWarning:
    short = min(limit, 200)      # a subject (a module, an exception type) and a cell label are short facts
    if all(isinstance(t, str) and len(t) <= n for t, n in ((warning.text, limit), (warning.subject, short),
                                                           (warning.label, short))):
        return warning
    return replace(warning, text=textsafe.cut(str(warning.text), limit),
                   subject=textsafe.cut(str(warning.subject), short), label=textsafe.cut(str(warning.label), short))


def _bounded(result: SubmissionResult, bounds: Bounds) -> SubmissionResult:
    exercises = tuple(_bounded_exercise(e, bounds) for e in result.exercises)
    return replace(result, exercises=exercises, warnings=_bound_warnings(result.warnings, bounds),
                   environment=_bound_warnings(result.environment, bounds),
                   total=_finite(result.total), max_total=_finite(result.max_total), seconds=_finite(result.seconds))


def _bounded_exercise(exercise: ExerciseResult, bounds: Bounds) -> ExerciseResult:
    """The exercise with its cases, notes and scores within `bounds`: itself when they are already (the judge
    bounds each case as it is judged, so bounding a worker's result copied each exercise to change nothing)."""
    cases = tuple(bound_case(c, bounds) for c in exercise.cases)
    notes = exercise.notes
    if type(exercise.cases) is tuple and all(map(operator.is_, cases, exercise.cases)) \
            and _finite_float(exercise.score) and _finite_float(exercise.max_score) \
            and type(notes) is tuple and len(notes) <= bounds.warnings \
            and all(type(text) is str and len(text) <= bounds.warning for text in notes):
        return exercise
    return replace(exercise, cases=cases, notes=_bound_texts(notes, bounds), score=_finite(exercise.score),
                   max_score=_finite(exercise.max_score))


def _finite_float(value: Any) -> bool:
    """Whether _finite(value) is `value` itself, as good as."""
    return type(value) is float and math.isfinite(value)


def bounded_json(result: SubmissionResult, **options: Any) -> tuple[SubmissionResult, str]:
    """The result cut to fit SUBMISSION_CHARS of JSON, and that JSON (lone surrogates kept as escapes).

    Scores are never cut: only what the student's code produced (values, output, messages) gets shorter.
    """
    options.setdefault("separators", (",", ":"))
    current = _bounded(result, CASE_BOUNDS)
    text = textsafe.json_text(to_dict(current), **options)
    for bounds in _TIGHTER:
        if len(text) <= SUBMISSION_CHARS:
            break
        current = _bounded(current, bounds)
        current = replace(current, warnings=(*current.warnings, GraderWarning(
            Kind.GRADER, f"this result was cut to fit {SUBMISSION_CHARS:,} characters")))
        text = textsafe.json_text(to_dict(current), **options)
    return current, text


def bound_result(result: SubmissionResult) -> SubmissionResult:
    """The result as it will be stored: within every bound."""
    current = _bounded(result, CASE_BOUNDS)
    if _size_at_most(current) <= SUBMISSION_CHARS:
        return current      # surely small enough: not encoded here only to be measured (the writers encode it)
    return bounded_json(result)[0]


def _size_at_most(result: SubmissionResult) -> int:
    """_result_json_at_most of the result, each case whose size is known (sized_case) counted at that size."""
    known = 0
    exercises = []
    for exercise in result.exercises:
        rest = []
        for case in exercise.cases:
            size = _known_size(case)
            if size is None:
                rest.append(case)
            else:
                known += size + 1     # and its comma
        exercises.append(exercise if len(rest) == len(exercise.cases) else replace(exercise, cases=tuple(rest)))
    if not known:
        return _result_json_at_most(to_dict(result))
    return known + _result_json_at_most(to_dict(replace(result, exercises=tuple(exercises))))


_VALUES = ("expected", "got", "inputs")


def _result_json_at_most(data: dict) -> int:
    """An upper bound on the characters of a result's JSON (to_dict's form), without encoding it whole: a case's
    values are measured (at C speed) unless the plan shares them, whose size is known (fitting); what is around
    the cases (bounded: warnings, notes, the isolation report) is encoded, once, at C speed too."""
    exercises = data.get("exercises")
    if type(exercises) is not list or any(type(e) is not dict or type(e.get("cases")) is not list for e in exercises):
        return _encoded_size(data)
    total = _encoded_size({**data, "exercises": [{**exercise, "cases": []} for exercise in exercises]})
    for exercise in exercises:
        for case in exercise["cases"]:
            total += case_json_at_most(case) + 3      # its braces and comma
        if total > SUBMISSION_CHARS:
            return _TOO_BIG
    return total


def _encoded_size(data: Any) -> int:
    """The characters of `data` as compact ASCII JSON (no longer form is written), or _TOO_BIG when it is not
    plain JSON data (non-finite numbers, other types)."""
    try:
        return len(_ASCII_JSON.encode(data))
    except (TypeError, ValueError, RecursionError):
        return _TOO_BIG


_ASCII_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def case_json_at_most(case: dict) -> int:
    """An upper bound on the characters of a case's JSON (to_dict's form, or some of its fields)."""
    total = 0
    for field_name, item in case.items():   # the common kinds inline: a class has many cases
        kind = type(item)
        if kind is str:
            total += 6 * len(field_name) + 12 * len(item) + 8
        elif kind is float and math.isfinite(item):
            total += 6 * len(field_name) + 28
        else:
            total += 6 * len(field_name) + 4 + (_value_size(item) if field_name in _VALUES else _json_at_most(item))
    return total


def _written_size(wire: Any) -> int:
    """At least the characters of a wire value's JSON as a result may be written: a result holding a lone
    surrogate is written as ASCII JSON, where a character outside ASCII is a \\u escape (6 characters, 12 for
    one outside the BMP), never shorter than its UTF-8 form, so the ASCII form bounds both."""
    return len(json.dumps(wire, ensure_ascii=True, separators=(",", ":"), allow_nan=False, default=str))


def _value_size(wire: Any) -> int:
    size = _fitting_size(wire)
    if size is not None:
        return size
    if type(wire) is dict or type(wire) is list:
        if not wire:     # a passing case's inputs: not encoded only to be measured (a third of the bound's time)
            return 2
        try:
            return _written_size(wire)
        except (TypeError, ValueError, RecursionError):
            return _TOO_BIG
    return _json_at_most(wire)


_TOO_BIG = SUBMISSION_CHARS + 1


def _json_at_most(data: Any, depth: int = 0) -> int:
    """An upper bound on the characters of `data` as compact JSON, without encoding it: a text at its longest
    escapes, a value many results share at the size measured once (fitting). Anything that is not plain JSON
    data counts as too big, so bounded_json encodes it and says what is wrong with it."""
    size = _fitting_size(data)
    if size is not None:
        return size
    kind = type(data)
    if kind is str:
        return 12 * len(data) + 2          # a character outside the BMP: two \\u escapes in ASCII JSON
    if data is None or kind is bool:
        return 5
    if kind is int:
        return data.bit_length() // 3 + 3   # decimal digits of n bits are at most n / 3.3, and a sign
    if kind is float:
        return 24 if math.isfinite(data) else _TOO_BIG
    if depth > 100:
        return _TOO_BIG
    if kind is dict:
        total = 2
        for key, value in data.items():
            if type(key) is not str:
                return _TOO_BIG
            total += 12 * len(key) + 4 + _json_at_most(value, depth + 1)
            if total > SUBMISSION_CHARS:
                return _TOO_BIG
        return total
    if kind is list or kind is tuple:
        total = 2
        for value in data:
            total += _json_at_most(value, depth + 1) + 1
            if total > SUBMISSION_CHARS:
                return _TOO_BIG
        return total
    return _TOO_BIG


def stored_form(result: SubmissionResult) -> dict:
    """The dict a (bounded) result is stored from, in its file and in the gradebook: to_dict's form, lean."""
    return lean(to_dict(result))


def stored_form_of(data: dict, read: SubmissionResult, result: SubmissionResult) -> dict:
    """stored_form(result), where `read` is from_dict(data), `data` a stored form (a worker's, as it sent it), and
    `result` is `read` changed since (the batch's lateness, the notebook's copy): `data` itself with the plain
    fields set, not made again case by case, when those are all that changed (replace keeps the others' very
    objects); else stored_form(result). Changes `data` and returns it."""
    if any(getattr(result, name) is not getattr(read, name) for name in _NESTED_FIELDS):
        return stored_form(result)
    for name in _PLAIN_FIELDS:
        data[name] = getattr(result, name)
    return data


_NESTED_FIELDS = ("exercises", "warnings", "environment", "incidents", "extra")
_PLAIN_FIELDS = tuple(name for name in _ALL_RESULT_FIELDS if name not in _NESTED_FIELDS)


def _copied(form: dict) -> dict:
    """A stored form whose case dicts may be changed (slim moves values out of them) without changing `form`."""
    return {**form, "exercises": [{**exercise, "cases": [dict(case) for case in exercise["cases"]]}
                                  for exercise in form["exercises"]]}


def late_line(result: SubmissionResult) -> str:
    """What a late hand-in costs, in the words every report uses, beside the score the code earned (the penalty
    is kept apart from it)."""
    def points(value: float) -> str:
        return f"{value:g}" if value == int(value) else f"{value:.2f}".rstrip("0")
    when = f" (handed in {result.submitted_at.replace('T', ' ')[:16]} UTC)" if result.submitted_at else ""
    if not result.penalty:
        return f"Handed in late{when}."
    return (f"Handed in late{when}: the late policy takes off {points(result.penalty)}, "
            f"{points(max(0.0, result.total - result.penalty))} / {points(result.max_total)} after it.")


def write_json(result: SubmissionResult, directory: Path, *, bounded: bool = False,
               store: shared.SharedWriter | None = None, form: dict | None = None) -> Path:
    """Write atomically, so an interrupted batch never leaves half a result behind; bounded, any string. The
    values every result of the rubric shares go to the folder's store (grader.store.shared), once.

    `bounded`: the result is already within every bound (grade_path bounds each result it returns), so it is
    not measured again (that costs a JSON encoding of every value). `store`: the folder's store writer of a
    batch (one per batch, so each store file is checked once), used when it is the result's rubric's. `form`: the
    bounded result's stored_form, when the caller made it for the gradebook too (read here, not changed).
    """
    directory.mkdir(parents=True, exist_ok=True)
    if store is None or store.rubric_sha256 != result.rubric_sha256:
        store = shared.SharedWriter(directory, result.rubric_sha256)
    if not bounded:
        result, form = bound_result(result), None
    data = shared.slim(_copied(form) if form is not None else stored_form(result), store)
    data["schema"] = SCHEMA_VERSION     # the file's form, whatever file the result was first read from
    # Compact: the C encoder is ten times faster than an indented dump (pretty-print with `jq` or
    # `python -m json.tool`).
    return write_text(directory / f"{result.submission}.json", textsafe.json_text(data, separators=(",", ":")) + "\n")


def read_json(path: Path, store: shared.SharedReader | None = None) -> SubmissionResult:
    """A result file, whole: its shared values read back from its folder's store (checked against their keys;
    shared.SharedValuesError names a file that does not match). Any schema version so far. `store`: the reader
    of the folder's store, for a pass over many results (each store file is then read once)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    return from_dict(shared.restore(data, store if store is not None else shared.SharedReader(path.parent)))
