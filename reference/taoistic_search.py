"""Reference solution of "Taoistic Search" (15-puzzle), with fixtures, known mistakes, checks and case generators.

Course material, never shown to students. The grader reads it by path and uses it for
expected values (the reference's answer to each rubric case), for targeted feedback
(the known-mistake variants) and for relational checks and generated cases.

Conventions (those of the 2023 notebook): a tile is a str '0'..'15', '0' is the blank,
'*' is a wildcard; a state (or pattern, or extended state) is a tuple of row tuples;
move_dir(S, row, col, dx, dy) moves the blank from (row, col) to (row + dy, col + dx),
so dx is a column offset (x axis) and dy a row offset (y axis).

This module must also pass its own rubric when it is graded as if it were a submission.
Extraction keeps imports, definitions and assignments of data only, so every fixture is
a literal (computed once, pasted here), and there are no top-level calls or loops.
"""

import heapq
import random
from typing import Callable

Row = tuple[str, ...]
State = tuple[Row, ...]
Move = tuple[int, int]
NxtStFct = Callable[[State], set[State]]
Heuristic = Callable[[State, State], int]

DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1))

# ---------------------------------------------------------------------------
# Fixtures: literals that rubric expressions may name
# ---------------------------------------------------------------------------

# The search problem of the notebook.
Start = (( '0', '14',  '8', '12'),
         ('10', '11', '13',  '9'),
         ( '6',  '2',  '4', '15'),
         ( '3',  '5',  '7',  '1'))

Goal = (( '0',  '1',  '2',  '3'),
        ( '4',  '5',  '6',  '7'),
        ( '8',  '9', '10', '11'),
        ('12', '13', '14', '15'))

# The groups of tiles that main places one after the other.
TilesList = [['14', '15'], ['12', '13'], ['10', '11'], ['8', '9'], ['3', '7'], ['2', '6'], ['0', '1', '4', '5']]

# intermediate_goals(Goal, TilesList)
Patterns = [
    (( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ( '*',  '*', '14', '15')),
    (( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ('12', '13', '14', '15')),
    (( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ( '*',  '*', '10', '11'),
     ('12', '13', '14', '15')),
    (( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ( '8',  '9', '10', '11'),
     ('12', '13', '14', '15')),
    (( '*',  '*',  '*',  '3'),
     ( '*',  '*',  '*',  '7'),
     ( '8',  '9', '10', '11'),
     ('12', '13', '14', '15')),
    (( '*',  '*',  '2',  '3'),
     ( '*',  '*',  '6',  '7'),
     ( '8',  '9', '10', '11'),
     ('12', '13', '14', '15')),
    (( '0',  '1',  '2',  '3'),
     ( '4',  '5',  '6',  '7'),
     ( '8',  '9', '10', '11'),
     ('12', '13', '14', '15')),
]

# The extended states of the notebook's explanation: stage k of main starts from Start<k>
# and searches for Patterns[k-1] (Goal1 == Patterns[0], Goal2 == Patterns[1]).
Start1 = (( '0', '14',  '*',  '*'),
          ( '*',  '*',  '*',  '*'),
          ( '*',  '*',  '*', '15'),
          ( '*',  '*',  '*',  '*'))

Goal1 = (( '*',  '*',  '*',  '*'),
         ( '*',  '*',  '*',  '*'),
         ( '*',  '*',  '*',  '*'),
         ( '*',  '*', '14', '15'))

Start2 = (( '*',  '*', '13', '12'),
          ( '*',  '*',  '*',  '*'),
          ( '*',  '*',  '0',  '*'),
          ( '*',  '*', '14', '15'))

Goal2 = (( '*',  '*',  '*',  '*'),
         ( '*',  '*',  '*',  '*'),
         ( '*',  '*',  '*',  '*'),
         ('12', '13', '14', '15'))

Start3 = (('10',  '*',  '*',  '*'),
          ( '*', '11',  '*',  '*'),
          ( '*',  '*',  '0',  '*'),
          ('12', '13', '14', '15'))

Start5 = (( '*',  '*',  '3',  '*'),
          ( '*',  '0',  '*',  '7'),
          ( '8',  '9', '10', '11'),
          ('12', '13', '14', '15'))

# The last stage searches with a full state: no wildcards left.
Start7 = (( '5',  '0',  '2',  '3'),
          ( '1',  '4',  '6',  '7'),
          ( '8',  '9', '10', '11'),
          ('12', '13', '14', '15'))

# The real states after stage 1 and stage 2 (the notebook's two states called S).
S1 = (('10',  '8', '13', '12'),
      ('11',  '5',  '2',  '9'),
      ( '6',  '7',  '0',  '4'),
      ( '3',  '1', '14', '15'))

S2 = (('10',  '5',  '8',  '9'),
      ( '6', '11',  '7',  '4'),
      ( '1',  '3',  '0',  '2'),
      ('12', '13', '14', '15'))

# One move of the blank: Start -> StartDown (blank (0, 0) -> (1, 0)), S1 -> S1Left
# (blank (2, 2) -> (2, 1)), Start2 -> Start2Up (blank (2, 2) -> (1, 2), onto a wildcard).
StartDown = (('10', '14',  '8', '12'),
             ( '0', '11', '13',  '9'),
             ( '6',  '2',  '4', '15'),
             ( '3',  '5',  '7',  '1'))

S1Left = (('10',  '8', '13', '12'),
          ('11',  '5',  '2',  '9'),
          ( '6',  '0',  '7',  '4'),
          ( '3',  '1', '14', '15'))

Start2Up = (( '*',  '*', '13', '12'),
            ( '*',  '*',  '0',  '*'),
            ( '*',  '*',  '*',  '*'),
            ( '*',  '*', '14', '15'))

# The first states of the notebook's solution; blanks at (0, 0), (1, 0), (1, 1), (0, 1), (0, 2).
SeedPath = [
    (( '0', '14',  '8', '12'),
     ('10', '11', '13',  '9'),
     ( '6',  '2',  '4', '15'),
     ( '3',  '5',  '7',  '1')),
    (('10', '14',  '8', '12'),
     ( '0', '11', '13',  '9'),
     ( '6',  '2',  '4', '15'),
     ( '3',  '5',  '7',  '1')),
    (('10', '14',  '8', '12'),
     ('11',  '0', '13',  '9'),
     ( '6',  '2',  '4', '15'),
     ( '3',  '5',  '7',  '1')),
    (('10',  '0',  '8', '12'),
     ('11', '14', '13',  '9'),
     ( '6',  '2',  '4', '15'),
     ( '3',  '5',  '7',  '1')),
    (('10',  '8',  '0', '12'),
     ('11', '14', '13',  '9'),
     ( '6',  '2',  '4', '15'),
     ( '3',  '5',  '7',  '1')),
]

# The first states of search(Start1, Goal1, ...): extended states; blanks at
# (0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2).
PatternPath = [
    (( '0', '14',  '*',  '*'),
     ( '*',  '*',  '*',  '*'),
     ( '*',  '*',  '*', '15'),
     ( '*',  '*',  '*',  '*')),
    (( '*', '14',  '*',  '*'),
     ( '0',  '*',  '*',  '*'),
     ( '*',  '*',  '*', '15'),
     ( '*',  '*',  '*',  '*')),
    (( '*', '14',  '*',  '*'),
     ( '*',  '0',  '*',  '*'),
     ( '*',  '*',  '*', '15'),
     ( '*',  '*',  '*',  '*')),
    (( '*',  '0',  '*',  '*'),
     ( '*', '14',  '*',  '*'),
     ( '*',  '*',  '*', '15'),
     ( '*',  '*',  '*',  '*')),
    (( '*',  '*',  '0',  '*'),
     ( '*', '14',  '*',  '*'),
     ( '*',  '*',  '*', '15'),
     ( '*',  '*',  '*',  '*')),
    (( '*',  '*',  '*',  '*'),
     ( '*', '14',  '0',  '*'),
     ( '*',  '*',  '*', '15'),
     ( '*',  '*',  '*',  '*')),
]

# Easy starts for end-to-end runs of main: random walks from Goal (so solvable) on which
# main takes a few milliseconds, with this search and with a naive path-copying A* alike.
EasyStart = (( '5',  '2',  '1',  '3'),
             ('12',  '8',  '9', '11'),
             ('14',  '0',  '4',  '6'),
             ('13', '10',  '7', '15'))

EasyStart2 = (( '8',  '4',  '1',  '2'),
              ('10',  '7', '11',  '5'),
              ( '9', '13',  '0',  '3'),
              ('12', '14',  '6', '15'))

# ---------------------------------------------------------------------------
# Graded functions
# ---------------------------------------------------------------------------

def find_tile(tile: str, S: State) -> tuple[int, int] | None:
    """(row, col) of tile in S, or None when S does not contain it."""
    for row, tiles in enumerate(S):
        for col, t in enumerate(tiles):
            if t == tile:
                return row, col
    return None


def to_list(S: State) -> list[list[str]]:
    return [list(row) for row in S]


def to_tuple(S: list[list[str]]) -> State:
    return tuple(tuple(row) for row in S)


def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    """Move the blank at (row, col) to (row + dy, col + dx): dx runs along a row, dy along a column."""
    L = to_list(S)
    L[row][col] = L[row + dy][col + dx]
    L[row + dy][col + dx] = '0'
    return to_tuple(L)


def next_states(S: State) -> set[State]:
    """The states one move of the blank away from S; a set, so their order never matters."""
    n = len(S)
    row, col = find_tile('0', S)
    result = set()
    for dx, dy in DIRECTIONS:
        if 0 <= row + dy < n and 0 <= col + dx < n:
            result.add(move_dir(S, row, col, dx, dy))
    return result


def matches(pattern: State, S: State) -> bool:
    """A '*' of the pattern matches anything, also a '*' of S; every other tile must be equal."""
    return all(p == '*' or p == s
               for prow, srow in zip(pattern, S)
               for p, s in zip(prow, srow))


def manhattan(S1: State, S2: State) -> int:
    """Sum over the numbered tiles t of S2 of the distance between t in S1 and t in S2.

    Wildcards and the blank are not counted: the blank moves with every step, so counting
    it can overestimate the remaining moves and A* would lose its optimality.
    """
    total = 0
    for row, tiles in enumerate(S2):
        for col, tile in enumerate(tiles):
            if tile not in ('*', '0'):
                r, c = find_tile(tile, S1)
                total += abs(row - r) + abs(col - c)
    return total


def find_numbers(pattern: State) -> list[str]:
    """The tiles of the pattern that are not wildcards (the blank included), row by row."""
    return [tile for row in pattern for tile in row if tile != '*']


find_tiles = find_numbers   # the name of the 2020/21 version of the assignment


def replace_numbers(pattern: State, tiles: list[str]) -> State:
    """The pattern with every tile that is not in `tiles` replaced by the wildcard '*'."""
    keep = set(tiles)
    return tuple(tuple(t if t in keep else '*' for t in row) for row in pattern)


def intermediate_goals(goal: State, tiles_list: list[list[str]]) -> list[State]:
    """The k-th goal keeps the tiles of the first k groups: the groups accumulate."""
    goals: list[State] = []
    tiles: list[str] = []
    for group in tiles_list:
        tiles = tiles + list(group)
        goals.append(replace_numbers(goal, tiles))
    return goals


def extract_move(P1: State, P2: State) -> Move:
    """The direction (dx, dy) in which the blank moved from P1 to P2."""
    r1, c1 = find_tile('0', P1)
    r2, c2 = find_tile('0', P2)
    return c2 - c1, r2 - r1


def extract_move_list(pattern_list: list[State]) -> list[Move]:
    return [extract_move(p, q) for p, q in zip(pattern_list, pattern_list[1:])]


def apply_move_list(S: State, move_list: list[Move]) -> list[State]:
    """The states passed when the moves are applied to S one by one, S itself first."""
    states = [S]
    for dx, dy in move_list:
        row, col = find_tile('0', S)
        S = move_dir(S, row, col, dx, dy)
        states.append(S)
    return states


def search(start: State, goal: State, next_states: NxtStFct, heuristic: Heuristic) -> list[State] | None:
    """A* from start to the first state that matches the pattern goal: an optimal path, or None.

    Parent links instead of copied paths; a counter in the queue entries breaks ties by
    insertion order, so states are never compared with each other. Successors are visited
    in sorted order so that the path found does not depend on the interpreter's hash seed.
    A state reached again on a shorter path is queued again, which keeps the result
    optimal for every admissible heuristic, not only for consistent ones.
    """
    count = 0
    queue = [(heuristic(start, goal), count, start)]
    distance = {start: 0}
    parent: dict[State, State | None] = {start: None}
    done: set[State] = set()
    while queue:
        _, _, state = heapq.heappop(queue)
        if state in done:
            continue
        if matches(goal, state):
            path = [state]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]])
            return path[::-1]
        done.add(state)
        dist = distance[state] + 1
        for ns in sorted(next_states(state)):
            if dist < distance.get(ns, dist + 1):
                distance[ns] = dist
                parent[ns] = state
                done.discard(ns)
                count += 1
                heapq.heappush(queue, (dist + heuristic(ns, goal), count, ns))
    return None


def main() -> list[State] | None:
    """Taoistic search from the global Start to the global Goal, one group of TilesList at a time.

    The globals are read at call time, so a rubric case may set Start to an easier state.
    Like the notebook, the solution lists the states of every stage and ends with Goal.
    """
    state = Start
    solution: list[State] = []
    for pattern in intermediate_goals(Goal, TilesList):
        extended = replace_numbers(state, find_numbers(pattern) + ['0'])
        path = search(extended, pattern, next_states, manhattan)
        if path is None:
            return None
        path = apply_move_list(state, extract_move_list(path))
        state = path[-1]
        solution += path[:-1]
    solution += [Goal]
    return solution


# ---------------------------------------------------------------------------
# Known mistakes: a wrong answer equal to one of these gets the rubric's targeted feedback
# ---------------------------------------------------------------------------

def move_dir_transposed(S: State, row: int, col: int, dx: int, dy: int) -> State:
    """The 2020/21 convention S[row + dx][col + dy]: dx taken as a row offset."""
    L = to_list(S)
    L[row][col] = L[row + dx][col + dy]
    L[row + dx][col + dy] = '0'
    return to_tuple(L)


def find_tile_transposed(tile: str, S: State) -> tuple[int, int] | None:
    """(col, row) instead of (row, col)."""
    position = find_tile(tile, S)
    return None if position is None else (position[1], position[0])


def matches_exact(pattern: State, S: State) -> bool:
    """No wildcard handling: plain equality."""
    return pattern == S


def manhattan_with_blank(S1: State, S2: State) -> int:
    """Also counts the blank when S2 contains it (differs from manhattan exactly when it moved)."""
    total = manhattan(S1, S2)
    target = find_tile('0', S2)
    if target is not None:
        r, c = find_tile('0', S1)
        total += abs(target[0] - r) + abs(target[1] - c)
    return total


def find_numbers_without_blank(pattern: State) -> list[str]:
    """Leaves out the blank, as if '0' were not a numbered tile."""
    return [tile for tile in find_numbers(pattern) if tile != '0']


def intermediate_goals_not_cumulative(goal: State, tiles_list: list[list[str]]) -> list[State]:
    """Each goal keeps only its own group, so main would undo the tiles placed before."""
    return [replace_numbers(goal, list(group)) for group in tiles_list]


def extract_move_of_tile(P1: State, P2: State) -> Move:
    """The direction of the tile that slid into the blank: the negation of the blank's move."""
    dx, dy = extract_move(P1, P2)
    return -dx, -dy


def extract_move_transposed(P1: State, P2: State) -> Move:
    """(row offset, column offset): right for the 2020/21 move_dir, wrong for today's."""
    dx, dy = extract_move(P1, P2)
    return dy, dx


def extract_move_list_transposed(pattern_list: list[State]) -> list[Move]:
    """Each move as (row offset, column offset): right for the 2020/21 move_dir."""
    return [extract_move_transposed(p, q) for p, q in zip(pattern_list, pattern_list[1:])]


def apply_move_list_without_start(S: State, move_list: list[Move]) -> list[State]:
    """Forgets to put the given state first."""
    return apply_move_list(S, move_list)[1:]


# ---------------------------------------------------------------------------
# Relational checks (signature convention of the grader's named checks)
# ---------------------------------------------------------------------------

def _is_direction(move: object) -> bool:
    return (type(move) is tuple and len(move) == 2
            and all(type(v) is int for v in move) and move in DIRECTIONS)


def _reference_move_gives(P1: State, move: Move, P2: State) -> bool:
    """Does today's move_dir, moving the blank of P1 by move without leaving the board, give P2?"""
    blank = find_tile('0', P1)
    if blank is None:
        return False
    (row, col), (dx, dy) = blank, move
    if not (0 <= row + dy < len(P1) and 0 <= col + dx < len(P1[row])):
        return False
    return move_dir(P1, row, col, dx, dy) == P2


def _conventions(options: dict | None) -> tuple[bool, bool]:
    """(reference move_dir accepted, notebook's own move_dir accepted) for options["convention"]."""
    convention = (options or {}).get("convention", "reference")
    if convention not in ("reference", "notebook", "either"):
        raise ValueError(f"unknown convention {convention!r}: use reference, notebook or either")
    return convention in ("reference", "either"), convention in ("notebook", "either")


def _judge_move(P1: State, move: object, P2: State, applied: object, options: dict | None,
                target: str = "P2") -> tuple[bool, str]:
    """Is move a direction that turns P1 into P2 under the accepted convention(s)? (ok, why not)."""
    if not _is_direction(move):
        return False, (f"{move!r} is not one of the directions (1, 0), (-1, 0), (0, 1), (0, -1) "
                       "as a tuple of two ints")
    reference, notebook = _conventions(options)
    if reference and _reference_move_gives(P1, move, P2):
        return True, ""
    reasons = []
    if reference:
        reasons.append(f"moving the blank by {move} (dx along the row, dy along the column) does not give {target}")
    if notebook:
        if isinstance(applied, BaseException):
            reasons.append(f"your move_dir raised {type(applied).__name__}: {applied} when applying {move}")
        elif applied is None:
            reasons.append("the rubric has no 'applied' probe for the notebook's move_dir")
        elif applied == P2 and type(applied) is type(P2):
            # The probe ran in the student's process and could be forged: it may only select a convention
            # the course has actually used, so the parent recomputes the 2020/21 one itself.
            if _transposed_move_gives(P1, move, P2):
                return True, ""
            reasons.append(f"the move {move} gives {target} under neither convention the course has used")
        else:
            reasons.append(f"the move {move} applied with your move_dir gives {applied!r}, not {target}")
    return False, "; ".join(reasons)


def _transposed_move_gives(P1: State, move: tuple[int, int], P2: State) -> bool:
    """Does the 2020/21 move_dir (blank to S[row+dx][col+dy]) turn P1 into P2 with this move?"""
    n = len(P1)
    row, col = find_tile('0', P1)
    dx, dy = move
    if not (0 <= row + dx < n and 0 <= col + dy < n):
        return False
    return move_dir_transposed(P1, row, col, dx, dy) == P2


def check_extract_move(got, args, probes=None, options=None):
    """extract_move(P1, P2) is right iff it is a direction that moves the blank of P1 so that P2 results.

    options["convention"]: "reference" (today's move_dir: the blank goes to S[row+dy][col+dx]),
    "notebook" (the notebook's own move_dir, through the probe "applied" =
    move_dir(P1, row, col, *result) run in the submission) or "either". The notebook
    convention keeps a notebook of the 2020/21 era, whose given move_dir was transposed,
    from losing extract_move when its extract_move agrees with that move_dir.
    """
    P1, P2 = args[0], args[1]
    ok, why = _judge_move(P1, got, P2, (probes or {}).get("applied"), options)
    return ok, ("" if ok else f"extract_move returned {got!r}: {why}")


def check_extract_move_list(got, args, probes=None, options=None):
    """extract_move_list(L) is right iff it is a list of len(L) - 1 moves and move i turns L[i] into L[i+1].

    Same `convention` option as check_extract_move; the probe "applied" is the list of the
    notebook's move_dir results, one per move (an exception if any of them raised).
    """
    states = args[0]
    if type(got) is not list:
        return False, f"extract_move_list must return a list of moves; it returned {got!r}"
    if len(got) != len(states) - 1:
        return False, (f"{len(states)} states need {len(states) - 1} moves; "
                       f"extract_move_list returned {len(got)}: {got!r}")
    applied = (probes or {}).get("applied")
    for i, move in enumerate(got):
        step = applied
        if type(applied) is list:
            step = applied[i] if i < len(applied) else None
        ok, why = _judge_move(states[i], move, states[i + 1], step, options, f"state {i + 1}")
        if not ok:
            return False, f"move {i} does not turn state {i} into state {i + 1}: {why}"
    return True, ""


# ---------------------------------------------------------------------------
# Case generators: (rng, count) -> list of dicts binding the variables of a call.
# Every state is a random walk from Goal, so every problem is solvable.
# ---------------------------------------------------------------------------

def _legal_moves(S: State) -> list[Move]:
    row, col = find_tile('0', S)
    n = len(S)
    return [(dx, dy) for dx, dy in DIRECTIONS if 0 <= row + dy < n and 0 <= col + dx < n]


def _walk(rng: random.Random, S: State, steps: int) -> list[State]:
    """A random walk of the blank that never undoes its previous move; all states, S first."""
    states = [S]
    back = None
    for _ in range(steps):
        dx, dy = rng.choice([m for m in _legal_moves(S) if m != back])
        row, col = find_tile('0', S)
        S = move_dir(S, row, col, dx, dy)
        back = (-dx, -dy)
        states.append(S)
    return states


def _random_state(rng: random.Random) -> State:
    return _walk(rng, Goal, rng.randint(20, 60))[-1]


def _random_tiles(rng: random.Random, low: int, high: int) -> list[str]:
    """Some numbered tiles (the blank excluded), sorted by number as a student would list them."""
    tiles = rng.sample([str(k) for k in range(1, 16)], rng.randint(low, high))
    return sorted(tiles, key=int)


def _maybe_extended(rng: random.Random, S: State) -> State:
    """S itself, or (one time in three) S with all but the blank and a few tiles hidden."""
    if rng.random() < 1 / 3:
        return replace_numbers(S, _random_tiles(rng, 2, 8) + ['0'])
    return S


def random_find_tile(rng: random.Random, count: int) -> list[dict]:
    cases = []
    for _ in range(count):
        state = _random_state(rng)
        cases.append({"state": state, "tile": str(rng.randint(0, 15))})
    return cases


def random_states(rng: random.Random, count: int) -> list[dict]:
    return [{"state": _maybe_extended(rng, _random_state(rng))} for _ in range(count)]


def random_moves(rng: random.Random, count: int) -> list[dict]:
    cases = []
    for _ in range(count):
        state = _maybe_extended(rng, _random_state(rng))
        row, col = find_tile('0', state)
        dx, dy = rng.choice(_legal_moves(state))
        cases.append({"state": state, "row": row, "col": col, "dx": dx, "dy": dy})
    return cases


def random_matches(rng: random.Random, count: int) -> list[dict]:
    """About half match; the state is sometimes an extended state, whose '*' match only a '*'."""
    cases = []
    for _ in range(count):
        state = _random_state(rng)
        tiles = _random_tiles(rng, 1, 6)
        source = state if rng.random() < 0.5 else _random_state(rng)
        pattern = replace_numbers(source, tiles)
        if rng.random() < 1 / 3:
            more = tiles + _random_tiles(rng, 0, 4) if source is state else _random_tiles(rng, 2, 8)
            state = replace_numbers(state, more + ['0'])
        cases.append({"pattern": pattern, "state": state})
    return cases


def random_manhattan(rng: random.Random, count: int) -> list[dict]:
    """s2 is a pattern, in one case of three with the blank; s1 keeps the blank and s2's tiles."""
    cases = []
    for _ in range(count):
        tiles = _random_tiles(rng, 1, 6)
        if rng.random() < 1 / 3:
            tiles = tiles + ['0']
        s2 = replace_numbers(_random_state(rng), tiles)
        s1 = _random_state(rng)
        if rng.random() < 0.75:
            s1 = replace_numbers(s1, tiles + ['0'])
        cases.append({"s1": s1, "s2": s2})
    return cases


def random_replace(rng: random.Random, count: int) -> list[dict]:
    cases = []
    for _ in range(count):
        pattern = _maybe_extended(rng, _random_state(rng))
        tiles = _random_tiles(rng, 0, 8)
        if rng.random() < 0.5:
            tiles.append('0')
        cases.append({"pattern": pattern, "tiles": tiles})
    return cases


def random_extract(rng: random.Random, count: int) -> list[dict]:
    """p2 is p1 after one legal move; row, col is the blank of p1 (for the notebook-convention probe)."""
    cases = []
    for _ in range(count):
        p1 = _maybe_extended(rng, _random_state(rng))
        row, col = find_tile('0', p1)
        dx, dy = rng.choice(_legal_moves(p1))
        cases.append({"p1": p1, "p2": move_dir(p1, row, col, dx, dy), "row": row, "col": col})
    return cases


def random_pattern_paths(rng: random.Random, count: int) -> list[dict]:
    """A walk of 2 to 7 (extended) states; rows, cols are the blanks of all states but the last."""
    cases = []
    for _ in range(count):
        states = _walk(rng, _maybe_extended(rng, _random_state(rng)), rng.randint(1, 6))
        blanks = [find_tile('0', s) for s in states[:-1]]
        cases.append({"states": states,
                      "rows": [r for r, _ in blanks],
                      "cols": [c for _, c in blanks]})
    return cases


def random_move_lists(rng: random.Random, count: int) -> list[dict]:
    """Legal moves in today's convention (dx along a row)."""
    cases = []
    for _ in range(count):
        states = _walk(rng, _maybe_extended(rng, _random_state(rng)), rng.randint(1, 8))
        moves = extract_move_list(states)
        cases.append({"state": states[0], "moves": moves})
    return cases


def random_search(rng: random.Random, count: int) -> list[dict]:
    """Small problems like main's stages, with an optimal solution of 1 to 12 moves.

    start keeps the blank and 2 to 4 tiles of a random state; goal is the pattern of those
    tiles in Goal (sometimes with the blank, as in main's last stage). Harder problems are
    given up by a bounded search, so generation stays fast.
    """
    cases = []
    while len(cases) < count:
        tiles = _random_tiles(rng, 2, 4)
        start = replace_numbers(_random_state(rng), tiles + ['0'])
        if rng.random() < 0.25:
            tiles = tiles + ['0']
        goal = replace_numbers(Goal, tiles)
        if 1 <= manhattan(start, goal) and _moves_needed(start, goal, 12) in range(1, 13):
            cases.append({"start": start, "goal": goal})
    return cases


def _moves_needed(start: State, goal: State, limit: int) -> int | None:
    """The optimal number of moves from start to the pattern goal, or None if it exceeds limit.

    A* that never queues a state whose estimate exceeds limit, so a hard problem is given up
    quickly instead of being solved.
    """
    queue = [(manhattan(start, goal), 0, start)]
    distance = {start: 0}
    while queue:
        _, dist, state = heapq.heappop(queue)
        if dist > distance[state]:
            continue
        if matches(goal, state):
            return dist
        for ns in sorted(next_states(state)):
            estimate = dist + 1 + manhattan(ns, goal)
            if estimate <= limit and dist + 1 < distance.get(ns, limit + 1):
                distance[ns] = dist + 1
                heapq.heappush(queue, (estimate, dist + 1, ns))
    return None
