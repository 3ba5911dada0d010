"""The README documents the rubric language: every key the parser accepts appears in its reference tables."""

import ast
import functools
import re
from dataclasses import fields
from pathlib import Path

import pytest

from grader.checks.registry import CHECKS
from grader.rubric.schema import CASE_KEYS, EXERCISE_KEYS, EXTRACTION_KEYS, RUBRIC_KEYS, Limits

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def table_keys(heading: str) -> set[str]:
    """Keys in the first column of the table that follows a heading line."""
    start = README.index(heading)
    keys = set()
    for line in README[start:].splitlines()[1:]:
        if line.startswith("| `"):
            keys.add(line.split("`")[1])
        elif keys and not line.startswith("|"):
            break
    return keys


@pytest.mark.parametrize("heading, keys", [
    ("\nTop level:", RUBRIC_KEYS), ("Exercise:", EXERCISE_KEYS), ("Case:", CASE_KEYS),
    ("Limits (rubric-wide", {f.name: "" for f in fields(Limits)}),
])
def test_readme_documents_every_rubric_key(heading, keys):
    assert table_keys(heading) == set(keys)


def test_readme_documents_extraction_keys_and_checks():
    for key in EXTRACTION_KEYS:
        assert f"`{key}`" in README
    for name in CHECKS:
        assert f"| `{name}` |" in README


def test_readme_starts_with_the_two_setup_commands():
    lines = README.splitlines()
    assert lines[0] == "```bash"
    assert "grader grade assignments/taoistic-search/submissions" in lines[1]
    assert "pytest" in lines[2]
    assert lines[3] == "```"


def test_ci_runs_the_readme_test_command_after_the_linters():
    """CI is the README's second command: its install, then ruff and mypy, then its tests, in that order."""
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    install, tests = README.splitlines()[2].rsplit(" && ", 1)
    steps = [install.replace("pip install -e", "pip install -q -e"), ".venv/bin/ruff check .", ".venv/bin/mypy", tests]
    where = [ci.find(step) for step in steps]
    assert -1 not in where and where == sorted(where), dict(zip(steps, where, strict=True))


def test_readme_documents_the_check_author_api():
    """What a check receives (parameters, NDArray and Opaque fields) and may return, as the code has it."""
    from dataclasses import fields as dataclass_fields

    from grader.checks.registry import CHECK_PARAMETERS, CheckAnswer, Verdict, reference_check
    from grader.codec import NDArray, Opaque
    section = README[README.index("### Writing a check function"):]
    documented = {}
    for line in section.splitlines()[1:]:
        if line.startswith("| `") and line.split("`")[1] in CHECK_PARAMETERS:
            documented[line.split("`")[1]] = line.split("|")[2].strip()
    assert documented == CHECK_PARAMETERS
    for cls in (NDArray, Opaque):
        assert f"`{cls.__name__}`" in section
        for field in dataclass_fields(cls):
            assert f"`{field.name}`" in section, (cls.__name__, field.name)
    assert f"Verdict({', '.join(f.name for f in dataclass_fields(Verdict))[:6]}" in section
    # Every documented return gives its verdict; anything else is the rubric's error.
    from grader.checks.registry import CheckContext, CheckError
    from grader import codec
    context = CheckContext(expected=codec.encode(1), got=codec.encode(1))
    no = "rejected by the check <lambda>"     # a failing verdict's cause, unless the check names its own
    for answer, verdict in [(True, Verdict(True, 1.0, "")), (0.5, Verdict(False, 0.5, "", no)),
                            ((False, "why"), Verdict(False, 0.0, "why", no)),
                            ((0.25, "why"), Verdict(False, 0.25, "why", no)),
                            (Verdict(True, 1.0, "ok"), Verdict(True, 1.0, "ok")),
                            (Verdict(False, 0.0, "ok", "moved twice"), Verdict(False, 0.0, "ok", "moved twice"))]:
        assert reference_check(lambda got, answer=answer: answer)(context) == verdict
    with pytest.raises(CheckError):
        reference_check(lambda got: "yes")(context)
    seen = {}
    reference_check(lambda **given: seen.update(given) or True)(context)
    assert set(seen) == set(CHECK_PARAMETERS)
    assert "Union[bool, float, tuple[bool, str], tuple[float, str], grader.checks.registry.Verdict]" in str(CheckAnswer)

def test_readme_documents_the_master_notebook_markers():
    from grader.authoring import assign
    section = README[README.index("### From one master notebook"):]
    for marker in ("# BEGIN SOLUTION", "# END SOLUTION", "# REFERENCE ONLY", "# TEMPLATE ONLY", "# tests",
                   "# rubric"):
        assert marker in section
    assert assign.BEGIN.match("    # BEGIN SOLUTION") and assign.END.match("# END SOLUTION")


# docs/DESIGN.md names real modules, functions, classes, fields and constants: each must still exist in the code.
ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "DESIGN.md"
PACKAGE = ROOT / "grader"


def _sources() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in PACKAGE.rglob("*.py")}


def _members(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body defines (functions, classes, assignments, imports), and for a class also
    the attributes its methods set on `self`."""
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = node
        elif isinstance(node, (ast.If, ast.Try)):   # definitions under `if __name__` or `try: import`
            names.update(_members(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])))
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self" \
                        and isinstance(sub.ctx, ast.Store):
                    names.setdefault(sub.attr, sub)
    return names


def _resolves(scope: dict[str, ast.AST], rest: list[str]) -> bool:
    """Whether `rest` (a.b) names something defined in `scope`: a, then b a member of the class a."""
    for name in rest:
        node = scope.get(name)
        if node is None:
            return False
        scope = _members(node.body) if isinstance(node, ast.ClassDef) else {}
    return True


def _module(parts: list[str], trees: dict[Path, ast.Module]) -> tuple[Path | None, list[str]]:
    """The grader module the longest prefix of a dotted name names (`grader.run.batch`, `judge.grading`,
    `cpuclock`), and the names left after it."""
    for size in range(len(parts), 0, -1):
        head = parts[:size]
        if head[0] == "grader":
            head = head[1:]
        if not head:
            continue
        for path in trees:
            relative = path.relative_to(PACKAGE).with_suffix("").parts
            if relative[-1] == "__init__":
                relative = relative[:-1]
            if relative and tuple(head) == relative[-len(head):]:
                return path, parts[size:]
    return None, parts


@functools.cache
def _index() -> tuple[dict[Path, ast.Module], dict[Path, dict[str, ast.AST]], dict[str, ast.AST], frozenset[str]]:
    """The package's modules parsed, their members, its classes and every word of it: read once per run (about
    1.2 s of CPU each time), as every check of a text reads the same code."""
    trees = _sources()
    members = {path: _members(tree.body) for path, tree in trees.items()}
    classes = {name: node for scope in members.values() for name, node in scope.items()
               if isinstance(node, ast.ClassDef)}
    # A bare name may be a SQL column or a system call the code names in a string: any word of grader/ will do.
    everywhere = frozenset(word for path in trees for word in re.findall(r"\w+", path.read_text(encoding="utf-8")))
    return trees, members, classes, everywhere


def design_problems(text: str) -> list[str]:
    """Every name in a code span of `text` that the code no longer has."""
    trees, members, classes, everywhere = _index()
    problems = []
    for span in sorted(set(re.findall(r"`([^`\n]+)`", text))):
        span = re.sub(r"^([\w.]+)\([^()]*\)$", r"\1", span)   # a call: `cpuclock.credit(...)`, `f()`
        if re.fullmatch(r"[\w./-]+\.py", span):           # a file: in the repository, a stage or anywhere in grader/
            if not any((base / span).exists() for base in (ROOT, PACKAGE, ROOT / "tests", ROOT / "bench")) \
                    and not any(path.name == span for path in trees):
                problems.append(f"no file {span}")
        elif re.fullmatch(r"tests/fixtures/[\w-]+/?", span):
            if not (ROOT / span).is_dir():
                problems.append(f"no folder {span}")
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", span):
            parts = span.split(".")
            path, rest = _module(parts, trees)
            if path is not None:
                if rest and not _resolves(members[path], rest):
                    problems.append(f"{span}: not defined in {path.relative_to(ROOT)}")
            elif parts[0] in classes and not _resolves(classes, parts):   # Class.field
                problems.append(f"{span}: no such member")
        elif re.fullmatch(r"[A-Z]\w*|[a-z]\w*_\w*", span):   # a class, a constant, a function, a field, a key
            if span not in everywhere:
                problems.append(f"{span} is nowhere in grader/")
    return problems


def test_design_names_exist():
    text = DESIGN.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    broken = [span for span in re.findall(r"`([^`]*)`", prose) if "\n" in span]
    assert broken == [], "keep each code span on one line (the check reads spans line by line)"
    assert design_problems(text) == []


def test_design_check_finds_renamed_names():
    """The check itself: names that were renamed or never existed are found, real ones are not."""
    real = "`cpuclock.credit`, `grader.run.batch.grade_batch`, `Extracted.definitions`, `sandbox/budget.py`"
    assert design_problems(real) == []
    made_up = ("`cpuclock.credited`, `judge.grading.grade_everything`, `Extracted.defined`, `sandbox/clock.py`, "
               "`NoSuchStage`, `no_such_field`, `tests/fixtures/nowhere`")
    assert len(design_problems(made_up)) == 7


def test_readme_layout_points_to_the_design():
    layout = README[README.index("## Layout"):README.index("## Measured")]
    assert "docs/" in layout and "DESIGN.md" in layout


def test_readme_layout_names_every_module():
    """The README's Layout names every module of the package, and no module that is gone."""
    layout = README[README.index("## Layout"):README.index("## Measured")]
    named = set(re.findall(r"[\w-]+\.py\b", layout))
    modules = {path.name for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}
    elsewhere = {path.name for folder in ("bench", "assignments", "tests") for path in (ROOT / folder).rglob("*.py")}
    assert modules - named == set(), "modules the README's Layout does not name"
    assert named - modules - elsewhere == set(), "files the README's Layout names that do not exist"


def test_design_links_to_readme_sections_that_exist():
    """Each `../README.md#section` link of DESIGN.md names a README heading (GitHub's anchor of it)."""
    anchors = {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
               for heading in re.findall(r"^#+ (.+)$", README, re.MULTILINE)}
    links = re.findall(r"\]\(\.\./README\.md#([\w-]+)\)", DESIGN.read_text(encoding="utf-8"))
    assert links and set(links) <= anchors, set(links) - anchors


def test_readme_results_section_names_every_state_of_a_result():
    """The Results section lists every `state` a result can have (results.STATES): a TA reading gradebook.csv's
    column or the JSON learns each there (`no submission` came after the list was written, and it went unsaid)."""
    from grader.store.results import STATES
    section = README[README.index("\n## Results"):]
    listed = re.search(r"`state` \(([^)]*)\)", section)
    assert listed is not None
    assert set(re.findall(r"`([^`]+)`", listed.group(1))) == set(STATES)
