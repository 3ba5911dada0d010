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

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
_MATH = re.compile(
    r"(?<!\\)\$\$(?P<display>.+?)(?<!\\)\$\$"                   # $$ ... $$
    r"|\\\[(?P<display2>.+?)\\\]"                               # \[ ... \]
    r"|\\\((?P<inline2>.+?)\\\)"                                # \( ... \)
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


def render_math(markdown: str) -> str:
    """The Markdown with each formula replaced by its MathML (outside code)."""
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
            out.append(_prose("".join(block)))
            block = []
            out.append(line)
            fence = opened[1]
        else:
            block.append(line)
    out.append(_prose("".join(block)))
    return "".join(out)


def _prose(text: str) -> str:
    """Formulas replaced in text outside fenced code, code spans kept as they are."""
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [_formulas(text[last:span.start()]), span[0]]
        last = span.end()
    return "".join(pieces) + _formulas(text[last:])


def _formulas(text: str) -> str:
    def replace(match: re.Match) -> str:
        display = match["display"] is not None or match["display2"] is not None
        latex = next(group for group in (match["display"], match["display2"], match["inline2"], match["inline"])
                     if group is not None)
        mathml = to_mathml(latex, display=display)
        if mathml is None:
            return f"`{match[0]}`" if "`" not in match[0] else match[0]
        return mathml
    return _MATH.sub(replace, text)
