"""AST analysis: telling template stubs from solved functions, and finding the notebook data a function reads."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.syntax.analysis import definition_reads, global_data_reads, is_stub, statement_reads
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


# What a function or class statement reads, scope by scope: a walrus in a default or an annotation binds in the
# enclosing scope, `x += 1` binds x, a class body's names are not its methods', a comprehension's first iterable is
# read outside it, match captures and `except ... as` bind, nonlocal is local. The walk that answers it looks at
# each node once for the scope's bindings and its loads together (analysis._ScopeWalk): these are the answers of
# the two walks it replaced.
SCOPES = [
    ('def f(a, b=(y := g)):\n'
     '    x: (z := int) = y\n'
     '    return x + z + w',
     ('g', 'w', 'y')),
    ('def f():\n'
     '    global G\n'
     '    G += 1\n'
     '    del H\n'
     '    return [G for G in G if (k := G)] + [k]',
     ('G',)),
    ('def f():\n'
     '    class C(Base, metaclass=M, k=(q := 1)):\n'
     '        a = b\n'
     '        def m(self, d=a): return a + d + q\n'
     '        z = [a for _ in range(3)]\n'
     '    return C',
     ('Base', 'M', 'a', 'b', 'q', 'range')),
    ('def f(x):\n'
     '    match x:\n'
     "        case {'k': v, **rest}: return v, rest, free\n"
     '        case [a, *others] if a > lim: return others\n'
     '        case Point(x=px) as p: return px, p\n'
     '        case _: return None',
     ('Point', 'free', 'lim')),
    ('def f():\n'
     '    try:\n'
     '        pass\n'
     '    except E as e:\n'
     '        return e\n'
     '    return e2',
     ('E', 'e2')),
    ('def f():\n'
     '    def g():\n'
     '        nonlocal n\n'
     '        n = 1\n'
     '        return n, m\n'
     '    n = 0\n'
     '    return g',
     ('m',)),
    ('def f():\n'
     '    return lambda a, b=c: (lambda d=a: d + e)(a) + b',
     ('c', 'e')),
    ('def f():\n'
     '    import os.path, sys as s\n'
     '    from x import *\n'
     '    from y import z as w\n'
     '    return os, s, w, z',
     ('z',)),
    ('def f():\n'
     '    x += 1\n'
     '    return x',
     ()),
    ('def f():\n'
     '    for i, (j, k) in enumerate(t):\n'
     '        yield i + j + k + u\n'
     '    while (m := n()):\n'
     '        print(m)',
     ('enumerate', 'n', 'print', 't', 'u')),
    ('def f():\n'
     '    with open(p) as fh, ctx() as (a, b):\n'
     '        return fh, a, b, q',
     ('ctx', 'open', 'p', 'q')),
    ('def f():\n'
     '    x: int\n'
     '    y: List[int] = []\n'
     '    return x, y, List',
     ('List',)),
    ('async def f():\n'
     '    async with a as b:\n'
     '        async for c in b:\n'
     '            await d(c)\n'
     '    return [e async for e in g]',
     ('a', 'd', 'g')),
    ('def f():\n'
     '    @dec(arg)\n'
     '    def inner(p=q):\n'
     '        return p\n'
     '    @cls_dec\n'
     '    class K: pass\n'
     '    return inner, K',
     ('arg', 'cls_dec', 'dec', 'q')),
    ('def f():\n'
     '    return {k: v for k, v in items if v} | {s for s in S} | (g for g in G if (h := g))',
     ('G', 'S', 'items')),
    ('def f():\n'
     '    d = {}; d[key] += 1; obj.attr = val\n'
     '    return d',
     ('key', 'obj', 'val')),
    ('def f():\n'
     '    print(*args, **kwargs); x = a if b else c; y = not z; w = -v\n'
     '    assert cond, msg\n'
     '    raise Err from cause',
     ('Err', 'a', 'args', 'b', 'c', 'cause', 'cond', 'kwargs', 'msg', 'print', 'v', 'z')),
    ('class A:\n'
     '    x = 1\n'
     '    y = [x for _ in range(2)]\n'
     '    def m(self): return x\n'
     '    z: T = (q := 3)',
     ('range', 'x')),
    ('def f():\n'
     '    global g\n'
     '    def h():\n'
     '        return g\n'
     '    g = 1\n'
     '    return h',
     ('g',)),
    ('def outer():\n'
     '    v = 1\n'
     '    class C:\n'
     '        v = 2\n'
     '        def m(self): return v\n'
     '    return C',
     ()),
]


@pytest.mark.parametrize(("source", "expected"), SCOPES)
def test_statement_reads_resolve_each_scope_as_python_does(source: str, expected: tuple[str, ...]) -> None:
    assert tuple(sorted(statement_reads(ast.parse(source).body[0]))) == expected
