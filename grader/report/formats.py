"""The per-student report formats, one registry: `grader report --format` offers what is registered here.

A format is a module with one function from a Page (a student's result, and what else a report may show) to the
text of one file, or None when it has nothing to write for that student. Adding a format is that module plus one
`register(...)` line below; neither the CLI nor another format changes. Formats are named by module path and
imported only when asked for, so the HTML renderers' dependencies (jinja2, nbconvert) load only when used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from grader.store.results import SubmissionResult

if TYPE_CHECKING:
    from grader.report.stamps import Stamps


@dataclass(frozen=True)
class Page:
    """What a format renders from: one student's result and the context a report may show."""

    result: SubmissionResult
    notebook: Path | None = None         # the student's graded file, when it was found
    hidden_details: bool = False         # show hidden cases in detail rather than counted
    template: Path | None = None         # the template notebook: code it gave is shown folded as given


Render = Callable[[Page], "str | None"]


@dataclass(frozen=True)
class Format:
    name: str           # as `grader report --format` takes it
    suffix: str         # the file is <student><suffix>
    renderer: str       # "module:function", imported when the format is used
    help: str
    default: bool       # written when no --format is given

    def render(self, page: Page) -> str | None:
        module, _, function = self.renderer.partition(":")
        found: Render = getattr(importlib.import_module(module), function)
        return found(page)


FORMATS: dict[str, Format] = {}


def register(format: Format) -> None:
    FORMATS[format.name] = format


register(Format("md", ".md", "grader.report.student:markdown_page", "Markdown feedback", default=True))
register(Format("html", ".html", "grader.report.student:html_page", "HTML feedback, with the student's code",
                default=True))
register(Format("notebook", ".notebook.html", "grader.report.annotated:annotated_page",
                "the student's notebook with a feedback box under each graded function", default=False))

DEFAULT = tuple(name for name, format in FORMATS.items() if format.default)


def write(results: str | Path | Iterable[SubmissionResult], out_dir: str | Path, formats: Sequence[str] = DEFAULT, *,
          notebooks: Mapping[str, Path] | str | Path | None = None, hidden_details: bool = False,
          results_folder: Path | None = None, template: Path | None = None,
          made_from: Callable[[SubmissionResult], str | None] | None = None, stamps: Stamps | None = None,
          ) -> int:
    """Write <student><suffix> in each format for every result, one student at a time (a class of 10,000 is
    never held whole, nor the list of its 20,000 files: ~7 MB); returns how many files there are now. `results`
    is a results folder or the results themselves; `notebooks` maps submission ids to graded files or names a
    folder of them (default: each result's path).
    `made_from`: what a student's files are made from (class_outputs.Reading): a student whose files were all
    made from the same and are untouched since keeps them (grader.report.stamps, in the results folder, or
    `stamps`), and they are still counted. Raises KeyError naming a format that is not registered."""
    from grader.report.stamps import stamped
    folder = Path(results) if isinstance(results, (str, Path)) else results_folder
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if stamps is None and made_from is not None and folder is not None:
        with stamped(folder, "report " + ",".join(formats), out) as stamps:
            return write(results, out, formats, notebooks=notebooks, hidden_details=hidden_details,
                         results_folder=folder, template=template, made_from=made_from, stamps=stamps)
    from grader.report.own_name import for_student
    from grader.report.student import iter_results, locate_notebook
    chosen = [FORMATS[name] for name in formats]
    written = 0
    for result in iter_results(results):
        key = made_from(result) if made_from is not None and stamps is not None else None
        files = [out / f"{result.submission}{format.suffix}" for format in chosen]
        if key is not None and stamps is not None and all(stamps.holds(file, key) for file in files):
            written += len(files)
            continue
        # The student reads their file by its own name, not the TA's path to the export (own_name).
        page = Page(for_student(result), locate_notebook(result, notebooks, folder), hidden_details, template)
        for format, target in zip(chosen, files, strict=True):
            text = format.render(page)
            if text is not None:
                target.write_text(text, encoding="utf-8")
                written += 1
            if stamps is not None:   # a format with nothing to write is not stamped: the student is written again
                stamps.wrote(target, key if text is not None else None)
    return written
