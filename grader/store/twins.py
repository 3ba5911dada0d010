"""Students graded from the same file under different ids: told to the TA, never merged, never dropped.

Why: one student can be graded twice under two ids (a file renamed between two runs, the same class taken in
again from another LMS's export, a name spelt two ways by two graders); both rows then stand in every export,
and an LMS import takes the one its roster knows and leaves the other, or gives the student two grades. The
grader cannot tell that case from two students handing in one file (a copy), so it names every id graded from
byte-identical files, with where each came from, and the TA decides; the exports keep every row.

Not counted: students an LMS says handed in one file together (a Gradescope group: one source, a row for each
of its students, by design), and unreadable files (every empty file is the same bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

UNREADABLE = "unreadable"
SHOWN_SOURCES = 6      # ids of a group shown with where they came from; the others by id alone
WHAT_IT_MAY_BE = ("one student under two ids (a renamed file, a second export of the class, a name spelt two "
                  "ways: upload the row the LMS's roster knows), or a copy between students (see the similarity "
                  "report); every id keeps its row in the exports")


@dataclass(frozen=True)
class SameFile:
    """Ids whose current results were graded from one file's bytes, from more than one place."""

    sha256: str
    students: tuple[str, ...]       # sorted
    sources: tuple[str, ...]        # where each of `students` was graded from, in their order

    def line(self) -> str:
        """Who, and from where (every id named; the first few with their file)."""
        shown = [f"{student} ({source})" if n < SHOWN_SOURCES else student
                 for n, (student, source) in enumerate(zip(self.students, self.sources, strict=True))]
        return f"{len(self.students)} ids graded from the same file (sha256 {self.sha256[:12]}): {', '.join(shown)}"


def warning_lines(groups: Sequence[SameFile]) -> list[str]:
    """Lines for a terminal: what such groups may be, once, then one line per group."""
    if not groups:
        return []
    count = f"{len(groups)} group{'s' if len(groups) != 1 else ''}"
    return [f"{count} of ids graded from the same file's bytes from different places: {WHAT_IT_MAY_BE}",
            *(f"  {group.line()}" for group in groups)]


def same_files(rows: Iterable[tuple[str, str, str, str]]) -> tuple[SameFile, ...]:
    """Groups of ids graded from identical bytes, from (student, sha256, source, state) of each current result;
    by their first student. A group whose ids all share one source is an LMS's group hand-in, not counted."""
    by_file: dict[str, list[tuple[str, str]]] = {}
    for student, sha256, source, state in rows:
        if not sha256 or state == UNREADABLE:
            continue
        by_file.setdefault(sha256, []).append((student, source))
    groups = []
    for sha256, members in by_file.items():
        if len(members) < 2 or len({source for _, source in members}) < 2:
            continue
        members.sort()
        groups.append(SameFile(sha256, tuple(s for s, _ in members), tuple(src for _, src in members)))
    return tuple(sorted(groups, key=lambda group: group.students))
