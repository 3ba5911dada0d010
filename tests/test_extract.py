"""Extraction: which top-level statements of a notebook are kept, which are dropped and why, and what wins."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grader.extract.source import Extracted, Statement, extract

from grader.rubric.schema import Policy
from grader.intake.notebook import Cell, notebook_from_source, read_notebook
from grader.intake.warning import Kind

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = FIXTURES / "seeds"
OWN = FIXTURES / "notebooks"
SEED_NAMES = [
    "000_5a034f3040ca5b29",
    "001_41f7c61cc2742148",
    "002_f30b892f30367653",
    "003_e8760ccd72881298",
    "004_6265c78a6fd907d9",
]


def seed(name: str) -> Extracted:
    return extract(read_notebook(SEEDS / f"{name}.ipynb"))


def own(name: str, policy: Policy = Policy()) -> Extracted:
    return extract(read_notebook(OWN / name), policy)


def drops(ex: Extracted) -> list[tuple[str, str]]:
    return [(d.reason, d.excerpt) for d in ex.dropped]


def binding(ex: Extracted, name: str) -> Statement:
    """The last kept statement that binds `name`."""
    return [s for s in ex.statements if name in s.names][-1]


def run_kept(ex: Extracted) -> dict[str, object]:
    """Execute the kept statements as the child would, with %run recorded instead of loaded."""
    namespace: dict[str, object] = {"__grader_run__": lambda stem: loaded.append(stem)}
    loaded: list[str] = []
    exec(compile(ex.source(), "<extracted>", "exec"), namespace)
    namespace["loaded"] = loaded
    return namespace


# ---------------------------------------------------------------- the five seed notebooks


@pytest.mark.parametrize("name", SEED_NAMES)
def test_every_seed_extracts_to_compilable_statements_without_syntax_errors(name: str) -> None:
    ex = seed(name)
    assert ex.syntax_errors == ()
    assert ex.warnings == ()
    assert ex.statements
    compile(ex.source(), name, "exec")
    for statement in ex.statements:
        compile(statement.code, statement.label, "exec")


@pytest.mark.parametrize("name", SEED_NAMES)
def test_statement_line_points_at_its_first_line_in_the_cell(name: str) -> None:
    nb = read_notebook(SEEDS / f"{name}.ipynb")
    for statement in seed(name).statements:
        if statement.kind == "run":
            continue
        cell = nb.cells[statement.cell]
        assert statement.label == cell.label
        cell_line = cell.source.splitlines()[statement.line - 1]
        assert cell_line.startswith(statement.code.splitlines()[0])


def test_seed000_real_find_tile_overrides_the_earlier_stub() -> None:
    ex = seed("000_5a034f3040ca5b29")
    stubs = [s for s in ex.statements if s.names == ("find_tile",)]
    assert [s.label for s in stubs] == ["In [39] (cell 22)", "In [50] (cell 40)"]
    find_tile = ex.definitions["find_tile"]
    assert find_tile.is_stub is False
    assert find_tile.label == "In [50] (cell 40)"
    assert find_tile.kind == "function"


def test_seed000_calls_of_notebook_functions_are_dropped() -> None:
    ex = seed("000_5a034f3040ca5b29")
    assert ("bare expression", "main()") in drops(ex)
    assert ("assignment calls notebook function main()", "Path = main()") in drops(ex)
    assert ("bare expression", "draw_state(Start)") in drops(ex)
    assert ("bare expression", "HTML(css)") in drops(ex)
    assert "Path" not in ex.definitions
    # `if Path: animation(Path)` is dropped for its inner call
    assert ("bare expression", "if Path:") in drops(ex)


def test_seed000_load_ext_is_dropped_as_a_line_magic() -> None:
    ex = seed("000_5a034f3040ca5b29")
    [load_ext] = [d for d in ex.dropped if d.label.startswith("In [27]")]
    assert (load_ext.reason, load_ext.line, load_ext.excerpt) == ("line magic %load_ext", 1, "%load_ext nb_mypy")


def test_seed000_defines_the_graded_functions_and_keeps_data_and_imports() -> None:
    ex = seed("000_5a034f3040ca5b29")
    for name in ("find_numbers", "search", "main", "manhattan", "move_dir"):
        assert ex.definitions[name].kind == "function"
    assert ex.definitions["Start"].kind == "data"
    assert ex.definitions["S"].label == "In [49] (cell 38)"  # S is assigned twice; the later cell wins
    assert ex.definitions["heapq"].kind == "import"
    assert binding(ex, "cnv").kind == "import"
    # the style cell: the import and the `with open(...)` block are kept, `HTML(css)` is not
    with_block = binding(ex, "css")
    assert (with_block.kind, with_block.names) == ("other", ("f", "css"))


def test_seed001_html_cell_is_a_cell_magic_not_a_syntax_error() -> None:
    ex = seed("001_41f7c61cc2742148")
    first = ex.dropped[0]
    assert (first.cell, first.line, first.reason, first.excerpt) == (0, 1, "cell magic %%HTML", "%%HTML")
    assert ex.syntax_errors == ()
    assert all(s.cell != 0 for s in ex.statements)


@pytest.mark.parametrize(
    "name",
    ["matches", "manhattan", "replace_numbers", "intermediate_goals", "extract_move", "extract_move_list",
     "apply_move_list"],
)
def test_seed001_template_functions_are_stubs(name: str) -> None:
    definition = seed("001_41f7c61cc2742148").definitions[name]
    assert (definition.kind, definition.is_stub) == ("function", True)


@pytest.mark.parametrize("name", ["find_tiles", "search", "find_tile", "main"])
def test_seed001_given_functions_are_not_stubs(name: str) -> None:
    assert seed("001_41f7c61cc2742148").definitions[name].is_stub is False


def test_seed001_to_list_and_to_tuple_are_lambdas() -> None:
    ex = seed("001_41f7c61cc2742148")
    for name in ("to_list", "to_tuple"):
        definition = ex.definitions[name]
        assert (definition.kind, definition.is_stub) == ("lambda", False)
        assert binding(ex, name).kind == "assign"


def test_seed001_time_cell_keeps_its_body_but_policy_drops_path_equals_main() -> None:
    ex = seed("001_41f7c61cc2742148")
    time_cell = [d for d in ex.dropped if d.excerpt == "%%time"][0].cell
    assert [(d.line, d.reason) for d in ex.dropped if d.cell == time_cell] == [
        (1, "cell magic %%time (body kept)"),
        (2, "assignment calls notebook function main()"),
        (3, "bare expression"),
    ]
    assert not [s for s in ex.statements if s.cell == time_cell]


def test_seed002_percent_run_becomes_a_run_statement_in_document_order() -> None:
    ex = seed("002_f30b892f30367653")
    assert ex.runs == ("Breadth-First-Fast",)
    [run] = [s for s in ex.statements if s.kind == "run"]
    assert run.code == "__grader_run__('Breadth-First-Fast')"
    assert (run.label, run.line, run.names) == ("In [8] (cell 12)", 1, ())
    order = [s.names for s in ex.statements]
    assert order.index(("arb",)) < order.index(()) < order.index(("start",))
    assert not any(d.reason.startswith("line magic %run") for d in ex.dropped)


def test_seed002_assignment_calling_a_function_from_the_run_module_is_dropped() -> None:
    ex = seed("002_f30b892f30367653")
    assert (
        "assignment calls search() from %run Breadth-First-Fast",
        "Path = search(nextStates, start, goal)",
    ) in drops(ex)
    assert ("loop at top level", "for State in Path:") in drops(ex)


def test_seed003_top_level_loops_and_runs_are_dropped_and_the_state_class_kept() -> None:
    ex = seed("003_e8760ccd72881298")
    assert ("loop at top level", "while frontier:") in drops(ex)
    assert ("assignment calls notebook class State.getSolution()", "state = State.getSolution()") in drops(ex)
    assert ("assignment calls notebook class StatePriorityQueue()", "frontier = StatePriorityQueue()") in drops(ex)
    assert ex.definitions["State"].kind == "class"
    assert ex.definitions["rng"].kind == "data"  # a library call is kept
    assert binding(ex, "cycle").code == "cycle=0"
    imports = [s for s in ex.statements if s.kind == "import" and s.cell == 0]
    assert len(imports) == 3


def test_seed004_class_and_search_functions_kept_and_instances_dropped() -> None:
    ex = seed("004_6265c78a6fd907d9")
    for name in ("EightPuzzle", "Problem", "Node", "PriorityQueue", "Board"):
        assert ex.definitions[name].kind == "class"
    for name in ("best_first_search", "astar_search", "expand", "path_states", "inversions", "g"):
        assert (ex.definitions[name].kind, ex.definitions[name].is_stub) == ("function", False)
    assert ("line magic %matplotlib", "%matplotlib inline") in drops(ex)
    assert ex.definitions["heapq"].kind == "import"  # the rest of the magic's cell is kept
    assert (
        "assignment calls notebook class EightPuzzle()",
        "e1 = EightPuzzle((1, 4, 2, 0, 7, 5, 3, 6, 8))",
    ) in drops(ex)
    # `failure = Node(...)` instantiates a notebook class, so the default policy drops it too
    assert "failure" not in ex.definitions
    assert ex.definitions["FIFOQueue"].kind == "data"


def test_seed004_allow_calls_keeps_instances_of_an_allowed_class() -> None:
    ex = extract(read_notebook(SEEDS / "004_6265c78a6fd907d9.ipynb"), Policy(allow_calls=frozenset({"Node"})))
    assert ex.definitions["failure"].kind == "data"
    assert "e1" not in ex.definitions


# ---------------------------------------------------------------- syntax errors and redefinitions


def test_syntax_error_leaves_out_only_its_cell() -> None:
    ex = own("syntax_error.ipynb")
    [error] = ex.syntax_errors
    assert (error.cell, error.line, error.label) == (2, 3, "In [2] (cell 3)")
    assert error.reason == "syntax error: invalid syntax (line 3)"
    assert error.excerpt == "return total +"
    assert error in ex.dropped
    [warning] = ex.warnings
    assert warning.shown == "In [2] (cell 3), line 3: cell left out: SyntaxError: invalid syntax"
    assert (warning.kind, warning.subject, warning.cell, warning.line) == (Kind.SYNTAX, "SyntaxError", 2, 3)
    assert set(ex.definitions) == {"x", "later", "y"}
    assert run_kept(ex)["later"]() == 1  # type: ignore[operator]


def test_last_definition_in_document_order_wins_over_execution_order() -> None:
    ex = own("redefinitions.ipynb")
    solve = ex.definitions["solve"]
    assert solve.label == "In [3] (cell 5)"
    assert binding(ex, "solve").code.endswith("'second'")
    assert ex.definitions["N"].label == "In [2] (cell 6)"
    assert ex.definitions["helper"].kind == "data"  # `helper = None` after the def
    assert ex.definitions["root"].kind == "data"  # the assignment after the import
    assert list(ex.definitions)[-2:] == ["helper", "root"]  # ordered by last binding
    namespace = run_kept(ex)
    assert namespace["solve"](1) == "second"  # type: ignore[operator]


# ---------------------------------------------------------------- magics, shell and help lines


MAGICS_DROPPED_CELLS = ["HTML", "html", "bash", "writefile", "javascript", "latex", "markdown", "sh", "script", "svg"]


@pytest.mark.parametrize(("index", "magic"), list(enumerate(MAGICS_DROPPED_CELLS)))
def test_non_python_cell_magic_drops_the_whole_cell(index: int, magic: str) -> None:
    ex = own("magics.ipynb")
    assert [(d.line, d.reason) for d in ex.dropped if d.cell == index] == [(1, f"cell magic %%{magic}")]
    assert not [s for s in ex.statements if s.cell == index]


@pytest.mark.parametrize(("name", "magic"), [("CAPTURED", "capture"), ("TIMED_CELL", "timeit"), ("TIMED", "time")])
def test_wrapping_cell_magic_keeps_its_body_with_line_numbers(name: str, magic: str) -> None:
    ex = own("magics.ipynb")
    statement = binding(ex, name)
    magic_line = statement.line - 1
    assert [d.reason for d in ex.dropped if d.cell == statement.cell and d.line == magic_line] == [
        f"cell magic %%{magic} (body kept)"
    ]


def test_capture_body_statements_still_follow_the_policy() -> None:
    ex = own("magics.ipynb")
    cell = binding(ex, "CAPTURED").cell
    assert [(d.line, d.reason) for d in ex.dropped if d.cell == cell][1:] == [(3, "bare expression")]


def test_line_magics_are_replaced_and_line_numbers_kept() -> None:
    ex = own("magics.ipynb")
    statement = binding(ex, "AFTER_MAGICS")
    assert statement.line == 4
    assert [d.reason for d in ex.dropped if d.cell == statement.cell] == [
        "line magic %matplotlib",
        "line magic %load_ext",
        "line magic %autoreload",
    ]


def test_time_and_timeit_keep_their_statement_and_timeit_options_are_removed() -> None:
    ex = own("magics.ipynb")
    assert binding(ex, "KEPT_TIME").code == "KEPT_TIME = 5"
    assert binding(ex, "KEPT_TIMEIT").code == "KEPT_TIMEIT = 6"
    cell = binding(ex, "KEPT_TIME").cell
    assert [(d.line, d.reason) for d in ex.dropped if d.cell == cell] == [
        (1, "line magic %time (statement kept)"),
        (2, "line magic %timeit (statement kept)"),
        (3, "line magic %timeit"),  # `t = %timeit ...` assigns the magic's result: dropped
    ]
    assert "t" not in ex.definitions


def test_shell_lines_and_shell_assignments_are_dropped() -> None:
    ex = own("magics.ipynb")
    cell = binding(ex, "AFTER_SHELL").cell
    assert [(d.reason, d.excerpt) for d in ex.dropped if d.cell == cell] == [
        ("shell command", "!pip install numpy"),
        ("shell command", "!!ls"),
        ("shell command", "files = !ls"),
    ]
    assert "files" not in ex.definitions


def test_help_lines_are_dropped() -> None:
    ex = own("magics.ipynb")
    cell = binding(ex, "AFTER_HELP").cell
    assert [(d.reason, d.excerpt) for d in ex.dropped if d.cell == cell] == [
        ("help request", "len?"),
        ("help request", "len??"),
        ("help request", "?len"),
    ]


def test_run_variants_name_the_support_module_stem_in_order() -> None:
    ex = own("magics.ipynb")
    assert ex.runs == ("Support", "Set", "helpers")
    cell = binding(ex, "AFTER_RUN").cell
    assert [(s.line, s.kind, s.code) for s in ex.statements if s.cell == cell] == [
        (1, "run", "__grader_run__('Support')"),
        (2, "assign", "AFTER_RUN = 9"),
        (3, "run", "__grader_run__('Set')"),
        (4, "run", "__grader_run__('helpers')"),
    ]


def test_magics_inside_a_function_body_are_replaced_and_the_function_still_parses() -> None:
    ex = own("magics.ipynb")
    assert binding(ex, "timed").code == "def timed():\n    total = sum(range(10))\n    return total"
    assert binding(ex, "plot").code == "def plot():\n    pass"
    cell = binding(ex, "timed").cell
    assert [(d.line, d.reason) for d in ex.dropped if d.cell == cell] == [
        (2, "line magic %time (statement kept)"),
        (6, "line magic %matplotlib"),
        (9, "line magic %run (not at top level)"),
    ]
    assert "Other" not in ex.runs


def test_percent_and_bang_inside_strings_and_brackets_are_python() -> None:
    ex = own("magics.ipynb")
    assert "%matplotlib is just text" in binding(ex, "TEMPLATE").code
    assert binding(ex, "rest").code == "rest = (100\n%width)"
    assert not [d for d in ex.dropped if d.cell == binding(ex, "rest").cell]


def test_cell_magic_not_on_the_first_line_is_dropped_like_a_line_magic() -> None:
    ex = own("magics.ipynb")
    cell = binding(ex, "MISPLACED").cell
    dropped = [(d.line, d.reason) for d in ex.dropped if d.cell == cell]
    assert dropped == [(2, "cell magic %%time not on the first line")]


def test_kept_statements_of_the_magics_notebook_run_as_python() -> None:
    namespace = run_kept(own("magics.ipynb"))
    assert namespace["loaded"] == ["Support", "Set", "helpers"]
    assert namespace["rest"] == 100 % 7
    assert namespace["timed"]() == 45  # type: ignore[operator]
    assert (namespace["CAPTURED"], namespace["KEPT_TIMEIT"], namespace["NEVER"]) == (1, 6, 11)


# ---------------------------------------------------------------- the top-level policy


def test_decorated_function_starts_at_its_decorator() -> None:
    fib = binding(own("policy.ipynb"), "fib")
    assert (fib.kind, fib.line) == ("def", 1)
    assert fib.code.startswith("@functools.lru_cache(maxsize=None)\ndef fib(n):")


def test_compound_statements_are_kept_only_when_everything_inside_is_kept() -> None:
    ex = own("policy.ipynb")
    kept = {s.code.splitlines()[0]: s for s in ex.statements}
    assert kept["try:"].names == ("numba",)
    assert kept["with open('style.css') as f:"].names == ("f", "css")
    assert kept["if True:"].names == ("LIMIT",)
    assert all(s.kind == "other" for s in (kept["try:"], kept["if True:"]))
    assert ("bare expression", "if LIMIT:") in drops(ex)
    assert ("if condition calls notebook function setup()", "if setup():") in drops(ex)
    assert ('if __name__ == "__main__" block', 'if __name__ == "__main__":') in drops(ex)


def test_statements_that_do_work_at_load_time_are_dropped() -> None:
    ex = own("policy.ipynb")
    assert ("assignment calls notebook function setup()", "TABLE = setup()") in drops(ex)
    assert ("bare expression", "setup()") in drops(ex)
    assert ("delete statement", "del css") in drops(ex)
    assert ("loop at top level", "for i in range(3):") in drops(ex)
    assert ("assignment calls notebook function fib()", "squares = [fib(i) for i in range(5)]") in drops(ex)
    assert ("assignment calls notebook class Board()", "board = Board()") in drops(ex)


def test_lambda_bodies_and_attribute_reads_are_not_calls() -> None:
    ex = own("policy.ipynb")
    assert ex.definitions["key"].kind == "lambda"
    assert binding(ex, "size").code == "size = Board.size"


def test_statements_sharing_a_line_are_cut_at_the_semicolons() -> None:
    ex = own("policy.ipynb")
    assert binding(ex, "a").code == "a = 1"
    assert binding(ex, "b").code == "b = 2"
    assert ("bare expression", "fib(2)") in drops(ex)


def test_global_and_pass_are_kept() -> None:
    ex = own("policy.ipynb")
    assert [s.code for s in ex.statements][-2:] == ["global LIMIT", "pass"]


def test_allow_calls_keeps_assignments_conditions_and_bare_calls_of_that_function() -> None:
    ex = own("policy.ipynb", Policy(allow_calls=frozenset({"setup"})))
    assert binding(ex, "TABLE").code == "TABLE = setup()"
    assert "setup()" in [s.code for s in ex.statements]
    assert binding(ex, "READY").code.startswith("if setup():")
    assert ("assignment calls notebook function fib()", "squares = [fib(i) for i in range(5)]") in drops(ex)


def test_drop_policy_drops_assignments_to_named_globals() -> None:
    ex = own("policy.ipynb", Policy(drop=frozenset({"SECRET", "LIMIT"})))
    assert ("dropped by rubric", "SECRET = 42") in drops(ex)
    assert ("dropped by rubric", "if True:") in drops(ex)  # the if assigns LIMIT
    assert "SECRET" not in ex.definitions and "LIMIT" not in ex.definitions


def test_dropped_report_and_source_name_cell_and_line() -> None:
    ex = own("policy.ipynb")
    report = ex.dropped_report().splitlines()
    assert report[0] == "cell 4, line 1: assignment calls notebook function setup(): TABLE = setup()"
    assert len(report) == len(ex.dropped)
    assert ex.source().startswith("# cell 1, line 1\nimport functools\n\n# cell 2, line 1\n@functools")


def test_markdown_and_raw_cells_are_ignored() -> None:
    ex = extract(notebook_from_source("# %% [markdown]\n# x = 1\n# %% [raw]\ny = 2\n# %%\nz = 3\n"))
    assert [s.code for s in ex.statements] == ["z = 3"]


def test_excerpt_is_the_first_line_cut_to_80_characters() -> None:
    long_call = "print(" + "'a', " * 30 + "'b')"
    ex = extract(notebook_from_source(f"{long_call}\nx = 1\n"))
    [dropped] = ex.dropped
    assert len(dropped.excerpt) == 80
    assert dropped.excerpt == long_call[:77] + "..."


def test_import_statements_bind_their_names() -> None:
    ex = extract(notebook_from_source("import os.path as p, sys\nfrom .. import sibling\nfrom a.b import c as d\n"))
    assert [(s.names, s.kind) for s in ex.statements] == [
        (("p", "sys"), "import"),
        (("sibling",), "import"),
        (("d",), "import"),
    ]
    assert {name: d.kind for name, d in ex.definitions.items()} == {
        "p": "import", "sys": "import", "sibling": "import", "d": "import"
    }


def test_calling_a_lambda_at_top_level_is_dropped_like_any_notebook_call():
    notebook = notebook_from_source("def main():\n    return 1\n\nX = (lambda: main())()\nY = lambda: main()\n")
    extracted = extract(notebook)
    reasons = [d.reason for d in extracted.dropped]
    assert "assignment calls a lambda defined in the notebook" in reasons
    assert "Y" in extracted.definitions and "X" not in extracted.definitions


def test_code_past_what_the_grader_parses_for_one_notebook_is_left_out_unparsed(monkeypatch) -> None:
    """Parsing costs the grader about 3 us a character (one 1.85 M-character cell: 2-10 s in one call), and each
    cell of up to 2 M characters was parsed: a 37 MB notebook of twenty such cells kept its worker busy until the
    watchdog stopped it (228 s) and was marked failed. Past MAX_CODE_CHARS of code in one notebook, a cell is
    left out unparsed and reported (as a cell over MAX_CELL_CHARS is); the cells before it are graded."""
    import grader.extract.source as source
    notebook = read_notebook(Path(__file__).parents[1] / "assignments/taoistic-search/submissions/correct.ipynb")
    code = [cell for cell in notebook.cells if cell.kind == "code"]
    whole = extract(notebook)
    assert not whole.syntax_errors and sum(len(cell.source) for cell in code) < source.MAX_CODE_CHARS
    room = sum(len(cell.source) for cell in code[:10])
    monkeypatch.setattr(source, "MAX_CODE_CHARS", room)
    parsed: list[str] = []
    parse = source._parse
    monkeypatch.setattr(source, "_parse", lambda text: parsed.append(text) or parse(text))
    monkeypatch.setattr(source, "_PARSED", {})   # nothing parsed before counts: every text kept is parsed here
    cut = extract(notebook)
    assert [d.cell for d in cut.syntax_errors] == [cell.index for cell in code[10:]]
    assert all("more code than the grader parses" in w.text for w in cut.warnings)
    assert 0 < len(parsed) <= 10 < len(code)   # only the cells within the budget were parsed
    kept_cells = {s.cell for s in cut.statements}
    assert kept_cells and max(kept_cells) <= code[9].index


def test_data_cells_left_out_unparsed_do_not_starve_the_solution_cells_after_them(monkeypatch) -> None:
    """The budget of MAX_CODE_CHARS counts what the grader parses. A data cell over MAX_CELL_CHARS and a %%html
    cell are never parsed, yet both were counted: two of them before the solution (4.05 M characters) left every
    solution cell out, 0 points for a notebook whose code is a few thousand characters. Nor is a cell too large
    to parse scanned for line magics (a Python loop over its characters)."""
    import dataclasses
    import grader.extract.source as source
    notebook = read_notebook(Path(__file__).parents[1] / "assignments/taoistic-search/submissions/correct.ipynb")
    data = '%ls\nDATA = "' + "x" * (source.MAX_CELL_CHARS + 100_000) + '"\n'
    html = "%%html\n<p>" + "y" * 1_950_000 + "</p>\n"
    assert len(data) + len(html) > source.MAX_CODE_CHARS
    cells = (Cell(0, "code", data, 1), Cell(1, "code", html, 2)) + tuple(
        dataclasses.replace(cell, index=cell.index + 2) for cell in notebook.cells)
    big = {data, "\n".join(data.split("\n")), html}
    parsed: list[str] = []
    parse = source._parse
    monkeypatch.setattr(source, "_parse", lambda text: parsed.append(text) or parse(text))
    scanned: list[str] = []
    scan = source._replace_line_magics
    monkeypatch.setattr(source, "_replace_line_magics",
                        lambda p, **options: scanned.append(p.cell.source) or scan(p, **options))
    with_data = extract(dataclasses.replace(notebook, cells=cells))
    assert not big & set(parsed) and data not in scanned
    assert [d.cell for d in with_data.syntax_errors] == [0]
    assert "too large to parse" in with_data.warnings[0].text
    assert [s.code for s in with_data.statements] == [s.code for s in extract(notebook).statements]
    assert {s.cell for s in with_data.statements} <= {cell.index + 2 for cell in notebook.cells}


def test_a_cell_that_fits_after_one_that_does_not_is_parsed(monkeypatch) -> None:
    """Cells are parsed in document order while they fit in what is left of MAX_CODE_CHARS: one that does not fit
    is left out, and a smaller one after it is still parsed (the parsed code stays under the budget)."""
    import grader.extract.source as source
    notebook = notebook_from_source("# %%\ndef f():\n    return 1\n\n# %%\nX = [" + "1, " * 300 + "]\n\n"
                                    "# %%\ndef g():\n    return 2\n")
    code = [cell for cell in notebook.cells if cell.kind == "code"]
    assert len(code) == 3 and len(code[1].source) > len(code[0].source) + len(code[2].source)
    monkeypatch.setattr(source, "MAX_CODE_CHARS", len(code[0].source) + len(code[2].source))
    cut = extract(notebook)
    assert [d.cell for d in cut.syntax_errors] == [code[1].index]
    assert {"f", "g"} <= set(cut.definitions) and "X" not in cut.definitions


def test_a_cell_of_blank_lines_is_read_once_not_once_per_line() -> None:
    """Whether a cell may hold IPython lines was asked of a pattern whose `\\s*` ran from every line break over
    all the blank lines after it and back: a square of the cell's length. A cell of 100,000 blank lines (200 kB
    of notebook) held the grader 70 s, one of 1,000,000 for hours, before the watchdog took the worker. Run in a
    process allowed 60 s of CPU (the extraction takes about half a second), so the old pattern is stopped by the
    kernel instead of holding the suite."""
    import resource
    import subprocess
    import sys
    script = ("from grader.intake.notebook import notebook_from_source\n"
              "from grader.extract.source import extract\n"
              "notebook = notebook_from_source('# %%\\ndef f():\\n' + '\\n' * 1_000_000 + '    return 1\\n')\n"
              "extracted = extract(notebook)\n"
              "print(sorted(extracted.definitions), [d.reason for d in extracted.dropped])\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, preexec_fn=limited,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['f'] []"


def test_exec_of_an_opened_python_file_on_a_top_level_line_is_a_run_of_it() -> None:
    """exec(open('X.py').read()) is what a script writes for %run X.py (an encoding, a mode or globals() at most):
    a run of the support module X. Indented, computed, cut, of another file type or inside a string it is Python."""
    script = (
        "# %%\nexec(open('Breadth-First-Fast.py').read())\n"
        "exec(open(\"lib/Set.py\", 'r', encoding='utf-8').read(), globals())  # the AVL set\n"
        "exec(open('helpers.py', encoding=\"utf-8\").read());\n"
        "if True:\n    exec(open('Indented.py').read())\n"
        "exec(open(name).read())\nexec(open('data.txt').read())\nexec(open('cut.py').read().split('X')[0])\n"
        "text = \"\"\"\nexec(open('InString.py').read())\n\"\"\"\n"
    )
    extracted = extract(notebook_from_source(script, "script.py"))
    assert extracted.runs == ("Breadth-First-Fast", "Set", "helpers")
    assert [s.code for s in extracted.statements if s.kind == "run"] == [
        "__grader_run__('Breadth-First-Fast')", "__grader_run__('Set')", "__grader_run__('helpers')"]
    stays_python = {d.excerpt for d in extracted.dropped if d.reason == "bare expression"}
    assert stays_python == {"if True:", "exec(open(name).read())", "exec(open('data.txt').read())",
                            "exec(open('cut.py').read().split('X')[0])"}
    assert "exec(open('InString.py').read())" in extracted.source()


def test_a_cell_indented_as_a_whole_is_read_as_ipython_runs_it() -> None:
    """IPython takes the whitespace before a cell's first non-blank line off every line that starts with it
    (leading_indent) before it runs the cell: a cell pasted from inside a block runs in Jupyter. Line numbers stay;
    a line without that whitespace stays as it is, and a cell still wrongly indented after it is a syntax error."""
    script = (
        "# %%\n    def f(x):\n        return x + 1\n    y = f(1)\n"
        "# %%\n\n  %%time\n  def g():\n      return 2\n"
        "# %%\n    s = '''\nflush\n    indented'''\n"
        "# %%\n    a = 1\n      b = 2\n"
    )
    extracted = extract(notebook_from_source(script, "script.py"))
    assert binding(extracted, "f").code == "def f(x):\n    return x + 1"
    assert binding(extracted, "g").code == "def g():\n    return 2"
    assert "cell magic %%time (body kept)" in [d.reason for d in extracted.dropped]
    namespace = run_kept(extracted)
    assert namespace["s"] == "\nflush\nindented"
    [error] = extracted.syntax_errors
    assert error.reason == "syntax error: unexpected indent (line 2)"
    assert "b" not in extracted.definitions


def test_the_body_of_a_wrapping_cell_magic_is_read_as_a_cell_of_its_own() -> None:
    """%%time, %%timeit and %%capture hand their body to IPython's transform_cell: `%%time` typed above a cell
    pasted indented or with prompts runs in Jupyter (IPython 9.18's run_cell defines every function here). Line
    numbers stay those of the cell."""
    script = (
        "# %%\n%%time\n    def f(x):\n        return x + 1\n"
        "# %%\n%%capture out\n\n\tdef g():\n\t\treturn 2\n"
        "# %%\n%%timeit -n1 -r1\n>>> def h():\n...     return 3\n"
        "# %%\n%%time\n    listing = !ls\n    def k():\n        return 4\n"
    )
    extracted = extract(notebook_from_source(script, "script.py"))
    assert extracted.syntax_errors == ()
    assert binding(extracted, "f").code == "def f(x):\n    return x + 1" and binding(extracted, "f").line == 2
    assert binding(extracted, "g").code == "def g():\n\treturn 2" and binding(extracted, "g").line == 3
    assert binding(extracted, "h").code == "def h():\n    return 3"
    assert binding(extracted, "k").code == "def k():\n    return 4" and binding(extracted, "k").line == 3
    assert "shell command" in [d.reason for d in extracted.dropped]


def test_the_prompts_of_a_pasted_session_are_taken_off_as_ipython_does() -> None:
    """A cell pasted from Python's or IPython's prompt (`>>> `/`... `, `In [7]: `/`   ...: `) runs in Jupyter:
    IPython takes the prompts off every line when the first line has the first prompt or the second line any.
    A `...` that is Python (an Ellipsis body) stays."""
    script = (
        "# %%\n>>> def f(x):\n...     return x + 1\n"
        "# %%\nIn [7]: def g():\n   ...:     return 2\n"
        "# %%\ndef h():\n    ...\n"
        "# %%\nIn [8]: %time k = 3\n"
    )
    extracted = extract(notebook_from_source(script, "script.py"))
    assert binding(extracted, "f").code == "def f(x):\n    return x + 1"
    assert binding(extracted, "g").code == "def g():\n    return 2"
    assert binding(extracted, "h").code == "def h():\n    ..."
    assert binding(extracted, "k").code == "k = 3"
    assert extracted.syntax_errors == ()


def test_a_module_written_by_writefile_runs_where_the_notebook_imports_from_it() -> None:
    """`%%writefile X.py` then `from X import f`: the written cell's code runs in place of the import (as Jupyter
    imports the file). A module nothing imports from, `import X` (the module object) and a non-.py file stay out."""
    script = (
        "# %%\n%%writefile helpers.py\ndef f(x):\n    return x + 1\n"
        "# %%\n%%writefile -a 'helpers.py'\nLIMIT = 3\n"
        "# %%\nfrom helpers import f, LIMIT\n"
        "# %%\n%%writefile unused.py\ndef g():\n    return 0\n"
        "# %%\n%%writefile notes.txt\ndef h():\n    return 0\n"
        "# %%\n%%writefile mod.py\ndef k():\n    return 0\n"
        "# %%\nimport mod\n"
    )
    extracted = extract(notebook_from_source(script, "script.py"))
    assert set(extracted.definitions) == {"f", "LIMIT", "mod"}
    assert binding(extracted, "f").code == "def f(x):\n    return x + 1"
    reasons = {d.excerpt: d.reason for d in extracted.dropped}
    assert reasons["from helpers import f, LIMIT"] == (
        "import from helpers, which the notebook writes with %%writefile: that cell's code runs instead")
    assert reasons["%%writefile helpers.py"] == (
        "cell magic %%writefile (its code runs where the notebook imports from helpers)")
    assert reasons["%%writefile unused.py"] == "cell magic %%writefile"
    assert reasons["%%writefile notes.txt"] == "cell magic %%writefile"
    assert "def k():" not in extracted.source()


def test_an_ipython6_export_writes_line_magics_as_magic_calls_and_they_are_magics_again() -> None:
    """IPython before 7 exported `%run X.ipynb` as get_ipython().magic('run X.ipynb'): the name and its arguments in
    one string (u'' in Python 2 days). As calls they ran nothing; as magics again they are extracted as typed."""
    script = (
        "# In[1]:\n\nget_ipython().magic('run Breadth-First-Fast.ipynb')\n"
        "get_ipython().magic(u'matplotlib inline')\nget_ipython().magic('time x = 2 * 3')\n"
        "get_ipython().magic('%timeit y = 1')\n"
        "get_ipython().magic(name)\nget_ipython().magic('')\n"
    )
    extracted = extract(notebook_from_source(script, "export.py"))
    assert extracted.runs == ("Breadth-First-Fast",)
    reasons = {d.reason for d in extracted.dropped}
    assert {"line magic %matplotlib"} <= reasons
    stays_python = {d.excerpt for d in extracted.dropped if d.excerpt.startswith("get_ipython()")}
    assert stays_python == {"get_ipython().magic(name)", "get_ipython().magic('')"}


def test_a_script_export_writes_magics_as_ipython_calls_and_they_are_magics_again() -> None:
    """nbconvert --to script (and Jupyter's "Download as .py") write `%run X.ipynb` as
    get_ipython().run_line_magic('run', 'X.ipynb') and a %%time cell as run_cell_magic: extracted as the magics."""
    script = (
        "# In[1]:\n\nget_ipython().run_line_magic('run', 'Breadth-First-Fast.ipynb')\n"
        "get_ipython().run_line_magic('matplotlib', 'inline')\nfiles = get_ipython().getoutput('ls')\n"
        "get_ipython().system('pip install ipycanvas')\n\n"
        "# In[2]:\n\nget_ipython().run_cell_magic('time', '', \"def f(x):\\n    return 2 * x\\n\")\n\n"
        "# In[3]:\n\nget_ipython().run_cell_magic('HTML', '', '<b>bold</b>\\n')\n\n"
        "# In[5]:\n\nget_ipython().run_cell_magic('writefile', 'x.py', 'y = 1\\n')\ndef g():\n    return 3\n\n"
        "# In[4]:\n\ntext = \"\"\"\nget_ipython().system('not a magic: inside a string')\n\"\"\"\n"
        "get_ipython().run_line_magic(name, 'computed: stays Python')\n"
    )
    extracted = extract(notebook_from_source(script, "export.py"))
    assert extracted.runs == ("Breadth-First-Fast",)
    assert "def f(x):" in extracted.source() and "2 * x" in extracted.source()
    assert "def g():" in extracted.source()      # a cell magic call with code after it is no whole cell: Python
    reasons = {d.reason for d in extracted.dropped}
    assert {"line magic %matplotlib", "shell command", "cell magic %%time (body kept)", "cell magic %%HTML"} <= reasons
    assert "not a magic: inside a string" in extracted.source()
    assert any(d.excerpt.startswith("get_ipython().run_line_magic(name") for d in extracted.dropped)


# Every way one level of a tree wraps another (X), and the statements and blocks around them: the nestings a text
# could use to be deeper than it is long (test below).
_NESTINGS = ["-X", "~X", "+X", "not X", "await X", "X.a", "X[a]", "X()", "f(X)", "f(*X)", "f(**X)", "f(a=X)", "f(X,)",
             "f(X for a in a)", "f(a)(X)", "[X]", "(X,)", "X,", "*X,", "(*X,)", "[*X]", "{*X}", "{X}", "{X:a}", "{a:X}",
             "{**X}", "(X)", "lambda:X", "lambda a=X:a", "lambda*,a=X:a", "X if a else a", "a if X else a",
             "a if a else X", "X+a", "a+X", "X@a", "a**X", "X<a", "a<X", "X and a", "a or X", "f'{X}'", "f'{a:{X}}'",
             "f'{X!r}'", "f'{X=}'", "[a for a in X]", "[X for a in a]", "[a for a in a if X]", "{X for a in a}",
             "{X:a for a in a}", "(X for a in a)", "(yield X)", "(yield from X)", "X[a:a]", "a[X:a]", "a[::X]", "a[X,]",
             "a[*X]", "(a:=X)"]
_STATEMENTS = ["X", "if X:a", "while X:a", "for a in X:a", "for X in a:a", "with X:a", "with a as X:a", "X=a", "a=X",
               "X,=a", "a+=X", "X+=a", "a:X=a", "a:a=X", "X:a", "del X", "assert a,X", "raise a from X",
               "def f(a=X):a", "def f(a:X):a", "def f()->X:a", "@X\ndef f():a", "class A(X):a", "class A(a=X):a",
               "try:a\nexcept X:a", "try:a\nexcept* X:a", "X;a", "match X:\n case a:a", "match a:\n case a if X:a",
               "async def f():\n async for a in X:a", "async def f():\n async with X:a", "def f():\n return X"]
_PATTERNS = ["a", "*a", "b.c", "1", "-1", "[X]", "(X,)", "a(X)", "a(b=X)", "X|b", "X as b", "{1:X}", "{**a}", "[*a]"]
_BLOCKS = ["if a:\nX", "def f():\nX", "class A:\nX", "for a in a:\nX", "while a:\nX", "try:\nX\nexcept:a", "with a:\nX",
           "try:a\nfinally:\nX", "if a:a\nelse:\nX", "async def f():\nX"]


def _nested(leaf: str, wrappers: list[str]) -> str:
    for wrapper in wrappers:
        leaf = wrapper.replace("X", leaf, 1)
    return leaf


@given(st.sampled_from(["a", "1", "''", "a.b", "...", "f''"]), st.lists(st.sampled_from(_NESTINGS), max_size=12),
       st.sampled_from(_STATEMENTS), st.lists(st.sampled_from(_PATTERNS), max_size=5), st.booleans(),
       st.lists(st.sampled_from(_BLOCKS), max_size=3))
@settings(max_examples=2000, deadline=None)
def test_no_text_is_deeper_than_its_length_and_three(leaf: str, nestings: list[str], statement: str,
                                                     patterns: list[str], in_a_case: bool, blocks: list[str]) -> None:
    """_may_be_deeper's bound: a text of n characters parses to at most n + 3 levels (`a`: Module, Expr, Name, Load),
    so a cell of up to MAX_NESTING - 3 characters is not walked. Checked at small limits, where one character more
    or less decides it, on nestings of every node a level can add."""
    from grader.extract.source import _deeper_than, _may_be_deeper

    text = statement.replace("X", _nested(leaf, nestings), 1)
    if in_a_case:
        text = f"match a:\n case {_nested('a', patterns)}:\n  {text}"
    for block in blocks:
        text = block.replace("X", "\n".join(" " + line for line in text.split("\n")), 1)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    limit = len(text) + 3
    assert not _may_be_deeper(text, limit)
    assert not _deeper_than(tree, limit), text
    assert _may_be_deeper(text, limit - 1)


def test_a_cell_too_short_to_nest_past_the_limit_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The depth walk was a tenth of extracting a distinct notebook, mostly of cells of a few hundred characters that
    cannot nest MAX_NESTING levels deep: only a longer cell is walked now, and a deep one is still left out."""
    from grader.extract import source
    from grader.intake.notebook import Notebook

    walked: list[int] = []
    real = source._deeper_than
    monkeypatch.setattr(source, "_deeper_than", lambda tree, limit: walked.append(limit) or real(tree, limit))
    monkeypatch.setattr(source, "_PARSED", {})      # parsed and measured here, whatever ran before in the process
    monkeypatch.setattr(source, "_MEASURED", {})
    short = "def f(x):\n" + "".join(f"    x = x + {i}  # step {i}\n" for i in range(12)) + "    return x\n"
    deep = "y = " + "-" * source.MAX_NESTING + "1\n"
    long = short + "".join(f"z{i} = f({i})\n" for i in range(30))
    assert 100 < len(short) <= source.MAX_NESTING - 3 < len(long)
    cells = tuple(Cell(i, "code", text, None) for i, text in enumerate([short, deep, long]))
    extracted = extract(Notebook("short.ipynb", cells, ()))
    assert len(walked) == 2     # the deep cell and the long one; the short cell's 300 characters are never walked
    assert [d.cell for d in extracted.syntax_errors] == [1]
    assert "nested too deeply" in extracted.syntax_errors[0].reason
    assert "def f(x):" in extracted.source()


def test_a_cell_seen_once_is_not_kept_and_one_seen_again_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker kept every cell text's parse, a student's own cells too, which no later notebook has: their trees
    (~2,000 objects a notebook) outlived the grading and filled the collector's young generation. A text is kept
    from its second sight on: a student's tree dies with its extraction (the judge's global-reads memo does not
    hold it either), and the template's cells, which every notebook has, are still parsed once per process."""
    import gc
    import weakref
    from grader.extract import source
    from grader.intake.notebook import Notebook
    from grader.syntax.analysis import global_data_reads

    monkeypatch.setattr(source, "_PARSED", {})
    monkeypatch.setattr(source, "_SEEN_ONCE", set())
    template = "GOAL = (1, 2, 3)\n"
    own = "def find(state):\n    return GOAL.index(state)  # written by this student alone\n"

    def definitions() -> tuple[weakref.ref, weakref.ref]:
        extracted = extract(Notebook("nb.ipynb", (Cell(0, "code", template, 1), Cell(1, "code", own, 2)), ()))
        find = extracted.definitions["find"].node
        assert isinstance(find, ast.FunctionDef)
        assert global_data_reads(find, extracted.definitions) == ("GOAL",)
        return weakref.ref(extracted.definitions["GOAL"].node), weakref.ref(find)

    was = gc.isenabled()
    gc.disable()     # reference counting alone frees what nothing holds
    try:
        goal, find = definitions()
        assert goal() is None and find() is None        # first sight: nothing kept
        goal, find = definitions()
        assert goal() is not None and find() is not None   # second sight: kept
        again, _ = definitions()
        assert again() is goal()                         # and not parsed again
    finally:
        if was:
            gc.enable()


def test_grading_extracts_what_grader_extract_does_but_the_list_of_drops() -> None:
    """Grading asks for no list of what was left out (extract's `drops`): each drop's reason walked its calls (a
    tenth of extracting a Taoistic notebook) and nothing but `grader extract` reads them. Every bundled notebook
    under every bundled rubric's policy: the same statements, definitions, syntax errors, warnings and runs."""
    from grader.rubric.schema import load_rubric
    from grader.intake.notebook import NotebookError
    repo = Path(__file__).parents[1]
    policies = [Policy(), *(load_rubric(path).policy for path in sorted((repo / "rubrics").glob("*.yaml")))]
    seen = 0
    for path in sorted([*(repo / "assignments").rglob("*.ipynb"), *(repo / "tests" / "fixtures").rglob("*.ipynb")]):
        try:
            notebook = read_notebook(path)
        except NotebookError:
            continue
        for policy in policies:
            whole, graded = extract(notebook, policy), extract(notebook, policy, drops=False)
            assert graded.dropped == ()
            assert (graded.statements, dict(graded.definitions), graded.syntax_errors, graded.warnings,
                    graded.runs) == (whole.statements, dict(whole.definitions), whole.syntax_errors, whole.warnings,
                                     whole.runs), path
            seen += bool(whole.dropped)
    assert seen > 100


@given(st.text(alphabet="?!%= \t\r\nax(", max_size=40))
@settings(max_examples=400, deadline=None)
def test_the_quick_test_for_ipython_lines_says_what_the_pattern_says(text: str) -> None:
    """_maybe_ipython skips the pattern for a text without `?`, `!` or `%`: it must still agree on every text."""
    from grader.extract import source
    assert source._maybe_ipython(text) == (source._MAYBE_IPYTHON.search(text) is not None)
