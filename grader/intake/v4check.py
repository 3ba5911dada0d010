"""The structure of an nbformat 4 notebook, checked without nbformat: the first problem as one line, or None.

Why not nbformat.validate: importing nbformat and jsonschema costs every grading run about 0.1 s, more than
reading a class's notebooks. What is checked is what nbformat's v4 schema says of the parts a notebook is
made of (the top level, each cell, each output): required keys, their JSON types, no unknown keys, cell ids.
Metadata is checked to be a mapping, not against nbformat's metadata sub-schemas (kernelspec, tags, ...),
which say nothing about the code the grader reads. A problem is a warning; the cells are read anyway.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

TOP_KEYS = {"metadata", "nbformat_minor", "nbformat", "cells"}
CELL_KEYS = {   # cell type -> (required keys, allowed keys)
    "code": ({"cell_type", "metadata", "source", "outputs", "execution_count"},
             {"id", "cell_type", "metadata", "source", "outputs", "execution_count"}),
    "markdown": ({"cell_type", "metadata", "source"}, {"id", "cell_type", "metadata", "source", "attachments"}),
    "raw": ({"cell_type", "metadata", "source"}, {"id", "cell_type", "metadata", "source", "attachments"}),
}
OUTPUT_KEYS = {   # output type -> (required keys, allowed keys)
    "execute_result": ({"output_type", "data", "metadata", "execution_count"},
                       {"output_type", "data", "metadata", "execution_count"}),
    "display_data": ({"output_type", "data", "metadata"}, {"output_type", "data", "metadata", "transient"}),
    "stream": ({"output_type", "name", "text"}, {"output_type", "name", "text"}),
    "error": ({"output_type", "ename", "evalue", "traceback"}, {"output_type", "ename", "evalue", "traceback"}),
}
CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def first_problem(notebook: dict[str, Any]) -> str | None:
    """The first way `notebook` (parsed JSON whose "nbformat" is 4) breaks the v4 schema, or None."""
    return next(_problems(notebook), None)


def _problems(notebook: dict[str, Any]) -> Iterator[str]:
    missing = sorted(TOP_KEYS - notebook.keys())
    if missing:
        yield f"the notebook has no {missing[0]!r}"
    extra = sorted(map(str, notebook.keys() - TOP_KEYS))
    if extra:
        yield f"unexpected top-level key {extra[0]!r}"
    if "metadata" in notebook and not isinstance(notebook["metadata"], dict):
        yield f"the notebook's metadata {_shown(notebook['metadata'])} is not a mapping"
    minor = notebook.get("nbformat_minor", 0)
    if not _count(minor):
        yield f"nbformat_minor {_shown(minor)} is not a non-negative integer"
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        return
    for number, cell in enumerate(cells, start=1):
        yield from (f"cell {number}: {problem}" for problem in _cell_problems(cell))


def _cell_problems(cell: Any) -> Iterator[str]:
    if not isinstance(cell, dict):
        yield f"{_shown(cell)} is not a cell object"
        return
    kind = cell.get("cell_type")
    if not isinstance(kind, str) or kind not in CELL_KEYS:
        yield f"unknown cell type {_shown(kind)}"
        return
    required, allowed = CELL_KEYS[kind]
    yield from _keys(cell, required, allowed, f"a {kind} cell")
    if "id" in cell and not (isinstance(cell["id"], str) and CELL_ID.fullmatch(cell["id"])):
        yield f"cell id {_shown(cell['id'])} is not 1-64 letters, digits, '-' or '_'"
    if "metadata" in cell and not isinstance(cell["metadata"], dict):
        yield f"metadata {_shown(cell['metadata'])} is not a mapping"
    if "source" in cell and not _text(cell["source"]):
        yield f"source {_shown(cell['source'])} is not text or a list of text"
    if "attachments" in cell:
        if not isinstance(cell["attachments"], dict):
            yield f"attachments {_shown(cell['attachments'])} are not a mapping"
        else:
            for name, bundle in cell["attachments"].items():
                if not isinstance(bundle, dict):
                    yield f"attachment {_shown(name)} is not a mapping of MIME types"
                else:
                    yield from (f"attachment {_shown(name)}: {problem}" for problem in _bundle_problems(bundle))
    if kind == "code":
        if "execution_count" in cell and not (cell["execution_count"] is None or _count(cell["execution_count"])):
            yield f"execution_count {_shown(cell['execution_count'])} is not a non-negative integer or null"
        outputs = cell.get("outputs", [])
        if not isinstance(outputs, list):
            yield f"outputs {_shown(outputs)} are not a list"
            return
        for number, output in enumerate(outputs, start=1):
            yield from (f"output {number}: {problem}" for problem in _output_problems(output))


def _output_problems(output: Any) -> Iterator[str]:
    if not isinstance(output, dict):
        yield f"{_shown(output)} is not an output object"
        return
    kind = output.get("output_type")
    if not isinstance(kind, str) or kind not in OUTPUT_KEYS:
        yield f"unknown output type {_shown(kind)}"
        return
    required, allowed = OUTPUT_KEYS[kind]
    yield from _keys(output, required, allowed, f"a {kind} output")
    for key in ("data", "metadata", "transient"):
        if key in output and not isinstance(output[key], dict):
            yield f"{key} {_shown(output[key])} is not a mapping"
    if "data" in output and isinstance(output["data"], dict):
        yield from _bundle_problems(output["data"])
    if "execution_count" in output and not (output["execution_count"] is None or _count(output["execution_count"])):
        yield f"execution_count {_shown(output['execution_count'])} is not a non-negative integer or null"
    if kind == "stream":
        if "name" in output and not isinstance(output["name"], str):
            yield f"stream name {_shown(output['name'])} is not text"
        if "text" in output and not _text(output["text"]):
            yield f"text {_shown(output['text'])} is not text or a list of text"
    if kind == "error":
        for key in ("ename", "evalue"):
            if key in output and not isinstance(output[key], str):
                yield f"{key} {_shown(output[key])} is not text"
        if "traceback" in output and not (isinstance(output["traceback"], list)
                                          and all(isinstance(line, str) for line in output["traceback"])):
            yield f"traceback {_shown(output['traceback'])} is not a list of text"


def _bundle_problems(bundle: dict[str, Any]) -> Iterator[str]:
    """A MIME bundle (output data, a cell attachment): key -> text or lines of text, any JSON for a JSON type."""
    for mime, value in bundle.items():
        if not _mime_value(mime, value):
            yield f"data {_shown(mime)} is not text or a list of text"


def _keys(node: dict[str, Any], required: set[str], allowed: set[str], what: str) -> Iterator[str]:
    missing = sorted(required - node.keys())
    if missing:
        yield f"{what} needs {missing[0]!r}"
    extra = sorted(map(str, node.keys() - allowed))
    if extra:
        yield f"unexpected key {extra[0]!r} in {what}"


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(part, str) for part in value))


def _mime_value(mime: str, value: Any) -> bool:
    """JSON MIME types (application/json, application/*+json) hold any JSON; the others text or lines of text."""
    if re.fullmatch(r"application/(.*\+)?json", mime):
        return True
    return _text(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
