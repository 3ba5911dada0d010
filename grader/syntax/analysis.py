"""AST questions about a submission's functions: is it still a template stub, and which notebook data does it read.

Both are answered from the parse tree, never by searching the text: a solved
function may still carry the template's "your code here" string, and a name
that looks global may be a parameter, a local or a comprehension variable.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol


class Binding(Protocol):
    """What the analysis needs of a notebook's top-level name (an extract.Definition is one)."""

    @property
    def kind(self) -> str: ...

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    """True when the function's body does nothing, so a failing exercise can say "not implemented yet".

    Doing nothing means only constants (docstrings, "your code here", ...), `pass`,
    `return` / `return None` and `raise NotImplementedError[(...)]`; comments are not
    in the tree at all. A lambda is a stub when its body is None, ... or a string.
    """
    if isinstance(node, ast.Lambda):
        body = node.body
        return isinstance(body, ast.Constant) and (
            body.value is None or body.value is Ellipsis or isinstance(body.value, str)
        )
    return all(_does_nothing(statement) for statement in node.body)


def _does_nothing(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant)
    if isinstance(statement, ast.Return):
        value = statement.value
        return value is None or (isinstance(value, ast.Constant) and value.value is None)
    if isinstance(statement, ast.Raise) and statement.cause is None:
        exc = statement.exc
        if isinstance(exc, ast.Call):
            exc = exc.func
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def global_data_reads(func: FunctionNode, definitions: Mapping[str, Binding]) -> tuple[str, ...]:
    """Notebook data (Definition kind "data") that `func` reads as module globals, sorted.

    A function that silently reads a global such as `S` passes in the notebook and
    fails under the grader, which sets up its own globals; feedback names the culprit.
    Parameters, locals (assignments, for/with/except targets, imports, nested defs)
    and comprehension variables are not globals; names declared `global` are.
    Annotations are skipped because the grader does not evaluate them.
    """
    data = {name for name, definition in definitions.items() if definition.kind == "data"}
    return tuple(sorted(_globals_of(func) & data))


# A function's global reads by its node: extraction shares a cell's tree among the notebooks that hold the same
# text, so a template's function is walked once per process. Each node is named by a weak reference, checked on
# every hit (an id is another node's once the first is gone): held here, a student's own function's tree (the
# cell's, whole) outlived its grading until the next clear, and the collector walked it meanwhile.
_GLOBALS: dict[int, tuple[weakref.ref[ast.AST], frozenset[str]]] = {}
_GLOBALS_LIMIT = 1_000     # functions


def _globals_of(func: FunctionNode) -> frozenset[str]:
    known = _GLOBALS.get(id(func))
    if known is not None and known[0]() is func:
        return known[1]
    reads: set[str] = set()
    _function_reads(func, (), reads)
    if len(_GLOBALS) >= _GLOBALS_LIMIT:
        _GLOBALS.clear()
    found = frozenset(reads)
    _GLOBALS[id(func)] = (weakref.ref(func), found)
    return found


@dataclass
class _Scope:
    local: set[str]
    declared_global: set[str]
    parents: tuple[frozenset[str], ...]  # enclosing function scopes, innermost last
    is_class: bool = False
    children: tuple[frozenset[str], ...] = field(init=False)

    def __post_init__(self) -> None:
        # Class bodies are not visible from the functions and comprehensions nested in them.
        own = () if self.is_class else (frozenset(self.local),)
        self.children = self.parents + own

    def resolve(self, name: str, reads: set[str]) -> None:
        if name in self.declared_global:
            reads.add(name)
        elif name not in self.local:
            for scope in self.parents:
                if name in scope:
                    return
            reads.add(name)


def _function_reads(
    node: FunctionNode | ast.Lambda, parents: tuple[frozenset[str], ...], reads: set[str]
) -> None:
    body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    walk = _ScopeWalk(body)
    local = (walk.local | set(_parameters(node.args))) - walk.declared
    walk.finish(_Scope(local, walk.declared, parents), reads)


def _class_reads(node: ast.ClassDef, parents: tuple[frozenset[str], ...], reads: set[str]) -> None:
    walk = _ScopeWalk(node.body)
    walk.finish(_Scope(walk.local - walk.declared, walk.declared, parents, is_class=True), reads)


class _ScopeWalk:
    """One walk of a scope's body for both of its questions: what it binds (as _bindings) and which names it
    loads (as _collect), the loads resolved once the bindings are all known (finish). Each node is looked at
    once, not by _bindings and then again by _collect: a notebook's functions are walked once each."""

    __slots__ = ("local", "declared", "loads", "later", "nested")

    def __init__(self, body: Iterable[ast.AST]) -> None:
        self.local: set[str] = set()
        self.declared: set[str] = set()
        self.loads: list[str] = []              # names loaded in this scope, resolved by finish
        self.later: list[ast.AST] = []          # parts only _collect enters (decorators, defaults, bases, ...)
        self.nested: list[ast.AST] = []         # scopes of their own, walked by finish with this one's names
        local, loads, stack = self.local, self.loads, list(body)
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                if isinstance(node.ctx, ast.Load):   # type: ignore[attr-defined]
                    loads.append(node.id)   # type: ignore[attr-defined]
                else:
                    local.add(node.id)   # type: ignore[attr-defined]
                continue
            if kind not in _WALK_APART:
                for child in child_nodes(node):
                    inner = type(child)
                    if inner is ast.Name:
                        if isinstance(child.ctx, ast.Load):   # type: ignore[attr-defined]
                            loads.append(child.id)   # type: ignore[attr-defined]
                        else:
                            local.add(child.id)   # type: ignore[attr-defined]
                    elif inner not in _LEAVES:
                        stack.append(child)
                continue
            self._apart(node, stack)

    def _apart(self, node: ast.AST, stack: list[ast.AST]) -> None:
        """A node _bindings or _collect does not simply enter (_WALK_APART)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.local.add(node.name)
            self.later.extend([*node.decorator_list, *_defaults(node.args)])
            self.nested.append(node)
        elif isinstance(node, ast.ClassDef):
            self.local.add(node.name)
            self.later.extend([*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
            self.nested.append(node)
        elif isinstance(node, ast.Lambda):
            self.later.extend(_defaults(node.args))
            self.nested.append(node)
        elif isinstance(node, _COMPREHENSIONS):
            # Only an assignment expression inside a comprehension binds in the enclosing scope.
            self.local |= {n.target.id for n in walk_outside_lambdas(node) if isinstance(n, ast.NamedExpr)}
            self.later.append(node.generators[0].iter)   # evaluated outside, the rest inside (finish)
            self.nested.append(node)
        elif isinstance(node, ast.AnnAssign):
            stack.append(node.target)   # the annotation binds what a walrus in it binds, and is read by nobody
            if node.value is not None:
                stack.append(node.value)
            local, declared = _bindings([node.annotation])
            self.local |= local
            self.declared |= declared
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                self.loads.append(node.target.id)   # `x += 1` reads x before it binds it
            stack.extend(child_nodes(node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    self.local.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Global):
            self.declared.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            self.local.update(node.names)
        else:
            if isinstance(node, ast.ExceptHandler) and node.name:
                self.local.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                self.local.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self.local.add(node.rest)
            stack.extend(child_nodes(node))

    def finish(self, scope: _Scope, reads: set[str]) -> None:
        """Add what the scope reads (its loads, what only _collect enters, its nested scopes) to `reads`."""
        for name in self.loads:
            scope.resolve(name, reads)
        for part in self.later:
            _collect(part, scope, reads)
        for node in self.nested:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                _function_reads(node, scope.children, reads)
            elif isinstance(node, ast.ClassDef):
                _class_reads(node, scope.children, reads)
            else:
                _comprehension_inner(node, scope, reads)   # type: ignore[arg-type]


# Per node type, the fields that can hold child nodes: every field but `ctx`, whose Load/Store/Del is a leaf that
# none of these questions looks at (a Name's own ctx is read on the Name).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """ast.iter_child_nodes(node) as a list, in the same order, less the expression contexts: read from the
    fields in place. A notebook's own functions are walked once each, and iter_child_nodes' generator per node
    (over iter_fields' generator) was most of the walk."""
    kind = type(node)
    names = _CHILD_FIELDS.get(kind)
    if names is None:
        names = _CHILD_FIELDS[kind] = tuple(name for name in kind._fields if name != "ctx")
    children: list[ast.AST] = []
    for name in names:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            children.append(value)
        elif isinstance(value, list):
            children.extend([item for item in value if isinstance(item, ast.AST)])
    return children


def _collect(node: ast.AST, scope: _Scope, reads: set[str]) -> None:
    """Add the global names read by `node` (evaluated in `scope`) to `reads`."""
    kind = type(node)   # a parsed tree's nodes are of the ast classes themselves
    if kind is ast.Name:
        if isinstance(node.ctx, ast.Load):   # type: ignore[attr-defined]
            scope.resolve(node.id, reads)   # type: ignore[attr-defined]
        return
    if kind not in _READ_APART:   # most nodes: what they read is what their children read
        _collect_children(node, scope, reads)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for expression in [*node.decorator_list, *_defaults(node.args)]:
            _collect(expression, scope, reads)
        _function_reads(node, scope.children, reads)
        return
    if isinstance(node, ast.Lambda):
        for expression in _defaults(node.args):
            _collect(expression, scope, reads)
        _function_reads(node, scope.children, reads)
        return
    if isinstance(node, ast.ClassDef):
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            _collect(expression, scope, reads)
        _class_reads(node, scope.children, reads)
        return
    if isinstance(node, _COMPREHENSIONS):
        _comprehension_reads(node, scope, reads)
        return
    if isinstance(node, ast.AnnAssign):
        for part in (node.target, node.value):
            if part is not None:
                _collect(part, scope, reads)
        return
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        scope.resolve(node.target.id, reads)  # `x += 1` reads x before it binds it
    _collect_children(node, scope, reads)


def _collect_children(node: ast.AST, scope: _Scope, reads: set[str]) -> None:
    """_collect of each child of `node`, a Name read here and a leaf (a constant, an operator) not entered: two
    nodes in five of a function's body are names, whose own _collect call cost more than the name's lookup."""
    for child in child_nodes(node):
        kind = type(child)
        if kind is ast.Name:
            if isinstance(child.ctx, ast.Load):   # type: ignore[attr-defined]
                scope.resolve(child.id, reads)   # type: ignore[attr-defined]
        elif kind not in _LEAVES:
            _collect(child, scope, reads)


# Nodes with no child that can read or bind a name: a constant, an operator, a bare statement.
_LEAVES = frozenset({ast.Constant, ast.Pass, ast.Break, ast.Continue,
                     *(kind for base in (ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
                       for kind in base.__subclasses__())})


# The classes _collect does not simply enter (but ast.Name, asked first): one set lookup lets every other node
# through, instead of seven isinstance() calls on each node of every function a notebook defines.
_READ_APART = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, *_COMPREHENSIONS,
                         ast.AnnAssign, ast.AugAssign})


def _comprehension_reads(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, scope: _Scope, reads: set[str]
) -> None:
    # The first iterable is evaluated outside; everything else sees the comprehension's own variables.
    _collect(node.generators[0].iter, scope, reads)
    _comprehension_inner(node, scope, reads)


def _comprehension_inner(
    node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, scope: _Scope, reads: set[str]
) -> None:
    """What a comprehension reads but its first iterable: in a scope of its own inside `scope`."""
    generators = node.generators
    targets: set[str] = set()
    for generator in generators:
        targets |= _target_names(generator.target)
    inner = _Scope(targets, set(), scope.children)
    parts: list[ast.AST] = []
    for n, generator in enumerate(generators):
        if n:
            parts.append(generator.iter)
        parts.extend(generator.ifs)
    if isinstance(node, ast.DictComp):
        parts += [node.key, node.value]
    else:
        parts.append(node.elt)
    for part in parts:
        _collect(part, inner, reads)


def _bindings(body: Iterable[ast.AST]) -> tuple[set[str], set[str]]:
    """(names bound in this scope, names declared global), without entering nested scopes."""
    local: set[str] = set()
    declared: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        kind = type(node)   # as in _collect
        if kind is ast.Name:
            if isinstance(node.ctx, (ast.Store, ast.Del)):   # type: ignore[attr-defined]
                local.add(node.id)   # type: ignore[attr-defined]
            continue
        if kind not in _BINDING_APART:   # most nodes bind nothing themselves: their children are looked at
            for child in child_nodes(node):   # a name here, a leaf not at all (see _collect_children)
                inner = type(child)
                if inner is ast.Name:
                    if isinstance(child.ctx, (ast.Store, ast.Del)):   # type: ignore[attr-defined]
                        local.add(child.id)   # type: ignore[attr-defined]
                elif inner not in _LEAVES:
                    stack.append(child)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, _COMPREHENSIONS):
            # Only an assignment expression inside a comprehension binds in the enclosing scope.
            local |= {n.target.id for n in walk_outside_lambdas(node) if isinstance(n, ast.NamedExpr)}
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    local.add(alias.asname or alias.name.split(".")[0])
            continue
        if isinstance(node, ast.Global):
            declared.update(node.names)
            continue
        if isinstance(node, ast.Nonlocal):
            local.update(node.names)
            continue
        if isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            local.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            local.add(node.rest)
        stack.extend(child_nodes(node))
    return local, declared


# The classes _bindings does not simply enter (but ast.Name, asked first).
_BINDING_APART = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_COMPREHENSIONS,
                            ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ExceptHandler, ast.MatchAs,
                            ast.MatchStar, ast.MatchMapping})
# The classes _ScopeWalk does not simply enter: those of either walk it stands for.
_WALK_APART = frozenset({ast.AnnAssign, ast.AugAssign, *_BINDING_APART})


def walk_outside_lambdas(node: ast.AST) -> Iterable[ast.AST]:
    """ast.walk that does not enter lambdas (their assignment expressions bind inside the lambda)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend([child for child in child_nodes(current) if not isinstance(child, ast.Lambda)])


def _target_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _parameters(args: ast.arguments) -> list[str]:
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def _defaults(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def statement_reads(node: ast.stmt) -> frozenset[str]:
    """Every module-level name a top-level statement reads when it runs or when what it defines is called.

    For a def or class: its decorators, defaults and bases, and the globals its body reads (annotations are
    not evaluated by the grader, so they are not reads). For any other statement: every name it loads, the
    bodies of the lambdas and comprehensions in it included.
    """
    reads: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for expression in [*node.decorator_list, *_defaults(node.args)]:
            _collect(expression, _Scope(set(), set(), ()), reads)
        reads |= _globals_of(node)    # the body's, kept by node: the judge asks global_data_reads of it next
    elif isinstance(node, ast.ClassDef):
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            _collect(expression, _Scope(set(), set(), ()), reads)
        _class_reads(node, (), reads)
    else:
        module = _Scope(set(), set(), ())
        _collect(node, module, reads)
    return frozenset(reads)


def global_sets(func: FunctionNode) -> tuple[frozenset[str], frozenset[str]]:
    """(module-level names the function binds as `global`, the plain names it calls), of its own body.

    `def main(): global goal; goal = ...` then `main()`: in Jupyter the call binds goal, which a graded function
    may read. Extraction keeps such a call when nothing else binds the name (extract.source._set_by_calls); the
    names it calls let a call reach the function that sets it (main() calling setup()). Nested functions and
    classes are scopes of their own: their `global` and calls count only when called, so not here.
    """
    local, declared = _bindings(func.body)
    calls: set[str] = set()
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.add(node.func.id)
        stack.extend(child_nodes(node))
    return frozenset(local & declared), frozenset(calls)


def definition_reads(node: ast.stmt) -> frozenset[str]:
    """The module-level names a top-level def or class reads when its statement runs, not when it is called.

    A def evaluates its decorators and defaults; a class its decorators, bases, keywords and its body, the
    decorators and defaults of its methods but not their bodies. Annotations are not evaluated (the grader
    compiles with `from __future__ import annotations`). Empty for any other statement. A definition placed
    above the cell that binds one of these names fails there with a NameError, although a student who ran the
    cells in a working order never saw one: extraction makes it wait (extract.source._after_late_definitions).
    """
    reads: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        _definition_time(node, _Scope(set(), set(), ()), reads)
    return frozenset(reads)


def _definition_time(node: ast.AST, scope: _Scope, reads: set[str]) -> None:
    """Add the global names `node` reads when it runs in `scope`, entering no function's or lambda's body."""
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load):
            scope.resolve(node.id, reads)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        parts: list[ast.expr] = [*getattr(node, "decorator_list", ()), *_defaults(node.args)]
    elif isinstance(node, ast.ClassDef):
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            _definition_time(expression, scope, reads)
        local, declared = _bindings(node.body)
        inner = _Scope(local - declared, declared, scope.children, is_class=True)
        for statement in node.body:
            _definition_time(statement, inner, reads)
        return
    elif isinstance(node, _COMPREHENSIONS):
        _comprehension_reads(node, scope, reads)   # run where they stand (a lambda inside is walked too: more waits)
        return
    elif isinstance(node, ast.AnnAssign):
        parts = [part for part in (node.target, node.value) if part is not None]
    else:
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            scope.resolve(node.target.id, reads)
        parts = child_nodes(node)   # type: ignore[assignment]
    for part in parts:
        _definition_time(part, scope, reads)


# Methods of list, dict, set, bytearray and deque that change the object they are called on.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update", "add", "discard",
    "setdefault", "popitem", "appendleft", "extendleft", "popleft", "rotate", "difference_update",
    "intersection_update", "symmetric_difference_update", "__setitem__", "__delitem__",
})


def mutated_names(node: ast.stmt) -> frozenset[str]:
    """Module-level names a top-level statement changes without rebinding them.

    `goal.append(0)`, `goal[2] = 0`, `EightPuzzle.h1 = f`, `setattr(EightPuzzle, 'h1', f)`, `del table[k]`, also
    inside a loop or an if.
    A method call changes its object only for the container methods that do (MUTATING_METHODS):
    `solver.solve(...)` is not taken to change `solver`.
    """
    names: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:    # every node, as ast.walk (nested bodies too), in another order: a set is the answer
        inner = stack.pop()
        stack.extend(child_nodes(inner))
        kind = type(inner)   # a parsed tree's nodes are of the ast classes themselves
        if kind is ast.Call:
            func = inner.func   # type: ignore[attr-defined]
            if isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS:
                root = _root_name(func.value)
                if root is not None:
                    names.add(root)
            elif isinstance(func, ast.Name) and func.id in _ATTRIBUTE_SETTERS and inner.args:  # type: ignore[attr-defined]
                root = _root_name(inner.args[0])   # type: ignore[attr-defined]
                if root is not None:
                    names.add(root)
            continue
        if kind not in _CHANGES:
            continue
        targets = inner.targets if kind is ast.Assign or kind is ast.Delete else [inner.target]  # type: ignore[attr-defined]
        for target in targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)):
                root = _root_name(target.value)
                if root is not None:
                    names.add(root)
    return frozenset(names)


_CHANGES = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete})   # statements with targets
# setattr(EightPuzzle, 'h2', h2) is EightPuzzle.h2 = h2 spelled as a call: a notebook adds a method to its class
# in a later cell so (a pattern of notebooks that explain a class cell by cell); delattr is `del EightPuzzle.h2`.
_ATTRIBUTE_SETTERS = frozenset({"setattr", "delattr"})


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
