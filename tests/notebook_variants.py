"""Notebooks that Jupyter runs as it runs a correct solution: the habits of real students, drawn by Hypothesis.

A variant is a correct bundled notebook changed only in ways that leave what Jupyter defines the same: its code
cells indented as a whole, pasted with a session's prompts, under `%%time` or `%%capture`, with line magics and
shell lines on top, wrapped in `if True:`/`try:`/`with`/a loop run once, decorated with a decorator that returns
the function, re-run, preceded by the template's stub of the same function or followed by a try of it that does
not parse, with CRLF line ends or tabs; noise cells anywhere (searches, prints, plots, input(), timing loops,
exits, other cell magics, top-level await, NUL bytes and lone surrogates, cells with syntax errors); markdown and
raw cells holding code; odd metadata, outputs (megabytes of them) and attachments; saved mid-run; nbformat 3 or
4.0-4.5; a cell whose names no other cell binds moved elsewhere (run out of order); and the file written
with or without a BOM, indented or not, CRLF, ASCII-escaped or not, or as nbconvert's script export.
So a variant must grade as the correct notebook does, and no variant may stop the grader. The IPython habits were
checked against IPython 9.18 (InteractiveShell.run_cell defines the same functions) before they joined.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from typing import Any

from hypothesis import strategies as st

# Cells a student leaves around: what they bind is checked against the notebook's names before one is added.
NOISE = (
    "print('hello')",
    "name = input('Your name: ')\nprint(name)",
    "import time\nt0 = time.time()\nfor i in range(10**9):\n    pass\nprint(time.time() - t0)",
    "while True:\n    pass",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 5, 6])\nplt.title('Lösung')\nplt.show()",
    "%matplotlib inline",
    "!pip install --quiet ipycanvas",
    "%%bash\necho hello\nsleep 100",
    "%%HTML\n<style>td {font-size: 20px}</style>",
    "%timeit sum(range(100))",
    "%%timeit\nsum(range(100))",
    "import sys\nsys.exit(0)",
    "raise SystemExit('stop here')",
    "exit()",
    "assert 1 + 1 == 3, 'oops'",
    "1/0",
    "def helper_unused(x):\n    return x * 2\n\nhelper_unused(3)",
    "class Demo:\n    def run(self):\n        return 42\n\nDemo().run()",
    "from IPython.display import display, Markdown, clear_output\ndisplay(Markdown('**done**'))\n"
    "clear_output(wait=True)",
    "import os\nos.listdir('.')",
    "%load_ext autoreload\n%autoreload 2",
    "?print",
    "print??",
    "%who",
    "import random\nrandom.seed(42)",
    "import sys\nsys.setrecursionlimit(10000)",
    "import asyncio\nawait asyncio.sleep(0)",
    "import asyncio\nasync def tick():\n    await asyncio.sleep(0)\nawait tick()",
    "for i in range(3):\n    print(i, end=' ')",
    "try:\n    import google.colab\n    IN_COLAB = True\nexcept ImportError:\n    IN_COLAB = False",
    "import sys\nif 'google.colab' in sys.modules:\n    !pip install ipycanvas",
    "from tqdm import tqdm\nfor _ in tqdm(range(10)):\n    pass",
    "%%writefile scratch.txt\nsome notes",
    "x = 5; y = x ** 2; print(y)",
    "square = lambda v: v * v",
    "if __name__ == '__main__':\n    print('run as a script')",
    "print('\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07')",
    "s = 'a\x00b'",
    "s = '\ud83d'",
    "# nothing but a comment \u202e evil",
    "",
    "   ",
    "%%time\nimport math",
    "files = !ls\nprint(files)",
    "%env PYTHONHASHSEED=0",
    "%cd .",
    "del zz_never_bound",
    "def half_written(S:\n    return",
    "for i in range(3)\n    print(i)",
    "print('unclosed",
    "x = [1, 2,\n",
    "if True:\nprint('no indent')",
    "globals()['zz_dynamic'] = 1",
)

MARKDOWN = (
    "# Lösung\nSome text",
    "```python\ndef findZero(S):\n    return (0, 0)\n```",
    "$$\\sum_{i=1}^n i$$",
    "<img src='attachment:image.png'>",
    "half an emoji \ud83d and a NUL \x00 and \u202e",
    "x" * 5000,
)
RAW = ("def findZero(S):\n    return 0", "def solve(state):\n    return []", "%%time\n!ls")

_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
OUTPUTS = (
    {"output_type": "stream", "name": "stdout", "text": ["hi\n", "\x1b[31mred\x1b[0m\n"]},
    {"output_type": "stream", "name": "stderr", "text": "half \ud800 surrogate \x00 NUL"},
    {"output_type": "execute_result", "execution_count": 7, "metadata": {}, "data": {"text/plain": ["(0, 1)"]}},
    {"output_type": "display_data", "metadata": {"image/png": {"width": 1}}, "data": {"image/png": _PNG,
                                                                                      "text/plain": ["<Figure>"]}},
    {"output_type": "error", "ename": "KeyboardInterrupt", "evalue": "",
     "traceback": ["\x1b[0;31m-----------\x1b[0m", "\x1b[0;31mKeyboardInterrupt\x1b[0m: "]},
)
# A notebook saved with what a search printed or drew: megabytes of text and images (under the 100 MB a submission
# may have), and many outputs in one cell.
HUGE_OUTPUTS = (
    [{"output_type": "stream", "name": "stdout", "text": ["((1, 2, 3), (4, 5, 6), (7, 8, 0))\n"] * 60_000}],
    [{"output_type": "display_data", "metadata": {}, "data": {"image/png": _PNG * 40_000}}],
    [{"output_type": "stream", "name": "stdout", "text": f"step {n}: [[1, 2], [3, 0]]\n"} for n in range(3_000)],
)
CELL_METADATA = (
    {"tags": ["solution", "\ud800"]},
    {"collapsed": True, "scrolled": "auto"},
    {"jupyter": {"source_hidden": True, "outputs_hidden": True}},
    {"deletable": False, "editable": False, "nbgrader": {"grade": True, "grade_id": "cell-1", "locked": False,
                                                         "points": 2, "schema_version": 3, "solution": True}},
    {"execution": {"iopub.execute_input": "2023-03-01T10:00:00.000Z", "shell.execute_reply": "2023-03-01"}},
    {"colab": {"base_uri": "https://localhost:8080/", "height": 35}, "outputId": "0f1e2d3c"},
    {"slideshow": {"slide_type": "slide"}, "\u0000": None},
)
NOTEBOOK_METADATA = (
    {"colab": {"provenance": [], "collapsed_sections": []}, "accelerator": "GPU"},
    {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}},
    {"language_info": {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                       "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                       "pygments_lexer": "ipython3", "version": "3.8.10"}},
    {"celltoolbar": "Create Assignment", "toc": {"base_numbering": 1}},
    {"vscode": {"interpreter": {"hash": "ab" * 32}}, "\ud800": "x"},
)

CELL_MAGICS = ("%%time\n", "%%capture\n", "\n%%time\n", "%%capture out\n", "%%time\n\n")
LINE_MAGICS = ("%matplotlib inline", "%load_ext autoreload\n%autoreload 2", "!pip install -q tqdm",
               "%config Completer.use_jedi = False", "listing = !ls", "%precision 3", "# comment ünïcödé 🙂")
WRAPPERS = ("if True:", "try:|except Exception:\n    pass", "try:|finally:\n    pass",
            "import contextlib\nwith contextlib.suppress(ImportError):", "for _once in range(1):",
            "while True:|    break", "if __debug__:|else:\n    pass", "if __name__ == '__main__':")
# A later try of the same function that does not parse, left below the right one: Jupyter refuses the cell and
# keeps the function it had.
BROKEN = ("return (", "return [x for x in", "if S:\n    return")
STUBS = ("pass", "'your code here'", "raise NotImplementedError", "...", "return None")
# An earlier wrong try of the same function, left above the right one (Jupyter, run top to bottom, ends with the
# last): not a stub, so only the order of definitions can tell them apart.
DRAFTS = ("return 'an earlier try'", "return -1", "print('draft')\n    return []")
# Star imports a student writes on top: of the standard library, or of the course's support module.
STAR_IMPORTS = ("from math import *", "from collections import *", "from heapq import *", "from Set import *")


def _code(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _magic_free(source: str) -> bool:
    return not any(line.lstrip().startswith(("%", "!", "?")) or line.rstrip().endswith("?")
                   for line in source.splitlines()) and "get_ipython" not in source


def _only_definitions(tree: ast.Module) -> bool:
    return bool(tree.body) and all(isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
                                   for node in tree.body)


def _bound(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return names


def _module_names(tree: ast.Module) -> set[str]:
    """The names a cell binds in the notebook's namespace: not a function's or a class's own (its methods, its
    locals), which any number of cells may share."""
    names: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            stack.extend([*node.decorator_list, *getattr(node, "bases", ())])
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return names


def _names(source: str) -> set[str] | None:
    """What a cell binds in the notebook's namespace as IPython runs it (its magics calls of get_ipython()), None
    when it does not parse."""
    from IPython.core.inputtransformer2 import TransformerManager
    try:
        tree = _tree(TransformerManager().transform_cell(source))
    except Exception:   # IPython's own parse of a cell it cannot run
        return None
    return _module_names(tree) if tree is not None else None


def _only_definitions_run(source: str) -> bool:
    """Whether the cell, as IPython runs it, only imports and defines functions and classes (decorated or not,
    with any defaults and bases): where it stands is then no matter, as long as the student ran it before what
    needs it. A def or class waits for what its own statement evaluates, and a statement for what it reads
    (extraction's _after_late_definitions); a star import binds names nobody can list, so its cell stays."""
    from IPython.core.inputtransformer2 import TransformerManager
    try:
        tree = _tree(TransformerManager().transform_cell(source))
    except Exception:
        return False
    return tree is not None and bool(tree.body) and all(
        isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import))
        or isinstance(node, ast.ImportFrom) and all(alias.name != "*" for alias in node.names)
        or isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_magic_call(node.value)
        for node in tree.body)


def _is_magic_call(call: ast.Call) -> bool:
    """`get_ipython().run_line_magic(...)` / `.system(...)`: a line magic as IPython runs it, which binds nothing."""
    func = call.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and \
        isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython"


def _indented(source: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else line for line in source.split("\n"))


def _wrapped(source: str, wrapper: str) -> str:
    head, _, tail = wrapper.partition("|")
    return f"{head}\n{_indented(source, '    ')}\n{tail}".rstrip("\n") if tail else \
        f"{head}\n{_indented(source, '    ')}"


def _prompted(source: str, ipython: bool) -> str:
    lines = source.split("\n")
    if ipython:
        return "\n".join(["In [5]: " + lines[0], *("   ...: " + line for line in lines[1:])])
    return "\n".join([">>> " + lines[0], *(("... " + line) if line else "..." for line in lines[1:])])


def _tabbed(source: str) -> str | None:
    """Every indent of four spaces a tab, when the tree stays the same (no string's text changes)."""
    tabbed = "\n".join(re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m[1]) // 4), line)
                       for line in source.split("\n"))
    before, after = _tree(source), _tree(tabbed)
    if before is None or after is None or ast.dump(before) != ast.dump(after):
        return None
    return tabbed


def _decorated(source: str, decorator: str) -> str:
    tree = _tree(source)
    assert tree is not None
    lines = source.split("\n")
    for node in sorted((n for n in tree.body if isinstance(n, ast.FunctionDef)), key=lambda n: -n.lineno):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        lines.insert(first, decorator)
    return "\n".join(lines)


def _stub(source: str, body: str) -> str:
    tree = _tree(source)
    assert tree is not None
    stubs = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            stubs.append(f"def {node.name}({ast.unparse(node.args)}):\n    {body}")
    return "\n\n".join(stubs)


def _merged(draw: st.DrawFn, cells: list[dict], names: dict[int, set[str]], done: list[str]) -> None:
    """Join a code cell of definitions alone with the code cell right after it (both plain Python)."""
    def plain(cell: dict) -> ast.Module | None:
        text = _code(cell)
        return _tree(text) if cell["cell_type"] == "code" and _magic_free(text) and "\r" not in text else None

    pairs = [n for n in range(len(cells) - 1) if (first := plain(cells[n])) is not None
             and _only_definitions(first) and plain(cells[n + 1]) is not None
             and id(cells[n]) in names and id(cells[n + 1]) in names]
    if not pairs:
        return
    n = draw(st.sampled_from(pairs))
    second = cells.pop(n + 1)
    cells[n]["source"] = _code(cells[n]).rstrip("\n") + "\n\n" + _code(second)
    names[id(cells[n])] |= names.pop(id(second))
    done.append(f"cells {n} and {n + 1} merged")


def _as_source(text: str, form: str) -> Any:
    if form == "string":
        return text
    if form == "chars":
        return list(text)
    return text.splitlines(keepends=True)


class Variant(tuple[str, bytes, list[str]]):
    """(suffix, file bytes, what was done), shown by its recipe and size: Hypothesis reports a failing example by its
    repr, and a layout's bytes may be megabytes of outputs (a 2.4 MB repr, Hypothesis warns, that no one reads)."""

    def __repr__(self) -> str:
        return f"Variant({self[0]!r}, <{len(self[1]):,} bytes>, {self[2]!r})"


@st.composite
def variants(draw: st.DrawFn, notebook: dict, avoid: frozenset[str]) -> Variant:
    """(suffix, file bytes, what was done) of a variant of `notebook` (nbformat 4 JSON) that Jupyter runs the
    same; `avoid`: names a noise cell must not bind (the notebook's and the rubric's)."""
    done: list[str] = []
    cells: list[dict] = []
    noted = draw(st.booleans())
    decorator_cell = False
    names: dict[int, set[str]] = {}     # id of a code cell -> the names its Python binds (before any change)
    for cell in copy.deepcopy(notebook["cells"]):
        if cell["cell_type"] != "code":
            cells.append(cell)
            continue
        text = original = _code(cell)
        tree = _tree(text)
        plain = tree is not None and _magic_free(text)
        definitions = plain and tree is not None and _only_definitions(tree)
        if not draw(st.integers(0, 2)):       # most cells are left as they are
            cells.append(cell)
            if (bound := _names(text)) is not None:
                names[id(cell)] = bound
            continue
        ops = draw(st.lists(st.sampled_from(["wrap", "decorate", "stub_before", "broken_after", "rerun", "tabs",
                                             "line_magics",
                                             "indent", "prompts", "cell_magic", "crlf", "trailing"]),
                            max_size=4, unique=True))
        before: list[dict] = []
        after: list[dict] = []
        # Order matters: what changes the Python first, then what IPython takes off again, the cell magic last.
        if "stub_before" in ops and definitions and tree is not None and any(
                isinstance(n, ast.FunctionDef) for n in tree.body):
            body = draw(st.sampled_from(STUBS + DRAFTS))
            before.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": _stub(text, body)})
            done.append(f"{'stub' if body in STUBS else 'draft'} before cell {len(cells)}")
        if "decorate" in ops and definitions and tree is not None and any(
                isinstance(n, ast.FunctionDef) for n in tree.body):
            decorator = draw(st.sampled_from(["@noop", "@(lambda f: f)"]))
            text = _decorated(text, decorator)
            decorator_cell = decorator_cell or decorator == "@noop"
            done.append(f"{decorator} in cell {len(cells)}")
        if "tabs" in ops and plain and (tabbed := _tabbed(text)) is not None:
            text = tabbed
            done.append(f"tabs in cell {len(cells)}")
        if "wrap" in ops and plain:
            wrapper = draw(st.sampled_from(WRAPPERS))
            text = _wrapped(text, wrapper)
            done.append(f"cell {len(cells)} wrapped in {wrapper.splitlines()[-1].split('|')[0]}")
        if "line_magics" in ops and not text.lstrip().startswith("%%"):
            text = draw(st.sampled_from(LINE_MAGICS)) + "\n" + text
            done.append(f"line magics on cell {len(cells)}")
        if "indent" in ops and not text.lstrip().startswith("%%"):
            text = _indented(text, draw(st.sampled_from(["    ", "  ", "\t", " "])))
            done.append(f"cell {len(cells)} indented")
        elif "prompts" in ops and not text.lstrip().startswith("%%"):
            ipython = draw(st.booleans())
            text = _prompted(text, ipython)
            done.append(f"cell {len(cells)} pasted with {'ipython' if ipython else 'classic'} prompts")
        if "cell_magic" in ops and not text.lstrip().startswith("%%"):
            text = draw(st.sampled_from(CELL_MAGICS)) + text
            done.append(f"cell magic on cell {len(cells)}")
        if "trailing" in ops:
            text = text.replace("\n", "  \n") + draw(st.sampled_from(["\n", "\n\n", "  ", "\t\n"]))
            done.append(f"trailing blanks in cell {len(cells)}")
        if "crlf" in ops:
            text = text.replace("\n", "\r\n")
            done.append(f"CRLF in cell {len(cells)}")
        if "rerun" in ops and definitions:
            after.append(copy.deepcopy(cell))
            done.append(f"cell {len(cells)} twice")
        if "broken_after" in ops and definitions and tree is not None and any(
                isinstance(n, ast.FunctionDef) for n in tree.body):
            after.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                          "source": _stub(original, draw(st.sampled_from(BROKEN)))})
            done.append(f"broken redefinition after cell {len(cells)}")
        cell["source"] = text
        cells += [*before, cell, *after]
        for added in (*before, cell, *after):
            if (bound := _names(_code(added) if added is not cell else original)) is not None:
                names[id(added)] = bound
    # Two cells as one (a cell of definitions and the cell after it, both Python): what they define and run is the
    # same, in the same order; a statement's error still stops only what follows it.
    if draw(st.integers(0, 2)) == 0:
        _merged(draw, cells, names, done)
    # Cells out of order (run in another order than they stand): a cell of imports, functions and classes whose
    # names no other cell binds, moved (what needs them waits for them: extraction's _after_late_definitions).
    if draw(st.integers(0, 2)) == 0:
        binders: dict[str, int] = {}
        for cell in cells:
            for bound in names.get(id(cell), ()):
                binders[bound] = binders.get(bound, 0) + 1
        unknown = any(cell["cell_type"] == "code" and id(cell) not in names for cell in cells)
        movable = [] if unknown else [n for n, cell in enumerate(cells) if names.get(id(cell))
                                      and all(binders[bound] == 1 for bound in names[id(cell)])
                                      and _only_definitions_run(_code(cell))]
        for _ in range(draw(st.integers(1, 3))):
            if not movable:
                break
            source = draw(st.sampled_from(movable))
            target = draw(st.integers(0, len(cells) - 1))
            cells.insert(target, cells.pop(source))
            done.append(f"cell {source} moved to {target}")
            movable = []   # positions changed: one move per variant keeps the recipe readable
    if decorator_cell:    # anywhere: the student ran it first, wherever it stands now
        at = draw(st.integers(0, len(cells)))
        cells.insert(at, {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                          "source": "def noop(f):\n    return f"})
        if at:
            done.append(f"noop defined at {at}")
    # A star import on top: anything the notebook binds below wins over what it brings, as in Jupyter.
    if draw(st.integers(0, 3)) == 0:
        star = draw(st.sampled_from(STAR_IMPORTS))
        cells.insert(0, {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": star})
        done.append(star)
    # Noise anywhere: never binding a name the notebook or the rubric uses.
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["code", "code", "markdown", "raw"]))
        if kind == "code":
            source = draw(st.sampled_from(NOISE))
            tree = _tree(source)
            if tree is not None and _bound(tree) & avoid:
                continue
        else:
            source = draw(st.sampled_from(MARKDOWN if kind == "markdown" else RAW))
        new: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            new.update(execution_count=None, outputs=[])
        if "attachment:" in source:
            new["attachments"] = {"image.png": {"image/png": _PNG}}
        position = draw(st.integers(0, len(cells)))
        cells.insert(position, new)
        done.append(f"{kind} noise {source[:30]!r} at {position}")
    # Metadata, outputs, counts and how each source is stored.
    form = draw(st.sampled_from(["lines", "string", "chars"]))
    # Saved mid-run: the cells above one ran (counts in order, outputs), that one was interrupted, none below ran.
    stopped = draw(st.integers(0, len(cells))) if draw(st.integers(0, 3)) == 0 else None
    if stopped is not None:
        done.append(f"saved while cell {stopped} ran")
    huge = draw(st.integers(0, len(cells) - 1)) if cells and draw(st.integers(0, 7)) == 0 else None
    for n, cell in enumerate(cells):
        cell["source"] = _as_source(_code(cell), form)
        cell["id"] = f"v-{n}"
        if noted and draw(st.integers(0, 3)) == 0:
            cell["metadata"] = copy.deepcopy(draw(st.sampled_from(CELL_METADATA)))
        if cell["cell_type"] == "code":
            if draw(st.integers(0, 3)) == 0:
                cell["outputs"] = copy.deepcopy(draw(st.lists(st.sampled_from(OUTPUTS), max_size=3)))
            cell["execution_count"] = draw(st.one_of(st.none(), st.integers(1, 500)))
            if stopped is not None:
                cell["execution_count"] = n + 1 if n < stopped else None
                if n == stopped:
                    cell["outputs"] = [copy.deepcopy(OUTPUTS[-1])]     # KeyboardInterrupt
                elif n > stopped:
                    cell["outputs"] = []
            if n == huge:
                cell["outputs"] = copy.deepcopy(draw(st.sampled_from(HUGE_OUTPUTS)))
                done.append(f"huge outputs in cell {n}")
    result: dict[str, Any] = {"nbformat": 4, "nbformat_minor": 5, "metadata": copy.deepcopy(notebook["metadata"]),
                              "cells": cells}
    if noted:
        result["metadata"].update(copy.deepcopy(draw(st.sampled_from(NOTEBOOK_METADATA))))
    minor = draw(st.sampled_from([5, 5, 4, 3, 2, 1, 0]))
    if minor < 5:
        result["nbformat_minor"] = minor
        for cell in cells:
            del cell["id"]
    if draw(st.integers(0, 5)) == 0:
        # Jupyter's "Download as Python" (nbconvert's exporter): magics as calls of IPython, `# In[ ]:` markers.
        import nbformat
        from nbconvert.exporters import PythonExporter
        node = copy.deepcopy(result)
        # A raw cell's text goes into the script as it is: no Python, and nothing Jupyter ever ran.
        node["cells"] = [cell for cell in node["cells"] if cell["cell_type"] != "raw"]
        for cell in node["cells"]:
            cell["source"] = _code(cell)     # as nbformat.reads gives it
        script, _ = PythonExporter().from_notebook_node(nbformat.from_dict(node))
        if not re.search(r"[\ud800-\udfff]", script):     # the exporter's file write refuses such text too
            done.append("nbconvert script")
            return Variant((".py", script.encode("utf-8"), done))
    version = draw(st.sampled_from([4, 4, 4, 3]))
    if version == 3:
        import nbformat
        for cell in cells:
            cell["source"] = _code(cell)
        result = json.loads(json.dumps(nbformat.convert(nbformat.from_dict(result), 3)))
        for cell in result["worksheets"][0]["cells"]:
            key = "input" if cell["cell_type"] == "code" else "source"
            # nbformat 3 joins a list with "\n" unless its first line ends with one (as Jupyter reads it too): its
            # writers stored splitlines(keepends=True), never single characters.
            cell[key] = _as_source(_code({"source": cell[key]}), "string" if form == "chars" else form)
        done.append("nbformat 3")
    text = json.dumps(result, indent=draw(st.sampled_from([None, 1, 2, 4])), ensure_ascii=draw(st.booleans()),
                      sort_keys=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")     # outside strings only: json.dumps escapes a newline in a string
        done.append("CRLF file")
    data = _encoded(text)
    if draw(st.integers(0, 4)) == 0:
        data = b"\xef\xbb\xbf" + data
        done.append("BOM")
    return Variant((".ipynb", data, done))


def _encoded(text: str) -> bytes:
    """UTF-8, with each lone surrogate written as JSON's escape (what ensure_ascii=False leaves in the text)."""
    return re.sub(r"[\ud800-\udfff]", lambda m: f"\\u{ord(m[0]):04x}", text).encode("utf-8")
