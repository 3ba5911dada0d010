"""Reading submissions: seed notebooks, old formats, script exports, and files that cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.intake.notebook import Cell, NotebookError, notebook_from_source, read_notebook

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = FIXTURES / "seeds"
OWN = FIXTURES / "notebooks"

# (seed, code cells, markdown cells) from the seeds' README.
SEED_CELL_COUNTS = [
    ("000_5a034f3040ca5b29", 50, 31),
    ("001_41f7c61cc2742148", 42, 32),
    ("002_f30b892f30367653", 32, 15),
    ("003_e8760ccd72881298", 11, 2),
    ("004_6265c78a6fd907d9", 11, 8),
]


@pytest.mark.parametrize(("seed", "code", "markdown"), SEED_CELL_COUNTS)
def test_seed_notebooks_read_with_all_their_cells(seed: str, code: int, markdown: int) -> None:
    nb = read_notebook(SEEDS / f"{seed}.ipynb")
    kinds = [cell.kind for cell in nb.cells]
    assert (kinds.count("code"), kinds.count("markdown")) == (code, markdown)
    assert [cell.index for cell in nb.cells] == list(range(len(nb.cells)))
    assert nb.warnings == ()


def test_cell_source_is_text_when_the_json_stores_a_list_of_lines() -> None:
    raw = json.loads((SEEDS / "000_5a034f3040ca5b29.ipynb").read_text(encoding="utf-8"))
    assert isinstance(raw["cells"][0]["source"], list)
    nb = read_notebook(SEEDS / "000_5a034f3040ca5b29.ipynb")
    assert all(isinstance(cell.source, str) for cell in nb.cells)
    assert nb.cells[0].source == "".join(raw["cells"][0]["source"])
    assert nb.cells[0].source.splitlines()[1] == "with open('../../Python/style.css') as f:"


def test_execution_counts_come_from_the_prompts() -> None:
    executed = read_notebook(SEEDS / "000_5a034f3040ca5b29.ipynb")
    assert executed.cells[0].execution_count == 26
    assert executed.cells[0].label == "In [26] (cell 1)"
    template = read_notebook(SEEDS / "001_41f7c61cc2742148.ipynb")
    code = [cell for cell in template.cells if cell.kind == "code"]
    assert all(cell.execution_count is None for cell in code)
    assert code[0].label == "cell 1"


def test_label_names_prompt_and_one_based_cell_number() -> None:
    assert Cell(56, "code", "x = 1", 107).label == "In [107] (cell 57)"
    assert Cell(56, "code", "x = 1", None).label == "cell 57"


def test_read_notebook_accepts_a_str_path_and_keeps_it() -> None:
    path = str(SEEDS / "003_e8760ccd72881298.ipynb")
    assert read_notebook(path).path == path


def test_v3_notebook_is_upgraded_and_read() -> None:
    nb = read_notebook(OWN / "v3.ipynb")
    assert [cell.kind for cell in nb.cells] == ["markdown", "markdown", "code", "code"]
    assert nb.cells[0].source.startswith("# Old notebook")  # a v3 heading cell becomes markdown
    assert nb.cells[2].source == "def area(w, h):\n    return w * h"
    assert [cell.execution_count for cell in nb.cells] == [None, None, 4, 5]
    assert nb.warnings == ()


def test_schema_problem_is_a_warning_when_cells_are_readable() -> None:
    nb = read_notebook(OWN / "invalid_schema.ipynb")
    assert [cell.source for cell in nb.cells] == ["VALUE = 1", "def f():\n    return VALUE"]
    assert nb.cells[0].execution_count is None  # "one" is not a count
    assert nb.cells[1].execution_count == 2
    assert len(nb.warnings) == 1
    assert "does not validate" in nb.warnings[0] and "'one'" in nb.warnings[0]


def test_notebook_without_version_is_read_as_v4_with_a_warning() -> None:
    nb = read_notebook(OWN / "no_version.ipynb")
    assert [cell.source for cell in nb.cells] == ["A = 1"]
    assert any("no nbformat version" in warning for warning in nb.warnings)


def test_invalid_json_error_names_the_file_and_the_json_line() -> None:
    path = OWN / "invalid_json.ipynb"
    with pytest.raises(NotebookError) as caught:
        read_notebook(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: not valid JSON")
    assert "line 4" in message
    assert caught.value.path == str(path)
    assert message == f"{caught.value.path}: {caught.value.reason}"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("not_utf8.ipynb", "not UTF-8 text (byte 0xe9 at offset 40)"),
        ("empty.ipynb", "empty file"),
        ("not_a_notebook.ipynb", "not a Jupyter notebook (no cells)"),
        ("future_version.ipynb", "unsupported nbformat version 5"),
        ("missing.ipynb", "file not found"),
        ("submission.docx", "unsupported file type '.docx' (expected .ipynb or .py)"),
    ],
)
def test_unreadable_file_raises_error_naming_the_file(name: str, reason: str) -> None:
    path = OWN / name
    with pytest.raises(NotebookError) as caught:
        read_notebook(path)
    assert str(caught.value) == f"{path}: {reason}"
    assert caught.value.reason == reason


def test_directory_is_not_read_as_a_notebook(tmp_path: Path) -> None:
    folder = tmp_path / "looks_like.ipynb"
    folder.mkdir()
    with pytest.raises(NotebookError, match="is a directory"):
        read_notebook(folder)


def test_percent_script_is_split_on_cell_markers() -> None:
    nb = read_notebook(OWN / "percent_script.py")
    assert [cell.kind for cell in nb.cells] == ["markdown", "code", "code", "code"]
    assert nb.cells[1].source == "import math"
    assert nb.cells[2].source == "def hypot(a, b):\n    return math.sqrt(a * a + b * b)"
    assert nb.cells[3].source == "hypot(3, 4)"
    assert all(cell.execution_count is None for cell in nb.cells)


def test_nbconvert_script_takes_execution_counts_from_in_markers() -> None:
    nb = read_notebook(OWN / "nbconvert_script.py")
    assert [cell.execution_count for cell in nb.cells] == [3, None, 12]
    assert nb.cells[0].source == "def double(x):\n    return 2 * x"  # the blank lines of the export are gone
    assert nb.cells[0].label == "In [3] (cell 1)"
    assert nb.cells[1].source == "TWICE = double(21)\nprint(TWICE)"


def test_script_without_markers_is_one_code_cell_with_the_files_line_numbers() -> None:
    path = OWN / "plain_script.py"
    nb = read_notebook(path)
    assert len(nb.cells) == 1
    assert nb.cells[0].kind == "code"
    assert nb.cells[0].source == path.read_text(encoding="utf-8")


def test_notebook_from_source_splits_text_and_names_it() -> None:
    nb = notebook_from_source("# %%\nx = 1\n# %%\n\ny = 2\n")
    assert nb.path == "<string>"
    assert [cell.source for cell in nb.cells] == ["x = 1", "y = 2"]
    code_before_first_marker = notebook_from_source("z = 0\n# %%\nx = 1\n", "s.py")
    assert [cell.source for cell in code_before_first_marker.cells] == ["z = 0", "x = 1"]
