"""Mutation testing of a rubric: does it catch wrong code, not only pass the reference and fail the template?

For each graded reference function, mutants (grader.authoring.mutants) are screened on the trusted side first: in forked
worker processes under a memory limit and a time limit per case, each mutant's answers are computed like the
reference's. One that does not finish is dropped. One that answers as an accepted variant of the exercise on every
case (eight-puzzle's h1 counting the blank) is equivalent: right code, which grading gives full marks. One that
gives the reference's answer on every case is asked
more questions: the exercise's generators are run with other seeds, smallest input first, and the first input
on which the case's check rejects the mutant makes it a survivor (with that input shown); with none it is
equivalent and dropped. Every other mutant is graded as a submission, in the sandbox, on the cases where its
answers differ: it is killed when it loses points, else it survives (and the generators are asked for an input
that would kill it). The mutation score is killed / (killed + survived).

Known mistakes are graded the same way, on every case: each must lose points and be recognised by its message;
accepted variants must earn full marks.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import resource
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

from grader.authoring.findings import parent_probes
from grader.syntax.calls import call_arguments
from grader.checks.registry import CheckContext, resolve
from grader.judge.options import Options
from grader.authoring.mutants import DEFAULT_MUTANTS, DEFAULT_SECONDS, Mutant, mutants, sample, swapped
from grader.plan.cases import Case, Plan, evaluate_reference
from grader.plan.course_imports import CourseModules, run_source
from grader.store.results import ExerciseResult
from grader.rubric.schema import Exercise
from grader import codec
from grader.sandbox.alarm import TimeLimit
from grader.sandbox.supervisor import temp_root

HUNT_INPUTS = 200            # generated inputs tried, smallest first, to find one that kills a survivor
SCREEN_MEMORY_MB = 1024      # per screening worker, above what the grader already uses


@dataclass(frozen=True)
class MutantVerdict:
    """What became of one mutant."""

    mutant: Mutant
    status: str                  # killed, survived, equivalent, endless, ungraded (time budget spent)
    reason: str = ""             # the first case that differs, or the failing case's message
    killer: str = ""             # for a survivor: the smallest generated input on which the check fails


@dataclass(frozen=True)
class ExerciseMutation:
    exercise: str
    found: int                              # mutants the operators produce
    verdicts: tuple[MutantVerdict, ...]     # the sampled ones
    threshold: float = 0.0

    def count(self, status: str) -> int:
        return sum(v.status == status for v in self.verdicts)

    @property
    def score(self) -> float | None:
        """Share of the non-equivalent, terminating, graded mutants that lose points; None when there are none."""
        judged = self.count("killed") + self.count("survived")
        return self.count("killed") / judged if judged else None

    @property
    def survivors(self) -> list[MutantVerdict]:
        return [v for v in self.verdicts if v.status == "survived"]


@dataclass(frozen=True)
class KnownAnswer:
    """A known mistake (must lose points and be recognised) or an accepted variant (must earn full marks)."""

    exercise: str
    name: str
    kind: str                # mistake or variant
    score: float
    max_score: float
    recognised: bool         # a mistake's message was shown on a failing case
    problem: str = ""


@dataclass(frozen=True)
class MutationReport:
    exercises: tuple[ExerciseMutation, ...]
    known: tuple[KnownAnswer, ...]
    seconds: float
    per_exercise: int
    out_of_time: bool = False

    def exercise(self, exercise_id: str) -> ExerciseMutation:
        return next(e for e in self.exercises if e.exercise == exercise_id)


# ------------------------------------------------------------------------------------- screening (forked)

_SCREEN: dict[str, Any] = {}      # set before the pool forks: the plan and the mutants' sources


class _Endless(BaseException):
    """A mutant's case ran past its time (not an Exception: the mutant's own `except` cannot swallow it)."""


def _limit_worker() -> None:
    try:
        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[0]) * resource.getpagesize()
        limit = used + SCREEN_MEMORY_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _module(source: str, name: str, plan: Plan) -> ModuleType:
    """A mutant of the reference module, loaded as the reference is (plan.cases.load_reference): the modules of its
    own folder and of the support folder are found at load and at call time (plan.course_imports). With its own
    folder alone on sys.path while it loaded, a reference that imports a support module failed to load as every
    mutant, and each mutant was called a survivor ('the module fails to load: ModuleNotFoundError'). Its open() of
    a relative path finds the support folder's data files, as the reference's does."""
    reference = plan.rubric.reference
    module = ModuleType(name)
    module.__file__ = str(reference.parent / f"{name}.py")
    support = plan.rubric.support if plan.rubric.support is not None and plan.rubric.support.is_dir() else None
    course = CourseModules([folder for folder in (reference.parent, support) if folder is not None], data=support)
    module.__dict__["__builtins__"] = course.builtins
    with course.visible():
        run_source(source.encode("utf-8"), Path(module.__file__), module)   # the course's code, mutated
    return module


def _answer(plan: Plan, module: ModuleType, exercise: Exercise, case: Case, seconds: float) -> Any:
    """The module's answer to a case (wire), an ('error', text) pair, or raises _Endless."""
    with TimeLimit(seconds, _Endless) as limit:
        try:
            answer = codec.encode(evaluate_reference(module, case, plan.data(case), exercise))
        except _Endless:
            raise
        except BaseException as error:  # noqa: BLE001 - a mutant may raise anything, SystemExit too
            answer = ("error", f"{type(error).__name__}: {error}")
    if limit.expired:       # an alarm was swallowed (a finalizer, a bare except) and the case came back late
        raise _Endless()
    return answer


def _case_seconds(plan: Plan, exercise: Exercise, case: Case) -> float:
    """Long enough for a mutant that is merely slower; a mutant past it does not terminate for our purpose."""
    return min(exercise.limits.case_timeout(plan.expected[case.id].seconds),
               max(0.5, 20 * plan.expected[case.id].seconds))


def _screen(task: tuple[str, int]) -> tuple[str, str, tuple[str, ...]]:
    """In a worker: (status, reason, cases to grade) of one mutant: equivalent, endless or differs. The cases to
    grade are those whose answer differs from the reference's, and those with probes (a probe may call the
    mutated function again): on any other case the mutant gives the reference's answer, which passes."""
    exercise_id, index = task
    plan: Plan = _SCREEN["plan"]
    mutant: Mutant = _SCREEN["mutants"][exercise_id][index]
    exercise = plan.rubric.exercise(exercise_id)
    cases = plan.cases[exercise_id]
    try:
        module = _module(mutant.source, f"_grader_mutant_{index}", plan)
    except BaseException as error:  # noqa: BLE001 - a mutant that breaks the module at import differs everywhere
        return "differs", f"the module fails to load: {type(error).__name__}: {error}", tuple(c.id for c in cases)
    differing: list[str] = []
    reason = ""
    # Accepted variants it might be (one that applies whatever other exercises did: no `when`): a mutant that
    # answers as one of them on every case is right code, graded full marks, not a survivor.
    like = {variant.reference for variant in exercise.variants if not variant.when}
    for case in cases:
        try:
            got = _answer(plan, module, exercise, case, _case_seconds(plan, exercise, case))
        except _Endless:
            return "endless", f"case {case.id} did not finish", ()
        expected = plan.expected[case.id]
        variants = dict(expected.variants)
        like = {name for name in like
                if name in variants and not isinstance(got, tuple) and codec.same(variants[name], got) is None}
        if isinstance(got, tuple) or codec.same(expected.value, got) is not None:
            shown = got[1] if isinstance(got, tuple) else codec.describe(got, 80)
            reason = reason or f"differs on case {case.id}: {shown}"
            differing.append(case.id)
        elif case.probe:
            differing.append(case.id)
    if not reason:
        return "equivalent", "", ()
    if like:
        return "equivalent", f"answers as the accepted variant '{min(like)}' on every case", ()
    return "differs", reason, tuple(differing)


def _hunt(task: tuple[str, int]) -> str:
    """In a worker: the smallest generated input on which the case's check rejects a survivor ('' if none)."""
    exercise_id, index = task
    plan: Plan = _SCREEN["plan"]
    mutant: Mutant = _SCREEN["mutants"][exercise_id][index]
    exercise = plan.rubric.exercise(exercise_id)
    module = _module(mutant.source, f"_grader_mutant_{index}", plan)
    implementation = getattr(module, exercise.function.split(".")[0], None)
    for case in _more_inputs(plan, exercise):
        expected = _answer_or_none(plan, plan.reference, exercise, case)
        if expected is None:
            continue
        try:
            got = _answer(plan, module, exercise, case, 1.0)
        except _Endless:
            continue
        if isinstance(got, tuple):
            return case.shown_call + f" (raises {got[1]})"
        data = plan.data(case)
        arguments = call_arguments(case.call, data) or ((), {})
        context = CheckContext(expected=expected, got=got, args=arguments[0], kwargs=arguments[1],
                               probes=parent_probes(plan, exercise, case, codec.decode(got), implementation),
                               variables=dict(case.variables), data=data, options=dict(case.check.options),
                               reference=plan.reference)
        try:
            verdict = resolve(case.check.name, plan.reference)(context)
        except Exception:  # noqa: BLE001 - a check that cannot judge this input proves nothing
            continue
        if verdict.fraction < 1.0:
            return case.shown_call
    return ""


def _answer_or_none(plan: Plan, module: ModuleType, exercise: Exercise, case: Case) -> Any:
    try:
        answer = _answer(plan, module, exercise, case, 2.0)
    except _Endless:
        return None
    return None if isinstance(answer, tuple) else answer


def _more_inputs(plan: Plan, exercise: Exercise) -> list[Case]:
    """Inputs beyond the rubric's: each generated case's generator run with other seeds, smallest first."""
    found: dict[str, Case] = {}
    for spec in exercise.cases:
        if not spec.generate:
            continue
        generator = getattr(plan.reference, spec.generate)
        for attempt in range(1, 9):
            try:
                produced = generator(random.Random(f"{spec.seed}/{attempt}"), max(spec.count, 10))
            except Exception:  # noqa: BLE001 - reported by the plan when it matters
                break
            for variables in produced:
                try:
                    key = codec.canonical(codec.encode(variables))
                except codec.CodecError:
                    continue
                found.setdefault(key, Case(
                    id=f"{exercise.id}.hunt", exercise=exercise.id, call=spec.call, visibility="hidden",
                    check=spec.check or exercise.check, variables=variables, set=spec.set, probe=spec.probe,
                    reduce=spec.reduce or exercise.reduce, line=spec.line))
            if len(found) >= HUNT_INPUTS:
                break
    return sorted(found.values(), key=lambda c: codec.size(codec.encode(dict(c.variables))))[:HUNT_INPUTS]


# ------------------------------------------------------------------------------------- grading (sandbox)


def exercise_plan(plan: Plan, exercise: Exercise, only: Sequence[str] | None = None) -> Plan:
    """The plan restricted to one exercise (and to some of its cases): a mutant is graded on the cases of what
    it mutates."""
    rubric = replace(plan.rubric, exercises=(exercise,))
    cases = plan.cases[exercise.id]
    if only is not None:
        cases = tuple(case for case in cases if case.id in set(only))
    return replace(plan, rubric=rubric, cases={exercise.id: cases})


@dataclass(frozen=True)
class _Entry:
    """One implementation to grade on one exercise: a mutant, a known mistake or an accepted variant."""

    key: Any
    exercise: Exercise
    name: str                 # its name in the combined module
    definition: str = ""      # source appended to the reference (mutants); known answers are in it already
    only: tuple[str, ...] | None = None   # the cases to grade (mutants: where they differ); None: all


def _grade_entries(source: str, entries: Sequence[_Entry], plan: Plan, support: Mapping[str, str],
                   options: Options, folder: Path, label: str, deadline: float) -> dict[Any, ExerciseResult | None]:
    """Grade many implementations in one sandbox: the reference module with every mutant appended under its
    own name is loaded once, then each entry is graded as its exercise with the graded name pointing at it
    (in a fork of the loaded child, as every exercise is). What the deadline leaves ungraded is None."""
    from grader.extract.source import extract
    from grader.judge.grading import child_statements, course_preload, grade_exercise, hidden_folders
    from grader.intake.notebook import read_notebook
    from grader.sandbox.process import ProcessLimits, Sandbox, SandboxError

    path = folder / f"{label}.py"
    path.write_text(source + "".join("\n\n" + entry.definition for entry in entries if entry.definition),
                    encoding="utf-8")
    notebook = read_notebook(path)
    extracted = extract(notebook, plan.rubric.policy)
    limits = plan.rubric.limits.merged({"memory_mb": options.memory_mb})
    process_limits = ProcessLimits(memory_mb=limits.memory_mb, cpu_seconds=int(max(1, deadline - time.monotonic()))
                                   + 30, load_seconds=limits.load_seconds, disk_mb=limits.disk_mb, files=limits.files)
    results: dict[Any, ExerciseResult | None] = {entry.key: None for entry in entries}
    with Sandbox(child_statements(extracted), support, process_limits, limits.output_bytes,
                 hidden_folders(plan, path), allow_root=options.allow_root_sandbox,
                 preload=course_preload(plan.rubric.template, support)) as sandbox:
        try:
            loaded = sandbox.load().names
        except SandboxError:
            return results
        for entry in entries:
            if time.monotonic() >= deadline:
                break
            # The module's helpers are the reference's own: isolating them (a second run with the reference's
            # answers over the pipe) could change nothing but the time it takes.
            exercise, seen, names = replace(entry.exercise, isolate=()), extracted, list(loaded)
            if entry.name != exercise.function:
                # The graded name's own definition is hidden from this entry, so it is graded under the name it
                # has here (as a notebook's alias would be), and every case's call is renamed to it.
                top = exercise.function.split(".")[0]
                exercise = replace(exercise, function=top, aliases=(entry.name,))
                seen = replace(extracted, definitions={k: v for k, v in extracted.definitions.items() if k != top})
                names = [name for name in loaded if name != top]
            single = exercise_plan(plan, exercise, entry.only)
            results[entry.key] = grade_exercise(single, exercise, sandbox, notebook, seen, names, deadline + 60,
                                                options)
    return results


def _lost(result: ExerciseResult) -> str:
    """Why a graded implementation lost points ('' when it did not)."""
    if result.score >= result.max_score:
        return ""
    case = next((c for c in result.cases if c.status != "pass"), None)
    return f"{case.id}: {case.status}: {case.message}"[:200] if case else "lost points"


def _known_entries(plan: Plan, source: str) -> tuple[list[_Entry], list[tuple[Any, str]]]:
    """Known mistakes and accepted variants as entries; a mistake of a method `Class.m` (a plain function of
    self) is graded as the module with that method swapped (grader.authoring.mutants.swapped) instead."""
    entries, separate = [], []
    for exercise in plan.rubric.exercises:
        answers = [("mistake", m.reference) for m in exercise.mistakes]
        answers += [("variant", v.reference) for v in getattr(exercise, "variants", ())]
        for kind, name in answers:
            key = ("known", exercise.id, kind, name)
            judged_as = exercise
            if kind == "variant":
                # A variant that depends on earlier verdicts (`when`) is checked as if they held: graded alone,
                # there are none, and what is proved is that it earns full marks where it applies.
                judged_as = replace(exercise, variants=tuple(replace(v, when=()) if v.reference == name else v
                                                             for v in exercise.variants))
            if "." in exercise.function:
                separate.append((key, swapped(source, exercise.function, name)))
            else:
                entries.append(_Entry(key, judged_as, name))
    return entries, separate


def run_mutation(plan: Plan, support: Mapping[str, str], *, per_exercise: int = DEFAULT_MUTANTS,
                 seconds: float = DEFAULT_SECONDS, jobs: int | None = None,
                 options: Options = Options()) -> MutationReport:
    """Mutation-test every exercise of a plan (see the module's docstring)."""
    started = time.monotonic()
    deadline = started + seconds
    jobs = jobs or max(1, min(os.cpu_count() or 1, 4))
    source = plan.rubric.reference.read_text(encoding="utf-8")
    chosen: dict[str, list[Mutant]] = {}
    found: dict[str, int] = {}
    for exercise in plan.rubric.exercises:
        every = mutants(source, exercise.function, exercise.id)
        found[exercise.id] = len(every)
        chosen[exercise.id] = sample(every, per_exercise, exercise.id) if per_exercise > 0 else []
    tasks = [(exercise_id, index) for exercise_id, group in chosen.items() for index in range(len(group))]
    screened: dict[tuple[str, int], tuple[str, str, tuple[str, ...]]] = {}
    hunted: dict[tuple[str, int], str] = {}
    verdicts: dict[tuple[str, int], MutantVerdict] = {}
    out_of_time = False
    _SCREEN.update(plan=plan, mutants=chosen)
    # Forked before any thread of this run starts: the workers hold the plan and the reference already.
    pool = multiprocessing.get_context("fork").Pool(jobs, initializer=_limit_worker) if tasks else None
    try:
        pending = {task: pool.apply_async(_screen, (task,)) for task in tasks} if pool else {}
        for task, answer in pending.items():
            try:
                screened[task] = answer.get(timeout=max(0.1, deadline - time.monotonic()) + 5.0)
            except multiprocessing.TimeoutError:
                screened[task] = ("endless", "its screening did not finish", ())
        entries: list[_Entry] = []
        for task in tasks:
            status, reason, differing = screened[task]
            mutant = chosen[task[0]][task[1]]
            if status != "differs":
                verdicts[task] = MutantVerdict(mutant, status, reason)
            else:
                name = f"{mutant.top}__mutant_{task[1]}_{len(entries)}"
                entries.append(_Entry(task, plan.rubric.exercise(task[0]), name, mutant.renamed(name), differing))
        # A mutant with the reference's answers on every case may still be wrong: the generators are asked for
        # more inputs (while the sandbox grades the others), and one that tells it apart makes it a survivor.
        alike = [task for task in tasks if screened[task][0] == "equivalent" and not screened[task][1]]
        alike_hunts = {task: pool.apply_async(_hunt, (task,)) for task in alike} if pool else {}
        known, separate = _known_entries(plan, source)
        # Known answers first: they are always graded, whatever the budget leaves for mutants.
        ordered = known + entries
        chunks = [ordered[i::jobs] for i in range(jobs) if ordered[i::jobs]]
        results: dict[Any, ExerciseResult | None] = {}
        with tempfile.TemporaryDirectory(prefix="mutants-", dir=temp_root()) as scratch, \
                ThreadPoolExecutor(max_workers=jobs) as threads:
            folder = Path(scratch)
            futures = [threads.submit(_grade_entries, source, chunk, plan, support, options, folder, f"chunk{n}",
                                      deadline) for n, chunk in enumerate(chunks)]
            futures += [threads.submit(_grade_entries, text, [_Entry(key, plan.rubric.exercise(key[1]),
                                                                      plan.rubric.exercise(key[1]).function)],
                                       plan, support, options, folder, f"known{n}",
                                       max(deadline, time.monotonic() + 60))
                        for n, (key, text) in enumerate(separate)]
            for future in futures:
                results.update(future.result())
        for entry in entries:
            mutant = chosen[entry.key[0]][entry.key[1]]
            result = results.get(entry.key)
            if result is None:
                out_of_time = True
                verdicts[entry.key] = MutantVerdict(mutant, "ungraded", "the mutation time budget was spent")
            elif _lost(result):
                verdicts[entry.key] = MutantVerdict(mutant, "killed", _lost(result))
            else:
                # Graded on the cases where its answer differs, it lost nothing: the checks took that answer.
                verdicts[entry.key] = MutantVerdict(mutant, "survived",
                                                    f"{screened[entry.key][1]}, an answer the rubric accepted")
        answers = []
        for entry in [*known, *(_Entry(key, plan.rubric.exercise(key[1]), "") for key, _ in separate)]:
            _, exercise_id, kind, name = entry.key
            exercise = plan.rubric.exercise(exercise_id)
            say = next((m.say for m in exercise.mistakes if m.reference == name), "")
            answers.append(_judge_known(exercise, name, kind, say, results.get(entry.key)))
        survivors = [task for task, verdict in verdicts.items() if verdict.status == "survived"]
        hunts = {task: pool.apply_async(_hunt, (task,)) for task in survivors} if pool else {}
        for task, hunt in [*alike_hunts.items(), *hunts.items()]:
            try:
                hunted[task] = hunt.get(timeout=max(0.1, deadline - time.monotonic()) + 5.0)
            except multiprocessing.TimeoutError:
                out_of_time = True
            except Exception:  # noqa: BLE001 - no killer found is the honest answer then
                hunted[task] = ""
        for task in alike:
            if hunted.get(task):
                verdicts[task] = replace(verdicts[task], status="survived",
                                         reason="gives the reference's answer on every case of the rubric")
    finally:
        _SCREEN.clear()
        if pool is not None:
            pool.terminate()
            pool.join()
    exercises = []
    for exercise in plan.rubric.exercises:
        group = [replace(verdicts[(exercise.id, i)], killer=hunted.get((exercise.id, i), ""))
                 for i in range(len(chosen[exercise.id]))]
        exercises.append(ExerciseMutation(exercise.id, found[exercise.id], tuple(group),
                                          exercise.limits.mutation_score))
    return MutationReport(tuple(exercises), tuple(answers), round(time.monotonic() - started, 2), per_exercise,
                          out_of_time)


def _judge_known(exercise: Exercise, name: str, kind: str, say: str, result: ExerciseResult | None) -> KnownAnswer:
    if result is None:
        return KnownAnswer(exercise.id, name, kind, 0.0, exercise.points, False, "could not be graded")
    if kind == "variant":
        problem = "" if result.score >= result.max_score else \
            f"the accepted variant scores {result.score:g}/{result.max_score:g}: {_lost(result)}"
        return KnownAnswer(exercise.id, name, kind, result.score, result.max_score, True, problem)
    recognised = any(case.mistake == name for case in result.cases if case.status != "pass")
    problem = ""
    if result.score >= result.max_score:
        problem = "the known mistake loses no points"
    elif not recognised:
        problem = "the known mistake loses points but its message is never shown (no failing case has its answer)"
    return KnownAnswer(exercise.id, name, kind, result.score, result.max_score, recognised, problem)


def report_problems(report: MutationReport, rubric_path: Path, lines: Mapping[str, int]) -> list[str]:
    """Validation problems: thresholds not reached, mistakes that are not caught, variants not accepted."""
    problems = []
    for exercise in report.exercises:
        score = exercise.score
        if exercise.threshold and score is not None and score < exercise.threshold:
            problems.append(f"{rubric_path}:{lines.get(exercise.exercise, 0)}: exercise '{exercise.exercise}': "
                            f"mutation score {score:.0%} is below its threshold {exercise.threshold:.0%} "
                            f"({len(exercise.survivors)} surviving mutants)")
    for known in report.known:
        if known.problem:
            problems.append(f"{rubric_path}:{lines.get(known.exercise, 0)}: exercise '{known.exercise}': "
                            f"{known.kind} '{known.name}': {known.problem}")
    return problems


def _few_graded(exercise: ExerciseMutation, per_exercise: int) -> list[str]:
    """A line when under half the sampled mutants were graded and more are to be had. A search's mutants mostly
    never end (a bound that no longer grows): a 15-puzzle IDA* read 'mutation score 100%' from 2 graded mutants
    of 6 (4 endless), while its check accepted the start board alone as a path, which 2 survivors of 40 showed."""
    sampled = len(exercise.verdicts)
    judged = exercise.count("killed") + exercise.count("survived")
    if not sampled or judged * 2 >= sampled or exercise.found <= sampled:
        return []
    more = min(exercise.found, 4 * max(per_exercise, sampled))
    return [f"    only {judged} of the {sampled} sampled mutants could be graded ({exercise.count('endless')} endless, "
            f"{exercise.count('equivalent')} equivalent): a score of so few says little; --mutants {more} samples "
            f"more of the {exercise.found}"]


def describe(report: MutationReport, diffs: int = 3) -> list[str]:
    """The report as text lines: per exercise the score and counts, then each survivor with its diff."""
    lines = [f"mutation testing: {report.per_exercise} mutants per exercise at most, {report.seconds:.1f} s"
             + (" (time budget spent: some mutants were not graded)" if report.out_of_time else "")]
    for exercise in report.exercises:
        score = exercise.score
        shown = "n/a" if score is None else f"{score:.0%}"
        threshold = f" (threshold {exercise.threshold:.0%})" if exercise.threshold else ""
        lines.append(f"  {exercise.exercise}: mutation score {shown}{threshold}: {exercise.count('killed')} killed, "
                     f"{exercise.count('survived')} survived, {exercise.count('equivalent')} equivalent, "
                     f"{exercise.count('endless')} endless"
                     + (f", {exercise.count('ungraded')} ungraded" if exercise.count("ungraded") else "")
                     + f" (of {exercise.found} mutants)")
        lines.extend(_few_graded(exercise, report.per_exercise))
        for verdict in exercise.survivors[:diffs]:
            lines.append(f"    survived {verdict.mutant.id}: {verdict.mutant.description} ({verdict.reason})")
            lines.extend("      " + line for line in verdict.mutant.diff.rstrip("\n").splitlines()[2:])
            if verdict.killer:
                lines.append(f"      would be killed by: {verdict.killer}")
    for known in report.known:
        state = "ok" if not known.problem else known.problem
        lines.append(f"  {known.kind} {known.exercise}/{known.name}: {known.score:g}/{known.max_score:g}, {state}")
    return lines
