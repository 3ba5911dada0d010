"""Per-student feedback a TA can send: Markdown (an LMS comment) and a self-contained HTML page.

Both formats show the same content, read from the result model only: the score, a table of the exercises,
and for every failing public case the call, expected and got (drawn as boards when they are boards), the
message, the traceback and what the code printed. Hidden cases are only counted unless the TA asks for their
details: their expected values are the reference's answers and must not reach a student by default. The HTML
page adds the student's own code of each function that lost points, taken from the notebook.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import jinja2
from markupsafe import Markup

from grader.extract.source import extract
from grader.intake.notebook import NotebookError, read_notebook
from grader.report import boards, boards_html
from grader.report.grouping import (alike_inputs, failure_groups, group_cause, listed, own_messages, shown_before,
                                    shown_notes)
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult, late_line, read_json
from grader.store.shared import SharedReader
from grader.store.status import MISSING, SYMBOLS, alike_words, headline, limit_note
from grader.textsafe import display

if TYPE_CHECKING:
    from grader.report.formats import Page

TEMPLATES = Path(__file__).parent / "templates"
OUTPUT_CHARS = 1500
OUTPUT_LINES = 30
# No script, no network, no form submission, no <base> redirecting links (a meta CSP cannot set frame-ancestors).
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'"


# ---------------------------------------------------------------------------------------------- content


def score_text(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}".rstrip("0")


def status_counts(cases: Iterable[CaseResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.status] = counts.get(case.status, 0) + 1
    return counts


def hidden_summary(cases: Sequence[CaseResult]) -> str:
    """'3 hidden cases: 2 passed, 1 failed' (never the calls or values of hidden cases)."""
    hidden = [c for c in cases if c.visibility == "hidden"]
    if not hidden:
        return ""
    counts: dict[str, int] = {}   # by headline: a case the budget skipped is not counted as "raised an error"
    for case in sorted(hidden, key=lambda c: _rank(c.status)):
        word = headline(case.status, case.reason)
        counts[word] = counts.get(word, 0) + 1
    parts = ", ".join(f"{count} {word}" for word, count in counts.items())
    return f"{len(hidden)} hidden case{'s' if len(hidden) != 1 else ''}: {parts}"


def public_summary(cases: Sequence[CaseResult]) -> str:
    public = [c for c in cases if c.visibility == "public"]
    if not public:
        return "no public cases"
    counts = status_counts(public)
    passed = counts.get("pass", 0)
    rest = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda item: _rank(item[0])) if s != "pass")
    return f"{passed}/{len(public)} public pass" + (f" ({rest})" if rest else "")


def _rank(status: str) -> tuple[int, str]:
    return (list(SYMBOLS).index(status) if status in SYMBOLS else len(SYMBOLS), status)


def truncated_output(text: str) -> str:
    lines = text.splitlines()
    cut = len(lines) > OUTPUT_LINES or len(text) > OUTPUT_CHARS
    shown = "\n".join(lines[:OUTPUT_LINES])[:OUTPUT_CHARS]
    return shown + ("\n... (output cut)" if cut else "")


def shown_cases(exercise: ExerciseResult, hidden_details: bool) -> list[CaseResult]:
    """The cases a report details: failing public ones, and failing hidden ones when the TA asks for them."""
    return [c for c in exercise.cases
            if c.status != "pass" and (c.visibility == "public" or hidden_details)]


def needs_section(exercise: ExerciseResult) -> bool:
    """Exercises with full marks and every case passing stay a row of the table."""
    return exercise.score < exercise.max_score or any(c.status != "pass" for c in exercise.cases)


def has_section(exercise: ExerciseResult) -> bool:
    """What gets a section of its own: what lost something, and a passing exercise with notes for the student
    (the accepted variant it followed and why it is discouraged, helpers judged with the reference's, a global
    it reads). A passing exercise gets no hints, so its notes are only these."""
    return needs_section(exercise) or bool(exercise.notes)


# ---------------------------------------------------------------------------------------------- student code


def locate_notebook(result: SubmissionResult, notebooks: Mapping[str, Path] | str | Path | None,
                    results_folder: Path | None = None) -> Path | None:
    """The graded file: from the mapping (submission id -> path), else in a folder by the file's name or the
    submission id, else the content-addressed copy the grader kept in the results folder, else the path
    recorded in the result when it still exists."""
    if isinstance(notebooks, Mapping):
        path = notebooks.get(result.submission)
        return Path(path) if path is not None and Path(path).is_file() else None
    if notebooks is None and results_folder is not None and result.notebook:
        copy = Path(results_folder) / result.notebook
        if copy.is_file() and copy.resolve().is_relative_to(Path(results_folder).resolve()):
            return copy
    recorded = Path(result.path) if result.path else None
    if notebooks is not None:
        folder = Path(notebooks)
        candidates = ([folder / recorded.name] if recorded else []) + [
            folder / f"{result.submission}{suffix}" for suffix in (".ipynb", ".py")]
        for candidate in candidates:
            if candidate.is_file():
                return candidate
    if recorded is not None and recorded.is_file():
        return recorded
    return None


def function_code(notebook: Path, exercises: Sequence[ExerciseResult]) -> dict[str, str]:
    """Exercise id -> the student's code of the graded function (a method alone when a class method is graded)."""
    try:
        extracted = extract(read_notebook(notebook))
    except (NotebookError, OSError, ValueError):
        return {}
    code: dict[str, str] = {}
    for exercise in exercises:
        name = (exercise.function or exercise.id).split(".")[0]
        definition = extracted.definitions.get(name)
        if definition is None or definition.kind == "import":
            continue
        statements = [s for s in extracted.statements if s.cell == definition.cell and s.line <= definition.line]
        if not statements:
            continue
        statement = max(statements, key=lambda s: s.line)
        text = _method_code(statement.code, statement.line, definition.node, exercise) or statement.code
        code[exercise.id] = text.rstrip() + "\n"
    return code


def _method_code(code: str, first_line: int, node: ast.AST | None, exercise: ExerciseResult) -> str | None:
    """From a graded class, the one method the exercise grades: named after the part after the dot of the
    function, or found at the line the result's location names."""
    if not isinstance(node, ast.ClassDef):
        return None
    wanted = exercise.function.split(".")[1] if "." in exercise.function else None
    line = exercise.line
    methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    method = next((m for m in methods if m.name == wanted), None) if wanted else None
    if method is None and line:
        method = next((m for m in methods if m.lineno == line and m.lineno != node.lineno), None)
    if method is None:
        method = next((m for m in methods if m.name == exercise.id), None)
    if method is None or method.end_lineno is None:
        return None
    start = min([method.lineno] + [d.lineno for d in method.decorator_list])
    lines = code.splitlines()[start - first_line: method.end_lineno - first_line + 1]
    return f"class {node.name}:  # only the method {method.name}\n" + textwrap.indent(
        textwrap.dedent("\n".join(lines)), "    ")


# ---------------------------------------------------------------------------------------------- Markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}|#<>~])")


_MD_LEADING = re.compile(r"^(\s*)([-+=]|\d+[.)])")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def md_text(text: str) -> str:
    """Student text as Markdown that renders literally (no HTML, links, emphasis or structure sneak in).

    One line: a line break would let the text start a heading, a list or a table row of its own.
    """
    one_line = _LINE_BREAKS.sub(" ", display(text))
    escaped = _MD_SPECIAL.sub(r"\\\1", one_line.replace("&", "&amp;"))
    return _MD_LEADING.sub(lambda m: m[1] + m[2][:-1] + "\\" + m[2][-1], escaped)   # "1." or "-" would start a list


def md_code(text: str) -> str:
    """An inline code span that holds any backticks the text has (on one line, as inline code must be)."""
    text = _LINE_BREAKS.sub(" ", display(text))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_block(text: str, info: str = "text") -> str:
    """A fenced block longer than any backtick run inside it, so nothing the text holds can close it."""
    text = display(text)
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _md_inputs(inputs: Iterable[tuple[str, Any]], drawn: dict[tuple[str, str], str], exercise: str) -> list[str]:
    """The inputs' block: each drawn, or named when the report drew it already (grouping.shown_before)."""
    texts = [f"{name}: {named}" if (named := shown_before(name, value, drawn, exercise, name_boards=False))
             else boards.text_input(name, value) for name, value in inputs]
    return ["With:", "", md_block("\n\n".join(texts)), ""] if texts else []


def _md_case(case: CaseResult, drawn: dict[tuple[str, str], str], exercise: str) -> list[str]:
    where = " (hidden)" if case.visibility == "hidden" else ""
    words = headline(case.status, case.reason)
    out = [f"#### {SYMBOLS.get(case.status, '?')} {md_code(case.call or case.id)} — {words}{where}", ""]
    if case.message:
        out += [md_text(case.message + limit_note(case.status, case.limit)), ""]
    if case.inputs and case.status != "pass":
        out += _md_inputs(case.inputs.items(), drawn, exercise)
    if case.status == "fail":
        out += [md_block(boards.text_comparison(case.expected, case.got, width=80, path=case.path_answer)), ""]
    if case.traceback and case.status in ("error", "timeout"):
        out += ["Traceback (your code, by notebook cell):", "", md_block(case.traceback), ""]
    if case.output:
        out += ["Printed output:", "", md_block(truncated_output(case.output)), ""]
    return out


def markdown_report(result: SubmissionResult, *, hidden_details: bool = False,
                    code: Mapping[str, str] | None = None) -> str:
    """The feedback as Markdown; `code` (exercise id -> the student's code) is shown for exercises that lost
    points when given."""
    score = f"{score_text(result.total)} / {score_text(result.max_total)}"
    out = [f"# Feedback: {md_text(result.submission)}", "",
           f"**Score: {score}** · assignment {md_text(result.rubric)} · isolation: {md_text(result.isolation)}", ""]
    if result.late:
        out += [md_text(late_line(result)), ""]
    if result.warnings:
        out += ["**Warnings**", ""] + [f"- {md_text(w.shown)}" for w in result.warnings] + [""]
    out += ["| Exercise | Score | Public cases | Hidden cases |", "|---|---:|---|---|"]
    for exercise in result.exercises:
        out.append(f"| {md_text(exercise.id)} | {score_text(exercise.score)} / {score_text(exercise.max_score)} | "
                   f"{public_summary(exercise.cases)} | {hidden_summary(exercise.cases) or '–'} |")
    out.append("")
    adjusted = [(fact, entry) for fact in result.extra.get("overrides", ()) for entry in fact["by"]]
    if adjusted:
        out += ["**Grade adjustments by the course staff** (the automatic score is kept beside them)", ""]
        out += [f"- {md_text(fact['exercise'])}{' case ' + md_text(entry['case']) if entry['case'] else ''}: "
                f"{score_text(entry['automatic'])} → {score_text(entry['points'])} ({md_text(entry['why'])}; "
                f"{md_text(entry['author'])}, {entry['at'][:10]})" for fact, entry in adjusted] + [""]
    pictured: dict[tuple[str, str], str] = {}   # inputs drawn so far: one drawn again is named (shown_before)
    for exercise in result.exercises:
        if not has_section(exercise):
            continue
        out += [f"## {md_text(exercise_heading(exercise))} "
                f"({score_text(exercise.score)} / {score_text(exercise.max_score)})", ""]
        if exercise.location:
            out += [f"{located(exercise).capitalize()} {md_code(exercise.function or exercise.id)} at "
                    f"{md_text(exercise.location)}{'' if ran(exercise) else '; none of its cases ran'}.", ""]
        drawn = shown_cases(exercise, hidden_details)
        notes = shown_notes(exercise, drawn)
        out += [f"- {md_text(note)}" for note in notes] + ([""] if notes else [])
        for case, alike in failure_groups(drawn):
            out += _md_case(case, pictured, exercise.id)
            if alike:
                cause = group_cause(case, alike)
                own = own_messages(case, alike)
                names = ", ".join(md_code(c.call or c.id) for c in listed(alike, own))
                out += [f"And {len(alike)} more case{'s' if len(alike) != 1 else ''} {alike_words(case.status)}"
                        f"{f' ({md_text(cause)})' if cause else ''}:" + (f" {names}" if names else ""), ""]
                if own:
                    out += [f"- {md_code(c.call or c.id)}: {md_text(text)}" for c, text in own] + [""]
                out += _md_inputs(alike_inputs(case, alike), pictured, exercise.id)
        summary = hidden_summary(exercise.cases)
        if summary and not hidden_details:
            out += [f"*{summary}.*", ""]
        if code and exercise.id in code and needs_section(exercise):
            out += ["Your code:", "", md_block(code[exercise.id], "python"), ""]
    if all(not needs_section(e) for e in result.exercises):
        out += ["Every case passes, hidden ones included." if any(
            c.visibility == "hidden" for e in result.exercises for c in e.cases) else "Every public case passes.", ""]
    return display("\n".join(out).rstrip() + "\n")


# ---------------------------------------------------------------------------------------------- HTML


@dataclass(frozen=True)
class _CaseView:
    case: CaseResult
    symbol: str
    comparison: Markup | None
    output: str
    alike: tuple[CaseResult, ...] = ()   # other cases that failed the same way, shown by their call only
    inputs: Markup | None = None     # the course fixtures the call uses, drawn (failing public cases)
    alike_inputs: Markup | None = None   # the inputs of the `alike` cases not already drawn
    cause: str = ""                  # what the group shares, when its messages differ (grouping.group_cause)
    own: tuple[tuple[CaseResult, str], ...] = ()   # the `alike` cases with a message of their own, and its text
    words: str = ""                  # the status's words, from the case's status and reason (store.status)
    named: tuple[CaseResult, ...] = ()   # the `alike` cases named after "and n more" (grouping.listed)


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                     trim_blocks=True, lstrip_blocks=True)
    environment.filters["score"] = score_text
    environment.filters["limit_note"] = limit_note
    environment.filters["alike_words"] = alike_words
    return environment


def highlight_python(code: str) -> Markup:
    """Code coloured with inline styles (no stylesheet to ship), escaped by pygments."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    return Markup(highlight(code, PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True, style="default")))


def _case_views(exercise: ExerciseResult, hidden_details: bool,
                drawn: dict[tuple[str, str], str] | None = None) -> list[_CaseView]:
    """`drawn`: the inputs the page drew so far (shown_before), shared by its exercises; None draws every one."""
    views = []
    for case, alike in failure_groups(shown_cases(exercise, hidden_details)):
        own = tuple(own_messages(case, alike))
        views.append(_CaseView(case, SYMBOLS.get(case.status, "?"),
                               boards_html.html_comparison(case.expected, case.got, path=case.path_answer)
                               if case.status == "fail" else None,
                               truncated_output(case.output) if case.output else "", tuple(alike),
                               _html_inputs(case, drawn, exercise.id),
                               _html_alike_inputs(case, alike, drawn, exercise.id), cause=group_cause(case, alike),
                               own=own, words=headline(case.status, case.reason), named=tuple(listed(alike, own))))
    return views


def _html_alike_inputs(case: CaseResult, alike: list[CaseResult], drawn: dict[tuple[str, str], str] | None,
                       exercise: str) -> Markup | None:
    return _html_input_list(alike_inputs(case, alike), drawn, exercise)


def _html_inputs(case: CaseResult, drawn: dict[tuple[str, str], str] | None, exercise: str) -> Markup | None:
    if case.status == "pass" or not case.inputs:
        return None
    return _html_input_list(list(case.inputs.items()), drawn, exercise)


def _html_input_list(inputs: list[tuple[str, Any]], drawn: dict[tuple[str, str], str] | None,
                     exercise: str) -> Markup | None:
    if not inputs:
        return None
    parts = []
    for name, value in inputs:
        named = shown_before(name, value, drawn, exercise, name_boards=False) if drawn is not None else ""
        parts.append(Markup('<p class="input"><code>{}</code>: {}</p>').format(name, named) if named
                     else boards_html.html_input(name, value))
    return Markup('<div class="inputs">{}</div>').format(Markup("").join(parts))


def exercise_heading(exercise: ExerciseResult) -> str:
    """'move_dir: Move the blank', or 'is_solvable' alone when the rubric gave no title (it defaults to the id)."""
    title = shown_title(exercise.id, exercise.title)
    return f"{exercise.id}: {title}" if title else exercise.id


def shown_title(exercise_id: str, title: str) -> str:
    """The title to show beside the id: "" when the rubric gave none (it defaults to the id), so that no page
    says 'is_solvable is_solvable'."""
    return "" if title in ("", exercise_id) else title


def ran(exercise: ExerciseResult) -> bool:
    """Whether any case of the exercise ran: a stub, a function in a cell left out or a notebook not graded at
    all has a location but ran nothing, and feedback must not call it graded."""
    return any(case.status != MISSING for case in exercise.cases) or not exercise.cases


def located(exercise: ExerciseResult) -> str:
    """The verb before the graded name's location."""
    return "graded" if ran(exercise) else "found"


def exercise_html(exercise: ExerciseResult, *, hidden_details: bool = False, code: str | None = None,
                  heading: str = "h2", given: bool = False, drawn: dict[tuple[str, str], str] | None = None) -> Markup:
    """One exercise's feedback as an HTML fragment (needs stylesheet()); the annotated notebook reuses it.
    `given`: the code is the template's, unchanged, so it is folded and not called the student's. `drawn`: the
    inputs the page drew above (grouping.shown_before), named instead of drawn again."""
    template = _environment().get_template("exercise.html.j2")
    return Markup(template.render(exercise=exercise, cases=_case_views(exercise, hidden_details, drawn),
                                  notes=shown_notes(exercise, shown_cases(exercise, hidden_details)),
                                  hidden=hidden_summary(exercise.cases) if not hidden_details else "",
                                  public=public_summary(exercise.cases), code=highlight_python(code) if code else None,
                                  heading=heading, full=not needs_section(exercise), given=given,
                                  located=located(exercise), ran=ran(exercise), title=exercise_heading(exercise)))


def same_code(one: str, other: str | None) -> bool:
    """Whether two pieces of code are the same program (comments, blank lines and layout aside)."""
    if other is None:
        return False
    try:
        return ast.dump(ast.parse(textwrap.dedent(one))) == ast.dump(ast.parse(textwrap.dedent(other)))
    except (SyntaxError, ValueError):
        return one.split() == other.split()


@functools.lru_cache(maxsize=8)
def _template_code(template: str, exercises: tuple[ExerciseResult, ...]) -> dict[str, str]:
    """The template's code of these exercises, read once per class rather than once per student."""
    return function_code(Path(template), exercises)


def given_code(code: Mapping[str, str], template: Path | None, exercises: Sequence[ExerciseResult]) -> set[str]:
    """The exercises whose graded code is the template's, unchanged: code the student was given."""
    if template is None or not code:
        return set()
    from dataclasses import replace as without
    handed_out = _template_code(str(template), tuple(without(e, cases=()) for e in exercises if e.id in code))
    return {exercise_id for exercise_id, text in code.items() if same_code(text, handed_out.get(exercise_id))}


def stylesheet() -> Markup:
    return Markup((TEMPLATES / "feedback.css").read_text(encoding="utf-8") + boards_html.HTML_CSS)


def summary_html(result: SubmissionResult, *, linked: Iterable[str] = ()) -> Markup:
    """The warnings and the table of exercises as an HTML fragment (needs the stylesheet)."""
    template = _environment().get_template("summary.html.j2")
    return Markup(template.render(result=result, rows=_rows(result), linked=set(linked)))


def _rows(result: SubmissionResult) -> list[tuple[ExerciseResult, str, str]]:
    return [(e, public_summary(e.cases), hidden_summary(e.cases)) for e in result.exercises]


def html_report(result: SubmissionResult, *, hidden_details: bool = False,
                code: Mapping[str, str] | None = None, given: Iterable[str] = ()) -> str:
    """The feedback as one self-contained HTML page: inline CSS, no script, no network, escaped throughout.
    `given` names the exercises whose code is the template's (not called "Your code")."""
    code = code or {}
    given = set(given)
    drawn: dict[tuple[str, str], str] = {}   # inputs drawn so far: one drawn again is named (shown_before)
    sections = [exercise_html(e, hidden_details=hidden_details, code=code.get(e.id) if needs_section(e) else None,
                              given=e.id in given, drawn=drawn)
                for e in result.exercises if has_section(e)]
    template = _environment().get_template("student.html.j2")
    return display(template.render(result=result, rows=_rows(result), sections=sections, css=stylesheet(), csp=CSP,
                           late_line=late_line(result),
                           all_pass=not any(needs_section(e) for e in result.exercises),
                           linked={e.id for e in result.exercises if has_section(e)},
                           has_hidden=any(c.visibility == "hidden" for e in result.exercises for c in e.cases)))


# ---------------------------------------------------------------------------------------------- files


def iter_results(results: str | Path | Iterable[SubmissionResult]) -> Iterator[SubmissionResult]:
    """Results of a results folder one at a time, or as given. From the folder's gradebook when it has one (every
    student, whichever JSON files were deleted; each shared value parsed once, not once per case and student),
    else from its <student>.json files (other JSON files skipped). A result whose shared values are damaged
    stops the reading (grader.store.shared.SharedValuesError names the file): skipping it would leave a student
    without a report and say nothing."""
    if isinstance(results, (str, Path)) and (Path(results) / "gradebook.sqlite").is_file():
        from grader.store.gradebook import Gradebook
        with Gradebook(Path(results) / "gradebook.sqlite") as book:
            for rubric in book.rubrics():
                yield from book.iter_current(rubric)
        return
    if isinstance(results, (str, Path)):
        store = SharedReader(Path(results))
        for path in sorted(Path(results).glob("*.json")):
            try:
                yield read_json(path, store)
            except (KeyError, TypeError, ValueError):
                continue  # not a result file (a kit, a Gradescope file ...)
        return
    yield from results


def markdown_page(page: Page) -> str:
    """The `md` report format (grader.report.formats)."""
    return markdown_report(page.result, hidden_details=page.hidden_details)


def html_page(page: Page) -> str:
    """The `html` report format: with the student's code of each exercise that needs a section, when found."""
    failing = [e for e in page.result.exercises if needs_section(e)]
    code = function_code(page.notebook, failing) if page.notebook is not None and failing else {}
    return html_report(page.result, hidden_details=page.hidden_details, code=code,
                       given=given_code(code, page.template, failing))
