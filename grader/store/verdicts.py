"""Each grading's case verdicts as bits, and the resubmission pattern they show a TA.

Why: a student who resubmits many times reads the hidden cases' verdicts from how the score moves (change one
branch, resubmit, see the total move while every public case stayed as it was). The grader cannot stop that
without hiding the score; it can show the TA the pattern. Each result stores its verdicts as one character per
case (pass or not, public or hidden: no value, no message), so the pattern is read from the gradebook's columns
for the few students with several files, never from every student's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# One character per case, in the result's order: public passed / not, hidden passed / not, not judged (a busy
# machine or a grader problem: the grader's, which says nothing of the code).
PUBLIC_PASS, PUBLIC_FAIL, HIDDEN_PASS, HIDDEN_FAIL, NOT_JUDGED = "P", "F", "p", "f", "-"
# A student is flagged from this many graded files on (two resubmissions), with this many of the moves between
# consecutive files hidden-only: one such move is a fix of an edge case, a pattern is what probing looks like.
FILES = 3
MOVES = 2


def bit(status: str, visibility: str) -> str:
    if status == "problem":
        return NOT_JUDGED
    passed = status == "pass"
    if visibility == "hidden":
        return HIDDEN_PASS if passed else HIDDEN_FAIL
    return PUBLIC_PASS if passed else PUBLIC_FAIL


def bits(exercises: Iterable[Any]) -> str:
    """The verdicts of a result's exercises (results.ExerciseResult), one character a case."""
    return "".join(bit(case.status, case.visibility) for exercise in exercises for case in exercise.cases)


def bits_of_json(data: Any) -> str:
    """The same, from a stored result's JSON (a gradebook row written before the column existed)."""
    exercises = data.get("exercises", ()) if isinstance(data, dict) else ()
    return "".join(bit(str(case.get("status", "")), str(case.get("visibility", "")))
                   for exercise in exercises if isinstance(exercise, dict)
                   for case in exercise.get("cases", ()) if isinstance(case, dict))


def hidden_only(before: str, after: str) -> bool:
    """Whether, between two gradings of one rubric's cases, some hidden verdict moved while every public one
    stayed (cases not judged in either are left out)."""
    if len(before) != len(after) or before == after:
        return False
    public = hidden = False
    for old, new in zip(before, after, strict=True):
        if old == NOT_JUDGED or new == NOT_JUDGED or old == new:
            continue
        if old.isupper() != new.isupper():    # the rubric's cases differ: not comparable
            return False
        public = public or old.isupper()
        hidden = hidden or old.islower()
    return hidden and not public


@dataclass(frozen=True)
class Probing:
    """A student whose resubmissions moved hidden verdicts while every public one stayed: `moves` of the
    `files` - 1 moves between consecutive files."""

    student: str
    files: int
    moves: int

    def text(self) -> str:
        return f"{self.student} ({self.moves} of {self.files - 1} resubmissions)"


def probing(student: str, gradings: Sequence[tuple[str, str, str]]) -> Probing | None:
    """The pattern in one student's gradings, oldest first, each (sha256, rubric_sha256, bits): a file graded
    again (a rubric fix, a forced regrade) counts once, as first graded (what the student saw then)."""
    files: list[tuple[str, str]] = []
    last = None
    for sha256, rubric_sha256, verdicts in gradings:
        if sha256 != last:
            files.append((rubric_sha256, verdicts))
        last = sha256
    moves = sum(1 for (rubric_a, a), (rubric_b, b) in zip(files, files[1:], strict=False)
                if rubric_a == rubric_b and hidden_only(a, b))
    return Probing(student, len(files), moves) if len(files) >= FILES and moves >= MOVES else None


def warning_line(found: Sequence[Probing]) -> str:
    """The TA's line (class report's Problems, the terminal): names and counts; "" when none."""
    if not found:
        return ""
    return (f"hidden verdicts moved while every public one stayed, across resubmissions (a student may be reading "
            f"the hidden cases from the score; read the notebooks): {'; '.join(p.text() for p in found)}")
