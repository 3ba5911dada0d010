"""What the class dashboard adds to the class report: a row per student, wrong answers grouped by what they
are, and pass rates per case folded by generator. Pure functions of the results (and of a similarity
computed beforehand); class_report renders them."""

from __future__ import annotations

import json
import re
import sys
from array import array
from dataclasses import dataclass, field, replace
from typing import Iterator, Mapping, Sequence
from urllib.parse import quote

from grader.incidents import Incident
from grader.store.results import CaseResult, SubmissionResult, not_judged

GROUPS_PER_EXERCISE = 6
GENERATED = re.compile(r"^(?P<group>.+?)\[(?P<index>\d+)\]$")     # exercise.generator[3]


@dataclass(frozen=True)
class StudentRow:
    """One student's line of the table: scores per exercise, and the flags a TA looks at first."""

    student: str
    report: str                              # href of the student's report, relative to the page
    scores: tuple[float | None, ...]         # per exercise of the class, None when the result lacks it
    total: float
    max_total: float
    late: bool                               # the result's late fact (rubric.lateness.assess)
    overrides: tuple[str, ...]               # one line per override in force
    review: bool                             # an override was made for another file than the current one
    similarity: float | None                 # highest score of a flagged pair this student is in
    similarity_link: str                     # href of that pair in the similarity page ("" when none)
    ungraded: bool
    busy: int = 0                            # cases a busy machine kept from being judged (graded again next run)
    penalty: float = 0.0                     # the late policy's, apart from `total`
    state: str = "graded"                    # the result's (results.STATES): "no submission" is not a file's zero


@dataclass(frozen=True)
class AnswerGroup:
    """Students who gave the same wrong answer: the same known mistake (any case), or the same value on a case."""

    exercise: str
    mistake: str                             # the known mistake's name ("" when grouped by value)
    case: str                                # the example's case
    call: str
    message: str
    expected: object                         # wire values of the example, for its board
    got: object
    students: tuple[str, ...]
    cases: int
    path: bool = False                       # the example's check judges a path (CaseResult.path_answer)


@dataclass(frozen=True)
class GeneratorRate:
    """Pass rate of the cases one generator made (or of one written case), over graded submissions."""

    exercise: str
    group: str                               # 'random_moves' for move_dir.random_moves[0..9], else the case name
    cases: int
    runs: int                                # cases times submissions
    passed: int
    lowest: float                            # pass rate of its hardest case
    hardest: str                             # that case's id
    visibility: str                          # 'public', 'hidden' or 'mixed'

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


def report_href(student: str, folder: str) -> str:
    """Where `grader report` writes the student's page (<student>.html), quoted for an href."""
    prefix = folder.rstrip("/") + "/" if folder else ""
    return prefix + quote(f"{student}.html", safe="")


def student_rows(results: Sequence[SubmissionResult], exercises: Sequence[str], *, reports: str = "students",
                 flagged: Mapping[str, tuple[float, str]] | None = None,
                 ungraded=lambda result: False) -> tuple[StudentRow, ...]:
    """A row per student, by name. `flagged` maps a student to (similarity score, href of the pair)."""
    lines = sorted((student_line(result, ungraded=ungraded(result)) for result in results),
                   key=lambda line: line.student)
    return tuple(StudentTable(lines, tuple(exercises), reports, flagged or {}))


@dataclass(frozen=True, slots=True)
class StudentLine:
    """What the class report keeps of each student of a streamed class, for its table and its CSV: a few hundred
    bytes (no cases, no texts but override notes), so 10,000 students cost megabytes, not a result each."""

    student: str
    total: float
    max_total: float
    state: str
    late: bool
    penalty: float
    exercises: tuple[str, ...]               # the result's exercise ids, one tuple shared by every alike result
    scores: array                            # per exercise, in that order
    ungraded: bool
    overrides: tuple[str, ...] = ()          # one line per override in force (describe)
    review: bool = False                     # an override was made for another file than the current one
    override_cells: tuple[str, ...] = ()     # the CSV's override columns (csv_export.override_cells)
    busy: int = 0                            # cases a busy machine kept from being judged: the scores are not final
    incidents: tuple[Incident, ...] = ()     # what the sandbox stopped that only hostile code does (the CSV's column)
    forfeited: tuple[tuple[str, float], ...] = ()   # (exercise, the score the incident policy took), when it took any
    forgiven: tuple[str, ...] = ()           # of those, the exercises a TA gave points back (overrides.forgiven)

    def score_map(self) -> dict[str, float]:
        return dict(zip(self.exercises, self.scores, strict=True))


_EXERCISE_IDS: dict[tuple[str, ...], tuple[str, ...]] = {}


def student_line(result: SubmissionResult, *, ungraded: bool) -> StudentLine:
    """The student's line of a class: scores and flags, with override notes only when the TA made some."""
    ids = tuple(sys.intern(e.id) for e in result.exercises)
    ids = _EXERCISE_IDS.setdefault(ids, ids) if len(_EXERCISE_IDS) < 64 else ids
    line = StudentLine(result.submission, result.total, result.max_total, sys.intern(result.state),
                       bool(result.late), result.penalty, ids, array("d", (e.score for e in result.exercises)),
                       ungraded, busy=not_judged(result)[1], incidents=result.incidents,
                       forfeited=tuple((e.id, e.forfeited) for e in result.exercises if e.forfeited is not None))
    if "overrides" not in result.extra:
        return line
    from grader.report.csv_export import override_cells
    from grader.store.overrides import describe, forgiven, needs_review
    return replace(line, overrides=tuple(describe(result)), review=needs_review(result),
                   override_cells=override_cells(result), forgiven=forgiven(result))


@dataclass(frozen=True)
class StudentTable:
    """The dashboard's table, row by row each time it is read: rows are made from the lines as the page is
    written, never all at once."""

    lines: Sequence[StudentLine]
    exercises: tuple[str, ...]                # the class's exercise columns, in order
    reports: str = "students"
    flagged: Mapping[str, tuple[float, str]] = field(default_factory=dict)

    def __iter__(self) -> Iterator[StudentRow]:
        for line in self.lines:
            scores = line.score_map()
            similarity, link = self.flagged.get(line.student, (None, ""))
            yield StudentRow(
                student=line.student, report=report_href(line.student, self.reports),
                scores=tuple(scores.get(e) for e in self.exercises), total=line.total, max_total=line.max_total,
                late=line.late, overrides=line.overrides, review=line.review, similarity=similarity,
                similarity_link=link, ungraded=line.ungraded, busy=line.busy, penalty=line.penalty, state=line.state)

    def __len__(self) -> int:
        return len(self.lines)


def _value_key(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class AnswerTally:
    """Wrong answers (status fail) gathered one result at a time, per exercise grouped by the known mistake they
    match (the result's `mistake` field) or else by the same value returned on the same case."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, ...], dict]] = {}

    def add(self, result: SubmissionResult) -> None:
        for exercise in result.exercises:
            for case in exercise.cases:
                if case.status != "fail":
                    continue
                mistake = str(getattr(case, "mistake", "") or "")
                key = ("mistake", mistake) if mistake else ("value", case.id, _value_key(case.got))
                group = self._groups.setdefault(exercise.id, {}).setdefault(key, {
                    "mistake": mistake, "example": case, "students": set(), "cases": 0})
                group["students"].add(result.submission)
                group["cases"] += 1

    def groups(self, per_exercise: int = GROUPS_PER_EXERCISE) -> dict[str, tuple[AnswerGroup, ...]]:
        """Per exercise, the biggest groups first (most students, then most cases)."""
        out: dict[str, tuple[AnswerGroup, ...]] = {}
        for exercise_id, by_key in self._groups.items():
            ordered = sorted(by_key.items(), key=lambda item: (-len(item[1]["students"]), -item[1]["cases"],
                                                                item[0]))
            out[exercise_id] = tuple(_group(exercise_id, g) for _, g in ordered[:per_exercise])
        return out


def answer_groups(results: Sequence[SubmissionResult], *, ungraded=lambda result: False,
                  per_exercise: int = GROUPS_PER_EXERCISE) -> dict[str, tuple[AnswerGroup, ...]]:
    """AnswerTally over `results` (by submission; ungraded ones left out)."""
    tally = AnswerTally()
    for result in sorted(results, key=lambda r: r.submission):
        if not ungraded(result):
            tally.add(result)
    return tally.groups(per_exercise)


def _group(exercise: str, group: dict) -> AnswerGroup:
    case: CaseResult = group["example"]
    return AnswerGroup(exercise, group["mistake"], case.id, case.call, case.message, case.expected, case.got,
                       tuple(sorted(group["students"])), group["cases"], case.path_answer)


def generator_rates(rates: Sequence, label=lambda case, exercise: case) -> dict[str, tuple[GeneratorRate, ...]]:
    """Per exercise, class_report.CaseRate rows folded by generator (`random_moves[3]` joins `random_moves`),
    hardest first (lowest pass rate, then lowest single case). `label(case id, exercise id)` is the name a
    case is shown by; a generated one ends in [n]."""
    folded: dict[str, dict[str, list]] = {}
    for rate in rates:
        name = label(rate.case, rate.exercise)
        matched = GENERATED.match(name)
        group = matched["group"] if matched else name
        folded.setdefault(rate.exercise, {}).setdefault(group, []).append(rate)
    out = {}
    for exercise, groups in folded.items():
        rows = []
        for group, members in groups.items():
            hardest = min(members, key=lambda r: (r.rate, r.case))
            visibilities = {m.visibility for m in members}
            rows.append(GeneratorRate(exercise, group, len(members), sum(m.submissions for m in members),
                                      sum(m.passed for m in members), hardest.rate, hardest.case,
                                      visibilities.pop() if len(visibilities) == 1 else "mixed"))
        rows.sort(key=lambda r: (r.rate, r.lowest, r.group))
        out[exercise] = tuple(rows)
    return out
