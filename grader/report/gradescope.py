"""Gradescope's results.json from a graded submission: one Gradescope test per case, scores that add up exactly.

The format is Gradescope's published "Autograder Specifications" (gradescope-autograders.readthedocs.io,
/en/latest/specs/): top-level `score`, `execution_time`, `output`, `output_format`, `test_output_format`,
`test_name_format`, `visibility`, `stdout_visibility`, `extra_data` and `tests`, each test with `score`,
`max_score`, `status` (`passed` | `failed`), `name`, `number`, `output`, `tags`, `visibility` and `extra_data`.
Visibility values are `hidden`, `after_due_date`, `after_published` and `visible`.

Why one test per case: a student sees which call failed and what it returned, and a TA can regrade a single
case in Gradescope. An exercise's points are split over its cases by their weights, and its score over the
cases by the credit each earned, in whole units of 0.0001 (the grader's own rounding, grader.judge.scoring) with
largest remainders, so the tests' scores add up to the exercise score, and the exercises' to the total,
exactly (as decimals; each JSON number is the float nearest its 4-decimal value).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Sequence

from grader.files import write_text
from grader.judge.feedback import renoted, same_failures
from grader.report.class_outputs import Classroom, Written
from grader.report.own_name import for_student, own_name
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult, late_line
from grader import codec
from grader.store.status import MISSING, headline
from grader.textsafe import display

DECIMALS = 4                       # grader.judge.scoring rounds scores to 4 decimals
UNITS = 10 ** DECIMALS
PUBLIC, HIDDEN = "visible", "after_published"      # Gradescope visibility of public and hidden cases
NAME_CHARS = 200                   # a generated case's call spells out its data; names stay one line
VALUE_CHARS = 600                  # expected / got as shown to the student
TEXT_CHARS = 2000                  # traceback and printed output, each
WARNINGS_SHOWN = 12


def _units(score: float) -> int:
    return int(round(score * UNITS))


def _points(units: int) -> float:
    return units / UNITS           # the float nearest the 4-decimal value: 6667 -> 0.6667


def split_units(total: int, shares: Sequence[float], caps: Sequence[int] | None = None) -> list[int]:
    """Whole units proportional to `shares` that add up to `total` exactly, none above its cap if it can be helped.

    Largest remainder method: every part gets the floor of its exact share, the units left over go to the
    largest remainders (ties to the earlier part). If the caps cannot hold `total`, the last part takes the rest,
    so the sum stays exact whatever the input.
    """
    count = len(shares)
    if count == 0:
        return []
    limits = list(caps) if caps is not None else [total] * count
    weight = sum(max(0.0, s) for s in shares)
    if total <= 0 or weight <= 0:
        parts = [0] * count
        parts[-1] = total
        return parts
    exact = [total * max(0.0, s) / weight for s in shares]
    parts = [min(math.floor(x), cap) for x, cap in zip(exact, limits, strict=True)]
    left = total - sum(parts)
    order = sorted(range(count), key=lambda i: (-(exact[i] - math.floor(exact[i])), i))
    while left > 0:
        open_parts = [i for i in order if parts[i] < limits[i]]
        if not open_parts:
            parts[-1] += left
            break
        for i in open_parts[:left]:
            parts[i] += 1
        left = total - sum(parts)
    return parts


def _case_units(exercise: ExerciseResult) -> tuple[list[int], list[int]]:
    """(max units, score units) of each case of the exercise.

    The score is spread by the credit each case earned (weight times fraction). That also fits all-or-nothing
    scoring: a score of zero spreads to zeros, full marks to every case's full share.
    """
    cases = exercise.cases
    maxima = split_units(_units(exercise.max_score), [c.weight for c in cases])
    earned = _units(exercise.score)
    shares = [c.weight * min(1.0, max(0.0, c.fraction)) for c in cases]
    if earned and sum(shares) <= 0:
        shares = [float(m) for m in maxima]   # a score the cases do not explain: spread it by size
    return maxima, split_units(earned, shares, maxima)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text) - limit} more characters)"


def _case_output(case: CaseResult) -> str:
    """What the student reads in the test's box. Public cases show the call, expected beside got, the error and
    the printed output; hidden ones (they appear once grades are published) only their verdict and the rubric's
    advice, or the grader's reason for not running one: a message of a case that ran quotes what the code
    answered, raised or where it was, which the code can fill with the hidden input."""
    word = headline(case.status, case.reason)
    if case.visibility != "public":
        said = case.message if case.status == MISSING else case.advice
        return "\n".join([word + (f": {said}" if said else ""),
                          "(hidden case: its call, answers and messages are not shown)"])
    lines = [word + (f": {case.message}" if case.message else "")]
    lines.append(f"call:     {case.call}")
    if case.status == "fail":
        lines.append(f"expected: {codec.describe(case.expected, VALUE_CHARS)}")
        lines.append(f"got:      {codec.describe(case.got, VALUE_CHARS)}")
    if case.traceback and case.status in ("error", "timeout"):
        lines.append("traceback:\n" + _cut(case.traceback.rstrip(), TEXT_CHARS))
    if case.output and case.status != "pass":
        lines.append("printed:\n" + _cut(case.output.rstrip(), TEXT_CHARS))
    return "\n".join(lines)


def _case_name(exercise: ExerciseResult, case: CaseResult) -> str:
    """The test's name: a public case's call, a hidden case's id (its call holds its input)."""
    call = " ".join(case.call.split()) or case.id if case.visibility == "public" else f"hidden case {case.id}"
    return _cut(f"{exercise.id}: {call}", NAME_CHARS)


def _tests(result: SubmissionResult) -> list[dict]:
    tests: list[dict] = []
    for number, exercise in enumerate(result.exercises, start=1):
        if not exercise.cases:   # nothing to split: the exercise is one test
            tests.append({"name": exercise.title or exercise.id, "number": str(number),
                          "score": _points(_units(exercise.score)), "max_score": _points(_units(exercise.max_score)),
                          "status": "passed" if exercise.score >= exercise.max_score else "failed",
                          "output": "\n".join(exercise.notes), "tags": [exercise.id], "visibility": PUBLIC,
                          "extra_data": {"exercise": exercise.id}})
            continue
        maxima, scores = _case_units(exercise)
        units = zip(exercise.cases, maxima, scores, strict=True)
        for index, (case, max_units, score_units) in enumerate(units, start=1):
            tests.append({
                "name": _case_name(exercise, case),
                "number": f"{number}.{index}",
                "score": _points(score_units),
                "max_score": _points(max_units),
                # explicit, because a passing case of a failed all-or-nothing exercise scores 0 of its share
                "status": "passed" if case.status == "pass" else "failed",
                "output": _case_output(case),
                "tags": [exercise.id],
                "visibility": PUBLIC if case.visibility == "public" else HIDDEN,
                "extra_data": {"exercise": exercise.id, "case": case.id, "status": case.status,
                               "fraction": case.fraction},
            })
    return tests


def public_notes(exercise: ExerciseResult) -> tuple[str, ...]:
    """The exercise's notes as a student may read them before grades are published: the judge's "N cases fail the
    same way" counts every case, hidden ones too, whose verdicts Gradescope shows only once published; here it
    counts the public cases alone (feedback.same_failures over them), in the place of the first such note."""
    public = [case for case in exercise.cases if case.visibility == "public"]
    return renoted(exercise.notes, set(same_failures(exercise.cases)), same_failures(public))


def _summary(result: SubmissionResult) -> str:
    """The top-level text every student sees: total, per-exercise scores, notes, isolation and warnings."""
    lines = [f"{result.rubric}: {result.total:g} / {result.max_total:g} points for {own_name(result.path)}"]
    cases = [c for e in result.exercises for c in e.cases]
    if cases and result.warnings and result.state != "graded":
        lines.append(f"Your submission could not be graded: {result.warnings[0].shown}")
    if result.late:
        lines.append(late_line(result))
    lines += [f"Graded by puzzle-grader {result.grader_version}; isolation: {result.isolation}.", "", "Exercises:"]
    hidden = 0
    automatic = {fact["exercise"]: fact["automatic"] for fact in result.extra.get("overrides", ())}
    for exercise in result.exercises:
        lines.append(f"  {exercise.id}: {exercise.score:g} / {exercise.max_score:g}"
                     + (f" (set by the course staff; automatic score {automatic[exercise.id]:g})"
                        if exercise.id in automatic else ""))
        lines.extend(f"    note: {note}" for note in public_notes(exercise))
        hidden += sum(1 for c in exercise.cases if c.visibility != "public")
    if automatic:
        from grader.store.overrides import describe
        lines += ["", "Grade adjustments by the course staff:"] + [f"  {line}" for line in describe(result)]
    if hidden:
        lines += ["", f"{hidden} hidden case{'s' if hidden != 1 else ''}: shown once grades are published."]
    if result.warnings:
        lines += ["", f"Warnings ({len(result.warnings)}):"]
        lines.extend(f"  - {_cut(w.shown, 500)}" for w in result.warnings[:WARNINGS_SHOWN])
        if len(result.warnings) > WARNINGS_SHOWN:
            lines.append(f"  ... and {len(result.warnings) - WARNINGS_SHOWN} more")
    else:
        lines += ["", "Warnings: none."]
    return "\n".join(lines)


def to_gradescope(result: SubmissionResult) -> dict:
    """Gradescope's results.json for one graded submission (plain JSON data). The student reads their file by its
    own name, never the TA's path to the export (own_name.for_student)."""
    result = for_student(result)
    tests = _tests(result)
    return {
        "score": _points(_units(result.total)),
        "execution_time": max(0, int(math.ceil(result.seconds))),
        # simple_format renders HTML and turns newlines into line breaks: the text is escaped, since warnings
        # quote the student's notebook
        "output": html.escape(_summary(result), quote=False),
        "output_format": "simple_format",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",   # the run's log is for the course staff
        "extra_data": {"submission": result.submission, "sha256": result.sha256, "rubric": result.rubric,
                       "rubric_sha256": result.rubric_sha256, "grader_version": result.grader_version,
                       "isolation": result.isolation, "max_score": _points(_units(result.max_total)),
                       **({"automatic_score": _points(_units(result.extra["automatic_total"])),
                           "overrides": result.extra["overrides"]} if "overrides" in result.extra else {}),
                       # the score stays the code's (Gradescope applies its own late policy); ours is apart
                       **({"late": True, "late_penalty": result.penalty} if result.late else {})},
        "tests": tests,
    }


def failure_results(message: str) -> dict:
    """results.json for a submission that could not be graded at all: score 0 and why."""
    return {"score": 0.0, "output": html.escape(message, quote=False), "output_format": "simple_format",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def encode(data: dict) -> str:
    """results.json's text: a line per top-level key and per test (its own JSON on one line). Each piece comes
    from json's C encoder: json.dumps(indent=...) runs the pure-Python one, most of a class export's CPU."""
    parts = []
    for key, value in data.items():
        if key == "tests" and value:
            tests = ",\n  ".join(json.dumps(test, ensure_ascii=False) for test in value)
            parts.append(f"{json.dumps(key)}: [\n  {tests}\n ]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n " + ",\n ".join(parts) + "\n}"


def write_results(data: dict, path: Path) -> Path:
    """Write atomically: Gradescope must never read half a file. Any string: a lone surrogate becomes U+FFFD."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, display(encode(data)) + "\n")


def write_gradescope(result: SubmissionResult, path: Path) -> Path:
    return write_results(to_gradescope(result), path)


FORMAT = 2    # of the files this module writes: a file stamped with another was made by other code


def write_class_gradescope(classroom: Classroom, folder: Path) -> Written:
    """The class output `gradescope`: <student>.json of every student of the gradebook, TA overrides applied.

    A file made from the student's current result (and overrides) by this code, untouched since, is kept: a
    rerun writes only what changed, and a missing or altered file again (grader.report.stamps)."""
    from grader import __version__
    from grader.report.stamps import stamped
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths, rewritten = [], 0
    with stamped(classroom.folder, "gradescope", folder) as stamps:
        for entry in classroom.entries():
            path = folder / f"{entry.student}.json"
            made_from = None if entry.identity is None else f"{FORMAT} {__version__} {entry.identity}"
            if not stamps.holds(path, made_from):
                write_gradescope(entry.read(), path)
                stamps.wrote(path, made_from)
                rewritten += 1
            paths.append(path)
    kept = len(paths) - rewritten
    said = f"{rewritten} written, {kept} kept (made from the same result and untouched since)"
    return Written(tuple(paths), len(paths), (said,) if kept else ())
