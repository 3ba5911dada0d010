"""Reference solution of "8-Puzzle with A*" (AIMA style, flat tuples), with fixtures, known mistakes and generators.

Course material, never shown to students. The grader reads it by path and uses it for
expected values (the reference's answer to each rubric case), for targeted feedback (the
known-mistake variants) and for generated cases.

Conventions (those of the notebook, after AIMA's search4e): a state is a flat tuple of 9
ints read row by row, 0 is the blank; an action is the INDEX of the square the blank moves
to; the default goal is (0, 1, 2, 3, 4, 5, 6, 7, 8). Search works on `Node`s: the graded
search functions return a Node (or `failure`), which the rubric turns into plain data with
`reduce: path_states(result)`. h1 and h2 are METHODS of EightPuzzle, graded through calls
such as `EightPuzzle(state, GOAL).h2(Node(state))`.

This module must also pass its own rubric when it is graded as if it were a submission.
Extraction keeps imports, definitions and assignments of data only; `failure` and `cutoff`
call the class Node, so the rubric lists Node in `extraction: allow_calls`.
"""

import heapq
import itertools
import math

Board = tuple[int, ...]

# ---------------------------------------------------------------------------
# Fixtures: literals that rubric expressions may name
# ---------------------------------------------------------------------------

GOAL = (0, 1, 2, 3, 4, 5, 6, 7, 8)

# The notebook's problems e1..e5 (their initial states; the goal is GOAL). Optimal lengths
# 5, 22, 23, 26 and 27 moves.
SEED_STATES = [
    (1, 4, 2, 0, 7, 5, 3, 6, 8),
    (1, 2, 3, 4, 5, 6, 7, 8, 0),
    (4, 0, 2, 5, 1, 3, 7, 8, 6),
    (7, 2, 4, 5, 0, 6, 8, 3, 1),
    (8, 6, 7, 2, 5, 4, 3, 0, 1),
]

# Small weighted graphs for best_first_search through the notebook's generic Problem:
# Problem(initial, goal, actions=..., result=..., action_cost=...) (the keyword arguments
# become attributes that shadow the methods). Each has one cheapest path.
#
# ROADS_REOPEN: S-A costs 5, but S-B-A costs 2. A is first reached for 5; the cheaper path
# must replace it (the `elif child.path_cost < reached[s].path_cost` branch), or the answer
# is S-A-G for 6 instead of S-B-A-G for 3.
ROADS_REOPEN = {'S': {'A': 5, 'B': 1}, 'A': {'G': 1}, 'B': {'A': 1}, 'G': {}}
# ROADS_SHORTCUT: the goal is GENERATED first by the expensive edge S-G (10); testing for the
# goal when a node is generated instead of when it is popped returns that path.
ROADS_SHORTCUT = {'S': {'A': 1, 'G': 10}, 'A': {'G': 1}, 'G': {}}
# ROADS_GREEDY with f = GREEDY_H[state] (greedy best-first): S-A-G (11), not the cheapest
# S-B-G (3). A search that orders the frontier by path_cost instead of by f finds S-B-G.
ROADS_GREEDY = {'S': {'A': 1, 'B': 2}, 'A': {'G': 10}, 'B': {'G': 1}, 'G': {}}
GREEDY_H = {'S': 3, 'A': 0, 'B': 5, 'G': 0}
# ROADS_CUT: the goal cannot be reached: the search returns failure.
ROADS_CUT = {'S': {'A': 1}, 'A': {'S': 1}, 'G': {}}

# ---------------------------------------------------------------------------
# The AIMA-style framework the notebook gives (written anew here)
# ---------------------------------------------------------------------------


class Problem:
    """A search problem; keyword arguments become attributes, so a problem can be built in one expression."""

    def __init__(self, initial=None, goal=None, **attributes):
        self.initial = initial
        self.goal = goal
        vars(self).update(attributes)

    def actions(self, state):
        raise NotImplementedError

    def result(self, state, action):
        raise NotImplementedError

    def is_goal(self, state):
        return state == self.goal

    def action_cost(self, s, a, s1):
        return 1

    def h(self, node):
        return 0


class Node:
    """A node of the search tree: a state, the node it was reached from, the action and the cost so far."""

    def __init__(self, state, parent=None, action=None, path_cost=0):
        self.state = state
        self.parent = parent
        self.action = action
        self.path_cost = path_cost

    def __repr__(self):
        return f"<{self.state}>"

    def __len__(self):
        depth, node = 0, self
        while node.parent is not None:
            depth, node = depth + 1, node.parent
        return depth

    def __lt__(self, other):
        return self.path_cost < other.path_cost


failure = Node('failure', path_cost=math.inf)   # no solution
cutoff = Node('cutoff', path_cost=math.inf)     # a depth-limited search gave up


def expand(problem, node):
    """The children of `node`, one per action."""
    for action in problem.actions(node.state):
        successor = problem.result(node.state, action)
        cost = node.path_cost + problem.action_cost(node.state, action, successor)
        yield Node(successor, node, action, cost)


def _chain(node):
    """The nodes from the root to `node`."""
    nodes = []
    while node is not None:
        nodes.append(node)
        node = node.parent
    return nodes[::-1]


def path_actions(node):
    if node is None or node is failure or node is cutoff:
        return []
    return [n.action for n in _chain(node)[1:]]


def path_states(node):
    if node is None or node is failure or node is cutoff:
        return []
    return [n.state for n in _chain(node)]


class PriorityQueue:
    """Items popped smallest key first; equal keys in insertion order."""

    def __init__(self, items=(), key=lambda x: x):
        self.key = key
        self._heap = []
        self._counter = itertools.count()
        for item in items:
            self.add(item)

    def add(self, item):
        heapq.heappush(self._heap, (self.key(item), next(self._counter), item))

    def pop(self):
        return heapq.heappop(self._heap)[-1]

    def top(self):
        return self._heap[0][-1]

    def __len__(self):
        return len(self._heap)


def g(n):
    return n.path_cost


# ---------------------------------------------------------------------------
# Graded functions
# ---------------------------------------------------------------------------


def best_first_search(problem, f):
    """Expand the node of least f first; a state reached again more cheaply is re-queued with its new node."""
    root = Node(problem.initial)
    frontier = PriorityQueue([root], key=f)
    best = {problem.initial: root}
    while frontier:
        node = frontier.pop()
        if best[node.state] is not node:      # superseded by a cheaper node queued later
            continue
        if problem.is_goal(node.state):
            return node
        for child in expand(problem, node):
            known = best.get(child.state)
            if known is None or child.path_cost < known.path_cost:
                best[child.state] = child
                frontier.add(child)
    return failure


def astar_search(problem, h=None):
    """Best-first search on f(n) = g(n) + h(n); by default the problem's own heuristic."""
    heuristic = problem.h if h is None else h

    def f(node):
        return node.path_cost + heuristic(node)

    return best_first_search(problem, f)


def inversions(board):
    """Pairs of tiles (the blank 0 not counted) in which the larger comes first."""
    tiles = [tile for tile in board if tile != 0]
    return sum(1 for i, first in enumerate(tiles) for second in tiles[i + 1:] if first > second)


def _neighbours(index):
    row, col = divmod(index, 3)
    steps = ((row - 1, col), (row, col - 1), (row, col + 1), (row + 1, col))
    return tuple(3 * r + c for r, c in steps if 0 <= r < 3 and 0 <= c < 3)


class EightPuzzle(Problem):
    """The 8-puzzle on flat 9-tuples: an action is the index of the square the blank moves to."""

    def __init__(self, initial, goal=(0, 1, 2, 3, 4, 5, 6, 7, 8)):
        if inversions(initial) % 2 != inversions(goal) % 2:
            raise ValueError(f"{goal} cannot be reached from {initial}: their inversions differ in parity")
        super().__init__(initial, goal)
        self.home = {tile: divmod(index, 3) for index, tile in enumerate(goal)}

    def actions(self, state):
        return _neighbours(state.index(0))

    def result(self, state, action):
        blank = state.index(0)
        board = list(state)
        board[blank], board[action] = board[action], 0
        return tuple(board)

    def h1(self, node):
        """Misplaced tiles (the blank not counted)."""
        return sum(1 for tile, wanted in zip(node.state, self.goal) if tile != 0 and tile != wanted)

    def h2(self, node):
        """Manhattan distance of every tile (the blank not counted) from its square in the goal."""
        total = 0
        for index, tile in enumerate(node.state):
            if tile != 0:
                row, col = divmod(index, 3)
                home_row, home_col = self.home[tile]
                total += abs(row - home_row) + abs(col - home_col)
        return total

    def h(self, node):
        return self.h2(node)


def successors(state):
    """The states one move of the blank away (for the rubric's path check)."""
    puzzle = EightPuzzle.__new__(EightPuzzle)
    return [puzzle.result(state, action) for action in puzzle.actions(state)]


# ---------------------------------------------------------------------------
# Known mistakes: a wrong answer equal to one of these gets the rubric's targeted feedback
# ---------------------------------------------------------------------------


def inversions_with_blank(board):
    """The blank counted as the tile 0: every tile before it adds an inversion."""
    return sum(1 for i, first in enumerate(board) for second in board[i + 1:] if first > second)


def inversions_ascending(board):
    """Pairs in increasing order (what the notebook's docstring says, against its own text and code)."""
    tiles = [tile for tile in board if tile != 0]
    return sum(1 for i, first in enumerate(tiles) for second in tiles[i + 1:] if first < second)


class EightPuzzleH1WithBlank(EightPuzzle):
    def h1(self, node):
        return sum(1 for tile, wanted in zip(node.state, self.goal) if tile != wanted)


class EightPuzzleH2WithBlank(EightPuzzle):
    def h2(self, node):
        return sum(abs(i // 3 - self.home[t][0]) + abs(i % 3 - self.home[t][1]) for i, t in enumerate(node.state))


class EightPuzzleH2TileNumbers(EightPuzzle):
    """The notebook's own "solution" (AIMA's): distances between the NUMBERS s and g read as squares.

    Right only when every tile's number is its goal square, i.e. for the default goal.
    """

    def h2(self, node):
        return sum(abs(s % 3 - t % 3) + abs(s // 3 - t // 3) for s, t in zip(node.state, self.goal) if s != 0)


class EightPuzzleH2IndexDistance(EightPuzzle):
    """Distance along the flat tuple, |i - j|, instead of rows plus columns."""

    def h2(self, node):
        return sum(abs(i - self.goal.index(t)) for i, t in enumerate(node.state) if t != 0)


def best_first_search_no_reopen(problem, f):
    """A state keeps the first node that reached it, even when a cheaper one comes later."""
    root = Node(problem.initial)
    frontier = PriorityQueue([root], key=f)
    reached = {problem.initial: root}
    while frontier:
        node = frontier.pop()
        if problem.is_goal(node.state):
            return node
        for child in expand(problem, node):
            if child.state not in reached:
                reached[child.state] = child
                frontier.add(child)
    return failure


def best_first_search_goal_on_generation(problem, f):
    """The goal test is applied to children as they are generated, not when they are popped (nor to the root)."""
    root = Node(problem.initial)
    frontier = PriorityQueue([root], key=f)
    best = {problem.initial: root}
    while frontier:
        node = frontier.pop()
        if best[node.state] is not node:
            continue
        for child in expand(problem, node):
            if problem.is_goal(child.state):
                return child
            known = best.get(child.state)
            if known is None or child.path_cost < known.path_cost:
                best[child.state] = child
                frontier.add(child)
    return failure


def best_first_search_by_cost(problem, f):
    """The frontier ordered by path_cost, whatever f says (uniform-cost search)."""
    return best_first_search(problem, g)


def astar_search_greedy(problem, h=None):
    """f(n) = h(n) alone: greedy best-first search, a legal path but not always a shortest one."""
    heuristic = problem.h if h is None else h
    return best_first_search(problem, heuristic)


# ---------------------------------------------------------------------------
# Checks (signature convention of the grader's named checks)
# ---------------------------------------------------------------------------


def check_count(got, expected):
    """A count (inversions, a heuristic) is right when it is the right number, whatever its numeric type.

    A float or a numpy integer serves A* as well as an int (numpy scalars arrive as plain numbers);
    None, bools and strings are not counts.
    """
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False, f"expected the number {expected!r}, got {got!r}"
    if got != expected:
        return False, f"expected {expected!r}, got {got!r}"
    return True, ""


def check_default_heuristic(got, probes):
    """EightPuzzle.h is given code: it must return what the notebook's own h2 returns (the `h2` probe), as a
    number. Whether h2 itself is right is judged in its own exercise, so a wrong h2 is not charged again here;
    an h that raises (AIMA's upstream `return h2(self, node)`, a NameError) or returns None is wrong."""
    own = probes.get("h2")
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False, f"h should return h2's number, got {got!r}"
    if isinstance(own, (int, float)) and not isinstance(own, bool) and got != own:
        return False, f"h returned {got!r} where your h2 returns {own!r}: h should return self.h2(node)"
    return True, ""


# ---------------------------------------------------------------------------
# Case generators: (rng, count) -> list of dicts binding the variables of a call
# ---------------------------------------------------------------------------


def seed_problems(rng, count):
    """The initial states of the notebook's e1..e5 (rng unused: they are fixed), as {state}."""
    return [{"state": state} for state in SEED_STATES[:count]]


def random_boards(rng, count):
    """Any arrangement of the tiles 0..8, solvable or not (for inversions)."""
    boards = []
    for _ in range(count):
        board = list(range(9))
        rng.shuffle(board)
        boards.append({"board": tuple(board)})
    return boards


def _solvable_from(goal, rng):
    """A uniformly random arrangement with the parity of `goal` (so EightPuzzle accepts the pair)."""
    while True:
        board = list(range(9))
        rng.shuffle(board)
        if inversions(board) % 2 == inversions(goal) % 2:
            return tuple(board)


def random_states(rng, count):
    """Uniformly random states solvable for the default goal GOAL, as {state}."""
    return [{"state": _solvable_from(GOAL, rng)} for _ in range(count)]


def random_goal_pairs(rng, count):
    """A random goal other than GOAL and a random state of the same parity, as {state, goal}."""
    pairs = []
    while len(pairs) < count:
        goal = list(range(9))
        rng.shuffle(goal)
        goal = tuple(goal)
        if goal == GOAL:
            continue
        pairs.append({"state": _solvable_from(goal, rng), "goal": goal})
    return pairs


def _walk(goal, steps, rng):
    """The end of a random walk of the blank from `goal` that never undoes its previous move."""
    state, previous = goal, None
    for _ in range(steps):
        options = [s for s in successors(state) if s != previous]
        previous, state = state, rng.choice(options)
    return state


def shallow_problems(rng, count):
    """Random walks of 4 to 10 moves from GOAL (so at most 10 moves from it), as {state}.

    Cheap enough for uniform-cost search (f = g) in a student's notebook.
    """
    return [{"state": _walk(GOAL, rng.randint(4, 10), rng)} for _ in range(count)]


def medium_problems(rng, count):
    """Random walks of 10 to 16 moves from GOAL (so at most 16 moves from it), as {state}.

    Uniform-cost search (A* with h = 0) solves them in tens of milliseconds.
    """
    return [{"state": _walk(GOAL, rng.randint(10, 16), rng)} for _ in range(count)]
