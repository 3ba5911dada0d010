"""Read a submission file (.ipynb of any nbformat version, or a .py script export) into plain Cell data.

A batch grades hundreds of files written by hand, by old Jupyter versions and by
other tools, so reading is tolerant where the cells are still recoverable (a
schema problem becomes a warning) and fails with one clear `NotebookError`
naming the file where they are not; the batch then goes on with the next file.

An nbformat 4 file (nearly all) is read with json and checked by `grader.intake.v4check`:
nbformat and its JSON-schema validator cost a grading run about 0.1 s of imports. Only
older formats (v1-v3) load nbformat, to upgrade them.
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import io
import json
import re
import tokenize
import warnings
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, Iterable

from grader.intake.v4check import first_problem

from grader.intake.warning import GraderWarning, Kind, at

CELL_KINDS = ("code", "markdown", "raw")
# A submission larger than this is refused unread: reading, decoding and parsing a file costs the grader about
# twice its size in memory (a 400 MB notebook of saved output took a worker to 850 MB), and a file this large is
# saved outputs (images, animations), never code.
# One rule for every submission, a file or a zip member (uncompressed): gather holds members to it too.
MAX_SUBMISSION_BYTES = 100 * 1024 * 1024
TOO_LARGE = (f"over the {MAX_SUBMISSION_BYTES >> 20} MB a submission may have "
             f"(saved outputs such as images or animations? clear them and save again)")
# Within that size, what a notebook may make the grader build: each JSON object or array costs the grader about
# a kilobyte once read and checked (a 32 MB notebook of 300,000 empty cells, 900,000 objects and arrays, took a
# worker to 1.2 GB), and each character of code about twenty bytes of syntax tree when extracted (100 MB of `x = 1`
# lines: 2 GB). A notebook a person writes has a few thousand objects and well under a megabyte of code.
MAX_JSON_CONTAINERS = 100_000     # objects and arrays of an .ipynb file, outside its strings
MAX_CODE_CHARS = 4_000_000        # characters of all code cells together (a cell past them is not run), of a .py
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def file_sha256(path: Path) -> str:
    """The file's SHA-256, read in chunks (a submission may be far larger than what grading reads of it)."""
    try:
        with path.open("rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError:
        return ""


@dataclass(frozen=True)
class Cell:
    """One notebook cell; `index` counts all cells, so messages can point at the cell a student sees."""

    index: int  # 0-based position among ALL cells of the notebook
    kind: str  # "code" | "markdown" | "raw"
    source: str
    execution_count: int | None

    @property
    def label(self) -> str:
        """How feedback names the cell: the prompt the student saw, and its position as a fallback."""
        if self.execution_count is not None:
            return f"In [{self.execution_count}] (cell {self.index + 1})"
        return f"cell {self.index + 1}"


@dataclass(frozen=True)
class Notebook:
    path: str
    cells: tuple[Cell, ...]
    warnings: tuple[GraderWarning, ...]  # problems that did not stop reading (e.g. schema validation)


class NotebookError(Exception):
    """A submission file that cannot be read at all; the message names the file and says why."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def read_notebook(path: str | Path) -> Notebook:
    """Read a .ipynb or .py submission; raise NotebookError when no cells can be recovered."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".ipynb", ".py"):
        shown = f"'{path.suffix}'" if path.suffix else "without suffix"
        raise NotebookError(path, f"unsupported file type {shown} (expected .ipynb or .py)")
    text = _read_text(path)
    if suffix == ".py":
        return notebook_from_source(text, str(path))
    return _notebook_from_json(text, str(path))


def notebook_from_source(source: str, path: str = "<string>") -> Notebook:
    """Split Python script text into cells on `# %%` (VS Code, jupytext) or `# In[3]:` (nbconvert) markers.

    Without markers the whole text is one code cell, so line numbers are the file's own.
    """
    if len(source) > MAX_CODE_CHARS:   # all of it is code: read, it would be split into as many lines first
        raise NotebookError(path, f"more than {MAX_CODE_CHARS:,} characters of code: not read")
    lines = source.splitlines(keepends=True)
    if _COLAB_MAGICS in source and any(line.rstrip() == _COLAB_MAGICS for line in lines):
        return Notebook(path, *_within_code_budget(_colab_cells(lines)))
    jupytext = _is_jupytext(lines)
    marks = [(i, m) for i, line in enumerate(lines) if (m := _marker(line, jupytext)) is not None]
    if not marks and not jupytext and (calls := _cell_magic_calls(source, lines)):
        return Notebook(path, *_within_code_budget(_cut_at(lines, calls)))
    if not marks:
        return Notebook(path, *_within_code_budget((Cell(0, "code", _magics_uncommented(source, jupytext), None),)))
    chunks: list[tuple[str, int | None, list[str]]] = []
    preamble = lines[: marks[0][0]]
    # nbconvert's export starts with "#!/usr/bin/env python" and "# coding: utf-8": not a cell.
    if any(line.strip() and not line.lstrip().startswith("#") for line in preamble):
        chunks.append(("code", None, preamble))
    for n, (start, (kind, count)) in enumerate(marks):
        end = marks[n + 1][0] if n + 1 < len(marks) else len(lines)
        chunks.append((kind, count, lines[start + 1 : end]))
    cells = tuple(
        Cell(index, kind, _magics_uncommented(_trim_blank_lines(body), jupytext and kind == "code"), count)
        for index, (kind, count, body) in enumerate(chunks)
    )
    return Notebook(path, *_within_code_budget(cells))


# `jupyter nbconvert --to script --no-prompt` writes no `# In[ ]:` markers, only a blank line between cells, and a
# %%time cell as one call, get_ipython().run_cell_magic('time', '', '<the cell>'), which extraction reads as the cell
# magic it was only when it is a whole cell. Such an export is valid Python: its parse says where those calls are.
_CELL_MAGIC_CALL = "get_ipython().run_cell_magic("
_MAX_CUT_CHARS = 200_000   # an export is ~10-50 kB; parsing is the grader's CPU (~3 us a character)


def _cell_magic_calls(source: str, lines: list[str]) -> list[int]:
    """The lines (0-based) of a marker-less script that are each a whole top-level run_cell_magic call."""
    if len(source) > _MAX_CUT_CHARS or not any(line.startswith(_CELL_MAGIC_CALL) for line in lines):
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [node.lineno - 1 for node in tree.body
            if isinstance(node, ast.Expr) and node.col_offset == 0 and node.lineno == node.end_lineno
            and lines[node.lineno - 1].startswith(_CELL_MAGIC_CALL)]


def _cut_at(lines: list[str], calls: list[int]) -> tuple[Cell, ...]:
    """Code cells: the text between the calls, and each call a cell of its own."""
    bounds = [0, *(edge for line in calls for edge in (line, line + 1)), len(lines)]
    return _code_cells(lines[start:end] for start, end in pairwise(bounds))


def _code_cells(chunks: Iterable[list[str]]) -> tuple[Cell, ...]:
    """Chunks of a script's lines (each ending in its newline) as code cells, the blank ones dropped."""
    sources = [source for chunk in chunks if (source := _trim_blank_lines(chunk))]
    return tuple(Cell(index, "code", source, None) for index, source in enumerate(sources))


_PERCENT_MARKER = re.compile(r"^#\s?%%(?P<rest>.*)$")
# ASCII digits (`\d` takes any script's, which int() reads too), a count an execution counter could reach: a marker
# `# In[<5,000 nines>]:` raised int()'s digit limit out of the read ("the grader failed on this submission").
_IN_MARKER = re.compile(r"^#\s*In\s*\[\s*(?P<count>[0-9]*)\s*\]\s*:\s*$")
_MAX_COUNT_DIGITS = 9


# Jupytext writes a notebook's magics as comments (`# %run x.ipynb`, `# !pip ...`, a cell's first line `# %%time`)
# and reads them back as magics when Jupyter opens the .py: the same one level of `# ` is taken off here.
_JUPYTEXT_KEY = re.compile(r"^#\s+jupytext:\s*$")
_COMMENTED_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)# ?(?=%[A-Za-z]|![ \t]*[A-Za-z.~$\\/{}])")
_COMMENTED_CELL_MAGIC = re.compile(r"^# ?(?=%%[A-Za-z])")


def _is_jupytext(lines: list[str]) -> bool:
    """Whether the script starts with jupytext's YAML header (`# ---`, ..., `#   jupytext:`, ..., `# ---`).

    Only such a file has its commented magics read as magics: in a plain script or a VS Code `# %%` file a
    `# %run` line is a comment the author wrote, and it ran nothing for them either.
    """
    body = [line.rstrip("\r\n") for line in lines[:200]]
    while body and (not body[0].strip() or body[0].startswith("#!") or "coding" in body[0]):
        body.pop(0)
    if not body or body[0].strip() != "# ---":
        return False
    for line in body[1:]:
        if not line.startswith("#") or line.strip() == "# ---":
            return False
        if _JUPYTEXT_KEY.match(line):
            return True
    return False


def _magics_uncommented(source: str, jupytext: bool) -> str:
    """A jupytext code cell as Jupyter runs it: each commented magic line a magic again (line numbers kept)."""
    if not jupytext or "#" not in source:
        return source
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    for i, line in enumerate(lines):
        if i == first and _COMMENTED_CELL_MAGIC.match(line):
            lines[i] = _COMMENTED_CELL_MAGIC.sub("", line, count=1)
        elif _COMMENTED_LINE_MAGIC.match(line):
            lines[i] = _COMMENTED_LINE_MAGIC.sub(r"\g<indent>", line, count=1)
    return "\n".join(lines)


# Colab's "Download .py" comments a cell's magics out and says so on the cell's first line: a line magic is written
# `# %run X.ipynb`, a cell magic's cell is commented line by line (`# %%time`, `# def f(S):`, `# ` for a blank line).
# The notebook ran them as magics; shell lines (`!pip ...`) are left as they were. Cells are joined by a blank line.
_COLAB_MAGICS = "# Commented out IPython magic to ensure Python compatibility."
_COLAB_CELL_MAGIC = re.compile(r"^# %%[A-Za-z]")
_COLAB_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)# (?=%[A-Za-z])")


def _colab_cells(lines: list[str]) -> tuple[Cell, ...]:
    """A Colab export as cells, each of its commented magics a magic again (as the notebook ran it).

    Only the cell Colab marked is read so: its cell magic's commented lines (a cell of its own, ending where the
    comments end), or its commented line magics up to the cell's end (its first blank line: a magic after a blank
    line within the cell stays a comment). The rest is code as written, between the marked cells.
    """
    text = [line.rstrip("\r\n") for line in lines]
    chunks: list[list[str]] = []
    start = i = 0
    while i < len(text):
        if text[i].rstrip() != _COLAB_MAGICS:
            i += 1
            continue
        chunks.append(text[start:i])   # the code before Colab's note (the note is Colab's, not the author's)
        end = i + 1
        if end < len(text) and _COLAB_CELL_MAGIC.match(text[end]):
            while end < len(text) and text[end].startswith("#"):
                end += 1
            chunks.append([line[2:] if line.startswith("# ") else "" for line in text[i + 1:end]])
        else:
            while end < len(text) and text[end].strip():
                end += 1
            chunks.append([_COLAB_LINE_MAGIC.sub(r"\g<indent>", line, count=1) for line in text[i + 1:end]])
        start = i = end
    chunks.append(text[start:])
    return _code_cells([f"{line}\n" for line in chunk] for chunk in chunks)


def _marker(line: str, jupytext: bool = False) -> tuple[str, int | None] | None:
    """(kind, execution_count) when `line` starts a cell, else None. In a jupytext file `# %%time` is a commented
    cell magic, not a marker (jupytext's markers are `# %%` alone or followed by a space)."""
    line = line.rstrip("\r\n")
    if m := _IN_MARKER.match(line):
        return "code", int(m["count"]) if m["count"] and len(m["count"]) <= _MAX_COUNT_DIGITS else None
    if jupytext and line.startswith("# %%") and line[4:5] not in ("", " ", "\t"):
        return None
    if m := _PERCENT_MARKER.match(line):
        rest = m["rest"].lower()
        if "[markdown]" in rest or "[md]" in rest:
            return "markdown", None
        if "[raw]" in rest:
            return "raw", None
        return "code", None
    return None


def _trim_blank_lines(lines: list[str]) -> str:
    """Drop the blank lines exporters put around a cell, so line 1 is the cell's first line as it was typed."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[start:end]).rstrip("\r\n")


def _encoding(data: bytes, script: bool) -> str:
    """UTF-8 (a BOM allowed), or UTF-16 where the text starts with its byte order mark: what Windows PowerShell's
    `>` (`jupyter nbconvert --to script --stdout lab.ipynb > lab.py`) and Notepad's "Unicode" write, and what every
    editor a TA opens it with reads. Without a BOM nothing tells UTF-16 apart: such bytes are read as UTF-8.
    A script may name its encoding in a coding line (PEP 263, `# -*- coding: latin-1 -*-` in its first two lines),
    which Python, Spyder and every editor honour: read as UTF-8, a right Latin-1 script was unreadable (0)."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-8-sig"     # FF FE 00 00 also starts like UTF-16 LE: such a file is reported as not UTF-8
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if script:
        try:
            declared = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
            if codecs.lookup(declared)._is_text_encoding:
                return "utf-8-sig" if declared in ("utf-8", "utf-8-sig") else declared
        except (SyntaxError, LookupError):   # an unknown codec, or a coding line that a UTF-8 BOM contradicts
            pass
    return "utf-8-sig"


def _read_text(path: Path) -> str:
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_SUBMISSION_BYTES + 1)   # at most one byte more: a file may grow while read
    except FileNotFoundError:
        raise NotebookError(path, "file not found") from None
    except IsADirectoryError:
        raise NotebookError(path, "is a directory, not a file") from None
    except OSError as e:
        raise NotebookError(path, f"cannot read file: {e.strerror or e}") from None
    if len(data) > MAX_SUBMISSION_BYTES:
        raise NotebookError(path, f"file is {TOO_LARGE}")
    encoding = _encoding(data, script=path.suffix.lower() == ".py")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        named = {"utf-16": "UTF-16 text", "utf-8-sig": "UTF-8 text"}.get(encoding, f"{encoding} text, as its coding "
                                                                                    "line says")
        raise NotebookError(path, f"not {named} (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    if not text.strip():
        raise NotebookError(path, "empty file")
    return text


def _notebook_from_json(text: str, path: str) -> Notebook:
    if _containers(text, MAX_JSON_CONTAINERS) > MAX_JSON_CONTAINERS:
        raise NotebookError(path, f"more than {MAX_JSON_CONTAINERS:,} JSON objects and arrays (a notebook a person "
                                  f"writes has a few thousand): not read")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookError(
            path, f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except (ValueError, RecursionError) as e:
        # Valid JSON that Python's parser refuses: an integer of more than 4,300 digits, or arrays nested deeper
        # than the interpreter's stack. Before, the grader "failed" on the submission (a grader fault, retried).
        raise NotebookError(path, f"not readable JSON: {_first_line(e)}") from None
    if not isinstance(raw, dict) or not (
        isinstance(raw.get("cells"), list) or isinstance(raw.get("worksheets"), list)
    ):
        raise NotebookError(path, "not a Jupyter notebook (no cells)")
    notes: list[GraderWarning] = []
    if "nbformat" not in raw:
        # nbformat would read a version-less file as v1 and lose the cells; guess from the layout instead.
        v4 = "cells" in raw
        raw["nbformat"] = 4 if v4 else 3
        raw.setdefault("nbformat_minor", 5 if v4 and _has_cell_ids(raw) else 0)
        notes.append(GraderWarning(Kind.NOTEBOOK, f"no nbformat version in the file; read as nbformat "
                                                  f"{raw['nbformat']}", "nbformat version"))
    major, minor = raw["nbformat"], raw.get("nbformat_minor", 0)
    if type(major) is not int or major not in (1, 2, 3, 4):
        raise NotebookError(path, f"unsupported nbformat version {major!r}")
    if major == 4:
        nb: Any = raw
        problem = first_problem(raw)
    else:
        nb, problem = _upgraded(raw, major, minor, path)
    if problem:
        notes.append(GraderWarning(Kind.NOTEBOOK, f"notebook does not validate (read anyway): {problem}",
                                   "schema"))
    cells_raw = nb.get("cells")
    if not isinstance(cells_raw, list):
        raise NotebookError(path, "not a Jupyter notebook (no cells)")
    cells = []
    for index, node in enumerate(cells_raw):
        cell, note = _cell(index, node)
        cells.append(cell)
        if note:
            notes.append(note)
    kept, over = _within_code_budget(tuple(cells))
    return Notebook(path, kept, tuple(notes) + over)


def _containers(text: str, limit: int) -> int:
    """The JSON objects and arrays of `text` (its `{` and `[` outside strings), counted until past `limit` (0 when
    its brackets alone are within `limit`).

    Counting the brackets is an upper bound and costs ~4 ms a megabyte: nearly every notebook is within it at once.
    Only one with more brackets (an attack, or saved output full of printed lists) has its strings skipped."""
    if text.count("{") + text.count("[") <= limit:
        return 0
    count = start = 0
    for match in _JSON_STRING.finditer(text):
        count += text.count("{", start, match.start()) + text.count("[", start, match.start())
        if count > limit:
            return count
        start = match.end()
    return count + text.count("{", start) + text.count("[", start)


def _within_code_budget(cells: tuple[Cell, ...]) -> tuple[tuple[Cell, ...], tuple[GraderWarning, ...]]:
    """The cells, with each code cell that would take the code past MAX_CODE_CHARS read as a raw cell (shown, not
    run), and a warning for each; the cells after it still count."""
    left = MAX_CODE_CHARS
    kept: list[Cell] = []
    notes: list[GraderWarning] = []
    for cell in cells:
        if cell.kind == "code" and len(cell.source) > left:
            notes.append(at(cell, 0, Kind.NOTEBOOK, f"{len(cell.source):,} characters of code, past the "
                                                    f"{MAX_CODE_CHARS:,} a notebook's code may have in all; "
                                                    f"this cell is not run", "code over the limit"))
            cell = Cell(cell.index, "raw", cell.source, None)
        elif cell.kind == "code":
            left -= len(cell.source)
        kept.append(cell)
    return tuple(kept), tuple(notes)


def _has_cell_ids(raw: dict) -> bool:
    return any(isinstance(c, dict) and "id" in c for c in raw.get("cells", ()))


def _upgraded(raw: dict, major: int, minor: Any, path: str) -> tuple[Any, str | None]:
    """An nbformat 1-3 file as version 4, with its first schema problem: nbformat does both."""
    import nbformat
    try:
        # What nbformat.reads does, minus parsing the JSON a second time and logging validation errors.
        nb = nbformat.versions[major].to_notebook_json(raw, minor=minor)
        nb = nbformat.convert(nb, 4)
    except Exception as e:  # nbformat raises many kinds; any of them means unreadable
        raise NotebookError(path, f"cannot read notebook: {_first_line(e)}") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nbformat.validate(nb)
        except nbformat.ValidationError as e:
            return nb, _first_line(e.message if hasattr(e, "message") else e)
        except Exception as e:  # a schema library hiccup must not make a readable file unreadable
            return nb, _first_line(e)
    return nb, None


def _cell(index: int, node: object) -> tuple[Cell, GraderWarning | None]:
    """A Cell from one cell node, tolerating what validation already complained about."""
    if not isinstance(node, dict):
        cell = Cell(index, "raw", "", None)
        return cell, at(cell, 0, Kind.NOTEBOOK, "not a cell object; ignored", "not a cell object")
    note: tuple[str, str] | None = None      # (what is said, what it is about)
    kind = node.get("cell_type")
    if kind not in CELL_KINDS:
        note = f"unknown cell type {kind!r}; ignored", "unknown cell type"
        kind = "raw"
    source = node.get("source", "")
    if isinstance(source, list):
        source = "".join(part for part in source if isinstance(part, str))
    elif not isinstance(source, str):
        note = note or ("cell source is not text; read as empty", "cell source is not text")
        source = ""
    count = node.get("execution_count")
    if not isinstance(count, int) or isinstance(count, bool):
        count = None
    cell = Cell(index, kind, source, count if kind == "code" else None)
    return cell, at(cell, 0, Kind.NOTEBOOK, *note) if note else None


def _first_line(error: object) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
