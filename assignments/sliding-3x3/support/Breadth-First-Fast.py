"""Breadth-first search, as `%run Breadth-First-Fast.ipynb` gives it to the 3x3 sliding puzzle notebook.

The course's notebook of that name defines `search(next_states, start, goal)`; the grader runs this file in
its place (a `%run X.ipynb` runs the support module X.py), and its names land in the notebook. Students who
work outside the grader can run it with `%run Breadth-First-Fast.py`.

The search goes layer by layer and keeps one parent link per state (not a path per state), which is what
makes it fast enough to cross the whole 3x3 state space, 181,440 states, in a few seconds.
"""


def search(next_states, start, goal):
    """A shortest path from start to goal as a tuple of states, or None when goal cannot be reached.

    next_states(s) gives the states one move away from s (any iterable). After each layer the number of
    states seen for the first time is printed, as the course's version does.
    """
    Parent = {start: None}
    Frontier = [start]
    iteration = 0
    while Frontier and goal not in Parent:
        iteration += 1
        NewFrontier = []
        for state in Frontier:
            for ns in next_states(state):
                if ns not in Parent:
                    Parent[ns] = state
                    NewFrontier.append(ns)
        print(f'Iteration {iteration}: {len(NewFrontier)} new states found.')
        Frontier = NewFrontier
    if goal not in Parent:
        return None
    Path = [goal]
    while Parent[Path[-1]] is not None:
        Path.append(Parent[Path[-1]])
    return tuple(reversed(Path))
