"""Properties over notebooks: a correct solution in any layout a student gives it extracts and grades the same.

Each bundled assignment's correct notebook is changed only in ways Jupyter runs the same (tests/notebook_variants.py:
indented or prompted cells, cell and line magics, wrappers, decorators, stubs above, re-runs, noise cells, text
cells holding code, metadata, outputs, nbformat 3 and 4.x, BOM, CRLF). Extraction must find every graded function
and piece of data as the correct notebook has it, grading must give every exercise the same score, and a
corrupted file must end in a clear NotebookError at worst.
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grader.extract.source import Extracted, extract
from grader.intake.notebook import NotebookError, notebook_from_source, read_notebook
from grader.rubric.schema import Policy, load_rubric
from grader.run.batch import grade
from grader.store.results import SubmissionResult
from grader.store.status import machine_busy
from notebook_variants import _bound, _tree, variants

from conftest import REPO

ASSIGNMENTS = ("sliding-3x3", "n-puzzle", "eight-puzzle-astar", "taoistic-search")


@cache
def _assignment(name: str) -> tuple[dict, frozenset[str], Path]:
    """(correct notebook JSON, names a noise cell must not bind, rubric path)."""
    rubric = REPO / "rubrics" / f"{name}.yaml"
    notebook = json.loads((REPO / "assignments" / name / "submissions" / "correct.ipynb").read_text(encoding="utf-8"))
    roots = load_rubric(rubric).policy.roots or frozenset()
    avoid = set(roots)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and (tree := _tree("".join(cell["source"]))) is not None:
            avoid |= _bound(tree)
    return notebook, frozenset(avoid), rubric


@cache
def _extracted(name: str) -> Extracted:
    _, _, rubric = _assignment(name)
    return extract(read_notebook(REPO / "assignments" / name / "submissions" / "correct.ipynb"),
                   load_rubric(rubric).policy)


def _shape(node: ast.AST | None) -> str:
    """A definition's tree without its decorators and places: what it does, wherever and however it was written."""
    if node is None:
        return ""
    copy = ast.parse(ast.unparse(node)).body[0]     # its places renumbered
    if isinstance(copy, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        copy.decorator_list = []
    for inner in ast.walk(copy):    # a wrapper or trailing blanks change a docstring's lines, as in Jupyter
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            inner.value = re.sub(r"[ \t]*\n[ \t]*", "\n", inner.value)
    return ast.dump(copy)


def _graded(name: str) -> dict[str, str]:
    """The rubric's names the correct notebook defines, each with its definition's shape."""
    roots = load_rubric(_assignment(name)[2]).policy.roots or frozenset()
    return {n: _shape(d.node) for n, d in _extracted(name).definitions.items() if n in roots}


def _busy(result: SubmissionResult) -> set[str]:
    """The exercises with a case a busy machine kept from being judged."""
    return {e.id for e in result.exercises if any(machine_busy(c.status, c.reason) for c in e.cases)}


def _written(tmp_path: Path, suffix: str, data: bytes) -> Path:
    path = tmp_path / f"variant{suffix}"
    path.write_bytes(data)
    return path


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_any_layout_of_a_correct_notebook_extracts_its_graded_definitions_unchanged(tmp_path_factory, data) -> None:
    name = data.draw(st.sampled_from(ASSIGNMENTS))
    notebook, avoid, rubric = _assignment(name)
    suffix, raw, done = data.draw(variants(notebook, avoid))
    path = _written(tmp_path_factory.mktemp("variant"), suffix, raw)
    extracted = extract(read_notebook(path), load_rubric(rubric).policy)
    got = {n: _shape(d.node) for n, d in extracted.definitions.items()}
    for graded, shape in _graded(name).items():
        assert graded in got, (graded, done)
        assert got[graded] == shape, (graded, done)
        assert not extracted.definitions[graded].is_stub, (graded, done)


# Each example of the grading property grades a notebook in the real sandbox: seconds on an idle machine, far more on a
# busy one. A failing example is reported as drawn (its recipe, `done`, says what was changed), neither shrunk nor
# explained: both grade it again and again, traced line by line after a failure, and a failure found beside a spinner
# ran one name 419 s (17 gradings, shrinking given up after its 300 s) toward pytest's 900 s net, which ends the whole
# run with no word of what failed. So a test grades at most 1 + max_examples + 1 notebooks (the correct one, the
# drawn ones, the failing one run again to report it), whatever is drawn and however busy the machine is.
GRADING = settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                   phases=(Phase.explicit, Phase.generate))


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_any_layout_of_a_correct_notebook_grades_as_the_correct_notebook(name: str, tmp_path_factory,
                                                                          grader_cache: Path) -> None:
    notebook, avoid, rubric = _assignment(name)
    [correct] = grade([REPO / "assignments" / name / "submissions" / "correct.ipynb"], rubric,
                      tmp_path_factory.mktemp("correct"), cache=grader_cache)
    want = {e.id: e.score for e in correct.exercises}
    most = {e.id: e.max_score for e in correct.exercises}

    @GRADING
    @given(variants(notebook, avoid))
    def graded_alike(variant: tuple[str, bytes, list[str]]) -> None:
        suffix, raw, done = variant
        folder = tmp_path_factory.mktemp("graded")
        [result] = grade([_written(folder, suffix, raw)], rubric, folder / "out", cache=grader_cache)
        got = {e.id: e.score for e in result.exercises}
        # A machine so busy that it took more of a submission's time than its deadline may move by keeps cases from
        # being judged (`busy machine`, counted in the result, graded again by the next run: README "The
        # submission's budget on a busy machine"): such an exercise, in either grading, may score less here, never
        # more; every other one scores as the correct notebook's.
        busy = _busy(correct) | _busy(result)
        assert got.keys() == want.keys(), done
        assert {k: v for k, v in got.items() if k not in busy} == {k: v for k, v in want.items() if k not in busy}, \
            (done, sorted(busy))
        assert all(got[k] <= most[k] for k in busy), done

    graded_alike()


def test_a_layout_that_grades_otherwise_is_reported_after_a_bounded_number_of_gradings() -> None:
    """The grading property under GRADING, with a body that fails on every layout but the first: the failure is
    reported as found, after max_examples + 1 calls at most (each a grading in the real property), not after the
    hundreds of calls a shrink makes."""
    notebook, avoid, _ = _assignment("sliding-3x3")
    calls: list[tuple[str, bytes, list[str]]] = []

    @GRADING
    @given(variants(notebook, avoid))
    def graded_otherwise(variant: tuple[str, bytes, list[str]]) -> None:
        calls.append(variant)
        assert variant == calls[0], "graded otherwise"

    with pytest.raises(AssertionError, match="graded otherwise") as failure:
        graded_otherwise()
    assert 2 <= len(calls) <= GRADING.max_examples + 1, [done for _, _, done in calls]
    # Reported by its recipe and size, not by its bytes (megabytes when outputs were drawn).
    report = "\n".join(getattr(failure.value, "__notes__", ()))
    assert re.search(r"variant=Variant\('\.(ipynb|py)', <[\d,]+ bytes>, \[", report), report[:2000]


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_corrupted_notebook_is_read_or_refused_with_a_clear_error(tmp_path_factory, data) -> None:
    """Bytes cut, replaced or inserted anywhere in a variant (a half-uploaded file, a disk error, an editor's
    slip): reading gives cells or one NotebookError naming the file, and extraction never raises."""
    name = data.draw(st.sampled_from(ASSIGNMENTS))
    notebook, avoid, _ = _assignment(name)
    suffix, raw, _ = data.draw(variants(notebook, avoid))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw)))
        end = data.draw(st.integers(at, min(len(raw), at + 64)))
        raw = raw[:at] + data.draw(st.binary(max_size=16)) + raw[end:]
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    path = _written(tmp_path_factory.mktemp("corrupt"), suffix, raw)
    try:
        read = read_notebook(path)
    except NotebookError as error:
        assert str(error).startswith(f"{path}: ") and "\n" not in error.reason
        return
    extract(read, load_rubric(_assignment(name)[2]).policy)


@st.composite
def _cells_run_in_order(draw: st.DrawFn) -> list[str]:
    """Cells that run without error in the order given (each uses only what an earlier one binds, when its own
    statement runs): classes with a base and class attributes, decorators, functions with defaults, data, an
    attribute set on a class."""
    kinds: list[str] = []
    cells: list[str] = []
    for i in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["class", "decorator", "function", "data", "attach"]))
        uses = sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=3)))) if i else []
        names = [f"n{j}" for j in uses]
        base = next((f"n{j}" for j in uses if kinds[j] == "class"), "")
        plain = "".join(f"{name}, " for name in names if name != base)   # a tuple's items: "" is ()
        if kind == "class":
            cell = f"class n{i}({base}):\n    uses = ({plain})\n\n    def later(self):\n        return n_never_bound"
        elif kind == "decorator":
            cell = f"def n{i}(f, uses=({''.join(f'{name}, ' for name in names)})):\n    return f"
        elif kind == "function":
            decorators = "".join(f"@{name}\n" for j, name in zip(uses, names, strict=True) if kinds[j] == "decorator")
            cell = f"{decorators}def n{i}(x=({plain})):\n    return x"
        elif kind == "attach" and base:    # a class given an attribute in a later cell
            cell = f"{base}.extra = n{i} = ({plain})"
        else:
            cell = f"n{i} = ({''.join(f'{name}, ' for name in names)})"
        kinds.append(kind)
        cells.append(cell)
    return cells


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(_cells_run_in_order(), st.randoms(use_true_random=False))
def test_cells_run_in_a_working_order_load_in_any_order_they_stand_in(cells: list[str], random) -> None:
    """A student runs the cells in an order that works, then moves them (or writes them out of order): every
    definition must still be bound at load, whatever its statement evaluates (a base, a decorator, a default,
    a class attribute), and nothing graded is lost to a NameError the student never saw."""
    order = list(range(len(cells)))
    random.shuffle(order)
    graded = "def graded():\n    return (" + ", ".join(f"n{i}" for i in range(len(cells))) + ",)"
    script = "".join(f"# %%\n{cells[i]}\n\n" for i in order) + f"# %%\n{graded}\n"
    extracted = extract(notebook_from_source(script), Policy(roots=frozenset({"graded"})))
    namespace: dict[str, object] = {}
    exec(compile(extracted.source(), "<extracted>", "exec"), namespace)
    assert {f"n{i}" for i in range(len(cells))} <= set(namespace), script


# ---------------------------------------------------------------- Run All: what Jupyter binds, the grader binds

_RUN_ALL_ROOTS = ("g", "goal", "level", "width")


@st.composite
def _notebook_of_redefinitions(draw: st.DrawFn) -> list[str]:
    """Cells a student leaves in the order they stand, each of which runs in Jupyter (or is a syntax error Jupyter
    refuses too): functions redefined in later cells, read at call time or captured where they stand (an alias, a
    default, a decorator, a class attribute, data computed from them, a closure, functools), redefinitions under
    %%time or inside try, a `__main__` block, a function that sets names as `global` and a call of it, cells run
    twice, a star import over a function of the same name, an assignment expression in a statement (`print(goal :=
    h(3))`), line magics and cells that do not parse."""
    k = st.integers(1, 9)
    cells = [f"def h(x):\n    return x + {draw(k)}", "def g(x):\n    return h(x) * 2", f"goal = {draw(k)}"]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["def", "alias", "default", "decorator", "data", "main", "global", "syntax",
                                     "timeit", "time", "class", "closure", "mutate", "lambda", "redefine_g", "try",
                                     "partial", "cache", "twice", "star", "shell", "walrus"]))
        if kind == "def":
            cells.append(f"def h(x):\n    return x * {draw(k)}")
        elif kind == "alias":
            cells += ["heur = h", "def g(x):\n    return heur(x) + goal"]
        elif kind == "default":
            cells.append("def g(x, f=h):\n    return f(x) - goal")
        elif kind == "decorator":
            cells += ["def twice(f):\n    return lambda x: f(f(x))", f"@twice\ndef h(x):\n    return x + {draw(k)}"]
        elif kind == "data":
            cells.append(f"goal = h({draw(k)})")
        elif kind == "main":
            cells.append(f"if __name__ == '__main__':\n    goal = h({draw(k)})\n    print(g(1))")
        elif kind == "global":   # nothing else binds level and width: only the call does
            cells.append(f"def setup():\n    global level\n    level = {draw(k)}\n    init()\n\n"
                         "def init():\n    global width\n    width = 3")
            cells.append(draw(st.sampled_from(["setup()", "if __name__ == '__main__':\n    setup()",
                                               "def main():\n    setup()\n\nmain()", "done = [setup()]"])))
            cells.append("def g(x):\n    return h(x) + level * width")
        elif kind == "syntax":
            cells.append(draw(st.sampled_from(["def h(x):\n    return (x +", "goal = = 3", "def g(x)\n    return 0"])))
        elif kind == "timeit":
            cells.append("%timeit -n1 -r1 g(1)\n!echo hello")
        elif kind == "time":
            cells.append(f"%%time\ndef h(x):\n    return x - {draw(k)}")
        elif kind == "class":
            cells.append("class Box:\n    f = staticmethod(h)\n\ndef g(x):\n    return Box.f(x)")
        elif kind == "closure":
            cells.append(f"def make(n):\n    def h(x):\n        return x * n\n    return h\n\nh = make({draw(k)})")
        elif kind == "mutate":
            cells += ["table = [h(1)]", "table.append(h(2))\n\ndef g(x):\n    return table[-1] + x"]
        elif kind == "lambda":
            cells.append(f"h = lambda x: x ** 2 + {draw(k)}")
        elif kind == "redefine_g":
            cells.append("def g(x):\n    return h(x) + goal")
        elif kind == "try":
            cells.append(f"try:\n    def h(x):\n        return -x * {draw(k)}\nexcept Exception:\n    pass")
        elif kind == "partial":
            cells.append(f"from functools import partial\n\ndef add(a, x):\n    return a + x\n\nh = partial(add, "
                         f"{draw(k)})")
        elif kind == "cache":
            cells.append(f"from functools import lru_cache\n\n@lru_cache\ndef h(x):\n    return x * 100 + {draw(k)}")
        elif kind == "twice":
            cells.append(cells[draw(st.integers(0, len(cells) - 1))])
        elif kind == "star":
            cells += ["def floor(x):\n    return -x", "def g(x):\n    return floor(h(x) / 2)"]
            cells.insert(draw(st.integers(len(cells) - 1, len(cells))), "from math import *")
        elif kind == "walrus":    # shown and bound at once
            cells.append(draw(st.sampled_from([f"print(goal := h({draw(k)}))", f"if (goal := h({draw(k)})) > 0:\n"
                                               "    print(goal)", "for _ in range(goal := 2):\n    pass"])))
        else:
            cells.append("files = !ls\n%matplotlib inline")
    return cells


class _Kernel:
    """What the cells ask of IPython: %%time and %%capture run their body as a cell; other magics and the shell
    change nothing these cells use."""

    def __init__(self, namespace: dict[str, object]) -> None:
        self.namespace = namespace

    def run_cell(self, source: str) -> None:
        from IPython.core.inputtransformer2 import TransformerManager
        try:
            exec(compile(TransformerManager().transform_cell(source), "<cell>", "exec"), self.namespace)
        except Exception:    # Jupyter stops the cell and goes on with the next one the student runs
            pass

    def run_cell_magic(self, name: str, line: str, cell: str) -> None:
        if name in ("time", "capture"):
            self.run_cell(cell)

    def run_line_magic(self, name: str, line: str) -> None:
        return None

    def system(self, command: str) -> list[str]:
        return []

    getoutput = system


def _probed(value: object) -> object:
    if not callable(value):
        return repr(value)
    answers = []
    for x in (0, 1, 2):
        try:
            answers.append(repr(value(x)))
        except Exception as error:
            answers.append(type(error).__name__)
    return answers


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(_notebook_of_redefinitions())
def test_the_grader_binds_what_run_all_binds_however_often_a_name_is_redefined(cells: list[str]) -> None:
    """Restart & Run All in Jupyter, then call the graded names: the last definition wins where the call reads it,
    and what a statement captured where it stands keeps what it captured. The statements extraction keeps, run as
    the grader runs them (in order, an error ending only its statement), must give the graded names the same values
    and answers."""
    import contextlib
    import io
    jupyter: dict[str, object] = {"__name__": "__main__"}
    kernel = _Kernel(jupyter)
    jupyter["get_ipython"] = lambda: kernel
    grader: dict[str, object] = {"__name__": "__main__", "get_ipython": lambda: kernel}
    notebook = notebook_from_source("".join(f"# %%\n{cell}\n\n" for cell in cells))
    extracted = extract(notebook, Policy(roots=frozenset(_RUN_ALL_ROOTS)))
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in cells:
            kernel.run_cell(cell)
        for statement in extracted.statements:
            try:
                exec(compile(statement.code, "<statement>", "exec"), grader)
            except Exception:
                pass
        assert {name: _probed(grader.get(name)) for name in _RUN_ALL_ROOTS} == \
            {name: _probed(jupyter.get(name)) for name in _RUN_ALL_ROOTS}, extracted.source()
