"""Student kits: a rubric's public cases with their expected values, to self-check a notebook without the reference.

A kit is one JSON file a course hands out. It is built on the trusted side (rubric and reference at hand) and
read on the student's side, where only the grader package is installed. It holds no reference code and no
hidden case: only the public cases, exactly as the sandbox receives them (the child-side expression and its
placeholder values), their expected answers and the answers of the known mistakes; hidden cases are counted.

Checks that are functions of the reference (a rubric's own check, the `path` check's `next_states`) cannot
run from a kit. Such a case falls back to the precomputed answer: the reference's own answer passes ("checked
against the reference answer; the full check runs after submission"), a provably wrong one fails (a path
that does not begin at the start), and any other answer is `unverified`: reported, counted apart, never as
a failure. Likewise a case of an exercise with isolated helpers that fails while one of those helpers fails
its own cases is `unverified`: after submission it also runs with the course's helpers.

Two runners share the judging: `grader.kit.check.check_with_kit` (the notebook in the grader's sandbox)
and `check` here (the functions of the student's live kernel, in process).
"""

from __future__ import annotations

import ast
import base64
import builtins
import contextlib
import hashlib
import inspect
import json
import random
import sys
import textwrap
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from grader import __version__
from grader import codec
from grader.intake.warning import GraderWarning, Kind
from grader.judge.feedback import renoted, same_failures
from grader.kit.answers import MethodAnswers, TableOracle
from grader.store import status as vocabulary
from grader.store.results import advised
from grader.store.status import FAILING, UNVERIFIED
from grader.sandbox.alarm import PACKAGE_FOLDERS, TimeLimit, can_interrupt

if TYPE_CHECKING:   # types only: importing the kit loads neither the grading pipeline nor the sandbox
    from grader.judge.grading import CaseRunner
    from grader.sandbox.process import CaseRequest, Oracle, Outcome

KIT_KIND = "puzzle-grader-kit"
KIT_FORMAT = 1
FULL_CHECKS = ("equal", "unordered")     # checks that need nothing of the reference: they run in full from a kit
FALLBACK_PASS = "checked against the reference answer; the full check runs after submission"
PATH_UNVERIFIED = ("could not be verified here (your path differs from the reference's); "
                   "it will be checked after submission")


class KitError(ValueError):
    """A kit file that cannot be used: unreadable, not a kit, or from an incompatible grader."""


# ---------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class KitCheck:
    """How a case is judged from the kit: in full (`equal`, `unordered`) or against the reference's answer."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    start: Any = None            # path check: the start state (wire), when it is data
    goal: Any = None             # path check: the goal (wire), only when reaching it means equality
    optimal: bool = False        # path check: full credit only for the reference's length
    known: tuple["KnownVerdict", ...] = ()   # the check's verdicts on anticipated answers, computed when built
    public: bool = False         # the rubric made this check public: its code is in the kit, it runs in full

    @property
    def full(self) -> bool:
        return self.name in FULL_CHECKS or self.public


@dataclass(frozen=True)
class KnownVerdict:
    """What the full check said, when the kit was built, about an answer students are likely to give."""

    answer: Any                  # wire
    passed: bool
    fraction: float
    message: str


@dataclass(frozen=True)
class KitCase:
    id: str
    call: str                                 # as a student reads it
    code: str                                 # the child-side expression (graded names canonical)
    values: Mapping[str, Any]                 # placeholder -> wire
    set: Mapping[str, Any]                    # module global -> wire
    probes: Mapping[str, str]
    reduce: str | None
    timeout: float
    weight: float
    check: KitCheck
    expected: Any                             # wire
    mistakes: Mapping[str, Any]               # known mistake -> its answer (wire); absent where it raised
    data: Mapping[str, Any] = field(default_factory=dict)   # public checks: variables and option names (wire)
    variants: Mapping[str, Any] = field(default_factory=dict)   # accepted variant -> its answer (wire)
    inputs: Mapping[str, Any] = field(default_factory=dict)     # the course fixtures the call uses (wire), shown


@dataclass(frozen=True)
class KitExercise:
    id: str
    title: str
    points: float
    function: str
    aliases: tuple[str, ...]
    scoring: str
    hints: tuple[str, ...]
    error_hints: tuple[tuple[str, str], ...]  # (match, say)
    mistakes: tuple[tuple[str, str], ...]     # (name, say)
    isolate: tuple[str, ...]
    max_timeouts: int
    hidden_cases: int
    cases: tuple[KitCase, ...]
    variants: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = ()   # (name, say, when)
    methods: tuple[MethodAnswers, ...] = ()   # isolated methods the kit answers with the course's answers

    @property
    def names(self) -> tuple[str, ...]:
        return (self.function, *self.aliases)


@dataclass(frozen=True)
class Kit:
    assignment: str
    title: str
    rubric_sha256: str
    grader_version: str
    limits: Mapping[str, float]               # load_seconds, submission_seconds, memory_mb, output_bytes
    allow_calls: tuple[str, ...]
    drop: tuple[str, ...]
    known_globals: tuple[str, ...]            # course globals a graded function may read without a note
    support: Mapping[str, str]                # support modules notebooks import or %run, by name
    exercises: tuple[KitExercise, ...]
    roots: tuple[str, ...] | None = None      # what grading needs from a notebook (the extraction slice's roots)
    sha256: str = ""                          # of the kit's content
    path: Path | None = None
    warnings: tuple[GraderWarning, ...] = ()
    public_source: str = ""                   # the course's public check code (grader.kit.public), or none
    # The course's data files (support folder path -> bytes), put in the notebook's working folder as grading does.
    data: Mapping[str, bytes] = field(default_factory=dict)
    # The rubric's `given` names -> the course's code for each (plan.given: what stands in where a notebook has
    # none, as in grading; never a graded name, never the reference's answers).
    given: Mapping[str, str] = field(default_factory=dict)

    @property
    def hidden(self) -> dict[str, int]:
        """Hidden cases per exercise: counted, never shown."""
        return {exercise.id: exercise.hidden_cases for exercise in self.exercises}


# ------------------------------------------------------------------------------------- building (trusted)


def _plain(value: Any) -> Any:
    """Rubric option values as JSON data (YAML scalars, lists and mappings)."""
    return json.loads(json.dumps(value, default=str))


def _path_facts(plan: Any, case: Any) -> dict[str, Any]:
    """What the path check would compute from the rubric's data, precomputed: start and goal states (the
    check's own options, read as it reads them)."""
    from grader.checks.registry import GOAL, MATCHES, OPTIMAL, START, Option
    from grader.syntax.calls import ExpressionError, call_arguments
    options = case.check.options
    data = plan.data(case)
    args, kwargs = call_arguments(case.call, data) or ((), {})

    def value(option: Option) -> Any:
        try:
            found = option.evaluate(options, data, args, kwargs)
            return None if found is None else codec.encode(found)
        except (ExpressionError, codec.CodecError):
            return None   # not data (it names submission code): the kit cannot test it

    # With a `matches` function of the reference, reaching the goal is not equality: not testable here.
    return {"start": value(START), "goal": None if MATCHES.read(options) else value(GOAL),
            "optimal": bool(OPTIMAL.read(options))}


def _known_verdicts(plan: Any, case: Any) -> list[dict[str, Any]]:
    """The full check's verdicts on answers students are likely to give: None and each known mistake's answer.

    Data, not code: only for checks whose verdict depends on nothing the student's run adds (probes), so the
    verdict on the same answer after submission is the same.
    """
    from grader.syntax.calls import call_arguments
    from grader.checks.registry import CHECKS, CheckContext, accepts, resolve
    name = case.check.name
    function = CHECKS.get(name) or getattr(plan.reference, name)
    if case.probe and name not in CHECKS and accepts(function, "probes"):
        return []
    check = resolve(name, plan.reference)
    expected = plan.expected[case.id]
    data = plan.data(case)
    args, kwargs = call_arguments(case.call, data) or ((), {})
    answers: dict[str, Any] = {}
    for answer in (None, *(wrong for _, wrong in expected.mistakes)):
        if codec.same(expected.value, answer) is not None:
            answers.setdefault(codec.canonical(answer), answer)
    known = []
    for answer in answers.values():
        context = CheckContext(expected=expected.value, got=answer, args=args, kwargs=kwargs, probes={},
                               variables=dict(case.variables), data=data, options=dict(case.check.options),
                               reference=plan.reference)
        try:
            verdict = check(context)
        except Exception:  # noqa: BLE001 - as judge(): a crashing check is a grader problem, never a verdict
            continue          # reported when grading: nothing to precompute
        known.append({"answer": answer, "passed": verdict.passed, "fraction": verdict.fraction,
                      "message": verdict.message})
    return known


def _public_data(plan: Any, case: Any) -> dict[str, Any]:
    """What a public check reads besides the answer: the case's variables and the data its options name
    (e.g. the path check's `start: state`), never the rest of the course's fixtures."""
    from grader.syntax.calls import free_names
    data = plan.data(case)
    names = set(case.variables)
    for value in case.check.options.values():
        if isinstance(value, str):
            try:
                names |= free_names(value)
            except SyntaxError:
                pass
    return {name: codec.encode(data[name]) for name in sorted(names) if name in data}


def coverage(kit: Mapping[str, Any]) -> list[tuple[str, int, int, tuple[str, ...]]]:
    """Per exercise of kit data: (id, public cases judged in full, public cases checked after submission, the
    checks that need the course's code). What `grader kit` lists and `grader validate` warns about."""
    rows = []
    for exercise in kit["exercises"]:
        later = [case["check"]["name"] for case in exercise["cases"]
                 if case["check"]["name"] not in FULL_CHECKS and not case["check"].get("public")]
        rows.append((exercise["id"], len(exercise["cases"]) - len(later), len(later), tuple(dict.fromkeys(later))))
    return rows


def build_kit(rubric_path: str | Path, *, cache: str | Path | None = None) -> dict[str, Any]:
    """The kit of a rubric as JSON data: public cases only, expected values precomputed, no reference code."""
    from grader.judge.grading import build_requests, case_inputs, template_names, support_sources
    from grader.judge.options import Options
    from grader.plan.given import support_data, visible_data
    from grader.plan.cases import build_plan
    from grader.plan.sealed import default_cache
    from grader.kit.answers import record
    from grader.kit.public import is_public, public_code
    from grader.rubric.schema import load_rubric

    rubric = load_rubric(rubric_path)
    plan_cache = Path(cache) if cache is not None else default_cache()
    plan = build_plan(rubric, plan_cache)
    shipped = public_code(rubric)
    exercises = []
    public_settings: set[str] = set()
    for exercise in rubric.exercises:
        cases = plan.cases[exercise.id]
        public = [case for case in cases if case.visibility == "public"]
        # The requests the grader would send for a notebook that uses the canonical name (renamed per notebook
        # when it is checked, as the grader does).
        requests = build_requests(plan, exercise, public, exercise.function.split(".")[0], Options())
        entries = []
        for case, request in zip(public, requests, strict=True):
            expected = plan.expected[case.id]
            check: dict[str, Any] = {"name": case.check.name, "options": _plain(dict(case.check.options)),
                                     "judged": "in full" if case.check.name in FULL_CHECKS
                                     else "in full (public check)" if is_public(case.check)
                                     else "against the reference answer"}
            if case.check.name == "path":
                check.update(_path_facts(plan, case))
            if is_public(case.check):
                check["public"] = True
            elif case.check.name not in FULL_CHECKS:
                check["known"] = _known_verdicts(plan, case)
            public_settings.update(request.set)
            entries.append({
                "id": case.id, "call": case.shown_call, "code": request.code, "values": dict(request.values),
                "set": dict(request.set), "probes": dict(request.probes), "reduce": request.reduce,
                "timeout": request.timeout, "weight": case.weight, "check": check,
                "expected": expected.value, "mistakes": {name: answer for name, answer in expected.mistakes},
                **({"data": _public_data(plan, case)} if is_public(case.check) else {}),
                "variants": {name: answer for name, answer in expected.variants},
                "inputs": case_inputs(plan, case),
            })
        exercises.append({
            "id": exercise.id, "title": exercise.title, "points": exercise.points, "function": exercise.function,
            "aliases": list(exercise.aliases), "scoring": exercise.scoring, "hints": list(exercise.hints),
            "error_hints": [{"match": hint.match, "say": hint.say} for hint in exercise.error_hints
                            if not hint.when],   # a kit judges no earlier exercise for a hint to depend on
            "mistakes": [{"name": mistake.reference, "say": mistake.say} for mistake in exercise.mistakes],
            "variants": [{"name": v.reference, "say": v.say, "when": dict(v.when)} for v in exercise.variants],
            "isolate": list(exercise.isolate), "max_timeouts": exercise.limits.max_timeouts,
            # An isolated method is answered from the reference's own answers on these public cases.
            **({"methods": [record(plan, exercise, method).to_data() for method in exercise.methods]}
               if exercise.methods and public else {}),
            "hidden_cases": sum(1 for case in cases if case.visibility == "hidden"),
            "cases": entries,
        })
    limits = rubric.limits
    return {
        "kind": KIT_KIND, "format": KIT_FORMAT, "assignment": rubric.assignment, "title": rubric.title,
        "rubric_sha256": rubric.sha256, "grader_version": __version__,
        "limits": {"load_seconds": limits.load_seconds, "submission_seconds": limits.submission_seconds,
                   "memory_mb": limits.memory_mb, "output_bytes": limits.output_bytes},
        "extraction": {"allow_calls": sorted(rubric.policy.allow_calls), "drop": sorted(rubric.policy.drop),
                       "roots": sorted(plan.rubric.policy.roots or ())},
        "known_globals": sorted(set(rubric.fixtures) | public_settings | set(template_names(plan))),
        "support": support_sources(plan),
        **({"data": {name: base64.b64encode(content).decode("ascii") for name, content in data.items()}}
           if (data := visible_data(support_data(rubric), rubric.support, [plan_cache]) if rubric.support else {})
           else {}),
        **({"given": {name: source for name, source in plan.given_code().sources.items()
                      if source is not None}} if rubric.given else {}),
        "exercises": exercises,
        **({"public": {"source": shipped.source, "names": list(shipped.names)}} if shipped else {}),
    }


def kit_text(kit: Mapping[str, Any]) -> str:
    return json.dumps(kit, indent=1, ensure_ascii=False) + "\n"


def write_kit(rubric_path: str | Path, out: str | Path, *, cache: str | Path | None = None) -> Path:
    """Build the kit of a rubric and write it to `out` (e.g. kit.json)."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(kit_text(build_kit(rubric_path, cache=cache)), encoding="utf-8")
    return target


# --------------------------------------------------------------------------------- loading (student side)


def _wire(value: Any, where: str) -> Any:
    try:
        codec.decode(value)
    except codec.CodecError as error:
        raise KitError(f"{where}: {error}") from None
    return value


def _case(raw: Mapping[str, Any], where: str) -> KitCase:
    where = f"{where}, case {raw.get('id', '?')}"
    check = raw.get("check") or {}
    return KitCase(
        id=str(raw["id"]), call=str(raw.get("call", raw["code"])), code=str(raw["code"]),
        values={str(k): _wire(v, where) for k, v in dict(raw.get("values") or {}).items()},
        set={str(k): _wire(v, where) for k, v in dict(raw.get("set") or {}).items()},
        probes={str(k): str(v) for k, v in dict(raw.get("probes") or {}).items()},
        reduce=raw.get("reduce"), timeout=float(raw.get("timeout", 1.0)), weight=float(raw.get("weight", 1.0)),
        check=KitCheck(str(check.get("name", "equal")), dict(check.get("options") or {}),
                       _wire(check.get("start"), where), _wire(check.get("goal"), where),
                       bool(check.get("optimal", False)),
                       tuple(KnownVerdict(_wire(k["answer"], where), bool(k["passed"]), float(k["fraction"]),
                                          str(k.get("message", ""))) for k in check.get("known", ())),
                       check.get("public") is True),
        expected=_wire(raw.get("expected"), where),
        inputs={str(k): _wire(v, where) for k, v in dict(raw.get("inputs") or {}).items()},
        mistakes={str(k): _wire(v, where) for k, v in dict(raw.get("mistakes") or {}).items()},
        data={str(k): _wire(v, where) for k, v in dict(raw.get("data") or {}).items()},
        variants={str(k): _wire(v, where) for k, v in dict(raw.get("variants") or {}).items()},
    )


def kit_from_dict(data: Mapping[str, Any], path: Path | None = None) -> Kit:
    """Validate and read kit data; every wire value is decoded once so a damaged one never reaches a check."""
    where = str(path) if path else "kit"
    if not isinstance(data, Mapping) or data.get("kind") != KIT_KIND:
        raise KitError(f"{where}: not a puzzle-grader kit")
    if data.get("format") != KIT_FORMAT:
        raise KitError(f"{where}: kit format {data.get('format')!r}; this grader ({__version__}) reads format "
                       f"{KIT_FORMAT}: install the grader version the course names")
    try:
        exercises = tuple(
            KitExercise(
                id=str(e["id"]), title=str(e.get("title", e["id"])), points=float(e.get("points", 1)),
                function=str(e.get("function", e["id"])), aliases=tuple(map(str, e.get("aliases", ()))),
                scoring=str(e.get("scoring", "proportional")), hints=tuple(map(str, e.get("hints", ()))),
                error_hints=tuple((str(h["match"]), str(h["say"])) for h in e.get("error_hints", ())),
                mistakes=tuple((str(m["name"]), str(m["say"])) for m in e.get("mistakes", ())),
                isolate=tuple(map(str, e.get("isolate", ()))), max_timeouts=int(e.get("max_timeouts", 2)),
                hidden_cases=int(e.get("hidden_cases", 0)),
                cases=tuple(_case(c, f"{where}: exercise {e['id']}") for c in e.get("cases", ())),
                variants=tuple((str(v["name"]), str(v.get("say", "")),
                                tuple((str(k), str(f)) for k, f in dict(v.get("when") or {}).items()))
                               for v in e.get("variants", ())),
                methods=tuple(MethodAnswers.from_data(m) for m in e.get("methods", ())))
            for e in data["exercises"])
        extraction = data.get("extraction") or {}
        warnings: tuple[GraderWarning, ...] = ()
        if data.get("grader_version") != __version__:
            warnings = (GraderWarning(
                Kind.KIT, f"this kit was made with grader {data.get('grader_version')}; you have {__version__}: "
                          f"if results differ after submission, install the course's version", "grader version"),)
        return Kit(
            assignment=str(data["assignment"]), title=str(data.get("title", data["assignment"])),
            rubric_sha256=str(data.get("rubric_sha256", "")), grader_version=str(data.get("grader_version", "")),
            limits=dict(data.get("limits") or {}), allow_calls=tuple(extraction.get("allow_calls", ())),
            drop=tuple(extraction.get("drop", ())), known_globals=tuple(data.get("known_globals", ())),
            support={str(k): str(v) for k, v in dict(data.get("support") or {}).items()},
            data={_data_name(k, where): base64.b64decode(str(v), validate=True)
                  for k, v in dict(data.get("data") or {}).items()},
            given={str(k): str(v) for k, v in dict(data.get("given") or {}).items()},
            exercises=exercises, path=path, warnings=warnings,
            roots=tuple(map(str, extraction["roots"])) if "roots" in extraction else None,
            sha256=hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest(),
            public_source=str((data.get("public") or {}).get("source", "")))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        if isinstance(error, KitError):
            raise
        raise KitError(f"{where}: malformed kit ({type(error).__name__}: {error})") from None


def _data_name(name: Any, where: str) -> str:
    """A data file's path in the kit, checked: relative, within the working folder (no '..', no empty part)."""
    text = str(name)
    parts = text.split("/")
    if not text or text.startswith("/") or any(part in ("", ".", "..") or "\0" in part for part in parts):
        raise KitError(f"{where}: malformed kit (data file {text[:80]!r} is not a path inside the working folder)")
    return text


def load_kit(path: str | Path) -> Kit:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise KitError(f"{path}: cannot read the kit: {error.strerror}") from None
    except ValueError as error:
        raise KitError(f"{path}: not JSON: {error}") from None
    return kit_from_dict(data, path)


# ----------------------------------------------------------------------------------------------- judging


def kit_plan(kit: Kit) -> Any:
    """The kit as a grading Plan whose reference module is empty, so grading.grade_exercise and judge() read
    it like any plan. Cases whose check needs the reference are judged `equal` there and by `settle` after."""
    from grader.rubric.schema import Policy
    from grader.plan.cases import GIVEN_CODE, Case, Expected, Plan
    from grader.kit.public import public_module
    from grader.rubric.schema import (CaseSpec, CheckSpec, ErrorHint, Exercise, IsolatedMethod, Limits, Mistake,
                                      Rubric, Variant)

    where = kit.path.resolve() if kit.path is not None else Path.cwd() / "kit.json"
    exercises, cases, expected = [], {}, {}
    for kx in kit.exercises:
        # case_seconds 0 and case_factor 1 make each case's limit the kit's own timeout (stored as "seconds").
        limits = Limits(case_seconds=0.0, case_factor=1.0, max_timeouts=kx.max_timeouts)
        # Only what the kit can answer is isolated: the methods whose course answers it carries (KitCases).
        # The cases' calls say which exercise grades a method (EightPuzzle(s).h(...) grades EightPuzzle.h).
        exercises.append(Exercise(
            id=kx.id, title=kx.title, points=kx.points, function=kx.function, aliases=kx.aliases,
            scoring=kx.scoring, check=CheckSpec("equal"), isolate=tuple(m.name for m in kx.methods),
            hints=kx.hints, error_hints=tuple(ErrorHint(match, say) for match, say in kx.error_hints),
            mistakes=tuple(Mistake(name, say) for name, say in kx.mistakes),
            cases=tuple(CaseSpec(0, c.code) for c in kx.cases), limits=limits,
            variants=tuple(Variant(name, say, when) for name, say, when in kx.variants),
            methods=tuple(IsolatedMethod(m.name, m.call.code, split=m.call) for m in kx.methods)))
        cases[kx.id] = tuple(
            Case(id=c.id, exercise=kx.id, call=c.code, visibility="public", weight=c.weight,
                 probe=tuple(c.probes.items()), reduce=c.reduce, variables=_judge_variables(c),
                 check=CheckSpec(c.check.name if c.check.full else "equal", dict(c.check.options)))
            for c in kx.cases)
        expected.update({c.id: Expected(c.expected, c.timeout, tuple(c.mistakes.items()), tuple(c.variants.items()))
                         for c in kx.cases})
    rubric = Rubric(
        path=where, sha256=f"kit:{kit.sha256}", assignment=kit.assignment, title=kit.title, reference=where,
        template=None, support=None, submissions=None, fixtures=kit.known_globals,
        limits=Limits(**{k: v for k, v in kit.limits.items() if k in Limits.__dataclass_fields__}),  # type: ignore[arg-type]
        policy=Policy(frozenset(kit.allow_calls), frozenset(kit.drop),
                      frozenset(kit.roots) if kit.roots is not None else None), exercises=tuple(exercises),
        given=tuple(kit.given))
    # Only the code the course published runs here: public checks, on decoded plain data, as in grading.
    try:
        reference = public_module(kit.public_source, kit.support) if kit.public_source else \
            ModuleType("no_reference_in_a_kit")
    except Exception as error:  # noqa: BLE001 - the course's published code: its failure is the kit's, named
        raise KitError(f"{where}: the public checks of this kit fail to load ({type(error).__name__}: {error}): "
                       f"not your mistake, tell your instructor") from None
    plan = Plan(rubric, reference, cases, expected)
    if kit.given:   # what grading puts first where a notebook lacks a given name (plan.given), from the kit's code
        plan.memo.get(GIVEN_CODE, lambda: kit_given(kit))
    return plan


def kit_given(kit: Kit) -> Any:
    """The kit's given code as plan.given.Given: the course's definitions it carries, and the names each support
    module defines (a notebook that %runs one has them), read from the support modules it carries."""
    from grader.plan.given import Given, definitions
    return Given(dict(kit.given), {stem: frozenset(definitions(text)) for stem, text in kit.support.items()})


def _judge_variables(case: KitCase) -> dict[str, Any]:
    """A public check's case data: the call's placeholder values (so the check gets `args`), then the data
    its options name and the case's variables, as numpy arrays where they were arrays."""
    if not case.check.public:
        return {}
    values = {**case.values, **case.data}
    return {name: codec.with_arrays(codec.decode(value)) for name, value in values.items()}


def kit_cases(kit: Kit, missed: set[str] | None = None) -> Callable[[Any, CaseRunner], KitCases]:
    """Each exercise's cases run with the kit's inputs (a grading.ExerciseRunner). `missed` collects the
    exercises whose isolated run asked the course's method something the kit has no answer for."""
    by_id = {kx.id: kx for kx in kit.exercises}
    return lambda exercise, runner: KitCases(runner, by_id[exercise.id], missed)


class KitCases:
    """A case runner (the Sandbox, or the live kernel) given each case's inputs from the kit.

    grade_exercise builds requests from the case expressions alone (renaming aliases for the notebook at
    hand, as the grader does); the kit supplies what the grader's parent computed from the reference's data:
    placeholder values, settings and the time limit.
    """

    def __init__(self, runner: CaseRunner, exercise: KitExercise, missed: set[str] | None = None):
        self.runner = runner
        self.exercise = exercise
        self.cases = {case.id: case for case in exercise.cases}
        self.missed = missed if missed is not None else set()

    def run_exercise(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle, deadline: float,
                     max_timeouts: int = 2, methods: Mapping[str, Any] | None = None,
                     more: bool = False) -> list[Outcome]:
        requests = cases
        complete = [replace(r, values=dict(self.cases[r.id].values), set=dict(self.cases[r.id].set),
                            timeout=self.cases[r.id].timeout) for r in requests]
        if not isolate:
            return self.runner.run_exercise(complete, isolate, oracle, deadline, max_timeouts, methods, more)
        # No reference here: the isolated methods are answered with the course's answers the kit carries.
        table = TableOracle({m.name: m for m in self.exercise.methods})
        outcomes = self.runner.run_exercise(complete, isolate, table, deadline, max_timeouts, methods)
        if table.missed:
            self.missed.add(self.exercise.id)
        return outcomes


def _states(got: Any) -> list[Any] | None:
    if isinstance(got, dict):
        for tag in ("list", "tuple"):
            if tag in got and isinstance(got[tag], list):
                return got[tag]
    return None


def path_failure(check: KitCheck, expected: Any, got: Any) -> str | None:
    """Why a path is certainly wrong, judged without the rules of legal moves; None when only they could tell."""
    if got is None:
        return "returned None: no path was found"
    states = _states(got)
    if states is None:
        return f"expected a list of states, got {codec.describe(got, 120)}"
    if not states:
        return "returned an empty path"
    if check.start is not None:
        difference = codec.same(check.start, states[0])
        if difference is not None:
            return f"the path does not begin with the start state: {difference}"
    if check.goal is not None and codec.decode(check.goal) != codec.decode(states[-1]):
        return (f"the path ends in {codec.describe(states[-1], 160)}, which is not the goal "
                f"{codec.describe(check.goal, 160)}")
    best = _states(expected)
    if check.optimal and best is not None:
        moves, shortest = len(states) - 1, len(best) - 1
        if moves > shortest:
            return (f"a path of {moves} moves, but the shortest has {shortest} moves (if every move is legal, "
                    f"it earns part of the credit after submission)")
        if moves < shortest:
            return f"a path of {moves} moves, but the shortest possible has {shortest}: some step is not a legal move"
    return None


def _path_facts_seen(check: KitCheck, got: Any) -> str:
    """What the kit did verify about a path it cannot judge, so the student knows what is left to doubt."""
    states = _states(got) or []
    seen = [f"it has {len(states) - 1} moves"]
    if check.start is not None:
        seen.insert(0, "it begins at the start state")
    if check.goal is not None:
        seen.append("it ends in the goal")
    return f". Checked here: {', '.join(seen)}; not checked: whether every step is a legal move"


def _fallback(case: KitCase, exercise: KitExercise, result: Any) -> Any:
    """A case whose check needs the reference, judged against the reference's answer (see the module doc)."""
    if result.status == "pass":
        return replace(result, message=FALLBACK_PASS)
    if result.status != "fail":
        return result                      # an error or a timeout needs no check to be one
    says = dict(exercise.mistakes)
    for known in case.check.known:
        if codec.same(known.answer, result.got) is None:
            judged = replace(result, status="pass" if known.passed else "fail", fraction=known.fraction,
                             message=known.message, mistake="", advice="", detail="",
                             reason="" if known.passed else vocabulary.WRONG,
                             cause="" if known.passed else f"rejected by the check {case.check.name}")
            if not known.passed:           # as judge(): the first known mistake with this answer explains it
                for name, say in exercise.mistakes:
                    if name in case.mistakes and codec.same(case.mistakes[name], result.got) is None:
                        return advised(replace(judged, mistake=name), say)
            return judged
    if case.check.name == "path":
        failure = path_failure(case.check, case.expected, result.got)
        if failure is not None:
            return replace(result, message=failure, reason=vocabulary.WRONG, cause="a path that cannot be right")
        return replace(result, status=UNVERIFIED, fraction=0.0, reason=vocabulary.UNVERIFIED,
                       cause="a path the kit cannot judge", message=PATH_UNVERIFIED + _path_facts_seen(case.check,
                                                                                                      result.got))
    difference = codec.same(case.expected, result.got) or "it differs"
    message = f"your answer differs from the reference answer ({difference})"
    mistake = ""
    for name, answer in case.mistakes.items():
        if name in says and codec.same(answer, result.got) is None:
            message += f". It is the answer of a known mistake: {says[name]}"
            mistake = name
            break
    # Why it is no failure, the same words for every such case of the exercise: its `advice`, which a group of
    # them says once (report.grouping.own_messages), after each case's own difference.
    advice = (f"This could not be verified here: this case's check ({case.check.name}) needs the course's code, "
              f"so other answers may be right too; it will be checked after submission")
    return _then(replace(result, status=UNVERIFIED, fraction=0.0, reason=vocabulary.UNVERIFIED,
                         cause=f"the check {case.check.name} needs the course's code", mistake=mistake),
                 message, advice)


def _graded_by(kit: Kit) -> dict[str, str]:
    """Notebook name -> the exercise that grades it."""
    return {name.split(".")[0]: exercise.id for exercise in kit.exercises for name in exercise.names}


def _unconfirmed_helpers(kit: Kit, exercises: Sequence[Any], available: set[str]) -> dict[str, str]:
    """Isolated helpers the kit cannot vouch for: graded ones with a public case that did not pass here, and
    graded ones the notebook lacks. Helper -> why."""
    graded = _graded_by(kit)
    results = {result.id: result for result in exercises}
    doubtful: dict[str, str] = {}
    for helper, exercise in graded.items():
        if exercise not in results:
            continue
        if helper not in available:
            doubtful[helper] = "missing"
        elif any(case.status != "pass" for case in results[exercise].cases):
            doubtful[helper] = "not passing all of its own cases here"
    return doubtful


def _isolated(kx: KitExercise, result: Any, doubtful: Mapping[str, str]) -> Any:
    """A failing case of an exercise with isolated helpers is run again with the course's helpers after
    submission; where one of the notebook's helpers is itself in doubt, the kit cannot tell the outcome."""
    suspects = [helper for helper in kx.isolate if helper in doubtful]
    notes = result.notes
    cases = []
    for case in result.cases:
        if case.status in ("fail", "error") and case.fraction < 1.0 and suspects:
            reasons: dict[str, list[str]] = {}
            for helper in suspects:
                reasons.setdefault(doubtful[helper], []).append(helper)
            why = "; ".join(f"{', '.join(helpers)} {reason}" for reason, helpers in reasons.items())
            # What this case did first, then why it is not a failure: the same words for every case of the
            # exercise, its `advice`, which a group of such cases says once (report.grouping.own_messages).
            advice = (f"This could not be verified here (your {why}): after submission the case runs again with "
                      f"the course's {', '.join(suspects)}, and the better result counts")
            case = _then(replace(case, status=UNVERIFIED, reason=vocabulary.UNVERIFIED,
                                 cause="to be judged again with the course's helpers"),
                         case.message, advice, f"with your {', '.join(suspects)}: ")
        cases.append(case)
    if any(case.status in ("fail", "error") for case in cases):
        notes += (f"after submission, a failing case of {kx.id} also runs with the course's "
                  f"{', '.join(kx.isolate)}, and the better result counts",)
    return replace(result, cases=tuple(cases), notes=notes)


def _then(case: Any, detail: str, advice: str, lead: str = "") -> Any:
    """An unverified case: its message says what it did (`lead`, then `detail`, kept as the case's own `detail`),
    then why it is no failure (its `advice`, the same for every such case of the exercise, in place of any it had),
    so that a group of them says the advice once (report.grouping.own_messages)."""
    return advised(replace(case, message=f"{lead}{detail.rstrip('. ')}", advice="", detail=""), advice)


def _unanswered(kx: KitExercise, result: Any) -> Any:
    """Its run with the course's methods asked something the kit cannot answer (a search that visits states the
    reference's did not): a case that failed may pass after submission, where the reference answers everything."""
    names = ", ".join(m.name for m in kx.methods)
    advice = (f"This could not be verified here: judged with the course's {names}, your code asked it about "
              f"arguments this kit has no answer for; after submission the course's code answers them")
    cases = tuple(_then(replace(case, status=UNVERIFIED, reason=vocabulary.UNVERIFIED,
                                cause="the course's answers of an isolated method are not all in the kit"),
                        case.message, advice, "with what the kit could answer: ")
                  if case.status in ("fail", "error") and case.fraction < 1.0 else case for case in result.cases)
    return replace(result, cases=cases)


def settle(kit: Kit, exercises: Sequence[Any], available: Sequence[str] | set[str],
           missed: set[str] | frozenset[str] = frozenset()) -> tuple[Any, ...]:
    """Finish the results of a kit run: what the kit cannot check in full is judged by its fallbacks (and may
    become `unverified`), each case shows its call as a student reads it, and scores are recomputed. `missed`:
    exercises whose run with the course's isolated methods asked what the kit has no answer for."""
    from grader.judge.scoring import exercise_score
    by_id = {exercise.id: exercise for exercise in kit.exercises}
    before = {result.id: result.cases for result in exercises}
    judged = []
    for result in exercises:
        kx = by_id[result.id]
        kit_cases = {case.id: case for case in kx.cases}
        cases = []
        for case in result.cases:
            kit_case = kit_cases[case.id]
            case = replace(case, call=kit_case.call)
            if not kit_case.check.full and case.status != "missing":
                case = _fallback(kit_case, kx, case)
            # A failing case shows the fixtures it used, as the grader's report does (a missing one ran nothing;
            # a passing or unverified one draws none).
            case = replace(case, inputs=dict(kit_case.inputs) if case.status in ("fail", "error", "timeout") else {})
            cases.append(case)
        judged.append(replace(result, cases=tuple(cases)))
    doubtful = _unconfirmed_helpers(kit, judged, set(available))
    settled = []
    for result in judged:
        kx = by_id[result.id]
        if kx.isolate:
            result = _isolated(kx, result, doubtful)
        if result.id in missed:
            result = _unanswered(kx, result)
        planned = {case.id: case.weight for case in kx.cases}
        settled.append(replace(result, score=exercise_score(result.cases, kx.points, kx.scoring, planned=planned),
                               notes=_same_failures_again(result.notes, before[result.id], result.cases)))
    return tuple(settled)


def _same_failures_again(notes: tuple[str, ...], before: Sequence[Any], after: Sequence[Any]) -> tuple[str, ...]:
    """The judge's notes on cases that failed the same way (judge.feedback.same_failures), said of the cases as the
    kit settled them: a case it could only check after submission fails no more, and a fallback's verdict has its
    own message. The reports know these notes by the cases they are about (report.grouping.shown_notes)."""
    stale = set(same_failures(before))
    if not stale:
        return notes + same_failures(after)
    return renoted(notes, stale, same_failures(after))


def public_cases_pass(result: Any) -> bool:
    """The self-check's verdict: no public case failed (unverified ones are not failures)."""
    return not any(case.status in FAILING for exercise in result.exercises for case in exercise.cases
                   if case.visibility == "public")


def report(result: Any, hidden: Mapping[str, int], console: Any = None) -> bool:
    """Print the student's report (grader.report.console) and say whether every public case passed."""
    from grader.report import console as view
    view.student_report(result, hidden, console)
    return public_cases_pass(result)


# --------------------------------------------------------------------------------- in the student's kernel


class _CaseTimeout(BaseException):
    """Raised inside the student's code when its case runs out of time (not an Exception: `except` misses it)."""


def _case_timeout() -> _CaseTimeout:
    return _CaseTimeout("the time limit of this case was reached")


_PSEUDO_FILES = ("<case>", "<reduce>", "<probe>")


def _cell_label(filename: str) -> str | None:
    """IPython's name for the cell a frame's file is, e.g. "Cell In [12]"; None outside IPython."""
    shell_module = sys.modules.get("IPython")
    if shell_module is None:
        return None
    try:
        shell = shell_module.get_ipython()
        count = shell.compile._filename_map.get(filename) if shell is not None else None
    except Exception:  # an IPython without this map: plain file names then
        return None
    return f"In [{count}]" if count is not None else None


def _frame_place(filename: str, line: int | None) -> str:
    place = _cell_label(filename) or filename
    return f"{place}, line {line}" if line is not None else place


def _describe(error: BaseException) -> dict[str, str]:
    """Type, message and the frames outside the grader, innermost last (as the sandbox reports them)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename not in _PSEUDO_FILES and not f.filename.startswith(PACKAGE_FOLDERS)]
    cells = [f for f in frames if _cell_label(f.filename)]
    last = (cells or frames)[-1] if cells or frames else None
    lines = []
    for frame in frames[-12:]:
        lines.append(f"  {_frame_place(frame.filename, frame.lineno)}, in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    try:
        text = str(error)
    except Exception:
        text = "<unprintable>"
    described = {"type": "timeout" if isinstance(error, _CaseTimeout) else type(error).__name__,
                 "message": text[:2000], "where": _frame_place(last.filename, last.lineno) if last else "",
                 "traceback": "\n".join(lines)}
    stage = getattr(error, "__grader_stage__", None)
    if stage in ("reduce", "input"):
        described["stage"] = stage
    return described


class Kernel:
    """Runs case requests against the live namespace of a notebook, in this process.

    The same requests the sandbox gets, evaluated the way its child evaluates them: settings made (and undone),
    placeholders bound, `random` seeded, output captured, each case under its own time limit.
    """

    def __init__(self, namespace: dict[str, Any], output_bytes: int = 65536):
        self.namespace = namespace
        self.output_bytes = output_bytes

    def run_exercise(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle, deadline: float,
                     max_timeouts: int = 2, methods: Mapping[str, Any] | None = None,
                     more: bool = False) -> list[Outcome]:
        # Isolated methods are answered by `oracle` (the kit's course answers) while the exercise runs, as the
        # child's stand-ins do; isolated functions are not (the kit carries no answers for them).
        from grader.sandbox.process import Outcome
        outcomes: list[Outcome] = []
        timeouts = 0
        restore = self._stand_ins(isolate, oracle, methods or {})
        try:
            for case in cases:
                if time.monotonic() >= deadline:
                    outcomes.append(Outcome(case.id, "skipped", error={
                        "message": "the submission's time budget is spent", "reason": "budget"}))
                elif timeouts >= max_timeouts:
                    outcomes.append(Outcome(case.id, "skipped", error={
                        "message": f"not run: {timeouts} earlier cases of this exercise timed out"}))
                else:
                    outcomes.append(self.run_case(case))
                    timeouts += outcomes[-1].status == "timeout"
        finally:
            restore()
        return outcomes

    def _stand_ins(self, isolate: Sequence[str], oracle: Oracle, methods: Mapping[str, Any]) -> Callable[[], None]:
        """Put a stand-in for each isolated method on the notebook's class (it reads the rubric's attribute
        chains from its arguments and asks `oracle`); returns what puts the notebook's own back."""
        missing = object()
        patched: list[tuple[type, str, Any]] = []
        for name in isolate:
            owner = self.namespace.get(name.split(".")[0])
            if "." not in name or name not in methods or not isinstance(owner, type):
                continue
            attribute = name.split(".", 1)[1]
            patched.append((owner, attribute, owner.__dict__.get(attribute, missing)))
            setattr(owner, attribute, _stand_in(name, methods[name], oracle))

        def restore() -> None:
            for owner, attribute, old in reversed(patched):
                if old is missing:
                    delattr(owner, attribute)
                else:
                    setattr(owner, attribute, old)
        return restore

    def run_case(self, case: Any) -> Any:
        from grader.sandbox.process import Outcome
        namespace = self.namespace
        missing = object()
        settings = {name: codec.with_arrays(codec.decode(value)) for name, value in case.set.items()}
        saved = {name: namespace.get(name, missing) for name in settings}
        from grader.sandbox.runtime import Capture, NoKeyboard   # the child's sink and input(), in the student's kernel
        capture = Capture(self.output_bytes)
        # Jupyter's input() asks the notebook's user (ipykernel's own builtins.input), where the grader has no one
        # to ask: the check stops such a case as grading does, and says why (judge.grading.NO_KEYBOARD).
        keyboard, asked = NoKeyboard(), builtins.input
        state = random.getstate()
        limit = TimeLimit(case.timeout, _case_timeout)
        started = time.perf_counter()
        try:
            namespace.update(settings)
            scope = dict(namespace)
            scope.update({name: codec.with_arrays(codec.decode(value)) for name, value in case.values.items()})
            random.seed(0)
            probes: dict[str, Any] = {}
            builtins.input = keyboard.input
            with contextlib.redirect_stdout(capture), contextlib.redirect_stderr(capture), \
                    limit:
                result = eval(compile(case.code, "<case>", "eval"), scope)  # noqa: S307 - rubric expression
                if case.reduce:
                    try:
                        result = eval(compile(case.reduce, "<reduce>", "eval"), {**scope, "result": result})  # noqa: S307
                    except (_CaseTimeout, KeyboardInterrupt):
                        raise
                    except BaseException as error:  # noqa: BLE001 - say that it failed while reducing
                        error.__grader_stage__ = "reduce"  # type: ignore[attr-defined]
                        raise
                for name, code in case.probes.items():
                    try:
                        probes[name] = {"value": codec.encode(
                            eval(compile(code, "<probe>", "eval"), {**scope, "result": result}))}  # noqa: S307
                    except (_CaseTimeout, KeyboardInterrupt):
                        raise
                    except BaseException as error:  # noqa: BLE001
                        probes[name] = {"error": f"{type(error).__name__}: {error}"}
            seconds = time.perf_counter() - started
            if limit.expired:     # it swallowed every alarm (a bare except) and came back after its time
                return Outcome(case.id, "timeout", seconds=seconds, output=capture.text(), error={
                    "type": "timeout", "message": "the time limit of this case was reached", "where": "",
                    "traceback": ""})
            try:
                value = codec.encode(result)
            except codec.CodecError as error:
                return Outcome(case.id, "error", seconds=seconds, output=capture.text(), error={
                    "type": "UnencodableResult", "message": str(error), "where": "", "traceback": ""})
            return Outcome(case.id, "ok", value=value, probes=probes, seconds=seconds, output=capture.text())
        except _CaseTimeout as error:
            return Outcome(case.id, "timeout", seconds=time.perf_counter() - started, output=capture.text(),
                           error=_describe(error))
        except KeyboardInterrupt:
            raise                     # the student stopped the check: it is theirs to stop
        except BaseException as error:  # noqa: BLE001 - sys.exit and friends cost only this case
            if error is keyboard.raised:
                error.__grader_stage__ = "input"
            return Outcome(case.id, "timeout" if limit.expired else "error", seconds=time.perf_counter() - started,
                           output=capture.text(), error=_describe(error))
        finally:
            builtins.input = asked
            random.setstate(state)
            for name, old in saved.items():
                if old is missing:
                    namespace.pop(name, None)
                else:
                    namespace[name] = old


def _stand_in(name: str, spec: Mapping[str, Any], oracle: Oracle) -> Callable[..., Any]:
    """An isolated method as the live kernel runs it: the rubric's chains (`node.state`, `self.goal`) read from
    its arguments and sent to `oracle`, as the sandbox's child does."""
    params = [str(param) for param in spec.get("params", ())]
    inputs = [compile(str(code), "<isolated method>", "eval") for code in spec.get("inputs", ())]

    def method(*args: Any, **kwargs: Any) -> Any:
        scope = dict(zip(params, args, strict=False))
        scope.update((key, value) for key, value in kwargs.items() if key in params)
        return oracle(name, [eval(code, scope) for code in inputs], {})  # noqa: S307 - the rubric's chains

    method.__name__ = method.__qualname__ = name.split(".")[-1]
    return method


def _source_node(value: Any) -> tuple[ast.AST | None, str, int]:
    """The parse tree of a live function or class, and where it was defined, when its source can be found."""
    code = getattr(value, "__code__", None)
    filename = code.co_filename if code is not None else ""
    line = code.co_firstlineno if code is not None else 0
    try:
        lines, line = inspect.getsourcelines(value)
        filename = filename or inspect.getsourcefile(value) or ""
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, ValueError, RecursionError, MemoryError):  # any source the parser refuses
        return None, _cell_label(filename) or filename, line
    return (tree.body[0] if tree.body else None), _cell_label(filename) or filename, line


def kernel_definitions(kit: Kit, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Definitions of the graded names in a live namespace, as extraction would report them for a notebook."""
    from grader.syntax.analysis import is_stub
    from grader.extract.source import Definition
    found: dict[str, Any] = {}
    for name in _graded_by(kit):
        if name not in namespace:
            continue
        value = namespace[name]
        if inspect.isfunction(value) or inspect.isclass(value):
            node, label, line = _source_node(value)
            kind = "function" if inspect.isfunction(value) else "class"
            stub = kind == "function" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_stub(node)
            found[name] = Definition(name, 0, line, label, kind, stub, node)
        elif not callable(value):
            found[name] = Definition(name, 0, 0, "the kernel", "data", value is None or value is Ellipsis)
    return found


@dataclass(frozen=True)
class KitSummary:
    """What a self-check in the kernel found: the result (as the reports read it) and the hidden-case counts."""

    result: Any
    hidden: Mapping[str, int]

    def _count(self, *statuses: str) -> int:
        return sum(1 for e in self.result.exercises for c in e.cases
                   if c.visibility == "public" and c.status in statuses)

    @property
    def public(self) -> int:
        return self._count("pass", UNVERIFIED, *FAILING)

    @property
    def passed(self) -> int:
        return self._count("pass")

    @property
    def failed(self) -> int:
        return self._count(*FAILING)

    @property
    def unverified(self) -> int:
        return self._count(UNVERIFIED)

    @property
    def hidden_cases(self) -> int:
        return sum(self.hidden.values())

    @property
    def ok(self) -> bool:
        """Every public case passed or could only be checked after submission; hidden ones are still to come."""
        return self.failed == 0

    def __repr__(self) -> str:
        parts = [f"{self.passed}/{self.public} public cases pass"]
        if self.unverified:
            parts.append(f"{self.unverified} checked after submission")
        parts.append(f"{self.hidden_cases} hidden cases, results after grading")
        return f"<kit check of {self.result.rubric}: {'; '.join(parts)}>"


def check(kit: str | Path | Kit, *, namespace: dict[str, Any] | None = None, console: Any = None) -> KitSummary:
    """Self-check the functions of the running notebook on a kit's public cases, in this kernel.

    `from grader import check; check("kit.json")` in a notebook: the caller's globals (the notebook's) are
    checked, each case under its time limit; the report is printed as in the terminal and returned as a
    summary. Hidden cases are only counted.
    """
    from grader.extract.source import Extracted
    from grader.judge.grading import grade_exercises
    from grader.judge.options import Options
    from grader.intake.notebook import Notebook
    from grader.store.results import SubmissionResult
    from grader.judge.scoring import total

    if namespace is None:
        namespace = sys._getframe(1).f_globals
    started = time.monotonic()
    kit = kit if isinstance(kit, Kit) else load_kit(kit)
    plan = kit_plan(kit)
    definitions = kernel_definitions(kit, namespace)
    extracted = Extracted(statements=(), dropped=(), definitions=definitions, syntax_errors=(), warnings=(), runs=())
    notebook = Notebook(path="<kernel>", cells=(), warnings=())
    loaded = [name for name in namespace if not name.startswith("__")]
    runner = Kernel(namespace, int(kit.limits.get("output_bytes", 65536)))
    deadline = started + float(kit.limits.get("submission_seconds", 180.0))
    missed: set[str] = set()
    judged = grade_exercises(plan, notebook, extracted, runner, loaded, deadline, Options(), kit_cases(kit, missed))
    exercises = settle(kit, judged, loaded, missed)
    warnings = kit.warnings
    if not can_interrupt():
        warnings += (GraderWarning(Kind.KIT, "cases ran without a time limit (not in the main thread): a case that "
                                             "never ends hangs this check; interrupt the kernel to stop it",
                                   "no time limit"),)
    result = SubmissionResult(
        submission="this notebook", path="<kernel>", sha256="", rubric=kit.assignment,
        rubric_sha256=kit.rubric_sha256, grader_version=__version__, isolation="none (the notebook's own kernel)",
        total=total(e.score for e in exercises), max_total=plan.rubric.max_total, exercises=exercises,
        warnings=warnings, seconds=round(time.monotonic() - started, 3),
        extra={"kit": kit.sha256, "hidden": kit.hidden})
    from grader.report import notebook_view
    if console is None and notebook_view.in_notebook() and notebook_view.html_available():
        notebook_view.show(result, kit.hidden)      # one output: HTML, with the text report as its fallback
    else:
        report(result, kit.hidden, console)
    return KitSummary(result, kit.hidden)
