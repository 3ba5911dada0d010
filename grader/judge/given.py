"""The code the assignment's template gives (the rubric's `given`: AIMA's Problem and Node), standing in where a
notebook has none of its own.

Why: cases build objects from given classes (`EightPuzzle(state).h1(Node(state))`). A notebook that imports
them from a library the grading machine lacks (`from search import Problem, Node`, AIMA's own module) or
dropped the given cell got 0 for h1 and h2 although they are right: a TA runs them with any Node. The
reference's definition of a given name is put first in the child's module when the notebook does not bind the
name itself, or binds it only by an import: a failed import leaves a bound name as it is (runtime's stand-ins
bind only free names), and the notebook's own later definition replaces it as in Jupyter. A given name is never
a graded one (plan validation), so no answer of the course reaches the child and no wrong notebook gains: the
graded functions are still the notebook's own.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from dataclasses import replace
from types import ModuleType
from typing import Any

from grader.extract.source import Extracted, Statement
from grader.intake.warning import GraderWarning, Kind
from grader.rubric.schema import Rubric

LABEL = "the course's given code"
_BUILTINS = frozenset(dir(builtins))


def source_of(reference: ModuleType, name: str) -> str | None:
    """The reference's definition of a given class or function, as a top-level statement (None: not one)."""
    value = getattr(reference, name, None)
    if not (inspect.isclass(value) or inspect.isfunction(value)) or getattr(value, "__name__", "") != name:
        return None
    try:
        return textwrap.dedent(inspect.getsource(value))
    except (OSError, TypeError):
        return None


def free_names(source: str) -> frozenset[str]:
    """The names a definition reads that it does not bind itself, builtins left out: what it needs around it."""
    tree = ast.parse(source)
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return frozenset(read - bound - _BUILTINS)


def problems(rubric: Rubric, reference: ModuleType) -> list[str]:
    """What is wrong with the rubric's `given` names against the reference, one sentence each."""
    found = []
    graded = {name.split(".")[0] for exercise in rubric.exercises for name in exercise.names}
    for name in rubric.given:
        source = source_of(reference, name)
        if name in graded:
            found.append(f"given '{name}' is graded: the reference's would stand in for the notebook's answer")
        elif source is None:
            found.append(f"given '{name}' is not a class or function defined in {rubric.reference.name}")
        elif needs := sorted(free_names(source) - set(rubric.given)):
            found.append(f"given '{name}' reads {', '.join(needs)}, which is not given: it cannot stand alone")
    return found


def with_given(rubric: Rubric, reference: ModuleType, extracted: Extracted,
               sources: dict[str, str | None] | None = None) -> tuple[Extracted, tuple[GraderWarning, ...]]:
    """`extracted` with the reference's definition of each given name the notebook does not define (or only
    imports) put first, and the warning that says so; as it was when the notebook defines them all."""
    absent = [name for name in rubric.given if (d := extracted.definitions.get(name)) is None or d.kind == "import"]
    if not absent:
        return extracted, ()
    sources = sources if sources is not None else {name: source_of(reference, name) for name in absent}
    statements = []
    for name in absent:
        source = sources.get(name)
        if source:
            kind = "class" if isinstance(ast.parse(source).body[0], ast.ClassDef) else "def"
            statements.append(Statement(source, -1, 1, f"{LABEL} ({name})", kind, (name,),
                                        why=f"{name} is given by the template and the notebook has none"))
    if not statements:
        return extracted, ()
    names = [s.names[0] for s in statements]
    shown = ", ".join(names)
    warning = GraderWarning(Kind.GIVEN, f"the notebook does not define {shown}, which the assignment gives: the "
                                        f"course's own {shown} stood in for it (an import of "
                                        f"{'it' if len(names) == 1 else 'them'} from a module the grader lacks "
                                        f"counts as none)", subject=shown)
    return replace(extracted, statements=(*statements, *extracted.statements)), (warning,)


def sources(rubric: Rubric, reference: ModuleType) -> dict[str, Any]:
    """Each given name's source (None where it has none), for a plan's memo."""
    return {name: source_of(reference, name) for name in rubric.given}
