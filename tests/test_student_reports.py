"""Per-student feedback (Markdown, HTML, the annotated notebook, the terminal self-check) read from real results."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import nbformat
from rich.console import Console

from conftest import SUBMISSIONS, Batch
from testclock import within
from grader.report import annotated, boards, formats, student
from grader.report.console import student_report
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult, advised
from grader import codec
from grader.intake.warning import GraderWarning, Kind

TRANSPOSED = "move-dir-transposed"
HIDDEN_MOVE_DIR_CALL = "move_dir(S1, 2, 2, -1, 0)"    # a hidden case of the rubric: never shown by default


def public_only(result: SubmissionResult) -> SubmissionResult:
    """What a student's self-check produces: the same submission with its public cases only."""
    return replace(result, exercises=tuple(
        replace(e, cases=tuple(c for c in e.cases if c.visibility == "public")) for e in result.exercises))


def hostile_result() -> SubmissionResult:
    """A result full of text a student controls: name, call, message, output, traceback, tiles."""
    script = "<script>alert('x')</script>"
    expected, got = codec.encode((("<b>", "0"), ("*", "1"))), codec.encode((("<scri", "0"), ("*", "1")))
    case = CaseResult(id="c#1", status="fail", visibility="public", message=f"bad {script} [link](http://evil)",
                      call=f"f({script!r})", expected=expected, got=got, output=f"printed {script}\n" * 100,
                      traceback=f"  cell 2, line 1, in f\n    {script}")
    exercise = ExerciseResult(id="f", title=f"Title {script}", score=0.0, max_score=1.0, cases=(case,),
                              notes=(f"note {script}",), function="f", location="cell 2, line 1")
    return SubmissionResult(submission=f"eve{script}", path="", sha256="", rubric="r", rubric_sha256="",
                            grader_version="0", isolation="namespaces", total=0.0, max_total=1.0,
                            exercises=(exercise,),
                            warnings=(GraderWarning(Kind.LOAD_ERROR, f"warning {script}", script, 1, "cell 2", 1),))


# ---------------------------------------------------------------------------------------------- Markdown


def test_markdown_draws_failed_move_dir_cases_as_boards_and_only_counts_hidden_ones(bundled: Batch) -> None:
    text = student.markdown_report(bundled[TRANSPOSED])
    assert "**Score: 28 / 30**" in text
    assert "## move\\_dir: Move the blank (0 / 2)" in text
    assert "#### ✗ `move_dir(Start, 0, 0, 1, 0)` — failed" in text
    assert "│[14]│[  ]│  8 │ 12 │   │[10]│[14]│  8 │ 12 │" in text       # expected beside got, cells marked
    assert "Rows and columns look swapped" in text
    assert "*12 hidden cases: 11 failed, 1 raised an error.*" in text
    assert HIDDEN_MOVE_DIR_CALL not in text
    assert "'10', '8', '13', '12'" not in text          # the first hidden case's expected first row
    assert "def move_dir" not in text                   # the student's code is for the HTML page


def test_hidden_details_show_the_hidden_cases_when_the_ta_asks(bundled: Batch) -> None:
    text = student.markdown_report(bundled[TRANSPOSED], hidden_details=True)
    assert HIDDEN_MOVE_DIR_CALL in text
    # The hidden cases fail with the same known mistake as the public ones (its `mistake` field): one group.
    assert "hidden cases: 11 failed" in text            # still counted in the table
    html = student.html_report(bundled[TRANSPOSED], hidden_details=True)
    assert HIDDEN_MOVE_DIR_CALL in html and "(hidden case)" in html


def test_an_error_shows_the_traceback_pointing_at_the_notebook_cell(bundled: Batch) -> None:
    text = student.markdown_report(bundled["extract-move-of-tile"])
    assert "#### ! `main()  after Start = EasyStart` — raised an error" in text
    assert "In [26] (cell 44), line 3, in move_dir" in text
    assert "Printed output:" in text and "Number of states visited: 48" in text


def test_a_self_check_that_passes_claims_only_the_public_cases(bundled: Batch) -> None:
    checked = public_only(bundled["correct"])
    assert "Every public case passes." in student.markdown_report(checked)
    assert "Every public case passes." in student.html_report(checked)
    graded = student.markdown_report(bundled["correct"])
    assert "Every case passes, hidden ones included." in graded
    assert "all tests passed" not in (graded + student.markdown_report(checked)).lower()


def test_markdown_escapes_what_the_student_wrote() -> None:
    text = student.markdown_report(hostile_result())
    # Inside code spans and fenced blocks Markdown shows text literally; everywhere else it must be escaped.
    prose = re.sub(r"(`+).*?\1", "", re.sub(r"(?ms)^(`{3,})\w*\n.*?^\1$", "", text))
    assert "<script>" in text and "<script>" not in prose and "\\<script\\>" in prose
    assert "\\[link\\](http://evil)" in text
    assert "... (output cut)" in text                  # 100 printed lines cut to the first 30


# ---------------------------------------------------------------------------------------------- HTML


def test_html_report_draws_boards_and_shows_the_students_own_code_of_failing_functions(bundled: Batch) -> None:
    result = bundled[TRANSPOSED]
    notebook = student.locate_notebook(result, None)
    assert notebook == SUBMISSIONS / f"{TRANSPOSED}.ipynb"
    code = student.function_code(notebook, [e for e in result.exercises if student.needs_section(e)])
    assert set(code) == {"move_dir"}
    assert code["move_dir"].startswith("def move_dir(S: State, row: int, col: int, dx: int, dy: int) -> State:")
    html = student.html_report(result, code=code)
    # The two public move_dir cases fail with the same known mistake: drawn once, the other named by its call.
    assert html.count('<table class="board" data-role="expected">') == 1
    assert len(re.findall(r'<td class="tile[^"]*\bdiff"', html)) == 6
    assert "<h3>Your code</h3>" in html and "L[row + dx][col + dy]" in re.sub(r"<[^>]+>", "", html)
    assert HIDDEN_MOVE_DIR_CALL not in html


def test_html_report_is_self_contained_escaped_and_deterministic(bundled: Batch) -> None:
    result = bundled[TRANSPOSED]
    first, second = student.html_report(result), student.html_report(result)
    assert first == second
    assert "<script" not in first and "http://" not in first and "https://" not in first
    assert 'http-equiv="Content-Security-Policy"' in first
    hostile = student.html_report(hostile_result())
    assert "<script" not in hostile and "&lt;script&gt;" in hostile
    assert "<b>" not in hostile


def test_the_code_of_a_graded_method_is_that_method_alone(tmp_path: Path) -> None:
    notebook = tmp_path / "methods.py"
    notebook.write_text("# %%\nclass State:\n    def __init__(self, board):\n        self.board = board\n\n"
                        "    def zeropos(self):\n        return (0, 0)\n", encoding="utf-8")
    exercise = ExerciseResult(id="zeropos", title="", score=0, max_score=1, cases=(), function="State",
                              location="cell 1, line 5")
    code = student.function_code(notebook, [exercise])["zeropos"]
    assert code == "class State:  # only the method zeropos\n    def zeropos(self):\n        return (0, 0)\n"


def test_write_reports_writes_markdown_and_html_for_every_result(bundled: Batch, tmp_path: Path) -> None:
    written = formats.write(bundled.out, tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert {f"{TRANSPOSED}.md", f"{TRANSPOSED}.html", "correct.md", "correct.html"} <= names
    assert len(names) == written == 2 * len(bundled.results)
    assert "<h3>Your code</h3>" in (tmp_path / f"{TRANSPOSED}.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------- annotated notebook


def test_annotated_notebook_puts_each_feedback_box_after_the_cell_that_defines_the_function(bundled: Batch) -> None:
    html = annotated.annotated_notebook(SUBMISSIONS / f"{TRANSPOSED}.ipynb", bundled[TRANSPOSED])
    box = html.index('data-exercises="move_dir"')
    definition = html.rindex('<span class="nf">move_dir</span>', 0, box)
    assert "jp-CodeCell" not in html[definition:box]          # no other code cell between definition and box
    assert html.count('<table class="board" data-role="got">') == 1      # one known mistake, drawn once
    assert html.count('class="feedback grader-box"') == len(bundled[TRANSPOSED].exercises)


def test_annotated_notebook_keeps_outputs_and_is_self_contained_and_deterministic(bundled: Batch) -> None:
    path = SUBMISSIONS / "seed-000.ipynb"
    first = annotated.annotated_notebook(path, bundled["seed-000"])
    assert first == annotated.annotated_notebook(path, bundled["seed-000"])
    outputs = [o for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" for o in c.outputs
               if o.get("output_type") == "stream"]
    assert outputs and outputs[0]["text"].splitlines()[0] in first
    assert "<script" not in first and not re.search(r"""src=["']?https?:""", first)
    assert "seed-000: 30 / 30" in first


def test_annotated_notebook_copies_none_of_the_notebooks_metadata_but_its_language(bundled: Batch,
                                                                                   tmp_path: Path) -> None:
    """nbconvert's lab template copies a notebook's widget state whole into the page (60 MB of it made a 60 MB
    page and a 485 MB report process; no widget runs under the page's CSP) and its `title` into <title>."""
    nb = nbformat.read(SUBMISSIONS / f"{TRANSPOSED}.ipynb", as_version=4)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"w": {"v": "W" * 3_000_000}}}}
    nb.metadata["title"] = "Mallory's forged title"
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3", "version": "V" * 1_000_000}
    path = tmp_path / "mallory.ipynb"
    nbformat.write(nb, path)
    html = annotated.annotated_notebook(path, bundled[TRANSPOSED])
    assert len(html) < 2_000_000 and "WWWW" not in html and "VVVV" not in html
    assert "forged title" not in html and "widget-state" not in html
    assert '<span class="nf">move_dir</span>' in html                      # still highlighted as Python


def test_annotated_pages_of_a_class_share_one_exporter_and_each_keeps_its_own_language(
        bundled: Batch, tmp_path: Path, monkeypatch) -> None:
    """A new nbconvert exporter per student loaded and compiled its templates again (~15 % of an annotated class's
    CPU: 20.2 -> 17.2 s user for 59 Taoistic students). One serves the class; a page's highlighter is still its own
    notebook's language (a plain-text notebook after a Python one is not highlighted as Python)."""
    import nbconvert
    made = []

    class Counted(nbconvert.HTMLExporter):
        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(nbconvert, "HTMLExporter", Counted)
    if hasattr(annotated, "_exporter"):
        annotated._exporter.cache_clear()
    python = annotated.annotated_notebook(SUBMISSIONS / f"{TRANSPOSED}.ipynb", bundled[TRANSPOSED])
    nb = nbformat.v4.new_notebook()
    nb.metadata["language_info"] = {"name": "text", "pygments_lexer": "text"}
    nb.cells = [nbformat.v4.new_code_cell("def move_dir(S, row, col, dx, dy):\n    return S\n")]
    path = tmp_path / "plain.ipynb"
    nbformat.write(nb, path)
    plain = annotated.annotated_notebook(path, bundled[TRANSPOSED])
    again = annotated.annotated_notebook(SUBMISSIONS / f"{TRANSPOSED}.ipynb", bundled[TRANSPOSED])
    assert len(made) == 1
    assert '<span class="nf">move_dir</span>' in python and again == python
    assert "move_dir" in plain and '<span class="nf">move_dir</span>' not in plain
    annotated._exporter.cache_clear()   # later tests build theirs with the real class


def test_annotated_notebook_embeds_local_images_drops_remote_ones_and_trusts_no_student_raw_cell(
        bundled: Batch, tmp_path: Path) -> None:
    (tmp_path / "picture.png").write_bytes(_tiny_png())
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("![local](picture.png) ![remote](https://example.com/a.png)"),
                nbformat.v4.new_raw_cell("<h1>forged</h1>", metadata={"raw_mimetype": "text/html",
                                                                      annotated.FEEDBACK_MARK: True}),
                nbformat.v4.new_code_cell("def move_dir(S, row, col, dx, dy):\n    return S\n")]
    path = tmp_path / "eve.ipynb"
    nbformat.write(nb, path)
    html = annotated.annotated_notebook(path, bundled[TRANSPOSED])
    assert 'src="data:image/png;base64,' in html
    assert "example.com/a.png" not in html and "[image: remote]" in html
    assert "<h1>forged</h1>" not in html
    assert 'data-exercises="move_dir"' in html


def test_annotated_notebook_never_embeds_a_classmates_image_from_a_shared_folder(bundled: Batch,
                                                                                   tmp_path: Path) -> None:
    """In a flat class folder (a Canvas zip taken in, `--notebooks` naming the class) the images beside a notebook
    may be any classmate's: a notebook naming one showed it, embedded, on its own page. Only a folder that holds no
    other submission is the student's own."""
    (tmp_path / "bob_screenshot.png").write_bytes(_tiny_png())
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell('![spy](bob_screenshot.png) <img src="bob_screenshot.png">'),
                nbformat.v4.new_code_cell("def move_dir(S, row, col, dx, dy):\n    return S\n")]
    nbformat.write(nb, tmp_path / "eve.ipynb")
    alone = annotated.annotated_notebook(tmp_path / "eve.ipynb", bundled[TRANSPOSED])
    assert alone.count('src="data:image/png;base64,') == 2   # her own folder: her images
    (tmp_path / "bob.py").write_text("def move_dir(S, row, col, dx, dy):\n    return S\n")
    shared = annotated.annotated_notebook(tmp_path / "eve.ipynb", bundled[TRANSPOSED])
    assert 'src="data:image/png' not in shared
    assert "[image: spy]" in shared and "[image: bob_screenshot.png]" in shared


def test_annotated_notebook_shows_the_attachments_it_can_and_never_raises_on_one(bundled: Batch,
                                                                                  tmp_path: Path) -> None:
    """A Markdown cell's attachments are the student's: nbconvert raised on a reference to one the cell lacks
    (InvalidNotebook) and on one with no type (StopIteration in its renderer's generator), and either ended `grader
    report` for the whole class, with a traceback. Shown now: what is an image in base64; the rest by its name."""
    import base64
    png = base64.b64encode(_tiny_png()).decode("ascii")

    def page(*cells: tuple[str, object]) -> str:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell(source) for source, _ in cells] + [
            nbformat.v4.new_code_cell("def move_dir(S, row, col, dx, dy):\n    return S\n")]
        raw = json.loads(nbformat.writes(nb))
        for cell, (_, attachments) in zip(raw["cells"][:-1], cells, strict=True):   # as a hostile file has them
            cell["attachments"] = attachments
        path = tmp_path / "eve.ipynb"
        path.write_text(json.dumps(raw))
        html = annotated.annotated_notebook(path, bundled[TRANSPOSED])
        assert 'data-exercises="move_dir"' in html
        return html

    html = page(("inline ![a](attachment:a.png) ![b](attachment:b.png)", {"a.png": {"image/png": png}}),
                ("by reference ![r][ref]\n\n[ref]: attachment:gone.png\n", {"a.png": {"image/png": png}}),
                ("no type ![e](attachment:e.png)", {"e.png": {}}),
                ("not base64 ![x](attachment:x.png)", {"x.png": {"image/png": '" onerror="alert(1)'}}))
    assert html.count(f'src="data:image/png;base64,{png}"') == 1
    assert all(f"[image: {name}]" in html for name in ("b", "e", "x")) and "onerror" not in html
    # An attachment that is not a MIME bundle: the page is made from the cells the grader read, without them
    assert "[image: s]" in page(("not a bundle ![s](attachment:s.png)", {"s.png": "zzz"}))


def test_annotated_notebook_takes_any_version_and_execution_count_the_file_has(bundled: Batch,
                                                                               tmp_path: Path) -> None:
    """nbconvert compares the notebook's minor version with ints and validates execution counts: a file whose
    `nbformat_minor` is "x" (TypeError) or whose code cell ran as In [-1] (NotebookValidationError) is graded, and
    its page ended `grader report` for the whole class with a traceback."""
    nb = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("def move_dir(S, row, col, dx, dy):\n    return S\n", execution_count=3)])))
    for key, value, where in (("nbformat_minor", "x", nb), ("execution_count", -1, nb["cells"][0])):
        where[key] = value
        path = tmp_path / "eve.ipynb"
        path.write_text(json.dumps(nb))
        assert 'data-exercises="move_dir"' in annotated.annotated_notebook(path, bundled[TRANSPOSED]), key


def test_image_patterns_take_time_linear_in_the_markdown(tmp_path: Path) -> None:
    """A Markdown cell is the student's: 4 kB of "<img src='" took the old tag pattern 8.9 s (cubic, hours at
    40 kB) and "![a](" was quadratic, so one cell held `report --annotated` of the whole class. 400 kB of each
    such run must be read within a CPU limit of 20 s (the old code is killed by it; CPU time, not wall: a busy
    machine does not change it), and the images a notebook writes are still found."""
    code = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
        from pathlib import Path
        from grader.report.annotated import _embed_images
        for unit in ("<img src='", "![a](", "![", "<img ", '![](a "', '<img src="x', "<img src='a'"):
            _embed_images(unit * (400_000 // len(unit)), Path({str(tmp_path)!r}), None)
        print("read")
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=within(600))
    assert done.stdout.strip() == "read", (done.returncode, done.stderr[-2000:])
    (tmp_path / "picture.png").write_bytes(_tiny_png())
    for written in ('<img src="picture.png">', "<IMG alt='p' src='picture.png' width=30>",
                    '![p](picture.png)', '![p](picture.png "a title")'):
        shown = annotated._embed_images(written, tmp_path, None)
        assert "data:image/png;base64," in shown and "picture.png" not in shown, (written, shown)
    assert annotated._embed_images('<img src="gone.png">', tmp_path, None) == "<em>[image: gone.png]</em>"
    assert annotated._embed_images("![gone](gone.png)", tmp_path, None) == "*[image: gone]*"


def test_highlighting_takes_time_linear_in_the_students_text_and_only_trusted_lexers(tmp_path: Path) -> None:
    """pygments reads the student's code cells and Markdown fences with the lexer the student names, and its
    Python lexer scans to the end of the line at each `\\N{`: one 120 kB cell took 17.9 s of one student's page
    (quadratic: a megabyte, half an hour). A page of a 400 kB such line in a code cell and in a ```python fence is
    made within a CPU limit of 20 s (the old code is killed by it; CPU time, not wall), shown as plain text, and
    any lexer but Python's and plain text's (the notebook's language, a fence's info) is not used."""
    code = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
        from pathlib import Path
        import nbformat
        from grader.report import annotated
        from grader.report.math import Formulas
        line = "x = '" + "\\\\N{{" * 100_000
        cells = [nbformat.v4.new_code_cell(line), nbformat.v4.new_markdown_cell("```python\\n" + line + "\\n```")]
        nb = nbformat.v4.new_notebook()
        nb.cells = [annotated._student_cell(n, cell, Path({str(tmp_path)!r}), Formulas())
                    for n, cell in enumerate(cells)]
        print(len(annotated._export(nb, "eve")) > 800_000)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=within(600))
    assert done.stdout.strip() == "True", (done.returncode, done.stderr[-2000:])
    nb = nbformat.v4.new_notebook()
    nb.metadata = annotated._shown_metadata({"language_info": {"name": "sml", "pygments_lexer": "sml"}})
    assert nb.metadata.language_info == {"name": "text", "pygments_lexer": "text"}
    cells = [nbformat.v4.new_code_cell("def f():\n    return 1\n"),
             nbformat.v4.new_markdown_cell("```sml\nval x = 1\n```\n\n```python\ndef g():\n    pass\n```")]
    nb.cells = [annotated._student_cell(n, cell, tmp_path, annotated.Formulas()) for n, cell in enumerate(cells)]
    html = annotated._export(nb, "eve")
    assert "<span>pass</span>" in html and '<span class="nf">f</span>' not in html   # Python's fence, text's cell
    assert "val x = 1" in html                                                       # not split into tokens


def test_annotated_notebook_shows_a_warning_after_the_cell_it_is_about(bundled: Batch, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("TABLE = {}[5]"),
                nbformat.v4.new_code_cell("def move_dir(S, row, col, dx, dy):\n    return S\n")]
    path = tmp_path / "eve.ipynb"
    nbformat.write(nb, path)
    warning = GraderWarning(Kind.LOAD_ERROR, "KeyError: <b>5</b> (statement skipped)", "KeyError", 1, "cell 2", 1)
    result = replace(bundled[TRANSPOSED], warnings=(warning,))
    html = annotated.annotated_notebook(path, result)
    box = html.index("Grader warning on the cell above (cell 2)")
    assert html.index("TABLE") < box < html.index('<span class="nf">move_dir</span>')    # after cell 2, before 3
    assert "line 1: KeyError: &lt;b&gt;5&lt;/b&gt; (statement skipped)" in html[box:]
    assert html.count("Grader warning on the cell above") == 1


def _tiny_png() -> bytes:
    import struct
    import zlib
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


# ---------------------------------------------------------------------------------------------- terminal


def test_self_check_in_the_terminal_draws_the_failed_move_dir_case_as_boards(bundled: Batch) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    assert student_report(public_only(bundled[TRANSPOSED]), {"move_dir": 12}, console) is False
    shown = buffer.getvalue()
    assert "✗ move_dir: 0/2 public cases pass; 12 hidden cases, results after grading" in shown
    assert "│[14]│[  ]│  8 │ 12 │   │[10]│[14]│  8 │ 12 │" in shown
    assert boards.TEXT_LEGEND in shown
    assert "All public cases pass" not in shown


def test_self_check_of_a_passing_submission_draws_no_board(bundled: Batch) -> None:
    buffer = io.StringIO()
    assert student_report(public_only(bundled["correct"]), {}, Console(file=buffer, width=100)) is True
    assert "┌" not in buffer.getvalue() and "All public cases pass" in buffer.getvalue()


def test_given_code_is_folded_not_called_the_students_and_identical_failures_are_shown_once(bundled, tmp_path):
    """main is handed out whole by the template: infinite-search left it alone, so it is not 'Your code'. Its
    two public search cases time out the same way: shown once, the other named."""
    from conftest import TEMPLATE
    from grader.report.student import given_code, html_report, markdown_report
    result = bundled["infinite-search"]
    failing = [e for e in result.exercises if student.needs_section(e)]
    code = student.function_code(SUBMISSIONS / "infinite-search.ipynb", failing)
    given = given_code(code, TEMPLATE, failing)
    assert sorted(code) == ["main", "search"] and given == {"main"}
    page = html_report(result, code=code, given=given)
    assert page.count("<h3>Your code</h3>") == 1 and page.count("Given code (the template's, unchanged)") == 1
    dom_search = page[page.index('id="exercise-search"'):page.index('id="exercise-main"')]
    assert dom_search.count('class="case timeout"') == 1
    assert "And 1 more case failed the same way" in dom_search
    text = markdown_report(result)
    assert "And 1 more case failed the same way" in text
    assert "⏱" not in page and "⏱" not in text


def _long_result() -> "SubmissionResult":
    from grader.store.results import CaseResult, ExerciseResult, SubmissionResult
    message = "expected 44, got 48. " + "You also count the blank; " * 8
    printed = "".join(f"step {n}\n" for n in range(30))
    cases = tuple(CaseResult(f"manhattan#{n}", "fail", "public", message, call=f"manhattan(S{n}, Goal)",
                             expected=44, got=48, output=printed) for n in range(3))
    return SubmissionResult("ada", "/ada.ipynb", "", "taoistic-search", "", "0.1.0", "rlimits", 0.0, 3.0,
                            (ExerciseResult("manhattan", "Manhattan", 0.0, 3.0, cases),
                             ExerciseResult("find_tile", "Find", 2.0, 2.0, ())))


def test_the_terminal_check_ends_with_one_summary_line_does_not_wrap_and_folds_output(capsys):
    from grader.report.console import student_report
    assert student_report(_long_result(), {"manhattan": 12}) is False   # pytest's stdout is no terminal
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    assert lines[-1] == ("✗ 1 of 2 exercises have failing public cases: manhattan. 12 hidden cases are graded "
                         "after submission.")
    assert any(len(line) > 120 for line in lines)                        # long lines stay whole
    assert not any(line.startswith("the blank") or line.startswith("blank;") for line in lines)
    assert sum("step" in line for line in lines) == 4                   # first lines of what it printed
    assert "... (26 more lines printed)" in "\n".join(lines)
    assert sum("manhattan(S" in line for line in lines) == 1 + 1        # shown once, the others named
    assert "and 2 more cases failed the same way: manhattan(S1, Goal), manhattan(S2, Goal)" in "\n".join(lines)


def test_the_terminal_check_summary_line_when_everything_passes(capsys):
    from dataclasses import replace as change
    from grader.report.console import student_report
    result = _long_result()
    passing = change(result, exercises=(result.exercises[1],))
    assert student_report(passing, {}) is True
    assert capsys.readouterr().out.rstrip("\n").splitlines()[-1] == (
        "✓ All public cases pass. Hidden cases are graded after submission.")


def test_a_failing_public_case_folded_into_a_group_still_shows_its_inputs_in_every_format(capsys) -> None:
    """Three zeropos cases fail the same way on three boards: the first is drawn with its board, the other two
    are named and their boards drawn too (each once), in the terminal, Markdown and HTML."""
    from grader.report.console import student_report
    boards_in = {"Board5Corner": ((23, 21), (0, 24)), "Board5Edge": ((23, 0), (6, 12)), "Board3": ((4, 0), (7, 2))}
    cases = tuple(CaseResult(f"zeropos#{n}", "fail", "public", "looks like (column, row)", call=f"zeropos({name})",
                             expected=codec.encode((1, 0)), got=codec.encode((0, 1)), mistake="zeropos_transposed",
                             inputs={name: codec.encode(board)})
                  for n, (name, board) in enumerate(boards_in.items()))
    result = SubmissionResult("ada", "/ada.ipynb", "", "n-puzzle", "", "0.1.0", "rlimits", 0.0, 2.0,
                              (ExerciseResult("zeropos", "Find the hole", 0.0, 2.0, cases),))
    markdown = student.markdown_report(result)
    page = student.html_report(result)
    student_report(result, {})
    terminal = capsys.readouterr().out
    for text in (markdown, page, terminal):
        assert "2 more cases failed the same way" in text
        for name in boards_in:
            assert text.count(name) >= 2, (name, text)          # named in the call, and labelled on its board
    assert markdown.count("│ 24 │") == 1 and markdown.count("│ 12 │") == 1 and terminal.count("│ 12 │") == 1
    assert page.count('class="inputs"') == 2                    # the first case's, and the group's


def test_a_generated_public_case_shows_its_variables_as_inputs_each_labelled(grader_cache) -> None:
    """`astar_search(EightPuzzle(state, GOAL))` is about the generated state: drawn as a board, and the states of the
    cases folded under it each say which case they belong to."""
    from conftest import REPO
    from grader.judge.grading import case_inputs
    from grader.plan.cases import build_plan
    from grader.report.grouping import alike_inputs
    from grader.rubric.schema import load_rubric
    plan = build_plan(load_rubric(REPO / "rubrics" / "eight-puzzle-astar.yaml"), grader_cache)
    public = [c for c in plan.cases["astar_search"] if c.visibility == "public" and c.variables][:3]
    inputs = [case_inputs(plan, case) for case in public]
    assert all(set(shown) == {"state", "GOAL"} for shown in inputs)    # every case passes its goal
    assert codec.decode(inputs[0]["state"]) == public[0].variables["state"]
    assert "┌───┬───┬───┐" in boards.text_input("state", inputs[0]["state"])
    results = [CaseResult(case.id, "error", "public", "NameError", call=case.shown_call, inputs=shown)
               for case, shown in zip(public, inputs, strict=True)]
    labels = [label for label, _ in alike_inputs(results[0], results[1:])]
    assert labels == ["state, case 1 of the 2 more", "state, case 2 of the 2 more"]


def test_a_passing_exercise_graded_with_a_notebook_global_says_so_in_every_report(bundled: Batch) -> None:
    """Seed 000's manhattan reads the global S and counts the blank: full marks, and the student still reads
    both notes (a field, globals_read, says so; the Markdown and HTML give it a section, the terminal its notes)."""
    result = bundled["seed-000"]
    manhattan = result.exercise("manhattan")
    assert manhattan.score == manhattan.max_score and manhattan.globals_read == ("S",)
    buffer = io.StringIO()
    student_report(public_only(result), {}, Console(file=buffer, width=200))
    for text in (student.markdown_report(result), student.html_report(result), buffer.getvalue()):
        assert "global variable S" in text and "Accepted convention" in text
    assert "## find\\_tile" not in student.markdown_report(result)     # a plain passing exercise stays a row


# ---------------------------------------------------------------- the report formats registry


def _one_result(folder: Path) -> Path:
    from grader.store.results import ExerciseResult, SubmissionResult, write_json
    result = SubmissionResult(submission="alice", path=str(folder / "gone.ipynb"), sha256="a" * 64,
                              rubric="taoistic-search", rubric_sha256="r", grader_version="0", isolation="none",
                              total=1.0, max_total=2.0,
                              exercises=(ExerciseResult("move_dir", "Move", 1.0, 2.0, ()),))
    write_json(result, folder / "results")
    return folder / "results"


def test_report_writes_the_formats_asked_for_and_names_an_unknown_one(tmp_path: Path, capsys) -> None:
    from grader.cli import main
    results = _one_result(tmp_path)
    assert main(["report", str(results), "--out", str(tmp_path / "md"), "--format", "md"]) == 0
    assert sorted(p.name for p in (tmp_path / "md").iterdir()) == ["alice.md"]
    assert main(["report", str(results), "--out", str(tmp_path / "both")]) == 0
    assert sorted(p.name for p in (tmp_path / "both").iterdir()) == ["alice.html", "alice.md"]
    capsys.readouterr()
    assert main(["report", str(results), "--out", str(tmp_path / "x"), "--format", "md,pdf"]) == 2
    err = capsys.readouterr().err
    assert "--format: no report format 'pdf'" in err and "md, html, notebook" in err and "Traceback" not in err


def test_a_new_report_format_is_one_module_and_one_registration(tmp_path: Path, monkeypatch) -> None:
    """Neither the CLI nor another format changes: the registry offers it and `grader report` writes it."""
    import sys

    from grader.cli import main
    (tmp_path / "plain_format.py").write_text(
        "def page(page):\n    return f'{page.result.submission}: {page.result.total:g}/{page.result.max_total:g}\\n'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(formats.FORMATS, "txt", formats.Format("txt", ".txt", "plain_format:page", "plain text",
                                                                default=False))
    try:
        assert main(["report", str(_one_result(tmp_path)), "--out", str(tmp_path / "out"), "--format", "txt"]) == 0
    finally:
        sys.modules.pop("plain_format", None)
    assert (tmp_path / "out" / "alice.txt").read_text() == "alice: 1/2\n"


def test_a_timeout_says_the_limit_it_ran_into_in_every_students_view(bundled):
    """'did not finish in time' alone left the student guessing how far off the code is: the case's `limit` fact
    is shown beside it in the terminal, the Markdown and the HTML (infinite-search's search: 1 s each on a quiet
    machine; a case's limit is also case_factor times the reference's time, which a busy machine building the plan
    lifts above 1 s for some cases: each limit seen is checked)."""
    from grader.report.student import html_report, markdown_report
    result = bundled["infinite-search"]
    search = result.exercise("search")
    limits = {c.limit for c in search.cases if c.status == "timeout" and c.limit}
    assert limits
    buffer = io.StringIO()
    student_report(result, {}, Console(file=buffer, width=10_000, soft_wrap=True))
    views = (buffer.getvalue(), markdown_report(result), html_report(result))
    for limit in limits:
        said = f"time limit is {limit:g} s of CPU time"     # the rest is escaped differently by each format
        assert all(said in view for view in views), said
    assert "not run: 2 earlier cases of this exercise timed out (" not in markdown_report(result, hidden_details=True)


def test_cases_not_judged_are_said_to_be_not_judged_not_failed_in_the_students_report(bundled):
    busy = replace(bundled["correct"].exercise("manhattan").cases[0], status="problem", reason="busy machine",
                   message="grader problem: not run: the machine was too busy")
    exercise = bundled["correct"].exercise("manhattan")
    shown = replace(exercise, cases=tuple(replace(busy, id=c.id, call=c.call) for c in exercise.cases))
    result = replace(bundled["correct"], exercises=(shown,))
    page = student.html_report(result)
    assert "more cases were not judged for the same reason" in page and "failed the same way" not in page
    assert "were not judged for the same reason" in student.markdown_report(result)


def test_an_exercise_none_of_whose_cases_ran_is_found_at_its_place_not_graded_there(bundled):
    """A function in a cell left out for a syntax error has a place but ran no case: "Graded `f` at cell 9"
    told the student the grader ran it."""
    result = bundled["syntax-error"]
    exercise = result.exercise("replace_numbers")
    assert exercise.location and {case.status for case in exercise.cases} == {"missing"}
    text = student.markdown_report(result)
    assert f"Found `replace_numbers` at {student.md_text(exercise.location)}; none of its cases ran." in text
    assert "Graded `replace_numbers`" not in text and "Graded `main`" in text
    page = student.html_report(result)
    assert "found <code>replace_numbers</code>" in page and "graded <code>replace_numbers</code>" not in page
    assert "graded <code>main</code>" in page


def test_cases_skipped_after_timeouts_are_said_not_run_not_timed_out(bundled):
    """After `max_timeouts` timeouts an exercise's other cases are not run: '8 hidden cases: 8 timed out' told the
    student their code was too slow on cases it never ran."""
    from grader.store.status import AFTER_TIMEOUTS, TIMEOUT
    result = bundled["infinite-search"]
    [exercise] = [e for e in result.exercises if any(c.reason == AFTER_TIMEOUTS for c in e.cases)]
    skipped = [c for c in exercise.cases if c.reason == AFTER_TIMEOUTS]
    assert {c.status for c in skipped} == {TIMEOUT} and all(c.message.startswith("not run") for c in skipped)
    ran_out = sum(c.reason == "timeout" and c.visibility == "hidden" for c in exercise.cases)
    hidden_skipped = sum(c.visibility == "hidden" for c in skipped)
    summary = student.hidden_summary(exercise.cases)
    assert f"{hidden_skipped} not run (earlier cases of the exercise timed out)" in summary
    assert (f"{ran_out} timed out" in summary) == bool(ran_out)
    assert summary in student.markdown_report(result) and summary in student.html_report(result)


def test_an_exercise_without_a_title_is_headed_by_its_id_once(bundled):
    """A rubric's title defaults to the id: the heading read 'move_dir: move_dir (0 / 2)'."""
    result = bundled[TRANSPOSED]
    untitled = replace(result, exercises=tuple(replace(e, title=e.id) for e in result.exercises))
    text = student.markdown_report(untitled)
    assert "## move\\_dir (0 / 2)" in text and "move\\_dir: move\\_dir" not in text
    page = student.html_report(untitled)
    assert "move_dir: move_dir" not in page and "move_dir <span class=\"score\">" in page
    assert "## move\\_dir: Move the blank (0 / 2)" in student.markdown_report(result)


def test_cases_with_one_cause_are_one_group_and_each_keeps_its_message(capsys) -> None:
    """int-tiles' move_dir returned 0 where '0' was expected at five places: the judge gives them one cause
    ('expected str, got int'), and the reports grouped word for word (five groups, one per place). Now one group:
    the first drawn, the cause said, and every other case's own message shown beside its call, in the terminal,
    Markdown and HTML."""
    from grader.report.console import student_report
    places = ["row 0, column 0", "row 1, column 2", "row 2, column 1"]
    cases = tuple(CaseResult(f"move_dir#{n}", "fail", "public", f"at {where}: expected a str, got an int",
                             call=f"move_dir(B{n}, 'up')", expected=codec.encode("0"), got=codec.encode(0),
                             cause="expected str, got int")
                  for n, where in enumerate(places))
    other = CaseResult("move_dir#9", "fail", "public", "expected 3 rows, got 2", call="move_dir(B9, 'left')",
                       cause="expected 3 rows, got 2")
    result = SubmissionResult("ada", "/ada.ipynb", "", "int-tiles", "", "0.1.0", "rlimits", 0.0, 4.0,
                              (ExerciseResult("move_dir", "Move the blank", 0.0, 4.0, cases + (other,)),))
    markdown = student.markdown_report(result)
    page = student.html_report(result)
    student_report(result, {})
    terminal = capsys.readouterr().out
    for text in (markdown, page, terminal):
        assert text.count("2 more cases failed the same way (expected str, got int)") == 1, text
        for where in places:
            assert f"at {where}: expected" in text, (where, text)      # every case's detail stays
        assert "expected 3 rows, got 2" in text                          # another cause: a group of its own
        assert "failed the same way:" not in text
    assert page.count('class="case fail"') == 2


def test_a_list_of_goals_is_captioned_a_list_and_only_a_path_checks_answer_a_path(tmp_path: Path,
                                                                                  grader_cache: Path) -> None:
    """intermediate_goals returns [Goal1, Goal2] under `equal`: a list of goals, which the feedback used to call
    "a path of 2 states". The caption comes from the case's check (CaseResult.path_answer), not from the value's
    shape: search's answer, judged by the `path` check, is still a path. Graded and reported by the CLI."""
    book = nbformat.read(SUBMISSIONS / "correct.ipynb", as_version=4)
    book.cells.append(nbformat.v4.new_code_cell(textwrap.dedent("""\
        def intermediate_goals(Goal, TilesList):
            return [replace_numbers(Goal, T) for T in TilesList]   # each goal forgets the earlier groups

        _search_right = search
        def search(*args):
            path = _search_right(*args)
            return path[1:] if path else path                       # the start state left out
        """)))
    notebooks = tmp_path / "in"
    notebooks.mkdir()
    nbformat.write(book, notebooks / "goals.ipynb")
    repo = SUBMISSIONS.parents[2]
    for command in (["grade", str(notebooks), "--rubric", str(repo / "rubrics" / "taoistic-search.yaml"),
                     "--out", str(tmp_path / "results"), "--cache", str(grader_cache)],
                    ["report", str(tmp_path / "results"), "--out", str(tmp_path / "feedback"), "--format", "md,html"]):
        done = subprocess.run([sys.executable, "-m", "grader", *command], capture_output=True, text=True,
                              timeout=within(600))
        assert done.returncode == 0, done.stderr
    text = (tmp_path / "feedback" / "goals.md").read_text(encoding="utf-8")
    goals = text[text.index("## intermediate\\_goals"):]
    goals = goals[:goals.index("\n## ", 1)]
    assert "expected: a list of 2 states" in goals and "got: a list of 2 states" in goals
    assert "path" not in goals
    search = text[text.index("## search"):]
    assert "expected: a path of" in search
    page = (tmp_path / "feedback" / "goals.html").read_text(encoding="utf-8")
    assert "a list of 2 states" in page and "a path of" in page


def _transposed_find_tile(hidden: bool = True) -> SubmissionResult:
    """find_tile answering (col, row) on two public boards and one hidden (`hidden`; a self-check has none): cases
    of one known mistake, whose messages end with its advice, and the exercise's notes as the judge writes them
    (same_failures, then the hint); then manhattan, failing on the same Start board."""
    from grader.judge.feedback import same_failures
    advice = "Your answer looks like (col, row). find_tile returns (row, col), so that S[row][col] == tile."
    start = codec.encode(((8, 0, 6), (5, 4, 7), (2, 3, 1)))
    cases = tuple(advised(CaseResult(f"find_tile#{n}", "fail", visibility, f"at [0]: expected {want}, got {n + 5}",
                                     call=f"find_tile(4, {board})", expected=codec.encode((want, 1)),
                                     got=codec.encode((n + 5, 0)), mistake="find_tile_transposed",
                                     reason="wrong value", cause="wrong value",
                                     inputs={board: start} if visibility == "public" else {}), advice)
                  for n, (board, visibility, want) in enumerate((("Start", "public", 0), ("Start2", "public", 2),
                                                                ("S9", "hidden", 3)))
                  if hidden or visibility == "public")
    hint = "find_tile returns a pair (row, col): the row comes first."
    find_tile = ExerciseResult("find_tile", "Find a tile", 0.0, 3.0, cases, notes=same_failures(cases) + (hint,))
    manhattan = ExerciseResult("manhattan", "Manhattan", 0.0, 2.0, (
        CaseResult("manhattan#0", "fail", "public", "expected 52, got 26", call="manhattan(Start, Goal)",
                   expected=52, got=26, inputs={"Start": start}),))
    return SubmissionResult("ada", "/ada.ipynb", "", "taoistic-search", "", "0.1.0", "rlimits", 0.0, 5.0,
                            (find_tile, manhattan))


def test_a_failure_shared_by_several_cases_is_said_once_in_every_students_view(capsys) -> None:
    """The self-check printed the judge's note '2 cases fail the same way (fail: wrong value), e.g. <the first
    case's message>' right above that same case, drawn in full, and then the other case of the group with its
    message, the known mistake's advice again: one example, one piece of advice, three times. The group says it:
    the note is left out where its cases are drawn, the advice is said by the first case only, the other cases
    keep their own detail beside their call, named once. A note about cases the view does not draw (hidden ones,
    in the TA's report) stays."""
    from grader.report.console import student_report
    from grader.judge.feedback import same_failures
    advice = "Your answer looks like (col, row)"
    self_check = _transposed_find_tile(hidden=False)
    student_report(self_check, {"find_tile": 1})
    terminal = capsys.readouterr().out
    result = _transposed_find_tile()
    for text in (terminal, student.markdown_report(self_check), student.html_report(self_check),
                 student.markdown_report(result), student.markdown_report(result, hidden_details=True)):
        assert "fail the same way" not in text, text
        assert text.count(advice) == 1, text
        assert text.count("expected 0, got 5") == 1 and text.count("expected 2, got 6") == 1, text
        assert text.count("find_tile(4, Start2)") == 1, text             # named once, beside its own detail
        assert "returns a pair (row, col): the row comes first" in text   # the rubric's hint stays
    hidden = [replace(result.exercises[0].cases[2], id=f"find_tile#{n}") for n in (2, 3)]
    only_hidden = replace(result, exercises=(replace(result.exercises[0], cases=tuple(hidden),
                                                     notes=same_failures(hidden)),))
    assert "2 cases fail the same way" in student.markdown_report(only_hidden)   # not drawn: the note says it


def test_the_other_cases_of_a_group_keep_their_detail_as_it_was_said(capsys) -> None:
    """A group's other cases showed their message with the advice cut off its end (". " + advice): a detail
    ending in dots lost them ("KeyError: (5, 4, 7" for a key cut to "(5, 4, 7, ...)"), and a message going on
    after the advice (the judge's "The error is in h (...)" on an error raised in another function) kept the
    advice, said again under every case. The detail is a field of the case (store.results.advised), shown as it
    is."""
    from grader.report.console import student_report
    hint = "h looks a tile up by its position: find_tile gives the position of a tile"
    where = "In [4] (cell 6), line 2"
    charged = "The error is in EightPuzzle.h (In [4] (cell 6), line 2), called while running astar_search"

    def error(n: int, key: str) -> CaseResult:
        raised = f"KeyError: {key}"
        case = advised(CaseResult(f"astar#{n}", "error", "public", f"{raised} (at {where})", call=f"astar(P{n})",
                                  reason="raised", cause="KeyError: ()", error=raised, where=where), hint)
        # as the judge charges an error to the function it was raised in (judge.grading._charge)
        return replace(case, culprit="EightPuzzle.h", message=f"{case.message}. {charged}",
                       detail=f"{case.detail}. {charged}")

    cases = (error(0, "(8, 0, 6)"), error(1, "(5, 4, 7, ...)"), error(2, "(2, 3, 1, ...)"))
    result = SubmissionResult("ada", "/ada.ipynb", "", "eight-puzzle-astar", "", "0.1.0", "rlimits", 0.0, 3.0,
                              (ExerciseResult("astar", "A*", 0.0, 3.0, cases),))
    student_report(result, {"astar": 1})
    for text in (capsys.readouterr().out, student.markdown_report(result), student.html_report(result)):
        flat = " ".join(text.split())
        assert flat.count("looks a tile up by its position") == 1, text          # the advice, said once
        assert "(5, 4, 7, ...)" in flat and "(2, 3, 1, ...)" in flat, text
        assert flat.count("The error is in EightPuzzle.h") == 3, text             # every case's own detail


def test_the_terminal_check_draws_a_board_once_and_names_it_after(capsys) -> None:
    """Start failed find_tile and manhattan: the self-check drew it under both (Taoistic Search's
    find-tile-transposed drew Start four times in 328 lines). It is drawn once; the next case names it."""
    from grader.report.console import student_report
    student_report(_transposed_find_tile(hidden=False), {})
    terminal = capsys.readouterr().out
    assert terminal.count("│ 5 │ 4 │ 7 │") == 2, terminal                 # Start, and Start2 (another name)
    assert "Start: as drawn above, under find_tile" in terminal
    assert student.markdown_report(_transposed_find_tile()).count("│ 5 │ 4 │ 7 │") == 3   # a section each


def test_every_view_writes_a_long_input_once_and_names_it_after(capsys) -> None:
    """A word-ladder's WORDS (the course's word list) failed neighbours and ladder: the self-check wrote its 213
    words (2,000 characters; a real dictionary up to 20,000) under both, and the Markdown and HTML reports still
    did. It is written once; a short input is cheaper written again than named."""
    from grader.report.console import student_report
    words = codec.encode(frozenset(f"w{n:03}" for n in range(213)))
    short = codec.encode("cold")

    def failing(exercise: str) -> ExerciseResult:
        case = CaseResult(f"{exercise}#1", "fail", "public", "wrong", call=f"{exercise}(start, WORDS)",
                          expected=codec.encode(1), got=codec.encode(2), inputs={"start": short, "WORDS": words})
        return ExerciseResult(exercise, exercise, 0.0, 1.0, (case,))

    result = SubmissionResult("ada", "/ada.ipynb", "", "word-ladder", "", "0.1.0", "rlimits", 0.0, 2.0,
                              (failing("neighbours"), failing("ladder")))
    student_report(result, {})
    terminal = capsys.readouterr().out
    assert terminal.count("'w212'") == 1, terminal
    assert "WORDS: as shown above, under neighbours" in terminal
    assert terminal.count("start = 'cold'") == 2, terminal
    # The Markdown and HTML pages too (they wrote it under each exercise); boards stay drawn in each section
    page = student.markdown_report(result)
    assert page.count("'w212'") == 1 and "WORDS: as shown above, under neighbours" in page, page
    assert page.count("start = 'cold'") == 2, page
    html = student.html_report(result)
    assert html.count("&#39;w212&#39;") == 1, html
    assert "<code>WORDS</code>: as shown above, under neighbours" in html, html
    assert html.count("start = &#39;cold&#39;") == 2, html


def test_each_timeout_of_a_group_says_its_own_limit_in_every_view(capsys) -> None:
    """Two search cases timed out the same way, one at 1 s and one at 1.5 s (a case's limit is also case_factor
    times the reference's time): the second, folded under the first, showed no limit of its own (a busy machine
    made test_a_timeout_says_the_limit_it_ran_into_in_every_students_view fail by it)."""
    from grader.report.console import student_report
    cases = tuple(CaseResult(f"search#{n}", "timeout", "public", "did not finish in time", call=f"search(S{n})",
                             limit=limit, reason="timeout", cause="did not finish in time")
                  for n, limit in enumerate((1.0, 1.5)))
    result = SubmissionResult("ada", "/ada.ipynb", "", "taoistic-search", "", "0.1.0", "rlimits", 0.0, 4.0,
                              (ExerciseResult("search", "Search", 0.0, 4.0, cases),))
    student_report(result, {})
    for text in (capsys.readouterr().out, student.markdown_report(result), student.html_report(result)):
        for limit in ("1", "1.5"):
            assert f"time limit is {limit} s of CPU time" in text, (limit, text)
        assert text.count("search(S1)") == 1, text


def test_the_class_table_never_shows_a_partial_score_as_a_whole_one() -> None:
    """2.0294 of 2 was shown "2.0" beside a full "2", and a total of 29.97 as "30.0/30" (found by persona)."""
    from grader.report.console import _score
    assert [_score(v) for v in (2.0294, 29.97, 1.1667, 0.04, 2.0, 30.0, 0.5, 1.9999)] == \
        ["2.03", "29.97", "1.2", "0.04", "2", "30", "0.5", "1.9999"]
