"""Writing an assignment's bundled notebooks: what every assignments/<name>/build_examples.py does with the
notebooks it makes, in one place.

Each builder runs as a script (`python assignments/<name>/build_examples.py`) and writes template.ipynb (when it
makes the template) and submissions/<example>.ipynb beside itself; tests import the builders to check that the
committed notebooks are what they make.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import nbformat


def write(nb: nbformat.NotebookNode, path: Path, root: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    print(f"wrote {path.relative_to(root)}")


def write_all(here: Path, examples: Mapping[str, nbformat.NotebookNode],
              template: nbformat.NotebookNode | None = None) -> None:
    """The template (if given) and every example submission of the assignment in folder `here`."""
    if template is not None:
        write(template, here / "template.ipynb", here)
    for name, nb in examples.items():
        write(nb, here / "submissions" / f"{name}.ipynb", here)
