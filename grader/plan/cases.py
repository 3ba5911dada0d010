"""The grading plan: the rubric's cases expanded and their expected values computed by the reference, once per rubric.

Only the trusted parent builds a plan. Expected values are cached on disk by the rubric hash, so a batch and
every regrade pay for the reference once.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import copy
import hashlib
import importlib.util
import inspect
import json
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from grader import __version__

from grader.plan import given
from grader.plan import sealed
from grader.syntax.calls import SAFE_BUILTINS, ExpressionError, evaluate_data, free_names, isolated_call
from grader.checks.registry import CHECKS, option_problems
from grader.plan.course_imports import CourseModules, run_source
from grader.rubric.schema import (CaseSpec, CheckSpec, Exercise, Limits, Policy, Rubric, RubricError, hash_course_files,
                                  suggest, support_reads)
from grader import codec

CACHE_FORMAT = 5   # 2: sealed with the cache folder's key (grader.plan.sealed); 3: answers of accepted variants too;
#                    4: the generated cases' variables too, so a batch with a warm cache calls no generator;
#                    5: the reference's time is its CPU time (it was wall time, which a busy machine inflated)


CALL_VALUE_CHARS = 120                      # a generated variable's value in the call line, at most
_SCALARS = (bool, int, float, str)          # exactly these types (a subclass may draw as something else)


@dataclass(frozen=True)
class Case:
    """One concrete case: an expression, its data, and how it is judged."""

    id: str
    exercise: str
    call: str
    visibility: str
    check: CheckSpec
    variables: Mapping[str, Any] = field(default_factory=dict)
    set: tuple[tuple[str, str], ...] = ()
    probe: tuple[tuple[str, str], ...] = ()
    reduce: str | None = None                # turns the answer into plain data, in the child and the reference
    expect: str | None = None
    weight: float = 1.0
    line: int = 0

    @functools.cached_property
    def shown_call(self) -> str:
        """The call as a student reads it: generated variables written out."""
        shown = self.call
        if self.set:
            shown += "  after " + ", ".join(f"{name} = {code}" for name, code in self.set)
        if self.variables:
            values = ", ".join(f"{k}={text}" for k, (text, _) in self._written.items())
            shown += f"  with {values}"
        return shown

    @functools.cached_property
    def _written(self) -> dict[str, tuple[str, bool]]:
        """Each generated variable as the call line writes it, and whether that is its whole value (not cut)."""
        written = {}
        for name, value in self.variables.items():
            wire = codec.encode(value)
            # Past its share of the line the text is cut ("..."): whole when one character more changes nothing.
            # Rendered at that one character more first: a text that still fits is the text at the share too (no
            # str in it was long enough to be cut), so most values (218 of the Taoistic rubric's 224) are rendered
            # once, not twice: its 137 calls shown in 4.9-5.5 ms of the coordinator's start-up instead of 7.7-8.4.
            longer = codec.describe(wire, CALL_VALUE_CHARS + 1)
            whole = len(longer) <= CALL_VALUE_CHARS
            written[name] = (longer if whole else codec.describe(wire, CALL_VALUE_CHARS), whole)
        return written

    @functools.cached_property
    def stated(self) -> frozenset[str]:
        """The generated variables the call line states whole that nothing would draw better: a number, a string, a
        bool or None written in full after "with". Feedback does not draw them again as the case's inputs (`m = 3`
        under "with m=3, c=3"); a tuple or a list may be a board, drawn as one."""
        return frozenset(name for name, (_, whole) in self._written.items()
                         if whole and (self.variables[name] is None or type(self.variables[name]) in _SCALARS))


@dataclass(frozen=True)
class Expected:
    """The reference's answer to a case (encoded), and what each known mistake and accepted variant would have
    answered (a function that raised on this input is absent)."""

    value: Any
    seconds: float
    mistakes: tuple[tuple[str, Any], ...] = ()
    variants: tuple[tuple[str, Any], ...] = ()


T = TypeVar("T")


class Memo:
    """What the judge prepares once per plan rather than once per submission (a case's requests, data, the
    canonical text of its expected value). Owned by the plan it is prepared from, so it lives and dies with
    that plan and no key can outlive it or name another; never pickled (a worker prepares its own)."""

    LIMIT = 100_000     # entries; a plan of many thousand cases starts over rather than grow without bound

    def __init__(self) -> None:
        self._values: dict[tuple[Any, ...], Any] = {}

    def get(self, key: tuple[Any, ...], make: Callable[[], T]) -> T:
        try:
            return self._values[key]
        except KeyError:
            pass
        if len(self._values) >= self.LIMIT:
            self._values.clear()
        value = self._values[key] = make()
        return value

    def __reduce__(self) -> tuple[type[Memo], tuple[()]]:
        return (Memo, ())     # pickled or copied: a new, empty memo


@dataclass(frozen=True)
class Plan:
    rubric: Rubric
    reference: ModuleType
    cases: Mapping[str, tuple[Case, ...]]          # exercise id -> its cases, in grading order
    expected: Mapping[str, Expected]                # case id -> expected
    warnings: tuple[str, ...] = ()                  # for the TA: e.g. a cache file that did not verify
    # Not an init field: dataclasses.replace (a public plan, one exercise's plan) starts a memo of its own.
    memo: Memo = field(default_factory=Memo, init=False, repr=False, compare=False)

    def data(self, case: Case) -> dict[str, Any]:
        """The data names a case expression may use: fixtures, then the case's own variables."""
        return {**fixtures(self.rubric, self.reference), **case.variables}

    def given_code(self) -> given.Given:
        """The course's code of the rubric's `given` names (given.course_code), worked out once a plan: build_plan
        checks the names with it, and every notebook graded and the kit built from the plan read the same (a kit's
        own plan holds the kit's, kit_given)."""
        return self.memo.get(GIVEN_CODE, lambda: given.course_code(self.rubric, self.reference))


GIVEN_CODE = ("given",)     # Plan.memo's key of the course's code of the given names (given.Given)


def load_reference(path: Path, search: Sequence[Path | None] = ()) -> ModuleType:
    """Import the reference module from its path under a private name (never as `reference`).

    The name includes the hash of the source and of the course modules it imports (grader.rubric.schema.course_files):
    an edited reference or sibling module is imported afresh, never served stale under the new rubric hash
    (which would also poison the expected-value cache). While it runs, its own folder and
    `search` (the rubric's support folder) are on the import path, so it may import sibling modules.
    """
    try:
        source = path.read_bytes()
    except OSError as error:
        raise RubricError([f"{path}:0: cannot read the reference module: {error.strerror}"]) from None
    digest = hashlib.sha256(str(path).encode() + b"\0" + source)
    hash_course_files(digest, path, next((folder for folder in search if folder is not None), None))
    name = f"_grader_reference_{path.stem}_{digest.hexdigest()[:16]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RubricError([f"{path}:0: cannot load the reference module"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folders = [folder for folder in (path.parent, *search) if folder is not None and folder.is_dir()]
    # Its imports of sibling modules go through its own __import__, at load and at call time alike
    # (grader.plan.course_imports): another course's `helpers` is its own, and never left in sys.modules.
    course = CourseModules(folders, data=next((folder for folder in search if folder is not None and folder.is_dir()),
                                              None))
    module.__dict__["__builtins__"] = course.builtins
    try:
        with course.visible():
            run_source(source, path, module)
    except BaseException as error:   # SystemExit and KeyboardInterrupt at import are a broken reference too
        del sys.modules[name]
        if isinstance(error, KeyboardInterrupt):
            raise
        line = _failing_line(error, path)
        reason = f"{type(error).__name__}: {error}"
        if isinstance(error, ModuleNotFoundError):
            reason += f" (searched the reference's folder{' and the support folder' if len(folders) > 1 else ''} " \
                      f"and the installed packages)"
        elif isinstance(error, FileNotFoundError) and error.filename and not os.path.isabs(error.filename):
            reason += relative_file_advice(os.getcwd())
        raise RubricError([f"{path}:{line}: the reference module fails to import: {reason}"]) from None
    return module


def relative_file_advice(folder: str) -> str:
    """Why a data file the course reads by a relative path is not found: open() looks for it in the support folder
    (course_imports.CourseModules.open_), else in the folder the grader was started in, which is another on a TA's
    machine, in Gradescope's container or on a Dask worker."""
    return (f" (open() finds a relative path in the rubric's support folder, else in the folder grader runs in, "
            f"{folder}: put the data file in the support folder, which students get too)")


def _failing_line(error: BaseException, path: Path) -> int:
    """The line of the reference module where an error at import was raised (innermost frame in that file)."""
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename).resolve() == path.resolve():
        return error.lineno or 0
    line = 0
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == path.resolve():
            line = lineno
    return line


def fixtures(rubric: Rubric, reference: ModuleType) -> dict[str, Any]:
    return {name: getattr(reference, name) for name in rubric.fixtures if hasattr(reference, name)}


def _problem(rubric: Rubric, line: int, reason: str) -> str:
    return f"{rubric.path}:{line}: {reason}"


def _graded_before(name: str, earlier: Sequence[Exercise]) -> str:
    """What an isolated name that is wrong may have meant (`neighbour`): asked only for a problem, not for every
    right name at every start-up (difflib's matching, ~0.9 ms for the Taoistic rubric's 12)."""
    return suggest(name, [graded for e in earlier for graded in (e.function, *e.aliases)])


def _validate_names(rubric: Rubric, reference: ModuleType, code: given.Given | None) -> list[str]:
    """Everything a rubric names in the reference module must exist there, with the right kind. `code`: the course's
    code of the given names (given.course_code; None when the rubric gives none)."""
    problems = []
    for index, name in enumerate(rubric.fixtures):
        if not hasattr(reference, name):
            line = rubric.fixture_lines[index] if index < len(rubric.fixture_lines) else 0
            problems.append(_problem(rubric, line, f"fixture '{name}' is not defined in {rubric.reference.name}"))
    problems.extend(_problem(rubric, rubric.given_line, problem) for problem in given.problems(rubric, reference, code))
    for exercise in rubric.exercises:
        where = f"exercise '{exercise.id}'"
        if _lookup(reference, exercise.function) is None:
            nearest = _nearest(reference, exercise.function)
            problems.append(_problem(rubric, exercise.line,
                                     f"{where}: the reference module has no '{exercise.function}'{nearest}"))
        graded = {exercise.function.split(".")[0], *exercise.aliases}
        for name in rubric.fixtures:
            if name in graded:
                problems.append(_problem(rubric, exercise.line, f"{where}: fixture '{name}' has the name of what "
                                                                f"the exercise grades: its cases would use the "
                                                                f"course's value instead of the notebook's"))
        earlier = rubric.exercises[:rubric.exercises.index(exercise)]
        for name in exercise.isolate:
            if not callable(_lookup(reference, name)):    # a misspelling: one sentence, not two
                what = "a method of a class" if "." in name else "a function"
                problems.append(_problem(rubric, exercise.line, f"{where}: isolate names '{name}', which is not "
                                                                f"{what} of the reference module"
                                                                f"{_graded_before(name, earlier)}"))
            elif not any(e.grades(name) for e in earlier):
                # isolation compensates for a helper judged wrong BEFORE: it needs a verdict
                problems.append(_problem(rubric, exercise.line, f"{where}: isolate names '{name}', which no earlier "
                                                                f"exercise grades: it could never be swapped"
                                                                f"{_graded_before(name, earlier)}"))
        for method in exercise.methods:
            try:
                isolated_call(method.name, method.call, _lookup(reference, method.name))
            except (SyntaxError, ValueError) as error:
                problems.append(_problem(rubric, method.line, f"{where}: isolate: method {method.name}: {error}"))
        for mistake in exercise.mistakes:
            if not callable(getattr(reference, mistake.reference, None)):
                problems.append(_problem(rubric, mistake.line, f"{where}: mistake '{mistake.reference}' is not a "
                                                               f"function of the reference module"
                                                               f"{suggest(mistake.reference, _functions(reference))}"))
        for variant in exercise.variants:
            if _lookup(reference, variant.reference) is None or not callable(_lookup(reference, variant.reference)):
                problems.append(_problem(rubric, variant.line, f"{where}: variant '{variant.reference}' is not a "
                                                               f"function of the reference module"))
            for prior, function in variant.when:
                answers = {m.reference for m in _exercise_named(rubric, prior).mistakes} | \
                    {v.reference for v in _exercise_named(rubric, prior).variants}
                if function not in answers:
                    problems.append(_problem(rubric, variant.line, f"{where}: variant '{variant.reference}' needs "
                                                                   f"'{prior}' to match '{function}', which is not "
                                                                   f"a mistake or variant of '{prior}'"))
        for spec in (exercise.check, *(c.check for c in exercise.cases if c.check)):
            if spec.name not in CHECKS and not callable(getattr(reference, spec.name, None)):
                known = [*CHECKS, *_functions(reference)]     # a check function may have any name
                problems.append(_problem(rubric, spec.line or exercise.line,
                                         f"{where}: unknown check '{spec.name}'{suggest(spec.name, known)}"))
        for spec in (exercise.check, *(c.check for c in exercise.cases if c.check)):
            problems.extend(_check_options(rubric, reference, spec, where, exercise.line))
        for case in exercise.cases:
            if case.generate and not callable(getattr(reference, case.generate, None)):
                problems.append(_problem(rubric, case.line, f"{where}: generator '{case.generate}' is not a "
                                                            f"function of the reference module"
                                                            f"{suggest(case.generate, _functions(reference))}"))
    return problems


_MISSING = object()


def _functions(reference: ModuleType) -> list[str]:
    """Names of the reference module's own functions: what a misspelt mistake or generator name may mean."""
    return [name for name, value in vars(reference).items()
            if inspect.isfunction(value) and value.__module__ == reference.__name__]


def _exercise_named(rubric: Rubric, exercise_id: str) -> Exercise:
    for exercise in rubric.exercises:
        if exercise.id == exercise_id:
            return exercise
    return Exercise(exercise_id, exercise_id, 0, exercise_id, (), "proportional", CheckSpec("equal"), (), (), (),
                    (), (), Limits())


def _nearest(module: ModuleType, dotted: str) -> str:
    """" (did you mean 'findZero'?)" for a mistyped graded name (`function: findZer`, `Board.hh`): the closest
    public name of the module, or of the class a dotted name's first part is."""
    from grader.rubric.schema import suggest
    owner, _, name = dotted.rpartition(".")
    found = _lookup(module, owner) if owner else module
    if found is None:
        return suggest(owner, [n for n in vars(module) if not n.startswith("_")])
    return suggest(name, [n for n in dir(found) if not n.startswith("_")])


def _lookup(module: ModuleType, dotted: str) -> Any:
    """`name` or `Class.method` in a module; None when absent."""
    value: Any = module
    for part in dotted.split("."):
        value = getattr(value, part, _MISSING)
        if value is _MISSING:
            return None
    return value


def _check_options(rubric: Rubric, reference: ModuleType, spec: CheckSpec, where: str, line: int) -> list[str]:
    """A check's options, validated once, when the plan is built, against what the check declares."""
    return [_problem(rubric, spec.line or line, f"{where}: {problem}")
            for problem in option_problems(spec.name, spec.options, reference)]


def _generated(exercise: Exercise, spec: CaseSpec, numbered: dict[str, int],
               ordered: list[dict[str, Any]]) -> list[Case]:
    """The cases of one `generate:` spec, from what its generator produced (smallest first)."""
    base = spec.id or f"{exercise.id}.{spec.generate}"
    # The same generator may feed several cases of an exercise (a public and a hidden seed): number on.
    first = numbered.get(base, 0) + 1
    numbered[base] = first + len(ordered) - 1
    return [
        Case(id=f"{base}[{n}]", exercise=exercise.id, call=spec.call, visibility=spec.visibility,
             check=spec.check or exercise.check, variables=variables, set=spec.set, probe=spec.probe,
             reduce=spec.reduce or exercise.reduce,
             expect=spec.expect, weight=spec.weight, line=spec.line)
        for n, variables in enumerate(ordered, start=first)
    ]


def _ordered(rubric: Rubric, reference: ModuleType, spec: CaseSpec) -> list[dict[str, Any]]:
    """What the generator produces for the spec's seed and count, smallest first (so feedback shows the smallest
    failing input)."""
    assert spec.generate is not None
    generator = getattr(reference, spec.generate)
    try:
        produced = generator(random.Random(spec.seed), spec.count)
    except Exception as error:
        raise RubricError([_problem(rubric, spec.line, f"generator '{spec.generate}' fails: "
                                                       f"{type(error).__name__}: {error}")]) from None
    if not isinstance(produced, list) or not all(isinstance(v, dict) for v in produced):
        raise RubricError([_problem(rubric, spec.line, f"generator '{spec.generate}' must return a list of dicts")])
    if len(produced) < spec.count:
        raise RubricError([_problem(rubric, spec.line, f"generator '{spec.generate}' returned {len(produced)} "
                                                       f"case{'s' if len(produced) != 1 else ''} for count "
                                                       f"{spec.count}: lower the count or make it produce more")])
    return sorted(produced, key=lambda variables: codec.size(codec.encode(variables)))


Generated = Mapping[str, list[dict[str, Any]]]   # spec_key -> what a generate: spec's generator produced, ordered


def spec_key(exercise: Exercise, index: int) -> str:
    """The name of an exercise's `index`-th case entry (1-based) in a Generated mapping."""
    return f"{exercise.id}#{index}"


def generate(rubric: Rubric, reference: ModuleType) -> dict[str, list[dict[str, Any]]]:
    """Every generate: spec's variables, each list smallest first: the only part of expanding that runs
    reference code, so it is what the sealed cache keeps."""
    return {spec_key(exercise, index): _ordered(rubric, reference, spec)
            for exercise in rubric.exercises for index, spec in enumerate(exercise.cases, start=1) if spec.generate}


def expand(rubric: Rubric, reference: ModuleType, generated: Generated | None = None) -> dict[str, tuple[Case, ...]]:
    """Every exercise's concrete cases, fixed ones in rubric order then generated ones smallest first.

    `generated` is what `generate` returned (perhaps in an earlier run, from the cache); without it, it is called."""
    if generated is None:
        generated = generate(rubric, reference)
    cases: dict[str, tuple[Case, ...]] = {}
    for exercise in rubric.exercises:
        produced: list[Case] = []
        numbered: dict[str, int] = {}
        for index, spec in enumerate(exercise.cases, start=1):
            if spec.generate:
                produced.extend(_generated(exercise, spec, numbered, generated[spec_key(exercise, index)]))
            else:
                produced.append(Case(
                    id=spec.id or f"{exercise.id}#{index}", exercise=exercise.id, call=spec.call,
                    visibility=spec.visibility, check=spec.check or exercise.check, set=spec.set,
                    probe=spec.probe, reduce=spec.reduce or exercise.reduce, expect=spec.expect, weight=spec.weight,
                    line=spec.line))
        cases[exercise.id] = tuple(produced)
    # Expected values and results are keyed by case id, so one id naming two cases would mix up their answers.
    first: dict[str, Case] = {}
    problems = []
    for case in (case for group in cases.values() for case in group):
        if case.id in first:
            problems.append(_problem(rubric, case.line, f"exercise '{case.exercise}': case id '{case.id}' is "
                                                        f"already used at line {first[case.id].line}"))
        first.setdefault(case.id, case)
    if problems:
        raise RubricError(problems)
    return cases


@contextlib.contextmanager
def patched_globals(module: ModuleType, values: Mapping[str, Any]) -> Iterator[None]:
    """Set module globals for one call and put them back afterwards."""
    missing = object()
    saved = {name: module.__dict__.get(name, missing) for name in values}
    module.__dict__.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is missing:
                module.__dict__.pop(name, None)
            else:
                module.__dict__[name] = old


def evaluate_reference(reference: ModuleType, case: Case, data: Mapping[str, Any], exercise: Exercise,
                       implementation: Any = None) -> Any:
    """The reference's answer to a case (optionally with the graded function swapped for a mistake)."""
    data = copy.deepcopy(dict(data))   # a reference (or mistake) that mutates its input must not change fixtures
    settings = {name: evaluate_data(code, data) for name, code in case.set}
    namespace = {**reference.__dict__, **data}
    method = None
    if implementation is not None and "." in exercise.function:
        owner, attribute = exercise.function.split(".")
        method = (getattr(reference, owner), attribute, getattr(getattr(reference, owner), attribute))
        setattr(method[0], attribute, implementation)   # a wrong method is swapped into the class for the call
    elif implementation is not None:
        namespace.update({name: implementation for name in exercise.names})
    try:
        return _evaluate(reference, case, namespace, settings)
    finally:
        if method is not None:
            setattr(method[0], method[1], method[2])


def _evaluate(reference: ModuleType, case: Case, namespace: dict, settings: Mapping[str, Any]) -> Any:
    with patched_globals(reference, settings):
        random.seed(0)
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            value = eval(compile(case.call, f"<rubric {case.id}>", "eval"), namespace)  # noqa: S307 - trusted
            if case.reduce:
                value = eval(compile(case.reduce, f"<rubric {case.id} reduce>", "eval"),  # noqa: S307
                             {**namespace, "result": value})
            return value


class PlanTimeout(BaseException):
    """What a build_plan limiter raises in a reference answer that runs past its time (not an Exception: the
    course's own `except Exception` cannot take it)."""


Limiter = Callable[[float], contextlib.AbstractContextManager[Any]]   # seconds of CPU -> a block raising PlanTimeout


def unlimited(seconds: float) -> contextlib.AbstractContextManager[Any]:
    """No limit: the plan's own layer cannot interrupt code (the sandbox's alarm comes after it)."""
    return contextlib.nullcontext()


def _expected(rubric: Rubric, reference: ModuleType, exercise: Exercise, case: Case,
              data: Mapping[str, Any], limit: Limiter = unlimited) -> Expected:
    where = f"exercise '{exercise.id}', case {case.id}"
    unknown = free_names(case.call) - set(data) - set(reference.__dict__) - set(dir(builtins))
    if unknown:
        from grader.rubric.schema import suggest
        known = sorted({*data, *(name for name in vars(reference) if not name.startswith("_"))})
        meant = "".join(suggest(name, known) for name in sorted(unknown))   # `inversion(GOAL)` for `inversions`
        raise RubricError([_problem(rubric, case.line, f"{where}: unknown name(s) {', '.join(sorted(unknown))} "
                                                       f"(not a fixture, variable or reference function){meant}")])
    for what, code in [*(("set " + name, code) for name, code in case.set), ("expect", case.expect)]:
        if code is None:
            continue
        strangers = free_names(code) - set(data) - set(SAFE_BUILTINS)
        if strangers:
            raise RubricError([_problem(rubric, case.line, f"{where}: {what} may only use fixtures and variables, "
                                                           f"not {', '.join(sorted(strangers))}")])
    # CPU time of this thread, as the student's limit is CPU time: wall time here would grow with the load of
    # the machine that built the plan, and with it (x case_factor) every student's limit for this case.
    started = time.thread_time()
    # A case whose answer takes longer than a whole submission may run can be answered by no student; without a
    # limit, validate (and assign) ran on silently for as long as the reference did (a 15-puzzle IDA* case on a
    # board of Korf's set: hours).
    seconds = exercise.limits.submission_seconds
    try:
        with limit(seconds) as held:
            if case.expect is not None:
                value = evaluate_data(case.expect, data)
            else:
                value = evaluate_reference(reference, case, data, exercise)
        if getattr(held, "expired", False):
            raise PlanTimeout()
    except PlanTimeout:
        raise RubricError([_problem(rubric, case.line, f"{where}: the reference did not answer {case.call!r} within "
                                                       f"{seconds:g} s of CPU time (limits.submission_seconds, a "
                                                       f"whole submission's time): no student could")]) from None
    except (ExpressionError, Exception) as error:
        what = f"expect {case.expect!r} fails" if case.expect is not None else f"the reference fails on {case.call!r}"
        raise RubricError([_problem(rubric, case.line, f"{where}: {what}: "
                                                       f"{type(error).__name__}: {error}")]) from None
    seconds = time.thread_time() - started
    allowed = exercise.limits.case_timeout(seconds)
    return Expected(codec.encode(value), seconds,
                    _answers(reference, case, data, exercise, [m.reference for m in exercise.mistakes], limit,
                             allowed),
                    _answers(reference, case, data, exercise, [v.reference for v in exercise.variants], limit,
                             allowed))


def _answers(reference: ModuleType, case: Case, data: Mapping[str, Any], exercise: Exercise,
             names: list[str], limit: Limiter = unlimited, seconds: float = 0.0) -> tuple[tuple[str, Any], ...]:
    """What each named reference function (a mistake or a variant) answers to the case, within a student's time
    for it (`seconds`): a known mistake that never ends on an input (a search without its visited set) hung the
    plan, so validate, assign and grade, with no word."""
    answers = []
    for name in names:
        try:
            with limit(seconds) as held:
                answer = evaluate_reference(reference, case, data, exercise, _lookup(reference, name))
            if getattr(held, "expired", False):
                continue
            answers.append((name, codec.encode(answer)))
        except PlanTimeout:   # it cannot be recognised on this input, as one that crashes
            continue
        except Exception:  # one that crashes on this input cannot be recognised here: it is left out
            pass
    return tuple(answers)


def cache_path(rubric: Rubric, cache_dir: Path | None) -> Path | None:
    if cache_dir is None:
        return None
    return cache_dir / f"{rubric.assignment}-{rubric.sha256[:16]}-{__version__}.json"


@dataclass(frozen=True)
class Cached:
    """What a sealed cache file holds: the expected values, and the generators' output when it is plain data."""

    expected: dict[str, Expected]
    generated: dict[str, list[dict[str, Any]]] | None


def _load_cached(path: Path | None, rubric: Rubric, key: bytes | None) -> tuple[Cached | None, str]:
    """The cached expected values (and generated variables), if the file verifies under the folder's key; else
    None and why not ("" when there is simply no file)."""
    if path is None or key is None:
        return None, ""
    body, why = sealed.read_sealed(key, path)
    if body is None:
        return None, why
    try:
        stored = json.loads(body.decode("utf-8"))
        if stored.get("format") != CACHE_FORMAT or stored.get("rubric_sha256") != rubric.sha256:
            return None, "it was made for another rubric or by another grader"
        expected = {}
        for case_id, e in stored["expected"].items():
            mistakes = tuple((str(name), answer) for name, answer in e["mistakes"])
            variants = tuple((str(name), answer) for name, answer in e["variants"])
            for value in (e["value"], *(answer for _, answer in mistakes + variants)):
                codec.decode(value)  # a damaged value must never reach a check
            expected[case_id] = Expected(e["value"], float(e["seconds"]), mistakes, variants)
        generated = None
        if stored["generated"] is not None:
            generated = {str(spec): [{str(name): codec.decode(wire) for name, wire in variables.items()}
                                     for variables in produced]
                         for spec, produced in stored["generated"].items()}
        return Cached(expected, generated), ""
    except (ValueError, KeyError, TypeError, AttributeError) as error:   # codec.CodecError is a ValueError
        return None, f"it does not hold expected values ({type(error).__name__})"


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    """The wire of a value that decodes back to an equal value of the same exact types (builtins all the way
    down; a class mark is dropped by decode, so it fails the comparison), or _NOT_PLAIN: a generator's instance
    of a course class, or a numpy array, is generated again each time."""
    try:
        wire = codec.encode(value)
        back = codec.decode(wire)
    except (ValueError, TypeError, RecursionError):
        return _NOT_PLAIN
    if codec.encode(back) != wire or not _builtins_only(back):
        return _NOT_PLAIN
    return wire


def _builtins_only(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) in (list, tuple, set, frozenset):
            pending.extend(item)
        elif type(item) is dict:
            pending.extend(item.keys())
            pending.extend(item.values())
        elif type(item) not in (type(None), bool, int, float, str, bytes):
            return False
    return True


def _storable(generated: Generated) -> dict[str, list[dict[str, Any]]] | None:
    """The generators' output as wires, when every variable is plain data; else None (not cached)."""
    stored = {}
    for spec, produced in generated.items():
        wires = []
        for variables in produced:
            encoded = {name: _plain(value) for name, value in variables.items()}
            if any(type(name) is not str or wire is _NOT_PLAIN for name, wire in encoded.items()):
                return None
            wires.append(encoded)
        stored[spec] = wires
    return stored


def _store(path: Path | None, rubric: Rubric, expected: Mapping[str, Expected], generated: Generated,
           key: bytes | None) -> None:
    if path is None or key is None:
        return
    payload = {"format": CACHE_FORMAT, "rubric_sha256": rubric.sha256,
               "expected": {k: {"value": e.value, "seconds": e.seconds, "mistakes": [list(m) for m in e.mistakes],
                                "variants": [list(v) for v in e.variants]}
                            for k, e in expected.items()},
               "generated": _storable(generated)}
    sealed.write_sealed(key, path, json.dumps(payload).encode("utf-8"))


def build_plan(rubric: Rubric, cache_dir: Path | None = None, limit: Limiter = unlimited) -> Plan:
    """Load the reference, expand the cases and compute (or load) every expected value (each reference answer
    within `limit`, given by a caller that can interrupt code: validate's TimeLimit).

    Cached values are believed only when their file's seal verifies under the cache folder's key (see
    grader.plan.sealed); a file that does not is recomputed and named in the plan's warnings.
    """
    reference = load_reference(rubric.reference, (rubric.support,))
    code = given.course_code(rubric, reference) if rubric.given else None   # read once: checked here, graded later
    problems = _validate_names(rubric, reference, code)
    if problems:
        raise RubricError(problems)
    location = cache_path(rubric, cache_dir)
    warnings: list[str] = []
    key = None
    if cache_dir is not None:
        folder = sealed.folder_key(cache_dir)
        key = folder.key
        warnings.extend(folder.problems)
    cached, why = _load_cached(location, rubric, key)
    generated = cached.generated if cached is not None and cached.generated is not None else None
    if generated is not None and set(generated) != {spec_key(exercise, index) for exercise in rubric.exercises
                                                    for index, spec in enumerate(exercise.cases, start=1)
                                                    if spec.generate}:
        cached, generated, why = None, None, "it does not hold this rubric's generated cases"
    if generated is None:
        generated = generate(rubric, reference)
    cases = expand(rubric, reference, generated)
    expected = cached.expected if cached is not None else None
    if expected is not None and set(expected) != {c.id for group in cases.values() for c in group}:
        expected, why = None, "it does not hold this rubric's cases"
    if why:
        warnings.append(f"expected-value cache {location} was not used: {why}; recomputed from the reference")
    if expected is None:
        base = fixtures(rubric, reference)
        expected = {}
        for exercise in rubric.exercises:
            for case in cases[exercise.id]:
                expected[case.id] = _expected(rubric, reference, exercise, case, {**base, **case.variables}, limit)
        try:
            _store(location, rubric, expected, generated, key)
        except OSError as error:   # grading goes on; it just recomputes next time
            warnings.append(f"expected-value cache {location} could not be written: {error.strerror or error}")
    rubric = replace(rubric, policy=slice_policy(rubric, fixtures(rubric, reference), cases))
    plan = Plan(rubric, reference, cases, expected, tuple(warnings))
    if code is not None:
        plan.memo.get(GIVEN_CODE, lambda: code)
    return plan


def slice_policy(rubric: Rubric, data: Mapping[str, Any], cases: Mapping[str, tuple[Case, ...]]) -> Policy:
    """The rubric's extraction policy without the roots a case gives its own value.

    A case's expression sees the fixtures, its generator's variables and (in a reduce) `result` ahead of the
    notebook's globals, so a notebook's top-level `state = ...` or `result = astar_search(e5)` is never what a
    case reads: such a name is a root only when grading needs it otherwise (a graded name, an isolated helper,
    a name a case sets, or what a support module reads). Without this, a demo search bound to a name like a
    generator variable ran at load time.
    """
    policy = rubric.policy
    if policy.roots is None:
        return policy
    given = set(data) | {"result"} | {name for group in cases.values() for case in group for name in case.variables}
    given |= {node.target.id for group in cases.values() for case in group for node in _walk_code(case.call)
              if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name)}   # `(s := State(...))`
    needed = {name.split(".")[0] for exercise in rubric.exercises for name in (*exercise.names, *exercise.isolate)}
    needed |= {name for group in cases.values() for case in group for name, _ in case.set}
    needed |= support_reads(rubric.support)
    return replace(policy, roots=frozenset(name for name in policy.roots if name not in given or name in needed))


def _walk_code(code: str) -> Iterator[ast.AST]:
    """The nodes of a case's call, for its assignment expressions: a call without the `:=` token has none and is
    not parsed (the Taoistic rubric's 137 calls, ~1.5 ms of every start-up)."""
    if ":=" not in code:
        return iter(())
    try:
        return ast.walk(ast.parse(code, mode="eval"))
    except SyntaxError:
        return iter(())
