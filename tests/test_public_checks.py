"""Kits that judge what they can: a check the rubric marks public ships as source and judges in the self-check."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from rich.console import Console

from grader.kit.kit import UNVERIFIED, check, coverage, load_kit, write_kit
from grader.kit.check import check_with_kit, run_check
from grader.kit.public import PublicError, public_code
from grader.rubric.schema import load_rubric

REFERENCE = '''
"""Tower of Hanoi: move n disks from peg A to peg C, one at a time, never a larger disk on a smaller one."""

PEGS = ("A", "B", "C")


def replay(moves, n):
    """Play moves from the start; (the pegs at the end, None) or (None, why the first bad move is illegal)."""
    pegs = {"A": list(range(n, 0, -1)), "B": [], "C": []}
    for number, move in enumerate(moves, start=1):
        if not (isinstance(move, tuple) and len(move) == 2 and all(p in PEGS for p in move)):
            return None, f"move {number} is {move!r}, not a pair of pegs such as ('A', 'C')"
        source, target = move
        if not pegs[source]:
            return None, f"move {number} {move} takes a disk from the empty peg {source}"
        if pegs[target] and pegs[target][-1] < pegs[source][-1]:
            return None, f"move {number} {move} puts disk {pegs[source][-1]} on the smaller disk {pegs[target][-1]}"
        pegs[target].append(pegs[source].pop())
    return pegs, None


def check_hanoi(got, args):
    """Right iff the moves are legal and end with every disk on C; full credit for the 2**n - 1 moves."""
    n = args[0]
    if not isinstance(got, list):
        return False, f"hanoi must return a list of moves; it returned {type(got).__name__}"
    pegs, why = replay(got, n)
    if pegs is None:
        return False, why
    if len(pegs["C"]) != n:
        return False, "the disks do not all end on peg C"
    best = 2 ** n - 1
    return (1.0, "") if len(got) == best else (0.5, f"{len(got)} moves; the fewest is {best}")


def hanoi(n, source="A", spare="B", target="C"):
    if n == 0:
        return []
    return hanoi(n - 1, source, target, spare) + [(source, target)] + hanoi(n - 1, spare, source, target)


def check_peeking(got, args):
    """A check that would hand out the solution: it may not be public."""
    return got == hanoi(args[0])


def heights(rng, count):
    return [{"n": rng.randint(4, 6)} for _ in range(count)]
'''

RUBRIC = '''
assignment: hanoi
reference: hanoi.py
exercises:
  - id: hanoi
    points: 3
    check: {name: check_hanoi, public: true}
    cases:
      - call: hanoi(2)
      - call: hanoi(3)
      - generate: heights
        count: 2
        seed: 1
        call: hanoi(n)
        visibility: hidden
'''

NOTEBOOKS = {
    "correct": "def hanoi(n, a='A', b='B', c='C'):\n    if n == 0:\n        return []\n"
               "    return hanoi(n - 1, a, c, b) + [(a, c)] + hanoi(n - 1, b, a, c)",
    # Right length, ends on C, but a larger disk goes onto a smaller one.
    "illegal": "def hanoi(n):\n    return [('A', 'C')] * (2 ** n - 1)",
    "generator": "def hanoi(n, a='A', b='B', c='C'):\n    if n:\n        yield from hanoi(n - 1, a, c, b)\n"
                 "        yield (a, c)\n        yield from hanoi(n - 1, b, a, c)",
}


def course(tmp_path: Path, rubric: str = RUBRIC) -> Path:
    (tmp_path / "hanoi.py").write_text(textwrap.dedent(REFERENCE))
    path = tmp_path / "hanoi.yaml"
    path.write_text(rubric)
    for name, code in NOTEBOOKS.items():
        nbformat.write(new_notebook(cells=[new_code_cell(code)]), tmp_path / f"{name}.ipynb")
    return path


@pytest.fixture(scope="module")
def hanoi_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hanoi")
    return write_kit(course(root), root / "kit.json", cache=root / "cache")


def test_the_kit_carries_the_public_check_and_its_helpers_never_the_solution_or_generator(hanoi_kit: Path) -> None:
    data = json.loads(hanoi_kit.read_text())
    source = data["public"]["source"]
    assert sorted(data["public"]["names"]) == ["PEGS", "check_hanoi", "replay"]
    assert "def check_hanoi" in source and "def replay" in source
    assert "def hanoi" not in source and "def heights" not in source and "check_peeking" not in source
    [exercise] = data["exercises"]
    assert [case["check"]["judged"] for case in exercise["cases"]] == ["in full (public check)"] * 2
    assert coverage(data) == [("hanoi", 2, 0, ())]


@pytest.mark.parametrize("name, status, message", [
    ("illegal", "fail", "move 2 ('A', 'C') puts disk 2 on the smaller disk 1"),
    ("generator", "fail", "hanoi must return a list of moves; it returned Opaque"),
])
def test_an_illegal_solution_fails_check_kit_when_its_check_is_public(hanoi_kit: Path, name: str, status: str,
                                                                      message: str) -> None:
    notebook = hanoi_kit.parent / f"{name}.ipynb"
    result, hidden = check_with_kit(notebook, hanoi_kit)
    cases = result.exercises[0].cases
    assert [c.status for c in cases] == [status, status]
    assert message in cases[0].message
    assert hidden == {"hanoi": 2}
    assert run_check(notebook, hanoi_kit, Console(file=open("/dev/null", "w"))) == 1


def test_a_correct_solution_passes_check_kit_in_full(hanoi_kit: Path) -> None:
    result, _ = check_with_kit(hanoi_kit.parent / "correct.ipynb", hanoi_kit)
    assert [c.status for c in result.exercises[0].cases] == ["pass", "pass"]
    assert result.total == 3


def test_the_public_check_runs_in_the_students_kernel_too(hanoi_kit: Path) -> None:
    namespace: dict = {}
    exec(NOTEBOOKS["illegal"], namespace)
    summary = check(hanoi_kit, namespace=namespace, console=Console(file=open("/dev/null", "w")))
    assert (summary.passed, summary.failed, summary.ok) == (0, 2, False)


def test_without_public_the_illegal_solution_is_only_checked_after_submission(tmp_path: Path) -> None:
    rubric = course(tmp_path, RUBRIC.replace("{name: check_hanoi, public: true}", "check_hanoi"))
    kit = write_kit(rubric, tmp_path / "kit.json", cache=tmp_path / "cache")
    assert coverage(json.loads(kit.read_text())) == [("hanoi", 0, 2, ("check_hanoi",))]
    result, _ = check_with_kit(tmp_path / "illegal.ipynb", load_kit(kit))
    assert [c.status for c in result.exercises[0].cases] == [UNVERIFIED, UNVERIFIED]
    out = tmp_path / "report.txt"
    with out.open("w") as sink:
        assert run_check(tmp_path / "illegal.ipynb", kit, Console(file=sink, width=200)) == 0
    line = next(text for text in out.read_text().splitlines() if "hanoi:" in text)
    assert line.startswith("? hanoi: 0/2 public cases pass, 2 checked after submission")   # never a green tick


def test_a_public_check_that_uses_the_solution_is_refused_with_its_line(tmp_path: Path) -> None:
    rubric = load_rubric(course(tmp_path, RUBRIC.replace("check_hanoi, public", "check_peeking, public")))
    with pytest.raises(PublicError) as refused:
        public_code(rubric)
    line = next(n for n, text in enumerate((tmp_path / "hanoi.py").read_text().splitlines(), start=1)
                if text.startswith("def hanoi"))
    assert refused.value.problems == [
        f"{tmp_path / 'hanoi.py'}:{line}: 'hanoi' is what exercise 'hanoi' grades (its solution): a public check "
        f"must not use it (needed by check_peeking); leave the check private"]


def test_a_public_check_shipping_a_helper_of_the_solution_is_warned_about(tmp_path: Path) -> None:
    """Session 21 (persona): a river-crossing check `crossings` made public with the reference's `safe`, the safety
    rule `successors` (graded) is built on: the kit shipped `safe` to every student and validate said nothing. A
    helper the template gives students anyway (`Problem`, in `given`) is no news."""
    (tmp_path / "river.py").write_text(textwrap.dedent('''
        class Problem:
            def __init__(self, m):
                self.m = m


        def safe(problem, state):
            return 0 <= state <= problem.m


        def successors(problem, state):
            return {s for s in (state - 1, state + 1) if safe(problem, s)}


        def crossings(got, variables):
            problem = Problem(variables["m"])
            return all(safe(problem, s) for s in got)


        def sizes(rng, count):
            return [{"m": 3, "s": 1}][:count]
        '''))
    (tmp_path / "river.yaml").write_text(textwrap.dedent('''
        assignment: river
        reference: river.py
        given: [Problem]
        exercises:
          - id: successors
            check: {name: crossings, public: true}
            cases:
              - generate: sizes
                count: 1
                seed: 1
                call: successors(Problem(m), s)
        '''))
    from grader.kit.public import solution_helpers_shipped
    warnings = solution_helpers_shipped(load_rubric(tmp_path / "river.yaml"))
    assert warnings == [f"{tmp_path / 'river.yaml'}:6: exercise 'successors': a public check ships 'safe', which the "
                        f"reference's successors uses: every student's kit holds it; leave the check private if "
                        f"'safe' is part of the solution"]


# A generated case whose variables are numbers: the call line states them ("with m=3, c=4"), and they were drawn
# again under it as inputs ("c = 4", "m = 3"), and for the cases folded under "and 2 more cases failed the same
# way" once more as "c, case 1 of the 2 more = 5" (persona, session 21). A tuple variable is still drawn.
CROSSING = '''
def crossing(m, c):
    return m * 10 + c


def boat(state):
    return state[0] - state[1]


def sizes(rng, count):
    return [{"m": 3 + k, "c": 4 + k} for k in range(count)]


def states(rng, count):
    return [{"state": (3 + k, 1, 0)} for k in range(count)]
'''

CROSSING_RUBRIC = '''
assignment: crossing
reference: crossing.py
exercises:
  - id: crossing
    cases:
      - generate: sizes
        count: 3
        seed: 1
        call: crossing(m, c)
  - id: boat
    cases:
      - generate: states
        count: 1
        seed: 1
        call: boat(state)
'''


def test_a_number_the_call_line_states_is_not_drawn_again_as_an_input(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    from testclock import within
    (tmp_path / "crossing.py").write_text(CROSSING, encoding="utf-8")
    (tmp_path / "crossing.yaml").write_text(CROSSING_RUBRIC, encoding="utf-8")
    nbformat.write(new_notebook(cells=[new_code_cell("def crossing(m, c):\n    return open('sizes.txt').read()\n\n"
                                                     "def boat(state):\n    return 0")]),
                   tmp_path / "lab.ipynb")
    env = {**os.environ, "COLUMNS": "200"}
    for argv in (["kit", "crossing.yaml", "-o", "kit.json", "--cache", "cache"],
                 ["check", "lab.ipynb", "--kit", "kit.json"]):
        done = subprocess.run([sys.executable, "-m", "grader", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=within(300))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert "! crossing(m, c)  with m=3, c=4" in lines, done.stdout
    assert "and 2 more cases failed the same way: crossing(m, c)  with m=4, c=5, crossing(m, c)  with m=5, c=6" \
        in lines, done.stdout
    assert not any(line.startswith(("m = ", "c = ", "m, case", "c, case")) for line in lines), done.stdout
    # A tuple may be a board: still drawn under the call that states it.
    assert "✗ boat(state)  with state=(3, 1, 0)" in lines and "state = (3, 1, 0)" in lines, done.stdout
