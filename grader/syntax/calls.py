"""Case expressions: split into what the trusted parent computes (data) and what the child evaluates (student names).

A rubric writes `move_dir(Start, 0, 0, 1, 0)`. `Start` is a fixture: the parent computes it and ships it as a
value, so the child never sees the reference module. `move_dir` is looked up in the submission, inside the child.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Any, Mapping

from grader.syntax.analysis import child_nodes

# Builtins a rubric expression may use on data in the parent. Nothing here reads files or imports.
SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
        "isinstance", "len", "list", "map", "max", "min", "range", "repr", "reversed", "round", "set",
        "sorted", "str", "sum", "tuple", "type", "zip", "None", "True", "False", "Exception", "ValueError",
        "TypeError", "KeyError", "IndexError",
    )
    if hasattr(builtins, name)
}


class ExpressionError(ValueError):
    """A rubric expression that cannot be evaluated on the data side."""


@dataclass(frozen=True)
class ChildExpression:
    """What the child evaluates: code over the submission's names plus placeholders for parent-computed values."""

    code: str
    values: tuple[tuple[str, Any], ...]   # placeholder name -> plain value, encoded when sent


def _nodes(node: ast.AST) -> list[ast.AST]:
    """Every node of the tree, as ast.walk gives them (but the expression contexts, which hold no name), in another
    order: read from the fields in place (child_nodes), not through a generator per node, since a plan's every
    case's call is walked once per subexpression (_Splitter) by the coordinator before it forks its workers."""
    nodes = [node]
    for current in nodes:    # grows as it is read: each node's children are appended after it
        nodes.extend(child_nodes(current))
    return nodes


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in _nodes(node) if isinstance(n, ast.Name)}


def _bound_in(node: ast.AST) -> set[str]:
    """Names bound inside an expression (comprehension targets, lambda parameters, walrus)."""
    bound: set[str] = set()
    for sub in _nodes(node):
        if isinstance(sub, ast.comprehension):
            bound |= {n.id for n in _nodes(sub.target) if isinstance(n, ast.Name)}
        elif isinstance(sub, ast.Lambda):
            bound |= {a.arg for a in _nodes(sub.args) if isinstance(a, ast.arg)}
        elif isinstance(sub, ast.NamedExpr):
            bound.add(sub.target.id)
    return bound


def evaluate_data(code: str | ast.AST, data: Mapping[str, Any]) -> Any:
    """Evaluate an expression over data names and safe builtins only (trusted side)."""
    if isinstance(code, str):
        tree = ast.parse(code, mode="eval")
    elif isinstance(code, ast.expr):
        tree = ast.Expression(body=code)
    else:
        raise ExpressionError(f"not an expression: {type(code).__name__}")
    ast.fix_missing_locations(tree)
    namespace = {"__builtins__": SAFE_BUILTINS, **data}
    try:
        return eval(compile(tree, "<rubric>", "eval"), namespace)  # noqa: S307 - rubric text is trusted
    except Exception as error:  # the rubric is wrong: say which expression and why
        shown = code if isinstance(code, str) else ast.unparse(code)
        raise ExpressionError(f"cannot evaluate {shown!r}: {type(error).__name__}: {error}") from None


class _Splitter(ast.NodeTransformer):
    def __init__(self, data: Mapping[str, Any], renames: Mapping[str, str], bound: set[str]):
        self.data, self.renames, self.bound = data, renames, bound
        self.values: list[tuple[str, Any]] = []

    def _is_data_only(self, node: ast.AST) -> bool:
        names = _names_in(node)
        if not names & set(self.data) or names & self.bound:
            return False
        return all(name in self.data or name in SAFE_BUILTINS for name in names)

    def visit(self, node: ast.AST) -> ast.AST:
        # `*xs`, `a:b` and `a:b, c` (in a subscript) are syntax, not values (a slice object would not survive the
        # codec): fold what is inside them, never the node itself.
        syntax = isinstance(node, (ast.Starred, ast.Slice)) or (
            isinstance(node, ast.Tuple) and any(isinstance(element, ast.Slice) for element in node.elts))
        if isinstance(node, ast.expr) and not syntax and self._is_data_only(node):
            placeholder = f"__v{len(self.values)}"
            self.values.append((placeholder, evaluate_data(node, self.data)))
            return ast.copy_location(ast.Name(id=placeholder, ctx=ast.Load()), node)
        if isinstance(node, ast.Name) and node.id in self.renames and node.id not in self.bound:
            return ast.copy_location(ast.Name(id=self.renames[node.id], ctx=node.ctx), node)
        return self.generic_visit(node)


def for_child(code: str, data: Mapping[str, Any], renames: Mapping[str, str] | None = None) -> ChildExpression:
    """Fold every data-only subexpression into a placeholder value; rename graded names to the notebook's alias."""
    tree = ast.parse(code, mode="eval")
    splitter = _Splitter(data, renames or {}, _bound_in(tree))
    body = splitter.visit(tree.body)
    return ChildExpression(ast.unparse(body), tuple(splitter.values))


def free_names(code: str) -> set[str]:
    """Names an expression reads that it does not bind itself."""
    tree = ast.parse(code, mode="eval")
    return _names_in(tree) - _bound_in(tree)


def call_arguments(code: str, data: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The positional and keyword argument values of a call, when all are data; None otherwise.

    Checks receive these (e.g. the start state passed to `search`).
    """
    tree = ast.parse(code, mode="eval").body
    if not isinstance(tree, ast.Call):
        return None
    args: list[Any] = []
    for arg in tree.args:
        if isinstance(arg, ast.Starred):
            return None
        try:
            args.append(evaluate_data(arg, data))
        except ExpressionError:
            args.append(_NotData(ast.unparse(arg)))
    kwargs: dict[str, Any] = {}
    for keyword in tree.keywords:
        if keyword.arg is None:
            return None
        try:
            kwargs[keyword.arg] = evaluate_data(keyword.value, data)
        except ExpressionError:
            kwargs[keyword.arg] = _NotData(ast.unparse(keyword.value))
    return tuple(args), kwargs


def submission_code(argument: Any) -> str | None:
    """The expression of an argument call_arguments found naming submission code (not data), else None."""
    return argument.expression if isinstance(argument, _NotData) else None


@dataclass(frozen=True)
class _NotData:
    """An argument that names submission code (e.g. `next_states`), not data. A check that looks inside it is
    told why it has no value, instead of failing on an unknown object."""

    expression: str

    def _no_value(self, *_: Any) -> Any:
        way = ("list it in the rubric's 'fixtures:' (data of the reference) if the check needs it"
               if self.expression.isidentifier() else
               "it is built by the submission's code; a check can ask for the data it is built from "
               "('variables' of a generated case, 'data')")
        raise TypeError(f"argument {self.expression} is evaluated in the submission, so a check gets no value for "
                        f"it: {way}")

    __iter__ = __getitem__ = __len__ = __contains__ = _no_value

    def __getattr__(self, name: str) -> Any:
        """`problem.initial` on an argument built by the submission (`Problem(3, 3, 2)`) is the same question as
        `args[0][0]`; dunders stay missing, so copy, pickle and repr see an ordinary object."""
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._no_value()


@dataclass(frozen=True)
class MethodCall:
    """How the reference answers an isolated method: the child computes `inputs` (attribute chains over the
    method's parameters, e.g. `self.goal`, `node.state`) on the student's objects and sends them as data; the
    parent binds them to the placeholders of `code` (`__m0`, ...) and evaluates it over the reference module."""

    params: tuple[str, ...]      # the reference method's parameters, self first
    inputs: tuple[str, ...]
    code: str


class _Chains(ast.NodeTransformer):
    """Replaces every maximal attribute chain rooted at a parameter (`self.goal`, `node`) by a placeholder."""

    def __init__(self, params: tuple[str, ...]):
        self.params = params
        self.inputs: list[str] = []

    def _placeholder(self, node: ast.expr) -> ast.expr:
        text = ast.unparse(node)
        if text not in self.inputs:
            self.inputs.append(text)
        return ast.copy_location(ast.Name(f"__m{self.inputs.index(text)}", ast.Load()), node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        root: ast.expr = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.params:
            return self._placeholder(node)
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self._placeholder(node) if node.id in self.params else node


def isolated_call(name: str, call: str, function: Any) -> MethodCall:
    """Split an isolated method's `call` into what the child computes and what the reference evaluates.

    `function` is the reference's method (its parameters name what `call` may read); ValueError says why the
    call cannot answer the method."""
    import inspect
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        raise ValueError(f"the reference has no method {name} to take its parameters from") from None
    params = tuple(signature.parameters)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
        raise ValueError(f"the reference's {name} takes *args or **kwargs: its parameters must be named")
    tree = ast.parse(call, mode="eval")
    chains = _Chains(params)
    rewritten = ast.fix_missing_locations(chains.visit(tree))
    if not chains.inputs:
        raise ValueError(f"the call {call!r} reads none of the method's parameters {', '.join(params)}")
    return MethodCall(params, tuple(chains.inputs), ast.unparse(rewritten))
