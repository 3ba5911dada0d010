"""Graded as a fair TA would: accepted variants held to one convention, isolation that compensates and
never retries, and the extract_move convention taken from the parent's move_dir verdict.

Real notebooks (tests/fixtures/fair, built by build.py from a bundled correct notebook plus one cell)
graded by the real grader with real child processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.run.batch import grade
from grader.judge.conventions import REFERENCE, consistently_matched, hold_to_one
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult, to_dict
from grader.rubric.schema import Variant
from grader.intake.warning import Kind

from conftest import REPO, RUBRIC

FAIR = REPO / "tests" / "fixtures" / "fair"
N_PUZZLE_RUBRIC = REPO / "rubrics" / "n-puzzle.yaml"
EIGHT_RUBRIC = REPO / "rubrics" / "eight-puzzle-astar.yaml"


@pytest.fixture(scope="module")
def taoistic(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> dict[str, SubmissionResult]:
    names = ["manhattan_mixed_conventions", "manhattan_right_only_on_a_rerun",
             "search_fails_fast_then_solves_slowly", "extract_move_transposed_with_forged_probe"]
    results = grade([FAIR / f"{name}.ipynb" for name in names], RUBRIC, tmp_path_factory.mktemp("fair"), jobs=2,
                    cache=grader_cache)
    return {result.submission: result for result in results}


def test_a_notebook_mixing_manhattan_conventions_does_not_pass(taoistic: dict[str, SubmissionResult]) -> None:
    manhattan = taoistic["manhattan_mixed_conventions"].exercise("manhattan")
    assert manhattan.score < manhattan.max_score
    failed = [c for c in manhattan.cases if c.status != "pass"]
    assert failed and all("hold to one convention" in c.message for c in failed)


def test_a_helper_judged_right_is_never_swapped_so_a_rerun_liar_gains_nothing(
        taoistic: dict[str, SubmissionResult]) -> None:
    result = taoistic["manhattan_right_only_on_a_rerun"]
    assert result.exercise("find_tile").score == result.exercise("find_tile").max_score
    manhattan = result.exercise("manhattan")
    assert manhattan.score == 0 and manhattan.isolated == ()


def test_a_search_that_fails_fast_and_solves_slowly_with_the_reference_helpers_gains_nothing(
        taoistic: dict[str, SubmissionResult]) -> None:
    result = taoistic["search_fails_fast_then_solves_slowly"]
    assert result.exercise("matches").score < result.exercise("matches").max_score   # so isolation may apply
    search = result.exercise("search")
    assert search.score == 0
    # The second run had the same limit as the first (no 10x), so the slow answers were timeouts.
    assert all(c.status in ("fail", "timeout") for c in search.cases)


def test_extract_move_convention_comes_from_the_move_dir_verdict_not_a_probe(
        taoistic: dict[str, SubmissionResult]) -> None:
    result = taoistic["extract_move_transposed_with_forged_probe"]
    assert result.exercise("move_dir").score == result.exercise("move_dir").max_score
    extract_move = result.exercise("extract_move")
    assert extract_move.score == 0 and extract_move.variant == REFERENCE
    assert all(c.mistake == "extract_move_transposed" for c in extract_move.cases)


def test_aimas_h1_counting_the_blank_is_an_accepted_variant(tmp_path: Path, grader_cache: Path) -> None:
    [result] = grade([FAIR / "aima_h1_counts_the_blank.ipynb"], EIGHT_RUBRIC, tmp_path, cache=grader_cache)
    h1 = result.exercise("h1")
    assert h1.score == h1.max_score and h1.variant == "EightPuzzleH1WithBlank"
    assert result.total == result.max_total



def test_a_default_goal_set_as_the_template_docstring_draws_it_loses_nothing(tmp_path: Path,
                                                                               grader_cache: Path) -> None:
    """The template's EightPuzzle docstring draws the goal as (1, 2, ..., 8, 0), its code defaults to (0, 1, ..., 8):
    a notebook that made the default match the drawing has right h1, h2, h and searches (each reads self.goal), and
    no exercise grades the default. Cases built EightPuzzle(state) on the notebook's default: 7.6 of 18. Every case
    now passes its goal."""
    [result] = grade([FAIR / "default_goal_as_the_docstring_draws.ipynb"], EIGHT_RUBRIC, tmp_path,
                     cache=grader_cache)
    assert result.total == result.max_total, [(e.id, e.score, [c.message for c in e.cases if c.message][:2])
                                              for e in result.exercises if e.score < e.max_score]


def test_a_best_first_search_whose_costs_are_whole_floats_finds_the_cheapest_paths(
        tmp_path: Path, grader_cache: Path) -> None:
    """The root is Node(problem.initial, path_cost=0.0), so the goal node of the graph cases costs 3.0 where the
    reference's costs 3: the same cheapest path, and the text asks for no type of the cost. It lost the four graph
    cases ("expected int, got float")."""
    [result] = grade([FAIR / "best_first_search_costs_as_floats.ipynb"], EIGHT_RUBRIC, tmp_path, cache=grader_cache)
    best_first = result.exercise("best_first_search")
    assert best_first.score == best_first.max_score, [case.message for case in best_first.cases]


def test_a_move_dir_returning_lists_is_paid_for_once_not_again_in_next_states(
        tmp_path: Path, grader_cache: Path) -> None:
    """move_dir forgets to_tuple and returns a list of lists; next_states is right but puts those lists into a set
    (TypeError: unhashable). next_states isolates move_dir now, as apply_move_list does: judged again with the
    reference's move_dir it earns its points, and the slip costs move_dir alone (next_states lost 2/2 too)."""
    [result] = grade([FAIR / "move_dir_returns_lists.ipynb"], RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("move_dir").score == 0
    next_states = result.exercise("next_states")
    assert next_states.score == next_states.max_score and "move_dir" in next_states.isolated


def test_an_error_raised_in_a_helper_judged_right_names_the_wrong_function_that_fed_it(
        tmp_path: Path, grader_cache: Path) -> None:
    """extract_move gives the tile's direction, not the blank's; main replays the moves with the notebook's right
    move_dir, which raises IndexError. The message said only "The error is in move_dir": now that move_dir was
    judged right and extract_move, which main reaches, lost points."""
    [result] = grade([FAIR / "extract_move_of_the_tile.ipynb"], RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("move_dir").score == result.exercise("move_dir").max_score
    assert result.exercise("extract_move").score < result.exercise("extract_move").max_score
    errors = [c for c in result.exercise("main").cases if c.status == "error"]
    assert errors and all(c.culprit == "move_dir" for c in errors)
    assert all("move_dir itself was judged right in its own exercise, so what it was given is wrong: extract_move "
               "lost points in its own exercise" in c.message for c in errors)
    # what a group of them shows under the first (report.grouping.own_messages): each one's own detail, no advice
    assert all(c.detail.startswith("IndexError") and "itself was judged right" not in c.detail for c in errors)


def test_a_function_that_cannot_be_isolated_is_named_where_it_costs_points_again(
        tmp_path: Path, grader_cache: Path) -> None:
    """best_first_search returns the path, not the node; astar_search is right but runs it as written (its
    arguments, a problem object and f, cannot be given to the reference's best_first_search) and loses its
    points. Its feedback said only what failed ("object has no attribute 'parent'"); now a note names
    best_first_search as where to look first, and the rubric's hint says why it is not replaced."""
    [result] = grade([FAIR / "best_first_search_returns_the_path.ipynb"], EIGHT_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("best_first_search").score < result.exercise("best_first_search").max_score
    astar = result.exercise("astar_search")
    assert astar.score < astar.max_score and astar.isolated == ()
    assert any(note.startswith("astar_search runs your best_first_search as you wrote it (this exercise does not "
                               "replace it with the reference's), and it lost points in its own exercise")
               for note in astar.notes)
    assert any("cannot give the reference's best_first_search your problem object and your f" in note
               for note in astar.notes)
    h = result.exercise("h")     # reaches no function that lost points: no such note
    assert not any("runs your" in note for note in h.notes)


def test_an_unseeded_numpy_draw_gives_every_copy_the_same_verdict(tmp_path: Path, grader_cache: Path) -> None:
    """numpy seeds its global generator from the machine's entropy at import: two runs of one notebook drew
    differently. Each case starts from the same seed (as Python's `random`), so copies agree case by case."""
    source = FAIR / "numpy_random_unseeded_in_manhattan.ipynb"
    copies = [tmp_path / f"{name}.ipynb" for name in ("first", "second")]
    for copy in copies:
        copy.write_bytes(source.read_bytes())
    results = grade(copies, RUBRIC, tmp_path / "out", jobs=2, cache=grader_cache)
    first, second = ([(c.id, c.status, c.got) for c in r.exercise("manhattan").cases] for r in results)
    assert first == second
    manhattan = results[0].exercise("manhattan")
    assert manhattan.score == manhattan.max_score   # numpy's first draw after seed 0 is 0: the right distance


# ---------------------------------------------------------------- the pure rules


def _case(case_id: str, status: str, variant: str = "", got: object = None) -> CaseResult:
    return CaseResult(case_id, status, "public", "" if status == "pass" else "wrong",
                      fraction=1.0 if status == "pass" else 0.0, variant=variant, got=got)


def test_the_convention_that_explains_most_answers_judges_every_case() -> None:
    variant = Variant("with_blank")
    first = [_case("a", "pass"), _case("b", "fail"), _case("c", "fail")]
    under_variant = [{"with_blank": _case("a", "pass")}, {"with_blank": _case("b", "pass")},
                     {"with_blank": _case("c", "pass")}]
    results, chosen = hold_to_one(first, under_variant, [variant])
    assert chosen == "with_blank" and all(r.status == "pass" and r.variant == "with_blank" for r in results)
    # Not allowed (e.g. its `when` does not hold): the reference's convention judges.
    results, chosen = hold_to_one(first, under_variant, [])
    assert chosen == REFERENCE and [r.status for r in results] == ["pass", "fail", "fail"]


def test_a_tie_goes_to_the_reference_and_the_other_cases_say_why_they_fail() -> None:
    first = [_case("a", "pass"), _case("b", "fail")]
    under_variant = [{"v": _case("a", "fail")}, {"v": _case("b", "pass")}]
    results, chosen = hold_to_one(first, under_variant, [Variant("v")])
    assert chosen == REFERENCE
    assert results[0].status == "pass" and results[1].status == "fail"
    assert "hold to one convention" in results[1].message


def test_consistency_needs_an_answer_that_tells_the_conventions_apart() -> None:
    from grader.plan.cases import Expected
    expected = {"a": Expected(1, 0.0, (("f", 1),)), "b": Expected(2, 0.0, (("f", 3),))}
    matched = ExerciseResult("x", "x", 0.0, 1.0, (_case("a", "pass", got=1), _case("b", "fail", got=3)))
    assert consistently_matched(matched, "f", expected)
    not_told = ExerciseResult("x", "x", 1.0, 1.0, (_case("a", "pass", got=1),))
    assert not consistently_matched(not_told, "f", {"a": expected["a"]})
    other = ExerciseResult("x", "x", 0.0, 1.0, (_case("a", "pass", got=1), _case("b", "fail", got=4)))
    assert not consistently_matched(other, "f", expected)


def test_a_variants_when_reads_the_earlier_answers_as_their_case_reads_answers(plan) -> None:
    """A variant's `when` asks whether an earlier exercise's answers were a function's. find_numbers' check is
    `unordered` (the text names no order): answers that are find_numbers_without_blank's tiles in another order
    are that mistake, as the judge's mistake matching reads them, but `when` compared them spelling for spelling
    (codec.same) and never took them for it."""
    from dataclasses import replace as replaced
    from grader.judge.conventions import allowed_variants
    from grader.judge.grading import _reads_as
    cases, reordered = [], 0
    for case in plan.cases["find_numbers"]:
        expected = plan.expected[case.id]
        mistake = dict(expected.mistakes)["find_numbers_without_blank"]
        if mistake == expected.value:
            cases.append(CaseResult(case.id, "pass", case.visibility, "", fraction=1.0, got=expected.value))
            continue
        answer = {"list": list(reversed(mistake["list"]))}
        reordered += answer != mistake
        cases.append(CaseResult(case.id, "fail", case.visibility, "wrong", got=answer))
    assert reordered   # some answer is spelt otherwise than the mistake's
    result = ExerciseResult("find_numbers", "Numbered tiles", 0.0, 1.0, tuple(cases))
    reads_as = _reads_as(plan)
    assert consistently_matched(result, "find_numbers_without_blank", plan.expected, reads_as)
    assert not consistently_matched(result, "find_numbers_without_blank", plan.expected)   # spelling for spelling
    later = replaced(plan.rubric.exercise("replace_numbers"),
                     variants=(Variant("replace_numbers", when=(("find_numbers", "find_numbers_without_blank"),)),))
    assert allowed_variants(later, {"find_numbers": result}, plan.expected, reads_as) == later.variants
    wrong = replaced(result, cases=tuple(replaced(case, got={"list": ["99"]}) if case.status == "fail" else case
                                         for case in cases))
    assert not consistently_matched(wrong, "find_numbers_without_blank", plan.expected, reads_as)


# ---------------------------------------------------------------- the wrong rubric is noticed


def test_grading_with_the_wrong_rubric_says_so_and_the_cli_exits_non_zero(tmp_path: Path, grader_cache: Path) -> None:
    from grader.cli import main
    notebook = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
    sliding = REPO / "rubrics" / "sliding-3x3.yaml"
    cache = ["--cache", str(grader_cache), "--quiet"]
    assert main(["grade", "--rubric", str(sliding), "--out", str(tmp_path / "a"), *cache, str(notebook)]) == 3
    [result] = grade([notebook], sliding, tmp_path / "b", cache=grader_cache)
    assert result.mismatch.startswith("this notebook does not look like sliding-3x3")
    assert result.warnings[0].text == result.mismatch and result.warnings[0].kind == Kind.MISMATCH
    assert main(["grade", "--rubric", str(sliding), "--out", str(tmp_path / "c"), "--allow-mismatch", *cache,
                 str(notebook)]) == 0


def test_a_results_folder_refuses_another_assignment(tmp_path: Path, grader_cache: Path, capsys) -> None:
    from grader.cli import main
    notebook = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
    out = tmp_path / "results"
    cache = ["--cache", str(grader_cache), "--quiet"]
    assert main(["grade", "--rubric", str(RUBRIC), "--out", str(out), *cache, str(notebook)]) == 0
    before = (out / "correct.json").read_bytes()
    code = main(["grade", "--rubric", str(REPO / "rubrics" / "sliding-3x3.yaml"), "--out", str(out),
                 "--allow-mismatch", *cache, str(notebook)])
    assert code == 2
    error = capsys.readouterr().err
    assert "holds results of taoistic-search, not sliding-3x3" in error and "Traceback" not in error
    assert (out / "correct.json").read_bytes() == before      # nothing graded is lost


# ---------------------------------------------------------------- errors charged where they happen, messages


@pytest.fixture(scope="module")
def eight(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> dict[str, SubmissionResult]:
    names = ["aima_h_calls_h2_as_a_function", "node_class_renamed", "aima_library_user"]
    results = grade([FAIR / f"{name}.ipynb" for name in names], EIGHT_RUBRIC, tmp_path_factory.mktemp("eight"),
                    jobs=2, cache=grader_cache)
    return {result.submission: result for result in results}


def test_aimas_h_calling_h2_as_a_function_is_charged_to_h_and_astar_is_judged_with_the_reference_h(
        eight: dict[str, SubmissionResult]) -> None:
    result = eight["aima_h_calls_h2_as_a_function"]
    h = result.exercise("h")
    assert h.score == 0 and {c.status for c in h.cases} == {"error"}
    assert all("name 'h2' is not defined" in c.message for c in h.cases)
    astar = result.exercise("astar_search")
    assert astar.score == astar.max_score and astar.isolated == ("EightPuzzle.h",)
    assert any("judged with the reference's EightPuzzle.h (see h)" in note for note in astar.notes)


def test_an_error_inside_another_method_is_charged_to_it_by_name(tmp_path: Path, grader_cache: Path) -> None:
    """Where the rubric does not isolate the method, the error names it: that is where the fix belongs."""
    from dataclasses import replace
    from grader.rubric.schema import load_rubric
    rubric = load_rubric(EIGHT_RUBRIC)
    rubric = replace(rubric, exercises=tuple(
        replace(e, isolate=("inversions",), methods=()) if e.id == "astar_search" else e for e in rubric.exercises))
    [result] = grade([FAIR / "aima_h_calls_h2_as_a_function.ipynb"], rubric, tmp_path, cache=grader_cache)
    astar = result.exercise("astar_search")
    errors = [c for c in astar.cases if c.status == "error"]
    assert errors and all(c.culprit == "EightPuzzle.h" for c in errors)
    assert all("The error is in EightPuzzle.h (cell " in c.message and "called while running astar_search"
               in c.message for c in errors)
    assert any("cases fail the same way" in note for note in astar.notes)


def test_a_case_needing_a_class_the_notebook_lacks_says_so(tmp_path: Path, grader_cache: Path) -> None:
    """A class the cases build that the rubric does not list as given: the case says what it needs."""
    from dataclasses import replace
    from grader.rubric.schema import load_rubric
    rubric = replace(load_rubric(EIGHT_RUBRIC), given=())
    [result] = grade([FAIR / "node_class_renamed.ipynb"], rubric, tmp_path, cache=grader_cache)
    h1 = result.exercise("h1")
    assert {c.status for c in h1.cases} == {"missing"}
    assert all(c.message == "this case needs the class Node, which the notebook does not define" for c in h1.cases)
    assert f"{len(h1.cases)} cases fail the same way" in h1.notes[0]


def test_the_given_node_stands_in_for_a_node_the_notebook_renamed(eight: dict[str, SubmissionResult]) -> None:
    """The template gives Node; this notebook calls it SearchNode everywhere. h1 and h2 read only node.state:
    they were 0 ("this case needs the class Node"); with the course's Node they are judged, and right."""
    result = eight["node_class_renamed"]
    assert all(e.score == e.max_score for e in result.exercises), [(e.id, e.score) for e in result.exercises]
    [said] = [w for w in result.warnings if w.kind == Kind.GIVEN]
    assert said.subject == "Node"


def test_classes_a_library_user_imports_from_a_missing_module_are_the_courses(
        eight: dict[str, SubmissionResult]) -> None:
    """`from search import Problem, Node, ...` (AIMA's own library, absent here) bound inert stand-ins: h1, h2 and
    h scored 0 ("this case needs the class Node"). The given classes now stand in, so they are judged (h1 and h
    right, h2 AIMA's own mistake); what the notebook does not write (best_first_search; astar_search is AIMA's,
    imported) still scores nothing."""
    result = eight["aima_library_user"]
    scores = {e.id: e.score for e in result.exercises}
    assert all(scores[name] == result.exercise(name).max_score for name in ("inversions", "h1", "h")), scores
    # AIMA's h2 reads tile numbers as squares: right for the default goal only, and told so (the rubric's mistake)
    h2 = [c for c in result.exercise("h2").cases if c.status != "pass"]
    assert h2 and all("right for the default goal (0, 1, ..., 8) only" in c.message for c in h2)
    assert scores["best_first_search"] == 0 and scores["astar_search"] == 0
    # astar_search is AIMA's, imported: said so, not "expected a list of states, got <stand-in for ...>"
    assert all(c.status == "missing" and c.message.startswith("astar_search is imported (cell 1, line 1), not "
                                                              "written in the notebook")
               for c in result.exercise("astar_search").cases)
    [said] = [w for w in result.warnings if w.kind == Kind.GIVEN]
    assert said.subject == "Problem, Node" and "the course's own Problem, Node stood in" in said.text


def test_the_courses_search_stands_in_for_a_lost_run_line(tmp_path: Path, grader_cache: Path) -> None:
    """A right 3x3 notebook without its `%run Breadth-First-Fast.ipynb` line: solve was 0 ("this case needs the
    function search"), and its hint blamed nextStates. The support module's search is given: solve is judged."""
    [result] = grade([FAIR / "sliding_without_its_run_line.ipynb"], REPO / "rubrics" / "sliding-3x3.yaml", tmp_path,
                     cache=grader_cache)
    assert result.total == result.max_total, [(e.id, e.score) for e in result.exercises]
    [said] = [w for w in result.warnings if w.kind == Kind.GIVEN]
    assert said.subject == "search"


def test_a_missing_graded_name_is_called_what_it_is(tmp_path: Path, grader_cache: Path) -> None:
    notebook = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
    [result] = grade([notebook], REPO / "rubrics" / "sliding-3x3.yaml", tmp_path, cache=grader_cache)
    assert result.exercise("goal").cases[0].message.startswith("no constant named goal")
    assert result.exercise("findZero").cases[0].message.startswith("no function named findZero")


def test_a_failing_public_case_shows_every_fixture_it_uses_in_every_format(bundled) -> None:
    import io

    from rich.console import Console

    from grader.report.console import student_report
    from grader.report.student import html_report, markdown_report
    result = bundled["extract-move-of-tile"]
    case = result.exercise("extract_move").cases[0]
    assert case.status == "fail" and set(case.inputs) == {"Start", "StartDown"}
    assert all(c.inputs == {} for e in result.exercises for c in e.cases if c.visibility == "hidden")
    markdown = markdown_report(result)
    assert "StartDown\n┌" in markdown
    assert 'data-role="input"' in html_report(result)
    stream = io.StringIO()
    student_report(result, {}, Console(file=stream, width=120, color_system=None))
    assert "StartDown" in stream.getvalue() and "┌" in stream.getvalue()


def test_a_module_the_grading_machine_lacks_is_information_for_the_ta_not_a_student_warning(bundled) -> None:
    result = bundled["seed-000"]
    assert any(w.kind == Kind.MISSING_MODULE and w.subject == "ipycanvas" and "inert stand-ins" in w.text
               and w.label.startswith("In [") and w.line >= 1 for w in result.environment)
    assert not any("ipycanvas" in warning.shown or "style.css" in warning.shown for warning in result.warnings)


def test_numpy_ints_and_a_frozenset_are_right_answers(tmp_path: Path, grader_cache: Path) -> None:
    """find_tile returns np.where's numpy ints and next_states a frozenset: Python calls both equal to the
    expected answer, so neither loses a point (the notebook earns full marks)."""
    [result] = grade([FAIR / "numpy_ints_and_frozenset.ipynb"], RUBRIC, tmp_path, jobs=1, cache=grader_cache)
    assert result.exercise("find_tile").score == result.exercise("find_tile").max_score
    assert result.exercise("next_states").score == result.exercise("next_states").max_score
    assert result.total == result.max_total


# ---------------------------------------------------------------- real notebooks by other people


SLIDING_RUBRIC = REPO / "rubrics" / "sliding-3x3.yaml"


def test_a_real_notebooks_successors_in_a_list_earn_the_set_exercise(tmp_path: Path, grader_cache: Path) -> None:
    """Written in the style of a real lab notebook on the 3x3 template: the successor states are collected in a
    list where the text says "the set of states"; each is there once, so it is right (with a note), as in search."""
    [result] = grade([FAIR / "real_sliding_successors_in_a_list.ipynb"], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    next_states = result.exercise("nextStates")
    assert next_states.score == next_states.max_score
    assert all(c.status == "pass" and "a list where a set is asked for" in c.message for c in next_states.cases)
    assert any("returns a list where the text asks for a set" in note for note in next_states.notes)
    assert result.total == result.max_total


def test_a_known_mistake_in_a_list_is_matched_where_a_list_is_read_as_a_set(tmp_path: Path, grader_cache: Path) -> None:
    """The same notebook with the wrap-around slip (moveDown in row 0 reads S[-1]): its successors, a list, are the
    known mistake nextStates_wrapping's set, read as the rubric reads the answer (sequence_as_set). Every case it
    fails names the mistake and says why (it only said "expected a set of 2 elements, got 4"); the right cases
    still pass and the score is that of the cases alone."""
    [result] = grade([FAIR / "real_sliding_wrapping_successors_in_a_list.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    next_states = result.exercise("nextStates")
    failed = [case for case in next_states.cases if case.status != "pass"]
    assert failed and all(case.mistake == "nextStates_wrapping" and "S[-1]" in case.message for case in failed)
    assert all("holding each element once: accepted" in case.message
               for case in next_states.cases if case.status == "pass")
    assert 0 < next_states.score < next_states.max_score


def test_successors_from_a_generator_are_no_set_and_the_feedback_says_what_to_return(
        tmp_path: Path, grader_cache: Path) -> None:
    """nextStates written with yield, where the text asks for "the set of states": the grader sees a generator,
    not its states, and a generator is no set (it gives its states once, cannot be counted or asked twice), so
    nextStates earns nothing. Its feedback read 'got <opaque generator: <generator object nextStates at
    0x7fcf...>>', an address that changed at every run; now it says what to return. The course's search only
    iterates it, so solve keeps its points."""
    [result] = grade([FAIR / "real_sliding_successors_from_a_generator.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    next_states = result.exercise("nextStates")
    assert next_states.score == 0
    assert all(case.status == "fail" and "a generator where a set is asked for" in case.message
               and "return set(...)" in case.message for case in next_states.cases)
    assert "0x" not in json.dumps(to_dict(result))
    assert result.exercise("solve").score == result.exercise("solve").max_score


def test_solves_none_error_blames_findzero_when_findzero_is_the_stub_not_the_moves(
        tmp_path: Path, grader_cache: Path) -> None:
    """findZero handed in as the template's stub, the rest right: solve raises 'cannot unpack non-iterable
    NoneType' where nextStates unpacks findZero's None. The hint said "some state built by your moves has no
    blank 0 any more", blaming moves that are right; it now follows findZero's own verdict."""
    [result] = grade([FAIR / "real_sliding_find_zero_left_a_stub.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    assert result.exercise("findZero").score == 0
    solve = result.exercise("solve")
    assert solve.cases and all(case.status == "error" and "findZero itself is not right yet" in case.message
                               and "your moves" not in case.message for case in solve.cases)


def test_an_error_hint_with_when_follows_the_earlier_exercises_verdict() -> None:
    """The same error with findZero judged right blames the moves; with findZero not judged, neither hint is said."""
    from grader.judge.grading import _judged_hints
    from grader.store.status import RAISED
    from grader.rubric.schema import load_rubric
    solve = load_rubric(SLIDING_RUBRIC).exercise("solve")
    error = CaseResult("solve.seed-start", "error", "public", "TypeError: cannot unpack non-iterable NoneType object",
                       reason=RAISED, error="TypeError: cannot unpack non-iterable NoneType object")
    def judged(score: float) -> dict[str, ExerciseResult]:
        return {"findZero": ExerciseResult("findZero", "Find the blank", score, 2.0, ())}
    right, wrong = _judged_hints(solve, error, judged(2.0)), _judged_hints(solve, error, judged(1.0))
    assert "your moves has no blank 0" in right.message and "findZero itself" not in right.message
    assert "findZero itself is not right yet" in wrong.message and "your moves" not in wrong.message
    assert right.advice.startswith("findZero returned None: some state")
    assert _judged_hints(solve, error, {}) == error


def test_an_error_hint_matches_the_exception_as_the_student_reads_it_with_or_without_when() -> None:
    """One rule for every error hint: it matches the exception as raised and shown ("Type: message", CaseResult.error).
    The hints without `when` were matched against ": message" when the child named no type (the student reads
    "Error: message"), the others against the shown text: the same `match` said one and not the other."""
    from dataclasses import replace as replaced
    from grader.judge.grading import _judged_hints, _raised
    from grader.rubric.schema import ErrorHint, load_rubric
    from grader.sandbox.process import Outcome
    solve = load_rubric(SLIDING_RUBRIC).exercise("solve")
    solve = replaced(solve, error_hints=(ErrorHint("Error: boom", "always said"),
                                         ErrorHint("Error: boom", "said when findZero is right",
                                                   when=(("findZero", "right"),))))
    outcome = Outcome("solve.seed-start", "error", error={"message": "boom", "where": ""})
    result = _raised(outcome, solve, {"id": "solve.seed-start", "visibility": "public"})
    assert result.error == "Error: boom" and result.message.startswith("Error: boom")
    judged = {"findZero": ExerciseResult("findZero", "Find the blank", 2.0, 2.0, ())}
    final = _judged_hints(solve, result, judged)
    assert "always said" in final.advice and "said when findZero is right" in final.advice


def test_find_zero_returning_a_list_is_the_pair_the_text_asks_for(tmp_path: Path, grader_cache: Path) -> None:
    """The text: findZero "returns a pair (r, c)"; the notebook only unpacks it. [r, c] lost both points as a known
    mistake; it is an accepted variant now, with a note, and the notebook earns full marks."""
    [result] = grade([FAIR / "real_sliding_find_zero_as_a_list.ipynb"], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    find_zero = result.exercise("findZero")
    assert find_zero.score == find_zero.max_score and find_zero.variant == "findZero_as_list"
    assert any(note.startswith("Accepted convention: findZero returns a list [r, c]") for note in find_zero.notes)
    assert result.total == result.max_total


def test_find_zero_returning_a_numpy_array_of_the_pair_is_the_pair(tmp_path: Path, grader_cache: Path) -> None:
    """findZero returns np.argwhere(...)[0], an array of the two numbers: it unpacks as the pair the text asks for,
    as the accepted list does, and nextStates uses it so. It lost both points ("expected tuple, got ndarray")."""
    [result] = grade([FAIR / "real_sliding_find_zero_as_a_numpy_array.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    find_zero = result.exercise("findZero")
    assert find_zero.score == find_zero.max_score, [case.message for case in find_zero.cases]
    assert result.total == result.max_total


def test_a_known_mistake_spelt_as_a_list_is_named_unless_the_spelling_is_all_that_is_wrong(
        tmp_path: Path, grader_cache: Path) -> None:
    """findZero returns [c, r]: the accepted list [r, c], transposed. The (column, row) hint came only with a tuple
    (the mistake's spelling) and the list variant's verdicts matched no mistake at all; now the transposed cases
    name the mistake under the convention chosen. tupleOfTuples hands back its list of lists: the right rows spelt
    as lists, which is also what the mistake 'rows left lists' is, spelt alike. It is not that mistake (the outer
    list is no tuple either): the check's word on the spelling is the feedback, and no mistake is claimed."""
    [result] = grade([FAIR / "real_sliding_answers_spelt_as_lists.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    find_zero = result.exercise("findZero")
    assert find_zero.variant == "findZero_as_list" and 0 < find_zero.score < find_zero.max_score
    failed = [case for case in find_zero.cases if case.status != "pass"]
    assert failed and all(case.mistake == "findZero_transposed" and "(column, row)" in case.message
                          for case in failed)
    tuple_of_tuples = result.exercise("tupleOfTuples")
    assert tuple_of_tuples.score == 0
    assert all(case.status == "fail" and not case.mistake and "expected tuple, got list" in case.message
               and "Only the outer list" not in case.message for case in tuple_of_tuples.cases)


def test_a_script_export_of_a_right_notebook_keeps_its_run_module_and_its_timed_definitions(
        tmp_path: Path, grader_cache: Path) -> None:
    """The .py that nbconvert writes of a right 3x3 notebook: its `%run Breadth-First-Fast.ipynb` and its %%time
    cell are calls of IPython's API there. As calls they ran nothing (11/20: moveLeft missing, search undefined);
    read as the magics they were, the script grades as its notebook does."""
    script = FAIR / "script_export_with_run_and_time_magics.py"
    assert "get_ipython().run_cell_magic('time'" in script.read_text()
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("moveLeft").score == result.exercise("moveLeft").max_score
    assert result.exercise("solve").score == result.exercise("solve").max_score
    assert result.total == result.max_total


def test_a_script_export_keeps_a_timed_cell_that_text_follows(tmp_path: Path, grader_cache: Path) -> None:
    """nbconvert writes a markdown cell as comments after the code cell before it, under no `# In[ ]:` of its own:
    the %%time cell's run_cell_magic call was not alone in its cell and stayed a call, so findZero was missing and
    solve failed (14/20). Comments around it do not count. Found by tests/test_notebook_variants.py's property."""
    script = FAIR / "script_export_time_cell_before_text.py"
    assert "')\n\n\n# findZero scans the rows in order" in script.read_text()
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("findZero").score == result.exercise("findZero").max_score
    assert result.total == result.max_total


def test_an_ipython6_script_export_of_a_right_notebook_keeps_its_run_module(
        tmp_path: Path, grader_cache: Path) -> None:
    """Jupyter with IPython before 7 exported `%run Breadth-First-Fast.ipynb` as
    get_ipython().magic('run Breadth-First-Fast.ipynb'). As a call it ran nothing: search was undefined and solve
    scored 0 (16/20); read as the magic it was, the script grades as its notebook does."""
    script = FAIR / "script_export_ipython6_magic_calls.py"
    assert "\nget_ipython().magic('run Breadth-First-Fast.ipynb')\n" in script.read_text()
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("solve").score == result.exercise("solve").max_score
    assert result.total == result.max_total


def test_a_script_that_loads_the_support_file_with_exec_open_runs_it_as_percent_run(
        tmp_path: Path, grader_cache: Path) -> None:
    """A right 3x3 solution written in a .py file (Spyder/VS Code `# %%` cells) cannot say %run: it loads the
    course's Breadth-First-Fast.py with exec(open(...).read()), which runs it in Jupyter and in Python alike. The
    call was dropped like any top-level call, search was undefined and solve scored 0 (16/20); read as the %run
    it does, the script grades as its notebook does."""
    script = FAIR / "spyder_script_exec_open_support.py"
    assert "\nexec(open('Breadth-First-Fast.py').read())\n" in script.read_text()
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("solve").score == result.exercise("solve").max_score
    assert result.total == result.max_total


def test_a_script_export_without_prompts_keeps_its_timed_definitions(tmp_path: Path, grader_cache: Path) -> None:
    """nbconvert --no-prompt writes no `# In[ ]:` markers: the file was one cell, so the %%time cell's
    run_cell_magic call was not a whole cell and stayed a call (moveLeft missing, 18/20). Each such call at the
    top level is a cell of its own now, and the script grades as its notebook does."""
    script = FAIR / "script_export_without_prompts.py"
    text = script.read_text()
    assert "# In[" not in text and "\nget_ipython().run_cell_magic('time', '', \"def moveLeft(S, r, c)" in text
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("moveLeft").score == result.exercise("moveLeft").max_score
    assert result.total == result.max_total


def test_only_a_whole_top_level_cell_magic_call_of_a_script_that_parses_is_a_cell_of_its_own() -> None:
    from grader.intake.notebook import notebook_from_source
    call = "get_ipython().run_cell_magic('time', '', 'def f():\\n    return 1\\n')"
    cells = [c.source for c in notebook_from_source(f"x = 1\n\n{call}\n\ny = f()\n").cells]
    assert cells == ["x = 1", call, "y = f()"]
    in_a_string = f'text = """\n{call}\n"""\n'
    assert [c.source for c in notebook_from_source(in_a_string).cells] == [in_a_string]
    not_python = f"x = (\n\n{call}\n"
    assert [c.source for c in notebook_from_source(not_python).cells] == [not_python]


def test_a_colab_export_of_a_right_notebook_runs_the_magics_colab_commented_out(
        tmp_path: Path, grader_cache: Path) -> None:
    """Colab's "Download .py" writes `%run Breadth-First-Fast.ipynb` as `# %run ...` and comments out a %%time
    cell line by line, under its note "Commented out IPython magic to ensure Python compatibility." Read as
    comments, moveLeft was missing and search undefined (14/20); read as the notebook ran them, 20/20."""
    script = FAIR / "colab_export_with_run_and_time_magics.py"
    text = script.read_text()
    assert "Automatically generated by Colab." in text and "\n# %%time\n# def moveLeft(S, r, c):\n" in text
    assert "\n# %run Breadth-First-Fast.ipynb\n" in text
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("moveLeft").score == result.exercise("moveLeft").max_score
    assert result.exercise("solve").score == result.exercise("solve").max_score
    assert result.total == result.max_total


def test_only_the_cells_colab_marked_have_their_commented_magics_read_as_magics() -> None:
    """Colab's note covers one cell: its cell magic's commented lines, or its line magics up to the cell's first
    blank line. A `# %run` comment elsewhere is the author's, and a file without the note is read as before."""
    from grader.intake.notebook import notebook_from_source
    note = "# Commented out IPython magic to ensure Python compatibility."
    text = (f'"""lab.ipynb\n\nAutomatically generated by Colab.\n"""\n\n!pip install tqdm\n\n{note}\n'
            f"# %run helpers.ipynb\n  # %time x = 1\n\n# %run mine.ipynb\ny = 2\n\n{note}\n# %%time\n"
            f"# def f(S):\n# \n#     return S  # same\n\nz = f(3)\n")
    cells = [c.source for c in notebook_from_source(text).cells]
    assert cells == ['"""lab.ipynb\n\nAutomatically generated by Colab.\n"""\n\n!pip install tqdm',
                     "%run helpers.ipynb\n  %time x = 1", "# %run mine.ipynb\ny = 2",
                     "%%time\ndef f(S):\n\n    return S  # same", "z = f(3)"]
    plain = "# %run helpers.ipynb\nx = 1\n"   # no note: the author's comment, as before
    assert [c.source for c in notebook_from_source(plain).cells] == [plain]


def test_a_graded_function_defined_inside_a_class_or_a_function_is_missing_and_the_feedback_says_where(
        tmp_path: Path, grader_cache: Path) -> None:
    """findZero written as a method of a class and moveLeft nested in another function: the notebook has neither
    name for the cases to call, so both are missing as before, but the student saw 'no function named findZero in
    the notebook' beside their def; the note now says which class or function holds it."""
    [result] = grade([FAIR / "defined_inside_a_class_and_a_function.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    where = {"findZero": "class Board", "moveLeft": "the function slide_left"}
    for name, holder in where.items():
        exercise = result.exercise(name)
        assert exercise.score == 0
        assert {c.status for c in exercise.cases} == {"missing"}
        assert all(c.message.startswith(f"no function named {name} in the notebook; it is defined inside {holder} "
                                        "(cell ") and c.message.endswith(
                                            "not at the top level of a cell, where the assignment calls it")
                   for c in exercise.cases)
    assert result.exercise("nextStates").score == result.exercise("nextStates").max_score


def test_the_note_on_a_nested_definition_names_the_definition_in_force() -> None:
    """A class written twice, findZero a method of both: the note names the later cell, the class Jupyter keeps."""
    from grader.extract.source import extract
    from grader.intake.notebook import notebook_from_source
    from grader.judge.grading import _syntax_error_note
    script = ("# %%\nclass Board:\n    def findZero(self, S):\n        return 0, 0\n"
              "# %%\nx = 1\n"
              "# %%\nclass Board:\n    def findZero(self, S):\n        return 1, 1\n")
    notebook = notebook_from_source(script, "script.py")
    assert _syntax_error_note("findZero", notebook, extract(notebook)) == (
        "; it is defined inside class Board (cell 3), not at the top level of a cell, where the assignment calls it")


def test_a_function_in_a_module_the_notebook_writes_and_imports_is_graded(tmp_path: Path, grader_cache: Path) -> None:
    """findZero's cell starts with `%%writefile sliding_helpers.py` and the next cell says `from sliding_helpers
    import findZero`, which runs in Jupyter. The cell was dropped like any other cell magic's and the import of a
    missing module gave an inert stand-in: findZero 0 and solve 0 (14/20, 'got <opaque Inert ...>'). The written
    cell now runs in place of the import."""
    [result] = grade([FAIR / "helpers_in_a_module_the_notebook_writes.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    assert result.exercise("findZero").score == result.exercise("findZero").max_score
    assert result.total == result.max_total
    assert not [w for w in result.warnings if w.kind == Kind.MISSING_MODULE]


def test_cells_pasted_with_their_indent_are_graded_as_jupyter_runs_them(tmp_path: Path, grader_cache: Path) -> None:
    """findZero's cell is indented by four spaces and nextStates's (after a blank line, under %%time) by two, as
    cells pasted from inside a block are: IPython takes the first line's indent off before it runs a cell, so the
    notebook runs in Jupyter. Each cell was left out with "unexpected indent": findZero, nextStates and solve 0
    (11/20). Now they are read as IPython reads them."""
    [result] = grade([FAIR / "cells_pasted_indented.ipynb"], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert not [w for w in result.warnings if w.kind == Kind.SYNTAX]
    assert result.total == result.max_total


def test_cells_pasted_from_a_session_with_their_prompts_are_graded_as_jupyter_runs_them(tmp_path: Path,
                                                                                       grader_cache: Path) -> None:
    """moveLeft's cell keeps Python's prompts (`>>> `, `... `) and tupleOfTuples's IPython's (`In [7]: `,
    `   ...: `): IPython takes them off before it runs a cell. Both cells were left out as syntax errors: moveLeft,
    tupleOfTuples, nextStates and solve 0 (10/20)."""
    [result] = grade([FAIR / "cells_pasted_from_a_session.ipynb"], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert not [w for w in result.warnings if w.kind == Kind.SYNTAX]
    assert result.total == result.max_total


def test_cells_pasted_under_a_cell_magic_typed_above_them_are_graded_as_jupyter_runs_them(
        tmp_path: Path, grader_cache: Path) -> None:
    """`%%time` typed above findZero's cell pasted indented, `%%capture out` above moveLeft's pasted with prompts:
    %%time, %%timeit and %%capture read their body as a cell of its own (IPython's transform_cell), so Jupyter runs
    both. Read as one cell, findZero's body was an "unexpected indent" and was left out: findZero and solve 0
    (14/20; moveLeft's prompts, on the line after the magic, were already taken off). Found by
    tests/test_notebook_variants.py's property."""
    [result] = grade([FAIR / "timed_cells_pasted_indented.ipynb"], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert not [w for w in result.warnings if w.kind == Kind.SYNTAX]
    assert result.total == result.max_total


def test_a_method_added_to_its_class_with_setattr_in_a_later_cell_is_graded(tmp_path: Path, grader_cache: Path) -> None:
    """A right 8-puzzle notebook explains its class a method at a time: h2 is a function of its own cell, added with
    setattr(EightPuzzle, 'h2', ...). That call was dropped (only `EightPuzzle.h2 = ...` counted as changing the
    class), so h2 and h had no method to call (13/18); it changes the class the cases build, and is kept."""
    [result] = grade([FAIR / "h2_added_with_setattr_in_a_later_cell.ipynb"], EIGHT_RUBRIC, tmp_path,
                     cache=grader_cache)
    assert result.exercise("h2").score == result.exercise("h2").max_score
    assert result.total == result.max_total


def test_a_function_written_in_a_markdown_or_raw_cell_is_missing_and_the_feedback_says_where_it_is(
        tmp_path: Path, grader_cache: Path) -> None:
    """A stray M or R key made two move cells text: Jupyter never ran them, so they are not graded, but the student
    sees the code there; "no function named moveDown in the notebook" alone reads as the grader's mistake."""
    [result] = grade([FAIR / "moves_in_markdown_and_raw_cells.ipynb"], SLIDING_RUBRIC, tmp_path,
                     cache=grader_cache)
    for exercise, kind in (("moveDown", "markdown"), ("moveLeft", "raw")):
        graded = result.exercise(exercise)
        assert graded.score == 0
        assert all(f"a {kind} cell, which Jupyter never runs (make it a Code cell)" in c.message
                   for c in graded.cases), [c.message for c in graded.cases]
    assert result.exercise("moveRight").score == result.exercise("moveRight").max_score


def test_a_sequence_is_a_set_only_where_the_rubric_says_so_and_only_without_repeats() -> None:
    from grader import codec
    from grader.checks.registry import CheckContext, equal
    expected = {((0, 1), (2, 3)), ((1, 0), (2, 3))}

    def verdict(got: object, **options: object):
        return equal(CheckContext(expected=codec.encode(expected), got=codec.encode(got), options=options))

    in_a_list = [((1, 0), (2, 3)), ((0, 1), (2, 3))]
    assert not verdict(in_a_list).passed                                  # equal stays type-strict by default
    assert verdict(in_a_list, sequence_as_set=True).passed
    assert verdict(tuple(in_a_list), sequence_as_set=True).passed
    repeated = verdict([*in_a_list, in_a_list[0]], sequence_as_set=True)
    assert not repeated.passed and "more than once" in repeated.message
    assert not verdict(in_a_list[:1], sequence_as_set=True).passed       # a successor missing
    assert not verdict([[[0, 1], [2, 3]], [[1, 0], [2, 3]]], sequence_as_set=True).passed   # lists are not states


def test_a_manhattan_summed_as_a_float_is_the_right_distance(tmp_path: Path, grader_cache: Path) -> None:
    """math.fabs makes the distance a float: A* adds it to a path length as well as an int, so it passes (with a
    note saying so), and a float of a wrong value still fails."""
    [result] = grade([FAIR / "manhattan_as_a_float.ipynb"], RUBRIC, tmp_path, cache=grader_cache)
    manhattan = result.exercise("manhattan")
    assert manhattan.score == manhattan.max_score and manhattan.variant == REFERENCE
    assert all(c.status == "pass" and "the same number, accepted" in c.message for c in manhattan.cases)
    assert manhattan.notes == ("manhattan returns a float (52.0) where the answer is an int (52); accepted: the "
                               "same number",)       # the student reads it, though the exercise earns full marks
    assert result.total == result.max_total


def test_find_numbers_in_another_order_than_the_references_is_right(tmp_path: Path, grader_cache: Path) -> None:
    """The text asks for "the list of all tiles in Pattern that are labeled with a number", in no order (main only
    asks which tiles are in it): the numbered tiles smallest first earn find_numbers' point, as row by row does."""
    [result] = grade([FAIR / "find_numbers_smallest_first.ipynb"], RUBRIC, tmp_path, cache=grader_cache)
    find_numbers = result.exercise("find_numbers")
    assert [c.status for c in find_numbers.cases] == ["pass"] * len(find_numbers.cases)
    assert find_numbers.score == find_numbers.max_score and result.total == result.max_total


def test_debugging_tools_of_modules_the_machine_lacks_leave_graded_code_as_it_runs(tmp_path: Path,
                                                                                 grader_cache: Path) -> None:
    """reconstruct_path decorated with line_profiler's @profile and hole_to_tile returning ic(answer) (icecream's
    ic returns its argument; the n-puzzle template imports icecream): neither module is on the grading machine. The
    stand-ins took the decorated function's place and ic's value: reconstruct_path, hole_to_tile and solve 0
    (11/20, 'got <opaque Inert: <stand-in for line_profiler.profile()()>>'). A stand-in decorator now leaves the
    function as it was and ic passes its argument through; the missing modules are still reported to the TA."""
    [result] = grade([FAIR / "debug_decorator_and_ic_of_missing_modules.ipynb"], N_PUZZLE_RUBRIC, tmp_path,
                     cache=grader_cache)
    assert result.total == result.max_total
    assert {w.subject for w in result.environment if w.kind == Kind.MISSING_MODULE} == {"icecream", "line_profiler"}


def test_a_missing_module_imported_under_try_gets_its_stand_in_as_a_top_level_import_does(
        tmp_path: Path, grader_cache: Path) -> None:
    """`try: import ipycanvas as cnv` / `except ImportError: !pip install ipycanvas; import ipycanvas as cnv`: the
    error left the whole statement, so cnv was unbound and main, which draws its path, failed with NameError
    (27/30), where a top-level `import ipycanvas as cnv` binds an inert stand-in. The module's imports in the
    statement now get it too, and the missing module is reported to the TA as before. Found by
    tests/test_notebook_variants.py's property (the import wrapped in `if __debug__:`)."""
    [result] = grade([FAIR / "missing_module_imported_under_try.ipynb"], RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("main").score == result.exercise("main").max_score
    assert result.total == result.max_total
    assert {w.subject for w in result.environment if w.kind == Kind.MISSING_MODULE} == {"ipycanvas"}


def test_a_class_cell_below_its_subclass_the_student_ran_first_grades_as_the_correct_notebook(
        tmp_path: Path, grader_cache: Path) -> None:
    """The right eight-puzzle notebook with `class Problem` moved below `class EightPuzzle(Problem)` (run in a
    working order, then tidied): the subclass's statement failed at load with NameError: name 'Problem' is not
    defined, and every exercise that builds an EightPuzzle with it (4.5/18). Found by session 18's reorder."""
    [result] = grade([FAIR / "problem_class_below_its_subclass.ipynb"], EIGHT_RUBRIC, tmp_path, cache=grader_cache)
    assert result.total == result.max_total
    assert not [w for w in result.warnings if "NameError" in w.shown]


def test_a_goal_set_as_global_by_a_function_the_notebook_calls_is_the_goal(tmp_path: Path,
                                                                           grader_cache: Path) -> None:
    """A right 3x3 notebook whose goal is set by `def setup(): global goal; goal = ...` and the call `setup()`
    (a script's habit: `def main(): global goal_state ...` then `main()`): Jupyter binds goal, but the call was
    dropped as one of notebook code, so goal was unbound and exercise 1 scored 0 (19/20)."""
    [result] = grade([FAIR / "goal_set_by_a_function_as_global.ipynb"], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.total == result.max_total
    from grader.extract.source import extract
    from grader.intake.notebook import read_notebook
    from grader.rubric.schema import load_rubric
    extracted = extract(read_notebook(FAIR / "goal_set_by_a_function_as_global.ipynb"),
                        load_rubric(SLIDING_RUBRIC).policy)
    [call] = [s for s in extracted.statements if s.code.startswith("setup()")]
    assert call.names == ("Size", "goal") and "set (global)" in call.why


def test_a_path_of_actions_as_a_deque_or_a_tuple_is_the_path(tmp_path: Path, grader_cache: Path) -> None:
    """The n-puzzle's text asks for no type of reconstruct_path's answer, and solve returns what it gives: a deque
    built with appendleft earns both exercises (it lost all 8 points), and a wrong order still fails."""
    [result] = grade([FAIR / "reconstruct_path_as_a_deque.ipynb"], N_PUZZLE_RUBRIC, tmp_path, cache=grader_cache)
    for exercise in ("reconstruct_path", "solve"):
        assert result.exercise(exercise).score == result.exercise(exercise).max_score, exercise
    assert result.total == result.max_total
    from grader.rubric.schema import load_rubric
    reduce = load_rubric(N_PUZZLE_RUBRIC).exercise("reconstruct_path").reduce
    assert reduce is not None
    import collections
    shown = {"deque": collections.deque(["U", "L"]), "tuple": ("U", "L"), "list": ["U", "L"], "text": "UL"}
    assert {name: eval(reduce, {}, {"result": value}) for name, value in shown.items()} == \
        {"deque": ["U", "L"], "tuple": ["U", "L"], "list": ["U", "L"], "text": "UL"}   # a string stays no list


def test_zeropos_as_np_where_gives_it_is_the_row_and_the_column(tmp_path: Path, grader_cache: Path) -> None:
    """zeropos returns np.where(self.state == 0): the row and the column of the hole, each an array of one index,
    which the notebook unpacks and indexes the board with as with two ints (its solve solves every board). The
    reduce's int(array([4])) raised (numpy 2: only 0-dimensional arrays convert), so zeropos lost both points."""
    [result] = grade([FAIR / "zeropos_as_np_where.ipynb"], N_PUZZLE_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("zeropos").score == 2.0, [case.message for case in result.exercise("zeropos").cases]
    assert result.total == result.max_total


def test_a_transposed_zeropos_is_paid_for_once_and_its_callers_feedback_speaks_of_their_own_code(
        tmp_path: Path, grader_cache: Path) -> None:
    """zeropos returns (column, row); available_actions and do_action call it and are right. They lost points too,
    and available_actions was told "These are the moves of the TILE next to the hole", which its code is not: they
    isolate State.zeropos now, so the reference's answers for it when zeropos lost points. solve fails with it, and
    its hints spoke only of its own A*."""
    [result] = grade([FAIR / "zeropos_transposed.ipynb"], N_PUZZLE_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("zeropos").score < 2.0
    for exercise in ("available_actions", "do_action"):
        judged = result.exercise(exercise)
        assert judged.score == judged.max_score and judged.isolated == ("State.zeropos",), \
            [case.message for case in judged.cases]
    # solve runs them all as they are (end to end): its feedback points to their own, not only to A*'s weight.
    solve = result.exercise("solve")
    assert solve.score < solve.max_score and any("see its own feedback first" in note for note in solve.notes)


def test_solve_as_a_string_of_actions_is_no_list_and_the_feedback_says_why(tmp_path: Path, grader_cache: Path) -> None:
    """The n-puzzle's text asks for "the list of hole actions, e.g. ['U', 'L', 'D']" and solve's signature says
    list[str]: a string "ULDR..." is no convention it allows (unlike reconstruct_path, of no stated type). It earns
    nothing, and the feedback says what the text asks for and that the letters do reach the goal; wrong letters are
    not said to."""
    [result] = grade([FAIR / "solve_as_a_string.ipynb"], N_PUZZLE_RUBRIC, tmp_path, cache=grader_cache)
    solve = result.exercise("solve")
    assert solve.score == 0 and all(
        "where the text asks for the list of hole actions" in case.message and "they do reach the goal" in case.message
        for case in solve.cases)
    import importlib.util
    spec = importlib.util.spec_from_file_location("n_puzzle_reference", REPO / "reference" / "n_puzzle.py")
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    board = [[1, 2, 3], [4, 5, 6], [7, 0, 8]]
    verdict = reference.check_solution("R", ["R"], {"board": board}, {})
    assert verdict[0] is False and "the text asks for the list" in verdict[1] and "reach the goal" in verdict[1]
    wrong = reference.check_solution("L", ["R"], {"board": board}, {})
    assert wrong[0] is False and "reach the goal" not in wrong[1]
    assert reference.check_solution(["R"], ["R"], {"board": board}, {})[0] == 1.0


def test_any_number_type_takes_the_value_never_a_bool_or_another_number() -> None:
    import numpy as np
    from grader import codec
    from grader.checks.registry import CheckContext, equal

    def passed(expected: object, got: object, **options: object) -> bool:
        return equal(CheckContext(expected=codec.encode(expected), got=codec.encode(got), options=options)).passed

    assert not passed(52, 52.0)                                        # equal stays type-strict by default
    assert passed(52, 52.0, any_number_type=True) and passed(52, np.float64(52.0), any_number_type=True)
    assert passed(2.5, 2.5, any_number_type=True) and passed(3.0, 3, any_number_type=True)
    assert not passed(52, 53.0, any_number_type=True) and not passed(1, True, any_number_type=True)
    assert not passed(52, "52", any_number_type=True) and not passed(52, None, any_number_type=True)
    # A student's number is compared by value, never through a float it may not fit in or round to.
    assert not passed(2.5, 10**400, any_number_type=True) and not passed(2**53 + 1, 2.0**53, any_number_type=True)
    assert passed(2.5, 3, tolerance=0.5, any_number_type=True) and not passed(2.5, 10**400, tolerance=1.0,
                                                                               any_number_type=True)


def test_a_spelling_note_shows_no_value_of_a_hidden_case() -> None:
    """The note on a float where an int is asked for quotes a public case's numbers; from a hidden case alone it
    says the types only: with a tolerance the two differ, and the note would tell the hidden expected value."""
    from grader.judge.conventions import spelling_notes
    from grader.store.results import CaseResult

    def case(id: str, visibility: str, got: object) -> CaseResult:
        return CaseResult(id=id, status="pass", visibility=visibility, message="", got=got)

    hidden, public = case("h", "hidden", 52.3), case("p", "public", 7.0)
    assert spelling_notes([hidden], {"h": 52}, "manhattan") == (
        "manhattan returns a float where the answer is an int; accepted: the same number",)
    assert spelling_notes([hidden, public], {"h": 52, "p": 7}, "manhattan") == (
        "manhattan returns a float (7.0) where the answer is an int (7); accepted: the same number",)


def test_other_spellings_stay_strict_where_python_tells_them_apart() -> None:
    import numpy as np
    from grader import codec
    from grader.checks.registry import as_expected

    def same(expected: object, got: object) -> bool:
        wire_expected, wire_got = codec.encode(expected), codec.encode(got)
        return codec.same(wire_expected, as_expected(wire_expected, wire_got)) is None

    assert same((2, 3), (np.int64(2), np.int64(3))) and same([1.5], [np.float64(1.5)]) and same(True, np.bool_(True))
    assert same({(1, 2)}, frozenset({(1, 2)})) and same([{1}], [frozenset({1})])
    assert not same(1, np.bool_(True)) and not same(True, np.int64(1)) and not same(2, np.float64(2.0))
    assert not same((2, 3), [2, 3]) and not same(frozenset({1}), {1}) and not same((2, 3), (np.int64(2), 4))


def test_a_jupytext_percent_script_of_a_right_notebook_runs_its_commented_magics(
        tmp_path: Path, grader_cache: Path) -> None:
    """jupytext's percent format writes `%run Breadth-First-Fast.ipynb` as `# %run ...` and a %%time cell's first
    line as `# %%time`, and Jupyter reads them back as magics. Read as comments, search was undefined and solve
    scored 0 (16/20); read as jupytext reads them, the script grades as its notebook does."""
    script = FAIR / "jupytext_percent_with_commented_magics.py"
    text = script.read_text()
    assert "#   jupytext:" in text and "\n# %run Breadth-First-Fast.ipynb\n" in text and "\n# %%time\n" in text
    [result] = grade([script], SLIDING_RUBRIC, tmp_path, cache=grader_cache)
    assert result.exercise("solve").score == result.exercise("solve").max_score
    assert result.total == result.max_total


def test_only_a_jupytext_script_has_its_commented_magics_read_as_magics() -> None:
    """In a plain script or a VS Code `# %%` file a `# %run` line is the author's comment: it ran nothing for them."""
    from grader.intake.notebook import notebook_from_source
    body = "# %%\n# %run helpers.ipynb\nx = 1\n# %%\n# %%time\ny = 2\n"
    vscode = notebook_from_source(body)
    assert [c.source for c in vscode.cells if c.kind == "code"] == ["# %run helpers.ipynb\nx = 1", "", "y = 2"]
    header = "# ---\n# jupyter:\n#   jupytext:\n#     formats: ipynb,py:percent\n# ---\n\n"
    jupytext = notebook_from_source(header + body)
    assert [c.source for c in jupytext.cells if c.kind == "code"] == ["%run helpers.ipynb\nx = 1", "%%time\ny = 2"]
    assert notebook_from_source("# %run helpers.ipynb\nx = 1\n").cells[0].source == "# %run helpers.ipynb\nx = 1\n"


def test_a_graded_name_spelt_otherwise_is_pointed_at(tmp_path: Path, grader_cache: Path) -> None:
    """'no function named findZero' beside the student's own `def find_zero` does not say which of their names the
    grader looked past (session 19: a 15-puzzle `def idastar` for `ida_star`): the missing case names it, where it
    is, and the name to give it. A name far from the graded one, or one another exercise grades, is not offered."""
    text = (REPO / "assignments" / "sliding-3x3" / "submissions" / "correct.ipynb").read_text(encoding="utf-8")
    renamed = text.replace("def findZero(", "def find_zero(").replace("def moveLeft(", "def slideLeft(")
    assert renamed.count("def find_zero(") == renamed.count("def slideLeft(") == 1
    notebook = tmp_path / "renamed.ipynb"
    notebook.write_text(renamed, encoding="utf-8")
    [result] = grade([notebook], SLIDING_RUBRIC, tmp_path / "out", cache=grader_cache)
    find_zero = result.exercise("findZero").cases
    assert all(c.status == "missing" and "; the notebook defines find_zero (cell " in c.message
               and "): name it findZero, as the assignment calls it" in c.message for c in find_zero), find_zero
    assert all(c.message == "no function named moveLeft in the notebook" for c in result.exercise("moveLeft").cases)
