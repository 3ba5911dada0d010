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

import bisect
import hashlib
import itertools
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from grader.report.class_outputs import Classroom

NOISE = 25            # k: a match shorter than this many token characters is never reported (copydetect's default)
GUARANTEE = 30        # a match this long is always found: winnowing window = GUARANTEE - NOISE + 1
THRESHOLD = 0.6       # pairs at or above this score are flagged
LOCATED = 50          # the shared code is located in at least this many of the most similar pairs (and all flagged)
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
    """The pairs of the class that share code, most similar first, and the code they were computed from."""

    students: tuple[str, ...]
    functions: tuple[str, ...]
    pairs: tuple[Pair, ...]                  # every other pair shares no fingerprint: it scores 0
    code: Mapping[str, Mapping[str, str]]    # student -> function -> code
    threshold: float
    template: bool                           # whether template code was given as boilerplate
    notes: tuple[str, ...]                   # submissions left out and why
    pairs_compared: int = 0                  # every pair of the class, listed or not

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


def _copydetect() -> tuple[Callable[..., Any], Callable[..., Any]]:
    try:
        from copydetect.utils import filter_code, winnow
    except ImportError as error:     # pragma: no cover - depends on the install
        raise SimilarityUnavailable(
            "the similarity check needs copydetect: pip install 'puzzle-grader[reports]'") from error
    return filter_code, winnow


def kgram_hash(text: str) -> int:
    """A k-gram's hash, the same in every process. copydetect hashes k-grams with Python's hash(), which
    PYTHONHASHSEED changes from run to run, so the same class would be winnowed, scored and flagged differently
    each time; its tokenizer and winnowing are used as they are."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _kgram_hashes(code: str, noise: int) -> tuple[str, Any, Any]:
    """The code filtered by copydetect's tokenizer (names V and F, strings S), its offsets back to the code,
    and the hash of each k-gram of the filtered text."""
    import numpy as np
    filter_code, _ = _copydetect()
    filtered, offsets = filter_code(code, "code.py", "python")
    hashes = np.array([kgram_hash(filtered[i:i + noise]) for i in range(len(filtered) - noise + 1)], dtype=np.int64)
    return filtered, offsets, hashes


def _fingerprint(code: str, boilerplate: frozenset[int], noise: int, guarantee: int) -> _Print:
    """The winnowed fingerprints of `code` (copydetect's winnowing, window guarantee - noise + 1) less the
    boilerplate's, with where each stands."""
    _, winnow = _copydetect()
    _, offsets, hashes = _kgram_hashes(code, noise)
    selected, places = winnow(hashes, window_size=guarantee - noise + 1, remove_duplicates=False)
    positions: dict[int, list[int]] = {}
    for value, place in zip(selected.tolist(), places.tolist(), strict=True):
        if value not in boilerplate:
            positions.setdefault(value, []).append(place)
    pairs = [(int(at), int(removed)) for at, removed in offsets]
    return _Print.of({value: tuple(where) for value, where in positions.items()}, noise,
                     tuple(at for at, _ in pairs), tuple(removed for _, removed in pairs))


def template_fingerprints(template_code: str, *, noise: int = NOISE, guarantee: int = GUARANTEE) -> frozenset[int]:
    """Every fingerprint of the template's code. Winnowing keeps only some k-grams, so all of them are taken
    (window 1): a student's k-gram that is anywhere in the template must be recognized as the template's."""
    if not template_code.strip():
        return frozenset()
    return frozenset(_kgram_hashes(template_code, noise)[2].tolist())


def fingerprints(code: Mapping[str, Mapping[str, str]], template: frozenset[int] = frozenset(), *,
                 noise: int = NOISE, guarantee: int = GUARANTEE, common_share: float = COMMON_SHARE,
                 common_at_least: int = COMMON_AT_LEAST) -> dict[str, dict[str, _Print]]:
    """Function -> student -> the fingerprints of that student's code, with the `template`'s (see
    template_fingerprints) and the class's idioms dropped: what every pair is compared on. A code text that
    several students handed in is fingerprinted once."""
    students = sorted(code)
    functions = tuple(dict.fromkeys(f for s in students for f in code[s]))
    common = max(common_at_least, math.ceil(common_share * len(students)))
    prints: dict[str, dict[str, _Print]] = {}
    for function in functions:
        seen: dict[str, _Print] = {}
        first = {s: seen.get(text) or seen.setdefault(text, _fingerprint(text, template, noise, guarantee))
                 for s in students if (text := code[s].get(function, "")).strip()}
        frequency: Counter[int] = Counter(value for fingerprint in first.values() for value in fingerprint.positions)
        idioms = {value for value, count in frequency.items() if count >= common}
        prints[function] = {s: fingerprint.without(idioms) for s, fingerprint in first.items()} if idioms else first
    return prints


def compare(code: Mapping[str, Mapping[str, str]], *, template_code: str = "", threshold: float = THRESHOLD,
            noise: int = NOISE, guarantee: int = GUARANTEE, common_share: float = COMMON_SHARE,
            common_at_least: int = COMMON_AT_LEAST, located: int = LOCATED, notes: Sequence[str] = ()) -> Similarity:
    """Every pair of students that shares code, most similar first. `code` is student -> function -> that
    student's code.

    An inverted index (fingerprint -> the students who have it) names the pairs that share at least one
    fingerprint; only those are scored, so a pair that shares nothing costs nothing (it scores 0 and is counted
    in `pairs_compared`, not listed). The shared stretches of code are located for the pairs a TA is shown:
    every flagged pair and at least the `located` most similar ones; the others carry scores only."""
    students = tuple(sorted(code))
    template = template_fingerprints(template_code, noise=noise, guarantee=guarantee)
    prints = fingerprints(code, template, noise=noise, guarantee=guarantee, common_share=common_share,
                          common_at_least=common_at_least)
    functions = tuple(prints)
    pairs = [score_pair(left, right, prints, threshold, locate=False) for left, right in _sharing(prints, students)]
    pairs.sort(key=_rank)
    shown = max(located, sum(p.flagged for p in pairs))
    pairs[:shown] = [score_pair(p.left, p.right, prints, threshold) for p in pairs[:shown]]
    return Similarity(students, functions, tuple(pairs), code, threshold, bool(template), tuple(notes),
                      len(students) * (len(students) - 1) // 2)


def _rank(pair: Pair) -> tuple[float, int, str, str]:
    return -pair.score, -pair.matched, pair.left, pair.right


def score_pair(left: str, right: str, prints: Mapping[str, Mapping[str, _Print]], threshold: float = THRESHOLD,
               locate: bool = True) -> Pair:
    """Two students compared on every function both wrote (`prints` from `fingerprints`); each function's
    shared stretches of code too when `locate`."""
    matches = []
    for function, by_student in prints.items():
        a, b = by_student.get(left), by_student.get(right)
        if a is not None and b is not None and a.coverage and b.coverage:
            matches.append(_match(function, a, b, locate))
    matched = sum(m.matched for m in matches)
    compared = sum(m.compared for m in matches)
    score = matched / compared if compared else 0.0
    matches.sort(key=lambda m: (-m.similarity, -m.compared, m.function))
    return Pair(left, right, score, matched, compared, tuple(matches), score >= threshold)


def _match(function: str, a: _Print, b: _Print, locate: bool) -> FunctionMatch:
    compared = a.coverage + b.coverage
    shared = a.hashes & b.hashes
    if not shared:     # most honest pairs: nothing shared, nothing to locate
        return FunctionMatch(function, 0.0, 0, compared, (), ())
    starts_a, stops_a = a.copied(shared)
    starts_b, stops_b = b.copied(shared)
    matched = sum(stops_a) - sum(starts_a) + sum(stops_b) - sum(starts_b)
    return FunctionMatch(function, min(1.0, matched / compared), min(matched, compared), compared,
                         a.located(starts_a, stops_a) if locate else (), b.located(starts_b, stops_b) if locate else ())


@dataclass(frozen=True)
class _Print:
    """One student's fingerprints of one function: where each hash stands in the filtered code, how much of it
    the fingerprints cover, and copydetect's offsets back to the student's own code. `copied` and `located`
    are what copydetect's compare_files computes for one side (its get_copied_slices and offset mapping), in
    plain Python: numpy arrays cost more than they save for a handful of numbers."""

    positions: dict[int, tuple[int, ...]]
    hashes: frozenset[int]           # the keys of positions, kept: pairs intersect them many times
    coverage: int                    # token characters the fingerprints cover (copydetect's token_coverage)
    k: int
    filtered_at: tuple[int, ...]     # copydetect's offsets[:, 0]: places in the filtered code ...
    removed: tuple[int, ...]         # ... and offsets[:, 1]: characters filtering removed before them

    @staticmethod
    def of(positions: dict[int, tuple[int, ...]], k: int, filtered_at: tuple[int, ...],
           removed: tuple[int, ...]) -> _Print:
        print_ = _Print(positions, frozenset(positions), 0, k, filtered_at, removed)
        if not positions:
            return print_
        starts, stops = print_.copied(positions)
        return replace(print_, coverage=sum(stops) - sum(starts))

    def without(self, hashes: set[int]) -> _Print:
        """These fingerprints less `hashes` (copydetect drops boilerplate after winnowing too)."""
        return _Print.of({h: where for h, where in self.positions.items() if h not in hashes}, self.k,
                         self.filtered_at, self.removed)

    def copied(self, shared: Iterable[int]) -> tuple[list[int], list[int]]:
        """Starts and stops, in the filtered code, of the stretches the `shared` hashes cover (k-grams that
        overlap or touch make one stretch)."""
        places = sorted(itertools.chain.from_iterable(map(self.positions.__getitem__, shared)))
        starts, stops = [places[0]], []
        gap = self.k - 1
        for before, after in itertools.pairwise(places):
            if after - before > gap:
                stops.append(before + self.k)
                starts.append(after)
        stops.append(places[-1] + self.k)
        return starts, stops

    def located(self, starts: list[int], stops: list[int]) -> tuple[tuple[int, int], ...]:
        """Those stretches as (start, stop) in the student's own code, merged where they overlap."""
        return _spans((tuple(map(self._original, starts)), tuple(map(self._original, stops))))

    def _original(self, at: int) -> int:
        if not self.filtered_at:
            return at
        return at + self.removed[min(bisect.bisect_left(self.filtered_at, at), len(self.filtered_at) - 1)]


def _sharing(prints: Mapping[str, Mapping[str, _Print]], students: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair (in the students' order) with at least one fingerprint in common in some function, found
    through an inverted index per function instead of by trying every pair."""
    rank = {student: i for i, student in enumerate(students)}
    partners: dict[str, set[str]] = {student: set() for student in students}
    for by_student in prints.values():
        index: dict[int, list[str]] = {}
        for student, fingerprint in by_student.items():
            for h in fingerprint.positions:
                index.setdefault(h, []).append(student)
        for holders in index.values():
            if len(holders) > 1:
                for student in holders:
                    partners[student].update(holders)
    return [(left, right) for left in students
            for right in sorted((s for s in partners[left] if rank[s] > rank[left]), key=rank.__getitem__)]


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
    from grader.store.results import NO_CODE
    code: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for result in results:
        if result.state in NO_CODE:   # its copy holds no code, and the TA knows the file by its own name
            why = result.warnings[0].shown if result.warnings else "its file could not be read"
            notes.append(f"{result.submission}: left out, not graded: {why}")
            continue
        notebook = locate_notebook(result, notebooks, results_folder)
        if notebook is None:
            notes.append(f"{result.submission}: left out, its notebook {result.path or '(no path)'} was not found")
            continue
        functions = function_code(notebook, result.exercises)
        if not functions:
            notes.append(f"{result.submission}: left out, no graded function could be read from "
                         f"{result.path or notebook.name}")
            continue
        code[result.submission] = functions
    return code, notes


def template_code(path) -> str:
    """The code of the template notebook (or .py) as the grader extracts it: what every student was given."""
    from grader.extract.source import extract
    from grader.intake.notebook import read_notebook
    return extract(read_notebook(path)).source()


def class_similarity(classroom: Classroom) -> Similarity:
    """The similarity of a class (its notebooks read one student at a time), the template's code never counting.
    Raises SimilarityUnavailable without copydetect."""
    code, notes = class_code(classroom.results(), classroom.notebooks, classroom.folder)
    return compare(code, template_code=template_code(classroom.template) if classroom.template else "",
                   threshold=classroom.threshold, notes=[*classroom.problems, *notes])
