"""`grader assign`: one master notebook gives the template, the reference and the rubric, the same bytes every time."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from testclock import within
from grader.syntax.analysis import is_stub
from grader.authoring.assign import DIGEST, AssignError, _digest, build

RUBRIC_CELL = """# rubric
assignment: tiny-slide
title: Tiny sliding puzzle
fixtures: [Start, Goal]
"""

CELLS = [
    new_markdown_cell("# Tiny slide\n\nA state is a tuple of tiles with one blank `0`."),
    new_raw_cell(RUBRIC_CELL),
    new_code_cell("import random\n\nStart = (1, 0, 2)\nGoal = (0, 1, 2)"),
    new_code_cell('def blank(state):\n    """Where the blank is."""\n    # BEGIN SOLUTION\n    return state.index(0)\n'
                  "    # END SOLUTION"),
    new_raw_cell("# tests\npoints: 1\ncases:\n  - call: blank(Start)\n  - generate: shuffled\n    count: 4\n"
                 "    seed: 3\n    call: blank(state)\n    visibility: hidden"),
    new_code_cell("# BEGIN SOLUTION\ndef neighbours(state):\n    \"\"\"States one slide away.\"\"\"\n"
                  "    found = set()\n"
                  "    i = blank(state)\n    for j in (i - 1, i + 1):\n        if 0 <= j < len(state):\n"
                  "            tiles = list(state)\n            tiles[i], tiles[j] = tiles[j], tiles[i]\n"
                  "            found.add(tuple(tiles))\n    return found\n# END SOLUTION"),
    new_raw_cell("# tests\n# Neighbours are a set: lists cannot be members.\npoints: 2\nmistakes:\n"
                 "  - reference: neighbours_as_lists\n"
                 "    say: \"Return a set of tuples: lists cannot be members of a set.\"\n"
                 "cases:\n  - call: neighbours(Start)   # the blank in the middle\n  - generate: shuffled\n"
                 "    count: 4\n    seed: 5\n    call: neighbours(state)"),
    new_code_cell("# REFERENCE ONLY\ndef neighbours_as_lists(state):\n"
                  "    return [list(s) for s in neighbours(state)]\n\n\n"
                  "def shuffled(rng, count):\n    cases = []\n    for _ in range(count):\n"
                  "        tiles = list(range(rng.randint(3, 6)))\n        rng.shuffle(tiles)\n"
                  "        cases.append({'state': tuple(tiles)})\n    return cases"),
    new_code_cell("# TEMPLATE ONLY\nprint(neighbours(Start))"),
    new_code_cell("%%time\n# BEGIN SOLUTION\ndef swap_ends(state):\n    return state[-1:] + state[1:-1] + state[:1]\n"
                  "# END SOLUTION"),
]


def master(folder: Path, cells=None) -> Path:
    (folder / "rubrics").mkdir(parents=True, exist_ok=True)
    path = folder / "assignments" / "tiny-slide" / "master.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    notebook = new_notebook(cells=cells or CELLS)
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"master-{index}"
    nbformat.write(notebook, path)
    return path


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=within(300), env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "160"})


def test_a_master_notebook_becomes_template_reference_and_rubric_that_validate(tmp_path: Path) -> None:
    path = master(tmp_path)
    done = grader("assign", str(path), "--mutants", "2", "--cache", str(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr      # swap_ends has no tests cell yet
    assert "exercise 'swap_ends' has no '# tests' cell yet" in done.stdout
    rubric = tmp_path / "rubrics" / "tiny-slide.yaml"
    lines = enumerate(rubric.read_text().splitlines(), start=1)
    line = next(n for n, text in lines if "- id: swap_ends" in text) + 1   # its empty cases:
    assert f"tiny-slide.yaml:{line}: exercise 'swap_ends': needs a non-empty list of cases" in done.stderr

    # The author writes the missing tests cell; the rerun validates.
    cells = [*CELLS, new_raw_cell("# tests\nid: swap_ends\ncases:\n  - call: swap_ends((1, 2, 3))")]
    path = master(tmp_path, cells)
    done = grader("assign", str(path), "--mutants", "2", "--cache", str(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reference: 4/4" in done.stdout and "template:  0/4" in done.stdout
    assert "mistake neighbours/neighbours_as_lists: 0/2, ok" in done.stdout

    template = nbformat.read(tmp_path / "assignments" / "tiny-slide" / "template.ipynb", as_version=4)
    code = "\n\n".join(c.source for c in template.cells if c.cell_type == "code")
    assert "state.index(0)" not in code and "found.add" not in code and "def shuffled" not in code
    assert "print(neighbours(Start))" in code and "%%time" in code
    functions = {n.name: n for n in ast.walk(ast.parse(code.replace("%%time", ""))) if isinstance(n, ast.FunctionDef)}
    assert set(functions) == {"blank", "neighbours", "swap_ends"} and all(map(is_stub, functions.values()))
    assert ast.get_docstring(functions["neighbours"]) == "States one slide away."
    assert [c["id"] for c in template.cells][:3] == ["master-0", "master-2", "master-3"]
    reference = (tmp_path / "reference" / "tiny_slide.py").read_text()
    assert "def neighbours_as_lists" in reference and "print(" not in reference and "%%time" not in reference


def test_a_rerun_writes_the_same_bytes(tmp_path: Path) -> None:
    path = master(tmp_path)
    first, root = build(path)
    again, _ = build(path)
    assert (first.template, first.reference, first.rubric) == (again.template, again.reference, again.rubric)
    assert "  # Neighbours are a set: lists cannot be members.\n  - id: neighbours\n    points: 2\n" in first.rubric
    assert root == tmp_path.resolve()
    json.loads(first.template)


@pytest.mark.parametrize("source, reason", [
    ("def f():\n    # BEGIN SOLUTION\n    return 1\n", "cell 2, line 2: BEGIN SOLUTION is never ended"),
    ("def f():\n    return 1\n    # END SOLUTION\n", "cell 2, line 3: END SOLUTION without BEGIN SOLUTION"),
])
def test_an_unbalanced_solution_region_names_its_cell_and_line(tmp_path: Path, source: str, reason: str) -> None:
    path = master(tmp_path, [new_raw_cell(RUBRIC_CELL), new_code_cell(source)])
    with pytest.raises(AssignError) as raised:
        build(path)
    assert raised.value.problems == [f"{path}: {reason}"]


def test_a_solution_method_becomes_an_exercise_grading_class_dot_method(tmp_path: Path) -> None:
    from grader.authoring.validate import validate
    cells = [
        new_raw_cell("# rubric\nassignment: shapes"),
        new_code_cell("class Square:\n    def __init__(self, side):\n        self.side = side\n\n"
                      "    def area(self):\n        \"\"\"The area.\"\"\"\n        # BEGIN SOLUTION\n"
                      "        return self.side * self.side\n        # END SOLUTION"),
        new_code_cell("# tests\ncases:\n  - call: Square(3).area()\n  - call: Square(0).area()\n"
                      "  - call: Square(1).area()"),
    ]
    path = master(tmp_path, cells)
    assignment, root = build(path)
    assert "  - id: area\n    function: Square.area\n    cases:" in assignment.rubric
    assert assignment.skeletons == ()
    from grader.authoring.assign import write
    written = write(assignment, root)
    validation = validate(written["rubric"], cache=tmp_path / "cache", mutants=3)
    assert validation.problems == (), validation.problems
    assert validation.template_result.total == 0 and validation.reference_result.total == 1


REPO = Path(__file__).resolve().parents[1]
BUNDLED = {"template": "assignments/sliding-3x3/template.ipynb", "reference": "reference/sliding_3x3.py",
           "rubric": "rubrics/sliding-3x3.yaml"}


def test_the_bundled_sliding_puzzle_is_what_its_master_notebook_makes_every_time(tmp_path: Path) -> None:
    """assignments/sliding-3x3/master.ipynb is the source: its template, reference and rubric are `grader assign`'s
    output byte for byte (nothing edited by hand afterwards), and a second run writes the same bytes."""
    course = tmp_path / "course"
    (course / "rubrics").mkdir(parents=True)
    for folder in ("support", "submissions"):       # assign names them in the rubric when they exist
        (course / "assignments" / "sliding-3x3" / folder).mkdir(parents=True)
    master = REPO / "assignments" / "sliding-3x3" / "master.ipynb"
    for run in (1, 2):
        done = grader("assign", str(master), "--course", str(course), "--no-validate", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        for what, path in BUNDLED.items():
            assert (course / path).read_bytes() == (REPO / path).read_bytes(), f"run {run}: {what} differs from {path}"


def test_markers_spelt_loosely_never_hand_students_tests_mistakes_or_solutions(tmp_path: Path) -> None:
    """A marker assign did not recognise would put hidden cases, known mistakes or the solution into the template:
    a markdown cell saying `# tests`, `# Reference-only:` and nbgrader's `### BEGIN SOLUTION` are read as meant."""
    cells = [
        new_raw_cell(RUBRIC_CELL),
        new_raw_cell("Raw text for students."),
        new_code_cell("Start = (1, 0, 2)\nGoal = (0, 1, 2)"),
        new_code_cell("def blank(state):\n    ### BEGIN SOLUTION\n    return state.index(0)\n    ### END SOLUTION"),
        new_markdown_cell("# Tests\npoints: 1\ncases:\n  - call: blank(Start)\n    visibility: hidden"),
        new_code_cell("# Reference-only:\ndef blank_last(state):\n    return len(state) - 1"),
    ]
    assignment, _ = build(master(tmp_path, cells))
    template = assignment.template
    assert "state.index" not in template and "visibility" not in template and "blank_last" not in template
    assert "Raw text for students." in template
    assert "  - id: blank\n    points: 1\n" in assignment.rubric and "def blank_last" in assignment.reference


def test_a_misspelt_assignment_key_is_named_in_the_rubric_cell(tmp_path: Path) -> None:
    path = master(tmp_path, [new_raw_cell(RUBRIC_CELL.replace("assignment:", "assignement:")), CELLS[3]])
    with pytest.raises(AssignError) as raised:
        build(path)
    assert raised.value.problems == [f"{path}: cell 1: the rubric cell has no 'assignment: <id>' ('assignement:' is "
                                     f"there: did you mean 'assignment'?)"]


@pytest.mark.parametrize("cell, shown, meant", [
    (new_code_cell("# REFERENCES ONLY\ndef blank_last(state):\n    return 5"), "# REFERENCES ONLY", "# REFERENCE ONLY"),
    (new_code_cell("\n# REFERNCE ONLY\ndef blank_last(state):\n    return 5"), "# REFERNCE ONLY", "# REFERENCE ONLY"),
    (new_code_cell("# TEMPLATEONLY please\nblank(Start)"), "# TEMPLATEONLY please", "# TEMPLATE ONLY"),
    (new_raw_cell("# test\ncases:\n  - call: blank(Start)\n    visibility: hidden"), "# test", "# tests"),
    (new_markdown_cell("## Tets\ncases:\n  - call: blank(Start)"), "## Tets", "# tests"),
    (new_raw_cell("# Rubrics\ntitle: x"), "# Rubrics", "# rubric"),
])
def test_a_misspelt_cell_marker_is_refused_at_its_line_not_handed_to_students(tmp_path: Path, cell, shown: str,
                                                                              meant: str) -> None:
    """A marker not recognised sent its cell to the template: '# REFERENCES ONLY' handed students the known
    mistakes, the generators of hidden cases and the check functions, and validate still passed."""
    path = master(tmp_path, [new_raw_cell(RUBRIC_CELL), CELLS[3], cell])
    with pytest.raises(AssignError) as raised:
        build(path)
    line = 2 if cell.source.startswith("\n") else 1
    assert raised.value.problems == [f"{path}: cell 3, line {line}: {shown!r} is not a cell marker: write {meant!r} "
                                     f"(or change the line so it reads as no marker at all)"]


@pytest.mark.parametrize("cell", [new_markdown_cell("# Testing your code\nRun the cells."),
                                  new_code_cell("# test the search on a small board\nblank(Start)"),
                                  new_markdown_cell("# Template\nwhat you get"),
                                  new_code_cell("# reference: AIMA 3.4\nx = 1", metadata={"tags": ["template"]})])
def test_a_first_line_far_from_any_marker_is_left_alone(tmp_path: Path, cell) -> None:
    build(master(tmp_path, [new_raw_cell(RUBRIC_CELL), CELLS[3], cell]))


@pytest.mark.parametrize("source, reason", [
    ("def f():\n    # BEGIN SOLUTON\n    return 1\n    # END SOLUTION",
     "cell 2, line 2: '# BEGIN SOLUTON' is not a solution marker: write '# BEGIN SOLUTION' or '# END SOLUTION' "
     "alone on its line"),
    ("def f():\n    # BEGIN SOLUTION NO PROMPT\n    return 1\n    # END SOLUTION",
     "cell 2, line 2: '# BEGIN SOLUTION NO PROMPT' is not a solution marker: write '# BEGIN SOLUTION' or "
     "'# END SOLUTION' alone on its line"),
])
def test_an_unknown_solution_marker_is_refused_at_its_line(tmp_path: Path, source: str, reason: str) -> None:
    path = master(tmp_path, [new_raw_cell(RUBRIC_CELL), new_code_cell(source)])
    with pytest.raises(AssignError) as raised:
        build(path)
    assert raised.value.problems == [f"{path}: {reason}"]


@pytest.mark.parametrize("tests, reason", [
    ("# tests\npoints: 1\ncases:\n  - call: blank(Start)\n   visibility: hidden",
     "cell 3, line 5: the tests cell is not valid YAML: expected <block end>, but found '<block mapping start>' "
     "(YAML: indentation counts, the keys of one case lining up after its '- '; in a {...} mapping a value holding "
     "[ ] , or : is quoted, as in goal: \"args[1]\")"),
    ("# tests\npoints: 1\ncases:\n  - call: blank(Start)\n    seed: 2026-13-01",
     "cell 3, line 5: the tests cell is not valid YAML: '2026-13-01' is not a date (month must be in 1..12); write "
     "YYYY-MM-DD, e.g. 2026-11-20 (YAML: indentation counts, the keys of one case lining up after its '- '; in a "
     "{...} mapping a value holding [ ] , or : is quoted, as in goal: \"args[1]\")"),
    ("# tests\n- call: blank(Start)",
     "cell 3: a tests cell holds one exercise as 'key: value' lines (points:, cases:, mistakes:, ...), not list"),
])
def test_a_tests_cell_that_is_not_one_exercise_is_named_at_its_own_cell(tmp_path: Path, tests: str,
                                                                       reason: str) -> None:
    path = master(tmp_path, [new_raw_cell(RUBRIC_CELL), new_code_cell(
        "def blank(state):\n    # BEGIN SOLUTION\n    return state.index(0)\n    # END SOLUTION"), new_raw_cell(tests)])
    with pytest.raises(AssignError) as raised:
        build(path)
    assert raised.value.problems == [f"{path}: {reason}"]


def test_a_demo_call_in_a_shared_cell_is_noted_since_it_runs_when_the_reference_loads(tmp_path: Path) -> None:
    cells = [*CELLS, new_code_cell("blank(Start)"), new_code_cell("# TEMPLATE ONLY\nneighbours(Start)")]
    assignment, _ = build(master(tmp_path, cells))
    assert assignment.notes == (
        f"{tmp_path / 'assignments' / 'tiny-slide' / 'master.ipynb'}: cell 11: `blank(Start)` runs each time the "
        f"grader loads the reference (a cell without marker goes to the reference too): if it is a demo for "
        f"students, start the cell with '# TEMPLATE ONLY'",)


def readme_master() -> list:
    """The cells of the README's step-by-step example, in order: each fenced block named markdown, raw or python."""
    import re
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("#### Step by step: a complete example"):readme.index("#### When something is wrong")]
    make = {"markdown": new_markdown_cell, "raw": new_raw_cell, "python": new_code_cell}
    return [make[kind]("\n".join(line.removeprefix(indent) for line in body.splitlines()))
            for indent, kind, body in re.findall(r"^( *)```(markdown|raw|python)\n(.*?)^\1```$", section, re.M | re.S)]


MOVES_WITHOUT_POURING = '''def moves(state, capacities):
    x, y = state
    a, b = capacities
    return {(a, y), (x, b), (0, y), (x, 0)} - {state}'''


@pytest.mark.slow
def test_the_readme_example_is_authored_validated_checked_and_graded_as_it_says(tmp_path: Path) -> None:
    """An outsider's path through the README: the master of its example, assign (with validation), the kit, a
    self-check and a grade of a correct and a wrong notebook, each command as the README writes it."""
    course = tmp_path / "course"
    (course / "rubrics").mkdir(parents=True)
    master_path = course / "assignments" / "water-jug" / "master.ipynb"
    master_path.parent.mkdir(parents=True)
    cells = readme_master()
    assert [c.cell_type for c in cells].count("raw") == 3 and len(cells) == 10
    nbformat.write(new_notebook(cells=cells), master_path)
    cache = ["--cache", str(tmp_path / "cache")]
    done = grader("assign", "assignments/water-jug/master.ipynb", "--jobs", "2", *cache, cwd=course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reference: 5/5" in done.stdout and "template:  0/5" in done.stdout and "note:" not in done.stdout
    assert "mistake moves/moves_without_pouring: 0.5/2, ok" in done.stdout
    assert "rubrics/water-jug.yaml: valid (10 cases)" in done.stdout

    # Students fill in the template: one with the master's solutions, one that forgets pouring.
    reference = (course / "reference" / "water_jug.py").read_text()
    tree = ast.parse(reference)
    solutions = {n.name: ast.get_source_segment(reference, n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    (course / "submissions").mkdir()
    for student, fill in (("ada", {}), ("bob", {"moves": MOVES_WITHOUT_POURING})):
        notebook = nbformat.read(course / "assignments" / "water-jug" / "template.ipynb", as_version=4)
        for cell in notebook.cells:
            for name in ("moves", "measure"):
                if cell.cell_type == "code" and cell.source.startswith(f"def {name}("):
                    cell.source = fill.get(name, solutions[name])
        nbformat.write(notebook, course / "submissions" / f"{student}.ipynb")
    assert grader("kit", "rubrics/water-jug.yaml", "-o", "kit.json", *cache, cwd=course).returncode == 0
    assert grader("check", "--kit", "kit.json", "submissions/ada.ipynb", cwd=course).returncode == 0
    checked = grader("check", "--kit", "kit.json", "submissions/bob.ipynb", cwd=course)
    assert checked.returncode == 1 and "Pouring one jug into the other is a move too." in checked.stdout
    graded = grader("grade", "submissions", "--rubric", "rubrics/water-jug.yaml", "--out", "results", *cache,
                    cwd=course)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    totals = {student: json.loads((course / "results" / f"{student}.json").read_text())["total"]
              for student in ("ada", "bob")}
    assert totals["ada"] == 5 and totals["bob"] < 5


def test_a_tests_cell_for_no_solution_is_noted_with_a_guess(tmp_path: Path) -> None:
    cells = [new_raw_cell(RUBRIC_CELL), new_code_cell(
        "def blank(state):\n    # BEGIN SOLUTION\n    return state.index(0)\n    # END SOLUTION"),
        new_raw_cell("# tests\nid: blnk\ncases:\n  - call: blnk(Start)")]
    path = master(tmp_path, cells)
    assignment, _ = build(path)
    assert assignment.notes == (f"{path}: cell 3: the tests cell is for 'blnk', which no solution of the master "
                                f"defines (did you mean 'blank'?); give it 'function: NAME' if it grades another "
                                f"name of the notebook",)
    assert assignment.skeletons == ("blank",)


def test_a_hand_written_rubric_is_never_replaced_without_force(tmp_path: Path) -> None:
    """A course moving to a master keeps its hand-written rubric until the author says so."""
    path = master(tmp_path)
    rubric = tmp_path / "rubrics" / "tiny-slide.yaml"
    rubric.write_text("assignment: tiny-slide\nreference: ../reference/tiny_slide.py\nexercises: []\n")
    done = grader("assign", str(path), "--no-validate", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{rubric}: this rubric was not written by grader assign (its first line does not say so), and assign " \
           f"would replace it: move it away, or give --force" in done.stderr
    assert rubric.read_text().startswith("assignment: tiny-slide\n")
    assert not (tmp_path / "assignments" / "tiny-slide" / "template.ipynb").exists()
    done = grader("assign", str(path), "--no-validate", "--force", cwd=tmp_path)
    assert done.returncode == 0 and rubric.read_text().startswith("# Generated by `grader assign`")
    assert grader("assign", str(path), "--no-validate", cwd=tmp_path).returncode == 0     # now it is assign's


def test_a_generated_rubric_edited_by_hand_is_not_replaced_without_force(tmp_path: Path) -> None:
    """An instructor edits rubrics/x.yaml that assign wrote, then runs assign again: the edit was lost in
    silence. Now a rerun refuses, naming the file and --force; a master changed while the files were left
    alone still rewrites them; --force replaces an edited one."""
    path = master(tmp_path)
    rubric = tmp_path / "rubrics" / "tiny-slide.yaml"
    reference = tmp_path / "reference" / "tiny_slide.py"
    assert grader("assign", str(path), "--no-validate", cwd=tmp_path).returncode == 0
    edited = rubric.read_text().replace("    points: 2\n", "    points: 3\n", 1)
    assert edited != rubric.read_text()
    rubric.write_text(edited)
    done = grader("assign", str(path), "--no-validate", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{rubric}: this rubric was edited by hand since grader assign wrote it" in done.stderr
    assert "give --force to replace the file" in done.stderr and str(path) in done.stderr
    assert rubric.read_text() == edited
    rubric.write_text(edited.replace("    points: 3\n", "    points: 2\n", 1))     # the edit undone
    changed = master(tmp_path, [*CELLS[:-1], new_code_cell("# BEGIN SOLUTION\ndef swap_ends(state):\n"
                                                            "    return state[::-1]\n# END SOLUTION")])
    before = reference.read_text()
    assert grader("assign", str(changed), "--no-validate", cwd=tmp_path).returncode == 0
    assert reference.read_text() != before and "state[::-1]" in reference.read_text()
    reference.write_text(reference.read_text() + "\nEXTRA = 1\n")
    done = grader("assign", str(changed), "--no-validate", cwd=tmp_path)
    assert done.returncode == 2 and f"{reference}: this reference was edited by hand" in done.stderr
    assert grader("assign", str(changed), "--no-validate", "--force", cwd=tmp_path).returncode == 0
    assert "EXTRA" not in reference.read_text()



def test_a_template_edited_by_hand_is_not_replaced_without_force(tmp_path: Path) -> None:
    """An instructor fixes a sentence of the students' text in the generated template, not in the master, and runs
    assign again: the edit was lost in silence (the rubric and the reference kept a digest, the template none).
    Now a rerun refuses, naming the template, the master and --force. A template only opened and saved in Jupyter
    (its metadata changed, its cells not), or left alone while the master changed, is replaced; --force replaces
    an edited one; a template with no digest to compare (an older assign) is kept unless its cells are the
    master's."""
    path = master(tmp_path)
    template = tmp_path / "assignments" / "tiny-slide" / "template.ipynb"
    rubric = tmp_path / "rubrics" / "tiny-slide.yaml"
    assert grader("assign", str(path), "--no-validate", cwd=tmp_path).returncode == 0
    written = template.read_text()
    saved = nbformat.read(template, as_version=4)
    saved.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(saved, template)                                  # opened and saved: no cell changed
    assert grader("assign", str(path), "--no-validate", cwd=tmp_path).returncode == 0
    assert template.read_text() == written
    edited = nbformat.read(template, as_version=4)
    edited.cells[0].source = edited.cells[0].source.replace("A state is", "A state (of the puzzle) is")
    nbformat.write(edited, template)
    kept = template.read_text()
    done = grader("assign", str(path), "--no-validate", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{template}: this template was edited by hand since grader assign wrote it (its cells no longer match " \
           f"the digest in {rubric})" in done.stderr
    assert str(path) in done.stderr and "give --force to replace the file" in done.stderr
    assert template.read_text() == kept
    changed = master(tmp_path, [new_markdown_cell("# Tiny slide, again\n\nA state is a tuple."), *CELLS[1:]])
    assert grader("assign", str(changed), "--no-validate", cwd=tmp_path).returncode == 2   # the edit still there
    assert grader("assign", str(changed), "--no-validate", "--force", cwd=tmp_path).returncode == 0
    assert "Tiny slide, again" in template.read_text() and "(of the puzzle)" not in template.read_text()
    path = master(tmp_path)                                          # the master changed, the template left alone
    assert grader("assign", str(path), "--no-validate", cwd=tmp_path).returncode == 0
    assert template.read_text() == written
    first, _, body = rubric.read_text().partition("\n")
    body = "".join(line for line in body.splitlines(keepends=True) if not line.startswith("# template cells"))
    older = DIGEST.sub(f" (digest of the lines below: {_digest(body)})", first) + "\n" + body
    rubric.write_text(older)                        # as an assign that kept no digest of the template wrote it
    assert grader("assign", str(path), "--no-validate", cwd=tmp_path).returncode == 0    # the same cells
    rubric.write_text(older)
    nbformat.write(edited, template)
    done = grader("assign", str(path), "--no-validate", cwd=tmp_path)
    assert done.returncode == 2 and f"{template}: this template's cells differ from what {path} makes, and no " \
                                    f"digest says whether assign wrote them" in done.stderr
    assert "(of the puzzle)" in template.read_text()


def test_a_solution_constant_is_an_exercise_its_tests_cell_names_by_default(tmp_path: Path) -> None:
    cells = [new_raw_cell(RUBRIC_CELL),
             new_code_cell("# BEGIN SOLUTION\nGOAL = (0, 1,\n        2)   # the blank first\n# END SOLUTION"),
             new_raw_cell("# tests\ncases:\n  - call: GOAL")]
    assignment, _ = build(master(tmp_path, cells))
    assert "  - id: GOAL\n    cases:\n      - call: GOAL\n" in assignment.rubric and assignment.notes == ()
    assert '"GOAL = None"' in assignment.template and "GOAL = (0, 1,\n        2)" in assignment.reference


def test_a_python_cell_of_the_authors_own_checks_under_a_tests_comment_is_explained(tmp_path: Path) -> None:
    cells = [new_raw_cell(RUBRIC_CELL), new_code_cell(
        "def blank(state):\n    # BEGIN SOLUTION\n    return state.index(0)\n    # END SOLUTION"),
        new_code_cell("# Tests\nassert blank((1, 0)) == 1")]
    path = master(tmp_path, cells)
    with pytest.raises(AssignError) as raised:
        build(path)
    assert raised.value.problems == [
        f"{path}: cell 3: a tests cell holds one exercise as 'key: value' lines (points:, cases:, mistakes:, ...), "
        f"not str; a code cell whose first line is '# tests' is read as the rubric's YAML: start a cell of your own "
        f"Python checks with another comment"]


def test_a_whole_class_in_a_solution_region_grades_each_of_its_methods(tmp_path: Path) -> None:
    """Students write the class: every method is a stub in the template and (but the constructor) an exercise."""
    from grader.authoring.assign import write
    from grader.authoring.validate import validate
    cells = [
        new_raw_cell("# rubric\nassignment: counter"),
        new_code_cell("# BEGIN SOLUTION\nclass Counter:\n    def __init__(self):\n        self.count = 0\n\n"
                      "    def add(self, k):\n        \"\"\"Count k more.\"\"\"\n        self.count += k\n"
                      "        return self.count\n# END SOLUTION"),
        new_raw_cell("# tests\ncases:\n  - call: Counter().add(2)\n  - call: Counter().add(0)\n"
                     "  - call: Counter().add(-3)"),
    ]
    assignment, root = build(master(tmp_path, cells))
    assert "  - id: add\n    function: Counter.add\n    cases:" in assignment.rubric
    assert assignment.skeletons == () and assignment.notes == ()
    template = json.loads(assignment.template)["cells"][0]["source"]
    assert "".join(template) == ("class Counter:\n    def __init__(self):\n        ...\n\n"
                                 "    def add(self, k):\n        \"\"\"Count k more.\"\"\"\n        ...")
    validation = validate(write(assignment, root)["rubric"], cache=tmp_path / "cache", mutants=2)
    assert validation.problems == (), validation.problems
    assert validation.template_result.total == 0 and validation.reference_result.total == 1


@pytest.mark.parametrize("broken, found", [
    ("points: 2\n", "points2: 2\n"),                                  # the rubric does not parse: exit 2
    ("  - call: neighbours(Start)", "  - call: neighbours(Stat)"),    # validate's problem: exit 1
])
def test_a_problem_at_a_line_of_the_generated_rubric_names_the_masters_cell_it_came_from(
        tmp_path: Path, broken: str, found: str) -> None:
    """The author fixes the master, never the generated rubric: each problem validate names at a rubric line also
    names the master's cell that line came from (here the neighbours tests cell, the master's 7th), and the
    closing hint says to run assign again; before, a rubric that did not parse ended at its own line, no hint."""
    cells = [*CELLS[:-1]]        # swap_ends, the last, has no tests cell: its skeleton would be a problem too
    assert broken in cells[6].source
    cells[6] = new_raw_cell(cells[6].source.replace(broken, found))
    path = master(tmp_path, cells)
    done = grader("assign", str(path), "--mutants", "0", cwd=tmp_path)
    assert done.returncode in (1, 2), done.stdout + done.stderr
    rubric = tmp_path / "rubrics" / "tiny-slide.yaml"
    problems = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(f"{rubric}:")]
    assert problems and all(line.endswith(f"[from {path}: cell 7]") for line in problems), done.stdout + done.stderr
    assert "run grader assign again" in done.stdout


def ladder_master(folder: Path, words_cells: list) -> Path:
    """A word-ladder master whose notebook reads the course's dictionary, words.txt, beside it."""
    support = folder / "assignments" / "ladder" / "support"
    support.mkdir(parents=True)
    (support / "words.txt").write_text("cold\ncord\ncard\nward\nwarm\nworm\nword\n")
    (folder / "rubrics").mkdir(exist_ok=True)
    cells = [new_raw_cell("# rubric\nassignment: ladder\nfixtures: [WORDS]"), *words_cells,
             new_code_cell('def neighbours(word, words):\n    """Words of `words` one letter from `word`."""\n'
                           "    # BEGIN SOLUTION\n    return {w for w in words if len(w) == len(word)\n"
                           "            and sum(a != b for a, b in zip(w, word)) == 1}\n    # END SOLUTION"),
             new_raw_cell('# tests\ncases:\n  - call: neighbours("cold", WORDS)\n  - call: neighbours("warm", WORDS)\n'
                          "    visibility: hidden")]
    path = folder / "assignments" / "ladder" / "master.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    return path


def test_a_data_file_the_notebook_reads_is_found_in_the_support_folder_by_the_reference_and_its_mutants(
        tmp_path: Path) -> None:
    """A dictionary the students' notebook reads by a relative path (words.txt beside it), in a cell the reference
    gets too: its import read it from the folder grader runs in, so assign stopped at 'FileNotFoundError:
    words.txt'. The reference and its mutants find it in the support folder (README), wherever grader runs; a
    student's notebook is checked where no words.txt is, its definition of the fixture being the course's. A file
    the support folder lacks is refused with where it was looked for."""
    read = 'WORDS = frozenset(open("words.txt").read().split())'
    course = tmp_path / "course"
    ladder_master(course, [new_code_cell(read)])
    done = grader("assign", "assignments/ladder/master.ipynb", cwd=course)
    assert done.returncode == 0 and "valid (2 cases)" in done.stdout, done.stdout + done.stderr
    assert "neighbours: mutation score 100%" in done.stdout, done.stdout
    assert grader("kit", "rubrics/ladder.yaml", "-o", "kit.json", cwd=course).returncode == 0
    notebook = nbformat.read(course / "assignments" / "ladder" / "template.ipynb", as_version=4)
    assert notebook.cells[0].source == read
    notebook.cells[1].source = ("def neighbours(word, words):\n    return {w for w in words if len(w) == len(word) "
                                "and sum(a != b for a, b in zip(w, word)) == 1}")
    nbformat.write(notebook, tmp_path / "ada.ipynb")
    checked = grader("check", "--kit", str(course / "kit.json"), "ada.ipynb", cwd=tmp_path)
    assert checked.returncode == 0 and "warning" not in checked.stdout, checked.stdout + checked.stderr

    other = tmp_path / "other"
    ladder_master(other, [new_code_cell(read.replace("words.txt", "dictionary.txt"))])
    done = grader("assign", "assignments/ladder/master.ipynb", "--mutants", "0", cwd=other)
    assert done.returncode == 2
    assert ("reference/ladder.py:4: the reference module fails to import: FileNotFoundError: [Errno 2] No such file "
            "or directory: 'dictionary.txt' (open() finds a relative path in the rubric's support folder, else in the "
            f"folder grader runs in, {other}: put the data file in the support folder") in done.stderr, done.stderr


def test_a_master_in_another_assignments_folder_beside_its_support_is_refused_naming_both(tmp_path: Path) -> None:
    """`assignments/lab3/master.ipynb` saying `assignment: sliding-3x3`, its support folder beside it: assign wrote
    the template into assignments/sliding-3x3/ and looked for support there, so validate failed on a name only
    the support module defines, advising to add it to the fixtures. One line naming both folders; nothing
    written."""
    import shutil
    bundled = REPO / "assignments" / "sliding-3x3"
    lab = tmp_path / "assignments" / "lab3"
    (tmp_path / "rubrics").mkdir()
    lab.mkdir(parents=True)
    shutil.copy(bundled / "master.ipynb", lab / "master.ipynb")
    shutil.copytree(bundled / "support", lab / "support")
    done = grader("assign", str(lab / "master.ipynb"), "--no-validate", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"but the support folder is beside the master in {lab}" in done.stderr
    assert sorted(p.name for p in (tmp_path / "assignments").iterdir()) == ["lab3"]
    assert not any((tmp_path / "rubrics").iterdir())


def test_a_first_assign_in_a_course_without_rubrics_writes_beside_assignments_and_refuses_a_lost_support(
        tmp_path: Path) -> None:
    """The README's `grader assign assignments/NAME/master.ipynb` in a new course (no rubrics/ folder yet) took the
    master's own folder for the course: it wrote assignments/NAME/assignments/NAME/template.ipynb and rubrics/ and
    reference/ inside the assignment, and left out the support folder beside the master (validate then failed on
    names only it defines). The course is the folder holding assignments/; a master elsewhere with a support folder
    beside it that assign would not read is refused, saying where to put it."""
    import shutil
    bundled = REPO / "assignments" / "sliding-3x3"
    course = tmp_path / "course"
    lab = course / "assignments" / "sliding-3x3"
    lab.mkdir(parents=True)
    shutil.copy(bundled / "master.ipynb", lab / "master.ipynb")
    shutil.copytree(bundled / "support", lab / "support")
    done = grader("assign", "assignments/sliding-3x3/master.ipynb", "--no-validate", cwd=course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (lab / "template.ipynb").is_file() and (course / "reference" / "sliding_3x3.py").is_file()
    rubric = (course / "rubrics" / "sliding-3x3.yaml").read_text(encoding="utf-8")
    assert "support: ../assignments/sliding-3x3/support" in rubric
    assert not (lab / "assignments").exists() and not (lab / "rubrics").exists()
    loose = tmp_path / "loose" / "sliding-3x3"
    shutil.copytree(lab, loose)
    refused = grader("assign", str(loose / "master.ipynb"), "--no-validate", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    assert f"but the support folder is beside the master in {loose}: put the master with its support in " \
           "assignments/sliding-3x3/ of the course folder" in refused.stderr, refused.stderr
    assert sorted(p.name for p in loose.iterdir()) == ["master.ipynb", "support", "template.ipynb"]
