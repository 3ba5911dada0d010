"""AST analysis: telling template stubs from solved functions, and finding the notebook data a function reads."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.syntax.analysis import definition_reads, global_data_reads, is_stub
from grader.extract.source import extract
from grader.intake.notebook import notebook_from_source, read_notebook

SEEDS = Path(__file__).parent / "fixtures" / "seeds"


def function(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda:
    node = ast.parse(source).body[0]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Lambda):
        return node.value
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return node


STUBS = {
    "your code here string": 'def f(S):\n    "your code here"',
    "pass": "def f():\n    pass",
    "ellipsis": "def f():\n    ...",
    "bare return": "def f():\n    return",
    "return None with comment": "def f(tile, S):\n    return None  # type: ignore",
    "raise NotImplementedError": "def f():\n    raise NotImplementedError",
    "raise NotImplementedError()": "def f():\n    raise NotImplementedError('todo')",
    "docstring comment and pass": (
        'def f(node):\n    """The Manhattan distance heuristic."""\n    pass   # delete this\n    # <YOUR CODE HERE>'
    ),
    "mix of everything": "def f(x):\n    'doc'\n    'your code here'\n    ...\n    pass\n    return None",
    "async": "async def f():\n    pass",
    "lambda None": "lambda S: None",
    "lambda ellipsis": "lambda: ...",
    "lambda string": "lambda S: 'your code here'",
}

SOLVED = {
    "your code here plus real code": (
        "def moveUp(S, r, c):\n"
        "    SasList = listOfLists(S)\n"
        "    'Move the tile below the blank up.'\n"
        '    "your code here"\n'
        "    SasList[r][c] = S[r+1][c]\n"
        "    return tupleOfTuples(SasList)"
    ),
    "returns a constant": "def f():\n    return 0",
    "returns a name": "def f(x):\n    return x",
    "raises another error": "def f():\n    raise ValueError('no')",
    "pass then code": "def f():\n    pass\n    print('hi')",
    "string mentioning NotImplementedError": "def f():\n    'raise NotImplementedError'\n    return 1",
    "loop with pass inside": "def f(xs):\n    for x in xs:\n        pass",
    "lambda expression": "lambda S: [list(row) for row in S]",
    "lambda constant": "lambda: 0",
}


@pytest.mark.parametrize("source", STUBS.values(), ids=STUBS.keys())
def test_function_that_does_nothing_is_a_stub(source: str) -> None:
    assert is_stub(function(source)) is True


@pytest.mark.parametrize("source", SOLVED.values(), ids=SOLVED.keys())
def test_function_with_real_code_is_not_a_stub(source: str) -> None:
    assert is_stub(function(source)) is False


READS_NOTEBOOK = '''\
import math
S = ((1, 2), (3, 4))
LIMIT = 3
Colors = ['white']
Alias = tuple
input = 'shadows the builtin'
def helper():
    return 1
class Shape:
    pass

def uses_params(S, n=LIMIT):
    return len(S) + n

def uses_locals():
    S = 1
    return S

def uses_global():
    n = len(S)
    return n

def comprehension_target_shadows():
    return [S for S in range(3)]

def comprehension_reads():
    return {x: LIMIT for row in S for x in row}

def nested_parameter_shadows():
    def inner(LIMIT):
        return LIMIT
    return inner(Colors)

def nested_reads():
    def inner():
        return S
    return inner()

def closure_variable():
    S = 0
    def inner():
        return S
    return inner()

def loop_with_and_import_targets():
    for S in range(2):
        pass
    with open('f') as LIMIT:
        pass
    import Colors
    return S, LIMIT, Colors

def except_target():
    try:
        pass
    except Exception as S:
        return S

def builtins_functions_classes_and_modules():
    return len(range(3)), helper(), Shape(), math.pi

def declared_global():
    global LIMIT
    LIMIT = LIMIT + 1

def augmented_global():
    global Colors
    Colors += ['red']

def annotations_are_not_reads(x: Alias) -> Alias:
    y: Alias = x
    return y

def lambda_reads():
    f = lambda k=S: k + LIMIT
    return f()

def lambda_parameter_shadows():
    return (lambda S: S)(1)

def walrus_in_comprehension_binds_locally():
    [S := x for x in range(3)]
    return S

def reads_shadowed_builtin():
    return input
'''

EXPECTED_READS = {
    "uses_params": (),
    "uses_locals": (),
    "uses_global": ("S",),
    "comprehension_target_shadows": (),
    "comprehension_reads": ("LIMIT", "S"),
    "nested_parameter_shadows": ("Colors",),
    "nested_reads": ("S",),
    "closure_variable": (),
    "loop_with_and_import_targets": (),
    "except_target": (),
    "builtins_functions_classes_and_modules": (),
    "declared_global": ("LIMIT",),
    "augmented_global": ("Colors",),
    "annotations_are_not_reads": (),
    "lambda_reads": ("LIMIT", "S"),
    "lambda_parameter_shadows": (),
    "walrus_in_comprehension_binds_locally": (),
    "reads_shadowed_builtin": ("input",),
}


@pytest.mark.parametrize(("name", "expected"), EXPECTED_READS.items(), ids=EXPECTED_READS.keys())
def test_global_data_reads_finds_only_notebook_data_read_as_globals(name: str, expected: tuple[str, ...]) -> None:
    definitions = extract(notebook_from_source(READS_NOTEBOOK)).definitions
    func = definitions[name].node
    assert isinstance(func, ast.FunctionDef)
    assert global_data_reads(func, definitions) == expected


def test_seed000_manhattan_reads_the_global_S_by_mistake() -> None:
    definitions = extract(read_notebook(SEEDS / "000_5a034f3040ca5b29.ipynb")).definitions
    manhattan = definitions["manhattan"].node
    assert isinstance(manhattan, ast.FunctionDef)
    assert global_data_reads(manhattan, definitions) == ("S",)
    main = definitions["main"].node
    assert isinstance(main, ast.FunctionDef)
    assert global_data_reads(main, definitions) == ("Goal", "Start")


def test_seed001_template_stub_and_solved_function_are_told_apart_by_parsing() -> None:
    definitions = extract(read_notebook(SEEDS / "001_41f7c61cc2742148.ipynb")).definitions
    matches, find_tiles = definitions["matches"].node, definitions["find_tiles"].node
    assert isinstance(matches, ast.FunctionDef) and isinstance(find_tiles, ast.FunctionDef)
    assert (is_stub(matches), is_stub(find_tiles)) == (True, False)


DEFINITION_TIME = '''
@register(KIND)
class Puzzle(Base, metaclass=Meta):
    size: Dim = 3
    weight = WEIGHT
    table = [ROW[i] for i in range(size)]
    scale = lambda self, k=FACTOR: k * LATER_IN_LAMBDA

    class Inner(InnerBase):
        limit = LIMIT

    @staticmethod
    def h(state, goal=GOAL) -> Cost:
        return misplaced(state, goal) + weight

def solve(state, *, limit=LIMIT2, h=heuristic) -> Path:
    return search(state)
'''


def test_definition_reads_are_what_a_def_or_class_statement_evaluates_not_its_functions_bodies() -> None:
    """What a class or def reads when its cell runs (it fails with NameError when one is unbound), not when it is
    called: annotations are not evaluated (the grader compiles with `from __future__ import annotations`)."""
    puzzle, solve = ast.parse(DEFINITION_TIME).body
    assert definition_reads(puzzle) == {"register", "KIND", "Base", "Meta", "WEIGHT", "ROW", "range", "FACTOR",
                                        "InnerBase", "LIMIT", "staticmethod", "GOAL"}
    assert definition_reads(solve) == {"LIMIT2", "heuristic"}
    assert definition_reads(ast.parse("x = later()").body[0]) == frozenset()
