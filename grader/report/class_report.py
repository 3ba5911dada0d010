"""The class report: one self-contained HTML dashboard of a graded class for TAs, and the CSV beside it."""

from __future__ import annotations

import statistics
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from grader.files import atomic_open
from grader.report.class_outputs import (Classroom, Reading, Written, read_results, report_context,
                                         probing_warnings, same_file_warnings)
from grader.intake.warning import GraderWarning, Kind
from grader.report.dashboard import (
    AnswerGroup, AnswerTally, GeneratorRate, StudentLine, StudentRow, StudentTable, generator_rates, student_line)
from grader.store.gradebook import incident_cell
from grader.store.results import NO_SUBMISSION, CaseResult, SubmissionResult, not_judged
from grader.store.twins import same_files, warning_lines
from grader.report.similarity import Pair, Similarity
from grader.report.student import shown_title
from grader.store.status import (AFTER_TIMEOUTS, BUDGET, BUSY, RAISED, STATUSES, TOO_SLOW, WRONG, headline,
                                 machine_busy, reason_of)
from grader.textsafe import display

TEMPLATES = Path(__file__).parent / "templates"
NOT_RUN = (BUDGET, AFTER_TIMEOUTS)   # reasons of a case shown as an error or a timeout that never ran
TEMPLATE = "class_report.html.j2"
EXAMPLE_STUDENTS = 3          # names shown beside a mistake; the rest are counted
MISTAKES_PER_EXERCISE = 8
SLOWEST = 10
REPORTS = "students"          # folder beside the page with every student's report, which the names link to
SHOWN_CHARACTERS = 400        # a message longer than this is cut in the page (the JSON keeps it whole)


# ---------------------------------------------------------------------------------------------- the summaries


@dataclass(frozen=True)
class ClassSummary:
    """The headline numbers: how many, how well, and how they were graded."""

    submissions: int
    ungraded: int                          # results at zero because the file could not be graded
    max_total: float
    mean: float | None                     # None when there is no submission
    median: float | None
    full_marks: int
    zero: int
    isolation: tuple[tuple[str, int], ...]  # (level, submissions), commonest first
    rubrics: tuple[str, ...]
    grader_versions: tuple[str, ...]
    totals: tuple[float, ...]              # every submission's total, in submission order
    unreadable: int = 0                    # of `ungraded`: the file could not be read
    failed: int = 0                        # of `ungraded`: the grader could not finish it (worker stopped, died)
    absent: int = 0                        # of `ungraded`: no submission (the LMS names them, no file of theirs came)
    late: int = 0                          # flagged late by the LMS or the due date
    grader_problems: int = 0               # cases where a reference check or helper crashed (status "problem")
    problem_submissions: int = 0           # submissions with at least one such case: regrade after the fix
    busy_cases: int = 0                    # cases a busy machine kept from being judged (reason `busy machine`)
    busy_submissions: int = 0              # submissions with at least one: the next run grades them again
    zero_ungraded: int = 0                 # of `zero`, the ones that could not be graded (also in `ungraded`)


@dataclass(frozen=True)
class ExerciseSummary:
    id: str
    title: str
    max_score: float
    submissions: int
    mean: float
    median: float
    zero: int
    partial: int
    full: int

    @property
    def mean_share(self) -> float:
        return self.mean / self.max_score if self.max_score else 0.0


@dataclass(frozen=True)
class CaseRate:
    """How one case went across the graded submissions."""

    exercise: str
    case: str
    visibility: str
    call: str
    submissions: int
    passed: int
    failed: int
    errors: int
    timeouts: int
    missing: int
    problems: int = 0                      # grader problems: the check crashed, not the student's answer
    busy: int = 0                          # not judged: the machine was too busy (graded again by the next run)

    @property
    def rate(self) -> float:
        return self.passed / self.submissions if self.submissions else 0.0


@dataclass(frozen=True)
class MistakeGroup:
    """Failing cases of one exercise that share a cause, keyed by their message with the values taken out.

    `kind` is "mistake" (a known-mistake or hint sentence followed the check's own message), "fail"
    (the check's message alone), "error", "timeout" or "missing". `summary` is the text to show (the
    sentence, or the error type and message); `detail` the other half of a first example.
    """

    exercise: str
    kind: str
    key: str
    summary: str
    detail: str
    submissions: int
    cases: int
    students: tuple[str, ...]              # every submission that hit it, sorted


@dataclass(frozen=True)
class Trouble:
    """An exercise of a submission in which a case raised or ran out of time."""

    submission: str
    exercise: str
    errors: int                            # cases that raised
    timeouts: int                          # cases that ran out of time
    status: str                            # of the first such case
    message: str
    words: str = ""                        # its status in words, from its status and reason (store.status)
    not_run: int = 0                       # shown as errors or timeouts, never run: the submission's time budget
                                           # spent, or earlier cases timed out (10 "timeouts" were 2 and 8 skipped)


@dataclass(frozen=True)
class WarningGroup:
    """One kind of warning about one subject (a missing module, an exception at load, an unreadable file), the
    sentence of its first student (without its place) and who got it."""

    kind: str                              # grader.intake.warning.Kind's word ("" for old text-only warnings)
    subject: str                           # the module, the exception type ...
    message: str
    students: tuple[str, ...]


@dataclass(frozen=True)
class Ungraded:
    submission: str
    reason: str


@dataclass(frozen=True)
class SlowSubmission:
    submission: str
    seconds: float
    total: float
    max_total: float
    slowest_exercise: str
    exercise_seconds: float
    exercise_cpu: float | None = None    # CPU time the kernel charged its cases (None: not measured)


@dataclass(frozen=True)
class ClassReport:
    """Everything the page shows, computed from results alone; rendering only formats it."""

    title: str
    summary: ClassSummary
    exercises: tuple[ExerciseSummary, ...]
    cases: tuple[CaseRate, ...]
    mistakes: tuple[MistakeGroup, ...]
    troubles: tuple[Trouble, ...]
    ungraded: tuple[Ungraded, ...]
    warnings: tuple[WarningGroup, ...]
    slowest: tuple[SlowSubmission, ...]
    problems: tuple[str, ...]              # result files that could not be read, and mixed rubrics
    students: Iterable[StudentRow] = ()    # the dashboard's table, by name (a StudentTable: rows made as read)
    answers: Mapping[str, tuple[AnswerGroup, ...]] = field(default_factory=dict)      # by exercise
    generators: Mapping[str, tuple[GeneratorRate, ...]] = field(default_factory=dict)  # by exercise
    similar: tuple[Pair, ...] = ()         # flagged pairs of the similarity check, most similar first
    similarity_page: str = ""              # href of the similarity page ("" when there is none)
    similarity_note: str = ""              # why there is no similarity section, when there is none


def _ordered(results: Sequence[SubmissionResult]) -> list[SubmissionResult]:
    """By submission id, so the page does not depend on the order the files were listed in."""
    return sorted(results, key=lambda r: (r.submission, r.path))


def is_ungraded(result: SubmissionResult) -> bool:
    """A result the grader wrote at zero because the file could not be read or run (every case 'not graded')."""
    return result.state != "graded"


def exercise_order(results: Sequence[SubmissionResult]) -> list[tuple[str, str, float]]:
    """(id, title, max score) in rubric order: the results' exercises, first seen first."""
    seen: dict[str, tuple[str, str, float]] = {}
    for result in _ordered(results):
        for exercise in result.exercises:
            seen.setdefault(exercise.id, (exercise.id, exercise.title, exercise.max_score))
    return list(seen.values())


def summarize(results: Sequence[SubmissionResult]) -> ClassSummary:
    return tally(results).summary()


def exercise_summaries(results: Sequence[SubmissionResult]) -> tuple[ExerciseSummary, ...]:
    """Per exercise over every submission that has it (an ungraded file counts: its zero is its grade)."""
    return tally(results).exercises()


def case_rates(results: Sequence[SubmissionResult]) -> tuple[CaseRate, ...]:
    """Per case, by exercise (rubric order) then case (rubric order), over graded submissions only:
    an unreadable file says nothing about how hard a case is.
    """
    return tally(results).cases()


def tally(results: Iterable[SubmissionResult], *, ordered: bool = False) -> "ClassTally":
    """Everything the page needs from `results`, in one pass. `ordered`: they already come sorted by
    submission (the gradebook gives them so), and are read one at a time instead of sorted in memory."""
    counted = ClassTally()
    for result in (results if ordered else _ordered(list(results))):
        counted.add(result)
    return counted


class ClassTally:
    """The class report's numbers gathered one result at a time, so a class of 10,000 is never held whole:
    what is kept per submission is its line (name, scores, flags: dashboard.StudentLine), the names in each
    group and, for an exercise that raised or timed out, its first message."""

    def __init__(self) -> None:
        self.totals: list[float] = []
        self.count = 0
        self.ungraded_count = 0
        self.states: dict[str, int] = {}
        self.late = 0
        self.grader_problems = 0
        self.problem_submissions = 0
        self.busy_cases = 0
        self.busy_submissions = 0
        self.max_total = 0.0
        self.full_marks = 0
        self.zero = 0
        self.zero_ungraded = 0
        self.levels: dict[str, int] = {}
        self.rubrics: set[str] = set()
        self.versions: set[str] = set()
        self.order: dict[str, tuple[str, str, float]] = {}          # exercise id -> (id, title, max score)
        self.scores: dict[str, list[float]] = {}
        self.case_counts: dict[tuple[str, str], dict[str, int]] = {}
        self.case_info: dict[tuple[str, str], tuple[str, str]] = {}
        self.groups: dict[tuple[str, str], dict] = {}
        self.trouble: list[Trouble] = []
        self.ungraded_rows: list[Ungraded] = []
        self.warning_rows: dict[tuple[str, str], tuple[GraderWarning, set[str]]] = {}
        self.slow: list[SlowSubmission] = []
        self.keep_slowest = SLOWEST
        self.lines: list[StudentLine] = []          # the student table and the CSV, a few hundred bytes each
        self.files: list[tuple[str, str, str, str]] = []   # (student, sha256, path, state): ids of one file's bytes
        self.answers = AnswerTally()

    def add(self, result: SubmissionResult) -> None:
        ungraded_result = is_ungraded(result)
        self.files.append((result.submission, result.sha256, result.path, result.state))
        self.lines.append(student_line(result, ungraded=ungraded_result))
        if not ungraded_result:
            self.answers.add(result)
        self.count += 1
        self.totals.append(result.total)
        self.ungraded_count += ungraded_result
        self.states[result.state] = self.states.get(result.state, 0) + 1
        self.late += result.late
        self.max_total = max(self.max_total, result.max_total)
        self.full_marks += result.max_total > 0 and result.total >= result.max_total
        self.zero += result.total == 0
        self.zero_ungraded += result.total == 0 and ungraded_result
        self.levels[result.isolation] = self.levels.get(result.isolation, 0) + 1
        self.rubrics.add(result.rubric)
        self.versions.add(result.grader_version)
        problems, busy = not_judged(result)
        self.grader_problems += problems
        self.problem_submissions += problems > 0
        self.busy_cases += busy
        self.busy_submissions += busy > 0
        times = []
        for exercise in result.exercises:
            self.order.setdefault(exercise.id, (exercise.id, exercise.title, exercise.max_score))
            self.scores.setdefault(exercise.id, []).append(exercise.score)
            measured = [c.cpu_seconds for c in exercise.cases if c.cpu_seconds is not None]
            times.append((sum(c.seconds for c in exercise.cases), exercise.id, sum(measured) if measured else None))
            bad = [c for c in exercise.cases if c.status in ("error", "timeout")]
            if bad:
                ran = [c for c in bad if c.reason not in NOT_RUN]
                self.trouble.append(Trouble(
                    submission=result.submission, exercise=exercise.id,
                    errors=sum(c.status == "error" for c in ran), timeouts=sum(c.status == "timeout" for c in ran),
                    status=bad[0].status, message=bad[0].message, words=headline(bad[0].status, bad[0].reason),
                    not_run=len(bad) - len(ran)))
            if ungraded_result:
                continue
            for case in exercise.cases:
                key = (exercise.id, case.id)
                self.case_info.setdefault(key, (case.visibility, case.call))
                counts = self.case_counts.setdefault(key, {})
                # a busy machine's case apart from a rubric's problem: the TA's fix differs (wait for the next run)
                status = BUSY if machine_busy(case.status, case.reason) else case.status
                counts[status] = counts.get(status, 0) + 1
                if case.status == "pass":
                    continue
                kind, message, summary, detail = failure_key(case)
                group = self.groups.setdefault((exercise.id, message), {
                    "kind": kind, "summary": summary, "detail": detail, "students": set(), "cases": 0})
                group["students"].add(result.submission)
                group["cases"] += 1
        if ungraded_result:
            self.ungraded_rows.append(Ungraded(
                submission=result.submission,
                reason=result.warnings[0].shown if result.warnings else "no reason recorded"))
        # The TA sees what the grading machine lacked (inert stand-ins) beside the students' warnings.
        for warning in (*result.warnings, *result.environment):
            _, students = self.warning_rows.setdefault(warning_key(warning), (warning, set()))
            students.add(result.submission)
        exercise_seconds, exercise_id, exercise_cpu = max(times, key=lambda item: (item[0], item[1]),
                                                          default=(0.0, "", None))
        self.slow.append(SlowSubmission(result.submission, result.seconds, result.total, result.max_total,
                                        exercise_id, exercise_seconds, exercise_cpu))
        if len(self.slow) > 4 * self.keep_slowest:      # keep the slowest few, not one row per student
            self.slow = _slowest_first(self.slow)[:self.keep_slowest]

    def summary(self) -> ClassSummary:
        totals = tuple(self.totals)
        return ClassSummary(
            submissions=self.count, ungraded=self.ungraded_count, max_total=self.max_total,
            mean=statistics.fmean(totals) if totals else None, median=statistics.median(totals) if totals else None,
            full_marks=self.full_marks, zero=self.zero, zero_ungraded=self.zero_ungraded,
            isolation=tuple(sorted(self.levels.items(), key=lambda item: (-item[1], item[0]))),
            rubrics=tuple(sorted(self.rubrics)), grader_versions=tuple(sorted(self.versions)), totals=totals,
            unreadable=self.states.get("unreadable", 0), failed=self.states.get("failed", 0),
            absent=self.states.get(NO_SUBMISSION, 0), late=self.late,
            grader_problems=self.grader_problems, problem_submissions=self.problem_submissions,
            busy_cases=self.busy_cases, busy_submissions=self.busy_submissions)

    def exercise_order(self) -> list[tuple[str, str, float]]:
        return list(self.order.values())

    def exercises(self) -> tuple[ExerciseSummary, ...]:
        summaries = []
        for exercise_id, title, max_score in self.exercise_order():
            scores = self.scores.get(exercise_id, [])
            summaries.append(ExerciseSummary(
                id=exercise_id, title=title, max_score=max_score, submissions=len(scores),
                mean=statistics.fmean(scores) if scores else 0.0,
                median=statistics.median(scores) if scores else 0.0,
                zero=sum(s <= 0 for s in scores), full=sum(max_score > 0 and s >= max_score for s in scores),
                partial=sum(0 < s < max_score for s in scores)))
        return tuple(summaries)

    def _rank(self) -> dict[str, int]:
        return {exercise_id: n for n, (exercise_id, _, _) in enumerate(self.exercise_order())}

    def cases(self) -> tuple[CaseRate, ...]:
        rank = self._rank()
        counts, info = self.case_counts, self.case_info
        keys = sorted(counts, key=lambda k: rank[k[0]])   # stable: cases keep their first-seen order
        return tuple(CaseRate(
            exercise=k[0], case=k[1], visibility=info[k][0], call=info[k][1], submissions=sum(counts[k].values()),
            passed=counts[k].get("pass", 0), failed=counts[k].get("fail", 0), errors=counts[k].get("error", 0),
            timeouts=counts[k].get("timeout", 0), missing=counts[k].get("missing", 0),
            problems=counts[k].get("problem", 0), busy=counts[k].get(BUSY, 0)) for k in keys)

    def mistakes(self) -> tuple[MistakeGroup, ...]:
        rank = self._rank()
        ordered = sorted(self.groups.items(), key=lambda item: (
            rank[item[0][0]], -len(item[1]["students"]), -item[1]["cases"], item[0][1]))
        return tuple(MistakeGroup(
            exercise=exercise_id, kind=group["kind"], key=key, summary=group["summary"], detail=group["detail"],
            submissions=len(group["students"]), cases=group["cases"], students=tuple(sorted(group["students"])))
            for (exercise_id, key), group in ordered)

    def troubles(self) -> tuple[Trouble, ...]:
        return tuple(self.trouble)

    def ungraded(self) -> tuple[Ungraded, ...]:
        return tuple(self.ungraded_rows)

    def warnings(self) -> tuple[WarningGroup, ...]:
        ordered = sorted(self.warning_rows.items(), key=lambda item: (-len(item[1][1]), item[0]))
        return tuple(WarningGroup(kind, subject, first.text or "(empty warning)", tuple(sorted(students)))
                     for (kind, subject), (first, students) in ordered)

    def slowest(self, count: int = SLOWEST) -> tuple[SlowSubmission, ...]:
        return tuple(_slowest_first(self.slow)[:count])

    def by_student(self) -> list[StudentLine]:
        """The lines by name (a gradebook of several rubrics streams each rubric's students in order)."""
        lines = self.lines
        if any(a.student > b.student for a, b in zip(lines, lines[1:], strict=False)):
            return sorted(lines, key=lambda line: line.student)
        return lines


def _slowest_first(rows: list[SlowSubmission]) -> list[SlowSubmission]:
    return sorted(rows, key=lambda row: (-row.seconds, row.submission))


# ------------------------------------------------------------------------------------------- grouping causes


def warning_key(warning: GraderWarning) -> tuple[str, str]:
    """What warnings alike share: their kind and subject (one missing module is one row however many cells
    import it), read from fields. A warning stored before warnings had fields is its text alone, word for word."""
    if warning.kind == Kind.TEXT:
        return "", warning.text
    return warning.kind.value, warning.subject


def failure_key(case: CaseResult) -> tuple[str, str, str, str]:
    """(kind, key, summary, detail) of a case that did not pass: what groups it with the same mistake.

    Read from the case's fields, never from its message (student code puts any text it likes in an
    exception, and the check's message holds the student's values): a known mistake groups by which one it
    is, anything else by its cause, which the grader wrote without the student's values. A result stored
    before causes were (cause "") groups by its whole message, word for word.
    """
    reason = reason_of(case.status, case.reason)
    if case.mistake and reason == WRONG:
        return "mistake", f"mistake:{case.mistake}", case.advice or f"the known mistake {case.mistake}", case.message
    cause = case.cause or case.message or "(no message)"
    if reason == WRONG:
        return "fail", f"fail:{cause}", cause, case.message
    kind = case.status if case.status in STATUSES else "error"
    detail = []
    if case.where and reason == TOO_SLOW:
        detail.append(f"still running at {case.where}")
    if case.limit:
        detail.append(f"limit {case.limit:g} s")
    if case.culprit:
        detail.append(f"the error is in {case.culprit}")
    if case.advice:
        detail.append(case.advice)
    summary = case.error or cause if reason == RAISED else cause
    return kind, f"{reason or kind}:{cause}", summary, "; ".join(detail) or (case.message if case.cause else "")


def common_mistakes(results: Sequence[SubmissionResult]) -> tuple[MistakeGroup, ...]:
    """Every cause of failing cases per exercise, commonest first (most submissions, then most cases).

    The summary and detail shown are those of the first submission (by id) that hit the group.
    """
    return tally(results).mistakes()


def troubles(results: Sequence[SubmissionResult]) -> tuple[Trouble, ...]:
    """Exercises in which a case raised or timed out, by submission then exercise."""
    return tally(results).troubles()


def ungraded(results: Sequence[SubmissionResult]) -> tuple[Ungraded, ...]:
    return tally(results).ungraded()


def warning_groups(results: Sequence[SubmissionResult]) -> tuple[WarningGroup, ...]:
    """The grader's warnings without their cell and line, so one missing module is one row; commonest first."""
    return tally(results).warnings()


def slowest(results: Sequence[SubmissionResult], count: int = SLOWEST) -> tuple[SlowSubmission, ...]:
    """The submissions that took longest to grade, with the exercise that took longest in each."""
    counted = ClassTally()
    counted.keep_slowest = count
    for result in _ordered(list(results)):
        counted.add(result)
    return counted.slowest(count)


def _incident_cost(line: StudentLine) -> str:
    """Who scored a student's incidents: the rubric's policy, or a TA who gave back every point it took."""
    took = {exercise for exercise, points in line.forfeited if points}
    return "a TA gave back what the rubric's policy took" if took and took <= set(line.forgiven) \
        else "the rubric's policy scored it"


def build_report(results: Iterable[SubmissionResult] | ClassTally, *, title: str | None = None,
                 problems: Sequence[str] = (), reports: str = REPORTS, similarity: Similarity | None = None,
                 similarity_page: str = "", similarity_note: str = "") -> ClassReport:
    """The report of `results` (any order), or of a tally already gathered one result at a time.

    `reports` is the folder (relative to the page) of the students' reports, which their names link to;
    `similarity`, computed beforehand, flags students and lists the flagged pairs (linked into
    `similarity_page` when given)."""
    counted = results if isinstance(results, ClassTally) else tally(results)
    summary = counted.summary()
    flagged: dict[str, tuple[float, str]] = {}
    for rank, pair in enumerate(similarity.pairs if similarity is not None else (), start=1):
        for student in (pair.left, pair.right) if pair.flagged else ():
            flagged.setdefault(student, (pair.score, f"{similarity_page}#pair-{rank}" if similarity_page else ""))
    rates = counted.cases()
    notes = list(problems)
    # incidents first: an attack is what a TA must look at before a grade goes out
    # (from the students' lines, which keep them: by student alone, as one id may have results of two rubrics)
    notes += [f"incidents of {line.student} (the sandbox stopped what no solution does; "
              f"{_incident_cost(line)}): {incident_cell(line.incidents, dict(line.forfeited), line.forgiven)}"
              for line in sorted((line for line in counted.lines if line.incidents), key=lambda line: line.student)]
    # one student under two ids, or a copy: what such ids may be, once, then one line per group
    notes += [line.strip() for line in warning_lines(same_files(counted.files))]
    if len(summary.rubrics) > 1:
        notes.append(f"these results come from {len(summary.rubrics)} rubrics ({', '.join(summary.rubrics)}): "
                     f"their scores are not comparable")
    if title is None:
        title = f"Class report: {summary.rubrics[0]}" if len(summary.rubrics) == 1 else "Class report"
    return ClassReport(
        title=title, summary=summary, exercises=counted.exercises(), cases=rates,
        mistakes=counted.mistakes(), troubles=counted.troubles(), ungraded=counted.ungraded(),
        warnings=counted.warnings(), slowest=counted.slowest(), problems=tuple(notes),
        students=StudentTable(counted.by_student(), tuple(e for e, _, _ in counted.exercise_order()),
                              reports=reports, flagged=flagged),
        answers=counted.answers.groups(), generators=generator_rates(rates, case_name),
        similar=similarity.flagged if similarity is not None else (), similarity_page=similarity_page,
        similarity_note=similarity_note)


# ------------------------------------------------------------------------------------------------- rendering


def number(value: float | None) -> str:
    """28.8, 30, 17.3: one decimal at most, none when whole."""
    if value is None:
        return "–"
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def shorten(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def case_name(case_id: str, exercise_id: str) -> str:
    """'random_moves[3]' for 'move_dir.random_moves[3]', '#2' for 'move_dir#2': the table names the exercise."""
    if case_id.startswith(exercise_id) and case_id[len(exercise_id):][:1] in (".", "#"):
        rest = case_id[len(exercise_id):]
        return rest[1:] if rest.startswith(".") else rest
    return case_id


def _figures(report: ClassReport) -> dict[str, str]:
    if not report.summary.submissions:
        return {}
    from grader.report import plots
    shares = [plots.ExerciseShares(e.id, e.zero, e.partial, e.full, e.mean_share) for e in report.exercises]
    figures = {"totals": plots.total_histogram(report.summary.totals, report.summary.max_total)}
    if shares:
        figures["exercises"] = plots.exercise_shares(shares)
    return figures


def _environment():
    import jinja2
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    environment.filters.update(number=number, percent=percent, shorten=shorten, case_name=case_name)
    return environment


def render(report: ClassReport, csv_name: str | None = None) -> str:
    return "".join(render_chunks(report, csv_name))


def render_chunks(report: ClassReport, csv_name: str | None = None) -> Iterator[str]:
    """The page as it is rendered, piece by piece: a class of 10,000 is written to its file without the page
    (a row per student) ever being one string in memory."""
    mistakes: dict[str, list[MistakeGroup]] = {}
    for group in report.mistakes:
        mistakes.setdefault(group.exercise, []).append(group)
    titles = {e.id: shown_title(e.id, e.title) for e in report.exercises}
    cases: dict[str, list[CaseRate]] = {}
    for rate in report.cases:
        cases.setdefault(rate.exercise, []).append(rate)
    from markupsafe import Markup

    from grader.report import boards_html
    from grader.report.dashboard import GENERATED
    groups: dict[str, dict[str, list[CaseRate]]] = {}
    for rate in report.cases:
        name = case_name(rate.case, rate.exercise)
        matched = GENERATED.match(name)
        groups.setdefault(rate.exercise, {}).setdefault(matched["group"] if matched else name, []).append(rate)
    script = sort_script()
    return _environment().get_template(TEMPLATE).generate(
        report=report, late_column=any(row.late for row in report.students), figures=_figures(report),
        mistakes=mistakes, titles=titles,
        cases_by_exercise=list(cases.items()), cases_by_group=groups,
        shown_mistakes=MISTAKES_PER_EXERCISE, example_students=EXAMPLE_STUDENTS, csv_name=csv_name,
        board=boards_html.html_comparison, board_css=Markup(boards_html.HTML_CSS), script=Markup(script),
        csp=Markup(f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src '{script_hash(script)}'"))


def sort_script() -> str:
    return (TEMPLATES / "sort_table.js").read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script and nothing else."""
    import base64
    import hashlib
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def class_report_html(results: Sequence[SubmissionResult], *, title: str | None = None,
                      problems: Sequence[str] = (), csv_name: str | None = None, reports: str = REPORTS,
                      similarity: Similarity | None = None, similarity_page: str = "",
                      similarity_note: str = "") -> str:
    """The dashboard as one HTML string: inline CSS, figures as data: URIs, no network, and one inline script
    (sorting the student table) that the page's Content-Security-Policy allows by its hash.

    Same results (in any order) give the same bytes. `problems` are listed as warnings (e.g. result files
    that could not be read); `csv_name`, the gradebook CSV's file name beside the page, is linked; student
    names link to `reports`/<student>.html.
    """
    return render(build_report(results, title=title, problems=problems, reports=reports, similarity=similarity,
                               similarity_page=similarity_page, similarity_note=similarity_note), csv_name)


def _write_atomically(path: Path, chunks: Iterable[str]) -> None:
    with atomic_open(path) as stream:
        for chunk in chunks:
            stream.write(display(chunk))   # any string: a lone surrogate becomes U+FFFD


def write_class_report(results: Iterable[SubmissionResult], path: Path, *, title: str | None = None,
                       problems: Sequence[str] = (), ordered: bool = False, notebooks=None,
                       results_folder: Path | None = None, template: Path | None = None,
                       student_reports: bool = True, similarity: Similarity | None = None,
                       similarity_note: str = "", made_from: Callable[[SubmissionResult], str | None] | None = None,
                       ) -> Path:
    """Write the HTML page to `path` and the gradebook CSV beside it (same name, .csv), every student's report
    into the `students` folder beside it (what the names link to) and, given a similarity, its page and CSV
    (<page>-similarity.html/.csv). Returns `path`.

    `ordered`: the results come sorted by submission and are read once, one at a time (a class streamed
    from the gradebook); otherwise they are sorted first. `made_from`: what a student's reports are made from
    (None: not known); reports made from the same, untouched since, are kept (grader.report.stamps, in
    `results_folder`): a class report run again after a few students changed renders only theirs.
    """
    similarity_page = ""
    if similarity is not None:
        from grader.report.similarity_page import write_similarity
        similarity_page = f"{Path(path).stem}-similarity.html"
        write_similarity(similarity, Path(path).parent / similarity_page)
    from grader.report.csv_export import OVERRIDE_COLUMNS, ScoreLine, write_score_csv
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    csv_path = path.with_suffix(".csv")
    overridden = False

    def rows_too(stream: Iterable[SubmissionResult]) -> Iterator[SubmissionResult]:
        nonlocal overridden
        from grader.report import formats
        from grader.report.stamps import Stamps, stamped
        reports = path.parent / REPORTS
        with (stamped(results_folder, "class-report", reports) if results_folder is not None and made_from
              else nullcontext(Stamps({}))) as stamps:
            for result in stream:
                overridden = overridden or "overrides" in result.extra
                if student_reports:     # one at a time, as the class streams past
                    formats.write([result], reports, ("md", "html"), notebooks=notebooks,
                                  results_folder=results_folder, template=template, made_from=made_from,
                                  stamps=stamps)
                yield result

    counted = tally(rows_too(results if ordered else _ordered(list(results))), ordered=True)
    _write_atomically(path, render_chunks(build_report(
        counted, title=title, problems=problems, similarity=similarity, similarity_page=similarity_page,
        similarity_note=similarity_note), csv_path.name))
    # The CSV from the same lines, in the order the class came (by student): a row each as it is written.
    rows = (ScoreLine(line.student, line.total, line.max_total, line.state, line.score_map(),
                      line.override_cells or ((_number_cell(line.total), "", "") if overridden else ()), line.late,
                      line.penalty, line.incidents, line.forfeited, line.forgiven) for line in counted.lines)
    columns = [exercise_id for exercise_id, _, _ in counted.exercise_order()]
    write_score_csv(columns, rows, csv_path, OVERRIDE_COLUMNS if overridden else ())
    return path


def _number_cell(value: float) -> str:
    from grader.report.csv_export import number as csv_number
    return csv_number(value)


def write_dashboard(classroom: Classroom, target: Path) -> Written:
    """The class output `dashboard`: the page at `target`, its CSV, every student's report (students/) and,
    unless classroom.similarity is off or copydetect is missing, the similarity page it links to."""
    from grader.report.similarity import SimilarityUnavailable, class_similarity
    similarity, note = None, ""
    if not classroom.similarity:
        note = "The similarity check was not run (--no-similarity)."
    else:
        try:
            similarity = class_similarity(classroom)
        except SimilarityUnavailable as error:
            note = str(error)
    def write(results: Iterable[SubmissionResult], *, problems: Sequence[str] = (), ordered: bool = False,
              made_from: Callable[[SubmissionResult], str | None] | None = None) -> Path:
        return write_class_report(results, target, title=classroom.title, problems=problems, ordered=ordered,
                                  notebooks=classroom.notebooks, results_folder=classroom.folder,
                                  template=classroom.template, similarity=similarity, similarity_note=note,
                                  made_from=made_from)

    count, probed = 0, []
    if classroom.book() is None:
        loaded = read_results(classroom.folder)
        path, count = write(loaded.results, problems=loaded.problems), len(loaded.results)
    else:
        reading = Reading(classroom, report_context(classroom.notebooks, classroom.template))
        probed = probing_warnings(classroom)
        path = write(reading, problems=probed, ordered=True, made_from=reading.made_from)
        count = reading.count
    paths = [path, path.with_suffix(".csv"), path.parent / REPORTS]
    if similarity is not None:
        paths.append(path.parent / f"{path.stem}-similarity.html")
    line = (f"class report of {count} submission{'s' if count != 1 else ''} written to {path} "
            f"(and {path.with_suffix('.csv')}, the students' "
            f"reports in {path.parent / REPORTS}/"
            + (f", {path.parent / (path.stem + '-similarity.html')}" if similarity is not None else "") + ")")
    return Written(tuple(paths), count, (line, *same_file_warnings(classroom), *(f"warning: {p}" for p in probed)))

