"""The similarity report: a page for the TA (every pair ranked, the most similar side by side with the matching
code marked) and a CSV of every pair. Both only format a grader.report.similarity.Similarity."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from grader.files import write_text
from grader.report.class_outputs import Classroom, Written
from grader.report.csv_export import text as csv_text
from grader.report.similarity import Pair, Similarity
from grader.textsafe import display

TEMPLATES = Path(__file__).parent / "templates"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"   # no script, no network
SIDE_BY_SIDE = 20          # at most this many pairs get their code shown
SIDE_BY_SIDE_AT_LEAST = 3  # even when fewer are flagged, the most similar pairs are shown
LISTED = 200               # rows of the ranking


def marked(code: str, spans: tuple[tuple[int, int], ...]) -> Markup:
    """The code escaped, the shared spans wrapped in <mark>."""
    pieces, last = [], 0
    for start, stop in spans:
        start, stop = max(start, last), min(stop, len(code))
        if start >= stop:
            continue
        pieces += [escape(code[last:start]), Markup("<mark>"), escape(code[start:stop]), Markup("</mark>")]
        last = stop
    pieces.append(escape(code[last:]))
    return Markup("").join(pieces)


def shown_pairs(similarity: Similarity) -> tuple[Pair, ...]:
    count = min(SIDE_BY_SIDE, max(len(similarity.flagged), SIDE_BY_SIDE_AT_LEAST))
    return tuple(p for p in similarity.pairs[:count] if p.matched)


def pair_anchor(similarity: Similarity, pair: Pair) -> str:
    """'pair-3' for the third most similar pair: ids without the students' names (which may hold anything)."""
    return f"pair-{similarity.pairs.index(pair) + 1}"


def similarity_html(similarity: Similarity, *, title: str = "Similarity", csv_name: str | None = None) -> str:
    """One self-contained page: inline CSS, no script, no network; every student string escaped."""
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(percent=lambda v: f"{100 * v:.0f}%",
                               anchor=lambda pair: pair_anchor(similarity, pair))
    return environment.get_template("similarity.html.j2").render(
        similarity=similarity, title=title, csp=CSP, csv_name=csv_name, listed=similarity.pairs[:LISTED],
        shown=shown_pairs(similarity), marked=marked)


def similarity_csv(similarity: Similarity) -> str:
    """Every pair that shares code, most similar first: the score, whether it is flagged, and each function's
    similarity (a pair not listed shares no code: it scores 0)."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["student_a", "student_b", "score", "flagged", "matched", "compared", *similarity.functions])
    for pair in similarity.pairs:
        by_function = {m.function: f"{m.similarity:.3f}" for m in pair.functions}
        writer.writerow([csv_text(pair.left), csv_text(pair.right), f"{pair.score:.3f}", int(pair.flagged),
                         pair.matched, pair.compared, *(by_function.get(f, "") for f in similarity.functions)])
    return stream.getvalue()


def write_similarity(similarity: Similarity, html_path: Path, csv_path: Path | None = None, *,
                     title: str = "Similarity") -> tuple[Path, Path]:
    """The page and the CSV (default: beside the page, same name, .csv), each written atomically."""
    html_path = Path(html_path)
    csv_path = Path(csv_path) if csv_path is not None else html_path.with_suffix(".csv")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    write_text(csv_path, display(similarity_csv(similarity)))   # any string: a lone surrogate becomes U+FFFD
    write_text(html_path, display(similarity_html(similarity, title=title, csv_name=csv_path.name)))
    return html_path, csv_path


def write_class_similarity(classroom: Classroom, target: Path) -> Written:
    """The class output `similarity`: the page at `target` and its CSV (beside it, or classroom.similarity_csv)."""
    from grader.report.similarity import class_similarity
    similarity = class_similarity(classroom)
    page, table = write_similarity(similarity, target, classroom.similarity_csv)
    compared = similarity.pairs_compared
    lines = [f"{len(similarity.students)} submissions, {compared} pair{'s' if compared != 1 else ''} compared, "
             f"{len(similarity.pairs)} share code, {len(similarity.flagged)} at or above {similarity.threshold:g}: "
             f"{page} (and {table})"]
    lines += [f"  {pair.score:.0%}  {pair.left}  {pair.right}" for pair in similarity.flagged[:10]]
    lines += [f"note: {note}" for note in similarity.notes]
    return Written((page, table), len(similarity.students), tuple(lines))
