"""Turn a Notebook into the top-level statements the grader runs, plus what was left out and why.

A notebook is a log of experiments, not a module: it runs searches, draws
animations, calls shell commands and redefines functions. Extraction keeps what
defines things (imports, functions, classes, data) and drops what does work at
load time, cell by cell in document order, so that a broken or slow cell costs
only itself and every drop can be shown to the student with its cell and line.
"""

from __future__ import annotations

import ast
import builtins
import re
import shlex
import sys
import threading
from typing import Any
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from grader.syntax.analysis import (child_nodes, definition_reads, global_sets, is_stub, mutated_names,
                                     statement_reads, walk_outside_lambdas)
from grader.intake.notebook import Cell, Notebook
from grader.intake.warning import GraderWarning, Kind, at
from grader.rubric.schema import Policy

# Cell magics whose body is ordinary Python that IPython merely wraps (timing, output capture).
WRAPPING_CELL_MAGICS = frozenset({"time", "timeit", "capture"})
RUN_FUNCTION = "__grader_run__"
# `type X = ...` exists from Python 3.12 on; on 3.11 there is nothing to match.
_TYPE_ALIAS: tuple[type, ...] = (ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ()
_ASSIGNMENTS: tuple[type, ...] = (ast.Assign, ast.AnnAssign, ast.AugAssign, *_TYPE_ALIAS)


@dataclass(frozen=True)
class Statement:
    """One kept top-level statement, run in order in the child."""

    code: str  # its exact source lines, magics already removed
    cell: int  # Cell.index
    line: int  # 1-based line of its first line within the cell
    label: str  # the Cell.label
    kind: str  # "import" | "def" | "class" | "assign" | "run" | "other"
    names: tuple[str, ...]  # top-level names it binds
    why: str = ""  # why a statement that is not a definition was kept ("Goal read by manhattan")


@dataclass(frozen=True)
class Dropped:
    cell: int
    line: int
    label: str
    reason: str
    excerpt: str  # the first line, at most 80 characters


@dataclass(frozen=True)
class Definition:
    name: str
    cell: int
    line: int
    label: str
    kind: str  # "function" | "class" | "lambda" | "data" | "import"
    is_stub: bool  # functions and lambdas only
    node: ast.AST | None = field(default=None, compare=False, repr=False)  # the def/assign/import node


@dataclass(frozen=True)
class Extracted:
    statements: tuple[Statement, ...]
    dropped: tuple[Dropped, ...]   # none when extracted without `drops` (grading's: see extract)
    definitions: Mapping[str, Definition]  # last binding of each top-level name, in document order
    syntax_errors: tuple[Dropped, ...]  # cells left out because they do not parse (also in dropped)
    warnings: tuple[GraderWarning, ...]  # cells left out because they do not parse, each at its cell and line
    runs: tuple[str, ...]  # support modules named by %run, in order

    def source(self) -> str:
        """The kept statements as one module, each under a comment naming where it came from."""
        return "".join(f"# {s.label}, line {s.line}\n{s.code}\n\n" for s in self.statements)

    def dropped_report(self) -> str:
        return "".join(f"{d.label}, line {d.line}: {d.reason}: {d.excerpt}\n" for d in self.dropped)


def extract(notebook: Notebook, policy: Policy = Policy(), *, drops: bool = True) -> Extracted:
    """Keep the definitions and the top-level statements the graded code depends on, in document order.

    `drops`: list what was left out and why (`dropped`: what `grader extract` shows). Grading never reads it and
    asks for none: each dropped statement's reason walks its calls, ~0.4 ms of a Taoistic notebook's 4. The cells
    that do not parse are in `syntax_errors` either way, and everything else is the same."""
    seen: set[str] = set()
    parsed: list[_Parsed] = []
    prepared: list[_Prepared] = []
    room = MAX_CODE_CHARS   # what is left of what the grader parses of this notebook
    for cell in notebook.cells:
        if cell.kind == "code":   # a text twice in one notebook: its second copy gets a tree of its own
            # Only what is parsed is counted, cached or not (the same verdict in every process): a data cell
            # left out unparsed costs no room, and a later cell that still fits is parsed.
            size = _parse_chars(cell.source)
            if size <= room:
                room -= size
                parsed.append(_parsed(cell.source, fresh=cell.source in seen))
            else:
                parsed.append(_too_much(cell.source))
            prepared.append(_in_cell(parsed[-1].prepared, cell, drops))
            seen.add(cell.source)
    facts = {id(node): fact for entry in parsed for node, fact in zip(entry.body, entry.facts, strict=True)}
    run_stems = tuple(stem for p in prepared for _, stem in p.runs)
    # A %%writefile cell's module runs in place of the notebook's `from X import ...` of it (Jupyter imports the
    # file the cell wrote); a module nothing imports from stays out, as any other cell magic's cell.
    writes = _imported_writes(prepared)
    live = [not p.written or p.written in writes for p in prepared]
    judge = _Judge(_notebook_callables(e for e, keep in zip(parsed, live, strict=True) if keep), policy, run_stems,
                   set().union(*(e.bound_anywhere for e, keep in zip(parsed, live, strict=True) if keep)))
    located = [(p.cell, node) for p, keep in zip(prepared, live, strict=True) if keep and p.tree is not None
               for node in p.tree.body if _written_import(node, writes) is None]
    # Without roots (no rubric says what grading needs) the older syntactic policy applies: keep data, drop
    # statements that call notebook code.
    through = _set_by_calls(located, facts) if policy.roots is not None else {}
    needed = _slice(located, policy, judge, facts, through) if policy.roots is not None else {
        id(node): "" for _, node in located if judge.reason_to_drop(node) is None}
    kept: list[tuple[Statement, ast.stmt | None]] = []
    dropped: list[Dropped] = []
    syntax_errors: list[Dropped] = []
    warnings: list[GraderWarning] = []
    for p, keep in zip(prepared, live, strict=True):
        dropped_here = [replace(d, reason=f"{d.reason} (its code runs where the notebook imports from "
                                          f"{p.written})") if p.written and keep and d.reason.startswith(
                            "cell magic %%writefile") else d for d in p.dropped]
        if p.syntax_error is not None:
            syntax_errors.append(p.syntax_error)
            if drops:
                dropped_here.append(p.syntax_error)
        if p.warning is not None:
            warnings.append(p.warning)
        kept_here: list[tuple[Statement, ast.stmt | None]] = [
            (Statement(_call_run(stem), p.cell.index, line, p.cell.label, "run", (), why="%run of a support module"),
             None)
            for line, stem in p.runs
        ]
        body = p.tree.body if p.tree is not None and keep else []
        for node in body:
            fact = facts[id(node)]
            code = fact.code    # its cell's parse's (shared by a class's notebooks), not cut out again
            if (module := _written_import(node, writes)) is not None:
                if drops:
                    dropped_here.append(_dropped(p.cell, fact.line, f"import from {module}, which the notebook "
                                                 "writes with %%writefile: that cell's code runs instead", code))
                continue
            why = needed.get(id(node))
            if why is not None:
                bound = (*fact.bound, *sorted(through.get(id(node), ())))
                kept_here.append((_statement(node, code, p.cell, bound, why, fact.line), node))
            elif drops:
                reason = _why_dropped(node, fact.bound, policy, judge) if policy.roots is not None \
                    else judge.reason_to_drop(node)
                dropped_here.append(_dropped(p.cell, fact.line, reason or "not needed", code))
        kept += sorted(kept_here, key=lambda pair: pair[0].line)
        dropped += sorted(dropped_here, key=lambda d: d.line)
    if policy.roots is not None:
        kept = _after_late_definitions(kept, facts)
    return Extracted(
        statements=tuple(statement for statement, _ in kept),
        dropped=tuple(dropped),
        definitions=MappingProxyType(_definitions(kept, facts)),
        syntax_errors=tuple(syntax_errors),
        warnings=tuple(warnings),
        runs=run_stems,
    )


def _imported_writes(prepared: Sequence[_Prepared]) -> frozenset[str]:
    """The modules %%writefile cells write that a top-level `from X import ...` of an ordinary cell imports."""
    written = frozenset(p.written for p in prepared if p.written)
    return frozenset(module for p in prepared if not p.written and p.tree is not None for node in p.tree.body
                     if (module := _written_import(node, written)) is not None)


def _written_import(node: ast.stmt, writes: frozenset[str]) -> str | None:
    """The module of a top-level `from X import ...` of a module the notebook writes, else None."""
    if writes and isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in writes:
        return node.module
    return None


# ---------------------------------------------------------------- the dependency slice


_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Pass)
# Top-level calls that only configure the interpreter, which graded code may rely on (a deep recursion).
_CONFIGURING_CALLS = frozenset({"sys.setrecursionlimit", "random.seed", "np.random.seed", "numpy.random.seed",
                                "warnings.filterwarnings", "warnings.simplefilter"})


def _slice(located: list[tuple[Cell, ast.stmt]], policy: Policy, judge: "_Judge",
           facts: Mapping[int, "_Facts"], through: Mapping[int, frozenset[str]]) -> dict[int, str]:
    """id(statement) -> why it is kept, for the statements the graded code depends on.

    Definitions (imports, def, class) are always kept. Any other statement is kept when a needed name is one
    it binds or mutates; a name is needed when the rubric needs it (the roots), or a needed function or class
    reads it, or a kept statement reads it: computed transitively on the AST. What a statement calls does not
    matter, so `Path = main()` is dropped unless something needed reads Path; but a call binds what the called
    function sets as `global` when nothing else binds it (`through`, see _set_by_calls).
    """
    def reads(node: ast.stmt) -> list[str]:
        """In order: which reader reaches a statement first is its `why`, the same in every run."""
        return sorted(facts[id(node)].reads)

    kept: dict[int, str] = {}
    definitions: dict[str, list[ast.stmt]] = {}
    candidates: list[tuple[Cell, ast.stmt, frozenset[str]]] = []
    for cell, node in located:
        if isinstance(node, _DEFINITIONS):
            kept[id(node)] = ""
            for name in facts[id(node)].bound:
                definitions.setdefault(name, []).append(node)
        elif isinstance(node, _ASSIGNMENTS) and any(name in policy.drop for name in facts[id(node)].bound):
            continue
        else:
            touched = facts[id(node)].touched | through.get(id(node), frozenset())
            candidates.append((cell, node, touched))
            if isinstance(node, ast.Expr) and _configuring_call(node.value, policy):
                kept[id(node)] = "configures the interpreter" if not judge._allowed_bare_call(node.value) \
                    else "a call the rubric allows"
    roots = policy.roots or frozenset()
    queue: list[tuple[str, str]] = [(name, "the rubric's cases") for name in sorted(roots | policy.allow_calls)]
    for cell, node, _ in candidates:
        if kept.get(id(node)):
            queue.extend((name, f"{cell.label}, line {facts[id(node)].line}") for name in reads(node))
    needed: set[str] = set()
    while queue:
        name, reader = queue.pop(0)
        if name in needed:
            continue
        needed.add(name)
        for node in definitions.get(name, []):
            queue.extend((read, name) for read in reads(node))
        for _cell, node, touched in candidates:
            if name in touched and id(node) not in kept:
                verb = "read" if name in facts[id(node)].bound else \
                    "set (global) by the function called here and read" if name in through.get(id(node), ()) else \
                    "changed here and read"
                kept[id(node)] = f"{name} {verb} by {reader}"
                queue.extend((read, name) for read in reads(node))
    return kept


def _set_by_calls(located: list[tuple[Cell, ast.stmt]], facts: Mapping[int, "_Facts"]) -> dict[int, frozenset[str]]:
    """id(statement) -> the names it binds only by calling a notebook function that sets them as `global`.

    `def main(): global goal_state; goal_state = ...` then `main()` (a script's habit): in Jupyter the call
    binds goal_state, and a graded function reading it worked; dropped as a call, it was a NameError. Only a
    name no top-level statement binds counts: a counter (`count = 0`, `global count; count += 1` in the
    search) has its binding already, and a top-level search run is not kept for it. A function's calls of
    other notebook functions (by plain name, any of its definitions) reach what those set.
    """
    functions = [node for _, node in located if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not any(facts[id(function)].sets_global for function in functions):   # most notebooks: no `global` in any def
        return {}
    bound_at_top = frozenset().union(*(facts[id(node)].bound for _, node in located))
    sets: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for function in functions:
        own, called = facts[id(function)].global_sets
        sets.setdefault(function.name, set()).update(own - bound_at_top)
        calls.setdefault(function.name, set()).update(called)
    if not any(sets.values()):
        return {}
    reach: dict[str, frozenset[str]] = {}
    for name in sets:     # what a call of `name` sets, through the notebook functions it calls
        found: set[str] = set()
        seen, stack = {name}, [name]
        while stack:
            current = stack.pop()
            found |= sets.get(current, set())
            for callee in calls.get(current, ()):
                if callee in sets and callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        reach[name] = frozenset(found)
    through: dict[int, frozenset[str]] = {}
    for _, node in located:
        if isinstance(node, _DEFINITIONS):
            continue
        names = frozenset().union(*(reach.get(call.func.id, frozenset()) for call in _calls(node)
                                    if isinstance(call.func, ast.Name)))
        if names:
            through[id(node)] = names
    return through


def _after_late_definitions(
    kept: list[tuple[Statement, ast.stmt | None]], facts: Mapping[int, "_Facts"],
) -> list[tuple[Statement, ast.stmt | None]]:
    """Run a kept statement that uses a name the notebook binds only further down just after that binding.

    A notebook is written out of order: `goal = tupleOfTuples(rows)` sits above the cell that defines
    tupleOfTuples, or `class EightPuzzle(Problem)` above the cell that defines Problem, and the student ran
    that cell first. In document order it would fail with a NameError that is no mistake of the graded code,
    so it waits for what it uses: a statement for every name it reads, a def or class for what its own
    statement evaluates (decorators, defaults, bases, a class body: analysis.definition_reads), and whatever
    reads a name a waiting statement binds waits with it. Nothing else moves. It never waits past a statement
    that binds or changes a name it binds without reading it (that one must still come later, as in the
    notebook): there it runs where it would have, and fails as it would have. A cycle (a class whose base is
    its own subclass) or a name bound nowhere below waits for nothing: the student's NameError stays.
    """
    binders = [frozenset(facts[id(node)].bound) if node is not None else frozenset() for _, node in kept]
    later: list[set[str]] = [set() for _ in kept]
    seen: set[str] = set()
    for index in range(len(kept) - 1, -1, -1):
        later[index] = set(seen)
        seen |= binders[index]
    bound: set[str] = set()
    pending: list[tuple[int, frozenset[str]]] = []   # (index in kept, names it still waits for)
    order: list[tuple[Statement, ast.stmt | None]] = []

    def emit(index: int, after: Statement | None = None) -> None:
        statement, node = kept[index]
        if after is not None:
            moved = f"runs after {after.label}, line {after.line}, which defines what it uses"
            statement = replace(statement, why=f"{statement.why}; {moved}" if statement.why else moved)
        order.append((statement, node))
        bound.update(binders[index])

    def settle(after: Statement) -> None:
        """Emit, in their order, the waiting statements whose names are all bound now (one may free another)."""
        ready = True
        while ready:
            ready = False
            for waiting in list(pending):
                if waiting[1] <= bound:
                    pending.remove(waiting)
                    emit(waiting[0], after=after)
                    ready = True

    for index, (statement, node) in enumerate(kept):
        if node is None or statement.kind == "import":
            reads: frozenset[str] = frozenset()
        else:
            reads = facts[id(node)].definition_reads if statement.kind in ("def", "class") else facts[id(node)].reads
        # A later binding of its own names is no reason to wait; a waiting one is (`class A(A)` extends it).
        needs = frozenset(reads - bound) & (later[index] - binders[index])
        if pending:
            needs |= (reads - bound) & frozenset().union(*(binders[p] for p, _ in pending))
            if cycle := _waiting_on(pending, binders, needs, binders[index]):
                for waiting in cycle:   # a class based on its own subclass: each runs where it stands, and fails
                    pending.remove(waiting)
                    emit(waiting[0])
                needs -= bound
        if needs:
            pending.append((index, needs))
            continue
        if pending:    # what it changes matters only to a statement waiting (a def's body is walked only then)
            touched = binders[index] | (facts[id(node)].mutated if node is not None else frozenset())
            for waiting in [p for p in pending if binders[p[0]] & touched]:
                pending.remove(waiting)
                emit(waiting[0])
        emit(index)
        if pending:
            settle(statement)
    for index, _ in pending:
        emit(index)
    return order


def _waiting_on(pending: list[tuple[int, frozenset[str]]], binders: Sequence[frozenset[str]],
                needs: frozenset[str], own: frozenset[str]) -> list[tuple[int, frozenset[str]]]:
    """The waiting statements a statement needing `needs` would wait for, when one of them (through others) waits
    for what it binds (`own`): a cycle, none of which can run first. Else []."""
    found: list[tuple[int, frozenset[str]]] = []
    wanted = set(needs)
    grew = True
    while grew:
        grew = False
        for waiting in pending:
            if waiting not in found and binders[waiting[0]] & wanted:
                found.append(waiting)
                wanted |= waiting[1]
                grew = True
    return sorted(found) if any(waiting[1] & own for waiting in found) else []


def _why_dropped(node: ast.stmt, names: Sequence[str], policy: Policy, judge: "_Judge") -> str:
    """What the statement is (binding `names`), and why the grader does not need it."""
    if isinstance(node, _ASSIGNMENTS) and any(name in policy.drop for name in names):
        return "dropped by rubric"
    what = _label(node, names)
    if isinstance(node, ast.If) and _is_main_guard(node.test):
        return 'if __name__ == "__main__" block'
    calls = judge.reason_to_drop(node) if not isinstance(node, _ASSIGNMENTS) else judge._assignment(node, names)
    runs = f" (it calls {calls.split(' calls ', 1)[1]})" if calls and " calls " in calls else ""
    if names:
        shown = ", ".join(dict.fromkeys(names))
        return f"{what}: nothing graded reads {shown}{runs}"
    return f"{what}: graded code does not depend on it{runs}"


def _label(node: ast.stmt, bound: Sequence[str]) -> str:
    """A statement as a student would name it: "call of draw_state()", "assignment to Path", "for loop"."""
    if isinstance(node, ast.Expr):
        if isinstance(node.value, ast.Call):
            callee = _callee(node.value.func)
            return f"call of {callee}()" if callee else "call"
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return "string"
        return "expression"
    if isinstance(node, _ASSIGNMENTS):
        names = list(dict.fromkeys(bound))
        if names:
            return f"assignment to {', '.join(names)}"
        targets = [ast.unparse(t) for t in _assign_targets(node)]
        return f"assignment to {', '.join(targets)}" if targets else "assignment"
    return {ast.For: "for loop", ast.AsyncFor: "for loop", ast.While: "while loop", ast.If: "if statement",
            ast.With: "with statement", ast.AsyncWith: "with statement", ast.Try: "try statement",
            ast.Match: "match statement", ast.Delete: "del statement", ast.Assert: "assert statement",
            ast.Raise: "raise statement"}.get(type(node), f"{type(node).__name__.lower()} statement")


def _configuring_call(value: ast.expr, policy: Policy) -> bool:
    if not isinstance(value, ast.Call):
        return False
    callee = _callee(value.func)
    if callee is None:
        return False
    return callee in _CONFIGURING_CALLS or callee in policy.allow_calls or callee.split(".")[0] in policy.allow_calls


# ---------------------------------------------------------------- magics and parsing, one cell at a time


@dataclass
class _Prepared:
    cell: Cell
    lines: list[str]  # the cell after magic replacement
    tree: ast.Module | None
    dropped: list[Dropped]
    runs: list[tuple[int, str]]  # (line, support module stem)
    syntax_error: Dropped | None = None
    warning: GraderWarning | None = None
    written: str = ""   # the module a `%%writefile X.py` cell writes (its body parsed, kept only if X is imported)


_CELL_MAGIC = re.compile(r"^%%(?P<name>[A-Za-z_]\w*)")
_MAYBE_CELL_MAGIC = re.compile(r"\s*%%")   # blank lines and indent, then %%: all _cell_magic can match
_LINE_MAGIC = re.compile(r"^(?P<indent>\s*)%(?P<name>%?[A-Za-z_]\w*)(?P<args>.*)$")
_MAGIC_ASSIGNMENT = re.compile(
    r"^\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*\s*=\s*(?:(?P<shell>!)|%(?P<name>[A-Za-z_]\w*))"
)
_SHELL = re.compile(r"^\s*!(?!=)\S")
_HELP = re.compile(r"^\s*(?:\?{1,2}[\w.*]+|[\w.*]+\?{1,2})\s*$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A script cannot say %run (Spyder, VS Code, a plain .py): the Python that does the same to a support file is
# exec(open('X.py').read()), with an encoding or globals() at most. On a line of its own at the top level it is
# read as `%run X.py`; any other exec (a computed path, a cut text, another file type) stays Python.
_EXEC_OPEN = re.compile(
    r"""^exec\(\s*open\(\s*(?P<quote>['"])(?P<path>[^'"\\\n]+\.py)(?P=quote)\s*"""
    r"""(?:,\s*(?:\w+\s*=\s*)?['"][\w-]+['"]\s*){0,2}\)\s*\.\s*read\(\s*\)\s*(?:,\s*globals\(\s*\)\s*)?\)"""
    r"""\s*;?\s*(?:\#.*)?$"""
)


class _Facts:
    """What one top-level statement binds, changes and reads: questions of its tree alone, each answered once
    (the slice and the reordering both ask them) and, for a cell many notebooks share, once per process."""

    __slots__ = ("node", "declares", "code", "line", "_bound", "_mutated", "_reads", "_binds", "_definition_reads",
                 "_global_sets")

    def __init__(self, node: ast.stmt, declares: bool = True, code: str = "") -> None:
        self.node = node
        self.code = code                # its source lines in its cell (_statement_code), as the child runs them
        self.line = _first_line(node)
        # Whether the text parsed to it may hold a `global` statement: False where its cell's parsed lines have no
        # `global` at all, and global_sets' walk of a def (most notebooks' every def) is then not needed.
        self.declares = declares
        self._bound: tuple[str, ...] | None = None
        self._mutated: frozenset[str] | None = None
        self._reads: frozenset[str] | None = None
        self._definition_reads: frozenset[str] | None = None
        self._global_sets: tuple[frozenset[str], frozenset[str]] | None = None
        self._binds: tuple[tuple[str, str, int, bool, ast.stmt], ...] | None = None

    @property
    def bound(self) -> tuple[str, ...]:
        """The top-level names it binds, in source order (see _bindings)."""
        if self._bound is None:
            self._bound = tuple(name for name, _, _, _, _ in self.binds)
        return self._bound

    @property
    def binds(self) -> tuple[tuple[str, str, int, bool, ast.stmt], ...]:
        """Each binding as (name, kind, first line, is a stub, binding statement): a Definition but its cell."""
        if self._binds is None:
            self._binds = tuple((name, kind, _first_line(binder), _definition_is_stub(kind, binder), binder)
                                for name, kind, binder in _bindings(self.node))
        return self._binds

    @property
    def mutated(self) -> frozenset[str]:
        if self._mutated is None:
            self._mutated = mutated_names(self.node)
        return self._mutated

    @property
    def definition_reads(self) -> frozenset[str]:
        """What a def or class reads when its statement runs (analysis.definition_reads)."""
        if self._definition_reads is None:
            self._definition_reads = definition_reads(self.node)
        return self._definition_reads

    @property
    def global_sets(self) -> tuple[frozenset[str], frozenset[str]]:
        """Of a def: what its body sets as `global`, and the plain names it calls (analysis.global_sets)."""
        if self._global_sets is None:
            node = self.node
            self._global_sets = global_sets(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else (frozenset(), frozenset())
        return self._global_sets

    @property
    def sets_global(self) -> frozenset[str]:
        """What a def sets as `global` (global_sets' first), with no walk where its cell has no `global`."""
        return self.global_sets[0] if self.declares else frozenset()

    @property
    def touched(self) -> frozenset[str]:
        """What it binds or changes: a statement the slice keeps when one of these is needed."""
        return frozenset(self.bound) | self.mutated

    @property
    def reads(self) -> frozenset[str]:
        if self._reads is None:
            self._reads = statement_reads(self.node)
        return self._reads


@dataclass(frozen=True)
class _Parsed:
    """A cell's text prepared and parsed, and what its tree says: a function of the text alone. A class's
    notebooks share the template's cells (and a batch's copies share all), so each text is parsed and analysed
    once per process; the cell it is in is added per notebook (_in_cell)."""

    prepared: _Prepared            # of a stand-in cell (index 0): _in_cell places it
    facts: tuple[_Facts, ...]      # one per statement of the tree's body
    callables: tuple[tuple[str, str], ...]
    bound_anywhere: frozenset[str]

    @property
    def body(self) -> list[ast.stmt]:
        return self.prepared.tree.body if self.prepared.tree is not None else []


_PARSED: dict[str, _Parsed] = {}    # cell text -> its parse; oldest out first
_PARSED_LIMIT = 4096                 # texts
_PARSED_CELL_CHARS = 50_000          # a longer cell is parsed every time (a large one is data, or hostile)
_PARSED_CHARS = 20_000_000           # in all
_parsed_chars = 0
_PARSED_LOCK = threading.Lock()      # mutation testing extracts in threads
# The hashes of the cell texts parsed once and not kept (see _parsed); cleared whole when full. A hash two texts
# share only has the second kept on its first sight, which costs memory within _PARSED's bounds, never a wrong tree.
_SEEN_ONCE: set[int] = set()
_SEEN_ONCE_LIMIT = 65_536


def _parsed(source: str, fresh: bool = False) -> _Parsed:
    """The cell text's parse, from the process's cache when it was parsed before (unless `fresh`).

    Kept from a text's second sight on, not its first: what a class shares (the template's cells) is seen again
    at the next notebook, and a student's own cell never is. Kept, a worker's every student cell's tree (~2,000
    objects a Taoistic notebook) outlived its grading: the collector's young generation filled with trees every
    few notebooks and walked them (48 collections in a worker's 117 notebooks), and every later collection
    walked them again. Not kept, they die by reference counting when their grading ends."""
    global _parsed_chars
    entry = None if fresh else _PARSED.get(source)
    if entry is not None:
        return entry
    prepared = _prepare(Cell(0, "code", source, None))
    tree = prepared.tree
    declares = any("global" in line for line in prepared.lines)   # the text parsed is made of these lines
    body = tree.body if tree is not None else []
    entry = _Parsed(prepared, tuple(_Facts(node, declares, _statement_code(prepared.lines, body, n))
                                    for n, node in enumerate(body)),
                    _tree_callables(tree) if tree is not None else (),
                    _names_bound_anywhere([tree]) if tree is not None else frozenset())
    if fresh or len(source) > _PARSED_CELL_CHARS:
        return entry
    with _PARSED_LOCK:
        if source in _PARSED:            # another thread parsed it meanwhile: one entry, counted once
            return _PARSED[source]
        if hash(source) not in _SEEN_ONCE:
            if len(_SEEN_ONCE) >= _SEEN_ONCE_LIMIT:
                _SEEN_ONCE.clear()
            _SEEN_ONCE.add(hash(source))
            return entry
        while _PARSED and (len(_PARSED) >= _PARSED_LIMIT or _parsed_chars + len(source) > _PARSED_CHARS):
            _parsed_chars -= len(_PARSED.pop(next(iter(_PARSED))).prepared.cell.source)
        _PARSED[source] = entry
        _parsed_chars += len(source)
    return entry


def _too_much(source: str) -> _Parsed:
    """A cell past MAX_CODE_CHARS: left out unparsed, reported as one that does not parse."""
    cell = Cell(0, "code", source, None)
    lines = _LINE_BREAK.split(source)
    message = f"the notebook has more code than the grader parses (at most {MAX_CODE_CHARS:,} characters in all)"
    prepared = _Prepared(cell, lines, None, [], [], _dropped(cell, 1, f"cannot parse: {message}", lines[0]),
                         at(cell, 1, Kind.SYNTAX, f"cell left out: Unparsable: {message}", "Unparsable"))
    return _Parsed(prepared, (), (), frozenset())


def _in_cell(prepared: _Prepared, cell: Cell, drops: bool = True) -> _Prepared:
    """A prepared stand-in placed in the notebook's own cell (its drops, syntax error and warning name it); without
    `drops` (extract's), none of its drops."""
    def place(dropped: Dropped) -> Dropped:
        return replace(dropped, cell=cell.index, label=cell.label)
    return _Prepared(cell, prepared.lines, prepared.tree, [place(d) for d in prepared.dropped] if drops else [],
                     list(prepared.runs),
                     place(prepared.syntax_error) if prepared.syntax_error is not None else None,
                     replace(prepared.warning, cell=cell.index, label=cell.label)
                     if prepared.warning is not None else None, prepared.written)


def _parse_chars(source: str) -> int:
    """How many characters _prepare hands the parser for this cell text: none for a cell it never parses (one
    over MAX_CELL_CHARS, a cell magic whose body is not Python), about its length for any other."""
    if len(source) > MAX_CELL_CHARS:
        return 0
    if _MAYBE_CELL_MAGIC.match(source):
        lines = _as_ipython_reads(_LINE_BREAK.split(source))
        magic = _cell_magic(lines)
        if magic is not None and magic[1] not in WRAPPING_CELL_MAGICS and _written_module(lines[magic[0]]) is None:
            return 0
    return len(source)


# `%%writefile helpers.py` then `from helpers import find_tile`: a notebook that keeps its functions in a module it
# writes itself. The magic's arguments: `-a` (append) and the file's path.
_WRITEFILE = re.compile(r"^%%writefile(?:[ \t]+-a)?[ \t]+(?P<quote>['\"]?)(?P<path>[^'\"\s]+\.py)(?P=quote)[ \t]*$")


def _written_module(line: str) -> str | None:
    """The module stem a `%%writefile X.py` line writes, else None."""
    m = _WRITEFILE.match(line)
    return m["path"].replace("\\", "/").rsplit("/", 1)[-1][: -len(".py")] or None if m else None


def _as_ipython_reads(lines: list[str]) -> list[str]:
    """The cell as IPython runs it, after its clean-up (IPython 7 and 8, line numbers kept):

    - leading_indent: the whitespace before the first non-blank line is taken off every line that starts with it
      (9 takes off the lines' common indent, which runs no cell this does not). A cell pasted from inside a class
      or a loop runs in Jupyter, where Python alone says "unexpected indent": a right findZero, indented, scored 0
      for findZero and for the search that needs it.
    - the prompts of a session pasted into a cell (`>>> `/`... `, `In [3]: `/`   ...: `) are taken off every line
      when the first line has the first prompt or the second line any prompt: executed notebooks have such cells.
    """
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return lines
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip(" \t"))]
    if indent:
        lines = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    for initial, prompt in _PROMPTS:
        if initial.match(lines[first]) or (first + 1 < len(lines) and prompt.match(lines[first + 1])):
            lines = [prompt.sub("", line, count=1) for line in lines]
    return lines


# IPython's classic_prompt and ipython_prompt: (what the first line must start with, any line's prompt).
_IPYTHON_PROMPT = re.compile(r"^(((\[nav\]|\[ins\])? )?In \[\d+\]: |\s*\.{3,}: ?)")
_PROMPTS = ((re.compile(r"^>>>( |$)"), re.compile(r"^(>>>|\.\.\.)( |$)")), (_IPYTHON_PROMPT, _IPYTHON_PROMPT))


def _cell_magic(lines: list[str]) -> tuple[int, str] | None:
    """(line index, name) of the cell magic on the cell's first non-blank line, if it starts with one."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and (m := _CELL_MAGIC.match(lines[first])):
        return first, m["name"]
    return None


def _prepare(cell: Cell) -> _Prepared:
    """Replace magics, shell and help lines (keeping line numbers) and parse what is left."""
    if "get_ipython()" in cell.source:
        cell = replace(cell, source=_as_typed(cell.source))
    typed = _LINE_BREAK.split(cell.source)
    lines = _as_ipython_reads(typed)
    prepared = _Prepared(cell, lines, None, [], [])
    if (magic := _cell_magic(lines)) is not None:
        first, name = magic
        written = _written_module(lines[first]) if name == "writefile" else None
        if written is not None:
            # The file's text, verbatim (no magics): kept only where the notebook imports from it (see extract).
            try:
                text = "\n".join([""] * (first + 1) + lines[first + 1:])   # line numbers kept
                prepared.tree = _parse(text) if len(text) <= MAX_CELL_CHARS else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                prepared.tree = None
            if prepared.tree is not None and not (_may_be_deeper(text, MAX_NESTING)
                                                  and _nested_too_deeply(text, prepared.tree)):
                prepared.written = written
            else:
                prepared.tree = None
            prepared.dropped.append(_dropped(cell, first + 1, f"cell magic %%{name}", lines[first]))
            return prepared
        if name not in WRAPPING_CELL_MAGICS:
            prepared.dropped.append(_dropped(cell, first + 1, f"cell magic %%{name}", lines[first]))
            return prepared
        prepared.dropped.append(_dropped(cell, first + 1, f"cell magic %%{name} (body kept)", lines[first]))
        # IPython's %%time, %%timeit and %%capture read their body as a cell of its own (transform_cell): its
        # indent and pasted prompts are taken off again. `%%time` typed above a cell pasted indented ran in
        # Jupyter; read whole, it was an "unexpected indent" and the cell's functions were missing.
        lines = prepared.lines = [*lines[:first], "", *_as_ipython_reads(lines[first + 1:])]
    # A cell too large to parse is not scanned for line magics either (a Python loop over every character).
    too_large = len(cell.source) > MAX_CELL_CHARS
    if not too_large:
        _replace_line_magics(prepared, cleaned=lines is not typed)
    text = "\n".join(lines)
    try:
        if too_large or len(text) > MAX_CELL_CHARS:
            raise _Unparsable(f"the cell is too large to parse ({len(text):,} characters; at most "
                              f"{MAX_CELL_CHARS:,})")
        tree = _parse(text)
        if _may_be_deeper(text, MAX_NESTING) and _nested_too_deeply(text, tree):
            raise _Unparsable(f"the code is nested too deeply to analyse (more than {MAX_NESTING} levels)")
        prepared.tree = tree
    except (SyntaxError, ValueError, RecursionError, MemoryError, _Unparsable) as e:
        # RecursionError and MemoryError: CPython's parser gives up on very deep expressions (`1+1+...`, 3000
        # terms; `----...1`). The cell is reported like a syntax error; the rest of the notebook still grades.
        line = (getattr(e, "lineno", None) or 1) if isinstance(e, SyntaxError) else 1
        if isinstance(e, SyntaxError):
            message, kind = e.msg, "syntax error"
        elif isinstance(e, (RecursionError, MemoryError)):
            message, kind = "the expression is too deeply nested or too long for Python's parser", "cannot parse"
        else:
            message, kind = str(e), "cannot parse"
        excerpt = lines[line - 1] if 0 < line <= len(lines) else lines[0]
        # The whole cell is out: its magic drops and %runs go with it, only the error is reported.
        prepared.dropped, prepared.runs = [], []
        prepared.syntax_error = _dropped(cell, line, f"{kind}: {message} (line {line})", excerpt)
        error = type(e).__name__.lstrip("_")
        prepared.warning = at(cell, line, Kind.SYNTAX, f"cell left out: {error}: {message}", error)
    return prepared


MAX_CELL_CHARS = 2_000_000   # a code cell longer than this is data, not a solution: parsing it could take GBs
# All the code of one notebook the grader parses (extraction runs on the grader's clock, ~3 us a character): a
# notebook (up to 100 MB) of twenty 1.85 M-character cells held its worker until the watchdog (228 s) and was marked
# failed. A Taoistic notebook has ~10,000 characters of code. Cells are parsed in document order while they fit;
# a cell that does not is left out and reported. Cells never parsed (over MAX_CELL_CHARS, a %%html) count nothing.
MAX_CODE_CHARS = 4_000_000
# The grader's own tree walks (global reads, bindings) recurse once per level; CPython's parser allows about 200
# levels of brackets but any depth of `1+1+...`, so depth is measured (without recursion) before any walk.
MAX_NESTING = 400


PARSE_RECURSION_LIMIT = 20_000
# Raised once, when the grader is imported, and never lowered: a RecursionError while CPython 3.11 builds an AST
# leaves its AST state off (later parses fail with "SystemError: AST constructor recursion depth mismatch"), so
# the limit must leave room for the deepest tree CPython's parser accepts (its own stack stops near 6,000
# levels). It must not move while any thread parses: 3.11's AST constructor compares the depth it started at
# (derived from the limit) with the depth it ends at, so a limit raised and restored around each parse in one
# thread broke another thread's parse in the middle (mutation testing parses in threads).
if sys.getrecursionlimit() < PARSE_RECURSION_LIMIT:
    sys.setrecursionlimit(PARSE_RECURSION_LIMIT)


# CPython before 3.12 keeps the AST constructor's recursion depth in one per-interpreter state: two threads
# building ASTs at once (mutation testing grades in threads) corrupt each other's count and fail with
# "SystemError: AST constructor recursion depth mismatch". Every ast.parse in the process takes one lock.
_PARSE_LOCK = threading.RLock()
_unlocked_parse = ast.parse


def _locked_parse(*args: Any, **kwargs: Any) -> Any:
    with _PARSE_LOCK:
        return _unlocked_parse(*args, **kwargs)


if sys.version_info < (3, 12):
    ast.parse = _locked_parse


def _parse(text: str) -> ast.Module:
    """ast.parse under the raised recursion limit (see PARSE_RECURSION_LIMIT); the depth is checked after."""
    return ast.parse(text)


class _Unparsable(Exception):
    """A cell the grader will not analyse although Python might parse it (too big, too deep)."""


def _may_be_deeper(text: str, limit: int) -> bool:
    """Whether the tree parsed from `text` can lie deeper than `limit` levels: only then is it walked (most cells a
    student writes are a few hundred characters; the walk was a tenth of extracting a distinct notebook).

    Every level of a tree but three takes a character of the text that no level below it holds: an operator,
    bracket, dot, comma, quote, colon or keyword of its own (`-a` is one level more than `a`, `*a,` two more:
    Tuple then Starred; a def's arguments, a comprehension, a with item or a match case comes with its keyword).
    The three are the Module, an expression statement (the span of its expression) and a name's Load or Store,
    a leaf: `a` is 4 levels, `--a` 6. So a text of `limit - 3` characters or fewer is at most `limit` levels deep
    (test_extract checks it on generated nestings of every kind at small limits)."""
    return len(text) > limit - 3


_MEASURED: dict[str, bool] = {}   # cell text -> deeper than MAX_NESTING: a class shares the template's cells


def _nested_too_deeply(text: str, tree: ast.AST) -> bool:
    """The depth check of a cell, measured once per cell text (walking every node is most of a parse's cost)."""
    deep = _MEASURED.get(text)
    if deep is None:
        if len(_MEASURED) >= 4096:
            _MEASURED.clear()
        deep = _MEASURED[text] = _deeper_than(tree, MAX_NESTING)
    return deep


def _deeper_than(tree: ast.AST, limit: int) -> bool:
    """Whether any node lies deeper than `limit` levels, the root being level 1: walked level by level, each
    node's children read from its fields in place (ast.iter_child_nodes' generator per node cost three times as
    much, on every cell a class does not share)."""
    level: list[ast.AST] = [tree]
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    below.append(value)
                elif isinstance(value, list):
                    below.extend([item for item in value if isinstance(item, ast.AST)])
        level = below
        depth += 1
    return False


# A line _rewrite could change: a `?` anywhere (_HELP), `!` or `%` first on a line (_SHELL, _LINE_MAGIC) or after
# an `=` (_MAGIC_ASSIGNMENT). The spaces before a line's `!` or `%` are its own, never a line break: `\s*` there
# ran on over every line break after each one and back, a square of the cell's length (a cell of 100,000 blank
# lines, 200 kB of notebook, held the grader 70 s). A run of line breaks and spaces is now read once, and the
# same texts match: a match that spanned lines starts at its last line break.
_MAYBE_IPYTHON = re.compile(r"(?:^|[\r\n])[^\S\r\n]*[!%]|\?|=\s*[!%]")


def _maybe_ipython(text: str) -> bool:
    """Whether _MAYBE_IPYTHON matches `text`: never without a `?`, `!` or `%` in it, which the string's own search
    finds at C speed; the pattern, tried at every character, was ~0.3 ms of a Taoistic notebook's cells, few of
    which hold any (a `!=`, a `%` format)."""
    if "?" in text:
        return True
    return ("!" in text or "%" in text) and _MAYBE_IPYTHON.search(text) is not None


def _replace_line_magics(prepared: _Prepared, cleaned: bool = False) -> None:
    """Rewrite IPython-only lines that start a logical line; lines inside strings or brackets are Python."""
    lines, cell = prepared.lines, prepared.cell
    # Most cells: plain Python, no line to scan character by character.
    # A pasted session's magics (`In [3]: %time f()`) start their lines only once its prompts are off (`cleaned`).
    if not cleaned and not _maybe_ipython(cell.source) and "exec(" not in cell.source:
        return
    scanner = _LineScanner()
    for i, line in enumerate(lines):
        if not scanner.at_statement_start():
            scanner.feed(line)
            continue
        replacement, reason = _rewrite(line, i + 1, prepared)
        if reason is None:
            scanner.feed(line)
            continue
        if reason:  # "" marks a %run, which becomes a statement rather than a drop
            prepared.dropped.append(_dropped(cell, i + 1, reason, line))
        lines[i] = replacement
        scanner.feed(replacement)


def _rewrite(line: str, number: int, prepared: _Prepared) -> tuple[str, str | None]:
    """(new line, reason) for an IPython-only line, or (line, None) for Python; reason "" for a %run."""
    indent = line[: len(line) - len(line.lstrip())]
    # An emptied line would leave an indented block without a body, so indented lines become `pass`.
    blank = f"{indent}pass" if indent else ""
    if _HELP.match(line):
        return blank, "help request"
    if _SHELL.match(line):
        return blank, "shell command"
    if m := _MAGIC_ASSIGNMENT.match(line):
        return blank, "shell command" if m["shell"] else f"line magic %{m['name']}"
    if not indent and (m := _EXEC_OPEN.match(line)):
        line = f"%run {shlex.quote(m['path'])}"
    m = _LINE_MAGIC.match(line)
    if m is None:
        return line, None
    name, args = m["name"], m["args"].strip()
    if name.startswith("%"):
        return blank, f"cell magic {'%' + name} not on the first line"
    if name == "run":
        if indent:
            return blank, "line magic %run (not at top level)"
        stem = _run_target(args)
        if stem is None:
            return blank, "line magic %run (no file named)"
        prepared.runs.append((number, stem))
        return "", ""
    if name in ("time", "timeit"):
        statement = _timed_statement(args) if name == "timeit" else args
        if statement:
            return f"{indent}{statement}", f"line magic %{name} (statement kept)"
    return blank, f"line magic %{name}"


def _run_target(args: str) -> str | None:
    """The support module stem named by `%run [options] X.ipynb|X.py|X [args]`."""
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    module_next = False
    for word in words:
        if module_next:
            return word
        if word == "-m":
            module_next = True
        elif not word.startswith("-"):
            name = word.replace("\\", "/").rsplit("/", 1)[-1]
            for suffix in (".ipynb", ".py"):
                if name.lower().endswith(suffix):
                    name = name[: -len(suffix)]
            return name or None
    return None


_TIMEIT_OPTIONS_WITH_VALUE = ("-n", "-r", "-p")


def _timed_statement(args: str) -> str:
    """The statement of `%timeit [-n N -r R -p P -t -c -q -o] statement`."""
    rest = args
    while rest.startswith("-"):
        option, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        if option in _TIMEIT_OPTIONS_WITH_VALUE:  # value given separately: "-n 10"
            _, _, rest = rest.partition(" ")
            rest = rest.lstrip()
    return rest


# How a script exported from a notebook (nbconvert --to script, Jupyter's "Download as .py") writes a magic: as a
# call of IPython's API on a line of its own (`x = ` in front for `x = !ls`). IPython before 7 wrote a line magic as
# get_ipython().magic('run X.ipynb'): its name and arguments in one string.
_IPYTHON_CALL = re.compile(
    r"^(?P<indent>[ \t]*)(?:(?P<target>[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)[ \t]*=[ \t]*)?"
    r"get_ipython\(\)\.(?P<method>run_line_magic|run_cell_magic|magic|system|getoutput)\((?P<args>.*)\)[ \t]*$")


def _as_typed(source: str) -> str:
    """The cell with each call of IPython's API that an export wrote for a magic turned back into that magic.

    `%run Breadth-First-Fast.ipynb` is exported as get_ipython().run_line_magic('run', 'Breadth-First-Fast.ipynb')
    (get_ipython().magic('run Breadth-First-Fast.ipynb') before IPython 7)
    and a %%time cell as get_ipython().run_cell_magic('time', '', '<the cell>'): as calls they run nothing at
    grading (get_ipython is a stand-in), so a submitted script lost its support module and every definition
    under %%time. As magics again they are extracted as in the notebook. A call whose arguments are not string
    literals, or one inside a string or brackets, stays Python.
    """
    lines = _LINE_BREAK.split(source)
    typed: list[str] = []
    scanner = _LineScanner()
    for n, line in enumerate(lines):
        m = _IPYTHON_CALL.match(line) if scanner.at_statement_start() else None
        args = _string_literals(m["args"]) if m else None
        scanner.feed(line)
        if m is None or args is None:
            typed.append(line)
            continue
        indent, target, method = m["indent"], m["target"], m["method"]
        # A cell magic is a whole cell (as an export writes it): alone in its cell, or it stays a call. The export
        # writes a markdown cell as comments after the code cell before it, under no marker of its own: a %%time
        # cell followed by text kept its definitions in a string (a right 3x3 export without findZero, 14/20).
        alone = _only_comments(typed) and _only_comments(lines[n + 1:])
        if method == "run_cell_magic" and len(args) == 3 and not indent and not target and alone:
            typed.append(f"%%{args[0]} {args[1]}".rstrip())
            typed += _LINE_BREAK.split(args[2].rstrip("\r\n"))
            continue
        if method == "run_line_magic" and len(args) == 2:
            magic = f"%{args[0]} {args[1]}".rstrip()
        elif method == "magic" and len(args) == 1 and args[0].lstrip("%") and "\n" not in args[0]:
            magic = f"%{args[0].lstrip('%')}".rstrip()   # IPython's magic() takes the % off the name too
        elif method in ("system", "getoutput") and len(args) == 1 and "\n" not in args[0]:
            magic = f"!{args[0]}"
        else:
            typed.append(line)
            continue
        typed.append(f"{indent}{target} = {magic}" if target else f"{indent}{magic}")
    return "\n".join(typed)


def _only_comments(lines: Iterable[str]) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in lines)


def _string_literals(arguments: str) -> tuple[str, ...] | None:
    """The arguments of a call as strings, when every one is a string literal (and the text is short)."""
    if len(arguments) > MAX_CELL_CHARS:
        return None
    try:
        values = ast.literal_eval(f"({arguments},)")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(values, tuple) or not all(isinstance(value, str) for value in values):
        return None
    return values


class _LineScanner:
    """Tracks strings, brackets and backslash continuations across lines, enough to find statement starts."""

    def __init__(self) -> None:
        self.quote = ""  # the open string's quote ('"', "'", '\"\"\"' or "'''"), "" outside strings
        self.depth = 0
        self.continued = False

    def at_statement_start(self) -> bool:
        return not self.quote and self.depth == 0 and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if self.quote:
                if c == "\\":
                    if i == n - 1:
                        self.continued = len(self.quote) == 1
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = ""
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c in "'\"":
                self.quote = c * 3 if line.startswith(c * 3, i) else c
                i += len(self.quote)
                continue
            elif c == "\\" and i == n - 1:
                self.continued = True
            i += 1
        if len(self.quote) == 1 and not self.continued:
            self.quote = ""  # unterminated one-line string: a syntax error the parser will report


# ---------------------------------------------------------------- the top-level policy


def _notebook_callables(parsed: Iterable["_Parsed"]) -> dict[str, str]:
    """Name -> "function" | "class" for everything the notebook defines at top level, in any cell."""
    found: dict[str, str] = {}
    for entry in parsed:
        for name, kind in entry.callables:
            if kind == "class":
                found[name] = kind
            else:
                found.setdefault(name, kind)
    return found


def _tree_callables(tree: ast.Module) -> tuple[tuple[str, str], ...]:
    """(name, "function" | "class") for each definition at top level of one cell, in order (a class defined after
    a function of the same name wins, see _notebook_callables)."""
    found: list[tuple[str, str]] = []
    for node in _top_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, "function"))
        elif isinstance(node, ast.ClassDef):
            found.append((node.name, "class"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Lambda):
            for target in _assign_targets(node):
                if isinstance(target, ast.Name):
                    found.append((target.id, "function"))
    return tuple(found)


def _top_level(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements at module level, including those nested in if/try/with/loops, but not in defs or classes."""
    for node in body:
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for child_body in _bodies(node):
                yield from _top_level(child_body)


def _bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    bodies = [getattr(node, name, None) for name in ("body", "orelse", "finalbody")]
    bodies += [handler.body for handler in getattr(node, "handlers", ())]
    bodies += [case.body for case in getattr(node, "cases", ())]
    return [b for b in bodies if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]


def _names_bound_anywhere(trees: Iterable[ast.Module]) -> frozenset[str]:
    """Every name some top-level statement of the notebook binds, kept or not (loop variables too)."""
    names: set[str] = set()
    for tree in trees:
        stack: list[ast.AST] = list(tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            stack.extend(child_nodes(node))
    return frozenset(names)


# Names a notebook can call without binding them: Python's builtins and the IPython kernel's.
_PREDEFINED = frozenset(dir(builtins)) | {"display", "get_ipython"}


class _Judge:
    """Decides for one top-level statement whether it is kept; the reason when it is not."""

    def __init__(
        self, callables: Mapping[str, str], policy: Policy, run_stems: tuple[str, ...], bound: set[str]
    ) -> None:
        self.callables = callables
        self.policy = policy
        # With a %run, a called name the notebook never binds comes from the support module: it is
        # course or student code like any notebook function (`Path = search(...)` runs a whole search).
        self.run_source = (
            (f"%run {run_stems[0]}" if len(set(run_stems)) == 1 else "a %run module") if run_stems else ""
        )
        self.bound = bound

    def reason_to_drop(self, node: ast.stmt) -> str | None:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        if isinstance(node, (ast.Global, ast.Pass)):
            return None
        if isinstance(node, _ASSIGNMENTS):
            return self._assignment(node)
        if isinstance(node, ast.Expr):
            return None if self._allowed_bare_call(node.value) else "bare expression"
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return "loop at top level"
        if isinstance(node, ast.If):
            if _is_main_guard(node.test):
                return 'if __name__ == "__main__" block'
            return self._compound(node, "if condition", [node.test], [node.body, node.orelse])
        if isinstance(node, (ast.With, ast.AsyncWith)):
            items = [part for item in node.items for part in (item.context_expr, item.optional_vars) if part]
            return self._compound(node, "with statement", items, [node.body])
        if isinstance(node, (ast.Try, ast.TryStar)):
            types = [h.type for h in node.handlers if h.type is not None]
            bodies = [node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody]
            return self._compound(node, "except clause", types, bodies)
        if isinstance(node, ast.Match):
            tests = [node.subject, *(case.guard for case in node.cases if case.guard is not None)]
            return self._compound(node, "match statement", tests, [case.body for case in node.cases])
        if isinstance(node, ast.Delete):
            return "delete statement"
        if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
            return f"{type(node).__name__.lower()} outside a function"
        return f"{type(node).__name__.lower()} statement at top level"

    def _assignment(self, node: ast.stmt, bound: Sequence[str] | None = None) -> str | None:
        """`bound`: the names it binds, when the caller knows them."""
        if any(name in self.policy.drop for name in (_bound_names(node) if bound is None else bound)):
            return "dropped by rubric"
        parts: list[ast.AST] = [*_assign_targets(node)]
        value = getattr(node, "value", None)   # every kind of assignment has one; `x: int` has None
        if value is not None:
            parts.append(value)
        return self._calls_reason("assignment", parts)

    def _compound(
        self, node: ast.stmt, what: str, tests: Sequence[ast.AST], bodies: list[list[ast.stmt]]
    ) -> str | None:
        reason = self._calls_reason(what, tests)
        if reason:
            return reason
        for body in bodies:
            for inner in body:
                reason = self.reason_to_drop(inner)
                if reason:
                    return reason
        return None

    def _calls_reason(self, what: str, parts: Iterable[ast.AST]) -> str | None:
        for part in parts:
            for call in _calls(part):
                if isinstance(call.func, ast.Lambda):   # `(lambda: main())()` runs notebook code just the same
                    return f"{what} calls a lambda defined in the notebook"
                callee = _callee(call.func)
                if callee is None or self._allowed(callee):
                    continue
                root = callee.split(".")[0]
                kind = self.callables.get(root)
                if kind:
                    return f"{what} calls notebook {kind} {callee}()"
                if self.run_source and root not in self.bound and root not in _PREDEFINED:
                    return f"{what} calls {callee}() from {self.run_source}"
        return None

    def _allowed(self, callee: str) -> bool:
        return callee in self.policy.allow_calls or callee.split(".")[0] in self.policy.allow_calls

    def _allowed_bare_call(self, value: ast.expr) -> bool:
        """A bare call of a function the rubric allows (e.g. a setup function) is kept."""
        if not isinstance(value, ast.Call):
            return False
        callee = _callee(value.func)
        return callee is not None and self._allowed(callee) and self._calls_reason("call", [value]) is None


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls evaluated when `node` runs: comprehensions count, lambda bodies do not (only their defaults)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Lambda):
            stack.extend(_defaults(current.args))
            continue
        if isinstance(current, ast.Call):
            yield current
        stack.extend(child_nodes(current))


def _callee(func: ast.expr) -> str | None:
    """Dotted name of a called function (`main`, `State.getSolution`), None when it is not a plain name."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    return ".".join([func.id, *reversed(parts)])


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    has_name = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    has_main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return has_name and has_main


# ---------------------------------------------------------------- kept statements and definitions


def _statement(node: ast.stmt, code: str, cell: Cell, bound: Sequence[str], why: str, line: int) -> Statement:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        kind = "import"
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        kind = "def"
    elif isinstance(node, ast.ClassDef):
        kind = "class"
    elif isinstance(node, _ASSIGNMENTS):
        kind = "assign"
    else:
        kind = "other"
    return Statement(code, cell.index, line, cell.label, kind, tuple(dict.fromkeys(bound)), why=why)


def _call_run(stem: str) -> str:
    return f"{RUN_FUNCTION}({stem!r})"


def _bindings(node: ast.stmt) -> Iterator[tuple[str, str, ast.stmt]]:
    """(name, definition kind, binding statement) for each top-level name `node` binds, in source order."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name != "*":
                yield alias.asname or alias.name.split(".")[0], "import", node
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield node.name, "function", node
    elif isinstance(node, ast.ClassDef):
        yield node.name, "class", node
    elif isinstance(node, _ASSIGNMENTS):
        value = getattr(node, "value", None)
        if isinstance(node, ast.AnnAssign) and value is None:
            return  # `x: int` binds nothing
        for name in _walrus_names(value):
            yield name, "data", node
        for target in _assign_targets(node):
            plain = isinstance(target, ast.Name)
            for name in _target_names(target):
                kind = "lambda" if plain and isinstance(value, ast.Lambda) else "data"
                yield name, kind, node
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            for name in _walrus_names(item.context_expr):
                yield name, "data", node
            if item.optional_vars is not None:
                for name in _target_names(item.optional_vars):
                    yield name, "data", node
        for inner in node.body:
            yield from _bindings(inner)
    else:
        # `print(goal := f())`, `for s in (todo := deque()):`, `if (n := len(S)) > 3:`, `while (x := next()):`:
        # an assignment expression in the statement itself binds at top level, as in Jupyter.
        for part in child_nodes(node):
            if isinstance(part, ast.expr):
                for name in _walrus_names(part):
                    yield name, "data", node
        for body in _bodies(node):
            for inner in body:
                yield from _bindings(inner)


def _bound_names(node: ast.stmt) -> list[str]:
    return [name for name, _, _ in _bindings(node)]


def _assign_targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    if _TYPE_ALIAS and isinstance(node, _TYPE_ALIAS):
        return [node.name]  # type: ignore[attr-defined]
    return []


def _target_names(target: ast.AST) -> list[str]:
    """Names bound by an assignment target; `a[i] = ...` and `a.x = ...` bind none."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    return []


def _walrus_names(node: ast.AST | None) -> list[str]:
    if node is None:
        return []
    return [
        inner.target.id
        for inner in walk_outside_lambdas(node)
        if isinstance(inner, ast.NamedExpr) and isinstance(inner.target, ast.Name)
    ]


def _definitions(kept: list[tuple[Statement, ast.stmt | None]], facts: Mapping[int, _Facts]) -> dict[str, Definition]:
    """The last binding of each name among the kept statements, walked in document order (what each binds is
    known from its cell's parse, shared by a class's notebooks)."""
    found: dict[str, Definition] = {}
    for statement, node in kept:
        if node is None:
            continue  # a %run binds names the grader cannot see here
        fact = facts.get(id(node))
        binds = fact.binds if fact is not None and fact.node is node else _Facts(node).binds
        for name, kind, line, stub, binder in binds:
            found.pop(name, None)  # re-insert, so the mapping's order is the order of the last bindings
            found[name] = Definition(name=name, cell=statement.cell, line=line, label=statement.label, kind=kind,
                                     is_stub=stub, node=binder)
    return found


def _definition_is_stub(kind: str, node: ast.stmt) -> bool:
    if kind == "function" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return is_stub(node)
    if kind == "lambda" and isinstance(node.value, ast.Lambda):  # type: ignore[attr-defined]
        return is_stub(node.value)  # type: ignore[attr-defined]
    if kind == "data":   # a graded constant left as the template's placeholder: `goal = None` or `goal = ...`
        value = getattr(node, "value", None)
        return isinstance(value, ast.Constant) and (value.value is None or value.value is Ellipsis)
    return False


# ---------------------------------------------------------------- source text helpers


def _first_line(node: ast.stmt) -> int:
    """A decorated definition starts at its first decorator."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _statement_code(lines: list[str], body: list[ast.stmt], n: int) -> str:
    """The statement's source lines; cut at `;` only when it shares a line with its neighbour."""
    node = body[n]
    start, end = _first_line(node), node.end_lineno or node.lineno
    chunk = lines[start - 1 : end]
    shares_end = n + 1 < len(body) and _first_line(body[n + 1]) == end
    if shares_end and node.end_col_offset is not None:
        chunk[-1] = _utf8_prefix(chunk[-1], node.end_col_offset)
    shares_start = n > 0 and body[n - 1].end_lineno == start
    if shares_start:
        chunk[0] = chunk[0][len(_utf8_prefix(lines[start - 1], node.col_offset)) :]
    return "\n".join(chunk)


def _utf8_prefix(line: str, byte_offset: int) -> str:
    """ast columns count UTF-8 bytes, not characters."""
    return line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")


def _dropped(cell: Cell, line: int, reason: str, text: str) -> Dropped:
    return Dropped(cell.index, line, cell.label, reason, _excerpt(text))


def _excerpt(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= 80 else first[:77] + "..."


def _defaults(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
