"""The in-notebook self-check (`check("kit.json")` in Jupyter) as ONE output: an HTML block with the plain
text of the terminal report as its fallback, instead of one output per printed line."""

from __future__ import annotations

import io
from typing import Mapping

from grader.store.results import SubmissionResult


def check_text(result: SubmissionResult, hidden: Mapping[str, int]) -> tuple[str, bool]:
    """The terminal report as plain text (no colour codes, no wrapping), and whether every public case passed."""
    from rich.console import Console

    from grader.report.console import student_report
    # force_jupyter=False: in a kernel rich would otherwise display every print as its own output
    console = Console(file=io.StringIO(), record=True, soft_wrap=True, width=120, color_system=None,
                      force_jupyter=False)
    ok = student_report(result, hidden, console)
    return console.export_text(styles=False), ok


def check_html(result: SubmissionResult, hidden: Mapping[str, int], text: str) -> str:
    """The table of exercises and every exercise with a failing public case (boards, messages, tracebacks),
    hidden cases counted only, and the closing summary line (the text report's last line)."""
    from markupsafe import Markup, escape

    from grader.report import student
    shown = [e for e in result.exercises
             if any(c.status not in ("pass", "unverified") for c in e.cases if c.visibility == "public")]
    sections = Markup("").join(student.exercise_html(e, heading="h3") for e in shown)
    closing = text.rstrip().splitlines()[-1] if text.strip() else ""
    verdict = "ok" if not shown else "failing"
    return str(Markup(
        '<div class="feedback grader-check" data-verdict="{verdict}"><style>{css}</style>'
        '<h2>Self-check: {rubric}</h2>{summary}{sections}<p class="closing"><strong>{closing}</strong></p></div>'
    ).format(verdict=verdict, css=student.stylesheet(), rubric=escape(result.rubric),
             summary=student.summary_html(result, linked=()), sections=sections, closing=escape(closing)))


def show(result: SubmissionResult, hidden: Mapping[str, int]) -> bool:
    """Display the check as one rich output (text/html with a text/plain fallback). Returns whether every public
    case passed."""
    from IPython.display import display
    text, ok = check_text(result, hidden)
    display({"text/html": check_html(result, hidden, text), "text/plain": text}, raw=True)
    return ok


def html_available() -> bool:
    """Whether the HTML block can be made: it needs jinja2 and markupsafe (the reports extra, which a Jupyter
    install brings). A student with `pip install puzzle-grader` alone gets the text report instead: the check
    ended in ModuleNotFoundError: markupsafe."""
    try:
        import jinja2  # noqa: F401
        import markupsafe  # noqa: F401
    except ImportError:
        return False
    return True


def in_notebook() -> bool:
    """True inside a Jupyter kernel (which shows HTML), False in a terminal IPython or plain Python."""
    import sys
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython
    shell = get_ipython()
    return shell is not None and "zmq" in type(shell).__module__.lower()
