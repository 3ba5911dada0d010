"""The top-level dependency slice: a statement is kept only when what the grading needs reads what it binds or
changes (transitively, on the AST), whatever it calls; `grader extract` says why for each statement.

Real notebooks built by tests/fixtures/fair/build.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path


from grader.extract.source import Extracted, Policy, extract
from grader.judge.grading import child_statements
from grader.syntax.analysis import mutated_names
from grader.intake.notebook import read_notebook
from grader.rubric.schema import load_rubric
from grader.sandbox.process import ProcessLimits, Sandbox
from grader.intake.warning import Kind

from conftest import REPO, RUBRIC, SUBMISSIONS

FAIR = REPO / "tests" / "fixtures" / "fair"


def sliced(name: str, *roots: str) -> Extracted:
    return extract(read_notebook(FAIR / f"{name}.ipynb"), Policy(roots=frozenset(roots)))


def kept_code(extracted: Extracted) -> list[str]:
    return [statement.code for statement in extracted.statements]


def test_alias_and_method_calls_at_top_level_are_not_run() -> None:
    extracted = sliced("slice_alias_and_method_calls", "moves")
    code = "\n".join(kept_code(extracted))
    assert "solve_puzzle((1, 2, 3))" not in code and "solver.solve()" not in code
    assert "switch =" not in code and "solver = Solver()" not in code
    assert "def solve(" in code and "class Solver" in code      # definitions always stay
    reasons = {d.excerpt: d.reason for d in extracted.dropped}
    assert reasons["solution = solve_puzzle((1, 2, 3))"] == "assignment to solution: nothing graded reads solution"
    assert reasons["solver.solve()"].startswith("call of solver.solve()")


def test_data_read_by_graded_functions_is_kept_with_the_reason() -> None:
    extracted = sliced("slice_needed_data", "h", "is_goal", "neighbours")
    why = {statement.code.splitlines()[0]: statement.why for statement in extracted.statements}
    assert why["CORRECT_POS = get_correct_pos()"] == "CORRECT_POS read by h"
    assert why["goal.append(0)"] == "goal changed here and read by is_goal"
    assert why["romania = Map({'Arad': ['Sibiu', 'Zerind'], 'Sibiu': ['Arad']})"] == "romania read by neighbours"
    code = "\n".join(kept_code(extracted))
    assert "unused = h(" not in code and "for city in" not in code


def test_setattr_and_delattr_on_a_needed_class_change_it_like_an_attribute_assignment() -> None:
    extracted = sliced("h2_added_with_setattr_in_a_later_cell", "EightPuzzle")
    why = {statement.code: statement.why for statement in extracted.statements}
    assert why["setattr(EightPuzzle, 'h2', manhattan_h2)"] == "EightPuzzle changed here and read by the rubric's cases"
    assert mutated_names(ast.parse("delattr(Board.rows[0], 'x')").body[0]) == {"Board"}
    assert mutated_names(ast.parse("getattr(Board, 'x')(1)").body[0]) == frozenset()
    assert mutated_names(ast.parse("setattr(make(), 'x', 1)").body[0]) == frozenset()


def test_what_nothing_graded_reads_is_dropped_even_when_it_calls_nothing() -> None:
    extracted = sliced("slice_needed_data", "is_goal")
    code = "\n".join(kept_code(extracted))
    assert "goal.append(0)" in code
    assert "CORRECT_POS =" not in code and "romania =" not in code


def test_the_loaded_notebook_has_what_graded_functions_read(tmp_path: Path) -> None:
    extracted = sliced("slice_needed_data", "h", "is_goal", "neighbours")
    with Sandbox(child_statements(extracted), {}, ProcessLimits(load_seconds=5)) as sandbox:
        report = sandbox.load()
    assert {"CORRECT_POS", "goal", "romania"} <= set(report.names)
    assert "unused" not in report.names and "city" not in report.names
    assert report.warnings == ()


def test_a_needed_statement_over_the_load_budget_is_stopped_and_its_names_reported() -> None:
    extracted = sliced("slice_slow_needed_statement", "lookup")
    assert any(s.code == "TABLE = build_table()" for s in extracted.statements)
    with Sandbox(child_statements(extracted), {}, ProcessLimits(load_seconds=0.5)) as sandbox:
        report = sandbox.load()
    [placed] = [w for w in report.warnings if "did not finish" in w.text]
    assert (placed.kind, placed.subject, placed.cell, placed.line) == (Kind.LOAD_TIMEOUT, "TABLE", 2, 1)
    warning = placed.shown
    assert warning.startswith("cell 3, line 1:") and "TABLE unavailable" in warning
    assert "lookup" in report.names and "TABLE" not in report.names


def test_the_rubric_roots_keep_what_main_and_the_cases_read_and_drop_the_animation() -> None:
    policy = load_rubric(RUBRIC).policy
    assert policy.roots is not None and {"main", "search", "Start"} <= policy.roots
    extracted = extract(read_notebook(SUBMISSIONS / "main-animation.ipynb"), policy)
    code = "\n".join(kept_code(extracted))
    assert "animation(" not in code.replace("def animation(", "") and "Path = main()" not in code


def test_grader_extract_says_why_each_statement_was_kept_or_dropped() -> None:
    shown = subprocess.run([sys.executable, "-m", "grader", "extract", "--rubric", str(RUBRIC),
                            str(SUBMISSIONS / "seed-000.ipynb")], capture_output=True, text=True, check=True).stdout
    assert "kept: S read by manhattan" in shown
    assert "call of draw_state(): graded code does not depend on it" in shown
    assert "if statement: graded code does not depend on it: if Path:" in shown


def test_a_statement_above_the_helper_it_calls_runs_after_the_helper() -> None:
    extracted = sliced("slice_helper_defined_below", "is_goal")
    order = [statement.code.splitlines()[0] for statement in extracted.statements]
    assert order.index("goal = to_tuple(rows)") > order.index("def to_tuple(L):")
    assert order.index("GOAL_ZERO = find_zero(goal)") > order.index("def find_zero(S):")
    assert order.index("rows.append([6, 7, 8])") < order.index("goal = to_tuple(rows)")
    why = {statement.code: statement.why for statement in extracted.statements}
    assert why["goal = to_tuple(rows)"] == ("goal read by is_goal; runs after cell 2, line 1, which defines what "
                                            "it uses")
    with Sandbox(child_statements(extracted), {}, ProcessLimits(load_seconds=5)) as sandbox:
        report = sandbox.load()
    assert {"goal", "GOAL_ZERO"} <= set(report.names) and report.warnings == ()


def test_a_statement_never_waits_past_a_later_binding_of_its_own_names() -> None:
    notebook = read_notebook(FAIR / "slice_helper_defined_below.ipynb")
    later = [replace(cell, index=cell.index + 1) for cell in notebook.cells[1:]]
    cells = [notebook.cells[0], replace(notebook.cells[1], source="goal = ((0,),)"), *later]
    extracted = extract(replace(notebook, cells=tuple(cells)), Policy(roots=frozenset({"is_goal"})))
    order = [statement.code for statement in extracted.statements]
    # In the notebook the later `goal = ((0,),)` wins, so the earlier one runs (and fails) before it.
    assert order.index("goal = to_tuple(rows)") < order.index("goal = ((0,),)")


def test_a_definition_above_what_its_statement_evaluates_runs_after_it() -> None:
    """A class's base, a class attribute, a method's decorator and default, all bound in later cells the student
    ran first: the class waits for them (its methods' bodies do not count), and a statement building one waits
    with it."""
    extracted = sliced("slice_class_base_defined_below", "first_h")
    order = [statement.code.splitlines()[0] for statement in extracted.statements]
    assert order == ["class Problem:", "WEIGHT = 1", "GOAL = (1, 2, 3, 4, 5, 6, 7, 8, 0)", "def cached(f):",
                     "class EightPuzzle(Problem):", "puzzle = EightPuzzle((1, 2, 3, 4, 5, 6, 0, 7, 8))",
                     "def first_h():"]
    why = {statement.code.splitlines()[0]: statement.why for statement in extracted.statements}
    assert why["class EightPuzzle(Problem):"] == "runs after cell 5, line 1, which defines what it uses"
    with Sandbox(child_statements(extracted), {}, ProcessLimits(load_seconds=5)) as sandbox:
        report = sandbox.load()
    assert {"EightPuzzle", "puzzle"} <= set(report.names) and report.warnings == ()


def test_a_definition_waits_for_nothing_in_a_cycle_or_for_a_name_bound_nowhere_below() -> None:
    """Two classes each based on the other, and a base no cell binds: the NameError is the student's, where they
    stand, while a class whose base is below still waits for it."""
    cells = ["class A(B):\n    pass", "class B(A):\n    pass", "class C(Missing):\n    pass", "class D(E):\n    pass",
             "class E:\n    pass", "def graded():\n    return A, B, C, D"]
    notebook = read_notebook(FAIR / "slice_class_base_defined_below.ipynb")
    own = tuple(replace(notebook.cells[0], index=n, source=source) for n, source in enumerate(cells))
    extracted = extract(replace(notebook, cells=own), Policy(roots=frozenset({"graded"})))
    assert [statement.code for statement in extracted.statements] == [*cells[:3], cells[4], cells[3], cells[5]]
    assert [statement.why for statement in extracted.statements][:3] == ["", "", ""]


def test_a_class_extending_a_waiting_class_of_the_same_name_waits_with_it() -> None:
    """`class EightPuzzle(EightPuzzle)` (a notebook adding a method to its class cell by cell) below a class that
    waits for its base: it extends that class, so it waits for it instead of running first with nothing to
    extend."""
    cells = ["class EightPuzzle(Problem):\n    def h(self):\n        return 1",
             "class EightPuzzle(EightPuzzle):\n    def h2(self):\n        return 2",
             "class Problem:\n    pass", "def graded():\n    return EightPuzzle().h2()"]
    notebook = read_notebook(FAIR / "slice_class_base_defined_below.ipynb")
    own = tuple(replace(notebook.cells[0], index=n, source=source) for n, source in enumerate(cells))
    extracted = extract(replace(notebook, cells=own), Policy(roots=frozenset({"graded"})))
    assert [statement.code for statement in extracted.statements] == [cells[2], cells[0], cells[1], cells[3]]
    with Sandbox(child_statements(extracted), {}, ProcessLimits(load_seconds=5)) as sandbox:
        report = sandbox.load()
    assert {"EightPuzzle", "Problem"} <= set(report.names) and report.warnings == ()


def test_a_demo_search_bound_to_a_name_cases_give_their_own_value_is_not_run() -> None:
    from grader.plan.cases import build_plan
    plan = build_plan(load_rubric(REPO / "rubrics" / "eight-puzzle-astar.yaml"))
    assert {"state", "result", "board", "GOAL"}.isdisjoint(plan.rubric.policy.roots or ())
    extracted = extract(read_notebook(FAIR / "demo_search_named_like_case_data.ipynb"), plan.rubric.policy)
    code = "\n".join(kept_code(extracted))
    assert "astar_search(EightPuzzle((8, 6" not in code and "state = result.state" not in code
    reasons = {d.excerpt: d.reason for d in extracted.dropped}
    assert reasons["result = astar_search(EightPuzzle((8, 6, 7, 2, 5, 4, 3, 0, 1)))"] == (
        "assignment to result: nothing graded reads result (it calls notebook function astar_search())")


def test_a_name_a_case_binds_with_an_assignment_expression_is_no_root() -> None:
    """A call's own `(s := ...)` gives s its value: s is no root unless grading needs it otherwise; a call
    without `:=` binds nothing (and is not parsed for it)."""
    from grader.plan.cases import Case, slice_policy
    rubric = load_rubric(RUBRIC)
    exercise = rubric.exercises[0]
    spec = exercise.cases[0]
    roots = frozenset({"own", "kept", exercise.names[0].split(".")[0]})
    rubric = replace(rubric, policy=replace(rubric.policy, roots=roots))

    def case(call: str) -> Case:
        return Case(f"{exercise.id}#1", exercise.id, call, "public", spec.check)

    assert slice_policy(rubric, {}, {exercise.id: (case(f"(own := {spec.call}) and own"),)}).roots == roots - {"own"}
    assert slice_policy(rubric, {}, {exercise.id: (case(f"{spec.call} and own"),)}).roots == roots


def test_an_assignment_expression_in_any_statement_binds_its_name() -> None:
    """`print(goal := f())` shows and binds goal in Jupyter: dropped as a call, goal kept an earlier value (or
    none). So does one in a loop's iterable or an if's test."""
    from grader.intake.notebook import notebook_from_source
    script = ("# %%\ngoal = 1\n# %%\nprint(goal := 5)\n# %%\nfor _ in range(n := 3):\n    pass\n# %%\n"
              "print('unused', unused := 4)\n# %%\ndef g():\n    return goal + n\n")
    extracted = extract(notebook_from_source(script), Policy(roots=frozenset({"g"})))
    assert kept_code(extracted) == ["goal = 1", "print(goal := 5)", "for _ in range(n := 3):\n    pass",
                                    "def g():\n    return goal + n"]
    assert extracted.definitions["goal"].cell == 1 and extracted.definitions["n"].kind == "data"


def test_a_call_binds_what_the_function_it_calls_sets_as_global_when_nothing_else_binds_it() -> None:
    """`def main(): global goal_state; goal_state = ...` then `main()`: the call binds goal_state in Jupyter. A name
    the notebook binds at top level too (a counter the search resets) keeps its binding, and no search run."""
    from grader.intake.notebook import notebook_from_source
    script = ("# %%\ncount = 0\n# %%\ndef search(s):\n    global count\n    count = 0\n    return s + goal_state\n"
              "# %%\ndef main():\n    global goal_state\n    goal_state = 7\n    print(search(1))\n# %%\n"
              "search(3)\n# %%\nmain()\n")
    extracted = extract(notebook_from_source(script), Policy(roots=frozenset({"search", "count"})))
    assert [s.code for s in extracted.statements if s.kind not in ("def", "class")] == ["count = 0", "main()"]
    [call] = [s for s in extracted.statements if s.code == "main()"]
    assert call.names == ("goal_state",) and call.why.startswith("goal_state set (global)")
