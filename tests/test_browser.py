"""The HTML reports opened in a real browser (headless Chromium): they render, show what they should, log nothing.

Each page is rendered once (a fraction of a second: the module's pages share one browser) and checked three
ways: the screenshot is not blank, the DOM after rendering has the expected headings and boards, and the
browser console stayed silent (our pages run no script but the table sort, so any console line is a script
error, a failed load or a Content-Security-Policy refusal).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import browser
from conftest import SUBMISSIONS, Batch
from grader.report import annotated, student

HIGHLIGHT = (0xFF, 0xD2, 0x3F)      # the background of a differing cell (boards_html.HTML_CSS)
BLANK = (0xD9, 0xD9, 0xD9)          # the background of the blank


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def assert_rendered_cleanly(page: browser.Rendered, min_ink: float = 0.02,
                            size: tuple[int, int] = (1200, 1600)) -> browser.PixelStats:
    assert page.console_errors == (), "\n".join(page.console_errors)
    assert page.external_resources == ()
    assert page.png is not None, "no screenshot was taken"
    stats = browser.pixel_stats(page.png)
    assert (stats.width, stats.height) == size
    assert stats.colours > 50, "the screenshot is (nearly) one colour"
    assert stats.ink > min_ink, f"only {stats.ink:.1%} of the screenshot is not white"
    return stats


@pytest.fixture(scope="module", autouse=True)
def _one_browser():
    """The pages of this module share one Chromium (a context of their own each); it ends with the module."""
    yield
    browser.close()


# ---------------------------------------------------------------------------------------------- the helper itself


def test_the_helper_catches_script_errors_and_blank_pages(tmp_path: Path) -> None:
    broken = write(tmp_path / "broken.html", "<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title>"
                   "</head><body><h1>Broken</h1><script>undefinedFunction();</script></body></html>")
    page = browser.render(broken, None)
    assert any("Uncaught ReferenceError: undefinedFunction is not defined" in line for line in page.console_errors)
    assert [h.text for h in browser.parse_dom(page.dom).find_all("h1")] == ["Broken"]

    empty = browser.render(write(tmp_path / "empty.html", "<!DOCTYPE html><html><body></body></html>"),
                           tmp_path / "empty.png")
    assert empty.console_errors == ()
    stats = browser.pixel_stats(empty.png)
    assert stats.colours == 1 and stats.ink == 0.0


def test_the_helper_finds_what_a_page_loads_from_outside_itself(tmp_path: Path) -> None:
    page = browser.render(write(tmp_path / "loads.html", "<!DOCTYPE html><html><head><style>"
                                "body { background: url('paper.png'); }</style></head><body><p>x</p>"
                                "<img src='missing.png'><img src='data:image/png;base64,AAAA'></body></html>"),
                          None)
    assert page.external_resources == ("paper.png", "missing.png")


# ---------------------------------------------------------------------------------------------- the reports


def test_student_report_shows_the_failed_move_dir_case_as_two_boards_with_the_differences_highlighted(
        bundled: Batch, tmp_path: Path) -> None:
    result = bundled["move-dir-transposed"]
    code = student.function_code(SUBMISSIONS / "move-dir-transposed.ipynb", result.exercises)
    html = write(tmp_path / "report.html", student.html_report(result, code=code))
    page = browser.render(html, tmp_path / "report.png")
    stats = assert_rendered_cleanly(page)
    # Seen, not only present in the markup: the highlight and the blank's grey are on the screen.
    assert stats.share(lambda colour: colour == HIGHLIGHT) > 0.0005
    assert stats.share(lambda colour: colour == BLANK) > 0.0002

    dom = browser.parse_dom(page.dom)
    assert [h.text for h in dom.find_all("h1")] == ["Feedback: move-dir-transposed"]
    assert "move_dir: Move the blank (0 / 2)" in [h.text for h in dom.find_all("h2")]
    first = next(c for c in dom.find_all("div", cls="case") if "move_dir(Start, 0, 0, 1, 0)" in c.text)
    tables = [t for t in first.find_all("table", cls="board") if t.attrs["data-role"] != "input"]
    assert [t.attrs["data-role"] for t in tables] == ["expected", "got"]   # after the input Start, drawn too
    differing = [[cell.text for cell in table.find_all("td", cls="diff")] for table in tables]
    assert differing == [["14", "", "10"], ["10", "14", ""]]     # the blank is the empty cell
    assert "Your code" in [h.text for h in dom.find_all("h3")]


def test_annotated_notebook_of_seed_000_renders_with_its_feedback_boxes(bundled: Batch, tmp_path: Path) -> None:
    result = bundled["seed-000"]
    html = write(tmp_path / "seed-000.html", annotated.annotated_notebook(SUBMISSIONS / "seed-000.ipynb", result))
    page = browser.render(html, tmp_path / "seed-000.png")
    assert_rendered_cleanly(page, min_ink=0.05)
    dom = browser.parse_dom(page.dom)
    headings = [h.text for h in dom.find_all("h1")]
    assert headings[0] == "seed-000: 30 / 30"
    assert any(h.startswith("Taoistic Search") for h in headings)          # the notebook's own title
    boxes = dom.find_all("div", cls="grader-box")
    placed = [box.attrs["data-exercises"] for box in boxes if "data-exercises" in box.attrs]
    assert sorted(" ".join(placed).split()) == sorted(e.id for e in result.exercises)
    manhattan = next(box for box in boxes if box.attrs.get("data-exercises") == "manhattan")
    # Counting the blank is an accepted variant: the box says manhattan passes with full marks.
    assert "✓ manhattan" in manhattan.text and "(3 / 3)" in manhattan.text
    assert len(dom.find_all("div", cls="jp-CodeCell")) > 20          # the student's cells are all there


@pytest.mark.skipif(importlib.util.find_spec("grader.report.class_report") is None, reason="no class report yet")
def test_class_report_renders(bundled: Batch, tmp_path: Path) -> None:
    from grader.report.class_report import class_report_html
    html = write(tmp_path / "class.html", class_report_html(list(bundled.results.values())))
    page = browser.render(html, tmp_path / "class.png")
    assert_rendered_cleanly(page)
    dom = browser.parse_dom(page.dom)
    assert len(dom.find_all("h1")) == 1
    headings = [h.text for h in dom.find_all("h2")]
    assert "Score distribution" in headings and "Common mistakes and errors" in headings
    assert all(img.attrs["src"].startswith("data:image/") for img in dom.find_all("img"))



def test_class_report_names_an_untitled_exercise_once(bundled: Batch, tmp_path: Path) -> None:
    """A rubric's title defaults to the id: the class report read 'is_solvable is_solvable' in its headings and
    table, and its column header's tooltip repeated the id. Shown in Chromium, each heading has the id once."""
    from dataclasses import replace
    from grader.report.class_report import class_report_html
    results = [replace(r, exercises=tuple(replace(e, title=e.id) for e in r.exercises))
               for r in bundled.results.values()]
    ids = {e.id for r in results for e in r.exercises}
    page = browser.render(write(tmp_path / "class.html", class_report_html(results)), None)
    assert page.console_errors == ()
    dom = browser.parse_dom(page.dom)
    headings = [" ".join(h.text.split()) for h in dom.find_all("h3")] + \
        [" ".join(s.text.split()) for s in dom.find_all("summary")]
    shown = [h for h in headings if h.split(" ")[0].rstrip(":") in ids]
    assert shown and not [h for h in shown if h.split(" ")[1:2] == [h.split(" ")[0].rstrip(":")]], shown
    assert not [th for th in dom.find_all("th", cls="exercise") if th.attrs.get("title") in ids]
    cells = [[td.text.strip() for td in tr.find_all("td")] for tr in dom.find_all("tr")]
    assert not [row for row in cells if len(row) > 1 and row[0] in ids and row[1] == row[0]]


# Every box that scrolls sideways, and the page itself: [tag, id or class, scrollWidth, clientWidth] of each one
# whose content is wider than it is.
SIDEWAYS = """Array.from(document.querySelectorAll('*')).filter(e =>
  (e === document.documentElement || getComputedStyle(e).overflowX !== 'visible') && e.scrollWidth > e.clientWidth)
  .map(e => [e.tagName, e.id || e.className, e.scrollWidth, e.clientWidth])"""


def test_class_report_fits_a_1200_pixel_window_with_long_student_ids(bundled: Batch, tmp_path: Path) -> None:
    """An LMS's student ids run long ("lastname_firstname_..."): the students' table kept each on one line, so at
    1200 px its similarity column sat behind a sideways scroll, and the lists of ids under the wrong answers
    widened the page. Measured in Chromium: nothing on the page scrolls sideways."""
    from dataclasses import replace
    from grader.report.class_report import class_report_html
    long_ids = {"int-tiles": "vandenberghe-castellanos_maria-fernanda_48213",
                "move-dir-transposed": "oberhollenzer-wittgenstein_maximiliane_51170",
                "find-tile-transposed": "garcia-de-la-fuente-y-montoya_juan-sebastian"}
    results = [replace(r, submission=long_ids.get(r.submission, r.submission)) for r in bundled.results.values()]
    page = browser.render(write(tmp_path / "class.html", class_report_html(results)), None, width=1200,
                          measure=SIDEWAYS)
    assert page.console_errors == ()
    table = browser.parse_dom(page.dom).find_all("table", id="students-table")[0]
    assert {row.attrs["data-student"] for row in table.find_all("tr") if "data-student" in row.attrs} >= \
        set(long_ids.values())
    assert page.measured == []


# ---------------------------------------------------------------------------------------------- the dashboard

SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"   # shown in the README
REFRESH = "PUZZLE_GRADER_SCREENSHOTS"


def screenshot(page: Path, name: str, scratch: Path, *, fragment: str = "", height: int = 1000) -> browser.Rendered:
    """Render `page` as the README's screenshot `name`: into `scratch`, or over the README's picture when
    PUZZLE_GRADER_SCREENSHOTS=1, so a test run leaves the working tree as it found it."""
    folder = SCREENSHOTS if os.environ.get(REFRESH) == "1" else scratch
    folder.mkdir(parents=True, exist_ok=True)
    return browser.render(page, folder / name, width=1200, height=height, fragment=fragment)


def student_order(rendered: browser.Rendered) -> list[str]:
    table = browser.parse_dom(rendered.dom).find_all("table", id="students-table")[0]
    return [row.attrs["data-student"] for row in table.find_all("tr") if "data-student" in row.attrs]


def test_dashboard_table_sorts_and_every_student_link_opens_that_report(bundled: Batch, tmp_path: Path) -> None:
    from grader.store import overrides
    from grader.report.class_report import write_class_report
    results = sorted(bundled.results.values(), key=lambda r: r.submission)
    adjusted = overrides.Override("move-dir-transposed", results[0].rubric, "move_dir", "", 2.0, "regrade request",
                                  "ta-anna", "2026-01-01T00:00:00.000000+00:00",
                                  bundled["move-dir-transposed"].sha256, 0.0)
    results = [overrides.apply(r, [adjusted]) for r in results]
    page = write_class_report(results, tmp_path / "class.html", notebooks=SUBMISSIONS)

    rendered = browser.render(page, tmp_path / "class.png")
    assert_rendered_cleanly(rendered)
    names = sorted(r.submission for r in results)
    assert student_order(rendered) == names                                  # by name until asked otherwise
    totals = {r.submission: r.total for r in results}
    by_total = student_order(browser.render(page, None, fragment="sort=total-desc"))
    assert [totals[s] for s in by_total] == sorted(totals.values(), reverse=True)
    ascending = student_order(browser.render(page, None, fragment="sort=total"))
    assert [totals[s] for s in ascending] == sorted(totals.values())
    assert student_order(browser.render(page, None, fragment="sort=student-desc")) == names[::-1]

    dom = browser.parse_dom(rendered.dom)
    row = next(r for r in dom.find_all("tr") if r.attrs.get("data-student") == "move-dir-transposed")
    assert "regrade request" in row.find_all("span", cls="override")[0].attrs["title"]
    links = {a.text: a.attrs["href"] for a in dom.find_all("a", cls="student")}
    assert sorted(links) == names
    for name, href in links.items():                                      # every link opens that report
        opened = browser.render(page.parent / href, None)
        assert opened.console_errors == ()
        assert [h.text for h in browser.parse_dom(opened.dom).find_all("h1")] == [f"Feedback: {name}"]
    if os.environ.get(REFRESH) == "1":      # the README's pictures, of pages this test has looked at already
        screenshot(page, "dashboard.png", tmp_path, fragment="sort=total-desc")
        screenshot(page.parent / links["manhattan-counts-blank"], "student-report.png", tmp_path)


def test_similarity_page_shows_the_planted_pair_first(tmp_path: Path) -> None:
    from grader.report.similarity_page import write_similarity
    from grader.report.similarity import class_code, compare, template_code
    from similarity_class import FUNCTIONS, write_class
    from test_similarity import results_for
    from conftest import TEMPLATE
    code, _ = class_code(results_for(write_class(tmp_path / "class")))
    page, _ = write_similarity(compare(code, template_code=template_code(TEMPLATE)), tmp_path / "similarity.html")
    rendered = screenshot(page, "similarity.png", tmp_path, height=1400)
    assert_rendered_cleanly(rendered, size=(1200, 1400))
    dom = browser.parse_dom(rendered.dom)
    first = next(r for r in dom.find_all("tr") if "data-left" in r.attrs)
    assert (first.attrs["data-left"], first.attrs["data-right"]) == ("copier", "original")
    section = dom.find_all("section", cls="pair")[0]
    assert {f.attrs["data-function"] for f in section.find_all("div", cls="function")} == set(FUNCTIONS)
    assert len(section.find_all("mark")) >= 2 * len(FUNCTIONS)              # both sides marked


def test_annotated_notebook_renders_latex_places_a_syntax_error_box_and_links_boxes_and_cells(
        bundled: Batch, tmp_path: Path) -> None:
    pytest.importorskip("latex2mathml")
    result = bundled["syntax-error"]
    html = write(tmp_path / "syntax-error.html",
                 annotated.annotated_notebook(SUBMISSIONS / "syntax-error.ipynb", result))
    page = browser.render(html, tmp_path / "syntax-error.png")
    assert_rendered_cleanly(page, min_ink=0.05)
    dom = browser.parse_dom(page.dom)
    formulas = dom.find_all("math")
    assert len(formulas) > 20                                             # the template's LaTeX, as MathML
    assert any(f.find_all("msub") for f in formulas)                      # P_1 drawn with a subscript
    text = dom.text
    assert "$P_1$" not in text and "$x$" not in text
    # replace_numbers is in a cell that does not parse: its box is after that cell, not in the summary.
    boxes = dom.find_all("div", cls="grader-box")
    placed = [b for b in boxes if "replace_numbers" in b.attrs.get("data-exercises", "").split()]
    assert len(placed) == 1 and "grader-summary" not in placed[0].classes
    ids = {e.attrs["id"] for e in dom.iter() if "id" in e.attrs}
    to_cells = [a.attrs["href"] for a in dom.find_all("a", cls="grader-to-cell")]
    assert to_cells and all(href[1:] in ids for href in to_cells)         # each box links to its cell
    summary = next(b for b in boxes if "grader-summary" in b.classes)
    to_exercises = [a.attrs["href"] for a in summary.find_all("a") if a.attrs.get("href", "").startswith("#")]
    assert sorted(href[len("#exercise-"):] for href in to_exercises) == sorted(e.id for e in result.exercises)
    assert all(href[1:] in ids for href in to_exercises)                  # summary -> each exercise
