"""Checks: pure functions from (expected, got, case data) to a verdict, run in the trusted parent on plain data.

A check never calls a method of a student object: `got` arrives as decoded plain data (tuples, lists, str, int).
A new check is one function registered with @check("name", *options): the options it takes are declared there
once (Option: kind, whether required, default), and from that one declaration the plan validates a rubric's
options (option_problems), the check reads them with their defaults (Option.read, evaluate), and the kit knows
what it can check on a student's machine.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable, Mapping, Union

from grader.syntax.calls import ExpressionError, evaluate_data
from grader import codec
from grader.rubric.schema import suggest


@dataclass(frozen=True)
class Verdict:
    passed: bool
    fraction: float      # credit in [0, 1]; a failed case may still earn partial credit (e.g. a longer path)
    message: str
    # What is wrong, with none of the answer's values in it ("expected str, got int", "an illegal move"): the
    # fact a class report groups wrong answers by. "" when the check does not say (a course's own check).
    cause: str = ""


@dataclass(frozen=True)
class CheckContext:
    """Everything a check may look at; all of it plain data."""

    expected: Any                          # wire form of the reference's answer
    got: Any                               # wire form of the submission's answer
    args: tuple = ()                       # the call's positional argument values (data arguments only)
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    probes: Mapping[str, Any] = field(default_factory=dict)   # decoded probe values, or ProbeError
    variables: Mapping[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)     # fixtures + variables, for option expressions
    options: Mapping[str, Any] = field(default_factory=dict)
    reference: ModuleType | None = None
    validated: bool = False        # got was decoded once already (expected is the parent's own)


class ProbeError(Exception):
    """A probe expression raised in the child; the check sees this instead of a value."""


class CheckError(ValueError):
    """A check that is misconfigured or a reference helper that crashed: a rubric bug, not a student mistake.

    The case is then recorded with status "problem" (grader problem), never as the student's fail.
    """


# What an option's value is: a reference function's name, an expression over the case's data, a number, a flag.
FUNCTION, EXPRESSION, NUMBER, FLAG = "reference function", "expression", "number", "true or false"


@dataclass(frozen=True)
class Option:
    """One option a built-in check takes (`check: {name: path, optimal: true}`), declared once, with the check."""

    name: str
    kind: str                       # FUNCTION, EXPRESSION, NUMBER or FLAG
    doc: str
    required: bool = False
    default: Any = None             # what the check uses when the rubric does not give it
    low: float | None = None        # NUMBER: the range a value must lie in
    high: float | None = None

    def read(self, options: Mapping[str, Any]) -> Any:
        """The rubric's value, or the declared default."""
        return options.get(self.name, self.default)

    def evaluate(self, options: Mapping[str, Any], data: Mapping[str, Any], args: tuple = (),
                 kwargs: Mapping[str, Any] | None = None) -> Any:
        """An EXPRESSION option's value for one case: evaluated over its data (fixtures, variables, `args`,
        `kwargs`); None when the rubric does not give it. Raises ExpressionError when it is not plain data."""
        text = options.get(self.name)
        if text is None:
            return None
        return evaluate_data(str(text), {**data, "args": args, "kwargs": dict(kwargs or {})})

    def problem(self, options: Mapping[str, Any], owner: str, reference: ModuleType | None) -> str | None:
        """What is wrong with this option as the rubric gives it (one sentence), or None."""
        value = options.get(self.name)
        if value is None:
            return f"{owner} needs '{self.name}: <{self.kind}>'" if self.required else None
        said = f"{owner.removeprefix('the ')} option '{self.name}'"
        if self.kind == FUNCTION:
            if not callable(getattr(reference, str(value), None)):
                functions = [n for n, v in vars(reference or ModuleType("none")).items()
                             if inspect.isfunction(v) and v.__module__ == getattr(reference, "__name__", None)]
                return f"{said}: the reference module has no function '{value}'{suggest(str(value), functions)}"
        elif self.kind == EXPRESSION:
            try:
                ast.parse(str(value), mode="eval")
            except SyntaxError as error:
                return f"{said}: {error.msg} in {value!r}"
        elif self.kind == FLAG:
            if not isinstance(value, bool):
                return f"{said}: expected true or false, got {value!r}"
        elif self.kind == NUMBER:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"{said}: expected a number, got {value!r}"
            if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
                bounds = f"at least {self.low}" if self.high is None else f"between {self.low} and {self.high}"
                return f"{said}: expected a number {bounds}, got {value!r}"
        return None


CheckFunction = Callable[[CheckContext], Verdict]
CHECKS: dict[str, CheckFunction] = {}
OPTIONS: dict[str, tuple[Option, ...]] = {}     # built-in check -> the options it takes
# Taken by every check, built-in or the reference's: the kit's (see grader.kit.public).
PUBLIC = Option("public", FLAG, "its code ships in the student's kit (see \"Public checks\")", default=False)
COMMON = (PUBLIC,)
COMMON_OPTIONS = frozenset(option.name for option in COMMON)


def check(name: str, *options: Option) -> Callable[[CheckFunction], CheckFunction]:
    """Register a built-in check under `name`, with every option it takes."""
    def register(function: CheckFunction) -> CheckFunction:
        CHECKS[name] = function
        OPTIONS[name] = options
        return function
    return register


def _verdict(difference: codec.Difference | None) -> Verdict:
    return Verdict(True, 1.0, "") if difference is None else Verdict(False, 0.0, difference.message,
                                                                     difference.cause)


TOLERANCE = Option("tolerance", NUMBER, "floats may differ by this much", default=0.0, low=0.0)
SEQUENCE_AS_SET = Option("sequence_as_set", FLAG, "where a set is expected, a list or tuple that holds each of its "
                         "elements exactly once counts as that set (the case passes with a note)", default=False)
ANY_NUMBER_TYPE = Option("any_number_type", FLAG, "where a number is expected, an int or a float of the same value "
                         "passes (with a note when its type differs); a bool is no number", default=False)


@check("equal", TOLERANCE, SEQUENCE_AS_SET, ANY_NUMBER_TYPE)
def equal(context: CheckContext) -> Verdict:
    """Type-strict equality: a tuple is not a list, 1 is not 1.0 or True, a tuple subclass is not a tuple.

    Two spellings of the same value are not told apart (see `as_expected`): a numpy scalar where a plain
    number is expected, a frozenset where a set is. With `sequence_as_set`, a list or tuple of a set's elements,
    each once, is that set (see `set_elements`); with `any_number_type`, a number is right whatever its type
    (see `plain_number`).
    """
    lazy = lazy_answer(context.expected, context.got)
    if lazy is not None:
        return lazy
    got = as_expected(context.expected, context.got)
    tolerance = float(TOLERANCE.read(context.options))
    if ANY_NUMBER_TYPE.read(context.options):
        wanted, number = plain_number(context.expected), plain_number(got)
        if wanted is not None and number is not None and type(number) is not type(wanted):
            if same_number(number, wanted, tolerance):
                # No value in it: the message of a hidden case reaches the student (Gradescope, once published).
                return Verdict(True, 1.0, f"a {type(number).__name__} where {_article(type(wanted).__name__)} is "
                                          "asked for: the same number, accepted")
            return Verdict(False, 0.0, f"expected {wanted!r}, got {number!r}", "wrong value")
    elements = set_elements(context.expected, got) if SEQUENCE_AS_SET.read(context.options) else None
    if elements is None:
        return _verdict(codec.difference(context.expected, got, tolerance, validated=context.validated))
    if not context.validated:
        codec.decode(context.expected)
        codec.decode(context.got)
    kind = "tuple" if "tuple" in got else "list"
    texts = [codec.canonical(element) for element in elements]
    if len(set(texts)) < len(texts):
        return Verdict(False, 0.0, f"a {kind} where a set is asked for, holding an element more than once",
                       f"a {kind} with an element twice")
    # Both valid: the elements are compared as they are (a list among them is no state), never hashed.
    verdict = _verdict(codec.difference(context.expected, {"set": elements}, tolerance, validated=True))
    if not verdict.passed:
        return replace(verdict, message=f"{verdict.message} (the {kind} read as a set)")
    return Verdict(True, 1.0, f"a {kind} where a set is asked for, holding each element once: accepted")


# Iterators whose values the grader never sees (the child sends what it is, not what it would give): a generator,
# map(...), a dict's keys() and the like, by their type names as the codec writes them.
_LAZY = frozenset({"builtins.generator", "builtins.map", "builtins.filter", "builtins.zip", "builtins.enumerate",
                   "builtins.reversed", "builtins.dict_keys", "builtins.dict_values", "builtins.dict_items",
                   "builtins.list_iterator", "builtins.tuple_iterator", "builtins.set_iterator",
                   "builtins.dict_keyiterator", "builtins.range_iterator", "builtins.str_ascii_iterator"})
_CONTAINER_TAGS = ("set", "frozenset", "list", "tuple", "dict")


def lazy_answer(expected: Any, got: Any) -> Verdict | None:
    """The verdict on a generator (or map, filter, a dict's keys()...) where a set, list, tuple or dict is asked for:
    wrong, with what to write instead; None for any other answer.

    Not taken for the container, whatever it would yield: a generator gives its values once, cannot be counted or
    asked twice whether it holds a state, and the text asks for the container. Its repr ("<generator object f at
    0x7f..>") said nothing and, with its address, differed at each run."""
    if type(got) is not dict or got.get("opaque") not in _LAZY or type(expected) is not dict:
        return None
    kind = next((tag for tag in _CONTAINER_TAGS if tag in expected), None)
    if kind is None:
        return None
    name = str(got["opaque"]).rsplit(".", 1)[-1]
    what = "a generator" if name == "generator" else f"{_article(name)} object"
    asked = _article(kind)
    return Verdict(False, 0.0, f"{what} where {asked} is asked for: it gives its items one at a time, once, and is not "
                               f"{asked} (return {kind}(...) of them)", f"{what} where {asked} is expected")


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def plain_number(wire: Any) -> int | float | None:
    """The finite int or float a wire value is (a numpy scalar's item included), else None: a bool is no number.

    A heuristic computed with math.fabs or a float division is as good to A* as its int: a rubric may accept either
    type for an exercise (`check: {name: equal, any_number_type: true}`), as the 8-puzzle's check_count does.
    """
    if type(wire) is dict and "npscalar" in wire:
        wire = wire["npscalar"]
    return wire if type(wire) in (int, float) else None


def same_number(number: int | float, wanted: int | float, tolerance: float) -> bool:
    """Whether an int and a float are the same number, or within `tolerance` of it.

    Exact where there is no tolerance (Python compares an int with a float by value): their difference is a float,
    which rounds (2**53 + 1 against 2.0**53 came out 0.0) and which an int past a float's range cannot become (a
    student's 10**400 where 2.5 is expected raised OverflowError, and the case was the grader's problem)."""
    if tolerance <= 0:
        return number == wanted
    try:
        return abs(number - wanted) <= tolerance
    except OverflowError:
        return False


def set_elements(expected: Any, got: Any) -> list[Any] | None:
    """The elements of `got` (wire), in a set's order, when `expected` is a set and `got` a plain list or tuple;
    else None.

    Real notebooks often collect successor states in a list (`neighbors.append(...)`) where the assignment says
    "the set of states": a caller that iterates, tests membership or counts gets the same answer from it, so a
    rubric may accept it for an exercise (`check: {name: equal, sequence_as_set: true}`). Only distinct elements
    make a set: the check fails a list that repeats one.
    """
    if not (type(expected) is dict and "set" in expected and type(got) is dict and "class" not in got):
        return None
    for tag in ("list", "tuple"):
        if tag in got:
            return sorted((plain_numbers(element) for element in got[tag]), key=codec.canonical)
    return None


def as_expected(expected: Any, got: Any) -> Any:
    """`got` (wire) with each numpy scalar made the plain number where `expected` has a number of that type,
    and each frozenset made a set where `expected` has a set, inside lists and tuples too; inside a set, each
    numpy scalar is made its plain number (`plain_numbers`).

    Python treats them as equal (np.int64(2) == 2, frozenset(s) == set(s)) and a caller that reads the answer
    cannot tell them apart: a find_tile that returns the row and column np.where gave it, or a next_states that
    returns a frozenset, is right. A bool is still not an int, a list not a tuple, and a subclass not its base.
    """
    if type(got) is not dict:
        return got
    if "npscalar" in got:
        item = got["npscalar"]
        return item if type(item) is type(expected) and type(item) in (int, float, bool) else got
    if type(expected) is not dict or "class" in got or "class" in expected:
        return got
    # A set's elements have no place to be matched by: each numpy scalar in them is its plain number (a
    # next_states building states from a numpy board: Python's set equals the expected one). A frozenset is a
    # set where a set is asked for; a set is no frozenset (it cannot be hashed).
    for tag, spellings in (("set", ("set", "frozenset")), ("frozenset", ("frozenset",))):
        found = next((got[spelling] for spelling in spellings if spelling in got), None)
        if tag in expected and found is not None:
            return {tag: sorted((plain_numbers(element) for element in found), key=codec.canonical)}
    for tag in ("list", "tuple"):
        if tag in expected and tag in got and len(expected[tag]) == len(got[tag]):
            return {tag: [as_expected(e, g) for e, g in zip(expected[tag], got[tag], strict=True)]}
    return got


def plain_numbers(wire: Any) -> Any:
    """`wire` with each numpy scalar made its plain number, inside lists and tuples too. Without an expected
    value to follow it is as strict as `as_expected`: a numpy int becomes an int, which is still not a float."""
    if type(wire) is not dict:
        return wire
    if "npscalar" in wire:
        item = wire["npscalar"]
        return item if type(item) in (int, float, bool) else wire
    for tag in ("list", "tuple"):
        if tag in wire and "class" not in wire:
            return {tag: [plain_numbers(element) for element in wire[tag]]}
    return wire


@check("unordered", TOLERANCE)
def unordered(context: CheckContext) -> Verdict:
    """A list or tuple whose order does not matter: compared as a multiset."""
    expected, got = context.expected, context.got
    lazy = lazy_answer(expected, got)
    if lazy is not None:
        return lazy
    for tag in ("list", "tuple"):
        if isinstance(expected, dict) and tag in expected and isinstance(got, dict) and tag in got:
            if expected.get("class") != got.get("class"):
                break
            return _verdict(codec.difference({tag: sorted(expected[tag], key=codec.canonical)},
                                             {tag: sorted(got[tag], key=codec.canonical)},
                                             float(TOLERANCE.read(context.options))))
    return _verdict(codec.difference(expected, got, float(TOLERANCE.read(context.options))))


def _option_value(context: CheckContext, option: Option) -> Any:
    if context.options.get(option.name) is None:
        raise CheckError(f"the path check needs the option '{option.name}'")
    try:
        return option.evaluate(context.options, context.data, context.args, context.kwargs)
    except ExpressionError as error:
        raise CheckError(f"path check option '{option.name}': {error}") from None


def _reference_function(context: CheckContext, option: Option) -> Callable | None:
    name = option.read(context.options)
    if name is None:
        return None
    function = getattr(context.reference, str(name), None)
    if not callable(function):
        raise CheckError(f"path check option '{option.name}': the reference module has no function '{name}'")
    return function


def _shown(value: Any) -> str:
    return codec.describe(codec.encode(value), 160)


NEXT_STATES = Option("next_states", FUNCTION, "the legal moves: next_states(state) gives the states one move away",
                     required=True)
MATCHES = Option("matches", FUNCTION, "the goal test matches(goal, state) (without it: state == goal)")
START = Option("start", EXPRESSION, "the state the path must begin with (over fixtures, variables, args, kwargs)",
               required=True)
GOAL = Option("goal", EXPRESSION, "the state the path must end in, or match (the same names)", required=True)
OPTIMAL = Option("optimal", FLAG, "full credit only for a path as short as the reference's", default=False)
SUBOPTIMAL_CREDIT = Option("suboptimal_credit", NUMBER, "with `optimal`, the credit of a longer valid path",
                           default=0.5, low=0.0, high=1.0)


# Checks whose answer is a path of states (a sequence of moves): the reports caption and draw it as one
# (CaseResult.path_answer); a list of states any other check judges is captioned as the list it is.
PATH_CHECKS = frozenset({"path"})


@check("path", NEXT_STATES, MATCHES, START, GOAL, OPTIMAL, SUBOPTIMAL_CREDIT)
def path(context: CheckContext) -> Verdict:
    """A path is right if it starts at the start, every step is a legal move, and it reaches the goal.

    With `optimal`, full credit needs the reference's length; a valid longer path earns `suboptimal_credit`.
    """
    successors = _reference_function(context, NEXT_STATES)
    if successors is None:
        raise CheckError("the path check needs the option 'next_states'")
    matches = _reference_function(context, MATCHES) or (lambda goal, state: goal == state)
    start, goal = _option_value(context, START), _option_value(context, GOAL)
    got = context.got
    if got is None:
        return Verdict(False, 0.0, "returned None: no path was found", "no path (None)")
    if not (isinstance(got, dict) and ("list" in got or "tuple" in got)):
        return Verdict(False, 0.0, f"expected a list of states, got {codec.describe(got, 120)}",
                       "not a list of states")
    states = codec.decode(got)
    if not isinstance(states, (list, tuple)):   # a list or tuple wire decodes to one; this is for the type checker
        return Verdict(False, 0.0, f"expected a list of states, got {codec.describe(got, 120)}",
                       "not a list of states")
    if not states:
        return Verdict(False, 0.0, "returned an empty path", "an empty path")
    first = codec.same(codec.encode(start), codec.encode(states[0]))
    if first is not None:
        return Verdict(False, 0.0, f"the path does not begin with the start state: {first}",
                       "the path does not begin with the start state")
    for step, (before, after) in enumerate(itertools.pairwise(states), start=1):
        try:
            legal = after in successors(before)
        except TypeError:  # e.g. an unhashable list where a tuple state belongs
            legal = False
        if not legal:
            return Verdict(False, 0.0, f"step {step} is not a legal move: from {_shown(before)} "
                                       f"to {_shown(after)}", "a step that is not a legal move")
    try:
        # states[-1] was reached by legal moves, so it is a state the reference made: a crash is the reference's.
        reached = bool(matches(goal, states[-1]))
    except Exception as error:  # noqa: BLE001
        raise CheckError(f"the reference's {MATCHES.read(context.options) or 'goal test'} raised "
                         f"{type(error).__name__}: {error}") from error
    if not reached:
        return Verdict(False, 0.0, f"the path ends in {_shown(states[-1])}, which does not match the goal "
                                   f"{_shown(goal)}", "the path does not end at the goal")
    moves = len(states) - 1
    if OPTIMAL.read(context.options) and context.expected is not None:
        shortest = codec.decode(context.expected)
        best = len(shortest) - 1 if isinstance(shortest, (list, tuple)) else moves
        if moves > best:
            credit = float(SUBOPTIMAL_CREDIT.read(context.options))
            return Verdict(False, credit, f"a valid path of {moves} moves, but the shortest has {best} moves",
                           "a valid path longer than the shortest")
    return Verdict(True, 1.0, f"a valid path of {moves} moves")


def option_problems(name: str, options: Mapping[str, Any], reference: ModuleType | None) -> list[str]:
    """Everything wrong with a check's options as a rubric gives them, one sentence each: checked once, when the
    plan is built, so a misspelt option (`suboptimal_credt`, `tolerence`) never grades silently with the default.
    A built-in check is held to its declared options; a check function of the reference to the keys its code
    reads (option_keys), when they can be followed."""
    problems = []
    if name in CHECKS:
        declared: tuple[Option, ...] = OPTIONS.get(name, ())
        known: frozenset[str] | None = frozenset(option.name for option in declared)
        owner = f"the {name} check"
    else:
        function = getattr(reference, name, None)
        if not callable(function):
            return []       # reported as an unknown check
        declared, known, owner = (), option_keys(function, reference), f"check {name}"
        extra = sorted(set(options) - COMMON_OPTIONS)
        if extra and not accepts(function, "options"):
            meant = "".join(suggest(key, sorted(COMMON_OPTIONS)) for key in extra)    # `publc: true` meant `public`
            problems.append(f"{owner} has no 'options' parameter, so its options {', '.join(extra)} would be "
                            f"ignored{meant}")
            known = None
    if known is not None:
        for key in sorted(set(options) - known - COMMON_OPTIONS):
            problems.append(f"unknown option '{key}' of {owner}{suggest(key, [*known, *COMMON_OPTIONS])}")
    for option in (*declared, *COMMON):
        problem = option.problem(options, owner, reference)
        if problem is not None:
            problems.append(problem)
    return problems


def accepts(function: Callable, name: str) -> bool:
    """Whether `function` takes a parameter called `name` (or any keyword)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def option_keys(function: Callable, module: ModuleType | None = None) -> frozenset[str] | None:
    """The option keys a reference check function reads (`options["k"]`, `options.get("k")`, `"k" in options`),
    following the options mapping into other functions of its module. None when it uses the mapping in a way
    that cannot be followed (iterated, unpacked, handed to a function of another module): then any key goes.
    """
    return _option_keys(function, "options", module, set())


def _option_keys(function: Callable, parameter: str, module: ModuleType | None,
                 seen: set[Callable]) -> frozenset[str] | None:
    if function in seen:
        return frozenset()
    seen.add(function)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    parents = {child: node for node in ast.walk(definition) for child in ast.iter_child_nodes(node)}
    keys: set[str] = set()
    for node in ast.walk(definition):
        if not (isinstance(node, ast.Name) and node.id == parameter and isinstance(node.ctx, ast.Load)):
            continue
        use: ast.AST = node
        parent = parents.get(use)
        if isinstance(parent, ast.BoolOp) and parent.values[0] is use:   # (options or {})
            use, parent = parent, parents.get(parent)
        if isinstance(parent, ast.Subscript) and parent.value is use:
            if not (isinstance(parent.slice, ast.Constant) and isinstance(parent.slice.value, str)):
                return None
            keys.add(parent.slice.value)
        elif isinstance(parent, ast.Attribute) and parent.value is use and parent.attr == "get":
            call = parents.get(parent)
            if not (isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Constant)
                    and isinstance(call.args[0].value, str)):
                return None
            keys.add(call.args[0].value)
        elif isinstance(parent, ast.Compare) and use in parent.comparators:
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
                continue          # options is None
            if not (isinstance(parent.left, ast.Constant) and isinstance(parent.left.value, str)):
                return None
            keys.add(parent.left.value)
        elif isinstance(parent, ast.Compare) and parent.left is use \
                and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            continue
        elif isinstance(parent, (ast.If, ast.IfExp, ast.UnaryOp, ast.BoolOp)):
            continue              # `if options:`, `not options`
        elif isinstance(parent, (ast.Call, ast.keyword)):
            call = parent if isinstance(parent, ast.Call) else parents.get(parent)
            if not isinstance(call, ast.Call):
                return None
            callee = getattr(module, call.func.id, None) if isinstance(call.func, ast.Name) and module else None
            if not inspect.isfunction(callee):
                return None
            try:
                names = list(inspect.signature(callee).parameters)
            except (TypeError, ValueError):
                return None
            if isinstance(parent, ast.keyword):
                target = parent.arg
            else:
                index = call.args.index(use) if use in call.args else -1
                target = names[index] if 0 <= index < len(names) else None
            if target is None or target not in names:
                return None
            found = _option_keys(callee, target, module, seen)
            if found is None:
                return None
            keys |= found
        else:
            return None
    return frozenset(keys)


def resolve(name: str, reference: ModuleType | None) -> CheckFunction:
    """The check called `name`: a built-in one, or a function of the reference module adapted to CheckContext."""
    return CHECKS.get(name) or reference_check(getattr(reference, name))


# The check-author API: what a check function of the reference module may ask for, by parameter name (the README's
# rubric reference is tested against this table). Values are decoded plain data: None, bool, int, float, str,
# bytes, tuple, list, dict, set, frozenset; a numpy array arrives as codec.NDArray (dtype, shape, data), anything
# else (a generator, an object of the student's class) as codec.Opaque (type, repr). Never a student object.
CHECK_PARAMETERS: dict[str, str] = {
    "got": "the submission's answer, decoded (after the case's `reduce`)",
    "expected": "the reference's answer to the same call (or the case's `expect`), decoded",
    "args": "the call's positional argument values, as a tuple (data arguments only; a name of submission code "
            "is a placeholder)",
    "kwargs": "the call's keyword argument values, as a dict",
    "probes": "the case's probes by name: each value, or a `ProbeError` when the probe raised in the submission",
    "variables": "the generated case's variables (empty for a written case)",
    "options": "the check's options from the rubric (`check: {name: ..., key: value}`), as a dict",
    "data": "fixtures and variables by name: what the case's expressions could use",
}
CheckAnswer = Union[bool, float, tuple[bool, str], tuple[float, str], Verdict]
"""What a check function returns: passed, a credit in [0, 1], either with a message, or a Verdict."""


def reference_check(function: Callable) -> CheckFunction:
    """Adapt a check function of the reference module: it asks for any of got, expected, args, ... by name."""
    offered = tuple(CHECK_PARAMETERS)
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        parameters = {}
    wants_all = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    # A parameter the grader cannot supply is a rubric bug; found here it is not blamed on the student's answer.
    unsupplied = [name for name, p in parameters.items() if name not in offered and p.default is p.empty
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def run(context: CheckContext) -> Verdict:
        if unsupplied:
            raise CheckError(f"check {function.__name__} asks for {', '.join(unsupplied)}; a check may ask for "
                             f"{', '.join(offered)}")
        decoded = {
            "got": codec.decode(context.got), "expected": codec.decode(context.expected),
            "args": context.args, "kwargs": dict(context.kwargs), "probes": dict(context.probes),
            "variables": dict(context.variables), "options": dict(context.options),
            "data": dict(context.data),
        }
        answer = function(**{k: v for k, v in decoded.items() if wants_all or k in parameters and k in offered})
        # Its message may hold values; what the course's check said no to is the check itself.
        cause = f"rejected by the check {function.__name__}"
        if isinstance(answer, Verdict):
            return answer if answer.cause or answer.passed else replace(answer, cause=cause)
        message = ""
        if isinstance(answer, tuple) and len(answer) == 2:
            answer, message = answer
        if isinstance(answer, bool):
            return Verdict(answer, 1.0 if answer else 0.0, str(message), "" if answer else cause)
        if isinstance(answer, (int, float)) and 0.0 <= answer <= 1.0:
            return Verdict(answer >= 1.0, float(answer), str(message), "" if answer >= 1.0 else cause)
        raise CheckError(f"check {function.__name__} returned {answer!r}; expected bool, (bool, message) "
                         f"or (fraction, message)")

    return run
