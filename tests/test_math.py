"""LaTeX in Markdown becomes MathML at build time; code and dollar amounts are left alone."""

from __future__ import annotations

import re

import pytest

from grader.report.math import render_math, to_mathml
from testclock import within

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


def test_a_notebooks_markdown_is_read_in_linear_time_whatever_it_holds(tmp_path) -> None:
    """The Markdown is the student's: 16,000 `\\(` with no `\\)` took 2.2 s and grew with the square of the length
    (a cell of the page's 5,000,000 characters: hours), and so did `\\[`, `$$` and runs of backticks of every
    length. 400 kB of each must be read within a CPU limit of 20 s (the old code is killed by it; CPU time, not
    wall: a busy machine does not change it)."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
        from grader.report.math import render_math
        texts = [unit * (400_000 // len(unit)) for unit in ("\\\\(", "\\\\[", "$$", "$$a", "$a ", "`a")]
        texts.append("a".join("`" * length for length in range(1, 890)))
        for text in texts:
            render_math(text)
        print("read")
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=within(600),
                          cwd=tmp_path)
    assert done.stdout.strip() == "read", (done.returncode, done.stderr[-2000:])


def test_a_page_converts_at_most_max_formulas_and_shows_the_rest_as_written() -> None:
    """Each formula costs the converter about a millisecond and the notebook chose how many it writes: past the
    page's MAX_FORMULAS (its cells share one count) they stay as written, in code spans."""
    from grader.report.math import MAX_FORMULAS, Formulas
    page = Formulas()
    first = render_math(" ".join(f"$x_{{{n}}}$" for n in range(MAX_FORMULAS - 2)), page)
    second = render_math("$y$ and $z$ and $w_1$ and \\(v\\)", page)
    assert len(formulas(first)) == MAX_FORMULAS - 2
    assert len(formulas(second)) == 2 and "`$w_1$`" in second and "`\\(v\\)`" in second
    assert page.left == 0
    assert formulas(render_math("$y$")) == ["inline"]     # a new page starts again
