"""The package's layering, read from its imports (ast): each rule here fails the build when code breaks it.

Data flows one way, from a submission through extraction, the sandbox and the judge to the writers; a module
never reaches back up that flow, never into another module's private names, and the untrusted child side of
the sandbox holds nothing of the trusted side.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "grader"


@dataclass(frozen=True)
class Import:
    importer: str     # dotted module name, e.g. grader.judge.grading
    imported: str     # dotted module name, e.g. grader.run.batch
    names: tuple[str, ...]
    line: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk_runtime(node: ast.AST) -> Iterator[ast.AST]:
    """Every node, except what sits under `if TYPE_CHECKING:` (annotations only: never imported at run time)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking_only(child):
            yield from (n for other in child.orelse for n in (other, *_walk_runtime(other)))
            continue
        yield child
        yield from _walk_runtime(child)


def _resolve(importer: str, module: str | None, level: int, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports() -> list[Import]:
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _walk_runtime(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("grader"):
                        found.append(Import(name, alias.name, (), node.lineno))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, node.module, node.level, path.name == "__init__.py")
                if not target.startswith("grader"):
                    continue
                for alias in node.names:   # `from grader.sandbox import wire` imports the module grader.sandbox.wire
                    submodule = f"{target}.{alias.name}"
                    if submodule in MODULES:
                        found.append(Import(name, submodule, (), node.lineno))
                    else:
                        found.append(Import(name, target, (alias.name,), node.lineno))
    return found


IMPORTS = imports()


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for edge in IMPORTS:
        if edge.imported in MODULES and edge.imported != edge.importer and edge.imported != "grader":
            graph[edge.importer].add(edge.imported)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _where(edge: Import) -> str:
    return f"{MODULES[edge.importer].relative_to(PACKAGE.parent)}:{edge.line} imports {edge.imported}" + (
        f".{', '.join(edge.names)}" if edge.names else "")


def _matches(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


# The untrusted side: what the sandbox's child loads (as plain files) and runs beside the student's code.
CHILD = ("grader.sandbox.runtime", "grader.sandbox.pristine", "grader.sandbox.zygote", "grader.sandbox.confine",
         "grader.sandbox.wire", "grader.codec")
# Configuration: parsed once into frozen dataclasses; it knows no stage.
CONFIGURATION = ("grader.rubric",)
# Neutral ground any layer may use: pure functions over Python syntax and text, the value codec, the file writer.
NEUTRAL = ("grader.textsafe", "grader.incidents", "grader.files", "grader.syntax", "grader.codec", "grader.extras",
           "grader.kept")
# One submission's way through the pipeline, and the class-level layer that drives many of them.
SUBMISSION = ("grader.intake.notebook", "grader.extract", "grader.checks", "grader.plan", "grader.sandbox",
              "grader.judge", "grader.store.results")
CLASS = ("grader.run", "grader.intake.gather", "grader.store.gradebook", "grader.store.overrides",
         "grader.report.similarity", "grader.report.class_report", "grader.report.dashboard",
         "grader.report.csv_export", "grader.report.progress", "grader.authoring", "grader.report.class_outputs")
# The stages in the order data flows through them: a stage imports only those before it (and neutral ground).
FLOW = ("grader.intake", "grader.rubric", "grader.extract", "grader.checks", "grader.plan", "grader.sandbox",
        "grader.store", "grader.judge", "grader.report", "grader.kit", "grader.authoring", "grader.run")


def _stage(module: str) -> int | None:
    return next((n for n, stage in enumerate(FLOW) if _matches(module, (stage,))), None)


def test_the_package_has_no_import_cycle() -> None:
    assert _cycles(_edges()) == []


def test_the_sandbox_child_imports_nothing_of_the_trusted_side() -> None:
    broken = [_where(e) for e in IMPORTS if _matches(e.importer, CHILD) and not _matches(e.imported, CHILD)]
    assert broken == []


def test_no_module_imports_another_modules_private_names() -> None:
    broken = [_where(e) for e in IMPORTS if e.imported != e.importer
              and any(n.startswith("_") and not n.startswith("__") for n in e.names)]
    assert broken == []


def test_configuration_imports_no_stage() -> None:
    allowed = (*CONFIGURATION, *NEUTRAL)
    broken = [_where(e) for e in IMPORTS
              if _matches(e.importer, CONFIGURATION) and e.imported != "grader" and not _matches(e.imported, allowed)]
    assert broken == []


def test_one_submissions_stages_know_nothing_of_the_class() -> None:
    broken = [_where(e) for e in IMPORTS if _matches(e.importer, SUBMISSION) and _matches(e.imported, CLASS)]
    assert broken == []


def test_data_flows_one_way_through_the_stage_folders() -> None:
    broken = [_where(e) for e in IMPORTS
              if (a := _stage(e.importer)) is not None and (b := _stage(e.imported)) is not None and b > a]
    assert broken == []


def test_every_module_lives_in_a_stage_folder_or_is_neutral_ground() -> None:
    loose = [m for m in MODULES if _stage(m) is None and not _matches(m, NEUTRAL)
             and m not in ("grader", "grader.__main__", "grader.cli")]
    assert loose == []


def _module_assignments(name: str, source: str, label: str, package: bool = False) -> Iterator[str]:
    """`other.NAME = ...` (or +=, or setattr) where `other` is a grader module this module imported."""
    tree = ast.parse(source)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {alias.asname for alias in node.names if alias.name.startswith("grader") and alias.asname}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, node.module, node.level, package)
            bound |= {alias.asname or alias.name for alias in node.names if f"{target}.{alias.name}" in MODULES}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in bound:
                yield f"{label}:{node.lineno} sets {target.value.id}.{target.attr}"


def test_no_module_sets_another_modules_globals() -> None:
    """Hidden state between modules (a flag one module flips in another, as process.PREFETCH was): a choice
    travels as a parameter instead, and what a module caches lives on the object it caches for."""
    broken = [found for name, path in MODULES.items()
              for found in _module_assignments(name, path.read_text(encoding="utf-8"),
                                               str(path.relative_to(PACKAGE.parent)), path.name == "__init__.py")]
    assert broken == []
    flipped = "from grader.sandbox import process\nimport grader.report.console as view\n" \
              "def work():\n    process.PREFETCH = True\n    setattr(view, 'MARKS', {})\n    local = 1\n"
    assert list(_module_assignments("grader.run.executor", flipped, "x.py")) == [
        "x.py:4 sets process.PREFETCH", "x.py:5 sets view.?"]


def test_the_value_codec_is_neutral_ground_outside_the_sandbox() -> None:
    # Writers and checks use the codec; none of them reaches into the sandbox for it.
    assert "grader.codec" in MODULES and "grader.sandbox.codec" not in MODULES
    writers = [e for e in IMPORTS
               if _matches(e.importer, ("grader.report",)) and _matches(e.imported, ("grader.sandbox",))]
    assert [_where(e) for e in writers] == []


# Callers that grade one file reuse the pipeline's entry points: they name what they import from the stages,
# and never reach into extraction, the plan, the sandbox's parent or child, or the checks themselves.
PIPELINE_USERS = {
    "grader.run.autograder": {
        "grader": None, "grader.files": None, "grader.report.gradescope": None,
        "grader.rubric.schema": {"Rubric", "load_rubric", "withheld"},   # withheld: what data_files leaves out
        "grader.run.batch": {"grade_one", "choose_in_upload", "check_course"},
        "grader.sandbox.supervisor": {"temp_root"},      # this process's temp folder, for building the zip
        "grader.run.wheel": {"copy_tree", "grader_wheel", "left_out"},   # the grader's wheel, built or kept
    },
    "grader.kit.check": {
        "grader.judge.grading": {"empty_result", "grade_notebook", "hidden_folders", "defines_counter"},
        "grader.judge.options": {"Options"},
        "grader.intake.gather": {"choose_in_folder"},    # a student's folder: the notebook the runner would grade
        "grader.judge.scoring": {"total"}, "grader.kit.kit": None, "grader.intake.notebook": None,
        "grader.store.results": None,
    },
}


def test_the_gradescope_runner_and_the_kit_check_reuse_the_pipeline() -> None:
    broken = []
    for edge in IMPORTS:
        allowed = PIPELINE_USERS.get(edge.importer)
        if allowed is None:
            continue
        if edge.imported not in allowed:
            broken.append(_where(edge))
            continue
        names = allowed[edge.imported]
        if names is not None and not set(edge.names) <= names:
            broken.append(_where(edge))
    assert broken == []
    assert {e.imported for e in IMPORTS if e.importer == "grader.run.autograder"} >= {"grader.run.batch"}


def test_the_cli_opens_no_gradebook_itself() -> None:
    """The CLI is thin: what it reads from or writes to a gradebook is a library function of the store (the
    same-file warning after a batch, a merge), never the Gradebook class opened in a command."""
    opened = [_where(e) for e in IMPORTS if e.importer == "grader.cli" and e.imported == "grader.store.gradebook"
              and "Gradebook" in e.names]
    assert opened == []


def test_the_rules_see_the_imports_they_judge() -> None:
    """The reader itself: a relative, a lazy and a `from package import module` import are all found."""
    edges = {(e.importer, e.imported) for e in IMPORTS}
    assert ("grader.sandbox.process", "grader.sandbox.wire") in edges        # from grader.sandbox import wire
    assert ("grader.cli", "grader.run.batch") in edges                       # inside a function
    assert ("grader.judge.grading", "grader.codec") in edges
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    # The flow's order: the sandbox comes before the judge, the judge before the reports; neutral ground is none.
    assert _stage("grader.sandbox.process") < _stage("grader.judge.grading") < _stage("grader.report.console")
    assert _stage("grader.codec") is None and _stage("grader.syntax.calls") is None
