"""(Re)build the n-puzzle template and its example submissions from one description, so they stay consistent.

The notebook is the seed's (a student's numpy `State` class for the 5x5 puzzle and a weighted
A* that ran as a top-level loop), turned into an assignment: the graded State methods
(zeropos, available_actions, do_action, manhattan_distance, is_solved) and the helpers
reconstruct_path and hole_to_tile are slots, and the top-level search became the graded
function `solve(state)`. A slot holds one graded piece of code: the template gets its stub, a
submission a student's solution. Each example submission changes exactly what its file name
says (see README.md).

submissions/seed-003.ipynb is not built here: it is an unchanged copy of the seed notebook.

Usage: python assignments/n-puzzle/build_examples.py   (writes next to this file)
"""

from __future__ import annotations

from dataclasses import dataclass
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

METHODS = ("zeropos", "available_actions", "do_action", "manhattan_distance", "is_solved")
FUNCTIONS = ("reconstruct_path", "hole_to_tile", "solve")


@dataclass(frozen=True)
class Cell:
    """One notebook cell of a description: markdown, or code whose {slot} fields are filled per notebook."""

    kind: str                       # "markdown" | "code"
    source: str


def md(source: str) -> Cell:
    return Cell("markdown", source)


def code(source: str) -> Cell:
    return Cell("code", source)


# ---------------------------------------------------------------------------
# The notebook: the seed's text and given code, {slots} for the graded code
# ---------------------------------------------------------------------------

INTRODUCTION = md(r'''# The n-puzzle with A*

A board is a square numpy array of ints: `0` is the hole, the goal is `1, 2, ..., n*n - 1` row by
row with the hole **last**. An action moves the **hole**: `"U"` to the row above, `"D"` below,
`"L"` to the column on the left, `"R"` on the right. The size of the board is `PUZZLE_DIM`
(5 here; try 3 while you test).

Write the methods of `State` marked `"your code here"` (`zeropos`, `available_actions`,
`do_action`, `manhattan_distance`, `is_solved`), the helpers `reconstruct_path` and
`hole_to_tile`, and finally `solve`, the A* search.''')

IMPORTS = code('''from tqdm.auto import tqdm
import numpy as np
from icecream import ic''')

CONSTANTS = code('''PUZZLE_DIM = 5
RANDOMIZE_STEPS = 100_000
HEURISTIC_WEIGHT = 1.5
HEURISTIC_WEIGHT_MULT=1.05
HEURISTIC_WEIGHT_MSTEPS = 10**PUZZLE_DIM
MAX_HEURISTIC_WEIGHT = 3''')

RNG = code('''rng = np.random.Generator(np.random.PCG64([PUZZLE_DIM, RANDOMIZE_STEPS]))''')

HEURISTIC_TEXT = md('''As priority value, i will use heuristic expected cost function `h`.

In this case, i used **manhattan distance** as `h`, proven to be the best choice for path searching problems in grid-like environments where movement is restricted to horizontal and vertical directions


*sources:<br/>https://theory.stanford.edu/~amitp/GameProgramming/Heuristics.html, <br/> https://pages.cs.wisc.edu/~dyer/cs540/notes/search2.html*''')

STATE_CLASS = code('''
class State:

    state: np.ndarray
    depth: int
    last_move: str
    parent: "State"

    def __init__(self, state: np.ndarray,depth:int=1,last_move:str=None,parent: "State" = None):
        self.state = state
        self.depth = depth
        self.last_move = last_move
        self.parent = parent

    @staticmethod
    def getSolution():
        return State(np.array([i for i in range(1, PUZZLE_DIM**2)]+[0]).reshape(PUZZLE_DIM, PUZZLE_DIM))

    @staticmethod
    def getRandom():
        return State(rng.permutation(State.getSolution().state))
    
    def randomize(self, steps: int):
        for _ in tqdm(range(steps), desc="Randomizing"):
            action = rng.choice(self.available_actions())
            self.state = self.do_action(action,as_child=False).state

{zeropos}

{available_actions}
    
    def swap(self, pos1, pos2):
        self.state[pos1], self.state[pos2] = self.state[pos2], self.state[pos1]

{do_action}
    
    def cost(self):
        return self.depth-1

    def __str__(self):
        return str(self.state)
    
    def __repr__(self):
        return str(self.state)
    
    def __eq__(self, other):
        return np.array_equal(self.state, other.state)
    
    def __hash__(self):
        return hash(self.state.tobytes())
    
{manhattan_distance}
    
    def tot_cost(self):
        return self.cost() + HEURISTIC_WEIGHT*self.manhattan_distance()
    
    def __lt__(self, other):
        return self.manhattan_distance() < other.manhattan_distance()
    
{is_solved}
    
''')

HELPERS = code('''{reconstruct_path}

{hole_to_tile}

def expand_encoding(act:str)->str:
    """ Returns the full action string """
    if act == "U":
        return "Up"
    if act == "D":
        return "Down"
    if act == "L":
        return "Left"
    if act == "R":
        return "Right"
    raise ValueError("Invalid action")

def movingTilePos(parent_state:State,tile_action:str):
    """ Returns the position of the tile before the movement """
    x,y = parent_state.zeropos()
    if tile_action == "U":
        return x+1,y
    if tile_action == "D":
        return x-1,y
    if tile_action == "L":
        return x,y+1
    if tile_action == "R":
        return x,y-1
    raise ValueError("Invalid action")

def explain_path(state: State):
    """ Explains the path printing the actions the user would do (in tile encoding) """
    path = list()
    if state is not None:
        while state.last_move is not None:
            tile_action = hole_to_tile(state.last_move)
            state = state.parent
            tpos = movingTilePos(state,tile_action)
            path.append((tile_action,tpos))
    path = path[::-1] # reverse the path
    for action, pos in path:
        print(f"Move tile \\"{state.state[pos]}\\" {expand_encoding(action)}")''')

RANDOMIZE = code('''
state = State.getSolution()
state.randomize(RANDOMIZE_STEPS)
ic(state)
ic(state.manhattan_distance())''')

ASTAR_TEXT = md('''## A* Algorithm

First let's define a priority queue using `heapq` module:''')

PRIORITY_QUEUE = code('''import heapq

class PriorityQueue:
    def __init__(self):
        self.elements = []
    
    def empty(self):
        return len(self.elements) == 0
    
    def append(self, item, priority):
        heapq.heappush(self.elements, (priority, item))
    
    def popleft(self):
        return heapq.heappop(self.elements)[1]
    
    def __bool__(self):
        """ Override the boolean operator to allow direct check with while and if statements """
        return not self.empty()
    
    def __len__(self):
        return len(self.elements)
    
    def __str__(self):
        return str(self.elements)
    
    def __repr__(self):
        return str(self.elements)
    
class StatePriorityQueue(PriorityQueue):
    def append(self, item: State):
        super().append(item, item.tot_cost())''')

SOLVE_TEXT = md('''## Exercise: `solve`

Write `solve(state)`: an A* search from `state` (a `State`) that returns the list of **hole**
actions leading to the goal, first action first, e.g. `['U', 'L', 'D']` (`reconstruct_path`
gives them). Use `StatePriorityQueue` (priority `cost() + HEURISTIC_WEIGHT * manhattan_distance()`)
and a set of visited states.

It is graded on boards of sizes 3 to 5, each solvable within about 25 actions: the actions must
lead to the goal, and a solution at most 1.5 times as long as the shortest one earns full credit
(longer ones earn less). Weighted A* with a weight of at most 1.5 stays within that.''')

SOLVE = code('''{solve}''')

RUN = code('''path = solve(state)
print(f"solved in {len(path)} actions:")
print(path)''')

CELLS = [INTRODUCTION, IMPORTS, CONSTANTS, RNG, HEURISTIC_TEXT, STATE_CLASS, HELPERS, RANDOMIZE,
         ASTAR_TEXT, PRIORITY_QUEUE, SOLVE_TEXT, SOLVE, RUN]


# ---------------------------------------------------------------------------
# The template's stubs
# ---------------------------------------------------------------------------

STUBS = {
    "zeropos": '''    def zeropos(self):
        """ (row, column) of the hole (the 0) in self.state """
        "your code here"''',
    "available_actions": '''    def available_actions(self) -> list[str]:
        """ The actions ("U", "D", "L", "R") that keep the hole on the board """
        "your code here"''',
    "do_action": '''    def do_action(self, action: str,*,as_child=True) -> "State":
        """ Moves the hole. as_child=True: a new State with a copy of the board, depth + 1,
        last_move = action and parent = self. as_child=False: this State itself, changed """
        "your code here"''',
    "manhattan_distance": '''    def manhattan_distance(self):
        """ Sum of the distances of the tiles (not the hole) to their goal squares """
        "your code here"''',
    "is_solved": '''    def is_solved(self):
        """ Is the board the goal (1, 2, ..., with the hole last)? """
        "your code here"''',
    "reconstruct_path": '''def reconstruct_path(state: State):
    """ Reconstructs the path from the initial state to the given state from the hole POV """
    "your code here"''',
    "hole_to_tile": '''def hole_to_tile(haction:str):
    """ Returns the opposite encoding, switching from moving the hole to moving the tile """
    "your code here"''',
    "solve": '''def solve(state: State) -> list[str]:
    """ A* from state to the goal: the list of hole actions, first action first """
    "your code here"''',
}


# ---------------------------------------------------------------------------
# A student's correct solutions, in the seed's spirit but not its code
# ---------------------------------------------------------------------------

SOLUTIONS = {
    "zeropos": '''    def zeropos(self):
        n = len(self.state)
        for row in range(n):
            for col in range(n):
                if self.state[row, col] == 0:
                    return row, col
        raise ValueError("No zero found")''',

    "available_actions": '''    def available_actions(self) -> list[str]:
        row, col = self.zeropos()
        last = PUZZLE_DIM - 1
        return [a for a, ok in (("U", row > 0), ("D", row < last), ("L", col > 0), ("R", col < last)) if ok]''',

    "do_action": '''    def do_action(self, action: str,*,as_child=True) -> "State":
        deltas = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
        if action not in deltas:
            raise ValueError("Invalid action")
        target = State(self.state.copy(), self.depth + 1, action, self) if as_child else self
        row, col = target.zeropos()
        d_row, d_col = deltas[action]
        target.swap((row, col), (row + d_row, col + d_col))
        return target''',

    # np.int64, as the seed's: the rubric reduces numpy scalars to Python ones.
    "manhattan_distance": '''    def manhattan_distance(self):
        distance = 0
        for (row, col), tile in np.ndenumerate(self.state):
            if tile != 0:
                goal_row, goal_col = divmod(tile - 1, PUZZLE_DIM)
                distance += abs(goal_row - row) + abs(goal_col - col)
        return distance''',

    "is_solved": '''    def is_solved(self):
        return np.array_equal(self.state, State.getSolution().state)''',

    "reconstruct_path": '''def reconstruct_path(state: State):
    path = []
    while state.parent is not None:
        path.insert(0, state.last_move)
        state = state.parent
    return path''',

    "hole_to_tile": '''def hole_to_tile(haction:str):
    opposite = {"U": "D", "D": "U", "L": "R", "R": "L"}
    if haction not in opposite:
        raise ValueError("Invalid action")
    return opposite[haction]''',

    # The seed's top-level loop, as a function with a fixed weight (no re-weighting).
    "solve": '''def solve(state: State) -> list[str]:
    frontier = StatePriorityQueue()
    frontier.append(state)
    visited = set()
    while frontier:
        current_state = frontier.popleft()
        if current_state in visited:
            continue
        visited.add(current_state)
        if current_state.is_solved():
            return reconstruct_path(current_state)
        for action in current_state.available_actions():
            new_state = current_state.do_action(action)
            if new_state not in visited:
                frontier.append(new_state)
    return None''',
}


# ---------------------------------------------------------------------------
# Other solutions, one set per example submission
# ---------------------------------------------------------------------------

# Correct, written with numpy: zeropos gives np.int64s, available_actions a tuple in another
# order, manhattan_distance an np.int64, is_solved an np.bool_. The reduces make them count.
NUMPY_STYLE = {
    "zeropos": '''    def zeropos(self):
        return tuple(np.argwhere(self.state == 0)[0])''',

    "available_actions": '''    def available_actions(self) -> tuple[str, ...]:
        row, col = self.zeropos()
        n = self.state.shape[0]
        return tuple(a for a, ok in (("L", col > 0), ("R", col < n - 1), ("U", row > 0), ("D", row < n - 1)) if ok)''',

    "do_action": '''    def do_action(self, action: str,*,as_child=True) -> "State":
        target = State(np.copy(self.state), self.depth + 1, action, self) if as_child else self
        row, col = target.zeropos()
        to_row, to_col = {"U": (row - 1, col), "D": (row + 1, col), "L": (row, col - 1), "R": (row, col + 1)}[action]
        target.state[[row, to_row], [col, to_col]] = target.state[[to_row, row], [to_col, col]]
        return target''',

    "manhattan_distance": '''    def manhattan_distance(self):
        n = self.state.shape[0]
        tiles = self.state.flatten()
        where = np.arange(n * n)[tiles != 0]
        goal = tiles[tiles != 0] - 1
        return np.abs(where // n - goal // n).sum() + np.abs(where % n - goal % n).sum()''',

    "is_solved": '''    def is_solved(self):
        return (self.state == State.getSolution().state).all()''',

    "solve": '''def solve(state: State) -> list[str]:
    counter = 0
    queue = [(state.manhattan_distance(), counter, state)]
    seen = {state}
    while queue:
        _, _, current = heapq.heappop(queue)
        if current.is_solved():
            return reconstruct_path(current)
        for action in current.available_actions():
            child = current.do_action(action)
            if child not in seen:
                seen.add(child)
                counter += 1
                heapq.heappush(queue, (child.cost() + 1.2 * child.manhattan_distance(), counter, child))
    return None''',
}

# Greedy best-first: the priority is the heuristic alone. Valid, but often much longer.
GREEDY_SOLVE = {
    "solve": '''def solve(state: State) -> list[str]:
    frontier = PriorityQueue()
    frontier.append(state, state.manhattan_distance())
    visited = {state}
    while frontier:
        current_state = frontier.popleft()
        if current_state.is_solved():
            return reconstruct_path(current_state)
        for action in current_state.available_actions():
            new_state = current_state.do_action(action)
            if new_state not in visited:
                visited.add(new_state)
                frontier.append(new_state, new_state.manhattan_distance())
    return None''',
}

# Returns what a person does with the tiles (as explain_path prints), not the hole's actions.
TILE_MOVES_SOLVE = {
    "solve": SOLUTIONS["solve"].replace(
        "            return reconstruct_path(current_state)",
        "            return [hole_to_tile(a) for a in reconstruct_path(current_state)]  # the tiles I move"),
}

# The child shares its parent's board.
SHARED_BOARD = {
    "do_action": SOLUTIONS["do_action"].replace("State(self.state.copy(), ", "State(self.state, "),
}

# The hole counted as a tile (it belongs in the bottom-right corner).
MANHATTAN_WITH_HOLE = {
    "manhattan_distance": '''    def manhattan_distance(self):
        distance = 0
        n = len(self.state)
        for (row, col), tile in np.ndenumerate(self.state):
            goal_row, goal_col = divmod((tile - 1) % (n * n), n)
            distance += abs(goal_row - row) + abs(goal_col - col)
        return distance''',
}

# The actions come out last first.
UNREVERSED_PATH = {
    "reconstruct_path": '''def reconstruct_path(state: State):
    path = []
    while state.last_move is not None:
        path.append(state.last_move)
        state = state.parent
    return path''',
}

# Written for the 5x5 board only: a fixed 5 (and 4) where PUZZLE_DIM belongs.
HARDCODED_FIVE = {
    "zeropos": '''    def zeropos(self):
        for i in range(5):
            for j in range(5):
                if self.state[i, j] == 0:
                    return i, j''',
    "available_actions": '''    def available_actions(self) -> list[str]:
        x, y = self.zeropos()
        actions = []
        if x > 0:
            actions.append("U")
        if x < 4:
            actions.append("D")
        if y > 0:
            actions.append("L")
        if y < 4:
            actions.append("R")
        return actions''',
    "manhattan_distance": '''    def manhattan_distance(self):
        distance = 0
        for i in range(5):
            for j in range(5):
                if self.state[i, j] != 0:
                    d, m = divmod(self.state[i, j] - 1, 5)
                    distance += abs(d - i) + abs(m - j)
        return distance''',
}


# ---------------------------------------------------------------------------
# Building notebooks
# ---------------------------------------------------------------------------

METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def render(fill: dict[str, str]) -> nbformat.NotebookNode:
    """A valid nbformat 4.5 notebook with every {slot} of the cells filled (no outputs: never run here)."""
    nb = new_notebook(metadata=METADATA)
    for index, cell in enumerate(CELLS):
        cell_id = f"cell-{index:03d}"
        if cell.kind == "markdown":
            nb.cells.append(new_markdown_cell(cell.source, id=cell_id))
        else:
            source = cell.source
            for name in (*METHODS, *FUNCTIONS):
                source = source.replace("{" + name + "}", fill[name])
            nb.cells.append(new_code_cell(source, id=cell_id))
    nbformat.validate(nb)
    return nb


def template() -> nbformat.NotebookNode:
    return render(STUBS)


def submission(overrides: dict[str, str] | None = None) -> nbformat.NotebookNode:
    return render({**SOLUTIONS, **(overrides or {})})


def example_submissions() -> dict[str, nbformat.NotebookNode]:
    return {
        "correct": submission(),
        "numpy-style": submission(NUMPY_STYLE),
        "greedy-solve": submission(GREEDY_SOLVE),
        "tile-moves-solve": submission(TILE_MOVES_SOLVE),
        "shared-board": submission(SHARED_BOARD),
        "manhattan-with-hole": submission(MANHATTAN_WITH_HOLE),
        "unreversed-path": submission(UNREVERSED_PATH),
        "hardcoded-five": submission(HARDCODED_FIVE),
    }


def main() -> None:
    if str(HERE.parent) not in sys.path:   # run as a script: the shared writer lives in assignments/
        sys.path.insert(0, str(HERE.parent))
    from build_bundled import write_all
    write_all(HERE, example_submissions(), template())


if __name__ == "__main__":
    main()
