"""Mutants of a reference function: small syntactic faults a student might make, as whole-module sources.

Each mutant changes one site of the graded function (or of the graded class's method) by one operator:
comparison and arithmetic swaps, off-by-one constants, swapped call arguments, removed statements, negated
conditions, swapped tuple elements, and returning a sub-expression. The rest of the module is kept byte for
byte, so a mutant is graded exactly like a submission that differs from the reference in one place.
"""

from __future__ import annotations

import ast
import copy
import difflib
import random
import textwrap
from dataclasses import dataclass
from typing import Callable, Iterator

COMPARISONS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt), ast.GtE: (ast.Gt, ast.LtE),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
ARITHMETIC: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Add, ast.FloorDiv), ast.FloorDiv: (ast.Mult, ast.Mod),
    ast.Div: (ast.Mult,), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
}
BOOLEAN: dict[type, tuple[type, ...]] = {ast.And: (ast.Or,), ast.Or: (ast.And,)}
DEFAULT_MUTANTS = 6          # per exercise: enough to find a weak rubric, cheap enough for every validate
DEFAULT_SECONDS = 60.0       # the whole mutation run, on top of validate's own grading
OPERATORS = ("comparison", "arithmetic", "boolean", "constant", "arguments", "statement", "condition", "tuple",
             "return")


@dataclass(frozen=True)
class Mutant:
    """One fault in one function: what changed, where, and the whole module's source with it."""

    id: str                # e.g. "move_dir:comparison@12#1"
    function: str          # the graded name it mutates (a function, or Class.method)
    operator: str
    line: int              # line of the change in the reference file
    description: str
    source: str            # the whole module, mutated
    diff: str              # unified diff of the function alone
    top: str = ""          # the top-level definition it changes (the function, or the method's class)
    replacement: str = ""  # that top-level definition, mutated, as source

    def renamed(self, name: str) -> str:
        """The mutated top-level definition under another name (its own recursive calls follow it), so many
        mutants can live in one module beside the reference."""
        tree = ast.parse(self.replacement)
        definition = tree.body[0]
        assert isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        definition.name = name
        for node in ast.walk(definition):
            if isinstance(node, ast.Name) and node.id == self.top:
                node.id = name
        return ast.unparse(tree) + "\n"


Edit = Callable[[ast.AST], "ast.AST | None"]


def _sites(function: ast.AST) -> Iterator[tuple[ast.AST, str, str, Edit]]:
    """(node, operator, description, edit) for every mutation of a function's body. An edit changes the node in
    place, or returns a replacement node; it runs on a copy whose node is found again by its walk position."""
    for node in ast.walk(function):
        if node is function:
            yield from _removals(node)
            continue
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                for other in COMPARISONS.get(type(op), ()):
                    yield node, "comparison", f"{_op(op)} -> {_op(other())}", _set_op(index, other)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            for other in ARITHMETIC.get(type(node.op), ()):
                yield node, "arithmetic", f"{_op(node.op)} -> {_op(other())}", _replace_attr("op", other)
        elif isinstance(node, ast.BoolOp):
            for other in BOOLEAN.get(type(node.op), ()):
                yield node, "boolean", f"{_op(node.op)} -> {_op(other())}", _replace_attr("op", other)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            for delta in (1, -1):
                yield node, "constant", f"{node.value} -> {node.value + delta}", _shift(delta)
        elif isinstance(node, ast.Call) and len(node.args) >= 2 \
                and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            yield node, "arguments", f"swap the first two arguments of {_short(node.func)}", _swap("args")
        elif isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) and len(node.elts) >= 2 \
                and not any(isinstance(e, ast.Starred) for e in node.elts[:2]):
            yield node, "tuple", "swap the first two tuple elements", _swap("elts")
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            yield node.test, "condition", f"not ({_short(node.test)})", _negate
        elif isinstance(node, ast.comprehension):
            for test in node.ifs:
                yield test, "condition", f"not ({_short(test)})", _negate
        if isinstance(node, ast.Return) and node.value is not None:
            for part in _parts(node.value):
                yield node, "return", f"return {_short(part)}", _return(part)
        yield from _removals(node)


def _removals(node: ast.AST) -> Iterator[tuple[ast.AST, str, str, Edit]]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            if _is_docstring(statement) or isinstance(statement, ast.Pass):
                continue
            yield node, "statement", f"remove line {statement.lineno}: {_short(statement)}", _remove(field, index)


def _op(op: ast.AST) -> str:
    return {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
            ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
            ast.FloorDiv: "//", ast.Div: "/", ast.Mod: "%", ast.Pow: "**", ast.And: "and",
            ast.Or: "or"}.get(type(op), type(op).__name__)


def _short(node: ast.AST, width: int = 50) -> str:
    text = ast.unparse(node).splitlines()[0] if not isinstance(node, ast.expr) else ast.unparse(node)
    return text if len(text) <= width else text[:width - 3] + "..."


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def _parts(value: ast.expr) -> list[ast.expr]:
    """Sub-expressions a faulty `return` might give instead of the whole."""
    if isinstance(value, ast.BinOp):
        return [value.left, value.right]
    if isinstance(value, ast.BoolOp):
        return list(value.values)
    if isinstance(value, ast.IfExp):
        return [value.body, value.orelse]
    if isinstance(value, ast.Subscript):
        return [value.value]
    if isinstance(value, ast.Call) and value.args and not isinstance(value.args[0], ast.Starred):
        return [value.args[0]]
    if isinstance(value, ast.UnaryOp):
        return [value.operand]
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return [value.generators[0].iter]
    return []


def _set_op(index: int, other: type) -> Edit:
    def edit(node: ast.AST) -> None:
        node.ops[index] = other()   # type: ignore[attr-defined]
    return edit


def _replace_attr(field: str, other: type) -> Edit:
    def edit(node: ast.AST) -> None:
        setattr(node, field, other())
    return edit


def _shift(delta: int) -> Edit:
    def edit(node: ast.AST) -> None:
        node.value += delta   # type: ignore[attr-defined]
    return edit


def _swap(field: str) -> Edit:
    def edit(node: ast.AST) -> None:
        items = getattr(node, field)
        items[0], items[1] = items[1], items[0]
    return edit


def _negate(node: ast.AST) -> ast.AST:
    return ast.UnaryOp(op=ast.Not(), operand=node)


def _return(part: ast.expr) -> Edit:
    position = ast.dump(part, include_attributes=True)

    def edit(node: ast.AST) -> None:
        for candidate in ast.walk(node.value):   # type: ignore[attr-defined]
            if ast.dump(candidate, include_attributes=True) == position:
                node.value = candidate   # type: ignore[attr-defined]
                return
    return edit


def _remove(field: str, index: int) -> Edit:
    def edit(node: ast.AST) -> None:
        body = getattr(node, field)
        del body[index]
        if not body and field == "body":
            body.append(ast.Pass())
    return edit


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, replacement: ast.AST):
        self.target, self.replacement = target, replacement

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.replacement
        return super().generic_visit(node)


def graded_definitions(tree: ast.Module, function: str, exercise_id: str) -> list[tuple[str, ast.AST, int]]:
    """(name, definition, indent) of what an exercise grades: a top-level function, a method `Class.m`, or for a
    graded class its method named like the exercise (else every method it defines)."""
    owner, _, method = function.partition(".")
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == owner and not method:
            return [(owner, node, 0)]
        if isinstance(node, ast.ClassDef) and node.name == owner:
            methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            wanted = [m for m in methods if m.name == (method or exercise_id)] or ([] if method else methods)
            indent = methods[0].col_offset if methods else 4
            return [(f"{owner}.{m.name}", m, indent) for m in wanted]
    return []


def mutants(source: str, function: str, exercise_id: str = "") -> list[Mutant]:
    """Every mutant of what an exercise grades, deduplicated by the code it produces, in source order."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found: list[Mutant] = []
    seen: set[str] = set()
    owners = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for name, definition, indent in graded_definitions(tree, function, exercise_id):
        original = ast.unparse(definition)
        seen.add(original)
        first = min([definition.lineno, *(d.lineno for d in definition.decorator_list)])
        numbered: dict[tuple[str, int], int] = {}
        for node, operator, description, edit in _sites(definition):
            changed = _apply(definition, node, edit)
            if changed is None:
                continue
            code = ast.unparse(changed)
            if code in seen:
                continue
            seen.add(code)
            line = getattr(node, "lineno", definition.lineno)
            key = (operator, line)
            numbered[key] = numbered.get(key, 0) + 1
            body = textwrap.indent(code, " " * indent) + "\n"
            mutated = "".join(lines[:first - 1]) + body + "".join(lines[definition.end_lineno:])
            diff = "".join(difflib.unified_diff([ln + "\n" for ln in original.splitlines()],
                                                [ln + "\n" for ln in code.splitlines()],
                                                f"reference {name}", f"mutant {name}", n=1))
            top = name.split(".")[0]
            replacement = code
            if "." in name:
                owner = copy.deepcopy(owners[top])
                owner.body = [changed if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                              and item.name == definition.name else item for item in owner.body]
                replacement = ast.unparse(owner)
            found.append(Mutant(f"{name}:{operator}@{line}#{numbered[key]}", name, operator, line, description,
                                mutated, diff, top, replacement))
    return found


def _apply(definition: ast.AST, node: ast.AST, edit: Edit) -> ast.AST | None:
    """A copy of the definition with one edit made at the node's walk position; None if it does not compile."""
    index = next(i for i, n in enumerate(ast.walk(definition)) if n is node)
    copied = copy.deepcopy(definition)
    target = next(n for i, n in enumerate(ast.walk(copied)) if i == index)
    replacement = edit(target)
    if replacement is not None:
        copied = _Replace(target, replacement).visit(copied)
    ast.fix_missing_locations(copied)
    try:   # from text: compiling the tree itself trips CPython 3.11's AST validator on deep stacks (SystemError)
        compile(ast.unparse(copied), "<mutant>", "exec")
    except (SyntaxError, ValueError, TypeError, RecursionError):
        return None
    return copied


def sample(found: list[Mutant], count: int, seed: str) -> list[Mutant]:
    """Up to `count` mutants spread over the operators (round robin, each operator's shuffled by a fixed seed),
    so a small budget still tries every kind of fault."""
    rng = random.Random(seed)
    groups: dict[str, list[Mutant]] = {}
    for mutant in found:
        groups.setdefault(mutant.operator, []).append(mutant)
    for group in groups.values():
        rng.shuffle(group)
    chosen: list[Mutant] = []
    order = [operator for operator in OPERATORS if operator in groups]
    while len(chosen) < count and any(groups[o] for o in order):
        for operator in order:
            if groups[operator] and len(chosen) < count:
                chosen.append(groups[operator].pop())
    return sorted(chosen, key=lambda m: (m.line, m.id))


def swapped(source: str, graded: str, replacement: str) -> str:
    """The module as a submission whose graded function (or class) is another of its definitions, e.g. a known
    mistake: the original is renamed `_reference_<name>` (the replacement's own calls to it still reach it), the
    replacement takes the graded name. For a method `Class.m` the replacement function becomes that method."""
    tree = ast.parse(source)
    owner, _, method = graded.partition(".")
    hidden = f"_reference_{method or owner}"
    definitions = {node.name: node for node in tree.body
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if owner not in definitions or replacement not in definitions:
        raise KeyError(f"{graded} or {replacement} is not defined at the top level of the module")
    substitute = definitions[replacement]
    if method:
        cls = definitions[owner]
        assert isinstance(cls, ast.ClassDef)
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
                item.name = hidden
        moved = copy.deepcopy(substitute)
        moved.name = method
        cls.body.append(moved)
        tree.body.remove(substitute)
    else:
        definitions[owner].name = hidden
        for node in ast.walk(substitute):
            if isinstance(node, ast.Name) and node.id == owner:
                node.id = hidden
        substitute.name = owner
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
