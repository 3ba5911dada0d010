"""Expected beside got as HTML: boards as tables with the differing cells highlighted (the HTML reports).

Apart from `boards` (the model and the terminal's drawing) because it needs markupsafe, which comes with the
[reports] extra: the student's self-check draws boards in the terminal without it.
"""

from __future__ import annotations

from markupsafe import Markup

from grader.report.boards import (FLAG_TEXT, MAX_STATES, WILDCARD, Drawn, Picture, cell_labels, compare, is_blank,
                                  state_titles, states_caption)
from grader import codec

HTML_CSS = """
.cmp { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; margin: .5em 0; }
.side { display: flex; flex-direction: column; gap: .3em; }
.side > .caption { font-weight: 600; }
.states { display: flex; flex-wrap: wrap; gap: .8em; align-items: flex-start; }
figure.state { margin: 0; display: inline-flex; flex-direction: column; align-items: center; }
figure.state figcaption { font-size: .85em; color: #333; margin-bottom: .2em; font-weight: 600; }
figure.state.flagged figcaption { color: #b00020; }
table.board { border-collapse: collapse; font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
  font-size: 15px; background: #fff; }
table.board td { border: 1px solid #555; width: 2.1em; height: 2.1em; min-width: 2.1em; text-align: center;
  vertical-align: middle; padding: 0; }
table.board td.blank { background: #d9d9d9; }
table.board td.wild { color: #888; }
table.board td.diff { background: #ffd23f; outline: 3px solid #d62828; outline-offset: -3px; font-weight: 700; }
table.board td.blank.diff { background: #f4a259; }
.legend { font-size: .85em; color: #333; margin: .3em 0 .8em 0; }
.swatch { display: inline-block; width: 1em; height: 1em; vertical-align: -0.15em; border: 1px solid #555;
  margin: 0 .3em 0 .8em; }
.swatch.diff { background: #ffd23f; outline: 2px solid #d62828; outline-offset: -2px; }
.swatch.blank { background: #d9d9d9; }
.value { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; white-space: pre-wrap; word-break: break-all; }
.arrow { align-self: center; color: #777; }
"""

HTML_LEGEND = Markup('<p class="legend">'
                     '<span class="swatch diff"></span>a cell that differs from the other side'
                     '<span class="swatch blank"></span>the blank</p>')


def html_board(drawn: Drawn, caption: str, role: str) -> Markup:
    labels = cell_labels(drawn)
    rows = []
    for r, row in enumerate(drawn.board):
        cells = []
        for c, tile in enumerate(row):
            classes = ["tile"]
            if is_blank(tile):
                classes.append("blank")
            elif tile == WILDCARD:
                classes.append("wild")
            if (r, c) in drawn.marks:
                classes.append("diff")
            cells.append(Markup('<td class="{}" title="{}">{}</td>').format(
                " ".join(classes), f"row {r}, column {c}: {tile!r}", labels[r][c]))
        rows.append(Markup("<tr>{}</tr>").format(Markup("").join(cells)))
    flag = FLAG_TEXT.get(drawn.flag, "")
    figure_class = "state flagged" if flag else "state"
    heading = caption + (f" ({flag})" if flag else "")
    return Markup('<figure class="{}" data-role="{}"><figcaption>{}</figcaption>'
                  '<table class="board" data-role="{}">{}</table></figure>').format(
        figure_class, role, heading, role, Markup("").join(rows))


def _html_side(pic: Picture, drawn: tuple[Drawn, ...], role: str, name: str, path: bool) -> Markup:
    """One side of a comparison; `role` ("expected" | "got") is a stable data attribute, `name` its caption;
    `path`: the case's check judges a path, whose states are joined by arrows."""
    if not pic.is_board:
        return Markup('<div class="side" data-role="{}"><div class="caption">{}</div>'
                      '<div class="value">{}</div></div>').format(role, name, pic.text)
    if pic.kind == "board":
        return Markup('<div class="side" data-role="{}">{}</div>').format(role, html_board(drawn[0], name, role))
    shown = drawn[:MAX_STATES]
    caption = states_caption(name, pic, path)
    titles = state_titles(pic, path, len(shown))
    figures = [html_board(d, title, role) for d, title in zip(shown, titles, strict=True)]
    joined = Markup('<span class="arrow">→</span>' if path and pic.kind == "sequence" else "").join(figures)
    more = Markup('<span class="arrow">… {} more</span>').format(len(drawn) - len(shown)) \
        if len(drawn) > len(shown) else Markup("")
    return Markup('<div class="side" data-role="{}"><div class="caption">{}</div>'
                  '<div class="states">{}{}</div></div>').format(role, caption, joined, more)


def html_comparison(expected: codec.Wire, got: codec.Wire, *, path: bool = False) -> Markup:
    """Expected beside got as HTML (boards as tables, differing cells highlighted, a legend); needs HTML_CSS.
    `path`: the case's check judges a path (CaseResult.path_answer)."""
    comparison = compare(expected, got, path=path)
    e_name, g_name = comparison.names()
    body = Markup('<div class="cmp">{}{}</div>').format(
        _html_side(comparison.expected, comparison.expected_boards, "expected", e_name, path),
        _html_side(comparison.got, comparison.got_boards, "got", g_name, path))
    if comparison.drawn:
        body += HTML_LEGEND
    return body


def html_input(name: str, wire: codec.Wire) -> Markup:
    """A case's input: a board when it is a state, else one line of code."""
    from grader.report.boards import INPUT_CHARS, input_boards, picture
    pic = picture(wire)
    if pic.kind == "board":
        return html_board(Drawn(pic.boards[0]), name, "input")
    if pic.is_board:
        return Markup("").join(html_board(Drawn(board), title, "input") for title, board in input_boards(name, pic))
    return Markup('<p class="input"><code>{} = {}</code></p>').format(name, codec.describe(wire, INPUT_CHARS))
