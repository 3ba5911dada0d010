"""Pairwise similarity of each graded function across a class, with the template's code never counting.

Built on copydetect (Stanford MOSS's winnowing, Schleimer et al. 2003): a function's code is tokenized with
pygments and every identifier becomes `V`, every function name `F`, every string `S` (so renaming variables
changes nothing), k-grams of that token text are hashed and winnowed into fingerprints, and two functions are
similar as far as their fingerprints overlap. Comparing function by function (never whole notebooks) makes
reordering functions or cells change nothing either.

What never counts:
- the template: every fingerprint of the template's code (the given helpers, the stubs' signatures and
  docstrings) is boilerplate, so code the course handed out matches nobody;
- what most of the class wrote alike: a fingerprint found in at least `common` submissions of a function is
  an idiom, not a copy (MOSS's `-m`), and is dropped like the template's.

A pair's score is the share of both students' remaining fingerprinted code that matches, summed over the
functions both wrote: long copied functions weigh more than a one-line `return S[r][c]` two honest students
wrote alike.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

NOISE = 25            # k: a match shorter than this many token characters is never reported (copydetect's default)
GUARANTEE = 30        # a match this long is always found: winnowing window = GUARANTEE - NOISE + 1
THRESHOLD = 0.6       # pairs at or above this score are flagged
COMMON_SHARE = 0.5    # a fingerprint in at least this share of the class is an idiom ...
COMMON_AT_LEAST = 4   # ... but never in fewer submissions than this (small classes keep everything)


class SimilarityUnavailable(RuntimeError):
    """copydetect is not installed (it comes with the [reports] extra)."""


@dataclass(frozen=True)
class FunctionMatch:
    """How one function of two students matches: character spans of each one's code that are shared."""

    function: str
    similarity: float                        # matched / fingerprinted code of both sides, in [0, 1]
    matched: int                             # matched token characters, both sides together
    compared: int                            # fingerprinted token characters, both sides together
    left: tuple[tuple[int, int], ...]        # (start, stop) in the left student's code of the function
    right: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Pair:
    left: str
    right: str
    score: float                             # matched / compared over every function both wrote
    matched: int
    compared: int
    functions: tuple[FunctionMatch, ...]     # most similar first
    flagged: bool


@dataclass(frozen=True)
class Similarity:
    """Every pair of the class, most similar first, and the code they were computed from."""

    students: tuple[str, ...]
    functions: tuple[str, ...]
    pairs: tuple[Pair, ...]
    code: Mapping[str, Mapping[str, str]]    # student -> function -> code
    threshold: float
    template: bool                           # whether template code was given as boilerplate
    notes: tuple[str, ...]                   # submissions left out and why

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.flagged)

    def flagged_students(self) -> dict[str, float]:
        """Student -> the highest score of a flagged pair they are in."""
        best: dict[str, float] = {}
        for pair in self.flagged:
            for student in (pair.left, pair.right):
                best[student] = max(best.get(student, 0.0), pair.score)
        return best


def _copydetect():
    try:
        from copydetect.detector import CodeFingerprint, compare_files
    except ImportError as error:     # pragma: no cover - depends on the install
        raise SimilarityUnavailable(
            "the similarity check needs copydetect: pip install 'puzzle-grader[reports]'") from error
    return CodeFingerprint, compare_files


def _fingerprint(code: str, boilerplate: Iterable[int], noise: int, guarantee: int):
    import numpy as np
    CodeFingerprint, _ = _copydetect()
    return CodeFingerprint("code.py", noise, guarantee - noise + 1, boilerplate=np.array(sorted(boilerplate),
                           dtype=np.int64), language="python", fp=io.StringIO(code))


def template_fingerprints(template_code: str, *, noise: int = NOISE, guarantee: int = GUARANTEE) -> frozenset[int]:
    """Every fingerprint of the template's code. Winnowing keeps only some k-grams, so all of them are taken
    (window 1): a student's k-gram that is anywhere in the template must be recognized as the template's."""
    if not template_code.strip():
        return frozenset()
    return frozenset(int(h) for h in _fingerprint(template_code, (), noise, noise).hashes)


def compare(code: Mapping[str, Mapping[str, str]], *, template_code: str = "", threshold: float = THRESHOLD,
            noise: int = NOISE, guarantee: int = GUARANTEE, common_share: float = COMMON_SHARE,
            common_at_least: int = COMMON_AT_LEAST, notes: Sequence[str] = ()) -> Similarity:
    """All pairs of students, most similar first. `code` is student -> function -> that student's code."""
    _, compare_files = _copydetect()
    students = tuple(sorted(code))
    functions = tuple(dict.fromkeys(f for s in students for f in code[s]))
    template = template_fingerprints(template_code, noise=noise, guarantee=guarantee)
    common = max(common_at_least, math.ceil(common_share * len(students)))
    prints: dict[str, dict[str, Any]] = {f: {} for f in functions}   # copydetect's CodeFingerprint
    for function in functions:
        first = {s: _fingerprint(code[s][function], template, noise, guarantee)
                 for s in students if code[s].get(function, "").strip()}
        frequency: dict[int, int] = {}
        for fingerprint in first.values():
            for value in fingerprint.hashes:
                frequency[int(value)] = frequency.get(int(value), 0) + 1
        idioms = {value for value, count in frequency.items() if count >= common}
        for fingerprint in first.values() if idioms else ():
            _drop(fingerprint, idioms)
        prints[function] = first
    pairs = []
    for i, left in enumerate(students):
        for right in students[i + 1:]:
            matches = []
            for function in functions:
                a, b = prints[function].get(left), prints[function].get(right)
                if a is None or b is None or not a.token_coverage or not b.token_coverage:
                    continue
                if a.hashes.isdisjoint(b.hashes):     # most honest pairs: nothing shared, nothing to locate
                    matches.append(FunctionMatch(function, 0.0, 0, int(a.token_coverage) + int(b.token_coverage),
                                                 (), ()))
                    continue
                overlap, (share_a, share_b), (slices_a, slices_b) = compare_files(a, b)
                # copydetect's shares are matched / fingerprinted token characters of each side
                matched = round(float(share_a) * a.token_coverage + float(share_b) * b.token_coverage)
                compared = int(a.token_coverage) + int(b.token_coverage)
                matches.append(FunctionMatch(
                    function, min(1.0, matched / compared), min(matched, compared), compared,
                    _spans(slices_a) if overlap else (), _spans(slices_b) if overlap else ()))
            matched = sum(m.matched for m in matches)
            compared = sum(m.compared for m in matches)
            score = matched / compared if compared else 0.0
            matches.sort(key=lambda m: (-m.similarity, -m.compared, m.function))
            pairs.append(Pair(left, right, score, matched, compared, tuple(matches), score >= threshold))
    pairs.sort(key=lambda p: (-p.score, -p.matched, p.left, p.right))
    return Similarity(students, functions, tuple(pairs), code, threshold, bool(template), tuple(notes))


def _drop(fingerprint, hashes: set[int]) -> None:
    """Remove fingerprints from a copydetect CodeFingerprint, as if they had been given as boilerplate
    (copydetect drops boilerplate after winnowing too), without tokenizing the code again."""
    from copydetect.utils import get_token_coverage
    fingerprint.hash_idx = {h: i for h, i in fingerprint.hash_idx.items() if int(h) not in hashes}
    fingerprint.hashes = set(fingerprint.hash_idx)
    fingerprint.token_coverage = get_token_coverage(fingerprint.hash_idx, fingerprint.k,
                                                    len(fingerprint.filtered_code))


def _spans(slices) -> tuple[tuple[int, int], ...]:
    """copydetect's 2xN array of starts and stops in the original code, merged where they overlap."""
    spans: list[tuple[int, int]] = []
    for start, stop in sorted(zip((int(x) for x in slices[0]), (int(x) for x in slices[1]), strict=True)):
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], stop))
        else:
            spans.append((start, stop))
    return tuple(spans)


# ------------------------------------------------------------------------------------------- from the files


def class_code(results, notebooks=None, results_folder=None) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Student -> graded function -> that student's code, read from each result's notebook; and the
    submissions left out (notebook not found, nothing extracted), each with why."""
    from grader.report.student import function_code, locate_notebook
    code: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for result in results:
        notebook = locate_notebook(result, notebooks, results_folder)
        if notebook is None:
            notes.append(f"{result.submission}: left out, its notebook {result.path or '(no path)'} was not found")
            continue
        functions = function_code(notebook, result.exercises)
        if not functions:
            notes.append(f"{result.submission}: left out, no graded function could be read from {notebook.name}")
            continue
        code[result.submission] = functions
    return code, notes


def template_code(path) -> str:
    """The code of the template notebook (or .py) as the grader extracts it: what every student was given."""
    from grader.extract import extract
    from grader.notebook import read_notebook
    return extract(read_notebook(path)).source()
