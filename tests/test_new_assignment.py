"""An instructor adds a new puzzle assignment with a folder, a reference module and a rubric: no grader code."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from testclock import within

REFERENCE = '''
"""Reference for a tiny 1-D sliding puzzle: a tuple of tiles with one blank 0."""
import random

Start = (1, 0, 2)
Goal = (0, 1, 2)


def blank(state):
    return state.index(0)


def neighbours(state):
    """States one slide away: the blank swaps with a tile beside it."""
    found = set()
    i = blank(state)
    for j in (i - 1, i + 1):
        if 0 <= j < len(state):
            tiles = list(state)
            tiles[i], tiles[j] = tiles[j], tiles[i]
            found.add(tuple(tiles))
    return found


def neighbours_as_lists(state):
    return [list(s) for s in neighbours(state)]


def solve(start, goal):
    """Breadth-first: a shortest list of states from start to goal."""
    parents, frontier = {start: None}, [start]
    while frontier:
        following = []
        for state in frontier:
            if state == goal:
                path = []
                while state is not None:
                    path.append(state)
                    state = parents[state]
                return path[::-1]
            for nxt in sorted(neighbours(state)):
                if nxt not in parents:
                    parents[nxt] = state
                    following.append(nxt)
        frontier = following
    return None


def shuffled(rng, count):
    cases = []
    for _ in range(count):
        tiles = list(range(rng.randint(3, 6)))
        rng.shuffle(tiles)
        cases.append({"state": tuple(tiles)})
    return cases
'''

RUBRIC = '''
assignment: tiny-slide
title: Tiny sliding puzzle
reference: ../reference/tiny_slide.py
template: ../assignments/tiny-slide/template.ipynb
submissions: ../assignments/tiny-slide/submissions
fixtures: [Start, Goal]
exercises:
  - id: blank
    points: 1
    cases:
      - call: blank(Start)
      - generate: shuffled
        count: 4
        seed: 3
        call: blank(state)
        visibility: hidden
  - id: neighbours
    points: 2
    mistakes:
      - reference: neighbours_as_lists
        say: "Return a set of tuples: lists cannot be members of a set."
    cases:
      - call: neighbours(Start)
      - generate: shuffled
        count: 4
        seed: 5
        call: neighbours(state)
  - id: solve
    points: 2
    isolate: [neighbours]
    check: {name: path, next_states: neighbours, start: "args[0]", goal: "args[1]", optimal: true}
    cases:
      - call: solve(Start, Goal)
      - call: solve((1, 2, 0), Goal)
        visibility: hidden
'''

STUDENT_CELLS = {
    "good": [
        "def blank(s):\n    return list(s).index(0)",
        "def neighbours(s):\n    i = blank(s)\n    out = set()\n    for j in (i - 1, i + 1):\n"
        "        if 0 <= j < len(s):\n            t = list(s)\n            t[i], t[j] = t[j], t[i]\n"
        "            out.add(tuple(t))\n    return out",
        "def solve(start, goal):\n    paths = [[start]]\n    seen = {start}\n    while paths:\n"
        "        p = paths.pop(0)\n        if p[-1] == goal:\n            return p\n"
        "        for n in neighbours(p[-1]):\n            if n not in seen:\n                seen.add(n)\n"
        "                paths.append(p + [n])",
    ],
    "lists": [
        "def blank(s):\n    return s.index(0)",
        "def neighbours(s):\n    i = blank(s)\n    out = []\n    for j in (i - 1, i + 1):\n"
        "        if 0 <= j < len(s):\n            t = list(s)\n            t[i], t[j] = t[j], t[i]\n"
        "            out.append(t)\n    return out",
        "def solve(start, goal):\n    paths = [[start]]\n    seen = {start}\n    while paths:\n"
        "        p = paths.pop(0)\n        if p[-1] == goal:\n            return p\n"
        "        for n in neighbours(p[-1]):\n            if n not in seen:\n                seen.add(n)\n"
        "                paths.append(p + [n])",
    ],
}


def notebook(cells: list[str], path: Path) -> None:
    nb = new_notebook(cells=[new_markdown_cell("# Tiny slide"), *(new_code_cell(c) for c in cells)])
    nbformat.write(nb, path)


def build(root: Path) -> Path:
    (root / "reference").mkdir()
    (root / "reference" / "tiny_slide.py").write_text(textwrap.dedent(REFERENCE))
    (root / "rubrics").mkdir()
    rubric = root / "rubrics" / "tiny-slide.yaml"
    rubric.write_text(RUBRIC)
    folder = root / "assignments" / "tiny-slide"
    (folder / "submissions").mkdir(parents=True)
    notebook(['def blank(s):\n    "your code here"', "def neighbours(s):\n    pass",
              "def solve(start, goal):\n    ..."], folder / "template.ipynb")
    for name, cells in STUDENT_CELLS.items():
        notebook(cells, folder / "submissions" / f"{name}.ipynb")
    return rubric


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=within(600), env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "120"})


def test_a_new_assignment_needs_only_a_folder_a_reference_and_a_rubric(tmp_path: Path) -> None:
    rubric = build(tmp_path)
    cache = tmp_path / "cache"
    validated = grader("validate", str(rubric), "--cache", str(cache), cwd=tmp_path)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "reference: 5/5" in validated.stdout and "template:  0/5" in validated.stdout

    out = tmp_path / "results"
    graded = grader("grade", str(tmp_path / "assignments" / "tiny-slide" / "submissions"), "--rubric", str(rubric),
                    "--out", str(out), "--cache", str(cache), cwd=tmp_path)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    good = json.loads((out / "good.json").read_text())
    lists = json.loads((out / "lists.json").read_text())
    assert good["total"] == 5
    scores = {e["id"]: e["score"] for e in lists["exercises"]}
    assert scores == {"blank": 1, "neighbours": 0, "solve": 2}   # solve passes with the reference's neighbours
    neighbours = next(e for e in lists["exercises"] if e["id"] == "neighbours")
    assert "lists cannot be members of a set" in neighbours["cases"][0]["message"]


def test_a_typo_in_the_new_rubric_is_reported_with_file_and_line(tmp_path: Path) -> None:
    rubric = build(tmp_path)
    rubric.write_text(rubric.read_text().replace("    points: 2\n    mistakes:", "    poinst: 2\n    mistakes:"))
    validated = grader("validate", str(rubric), cwd=tmp_path)
    assert validated.returncode == 2
    line = next(n for n, text in enumerate(rubric.read_text().splitlines(), start=1) if "poinst" in text)
    assert f"tiny-slide.yaml:{line}: exercise 'neighbours': unknown key 'poinst' (did you mean 'points'?)" \
        in validated.stderr
