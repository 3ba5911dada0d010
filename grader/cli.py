"""The command line: parses arguments and calls the library; nothing here grades."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from grader import __version__

if TYPE_CHECKING:
    from rich.console import Console

    from grader.report.class_outputs import Classroom
    from grader.run.batch import Batch
    from grader.store.gradebook import ScoreRow


class _Terminal:
    """Where `grade` writes: a rich console (colours, wrapping, the progress bar and the score table), made
    when a line first needs it, so a quiet batch whose one line is the summary never imports rich (about 35 ms
    of every start-up)."""

    def __init__(self) -> None:
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console
            self._console = Console(width=None if sys.stdout.isatty() else 160)
        return self._console

    def line(self, text: str) -> None:
        """One line as it is (no markup, never wrapped), made safe for a terminal."""
        if self._console is None:
            from grader.textsafe import terminal
            print(terminal(text), flush=True)
        else:
            self._console.print(text, highlight=False, soft_wrap=True, markup=False)


def _grade(args: argparse.Namespace) -> int:
    import gc
    # No collection until the results stream in (batch.results_collector turns the collector on for them): what
    # the start-up makes lives for the batch (modules, the rubric, the plan and what is prepared from it), and its
    # ~90 young collections walked it again and again, ~10 ms of the coordinator's CPU on the path to the first
    # case. The few cycles it leaves (~1,200 objects) are frozen with the plan. Off before the sandbox modules'
    # imports too: 12 young and 2 older collections there, ~3 ms.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _grade_started(args)
    finally:
        if collecting:
            gc.enable()


def _grade_started(args: argparse.Namespace) -> int:
    from grader.run.beside import start_sandboxes, stop_sandboxes
    book = Path(args.gradebook) if args.gradebook else Path(args.out) / "gradebook.sqlite"
    if args.dask is None and (args.force or not book.exists()):
        # A class graded for the first time (or forced) runs its submissions: the probe and a zygote per worker
        # start now, beside the imports, rubric and plan. Otherwise the batch starts them once its gradebook says
        # a student changed, and an unchanged regrade starts none.
        start_sandboxes(args.jobs)
    try:
        return _grade_batch(args)
    finally:
        stop_sandboxes()


def _grade_batch(args: argparse.Namespace) -> int:
    from grader.run.batch import grade_batch, missing_paths
    from grader.judge.options import Options
    from grader.report.progress import BatchProgress
    out = _Terminal()
    missing = missing_paths(args.paths)
    if missing:
        for path in missing:
            print(f"{path}: no such file or folder", file=sys.stderr)
        return 2
    for path in args.paths:   # a device or a pipe (`grade /dev/null`) was "no such file or folder", and exit 1
        if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
            raise UsageError(f"{path}: neither a file nor a folder (give notebooks, zips or folders of them)")
    _check_rubric(args.rubric)
    _check_folder(args.out, "--out")
    if args.gradescope:
        _check_folder(args.gradescope, "--gradescope")
    if args.gradebook:
        _check_target(args.gradebook, "--gradebook")
    options = Options(case_seconds=args.case_seconds, submission_seconds=args.submission_seconds,
                      memory_mb=args.memory_mb, allow_root_sandbox=args.allow_root_sandbox)
    from grader.store.gradebook import grade_change_line, incident_line, same_file_lines, utc_now
    from grader.store.overrides import forgiven_in
    from grader.textsafe import one_line   # file names, student ids: any text (the gradebook imports it anyway)
    started = utc_now()
    with BatchProgress(None if args.quiet else out.console, quiet=args.quiet) as progress:
        batch = grade_batch(args.paths, args.rubric, args.out, jobs=args.jobs, options=options,
                            cache=Path(args.cache) if args.cache else None,
                            gradebook=Path(args.gradebook) if args.gradebook else None, force=args.force,
                            dask=args.dask, gradescope=Path(args.gradescope) if args.gradescope else None,
                            on_start=progress.start, on_result=progress.result)
    # Every line below is one line however long (soft_wrap): rich wrapped them at 160 columns outside a terminal,
    # so a logged note or reason broke mid-path and a grep for the student found half of it.
    if not args.quiet:
        from rich.markup import escape
        console = out.console
        for problem in batch.problems:   # they quote file names: any byte, any markup
            console.print(f"[yellow]skipped:[/] {escape(one_line(problem))}", highlight=False, soft_wrap=True)
        for note in batch.notes:
            console.print(f"note: {one_line(note)}", highlight=False, markup=False, soft_wrap=True)
    if not batch.students:
        out.console.print("no submissions found", style="yellow")
        return 1
    rows: Sequence[ScoreRow] = ()
    if not args.quiet:
        from grader.report.console import print_rows, table_notes   # rich's tables: only for the table
        rows = batch.rows
        reasons, overridden = table_notes(batch, [row.student for row in rows if row.state != "graded"])
        print_rows(rows, out.console, reasons, overridden)
        if args.gradescope:
            out.console.print(f"Gradescope results.json files of the whole class in {args.gradescope}/",
                          highlight=False, soft_wrap=True)
    if batch.grader_problems:
        out.console.print(not_judged_line(batch.grader_problems, "grader problem (a check or reference helper of the "
                                          "rubric crashed; not the students' mistakes). Fix the rubric, then regrade "
                                          "with --force"), style="magenta", highlight=False, markup=False,
                          soft_wrap=True)
    if batch.busy:
        out.console.print(not_judged_line(batch.busy, "the machine was too busy (it kept the grading waiting for a "
                                          "CPU past the submission's time, even moved; not the students' mistakes). "
                                          "The next run grades them again"),
                          style="magenta", highlight=False, markup=False, soft_wrap=True)
    named = {row.student for row in rows if row.state == "failed"}   # the table's notes gave these their reason
    for student in batch.failed:
        if student not in named:    # --quiet, or a failure the machine caused: not recorded, not in the table
            from rich.markup import escape
            out.console.print(f"[red]{escape(one_line(student))}[/]: the grader could not finish this submission: "
                              f"{escape(one_line(batch.reasons[student]))}", highlight=False, soft_wrap=True)
    out.line(summary_line(batch, args.out, rows))
    changed = grade_change_line(batch.gradebook, batch.rubric, started)
    if changed:
        out.console.print(one_line(changed), style="cyan", highlight=False, markup=False, soft_wrap=True)
    attacked = incident_line(batch.gradebook, batch.rubric, batch.students,
                             forgiven_in(batch.gradebook, batch.rubric) if batch.gradebook is not None else None)
    if attacked:
        out.console.print(one_line(attacked), style="red", highlight=False, markup=False, soft_wrap=True)
    for n, line in enumerate(same_file_lines(batch.gradebook, batch.rubric)):
        out.console.print(("warning: " if n == 0 else "") + one_line(line), style="yellow", highlight=False,
                          markup=False, soft_wrap=True)
    mismatched = [student for student in batch.students if batch.mismatch.get(student)]
    for student in mismatched:
        out.console.print(f"[red]{student}[/]: {batch.mismatch[student]}", highlight=False, soft_wrap=True)
    if mismatched and not args.allow_mismatch:
        out.console.print(f"{len(mismatched)} of {len(batch.students)} submissions do not look like {batch.rubric}: "
                          f"exiting with an error (--allow-mismatch to accept them)", style="red", highlight=False,
                          soft_wrap=True)
    return exit_code(batch, args.allow_mismatch)


def not_judged_line(cases_of: dict[str, int], why: str) -> str:
    """The line naming the submissions (the first ten) some of whose cases were not judged, and why: those cases
    earned nothing, and the students' scores are not theirs yet."""
    cases = sum(cases_of.values())
    return (f"{cases} case{'s' if cases != 1 else ''} of {len(cases_of)} submission{'s' if len(cases_of) != 1 else ''}"
            f" not judged: {why}: {', '.join(sorted(cases_of)[:10])}")


def summary_line(batch: Batch, out: str, rows: Sequence[ScoreRow] = ()) -> str:
    """The batch's closing line (all that --quiet prints): each count apart, the isolation levels seen. `rows`
    (the table's, when it was read) tell which unchanged students are unreadable: the table above names them
    'unreadable' while this run's count is 0."""
    levels = ", ".join(f"{level} ({count})" for level, count in batch.isolation.items()) or "none"
    before = len(batch.failed_before)
    from grader.store.results import NO_SUBMISSION   # imported by the batch already
    still = sum(row.state == "unreadable" for row in rows) - batch.unreadable
    still_absent = sum(row.state == NO_SUBMISSION for row in rows) - batch.absent
    unchanged = f"{batch.unchanged} unchanged" + "".join(
        f" ({count} of them {what})" for count, what in ((before, "failed before: --force grades them again"),
                                                         (still, "unreadable"), (still_absent, NO_SUBMISSION))
        if count > 0)
    count = len(batch.students)
    absent = f"{batch.absent} {NO_SUBMISSION}, " if batch.absent else ""   # only in a class an LMS names them in
    return (f"{count} submission{'s' if count != 1 else ''}: {batch.graded} graded, {batch.unreadable} unreadable, "
            f"{absent}{len(batch.failed)} failed, {unchanged}; {batch.skipped} skipped in {batch.seconds:.1f} s; "
            f"isolation: {levels}; results in {out}/")


def exit_code(batch: Batch, allow_mismatch: bool) -> int:
    """3 when notebooks do not look like the assignment (unless allowed), 1 when some student of the batch has no
    finished result (failed now, or before and not retried), else 0."""
    if not allow_mismatch and any(batch.mismatch.get(student) for student in batch.students):
        return 3
    return 1 if batch.failed or batch.failed_before else 0


class UsageError(Exception):
    """A mistyped path or argument: one line naming it, exit 2."""


def _kind(path: Path) -> str:
    """What a path that is not what was asked is, for the one line that says so (`--rubric /dev/null` was "not a
    folder")."""
    return "a folder" if path.is_dir() else "a file" if path.is_file() else "neither a file nor a folder"


def _check_rubric(path: str) -> None:
    rubric = Path(path)
    if not rubric.exists():
        raise UsageError(f"{path}: no such rubric file")
    if not rubric.is_file():
        raise UsageError(f"{path}: a rubric is a YAML file, and this is {_kind(rubric)}")
    if _starts_a_kit(rubric):   # read as a rubric, a kit is two hundred lines of unknown keys
        raise UsageError(f"{path}: a student kit (made by grader kit), not a rubric; a kit is for grader check --kit")


def _starts_a_kit(path: Path) -> bool:
    """The file is a student kit: grader kit writes its kind first (kit.KIT_KIND, not imported: `grade` checks its
    rubric before its imports)."""
    try:
        with open(path, "rb") as file:
            head = file.read(256)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"kind": "puzzle-grader-kit"' in head


def _check_folder(path: str, option: str) -> None:
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{path}: {option} must be a folder, and this is {_kind(folder)}")
    _check_inside_folder(path, option)


def _check_target(path: str, option: str, what: str = "a file") -> None:
    """A file the command writes (`what` it is, for the message): not a folder, and not to be made inside a file."""
    if Path(path).is_dir():
        raise UsageError(f"{path}: {option} names {what} to write, and this is a folder")
    _check_inside_folder(path, option)


def _check_inside_folder(path: str, option: str) -> None:
    """What a command makes must not be under a file (`--out results.csv/x`): its first existing parent is a
    folder, or the makedirs deep in the library would end the command in a traceback."""
    for parent in Path(path).absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{path}: {option} would be inside {parent}, which is a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"{path}: {option} would be inside {parent}, where this user cannot write")
            # Where access() says yes and nothing can be made all the same (root in /proc, a full disk): a file
            # without a name (O_TMPFILE where the filesystem has it), made and gone, asks the filesystem itself.
            import tempfile
            try:
                with tempfile.TemporaryFile(dir=parent):
                    pass
            except OSError as error:
                raise UsageError(f"{path}: {option} would be inside {parent}, where nothing can be written "
                                 f"({error.strerror or type(error).__name__})") from None
            return


# Numbers a TA types, and what each must be. A submission budget of 0 or -1 s graded every notebook 0 with
# exit 0, and NaN or inf failed the whole class: a mistyped number is a usage mistake, like a mistyped path.
_POSITIVE = {"jobs": "--jobs", "case_seconds": "--case-seconds", "submission_seconds": "--submission-seconds",
             "memory_mb": "--memory-mb", "mutation_seconds": "--mutation-seconds"}
_NOT_NEGATIVE = {"mutants": "--mutants", "show_survivors": "--show-survivors"}
_FRACTION = {"threshold": "--threshold"}
_LIMITS = ("case_seconds", "submission_seconds", "memory_mb", "mutation_seconds")   # schema.limit_maximum's


def _check_numbers(args: argparse.Namespace) -> None:
    for name, option in (*_POSITIVE.items(), *_NOT_NEGATIVE.items(), *_FRACTION.items()):
        value = getattr(args, name, None)
        if value is None:
            continue
        if not math.isfinite(value):
            raise UsageError(f"{option} {value}: not a number of {'seconds' if 'seconds' in name else 'anything'}")
        if name in _POSITIVE and value <= 0:
            raise UsageError(f"{option} {value:g}: must be more than 0")
        if name in _LIMITS:   # the rubric's bounds: --case-seconds 1e10 ran no case (a class graded 0, exit 0)
            from grader.rubric.schema import limit_maximum
            if value > limit_maximum(name):
                raise UsageError(f"{option} {value:g}: at most {limit_maximum(name):,.0f} (past it the sandbox cannot "
                                 f"apply it)")
        if name in _NOT_NEGATIVE and value < 0:
            raise UsageError(f"{option} {value:g}: must be 0 or more")
        if name in _FRACTION and not 0 <= value <= 1:
            raise UsageError(f"{option} {value:g}: a similarity score is from 0 to 1")


def _check_file(path: str, what: str) -> None:
    file = Path(path)
    if not file.exists():
        raise UsageError(f"{path}: no such file")
    if not file.is_file():
        raise UsageError(f"{path}: {what} must be a file, and this is {_kind(file)}")


def _check_source_folder(path: str, option: str) -> None:
    """A folder the command reads (`--notebooks`): it must be there, or every student's code is silently missing."""
    folder = Path(path)
    if not folder.exists():
        raise UsageError(f"{path}: no such folder ({option})")
    if not folder.is_dir():
        raise UsageError(f"{path}: {option} must be a folder, and this is a file")


def _check_paths(args: argparse.Namespace) -> None:
    """The options every command that takes them reads the same way. A missing --template or --notebooks, or
    a --cache that is a file, was silently ignored (exit 0: reports without the student's code or given code)."""
    if getattr(args, "cache", None):
        _check_folder(args.cache, "--cache")
    if getattr(args, "notebooks", None):
        _check_source_folder(args.notebooks, "--notebooks")
    if getattr(args, "template", None):
        _check_file(args.template, "--template")


def _check_results(path: str) -> None:
    folder = Path(path)
    if not folder.exists():
        raise UsageError(f"{path}: no such results folder")
    if not folder.is_dir():
        raise UsageError(f"{path}: a results folder is expected, and this is a file")


def _gradescope(args: argparse.Namespace) -> int:
    from grader.run.autograder import build_autograder
    _check_rubric(args.rubric)
    _check_target(args.output, "-o")
    notes: list[str] = []
    path = build_autograder(Path(args.rubric), Path(args.output), wheel=not args.source,
                            cache=Path(args.cache) if args.cache else None, notes=notes)
    for note in notes:
        print(f"note: {note}")
    print(f"Gradescope autograder written to {path}: upload it as the assignment's autograder zip")
    return 0


def _gradebook_beside(results: str) -> Path | None:
    """RESULTS/gradebook.sqlite, where grade --out keeps it: the TA overrides reports show."""
    path = Path(results) / "gradebook.sqlite"
    return path if path.is_file() else None


def _report(args: argparse.Namespace) -> int:
    from grader.report import formats
    from grader.report.class_outputs import Classroom, Reading, report_context
    from grader.report.student import iter_results
    _check_results(args.results)
    _check_folder(args.out, "--out")
    chosen = _formats(args.format, args.annotated)
    template = _class_template(args)
    # With a gradebook: TA overrides applied, and a student's reports made from the same are kept (stamps).
    reading = (Reading(Classroom(Path(args.results)), report_context(args.notebooks, template, args.hidden_details))
               if _gradebook_beside(args.results) is not None else None)

    missing: list[str] = []   # students whose notebook is not found, noted as the class streams past once

    def results():   # streamed, one student at a time: a result file is decoded once
        for result in reading if reading is not None else iter_results(args.results):
            missing.extend(_without_notebook([result], args.notebooks, Path(args.results)))
            yield result

    written = formats.write(results(), args.out, chosen, notebooks=args.notebooks, hidden_details=args.hidden_details,
                            results_folder=Path(args.results), template=template,
                            made_from=reading.made_from if reading is not None else None)
    print(f"{written} report files written to {args.out}/")
    if not written:
        _no_results(args.results)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        print(f"the notebook of {len(missing)} student(s) was not found, so their reports have no 'Your code' "
              f"and no annotated notebook: {shown} (give --notebooks FOLDER)", file=sys.stderr)
    return 0 if written else 1


def _formats(given: str | None, annotated: bool) -> list[str]:
    """The report formats asked for: --format's list (default: the registry's defaults), plus --annotated's."""
    from grader.report.formats import DEFAULT, FORMATS
    chosen = [name.strip() for name in given.split(",") if name.strip()] if given else list(DEFAULT)
    unknown = [name for name in chosen if name not in FORMATS]
    if unknown:
        raise UsageError(f"--format: no report format {', '.join(map(repr, unknown))} (there are "
                         f"{', '.join(FORMATS)})")
    return chosen + (["notebook"] if annotated and "notebook" not in chosen else [])


def _without_notebook(results, notebooks, folder: Path) -> list[str]:
    """Students whose graded file is not found. An unreadable one (empty, broken) or one with no submission has no
    code to show: it is not sent looking for it."""
    from grader.report.student import locate_notebook
    from grader.store.results import NO_CODE
    return [r.submission for r in results
            if r.state not in NO_CODE and locate_notebook(r, notebooks, folder) is None]


def _no_results(folder: str) -> None:
    """Why a class output of a folder came out empty (a mistyped folder, say the feedback one): exit 1 alone said
    nothing, and the empty page looked like a class of nobody. Result files that are there but cannot be read
    (a damaged file, a copy of the folder without its shared/ store) are named with why: "no results" sent the
    TA to grade again a class whose results were all there."""
    from grader.report.class_outputs import read_results
    from grader.textsafe import terminal
    problems = read_results(folder).problems
    if not problems:
        print(f"{folder}: no results in this folder (grade with --out {folder} first)", file=sys.stderr)
        return
    print(f"{folder}: none of its {len(problems)} result file{'s' if len(problems) != 1 else ''} could be read:",
          file=sys.stderr)
    for problem in problems[:SHOWN_PROBLEMS]:
        print(f"  {terminal(problem)}", file=sys.stderr)
    if len(problems) > SHOWN_PROBLEMS:
        print(f"  and {len(problems) - SHOWN_PROBLEMS} more", file=sys.stderr)


SHOWN_PROBLEMS = 5     # unreadable result files named when none could be read


def _class_report(args: argparse.Namespace) -> int:
    from grader.report.class_outputs import OUTPUTS
    _check_results(args.results)
    _check_target(args.output, "-o", "the HTML file")
    written = OUTPUTS["dashboard"].write(_classroom(args, similarity=not args.no_similarity), Path(args.output))
    print("\n".join(written.lines))
    if not written.students:
        _no_results(args.results)
    return 0 if written.students else 1


def _template(args: argparse.Namespace) -> Path | None:
    """The template notebook: --template, or the one the --rubric names."""
    if getattr(args, "template", None):
        return Path(args.template)
    if getattr(args, "rubric", None):
        from grader.rubric.schema import load_rubric
        _check_rubric(args.rubric)   # a folder given here ended `report` in a traceback
        return load_rubric(args.rubric).template
    return None


def _class_template(args: argparse.Namespace) -> Path | None:
    """The template a class output of `args.results` leaves out: --template, --rubric's, else the guess."""
    return _template(args) or _guessed_template(args.results)


def _guessed_template(results: str) -> Path | None:
    """Without --template or --rubric: the template of the rubric the folder was graded with (its `.assignment`
    mark names it), else of rubrics/<assignment>.yaml under the current folder. Only the second was tried, so run
    from anywhere but the course's folder the class outputs counted the template's code as every student's (the
    similarity of the class) and the reports called given code the student's. A guess that does not load, or is
    another assignment's, is no template: nothing is said, none is used."""
    from grader.intake.gather import read_mark
    from grader.rubric.schema import RubricError, load_rubric
    mark = read_mark(results)
    if mark is not None:
        assignment, graded = mark.assignment, Path(mark.rubric)
    else:
        from grader.report.class_outputs import iter_class
        first = next(iter(iter_class(results)), None)
        if first is None:
            return None
        assignment, graded = first.rubric, Path()
    for guess in (graded, Path("rubrics") / f"{assignment}.yaml"):
        if guess.name and guess.is_file():
            try:
                rubric = load_rubric(guess)
            except RubricError:
                continue
            if rubric.assignment == assignment and rubric.template is not None:
                print(f"template: {rubric.template} (from {guess}; --template or --rubric to choose another)")
                return rubric.template
    return None


def _classroom(args: argparse.Namespace, **more: Any) -> Classroom:
    """The class of a results folder as the class outputs read it, with the template the folder was graded with
    unless --template or --rubric names one (_guessed_template)."""
    from grader.report.class_outputs import Classroom
    template = _class_template(args)
    notebooks = getattr(args, "notebooks", None)
    return Classroom(Path(args.results), notebooks=Path(notebooks) if notebooks else None, template=template,
                     title=getattr(args, "title", None), threshold=getattr(args, "threshold", 0.6), **more)


def _similarity(args: argparse.Namespace) -> int:
    from grader.report.class_outputs import OUTPUTS
    _check_results(args.results)
    _check_target(args.out, "--out")
    if args.csv:
        _check_target(args.csv, "--csv")
    classroom = _classroom(args, similarity_csv=Path(args.csv) if args.csv else None)
    written = OUTPUTS["similarity"].write(classroom, Path(args.out))
    print("\n".join(written.lines))
    if not written.students:
        _no_results(args.results)
    return 0 if written.students else 1


def _export(args: argparse.Namespace) -> int:
    from grader.report.class_outputs import OUTPUTS, defaults, export
    _check_results(args.results)
    _check_folder(args.out, "--out")
    chosen = [name.strip() for name in args.format.split(",") if name.strip()] if args.format else list(defaults())
    unknown = [name for name in chosen if name not in OUTPUTS]
    if unknown:
        raise UsageError(f"--format: no class output {', '.join(map(repr, unknown))} (there are "
                         f"{', '.join(OUTPUTS)})")
    done = export(_classroom(args), Path(args.out), chosen)
    said: set[str] = set()       # a warning of the class (ids of one file) once, not under every output
    for name, written in zip(chosen, done, strict=True):
        print(f"{name}: {len(written.paths)} file{'s' if len(written.paths) != 1 else ''} of {written.students} "
              f"students in {Path(args.out) / OUTPUTS[name].target}")
        for line in written.lines:
            if line not in said:
                print(f"  {line}")
            said.add(line)
    if not any(written.students for written in done):
        _no_results(args.results)
        return 1
    return 0


def _gradebook_file(path: str) -> str:
    """A results folder given where a gradebook is asked for (`merge other/results --into results`): its
    gradebook.sqlite. The folder was "no such gradebook file", or a folder --into could not write."""
    from grader.intake.gather import RESULTS_MARK
    folder = Path(path)
    if folder.is_dir() and any((folder / name).is_file() for name in ("gradebook.sqlite", RESULTS_MARK)):
        return str(folder / "gradebook.sqlite")
    return path


def _assignments_of(gradebook: Path) -> list[str]:
    """The assignments a gradebook file holds results of, read without writing to it. One that cannot be read is a
    usage mistake before the target is made (a merge of a notebook given by mistake left an empty gradebook)."""
    import sqlite3
    try:
        with contextlib.closing(sqlite3.connect(gradebook.resolve().as_uri() + "?mode=ro", uri=True)) as db:
            return [rubric for (rubric,) in db.execute("SELECT DISTINCT rubric FROM submissions ORDER BY rubric")]
    except sqlite3.Error as error:
        raise UsageError(f"{gradebook}: not a gradebook of grader grade ({error})") from None


def _check_merge(into: Path, others: Sequence[Path]) -> None:
    """Before the target is made or touched: every gradebook merged in is there, and a results folder's gradebook
    takes only its own assignment's results (`grade` refuses to mix them; a merge of another assignment's
    gradebook wrote a CSV of both, two `correct` rows under two sets of columns, for the LMS)."""
    from grader.intake.gather import read_mark
    for other in others:
        _check_file(str(other), "a gradebook")
    held_by = {other: _assignments_of(other) for other in others}
    mark = read_mark(into.parent)
    if mark is None:
        return   # no results folder's gradebook: a gradebook of several assignments is allowed
    held = mark.assignment
    for other in others:
        foreign = [assignment for assignment in held_by[other] if assignment != held]
        if foreign:
            raise UsageError(f"{other}: holds results of {', '.join(foreign)}, and {into.parent} is a results folder "
                             f"of {held}; merge it into that assignment's results folder (--into)")


def _merge(args: argparse.Namespace) -> int:
    from grader.store import overrides
    from grader.store.gradebook import merge_files
    args.into = _gradebook_file(args.into)
    args.gradebooks = [_gradebook_file(other) for other in args.gradebooks]
    _check_target(args.into, "--into")
    _check_merge(Path(args.into), [Path(other) for other in args.gradebooks])
    for other, merged_results in merge_files(Path(args.into), [Path(other) for other in args.gradebooks]):
        print(f"{other}: {merged_results} results merged into {args.into}")
    for other in args.gradebooks:
        added = overrides.merge(Path(other), Path(args.into))
        if added:
            print(f"{other}: {added} overrides merged into {args.into}")
    from grader.run.batch import merge_results_folder
    merged = merge_results_folder(Path(args.into), [Path(other) for other in args.gradebooks])
    if merged is not None:
        if merged.copied:
            print(f"{merged.copied} graded notebook{'s' if merged.copied != 1 else ''} copied into {merged.notebooks}")
        print(f"{merged.csv} written again: {merged.students} students")
    return 0


def _override(args: argparse.Namespace) -> int:
    import getpass
    from grader.store import overrides
    book = Path(_gradebook_file(args.gradebook))   # the results folder is taken for its gradebook
    if [args.remove, args.points is not None, args.forgive].count(True) != 1:
        print("give one of --points P, --forgive or --remove", file=sys.stderr)
        return 2
    try:
        made = overrides.record(book, args.student, args.exercise, points=None if args.remove else args.points,
                                reason=args.why, author=args.by or getpass.getuser(), case=args.case or "",
                                rubric=args.rubric, forgive=args.forgive)
    except overrides.OverrideError as error:
        print(error, file=sys.stderr)
        return 2
    where = f"{made.exercise}" + (f" case {made.case}" if made.case else "")
    change = "back to the automatic score" if made.points is None else f"{made.automatic:g} -> {made.points:g}"
    if args.forgive:
        change += " (forgiven: the points the incident policy took)"
    from grader.textsafe import terminal     # names and reasons other TAs wrote (merged): no escape reaches the tty
    print(terminal(f"{made.student} {where}: {change} by {made.author} at {made.at}"))
    csv_path = book.parent / "gradebook.csv"
    if csv_path.is_file():
        from grader.report.csv_export import write_csv
        write_csv(overrides.apply_all(overrides.current_results(book, made.rubric), book), csv_path)
        print(f"{csv_path} rewritten with the overrides")
    for entry in overrides.history(book, made.rubric, made.student):
        points = "automatic" if entry.points is None else f"{entry.points:g}"
        print(terminal(f"  {entry.at}  {entry.exercise}{' ' + entry.case if entry.case else ''}: {points} "
                       f"(automatic {entry.automatic:g}) by {entry.author}: {entry.reason}"))
    return 0


def _kit(args: argparse.Namespace) -> int:
    import json
    from grader.kit.kit import coverage, write_kit
    _check_rubric(args.rubric)
    _check_target(args.output, "-o")
    path = write_kit(args.rubric, args.output, cache=args.cache)
    data = json.loads(path.read_text(encoding="utf-8"))
    shipped = ", ".join((data.get("public") or {}).get("names", ())) or "none"
    print(f"student kit written to {path}: public cases and their answers, no reference code but the public "
          f"checks' ({shipped})")
    for exercise, full, later, checks in coverage(data):
        if later:
            print(f"  {exercise}: {later} of {full + later} public cases checked after submission "
                  f"(check {', '.join(checks)} needs the course's code)")
    return 0


def _graded_in(folder: str, args: argparse.Namespace) -> str:
    """`grader check ... FOLDER`: the notebook of the folder that grading takes (kit.check.graded_in), said first."""
    from grader.kit.check import graded_in
    if args.rubric:
        from grader.rubric.schema import load_rubric
        rubric = load_rubric(args.rubric)
    else:
        from grader.kit.kit import kit_plan, load_kit
        rubric = kit_plan(load_kit(args.kit)).rubric
    chosen, note = graded_in(Path(folder), rubric)
    if chosen is None:
        raise UsageError(f"{folder}: no notebook (.ipynb) or .py script in this folder")
    if note:
        print(f"{note}\nchecking {chosen}: the notebook grading takes from this folder")
    return str(chosen)


def _check(args: argparse.Namespace) -> int:
    from grader.intake.notebook import read_notebook
    if args.rubric:
        _check_rubric(args.rubric)
    else:
        _check_file(args.kit, "--kit")
        if Path(args.kit).suffix.lower() in (".yaml", ".yml"):   # was "not JSON: Expecting value"
            raise UsageError(f"{args.kit}: a rubric (YAML), not a student kit: give it as --rubric {args.kit}")
    if Path(args.notebook).is_dir():   # a student's folder: the notebook grade would take among its files
        args.notebook = _graded_in(args.notebook, args)
    _check_file(args.notebook, "the notebook")
    read_notebook(args.notebook)   # NotebookError: one line (a .txt or an empty file was graded to 13 failures)
    from grader.sandbox import isolation, supervisor
    # The sandbox's probe and this process's zygote start now, beside the imports and the kit's (or the plan's)
    # load, rather than one after the other when the first exercise runs (~0.25 s of a student's wait).
    isolation.start_probe()
    supervisor.zygote()
    try:
        from grader.judge.options import Options
        options = Options(allow_root_sandbox=args.allow_root_sandbox)
        if args.kit:
            from grader.kit.check import run_check
            return run_check(args.notebook, args.kit, options=options)
        from grader.run.batch import check
        from grader.report.console import student_report
        result, hidden = check(args.notebook, args.rubric, cache=Path(args.cache) if args.cache else None,
                               options=options)
        return 0 if student_report(result, hidden) else 1
    finally:
        isolation.drop_probe()   # a notebook that did not run never read it


def _doctor(args: argparse.Namespace) -> int:
    from grader.run.doctor import diagnose, render
    diagnosis = diagnose()
    print(render(diagnosis))
    return 0 if not diagnosis.advice else 1


def _validate(args: argparse.Namespace) -> int:
    _check_rubric(args.rubric)
    return _run_validate(args.rubric, args)


def _run_validate(rubric: str | Path, args: argparse.Namespace, place: Callable[[str], str] = str) -> int:
    """validate's report; `place` adds to a problem or warning where its text came from (assign: the master's cell)."""
    from grader.judge.options import Options
    from grader.authoring.validate import validate
    from rich.console import Console
    console = Console()
    validation = validate(rubric, cache=Path(args.cache) if args.cache else None,
                          options=Options(allow_root_sandbox=args.allow_root_sandbox), mutants=args.mutants,
                          mutation_seconds=args.mutation_seconds, jobs=args.jobs)
    reference = validation.reference_result
    console.print(f"reference: {reference.total:g}/{reference.max_total:g}", highlight=False)
    if validation.template_result is not None:
        template = validation.template_result
        console.print(f"template:  {template.total:g}/{template.max_total:g}", highlight=False)
    if validation.mutation is not None:
        from grader.authoring.mutation import describe
        for line in describe(validation.mutation, diffs=args.show_survivors):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    for warning in validation.warnings:
        console.print(f"warning: {place(warning)}", style="yellow", highlight=False, markup=False, soft_wrap=True)
    for problem in validation.problems:
        console.print(place(problem), style="red", highlight=False, markup=False, soft_wrap=True)
    if validation.ok:
        console.print(f"{validation.rubric.path}: valid ({sum(len(e.cases) for e in reference.exercises)} cases)",
                      style="green", highlight=False)
    return 0 if validation.ok else 1


def _assign(args: argparse.Namespace) -> int:
    from grader.authoring.assign import build, in_master, write
    from grader.rubric.schema import RubricError
    _check_file(args.master, "the master notebook")
    assignment, root = build(args.master, args.course)
    written = write(assignment, root, force=args.force)
    for what, path in written.items():
        print(f"{what}: {path}")
    for exercise in assignment.skeletons:
        print(f"exercise '{exercise}' has no '# tests' cell yet: its rubric entry is a skeleton to fill in")
    for note in assignment.notes:
        print(f"note: {note}")
    if args.no_validate:
        return 0
    rubric = written["rubric"]
    try:
        status = _run_validate(rubric, args, lambda text: in_master(assignment, rubric, text))
    except RubricError as error:    # the rubric does not parse: its problems, placed in the master too
        for problem in error.problems:
            print(in_master(assignment, rubric, problem), file=sys.stderr)
        status = 2
    if status:
        print(f"The rubric and reference named above are written by grader assign: make each fix in "
              f"{args.master} (the same text is in its cells) and run grader assign again")
    return status


def _extract(args: argparse.Namespace) -> int:
    from grader.extract.source import extract
    from grader.rubric.schema import Policy
    from grader.intake.notebook import read_notebook
    _check_file(args.notebook, "the notebook")
    policy = Policy()
    if args.rubric:
        from grader.plan.cases import build_plan
        from grader.plan.sealed import default_cache
        from grader.rubric.schema import load_rubric
        policy = build_plan(load_rubric(args.rubric), default_cache()).rubric.policy   # the roots grading uses
    from grader.textsafe import terminal
    extracted = extract(read_notebook(args.notebook), policy)
    # The notebook's own text, for a terminal: no escape sequences, no lone surrogates (they cannot be printed).
    for statement in extracted.statements:
        why = f"; kept: {statement.why}" if statement.why else ""
        sys.stdout.write(terminal(f"# {statement.label}, line {statement.line}{why}\n{statement.code}\n\n"))
    sys.stdout.write("\n# ---- left out ----\n")
    for line in extracted.dropped_report().splitlines():
        sys.stdout.write(f"# {terminal(line)}\n")
    return 0


ALLOW_ROOT = ("where the machine offers no user namespaces and no unused uid can be had, run student code as "
              "root anyway (otherwise such a submission is refused)")


def _grade_arguments(grade: argparse.ArgumentParser) -> None:
    grade.add_argument("paths", nargs="+", help="notebooks (.ipynb/.py), folders, globs or LMS zip downloads")
    grade.add_argument("--rubric", required=True)
    grade.add_argument("--out", required=True, help="folder for <submission>.json results")
    grade.add_argument("--jobs", type=int, default=None, help="parallel submissions (default: one per core)")
    grade.add_argument("--case-seconds", type=float, default=None, help="floor of the per-case time limit")
    grade.add_argument("--submission-seconds", type=float, default=None)
    grade.add_argument("--memory-mb", type=int, default=None)
    grade.add_argument("--allow-root-sandbox", action="store_true", help=ALLOW_ROOT)
    grade.add_argument("--cache", default=None, help="folder for cached reference answers")
    grade.add_argument("--quiet", action="store_true", help="no progress bar or table: a summary line (for CI logs)")
    grade.add_argument("--gradebook", default=None, help="SQLite gradebook (default: OUT/gradebook.sqlite)")
    grade.add_argument("--force", action="store_true", help="regrade submissions that have not changed")
    grade.add_argument("--allow-mismatch", action="store_true",
                       help="exit 0 even when notebooks do not look like the rubric's assignment")
    grade.add_argument("--dask", default=None, metavar="ADDRESS",
                       help="grade on a Dask cluster: a scheduler address, or 'local' for a LocalCluster")
    grade.add_argument("--gradescope", default=None, metavar="DIR",
                       help="also write a Gradescope results.json per submission into DIR")
    grade.set_defaults(run=_grade)


def _gradescope_arguments(gradescope: argparse.ArgumentParser) -> None:
    gradescope.add_argument("rubric")
    gradescope.add_argument("-o", "--output", required=True, help="the zip to write, e.g. autograder.zip")
    gradescope.add_argument("--source", action="store_true", help="ship the grader's source instead of a wheel")
    gradescope.add_argument("--cache", default=None, help="where the grader's wheel is kept for the next zip "
                                                          "(default: the grader's cache folder)")
    gradescope.set_defaults(run=_gradescope)


def _report_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("results", help="a results folder written by grade --out")
    report.add_argument("--out", required=True, help="folder for <student>.md / .html")
    report.add_argument("--notebooks", default=None, help="folder of the submitted notebooks (default: their "
                                                           "recorded paths)")
    report.add_argument("--hidden-details", action="store_true", help="show hidden cases in detail, not counted")
    from grader.report.formats import DEFAULT, FORMATS   # light: the formats' renderers load only when used
    report.add_argument("--format", default=None, metavar="F,...",
                        help=f"report formats, comma-separated (default {','.join(DEFAULT)}): "
                             + "; ".join(f"{f.name}: {f.help}" for f in FORMATS.values()))
    report.add_argument("--annotated", action="store_true", help="also the student's notebook with feedback boxes "
                                                                 "(the same as adding the notebook format)")
    report_template = report.add_mutually_exclusive_group()
    report_template.add_argument("--template", default=None, help="the template notebook: given code is shown "
                                                                  "as given, not as the student's")
    report_template.add_argument("--rubric", default=None, help="take the template notebook from this rubric")
    report.set_defaults(run=_report)


def _class_report_arguments(class_report: argparse.ArgumentParser) -> None:
    class_report.add_argument("results", help="a results folder written by grade --out")
    class_report.add_argument("-o", "--output", required=True, help="the HTML file to write")
    class_report.add_argument("--title", default=None)
    class_report.add_argument("--notebooks", default=None, help="folder of the submitted notebooks (default: the "
                                                                "copies in the results folder)")
    class_report.add_argument("--threshold", type=float, default=0.6, help="flag similar pairs at or above this")
    class_template = class_report.add_mutually_exclusive_group()
    class_template.add_argument("--template", default=None, help="the template notebook: its code never counts")
    class_template.add_argument("--rubric", default=None, help="take the template notebook from this rubric")
    class_report.add_argument("--no-similarity", action="store_true", help="leave out the similarity check")
    class_report.set_defaults(run=_class_report)


def _similarity_arguments(similarity: argparse.ArgumentParser) -> None:
    similarity.add_argument("results", help="a results folder written by grade --out")
    similarity.add_argument("--out", required=True, help="the HTML page to write, e.g. similarity.html")
    similarity.add_argument("--csv", default=None, help="the CSV of every pair (default: beside the page)")
    similarity.add_argument("--threshold", type=float, default=0.6, help="flag pairs at or above this score (0-1)")
    template = similarity.add_mutually_exclusive_group()
    template.add_argument("--template", default=None, help="the template notebook: its code never counts")
    template.add_argument("--rubric", default=None, help="take the template notebook from this rubric")
    similarity.add_argument("--notebooks", default=None, help="folder of the submitted notebooks (default: their "
                                                              "recorded paths)")
    similarity.set_defaults(run=_similarity)


def _export_arguments(export: argparse.ArgumentParser) -> None:
    from grader.report.class_outputs import OUTPUTS, defaults   # light: the writers load only when used
    export.add_argument("results", help="a results folder written by grade --out")
    export.add_argument("--out", required=True, help="the folder to write them to")
    export.add_argument("--format", default=None,
                        help=f"class outputs, comma-separated (default {','.join(defaults())}): "
                             + "; ".join(f"{name} = {output.help} ({output.target})"
                                         for name, output in OUTPUTS.items()))
    export.add_argument("--title", default=None)
    export.add_argument("--threshold", type=float, default=0.6, help="similarity: flag pairs at or above this")
    export_template = export.add_mutually_exclusive_group()
    export_template.add_argument("--template", default=None, help="the template notebook: its code is given")
    export_template.add_argument("--rubric", default=None, help="take the template notebook from this rubric")
    export.add_argument("--notebooks", default=None, help="folder of the submitted notebooks (default: their "
                                                          "recorded paths)")
    export.set_defaults(run=_export)


def _kit_arguments(kit: argparse.ArgumentParser) -> None:
    kit.add_argument("rubric")
    kit.add_argument("-o", "--output", required=True, help="the kit to write, e.g. kit.json")
    kit.add_argument("--cache", default=None)
    kit.set_defaults(run=_kit)


def _merge_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("gradebooks", nargs="+", help="gradebook files to merge in")
    merge.add_argument("--into", required=True, help="the gradebook that receives them (created if missing)")
    merge.set_defaults(run=_merge)


def _override_arguments(override: argparse.ArgumentParser) -> None:
    override.add_argument("student")
    override.add_argument("exercise")
    override.add_argument("--points", type=float, default=None, help="the points the exercise (or case) gets")
    override.add_argument("--remove", action="store_true", help="back to the automatic score (kept in the history)")
    override.add_argument("--forgive", action="store_true", help="an incident the TA found honest: give back the "
                          "points the rubric's incident policy took from the exercise")
    override.add_argument("--why", required=True, help="the reason, shown to the student and the next TA")
    override.add_argument("--by", default=None, help="who decided (default: the login name)")
    override.add_argument("--case", default=None, help="a case id: override that case's points only")
    override.add_argument("--gradebook", default="results/gradebook.sqlite")
    override.add_argument("--rubric", default=None, help="the rubric id, when the gradebook holds several")
    override.set_defaults(run=_override)


def _check_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("notebook", help="the notebook (.ipynb or .py), or a folder: the one grading would take from it")
    source = check.add_mutually_exclusive_group(required=True)
    source.add_argument("--rubric", help="the course's rubric (TAs, instructors)")
    source.add_argument("--kit", help="a student kit built by grader kit: no reference needed")
    check.add_argument("--cache", default=None)
    check.add_argument("--allow-root-sandbox", action="store_true", help=ALLOW_ROOT)
    check.set_defaults(run=_check)


def _doctor_arguments(doctor: argparse.ArgumentParser) -> None:
    doctor.set_defaults(run=_doctor)


def _assign_arguments(assign: argparse.ArgumentParser) -> None:
    assign.add_argument("master", help="the instructor's notebook (solution regions, # tests cells, a # rubric cell)")
    assign.add_argument("--course", default=None, help="the course folder (default: the nearest folder above the "
                                                       "master with a rubrics/ folder)")
    assign.add_argument("--no-validate", action="store_true", help="write the files only")
    assign.add_argument("--force", action="store_true", help="replace a rubric or reference that grader assign "
                                                             "did not write")
    _validator_arguments(assign)
    assign.set_defaults(run=_assign)


def _validate_arguments(validate: argparse.ArgumentParser) -> None:
    validate.add_argument("rubric")
    _validator_arguments(validate)
    validate.set_defaults(run=_validate)


def _validator_arguments(command: argparse.ArgumentParser) -> None:
    """What assign and validate share: both end in a validation."""
    from grader.authoring.mutants import DEFAULT_MUTANTS, DEFAULT_SECONDS
    command.add_argument("--cache", default=None)
    command.add_argument("--mutants", type=int, default=DEFAULT_MUTANTS, metavar="N",
                         help=f"mutants graded per exercise (default {DEFAULT_MUTANTS}; 0: no mutation testing)")
    command.add_argument("--mutation-seconds", type=float, default=DEFAULT_SECONDS, metavar="S",
                         help=f"time budget of mutation testing (default {DEFAULT_SECONDS:g} s)")
    command.add_argument("--jobs", type=int, default=None, help="parallel workers (default: one per core)")
    command.add_argument("--show-survivors", type=int, default=3, metavar="K",
                         help="surviving mutants shown with their diff per exercise (default 3)")
    command.add_argument("--allow-root-sandbox", action="store_true", help=ALLOW_ROOT)


def _extract_arguments(extract: argparse.ArgumentParser) -> None:
    extract.add_argument("notebook")
    extract.add_argument("--rubric", default=None, help="use this rubric's extraction policy")
    extract.set_defaults(run=_extract)


VERBS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "grade": ("grade submissions and write one JSON result each", _grade_arguments),
    "gradescope": ("build a Gradescope autograder zip for a rubric", _gradescope_arguments),
    "report": ("per-student feedback: Markdown and HTML (and annotated notebooks)", _report_arguments),
    "class-report": ("one HTML dashboard of the whole class (and the CSV)", _class_report_arguments),
    "similarity": ("pairwise similarity of each graded function across the class", _similarity_arguments),
    "export": ("write class-level outputs (CSV, dashboard, similarity, Gradescope) of a results folder",
               _export_arguments),
    "kit": ("export a student self-check kit (public cases only, no reference code)", _kit_arguments),
    "merge": ("merge gradebooks (e.g. graded on several machines) into one", _merge_arguments),
    "override": ("set a student's points for an exercise (or case), with why and who", _override_arguments),
    "check": ("self-check a notebook on the public cases", _check_arguments),
    "doctor": ("what containment this machine offers student code, and what to change for full isolation",
               _doctor_arguments),
    "assign": ("from one master notebook: the student template, the reference module and the rubric; then "
               "validate them", _assign_arguments),
    "validate": ("prove a rubric: reference full marks, template zero, mistakes caught, mutation score per "
                 "exercise", _validate_arguments),
    "extract": ("print the module the grader would run, and what it left out", _extract_arguments),
}
"""Every verb: its line in `grader --help`, and what adds its arguments (the help defaults of some import report
and authoring modules)."""


def parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line's parser for `argv`: every verb is listed (in --help, and as the choices a mistyped verb is
    told), but only the running verb's arguments are made, the verb being argv's first word that is not an option
    (the top level's options, --help and --version, take no value). Making every verb's imported report.formats,
    report.class_outputs and authoring.mutants for their help texts, modules `grade` never uses: ~9 ms of CPU at
    each start-up, before the first worker is forked. With no verb, or one that is none, every verb's arguments
    are made."""
    main = argparse.ArgumentParser(prog="grader", description="Grade puzzle notebooks against a reference.")
    main.add_argument("--version", action="version", version=f"puzzle-grader {__version__}")
    verbs = main.add_subparsers(dest="verb", required=True)
    running = next((word for word in argv if not word.startswith("-")), None)
    for name, (help_line, arguments) in VERBS.items():
        command = verbs.add_parser(name, help=help_line)
        if running not in VERBS or name == running:
            arguments(command)
    return main


def main(argv: list[str] | None = None) -> int:
    # Parsed before anything else is imported: `grade` and `check` start their sandboxes' probe and zygotes the
    # moment their arguments are known, and those interpreters then start beside this one's imports (the
    # rubric's and the notebook's errors below bring yaml, dataclasses and ast: ~40 ms of CPU).
    if argv is None:
        argv = sys.argv[1:]
    args = parser(argv).parse_args(argv)
    try:
        _check_numbers(args)
        _check_paths(args)
        return args.run(args)
    except UsageError as error:
        print(error, file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:   # a TA command without its extra: say what to install
        from grader.extras import missing_extra
        line = missing_extra(error)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return 2
    except Exception as error:  # a rubric or notebook that does not read, a damaged kit or gradebook: say which
        from grader.intake.notebook import NotebookError      # file and why, no traceback
        from grader.rubric.schema import RubricError
        if isinstance(error, RubricError):
            for problem in error.problems:
                print(problem, file=sys.stderr)
            return 2
        if isinstance(error, NotebookError):
            print(error, file=sys.stderr)
            return 2
        from grader.store.gradebook import GradebookError
        from grader.kit.kit import KitError
        from grader.report.similarity import SimilarityUnavailable
        from grader.run.executor_dask import ClusterError
        from grader.run.batch import ResultsFolderError
        from grader.store.shared import SharedValuesError
        if isinstance(error, (KitError, GradebookError, SimilarityUnavailable, ClusterError, ResultsFolderError,
                              SharedValuesError)):
            print(error, file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        print("interrupted: results written so far are kept", file=sys.stderr)
        return 130


def console() -> None:
    """The `grader` command and `python -m grader`: main(), then the process ends without the interpreter's
    teardown of every module and object it holds (the grader's modules, a plan and its expected values: ~20 ms
    of CPU a command, for memory the kernel takes back anyway). What that teardown would do that matters still
    runs, as multiprocessing ends its forked workers: the threads' exit (a sandbox's queued teardowns), the exit
    handlers (temp folders, zygotes, weakref finalizers) and the flush of stdout and stderr."""
    import atexit
    import threading
    try:
        code = main()
    except BrokenPipeError:      # `grader override ... | head -1`: the reader left; a traceback would say a bug
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # what is still buffered goes nowhere
        code = 1
    except SystemExit as stop:   # argparse's usage errors and --help
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int) and stop.code is not None:
            print(stop.code, file=sys.stderr)
    threading._shutdown()   # type: ignore[attr-defined]  # what the interpreter's own exit does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    console()
