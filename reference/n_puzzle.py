"""Reference solution of "n-puzzle" (numpy State class, weighted A*), with fixtures, known mistakes, a check and
generators.

Course material, never shown to students. The grader reads it by path and uses it for expected
values (the reference's answer to each rubric case), for targeted feedback (the known-mistake
variants), for the relational check of `solve` and for generated cases.

Conventions (those of the seed notebook): a board is a square numpy array of ints, 0 is the
hole, the goal is 1, 2, ..., n*n - 1 row by row with the hole LAST. An action moves the HOLE:
"U" to the row above, "D" below, "L" to the column on the left, "R" on the right. The board
size is the global PUZZLE_DIM (5 in the notebook); rubric cases on 3x3 and 4x4 boards set it.

This module must also pass its own rubric when it is graded as if it were a submission.
Extraction keeps imports, definitions and assignments of data only, so every fixture is a
literal (boards are nested lists; a case turns one into an array with np.array(...) in the
submission's own numpy), and there are no top-level calls or loops.
"""

import heapq

import numpy as np

PUZZLE_DIM = 5

# The hole moves by (row, column) offset.
MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
OPPOSITE = {"U": "D", "D": "U", "L": "R", "R": "L"}

# ---------------------------------------------------------------------------
# Fixtures: literals that rubric expressions may name (nested lists: boards)
# ---------------------------------------------------------------------------

Solved5 = [[1, 2, 3, 4, 5],
           [6, 7, 8, 9, 10],
           [11, 12, 13, 14, 15],
           [16, 17, 18, 19, 20],
           [21, 22, 23, 24, 0]]

# The notebook's board after its 100,000 random steps (its printed manhattan distance: 82).
# The hole is inside, at (1, 1): all four actions are available.
Board5 = [[23, 22, 21, 8, 3],
          [19, 0, 18, 13, 15],
          [6, 11, 12, 9, 1],
          [24, 4, 17, 20, 14],
          [10, 5, 16, 7, 2]]

# Two boards the notebook's search printed on its way: the hole in the bottom-left corner
# (4, 0), and on the bottom edge at (4, 3).
Board5Corner = [[23, 21, 8, 3, 15],
                [6, 22, 13, 9, 1],
                [11, 12, 19, 4, 14],
                [16, 10, 17, 5, 20],
                [0, 24, 7, 18, 2]]

Board5Edge = [[23, 22, 21, 8, 3],
              [6, 12, 19, 9, 15],
              [11, 13, 1, 5, 14],
              [16, 10, 18, 2, 4],
              [24, 7, 17, 0, 20]]

# The goal one move away: the hole went up from (4, 4).
Solved5Up = [[1, 2, 3, 4, 5],
             [6, 7, 8, 9, 10],
             [11, 12, 13, 14, 15],
             [16, 17, 18, 19, 0],
             [21, 22, 23, 24, 20]]

Solved3 = [[1, 2, 3],
           [4, 5, 6],
           [7, 8, 0]]

# The goal of the other convention (hole first): not solved here.
HoleFirst3 = [[0, 1, 2],
              [3, 4, 5],
              [6, 7, 8]]

# The hole at the top right (0, 2): only D and L.
Board3 = [[4, 1, 0],
          [7, 2, 3],
          [8, 5, 6]]

Board4 = [[5, 1, 3, 4],
          [2, 0, 7, 8],
          [10, 6, 11, 12],
          [9, 13, 14, 15]]

# A walk of the hole on a 3x3 board: Walk3[0] -U-> Walk3[1] -L-> Walk3[2] -L-> Walk3[3] -D-> Walk3[4].
Walk3 = [[[1, 2, 3], [4, 5, 6], [7, 8, 0]],
         [[1, 2, 3], [4, 5, 0], [7, 8, 6]],
         [[1, 2, 3], [4, 0, 5], [7, 8, 6]],
         [[1, 2, 3], [0, 4, 5], [7, 8, 6]],
         [[1, 2, 3], [7, 4, 5], [0, 8, 6]]]


# ---------------------------------------------------------------------------
# Graded code
# ---------------------------------------------------------------------------

class State:
    """A board with the bookkeeping of a search node: its depth (1 for a start), the action that
    led to it and its parent State."""

    def __init__(self, state, depth=1, last_move=None, parent=None):
        self.state = state
        self.depth = depth
        self.last_move = last_move
        self.parent = parent

    @staticmethod
    def getSolution():
        n = PUZZLE_DIM
        return State(np.append(np.arange(1, n * n), 0).reshape(n, n))

    def zeropos(self):
        """(row, column) of the hole, as plain ints."""
        rows, cols = np.nonzero(self.state == 0)
        if len(rows) == 0:
            raise ValueError("No zero found")
        return int(rows[0]), int(cols[0])

    def available_actions(self):
        """The actions that keep the hole on the board, in the order U, D, L, R."""
        row, col = self.zeropos()
        n = len(self.state)
        return [action for action, (dr, dc) in MOVES.items() if 0 <= row + dr < n and 0 <= col + dc < n]

    def do_action(self, action, *, as_child=True):
        """The hole moved by action: a new child State (own board copy, depth + 1, this state as parent),
        or with as_child=False this very State, changed in place."""
        if action not in MOVES:
            raise ValueError("Invalid action")
        target = type(self)(self.state.copy(), self.depth + 1, action, self) if as_child else self
        row, col = target.zeropos()
        dr, dc = MOVES[action]
        if not (0 <= row + dr < len(target.state) and 0 <= col + dc < len(target.state)):
            raise ValueError(f"action {action} moves the hole off the board")
        board = target.state
        board[row, col], board[row + dr, col + dc] = board[row + dr, col + dc], 0
        return target

    def cost(self):
        return self.depth - 1

    def manhattan_distance(self):
        """Sum over the numbered tiles (not the hole) of the distance to their goal square."""
        n = len(self.state)
        total = 0
        for (row, col), tile in np.ndenumerate(self.state):
            if tile != 0:
                goal_row, goal_col = divmod(int(tile) - 1, n)
                total += abs(goal_row - row) + abs(goal_col - col)
        return total

    def is_solved(self):
        n = len(self.state)
        return bool(np.array_equal(self.state, np.append(np.arange(1, n * n), 0).reshape(n, n)))

    def __eq__(self, other):
        return np.array_equal(self.state, other.state)

    def __hash__(self):
        return hash(self.state.tobytes())

    def __repr__(self):
        return str(self.state)


def reconstruct_path(state):
    """The actions (of the hole) from the start of the search to state, first action first."""
    path = []
    while state is not None and state.last_move is not None:
        path.append(state.last_move)
        state = state.parent
    return path[::-1]


def hole_to_tile(haction):
    """A move of the hole, said as the move of the tile that slides into it: the opposite direction."""
    if haction not in OPPOSITE:
        raise ValueError("Invalid action")
    return OPPOSITE[haction]


def solve(state):
    """An optimal list of hole actions from state to the goal (A* with the Manhattan distance).

    Works on tuples, not on States, so it is fast enough to give every rubric case its expected
    length. Successors are expanded in the order U, D, L, R and ties broken by insertion order,
    so the answer is the same in every run.
    """
    board = tuple(int(v) for v in np.asarray(state.state).flatten())
    return _astar(board, int(round(len(board) ** 0.5)))


def _goal(n):
    return tuple(range(1, n * n)) + (0,)


def _manhattan(board, n):
    return sum(abs(i // n - (t - 1) // n) + abs(i % n - (t - 1) % n) for i, t in enumerate(board) if t)


def _astar(board, n, limit=None):
    """Optimal hole actions from board to the goal; None when there is none within `limit` moves."""
    goal = _goal(n)
    steps = {"U": -n, "D": n, "L": -1, "R": 1}
    count = 0
    queue = [(_manhattan(board, n), 0, count, board)]
    distance = {board: 0}
    parent = {board: None}
    while queue:
        _, dist, _, current = heapq.heappop(queue)
        if dist > distance[current]:
            continue
        if current == goal:
            actions = []
            while parent[current] is not None:
                current, action = parent[current]
                actions.append(action)
            return actions[::-1]
        hole = current.index(0)
        row, col = divmod(hole, n)
        for action, step in steps.items():
            if (action == "U" and row == 0 or action == "D" and row == n - 1
                    or action == "L" and col == 0 or action == "R" and col == n - 1):
                continue
            cells = list(current)
            cells[hole], cells[hole + step] = cells[hole + step], 0
            child = tuple(cells)
            if dist + 1 < distance.get(child, dist + 2):
                estimate = dist + 1 + _manhattan(child, n)
                if limit is not None and estimate > limit:
                    continue
                distance[child] = dist + 1
                parent[child] = (current, action)
                count += 1
                heapq.heappush(queue, (estimate, dist + 1, count, child))
    return None


# ---------------------------------------------------------------------------
# Known mistakes: a wrong answer equal to one of these gets the rubric's targeted feedback.
# The graded "function" of the State exercises is the class, so these are State subclasses.
# ---------------------------------------------------------------------------

class StateZeroposTransposed(State):
    """(column, row) instead of (row, column)."""

    def zeropos(self):
        row, col = State.zeropos(self)
        return col, row


class StateActionsOfTile(State):
    """Names the actions by the tile that would move: U when the tile below the hole can slide up."""

    def available_actions(self):
        return [OPPOSITE[action] for action in State.available_actions(self)]


class StateActionsTransposed(State):
    """Rows and columns swapped: U/D decided by the hole's column, L/R by its row."""

    def available_actions(self):
        return State.available_actions(State(self.state.T))


class StateMovesTile(State):
    """U moves the tile below the hole up (so the hole down): the tile's convention, not the hole's."""

    def do_action(self, action, *, as_child=True):
        result = State.do_action(self, OPPOSITE.get(action, action), as_child=as_child)
        result.last_move = action if as_child else result.last_move
        return result


class StateSharesBoard(State):
    """Forgets to copy: the child moves the hole on its parent's board, so the parent changes too."""

    def do_action(self, action, *, as_child=True):
        if not as_child:
            return State.do_action(self, action, as_child=False)
        child = type(self)(self.state, self.depth + 1, action, self)
        State.do_action(child, action, as_child=False)
        return child


class StateManhattanWithBlank(State):
    """Also counts the hole's distance to its goal square (the bottom-right corner)."""

    def manhattan_distance(self):
        n = len(self.state)
        row, col = State.zeropos(self)
        return State.manhattan_distance(self) + (n - 1 - row) + (n - 1 - col)


class StateManhattanHoleFirst(State):
    """Goal squares of the hole-first goal (tile t at divmod(t, n)) instead of divmod(t - 1, n)."""

    def manhattan_distance(self):
        n = len(self.state)
        total = 0
        for (row, col), tile in np.ndenumerate(self.state):
            if tile != 0:
                goal_row, goal_col = divmod(int(tile), n)
                total += abs(goal_row - row) + abs(goal_col - col)
        return total


class StateSolvedHoleFirst(State):
    """Compares with the hole-first goal 0, 1, ..., n*n - 1."""

    def is_solved(self):
        n = len(self.state)
        return bool(np.array_equal(self.state, np.arange(n * n).reshape(n, n)))


def reconstruct_path_unreversed(state):
    """Forgets to reverse: the last action first."""
    return reconstruct_path(state)[::-1]


def reconstruct_path_with_start(state):
    """Walks up to None instead of to the start, so the start's last_move (None) comes first."""
    return [None] + reconstruct_path(state)


def hole_to_tile_same(haction):
    """Returns the hole's own direction: the tile moves the opposite way."""
    return haction


# ---------------------------------------------------------------------------
# The check of solve (signature convention of the grader's named checks)
# ---------------------------------------------------------------------------

def _shown(value):
    """A value for a message; an object the codec could not carry (it has .type and .repr) by its type."""
    if hasattr(value, "type") and hasattr(value, "repr"):
        return f"a {value.type} object"
    return repr(value)


def _apply(board, moves):
    """(the board as a flat tuple after the hole actions, None, "") or (None, index, reason) at the first bad one."""
    n = len(board)
    cells = [int(v) for row in board for v in row]
    hole = cells.index(0)
    for index, move in enumerate(moves):
        if not isinstance(move, str) or move not in MOVES:
            return None, index, f"{_shown(move)} is not one of the actions 'U', 'D', 'L', 'R'"
        dr, dc = MOVES[move]
        row, col = divmod(hole, n)
        if not (0 <= row + dr < n and 0 <= col + dc < n):
            return None, index, f"{move!r} moves the hole at ({row}, {col}) off the board"
        target = (row + dr) * n + col + dc
        cells[hole], cells[target] = cells[target], 0
        hole = target
    return tuple(cells), None, ""


def check_solution(got, expected, variables, options):
    """solve(State(board)) is right iff its hole actions lead from board to the goal; credit by length.

    Full credit up to options["full_ratio"] times the length of the reference's (optimal) solution;
    above that the credit is full_ratio * optimal / length, never below options["min_credit"]. The
    board comes from the case's variables (trusted data), never from the child.
    """
    board = variables["board"]
    n = len(board)
    full_ratio = float(options.get("full_ratio", 1.5))
    min_credit = float(options.get("min_credit", 0.5))
    if hasattr(got, "shape") and hasattr(got, "data"):      # a numpy array of actions, decoded
        got = list(got.data) if len(got.shape) == 1 else got
    if got is None:
        return False, "solve returned None: no solution"
    if isinstance(got, str):
        # Not a convention the text allows: it asks for "the list of hole actions, e.g. ['U', 'L', 'D']" and solve's
        # signature says list[str]. Whether the letters would have solved the board is worth saying all the same.
        solves = set(got) <= set(OPPOSITE) and _apply(board, list(got))[0] == _goal(n)
        shown = repr(got) if len(got) <= 40 else f"{got[:40]!r}..."
        return False, (f"solve returned a string of actions ({shown}) where the text asks for the list of hole "
                       "actions, e.g. ['U', 'L', 'D'] (solve's signature says list[str]): return list(...) of them"
                       + ("; read as that list, they do reach the goal" if solves else ""))
    if not isinstance(got, (list, tuple)):
        return False, f"solve must return a list of actions such as ['U', 'L']; it returned {_shown(got)}"
    moves = list(got)
    final, bad, why = _apply(board, moves)
    if final is None:
        message = f"action {bad} of {len(moves)}: {why}"
    elif final != _goal(n):
        rows = [list(final[i:i + n]) for i in range(0, n * n, n)]
        message = f"after the {len(moves)} actions the board is {rows}, not the goal"
    else:
        message = ""
    if message:
        tiles = [OPPOSITE.get(m, m) if isinstance(m, str) else m for m in moves]
        if _apply(board, tiles)[0] == _goal(n):
            message += (". Read as moves of the TILES they do solve the board: solve returns the actions "
                        "of the hole (as do_action takes them), not hole_to_tile of them")
        elif _apply(board, moves[::-1])[0] == _goal(n):
            message += (". Read last first they do solve the board: the first action must come first "
                        "(reverse what you collect while walking up the parents)")
        return False, message
    best = len(expected)
    if len(moves) <= full_ratio * best:
        return 1.0, f"a valid solution of {len(moves)} actions (the shortest has {best})"
    credit = max(min_credit, full_ratio * best / len(moves))
    return credit, (f"a valid solution, but of {len(moves)} actions: the shortest has {best}, and full "
                    f"credit goes up to {int(full_ratio * best)}")


# ---------------------------------------------------------------------------
# Case generators: (rng, count) -> list of dicts binding the variables of a call.
# Boards are nested lists of ints; sizes 3, 4 and 5 (cases set PUZZLE_DIM to len(board)).
# ---------------------------------------------------------------------------

def _goal_board(n):
    return [[(r * n + c + 1) % (n * n) for c in range(n)] for r in range(n)]


def _walk(rng, n, steps):
    """A random walk of the hole from the goal that never undoes its previous action: a solvable board."""
    cells = [v for row in _goal_board(n) for v in row]
    hole = cells.index(0)
    back = None
    for _ in range(steps):
        row, col = divmod(hole, n)
        legal = [a for a, (dr, dc) in MOVES.items()
                 if 0 <= row + dr < n and 0 <= col + dc < n and a != back]
        action = rng.choice(legal)
        dr, dc = MOVES[action]
        target = (row + dr) * n + col + dc
        cells[hole], cells[target] = cells[target], 0
        hole, back = target, OPPOSITE[action]
    return [cells[i:i + n] for i in range(0, n * n, n)]


def _shuffled(rng, n):
    """Any arrangement (solvable or not): enough for the methods that only look at a board."""
    cells = list(range(n * n))
    rng.shuffle(cells)
    return [cells[i:i + n] for i in range(0, n * n, n)]


def random_boards(rng, count):
    """Boards of sizes 3 to 5, the hole anywhere."""
    return [{"board": _shuffled(rng, rng.choice((3, 4, 5)))} for _ in range(count)]


def random_actions(rng, count):
    """A board and an action that keeps its hole on the board."""
    cases = []
    for _ in range(count):
        board = _shuffled(rng, rng.choice((3, 4, 5)))
        n = len(board)
        row, col = next((r, c) for r in range(n) for c in range(n) if board[r][c] == 0)
        legal = [a for a, (dr, dc) in MOVES.items() if 0 <= row + dr < n and 0 <= col + dc < n]
        cases.append({"board": board, "action": rng.choice(legal)})
    return cases


def random_near_goal(rng, count):
    """Half of them solved, the others a few actions (or a hole-first goal) away from it."""
    cases = []
    for k in range(count):
        n = rng.choice((3, 4, 5))
        kind = k % 4
        if kind in (0, 2):
            board = _goal_board(n)
        elif kind == 1:
            board = _walk(rng, n, rng.randint(1, 6))
        else:
            board = [[r * n + c for c in range(n)] for r in range(n)]
        cases.append({"board": board})
    return cases


def scrambled(rng, count, n, low, high):
    """Solvable n x n boards whose shortest solution has low to high actions (random walks, checked with A*)."""
    cases = []
    while len(cases) < count:
        board = _walk(rng, n, rng.randint(2 * low, 3 * high))
        flat = tuple(v for row in board for v in row)
        moves = _astar(flat, n, limit=high)
        if moves is not None and low <= len(moves) <= high:
            cases.append({"board": board})
    return cases


def scrambled_3x3(rng, count):
    return scrambled(rng, count, 3, 14, 22)


def scrambled_4x4(rng, count):
    return scrambled(rng, count, 4, 14, 24)


def scrambled_5x5(rng, count):
    return scrambled(rng, count, 5, 12, 20)
