"""The student's own notebook as HTML (nbconvert), with a feedback box after each cell that defines a graded function.

Why: feedback next to the code it is about needs no cross-referencing of cell numbers. The notebook is exported
as it was handed in (outputs kept); the boxes are raw HTML cells inserted into a copy before export, so nbconvert
does all the rendering and no HTML is patched afterwards. The page is self-contained: the template drops what
nbconvert loads from the network (require.js, MathJax, mermaid, widgets), images in Markdown are embedded or
replaced by their name, and a Content-Security-Policy keeps any script in the student's outputs from running.

The student's content is hostile: every cell is rebuilt from what the page shows (no metadata, whose tags would
become CSS classes; a fixed id; outputs reduced to text, checked images and HTML), and all HTML the student
wrote (Markdown, HTML outputs, raw cells) goes through nh3 with no class, id or style attribute and no
<style>, <form> or <script>: it cannot hide the grader's boxes or draw one of its own. Student cells sit in
grey-ruled frames, the grader's boxes in blue ones. A notebook past MAX_CELLS cells or MAX_CHARS characters is
shown up to there, the rest summarized.
"""

from __future__ import annotations

import base64
import functools
import json
import mimetypes
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import nbformat
from markupsafe import Markup

from grader.extract.source import Extracted, extract
from grader.intake.gather import NOTEBOOK_SUFFIXES
from grader.intake.notebook import Notebook, NotebookError, read_notebook
from grader.intake.warning import GraderWarning
from grader.report import student
from grader.report.math import Formulas, render_math
from grader.store.results import ExerciseResult, SubmissionResult
from grader.textsafe import display

if TYPE_CHECKING:
    from grader.report.formats import Page

TEMPLATES = Path(__file__).parent / "templates"
BOX_CSS = """
.grader-box { margin: .6em 0 1.2em 0; padding: .6em 1em; border: 2px solid #3465a4; border-radius: 6px;
  background: #f3f7fc; }
.grader-box > .grader-label { font-weight: 700; color: #3465a4; font-size: .9em; text-transform: uppercase;
  letter-spacing: .04em; }
.grader-box section.exercise { border-top: none; margin-top: .4em; }
.grader-box section.exercise + section.exercise { border-top: 1px solid #c8d6ea; }
.grader-box h2 { font-size: 1.2em; }
.grader-box h3 { font-size: 1.05em; }
.grader-box > .grader-label a { color: inherit; }
"""
# Student text: each pattern runs in time linear in it. No run a match scans can pass over another candidate's start
# (alt and src hold no bracket or parenthesis, a tag no "<"), and possessive runs never backtrack: the patterns they
# replace took 8.9 s for 4 kB of "<img src='" (cubic) and 0.06 s for 4 kB of "![a](" (quadratic), so one Markdown
# cell held a report of the class for hours. An image they do not match is left as written: not embedded, and the
# page's CSP (img-src data:) loads nothing for it.
_IMAGE_MARKDOWN = re.compile(r"!\[(?P<alt>[^\[\]]*+)\]\((?P<src>[^()\[\]\s]++)(?P<title>\s++\"[^\"]*+\")?\)")
_IMAGE_TAG = re.compile(r"<img\b[^<>]*+>", re.IGNORECASE)
_TAG_SRC = re.compile(r"\bsrc\s*+=\s*+(?:\"(?P<double>[^\"]*+)\"|'(?P<single>[^']*+)')", re.IGNORECASE)
_MAX_IMAGE_BYTES = 2_000_000
FEEDBACK_MARK = "grader_feedback"     # metadata key of the inserted cells (see templates/annotated/index.html.j2)
PLAIN_MARK = "grader_plain"           # metadata key of a code cell shown without highlighting (see HIGHLIGHTED)
MAX_CELLS = 2_000                     # cells shown; the rest of a bigger notebook is summarized
MAX_CHARS = 5_000_000                 # characters of sources and outputs shown, all cells together
MAX_OUTPUT_CHARS = 500_000            # one cell's outputs; more are summarized in one line
_LANGUAGE_CHARS = 100                 # a language's name in the notebook's metadata (for highlighting)
# What pygments highlights of the student's text (code cells, fenced code in Markdown): only with these lexers, and
# only code whose lines are at most HIGHLIGHT_LINE characters; the rest is shown as plain text. The student chose
# the lexer (the notebook's language, a fence's info string) and pygments' lexers are regular expressions, some
# slow on text made for them: the Python lexer's `\N{` escape scans to the end of the line at each one, so a line
# of 40,000 of them took 0.85 s, 160,000 11.8 s (quadratic), and one 120 kB cell 17.9 s of one student's page. At
# most HIGHLIGHT_LINE characters a line, that is ~0.5 us a character.
HIGHLIGHTED = frozenset({"python", "python3", "py", "ipython", "ipython3", "text"})
HIGHLIGHT_LINE = 1_000
_SHOWN_DATA = ("text/html", "text/markdown", "image/png", "image/jpeg", "image/svg+xml", "text/plain")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
# What a Markdown cell's attachment may be to be shown: an image nbconvert writes as a data: URI, in base64, of at
# most _MAX_IMAGE_BYTES. nbconvert raises on a reference to an attachment the cell lacks (InvalidNotebook) and on an
# attachment with no type (StopIteration, in a generator), which ended `grader report` for the whole class.
_ATTACHED = ("image/svg+xml", "image/png", "image/jpeg")
_ATTACHMENT = "attachment:"
_NAMED = re.compile(r"attachment:([^\s()<>\[\]\"']+)")
STUDENT_CSS = """
.jp-Notebook-cell { border-left: 4px solid #d5d5d5; padding: .1em 0 .1em .8em; margin: .5em 0; }
.jp-InputPrompt, .jp-OutputPrompt { color: #777; font-size: .8em; }
.jp-Notebook-cell img { max-width: 100%; }
"""


def annotated_notebook(notebook_path: str | Path, result: SubmissionResult, *, hidden_details: bool = False) -> str:
    """The notebook at `notebook_path` as one HTML page with `result`'s feedback boxes in it."""
    path = Path(notebook_path)
    parsed = read_notebook(path)
    nb = _notebook_node(path, parsed, MAX_CELLS)
    extracted = extract(parsed)
    shown: list[Any] = []
    budget = MAX_CHARS
    formulas = Formulas()
    images = _own_folder(path)
    for index, node in enumerate(nb.cells[:MAX_CELLS]):
        cell = _student_cell(index, node, images, formulas)
        budget -= _size(cell)
        if budget < 0 and shown:
            break
        shown.append(cell)
    by_cell, unplaced = _placement(result, extracted, len(shown))
    # A warning with a place (a statement skipped at load, a cell that does not parse) is shown after its cell
    # too; the summary at the top still lists every warning.
    warned: dict[int, list[GraderWarning]] = {}
    for warning in result.warnings:
        if warning.cell is not None and 0 <= warning.cell < len(shown):
            warned.setdefault(warning.cell, []).append(warning)
    cells = [_raw_html(_summary_box(result, unplaced, hidden_details), "grader-summary")]
    for index, cell in enumerate(shown):
        if index in by_cell:     # the target of the box's link back to its cell
            cells.append(_raw_html(Markup('<a class="grader-anchor" id="{}"></a>').format(cell_anchor(index)),
                                   f"grader-anchor-{index}"))
        cells.append(cell)
        if index in by_cell:
            cells.append(_raw_html(_exercise_box(by_cell[index], hidden_details, index), f"grader-feedback-{index}"))
        if index in warned:
            cells.append(_raw_html(_warning_box(warned[index], index), f"grader-warning-{index}"))
    left = len(parsed.cells) - len(shown)
    if left > 0:
        cells.append(_raw_html(Markup('<div class="feedback grader-box"><div class="grader-label">Grader</div>'
                                      '<p>{} more cell{} of this notebook (of {}) are not shown: the page shows at '
                                      'most {:,} cells and {:,} characters.</p></div>').format(
            left, "" if left == 1 else "s", len(parsed.cells), MAX_CELLS, MAX_CHARS), "grader-rest"))
    nb.cells = cells
    return _export(nb, result.submission)


def annotated_page(page: Page) -> str | None:
    """The `notebook` report format: None when the student's notebook is not found or cannot be rendered."""
    if page.notebook is None:
        return None
    try:
        return annotated_notebook(page.notebook, page.result, hidden_details=page.hidden_details)
    except NotebookError:
        return None  # unreadable file: its result already says so, and there is nothing to annotate
    except (RecursionError, MemoryError, ValueError):
        return None  # a notebook nbconvert cannot render: one student's page is missing, the class's are not


# ---------------------------------------------------------------------------------------------- placing


def _notebook_node(path: Path, parsed: Notebook, limit: int) -> nbformat.NotebookNode:
    """The notebook's first `limit` cells with their outputs, numbered as read_notebook numbers them (or rebuilt
    from those cells, without outputs, when the file cannot be read that way: a .py script, an odd JSON file)."""
    wanted = min(len(parsed.cells), limit)
    if path.suffix.lower() == ".ipynb":
        try:
            with path.open(encoding="utf-8-sig") as handle:
                raw = json.load(handle)
            if isinstance(raw, dict) and "nbformat" not in raw:
                raw["nbformat"], raw["nbformat_minor"] = (4, 0) if "cells" in raw else (3, 0)
            if isinstance(raw.get("cells"), list):
                raw["cells"] = raw["cells"][:limit]     # a 200,000-cell notebook is not converted whole
            node = nbformat.versions[raw["nbformat"]].to_notebook_json(raw, minor=raw.get("nbformat_minor", 0))
            node = nbformat.convert(node, 4)
            # The page's version, not the file's: nbconvert compares it with ints ("x" raised TypeError and ended
            # `grader report`), and the page's cells are made anew, each with an id (nbformat 4.5's rule).
            node.nbformat, node.nbformat_minor = 4, nbformat.v4.nbformat_minor
            del raw
            node.metadata = _shown_metadata(node.metadata)
            if len(node.cells) >= wanted:
                node.cells = node.cells[:wanted]
                return node
        except Exception:  # noqa: BLE001 - any reading problem: fall back to the cells the grader itself read
            pass
    node = nbformat.v4.new_notebook()
    for cell in parsed.cells[:limit]:
        make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}.get(
            cell.kind, nbformat.v4.new_raw_cell)
        new = make(cell.source)
        new["id"] = f"cell-{cell.index}"
        if cell.kind == "code":
            new.execution_count = _count(cell.execution_count)
        node.cells.append(new)
    return node


def _shown_metadata(metadata: Any) -> nbformat.NotebookNode:
    """The notebook's metadata the page uses: the language's names for highlighting, short. Why: the lab template
    copies the rest whole into the page (a widget state of 60 MB made a 60 MB page and a 485 MB report process,
    though no widget can run under the page's CSP; `title` becomes the page's title), and none of it is shown."""
    language = metadata.get("language_info") if isinstance(metadata, dict) else None
    kept = {key: value if value.lower() in HIGHLIGHTED else "text"
            for key, value in (language.items() if isinstance(language, dict) else ())
            if key in ("name", "pygments_lexer") and isinstance(value, str) and len(value) <= _LANGUAGE_CHARS}
    return nbformat.from_dict({"language_info": kept} if kept else {})


def highlighted(code: str) -> bool:
    """Whether pygments may read `code` (HIGHLIGHTED's lexers only): no line of it is over HIGHLIGHT_LINE."""
    return all(len(line) <= HIGHLIGHT_LINE for line in code.splitlines())


def _placement(result: SubmissionResult, extracted: Extracted, cell_count: int
               ) -> tuple[dict[int, list[ExerciseResult]], list[ExerciseResult]]:
    """Cell index -> the exercises whose graded definition is in that cell; and those found nowhere."""
    by_cell: dict[int, list[ExerciseResult]] = {}
    unplaced = []
    for exercise in result.exercises:
        index = _cell_of(exercise, extracted)
        if index is None or not 0 <= index < cell_count:
            unplaced.append(exercise)
        else:
            by_cell.setdefault(index, []).append(exercise)
    return by_cell, unplaced


def _cell_of(exercise: ExerciseResult, extracted: Extracted) -> int | None:
    for name in (exercise.function, exercise.id):
        definition = extracted.definitions.get(name.split(".")[0]) if name else None
        if definition is not None:
            return definition.cell
    return exercise.cell


# ---------------------------------------------------------------------------------------------- student cells


def _text(value: object) -> str:
    """Notebook text fields may be a string or a list of strings (or, in a hostile file, anything)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return ""


def _student_cell(index: int, node: object, folder: Path | None, formulas: Formulas) -> nbformat.NotebookNode:
    """A fresh cell holding only what the page shows of the student's cell (see the module's docstring)."""
    node = node if isinstance(node, dict) else {}
    kind = node.get("cell_type")
    source = _text(node.get("source"))
    if kind == "markdown":
        attachments = _attachments(node.get("attachments"))
        cell = nbformat.v4.new_markdown_cell(render_math(_embed_images(source, folder, attachments), formulas))
        if attachments:
            cell["attachments"] = attachments
    elif kind == "code":
        cell = nbformat.v4.new_code_cell(source)
        if not highlighted(source):
            cell.metadata[PLAIN_MARK] = True
        cell.execution_count = _count(node.get("execution_count"))
        cell.outputs = _outputs(node.get("outputs"), cell.execution_count)
    else:
        cell = nbformat.v4.new_raw_cell(source)     # shown as text (templates/annotated/index.html.j2)
    cell["id"] = f"cell-{index}"
    return cell


def _count(value: object) -> int | None:
    """An execution count nbconvert takes (it raised on -1, ending `grader report` for the class), else none."""
    return value if type(value) is int and value >= 0 else None


def _outputs(outputs: object, count: int | None) -> list:
    """Streams, errors and display data restricted to text, sanitized HTML and Markdown, and checked images."""
    kept: list = []
    if not isinstance(outputs, list):
        return kept
    for output in outputs:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            name = "stderr" if output.get("name") == "stderr" else "stdout"
            kept.append(nbformat.v4.new_output("stream", name=name, text=_text(output.get("text"))))
        elif kind == "error":
            lines = found if isinstance(found := output.get("traceback"), list) else []
            kept.append(nbformat.v4.new_output("error", ename=_text(output.get("ename")),
                                               evalue=_text(output.get("evalue")),
                                               traceback=[line for line in lines if isinstance(line, str)]))
        elif kind in ("display_data", "execute_result"):
            raw = found if isinstance(found := output.get("data"), dict) else {}
            data = {key: _text(raw[key]) for key in _SHOWN_DATA if key in raw}
            for image in ("image/png", "image/jpeg"):
                if image in data and not _BASE64.fullmatch(data[image]):
                    del data[image]
            if data:
                extra = {"execution_count": count} if kind == "execute_result" else {}
                kept.append(nbformat.v4.new_output(kind, data=data, **extra))
    size = sum(len(json.dumps(output, ensure_ascii=False)) for output in kept)
    if size > MAX_OUTPUT_CHARS:
        return [nbformat.v4.new_output("stream", name="stdout", text=f"[{size:,} characters of output not shown]")]
    return kept


def _size(cell: nbformat.NotebookNode) -> int:
    return len(cell.source) + sum(len(json.dumps(o, ensure_ascii=False)) for o in cell.get("outputs", ())) + sum(
        len(text) for bundle in cell.get("attachments", {}).values() for text in bundle.values())


def _attachments(found: object) -> dict[str, dict[str, str]]:
    """A Markdown cell's attachments that are images the page can show (_ATTACHED): each one's first such type."""
    kept: dict[str, dict[str, str]] = {}
    for name, bundle in found.items() if isinstance(found, dict) else ():
        if isinstance(name, str) and isinstance(bundle, dict):
            for kind in _ATTACHED:
                text = _text(bundle.get(kind))
                if text and len(text) <= _MAX_IMAGE_BYTES and _BASE64.fullmatch(text):
                    kept[name] = {kind: text}
                    break
    return kept


def sanitize_html(html: object) -> str:
    """Student HTML made inert: nh3's safe tags, no class/id/style (so nothing can look like or hide the grader's
    boxes), links only within the page, images only as data: URIs."""
    import nh3

    def keep(tag: str, attribute: str, value: str) -> str | None:
        if attribute == "href":
            return value if value.startswith("#") else None
        if attribute == "src":
            return value if value.startswith("data:image/") else None
        return value

    text = html.decode("utf-8", "replace") if isinstance(html, bytes) else str(html)
    return nh3.clean(display(text), tags=set(nh3.ALLOWED_TAGS) | MATHML_TAGS,
                     attributes={**nh3.ALLOWED_ATTRIBUTES, **{tag: MATHML_ATTRIBUTES for tag in MATHML_TAGS}},
                     attribute_filter=keep, url_schemes={"data"},
                     clean_content_tags={"script", "style", "template", "textarea", "title", "noscript"})


# The notebook's LaTeX arrives as MathML (grader.report.math): presentation elements and their layout attributes
# only (no href, no style, no annotation-xml that could carry HTML).
MATHML_TAGS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac",
               "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded",
               "mphantom", "menclose", "semantics", "annotation"}
MATHML_ATTRIBUTES = {"display", "mathvariant", "stretchy", "fence", "separator", "minsize", "maxsize", "form",
                     "lspace", "rspace", "accent", "accentunder", "linethickness", "columnalign", "rowalign",
                     "width", "height", "depth", "notation", "displaystyle", "scriptlevel", "movablelimits",
                     "symmetric", "largeop", "encoding"}


def svg_data_uri(svg: object) -> str:
    """An SVG output as an <img> source: an image cannot run script or load anything."""
    text = svg.decode("utf-8", "replace") if isinstance(svg, bytes) else str(svg)
    return "data:image/svg+xml;base64," + base64.b64encode(display(text).encode("utf-8")).decode("ascii")


# ---------------------------------------------------------------------------------------------- boxes


def _raw_html(html: str, cell_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_raw_cell(str(html), metadata={"raw_mimetype": "text/html", FEEDBACK_MARK: True})
    cell["id"] = cell_id    # fixed ids: the page must be the same bytes for the same input
    return cell


def cell_anchor(index: int) -> str:
    """The id of the anchor before the notebook's cell `index` (0-based), which its feedback box links to."""
    return f"notebook-cell-{index + 1}"


def _exercise_box(exercises: list[ExerciseResult], hidden_details: bool, index: int) -> Markup:
    parts = [student.exercise_html(e, hidden_details=hidden_details, heading="h3") for e in exercises]
    return Markup('<div class="feedback grader-box" data-exercises="{}"><div class="grader-label">Grader feedback'
                  ' on <a class="grader-to-cell" href="#{}">the cell above (cell {})</a></div>{}</div>').format(
        " ".join(e.id for e in exercises), cell_anchor(index), index + 1, Markup("").join(parts))


def _warning_box(warnings: list[GraderWarning], index: int) -> Markup:
    items = Markup("").join(Markup("<li>{}{}</li>").format(f"line {w.line}: " if w.line else "", w.text)
                            for w in warnings)
    return Markup('<div class="feedback grader-box grader-warning"><div class="grader-label">Grader warning on the '
                  'cell above (cell {})</div><ul>{}</ul></div>').format(index + 1, items)


def _summary_box(result: SubmissionResult, unplaced: list[ExerciseResult], hidden_details: bool) -> Markup:
    missing = Markup("").join(student.exercise_html(e, hidden_details=hidden_details, heading="h3")
                              for e in unplaced)
    intro = Markup("<p>The feedback on each exercise follows the cell that defines its function. Only boxes framed "
                   "in blue like this one come from the grader; the notebook as handed in is shown in grey-ruled "
                   "cells.</p>")
    if unplaced:
        intro += Markup("<p>Not found in a cell of this notebook:</p>")
    return Markup('<div class="feedback grader-box grader-summary"><div class="grader-label">Grader feedback</div>'
                  '<h1>{}: {} / {}</h1>{}{}{}</div>').format(
        result.submission, student.score_text(result.total), student.score_text(result.max_total),
        student.summary_html(result, linked=[e.id for e in result.exercises]), intro, missing)


# ---------------------------------------------------------------------------------------------- images


def _embed_images(source: str, folder: Path | None, attachments: Mapping | None) -> str:
    """Markdown images as data: URIs when the file is next to the notebook in its own folder (`folder`, None when
    the folder is shared: _own_folder) or an attachment the cell has, else as their name in text: the page loads
    nothing from disk or network."""
    def replacement(src: str, alt: str) -> str | None:
        if src.startswith(_ATTACHMENT):   # one the cell lacks: nbconvert would raise
            return None if src[len(_ATTACHMENT):] in (attachments or {}) else ""
        if src.startswith("data:"):
            return None
        data_uri = _data_uri(folder, src)
        return data_uri if data_uri is not None else ""

    def markdown_image(match: re.Match) -> str:
        new = replacement(match["src"], match["alt"])
        if new is None:
            return match[0]
        if new:
            return f"![{match['alt']}]({new})"
        return f"*[image: {match['alt'] or Path(match['src']).name}]*"

    def tag_image(match: re.Match) -> str:
        found = _TAG_SRC.search(match[0])
        if found is None:
            return match[0]
        src = found["double"] if found["double"] is not None else found["single"]
        new = replacement(src, "")
        if new is None:
            return match[0]
        if new:
            return match[0].replace(src, new, 1)
        return f"<em>[image: {_escape_text(Path(src).name)}]</em>"

    return _IMAGE_TAG.sub(tag_image, _IMAGE_MARKDOWN.sub(markdown_image, source))


def _own_folder(notebook: Path) -> Path | None:
    """The notebook's folder when it is the student's own (no other submission file in it), else None. In a flat
    class folder (a Canvas zip taken in, `--notebooks` naming the class) the images beside a notebook may be any
    classmate's: a notebook naming one would show it on its own page."""
    folder = notebook.parent
    try:   # stops at the first other one (scandir reads the folder as it goes): notebooks/ holds the class's
        with os.scandir(folder) as entries:
            shared = any(os.path.splitext(entry.name)[1].lower() in NOTEBOOK_SUFFIXES and entry.name != notebook.name
                         for entry in entries)
    except OSError:
        return None
    return None if shared else folder


def _data_uri(folder: Path | None, src: str) -> str | None:
    if folder is None:
        return None    # not the student's own folder (_own_folder): nothing of it is embedded
    if re.match(r"^[a-z][a-z0-9+.-]*:", src, re.IGNORECASE):
        return None    # http:, https:, file: ...: never fetched
    try:
        target = (folder / src).resolve()
        if not target.is_relative_to(folder.resolve()) or not target.is_file():
            return None
        if target.stat().st_size > _MAX_IMAGE_BYTES:
            return None
        kind = mimetypes.guess_type(target.name)[0]
        if kind is None or not kind.startswith("image/"):
            return None
        return f"data:{kind};base64,{base64.b64encode(target.read_bytes()).decode('ascii')}"
    except (OSError, ValueError):
        return None


def _escape_text(text: str) -> str:
    return str(Markup.escape(text))


# ---------------------------------------------------------------------------------------------- export


@functools.lru_cache(maxsize=1)
def _exporter() -> Any:
    """One exporter for every page of a report run: a new one loaded and compiled its ten templates again for each
    student (~15 % of an annotated class's CPU). Each page's own state (its language's highlighter, the resources)
    is set by from_notebook_node on every call."""
    import jinja2
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    class Renderer(IPythonRenderer):
        def block_code(self, code: str, info: str | None = None) -> str:
            """Fenced code in Markdown: highlighted only as HIGHLIGHTED allows, else plain (as with no info)."""
            language = (info or "").strip().split(maxsplit=1)[:1]
            if language and (language[0].lower() not in HIGHLIGHTED or not highlighted(code)):
                return super(IPythonRenderer, self).block_code(code)
            return super().block_code(code, info)

    class Exporter(HTMLExporter):
        def markdown2html(self, context: Any, source: str) -> str:
            """HTMLExporter's, with Renderer for the fenced code."""
            renderer = Renderer(escape=False, attachments=context.get("cell", {}).get("attachments", {}),
                                embed_images=self.embed_images,
                                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                                anchor_link_text=self.anchor_link_text,
                                exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
            return MarkdownWithMath(renderer=renderer).render(source)

        markdown2html = jinja2.pass_context(markdown2html)

    return Exporter(extra_template_basedirs=[str(TEMPLATES)], template_name="annotated", sanitize_html=True,
                    filters={"clean_html": sanitize_html, "svg_data_uri": svg_data_uri})


def _export(nb: nbformat.NotebookNode, name: str) -> str:
    from nbconvert.filters.markdown_mistune import InvalidNotebook
    exporter = _exporter()
    resources = {"metadata": {"name": name}, "feedback_css": student.stylesheet() + Markup(BOX_CSS + STUDENT_CSS),
                 "feedback_csp": student.CSP}
    # An attachment the cell lacks, named where _embed_images does not look (a reference-style image: `[r]:
    # attachment:x`): made again without the attachments of a cell that names one it lacks, then of every cell.
    for lacking in (_names_lacking, lambda cell: True):
        try:
            return display(exporter.from_notebook_node(nb, resources=resources)[0])
        except InvalidNotebook:
            for cell in nb.cells:
                if cell.cell_type == "markdown" and lacking(cell):
                    cell.source = cell.source.replace(_ATTACHMENT, "attachment-not-shown:")
    return display(exporter.from_notebook_node(nb, resources=resources)[0])


def _names_lacking(cell: nbformat.NotebookNode) -> bool:
    """Whether the Markdown cell names an attachment it does not have (as far as a plain search finds names)."""
    return any(name not in cell.get("attachments", {}) for name in _NAMED.findall(cell.source))
