"""Writers survive any string, stored results are bounded, extraction survives any cell, and a crashing rubric
check is a grader problem, not the student's fail.

The batch test grades tests/fixtures/writers (built by build.py there: a lone surrogate printed and returned,
8 MB answers and messages, a 3000-term cell, hostile HTML in markdown and outputs) with the real command line,
plus a copy of the correct notebook under a file name that is not UTF-8, and then renders every report.
Property tests (Hypothesis) feed the writers arbitrary text, lone surrogates and control characters included.
"""

from __future__ import annotations

import csv
import html.parser
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from grader import textsafe
from grader.extract.source import extract
from grader.store.gradebook import Gradebook, ScoreRow
from grader.intake.notebook import notebook_from_source, read_notebook
from grader.report import annotated, console, gradescope, student
from grader.report.class_report import build_report, class_report_html
from grader.report.csv_export import write_csv
from grader.store.results import (SUBMISSION_CHARS, CaseResult, ExerciseResult, SubmissionResult, bound_case,
                                  bound_result, read_json, write_json)
from grader.intake.warning import GraderWarning, Kind
from grader.judge.grading import TOO_LARGE
from grader.plan.cases import Memo
from testclock import within

REPO = Path(__file__).resolve().parents[1]
WRITERS = REPO / "tests" / "fixtures" / "writers"
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
FIXTURES = ("lone_surrogate", "huge_strings", "deep_cells", "hostile_markdown")

# Any code point, lone surrogates and controls included (Hypothesis leaves surrogates out by default).
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=200)
HOSTILE_TEXT = st.one_of(ANY_TEXT, st.sampled_from([
    "\ud800", "\udcff\x00", "\x1b[2J\x1b]0;x\x07", "\n\n# Injected\n", "<script>alert(1)</script>",
    "<b class=\"grader-box\">", "| a | b |\n|---|---|", "```\n# x\n```", "=\n===", "1. item", "&lt;b&gt;",
    "\r\roverwrite", "\u202eevil"]))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _result(text: str, *, name: str = "student", wire: object = None, cases: int = 2) -> SubmissionResult:
    case_list = tuple(CaseResult(id=f"c{n}", status=("fail", "error", "problem")[n % 3], visibility="public",
                                 message=text, call=f"f({n})", expected={"tuple": [1, 2]},
                                 got=wire if wire is not None else text, output=text, traceback=text)
                      for n in range(cases))
    exercise = ExerciseResult(id="ex", title="Exercise", score=0.0, max_score=2.0, cases=case_list, notes=(text,),
                              function="f", location="cell 1, line 1")
    return SubmissionResult(submission=name, path=f"/tmp/{text[:20]}.ipynb", sha256="0" * 64, rubric="mini",
                            rubric_sha256="1" * 64, grader_version="0", isolation="none", total=0.0, max_total=2.0,
                            exercises=(exercise,),
                            warnings=(GraderWarning(Kind.LOAD_ERROR, text, text, cell=0, label="cell 1", line=1),),
                            environment=(GraderWarning(Kind.MISSING_MODULE, text, text),))


_DRAWN: dict[str, str] = {}
_OWNER = Memo()      # what results.fitting's values live as long as (a plan's memo)


def _drawn_once(draw):
    """`draw` memoised by its name: the class report tests below ask the same figure of every example."""
    if getattr(draw, "drawn_once", False):
        return draw

    def drawn(*args, **kwargs) -> str:
        if draw.__name__ not in _DRAWN:
            _DRAWN[draw.__name__] = draw(*args, **kwargs)
        return _DRAWN[draw.__name__]
    drawn.drawn_once = True
    return drawn


class _Tags(html.parser.HTMLParser):
    """Every start tag and attribute of a page, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser.tags


# ------------------------------------------------------------------------------------------------ textsafe


@SETTINGS
@given(text=ANY_TEXT, limit=st.integers(min_value=0, max_value=300))
def test_cut_keeps_head_and_tail_within_the_limit_and_is_idempotent(text: str, limit: int) -> None:
    shown = textsafe.cut(text, limit)
    assert len(shown) <= limit
    assert textsafe.cut(shown, limit) == shown
    if len(text) <= limit:
        assert shown == text
    elif limit >= 80:
        assert "characters cut" in shown and shown.startswith(text[:10]) and shown.endswith(text[-10:])


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_terminal_text_has_no_control_characters_and_encodes(text: str) -> None:
    shown = textsafe.terminal(text)
    shown.encode("utf-8")
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in shown)


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_one_line_text_is_terminal_text_without_line_breaks(text: str) -> None:
    shown = textsafe.one_line(text)
    assert "\n" not in shown and "\r" not in shown
    assert shown == textsafe.terminal(text).replace("\n", textsafe.REPLACEMENT)


# ------------------------------------------------------------------------------------------------ writers


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_result_json_round_trips_any_string(text: str, tmp_path: Path) -> None:
    result = _result(text)
    path = write_json(result, tmp_path)
    raw = path.read_bytes()
    raw.decode("utf-8")                         # valid UTF-8 whatever the strings were
    json.loads(raw)
    assert read_json(path) == bound_result(result)   # lossless: a lone surrogate comes back as it was


@SETTINGS
@given(text=HOSTILE_TEXT, name=HOSTILE_TEXT)
def test_gradebook_stores_any_string(text: str, name: str, tmp_path: Path) -> None:
    result = _result(text)
    with Gradebook(tmp_path / f"book-{abs(hash((text, name)))}.sqlite") as book:
        book.record("student", name, result)        # the source names a file: any bytes
        assert book.current("mini") == [bound_result(result)]


@SETTINGS
@given(names=st.lists(HOSTILE_TEXT, min_size=1, max_size=5))
def test_csv_parses_back_one_row_per_student(names: list[str], tmp_path: Path) -> None:
    results = [_result("x", name=f"s{n}") for n in range(len(names))]
    path = tmp_path / "gradebook.csv"
    write_csv(results, path, students=names)
    with open(path, encoding="utf-8", newline="") as stream:
        rows = list(csv.reader(stream))
    assert len(rows) == len(names) + 1
    for row, name in zip(rows[1:], names, strict=True):
        assert row[0].lstrip("'") == textsafe.display(name).lstrip("'")


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_markdown_report_gets_no_heading_or_html_from_student_text(text: str) -> None:
    result = _result(text)
    report = student.markdown_report(result)
    report.encode("utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(report)
    headings = [t for t in tokens if t.type == "heading_open"]
    # Ours only: the title, the exercise's section and one per failing public case.
    assert len(headings) == 1 + 1 + len(result.exercises[0].cases)
    inline = [child for t in tokens if t.children for child in t.children]
    assert not [t for t in [*tokens, *inline] if t.type in ("html_block", "html_inline")]


# What a terminal would act on: escape sequences, bells, backspaces, a lone carriage return, bidi overrides.
TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_report_files_carry_no_terminal_controls(text: str) -> None:
    """A TA reads feedback.md or the gradebook with cat, head or less -R: a notebook's "\\x1b]52;c;..." would set
    their clipboard, "\\x1b[2J" or a lone "\\r" hide the lines before it. Display formats show them as U+FFFD."""
    result = _result(text)
    pages = {"md": student.markdown_report(result), "html": student.html_report(result, code={"ex": text}),
             "csv": textsafe.display(text)}
    for kind, page in pages.items():
        assert not TERMINAL_CONTROLS.search(page), (kind, text)


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_html_report_escapes_every_student_tag(text: str) -> None:
    marked = text + '<evil-tag class="grader-box">'
    page = student.html_report(_result(marked), code={"ex": marked})
    page.encode("utf-8")
    assert all(tag != "evil-tag" for tag, _ in _tags(page))


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_class_report_escapes_every_student_tag(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The plots draw scores and exercise ids, never student text, and are the same for every example: drawn
    # once, not 60 times (matplotlib was three quarters of this test's CPU).
    from grader.report import plots
    for name in ("total_histogram", "exercise_shares"):
        monkeypatch.setattr(plots, name, _drawn_once(getattr(plots, name)))
    marked = text + "<evil-tag>"
    page = class_report_html([_result(marked, name="a"), _result("ok", name="b")])
    textsafe.display(page).encode("utf-8")
    assert all(tag != "evil-tag" for tag, _ in _tags(page))


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_gradescope_results_are_valid_utf8_json(text: str, tmp_path: Path) -> None:
    path = gradescope.write_gradescope(_result(text), tmp_path / "results.json")
    data = json.loads(path.read_bytes().decode("utf-8"))
    assert len(data["tests"]) == 2


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_console_prints_student_text_without_escapes(text: str) -> None:
    from rich.console import Console
    buffer = io.StringIO()
    out = Console(file=buffer, width=100, force_terminal=False, color_system=None)
    console.student_report(_result(text), {}, out)
    row = ScoreRow(student=text, total=0.0, max_total=2.0, state="unreadable", isolation="none", scores={"ex": 0.0})
    console.print_rows([row], out, {text: text})
    printed = buffer.getvalue()
    printed.encode("utf-8")
    assert "\x1b" not in printed and "\x00" not in printed and "\r" not in printed


@SETTINGS
@given(text=HOSTILE_TEXT)
def test_sanitized_student_html_has_no_style_script_form_class_or_remote_link(text: str) -> None:
    page = annotated.sanitize_html(
        f'<style>.grader-box{{display:none}}</style><div class="grader-box" style="x" id="grader-summary">{text}'
        f'</div><form action="https://e.x"><input type="password"></form><a href="https://e.x">a</a>'
        f'<img src="https://e.x/p.png" onerror="alert(1)"><script>alert(1)</script>{text}')
    page.encode("utf-8")
    for tag, attributes in _tags(page):
        assert tag not in ("style", "script", "form", "input", "iframe", "meta", "base", "link")
        assert not {"class", "id", "style", "onerror", "action"} & set(attributes)
        assert not str(attributes.get("href") or "").startswith(("http", "javascript"))
        assert str(attributes.get("src") or "data:").startswith("data:")


# ------------------------------------------------------------------------------------------------ bounds


_WIRE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(), lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300), wire=_WIRE, shared=_WIRE)
def test_a_result_is_measured_without_encoding_it_only_when_it_surely_fits(text: str, wire: object,
                                                                         shared: object) -> None:
    # bound_result skips encoding a result whose JSON surely fits: the estimate must never be below the truth,
    # whatever the texts (escapes, surrogates) and values, shared by the plan (fitting) or the student's own.
    from grader.store.results import _result_json_at_most, fitting, to_dict
    result = _result(text, wire=wire if wire is not None else 0, cases=3)
    kept = fitting(shared, _OWNER)
    case = result.exercises[0].cases[0]
    result = replace(result, exercises=(replace(result.exercises[0], cases=(
        replace(case, expected=kept, got=kept), *result.exercises[0].cases[1:])),))
    assert _result_json_at_most(to_dict(result)) >= len(textsafe.json_text(to_dict(result), separators=(",", ":")))


@SETTINGS
@given(text=HOSTILE_TEXT, notes=st.lists(st.one_of(HOSTILE_TEXT, st.just("n" * 3_000)), max_size=3),
       score=st.sampled_from([0.0, 2.5, 1, True, float("nan"), float("inf")]))
def test_an_exercise_within_its_bounds_is_kept_and_any_other_is_bounded_as_a_copy(text: str, notes: list[str],
                                                                                   score: object) -> None:
    """Bounding a result keeps each exercise already within the bounds (its cases bounded as judged, plain
    finite scores, short notes) rather than copying it; any other is the copy it always was."""
    from grader.store.results import CASE_BOUNDS, _bound_texts, _bounded_exercise, _finite
    exercise = replace(_result(text).exercises[0], notes=tuple(notes), score=score)
    made = _bounded_exercise(exercise, CASE_BOUNDS)
    want = replace(exercise, cases=tuple(bound_case(c) for c in exercise.cases),
                   notes=_bound_texts(exercise.notes, CASE_BOUNDS), score=_finite(score),
                   max_score=_finite(exercise.max_score))
    assert made == want and type(made.score) is float
    assert _bounded_exercise(made, CASE_BOUNDS) is made


def test_values_known_to_fit_are_forgotten_with_the_plan_they_belong_to() -> None:
    """results.fitting remembers a plan's expected values (held, so their ids name nothing else) while that
    plan's memo lives, not for the process's life: a process grading batch after batch kept every earlier
    plan's answers, and a batch that grew the table showed as memory kept in test_memory."""
    import gc
    from grader.store.results import _fitting_size, fitting
    memo, other, value, shared = Memo(), Memo(), ["x" * 100], [1, 2]
    assert fitting(value, memo) is value and _fitting_size(value) == len('["' + "x" * 100 + '"]')
    assert fitting(shared, memo) is shared and fitting(shared, other) is shared
    del memo
    gc.collect()
    assert _fitting_size(value) is None      # forgotten with its plan
    assert _fitting_size(shared) == 5        # still the other plan's (a public plan shares the whole plan's)
    del other
    gc.collect()
    assert _fitting_size(shared) is None


@pytest.mark.parametrize("shared", [False, True])
def test_characters_outside_the_bmp_in_an_ascii_written_result_count_twelve_each(tmp_path: Path, shared: bool) -> None:
    """A lone surrogate anywhere writes the whole result as ASCII JSON, where a character outside the BMP is a
    pair of \\u escapes (12 characters; 1 in UTF-8 JSON). Answers of 99,000 of them in 15 cases were measured
    at their UTF-8 size (1.5 million) and written unmeasured: a 14 MB result file and gradebook row, seven
    times the cap. The estimate must hold for what is written."""
    from grader.store.results import fitting
    answer = ["\U0001F600" * 99_000]
    result = _result("\ud800", wire=fitting(answer, _OWNER) if shared else answer, cases=15)
    text = write_json(bound_result(result), tmp_path, bounded=True).read_text(encoding="utf-8")   # as a batch does
    assert len(text) <= SUBMISSION_CHARS + 1


def test_huge_answers_cost_their_cases_and_the_stored_result_stays_bounded(tmp_path: Path) -> None:
    huge = "x" * 8_000_000
    result = _result("m" * 8_000_000, wire=huge, cases=30)
    stored = bound_result(result)
    text = write_json(result, tmp_path).read_text(encoding="utf-8")
    assert len(text) <= SUBMISSION_CHARS + 1
    assert stored.total == result.total and [e.score for e in stored.exercises] == [0.0]
    case = stored.exercises[0].cases[0]
    assert "characters cut" in case.message and case.message.startswith("mmm") and case.message.endswith("mmm")
    assert case.got["opaque"] == "grader.cut" and "8,000,002 characters cut" in case.got["repr"]
    with Gradebook(tmp_path / "book.sqlite") as book:        # the row holds the same bounded text
        book.record("student", "source", result)
        assert book.current("mini")[0] == stored
    forged = CaseResult(id="c", status="fail", visibility="public", message="", output="o" * 60_000_000)
    assert len(bound_case(forged).output) <= 16_000 and bound_case(bound_case(forged)) == bound_case(forged)


# ------------------------------------------------------------------------------------------------ extraction


@pytest.mark.parametrize("cell", ["Total = " + "+".join(["1"] * 3000), "x = " + "-" * 100_000 + "1",
                                  "y = [" * 1000 + "]" * 1000, "z = 1\n" * 10 + "# \ud800"])
def test_a_cell_the_parser_cannot_handle_is_left_out_like_a_syntax_error(cell: str) -> None:
    extracted = extract(notebook_from_source("def f():\n    return 1\n# %%\n" + cell))
    assert list(extracted.definitions) == ["f"]
    assert len(extracted.syntax_errors) == 1 and extracted.syntax_errors[0].cell == 1
    assert extracted.warnings and "cell left out" in extracted.warnings[0].text


def _cli(*args: str, cwd: Path = REPO, timeout: float = 900) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=within(timeout))


@pytest.mark.parametrize("name", ["deep_cells", "lone_surrogate", "hostile_markdown"])
def test_extract_prints_any_notebook_without_escapes(name: str) -> None:
    done = _cli("extract", str(WRITERS / f"{name}.ipynb"))
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    out = done.stdout.decode("utf-8")
    assert "\x1b" not in out and "def find_tile" in out
    if name == "deep_cells":
        assert "cannot parse" in out


# ------------------------------------------------------------------------------------------------ grader problems


PROBLEM_REFERENCE = """

def broken_matches(goal, state):
    raise KeyError("a bug in the reference's matches")


def crashing_check(got, expected):
    return {}[got]          # a check that was never tried on a wrong answer
"""

PROBLEM_RUBRIC = """\
assignment: mini-problem
title: A rubric with bugs
reference: mini_reference.py
fixtures: [Start, Goal]
limits: {case_seconds: 5, memory_mb: 512}
exercises:
  - id: solve
    points: 2
    check: {name: path, next_states: next_states, matches: broken_matches, start: "args[0]", goal: "args[1]"}
    cases:
      - call: solve(Start, Goal)
  - id: double
    check: crashing_check
    cases:
      - call: double(3)
      - call: double(4)
"""

PROBLEM_STUDENT = """\
def solve(start, goal):
    return [("*", "1", "2"), ("1", "*", "2"), ("1", "2", "*")]

def double(x):
    return x + x + 1
"""


def test_a_crashing_check_or_reference_helper_is_a_grader_problem_counted_apart(tmp_path: Path,
                                                                                 grader_cache: Path) -> None:
    folder = tmp_path / "course"
    folder.mkdir()
    reference = (REPO / "tests" / "fixtures" / "rubrics" / "mini_reference.py").read_text(encoding="utf-8")
    (folder / "mini_reference.py").write_text(reference + PROBLEM_REFERENCE, encoding="utf-8")
    (folder / "mini-problem.yaml").write_text(PROBLEM_RUBRIC, encoding="utf-8")
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "ann.py").write_text(PROBLEM_STUDENT, encoding="utf-8")
    out = tmp_path / "out"
    done = _cli("grade", str(submissions), "--rubric", str(folder / "mini-problem.yaml"), "--out", str(out),
                "--cache", str(grader_cache), "--jobs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert "grader problem" in " ".join(done.stdout.decode().split())
    result = read_json(out / "ann.json")
    statuses = [c.status for e in result.exercises for c in e.cases]
    assert statuses == ["problem", "problem", "problem"]
    solve = result.exercise("solve").cases[0]
    assert "broken_matches raised KeyError" in solve.message
    report = build_report([result])
    assert report.summary.grader_problems == 3 and report.summary.problem_submissions == 1
    assert [rate.problems for rate in report.cases] == [1, 1, 1]
    assert [rate.failed for rate in report.cases] == [0, 0, 0]
    assert "grader problem" in student.markdown_report(result)


# ------------------------------------------------------------------------------------------------ the batch


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Path:
    """The writers corpus, the correct notebook and a copy of it under a name that is not UTF-8, graded by
    the command line; returns the results folder."""
    root = tmp_path_factory.mktemp("writers-batch")
    submissions = root / "submissions"
    submissions.mkdir()
    for name in FIXTURES:
        shutil.copy(WRITERS / f"{name}.ipynb", submissions / f"{name}.ipynb")
    shutil.copy(CORRECT, submissions / "correct.ipynb")
    shutil.copy(CORRECT, os.path.join(os.fsencode(submissions), b"bad\xffname.ipynb"))
    out = root / "out"
    done = _cli("grade", str(submissions), "--rubric", str(RUBRIC), "--out", str(out), "--cache",
                str(grader_cache), "--jobs", "2", "--quiet", cwd=root, timeout=800)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return out


@pytest.mark.slow
def test_the_batch_finishes_with_a_bounded_result_and_a_csv_row_for_every_student(batch: Path) -> None:
    files = sorted(p.name for p in batch.glob("*.json"))
    assert len(files) == 6, files
    results = {p.stem: read_json(p) for p in batch.glob("*.json")}
    for path in batch.glob("*.json"):
        assert path.stat().st_size <= SUBMISSION_CHARS * 4        # UTF-8 bytes of at most 2 M characters
    with open(batch / "gradebook.csv", encoding="utf-8", newline="") as stream:
        rows = list(csv.reader(stream))
    assert sorted(row[0] for row in rows[1:]) == sorted(results)
    with sqlite3.connect(batch / "gradebook.sqlite") as db:
        assert db.execute("SELECT count(*) FROM submissions WHERE current_result IS NOT NULL").fetchone()[0] == 6
    correct = results["correct"]
    assert correct.total == correct.max_total
    assert results["deep_cells"].total == correct.total            # the cells Python cannot parse cost nothing
    deep = results["deep_cells"].warnings
    assert sum("cell left out" in w.text and w.kind == Kind.SYNTAX for w in deep) == 2
    renamed = next(r for name, r in results.items() if name.startswith("bad"))
    assert renamed.total == correct.total
    huge = results["huge_strings"].exercise("find_numbers").cases   # 8 MB answers: refused unread, never kept
    assert huge and all(c.status == "fail" and c.cause == TOO_LARGE and c.got is None for c in huge)
    surrogate = results["lone_surrogate"].exercise("find_numbers").cases[0]
    assert surrogate.status == "fail" and surrogate.got == {"list": ["\ud800", "\udfff\x00"]}   # kept as sent


@pytest.mark.slow
def test_reports_and_class_report_finish_on_the_batch_and_keep_student_html_inert(batch: Path,
                                                                                   tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    done = _cli("report", str(batch), "--out", str(reports), "--annotated")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    pages = sorted(p.name for p in reports.glob("*.notebook.html"))
    assert len(pages) == 6, pages
    page = (reports / "hostile_markdown.notebook.html").read_text(encoding="utf-8")
    tags = _tags(page)
    assert not [t for t, _ in tags if t in ("form", "input", "iframe", "script", "base")]
    assert not [t for t, _ in _tags(page.split("</head>", 1)[1]) if t in ("style", "link", "meta")]  # head's only
    boxes = [a for _, a in tags if "grader-box" in str(a.get("class"))]
    assert boxes and all("data-exercises" in a or "grader-summary" in str(a["class"]) for a in boxes)  # none forged
    assert not [a for _, a in tags if "style" in a or "celltag_grader-box" in str(a.get("class"))]
    assert "form-action 'none'" in page and "eve: 30 / 30" in page                # shown, but as plain content
    assert not [a for _, a in tags if str(a.get("href") or "").startswith(("http", "javascript"))]
    assert not [a for _, a in tags if "src" in a and not str(a["src"]).startswith("data:")]
    markdown = (reports / "hostile_markdown.md").read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").parse(markdown)
    inline = [child for t in tokens if t.children for child in t.children]
    headings = [tokens[n + 1].content for n, t in enumerate(tokens) if t.type == "heading_open"]
    assert "Injected heading" in markdown and not [h for h in headings if "Injected" in h]   # shown, inert
    assert not [t for t in [*tokens, *inline] if t.type in ("html_block", "html_inline")]
    for name in ("lone_surrogate.md", "lone_surrogate.html", "huge_strings.html"):
        (reports / name).read_text(encoding="utf-8")
    for report in reports.iterdir():   # the fixtures print escapes, BEL, a lone CR and a bidi override
        assert not TERMINAL_CONTROLS.search(report.read_text(encoding="utf-8")), report.name
    done = _cli("class-report", str(batch), "-o", str(tmp_path / "class.html"))
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    from grader.report.class_report import sort_script
    page = (tmp_path / "class.html").read_text(encoding="utf-8")
    scripts = [attributes for tag, attributes in _tags(page) if tag == "script"]
    assert scripts == [{}] and page.count("<script>" + sort_script() + "</script>") == 1   # the table sort only


def test_check_prints_no_terminal_escapes(grader_cache: Path) -> None:
    done = _cli("check", str(WRITERS / "lone_surrogate.ipynb"), "--rubric", str(RUBRIC), "--cache",
                str(grader_cache))
    assert done.returncode == 1, done.stderr.decode("utf-8", "replace")   # move_dir and find_numbers fail
    out = done.stdout.decode("utf-8")
    assert "\x1b" not in out and "\x00" not in out and "\ufffd" in out


def test_a_huge_notebook_is_annotated_up_to_a_bound_and_the_rest_summarized(tmp_path: Path) -> None:
    import nbformat
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(f"cell {n}") for n in range(annotated.MAX_CELLS + 500)]
    path = tmp_path / "big.ipynb"
    nbformat.write(notebook, path)
    result = _result("x", name="big")
    page = annotated.annotated_notebook(path, result)
    assert page.count("jp-MarkdownCell jp-Notebook-cell") == annotated.MAX_CELLS
    assert f"500 more cells of this notebook (of {annotated.MAX_CELLS + 500})" in page
    assert len(read_notebook(path).cells) == annotated.MAX_CELLS + 500   # the grader itself reads every cell


@pytest.mark.parametrize("name", ["lone_surrogate", "huge_strings"])
def test_the_gradescope_runner_always_writes_a_valid_results_json(name: str, tmp_path: Path) -> None:
    from grader.run.autograder import run
    (tmp_path / "submission").mkdir()
    shutil.copy(WRITERS / f"{name}.ipynb", tmp_path / "submission" / f"{name}.ipynb")
    run(tmp_path, RUBRIC)
    raw = (tmp_path / "results" / "results.json").read_bytes()
    data = json.loads(raw.decode("utf-8"))
    assert data["score"] > 0 and data["tests"]
    assert len(raw) < 4 * SUBMISSION_CHARS
    failed = {t["extra_data"]["exercise"] for t in data["tests"] if t["status"] == "failed"}
    assert {"find_numbers", "move_dir"} <= failed     # the exercises the attack is in, shown to the student


def test_a_workers_stored_form_changed_after_reading_stores_as_the_changed_result_would():
    """The batch writes a worker's stored form as it came (results.stored_form_of), its plain fields set from the
    result it changed since (lateness, the notebook's copy); a changed exercise, warning or `extra` must not be
    lost: then the form is made again from the result."""
    import copy
    from grader.store.results import from_dict, stored_form, stored_form_of
    sent = stored_form(bound_result(_result("x\ud800y")))
    read = from_dict(copy.deepcopy(sent))
    plain = replace(read, late=True, notebook="notebooks/ab.ipynb", penalty=1.5)
    assert stored_form_of(copy.deepcopy(sent), read, plain) == stored_form(plain)
    for nested in (replace(plain, extra={"budget": {"busy_cases": 1}}), replace(plain, warnings=()),
                   replace(plain, exercises=(replace(read.exercises[0], score=1.0),)), replace(plain, environment=())):
        assert stored_form_of(copy.deepcopy(sent), read, nested) == stored_form(nested)


def test_the_class_report_tells_cases_a_busy_machine_kept_from_being_judged_apart_from_a_rubrics_crash() -> None:
    """Both are `problem` cases scored 0, but only a crash is the rubric's to fix (--force); a busy machine's are
    graded again by the next run: the dashboard must not send the instructor to fix a rubric that is fine."""
    from grader.report.class_report import build_report, class_report_html
    from grader.store import status
    result = _result("x", cases=6)   # cases c2 and c5 are problems
    cases = tuple(replace(c, reason=status.BUSY) if c.id == "c2" else c for c in result.exercises[0].cases)
    busy = replace(result, exercises=(replace(result.exercises[0], cases=cases),))
    summary = build_report([busy, replace(busy, submission="other")]).summary
    assert (summary.grader_problems, summary.problem_submissions) == (2, 2)
    assert (summary.busy_cases, summary.busy_submissions) == (2, 2)
    page = " ".join(class_report_html([busy]).split())
    assert "1 case of 1 submission could not be judged because the grading machine was too busy" in page
    assert "1 case could not be judged because a check or reference helper of the rubric crashed" in page
