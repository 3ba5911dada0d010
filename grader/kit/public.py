"""Reference code a rubric makes public: the checks a student's kit may run itself, as source.

A check marked `public: true` (a check function of the reference, or the `path` check, whose `next_states` and
`matches` are then public) ships in the kit with everything of the reference module it uses: functions,
classes, constants and imports, found on the syntax tree. Never a function an exercise grades, a known mistake,
or a generator of cases (that would hand out the solution or the hidden cases): such a closure is refused with
the line that needs it.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Mapping, Sequence

from grader.checks.registry import CHECKS, FUNCTION, OPTIONS, PUBLIC
from grader.rubric.schema import CheckSpec, Rubric, RubricError


class PublicError(RubricError):
    """Public code that cannot be shipped; `problems` are 'file:line: reason' lines."""


@dataclass(frozen=True)
class PublicCode:
    """The source a kit carries, and the reference names it defines (the roots first asked for among them)."""

    source: str
    names: tuple[str, ...]
    roots: tuple[str, ...]


def is_public(spec: CheckSpec) -> bool:
    return PUBLIC.read(spec.options) is True


def roots(spec: CheckSpec) -> tuple[str, ...]:
    """The reference functions a public check needs by name: a built-in check's function options (the path
    check's next_states and matches), or a check function of the reference itself."""
    if spec.name in CHECKS:
        return tuple(str(spec.options[option.name]) for option in OPTIONS[spec.name]
                     if option.kind == FUNCTION and spec.options.get(option.name))
    return (spec.name,)


def public_specs(rubric: Rubric) -> list[tuple[str, CheckSpec]]:
    """(exercise id, spec) of every check the rubric marks public."""
    found = []
    for exercise in rubric.exercises:
        for spec in (exercise.check, *(case.check for case in exercise.cases if case.check)):
            if is_public(spec):
                found.append((exercise.id, spec))
    return found


def _bound(node: ast.stmt) -> list[str]:
    """Top-level names a statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*"]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _read(segment: str) -> set[str]:
    """Module-level names a top-level statement reads (its own parameters and locals are not among them)."""
    names: set[str] = set()

    def walk(table: symtable.SymbolTable) -> None:
        for symbol in table.get_symbols():
            if table.get_type() == "module" and symbol.is_referenced():
                names.add(symbol.get_name())
            elif table.get_type() != "module" and symbol.is_global() and symbol.is_referenced():
                names.add(symbol.get_name())
        for child in table.get_children():
            walk(child)

    walk(symtable.symtable(segment, "<public>", "exec"))
    return names


def _forbidden(rubric: Rubric) -> dict[str, str]:
    """Names that must never leave the course, with why."""
    never: dict[str, str] = {}
    for exercise in rubric.exercises:
        for name in exercise.names:
            never[name.split(".")[0]] = f"what exercise '{exercise.id}' grades (its solution)"
        for mistake in exercise.mistakes:
            never.setdefault(mistake.reference, f"a known mistake of exercise '{exercise.id}'")
        for spec in exercise.cases:
            if spec.generate:
                never.setdefault(spec.generate, f"the generator of exercise '{exercise.id}' (it makes hidden cases)")
    return never


def public_code(rubric: Rubric, extra_roots: Iterable[str] = ()) -> PublicCode | None:
    """The closure of the rubric's public checks in the reference source; None when nothing is public."""
    wanted = [name for _, spec in public_specs(rubric) for name in roots(spec)] + list(extra_roots)
    if not wanted and not public_specs(rubric):
        return None
    path: Path = rubric.reference
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    binders: dict[str, list[int]] = {}
    for index, node in enumerate(tree.body):
        for name in _bound(node):
            binders.setdefault(name, []).append(index)
    segments = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        segments.append("".join(lines[first - 1:node.end_lineno]))
    never = _forbidden(rubric)
    problems: list[str] = []
    chosen: set[int] = set()
    queue = list(dict.fromkeys(wanted))
    seen: set[str] = set()
    why: dict[str, str] = {name: "public" for name in queue}
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in binders:
            if name not in vars(builtins) and why.get(name) == "public":
                problems.append(f"{path}:0: public check needs '{name}', which the reference module does not define")
            continue
        if name in never:
            line = tree.body[binders[name][0]].lineno
            problems.append(f"{path}:{line}: '{name}' is {never[name]}: a public check must not use it "
                            f"(needed by {why.get(name, 'a public check')}); leave the check private")
            continue
        for index in binders[name]:
            if index in chosen:
                continue
            chosen.add(index)
            for used in sorted(_read(segments[index])):
                if used not in seen:
                    why.setdefault(used, name)
                    queue.append(used)
    problems.extend(_unshipped_imports(rubric, [tree.body[index] for index in sorted(chosen)]))
    if problems:
        raise PublicError(sorted(set(problems)))
    header = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    pieces = [segment for index, (node, segment) in enumerate(zip(tree.body, segments, strict=True))
              if index in chosen or node in header]
    names = tuple(sorted({name for index in chosen for name in _bound(tree.body[index])}))
    return PublicCode("\n".join(pieces), names, tuple(dict.fromkeys(wanted)))


def solution_helpers_shipped(rubric: Rubric, students_have: Iterable[str] = ()) -> list[str]:
    """Helpers a public check ships that a graded function of the reference calls (`safe`, the safety rule both
    `crossings` and `successors` use): never refused, since a check may share a rule with a solution, but every
    student's kit then holds that part of the solution. `students_have`: names the template gives them anyway."""
    try:
        code = public_code(rubric)
    except RubricError:
        return []          # validate reports why it cannot be shipped
    if code is None:
        return []
    source = Path(rubric.reference).read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    theirs = {*students_have, *rubric.given, *rubric.fixtures}
    shipped = set(code.names) - theirs - set(_forbidden(rubric))
    warnings: list[str] = []
    said: set[str] = set()
    for exercise in rubric.exercises:
        owner, _, method = exercise.function.partition(".")
        for node in tree.body:
            if owner not in _bound(node):
                continue
            if method and isinstance(node, ast.ClassDef):   # a method's exercise: that method, not its class
                node = next((n for n in node.body if getattr(n, "name", None) == method), node)
            segment = textwrap.dedent("".join(lines[node.lineno - 1:node.end_lineno]))
            for name in sorted(_read(segment) & shipped - said):
                said.add(name)      # once: a class's methods graded one exercise each would say it for each
                warnings.append(f"{rubric.path}:{exercise.line}: exercise '{exercise.id}': a public check ships "
                                f"'{name}', which the reference's {exercise.function} uses: every student's kit "
                                f"holds it; leave the check private if '{name}' is part of the solution")
    return warnings


def _unshipped_imports(rubric: Rubric, statements: Iterable[ast.stmt]) -> list[str]:
    """The shipped statements' imports of a module of the course that the kit does not carry: a module of the
    reference's own folder (the kit ships the support folder's modules, which students have, and nothing else of
    the course) would fail the student's check at its start."""
    path: Path = rubric.reference
    support = rubric.support if rubric.support is not None and rubric.support.is_dir() else None
    problems = []
    for node in statements:
        if isinstance(node, ast.Import):
            tops = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops = [node.module.split(".")[0]]
        else:
            continue
        for top in tops:
            own = (path.parent / f"{top}.py").is_file() or (path.parent / top / "__init__.py").is_file()
            shipped = support is not None and any((support / f"{top}{end}").is_file() for end in (".py", ".ipynb"))
            if own and not shipped:
                problems.append(f"{path}:{node.lineno}: a public check needs '{top}', a module of the reference's own "
                                f"folder, which a student's kit does not carry (it carries the support folder's "
                                f"modules): move it into the support folder, or what the check uses into the "
                                f"reference")
    return problems


def public_module(code: str, support: Mapping[str, str] | None = None,
                  name: str = "course_public_checks") -> ModuleType:
    """The kit's public code as a module of its own: nothing of the reference, only what was shipped, with the
    kit's support modules (sources by name, which students have too) to import: `from rules import LOADS` at its
    top raised ModuleNotFoundError, a traceback at the start of every self-check. They are imported through the
    module's own `__import__`, kept out of sys.modules (a student's module of that name is not theirs)."""
    sources = dict(support or {})
    loaded: dict[str, ModuleType] = {}

    def import_(wanted: str, globals: dict[str, Any] | None = None, locals: Any = None,
                fromlist: Sequence[str] | None = (), level: int = 0) -> ModuleType:
        top = wanted.partition(".")[0]
        if level or top not in sources:
            return builtins.__import__(wanted, globals, locals, fromlist or (), level)
        if top not in loaded:
            course = ModuleType(top)
            course.__file__ = f"<kit support {top}>"
            course.__dict__["__builtins__"] = own
            loaded[top] = course
            exec(compile(sources[top], course.__file__, "exec"), course.__dict__)  # noqa: S102 - shipped course code
        return loaded[top]

    own = {**vars(builtins), "__import__": import_}
    module = ModuleType(name)
    module.__dict__["__builtins__"] = own
    exec(compile(code, f"<kit {name}>", "exec"), module.__dict__)  # noqa: S102 - the course's published code
    return module
