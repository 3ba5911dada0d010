"""Writing fixture notebooks: what every fixture builder under tests/fixtures/ needs, in one place.

Fixture notebooks are committed and rebuilding them must give the same bytes, so cell ids are stable
(numbered, never random) and every file is written the same way: validated, nbformat's own JSON, one
trailing newline. The builders run as scripts (`python tests/fixtures/x/build.py`) and are imported by tests;
as scripts they put tests/ on sys.path to import this module.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat import v4

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def with_stable_ids(nb: nbformat.NotebookNode, prefix: str, digits: int = 3) -> nbformat.NotebookNode:
    """Number the cells' ids (`prefix-000`, ...): nbformat would draw random ones, and a rebuild would differ."""
    for n, cell in enumerate(nb.cells):
        cell.id = f"{prefix}-{n:0{digits}d}"
    return nb


def notebook(cells: list[nbformat.NotebookNode], prefix: str = "cell", digits: int = 3) -> nbformat.NotebookNode:
    """A new notebook of these cells with a Python 3 kernelspec, as Jupyter would save it."""
    nb = v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata = {"kernelspec": dict(KERNELSPEC)}
    return with_stable_ids(nb, prefix, digits)


def appended(base: Path, *sources: str, first_count: int | None = None) -> nbformat.NotebookNode:
    """The notebook at `base` with one code cell per source added at its end (run as In [first_count], ...
    when given, else never run): a bundled submission changed by what the added cells define."""
    nb = nbformat.read(base, as_version=4)
    for n, source in enumerate(sources):
        count = None if first_count is None else first_count + n
        nb.cells.append(v4.new_code_cell(source, execution_count=count))
    return nb


def write(path: Path, nb: nbformat.NotebookNode) -> Path:
    """Validate and write the notebook the one way every fixture is written (so a rebuild gives the same bytes)."""
    nbformat.validate(nb)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return path
