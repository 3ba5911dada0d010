"""Rubric features every assignment can use: graded methods and constants, reduce, numpy data, misconfigurations."""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grader.authoring.validate import validate
from grader.judge.grading import grade_path, support_sources
from grader.plan.cases import build_plan
from grader.rubric.schema import RubricError, load_rubric

REFERENCE = '''
import numpy as np

Board = [[1, 0], [3, 2]]
Grid = np.array([[1, 2], [3, 0]])
goal = ((1, 2), (3, 0))


class Puzzle:
    def __init__(self, board):
        self.board = [list(row) for row in board]

    def blank(self):
        for r, row in enumerate(self.board):
            for c, tile in enumerate(row):
                if tile == 0:
                    return (r, c)

    def tiles(self):
        return [t for row in self.board for t in row if t]


def blank_transposed(self):
    """A wrong method is swapped into the class while the call runs: it must not call the method it replaces."""
    for r, row in enumerate(self.board):
        for c, tile in enumerate(row):
            if tile == 0:
                return (c, r)


def total(grid):
    return int(grid.sum())
'''

RUBRIC = '''
assignment: lang
reference: ref.py
fixtures: [Board, Grid]
exercises:
  - id: blank
    function: Puzzle.blank
    mistakes:
      - {reference: blank_transposed, say: "rows and columns swapped"}
    cases:
      - call: Puzzle(Board).blank()
  - id: tiles
    function: Puzzle.tiles
    reduce: sorted(result)
    cases:
      - call: Puzzle(Board).tiles()
  - id: goal
    cases:
      - call: goal
  - id: total
    cases:
      - call: total(Grid)
'''


def write(tmp_path: Path, cells: list[str], rubric: str = RUBRIC) -> tuple[Path, Path]:
    (tmp_path / "ref.py").write_text(textwrap.dedent(REFERENCE))
    (tmp_path / "rubric.yaml").write_text(textwrap.dedent(rubric))
    notebook = tmp_path / "student.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), notebook)
    return tmp_path / "rubric.yaml", notebook


def grade(rubric: Path, notebook: Path, tmp_path: Path):
    plan = build_plan(load_rubric(rubric), tmp_path / "cache")
    return grade_path(notebook, plan, support_sources(plan))


CORRECT_CLASS = ("class Puzzle:\n    def __init__(self, board):\n        self.board = board\n"
                 "    def blank(self):\n        for r in range(len(self.board)):\n"
                 "            for c in range(len(self.board)):\n                if self.board[r][c] == 0:\n"
                 "                    return r, c\n"
                 "    def tiles(self):\n        return sorted(t for row in self.board for t in row if t != 0)[::-1]\n")


def test_graded_methods_constants_and_numpy_data_pass_when_right(tmp_path: Path) -> None:
    rubric, notebook = write(tmp_path, ["import numpy as np", CORRECT_CLASS, "goal = ((1, 2), (3, 0))",
                                        "def total(grid):\n    assert isinstance(grid, np.ndarray)\n"
                                        "    return int(grid.sum())"])
    result = grade(rubric, notebook, tmp_path)
    assert {e.id: e.score for e in result.exercises} == {"blank": 1, "tiles": 1, "goal": 1, "total": 1}
    assert result.exercise("blank").location.endswith("line 4")   # the method's own line


def test_a_method_left_as_the_stub_is_missing_and_a_mistaken_method_is_recognised(tmp_path: Path) -> None:
    stubbed = ("class Puzzle:\n    def __init__(self, board):\n        self.board = board\n"
               "    def blank(self):\n        \"your code here\"\n")
    rubric, notebook = write(tmp_path, [stubbed, "goal = None"])
    result = grade(rubric, notebook, tmp_path)
    blank = result.exercise("blank").cases[0]
    assert blank.status == "missing" and "Puzzle.blank is still the template's stub" in blank.message
    tiles = result.exercise("tiles").cases[0]
    assert tiles.status == "missing" and "class Puzzle" in tiles.message and "has no method tiles" in tiles.message
    goal = result.exercise("goal").cases[0]
    assert goal.status == "missing" and "still the template's stub" in goal.message

    transposed = CORRECT_CLASS.replace("return r, c", "return c, r")
    rubric, notebook = write(tmp_path, [transposed])
    result = grade(rubric, notebook, tmp_path)
    assert "rows and columns swapped" in result.exercise("blank").cases[0].message


def test_an_error_while_reducing_the_answer_says_so(tmp_path: Path) -> None:
    broken = CORRECT_CLASS.replace("return sorted(t for row in self.board for t in row if t != 0)[::-1]",
                                   "return 5")
    rubric, notebook = write(tmp_path, [broken])
    case = grade(rubric, notebook, tmp_path).exercise("tiles").cases[0]
    assert case.status == "error"
    assert case.message.startswith("while turning the answer into data (reduce)")
    assert "'int' object is not iterable" in case.message


def test_a_fixture_named_like_the_graded_constant_is_a_rubric_error(tmp_path: Path) -> None:
    rubric, _ = write(tmp_path, [], RUBRIC.replace("fixtures: [Board, Grid]", "fixtures: [Board, Grid, goal]"))
    with pytest.raises(RubricError, match="fixture 'goal' has the name of what the exercise grades"):
        build_plan(load_rubric(rubric))


def test_validate_accepts_a_rubric_of_methods_and_constants(tmp_path: Path) -> None:
    rubric, _ = write(tmp_path, [])
    template = tmp_path / "template.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(
        "class Puzzle:\n    def __init__(self, board):\n        self.board = board\n    def blank(self):\n"
        "        pass\n    def tiles(self):\n        ...\n"), new_code_cell("goal = None"),
        new_code_cell("def total(grid):\n    'your code here'")]), template)
    rubric.write_text(rubric.read_text().replace("reference: ref.py", "reference: ref.py\ntemplate: template.ipynb"))
    validation = validate(rubric, cache=tmp_path / "cache", mutants=1)
    assert validation.ok, validation.problems
