"""Reading submissions: seed notebooks, old formats, script exports, and files that cannot be read."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.intake.notebook import Cell, NotebookError, notebook_from_source, read_notebook
from grader.intake.warning import Kind
from testclock import within

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
    assert "does not validate" in nb.warnings[0].text and "'one'" in nb.warnings[0].text
    assert nb.warnings[0].kind == Kind.NOTEBOOK and nb.warnings[0].subject == "schema"


def test_notebook_without_version_is_read_as_v4_with_a_warning() -> None:
    nb = read_notebook(OWN / "no_version.ipynb")
    assert [cell.source for cell in nb.cells] == ["A = 1"]
    assert any("no nbformat version" in warning.text for warning in nb.warnings)


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


def test_a_utf16_script_with_its_byte_order_mark_reads_as_its_utf8_copy(tmp_path: Path) -> None:
    """Windows PowerShell's `>` (nbconvert --stdout > lab.py) and Notepad's "Unicode" write UTF-16 with a byte order
    mark, which every editor a TA uses reads: it was refused as "not UTF-8 text (byte 0xff at offset 0)"."""
    script = FIXTURES / "fair" / "script_export_with_run_and_time_magics.py"
    text = script.read_text(encoding="utf-8")
    expected = read_notebook(script).cells
    for encoding in ("utf-16", "utf-16-be"):
        copy = tmp_path / f"{encoding}.py"
        bom = codecs.BOM_UTF16_BE if encoding == "utf-16-be" else b""   # "utf-16" writes its own (native) BOM
        copy.write_bytes(bom + text.encode(encoding))
        assert read_notebook(copy).cells == expected
    broken = tmp_path / "broken.py"
    broken.write_bytes(codecs.BOM_UTF16_LE + "x = 1\n".encode("utf-16-le") + b"\x00\xd8")  # a lone surrogate
    with pytest.raises(NotebookError, match="not UTF-16 text"):
        read_notebook(broken)


def test_a_script_in_the_encoding_its_coding_line_names_reads_as_that_text(tmp_path: Path) -> None:
    """A script may say its encoding in its first two lines (PEP 263: `# -*- coding: latin-1 -*-`): Python runs it
    and Spyder and every editor open it so. A right Latin-1 script with an umlaut in a comment was refused as "not
    UTF-8 text" and graded 0. Without a coding line such bytes stay unreadable (Python refuses them too)."""
    body = (FIXTURES / "fair" / "spyder_script_exec_open_support.py").read_text(encoding="utf-8")
    for encoding, line in (("latin-1", "# -*- coding: latin-1 -*-"), ("cp1252", "# vim: set fileencoding=cp1252 :")):
        text = f"#!/usr/bin/env python3\n{line}\n# Lösung: Schiebepuzzle, Übung 6\n{body}"
        script = tmp_path / f"{encoding}.py"
        script.write_bytes(text.encode(encoding))
        assert read_notebook(script).cells == notebook_from_source(text, str(script)).cells
    bare = tmp_path / "bare.py"
    bare.write_bytes("# Lösung\nx = 1\n".encode("latin-1"))
    with pytest.raises(NotebookError, match=r"not UTF-8 text \(byte 0xf6 at offset 3\)"):
        read_notebook(bare)
    wrong = tmp_path / "wrong.py"
    wrong.write_bytes("# coding: ascii\n# Lösung\n".encode("latin-1"))
    with pytest.raises(NotebookError, match=r"not ascii text, as its coding line says \(byte 0xf6"):
        read_notebook(wrong)
    unknown = tmp_path / "unknown.py"
    unknown.write_bytes("# coding: no-such-codec\n# Lösung\nx = 1\n".encode("utf-8"))
    assert "Lösung" in read_notebook(unknown).cells[0].source


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


# ---------------------------------------------------------------- v4 structure, checked without nbformat

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                  max_size=3), max_leaves=6)
_CELL_FIELDS = ["cell_type", "source", "execution_count", "outputs", "id", "metadata", "attachments", "unknown"]
_OUTPUT_FIELDS = ["output_type", "name", "text", "data", "metadata", "execution_count", "ename", "evalue",
                  "traceback", "unknown"]


def _base_notebook() -> dict:
    """A valid v4.5 notebook with every kind of cell and output."""
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3",
                                                                             "display_name": "Python 3"}},
            "cells": [{"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Title\n", "text"]},
                      {"cell_type": "raw", "id": "r1", "metadata": {}, "source": "raw"},
                      {"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1", "execution_count": 3,
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
                                   {"output_type": "execute_result", "execution_count": 3, "metadata": {},
                                    "data": {"text/plain": ["1"], "application/json": {"a": [1]}}},
                                   {"output_type": "display_data", "metadata": {}, "data": {"text/html": "<b/>"}},
                                   {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}]}]}


def _nbformat_problem(notebook: dict) -> bool:
    import warnings

    import nbformat
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nbformat.validate(nbformat.from_dict(notebook))
        except Exception:   # a ValidationError, or nbformat's own crash on odd cells (its reader caught both)
            return True
    return False


def test_the_base_notebook_is_valid_for_both_checks() -> None:
    from grader.intake.v4check import first_problem
    assert first_problem(_base_notebook()) is None and not _nbformat_problem(_base_notebook())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_our_v4_check_finds_a_problem_exactly_when_nbformat_does(data: st.DataObject) -> None:
    """A valid notebook with one structural field of a cell or an output replaced, removed or added."""
    from grader.intake.v4check import first_problem
    notebook = _base_notebook()
    cell = data.draw(st.sampled_from(notebook["cells"]))
    target = cell
    fields = _CELL_FIELDS
    if cell["cell_type"] == "code" and data.draw(st.booleans()):
        target, fields = data.draw(st.sampled_from(cell["outputs"])), _OUTPUT_FIELDS
    field = data.draw(st.sampled_from(fields))
    if data.draw(st.booleans()) and field in target:
        del target[field]
    else:
        value = data.draw(_JSON)
        if field == "metadata" and isinstance(value, dict):
            value = []           # metadata sub-schemas (tags, kernelspec, ...) are not ours to check
        if field == "id" and isinstance(value, str):
            value = data.draw(st.sampled_from([value, "ok-id_1", "", "has space", "x" * 65]))
        target[field] = value
    if field == "id" and "id" not in target:
        return                   # nbformat 4.5 adds a missing id (with a warning); we read the cell without one
    assert (first_problem(notebook) is not None) == _nbformat_problem(notebook), notebook


def test_a_schema_problem_names_the_cell_and_the_field() -> None:
    from grader.intake.v4check import first_problem
    notebook = _base_notebook()
    notebook["cells"][2]["outputs"][0]["text"] = 5
    assert first_problem(notebook) == "cell 3: output 1: text 5 is not text or a list of text"
    notebook = _base_notebook()
    notebook["cells"][1]["surprise"] = 1
    assert first_problem(notebook) == "cell 2: unexpected key 'surprise' in a raw cell"


def test_grading_reads_notebooks_without_importing_nbformat(tmp_path: Path) -> None:
    """`grader grade` of a v4 notebook never imports nbformat, jsonschema, jinja2, nbconvert, numpy, dask or nh3
    (rich draws the terminal's progress bar and table, so it stays), nor validation, mutation testing or the kit."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    script = (
        "import sys\n"
        "from grader.cli import main\n"
        f"code = main(['grade', {str(root / 'assignments' / 'taoistic-search' / 'submissions' / 'correct.ipynb')!r},"
        f" '--rubric', {str(root / 'rubrics' / 'taoistic-search.yaml')!r}, '--out', {str(tmp_path / 'out')!r},"
        f" '--cache', {str(tmp_path / 'cache')!r}, '--jobs', '1', '--quiet'])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'nbformat', 'jsonschema', 'jinja2', 'nbconvert', 'numpy', 'dask', 'nh3'}) + sorted({m for m in sys.modules "
        "if m.startswith(('grader.authoring.validate', 'grader.authoring.mutation', 'grader.kit.'))})\n"
        "print(code, heavy)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          timeout=within(600))
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout + done.stderr
