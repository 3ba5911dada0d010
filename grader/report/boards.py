"""Puzzle states drawn as boards: recognised in any decoded value, compared cell by cell, shown as text (as HTML by
boards_html).

Why: a failed move_dir case printed as two 4x4 tuples asks the student to diff 32 strings by eye. Drawn as two
boards with the differing cells marked, the mistake is visible at once. Recognition is generic (a shape and a
blank, never an assignment's name), so every rubric's states are drawn without code of their own:

- rows: a tuple/list of at least 2 equal-length rows of scalar tiles (str/int; '*' is a wildcard);
- flat: a tuple/list of scalars whose length is a perfect square >= 4 (the AIMA 8-puzzle's (1, 4, 2, 0, ...));
- an NDArray (codec.NDArray) of 2 dimensions;
- a sequence: a list/tuple of such states; a set of states (drawn in the wire's canonical order).

A sequence is captioned a path (its states joined by arrows) only when the case says its check judges a path
(CaseResult.path_answer): a list of goals is a list, and a caption must not say what the value is not.

A state must hold exactly one blank (0 or '0') and no repeated tile, so a list of moves such as
[(0, 1), (1, 0)] is not taken for a board. The value a student returned is drawn as a board when it merely has
the shape of one and the expected value is a board: a wrong answer often has two blanks or none.
Values that are not boards fall back to codec.describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence, TypeGuard

from grader import codec

Tile = Any                               # str | int
Board = tuple[tuple[Tile, ...], ...]     # rows of tiles
Cell = tuple[int, int]                   # (row, column)

WILDCARD = "*"
MAX_SIDE = 12          # a 30x30 matrix is data, not a puzzle; drawing it helps nobody
MAX_TILE_CHARS = 6
MAX_STATES = 12        # states of a sequence (a path) or set drawn before "... n more"
DESCRIBE_CHARS = 400

# Board kinds of a Picture; "value" is anything else.
BOARD_KINDS = ("board", "sequence", "set")


# ---------------------------------------------------------------------------------------------- recognise


def _is_tile(value: object) -> bool:
    if type(value) is str:
        return 0 < len(value) <= MAX_TILE_CHARS
    return type(value) is int and -10**6 < value < 10**6


def is_blank(tile: Tile) -> bool:
    return (type(tile) is str and tile == "0") or (type(tile) is int and tile == 0)


def _key(tile: Tile) -> tuple[str, Tile]:
    """Typed identity of a tile: '0' and 0 are different tiles (the int-tiles mistake)."""
    return (type(tile).__name__, tile)


def _is_sequence(value: object) -> TypeGuard[tuple[Any, ...] | list[Any]]:
    """Exactly a tuple or a list (decoded values are plain data; a subclass is something else)."""
    return type(value) in (tuple, list)


def _rows_of(value: object) -> Board | None:
    """The value's rows when it has the shape of a board, whatever its tiles say."""
    if isinstance(value, codec.NDArray):
        if len(value.shape) != 2:
            return None
        value = value.data
    if not _is_sequence(value) or not value:
        return None
    if all(type(row) in (tuple, list) for row in value):
        width = len(value[0])
        if not (2 <= len(value) <= MAX_SIDE and 2 <= width <= MAX_SIDE):
            return None
        if any(len(row) != width for row in value):
            return None
        rows = tuple(tuple(row) for row in value)
    else:
        side = math.isqrt(len(value))
        if side < 2 or side > MAX_SIDE or side * side != len(value):
            return None
        rows = tuple(tuple(value[r * side:(r + 1) * side]) for r in range(side))
    if not all(_is_tile(tile) for row in rows for tile in row):
        return None
    return rows


def _is_state(rows: Board) -> bool:
    """One blank and no tile twice (wildcards aside): what makes a grid of numbers a puzzle state. A pattern
    (wildcards, and the blank left out: the Taoistic `Goal1`) is drawn as a board too."""
    tiles = [tile for row in rows for tile in row]
    blanks = sum(is_blank(t) for t in tiles)
    if any(type(t) is int and t < 0 for t in tiles):
        return False
    if blanks != 1 and not (blanks == 0 and WILDCARD in tiles):
        return False
    named = [_key(t) for t in tiles if t != WILDCARD]
    return len(named) == len(set(named))


def as_board(value: object, *, loose: bool = False) -> Board | None:
    """The value as a board (rows of tiles), or None. `loose`: the shape is enough (a wrong answer's board)."""
    rows = _rows_of(value)
    if rows is None or (not loose and not _is_state(rows)):
        return None
    return rows


@dataclass(frozen=True)
class Picture:
    """How a wire value is drawn: one board, a sequence (a path, a list of goals) or set of boards, or its text."""

    kind: str                         # "board" | "sequence" | "set" | "value"
    boards: tuple[Board, ...]         # one for "board"; in order for "sequence"; canonical order for "set"
    text: str                         # codec.describe of the value: always there, for fallbacks and titles
    form: str = ""                    # the containers, e.g. "tuple of tuples": shown when the two sides differ
    container: str = ""               # "sequence" and "set": the outer container ("list", "tuple", "frozenset")

    @property
    def is_board(self) -> bool:
        return self.kind in BOARD_KINDS


def picture(wire: codec.Wire, *, loose: bool = False) -> Picture:
    """Recognise the boards in a wire value (see the module docstring)."""
    text = _describe(wire)
    try:
        tag = _set_tag(wire)
        if tag is not None:
            # Decoded element by element: a decoded set's order would change with the hash seed.
            elements = [codec.decode(item) for item in wire[tag]]
            boards = [as_board(e, loose=loose) for e in elements]
            if elements and all(b is not None for b in boards):
                form = f"{tag} of {_forms(elements)}"
                return Picture("set", tuple(boards), text, form, tag)       # type: ignore[arg-type]
            return Picture("value", (), text)
        value = codec.decode(wire)
    except codec.CodecError:
        return Picture("value", (), text)
    board = as_board(value, loose=loose)
    if board is not None:
        return Picture("board", (board,), text, _form(value))
    if _is_sequence(value) and value and not _flat_scalars(value):
        boards = [as_board(v, loose=loose) for v in value]
        if all(b is not None for b in boards):
            outer = type(value).__name__
            return Picture("sequence", tuple(boards), text, f"{outer} of {_forms(value)}", outer)  # type: ignore
    return Picture("value", (), text)


def _set_tag(wire: codec.Wire) -> str | None:
    if isinstance(wire, dict) and set(wire) - {"class"} in ({"set"}, {"frozenset"}):
        tag = "set" if "set" in wire else "frozenset"
        return tag if isinstance(wire[tag], list) else None
    return None


def _form(value: object) -> str:
    if isinstance(value, codec.NDArray):
        return "array"
    outer = type(value).__name__
    if _is_sequence(value) and value and all(type(row) in (tuple, list) for row in value):
        inner = sorted({type(row).__name__ for row in value})
        return f"{outer} of {' and '.join(name + 's' for name in inner)}"
    return f"flat {outer}"


def _forms(values: Iterable[object]) -> str:
    return " and ".join(sorted({_form(v) for v in values}))


def _flat_scalars(value: Sequence) -> bool:
    return all(_is_tile(v) for v in value)


def _describe(wire: codec.Wire) -> str:
    try:
        return codec.describe(wire, DESCRIBE_CHARS)
    except Exception:  # a malformed wire value still gets a line, never a crash of the report
        return "<unreadable value>"


# ---------------------------------------------------------------------------------------------- compare


def diff_cells(expected: object, got: object) -> set[Cell]:
    """The (row, column) cells where two boards differ; a cell only one of them has counts as differing.

    Tiles are compared with their types, so '0' and 0 differ. Either argument may be any board form
    (rows, flat, NDArray); raises ValueError when one is not board-shaped.
    """
    e, g = as_board(expected, loose=True), as_board(got, loose=True)
    if e is None or g is None:
        raise ValueError("diff_cells needs two board-shaped values")
    return set(_diff(e, g))


def _diff(e: Board, g: Board) -> frozenset[Cell]:
    cells = set()
    for r in range(max(len(e), len(g))):
        for c in range(max(len(e[0]), len(g[0]))):
            inside_e = r < len(e) and c < len(e[0])
            inside_g = r < len(g) and c < len(g[0])
            if not (inside_e and inside_g) or _key(e[r][c]) != _key(g[r][c]):
                cells.add((r, c))
    return frozenset(cells)


@dataclass(frozen=True)
class Drawn:
    """One board as it is drawn: its cells to mark, a flag for the whole board, and a board to label against."""

    board: Board
    marks: frozenset[Cell] = frozenset()
    flag: str = ""                   # "" | "missing" | "unexpected" | "extra"
    other: Board | None = None       # the board it was compared with (shows '0' vs 0 when only types differ)


@dataclass(frozen=True)
class Comparison:
    """Expected beside got: what a reader needs to see where an answer went wrong."""

    expected: Picture
    got: Picture
    expected_boards: tuple[Drawn, ...]
    got_boards: tuple[Drawn, ...]
    path: bool = False               # the case's check judges a path (CaseResult.path_answer): captioned so

    @property
    def drawn(self) -> bool:
        """Whether boards are drawn at all (else both sides are text)."""
        return self.expected.is_board or self.got.is_board

    @property
    def marked(self) -> bool:
        return any(d.marks or d.flag for d in self.expected_boards + self.got_boards)

    def names(self) -> tuple[str, str]:
        """'expected' and 'got', with their containers when only those differ ("tuple of lists")."""
        e, g = self.expected, self.got
        if e.is_board and g.is_board and e.form != g.form:
            return f"expected ({e.form})", f"got ({g.form})"
        return "expected", "got"


def compare(expected: codec.Wire, got: codec.Wire, *, path: bool = False) -> Comparison:
    """Recognise both sides and mark the cells that differ (per state of a sequence, nearest state of a set).
    `path`: the case's check judges the answer as a path of states (CaseResult.path_answer)."""
    e = picture(expected)
    g = picture(got, loose=e.is_board)
    if g.is_board and not e.is_board:
        e = picture(expected, loose=True)
    if not (e.is_board and g.is_board):
        return Comparison(e, g, tuple(Drawn(b) for b in e.boards), tuple(Drawn(b) for b in g.boards), path)
    if e.kind == "set" and g.kind == "set":
        return Comparison(e, g, _set_side(e.boards, g.boards, "missing"), _set_side(g.boards, e.boards, "unexpected"),
                          path)
    lone = len(e.boards) == 1 or len(g.boards) == 1
    if e.kind == g.kind or ({e.kind, g.kind} <= {"board", "sequence"} and lone):
        # Same kind, or a lone state against a sequence: compare state i with state i.
        return Comparison(e, g, _ordered_side(e.boards, g.boards, "missing"),
                          _ordered_side(g.boards, e.boards, "extra"), path)
    return Comparison(e, g, tuple(Drawn(b) for b in e.boards), tuple(Drawn(b) for b in g.boards), path)


def states_caption(name: str, picture_: Picture, path: bool) -> str:
    """What a side of several states is: a path only when the case's check judges one, else its container
    ("a list of 2 states"); a set is in any order."""
    count = len(picture_.boards)
    states = f"{count} state{'s' if count != 1 else ''}"
    if picture_.kind == "set":
        return f"{name}: a {picture_.container} of {states} (any order)"
    if path:
        return f"{name}: a path of {states}"
    return f"{name}: a {picture_.container} of {states}"


def state_titles(picture_: Picture, path: bool, count: int) -> list[str]:
    """Each drawn state's title: its step along a path (1, 2, ...), its index in a list or tuple ([0], [1], ...)
    as the student would write it, its number in a set (#1, ...)."""
    if picture_.kind == "set":
        return [f"#{n}" for n in range(1, count + 1)]
    if path:
        return [str(n) for n in range(1, count + 1)]
    return [f"[{n}]" for n in range(count)]


def _ordered_side(boards: tuple[Board, ...], others: tuple[Board, ...], flag: str) -> tuple[Drawn, ...]:
    drawn = []
    for i, board in enumerate(boards):
        if i < len(others):
            drawn.append(Drawn(board, _diff(board, others[i]), "", others[i]))
        else:
            drawn.append(Drawn(board, frozenset(), flag if len(others) else ""))
    return tuple(drawn)


def _set_side(boards: tuple[Board, ...], others: tuple[Board, ...], flag: str) -> tuple[Drawn, ...]:
    """A state the other set lacks is flagged and marked against its nearest state of the same shape."""
    keys = {_board_key(b) for b in others}
    drawn = []
    for board in boards:
        if _board_key(board) in keys:
            drawn.append(Drawn(board))
            continue
        same_shape = [o for o in others if len(o) == len(board) and len(o[0]) == len(board[0])]
        nearest = min(same_shape, key=lambda o: len(_diff(board, o)), default=None)
        marks = _diff(board, nearest) if nearest is not None else frozenset()
        drawn.append(Drawn(board, marks, flag, nearest))
    return tuple(drawn)


def _board_key(board: Board) -> tuple:
    return tuple(_key(t) for row in board for t in row)


# ---------------------------------------------------------------------------------------------- labels


def tile_label(tile: Tile, other: Tile | None = None) -> str:
    """What a cell shows: the blank empty, a tile its text, and its repr when only the type differs from
    the other board's tile (so '0' beside 0 is not two identical empty cells)."""
    if other is not None and _key(tile) != _key(other) and str(tile) == str(other):
        return repr(tile)
    if is_blank(tile):
        return ""
    text = str(tile)
    return text if len(text) <= MAX_TILE_CHARS else text[:MAX_TILE_CHARS - 1] + "…"


def cell_labels(drawn: Drawn) -> list[list[str]]:
    board, other = drawn.board, drawn.other
    out = []
    for r, row in enumerate(board):
        line = []
        for c, tile in enumerate(row):
            partner = other[r][c] if other is not None and r < len(other) and c < len(other[0]) else None
            line.append(tile_label(tile, partner))
        out.append(line)
    return out


FLAG_TEXT = {"missing": "missing from got", "unexpected": "not expected", "extra": "extra state"}


# ---------------------------------------------------------------------------------------------- text


Segment = tuple[str, str | None]         # text and a rich style (None: plain)
Line = list[Segment]
MARK_STYLE = "bold red"
TEXT_LEGEND = "[x] marks a cell that differs; an empty cell is the blank"


def _board_lines(drawn: Drawn, title: str) -> list[Line]:
    labels = cell_labels(drawn)
    width = max([len(label) for row in labels for label in row] + [1])
    columns = len(labels[0])
    rule = "─" * (width + 2)
    lines: list[Line] = []
    heading = title + (f" ({FLAG_TEXT[drawn.flag]})" if drawn.flag else "")
    lines.append([(heading, "bold" if not drawn.flag else MARK_STYLE)])
    lines.append([("┌" + "┬".join([rule] * columns) + "┐", None)])
    for r, row in enumerate(labels):
        line: Line = [("│", None)]
        for c, label in enumerate(row):
            marked = (r, c) in drawn.marks
            body = label.rjust(width)
            if marked:
                line.append(("[" + body + "]", MARK_STYLE))
            else:
                line.append((" " + body + " ", None))
            line.append(("│", None))
        lines.append(line)
        if r < len(labels) - 1:
            lines.append([("├" + "┼".join([rule] * columns) + "┤", None)])
    lines.append([("└" + "┴".join([rule] * columns) + "┘", None)])
    return lines


def _width(line: Line) -> int:
    return sum(len(text) for text, _ in line)


def _side_by_side(blocks: list[list[Line]], width: int, gap: int = 3) -> list[Line]:
    """Blocks left to right, wrapped onto new rows of blocks when the width is used up."""
    out: list[Line] = []
    row: list[list[Line]] = []
    used = 0
    for block in blocks:
        block_width = max(_width(line) for line in block)
        if row and used + gap + block_width > width:
            out.extend(_join_row(row, gap))
            out.append([])
            row, used = [], 0
        used += (gap if row else 0) + block_width
        row.append(block)
    if row:
        out.extend(_join_row(row, gap))
    return out


def _join_row(blocks: list[list[Line]], gap: int) -> list[Line]:
    widths = [max(_width(line) for line in block) for block in blocks]
    height = max(len(block) for block in blocks)
    lines: list[Line] = []
    for i in range(height):
        line: Line = []
        for n, block in enumerate(blocks):
            part = block[i] if i < len(block) else []
            line.extend(part)
            pad = widths[n] - _width(part) + (gap if n < len(blocks) - 1 else 0)
            if pad:
                line.append((" " * pad, None))
        while line and line[-1][1] is None and not line[-1][0].strip():
            line.pop()
        lines.append(line)
    return lines


def _side_blocks(picture_: Picture, drawn: tuple[Drawn, ...], name: str,
                 path: bool) -> tuple[str, list[list[Line]]]:
    """A caption for one side and its boards as blocks."""
    if picture_.kind == "board":
        return "", [_board_lines(drawn[0], name)]
    shown = drawn[:MAX_STATES]
    titles = state_titles(picture_, path, len(shown))
    blocks = [_board_lines(d, title) for d, title in zip(shown, titles, strict=True)]
    caption = states_caption(name, picture_, path)
    if len(drawn) > len(shown):
        blocks.append([[(f"... {len(drawn) - len(shown)} more", None)]])
    return caption, blocks


def comparison_lines(comparison: Comparison, width: int = 100) -> list[Line]:
    """Expected and got as text lines of styled segments (boards when they are boards)."""
    e, g = comparison.expected, comparison.got
    e_name, g_name = comparison.names()
    lines: list[Line] = []
    if e.kind == "board" and g.kind == "board":
        lines += _side_by_side([_board_lines(comparison.expected_boards[0], e_name),
                                _board_lines(comparison.got_boards[0], g_name)], width)
    else:
        for name, pic, drawn in ((e_name, e, comparison.expected_boards), (g_name, g, comparison.got_boards)):
            if not pic.is_board:
                lines.append([(f"{name}: ", "bold"), (pic.text, None)])
                continue
            caption, blocks = _side_blocks(pic, drawn, name, comparison.path)
            if caption:
                lines.append([(caption, "bold")])
            lines += _side_by_side(blocks, width)
    if comparison.marked:
        lines.append([(TEXT_LEGEND, "italic")])
    return lines


def plain(lines: Iterable[Line]) -> str:
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines)


def text_comparison(expected: codec.Wire, got: codec.Wire, width: int = 100, *, path: bool = False) -> str:
    """Plain text: boxes, differing cells in [brackets], the blank empty. For Markdown and plain terminals.
    `path`: the case's check judges a path (CaseResult.path_answer)."""
    return plain(comparison_lines(compare(expected, got, path=path), width))


__all__ = ["Board", "Comparison", "Drawn", "Picture", "as_board", "compare", "comparison_lines", "diff_cells",
           "cell_labels", "is_blank", "picture", "plain", "state_titles", "states_caption", "text_comparison",
           "tile_label"]



def input_lines(name: str, wire: codec.Wire) -> list[Line]:
    """A case's input as the student should see it: a board when it is a state, else one line."""
    pic = picture(wire)
    if pic.kind == "board":
        return _board_lines(Drawn(pic.boards[0]), name)
    if pic.is_board:   # a sequence or a set of states: every one drawn, named as the student would index it
        return [line for title, board in input_boards(name, pic) for line in _board_lines(Drawn(board), title)]
    return [[(f"{name} = {codec.describe(wire, INPUT_CHARS)}", None)]]


# A case's input is course data (a fixture), never the student's: shown whole, within this generous bound.
INPUT_CHARS = 20_000


def input_boards(name: str, pic: Picture) -> list[tuple[str, Board]]:
    """(title, board) of each state of an input drawn as several: `SeedPath[0]`, ... or `Moves #1` for a set."""
    if pic.kind == "set":
        return [(f"{name} #{n}", board) for n, board in enumerate(pic.boards, start=1)]
    return [(f"{name}[{n}]", board) for n, board in enumerate(pic.boards)]


def text_input(name: str, wire: codec.Wire) -> str:
    return plain(input_lines(name, wire))
