"""The code the assignment gives (the rubric's `given`: AIMA's Problem and Node, the 3x3 puzzle's search), standing
in where a notebook has none of its own.

Why: cases build objects from given classes (`EightPuzzle(state).h1(Node(state))`) and call given functions
(`search(nextStates, Start, Goal)`). A notebook that imports them from a library the grading machine lacks
(`from search import Problem, Node`, AIMA's own module) or lost the given cell or its `%run` line got 0 for
h1 and h2, or for solve, although its own code is right: a TA runs it with the given code. The course's
definition of a given name (a support module's, as `%run` gives it, else the reference's) is put first in the
child's module when the notebook neither binds the name itself nor %runs a support module that does, or binds
it only by an import: a failed import leaves a bound name as it is (the runtime's stand-ins bind only free
names), and the notebook's own later definition replaces it as in Jupyter. A given name is never a graded one
(plan validation), so no answer of the course reaches the child and no wrong notebook gains: the graded
functions are still the notebook's own.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType, ModuleType

from grader.extract.source import Extracted, Statement, extract
from grader.intake.notebook import NotebookError, read_notebook
from grader.intake.warning import GraderWarning, Kind
from grader.rubric.schema import Rubric, data_files, support_files
from grader.syntax.analysis import statement_reads

LABEL = "the course's given code"
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Given:
    """The course's code for the rubric's given names, and the names each support module binds (a notebook that
    %runs one has them)."""

    sources: dict[str, str | None]            # given name -> its definition (None: the course has none)
    by_support: dict[str, frozenset[str]]     # support module stem -> the top-level names it defines


def support_texts(folder: Path | None, skip_unreadable: bool = False) -> dict[str, str]:
    """Each support module's code by stem, as the child runs it (a support notebook extracted like a submission):
    the top-level modules of schema.support_files, the list the rubric hash covers (a module the hash left out,
    a link, went stale when edited). An unreadable module raises, unless `skip_unreadable` (the given names'
    lookup: grading reads the folder again and says what is wrong there)."""
    texts: dict[str, str] = {}
    if folder is None or not folder.is_dir():
        return texts
    for path in support_files(folder):
        if path.parent != folder:
            continue
        try:
            if path.suffix == ".py":
                texts[path.stem] = path.read_text(encoding="utf-8")
            elif path.suffix == ".ipynb" and path.stem not in texts:
                texts[path.stem] = extract(read_notebook(path)).source()
        except (OSError, UnicodeDecodeError, NotebookError):
            if not skip_unreadable:
                raise
    return texts


_DATA: dict[tuple[str, str], Mapping[str, bytes]] = {}   # (rubric's path, its hash) -> its data files, read once


def support_data(rubric: Rubric) -> Mapping[str, bytes]:
    """The support folder's data files by their path there (schema.data_files: never a module, the rubric or the
    reference), as every sandbox puts them in the student's working folder; read once per rubric hash (which
    covers every file of the folder), so each student gets the same bytes. Empty without a support folder."""
    if rubric.support is None or not rubric.support.is_dir():
        return MappingProxyType({})
    key = (str(rubric.path), rubric.sha256)
    if key not in _DATA:
        files = data_files(rubric.support, (rubric.path, rubric.reference))
        _DATA[key] = MappingProxyType({path.relative_to(rubric.support).as_posix(): path.read_bytes()
                                       for path in files})
    return _DATA[key]


def visible_data(data: Mapping[str, bytes], support: Path, hidden: Sequence[str | Path]) -> Mapping[str, bytes]:
    """`data` without the files under a folder hidden from the child (hidden_folders: results, caches, submissions)
    that lies inside the support folder: a TA's --out or --cache put there would otherwise reach every student's
    code as data files (other students' results, expected values), as bytes that no mount hides."""
    root = support.resolve()
    resolved = [Path(folder).resolve() for folder in hidden]   # the kit's --cache may be relative (`support/cache`)
    inner = [folder for folder in resolved if folder != root and folder.is_relative_to(root)]
    if not inner or not data:
        return data
    return MappingProxyType({name: content for name, content in data.items()
                             if not any((root / name).is_relative_to(folder) for folder in inner)})


def definitions(source: str) -> dict[str, str]:
    """Each top-level def or class of a module's code (the last of a name), with its decorators."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    lines = source.splitlines(keepends=True)
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            found[node.name] = "".join(lines[start:node.end_lineno or node.lineno])
    return found


def _of_reference(reference: ModuleType, name: str) -> str | None:
    value = getattr(reference, name, None)
    if not (inspect.isclass(value) or inspect.isfunction(value)) or getattr(value, "__name__", "") != name:
        return None
    try:
        return textwrap.dedent(inspect.getsource(value))
    except (OSError, TypeError):
        return None


def course_code(rubric: Rubric, reference: ModuleType) -> Given:
    """The course's definition of each given name: a support module's (the course's own code, which `%run`
    gives the notebook) before the reference's (which may be written anew, as the 3x3 reference's search is)."""
    support = {stem: definitions(text) for stem, text in support_texts(rubric.support, skip_unreadable=True).items()}
    sources: dict[str, str | None] = {}
    for name in rubric.given:
        found = next((defined[name] for defined in support.values() if name in defined), None)
        sources[name] = found if found is not None else _of_reference(reference, name)
    return Given(sources, {stem: frozenset(defined) for stem, defined in support.items()})


def free_names(source: str) -> frozenset[str]:
    """The module-level names a definition reads that it does not bind itself, builtins left out: what it needs
    around it. Read by scope (syntax.analysis), as Python resolves them: a nested def's local or a comprehension's
    variable binds only there, so the same name read elsewhere in the definition is still needed (a walk that
    counted every binding anywhere passed a given that fails at load). Annotations are not reads (the child does
    not evaluate them)."""
    tree = ast.parse(source)
    reads: set[str] = set()
    bound: set[str] = set()
    for statement in tree.body:
        reads |= statement_reads(statement)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(statement.name)
    return frozenset(reads - bound - _BUILTINS)


def problems(rubric: Rubric, reference: ModuleType, code: Given | None) -> list[str]:
    """What is wrong with the rubric's `given` names against the course's code (`code`, course_code's; None when
    the rubric gives none), one sentence each."""
    found = []
    graded = {name.split(".")[0] for exercise in rubric.exercises for name in exercise.names}
    # An accepted answer under another name: a variant's function, or the graded one's object bound to a second
    # name (`astar_search = my_astar`): given, its code would reach the child for a notebook to call.
    accepted = {variant.reference: exercise.id for exercise in rubric.exercises for variant in exercise.variants}
    answers = {id(value): name for name in sorted(graded) if (value := getattr(reference, name, None)) is not None}
    sources = code.sources if code is not None else {}
    for name in rubric.given:
        source = sources.get(name)
        same = answers.get(id(getattr(reference, name, None))) if hasattr(reference, name) else None
        if name in graded:
            found.append(f"given '{name}' is graded: the course's would stand in for the notebook's answer")
        elif same is not None:
            found.append(f"given '{name}' is the reference's {same}, which is graded: its answer would reach the "
                         "notebook")
        elif name in accepted:
            found.append(f"given '{name}' is an accepted answer of exercise '{accepted[name]}' (a variant): a "
                         "notebook could call it for the points")
        elif source is None:
            found.append(f"given '{name}' is not a class or function of {rubric.reference.name} or a support module")
        elif needs := sorted(free_names(source) - set(rubric.given)):
            found.append(f"given '{name}' reads {', '.join(needs)}, which is not given: it cannot stand alone")
    return found


def with_given(rubric: Rubric, extracted: Extracted,
               given: Given) -> tuple[Extracted, tuple[GraderWarning, ...]]:
    """`extracted` with the course's definition put first of each given name the notebook neither defines nor gets
    from a support module it %runs (an import counts as none: from a module that is there, the import runs later
    and replaces what is put first), and the warning that says so; as it was when nothing is put first."""
    if not rubric.given:
        return extracted, ()
    ran = {name for stem in extracted.runs for name in given.by_support.get(stem, ())}
    statements = []
    for name in rubric.given:
        definition = extracted.definitions.get(name)
        source = given.sources.get(name)
        if source and name not in ran and (definition is None or definition.kind == "import"):
            kind = "class" if isinstance(ast.parse(source).body[0], ast.ClassDef) else "def"
            statements.append(Statement(source, -1, 1, f"{LABEL} ({name})", kind, (name,),
                                        why=f"{name} is given by the course and the notebook has none"))
    if not statements:
        return extracted, ()
    names = [statement.names[0] for statement in statements]
    shown = ", ".join(names)
    warning = GraderWarning(Kind.GIVEN, f"the notebook does not define {shown}, which the assignment gives (an "
                                        f"import from a module the grader lacks counts as none): the course's own "
                                        f"{shown} stood in", subject=shown)
    return replace(extracted, statements=(*statements, *extracted.statements)), (warning,)
