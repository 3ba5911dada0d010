"""The rubric: parsed once from YAML into frozen dataclasses, every error reported as file:line: reason."""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from grader import incidents as incident_facts
from grader.rubric.lateness import (LMS_FLAG, LatePolicy, NoZone, is_utc_name, local_zone_name,
                                    parse_due)
from grader.rubric.yamlmarks import Marked, MarkedList, YamlError, load_marked

if TYPE_CHECKING:   # annotations only: a rubric loads without the call machinery
    from grader.syntax.calls import MethodCall

VISIBILITIES = ("public", "hidden")
SCORINGS = ("proportional", "all_or_nothing")


@dataclass(frozen=True)
class Policy:
    """The rubric's `extraction:` section: overrides of the top-level policy (see grader.extract.source)."""

    allow_calls: frozenset[str] = frozenset()  # notebook functions whose top-level calls are kept anyway
    drop: frozenset[str] = frozenset()  # top-level names whose assignments are dropped anyway
    # Names the grading needs from the notebook (graded functions, names the cases call or set, names support
    # modules read): the roots of the dependency slice. None (no rubric): the syntactic policy, which keeps data
    # and drops statements that call notebook code.
    roots: frozenset[str] | None = None


# The largest value of a limit: past it the sandbox cannot apply the limit, and no course means it (a case of 11.6
# days, 16 TiB). A case's timer of 1e10 s is past setitimer's range: the child exited at every case, and a class was
# graded 0 with exit 0; an address-space rlimit of 1e13 MB is past a C long: no notebook loaded. The counts (files,
# output bytes, calls) are C ints in the sandbox.
MAX_SECONDS = 1_000_000.0
MAX_MB = 1 << 24
MAX_COUNT = (1 << 31) - 1


def limit_maximum(name: str) -> float:
    """The largest value the limit `name` may take (see MAX_SECONDS)."""
    if name.endswith("seconds") or name == "case_factor":
        return MAX_SECONDS
    if name.endswith("_mb"):
        return MAX_MB
    return 1.0 if name == "mutation_score" else MAX_COUNT


@dataclass(frozen=True)
class Limits:
    """Resource limits; rubric-wide, overridable per exercise and on the command line."""

    case_seconds: float = 1.0        # floor of the per-case wall time
    case_factor: float = 20.0        # a case may take this many times the reference's own time
    load_seconds: float = 10.0       # running the notebook's kept top-level statements
    submission_seconds: float = 180.0
    memory_mb: int = 1024
    output_bytes: int = 65536        # student output kept per case
    max_timeouts: int = 2            # timeouts in one exercise before its remaining cases are skipped
    disk_mb: int = 64                # the student's scratch (a tmpfs, counted in memory_mb)
    files: int = 1000                # files and folders in the scratch
    mutation_score: float = 0.0      # validate fails below this share of mutants killed (0: no threshold)
    oracle_calls: int = 10_000       # round trips to the isolated helpers in one case before it ends in an error

    def merged(self, overrides: Mapping[str, Any]) -> "Limits":
        chosen = {k: v for k, v in overrides.items() if v is not None}
        for name, value in chosen.items():   # a library caller's Options: the CLI and the rubric refused these
            if not 0 <= value <= limit_maximum(name):
                raise ValueError(f"limit {name} = {value!r}: not from 0 to {limit_maximum(name):,.0f}")
        return replace(self, **chosen)

    def case_timeout(self, reference_seconds: float) -> float:
        """A factor and a slow reference within their bounds can still multiply past what a timer holds."""
        return min(max(self.case_seconds, self.case_factor * reference_seconds), MAX_SECONDS)


@dataclass(frozen=True)
class CheckSpec:
    """Which check judges a case, and its options (read-only)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class CaseSpec:
    """A case as written in the rubric: one call, or a generator of many."""

    line: int
    call: str
    id: str | None = None
    visibility: str = "public"
    expect: str | None = None
    set: tuple[tuple[str, str], ...] = ()
    probe: tuple[tuple[str, str], ...] = ()
    reduce: str | None = None
    check: CheckSpec | None = None
    weight: float = 1.0
    generate: str | None = None
    count: int = 0
    seed: int = 0
    seeded: bool = False             # the rubric wrote `seed:` (validate asks for one where the generator uses it)


@dataclass(frozen=True)
class Mistake:
    """A known wrong implementation in the reference module and what to tell a student who made it."""

    reference: str
    say: str
    line: int = 0


@dataclass(frozen=True)
class IsolatedMethod:
    """A method of a notebook class the reference may answer for (`isolate: [{method: C.m, call: ...}]`).

    Its arguments are objects of the student's classes, which never cross the pipe: `call` is an expression
    over the reference module's names and the method's parameters (`self`, `node`), and only the attribute
    chains it reads from those parameters (`self.goal`, `node.state`) are computed in the child and sent as data.
    """

    name: str          # Class.method
    call: str          # e.g. "EightPuzzle(node.state, self.goal).h(Node(node.state))"
    line: int = 0
    # The call already split into the child's inputs and the parent's code (a kit carries it: there is no
    # reference there to take the method's parameters from); None: split from the reference when graded.
    split: MethodCall | None = None


@dataclass(frozen=True)
class Variant:
    """Another accepted convention: a reference function whose answers also earn full credit.

    The mirror image of a Mistake. `when` makes it conditional on how earlier exercises were judged:
    (exercise id, function) pairs, each met only when that exercise's answers consistently matched that
    function (a mistake or variant of it), e.g. extract_move's 2020/21 convention needs a 2020/21 move_dir.
    """

    reference: str
    say: str = ""
    when: tuple[tuple[str, str], ...] = ()
    line: int = 0


@dataclass(frozen=True)
class ErrorHint:
    """An explanation added to errors whose text contains `match`.

    `when` makes it depend on how earlier exercises were judged: (exercise id, "right" or "wrong") pairs, each met
    when that exercise earned all its points (right) or lost some (wrong). An error has more than one cause: solve's
    "cannot unpack non-iterable NoneType" blames the moves when findZero is right, findZero when it is not.
    """

    match: str
    say: str
    when: tuple[tuple[str, str], ...] = ()
    line: int = 0


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    points: float
    function: str
    aliases: tuple[str, ...]
    scoring: str
    check: CheckSpec
    isolate: tuple[str, ...]
    hints: tuple[str, ...]
    error_hints: tuple[ErrorHint, ...]
    mistakes: tuple[Mistake, ...]
    cases: tuple[CaseSpec, ...]
    limits: Limits
    line: int = 0
    reduce: str | None = None
    variants: tuple[Variant, ...] = ()
    methods: tuple[IsolatedMethod, ...] = ()   # the isolated names that are methods (Class.method), with calls

    @property
    def names(self) -> tuple[str, ...]:
        """Names the graded function may have in a notebook, preferred first."""
        return (self.function, *self.aliases)

    def grades(self, helper: str) -> bool:
        """Whether this exercise judges `helper`: a function by one of its names, or a method `Class.method`
        named as its function or called on the class by every one of its cases (`EightPuzzle(s).h(...)`)."""
        if "." not in helper:
            return helper in self.names
        owner, method = helper.split(".", 1)
        if helper in self.names:
            return True
        if owner not in {name.split(".")[0] for name in self.names} or not self.cases:
            return False
        return all(called_method(case.call) == (owner, method) for case in self.cases)


@dataclass(frozen=True)
class Rubric:
    path: Path
    sha256: str                  # of the rubric, the reference and its course modules (see course_files): what
                                 # expected values and students' results depend on
    assignment: str
    title: str
    reference: Path
    template: Path | None
    support: Path | None
    submissions: Path | None
    fixtures: tuple[str, ...]
    limits: Limits
    policy: Policy
    exercises: tuple[Exercise, ...]
    fixture_lines: tuple[int, ...] = ()   # line of each fixture name, for errors found against the reference
    late: LatePolicy | None = None        # the penalty for late submissions, shown apart from the score
    incidents: str = incident_facts.DEFAULT_POLICY   # what an attack the sandbox stopped costs (grader.incidents)
    given: tuple[str, ...] = ()           # what the template gives: the course's stands in where a notebook lacks it
    given_line: int = 0                   # line of the `given` key, for errors found against the course's code

    def exercise(self, exercise_id: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        raise KeyError(exercise_id)

    @property
    def max_total(self) -> float:
        return sum(exercise.points for exercise in self.exercises)


class RubricError(ValueError):
    """A rubric that does not validate; `problems` are 'file:line: reason' lines."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


# Keys each level accepts, with a description (the rubric reference in the README is tested against these).
RUBRIC_KEYS = {
    "assignment": "id of the assignment (used in results and file names)",
    "title": "human title",
    "reference": "path of the reference module, relative to the rubric file",
    "template": "path of the student template notebook",
    "support": "folder of support modules that notebooks import or %run",
    "submissions": "folder of bundled example submissions",
    "fixtures": "names of reference-module data usable in case expressions",
    "given": "classes and functions the template gives (never a graded name): a notebook without its own gets the "
             "course's (a support module's, else the reference's)",
    "limits": "resource limits (see limits keys)",
    "extraction": "top-level policy overrides: allow_calls, drop",
    "exercises": "the graded exercises",
    "late": "late policy {due, per_day, cap, lms_flag, zone}: a share of the score off per day late, at most cap, "
            "shown apart",
    "incidents": "what an attack the sandbox stopped costs: exercise (default: the exercise it happened in scores 0) "
                 "or none",
}
EXERCISE_KEYS = {
    "id": "canonical name of what the exercise grades",
    "title": "human title",
    "points": "points for the exercise",
    "function": "name of the graded function, constant, or Class.method in the notebook",
    "aliases": "other accepted names",
    "scoring": "proportional (default) or all_or_nothing",
    "check": "default check of its cases: equal, unordered, path, a reference check function, or {name: ..., options}",
    "isolate": "notebook names replaced by the reference's answers during its cases; a method as "
               "{method: Class.method, call: reference expression over its parameters}",
    "hints": "sentences shown when a case fails",
    "error_hints": "list of {match, say, when}: explanations for errors whose text contains match",
    "mistakes": "list of {reference, say}: known wrong implementations and the feedback for them",
    "variants": "list of {reference, say, when}: other accepted conventions (full credit), held to consistently",
    "limits": "per-exercise limit overrides",
    "reduce": "default reduce expression of its cases (e.g. path_states(result) for a Node)",
    "cases": "the cases",
}
CASE_KEYS = {
    "call": "the expression to evaluate (Python)",
    "id": "explicit case id",
    "visibility": "public (default) or hidden",
    "expect": "Python expression of the expected value (default: the reference's answer)",
    "set": "mapping of module globals to expressions, set before the call",
    "probe": "mapping of names to expressions evaluated after the call with `result` bound",
    "reduce": "expression over `result` evaluated in the child to turn the answer into plain data",
    "check": "check of this case (overrides the exercise's)",
    "weight": "weight within the exercise (default 1)",
    "generate": "name of a generator function in the reference module",
    "count": "how many generated cases",
    "seed": "seed of the generator",
}
EXTRACTION_KEYS = {"allow_calls": "notebook functions whose top-level calls are kept",
                   "drop": "top-level names whose assignments are dropped"}


class _Problems:
    """Collects problems so one run reports every mistake in the file, not just the first."""

    def __init__(self, path: Path):
        self.path = path
        self.items: list[str] = []

    def add(self, line: int, reason: str) -> None:
        self.items.append(f"{self.path}:{line}: {reason}")


def suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_keys(node: Marked, allowed: Mapping[str, str], where: str, problems: _Problems) -> None:
    for key in node:
        if key not in allowed:
            problems.add(node.line_of(key), f"{where}: unknown key '{key}'{suggest(key, allowed)}")


def _expression(text: Any, line: int, what: str, problems: _Problems) -> str | None:
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        problems.add(line, f"{what}: expected a Python expression as text, got {type(text).__name__}")
        return None
    text = str(text)
    try:
        ast.parse(text, mode="eval")
    except SyntaxError as error:
        problems.add(line, f"{what}: not a Python expression: {error.msg} in {text!r}")
        return None
    return text


def _names(value: Any, line: int, what: str, problems: _Problems) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.isidentifier() for v in value):
        problems.add(line, f"{what}: expected a list of names")
        return ()
    return tuple(value)


def _texts(value: Any, line: int, what: str, problems: _Problems) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.add(line, f"{what}: expected a list of strings")
        return ()
    return tuple(value)


def _number(value: Any, line: int, what: str, problems: _Problems, *, minimum: float = 0.0,
            maximum: float = math.inf) -> float | None:
    """A number of the rubric, within its bounds: YAML's .nan and .inf are numbers too (NaN points scored a
    class 0, an infinite memory limit ended `grade` in a traceback)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < minimum:
        wanted = "a positive number" if minimum > 0 else f"a number >= {minimum:g}"
        problems.add(line, f"{what}: expected {wanted}, got {value!r}")
        return None
    if value > maximum:
        problems.add(line, f"{what}: at most {maximum:,.0f}, got {value!r} (past it the sandbox cannot apply it)")
        return None
    return value


LATE_KEYS = ["due", "per_day", "cap", "lms_flag", "zone"]


def _late(node: Any, line: int, problems: _Problems) -> LatePolicy | None:
    if node is None:
        return None
    if not isinstance(node, Marked):
        problems.add(line, "late: must be a mapping {due, per_day, cap, lms_flag, zone}")
        return None
    for key in node:
        if key not in LATE_KEYS:
            problems.add(node.line_of(key), f"late: unknown key '{key}'{suggest(key, LATE_KEYS)}")
    zone = None
    if node.get("zone") is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError   # only a rubric with a zone reads the tz database
        try:
            zone = ZoneInfo(str(node.get("zone")))
        except (ZoneInfoNotFoundError, ValueError, OSError):
            problems.add(node.line_of("zone"), f"late: zone {str(node.get('zone'))!r} is no IANA time zone "
                                               f"(e.g. Europe/Berlin, America/New_York, UTC)")
            return None
    due = node.get("due")
    try:
        when = parse_due(str(due), zone) if due is not None else None
    except NoZone:
        local = local_zone_name(os.environ)
        offered = f"zone: {local}, this machine's, if it is the course's" if local and not is_utc_name(local) \
            else "e.g. zone: Europe/Berlin"
        problems.add(node.line_of("due"),
                     f"late: due {str(due)!r} has no time zone and the rubric names none: write its offset "
                     f"({str(due).strip()}{'T23:59' if 'T' not in str(due) else ''}+01:00 in Berlin's winter) or "
                     f"the course's zone beside it under late: ({offered}). No zone is guessed: the grading "
                     f"machine's is often UTC on a server, which charges a course west of Greenwich a day for work "
                     f"handed in on time")
        return None
    except ValueError:
        when = None
    if when is None:
        problems.add(node.line_of("due") if due is not None else node.line,
                     "late: 'due' must be an ISO date-time with its offset, e.g. 2026-11-20T23:59:00+01:00, or "
                     "a date or date-time without one and the course's zone: (zone: Europe/Berlin)")
        return None
    lms_flag = str(node.get("lms_flag", "trust"))
    if lms_flag not in LMS_FLAG:
        problems.add(node.line_of("lms_flag"), "late: lms_flag is 'trust' (a hand-in the LMS flags late with no "
                                               "time of its own is a day late) or 'ignore' (the rubric's due "
                                               "date extends the LMS's)")
        return None
    per_day = _number(node.get("per_day", 0.1), node.line_of("per_day"), "late: per_day", problems, minimum=0.0)
    cap = _number(node.get("cap", 1.0), node.line_of("cap"), "late: cap", problems, minimum=0.0)
    if per_day is None or cap is None:
        return None
    if cap > 1 or per_day > 1:
        problems.add(node.line, "late: per_day and cap are shares of the score, between 0 and 1")
        return None
    return LatePolicy(when, float(per_day), float(cap), lms_flag, zone)


def _limits(node: Any, line: int, base: Limits, where: str, problems: _Problems) -> Limits:
    if node is None:
        return base
    if not isinstance(node, Marked):
        problems.add(line, f"{where}: limits must be a mapping")
        return base
    names = {f.name: f.type for f in fields(Limits)}
    overrides = {}
    for key, value in node.items():
        if key not in names:
            problems.add(node.line_of(key), f"{where}: unknown limit '{key}'{suggest(key, names)}")
            continue
        if key == "mutation_score" and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value) and value > 1:
            problems.add(node.line_of(key), f"{where}: limit 'mutation_score' is a share between 0 and 1, got {value}")
            continue
        number = _number(value, node.line_of(key), f"{where}: limit '{key}'", problems,
                         minimum=0.001 if key.endswith("seconds") or key in ("memory_mb", "case_factor", "disk_mb",
                                                                             "files") else 0.0,
                         maximum=limit_maximum(key))
        if number is not None:
            overrides[key] = int(number) if names[key] == "int" else float(number)
    return base.merged(overrides)


def _check_spec(node: Any, line: int, where: str, problems: _Problems) -> CheckSpec | None:
    if node is None:
        return None
    if isinstance(node, str):
        if not node.isidentifier():
            problems.add(line, f"{where}: check '{node}' is not a name")
            return None
        return CheckSpec(node, {}, line)
    if isinstance(node, Marked):
        name = node.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            problems.add(node.line, f"{where}: check needs a 'name'")
            return None
        return CheckSpec(name, {k: v for k, v in node.items() if k != "name"}, node.line)
    problems.add(line, f"{where}: check must be a name or a mapping with 'name'")
    return None


def _pairs(node: Any, line: int, what: str, problems: _Problems) -> tuple[tuple[str, str], ...]:
    if node is None:
        return ()
    if not isinstance(node, Marked):
        problems.add(line, f"{what}: expected a mapping of name: expression")
        return ()
    pairs = []
    for key, value in node.items():
        if not isinstance(key, str) or not key.isidentifier():
            problems.add(node.line_of(key), f"{what}: '{key}' is not a name")
            continue
        text = _expression(value, node.line_of(key), f"{what} '{key}'", problems)
        if text is not None:
            pairs.append((key, text))
    return tuple(pairs)


def _case(node: Any, line: int, where: str, problems: _Problems) -> CaseSpec | None:
    if not isinstance(node, Marked):
        problems.add(line, f"{where}: a case must be a mapping with 'call'")
        return None
    _check_keys(node, CASE_KEYS, where, problems)
    if "call" not in node:
        problems.add(node.line, f"{where}: case has no 'call'")
        return None
    call = _expression(node["call"], node.line_of("call"), f"{where}: call", problems)
    visibility = node.get("visibility", "public")
    if visibility not in VISIBILITIES:
        problems.add(node.line_of("visibility"),
                     f"{where}: unknown visibility '{visibility}'{suggest(visibility, VISIBILITIES)}")
    expect = None
    if "expect" in node:
        expect = _expression(node["expect"], node.line_of("expect"), f"{where}: expect", problems)
    weight = _number(node.get("weight", 1), node.line_of("weight"), f"{where}: weight", problems)
    generate, count, seed = node.get("generate"), 0, 0
    if generate is not None:
        if not isinstance(generate, str) or not generate.isidentifier():
            problems.add(node.line_of("generate"), f"{where}: generate must name a generator function")
        count = node.get("count", 10)
        seed = node.get("seed", 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.add(node.line_of("count"), f"{where}: count must be a positive integer, got {count!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            problems.add(node.line_of("seed"), f"{where}: seed must be an integer, got {seed!r}")
    elif "count" in node or "seed" in node:
        key = "count" if "count" in node else "seed"
        problems.add(node.line_of(key), f"{where}: '{key}' only applies to generated cases (add 'generate')")
    case_id = node.get("id")
    if case_id is not None and not isinstance(case_id, (str, int)):
        problems.add(node.line_of("id"), f"{where}: id must be text")
    # Validated before giving up on a bad call, so every problem of the case is reported at once.
    settings = _pairs(node.get("set"), node.line_of("set"), f"{where}: set", problems)
    probes = _pairs(node.get("probe"), node.line_of("probe"), f"{where}: probe", problems)
    check = _check_spec(node.get("check"), node.line_of("check"), where, problems)
    reduce = None
    if "reduce" in node:
        reduce = _expression(node["reduce"], node.line_of("reduce"), f"{where}: reduce", problems)
    if call is None:
        return None
    return CaseSpec(
        line=node.line, call=call, id=None if case_id is None else str(case_id), visibility=visibility,
        expect=expect, set=settings, probe=probes, reduce=reduce, check=check,
        weight=weight if weight is not None else 1.0, generate=generate,
        count=count if isinstance(count, int) else 0, seed=seed if isinstance(seed, int) else 0,
        seeded="seed" in node)


def _listed(node: Any, line: int, what: str, problems: _Problems) -> list[tuple[int, Any]]:
    """A rubric list's entries with their lines (none when absent; a node that is no list is a problem)."""
    if node is None:
        return []
    if not isinstance(node, MarkedList):
        problems.add(line, f"{what}: expected a list")
        return []
    return [(node.line_of(index), item) for index, item in enumerate(node)]


def _records(node: Any, line: int, keys: tuple[str, str], what: str, problems: _Problems) -> list[tuple]:
    records = []
    for item_line, item in _listed(node, line, what, problems):
        if not isinstance(item, Marked) or set(item) != set(keys):
            unknown = [f"unknown key '{key}'{suggest(key, set(keys) - set(item))}; " for key in item
                       if key not in keys] if isinstance(item, Marked) else []
            problems.add(item_line, f"{what}: {''.join(unknown)}each entry needs exactly the keys {', '.join(keys)}")
            continue
        if not all(isinstance(item[k], str) for k in keys):
            problems.add(item_line, f"{what}: {' and '.join(keys)} must be text")
            continue
        records.append((*(item[k] for k in keys), item_line))
    return records


ERROR_HINT_KEYS = {"match": "text the error's 'Type: message' must contain",
                   "say": "the explanation added to the error's message",
                   "when": "mapping exercise id: right or wrong; shown only if that earlier exercise earned all its "
                           "points (right) or lost some (wrong)"}
VERDICTS = ("right", "wrong")


def _error_hints(node: Any, line: int, where: str, problems: _Problems) -> tuple[ErrorHint, ...]:
    hints = []
    for item_line, item in _listed(node, line, f"{where}: error_hints", problems):
        unknown = [f"unknown key '{key}'{suggest(key, set(ERROR_HINT_KEYS) - set(item))}; " for key in item
                   if key not in ERROR_HINT_KEYS] if isinstance(item, Marked) else []
        if unknown or not isinstance(item, Marked) or not {"match", "say"} <= set(item):
            problems.add(item_line, f"{where}: error_hints: {''.join(unknown)}each entry needs the keys match, say "
                                    "(and may have when)")
            continue
        if not all(isinstance(item[key], str) for key in ("match", "say")):
            problems.add(item_line, f"{where}: error_hints: match and say must be text")
            continue
        when = _when(item, f"{where}: error hint", lambda verdict: verdict in VERDICTS, " or ".join(VERDICTS),
                     problems)
        hints.append(ErrorHint(item["match"], item["say"], when, item_line))
    return tuple(hints)


def _when(item: Marked, what: str, accepted: Callable[[Any], bool], accepted_words: str,
          problems: _Problems) -> tuple[tuple[str, str], ...]:
    """An entry's `when` (a variant's, an error hint's): (earlier exercise id, what it was judged) pairs, () when
    it has none or a wrong one (said in `problems`). load_rubric checks that each exercise is listed earlier."""
    condition = item.get("when")
    if condition is None:
        return ()
    if not isinstance(condition, Marked) or not all(isinstance(k, str) and accepted(v) for k, v in condition.items()):
        problems.add(item.line_of("when"), f"{what} 'when' must map exercise ids to {accepted_words}")
        return ()
    return tuple(condition.items())


VARIANT_KEYS = {"reference": "reference function whose answers are also accepted",
                "say": "note shown to a student whose answers follow it",
                "when": "mapping exercise id: function; accepted only if that exercise consistently matched it"}


ISOLATE_METHOD_KEYS = {"method": "Class.method of the notebook, answered by the reference",
                       "call": "expression over the reference's names and the method's parameters that answers it"}


def _isolate(node: Any, line: int, where: str, problems: _Problems) -> tuple[list[str], tuple[IsolatedMethod, ...]]:
    """`isolate`: function names, and methods as {method: Class.method, call: ...}."""
    if node is None:
        return [], ()
    items = [node] if isinstance(node, (str, Marked)) else node
    if not isinstance(items, list):
        problems.add(line, f"{where}: isolate: expected a list of names")
        return [], ()
    names: list[str] = []
    methods: list[IsolatedMethod] = []
    for index, item in enumerate(items):
        item_line = items.line_of(index) if isinstance(items, MarkedList) else line
        if isinstance(item, str) and item.isidentifier():
            names.append(item)
        elif isinstance(item, str) and _is_method(item):
            problems.add(item_line, f"{where}: isolate: the method {item} needs a call the reference answers it "
                                    f"with: {{method: {item}, call: <expression over its parameters>}}")
        elif isinstance(item, Marked):
            _check_keys(item, ISOLATE_METHOD_KEYS, f"{where}: isolate", problems)
            method, call = item.get("method"), item.get("call")
            if not (isinstance(method, str) and _is_method(method)):
                problems.add(item_line, f"{where}: isolate: 'method' must be Class.method, got {method!r}")
            elif not isinstance(call, str) or not _parses(call):
                problems.add(item_line, f"{where}: isolate: method {method} needs 'call', a Python expression")
            else:
                names.append(method)
                methods.append(IsolatedMethod(method, call, item_line))
        else:
            problems.add(item_line, f"{where}: isolate: expected a list of names")
    return names, tuple(methods)


def _is_method(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 2 and all(part.isidentifier() for part in parts)


def _parses(code: str) -> bool:
    try:
        ast.parse(code, mode="eval")
    except SyntaxError:
        return False
    return True


def called_method(call: str) -> tuple[str, str] | None:
    """(Class, method) when a case's call is `Class(...).method(...)`, else None."""
    try:
        tree = ast.parse(call, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Attribute) and isinstance(tree.func.value, ast.Call) \
            and isinstance(tree.func.value.func, ast.Name):
        return tree.func.value.func.id, tree.func.attr
    return None


def _variants(node: Any, line: int, where: str, problems: _Problems) -> tuple[Variant, ...]:
    variants = []
    for item_line, item in _listed(node, line, f"{where}: variants", problems):
        if not isinstance(item, Marked) or not isinstance(item.get("reference"), str) \
                or not item["reference"].isidentifier():
            problems.add(item_line, f"{where}: variants: each entry needs 'reference: <function>'")
            continue
        _check_keys(item, VARIANT_KEYS, f"{where}: variant", problems)
        say = item.get("say", "")
        if not isinstance(say, str):
            problems.add(item.line_of("say"), f"{where}: variant 'say' must be text")
            say = ""
        when = _when(item, f"{where}: variant", lambda function: isinstance(function, str) and function.isidentifier(),
                     "functions", problems)
        variants.append(Variant(item["reference"], say, when, item_line))
    return tuple(variants)


def _exercise(node: Any, line: int, limits: Limits, problems: _Problems) -> Exercise | None:
    if not isinstance(node, Marked):
        problems.add(line, "exercise must be a mapping")
        return None
    exercise_id = node.get("id")
    if not isinstance(exercise_id, str) or not exercise_id:
        problems.add(node.line, "exercise has no 'id'")
        return None
    where = f"exercise '{exercise_id}'"
    _check_keys(node, EXERCISE_KEYS, where, problems)
    function = node.get("function", exercise_id)
    if not isinstance(function, str) or not all(part.isidentifier() for part in function.split(".")) \
            or function.count(".") > 1:
        problems.add(node.line_of("function"), f"{where}: function must be a name or Class.method")
        function = exercise_id
    points = _number(node.get("points", 1), node.line_of("points"), f"{where}: points", problems)
    scoring = node.get("scoring", "proportional")
    if scoring not in SCORINGS:
        problems.add(node.line_of("scoring"), f"{where}: unknown scoring '{scoring}'{suggest(scoring, SCORINGS)}")
    check = _check_spec(node.get("check", "equal"), node.line_of("check"), where, problems)
    cases_node = node.get("cases")
    cases: list[CaseSpec] = []
    if not isinstance(cases_node, MarkedList) or not cases_node:
        problems.add(node.line_of("cases"), f"{where}: needs a non-empty list of cases")
    else:
        for index, item in enumerate(cases_node):
            case = _case(item, cases_node.line_of(index), f"{where}, case {index + 1}", problems)
            if case is not None:
                cases.append(case)
    first_line: dict[str, int] = {}
    for case in cases:
        if case.id is None:
            continue
        if case.id in first_line:
            problems.add(case.line, f"{where}: duplicate case id '{case.id}' (first at line {first_line[case.id]})")
        first_line.setdefault(case.id, case.line)
    isolated, methods = _isolate(node.get("isolate"), node.line_of("isolate"), where, problems)
    return Exercise(
        id=exercise_id, title=str(node.get("title", exercise_id)), points=points or 0.0, function=function,
        aliases=_names(node.get("aliases"), node.line_of("aliases"), f"{where}: aliases", problems),
        scoring=scoring, check=check or CheckSpec("equal"),
        isolate=tuple(isolated), methods=methods,
        hints=_texts(node.get("hints"), node.line_of("hints"), f"{where}: hints", problems),
        error_hints=_error_hints(node.get("error_hints"), node.line_of("error_hints"), where, problems),
        mistakes=tuple(Mistake(r, s, ln) for r, s, ln in _records(
            node.get("mistakes"), node.line_of("mistakes"), ("reference", "say"), f"{where}: mistakes", problems)),
        variants=_variants(node.get("variants"), node.line_of("variants"), where, problems),
        cases=tuple(cases),
        limits=_limits(node.get("limits"), node.line_of("limits"), limits, where, problems),
        line=node.line,
        reduce=_expression(node["reduce"], node.line_of("reduce"), f"{where}: reduce", problems)
        if "reduce" in node else None)


def _path(root: Path, node: Marked, key: str, problems: _Problems, *, required: bool) -> Path | None:
    value = node.get(key)
    if value is None:
        if required:
            problems.add(node.line, f"missing required key '{key}'")
        return None
    if not isinstance(value, str):
        problems.add(node.line_of(key), f"'{key}' must be a path")
        return None
    path = (root / value).resolve()
    if not path.exists():
        problems.add(node.line_of(key), f"'{key}': {value} does not exist (looked for {path})")
    return path


def reference_in(support: Path, reference: Path) -> str | None:
    """The file of the support folder (its path there) that is the reference itself, through a link, a hard link or
    the folder being the reference's: the sandbox is given the folder's modules (links followed), so a
    support/course.py linked to the reference let a notebook `from course import nextStates` (found by
    /tmp/incheck's probe: load_rubric took it, and the hash, which skips links, did not see it)."""
    if not support.is_dir():
        return None
    for folder, subfolders, names in os.walk(support):
        subfolders.sort()
        for name in sorted(names):
            path = Path(folder) / name
            try:
                if os.path.samefile(path, reference):
                    return path.relative_to(support).as_posix()
            except OSError:
                continue
    return None


def support_reads(folder: Path | None) -> set[str]:
    """Every name the support modules read: a notebook that %runs one provides them (e.g. nextStates)."""
    reads: set[str] = set()
    if folder is None or not folder.is_dir():
        return reads
    for path in sorted(folder.iterdir()):
        sources: list[str] = []
        try:
            if path.suffix == ".py":
                sources = [path.read_text(encoding="utf-8")]
            elif path.suffix == ".ipynb":
                import json
                cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
                sources = ["".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source"))
                           for c in cells if c.get("cell_type") == "code"]
        except (OSError, ValueError, AttributeError):
            continue
        for source in sources:
            reads.update(_source_reads(source))
    return reads


def _source_reads(source: str) -> frozenset[str]:
    """The names one support source reads and does not bind (none for a source that cannot be parsed)."""
    try:
        return _parsed_source_reads(source)
    except MemoryError:    # not remembered: the next ask, with memory to spare, parses it
        return frozenset()


@functools.lru_cache(maxsize=64)
def _parsed_source_reads(source: str) -> frozenset[str]:
    """_source_reads, remembered by the text, so an edited module is parsed again: load_rubric and the plan
    (slice_policy) both ask, each on the coordinator's path to the first case. A MemoryError is raised, never
    remembered as "reads nothing"."""
    try:
        code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return frozenset()
    from grader.syntax.analysis import statement_reads
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound |= {a.asname or a.name.split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return frozenset(name for node in tree.body for name in statement_reads(node) if name not in bound)


def _roots(exercises: list[Exercise], support: Path | None) -> frozenset[str]:
    """What grading needs from a notebook: the graded names, every name a case calls, sets or reduces with,
    and the names the support modules read. The top-level dependency slice starts from these."""
    from grader.syntax.calls import free_names
    roots: set[str] = set()
    for exercise in exercises:
        roots.update(name.split(".")[0] for name in exercise.names)
        roots.update(name.split(".")[0] for name in exercise.isolate)
        for code in (exercise.reduce, *(c.call for c in exercise.cases), *(c.reduce for c in exercise.cases),
                     *(code for c in exercise.cases for _, code in c.probe)):
            if code:
                try:
                    roots.update(free_names(code))
                except SyntaxError:
                    pass
        roots.update(name for c in exercise.cases for name, _ in c.set)
    return frozenset(roots | support_reads(support))


def hash_course_files(digest: Any, reference: Path, support: Path | None) -> None:
    """Add each course file (see course_files) to a hashlib `digest`: its name, then its bytes. A reference
    without any leaves the digest as it was, so its hash (and the caches made under it) stays valid."""
    for name, course_file in course_files(reference, support):
        digest.update(b"\0" + name.encode("utf-8", "surrogatepass") + b"\0" + _bytes_or_nothing(course_file))


def course_files(reference: Path, support: Path | None) -> list[tuple[str, Path]]:
    """The course's own modules that expected values and results depend on besides the rubric and the reference,
    each with the name it is hashed under: the modules the reference imports from its own folder or the support
    folder (found in its import statements, and theirs, transitively: a module imported by a computed name is
    not seen), and every file of the support folder (support_files: the sandbox gives its modules to students' code,
    and its data files are what the reference reads).
    Without them in the rubric hash, editing one left cached expected values and graded results standing."""
    folders = [folder for folder in (reference.parent, support) if folder is not None and folder.is_dir()]
    found: dict[Path, str] = {}
    pending = [reference]
    names = _course_names(folders)
    while pending:
        for name in _imported_names(pending.pop(), names):
            for module in _course_module(name, folders):
                if module not in found and module != reference:
                    found[module] = _course_name(module, reference.parent, support)
                    pending.append(module)
    if support is not None and support.is_dir():
        for module in support_files(support):
            found.setdefault(module, _course_name(module, reference.parent, support))
    return sorted(((name, module) for module, name in found.items()), key=lambda item: item[0])


def support_files(support: Path) -> list[Path]:
    """Every file of the support folder, in its subfolders too: the modules and notebooks students import, and the
    data files a notebook and the reference read (a word list, a maze). A data file fixed mid-term left the hash, so
    the cached expected values and graded results, as they were. The one list of the folder: the hash, the modules
    the sandbox gives (given.support_texts) and the data files all read it, so what the students' code gets is what
    the hash covers. A link to a file is listed (the file it names is hashed: a course's shared module linked in
    and edited mid-term regrades; the old list skipped links that the sandbox still gave); a link to a folder is
    not entered (no loops). Hidden entries and bytecode caches are left out."""
    found = []
    for folder, subfolders, names in os.walk(support):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            path = Path(folder) / name
            if not name.startswith(".") and path.is_file():
                found.append(path)
    return found


# What the sandbox copies into every student's working folder (data_files): bounded so a course's folder cannot
# fill the scratch (it counts toward disk_mb and files) or the load request (wire.MAX_FRAME) of every sandbox.
DATA_FILES_MOST = 64
DATA_BYTES_MOST = 8 * 1024 * 1024
_MODULE_ENDS = (".py", ".ipynb", ".pyc")


def data_files(support: Path, course: tuple[Path, ...] = ()) -> list[Path]:
    """The support folder's data files (support_files that are no module or notebook: a word list, a maze), which
    the sandbox puts in each student's working folder as Jupyter has them beside the notebook. `course`: files
    that are never data (the rubric, the reference), even under another name through a hard link. A link whose
    file is outside the folder is left out: students get what the folder holds, not what a link reaches (the
    course's other files, its answers)."""
    found = []
    inside = os.path.realpath(support)
    for path in support_files(support):
        if path.name.endswith(_MODULE_ENDS):
            continue
        if not withheld(path, inside, course):
            found.append(path)
    return found


def withheld(path: str | Path, inside: str, course: tuple[Path, ...]) -> bool:
    """Whether a file of the support folder (`inside`: its real path) is kept from the students' code, what the
    sandbox's data files (data_files) and the Gradescope zip's copy of the folder both leave out: a link to a data
    file outside the folder (students get what the folder holds, not what a link reaches; a module's link is
    kept, given as support_texts reads it), or one of `course` (the rubric, the reference) under any name, a hard
    link too, or anything under a results folder or cache the grader wrote there (GRADER_MARKS), or a gradebook
    kept there (_gradebook). A file that cannot be compared (a link to nothing, a loop of links) is withheld
    too: both callers give the same answer, and it is the one that cannot ship the course's files."""
    if os.path.islink(path) and not str(path).endswith((".py", ".ipynb")) \
            and not os.path.realpath(path).startswith(inside + os.sep):
        return True
    if _in_grader_folder(path, inside) or _gradebook(path):
        return True
    try:
        return any(os.path.samefile(path, other) for other in course if other.exists())
    except OSError:
        return True


# The files by which the grader marks a folder it writes: a results folder's (intake.gather.RESULTS_MARK), a sealed
# cache's key (plan.sealed.KEY_FILE). What such a folder holds is other students' results or expected values.
GRADER_MARKS = (".assignment", ".key")


def _gradebook(path: str | Path) -> bool:
    """Whether `path` is a gradebook (its tables: every student's results) or its -wal/-shm/-journal, kept in the
    support folder by a `grade --gradebook` there: no mark names it and no grading hides it."""
    import sqlite3
    name = str(path)
    for end in ("-wal", "-shm", "-journal"):
        name = name.removesuffix(end)
    try:
        with open(name, "rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                return False
    except OSError:
        return False
    try:
        db = sqlite3.connect(Path(name).resolve().as_uri() + "?mode=ro", uri=True, timeout=5)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return {"schema_version", "submissions", "results"} <= tables


def _in_grader_folder(path: str | Path, inside: str) -> bool:
    """Whether `path` is, or lies under, a folder of the support folder the grader wrote (`grade --out` or a
    --cache put there): the kit and the Gradescope zip ship what is withheld from neither, and only the grading's
    own --out/--cache are hidden by path (given.visible_data)."""
    folder = str(path) if os.path.isdir(path) and not os.path.islink(path) else os.path.dirname(str(path))
    while True:
        if any(os.path.lexists(os.path.join(folder, mark)) for mark in GRADER_MARKS):
            return True
        if os.path.realpath(folder) == inside:
            return False
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def data_problems(support: Path, course: tuple[Path, ...], limits: Limits) -> list[str]:
    """What makes the support folder's data files too many or too big for the sandbox, naming the file past the
    bound: half the scratch (disk_mb, files) at most, and DATA_FILES_MOST, DATA_BYTES_MOST."""
    most_files = min(DATA_FILES_MOST, limits.files // 2)
    most_bytes = min(DATA_BYTES_MOST, int(limits.disk_mb * 1024 * 1024) // 2)
    total = 0
    for count, path in enumerate(data_files(support, course), start=1):
        name = path.relative_to(support).as_posix()
        if count > most_files:
            return [f"support: {name} is data file {count}, past the {most_files} each student's sandbox is given "
                    f"(the rest of the folder's data files are left out): keep fewer data files there"]
        try:
            total += path.stat().st_size
        except OSError as error:
            return [f"support: {name} cannot be read: {error.strerror}"]
        if total > most_bytes:
            return [f"support: {name} brings the data files to {total} bytes, past the {most_bytes} each student's "
                    f"sandbox is given (half its disk_mb, at most {DATA_BYTES_MOST}): keep big data out of the "
                    f"support folder"]
    return []


def _course_name(module: Path, references: Path, support: Path | None) -> str:
    """A course file's name in the hash: its path from the reference's folder, or from the support folder."""
    if support is not None and module.is_relative_to(support):
        return "support/" + module.relative_to(support).as_posix()
    return module.relative_to(references).as_posix()


def _imported_names(module: Path, course: frozenset[bytes] | None = None) -> list[str]:
    """The top-level names of the absolute imports anywhere in a module; none when it cannot be read or parsed
    (the reference's own import then says what is wrong). With `course` (_course_names), a module that spells
    none of those names is not parsed: it can import no course module (every other name it imports finds no
    file), and a reference's parse is ~7 ms of every `grader grade` start-up (the Taoistic one's 28 KB)."""
    try:
        source = module.read_bytes()
    except OSError:
        return []
    if course is not None and source.isascii() and b"coding" not in b"\n".join(source.split(b"\n", 2)[:2]) \
            and not any(name in source for name in course):
        return []
    return list(_imports_in(source, str(module)))


def _course_names(folders: list[Path]) -> frozenset[bytes] | None:
    """Every name an import could find a course module by in `folders` (_course_module: name.py or a package
    name/), as ASCII bytes: an ASCII source with no PEP 263 declaration (that could decode an escape into a name)
    that holds none of them imports none. None (so every module is parsed) when that does not follow: a folder
    that cannot be listed, a name that is not ASCII (an identifier's NFKC form), or a folder whose file system
    folds case (`import set` would find Set.py)."""
    names: set[bytes] = set()
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            return None
        listed = set(entries)
        for entry in entries:
            if not entry.isascii():
                return None
            names.add(entry.removesuffix(".py").encode("ascii"))
        cased = next((entry for entry in entries if entry.swapcase() not in listed), None)
        if cased is not None and os.path.lexists(os.path.join(folder, cased.swapcase())):
            return None
    return frozenset(name for name in names if name)


@functools.lru_cache(maxsize=64)
def _imports_in(source: bytes, filename: str) -> tuple[str, ...]:
    """Keyed by the bytes, so an edited module is parsed again: load_rubric and load_reference both ask, and a
    worker asks again for the plan. Only statements are walked (an import is one): a tenth of ast.walk's nodes."""
    try:
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    names: list[str] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
        for part in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, part, None)
            if isinstance(children, list):
                pending.extend(reversed(children))
    return tuple(names)


def _course_module(name: str, folders: list[Path]) -> list[Path]:
    """The files of the module `name` as the reference's import finds it first in its folders: name.py, or
    every .py of the package name/; nothing when it is not the course's (the standard library, a package)."""
    for folder in folders:
        if (folder / f"{name}.py").is_file():
            return [folder / f"{name}.py"]
        if (folder / name / "__init__.py").is_file():
            return sorted(path for path in (folder / name).rglob("*.py") if path.is_file())
    return []


def _bytes_or_nothing(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def load_rubric(path: str | Path) -> Rubric:
    """Parse and structurally validate a rubric; raises RubricError listing every problem found."""
    path = Path(path)
    try:
        node = load_marked(path)
    except YamlError as error:
        raise RubricError([str(error)]) from None
    problems = _Problems(path)
    if not isinstance(node, Marked):
        raise RubricError([f"{path}:{getattr(node, 'line', 1)}: a rubric must be a YAML mapping"])
    _check_keys(node, RUBRIC_KEYS, "rubric", problems)
    assignment = node.get("assignment")
    if not isinstance(assignment, str) or not assignment:
        problems.add(node.line_of("assignment"), "missing 'assignment' (the assignment id)")
        assignment = path.stem
    root = path.parent
    reference = _path(root, node, "reference", problems, required=True)
    limits = _limits(node.get("limits"), node.line_of("limits"), Limits(), "rubric", problems)
    extraction = node.get("extraction")
    policy = Policy()
    if extraction is not None:
        if not isinstance(extraction, Marked):
            problems.add(node.line_of("extraction"), "extraction must be a mapping")
        else:
            _check_keys(extraction, EXTRACTION_KEYS, "extraction", problems)
            policy = Policy(
                allow_calls=frozenset(_names(extraction.get("allow_calls"), extraction.line_of("allow_calls"),
                                             "extraction: allow_calls", problems)),
                drop=frozenset(_names(extraction.get("drop"), extraction.line_of("drop"),
                                      "extraction: drop", problems)))
    exercises_node = node.get("exercises")
    exercises: list[Exercise] = []
    if not isinstance(exercises_node, MarkedList) or not exercises_node:
        problems.add(node.line_of("exercises"), "needs a non-empty list of 'exercises'")
    else:
        for index, item in enumerate(exercises_node):
            exercise = _exercise(item, exercises_node.line_of(index), limits, problems)
            if exercise is not None:
                exercises.append(exercise)
    seen: dict[str, int] = {}
    for exercise in exercises:
        if exercise.id in seen:
            problems.add(exercise.line, f"duplicate exercise id '{exercise.id}' (first at line {seen[exercise.id]})")
        conditions = [(variant.line, f"variant '{variant.reference}'", variant.when) for variant in exercise.variants]
        conditions += [(hint.line, f"error hint '{hint.match}'", hint.when) for hint in exercise.error_hints]
        for condition_line, what, when in conditions:
            for earlier, _ in when:
                if earlier not in seen:   # judged in rubric order: a condition can only look back
                    problems.add(condition_line, f"exercise '{exercise.id}': {what} depends on '{earlier}', which is "
                                                 "not an exercise listed before it")
        seen.setdefault(exercise.id, exercise.line)
    template = _path(root, node, "template", problems, required=False)
    support = _path(root, node, "support", problems, required=False)
    if reference is not None and support is not None and (held := reference_in(support, reference)) is not None:
        problems.add(node.line_of("support"), f"support: {held} is the reference {reference.name} (a link or the same "
                                              "file): the support folder goes to the students' code, and with it the "
                                              "answers and hidden inputs; keep the reference out of it")
    if reference is not None and support is not None and support.is_dir():
        for problem in data_problems(support, (path, reference), limits):
            problems.add(node.line_of("support"), problem)
    submissions = _path(root, node, "submissions", problems, required=False)
    fixtures_node = node.get("fixtures")
    fixtures = _names(fixtures_node, node.line_of("fixtures"), "fixtures", problems)
    fixture_lines = tuple(fixtures_node.line_of(index) if isinstance(fixtures_node, MarkedList)
                          else node.line_of("fixtures") for index in range(len(fixtures)))
    given = _names(node.get("given"), node.line_of("given"), "given", problems)
    late = _late(node.get("late"), node.line_of("late"), problems)
    incidents = node.get("incidents", incident_facts.DEFAULT_POLICY)
    if incidents not in incident_facts.POLICIES:
        problems.add(node.line_of("incidents"), f"incidents: must be one of {', '.join(incident_facts.POLICIES)}, "
                                                f"not {str(incidents)[:40]!r}")
    if problems.items:
        raise RubricError(problems.items)
    policy = replace(policy, roots=_roots(exercises, support))
    assert reference is not None
    digest = hashlib.sha256(path.read_bytes())
    digest.update(b"\0" + reference.read_bytes())
    hash_course_files(digest, reference, support)
    return Rubric(
        path=path, sha256=digest.hexdigest(), assignment=assignment, title=str(node.get("title", assignment)),
        reference=reference, template=template, support=support, submissions=submissions,
        fixtures=fixtures, limits=limits, policy=policy, exercises=tuple(exercises), fixture_lines=fixture_lines,
        late=late, incidents=str(incidents), given=given, given_line=node.line_of("given"))
