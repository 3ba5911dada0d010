"""Similarity: a planted copy (renamed, reordered, template shared by all) ranks above every honest pair.

The class is real notebooks built from the Taoistic Search template (tests/similarity_class.py); the results
point at them the way `grader grade` results do, so the command reads the same files a TA's would.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testclock import within
from grader.report.similarity_page import marked, similarity_csv, similarity_html
from grader.store.results import ExerciseResult, SubmissionResult, write_json
from grader.report.similarity import class_code, compare, fingerprints, score_pair, template_code, template_fingerprints

from conftest import RUBRIC, TEMPLATE
from similarity_class import FUNCTIONS, HONEST, synthetic_class, write_class

PLANTED = ("copier", "original")


def results_for(paths: dict[str, Path]) -> list[SubmissionResult]:
    """Results of the class as the grader writes them (scores do not matter here; the exercises and paths do).
    main and draw are given by the template in full: they must never count."""
    exercises = tuple(ExerciseResult(f, f, 0.0, 2.0, (), function=f) for f in (*FUNCTIONS, "main", "draw"))
    return [SubmissionResult(student, str(path), "0" * 64, "taoistic-search", "1" * 64, "0.1.0", "namespaces",
                             0.0, 14.0, exercises) for student, path in paths.items()]


@pytest.fixture(scope="module")
def planted_class(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[SubmissionResult]]:
    folder = tmp_path_factory.mktemp("similarity-class")
    results = results_for(write_class(folder / "notebooks"))
    for result in results:
        write_json(result, folder / "results")
    return folder, results


def test_the_planted_pair_ranks_above_every_honest_pair(planted_class) -> None:
    _, results = planted_class
    code, notes = class_code(results)
    assert notes == [] and sorted(code) == sorted([*HONEST, "copier"])
    similarity = compare(code, template_code=template_code(TEMPLATE))
    first, *rest = similarity.pairs
    assert (first.left, first.right) == PLANTED
    assert first.score > 0.95 and first.flagged
    assert {m.function for m in first.functions} == set(FUNCTIONS)        # main and draw are all template
    assert all(m.similarity > 0.95 for m in first.functions)
    # The copy of `original` is as close to the honest students as `original` itself, and no closer.
    assert max(p.score for p in rest) < 0.3 and not any(p.flagged for p in rest)
    assert [(p.left, p.right) for p in similarity.flagged] == [PLANTED]
    assert similarity.flagged_students() == {"copier": first.score, "original": first.score}


def test_template_code_never_counts_even_when_everyone_shares_it(planted_class) -> None:
    _, results = planted_class
    code, _ = class_code(results)
    given = {s: {"main": functions["main"], "draw": functions["draw"]} for s, functions in code.items()}
    assert len({f["main"] for f in given.values()}) == 1                   # everybody has the template's main
    similarity = compare(given, template_code=template_code(TEMPLATE))
    assert similarity.pairs == () and similarity.pairs_compared == 10     # no pair shares any code
    # Without the template, code most of the class shares is an idiom and is left out just the same.
    without = compare(given)
    assert without.pairs == () and without.pairs_compared == 10


def test_renaming_and_reordering_change_nothing_but_other_code_does() -> None:
    original = HONEST["original"]
    renamed = {"a": dict(original), "b": {f: code.replace("result", "total_sum") for f, code in original.items()}}
    assert compare(renamed).pairs[0].score == pytest.approx(1.0)
    different = {"a": dict(original), "b": dict(HONEST["bo"])}
    assert compare(different).pairs[0].score < 0.2


def test_the_shared_regions_are_marked_in_each_students_own_code(planted_class) -> None:
    _, results = planted_class
    code, _ = class_code(results)
    similarity = compare(code, template_code=template_code(TEMPLATE))
    manhattan = next(m for m in similarity.pairs[0].functions if m.function == "manhattan")
    left, right = code["copier"]["manhattan"], code["original"]["manhattan"]
    assert "answer" in "".join(left[a:b] for a, b in manhattan.left)       # the copier's renamed variable
    assert "result" in "".join(right[a:b] for a, b in manhattan.right)
    assert str(marked("a<b", ((1, 2),))) == "a<mark>&lt;</mark>b"


def test_page_and_csv_rank_the_planted_pair_first_and_escape_names(planted_class) -> None:
    _, results = planted_class
    code, _ = class_code(results)
    code["<script>alert(1)</script>"] = code.pop("cy")
    similarity = compare(code, template_code=template_code(TEMPLATE))
    page = similarity_html(similarity, csv_name="similarity.csv")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.index('data-left="copier"') < page.index('data-left="ada"')
    rows = list(csv.DictReader(similarity_csv(similarity).splitlines()))
    assert (rows[0]["student_a"], rows[0]["student_b"], rows[0]["flagged"]) == ("copier", "original", "1")
    assert len(rows) == len(similarity.pairs) and similarity.pairs_compared == 10     # five students
    assert sum(r["flagged"] == "1" for r in rows) == 1


def test_the_command_writes_page_and_csv(planted_class, tmp_path: Path) -> None:
    folder, _ = planted_class
    out = tmp_path / "similarity.html"
    done = subprocess.run([sys.executable, "-m", "grader", "similarity", str(folder / "results"), "--out", str(out),
                           "--rubric", str(RUBRIC)], capture_output=True, text=True, timeout=within(300))
    assert done.returncode == 0, done.stderr
    assert "1 at or above 0.6" in done.stdout and "copier  original" in done.stdout
    rows = list(csv.DictReader(out.with_suffix(".csv").read_text(encoding="utf-8").splitlines()))
    assert (rows[0]["student_a"], rows[0]["student_b"]) == PLANTED


def test_without_a_template_option_the_course_rubric_of_the_assignment_is_used(planted_class, tmp_path: Path) -> None:
    folder, _ = planted_class
    out = tmp_path / "similarity.html"
    done = subprocess.run([sys.executable, "-m", "grader", "similarity", str(folder / "results"), "--out", str(out)],
                          capture_output=True, text=True, timeout=within(300), cwd=RUBRIC.parents[1])
    assert done.returncode == 0, done.stderr
    assert "template: " in done.stdout and "taoistic-search.yaml" in done.stdout
    assert "1 at or above 0.6" in done.stdout and "copier  original" in done.stdout


# ------------------------------------------------------------------------------------------- at class scale

def all_pairs(code: dict[str, dict[str, str]], template: str = "", threshold: float = 0.6) -> list:
    """Every pair of the class scored one by one, the way the comparison worked before its index."""
    prints = fingerprints(code, template_fingerprints(template))
    students = sorted(code)
    return [score_pair(a, b, prints, threshold) for i, a in enumerate(students) for b in students[i + 1:]]


def same_scores(listed, brute) -> None:
    """The index lists exactly the pairs that share code, with the scores of comparing them one by one."""
    sharing = sorted((p for p in brute if p.matched), key=lambda p: (-p.score, -p.matched, p.left, p.right))
    assert [(p.left, p.right, p.score, p.matched, p.compared, p.flagged) for p in listed] == \
        [(p.left, p.right, p.score, p.matched, p.compared, p.flagged) for p in sharing]
    assert [[(m.function, m.similarity, m.matched, m.compared) for m in p.functions] for p in listed] == \
        [[(m.function, m.similarity, m.matched, m.compared) for m in p.functions] for p in sharing]
    assert all(p.score == 0 for p in brute if not p.matched)


def test_the_index_lists_every_pair_that_shares_code_of_the_planted_class(planted_class) -> None:
    _, results = planted_class
    code, _ = class_code(results)
    template = template_code(TEMPLATE)
    similarity = compare(code, template_code=template)
    same_scores(similarity.pairs, all_pairs(code, template))
    assert similarity.pairs_compared == len(all_pairs(code, template)) == 10


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(min_value=2, max_value=14), seed=st.integers(min_value=0, max_value=2**32))
def test_the_index_finds_the_same_pairs_as_comparing_every_pair(size: int, seed: int) -> None:
    code = synthetic_class(size, seed)
    similarity = compare(code, located=3)
    brute = all_pairs(code)
    same_scores(similarity.pairs, brute)
    # The shared code is located in the pairs shown (all flagged ones and the `located` most similar), only there.
    shown = max(3, len(similarity.flagged))
    spans = {(p.left, p.right): [(m.left, m.right) for m in p.functions] for p in brute}
    assert all([(m.left, m.right) for m in p.functions] == spans[(p.left, p.right)] for p in similarity.pairs[:shown])
    assert all(m.left == m.right == () for p in similarity.pairs[shown:] for m in p.functions)


def test_the_same_class_scores_the_same_whatever_the_hash_seed(tmp_path: Path) -> None:
    """copydetect hashes k-grams with Python's hash(): under another PYTHONHASHSEED the same class would be
    winnowed, scored and flagged differently. The grader's own k-gram hash is the same in every process."""
    script = ("import sys; sys.path.insert(0, sys.argv[1])\n"
              "from similarity_class import synthetic_class\n"
              "from grader.report.similarity import compare\n"
              "from grader.report.similarity_page import similarity_csv\n"
              "print(similarity_csv(compare(synthetic_class(30))))\n")
    tests = str(Path(__file__).resolve().parent)
    outputs = {subprocess.run([sys.executable, "-c", script, tests], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, timeout=within(300)).stdout
               for seed in ("1", "2")}
    assert len(outputs) == 1 and outputs.pop().count("\n") > 10
