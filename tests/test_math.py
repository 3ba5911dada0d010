"""LaTeX in Markdown becomes MathML at build time; code and dollar amounts are left alone."""

from __future__ import annotations

import re

import pytest

from grader.report.math import render_math, to_mathml

pytest.importorskip("latex2mathml")


def formulas(html: str) -> list[str]:
    return re.findall(r'<math xmlns="http://www.w3.org/1998/Math/MathML" display="(\w+)">', html)


def test_inline_and_display_formulas_become_mathml() -> None:
    text = "From $P_1$ to $P_{i+1}$:\n$$ (r, c) = \\texttt{find_tile}(0, P_1)\n$$\nand \\(a^*\\), \\[x\\]."
    out = render_math(text)
    assert formulas(out) == ["inline", "inline", "block", "inline", "block"]
    assert "$" not in out and "\\(" not in out
    assert "<msub><mi>P</mi><mn>1</mn></msub>" in out
    assert "find&#95;tile" in out and "*" not in out and "_" not in out    # no Markdown emphasis can start


def test_code_money_and_what_cannot_be_converted_stay_as_written() -> None:
    text = "It costs $5 and $10. Use `$x$` or\n```\ny = '$z$'\n```\nand $\\unknowncommand{x}$ and \\$a\\$."
    out = render_math(text)
    assert formulas(out) == []
    assert "It costs $5 and $10." in out and "`$x$`" in out and "y = '$z$'" in out
    assert "`$\\unknowncommand{x}$`" in out and "\\$a\\$" in out


def test_size_hints_do_not_leave_raw_commands() -> None:
    mathml = to_mathml(r"\bigl\{ (1, 0), (0, 1) \bigr\}")
    assert mathml is not None and "\\" not in mathml and "&#92;" not in mathml
