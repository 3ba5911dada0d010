"""Reference solution of "The 3x3 Sliding Puzzle", with fixtures, known mistakes, a check and case generators.

Course material, never shown to students. The grader reads it by path and uses it for expected
values (the reference's answer to each rubric case), for targeted feedback (the known-mistake
variants), and for generated cases.

Conventions (those of the notebook): tiles are the ints 0..8, 0 is the blank; a state is a tuple
of three row tuples. moveUp(S, r, c) slides the tile BELOW the blank at (r, c) up into it, so the
blank goes down; moveDown slides the tile above it down, moveRight the tile left of it to the
right, moveLeft the tile right of it to the left. Each may assume that its tile exists.

This module must also pass its own rubric when it is graded as if it were a submission.
Extraction keeps imports, definitions and assignments of data only, so every fixture is a
literal, and there are no top-level calls or loops.
"""

import random

Row = tuple[int, ...]
State = tuple[Row, ...]

# ---------------------------------------------------------------------------
# The notebook's own data (graded: `goal`; given: `start`)
# ---------------------------------------------------------------------------

start = ((8, 0, 6),
         (5, 4, 7),
         (2, 3, 1))

goal = ((0, 1, 2),
        (3, 4, 5),
        (6, 7, 8))

# ---------------------------------------------------------------------------
# Fixtures: literals that rubric expressions may name. `goal` itself is graded (the case
# `call: goal` must read the notebook's value), so it cannot be a fixture: a fixture is data
# the parent computes. Start and Goal are the notebook's start and goal under other names.
# ---------------------------------------------------------------------------

Start = ((8, 0, 6),
         (5, 4, 7),
         (2, 3, 1))

Goal = ((0, 1, 2),
        (3, 4, 5),
        (6, 7, 8))

# moveUp(Start, 0, 1): the blank in the middle, 4 successors.
Middle = ((8, 4, 6),
          (5, 0, 7),
          (2, 3, 1))

# The blank in the bottom right corner: moveUp and moveLeft are impossible here.
Corner = ((1, 2, 3),
          (4, 5, 6),
          (7, 8, 0))

# The blank on the left edge: moveRight is impossible here, and moveDown and moveUp both exist.
LeftEdge = ((3, 1, 2),
            (0, 4, 5),
            (6, 7, 8))

# 16 moves from Goal, so a breadth-first search from it visits a few thousand states only. A
# nextStates that lets moves wrap around the board reaches Goal in 14 of its moves from here, so its
# path is shorter than any legal one: it cannot pass by luck of the search order.
Medium = ((2, 1, 5),
          (3, 0, 7),
          (4, 8, 6))

# ---------------------------------------------------------------------------
# Graded functions
# ---------------------------------------------------------------------------


def findZero(S: State) -> tuple[int, int]:
    """(row, column) of the blank."""
    for r, row in enumerate(S):
        if 0 in row:
            return r, row.index(0)
    raise ValueError("the state has no blank")


def listOfLists(S: State) -> list[list[int]]:
    """A changeable copy: a fresh list per row."""
    return [list(row) for row in S]


def tupleOfTuples(L: list[list[int]]) -> State:
    """Back to a hashable state, so it can go into a set."""
    return tuple(tuple(row) for row in L)


def _slide(S: State, r: int, c: int, dr: int, dc: int) -> State:
    """The tile at (r + dr, c + dc) slides into the blank at (r, c)."""
    L = listOfLists(S)
    L[r][c] = L[r + dr][c + dc]
    L[r + dr][c + dc] = 0
    return tupleOfTuples(L)


def moveUp(S: State, r: int, c: int) -> State:
    """The tile below the blank moves up (the blank goes down)."""
    return _slide(S, r, c, 1, 0)


def moveDown(S: State, r: int, c: int) -> State:
    """The tile above the blank moves down."""
    return _slide(S, r, c, -1, 0)


def moveRight(S: State, r: int, c: int) -> State:
    """The tile left of the blank moves right."""
    return _slide(S, r, c, 0, -1)


def moveLeft(S: State, r: int, c: int) -> State:
    """The tile right of the blank moves left."""
    return _slide(S, r, c, 0, 1)


def nextStates(S: State) -> set[State]:
    """Every state one move away; a move is made only when its tile exists (no wrapping around the board)."""
    r, c = findZero(S)
    last = len(S) - 1
    result = set()
    if r < last:
        result.add(moveUp(S, r, c))
    if r > 0:
        result.add(moveDown(S, r, c))
    if c > 0:
        result.add(moveRight(S, r, c))
    if c < last:
        result.add(moveLeft(S, r, c))
    return result


def search(next_states, start: State, goal: State) -> tuple[State, ...] | None:
    """Breadth-first search with parent links: a shortest path as a tuple of states, or None.

    Stands in for the course's `%run Breadth-First-Fast.ipynb` when this module is graded as a
    submission, and gives the reference's path length for the end-to-end cases.
    """
    parent: dict[State, State | None] = {start: None}
    layer = [start]
    while layer and goal not in parent:
        following = []
        for state in layer:
            for ns in sorted(next_states(state)):
                if ns not in parent:
                    parent[ns] = state
                    following.append(ns)
        layer = following
    if goal not in parent:
        return None
    path = [goal]
    while parent[path[-1]] is not None:
        path.append(parent[path[-1]])
    return tuple(reversed(path))


# ---------------------------------------------------------------------------
# The check of the graded constant `goal`
# ---------------------------------------------------------------------------

BLANK_LAST = ((1, 2, 3), (4, 5, 6), (7, 8, 0))


def _strict(value: object) -> object:
    """Equality that tells a tuple from a list and True from 1: the value with every type written in."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_strict(v) for v in value))
    return (type(value).__name__, value)


def _as_lists(value: object) -> object:
    """The value with every tuple turned into a list: equal for a state and its list of lists."""
    if isinstance(value, (tuple, list)):
        return [_as_lists(v) for v in value]
    return value


def check_goal(got: object, expected: State) -> tuple[bool, str]:
    """goal must be exactly the goal of the picture; common slips get their own explanation.

    (A known-mistake function cannot describe a wrong constant, so the check does it.)
    """
    if _strict(got) == _strict(expected):
        return True, ""
    if got is None:
        return False, "goal is None: define it as a tuple of tuples, like start"
    if _strict(got) == _strict(BLANK_LAST):
        return False, ("this is the usual textbook goal with the blank last, but the goal of this puzzle "
                       "(the right half of the picture, and findZero(goal) == (0, 0)) has the blank in the "
                       "top left corner and the tiles 1 to 8 after it")
    if _as_lists(got) == _as_lists(expected):
        return False, "the tiles are right, but a state must be a tuple of tuples (lists cannot go into a set)"
    return False, "this is not the goal state of the picture"


# ---------------------------------------------------------------------------
# Known mistakes: a wrong answer equal to one of these gets the rubric's targeted feedback
# ---------------------------------------------------------------------------

def findZero_transposed(S: State) -> tuple[int, int]:
    """(column, row) instead of (row, column)."""
    r, c = findZero(S)
    return c, r


def findZero_as_list(S: State) -> list[int]:
    """The right numbers in a list instead of a pair."""
    return list(findZero(S))


def listOfLists_of_tuples(S: State) -> list:
    """list(S): the outer tuple becomes a list, the rows stay tuples (and cannot be changed)."""
    return list(S)


def tupleOfTuples_of_lists(L: list[list[int]]) -> tuple:
    """tuple(L): the rows stay lists, so the state cannot go into a set."""
    return tuple(L)


def _slide_keeping_tile(S: State, r: int, c: int, dr: int, dc: int) -> State:
    """The tile is copied into the blank but its old square is not cleared: two copies, no blank."""
    L = listOfLists(S)
    L[r][c] = L[r + dr][c + dc]
    return tupleOfTuples(L)


def _slide_as_lists(S: State, r: int, c: int, dr: int, dc: int) -> list[list[int]]:
    """The right move, but left as a list of lists."""
    return listOfLists(_slide(S, r, c, dr, dc))


# The name says where the BLANK goes, not the tile: each move does its opposite. Python's negative
# indices make the impossible direction wrap around the board instead of failing.
def moveUp_reversed(S: State, r: int, c: int) -> State:
    return _slide(S, r, c, -1, 0)


def moveDown_reversed(S: State, r: int, c: int) -> State:
    return _slide(S, r, c, 1, 0)


def moveRight_reversed(S: State, r: int, c: int) -> State:
    return _slide(S, r, c, 0, 1)


def moveLeft_reversed(S: State, r: int, c: int) -> State:
    return _slide(S, r, c, 0, -1)


def moveUp_keeps_tile(S: State, r: int, c: int) -> State:
    return _slide_keeping_tile(S, r, c, 1, 0)


def moveDown_keeps_tile(S: State, r: int, c: int) -> State:
    return _slide_keeping_tile(S, r, c, -1, 0)


def moveRight_keeps_tile(S: State, r: int, c: int) -> State:
    return _slide_keeping_tile(S, r, c, 0, -1)


def moveLeft_keeps_tile(S: State, r: int, c: int) -> State:
    return _slide_keeping_tile(S, r, c, 0, 1)


def moveUp_as_lists(S: State, r: int, c: int) -> list[list[int]]:
    return _slide_as_lists(S, r, c, 1, 0)


def moveDown_as_lists(S: State, r: int, c: int) -> list[list[int]]:
    return _slide_as_lists(S, r, c, -1, 0)


def moveRight_as_lists(S: State, r: int, c: int) -> list[list[int]]:
    return _slide_as_lists(S, r, c, 0, -1)


def moveLeft_as_lists(S: State, r: int, c: int) -> list[list[int]]:
    return _slide_as_lists(S, r, c, 0, 1)


def nextStates_wrapping(S: State) -> set[State]:
    """Checks only the moves that would raise IndexError (below and right of the blank); moveDown at
    row 0 and moveRight at column 0 then read S[-1]: the tile on the far side of the board wraps around."""
    r, c = findZero(S)
    result = {moveDown(S, r, c), moveRight(S, r, c)}
    if r < 2:
        result.add(moveUp(S, r, c))
    if c < 2:
        result.add(moveLeft(S, r, c))
    return result


# ---------------------------------------------------------------------------
# Case generators: (rng, count) -> list of dicts binding the variables of a rubric call
# ---------------------------------------------------------------------------

POSITIONS = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2))


def _state_with_blank_at(rng: random.Random, r: int, c: int) -> State:
    """A random arrangement of the tiles 1..8 around the blank at (r, c) (solvable or not: it does not matter)."""
    tiles = list(range(1, 9))
    rng.shuffle(tiles)
    tiles.insert(3 * r + c, 0)
    return tuple(tuple(tiles[3 * k:3 * k + 3]) for k in range(3))


def _cycled_positions(rng: random.Random, count: int, positions: tuple[tuple[int, int], ...]) -> list:
    """count positions that go round all of `positions` (in a random order) before any repeats."""
    order = list(positions)
    rng.shuffle(order)
    return [order[k % len(order)] for k in range(count)]


def random_states(rng: random.Random, count: int) -> list[dict]:
    """{state}: the blank visits every square before any square repeats."""
    return [{"state": _state_with_blank_at(rng, r, c)} for r, c in _cycled_positions(rng, count, POSITIONS)]


def random_lists(rng: random.Random, count: int) -> list[dict]:
    """{rows}: random states written as lists of lists, for tupleOfTuples."""
    return [{"rows": [list(row) for row in case["state"]]} for case in random_states(rng, count)]


def _random_moves(rng: random.Random, count: int, legal) -> list[dict]:
    positions = tuple(p for p in POSITIONS if legal(*p))
    return [{"state": _state_with_blank_at(rng, r, c), "r": r, "c": c}
            for r, c in _cycled_positions(rng, count, positions)]


def random_up(rng: random.Random, count: int) -> list[dict]:
    """{state, r, c} with a tile below the blank."""
    return _random_moves(rng, count, lambda r, c: r < 2)


def random_down(rng: random.Random, count: int) -> list[dict]:
    """{state, r, c} with a tile above the blank."""
    return _random_moves(rng, count, lambda r, c: r > 0)


def random_right(rng: random.Random, count: int) -> list[dict]:
    """{state, r, c} with a tile left of the blank."""
    return _random_moves(rng, count, lambda r, c: c > 0)


def random_left(rng: random.Random, count: int) -> list[dict]:
    """{state, r, c} with a tile right of the blank."""
    return _random_moves(rng, count, lambda r, c: c < 2)
