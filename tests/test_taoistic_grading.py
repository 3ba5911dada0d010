"""End to end: the taoistic-search examples graded by the real grader, with real child processes.

The scores are the ones the assignment's README promises for each example; each test names the
behaviour behind its points (a known mistake recognised, an isolated helper, a timeout that costs
only its exercise), so a regression says what broke, not just that a total moved.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import grader
from grader.run.batch import grade
from grader.store.status import STATUSES
from grader.store.results import SubmissionResult, to_dict
from grader.rubric.schema import Rubric, load_rubric

from conftest import NOTEBOOKS, RUBRIC, SUBMISSIONS, Batch

EXERCISE_IDS = ["find_tile", "move_dir", "next_states", "matches", "manhattan", "find_numbers", "replace_numbers",
                "intermediate_goals", "extract_move", "extract_move_list", "apply_move_list", "search", "main"]

# Total of every bundled example (rubric total 30) and the exercises that lose points; all others get full marks.
EXPECTED = {
    "correct": (30, {}),
    "main-animation": (30, {}),
    "seed-000": (30, {}),                  # counts the blank in manhattan: an accepted variant
    "manhattan-counts-blank": (30, {}),
    "move-dir-transposed": (28, {"move_dir": 0}),
    "old-era": (28, {"move_dir": 0}),
    "extract-move-of-tile": (24, {"extract_move": 0, "main": 0}),   # extract_move_list: isolated, so paid once
    # search isolates next_states and manhattan: what a wrong helper costs is paid in its own exercise
    "find-tile-transposed": (25.5, {"find_tile": 0.5, "main": 0}),
    "int-tiles": (23.1667, {"move_dir": 0, "find_numbers": 0, "replace_numbers": 7 / 6, "main": 0}),
    "syntax-error": (25, {"replace_numbers": 0, "main": 0}),
    "infinite-search": (23, {"search": 0, "main": 0}),
    "taoistic_search": (30, {}),   # the reference module graded as a submission
}


def strip_seconds(value: Any) -> Any:
    """The JSON form without its timing fields, which are the only ones allowed to differ between runs."""
    if isinstance(value, dict):
        return {key: strip_seconds(item) for key, item in value.items() if key not in ("seconds", "cpu_seconds")}
    if isinstance(value, (list, tuple)):
        return [strip_seconds(item) for item in value]
    return value


def messages(result: SubmissionResult, exercise: str) -> list[str]:
    return [case.message for case in result.exercise(exercise).cases]


def statuses(result: SubmissionResult, exercise: str) -> set[str]:
    return {case.status for case in result.exercise(exercise).cases}


# ------------------------------------------------------------------------------------- scores of the examples


@pytest.mark.parametrize("submission", sorted(EXPECTED))
def test_example_scores_its_expected_total_losing_only_the_listed_exercises(bundled: Batch, submission: str) -> None:
    total, losses = EXPECTED[submission]
    result = bundled[submission]
    assert result.total == pytest.approx(total, abs=1e-3)
    assert result.max_total == 30
    scores = {e.id: e.score for e in result.exercises}
    full = {e.id: e.max_score for e in result.exercises}
    assert scores == pytest.approx({**full, **losses}, abs=1e-3)


def test_bundled_examples_are_all_graded_in_one_batch(bundled: Batch) -> None:
    stems = {path.stem for path in SUBMISSIONS.glob("*.ipynb")}
    assert stems <= set(bundled.results)
    assert len(list(bundled.out.glob("*.json"))) == len(bundled.results)


def test_correct_keeps_the_real_find_tile_defined_after_an_early_stub(bundled: Batch) -> None:
    find_tile = bundled["correct"].exercise("find_tile")
    assert statuses(bundled["correct"], "find_tile") == {"pass"}
    assert find_tile.location.startswith("In [24] (cell 39)")   # the stub is In [13] (cell 21)


def test_main_animation_drops_the_animation_and_grades_in_full(bundled: Batch) -> None:
    result = bundled["main-animation"]
    assert result.total == 30
    # Not the clock (tests hold on a busy machine): had animation(Path) or time.sleep run while loading, the
    # load would have hit its budget and said so.
    assert not any("did not finish within" in w.shown for w in result.warnings), result.warnings


def test_seed_000_counts_the_blank_as_an_accepted_variant_and_is_told_it_reads_global_s(bundled: Batch) -> None:
    result = bundled["seed-000"]
    manhattan = result.exercise("manhattan")
    assert manhattan.score == 3 and manhattan.variant == "manhattan_with_blank"
    assert any("not admissible" in note for note in manhattan.notes)
    assert any("reads the notebook's global variable S (" in note for note in manhattan.notes)


def test_manhattan_counting_the_blank_earns_full_credit_with_the_variant_recorded(bundled: Batch) -> None:
    result = bundled["manhattan-counts-blank"]
    manhattan = result.exercise("manhattan")
    assert statuses(result, "manhattan") == {"pass"}
    assert manhattan.variant == "manhattan_with_blank"
    assert all(c.variant == "manhattan_with_blank" for c in manhattan.cases)
    # Not charged elsewhere: a right helper is never swapped, and search judges paths.
    assert manhattan.isolated == () and result.exercise("search").isolated == ()


@pytest.mark.parametrize("submission", ["move-dir-transposed", "old-era"])
def test_transposed_move_dir_is_recognised_and_charged_only_once(bundled: Batch, submission: str) -> None:
    result = bundled[submission]
    assert any("Rows and columns look swapped" in m for m in messages(result, "move_dir"))
    # move_dir was judged consistently transposed, so the 2020/21 variant of extract_move is accepted.
    assert statuses(result, "extract_move") == {"pass"}
    assert statuses(result, "extract_move_list") == {"pass"}
    assert result.exercise("extract_move").variant == "extract_move_transposed"


def test_extract_move_of_the_tile_gets_the_tile_move_feedback(bundled: Batch) -> None:
    result = bundled["extract-move-of-tile"]
    failed = [c for c in result.exercise("extract_move").cases if c.status == "fail"]
    assert len(failed) == len(result.exercise("extract_move").cases)
    assert all("direction in which the TILE moved" in c.message for c in failed)


def test_int_tiles_main_error_explains_str_versus_int_tiles(bundled: Batch) -> None:
    main = bundled["int-tiles"].exercise("main")
    assert {c.status for c in main.cases} == {"error"}
    for case in main.cases:
        assert "not supported between instances of" in case.message
        assert "Tiles are strings ('0' to '15', and '*'), never ints" in case.message


def test_int_tiles_move_dir_gets_one_note_for_one_cause(bundled: Batch) -> None:
    """move_dir writes the int 0 for the blank in every case, found at another place in each board: one cause
    (the judge's fact 'expected str, got int'), so one note with a public case's message or two as examples, not
    a note per place that happens to repeat. Each case keeps its own message."""
    move_dir = bundled["int-tiles"].exercise("move_dir")
    assert {c.cause for c in move_dir.cases} == {"expected str, got int"}
    [note] = [n for n in move_dir.notes if "fail the same way" in n]
    public = [c.message for c in move_dir.cases if c.visibility == "public"]
    assert note == (f"{len(move_dir.cases)} cases fail the same way (fail: expected str, got int), "
                    f"e.g. {public[0]}; {public[1]}")
    assert len({c.message for c in move_dir.cases}) > 2       # the detail of every case is still there


def test_a_same_failures_note_quotes_no_hidden_case(bundled: Batch) -> None:
    """A note on failures of one cause quotes public cases' messages only: a hidden case's shows what it was
    compared with ("at [2][1]: expected '0' (str)"), which the student is never told."""
    notes = 0
    for result in bundled.results.values():
        for exercise in result.exercises:
            public = {c.message for c in exercise.cases if c.visibility == "public"}
            hidden = {c.message for c in exercise.cases if c.visibility == "hidden" and c.message} - public
            for note in (n for n in exercise.notes if "fail the same way" in n):
                notes += 1
                rest = note
                for message in sorted(public, key=len, reverse=True):   # a hidden message may be in a public one
                    rest = rest.replace(message, "")
                assert not any(message in rest for message in hidden), note
    assert notes >= 5


def test_syntax_error_cell_makes_replace_numbers_missing_and_names_the_cell(bundled: Batch) -> None:
    result = bundled["syntax-error"]
    assert statuses(result, "replace_numbers") == {"missing"}
    for message in messages(result, "replace_numbers"):
        assert "the cell that defines it, In [17] (cell 54), was left out" in message   # never "its cell cell 54"
        assert "syntax error" in message
    # replace_numbers is isolated in intermediate_goals: the missing function is paid for once.
    assert statuses(result, "intermediate_goals") == {"pass"}
    assert any("cell left out: SyntaxError" in warning.shown for warning in result.warnings)


@pytest.mark.parametrize("submission, swapped", [("find-tile-transposed", ("next_states", "manhattan")),
                                                  ("int-tiles", ("next_states",))])
def test_search_is_judged_again_with_the_reference_for_helpers_already_charged(bundled: Batch, submission: str,
                                                                            swapped: tuple[str, ...]) -> None:
    """Thousands of isolated-helper calls per case, each a round trip through the parent: the case's limit is
    CPU time, so they fit, and the search earns its points whatever the machine's load."""
    search = bundled[submission].exercise("search")
    assert search.score == search.max_score and statuses(bundled[submission], "search") == {"pass"}
    assert search.isolated == swapped
    assert any("judged with the reference's next_states" in note for note in search.notes)


def test_infinite_search_times_out_only_search_and_main_in_bounded_time(bundled: Batch) -> None:
    result = bundled["infinite-search"]
    assert statuses(result, "search") == {"timeout"}
    assert statuses(result, "main") == {"timeout"}
    for exercise in result.exercises:
        if exercise.id not in ("search", "main"):
            assert {c.status for c in exercise.cases} == {"pass"}, exercise.id


def test_reference_module_graded_as_a_submission_passes_every_case(bundled: Batch) -> None:
    result = bundled["taoistic_search"]
    assert {c.status for e in result.exercises for c in e.cases} == {"pass"}


def test_old_name_find_tiles_is_graded_through_the_alias(bundled: Batch) -> None:
    for submission in ("e2e_find_tiles_alias", "old-era"):
        find_numbers = bundled[submission].exercise("find_numbers")
        assert find_numbers.function == "find_tiles"
        assert find_numbers.score == find_numbers.max_score
        assert "graded find_tiles (accepted as another name for find_numbers)" in find_numbers.notes
    assert bundled["e2e_find_tiles_alias"].total == 30


# ------------------------------------------------------------------------------------ the result JSON


def test_result_json_has_every_field_a_ta_needs(bundled: Batch) -> None:
    rubric = load_rubric(RUBRIC)
    path = SUBMISSIONS / "move-dir-transposed.ipynb"
    data = json.loads((bundled.out / "move-dir-transposed.json").read_text(encoding="utf-8"))
    assert data["submission"] == "move-dir-transposed"
    assert data["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert data["rubric"] == "taoistic-search"
    assert data["rubric_sha256"] == rubric.sha256 and len(rubric.sha256) == 64
    assert data["grader_version"] == grader.__version__
    # The containment this machine gave the child (it depends on the machine, so only its presence is pinned).
    assert isinstance(data["isolation"], str) and data["isolation"]
    assert (data["total"], data["max_total"]) == (28, 30)
    assert isinstance(data["warnings"], list)
    assert [e["id"] for e in data["exercises"]] == EXERCISE_IDS
    for exercise in data["exercises"]:
        assert {"id", "title", "score", "max_score", "cases"} <= set(exercise)
        assert exercise["title"] and exercise["cases"]
        for case in exercise["cases"]:
            assert {"id", "status", "visibility", "message"} <= set(case)
            assert case["visibility"] in ("public", "hidden")


def test_exercise_ids_are_the_canonical_names_for_every_submission(bundled: Batch) -> None:
    assert [e.id for e in load_rubric(RUBRIC).exercises] == EXERCISE_IDS
    for result in bundled.results.values():
        assert [e.id for e in result.exercises] == EXERCISE_IDS, result.submission


def test_every_status_occurs_and_no_other(bundled: Batch) -> None:
    seen = {c.status for r in bundled.results.values() for e in r.exercises for c in e.cases}
    # "problem" (a check of the rubric crashed) never happens with a sound rubric: tests/test_writers.py makes it.
    assert seen == set(STATUSES) - {"problem"} == {"pass", "fail", "error", "timeout", "missing"}


def test_a_file_that_is_not_a_notebook_scores_zero_with_the_reason_and_the_batch_goes_on(bundled: Batch) -> None:
    result = bundled["invalid_json"]
    assert result.total == 0
    assert [e.id for e in result.exercises] == EXERCISE_IDS
    assert all(e.score == 0 for e in result.exercises)
    assert {c.status for e in result.exercises for c in e.cases} == {"missing"}
    assert "not valid JSON" in result.warnings[0].text
    assert (bundled.out / "invalid_json.json").is_file()
    assert bundled["correct"].total == 30   # graded in the same batch


# ------------------------------------------------------------------------------------ determinism and time


def test_grading_correct_again_gives_identical_json_apart_from_seconds(bundled: Batch, grader_cache: Path,
                                                                      tmp_path: Path) -> None:
    # Into another results folder: the notebook's copy there has the same content-addressed name.
    again = grade([SUBMISSIONS / "correct.ipynb"], RUBRIC, tmp_path / "again", cache=grader_cache)[0]
    assert strip_seconds(to_dict(again)) == strip_seconds(to_dict(bundled["correct"]))


def test_a_set_ordered_answer_gets_identical_json_when_graded_twice(grader_cache: Path) -> None:
    notebook = NOTEBOOKS / "e2e_set_order.ipynb"   # find_numbers returns list({...})
    first, second = (grade([notebook], RUBRIC, cache=grader_cache)[0] for _ in range(2))
    assert strip_seconds(to_dict(first)) == strip_seconds(to_dict(second))


def test_correct_grades_alone_to_full_marks(bundled: Batch, grader_cache: Path) -> None:
    # How fast is measured by bench/ (ratios in one run), never asserted here: tests hold on a busy machine.
    result = grade([SUBMISSIONS / "correct.ipynb"], RUBRIC, cache=grader_cache)[0]
    assert result.total == 30


# ------------------------------------------------------------------------------------ reference and template


def test_validate_accepts_the_rubric_reference_full_template_zero(validation) -> None:
    assert validation.ok, validation.problems
    assert validation.reference_result.total == 30
    assert validation.template_result is not None and validation.template_result.total == 0


def test_template_stubs_are_missing_and_nothing_fails_because_of_the_grader(validation) -> None:
    template = validation.template_result
    for exercise in template.exercises:
        assert exercise.score == 0
        assert all("grader problem" not in c.message for c in exercise.cases)
        if exercise.id == "main":   # given in the template, not a stub: it runs and fails on the stubs
            assert {c.status for c in exercise.cases} == {"error"}
            continue
        assert {c.status for c in exercise.cases} == {"missing"}, exercise.id
        assert all("still the template's stub" in c.message for c in exercise.cases), exercise.id


# ------------------------------------------------------------------------------------ a hostile notebook


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> SubmissionResult:
    """The correct notebook plus hostile cells (see build_e2e.py). The load limit is cut from 10 s to 2 s
    so the statement that never finishes is left out sooner; nothing else about the rubric changes."""
    rubric: Rubric = load_rubric(RUBRIC)
    rubric = dataclasses.replace(rubric, limits=dataclasses.replace(rubric.limits, load_seconds=2))
    out = tmp_path_factory.mktemp("hostile-results")
    return grade([NOTEBOOKS / "e2e_hostile.ipynb"], rubric, out, cache=grader_cache)[0]


def test_hostile_notebook_costs_only_what_it_touches(hostile: SubmissionResult) -> None:
    # os._exit on tile '13' costs the one find_tile case asking for it, and main. manhattan earns its points only
    # with the reference's find_tile (isolated), so search is judged again with the reference's manhattan and
    # loses nothing: the crash is paid for once, in find_tile.
    assert hostile.total == pytest.approx(30 - 2 / 12 - 3, abs=1e-3)
    assert hostile.exercise("search").isolated == ("manhattan",)
    for exercise in hostile.exercises:
        if exercise.id not in ("find_tile", "main"):
            assert exercise.score == exercise.max_score, exercise.id


def test_hostile_os_exit_crashes_only_its_case_and_the_child_comes_back(hostile: SubmissionResult) -> None:
    cases = hostile.exercise("find_tile").cases
    crashed = [c for c in cases if c.status != "pass"]
    assert [c.call for c in crashed] == ["find_tile('13', Start2)"]
    assert crashed[0].status == "error"
    assert "exited with status 7" in crashed[0].message
    assert {c.status for c in hostile.exercise("main").cases} == {"error"}


def test_hostile_load_never_runs_the_hang_and_sys_exit_nothing_graded_reads(hostile: SubmissionResult) -> None:
    # `Stuck = next(...)` and `ExitCode = sys.exit(3)` bind names no graded code reads: the dependency slice
    # drops them, so they cause no load warning (a needed statement over budget: tests/test_slice.py). Had the
    # hang run, the load budget would have stopped it with "did not finish": that, not the clock, is the signal.
    assert not any("did not finish" in w.shown or "SystemExit" in w.shown for w in hostile.warnings)


def test_hostile_ten_megabytes_of_output_is_cut_and_the_answer_still_counts(hostile: SubmissionResult) -> None:
    cases = hostile.exercise("intermediate_goals").cases
    assert {c.status for c in cases} == {"pass"}
    for case in cases:
        assert 0 < len(case.output.encode()) <= 65536 + 200
        assert "more characters of output not kept" in case.output


def test_the_variant_note_reaches_the_student_in_every_format_although_manhattan_passes(bundled: Batch) -> None:
    """Counting the blank earns full credit, with a note that it makes the heuristic inadmissible: a passing
    exercise has no failing case to explain, but the note is still shown in the terminal, the Markdown and HTML
    feedback and the annotated notebook's box."""
    import io

    from rich.console import Console

    from grader.report import annotated, console, student

    result = bundled["manhattan-counts-blank"]
    manhattan = result.exercise("manhattan")
    assert manhattan.score == manhattan.max_score and manhattan.variant == "manhattan_with_blank"
    said = "not admissible"
    assert any(said in note for note in manhattan.notes)
    terminal = io.StringIO()
    console.student_report(result, {}, Console(file=terminal, width=200, color_system=None))
    assert said in terminal.getvalue()
    assert said in student.markdown_report(result)
    assert said in student.html_report(result)
    notebook = SUBMISSIONS / "manhattan-counts-blank.ipynb"
    page = annotated.annotated_notebook(notebook, result)
    assert said in page
    # The passing exercise is not made to look failing: no case of it is detailed, the table still says all pass.
    assert "Every case passes, hidden ones included." in student.markdown_report(result)
