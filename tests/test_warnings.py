"""Warnings as facts: their stored form round-trips, any stored form reads, and what students read keeps the place."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from grader.intake.warning import GraderWarning, Kind, from_json, to_json
from grader.store.results import SubmissionResult, bound_result, from_dict, to_dict

warnings = st.builds(GraderWarning, st.sampled_from(list(Kind)), st.text(max_size=50), st.text(max_size=20),
                     st.none() | st.integers(0, 10_000), st.text(max_size=20), st.integers(0, 10_000))
stored = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                          st.sampled_from(["kind", "text", "subject", "cell", "label", "line"]) | st.text(max_size=4),
                          inner, max_size=6), max_leaves=12)


def result(*items: GraderWarning, environment: tuple[GraderWarning, ...] = ()) -> SubmissionResult:
    return SubmissionResult(submission="eve", path="eve.ipynb", sha256="0" * 64, rubric="r", rubric_sha256="1" * 64,
                            grader_version="0", isolation="none", total=0.0, max_total=0.0, exercises=(),
                            warnings=items, environment=environment)


@settings(max_examples=200, deadline=None)
@given(warnings)
def test_a_warning_round_trips_through_its_json_form(warning):
    assert from_json(json.loads(json.dumps(to_json(warning)))) == warning


@settings(max_examples=300, deadline=None)
@given(stored)
def test_any_stored_warning_reads_as_a_warning_of_plain_fields(data):
    """A results file may be old (strings) or edited by hand: every entry reads, none fails the report."""
    warning = from_json(data)
    assert isinstance(warning.kind, Kind) and type(warning.text) is str and type(warning.subject) is str
    assert warning.cell is None or type(warning.cell) is int
    assert type(warning.line) is int and type(warning.shown) is str


def test_the_sentence_a_student_reads_keeps_its_place():
    placed = GraderWarning(Kind.LOAD_ERROR, "KeyError: 5 (statement skipped)", "KeyError", 6, "In [5] (cell 7)", 2)
    assert placed.shown == str(placed) == "In [5] (cell 7), line 2: KeyError: 5 (statement skipped)"
    whole_cell = GraderWarning(Kind.NOTEBOOK, "unknown cell type 'x'; ignored", "unknown cell type", 2, "cell 3")
    assert whole_cell.shown == "cell 3: unknown cell type 'x'; ignored"
    assert GraderWarning(Kind.MISMATCH, "this notebook does not look like lab").shown == \
        "this notebook does not look like lab"


def test_old_results_with_string_warnings_read_and_are_written_back_with_fields():
    old = to_dict(result())
    old.update(warnings=["In [5] (cell 7), line 1: NameError: x"], environment=["cell 1, line 1: no module"])
    read = from_dict(old)
    assert read.warnings == (GraderWarning(Kind.TEXT, "In [5] (cell 7), line 1: NameError: x"),)
    assert read.warnings[0].shown == "In [5] (cell 7), line 1: NameError: x"     # shown as it was
    assert to_dict(read)["warnings"] == [{"kind": "", "text": "In [5] (cell 7), line 1: NameError: x",
                                          "subject": "", "cell": None, "label": "", "line": 0}]
    assert from_dict(to_dict(read)) == read


def test_warnings_are_bounded_like_everything_the_student_controls():
    long = GraderWarning(Kind.LOAD_ERROR, "x" * 10_000, "E" * 1_000, 3, "cell 4", 1)
    bounded = bound_result(result(*[long] * 250, environment=(long,)))
    assert len(bounded.warnings) == 200 and bounded.warnings[-1] == GraderWarning(Kind.GRADER, "... and 51 more")
    for warning in (*bounded.warnings, *bounded.environment):
        assert len(warning.text) <= 2_000 and len(warning.subject) <= 200
    assert bounded.warnings[0].kind == Kind.LOAD_ERROR and bounded.warnings[0].cell == 3     # facts kept whole
    assert bound_result(bounded) == bounded
