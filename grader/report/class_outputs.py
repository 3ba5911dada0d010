"""The class-level outputs, one registry: what is written for a whole class (the gradebook CSV, the class
dashboard, the similarity report, Gradescope's results files), as grader.report.formats is for one student.

An output is a module with one function from a Classroom (the results folder and what a class report may
show) and a target path to what it wrote; adding one is that module plus one `register(...)` line below.
`grader export --format` offers every registered output, `class-report`, `similarity` and `grade` write theirs
through here, and nothing else changes. Writers are named by module path and imported only when used, so the
HTML renderers' and copydetect's dependencies load only when asked for.

Every output reads the whole class from the gradebook (every student of the assignment, TA overrides
applied, one result at a time), never the last batch.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from grader.store.results import SubmissionResult, read_json
from grader.store.shared import SharedReader, SharedValuesError

if TYPE_CHECKING:
    from grader.store.gradebook import Gradebook
    from grader.store.overrides import Override

GRADEBOOK = "gradebook.sqlite"


@dataclass(frozen=True)
class Classroom:
    """A class as the outputs read it: the results folder (its gradebook, or its result files without one)."""

    folder: Path                      # the results folder (grade --out)
    gradebook: Path | None = None     # default: <folder>/gradebook.sqlite when there is one
    rubric: str | None = None         # the assignment; None: every one the gradebook holds
    notebooks: Path | None = None     # the submitted notebooks (default: each result's own copy or path)
    template: Path | None = None      # the template notebook: its code is given, never "Your code" or a copy
    title: str | None = None
    threshold: float = 0.6            # similarity: flag pairs at or above this score
    similarity: bool = True           # the dashboard runs the similarity check
    problems: tuple[str, ...] = ()    # notes for the similarity report (e.g. where its template came from)
    similarity_csv: Path | None = None    # the similarity output's CSV, when not beside its page

    def book(self) -> Path | None:
        if self.gradebook is not None:
            return self.gradebook
        path = self.folder / GRADEBOOK
        return path if path.is_file() else None

    def results(self) -> Iterator[SubmissionResult]:
        """Every student's current result, TA overrides applied, one at a time (a new pass at each call)."""
        book_path = self.book()
        if book_path is None:
            yield from read_results(self.folder).results
            return
        from grader.store.gradebook import Gradebook
        from grader.store.overrides import apply, history
        overrides = history(book_path, self.rubric)
        with Gradebook(book_path) as book:
            for rubric in (self.rubric,) if self.rubric else book.rubrics():
                for result in book.iter_current(rubric):
                    yield apply(result, overrides)


    def entries(self) -> Iterator[Entry]:
        """Every student of the class, sorted by student, each with what identifies the result an output would be
        made from (its grading and the overrides in force) and the result itself, read only when asked: an output
        that kept a file made from the same identity reads nothing of that student. Without a gradebook nothing
        is known to identify a result (identity None)."""
        book_path = self.book()
        if book_path is None:
            for result in read_results(self.folder).results:
                yield Entry(result.submission, None, functools.partial(_same, result))
            return
        from grader.store.gradebook import Gradebook
        from grader.store.overrides import history
        overrides: dict[tuple[str, str], list[Override]] = {}
        for override in history(book_path, self.rubric):
            overrides.setdefault((override.student, override.rubric), []).append(override)
        with Gradebook(book_path) as book:
            for rubric in (self.rubric,) if self.rubric else book.rubrics():
                for student, identity in book.identities(rubric):
                    own = overrides.get((student, rubric), [])
                    yield Entry(student, f"{rubric} {student} {identity} {_overrides_text(own)}",
                                functools.partial(_current, book, student, rubric, own))


def _same(result: SubmissionResult) -> SubmissionResult:
    return result


def _current(book: Gradebook, student: str, rubric: str, overrides: Sequence[Override]) -> SubmissionResult:
    from grader.store.overrides import apply
    result = book.result(student, rubric)
    assert result is not None, student   # named by the gradebook's own list of current results
    return apply(result, overrides)


def _overrides_text(overrides: Sequence[Override]) -> str:
    """Every override of a student ever recorded (history included: a superset of those in force), as text."""
    return json.dumps([dataclasses.astuple(override) for override in overrides]) if overrides else "[]"


class Reading:
    """A class's results read one at a time (Classroom.entries), and what the one being read was made from: what
    a student's own files (reports) written from it are stamped with (grader.report.stamps), with `context`, the
    rest they are made from (None: not known, write them all)."""

    def __init__(self, classroom: Classroom, context: str | None) -> None:
        self.classroom = classroom
        self.context = context
        self.count = 0
        self._current: tuple[str, str | None] = ("", None)

    def __iter__(self) -> Iterator[SubmissionResult]:
        for entry in self.classroom.entries():
            self.count += 1
            self._current = (entry.student, entry.identity)
            yield entry.read()

    def made_from(self, result: SubmissionResult) -> str | None:
        student, identity = self._current
        if student != result.submission or identity is None or self.context is None:
            return None
        from grader.report.student import locate_notebook   # found or not, and as it is now: "Your code"
        return f"{self.context} {identity} {_file_state(locate_notebook(result, None, self.classroom.folder))}"


def report_context(notebooks: object, template: Path | None, *more: object) -> str | None:
    """What a student's report is made from besides the result: the template's given code (its file as it is now),
    the options (`more`) and this grader; None with a notebooks folder (read as it is: every report is written)."""
    if notebooks is not None:
        return None
    from grader import __version__
    return " ".join([__version__, _file_state(template), *map(str, more)])


def _file_state(path: Path | None) -> str:
    """A file as `path`, size and modification time (what a report read of it changes with); '' for none."""
    if path is None:
        return ""
    try:
        found = Path(path).stat()
    except OSError:
        return f"{path} missing"
    return f"{Path(path).resolve()} {found.st_size} {found.st_mtime_ns}"


@dataclass(frozen=True)
class Entry:
    """One student of a class, as Classroom.entries gives them."""

    student: str
    identity: str | None              # what the result is made from; None: unknown (always read and write it)
    read: Callable[[], SubmissionResult]


@dataclass(frozen=True)
class Written:
    """What an output wrote: its files, how many students they cover, and lines for the TA."""

    paths: tuple[Path, ...]
    students: int
    lines: tuple[str, ...] = field(default=())


Write = Callable[[Classroom, Path], Written]


@dataclass(frozen=True)
class ClassOutput:
    name: str           # as `grader export --format` takes it
    target: str         # its file (or folder) in an export folder
    writer: str         # "module:function", imported when the output is written
    help: str
    default: bool       # written by `grader export` when no --format is given

    def write(self, classroom: Classroom, target: Path) -> Written:
        module, _, function = self.writer.partition(":")
        found: Write = getattr(importlib.import_module(module), function)
        return found(classroom, Path(target))


OUTPUTS: dict[str, ClassOutput] = {}


def register(output: ClassOutput) -> None:
    OUTPUTS[output.name] = output


register(ClassOutput("csv", "gradebook.csv", "grader.report.csv_export:write_class_csv",
                     "the gradebook CSV for an LMS: a row per student, a column per exercise", default=True))
register(ClassOutput("dashboard", "class.html", "grader.report.class_report:write_dashboard",
                     "the class dashboard (with its CSV, every student's report and the similarity check)",
                     default=True))
register(ClassOutput("similarity", "similarity.html", "grader.report.similarity_page:write_class_similarity",
                     "pairwise similarity of each graded function, and its CSV", default=False))
register(ClassOutput("gradescope", "gradescope", "grader.report.gradescope:write_class_gradescope",
                     "Gradescope's results.json of every student (<student>.json)", default=False))


def defaults() -> tuple[str, ...]:
    return tuple(name for name, output in OUTPUTS.items() if output.default)


def export(classroom: Classroom, out_dir: Path, names: Sequence[str] | None = None) -> list[Written]:
    """Write the named outputs (default: the registry's defaults) into `out_dir`, each under its target name.
    Raises KeyError naming an output that is not registered."""
    chosen = [OUTPUTS[name] for name in (names if names is not None else defaults())]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [output.write(classroom, out_dir / output.target) for output in chosen]


def same_file_warnings(classroom: Classroom) -> list[str]:
    """Lines for each group of ids graded from the same file's bytes from different places (grader.store.twins:
    one student under two ids, or a copy), for the TA to read where an output is written: every row stays."""
    from grader.store.twins import same_files, warning_lines
    book_path = classroom.book()
    if book_path is None:
        groups = same_files((r.submission, r.sha256, r.path, r.state) for r in read_results(classroom.folder).results)
    else:
        from grader.store.gradebook import Gradebook
        with Gradebook(book_path) as book:
            rubrics = (classroom.rubric,) if classroom.rubric else book.rubrics()
            groups = tuple(group for rubric in rubrics for group in book.same_files(rubric))
    lines = warning_lines(groups)
    return [f"warning: {lines[0]}", *lines[1:]] if lines else []


def probing_warnings(classroom: Classroom) -> list[str]:
    """The line naming students whose resubmissions moved hidden verdicts while every public one stayed
    (grader.store.verdicts), from the gradebook's history; none without a gradebook (result files keep one
    grading each)."""
    book_path = classroom.book()
    if book_path is None:
        return []
    from grader.store.gradebook import Gradebook
    from grader.store.verdicts import warning_line
    with Gradebook(book_path) as book:
        rubrics = (classroom.rubric,) if classroom.rubric else book.rubrics()
        line = warning_line([found for rubric in rubrics for found in book.probing(rubric)])
    return [line] if line else []


# ------------------------------------------------------------------------------------------- the class readers


def iter_class(folder: Path | str) -> Iterator[SubmissionResult]:
    """Every student's current result of a results folder, one at a time (from its gradebook when it has one,
    else its readable JSON files): for passes over the class that keep only a little of each result."""
    folder = Path(folder)
    book_path = folder / "gradebook.sqlite"
    if book_path.is_file():
        from grader.store.gradebook import Gradebook
        with Gradebook(book_path) as book:
            for rubric in book.rubrics():
                yield from book.iter_current(rubric)
        return
    yield from read_results(folder).results


@dataclass(frozen=True)
class LoadedResults:
    results: tuple[SubmissionResult, ...]
    problems: tuple[str, ...]              # files in the folder that are not readable results


def read_results(directory: Path | str) -> LoadedResults:
    """The class of a results folder (as written by `grader grade --out`), sorted by student.

    From its gradebook when there is one: every student of every rubric in it, whatever the last batch
    graded and whichever JSON files were deleted. Otherwise every `<student>.json` of the folder; a JSON
    file that is not a result (or is damaged) is reported, not fatal: one bad file must not hide the class.
    """
    directory = Path(directory)
    book_path = directory / "gradebook.sqlite"
    if book_path.is_file():
        from grader.store.gradebook import Gradebook
        with Gradebook(book_path) as book:
            return LoadedResults(tuple(r for rubric in book.rubrics() for r in book.iter_current(rubric)), ())
    files = sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))
    results, problems = [], []
    store = SharedReader(directory)
    for file in files:
        try:
            results.append(read_json(file, store))
        except SharedValuesError as error:   # the file is a result, but a value it refers to is damaged
            problems.append(f"{file.name}: not readable: {error}")
        except (OSError, ValueError, KeyError, TypeError) as error:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else f"{type(error).__name__}: {error}"
            problems.append(f"{file.name}: not a readable result ({reason})")
    return LoadedResults(tuple(results), tuple(problems))
