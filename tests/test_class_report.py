"""The class report: its numbers from real graded submissions and from made-up classes, and the page it renders.

The real results come from grading the bundled taoistic-search submissions (and a file that is not a
notebook) once for this module; the edge cases (no submission, all zero, one exercise, hostile names) are
built from the result model directly.
"""

from __future__ import annotations

import base64
import csv
import json
import re
import shutil
import statistics
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from testclock import within
from grader import codec
from grader.run.batch import grade_batch
from grader.judge.grading import error_cause
from grader.report import plots
from grader.report.class_report import (
    build_report, case_rates, class_report_html, common_mistakes, exercise_summaries, failure_key, script_hash,
    slowest, sort_script, summarize, troubles, ungraded, warning_groups, write_class_report)
from grader.report.class_outputs import read_results
from grader.store.results import (CaseResult, ExerciseResult, SubmissionResult, from_dict, read_json, to_dict,
                                  write_json)
from grader.intake.warning import GraderWarning, Kind
from grader.store.status import REASONS
from grader.rubric.schema import load_rubric

from conftest import NOTEBOOKS, RUBRIC, SUBMISSIONS

HEADINGS = ("Summary", "Score distribution", "Pass rate per case", "Common mistakes and errors",
            "Errors and timeouts", "Warnings", "Slowest submissions")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------------------ made-up classes


def case(case_id: str, status: str = "pass", message: str = "", *, visibility: str = "public",
         seconds: float = 0.01, call: str = "", **facts) -> CaseResult:
    """A case as the grader writes it: `facts` are the fields it sets beside the message (reason, cause ...)."""
    return CaseResult(case_id, status, visibility, message, call=call or f"{case_id.split('#')[0]}(S)",
                      fraction=1.0 if status == "pass" else 0.0, seconds=seconds, **facts)


BLANK = "You also count the blank '0'. Leave it out."
TILES = "TypeError: '<' not supported between instances of 'str' and 'int'"


def counts_blank(case_id: str, expected: int, got: int) -> CaseResult:
    return case(case_id, "fail", f"expected {expected}, got {got}. {BLANK}", reason="wrong answer",
                cause="wrong value", mistake="manhattan_blank", advice=BLANK)


def compares_tiles(case_id: str, where: str) -> CaseResult:
    return case(case_id, "error", f"{TILES} (at {where}). Tiles are strings.", reason="error",
                cause=error_cause("TypeError", TILES.split(": ", 1)[1]), error=TILES, where=where,
                advice="Tiles are strings.")


def exercise(exercise_id: str, cases: list[CaseResult], max_score: float = 2.0) -> ExerciseResult:
    passed = sum(c.status == "pass" for c in cases)
    return ExerciseResult(exercise_id, exercise_id.replace("_", " ").title(),
                          max_score * passed / len(cases) if cases else 0.0, max_score, tuple(cases))


def missing_module(module: str, cell: int, line: int = 1, count: int | None = None) -> GraderWarning:
    """The warning the sandbox's load gives an import of a module the grading machine lacks."""
    label = f"In [{count}] (cell {cell + 1})" if count is not None else f"cell {cell + 1}"
    return GraderWarning(Kind.MISSING_MODULE, f"ModuleNotFoundError: No module named '{module}'; the imported "
                                              f"names are inert stand-ins", module, cell, label, line)


def submission(name: str, exercises: list[ExerciseResult], *, warnings: tuple[GraderWarning, ...] = (),
               seconds: float = 0.5, isolation: str = "namespaces", rubric: str = "demo",
               state: str = "graded") -> SubmissionResult:
    return SubmissionResult(
        submission=name, path=f"/class/{name}.ipynb", sha256="0" * 64, rubric=rubric, rubric_sha256="1" * 64,
        grader_version="0.1.0", isolation=isolation, total=sum(e.score for e in exercises),
        max_total=sum(e.max_score for e in exercises), exercises=tuple(exercises), warnings=warnings,
        seconds=seconds, state=state)


def small_class() -> list[SubmissionResult]:
    """Three students, two exercises: one right, one counting the blank, one crashing on ints."""
    return [
        submission("ada", [exercise("manhattan", [case("manhattan#1"), case("manhattan#2")]),
                           exercise("search", [case("search#1")], 4.0)], seconds=0.4),
        submission("bob", [exercise("manhattan", [counts_blank("manhattan#1", 44, 48),
                                                  counts_blank("manhattan#2", 32, 36)]),
                           exercise("search", [case("search#1")], 4.0)], seconds=1.5),
        submission("cy", [exercise("manhattan", [case("manhattan#1"), counts_blank("manhattan#2", 7, 11)]),
                          exercise("search", [compares_tiles("search#1", "In [41] (cell 71), line 15")], 4.0)],
                  warnings=(missing_module("ipycanvas", 6, 1, count=5),),
                  seconds=0.9),
    ]


# ------------------------------------------------------------------------------------------ grouping causes


def test_known_mistake_groups_cases_by_which_mistake_whatever_their_numbers():
    first, second = failure_key(counts_blank("m#1", 44, 48)), failure_key(counts_blank("m#5", 32, 36))
    assert first[1] == second[1]
    assert first[0] == "mistake"
    assert first[2] == BLANK
    assert first[3] == f"expected 44, got 48. {BLANK}"


def test_wrong_answers_group_by_the_cause_the_check_gives_without_values():
    one = codec.difference(codec.encode([["0", "1"]]), codec.encode([[0, "1"]]))
    two = codec.difference(codec.encode([["2", "12"]]), codec.encode([["2", 12]]))
    assert one is not None and two is not None
    assert one.cause == two.cause == "expected str, got int"
    assert one.message != two.message
    moved = codec.difference(codec.encode(44), codec.encode(48))
    assert moved is not None and moved.cause == "wrong value"


def test_sets_that_differ_differently_still_group_together():
    one = codec.difference(codec.encode({(1, 2), (3, 4)}), codec.encode({(1, 2), (4, 3)}))
    two = codec.difference(codec.encode({(5, 6)}), codec.encode({(6, 5), (7, 7)}))
    assert one is not None and two is not None and one.cause == two.cause == "wrong set elements"


def test_error_key_is_type_and_text_without_numbers_cell_or_line():
    kind, key, summary, detail = failure_key(compares_tiles("s#1", "In [41] (cell 71), line 15"))
    other = failure_key(compares_tiles("s#2", "cell 3, line 2"))
    assert (kind, summary, detail) == ("error", TILES, "Tiles are strings.")
    assert other[1] == key
    assert error_cause("KeyError", "5") == error_cause("KeyError", "17") == "KeyError: #"
    assert error_cause("TypeError", "'str'") != error_cause("TypeError", "'int'")


def test_timeouts_group_without_where_they_were_still_running():
    def stopped(case_id: str, where: str) -> CaseResult:
        return case(case_id, "timeout", f"did not finish in time; it was still running at {where}",
                    reason="timeout", cause="did not finish in time", where=where, limit=2.0)
    one, two = failure_key(stopped("s#1", "In [28] (cell 48), line 1")), failure_key(stopped("s#2", "In [9], line 7"))
    assert one[1] == two[1] and one[2] == "did not finish in time"
    assert one[3] == "still running at In [28] (cell 48), line 1; limit 2 s"


def test_grouping_reads_fields_never_the_message():
    """Messages written to mislead (student code controls an exception's text, and a check's message quotes
    the student's values) change no group: what a case is grouped by is what the grader recorded."""
    forged = [
        # an exception whose text pretends to be the known mistake's feedback and a timeout
        case("m#1", "error", f"ValueError: expected 1, got 2. {BLANK}; it was still running at In [1], line 1",
             reason="error", cause="ValueError: expected #, got #. x", error="ValueError: ..."),
        # a wrong answer whose message looks like an error with a location and hint
        case("m#2", "fail", f"{TILES} (at cell 3, line 2). Tiles are strings.", reason="wrong answer",
             cause="wrong value"),
        # the real known mistake, with a message that says nothing of it
        case("m#3", "fail", "(no text)", reason="wrong answer", cause="wrong value", mistake="manhattan_blank",
             advice=BLANK),
        # a time budget that ran out shows as an error, yet it is no exception of the student's
        case("m#4", "error", "TypeError: not run", reason="budget", cause="not run: the time budget was spent"),
    ]
    keys = [failure_key(c) for c in forged]
    assert [k[0] for k in keys] == ["error", "fail", "mistake", "error"]
    assert keys[1][1] == "fail:wrong value" and keys[2][1] == "mistake:manhattan_blank"
    assert keys[2][2] == BLANK
    assert len({k[1] for k in keys}) == 4
    assert keys[3][1].startswith("budget:")
    results = [submission(f"s{n}", [exercise("manhattan", [c])]) for n, c in enumerate(forged)]
    groups = common_mistakes(results)
    assert sorted(g.kind for g in groups) == ["error", "error", "fail", "mistake"]
    assert all(g.submissions == 1 for g in groups)


def test_old_results_without_causes_group_by_their_whole_message():
    a, b = case("x#1", "fail", "expected 1, got 2"), case("x#2", "fail", "expected 1, got 2")
    assert failure_key(a)[1] == failure_key(b)[1] != failure_key(case("x#3", "fail", "expected 1, got 3"))[1]


MESSAGES = ("message",)                     # a case's sentence (CaseResult.message)
WARNING_TEXTS = ("text", "shown", "place")  # a warning's sentence, with or without its place


def message_readings(source: str, fields: tuple[str, ...] = MESSAGES + WARNING_TEXTS) -> list[int]:
    """Lines where a message or a warning's text is parsed: a method called on it, or it given to a function
    (re.sub, split ...). Passing it on by keyword (building a row that shows it) and reading it bare are not
    parsing."""
    import ast
    tree = ast.parse(source)
    lines = []

    def is_message(node: ast.AST) -> bool:
        while isinstance(node, ast.Subscript):
            node = node.value
        return isinstance(node, ast.Attribute) and node.attr in fields

    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if any(is_message(part) for part in ([receiver] if receiver is not None else []) + list(call.args)):
            lines.append(call.lineno)
    return lines


def regular_expressions(source: str) -> list[int]:
    """Lines that import or use the `re` module."""
    import ast
    return [node.lineno for node in ast.walk(ast.parse(source))
            if (isinstance(node, ast.Import) and any(a.name == "re" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.module == "re")
            or (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re")]


def test_the_class_report_parses_no_message():
    """No regular expression at all, no sentence splitting over a case's message or a warning's text: the
    grouping reads fields (a case's reason, mistake and cause; a warning's kind and subject)."""
    import inspect

    from grader.report import class_report
    source = inspect.getsource(class_report)
    assert message_readings(source) == []
    assert regular_expressions(source) == []
    # the rules catch what the report used to do
    assert message_readings("key = normalize(split_sentence(case.message.strip()))") == [1]
    assert message_readings("_X.sub('', c.message)") == [1]
    assert message_readings("rows.append(Trouble(message=bad[0].message))") == []
    assert message_readings("f(case.message[:10])") == [1]
    assert message_readings("_WARNING_PLACE.sub('', ' '.join(warning.text.split()))") == [1]
    assert message_readings("key = warning_key(result.warnings[0].shown)") == [1]
    assert message_readings("Ungraded(submission=s, reason=result.warnings[0].shown)") == []
    assert regular_expressions("import re\n_NUMBER = re.compile('x')") == [1, 2]


def test_the_judge_reads_no_message_or_warning_back():
    """The judge writes each case's message and each warning's text from fields; it never reads one back
    (its one regular expression, in error_cause, is over the exception's own text as the child sent it)."""
    import inspect

    from grader.judge import grading
    assert message_readings(inspect.getsource(grading)) == []


# ------------------------------------------------------------------------------------------ made-up classes


def test_summary_of_a_small_class():
    summary = summarize(small_class())
    assert summary.submissions == 3
    assert summary.max_total == 6
    assert summary.totals == (6.0, 4.0, 1.0)
    assert summary.mean == pytest.approx(11 / 3)
    assert summary.median == 4
    assert summary.full_marks == 1 and summary.zero == 0 and summary.ungraded == 0
    assert summary.isolation == (("namespaces", 3),)


def test_mistakes_count_submissions_and_cases_commonest_first():
    groups = common_mistakes(small_class())
    manhattan = [g for g in groups if g.exercise == "manhattan"]
    assert len(manhattan) == 1
    assert (manhattan[0].kind, manhattan[0].submissions, manhattan[0].cases) == ("mistake", 2, 3)
    assert manhattan[0].students == ("bob", "cy")
    search = [g for g in groups if g.exercise == "search"]
    assert [(g.kind, g.summary, g.students) for g in search] == [
        ("error", "TypeError: '<' not supported between instances of 'str' and 'int'", ("cy",))]


def test_case_rates_sorted_by_exercise_then_case_with_visibility():
    results = small_class()
    results[0] = replace(results[0], exercises=(
        results[0].exercises[0], exercise("search", [case("search#1", visibility="hidden")], 4.0)))
    rates = case_rates(results)
    assert [(r.exercise, r.case, r.passed, r.submissions) for r in rates] == [
        ("manhattan", "manhattan#1", 2, 3), ("manhattan", "manhattan#2", 1, 3), ("search", "search#1", 2, 3)]
    assert rates[2].visibility == "hidden" and rates[2].errors == 1


def test_a_case_a_busy_machine_kept_from_being_judged_is_counted_apart_from_the_rubrics_problems():
    """The TA's fix differs (wait: the next run grades it again; fix the rubric, then --force): the pass-rate table
    and the summary say which is which."""
    results = small_class()
    busy = case("search#1", "problem", "grader problem: not run: the machine was too busy", reason="busy machine",
                cause="the machine was too busy to run it")
    crashed = case("search#1", "problem", "grader problem: the check raised", reason="grader problem")
    results[0] = replace(results[0], exercises=(results[0].exercises[0], exercise("search", [busy], 4.0)))
    results[1] = replace(results[1], exercises=(results[1].exercises[0], exercise("search", [crashed], 4.0)))
    rate = next(r for r in case_rates(results) if r.case == "search#1")
    assert (rate.problems, rate.busy, rate.errors, rate.submissions) == (1, 1, 1, 3)
    page = class_report_html(results)
    assert "1 case could not be judged because a check or reference helper of the rubric crashed" in page
    assert "1 case of 1 submission could not be judged because the grading machine was too busy" in page
    row = page[page.index('href="students/ada.html"'):]      # ada's row in the students' table says it
    assert "busy: 1 not judged</span>" in row[:row.index("</tr>")]
    assert "busy: 1 not judged" not in page[page.index('href="students/bob.html"'):]


def test_slowest_are_sorted_by_seconds_with_their_slowest_exercise():
    rows = slowest(small_class())
    assert [row.submission for row in rows] == ["bob", "cy", "ada"]
    many = [submission(f"s{n:02d}", [exercise("e", [case("e#1", seconds=n / 100)])], seconds=n) for n in range(15)]
    rows = slowest(many)
    assert len(rows) == 10 and rows[0].submission == "s14" and rows[0].slowest_exercise == "e"


def test_warnings_grouped_by_kind_and_subject_without_their_cell():
    results = small_class()
    results[0] = replace(results[0], warnings=(missing_module("ipycanvas", 1, 4, count=3),))
    results[1] = replace(results[1], environment=(missing_module("ipycanvas", 30),))   # where the load puts it
    groups = warning_groups(results)
    assert [(g.kind, g.subject, g.students) for g in groups] == [("missing module", "ipycanvas", ("ada", "bob", "cy"))]
    assert groups[0].message.startswith("ModuleNotFoundError: No module named 'ipycanvas'")   # without its place


def test_warnings_group_by_their_fields_never_their_text():
    """Student code writes the text of an exception at load: a text that imitates another warning, or the same
    exception with other numbers, changes no row; the kind and subject the grader recorded do."""
    forged = GraderWarning(Kind.LOAD_ERROR, "ModuleNotFoundError: No module named 'ipycanvas'", "ValueError",
                           2, "cell 3", 1)
    first = GraderWarning(Kind.LOAD_ERROR, "KeyError: 17 (statement skipped)", "KeyError", 4, "cell 5", 2)
    second = GraderWarning(Kind.LOAD_ERROR, "KeyError: 'x' (statement skipped)", "KeyError", 8, "cell 9", 7)
    results = [submission("a", [], warnings=(missing_module("ipycanvas", 1),)),
               submission("b", [], warnings=(forged, first)), submission("c", [], warnings=(second,))]
    rows = {(g.kind, g.subject): g.students for g in warning_groups(results)}
    assert rows == {("missing module", "ipycanvas"): ("a",), ("error at load", "ValueError"): ("b",),
                    ("error at load", "KeyError"): ("b", "c")}


def test_old_results_with_text_warnings_still_read_and_group_by_their_whole_text(tmp_path: Path):
    """A result written before warnings had fields stores each as a string: it reads (JSON and gradebook
    alike), shows as it was, and groups word for word."""
    import sqlite3

    from grader.store.gradebook import Gradebook
    old = to_dict(submission("old", [exercise("manhattan", [case("manhattan#1")])]))
    text = "In [5] (cell 7), line 1: ModuleNotFoundError: No module named 'ipycanvas'"
    old.update(warnings=[text, text], environment=["cell 2, line 1: ImportError: no"])
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    result = read_json(tmp_path / "old.json")
    assert [(w.kind, w.shown) for w in result.warnings] == [(Kind.TEXT, text)] * 2
    with Gradebook(tmp_path / "gb.sqlite") as book:
        book.record("old", "old.ipynb", result)
    with sqlite3.connect(tmp_path / "gb.sqlite") as db:     # the row as the grader before fields wrote it
        [(row, stored_json)] = db.execute("SELECT id, json FROM results").fetchall()
        data = json.loads(stored_json)
        assert data["warnings"][0]["kind"] == ""
        data.update(warnings=old["warnings"], environment=old["environment"])
        db.execute("UPDATE results SET json = ? WHERE id = ?", (json.dumps(data), row))
    with Gradebook(tmp_path / "gb.sqlite") as book:
        [stored] = book.iter_current("demo", ["old"])
    assert stored.warnings == result.warnings and stored.environment == result.environment
    groups = warning_groups([stored, replace(stored, submission="new")])
    assert [(g.kind, g.message, g.students) for g in groups] == [
        ("", text, ("new", "old")), ("", "cell 2, line 1: ImportError: no", ("new", "old"))]
    assert "No module named" in class_report_html([stored])


def test_no_submissions_gives_a_clear_page():
    summary = summarize([])
    assert summary.submissions == 0 and summary.mean is None and summary.median is None
    page = class_report_html([])
    assert "<h2>No submissions</h2>" in page
    assert "grader grade" in page
    assert "<img" not in page
    assert "Pass rate per case" not in page


def test_all_zero_class_renders_with_zero_counts():
    results = [submission(name, [exercise("move_dir", [case("move_dir#1", "fail", "expected 1, got 2")]),
                                 exercise("search", [case("search#1", "missing", "no function named search")])])
               for name in ("ann", "ben", "col")]
    summary = summarize(results)
    assert (summary.mean, summary.median, summary.zero, summary.full_marks) == (0, 0, 3, 0)
    assert [(e.id, e.zero, e.partial, e.full) for e in exercise_summaries(results)] == [
        ("move_dir", 3, 0, 0), ("search", 3, 0, 0)]
    page = class_report_html(results)
    assert page.count('src="data:image/png;base64,') == 2
    assert "0%" in page
    for heading in HEADINGS:
        assert f"<h2>{heading}</h2>" in page


def test_one_exercise_class_renders():
    swapped = case("find_tile#2", "fail", "expected (0, 1), got (1, 0)", reason="wrong answer", cause="wrong value")
    results = [submission("solo", [exercise("find_tile", [case("find_tile#1"), swapped])])]
    assert [e.id for e in exercise_summaries(results)] == ["find_tile"]
    page = class_report_html(results, title="Week 1")
    assert "<title>Week 1</title>" in page
    assert "wrong value" in page and "e.g. expected (0, 1), got (1, 0)" in page
    assert page.count('src="data:image/png;base64,') == 2


def test_student_text_is_escaped_everywhere():
    evil = "<script>alert(1)</script>"
    results = [submission(evil, [exercise("f", [case("f#1", "fail", f"expected 1, got 2. {evil} & \"q\"",
                                                     call=f"f('{evil}')"),
                                                case("f#2", "error", f"ValueError: {evil} (at cell 1, line 1)")])],
                          warnings=(GraderWarning(Kind.LOAD_ERROR, evil, evil, 0, "cell 1", 1),))]
    page = class_report_html(results, title=evil, problems=[f"{evil}.json: not a readable result"])
    assert page.lower().count("<script") == 1 == page.count("<script>" + sort_script() + "</script>")  # ours only
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'title="f(&#39;&lt;script&gt;' in page        # inside an attribute too


def test_page_is_the_same_for_results_in_any_order():
    results = small_class()
    assert class_report_html(results) == class_report_html(list(reversed(results)))


def test_several_rubrics_are_flagged():
    results = small_class()
    results[0] = replace(results[0], rubric="other")
    page = class_report_html(results)
    assert "from 2 rubrics (demo, other)" in page
    assert "<title>Class report</title>" in page


def test_ungraded_file_is_listed_and_left_out_of_pass_rates():
    results = small_class() + [submission("broken", [exercise("manhattan", [
        case("manhattan#1", "missing", "not graded: not a notebook"),
        case("manhattan#2", "missing", "not graded: not a notebook")])],
        warnings=(GraderWarning(Kind.UNREADABLE, "not a notebook"),),
        state="unreadable")]
    assert [(u.submission, u.reason) for u in ungraded(results)] == [("broken", "not a notebook")]
    assert summarize(results).ungraded == 1
    assert {r.submissions for r in case_rates(results) if r.exercise == "manhattan"} == {3}
    assert all("broken" not in g.students for g in common_mistakes(results))


def test_the_zero_card_says_how_many_of_its_zeros_could_not_be_graded():
    """The summary read '2 scored zero' beside '2 could not be graded' for a class whose only zeros were the two
    unreadable files: a TA counted four students in trouble."""
    results = small_class() + [submission(name, [exercise("manhattan", [
        case("manhattan#1", "missing", "not graded: not a notebook")])],
        warnings=(GraderWarning(Kind.UNREADABLE, "not a notebook"),), state="unreadable")
        for name in ("broken", "empty")]
    summary = summarize(results)
    assert (summary.zero_ungraded, summary.ungraded) == (2, 2) and summary.zero >= 2
    page = class_report_html(results)
    assert f'<div class="value">{summary.zero}</div><div class="label">scored zero (2 of them not graded)</div>' \
        in page
    assert '<div class="label">scored zero</div>' in class_report_html(small_class())


def test_the_could_not_be_graded_card_counts_each_state_apart():
    """'3 could not be graded' lumped a notebook that did not open, one the grader could not finish and a student
    the LMS lists with no file: a TA uploading grades must know which zeros are the student's and which are not
    a hand-in at all. The card names each count (results.STATES)."""
    def ungraded_one(name: str, state: str):
        return submission(name, [exercise("manhattan", [case("manhattan#1", "missing", "not graded: " + state)])],
                          warnings=(GraderWarning(Kind.UNREADABLE, state),), state=state)
    results = small_class() + [ungraded_one("broken", "unreadable"), ungraded_one("stopped", "failed"),
                               ungraded_one("away", "no submission"), ungraded_one("gone", "no submission")]
    summary = summarize(results)
    assert (summary.ungraded, summary.unreadable, summary.failed, summary.absent) == (4, 1, 1, 2)
    assert ('<div class="label">could not be graded (1 unreadable, 1 failed, 2 with no submission)</div>'
            in class_report_html(results))
    assert '<div class="label">could not be graded</div>' in class_report_html(small_class())


# ------------------------------------------------------------------------------------------------ figures


def _chunks(png: bytes) -> list[bytes]:
    names, index = [], len(PNG_SIGNATURE)
    while index < len(png):
        length = int.from_bytes(png[index:index + 4], "big")
        names.append(png[index + 4:index + 8])
        index += 12 + length
    return names


def test_figures_are_reproducible_pngs_without_software_or_date():
    rows = [plots.ExerciseShares("move_dir", 3, 1, 7, 0.7), plots.ExerciseShares("search", 0, 0, 11, 1.0)]
    first, second = plots.exercise_shares(rows), plots.exercise_shares(rows)
    assert first == second
    histogram = plots.total_histogram([30, 22.2, 25.5, 0], 30)
    assert histogram == plots.total_histogram([30, 22.2, 25.5, 0], 30)
    for uri in (first, histogram):
        assert uri.startswith("data:image/png;base64,")
        png = base64.b64decode(uri.split(",", 1)[1])
        assert png.startswith(PNG_SIGNATURE)
        assert not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(_chunks(png))
        assert int.from_bytes(png[16:20], "big") == plots.WIDTH * plots.DPI   # IHDR width: a fixed size


# ------------------------------------------------------------------------------------ the bundled examples


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Path:
    """The bundled taoistic-search submissions and one file that is not a notebook, graded into a folder."""
    out = tmp_path_factory.mktemp("class-report-results")
    batch = grade_batch([SUBMISSIONS, NOTEBOOKS / "invalid_json.ipynb"], RUBRIC, out, jobs=2, cache=grader_cache)
    assert len(batch.results) == 12
    return out


@pytest.fixture(scope="module")
def results(graded: Path) -> list[SubmissionResult]:
    loaded = read_results(graded)
    assert loaded.problems == ()
    return list(loaded.results)


@pytest.mark.slow
def test_bundled_summary_counts_every_submission(results):
    summary = summarize(results)
    assert summary.submissions == 12
    assert summary.ungraded == 1
    assert summary.full_marks == 4      # correct, main-animation, and seed-000 and manhattan-counts-blank (a variant)
    assert summary.max_total == 30
    assert summary.mean == pytest.approx(statistics.fmean(r.total for r in results))
    assert summary.rubrics == ("taoistic-search",)
    assert sum(count for _, count in summary.isolation) == 12


@pytest.mark.slow
def test_bundled_known_mistakes_are_grouped_with_their_students(results):
    groups = {(g.exercise, g.summary.split(".")[0]): g for g in common_mistakes(results)}
    # Counting the blank in manhattan is an accepted variant: no longer a mistake of anyone's.
    assert not any(exercise == "manhattan" for exercise, _ in groups)
    tile = groups[("extract_move", "You return the direction in which the TILE moved; extract_move returns the "
                                   "direction of the blank, which is the opposite")]
    assert tile.kind == "mistake" and tile.students == ("extract-move-of-tile",)
    assert tile.cases > tile.submissions                       # several cases, one group
    swapped = groups[("move_dir", "Rows and columns look swapped: you move the blank to S[row + dx][col + dy], "
                                  "the convention of the 2020/21 notebook")]
    assert swapped.students == ("move-dir-transposed", "old-era")
    ints = groups[("main", "TypeError: '<' not supported between instances of 'str' and 'int'")]
    assert ints.kind == "error" and ints.students == ("int-tiles",)
    assert next(g for g in common_mistakes(results) if g.exercise == "move_dir") == swapped   # commonest first


@pytest.mark.slow
def test_bundled_cases_that_did_not_pass_carry_their_facts(results):
    """Where a verdict is born the grader records why: every case that did not pass has a reason and a cause,
    an error its exception, a timeout its limit; what the report groups by never needs the message."""
    cases = [c for r in results for e in r.exercises for c in e.cases if c.status != "pass"]
    assert cases and all(c.reason in REASONS and c.cause for c in cases)
    errors = [c for c in cases if c.reason == "error" and c.error]
    assert errors and all(c.cause.startswith(c.error.split(":")[0]) for c in errors)
    stopped = [c for c in cases if c.status == "timeout" and c.cause == "did not finish in time"]
    assert stopped and all(c.limit > 0 for c in stopped)
    known = [c for c in cases if c.mistake]
    assert known and all(c.advice and c.reason == "wrong answer" for c in known)


def test_results_stored_before_the_facts_existed_still_read_and_group():
    data = to_dict(small_class()[1])
    for exercise_data in data["exercises"]:
        exercise_data.pop("cell"), exercise_data.pop("line")
        for case_data in exercise_data["cases"]:
            for name in ("reason", "cause", "advice", "error", "where", "limit"):
                case_data.pop(name)
    old = from_dict(data)
    assert old.exercises[0].cases[0].reason == "" and old.exercises[0].cell is None
    groups = common_mistakes([old])
    assert [(g.kind, g.cases, g.summary) for g in groups] == [("mistake", 2, "the known mistake manhattan_blank")]
    # older still (no known mistake recorded): each wrong answer groups by its message word for word
    older = replace(old, exercises=tuple(replace(e, cases=tuple(replace(c, mistake="") for c in e.cases))
                                         for e in old.exercises))
    assert [(g.kind, g.cases) for g in common_mistakes([older])] == [("fail", 1), ("fail", 1)]


@pytest.mark.slow
def test_bundled_errors_timeouts_and_unreadable_file_are_listed(results):
    found = {(t.submission, t.exercise): t for t in troubles(results)}
    assert found[("infinite-search", "search")].timeouts > 0
    # a case skipped after max_timeouts is counted as not run, never as one more timeout
    infinite = next(r for r in results if r.submission == "infinite-search")
    for exercise in infinite.exercises:
        skipped = sum(c.reason == "after timeouts" for c in exercise.cases)
        ran_out = sum(c.status == "timeout" and c.reason != "after timeouts" for c in exercise.cases)
        if skipped or ran_out:
            assert (found[("infinite-search", exercise.id)].timeouts,
                    found[("infinite-search", exercise.id)].not_run) == (ran_out, skipped)
    assert any(t.not_run for t in found.values())
    assert found[("syntax-error", "main")].message.startswith("NameError: name 'replace_numbers' is not defined")
    assert found[("int-tiles", "replace_numbers")].status == "error"
    assert [u.submission for u in ungraded(results)] == ["invalid_json"]
    ipycanvas = next(g for g in warning_groups(results) if (g.kind, g.subject) == ("missing module", "ipycanvas"))
    assert len(ipycanvas.students) == 11 and not ipycanvas.message.startswith("In [")


@pytest.mark.slow
def test_bundled_pass_rates_follow_the_rubric_order(results):
    rubric = load_rubric(RUBRIC)
    rates = case_rates(results)
    assert list(dict.fromkeys(r.exercise for r in rates)) == [e.id for e in rubric.exercises]
    correct = next(r for r in results if r.submission == "correct")
    assert [(r.exercise, r.case) for r in rates] == [(e.id, c.id) for e in correct.exercises for c in e.cases]
    assert {r.submissions for r in rates} == {11}              # the unreadable file is left out
    move_dir_public = [r for r in rates if r.exercise == "move_dir" and r.visibility == "public"]
    assert move_dir_public and all(r.passed == 8 for r in move_dir_public)   # transposed, old-era, int-tiles fail


@pytest.mark.slow
def test_bundled_slowest_rows_are_ordered_and_name_the_exercise_that_timed_out(results):
    """Which submission is slowest depends on the machine's load; what the timeouts cost does not: the parent
    marks a case timeout only after its limit, so the exercise holding them is its submission's slowest."""
    rows = slowest(results)
    assert len(rows) == 10
    assert [r.seconds for r in rows] == sorted((r.seconds for r in results), reverse=True)[:10]
    every = {r.submission: r for r in slowest(results, count=len(results))}
    infinite = next(r for r in results if r.submission == "infinite-search")
    timed_out = {e.id for e in infinite.exercises if any(c.status == "timeout" for c in e.cases)}
    assert timed_out and every["infinite-search"].slowest_exercise in timed_out


@pytest.mark.slow
def test_bundled_report_is_self_contained_and_deterministic(results, tmp_path):
    page_path = write_class_report(results, tmp_path / "report.html")
    again = write_class_report(list(reversed(results)), tmp_path / "again.html")
    page = page_path.read_text(encoding="utf-8")
    renamed = again.read_text(encoding="utf-8").replace('href="again.csv">again.csv', 'href="report.csv">report.csv')
    assert page == renamed
    for heading in HEADINGS:
        assert f"<h2>{heading}</h2>" in page
    assert page.count('src="data:image/png;base64,') == 2
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)   # nothing from the network
    assert page.count("<script") == 1 and "@import" not in page and "url(" not in page   # the sort script only
    assert f"script-src '{script_hash(sort_script())}'" in page                          # allowed by its hash
    assert "You return the direction in which the TILE moved" in page
    with open(tmp_path / "report.csv", newline="", encoding="utf-8") as stream:
        rows = list(csv.reader(stream))
    assert rows[0][0] == "student"
    assert rows[0][-7:] == ["total", "max_total", "state", "late", "late_penalty", "total_after_penalty",
                            "incidents"]
    assert sorted(row[0] for row in rows[1:]) == sorted(r.submission for r in results)


@pytest.mark.slow
def test_read_results_reports_files_that_are_not_results(graded, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(graded, folder)
    for book in folder.glob("gradebook.sqlite*"):
        book.unlink()                 # a folder of JSON files alone, as copied around without its gradebook
    (folder / "kit.json").write_text('{"cases": []}', encoding="utf-8")
    (folder / "damaged.json").write_text('{"submission": ', encoding="utf-8")
    loaded = read_results(folder)
    assert len(loaded.results) == 12
    assert [p.split(":")[0] for p in loaded.problems] == ["damaged.json", "kit.json"]
    page = class_report_html(loaded.results, problems=loaded.problems)
    assert "kit.json: not a readable result" in page


@pytest.mark.slow
def test_read_results_takes_the_whole_class_from_the_gradebook(graded, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(graded, folder)
    whole = read_results(folder).results
    for result in list(folder.glob("*.json"))[:3]:
        result.unlink()
    assert read_results(folder).results == whole and len(whole) == 12


def test_read_results_round_trips_written_results(tmp_path):
    for result in small_class():
        write_json(result, tmp_path)
    loaded = read_results(tmp_path)
    assert loaded.problems == ()
    assert [r.submission for r in loaded.results] == ["ada", "bob", "cy"]
    assert class_report_html(loaded.results) == class_report_html(small_class())


@pytest.mark.slow
def test_bundled_report_renders_in_chromium(results, tmp_path):
    """Headless Chromium shows a page that is not blank, with every heading, and logs no console message."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    page = write_class_report(results, tmp_path / "report.html")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=within(120))
    for heading in HEADINGS:
        assert f"<h2>{heading}</h2>" in dom.stdout
    assert "CONSOLE" not in dom.stderr
    shot = tmp_path / "shot.png"
    subprocess.run([*common, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=within(120), check=True)
    from PIL import Image
    with Image.open(shot) as image:
        colours = image.convert("L").getextrema()
    assert colours[0] < 100 < colours[1]                       # dark text on a light page: not blank


def test_a_class_reports_incidents_of_one_id_under_two_rubrics_by_student() -> None:
    """The class report lists each student's incidents (grader.incidents) under its problems, by student; one id
    graded under two rubrics with different incidents made the old sort compare the Incident facts themselves
    (TypeError: '<' not supported), and the page was not written."""
    from grader.incidents import FORGED_FRAME, PARENT, PIDS_CGROUP, PROCESS_CAP, Incident

    def graded(rubric: str, seen: Incident) -> SubmissionResult:
        return SubmissionResult("s1", f"/{rubric}.ipynb", rubric * 8, rubric, "", "0.1.0", "namespaces", 0.0, 2.0,
                                (ExerciseResult("a", "A", 0.0, 2.0, ()),), incidents=(seen,))

    report = build_report([graded("r1", Incident(FORGED_FRAME, PARENT, "a", "a#1")),
                           graded("r2", Incident(PROCESS_CAP, PIDS_CGROUP, "a", "", 3))])
    said = [note for note in report.problems if note.startswith("incidents of s1")]
    assert len(said) == 2 and any("forged frame in a (case a#1)" in note for note in said)
    assert any("process cap x3 in a, seen by the pids cgroup" in note for note in said)
