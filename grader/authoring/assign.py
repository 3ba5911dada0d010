"""`grader assign MASTER.ipynb`: one instructor notebook becomes the student template, the reference module and
the rubric, so the three never drift apart.

The master notebook's cells, in order (a cell's first line says what it is, read loosely, or a tag does):

- a raw cell starting with `# rubric`: the rubric's top-level keys in YAML (`assignment`, `title`, `fixtures`,
  `limits`, ...); `reference`, `template`, `support` and `submissions` are filled in;
- code cells: in the template and in the reference. Lines between `# BEGIN SOLUTION` and `# END SOLUTION` (or
  a whole cell tagged `solution`) are the solution: kept in the reference, replaced in the template by a stub
  that `grader validate` recognises. A definition wholly inside a region becomes its signature and docstring,
  in the master's own text, then `...`; a region inside a body becomes `...` (a constant becomes `None`);
- code cells starting with `# REFERENCE ONLY`: the reference only (known mistakes, generators, check
  functions); cells starting with `# TEMPLATE ONLY`: the template only (demo calls);
- raw (or markdown) cells starting with `# tests`: one exercise each, in YAML (`cases`, `points`, `mistakes`,
  `check`, ...). Its `id` defaults to the last solution function or constant defined above the cell;
- other markdown and raw cells: the template only.

Every solution gets an exercise: its test cell, or a skeleton (`cases:` left for the author, which validate
reports). Outputs are deterministic: the same master gives the same bytes. What the author cannot have meant
is refused at the master's cell and line (a marker that is not one, a tests cell that is not one exercise);
what they may not have meant is a note (a demo call that would run whenever the reference loads).
"""

from __future__ import annotations

import ast
import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import yaml

from grader.rubric.schema import RubricError, suggest
from grader.rubric.yamlmarks import construct_timestamp

# `# BEGIN SOLUTION` as Otter writes it, `### BEGIN SOLUTION` as nbgrader does; any other comment that names a
# solution region is refused, since a marker not recognised would hand the solution to students.
BEGIN = re.compile(r"^\s*#+\s*BEGIN SOLUTION\s*$", re.IGNORECASE)
END = re.compile(r"^\s*#+\s*END SOLUTION\s*$", re.IGNORECASE)
_LOOKS_LIKE_MARKER = re.compile(r"#.*\b(BEGIN|END)[\s_-]*SOL[UTION]+S?\b", re.IGNORECASE)   # SOLUTON too
_MAGIC = re.compile(r"^\s*[%!]")


class AssignError(RubricError):
    """A master notebook that cannot be split; the message names the file and the cell."""

    def __init__(self, message: str):
        super().__init__([message])


@dataclass(frozen=True)
class Assignment:
    """What a master notebook produces, as text, before anything is written."""

    name: str                      # the assignment id
    module: str                    # the reference module's name
    template: str                  # the template notebook (JSON text)
    reference: str                 # the reference module (Python source)
    rubric: str                    # the rubric (YAML text)
    exercises: tuple[str, ...] = ()
    skeletons: tuple[str, ...] = ()   # exercises with no test cell yet
    notes: tuple[str, ...] = ()       # what the author may not have meant (a demo call that runs at import)
    rubric_cells: tuple[tuple[int, int, str], ...] = ()   # (first, last line of the rubric, the master's cell)
    master: str = ""                  # the master notebook's path, as given: where edits belong


@dataclass
class _Parts:
    template_cells: list[Any] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)
    header: str = ""
    header_where: str = ""
    tests: list[tuple[str | None, str, str]] = field(default_factory=list)   # (id, yaml text, where)
    functions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# A cell's first line says what it is for; spelt loosely (`# Reference-only:`, `## TESTS`), since a marker that
# was not recognised would put hidden cases or known mistakes into the students' template.
# The letters of a marker line -> the kind of cell it names, and the marker as the README writes it.
_MARKERS = {"rubric": ("rubric", "# rubric"), "tests": ("tests", "# tests"),
            "referenceonly": ("reference", "# REFERENCE ONLY"), "templateonly": ("template", "# TEMPLATE ONLY")}


def _first_line(source: str) -> tuple[int, str]:
    """A cell's first line that is not blank: its number (from 1) and its text stripped; (0, "") for none."""
    return next(((number, line.strip()) for number, line in enumerate(source.splitlines(), 1) if line.strip()),
                (0, ""))


def _marker_letters(source: str) -> str | None:
    """The letters of a cell's first line when it is a comment (what a marker is matched on), else None."""
    first = _first_line(source)[1]
    return re.sub(r"[^a-z]", "", first.lower()) if first.startswith("#") else None


def _marker(source: str) -> str | None:
    """The kind a cell's first line names (`# rubric`, `# tests`, `# REFERENCE ONLY`, `# TEMPLATE ONLY`), if any."""
    letters = _marker_letters(source)
    return _MARKERS[letters][0] if letters in _MARKERS else None


def _near_marker(cell: Any) -> str | None:
    """The marker a cell's first line misspells (`# REFERENCES ONLY`, `# test`, `# rubrc`), if it is close to one
    that would change where the cell goes: unrecognised, the cell would go to the template, hidden cases, known
    mistakes and generators with it."""
    letters = _marker_letters(cell.source)
    tagged = {"rubric", "tests", "reference", "template", "solution"} & set(cell.get("metadata", {}).get("tags", ()))
    if tagged or letters is None or letters in _MARKERS:
        return None
    words = list(_MARKERS) if cell.cell_type == "code" else ["rubric", "tests"]
    close = difflib.get_close_matches(letters, words, n=1, cutoff=0.8)
    return _MARKERS[close[0]][1] if close else None


def _kind(cell: Any) -> str:
    tags = set(cell.get("metadata", {}).get("tags", ()))
    for tag in ("rubric", "tests"):
        if tag in tags:
            return tag
    marker = _marker(cell.source)
    if cell.cell_type != "code":       # a markdown cell saying `# tests` is read as one, never shown to students
        return marker if marker in ("rubric", "tests") else cell.cell_type
    for tag in ("reference", "template", "solution"):
        if tag in tags:
            return tag
    return marker or "code"


def _without_marker(source: str) -> str:
    """A cell's source without its marker line."""
    if _marker(source) is None:
        return source
    return "\n".join(source.splitlines()[_first_line(source)[0]:])


def _regions(lines: list[str], where: str) -> list[tuple[int, int]]:
    """(first, last) line indexes of each solution region, markers included."""
    regions, start = [], None
    for index, line in enumerate(lines):
        if _LOOKS_LIKE_MARKER.search(line) and not (BEGIN.match(line) or END.match(line)):
            raise AssignError(f"{where}, line {index + 1}: {line.strip()!r} is not a solution marker: write "
                              f"'# BEGIN SOLUTION' or '# END SOLUTION' alone on its line")
        if BEGIN.match(line):
            if start is not None:
                raise AssignError(f"{where}, line {index + 1}: BEGIN SOLUTION inside another solution region")
            start = index
        elif END.match(line):
            if start is None:
                raise AssignError(f"{where}, line {index + 1}: END SOLUTION without BEGIN SOLUTION")
            regions.append((start, index))
            start = None
    if start is not None:
        raise AssignError(f"{where}, line {start + 1}: BEGIN SOLUTION is never ended")
    return regions


def _stub(node: ast.stmt, lines: list[str]) -> list[str]:
    """What a student gets for a definition that is all solution, in the master's own text (so its quotes,
    comments and line breaks stay the author's): the signature and docstring, then `...`; a class with each of
    its methods so; a constant `NAME = None`. Lines are 1-based in `lines`, at their columns in the cell."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        first = node.body[0]
        if first.lineno == node.lineno:      # `def f(): return 1`: no line of its own to keep
            stub = copy.deepcopy(node)
            docstring = ast.get_docstring(node, clean=False)
            stub.body = [*([ast.Expr(ast.Constant(docstring))] if docstring is not None else []),
                         ast.Expr(ast.Constant(...))]
            return [" " * node.col_offset + line for line in ast.unparse(ast.fix_missing_locations(stub)).splitlines()]
        if ast.get_docstring(node, clean=False) is not None:
            end = first.end_lineno or first.lineno
        else:   # the signature ends on the last line before the body that is not blank or a comment
            end = max(n for n in range(node.lineno, first.lineno)
                      if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#"))
        return [*lines[_start(node) - 1:end], " " * first.col_offset + "..."]
    if isinstance(node, ast.ClassDef):
        out, position = [], _start(node)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out += lines[position - 1:_start(item) - 1] + _stub(item, lines)
                position = (item.end_lineno or item.lineno) + 1
        return out + lines[position - 1:node.end_lineno]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [" " * node.col_offset + " = ".join(ast.unparse(t) for t in targets) + " = None"]
    return []


def _qualified(tree: ast.Module, function: ast.AST) -> str:
    """`name`, or `Class.name` for a method of a top-level class (what a rubric's `function` says)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(item is function for item in node.body):
            return f"{node.name}.{function.name}"   # type: ignore[attr-defined]
    return function.name   # type: ignore[attr-defined]


def _enclosing(tree: ast.Module, line: int) -> str:
    """The innermost function whose body holds a line ('' at top level), qualified by its class."""
    found, size = None, None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _start(node) < line <= node.end_lineno:
            span = node.end_lineno - _start(node)
            if size is None or span < size:
                found, size = node, span
    return _qualified(tree, found) if found is not None else ""


def _solution_cell(source: str, where: str, whole: bool) -> tuple[str, str, list[str]]:
    """(template source, reference source, names of the solution functions) of a code cell."""
    lines = source.splitlines()
    regions = [(-1, len(lines))] if whole else _regions(lines, where)
    kept = [line for index, line in enumerate(lines) if not any(index in (a, b) for a, b in regions)]
    reference = "\n".join(kept)
    code_lines = kept
    if not regions:
        return source, source, []
    try:   # magics and shell lines parse as comments, so line numbers stay those of the cell
        tree = ast.parse("\n".join("#" if _MAGIC.match(line) else line for line in kept))
    except SyntaxError as error:
        raise AssignError(f"{where}, line {error.lineno}: the solution does not parse: {error.msg}") from None
    # Map every line of the cell to its line in `reference` (markers removed) to find what each region holds.
    position, mapping = 0, {}
    for index in range(len(lines)):
        if any(index in (a, b) for a, b in regions):
            continue
        position += 1
        mapping[index] = position
    names: list[str] = []
    output: list[str] = []
    index = 0
    while index < len(lines):
        region = next(((a, b) for a, b in regions if a == index or (a == -1 and index == 0)), None)
        if region is None:
            output.append(lines[index])
            index += 1
            continue
        first, last = max(region[0] + 1, 0), min(region[1] - 1, len(lines) - 1)
        inside = {mapping[i] for i in range(first, last + 1) if i in mapping}
        whole_nodes = [node for node in _top_and_members(tree) if inside and
                       all(line in inside for line in range(_start(node), node.end_lineno + 1))]
        whole_nodes = [n for n in whole_nodes if not any(o is not n and _contains(o, n) for o in whole_nodes)]
        if whole_nodes:
            for node in whole_nodes:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.append(_qualified(tree, node))
                elif isinstance(node, ast.ClassDef):   # a whole class: each method students write is graded
                    names.extend(f"{node.name}.{item.name}" for item in node.body
                                 if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                                 and not item.name.startswith("__"))
                elif isinstance(node, ast.Assign) and node in tree.body:   # a graded constant
                    names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
                elif isinstance(node, ast.AnnAssign) and node in tree.body and isinstance(node.target, ast.Name):
                    names.append(node.target.id)
                output.extend(_stub(node, code_lines))
        else:
            indent = re.match(r"\s*", lines[region[0]] if region[0] >= 0 else "").group(0)
            output.append(f"{indent}...")
            if inside:
                names.append(_enclosing(tree, min(inside)))
        index = region[1] + 1 if region[0] >= 0 else len(lines)
    return "\n".join(output), reference, [n for n in names if n]


def _start(node: ast.AST) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return outer is not inner and any(n is inner for n in ast.walk(outer))


def _top_and_members(tree: ast.Module) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for node in tree.body:
        found.append(node)
        if isinstance(node, ast.ClassDef):
            found.extend(node.body)
    return found


def _reference_source(source: str) -> str:
    """A code cell as reference code: IPython magics and shell lines out (the reference is imported, not run in
    Jupyter)."""
    return "\n".join(line for line in source.splitlines() if not _MAGIC.match(line)).strip("\n")


def split(master: Path) -> _Parts:
    try:
        notebook = nbformat.read(str(master), as_version=4)
    except Exception as error:  # noqa: BLE001 - any unreadable master is one clear line
        raise AssignError(f"{master}: not a readable notebook: {error}") from None
    parts = _Parts()
    for number, cell in enumerate(notebook.cells, start=1):
        where = f"{master}: cell {number}"
        meant = _near_marker(cell)
        if meant is not None:
            line, first = _first_line(cell.source)
            raise AssignError(f"{where}, line {line}: {first!r} is not a cell marker: write {meant!r} (or change the "
                              f"line so it reads as no marker at all)")
        kind = _kind(cell)
        if kind == "rubric":
            parts.header = _without_marker(cell.source)
            parts.header_where = where
        elif kind == "tests":
            text = _without_marker(cell.source)
            # A code cell read as tests may be the author's own Python checks under a `# Tests` comment.
            aside = ("; a code cell whose first line is '# tests' is read as the rubric's YAML: start a cell of "
                     "your own Python checks with another comment") if cell.cell_type == "code" else ""
            parts.tests.append((_tests_id(text, where, parts.functions, aside), text, where))
        elif kind in ("code", "solution"):
            template, reference, names = _solution_cell(cell.source, where, kind == "solution")
            parts.functions.extend(name for name in names if name not in parts.functions)
            parts.template_cells.append(_template_cell(cell, template))
            if _reference_source(reference).strip():      # a cell of magics only has nothing for the reference
                parts.reference.append(_reference_source(reference))
                parts.notes.extend(_runs_at_import(reference, where))
        elif kind == "reference":
            parts.reference.append(_reference_source(_without_marker(cell.source)))
        elif kind == "template":
            parts.template_cells.append(_template_cell(cell, _without_marker(cell.source)))
        else:                                              # markdown and raw cells: the students' text
            parts.template_cells.append(_template_cell(cell, cell.source))
    if not parts.header.strip():
        raise AssignError(f"{master}: no rubric cell (a raw cell starting with '# rubric' holding 'assignment: ...')")
    return parts


_YAML_HINT = ("YAML: indentation counts, the keys of one case lining up after its '- '; in a {...} mapping a value "
              "holding [ ] , or : is quoted, as in goal: \"args[1]\"")


class _LooseLoader(yaml.SafeLoader):
    """YAML as one tests cell holds it: an alias of an anchor set in an earlier cell (`hints: *move_hints`) is
    resolved in the whole rubric, so here it only has to parse."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent) and self.peek_event().anchor not in self.anchors:
            event = self.get_event()
            return yaml.ScalarNode("tag:yaml.org,2002:null", "", event.start_mark, event.end_mark)
        return super().compose_node(parent, index)


_LooseLoader.add_constructor("tag:yaml.org,2002:timestamp", construct_timestamp)


def _tests_id(text: str, where: str, solutions: list[str], aside: str = "") -> str:
    """The exercise a tests cell is for: its `id:`, else the last solution defined above it. A cell that is not
    one exercise in YAML is named here, at its own line, rather than later at a line of the generated rubric."""
    try:
        data = yaml.load(text, Loader=_LooseLoader)      # a SafeLoader: plain data only
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f", line {mark.line + 2}" if mark is not None else ""   # + the marker line, 1-based
        raise AssignError(f"{where}{line}: the tests cell is not valid YAML: {error.problem or error.context} "
                          f"({_YAML_HINT}){aside}") from None
    except yaml.YAMLError as error:
        raise AssignError(f"{where}: the tests cell is not valid YAML: {error}{aside}") from None
    if not isinstance(data, dict):
        raise AssignError(f"{where}: a tests cell holds one exercise as 'key: value' lines (points:, cases:, "
                          f"mistakes:, ...), not {type(data).__name__ if data is not None else 'nothing'}{aside}")
    if data.get("id") is not None:
        return str(data["id"])
    if not solutions:
        raise AssignError(f"{where}: a tests cell needs an 'id:' line, or a solution (a function or constant "
                          f"between '# BEGIN SOLUTION' and '# END SOLUTION') in a cell above it")
    return solutions[-1]


def _runs_at_import(reference: str, where: str) -> list[str]:
    """Top-level calls of a cell shared by template and reference (a demo such as `solve(Start)`): they run each
    time the grader loads the reference, which is rarely what the author meant."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return []        # validate reports the reference's syntax
    return [f"{where}: `{ast.unparse(node).splitlines()[0][:60]}` runs each time the grader loads the reference "
            f"(a cell without marker goes to the reference too): if it is a demo for students, start the cell with "
            f"'# TEMPLATE ONLY'" for node in tree.body
            if isinstance(node, ast.Expr) and any(isinstance(n, ast.Call) for n in ast.walk(node))]


def _template_cell(cell: Any, source: str) -> dict[str, Any]:
    """A template cell: the master's id and type, no outputs, no master-only tags."""
    metadata = {k: v for k, v in cell.get("metadata", {}).items() if k != "tags"}
    tags = [t for t in cell.get("metadata", {}).get("tags", ()) if t not in ("solution", "template", "reference")]
    if tags:
        metadata["tags"] = tags
    out: dict[str, Any] = {"cell_type": cell.cell_type, "id": cell.get("id"), "metadata": metadata,
                           "source": source.strip("\n")}
    if cell.cell_type == "code":
        out.update(execution_count=None, outputs=[])
    return out


def _header_value(header: str, key: str) -> str | None:
    found = re.search(rf"^{key}:\s*(.+?)\s*$", header, re.MULTILINE)
    return found.group(1).strip("'\"") if found else None


def build(master: str | Path, course: str | Path | None = None) -> tuple[Assignment, Path]:
    """The outputs of a master notebook, and the course folder they belong in."""
    master = Path(master)
    parts = split(master)
    name = _header_value(parts.header, "assignment")
    if not name:
        keys = re.findall(r"^(\w+)\s*:", parts.header, re.MULTILINE)
        meant = next((f" ('{key}:' is there: did you mean 'assignment'?)" for key in keys
                      if suggest(key, ["assignment"])), "")
        raise AssignError(f"{parts.header_where or master}: the rubric cell has no 'assignment: <id>'{meant}")
    root = Path(course) if course is not None else _course_of(master)
    module = re.sub(r"\W", "_", name)
    folder = root / "assignments" / name
    _check_own_folder(master, folder, chosen=course is not None)
    relative = {"reference": f"../reference/{module}.py", "template": f"../assignments/{name}/template.ipynb"}
    for key in ("support", "submissions"):
        if (folder / key).is_dir():
            relative[key] = f"../assignments/{name}/{key}"
    # The paths assign knows go right after the assignment's id and title, where a hand-written rubric has them.
    header = parts.header.strip("\n").splitlines()
    after = max((i + 1 for i, line in enumerate(header) if re.match(r"(assignment|title):", line)), default=0)
    header[after:after] = [f"{key}: {value}" for key, value in relative.items()
                           if _header_value(parts.header, key) is None]
    lines = [f"# Generated by `grader assign` from {master.name}: edit the master notebook, not this file", *header]
    cells = [(2, len(lines), parts.header_where)]
    lines.append("\nexercises:")
    tested = {str(function) for function, _, _ in parts.tests} | {str(f).split(".")[-1] for f, _, _ in parts.tests}
    exercises, skeletons = [], []
    solutions = {*parts.functions, *(name.split(".")[-1] for name in parts.functions)}
    for function, text, where in parts.tests:
        body = text.strip("\n")
        exercise_id = str(function).split(".")[-1]
        if function not in solutions and not re.search(r"^function:", body, re.MULTILINE):
            close = difflib.get_close_matches(str(function), sorted(solutions), n=1)
            guess = f" (did you mean '{close[0]}'?)" if close else ""
            parts.notes.append(f"{where}: the tests cell is for '{function}', which no solution of the master "
                               f"defines{guess}; give it 'function: NAME' if it grades another name of the notebook")
        if not re.search(r"^id:", body, re.MULTILINE):
            # A method's exercise is named after the method and grades `Class.method`.
            added = [f"id: {exercise_id}"]
            if "." in str(function) and not re.search(r"^function:", body, re.MULTILINE):
                added.append(f"function: {function}")
            lines_of = body.splitlines()
            first = next((i for i, line in enumerate(lines_of) if line.strip() and not line.lstrip().startswith("#")),
                         len(lines_of))
            body = "\n".join([*lines_of[:first], *added, *lines_of[first:]])
        first = len("\n".join(lines).splitlines()) + 2     # after the blank line the entry starts with
        lines.append("\n" + _item(body))
        cells.append((first, len("\n".join(lines).splitlines()), where))
        exercises.append(exercise_id)
    for function in parts.functions:
        if function not in tested and function.split(".")[-1] not in tested:
            exercise_id = function.split(".")[-1]
            graded = f"\nfunction: {function}" if "." in function else ""
            lines.append("\n" + _item(f"id: {exercise_id}{graded}\n"
                               f"cases:   # write this exercise's cases in a '# tests' cell"))
            exercises.append(exercise_id)
            skeletons.append(exercise_id)
    template = _notebook_text(master, parts)
    # The template's cells as written, so that a rerun tells them from a hand edit (the template itself carries
    # nothing of assign's: it is what students get, and what they fill in).
    lines.append(f"\n{TEMPLATE_DIGEST} {_cells_digest(template)}")
    rubric = _stamped(lines[0], "\n".join(lines[1:]) + "\n")
    reference = _stamped(f'"""Reference of {name}, generated by `grader assign`',
                         f'from {master.name}: edit the master notebook, not this file."""\n\n'
                         + "\n\n\n".join(parts.reference) + "\n", end="")
    return (Assignment(name, module, template, reference, rubric, tuple(exercises), tuple(skeletons),
                       tuple(parts.notes), tuple(cells), str(master)), root)


def in_master(assignment: Assignment, rubric: Path, problem: str) -> str:
    """A problem validate names at a line of the generated rubric (`rubrics/x.yaml:17: ...`), with the master's
    cell that line came from: the author fixes the master, never the generated file."""
    match = re.match(rf"{re.escape(str(rubric))}:(\d+):", problem)
    if match is None:
        return problem
    line = int(match[1])
    where = next((where for first, last, where in assignment.rubric_cells if first <= line <= last), None)
    return f"{problem} [from {where}]" if where else problem


def _item(body: str) -> str:
    """A tests cell as one entry of `exercises:`; its leading comments stay above the entry."""
    lines = body.splitlines()
    lead = 0
    while lead < len(lines) - 1 and (not lines[lead].strip() or lines[lead].lstrip().startswith("#")):
        lead += 1
    comments = [f"  {line}" if line.strip() else "" for line in lines[:lead]]
    entry = lines[lead:]
    return "\n".join([*comments, f"  - {entry[0]}", *(f"    {line}" if line else "" for line in entry[1:])])


def _notebook_text(master: Path, parts: _Parts) -> str:
    source = json.loads(master.read_text(encoding="utf-8"))
    notebook = {"cells": parts.template_cells, "metadata": source.get("metadata", {}),
                "nbformat": 4, "nbformat_minor": max(5, int(source.get("nbformat_minor", 5)))}
    for index, cell in enumerate(notebook["cells"]):
        if not cell.get("id"):
            cell["id"] = f"cell-{index:03d}"       # deterministic, unlike nbformat's random ids
    # Written as Jupyter writes it (sources as lists of lines), so an instructor's save of the template and
    # build scripts that fill it in with nbformat produce the same bytes.
    return nbformat.writes(nbformat.from_dict(notebook)) + "\n"


def _check_own_folder(master: Path, folder: Path, chosen: bool = False) -> None:
    """A master in another assignment folder than its id's (`assignments/lab3/master.ipynb` with `assignment:
    sliding-3x3`), beside a support or submissions folder: assign wrote the template into assignments/sliding-3x3/
    and looked for `support` there, so the master's own support folder was silently left out and validate failed
    on names only it defines ("add 'search' to fixtures"). Refused, naming both folders; and so is a master outside
    any assignments/ folder beside its support, unless `chosen` (--course names the course to build into)."""
    own = master.resolve().parent
    if own == folder.resolve():
        return
    beside = [key for key in ("support", "submissions") if (own / key).is_dir()]
    if not beside:
        return
    said = (f"{master}: its rubric cell says 'assignment: {folder.name}', so assign writes the template to {folder} "
            f"and takes support and submissions from there, but the {' and '.join(beside)} "
            f"folder{'s are' if len(beside) > 1 else ' is'} beside the master in {own}")
    if own.parent == folder.resolve().parent:
        raise AssignError(f"{said}: move the master's folder to {folder}, or make its 'assignment:' {own.name}")
    if chosen:    # --course names another course (the bundled master built into a copy): its folders are that one's
        return
    # Elsewhere (a master outside any assignments/ folder): its support folder was silently left out.
    raise AssignError(f"{said}: put the master with its {' and '.join(beside)} in assignments/{folder.name}/ of the "
                      f"course folder and run grader assign assignments/{folder.name}/master.ipynb there")


def _course_of(master: Path) -> Path:
    """The course folder: the nearest folder above the master with `rubrics/` in it; in a course that has none yet,
    the folder holding `assignments/` when the master is in `assignments/<name>/` (the layout the README gives:
    the master's own folder was taken, and a first `grader assign assignments/lab/master.ipynb` wrote
    assignments/lab/assignments/lab/template.ipynb and left out the support folder beside the master); else the
    master's own folder."""
    resolved = master.resolve()
    for folder in resolved.parents:
        if (folder / "rubrics").is_dir():
            return folder
    if resolved.parent.parent.name == "assignments":
        return resolved.parent.parent.parent
    return resolved.parent


def write(assignment: Assignment, root: Path, *, force: bool = False) -> dict[str, Path]:
    """Write the three outputs (only when their bytes change, so a rerun touches nothing). A rubric or reference
    that assign did not write (a hand-written one, before the course moved to a master), or one it wrote and
    someone edited since, and a template whose cells were so edited (_check_template), are never replaced unless
    `force`: the author would lose it."""
    targets = {"template": root / "assignments" / assignment.name / "template.ipynb",
               "reference": root / "reference" / f"{assignment.module}.py",
               "rubric": root / "rubrics" / f"{assignment.name}.yaml"}
    texts = {"template": assignment.template, "reference": assignment.reference, "rubric": assignment.rubric}
    if not force:
        for key in ("rubric", "reference"):
            path = targets[key]
            if not path.is_file():
                continue
            if "generated by `grader assign`" not in _first_lines(path):
                raise AssignError(f"{path}: this {key} was not written by grader assign (its first line does not "
                                  f"say so), and assign would replace it: move it away, or give --force")
            text = path.read_text(encoding="utf-8", errors="replace")
            edited = hand_edited(text)
            if edited and text != texts[key]:
                raise AssignError(f"{path}: this {key} was edited by hand since grader assign wrote it (its lines "
                                  f"no longer match the digest on its first line), and assign would replace it, "
                                  f"losing the edits: make them in {assignment.master} and run assign again, or "
                                  f"give --force to replace the file")
            if edited is None and text != texts[key]:
                raise AssignError(f"{path}: this {key} was written by an older grader assign that kept no digest, so "
                                  f"a hand edit cannot be told from a change of the master, and assign would "
                                  f"replace it: compare it with {assignment.master}, then give --force")
        _check_template(targets["template"], targets["rubric"], assignment)
    for key, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != texts[key]:
            path.write_text(texts[key], encoding="utf-8")
    return targets


def _check_template(path: Path, rubric: Path, assignment: Assignment) -> None:
    """Refuse to replace a template whose cells were edited by hand since assign wrote them: the rubric it wrote
    with them keeps their digest (TEMPLATE_DIGEST). A template whose cells are what the master makes now is
    replaced freely (a save in Jupyter changes its metadata only); one with no digest to compare (an older assign,
    or a template written by hand) only when its cells are those."""
    if not path.is_file():
        return
    try:
        text = path.read_text(encoding="utf-8")
        cells = _cells_digest(text)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise AssignError(f"{path}: this template cannot be read as a notebook ({error}), and assign would replace "
                          f"it: move it away, or give --force") from None
    if cells == _cells_digest(assignment.template):
        return
    written = _template_digest(rubric)
    if written is None:
        raise AssignError(f"{path}: this template's cells differ from what {assignment.master} makes, and no digest "
                          f"says whether assign wrote them (the rubric beside it keeps none: a hand-written "
                          f"template, or an older grader assign), so assign would replace them: compare it with "
                          f"{assignment.master}, then give --force")
    if written != cells:
        raise AssignError(f"{path}: this template was edited by hand since grader assign wrote it (its cells no "
                          f"longer match the digest in {rubric}), and assign would replace it, losing the edits: "
                          f"make them in {assignment.master} and run assign again, or give --force to replace "
                          f"the file")


# The last line of a generated rubric: the digest of the template's cells as assign wrote them.
TEMPLATE_DIGEST = "# template cells (a rerun of assign keeps a hand edit of them):"
_TEMPLATE_DIGEST = re.compile(rf"^{re.escape(TEMPLATE_DIGEST)} ([0-9a-f]{{16}})$", re.MULTILINE)


def _cells_digest(template: str) -> str:
    """The digest of a notebook's cells, their kinds and sources: what a hand edit changes, and a save in Jupyter
    (metadata, a source split into lines) does not."""
    cells = nbformat.reads(template, as_version=4).cells
    return _digest(json.dumps([[cell.cell_type, cell.source] for cell in cells]))


def _template_digest(rubric: Path) -> str | None:
    """The template digest a generated rubric keeps; None when it keeps none (or cannot be read)."""
    try:
        found = _TEMPLATE_DIGEST.search(rubric.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return found.group(1) if found else None


DIGEST = re.compile(r" \(digest of the lines below: ([0-9a-f]{16})\)")


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def _stamped(first: str, body: str, end: str = ".") -> str:
    """A generated file whose first line carries the digest of the lines below it, so that a rerun of assign
    tells a file it wrote (replaced freely) from one edited by hand since (kept unless --force)."""
    return f"{first} (digest of the lines below: {_digest(body)}){end}\n{body}"


def hand_edited(text: str) -> bool | None:
    """Whether a generated file's lines below its first differ from the digest its first line gives; None when
    it gives none (written before assign kept digests)."""
    first, _, body = text.partition("\n")
    found = DIGEST.search(first)
    return None if found is None else found.group(1) != _digest(body)


def _first_lines(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readline() for _ in range(2)).lower()
    except OSError:
        return ""
