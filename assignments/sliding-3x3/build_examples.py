"""(Re)build the example submissions of the 3x3 sliding puzzle from its template.

The template, the reference module and the rubric are written by `grader assign` from master.ipynb (edit the
master, then run `grader assign assignments/sliding-3x3/master.ipynb`). The master holds the course
notebook's text and given code as they are in submissions/seed-002.ipynb, a student's completed copy kept
unchanged as it was handed in (the course's own notebook is known to us only through it), with the graded
cells solved, and the few edits of its text the template makes (see README.md).

An example submission is the template with its graded cells (SLOTS) filled by a student's solution, as a
student fills them in; each changes exactly what its file name says (see README.md).

Usage: python assignments/sliding-3x3/build_examples.py   (writes next to this file; run assign first)
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "template.ipynb"

# The graded code cells of the template, by cell id, with the first line each must start with (so an
# edited master fails loudly instead of filling the wrong cell).
SLOTS = {
    "cell-015": ("goal", "goal = "),
    "cell-017": ("findZero", "def findZero("),
    "cell-021": ("listOfLists", "def listOfLists("),
    "cell-024": ("tupleOfTuples", "def tupleOfTuples("),
    "cell-027": ("moveUp", "def moveUp("),
    "cell-031": ("moveDown", "def moveDown("),
    "cell-034": ("moveRight", "def moveRight("),
    "cell-036": ("moveLeft", "def moveLeft("),
    "cell-039": ("nextStates", "def nextStates("),
}


# ---------------------------------------------------------------------------
# A student's correct solutions, deliberately not in the seed's or the reference's style
# ---------------------------------------------------------------------------

SOLUTIONS = {
    "goal": "goal = tuple(tuple(range(k, k + 3)) for k in range(0, 9, 3))",

    "findZero": '''\
def findZero(S):
    for r, row in enumerate(S):
        for c, tile in enumerate(row):
            if tile == 0:
                return r, c''',

    "listOfLists": '''\
def listOfLists(S):
    'Transform a tuple of tuples into a list of lists.'
    return [list(row) for row in S]''',

    "tupleOfTuples": '''\
def tupleOfTuples(S):
    'Transform a list of lists into a tuple of tuples.'
    return tuple(map(tuple, S))''',

    # A helper of the student's own, shared by the four moves; "your code here" left above it.
    "moveUp": '''\
def swap(S, r1, c1, r2, c2):
    L = listOfLists(S)
    L[r1][c1], L[r2][c2] = L[r2][c2], L[r1][c1]
    return tupleOfTuples(L)

def moveUp(S, r, c):
    'Move the tile below the blank up.'
    "your code here"
    return swap(S, r, c, r + 1, c)''',

    "moveDown": '''\
def moveDown(S, r, c):
    'Move the tile above the blank down.'
    return swap(S, r, c, r - 1, c)''',

    "moveRight": '''\
def moveRight(S, r, c):
    'Move the tile left of the blank to the right.'
    return swap(S, r, c, r, c - 1)''',

    "moveLeft": '''\
def moveLeft(S, r, c):
    'Move the tile right of the blank to the left.'
    return swap(S, r, c, r, c + 1)''',

    "nextStates": '''\
def nextStates(S):
    'Compute the set of states reachable in one step from the state S.'
    r, c = findZero(S)
    n = len(S)
    Result = set()
    if r + 1 < n:
        Result.add(moveUp(S, r, c))
    if r - 1 >= 0:
        Result.add(moveDown(S, r, c))
    if c - 1 >= 0:
        Result.add(moveRight(S, r, c))
    if c + 1 < n:
        Result.add(moveLeft(S, r, c))
    return Result''',
}


# ---------------------------------------------------------------------------
# Wrong solutions, one realistic bug per example submission
# ---------------------------------------------------------------------------

# Each move is named for where the BLANK goes; nextStates checks the board consistently with that,
# so it still finds the right successors (and search a legal path).
MOVES_REVERSED = {
    "moveUp": '''\
def moveUp(S, r, c):
    'Move the blank up.'
    L = listOfLists(S)
    L[r][c] = L[r-1][c]
    L[r-1][c] = 0
    return tupleOfTuples(L)''',
    "moveDown": '''\
def moveDown(S, r, c):
    'Move the blank down.'
    L = listOfLists(S)
    L[r][c] = L[r+1][c]
    L[r+1][c] = 0
    return tupleOfTuples(L)''',
    "moveRight": '''\
def moveRight(S, r, c):
    'Move the blank to the right.'
    L = listOfLists(S)
    L[r][c] = L[r][c+1]
    L[r][c+1] = 0
    return tupleOfTuples(L)''',
    "moveLeft": '''\
def moveLeft(S, r, c):
    'Move the blank to the left.'
    L = listOfLists(S)
    L[r][c] = L[r][c-1]
    L[r][c-1] = 0
    return tupleOfTuples(L)''',
    "nextStates": '''\
def nextStates(S):
    'Compute the set of states reachable in one step from the state S.'
    r, c = findZero(S)
    Result = set()
    if r > 0:
        Result.add(moveUp(S, r, c))
    if r < 2:
        Result.add(moveDown(S, r, c))
    if c < 2:
        Result.add(moveRight(S, r, c))
    if c > 0:
        Result.add(moveLeft(S, r, c))
    return Result''',
}

# The textbook goal, blank last.
GOAL_BLANK_LAST = {
    "goal": '''\
goal = ((1, 2, 3),
        (4, 5, 6),
        (7, 8, 0)
       )''',
}

# Lets IndexError decide which moves are possible; but S[-1] is no IndexError in Python, so with the
# blank in row 0 (or column 0) moveDown (moveRight) reaches around the board.
NEXT_STATES_TRY_EXCEPT = {
    "nextStates": '''\
def nextStates(S):
    'Compute the set of states reachable in one step from the state S.'
    r, c = findZero(S)
    Result = set()
    for move in [moveUp, moveDown, moveRight, moveLeft]:
        try:
            Result.add(move(S, r, c))
        except IndexError:
            pass    # no tile on that side of the blank
    return Result''',
}

# tuple(L) leaves the rows as lists.
TUPLE_OF_LISTS = {
    "tupleOfTuples": '''\
def tupleOfTuples(S):
    'Transform a list of lists into a tuple of tuples.'
    return tuple(S)''',
}

# Loops over columns first and returns (x, y) = (column, row).
FIND_ZERO_TRANSPOSED = {
    "findZero": '''\
def findZero(S):
    for x in range(3):
        for y in range(3):
            if S[y][x] == 0:
                return (x, y)''',
}

# Copied into the blank, but the tile's old square is never cleared.
MOVE_LEFT_KEEPS_TILE = {
    "moveLeft": '''\
def moveLeft(S, r, c):
    'Move the tile right of the blank to the left.'
    L = listOfLists(S)
    L[r][c] = L[r][c+1]
    return tupleOfTuples(L)''',
}


# ---------------------------------------------------------------------------
# Building notebooks
# ---------------------------------------------------------------------------

def render(fill: dict[str, str]) -> nbformat.NotebookNode:
    """The template with every slot replaced by fill[name]; a valid nbformat 4.5 notebook."""
    nb = copy.deepcopy(nbformat.read(TEMPLATE, as_version=4))
    for cell in nb.cells:
        if cell.id in SLOTS:
            name, first = SLOTS[cell.id]
            if not cell.source.startswith(first):
                raise ValueError(f"{cell.id}: expected the cell of {name}, found {cell.source[:40]!r}")
            cell.source = fill[name]
    nbformat.validate(nb)
    return nb


def submission(overrides: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """The template solved by SOLUTIONS, with some of them replaced."""
    return render({**SOLUTIONS, **(overrides or {})})


def example_submissions() -> dict[str, nbformat.NotebookNode]:
    return {
        "correct": submission(),
        "moves-reversed": submission(MOVES_REVERSED),
        "goal-blank-last": submission(GOAL_BLANK_LAST),
        "next-states-try-except": submission(NEXT_STATES_TRY_EXCEPT),
        "tuple-of-lists": submission(TUPLE_OF_LISTS),
        "find-zero-transposed": submission(FIND_ZERO_TRANSPOSED),
        "move-left-keeps-tile": submission(MOVE_LEFT_KEEPS_TILE),
    }


def main() -> None:
    if str(HERE.parent) not in sys.path:   # run as a script: the shared writer lives in assignments/
        sys.path.insert(0, str(HERE.parent))
    from build_bundled import write_all
    write_all(HERE, example_submissions())


if __name__ == "__main__":
    main()
