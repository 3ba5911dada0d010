"""A class of Taoistic Search notebooks with a planted copy, for the similarity tests.

Every notebook is the real template with five stubs filled in. Four students wrote their own code, each in
their own style; `copier` handed in `original`'s code with every variable and parameter renamed and the
function cells in another order. All of them share the template's given code (draw, animation,
stateToString, main ...), which must never count.
"""

from __future__ import annotations

import random
from pathlib import Path

import nbformat

from conftest import TEMPLATE

FUNCTIONS = ("find_tile", "move_dir", "next_states", "matches", "manhattan")

HONEST = {
    "ada": {
        "find_tile": '''def find_tile(tile: str, S: State) -> tuple[int, int]:
    for row in range(len(S)):
        for col in range(len(S[row])):
            if S[row][col] == tile:
                return (row, col)
''',
        "move_dir": '''def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    grid = to_list(S)
    grid[row][col], grid[row + dy][col + dx] = grid[row + dy][col + dx], grid[row][col]
    return to_tuple(grid)
''',
        "next_states": '''def next_states(S: State) -> set[State]:
    row, col = find_tile('0', S)
    found = set()
    for dx, dy in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
        if 0 <= row + dy < len(S) and 0 <= col + dx < len(S):
            found.add(move_dir(S, row, col, dx, dy))
    return found
''',
        "matches": '''def matches(Pattern: State, S: State) -> bool:
    for row in range(len(S)):
        for col in range(len(S)):
            if Pattern[row][col] != '*' and Pattern[row][col] != S[row][col]:
                return False
    return True
''',
        "manhattan": '''def manhattan(S1: State, S2: State) -> int:
    distance = 0
    for row in range(len(S2)):
        for col in range(len(S2)):
            tile = S2[row][col]
            if tile == '*' or tile == '0':
                continue
            r, c = find_tile(tile, S1)
            distance = distance + abs(r - row) + abs(c - col)
    return distance
''',
    },
    "bo": {
        "find_tile": '''def find_tile(tile: str, S: State) -> tuple[int, int]:
    flat = [t for line in S for t in line]
    index = flat.index(tile)
    return divmod(index, len(S))
''',
        "move_dir": '''def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    target = (row + dy, col + dx)
    return tuple(tuple(S[target[0]][target[1]] if (i, j) == (row, col) else
                       '0' if (i, j) == target else S[i][j]
                       for j in range(len(S))) for i in range(len(S)))
''',
        "next_states": '''def next_states(S: State) -> set[State]:
    r, c = find_tile('0', S)
    size = len(S)
    moves = {(0, 1), (1, 0), (0, -1), (-1, 0)}
    return {move_dir(S, r, c, a, b) for a, b in moves if r + b in range(size) and c + a in range(size)}
''',
        "matches": '''def matches(Pattern: State, S: State) -> bool:
    pairs = zip(sum(Pattern, ()), sum(S, ()))
    return not any(p not in ('*', s) for p, s in pairs)
''',
        "manhattan": '''def manhattan(S1: State, S2: State) -> int:
    where = {t: divmod(i, len(S1)) for i, t in enumerate(sum(S1, ()))}
    cost = 0
    for i, t in enumerate(sum(S2, ())):
        if t in '*0' and len(t) == 1:
            continue
        y, x = divmod(i, len(S2))
        cost += abs(where[t][0] - y) + abs(where[t][1] - x)
    return cost
''',
    },
    "cy": {
        "find_tile": '''def find_tile(tile: str, S: State) -> tuple[int, int]:
    return next((r, c) for r, line in enumerate(S) for c, t in enumerate(line) if t == tile)
''',
        "move_dir": '''def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    rows = [list(r) for r in S]
    nr, nc = row + dy, col + dx
    moved = rows[nr][nc]
    rows[nr][nc] = '0'
    rows[row][col] = moved
    return tuple(map(tuple, rows))
''',
        "next_states": '''def next_states(S: State) -> set[State]:
    blank_row, blank_col = find_tile('0', S)
    states = []
    if blank_row > 0:
        states.append(move_dir(S, blank_row, blank_col, 0, -1))
    if blank_row < len(S) - 1:
        states.append(move_dir(S, blank_row, blank_col, 0, 1))
    if blank_col > 0:
        states.append(move_dir(S, blank_row, blank_col, -1, 0))
    if blank_col < len(S) - 1:
        states.append(move_dir(S, blank_row, blank_col, 1, 0))
    return set(states)
''',
        "matches": '''def matches(Pattern: State, S: State) -> bool:
    return all(all(p == '*' or p == s for p, s in zip(pr, sr)) for pr, sr in zip(Pattern, S))
''',
        "manhattan": '''def manhattan(S1: State, S2: State) -> int:
    def spot(t):
        return find_tile(t, S1)
    numbered = [(t, r, c) for r, line in enumerate(S2) for c, t in enumerate(line) if t.isdigit() and t != '0']
    return sum(abs(spot(t)[0] - r) + abs(spot(t)[1] - c) for t, r, c in numbered)
''',
    },
    "original": {
        "find_tile": '''def find_tile(tile: str, S: State) -> tuple[int, int]:
    position = None
    for line_number, line in enumerate(S):
        if tile in line:
            position = (line_number, line.index(tile))
            break
    return position
''',
        "move_dir": '''def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    copy = to_list(S)
    other_row = row + dy
    other_col = col + dx
    temporary = copy[other_row][other_col]
    copy[other_row][other_col] = copy[row][col]
    copy[row][col] = temporary
    result = to_tuple(copy)
    return result
''',
        "next_states": '''def next_states(S: State) -> set[State]:
    blank = find_tile('0', S)
    neighbours = set()
    steps = ((0, -1), (0, 1), (-1, 0), (1, 0))
    for step in steps:
        new_row = blank[0] + step[1]
        new_col = blank[1] + step[0]
        if new_row >= 0 and new_col >= 0 and new_row < len(S) and new_col < len(S[0]):
            neighbours.add(move_dir(S, blank[0], blank[1], step[0], step[1]))
    return neighbours
''',
        "matches": '''def matches(Pattern: State, S: State) -> bool:
    result = True
    for line_number in range(len(Pattern)):
        for column in range(len(Pattern[line_number])):
            wanted = Pattern[line_number][column]
            if wanted == '*':
                continue
            if wanted != S[line_number][column]:
                result = False
    return result
''',
        "manhattan": '''def manhattan(S1: State, S2: State) -> int:
    result = 0
    for line_number, line in enumerate(S2):
        for column, tile in enumerate(line):
            if tile == '*':
                continue
            if tile == '0':
                continue
            position = find_tile(tile, S1)
            result += abs(position[0] - line_number)
            result += abs(position[1] - column)
    return result
''',
    },
}

# The copy: original's code, every local name and parameter renamed (the function names are graded, so stay).
RENAMES = {"position": "where_is", "line_number": "i", "line": "current_row", "copy": "board_list",
           "other_row": "r2", "other_col": "c2", "temporary": "swap", "result": "answer", "blank": "zero_at",
           "neighbours": "successors", "steps": "deltas", "step": "d", "new_row": "nr", "new_col": "nc",
           "column": "j", "wanted": "p", "tile": "piece", "Pattern": "pat", "S1": "first", "S2": "second"}
COPIER_ORDER = ("manhattan", "next_states", "matches", "find_tile", "move_dir")


def renamed(code: str) -> str:
    """Rename whole identifiers with Python's own tokenizer, so 'line' does not touch 'line_number'."""
    import io
    import tokenize
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    out = []
    for token in tokens:
        if token.type == tokenize.NAME and token.string in RENAMES:
            token = token._replace(string=RENAMES[token.string])
        out.append(token)
    return tokenize.untokenize(out)


def students() -> dict[str, dict[str, str]]:
    everyone = dict(HONEST)
    everyone["copier"] = {f: renamed(HONEST["original"][f]) for f in COPIER_ORDER}
    return everyone


def write_class(folder: Path) -> dict[str, Path]:
    """One notebook per student in `folder` (the template with the five stubs replaced); the copier's function
    cells are moved to the end of the notebook, in another order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for student, code in students().items():
        notebook = nbformat.read(TEMPLATE, as_version=4)
        cells = []
        for cell in notebook.cells:
            name = cell.source.lstrip()[4:].split("(")[0] if cell.source.lstrip().startswith("def ") else ""
            if cell.cell_type == "code" and name in FUNCTIONS:
                if student == "copier":
                    continue
                cell.source = code[name]
            cells.append(cell)
        if student == "copier":
            before_main = next(i for i, c in enumerate(cells) if c.source.lstrip().startswith("def stateToString"))
            cells[before_main:before_main] = [nbformat.v4.new_code_cell(code[f]) for f in COPIER_ORDER]
        notebook.cells = cells
        paths[student] = folder / f"{student}.ipynb"
        nbformat.write(notebook, paths[student])
    return paths


# ------------------------------------------------------------------------------------ a class of any size

EXTRA_LINES = (
    "print('debug', {a})",
    "assert {a} is not None",
    "{b} = len({a})",
    "{b} = {n}",
    "if {a} is None:\n    return None",
    "{b} = [{a}] * {n}",
    "# checked {n} cases",
)
NAMES = ("S", "tile", "row", "col", "Pattern", "S1", "S2", "dx", "dy")


def variant(code: str, rng: random.Random) -> str:
    """One student's own take on `code`: local names renamed, one to three lines of their own inserted."""
    lines = code.rstrip("\n").split("\n")
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(1, len(lines) - 1)
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())] or "    "
        extra = rng.choice(EXTRA_LINES).format(a=rng.choice(NAMES), b=f"tmp{rng.randint(0, 99)}",
                                               n=rng.randint(2, 999))
        lines[at:at] = [indent + part for part in extra.split("\n")]
    return renamed("\n".join(lines) + "\n")


def synthetic_class(count: int, seed: int = 13) -> dict[str, dict[str, str]]:
    """Student -> function -> code for a class of `count` (bench/bench_similarity.py and the index tests):
    each function one honest student's version renamed with lines of the student's own inserted, so honest
    students share some k-grams as real ones do; every 50th student is a renamed copy of the one before."""
    rng = random.Random(seed)
    honest = list(HONEST)
    code: dict[str, dict[str, str]] = {}
    previous = ""
    for number in range(count):
        name = f"student-{number:04d}"
        if number % 50 == 49 and previous:
            code[name] = {function: renamed(text) for function, text in code[previous].items()}
        else:
            code[name] = {function: variant(HONEST[rng.choice(honest)][function], rng) for function in FUNCTIONS}
        previous = name
    return code
