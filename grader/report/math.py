"""LaTeX in a notebook's Markdown as MathML, rendered when the page is built (latex2mathml, pure Python).

Why MathML and not KaTeX or MathJax in the page: every current browser draws MathML itself (Chromium since
109, Firefox, Safari), so the page needs no script, no font files and no network, its Content-Security-Policy
stays "no script", and a notebook with fifty formulas costs a few kilobytes instead of a bundled renderer.
What latex2mathml cannot convert stays as the student wrote it, in a code span, so nothing is lost.

Recognized: $$...$$ and \\[...\\] (display), $...$ and \\(...\\) (inline; a $ followed by a space or a digit
after the closing $ is a dollar sign, as in pandoc). Fenced code blocks and code spans are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

MAX_FORMULAS = 2_000    # converted per page; the rest stay as written (latex2mathml: ~0.5 ms of CPU each)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")
# The notebook's Markdown is the student's: each delimiter's body holds no opening of its own kind, so a search
# never scans past the next candidate start and the whole text is read in linear time ("\\(" 16,000 times took
# 2.2 s and grew with the square of the length, hours for one cell within the page's 5,000,000 characters).
_MATH = re.compile(
    r"(?<!\\)\$\$(?P<display>(?:[^$]|\$(?!\$))+?)(?<!\\)\$\$"           # $$ ... $$
    r"|\\\[(?P<display2>(?:[^\\]|\\[^\[\]])+?)\\\]"                     # \[ ... \]
    r"|\\\((?P<inline2>(?:[^\\]|\\[^()])+?)\\\)"                         # \( ... \)
    r"|(?<![\\$])\$(?![\s$])(?P<inline>(?:[^$\n\\]|\\.|\n(?!\s*\n))+?)(?<![\s\\])\$(?!\d)",   # $ ... $
    re.DOTALL)
_SIZE_HINT = re.compile(r"\\[bB]igg?[lrm]?(?![a-zA-Z])")   # \bigl( is ( for the eye; latex2mathml leaves \{ raw
_LEFT_OVER = re.compile(r">[^<]*\\[a-zA-Z{}]")
# Characters Markdown would read inside the MathML's text (emphasis, code, escapes, math again): as entities.
_MARKDOWN_SPECIAL = {"*": "&#42;", "_": "&#95;", "`": "&#96;", "~": "&#126;", "\\": "&#92;", "$": "&#36;",
                     "[": "&#91;", "]": "&#93;"}


def to_mathml(latex: str, *, display: bool = False) -> str | None:
    """One formula as MathML, or None when latex2mathml cannot read it (or is not installed)."""
    try:
        from latex2mathml.converter import convert
    except ImportError:
        return None
    try:
        mathml = convert(_SIZE_HINT.sub("", latex).strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - any LaTeX the converter chokes on stays as written
        return None
    if _LEFT_OVER.search(mathml):    # a command it passed through unconverted: show the LaTeX instead
        return None
    return "".join(_MARKDOWN_SPECIAL.get(char, char) for char in mathml)


@dataclass
class Formulas:
    """How many more formulas the page converts: a notebook chose how many it writes (a million `$a_n$` would take
    the converter minutes), so past MAX_FORMULAS the rest are shown as written."""

    left: int = MAX_FORMULAS


def render_math(markdown: str, formulas: Formulas | None = None) -> str:
    """The Markdown with each formula replaced by its MathML (outside code), while `formulas` has some left."""
    formulas = Formulas() if formulas is None else formulas
    out: list[str] = []
    block: list[str] = []
    fence = ""
    for line in markdown.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if fence:
            out.append(line)
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence):
                fence = ""
        elif opened:
            out.append(_prose("".join(block), formulas))
            block = []
            out.append(line)
            fence = opened[1]
        else:
            block.append(line)
    out.append(_prose("".join(block), formulas))
    return "".join(out)


def _prose(text: str, formulas: Formulas) -> str:
    """Formulas replaced in text outside fenced code, code spans kept as they are."""
    pieces, last = [], 0
    for start, end in _code_spans(text):
        pieces += [_formulas(text[last:start], formulas), text[start:end]]
        last = end
    return "".join(pieces) + _formulas(text[last:], formulas)


def _code_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each code span: a run of backticks up to the next run of the same length (CommonMark's
    rule; a run with none later is text). Each run is looked at twice, so any text is read in linear time."""
    runs = [(run.start(), run.end()) for run in _TICKS.finditer(text)]
    later: dict[int, int] = {}
    closing: list[int | None] = [None] * len(runs)
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        closing[index] = later.get(length)
        later[length] = index
    index = 0
    while index < len(runs):
        close = closing[index]
        if close is None:
            index += 1
            continue
        yield runs[index][0], runs[close][1]
        index = close + 1


def _formulas(text: str, formulas: Formulas) -> str:
    def replace(match: re.Match) -> str:
        if formulas.left <= 0:
            return f"`{match[0]}`" if "`" not in match[0] else match[0]
        formulas.left -= 1
        display = match["display"] is not None or match["display2"] is not None
        latex = next(group for group in (match["display"], match["display2"], match["inline2"], match["inline"])
                     if group is not None)
        mathml = to_mathml(latex, display=display)
        if mathml is None:
            return f"`{match[0]}`" if "`" not in match[0] else match[0]
        return mathml
    return _MATH.sub(replace, text)
