"""(Re)build the Taoistic Search template and its example submissions from one description, so they stay consistent.

Every notebook written here comes from one of two cell lists: NEWER_ERA (the 2023 notebook
with type hints, heapq A* and `%load_ext nb_mypy`) and OLDER_ERA (the 2020/21 notebook whose
search uses the AVL-tree module `Set` and whose given move_dir is transposed). A `slot`
cell holds one graded function: the template gets its stub, a submission gets a student's
solution. Each example submission then changes exactly what its file name says (see README.md).

submissions/seed-000.ipynb is not built here: it is an unchanged copy of a real student
notebook, kept as it was handed in.

Usage: python assignments/taoistic-search/build_examples.py   (writes next to this file)
"""

from __future__ import annotations

from dataclasses import dataclass
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Cell:
    """One notebook cell of a description: markdown, code, or a slot for a graded function."""

    kind: str                       # "markdown" | "code" | "slot"
    source: str = ""
    key: str | None = None          # a name to insert or replace cells at (slots use the function name)
    outputs: tuple = ()             # saved outputs (only for cells of example submissions)
    execution_count: int | None = None


def md(source: str, key: str | None = None) -> Cell:
    return Cell("markdown", source, key)


def code(source: str, key: str | None = None, outputs: tuple = (), execution_count: int | None = None) -> Cell:
    return Cell("code", source, key, outputs, execution_count)


def slot(name: str) -> Cell:
    return Cell("slot", key=name)


def stdout(text: str) -> dict:
    return new_output("stream", name="stdout", text=text)


# ---------------------------------------------------------------------------
# The 2023 notebook (text and given code of the course; slots for the graded functions)
# ---------------------------------------------------------------------------

NEWER_ERA: list[Cell] = [
    code(r'''%load_ext nb_mypy'''),
    md(r'''# Taoistic Search

The holy book of Taoism, the <a href="https://en.wikipedia.org/wiki/Tao_Te_Ching">Tao Te Ching (道德經)</a>, contains the following wisdom:

<p>
<center style="color:blue; background-color:yellow; font-family: Brush Script MT, cursive; font-size:40px; padding: 12px">
    <a href="https://en.wikipedia.org/wiki/A_journey_of_a_thousand_miles_begins_with_a_single_step">
        A yourney of a thousand miles begins but with a single step.</a>
</center>
</p>

As written [here](https://www.linkedin.com/pulse/journey-thousand-miles-david-cheung/) this saying has also been used by Chairman
[Mao Zedong Tongzhi (毛泽东同志)](https://en.wikipedia.org/wiki/Mao_Zedong).

Taoistic search is based on this principle: 
- Split the search problem into subproblems that can be readily solved.  
- Solve these problems one by one.
- Combine the solutions of the subproblems to a solution of the given *search problem*.

We will use *taoistic search* to solve the search problem for the 15-puzzle where the states `Start` and `Goal` are defined
as follows.'''),
    code(r'''Row   = tuple[str, ...]
State = tuple[Row, ...]'''),
    code(r'''Start: State = ( (  '0', '14',  '8', '12' ),
                 ( '10', '11', '13',  '9' ),
                 (  '6',  '2',  '4', '15' ),
                 (  '3',  '5',  '7',  '1' )
               )'''),
    code(r'''Goal: State  = ( (  '0',  '1',  '2',  '3' ),
                 (  '4',  '5',  '6',  '7' ),
                 (  '8',  '9', '10', '11' ),
                 ( '12', '13', '14', '15' )
               )'''),
    md(r'''Please **note** that we have defined the entries of these tuples as `str` and not as `int`.

In order to view these states more conveniently, we define a number of auxiliary functions in the following subsection. You need not concern yourself with these functions.  Instead
jump to the next subsection [here](#detailed_explanation).

## Animation'''),
    code(r'''import ipycanvas as cnv'''),
    md(r'''The module `time` is part of the standard library so it is preinstalled.  We have imported it because we need the function `time.sleep(secs)` to pause the animation for a specified time.'''),
    code(r'''import time'''),
    md(r'''The global variable Colors specifies the colors of the tiles.'''),
    code(r'''Colors = ['white', 'lightblue', 'pink', 'magenta', 'orange', 'red', 'yellow', 'lightgreen', 'gold',
          'CornFlowerBlue', 'Coral', 'Cyan', 'orchid', 'DarkSalmon', 'DeepPink', 'green'
         ] '''),
    md(r'''The global variable `gSize` specifies the size of one tile in pixels.'''),
    code(r'''gSize = 100'''),
    md(r'''The function `draw(State, canvas, dx, dy, tile, x)` draws a given `State` of the sliding puzzle, where `tile` has been moved by `offset` pixels into the direction `(dx, dy)`.'''),
    code(r'''def draw(S: State, canvas: cnv.canvas, dx: int, dy: int, tile: str, offset: int) -> None:
    canvas.text_align    = 'center'
    canvas.text_baseline = 'middle'
    with cnv.hold_canvas(canvas):
        canvas.clear()
        n = len(S)
        for row in range(n):
            for col in range(n):
                tile_to_draw = S[row][col]
                if tile_to_draw != '*':
                    color = Colors[int(tile_to_draw)]
                else:
                    color = 'lightyellow'
                canvas.fill_style = color
                if tile_to_draw not in ('0', tile):
                    x = col * gSize
                    y = row * gSize
                    canvas.fill_rect(x, y, gSize, gSize)
                    canvas.stroke_rect(x, y, gSize, gSize)
                    canvas.line_width = 3.0
                    x += gSize // 2
                    y += gSize // 2
                    canvas.stroke_text(str(tile_to_draw), x, y)
                elif tile_to_draw == tile:
                    x = col * gSize + offset * dx
                    y = row * gSize + offset * dy
                    canvas.fill_rect(x, y, gSize, gSize)
                    canvas.stroke_rect(x, y, gSize, gSize)
                    canvas.line_width = 3.0
                    x += gSize // 2
                    y += gSize // 2
                    if tile_to_draw != 0:
                        canvas.stroke_text(str(tile_to_draw), x, y)'''),
    code(r'''def create_canvas(n: int) -> cnv.canvas: 
    canvas = cnv.Canvas(size=(gSize * n, gSize * n))
    canvas.font = '60px serif'
    return canvas'''),
    code(r'''def draw_state(S: State) -> None:
    n = len(S)
    canvas = create_canvas(n)
    draw(S, canvas, 0, 0, '+', 0)
    display(canvas) # type: ignore'''),
    md(r'''The global variable `gDelay` controls the speed of the animation.  
<b style="color:red; background-color:lightyellow">If the animation is jerky on your computer, try increasing the value of the variable `gDelay` below.</b>'''),
    code(r'''gDelay = 0.003'''),
    md(r'''The function call `tile_and_direction(state, next_state)` takes a state and the state that follows this state and returns a triple (tile, dx, dy) where tile is the tile that is moved to transform `state` into `next_state` and `(dx, dy)` is the direction in which this tile is moved.'''),
    code(r'''def tile_and_direction(S: State, NS: State) -> tuple[str, int, int]:
    row0, col0 = find_tile('0', S)
    row1, col1 = find_tile('0', NS)
    return S[row1][col1], col0-col1, row0-row1''', key='tile_and_direction'),
    md(r'''Given a list of states representing a solution to the sliding puzzle, the function call 
`animation(Solution)` animates the solution.'''),
    code(r'''def animation(Solution: list[State]) -> None:
    start  = Solution[0]
    n      = len(start)
    canvas = create_canvas(n)
    draw(start, canvas, 0, 0, '0', 0)
    m = len(Solution)
    display(canvas) # type:ignore
    for i in range(m-1):
        state = Solution[i]
        tile, dx, dy = tile_and_direction(state, Solution[i+1])
        for offset in range(gSize+1):
            draw(state, canvas, dx, dy, tile, offset)
            time.sleep(gDelay)'''),
    md(r'''## <a id="detailed_explanation">Taoistic Search: Detailed Explanation</a>

Let us begin by our explanation by drawing both the states `Start` and `Goal` of our *search problem*.'''),
    code(r'''draw_state(Start)'''),
    code(r'''draw_state(Goal)'''),
    md(r'''In order to solve this instance of the 15-puzzle we could start by moving the tiles `14` and `15` into their final destination 
without caring for the other tiles.  To this end we define two new <em style="color:blue">extended states</em> `Start1` and `Goal1` as shown below.  In these <em style="color:blue">extended states</em> we have replaced all those tiles that are not important for moving `14` and `15` into their final destination by <em style="color:blue">wildcard tiles</em> defined as `'*'`.
<em style="color:blue">Extended states</em> are also known as <em style="color:blue">patterns</em>.

To solve a specific case of the 15-puzzle, one effective strategy is to initially focus on positioning the tiles labeled `14` and `15` in their designated locations, without concerning ourselves with the placement of the other tiles. To facilitate this approach, we introduce two novel constructs, namely `Start1` and `Goal1`. These are referred to as <em style="color:blue">extended states</em>. In these <em style="color:blue">extended states</em>, all tiles irrelevant to the immediate goal of correctly positioning `14` and `15` are substituted with <em style="color:blue">wildcard tiles</em>, represented by the symbol `'*'`. <em style="color:blue">Extended states</em> are also commonly known as <em style="color:blue">patterns</em> in this context.
'''),
    code(r'''Start1 = ( ( '0', '14',  '*',  '*' ),
           ( '*',  '*',  '*',  '*' ),
           ( '*',  '*',  '*', '15' ),
           ( '*',  '*',  '*',  '*' )
         )
draw_state(Start1)'''),
    code(r'''Goal1 = ( ( '*', '*',  '*',  '*' ),
          ( '*', '*',  '*',  '*' ),
          ( '*', '*',  '*',  '*' ),
          ( '*', '*', '14', '15' )
        )
draw_state(Goal1)'''),
    md(r'''
It is important to note that in the creation of the state `Goal1`, the tile labeled `'0'` has been substituted with a wildcard tile `'*'`, whereas this replacement does not occur in the state `Start1`. The rationale behind this distinction is elaborated on subsequently.

The search problem, as defined by the states `Start1` and `Goal1`, is relatively straightforward to resolve. We record the sequence of <em style="color:blue">actions</em>—specifically, the movements of the empty tile—required to transform `Start1` into `Goal1`. These recorded actions are then applied to the state `Start`, leading to a potential outcome resembling the state `State`, as depicted below.

The decision not to replace the empty tile with a wildcard in `Start1` is now clarified. If such a replacement were made, it would impede our ability to utilize the actions identified in the transformation from `Start1` to `Goal1` for modifying the state `Start1` into the state `State`.
'''),
    code(r'''S = ( ('10',  '8', '13', '12'),
      ('11',  '5',  '2',  '9'),
      ( '6',  '7',  '0',  '4'),
      ( '3',  '1', '14', '15')
    )
draw_state(S)'''),
    md(r'''Our next goal is move the tiles numbered with `12` and `13` into their final position.  To this end we define the 
<em style="color:blue">extended states</em> `Start2` and `Goal2` as shown below.'''),
    code(r'''Start2 = ( ( '*', '*', '13', '12' ),
           ( '*', '*',  '*',  '*' ),
           ( '*', '*',  '0',  '*' ),
           ( '*', '*', '14', '15' )
        )
draw_state(Start2)'''),
    code(r'''Goal2 = ( ( '*',  '*',  '*',  '*'),
          ( '*',  '*',  '*',  '*'),
          ( '*',  '*',  '*',  '*'),
          ('12', '13', '14', '15')
        )
draw_state(Goal2)'''),
    md(r'''Again, we solve the resulting search problem and remember the actions that transformed `Start2` into `Goal2`.  We apply these actions to the state `State` and end up with `State`being transformed into the state shown below.'''),
    code(r'''S = ( ('10',  '5',  '8',  '9'),
      ( '6', '11',  '7',  '4'),
      ( '1',  '3',  '0',  '2'),
      ('12', '13', '14', '15')
    )
draw_state(S)'''),
    md(r'''Proceeding in this way we can solve the given instance of the 15-puzzle.  The solution that we find will not be optimal but it won't be too far from the optimal solution.

## Auxiliary Functions for the Sliding Puzzle

The function call `find_tile(tile, State)` finds the coordinates of the given `tile` in `State`.  The `tile` is represented as a string from the set 

`{'0', '1', ..., '15'}`,

where `'0'` represents the empty tile.  If `(row, col)` is the result returned by `find_tile`, then we have
```
    State[row][col] == tile
```

<b style="color:red; background-color:lightyellow">Nota bene:</b>
There are two types of **errors** that are commonly made in this exercise:
  - We represent the tiles as strings instead of numbers as we will later replace 
    some of these tiles by the wildcard character `'*'`.  If you use numbers instead
    of strings, your code will not work.
  - Do not mix up rows and colums.  Note that the columns correspond
    to the $x$-coordinate of a coordinate system, while the rows correspond to the $y$-coordinate.'''),
    slot('find_tile'),
    md(r'''Since A$^*$-search stores the set of states that have been visited, we have to represent states by immutable objects and hence we represent the states as tuples of tuples.  In order to be able to change these states, we have to transform these tuples of tuples into lists of lists.  The function `to_list` transforms a tuple of tuples into a list of lists.'''),
    code(r'''def to_list(S: State) -> list[list[str]]:
    return [list(row) for row in S]'''),
    md(r'''The function `to_tuple` transforms a list of lists into a tuple of tuples.'''),
    code(r'''def to_tuple(S: list[list[str]]) -> State:
    return tuple(tuple(row) for row in S)'''),
    md(r'''Given a `State` that satisfies 
```
    State[row][col] == '0'
```
and a direction `(dx, dy)` that is an element form the set 
$\bigl\{ (1, 0), (-1, 0), (0, 1), (0, -1) \bigr\}$,
the function `move_dir` moves the empty tile in the direction `(dx, dy)`.
As `dx` is a step along the $x$-axis, i.e. from one column to the next, and `dy` a step along the $y$-axis,
i.e. from one row to the next, the empty tile ends up at `State[row + dy][col + dx]`.'''),
    slot('move_dir'),
    md(r'''Given a `State` of the sliding puzzle, the function `next_states(State)` computes all those states that can be reached from `State` in one step.'''),
    slot('next_states'),
    md(r'''The function `matches(Pattern, S)` checks, whether the *pattern* `Pattern` matches the state `State`.  A *pattern* is like a state but instead of numbers,  some of the entries of the list of lists have the form `'*'`.  The idea is that the string `'*'` is a wildcard that matches anything.

<b style="color:blue; background-color:yellow">Note</b> that `S` can also be an *extended state*, i.e. `S` can contain the wildcard `'*'`. '''),
    slot('matches'),
    md(r'''The function `manhattan` implemented below takes as argument two *extended states* `S1` and `S2` 
possibly containing wildcards and computes the *Manhattan distance* between these 
extended states. Basically, the manhattan distance measure the number of moves that it would take to transform `S1` into `S2` if we were allowed to slide different tiles on top of each other.
When computing these distances,  tiles that are numbered with a wildcard are ignored.
The empty tile `'0'` is not counted either: it moves in every step, so counting it could overestimate
the number of steps still needed, and then A$^*$ search would no longer be sure to find a shortest path.'''),
    slot('manhattan'),
    md(r'''The function `find_numbers` takes a <em style="color:blue">pattern</em> `Pattern` as input and returns the
list of all tiles in `Pattern` that are labeled with a number.'''),
    slot('find_numbers'),
    md(r'''The function `replace_numbers` takes two arguments:
- `Pattern` is an *extended state*,
- `Tiles` is a list of numbered tiles.

The state `Pattern` is transformed by replacing all tiles that are not a member of the list `Tiles`
with the wildcard character `*`.'''),
    slot('replace_numbers'),
    md(r'''The function `intermediate_goals` is called with two parameters:
- `Goal` is a state of the 15-puzzle,
- `TilesList` is a list of list of numbers.
   For example, `TilesList` could be the list `[ ['14', '15'], ['12', '13'] ]`.
   This list would specify that we want to create two intermediate 
   goals.  
   - The first goal would only have the tiles numbered `14`and `15`,
     while all other tiles would be replaced by wildcards.
   - The second goal would only have the tiles numbered `12`, `13`, `14`,
     and `15`, while all other tiles would be replaced by wildcards.

The function returns the list of intermediate goals. '''),
    slot('intermediate_goals'),
    md(r'''Given two extended states $P_1$ and $P_2$ the function `extract_move` returns a pair `(dx, dy)` such that we have:
$$ (r, c) = \texttt{find_tile}(0, P_1) \rightarrow \texttt{move_dir}(P_1, r, c, dx, dy) = P_2
$$
Hence `extract_move`($P_1$, $P_2$) computes the action that is necessary to transform $P_1$ into $P_2$.  This action is encoded as a direction $(dx, dy)$.  This is the direction to move the empty tile in $P_1$ to reach $P_2$.'''),
    code(r'''Move = tuple[int, int]'''),
    slot('extract_move'),
    md(r'''Given a list of extended states `PatternList` of the form
$$ \texttt{PatternList} = [P_1, P_2, \cdots, P_n] $$
the function `extract_move_list` computes a list of actions $[a_1, a_2, \cdots, a_{n-1}]$ such that
applying action $(a_i)$ to state $P_i$ results in state $P_{i+1}$.  
The actions are pairs of the form `(dx, dy)` that specify how the empty tile is to be moved.'''),
    slot('extract_move_list'),
    md(r'''Given the list of actions `MoveList` of the form $[a_1, a_2, \cdots, a_{n-1}]$, the function
`apply_move_list` takes a state `State` and applies these action to `State`one by one.  The list of all
states produced this way is returned.  This list starts with the given state `State`.'''),
    slot('apply_move_list'),
    md(r'''The function `stateToString` is useful for debugging purposes to transform a given state into a string.'''),
    code(r'''def stateToString(S: State) -> str:
    n      = len(S)
    indent = " " * 4;
    line   = indent + "+---" * n + "+\n"
    result = line
    for row in range(n):
        result += indent + "|"
        for col in range(n):
            cell = S[row][col]
            if isinstance(cell, str) and cell != '*':
                number = int(cell)
            if cell == "*":
                result += " * "
            elif number >= 10:
                result += str(cell) + " "
            elif 0 < number < 10:
                result += " " + cell + " "
            else: 
                result += "   "
            result += "|"
        result += "\n"
        result += line
    return result'''),
    code(r'''print(stateToString(Start))''', key='print_start'),
    md(r'''## A$^*$ Search'''),
    code(r'''import heapq''', key='import_heapq'),
    md(r'''The function `search` takes three arguments to solve a *search problem*:
- `Start` is the start state of the search problem.
- `Goal`is the goal state.  This might be an *extended state*.
- `next_states` is a function with signature $\texttt{next_states}:Q \rightarrow 2^Q$, where $Q$ is the set of states.
  For every state $s \in Q$, $\texttt{next_states}(s)$ is the set of states that can be reached from $s$ in one step.
- `heuristic` is a function that takes two states as arguments.  It returns an estimate of the 
  length of the shortest path between these states.
If successful, `search` returns a path from `start` to `goal` that is a solution of the search problem
$$ \langle Q, \texttt{next_states}, \texttt{start}, \texttt{goal} \rangle. $$

Basically, the function `search` implements A$^*$ search, but instead of checking whether a state is identical to `Goal`, this function only tests whether a state *matches* goal.

The parameter `Goal` is not a state, but only a *pattern*.

If no state that matches `goal` can be reached from `start`, `search` returns `None`.'''),
    code(r'''from typing import Callable
NxtStFct  = Callable[[State], set[State]]
Heuristic = Callable[[State, State], int]'''),
    slot('search'),
    md(r'''## Putting It All Together

Lets draw the start state and animate the solution that has been found.'''),
    code(r'''def main() -> list[State] | None:
    TilesList   = [['14', '15'], 
                   ['12', '13'], 
                   ['10', '11'], 
                   [ '8',  '9'], 
                   [ '3',  '7'], 
                   [ '2',  '6'], 
                   ['0', '1', '4', '5']
                  ]
    PatternList = intermediate_goals(Goal, TilesList)
    State       = Start
    Solution    = []
    print('Start state:')
    draw_state(Start)
    for Pattern in PatternList:
        print('Trying to reach the following pattern:')
        draw_state(Pattern)
        Tiles = find_numbers(Pattern)
        ExtendedState = replace_numbers(State, Tiles + ['0'])
        Path = search(ExtendedState, Pattern, next_states, manhattan)
        if Path:
            MoveList = extract_move_list(Path)
            Path = apply_move_list(State, MoveList)
            print(f'The following state is reached after {len(Path)-1} steps:');
            State = Path[-1]
            draw_state(State)
            Solution += Path[:-1]
        else:
            return None
    Solution += [ Goal ]
    return Solution''', key='main'),
    code(r'''Path = main()
if Path:
    print(len(Path)-1)''', key='run_main'),
    code(r'''if Path:
    animation(Path)''', key='animate'),
]


# ---------------------------------------------------------------------------
# The 2020/21 notebook (only example submissions are built from it)
# ---------------------------------------------------------------------------

OLDER_ERA: list[Cell] = [
    code(r'''%%HTML
<style>
.container { width:100% }
</style>'''),
    md(r'''# Taoistic Search

The holy book of Taoism, the Tao Te Ching, contains the following wisdom:

A march of a thousand miles begins but with a single step.

Taoistic search is based on this principle:

  • Split the search problem into subproblems that can be readily solved.
  • Solve these problems one by one.
  • Combine the solutions of the subproblem to a solution of the given search problem.

We will use taoistic search to solve the search problem for the 15-puzzle where the states Start and Goal are defined as follows.
'''),
    code(r'''Start = ( (  '0', '14',  '8', '12' ),
          ( '10', '11', '13',  '9' ),
          (  '6',  '2',  '4', '15' ),
          (  '3',  '5',  '7',  '1' )
        )'''),
    code(r'''Goal  = ( (  '0',  '1',  '2',  '3' ),
          (  '4',  '5',  '6',  '7' ),
          (  '8',  '9', '10', '11' ),
          ( '12', '13', '14', '15' )
        )'''),
    md(r'''In order to view these states more conveniently, we define a number of auxiliary functions in the following subsection.

## Animation
'''),
    code(r'''import ipycanvas as cnv'''),
    md(r'''The module time is part of the standard library so it is preinstalled. We have imported it because we need the function time.sleep(secs) to pause the animation for a specified time.
'''),
    code(r'''import time'''),
    md(r'''The global variable Colors specifies the colors of the tiles.
'''),
    code(r'''Colors = ['white', 'lightblue', 'pink', 'magenta', 'orange', 'red', 'yellow', 'lightgreen', 'gold',
          'CornFlowerBlue', 'Coral', 'Cyan', 'orchid', 'DarkSalmon', 'DeepPink', 'green'
         ]'''),
    md(r'''The global variable size specifies the size of one tile in pixels.
'''),
    code(r'''size = 100'''),
    md(r'''The function draw(State, canvas, dx, dy, tile, x) draws a given State of the sliding puzzle, where tile has been moved by offset pixels into the direction (dx, dy).
'''),
    code(r'''def draw(State, canvas, dx, dy, tile, offset):
    canvas.text_align    = 'center'
    canvas.text_baseline = 'middle'
    with cnv.hold_canvas(canvas):
        canvas.clear()
        n = len(State)
        for row in range(n):
            for col in range(n):
                tile_to_draw = State[row][col]
                if tile_to_draw != '*':
                    color = Colors[int(tile_to_draw)]
                else:
                    color = 'lightyellow'
                canvas.fill_style = color
                if tile_to_draw not in ('0', tile):
                    x = col * size
                    y = row * size
                    canvas.fill_rect(x, y, size, size)
                    canvas.stroke_rect(x, y, size, size)
                    canvas.line_width = 3.0
                    x += size // 2
                    y += size // 2
                    canvas.stroke_text(str(tile_to_draw), x, y)
                elif tile_to_draw == tile:
                    x = col * size + offset * dx
                    y = row * size + offset * dy
                    canvas.fill_rect(x, y, size, size)
                    canvas.stroke_rect(x, y, size, size)
                    canvas.line_width = 3.0
                    x += size // 2
                    y += size // 2
                    if tile_to_draw != 0:
                        canvas.stroke_text(str(tile_to_draw), x, y)'''),
    code(r'''def create_canvas(n): 
    canvas = cnv.Canvas(size=(size * n, size * n))
    canvas.font = '60px serif'
    return canvas'''),
    code(r'''def draw_state(State):
    n = len(State)
    canvas = create_canvas(n)
    draw(State, canvas, 0, 0, '+', 0)
    display(canvas)'''),
    md(r'''The global variable delay controls the speed of the animation.
If the animation is jerky on your computer, try increasing the value of `delay`.
'''),
    code(r'''delay = 0.002'''),
    md(r'''The function call tile_and_direction(state, next_state) takes a state and the state that follows this state and returns a triple (tile, dx, dy) where tileis the tile that is moved to transform state into next_state and (dx, dy) is the direction in which this tile is moved.
'''),
    code(r'''def tile_and_direction(state, next_state):
    row0, col0 = find_tile('0', state)
    row1, col1 = find_tile('0', next_state)
    return state[row1][col1], col0-col1, row0-row1'''),
    md(r'''Given a list of states representing a solution to the sliding puzzle, the function call animation(Solution) animates the solution.
'''),
    code(r'''def animation(Solution):
    start = Solution[0]
    n = len(start)
    canvas = create_canvas(n)
    draw(start, canvas, 0, 0, 0, 0)
    m = len(Solution)
    display(canvas)
    for i in range(m-1):
        state = Solution[i]
        tile, dx, dy = tile_and_direction(state, Solution[i+1])
        for offset in range(size+1):
            draw(state, canvas, dx, dy, tile, offset)
            time.sleep(delay)'''),
    md(r'''## Taoistic Search: Detailed Explanation

Let us begin by our explanation by drawing both the states Start and Goal of our search problem.
'''),
    code(r'''draw_state(Start)'''),
    code(r'''draw_state(Goal)'''),
    md(r'''In order to solve this instance of the 15-puzzle we could start by moving the tiles 14 and 15 into their final destination without caring for the other tiles. To this end we define two new extended states Start1 and Goal1 as shown below. In these extended states we have replaced all those tiles that are not important for moving 14 and 15 into their final destination by wildcard tiles defined as '*'. Extended states are also known as patterns.
'''),
    code(r'''Start1 = ( ( '0', '14',  '*',  '*' ),
           ( '*',  '*',  '*',  '*' ),
           ( '*',  '*',  '*', '15' ),
           ( '*',  '*',  '*',  '*' )
         )
draw_state(Start1)'''),
    code(r'''Goal1 = ( ( '*', '*',  '*',  '*' ),
          ( '*', '*',  '*',  '*' ),
          ( '*', '*',  '*',  '*' ),
          ( '*', '*', '14', '15' )
        )
draw_state(Goal1)'''),
    md(r'''It should be noted that we have replaced the tile numbered '0' by a wildcard tile '*' when creating the state Goal1, but not when creating the state Start1. The reason is es explained below.

The search problem specified by Start1 and Goal1 is quite easy to solve. We remember the set of actions, i.e. movements of the empty tile that we had to perform to transform Start1 into Goal1. Next, we apply these actions to the state Start. The resulting state might look like the state State shown below.

Now we can explain the reason for not replacing the empty tile with '*' in Start1 since otherwise we would not be able to use the actions found when to transforming Start1 to Goal1 to transform the state Start1 into the state State.
'''),
    code(r'''State = ( ('10',  '8', '13', '12'),
          ('11',  '5',  '2',  '9'),
          ( '6',  '7',  '0',  '4'),
          ( '3',  '1', '14', '15')
        )
draw_state(State)'''),
    md(r'''Our next goal is move the tiles numbered with 12 and 13 into their final position. To this end we define the extended states Start2 and Goal2 as shown below.
'''),
    code(r'''Start2 = ( ( '*', '*', '13', '12' ),
           ( '*', '*',  '*',  '*' ),
           ( '*', '*',  '0',  '*' ),
           ( '*', '*', '14', '15' )
        )
draw_state(Start2)'''),
    code(r'''Goal2 = ( ( '*',  '*',  '*',  '*'),
          ( '*',  '*',  '*',  '*'),
          ( '*',  '*',  '*',  '*'),
          ('12', '13', '14', '15')
        )
draw_state(Goal2)'''),
    md(r'''Again, we solve the resulting search problem and remember the actions that transformed Start2 into Goal2. We apply these actions to the state State and end up with Statebeing transformed into the state shown below.
'''),
    code(r'''State = ( ('10',  '5',  '8',  '9'),
          ( '6', '11',  '7',  '4'),
          ( '1',  '3',  '0',  '2'),
          ('12', '13', '14', '15')
        )
draw_state(State)'''),
    md(r'''Proceeding in this way we can solve the given instance of the 15-puzzle. The solution that we find will not be optimal but it won't be too far from the optimal solution.

## Auxiliary Functions for the Sliding Puzzle

The function call find_tile(tile, State) finds the coordinates of the given tile in State. The tile is represented as a string from the set

{'0', '1', ..., '15'},

where '0' represents the empty tile.

Nota bene: We have to represent the tiles as strings instead of numbers as we will later replace some of these tiles by the wildcard character '*'. The class Set that we use to represent sets of states does not permit inhomogeneous sets, i.e. sets that contain both numbers and strings.

The parameter State is a tuple of tuples that specifies the positions of the tiles. If (row, col) is the result returned by find_tile, then we have:

    State[row][col] == tile'''),
    code(r'''def find_tile(tile, State):
    n = len(State)
    for row in range(n):
        for col in range(n):
            if State[row][col] == tile:
                return row, col'''),
    md(r'''Since A$^*$-search stores the set of states that have been visited, we have to represent states by immutable objects and hence we represent the states as tuples of tuples. In order to be able to change these states, we have to transform these tuples of tuples into lists of lists. The function to_list transforms a tuple of tuples into a list of lists.
'''),
    code(r'''to_list = lambda State: [list(row) for row in State]'''),
    md(r'''The function to_tuple transforms a list of lists into a tuple of tuples.
'''),
    code(r'''to_tuple = lambda State: tuple(tuple(row) for row in State)'''),
    md(r'''Given a State that satisfies

    State[row][col] == '0'

and a direction (dx, dy) that is an element form the set $\bigl\{ (1, 0), (-1, 0), (0, 1), (0, -1) \bigr\}$, the function move_dir moves the empty tile in the direction (dx, dy).
'''),
    code(r'''def move_dir(State, row, col, dx, dy):
    State = to_list(State)
    State[row     ][col     ] = State[row + dx][col + dy]
    State[row + dx][col + dy] = '0'
    return to_tuple(State)'''),
    md(r'''Given a State of the sliding puzzle, the function next_states(State) computes all those states that can be reached from State in one step.
'''),
    code(r'''def next_states(State):
    n          = len(State)
    row, col   = find_tile('0', State)
    NewStates  = set()
    Directions = [ (1, 0), (-1, 0), (0, 1), (0, -1) ]
    for dx, dy in Directions:
        if row + dx in range(n) and col + dy in range(n):
            NewStates.add(move_dir(State, row, col, dx, dy))
    return NewStates'''),
    md(r'''The function matches(Pattern, State) checks, whether the pattern Pattern matches the state State. A pattern is like a state but instead of numbers, some of the entries of the list of lists are the string *. The idea is that * is a wildcard that matches anything. Note that State can also be an extended state.
'''),
    slot('matches'),
    md(r'''The function manhattan implemented below takes as argument two extended states State1 and State2 possibly containing wildcards and computes the Manhattan distance between these extended states. Basically, the manhattan distance measure the number of moves that it would take to transform stateA into stateB if we were allowed to slide different tiles on top of each other. When computing these distances, tiles that are numbered with a wildcard are ignored.
'''),
    slot('manhattan'),
    md(r'''The function find_tiles takes a pattern Pattern as input and returns the list of all tiles in Pattern that are labeled with a number.
'''),
    code(r'''def find_tiles(Pattern):
    Result = []
    n = len(Pattern)
    for row in range(n):
        for col in range(n):
            tile = Pattern[row][col]
            if tile != '*':
                Result.append(tile)
    return Result'''),
    md(r'''The function replace_numbers takes two arguments:

  • Pattern is an extended state,
  • Tiles is a list of numbered tiles. The state Pattern is transformed by replacing all tiles that are not a member of the list Tiles with the wildcard character *.'''),
    slot('replace_numbers'),
    md(r'''The function intermediate_goals is called with two parameters:

  • Goal is a state of the 15-puzzle,
  • TilesList is a list of list of numbers. For example, TilesList could be the list [ [14, 15], [12, 13] ]. This list would specify that we want to create two intermediate goals.
    • The first goal would only have the tiles numbered 14and 15, while all other tiles would be replaced by wildcards.
    • The second goal would only have the tiles numbered 12, 13, 14, and 15, while all other tiles would be replaced by wildcards.

The function returns the list of intermediate goals.
'''),
    slot('intermediate_goals'),
    md(r'''Given two extended states Pattern1 and Pattern2 the function extract_move returns a pair (dx, dy) such that we have:

    (row, col) = find_tile('0', Pattern1) -> move_dir(Pattern1, row, col, dx, dy) == Pattern2

Hence extract_move(Pattern1, Pattern2) computes the action that is necessary to transform Pattern1 into Pattern2. This action is encoded as a direction (dx, dy). This is the direction to move the empty tile in Pattern1 to reach Pattern2.
'''),
    slot('extract_move'),
    md(r'''Given a list of extended states PatternList of the form $$ \texttt{PatternList} = [P_1, P_2, \cdots, P_n] $$ the function extract_move_list computes a list of actions $[a_1, a_2, \cdots, a_{n-1}]$ such that applying action $(a_i)$ to state $P_i$ results in state $P_{i+1}$.
The actions are pairs of the form (dx, dy) that specify how the empty tile is to be moved.
'''),
    slot('extract_move_list'),
    md(r'''Given the list of actions MoveList of the form $[a_1, a_2, \cdots, a_{n-1}]$, the function apply_move_list takes a state State and applies these action to Stateone by one. The list of all states produced this way is returned. This list starts with the given state State.
'''),
    slot('apply_move_list'),
    md(r'''The function stateToString is useful for debugging purposes to transform a given state into a string.
'''),
    code(r'''def stateToString(state):
    n      = len(state)
    indent = " " * 4;
    line   = indent + "+---" * n + "+\n"
    result = line
    for row in range(n):
        result += indent + "|"
        for col in range(n):
            cell = state[row][col]
            if isinstance(cell, str) and cell != '*':
                cell = int(cell)
            if cell == "*":
                result += " * "
            elif cell >= 10:
                result += str(cell) + " "
            elif cell > 0 and cell < 10:
                result += " " + str(cell) + " "
            else: 
                result += "   "
            result += "|"
        result += "\n"
        result += line
    return result'''),
    md(r'''The module Set implements sets as AVL trees. The API provided by Set offers the following functions and methods:

  • Set() creates an empty set.
  • S.isEmpty() checks whether the set Sis empty.
  • S.member(x) checks whether x is an element of the set S.
  • S.insert(x) inserts x into the set S. This does not return a new set but rather modifies the set S.
  • S.delete(x) deletes x from the set S. This does not return a new set but rather modifies the set S.
  • S.pop() returns the smallest element of the set S. Furthermore, this element is removed from S. Since sets are implemented as ordered binary trees, the elements of a set need to be comparable, i.e. if x and y are inserted into a set, then the expression x < y must return a Boolean value and < has to define linear order.

The module Set can be used to implement a priority queue that supports the removal of elements.
'''),
    code(r'''import Set'''),
    md(r'''The function search takes three arguments to solve a search problem:

  • Start is the start state of the search problem.
  • Goalis the goal state. This might be an extended state.
  • next_states is a function with signature $\texttt{next_states}:Q \rightarrow 2^Q$, where $Q$ is the set of states. For every state $s \in Q$, $\texttt{next_states}(s)$ is the set of states that can be reached from $s$ in one step.
  • heuristic is a function that takes two states as arguments. It returns an estimate of the length of the shortest path between these states. If successful, search returns a path from start to goal that is a solution of the search problem $$ \langle Q, \texttt{next_states}, \texttt{start}, \texttt{goal} \rangle. $$

Basically, the function search implements A$^*$ search, but instead of checking whether a state is identical to Goal, this function only tests whether a state matches goal.

The parameter Goal is not a state, but only a pattern.
'''),
    code(r'''def search(Start, Goal, next_states, heuristic):
    Parent   = { Start: Start }                    
    Distance = { Start: 0     }
    estGoal  = heuristic(Start, Goal)
    Estimate = { Start: estGoal }
    Frontier = Set.Set()
    Frontier.insert( (estGoal, Start) )
    while not Frontier.isEmpty():
        estimate, State = Frontier.pop()
        if matches(Goal, State):
            print(f'Number of states touched: {len(Distance)}')
            return path_to(State, Parent)
        stateDist = Distance[State]
        for ns in next_states(State):
            oldEstimate = Estimate.get(ns, None)
            newEstimate = stateDist + 1 + heuristic(ns, Goal)
            if oldEstimate == None or newEstimate < oldEstimate:
                Parent[ns]   = State
                Distance[ns] = stateDist + 1
                Estimate[ns] = newEstimate
                Frontier.insert( (newEstimate, ns) )
                if oldEstimate != None:
                    Frontier.delete( (oldEstimate, ns) )'''),
    md(r'''Given a state and a parent dictionary Parent, the function path_to returns a path leading to the given state.
'''),
    code(r'''def path_to(state, Parent):
    p = Parent[state]
    if p == state:
        return [state]
    return path_to(p, Parent) + [state]'''),
    md(r'''## Putting It All Together

Lets draw the start state and animate the solution that has been found.
'''),
    code(r'''def main():
    TilesList   = [['14', '15'], 
                   ['12', '13'], 
                   ['10', '11'], 
                   [ '8',  '9'], 
                   [ '3',  '7'], 
                   [ '2',  '6'], 
                   ['0', '1', '4', '5']
                  ]
    PatternList = intermediate_goals(Goal, TilesList)
    State       = Start
    Solution    = []
    print('Start state:')
    draw_state(Start)
    for Pattern in PatternList:
        print('Trying to reach the following pattern:')
        draw_state(Pattern)
        Tiles = find_tiles(Pattern)
        ExtendedState = replace_numbers(State, Tiles + ['0'])
        Path = search(ExtendedState, Pattern, next_states, manhattan)
        MoveList = extract_move_list(Path)
        Path = apply_move_list(State, MoveList)
        print(f'The following state is reached after {len(Path)-1} steps:');
        State = Path[-1]
        draw_state(State)
        Solution += Path[:-1]
    Solution += [ Goal ]
    return Solution'''),
    code(r'''%%time
Path = main()
print(len(Path)-1)''', key='run_main'),
    code(r'''animation(Path)''', key='animate'),
]


# ---------------------------------------------------------------------------
# Stubs of the template: the signature (as in the 2023 notebook) and "your code here"
# ---------------------------------------------------------------------------

STUBS = {
    "find_tile": "def find_tile(tile: str, S: State) -> tuple[int, int]:",
    "move_dir": "def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:",
    "next_states": "def next_states(S: State) -> set[State]:",
    "matches": "def matches(Pattern: State, S: State) -> bool:",
    "manhattan": "def manhattan(S1: State, S2: State) -> int:",
    "find_numbers": "def find_numbers(Pattern: State) -> list[str]:",
    "replace_numbers": "def replace_numbers(Pattern: State, Tiles: list[str]) -> State:",
    "intermediate_goals": "def intermediate_goals(Goal: State, TilesList: list[list[str]]) -> list[State]:",
    "extract_move": "def extract_move(P1: State, P2: State) -> Move:",
    "extract_move_list": "def extract_move_list(PatternList: list[State]) -> list[Move]:",
    "apply_move_list": "def apply_move_list(S: State, MoveList: list[Move]) -> list[State]:",
    "search": "def search(start: State, goal: State, next_states: NxtStFct, heuristic: Heuristic) -> list[State] | None:",
}
STUBS = {name: f'{signature}\n    "your code here"' for name, signature in STUBS.items()}


# ---------------------------------------------------------------------------
# A student's correct solutions (2023 notebook), deliberately not in the reference's style
# ---------------------------------------------------------------------------

SOLUTIONS = {
    "find_tile": '''\
def find_tile(tile: str, S: State) -> tuple[int, int]:
    for row, line in enumerate(S):
        if tile in line:
            return row, line.index(tile)
    return None # type: ignore''',

    "move_dir": '''\
def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    L = to_list(S)
    L[row][col], L[row + dy][col + dx] = L[row + dy][col + dx], L[row][col]
    return to_tuple(L)''',

    "next_states": '''\
def next_states(S: State) -> set[State]:
    n = len(S)
    row, col = find_tile('0', S)
    Result = set()
    for dx, dy in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
        if 0 <= row + dy < n and 0 <= col + dx < n:
            Result.add(move_dir(S, row, col, dx, dy))
    return Result''',

    # "your code here" left in place above a real body: not a stub.
    "matches": '''\
def matches(Pattern: State, S: State) -> bool:
    "your code here"
    n = len(Pattern)
    return all(Pattern[r][c] in ('*', S[r][c]) for r in range(n) for c in range(n))''',

    "manhattan": '''\
def manhattan(S1: State, S2: State) -> int:
    dist = 0
    n = len(S2)
    for row in range(n):
        for col in range(n):
            tile = S2[row][col]
            if tile != '*' and tile != '0':
                r, c = find_tile(tile, S1)
                dist += abs(row - r) + abs(col - c)
    return dist''',

    "find_numbers": '''\
def find_numbers(Pattern: State) -> list[str]:
    return [tile for row in Pattern for tile in row if tile != '*']''',

    "replace_numbers": '''\
def replace_numbers(Pattern: State, Tiles: list[str]) -> State:
    return to_tuple([[t if t in Tiles else '*' for t in row] for row in Pattern])''',

    "intermediate_goals": '''\
def intermediate_goals(Goal: State, TilesList: list[list[str]]) -> list[State]:
    Result = []
    Tiles: list[str] = []
    for T in TilesList:
        Tiles = Tiles + T
        Result.append(replace_numbers(Goal, Tiles))
    return Result''',

    "extract_move": '''\
def extract_move(P1: State, P2: State) -> Move:
    "your code here"
    row1, col1 = find_tile('0', P1)
    row2, col2 = find_tile('0', P2)
    return (col2 - col1, row2 - row1)''',

    "extract_move_list": '''\
def extract_move_list(PatternList: list[State]) -> list[Move]:
    return [extract_move(PatternList[i], PatternList[i+1]) for i in range(len(PatternList) - 1)]''',

    "apply_move_list": '''\
def apply_move_list(S: State, MoveList: list[Move]) -> list[State]:
    Result = [S]
    for dx, dy in MoveList:
        row, col = find_tile('0', S)
        S = move_dir(S, row, col, dx, dy)
        Result.append(S)
    return Result''',

    # Path copying, like most students do: fine for the small problems of main.
    "search": '''\
def search(start: State, goal: State, next_states: NxtStFct, heuristic: Heuristic) -> list[State] | None:
    Visited: set[State] = set()
    Queue = [(heuristic(start, goal), 0, [start])]
    while Queue:
        _, dist, Path = heapq.heappop(Queue)
        state = Path[-1]
        if matches(goal, state):
            print(f'Number of states visited: {len(Visited)}')
            return Path
        if state in Visited:
            continue
        Visited.add(state)
        for ns in next_states(state):
            if ns not in Visited:
                heapq.heappush(Queue, (dist + 1 + heuristic(ns, goal), dist + 1, Path + [ns]))
    return None''',
}


# ---------------------------------------------------------------------------
# Wrong solutions, one per example submission
# ---------------------------------------------------------------------------

# The 2020/21 convention, applied consistently: dx is a row offset.
MOVE_DIR_TRANSPOSED = {
    "move_dir": '''\
def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    L = to_list(S)
    L[row][col] = L[row + dx][col + dy]
    L[row + dx][col + dy] = '0'
    return to_tuple(L)''',
    "next_states": '''\
def next_states(S: State) -> set[State]:
    n = len(S)
    row, col = find_tile('0', S)
    Result = set()
    for dx, dy in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
        if 0 <= row + dx < n and 0 <= col + dy < n:
            Result.add(move_dir(S, row, col, dx, dy))
    return Result''',
    "extract_move": '''\
def extract_move(P1: State, P2: State) -> Move:
    row1, col1 = find_tile('0', P1)
    row2, col2 = find_tile('0', P2)
    return (row2 - row1, col2 - col1)''',
}

EXTRACT_MOVE_OF_TILE = {
    "extract_move": '''\
def extract_move(P1: State, P2: State) -> Move:
    # the tile that moves goes from where the blank is in P2 to where it was in P1
    row1, col1 = find_tile('0', P1)
    row2, col2 = find_tile('0', P2)
    return (col1 - col2, row1 - row2)''',
}

MANHATTAN_COUNTS_BLANK = {
    "manhattan": '''\
def manhattan(S1: State, S2: State) -> int:
    dist = 0
    n = len(S2)
    for row in range(n):
        for col in range(n):
            tile = S2[row][col]
            if tile != '*':
                r, c = find_tile(tile, S1)
                dist += abs(row - r) + abs(col - c)
    return dist''',
}

FIND_TILE_TRANSPOSED = {
    "find_tile": '''\
def find_tile(tile: str, S: State) -> tuple[int, int]:
    for y, line in enumerate(S):
        for x, t in enumerate(line):
            if t == tile:
                return x, y
    return None # type: ignore''',
}

# Peeks at the best entry instead of popping it: once the start is visited, the loop
# `continue`s on it forever (no memory growth, just an endless loop).
INFINITE_SEARCH = {
    "search": '''\
def search(start: State, goal: State, next_states: NxtStFct, heuristic: Heuristic) -> list[State] | None:
    Visited: set[State] = set()
    PrioQueue = [ (heuristic(start, goal), [start]) ]
    while len(PrioQueue) > 0:
        _, Path = PrioQueue[0]
        state   = Path[-1]
        if matches(goal, state):
            return Path
        if state in Visited:
            continue
        for ns in next_states(state):
            heapq.heappush(PrioQueue, (heuristic(ns, goal) + len(Path), Path + [ns]))
        Visited.add(state)
    return None''',
}

# Numbers where strings belong: the blank becomes the int 0 after a move (next_states was
# patched to find it), find_numbers returns ints, replace_numbers compares ints and so
# fails on '*'.
INT_TILES = {
    "move_dir": '''\
def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:
    L = to_list(S)
    L[row][col] = L[row + dy][col + dx]
    L[row + dy][col + dx] = 0 # type: ignore
    return to_tuple(L)''',
    "next_states": '''\
def next_states(S: State) -> set[State]:
    n = len(S)
    for r in range(n):
        for c in range(n):
            if S[r][c] in ('0', 0):   # after a move the blank is 0
                row, col = r, c
    Result = set()
    for dx, dy in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
        if 0 <= row + dy < n and 0 <= col + dx < n:
            Result.add(move_dir(S, row, col, dx, dy))
    return Result''',
    "find_numbers": '''\
def find_numbers(Pattern: State) -> list[str]:
    return [int(tile) for row in Pattern for tile in row if tile != '*'] # type: ignore''',
    "replace_numbers": '''\
def replace_numbers(Pattern: State, Tiles: list[str]) -> State:
    Numbers = [int(t) for t in Tiles]
    return to_tuple([[t if int(t) in Numbers else '*' for t in row] for row in Pattern])''',
}


# ---------------------------------------------------------------------------
# A student's solutions of the 2020/21 notebook: consistent with its given, transposed move_dir
# ---------------------------------------------------------------------------

OLD_SOLUTIONS = {
    "matches": '''\
def matches(Pattern, State):
    n = len(Pattern)
    for row in range(n):
        for col in range(n):
            if Pattern[row][col] != '*' and Pattern[row][col] != State[row][col]:
                return False
    return True''',

    "manhattan": '''\
def manhattan(State1, State2):
    result = 0
    n = len(State2)
    for row in range(n):
        for col in range(n):
            tile = State2[row][col]
            if tile not in ['*', '0']:
                r, c = find_tile(tile, State1)
                result += abs(row - r) + abs(col - c)
    return result''',

    "replace_numbers": '''\
def replace_numbers(Pattern, Tiles):
    Result = []
    for row in Pattern:
        Result.append([tile if tile in Tiles else '*' for tile in row])
    return to_tuple(Result)''',

    "intermediate_goals": '''\
def intermediate_goals(Goal, TilesList):
    Goals = []
    AllTiles = []
    for Tiles in TilesList:
        AllTiles += Tiles
        Goals.append(replace_numbers(Goal, AllTiles))
    return Goals''',

    # move_dir (given) moves the blank to State[row + dx][col + dy], so dx is a row offset here
    "extract_move": '''\
def extract_move(Pattern1, Pattern2):
    row1, col1 = find_tile('0', Pattern1)
    row2, col2 = find_tile('0', Pattern2)
    return row2 - row1, col2 - col1''',

    "extract_move_list": '''\
def extract_move_list(PatternList):
    MoveList = []
    for i in range(len(PatternList) - 1):
        MoveList.append(extract_move(PatternList[i], PatternList[i + 1]))
    return MoveList''',

    "apply_move_list": '''\
def apply_move_list(State, MoveList):
    Result = [State]
    for dx, dy in MoveList:
        row, col = find_tile('0', State)
        State = move_dir(State, row, col, dx, dy)
        Result.append(State)
    return Result''',
}


# ---------------------------------------------------------------------------
# Building notebooks
# ---------------------------------------------------------------------------

METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def edited(cells: list[Cell], *, replace: dict | None = None, before: dict | None = None,
           after: dict | None = None) -> list[Cell]:
    """The cells with the ones whose key is named replaced, or given cells put before or after them."""
    replace, before, after = replace or {}, before or {}, after or {}
    keys = {cell.key for cell in cells}
    unknown = (set(replace) | set(before) | set(after)) - keys
    if unknown:
        raise KeyError(f"no cell with key {sorted(unknown)}")
    result: list[Cell] = []
    for cell in cells:
        result += before.get(cell.key, [])
        result += replace.get(cell.key, [cell])
        result += after.get(cell.key, [])
    return result


def render(cells: list[Cell], fill: dict[str, str], executed: bool) -> nbformat.NotebookNode:
    """A valid nbformat 4.5 notebook; an executed one numbers its code cells as if run top to bottom."""
    nb = new_notebook(metadata=METADATA)
    count = 0
    for index, cell in enumerate(cells):
        cell_id = f"cell-{index:03d}"
        if cell.kind == "markdown":
            nb.cells.append(new_markdown_cell(cell.source, id=cell_id))
            continue
        source = fill[cell.key] if cell.kind == "slot" else cell.source
        node = new_code_cell(source, id=cell_id)
        if executed:
            count += 1
            node.execution_count = cell.execution_count or count
            node.outputs = [nbformat.from_dict(output) for output in cell.outputs]
        nb.cells.append(node)
    nbformat.validate(nb)
    return nb


def template() -> nbformat.NotebookNode:
    return render(NEWER_ERA, STUBS, executed=False)


def submission(overrides: dict[str, str] | None = None, **edits) -> nbformat.NotebookNode:
    """The 2023 notebook solved by SOLUTIONS, with some functions overridden and cells edited."""
    return render(edited(NEWER_ERA, **edits), {**SOLUTIONS, **(overrides or {})}, executed=True)


EARLY_FIND_TILE = code('''\
def find_tile(tile: str, S: State) -> tuple[int, int]:
    return None # type: ignore''')

ANIMATE_AT_TOP_LEVEL = [
    code('''\
Path = main()
print(len(Path) - 1)'''),
    code('animation(Path)'),
    md('Too fast for me, so once more, one state per second:'),
    code('''\
for state in Path:
    print(stateToString(state))
    time.sleep(1)'''),
    code('''\
while gDelay < 0.05:
    gDelay *= 2
    animation(Path)'''),
]

# A cell that ran fine once; a later edit lost the colon, and the old output stayed.
REPLACE_NUMBERS_SYNTAX_ERROR = code(
    '''\
def replace_numbers(Pattern: State, Tiles: list[str]) -> State
    return to_tuple([[t if t in Tiles else '*' for t in row] for row in Pattern])

print(replace_numbers(Start, ['0', '14', '15']))''',
    key="replace_numbers",
    outputs=(stdout("(('0', '14', '*', '*'), ('*', '*', '*', '*'), ('*', '*', '*', '15'), ('*', '*', '*', '*'))\n"),),
    execution_count=17,
)


def example_submissions() -> dict[str, nbformat.NotebookNode]:
    return {
        "correct": submission(
            before={"tile_and_direction": [EARLY_FIND_TILE]},
            after={"next_states": [code("%timeit next_states(Start)")]},
            replace={"run_main": [code("Path = main()"), code("print(len(Path)-1)")]},
        ),
        "move-dir-transposed": submission(MOVE_DIR_TRANSPOSED),
        "extract-move-of-tile": submission(EXTRACT_MOVE_OF_TILE),
        "manhattan-counts-blank": submission(MANHATTAN_COUNTS_BLANK),
        "find-tile-transposed": submission(FIND_TILE_TRANSPOSED),
        "syntax-error": submission(replace={"replace_numbers": [REPLACE_NUMBERS_SYNTAX_ERROR]}),
        "infinite-search": submission(INFINITE_SEARCH),
        "main-animation": submission(after={"animate": ANIMATE_AT_TOP_LEVEL}),
        "int-tiles": submission(INT_TILES),
        "old-era": render(OLDER_ERA, OLD_SOLUTIONS, executed=True),
    }


def main() -> None:
    if str(HERE.parent) not in sys.path:   # run as a script: the shared writer lives in assignments/
        sys.path.insert(0, str(HERE.parent))
    from build_bundled import write_all
    write_all(HERE, example_submissions(), template())


if __name__ == "__main__":
    main()
