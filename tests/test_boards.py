"""Puzzle states recognised in decoded values and drawn as boards, with the cells that differ marked."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grader.report import boards, boards_html
from grader import codec

START = (("14", "0", "8", "12"), ("10", "11", "13", "9"), ("6", "2", "4", "15"), ("3", "5", "7", "1"))
# move_dir(Start, 0, 0, 1, 0) by the transposed mistake: rows and columns swapped.
TRANSPOSED = (("10", "14", "8", "12"), ("0", "11", "13", "9"), ("6", "2", "4", "15"), ("3", "5", "7", "1"))
EXPECTED = (("14", "0", "8", "12"), ("10", "11", "13", "9"), ("6", "2", "4", "15"), ("3", "5", "7", "1"))
THREE = ((8, 0, 6), (5, 4, 7), (2, 3, 1))


def wire(value: object) -> codec.Wire:
    return codec.encode(value)


# ---------------------------------------------------------------------------------------------- recognition


@pytest.mark.parametrize("value, rows", [
    (START, START),
    ([list(row) for row in THREE], THREE),
    ((1, 4, 2, 0, 7, 5, 3, 6, 8), ((1, 4, 2), (0, 7, 5), (3, 6, 8))),          # AIMA's flat 8-puzzle
    ((("*", "14", "*", "*"), ("0", "*", "*", "*"), ("*", "*", "*", "15"), ("*", "*", "*", "*")),
     (("*", "14", "*", "*"), ("0", "*", "*", "*"), ("*", "*", "*", "15"), ("*", "*", "*", "*"))),  # wildcards
], ids=["string-tiles", "list-of-lists", "flat-tuple", "wildcard-pattern"])
def test_states_of_every_bundled_kind_are_boards(value: object, rows: tuple) -> None:
    picture = boards.picture(wire(value))
    assert picture.kind == "board"
    assert picture.boards == (rows,)


def test_a_two_dimensional_numpy_array_is_a_board() -> None:
    picture = boards.picture(wire(np.array([[1, 2, 3], [4, 0, 5], [6, 7, 8]])))
    assert picture.kind == "board"
    assert picture.boards[0][1] == (4, 0, 5)
    assert boards.as_board(codec.decode(wire(np.arange(9).reshape(3, 3)))) is not None


@pytest.mark.parametrize("value", [
    [(0, 1), (1, 0), (0, -1), (1, 0)],          # extract_move_list's moves: two blanks, a negative tile
    [(0, 1), (1, 0)],                           # two moves look 2x2, but hold two blanks
    (0, 1), ["14", "15"], ["D", "L", "R", "U"], 17, None, "0123",
    ((1, 2, 3), (4, 5, 6), (7, 8, 9)),          # no blank
    ((0, 1), (1, 0, 2)),                        # ragged rows
    np.arange(27).reshape(3, 3, 3),             # three dimensions
    [tuple(range(i * 40, i * 40 + 40)) for i in range(40)],   # a 40x40 matrix is data, not a puzzle
], ids=["moves", "two-moves", "pair", "tile-names", "actions", "int", "none", "string", "no-blank", "ragged",
        "3d-array", "huge"])
def test_values_that_are_not_puzzle_states_are_described_instead(value: object) -> None:
    picture = boards.picture(wire(value))
    assert picture.kind == "value"
    assert picture.text == codec.describe(wire(value), boards.DESCRIBE_CHARS)


def test_a_list_of_states_is_a_sequence_and_a_set_of_states_keeps_the_wire_order() -> None:
    path = [THREE, ((0, 8, 6), (5, 4, 7), (2, 3, 1))]
    assert boards.picture(wire(path)).kind == "sequence"
    successors = {((0, 8, 6), (5, 4, 7), (2, 3, 1)), ((8, 4, 6), (5, 0, 7), (2, 3, 1)),
                  ((8, 6, 0), (5, 4, 7), (2, 3, 1))}
    encoded = wire(successors)
    picture = boards.picture(encoded)
    assert picture.kind == "set"
    # The wire sorts set elements canonically; a decoded set's order would change with the hash seed.
    assert picture.boards == tuple(codec.decode(item) for item in encoded["set"])


# ---------------------------------------------------------------------------------------------- diff_cells


def test_diff_cells_marks_the_cells_the_transposed_move_changed() -> None:
    assert boards.diff_cells(EXPECTED, TRANSPOSED) == {(0, 0), (0, 1), (1, 0)}
    assert boards.diff_cells(EXPECTED, EXPECTED) == set()


def test_diff_cells_tells_the_string_blank_from_the_int_blank() -> None:
    got = (("14", 0, "8", "12"),) + EXPECTED[1:]
    assert boards.diff_cells(EXPECTED, got) == {(0, 1)}


def test_diff_cells_compares_any_board_form_and_counts_cells_only_one_side_has() -> None:
    assert boards.diff_cells((1, 2, 3, 0), [[1, 2], [0, 3]]) == {(1, 0), (1, 1)}
    assert boards.diff_cells(THREE, ((8, 0), (5, 4))) == {(0, 2), (1, 2), (2, 0), (2, 1), (2, 2)}


def test_diff_cells_refuses_values_that_are_not_board_shaped() -> None:
    with pytest.raises(ValueError):
        boards.diff_cells(THREE, None)


# ---------------------------------------------------------------------------------------------- compare


def test_an_answer_without_a_blank_is_still_drawn_beside_the_expected_board() -> None:
    got = ((8, 6, 6), (5, 4, 7), (2, 3, 1))       # moveLeft that copied the tile and kept no blank
    comparison = boards.compare(wire(((8, 6, 0), (5, 4, 7), (2, 3, 1))), wire(got))
    assert (comparison.expected.kind, comparison.got.kind) == ("board", "board")
    assert comparison.got_boards[0].marks == {(0, 2)}


def test_a_set_comparison_flags_the_unexpected_state_and_marks_it_against_the_nearest_expected_one() -> None:
    expected = {((0, 8, 6), (5, 4, 7), (2, 3, 1)), ((8, 4, 6), (5, 0, 7), (2, 3, 1)), ((8, 6, 0), (5, 4, 7), (2, 3, 1))}
    wrapped = ((8, 3, 6), (5, 4, 7), (2, 0, 1))   # moveDown from row 0 read S[-1]: the last row
    comparison = boards.compare(wire(expected), wire(expected | {wrapped}))
    flagged = [d for d in comparison.got_boards if d.flag]
    assert [(d.board, d.flag) for d in flagged] == [(wrapped, "unexpected")]
    # Every expected state differs from it in three cells (ties go to the first): its blank square among them.
    assert len(flagged[0].marks) == 3 and (2, 1) in flagged[0].marks
    assert not any(d.flag for d in comparison.expected_boards)


def test_paths_are_compared_state_by_state_and_extra_states_flagged() -> None:
    expected = [THREE, ((0, 8, 6), (5, 4, 7), (2, 3, 1))]
    got = [THREE, ((8, 4, 6), (5, 0, 7), (2, 3, 1)), THREE]
    comparison = boards.compare(wire(expected), wire(got))
    assert [d.marks for d in comparison.got_boards][:2] == [frozenset(), frozenset({(0, 0), (0, 1), (1, 1)})]
    assert comparison.got_boards[2].flag == "extra"


def test_containers_are_named_when_the_tiles_agree_but_the_types_do_not() -> None:
    comparison = boards.compare(wire(THREE), wire(tuple(list(row) for row in THREE)))
    assert not comparison.marked
    assert comparison.names() == ("expected (tuple of tuples)", "got (tuple of lists)")


# ---------------------------------------------------------------------------------------------- text


def test_text_comparison_draws_two_boxed_boards_with_the_differing_cells_in_brackets() -> None:
    text = boards.text_comparison(wire(EXPECTED), wire(TRANSPOSED))
    lines = text.splitlines()
    assert lines[0].split() == ["expected", "got"]
    assert lines[1].count("┌") == 2 and lines[1].count("┐") == 2
    # Row 0: expected 14 and the blank (empty) marked; got 10 and 14 marked; 8 and 12 unmarked on both sides.
    assert "│[14]│[  ]│  8 │ 12 │" in lines[2] and "│[10]│[14]│  8 │ 12 │" in lines[2]
    assert "│[10]│ 11 │ 13 │  9 │" in lines[4] and "│[  ]│ 11 │ 13 │  9 │" in lines[4]
    assert lines[-1] == boards.TEXT_LEGEND


def test_text_shows_the_type_of_a_blank_that_differs_only_in_type() -> None:
    got = (("14", 0, "8", "12"),) + EXPECTED[1:]
    text = boards.text_comparison(wire(EXPECTED), wire(got))
    assert "['0']" in text and "[ 0]" in text


def test_a_long_path_is_cut_with_a_count_of_the_states_left_out() -> None:
    states = [tuple(tuple((r * 3 + c + shift) % 9 for c in range(3)) for r in range(3)) for shift in range(20)]
    text = boards.text_comparison(wire(states), wire(None), path=True)
    assert "expected: a path of 20 states" in text
    assert f"... {20 - boards.MAX_STATES} more" in text
    assert "got: None" in text


def test_a_list_of_states_is_called_a_path_only_when_the_case_says_its_check_judges_one() -> None:
    # intermediate_goals returns [Goal1, Goal2]: two goals, not a path of moves between them.
    goal1 = (("*",) * 4,) * 3 + (("*", "*", "14", "15"),)
    goal2 = (("*",) * 4,) * 3 + (("12", "13", "14", "15"),)
    wrong = (("*",) * 4,) * 3 + (("13", "12", "14", "15"),)
    text = boards.text_comparison(wire([goal1, goal2]), wire([goal1, wrong]))
    assert "path" not in text
    assert "expected: a list of 2 states" in text and "got: a list of 2 states" in text
    assert "[0]" in text and "[1]" in text                       # indexed as the student would index it
    assert "a tuple of 2 states" in boards.text_comparison(wire((goal1, goal2)), wire((goal1, wrong)))
    html = str(boards_html.html_comparison(wire([goal1, goal2]), wire([goal1, wrong])))
    assert "path" not in html and "a list of 2 states" in html and "→" not in html
    as_path = boards.text_comparison(wire([goal1, goal2]), wire([goal1, wrong]), path=True)
    assert "expected: a path of 2 states" in as_path
    html_path = str(boards_html.html_comparison(wire([goal1, goal2]), wire([goal1, wrong]), path=True))
    assert "a path of 2 states" in html_path and "→" in html_path


def test_values_that_are_not_boards_are_shown_as_their_description() -> None:
    assert boards.text_comparison(wire(44), wire(48)) == "expected: 44\ngot: 48"


# ---------------------------------------------------------------------------------------------- HTML


def test_html_comparison_highlights_the_differing_cells_of_both_boards() -> None:
    html = str(boards_html.html_comparison(wire(EXPECTED), wire(TRANSPOSED)))
    assert html.count('<table class="board" data-role="expected">') == 1
    assert html.count('<table class="board" data-role="got">') == 1
    assert len(re.findall(r'<td class="tile[^"]*\bdiff"', html)) == 6       # three cells on each side
    assert html.count('class="tile blank') == 2                    # one blank per board
    assert "legend" in html


def test_html_escapes_tiles_and_values() -> None:
    board = (("<b>", "0"), ("&", "x"))
    html = str(boards_html.html_comparison(wire(board), wire("<script>alert(1)</script>")))
    assert "<b>" not in html and "&lt;b&gt;" in html and "&amp;" in html
    assert "<script>" not in html


def test_a_pattern_without_its_blank_is_a_board_and_every_state_of_a_path_input_is_drawn() -> None:
    goal1 = (("*",) * 4,) * 3 + (("*", "*", "14", "15"),)
    goal2 = (("*",) * 4,) * 3 + (("12", "13", "14", "15"),)
    assert boards.picture(wire(goal1)).kind == "board"
    assert boards.picture(wire(((1, 2), (3, 4)))).kind == "value"     # no blank and no wildcard: data
    text = boards.text_input("Patterns", wire([goal1, goal2]))
    assert "Patterns[0]" in text and "Patterns[1]" in text and "│ 12 │" in text and "..." not in text
    page = str(boards_html.html_input("Patterns", wire([goal1, goal2])))
    assert "Patterns[0]" in page and "Patterns[1]" in page
    long_list = list(range(300))                                      # course data is shown whole, not cut
    assert boards.text_input("Numbers", wire(long_list)).endswith("299]")
