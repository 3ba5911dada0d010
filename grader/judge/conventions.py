"""Accepted variants: one convention per exercise, chosen by the parent from the answers it judged.

An exercise may accept other conventions than the reference's (manhattan with or without the blank,
AIMA's h1 that counts it, the 2020/21 extract_move). A notebook is held to one of them across the
exercise: the convention under which it earns the most is chosen (the reference's on a tie) and every case
is judged by it, so mixing conventions case by case never pays. Pure functions over CaseResults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from grader.store.results import CaseResult, ExerciseResult, advised
from grader.rubric.schema import Exercise, Variant
from grader import codec

REFERENCE = ""   # the name of the reference's own convention


def _earned(results: Sequence[CaseResult]) -> float:
    return round(sum(r.weight * max(0.0, min(1.0, r.fraction)) for r in results), 9)


def hold_to_one(results: Sequence[CaseResult], by_variant: Sequence[Mapping[str, CaseResult]],
                allowed: Sequence[Variant]) -> tuple[list[CaseResult], str]:
    """Judge every case by the one convention that explains most answers; (results, variant chosen or "").

    `results` are the verdicts under the reference's convention, `by_variant[i]` the verdicts of case i under
    each variant whose answer to it is known.
    """
    options: dict[str, list[CaseResult]] = {REFERENCE: list(results)}
    for variant in allowed:
        options[variant.reference] = [judged.get(variant.reference, first)
                                      for first, judged in zip(results, by_variant, strict=True)]
    chosen = max(options, key=lambda name: (_earned(options[name]), name == REFERENCE))
    says = {v.reference: v for v in allowed}
    final = []
    for index, result in enumerate(options[chosen]):
        if chosen and result.status == "pass":
            result = replace(result, variant=chosen)
        elif result.status != "pass":
            other = next((name for name, judged in options.items()
                          if name != chosen and judged[index].status == "pass"), None)
            if other is not None:
                why = _mixed(other, chosen, says)
                result = replace(advised(result, why),
                                 cause=f"right under {_convention(other, says)} only: the notebook follows "
                                       f"{_convention(chosen, says)}")
        final.append(result)
    return final, chosen


def _convention(name: str, says: Mapping[str, Variant]) -> str:
    return "the reference's convention" if name == REFERENCE else f"the accepted variant {name}"


def _mixed(followed: str, chosen: str, says: Mapping[str, Variant]) -> str:
    return (f"this answer would be right under {_convention(followed, says)}, but the other answers follow "
            f"{_convention(chosen, says)}: a notebook must hold to one convention throughout")


# Is an answer (the second wire) the first, as the case (by id) reads answers? The judge's rule for known mistakes.
ReadsAs = Callable[[str, Any, Any], bool]


def _exactly(case_id: str, answer: Any, got: Any) -> bool:
    return codec.same(answer, got, validated=True) is None


def consistently_matched(result: ExerciseResult, function: str, expected: Mapping[str, Any],
                         reads_as: ReadsAs = _exactly) -> bool:
    """Did every answer of this exercise equal what `function` (a mistake or variant of it) answers?

    `expected` maps case id to the plan's Expected. A case on which the function and the reference agree
    must pass; every other case must have got the function's answer; and at least one case must
    tell them apart, so a notebook with no distinguishing answer is not taken for the other convention.
    "Agree" and "got" are as the case reads answers (`reads_as`, the judge's rule for known mistakes: a list
    where the check reads a list as a set is that set), not spelling for spelling.
    """
    told_apart = False
    for case in result.cases:
        known = expected.get(case.id)
        if known is None:
            return False
        answers = dict(known.mistakes) | dict(known.variants)
        if function not in answers:       # the function raised on this input: so must the notebook
            if case.status != "error":
                return False
            continue
        if reads_as(case.id, answers[function], known.value):
            if case.status != "pass":
                return False
            continue
        told_apart = True
        if case.status in ("missing", "error", "timeout") or not reads_as(case.id, answers[function], case.got):
            return False
    return told_apart


def allowed_variants(exercise: Exercise, judged: Mapping[str, ExerciseResult],
                     expected: Mapping[str, Any], reads_as: ReadsAs = _exactly) -> tuple[Variant, ...]:
    """The exercise's variants whose conditions on earlier exercises hold for this notebook."""
    allowed = []
    for variant in exercise.variants:
        if all(earlier in judged and consistently_matched(judged[earlier], function, expected, reads_as)
               for earlier, function in variant.when):
            allowed.append(variant)
    return tuple(allowed)


def variant_note(exercise: Exercise, chosen: str) -> tuple[str, ...]:
    """The note a student following a variant reads (the rubric's `say`)."""
    for variant in exercise.variants:
        if variant.reference == chosen:
            text = variant.say or f"your answers follow {chosen}, an accepted convention"
            return (f"Accepted convention: {text}",)
    return ()


def spelled_alike(wire: Any) -> Any:
    """The wire value with every plain tuple spelt as a list, at any depth: two answers alike but for which of the
    two sequences holds the values. A known mistake is written in the reference's spelling, and a notebook that
    spells its answers otherwise (findZero's [r, c], an accepted variant; find_tile's list, which the text does not
    allow) makes the same mistake in its own: matched so, the feedback names the mistake, and the check's message
    still names the spelling where it is wrong. Classed sequences (a namedtuple, a subclass) keep their kind.
    Depth is bounded by the codec's limits (the wire was validated)."""
    if type(wire) is not dict:
        return wire
    if "class" not in wire:
        for tag in ("tuple", "list"):
            if tag in wire:
                return {"list": [spelled_alike(item) for item in wire[tag]]}
    for tag in ("set", "frozenset", "list", "tuple"):
        if tag in wire:
            return {**wire, tag: [spelled_alike(item) for item in wire[tag]]}
    if "dict" in wire:
        return {**wire, "dict": [[spelled_alike(key), spelled_alike(value)] for key, value in wire["dict"]]}
    return wire


def spelling_notes(results: Sequence[CaseResult], expected: Mapping[str, Any], function: str) -> tuple[str, ...]:
    """What a student whose right answers came in another spelling than the text's reads (the check took them:
    a list for a set, a float for an int; see the `equal` options sequence_as_set and any_number_type).

    Full marks, and still worth knowing what the text asked for. From the answers' wire types, one note each. The
    numbers shown are a public case's: a hidden case's answer, and what it was compared with, are not for the
    student (with a tolerance they differ, and the note would say the hidden expected value).
    """
    seen: dict[str, str] = {}
    for result in sorted(results, key=lambda result: result.visibility != "public"):   # public cases first
        wanted = expected.get(result.id)
        if result.status != "pass" or wanted is None or result.got is None:
            continue
        got = result.got
        if type(wanted) is dict and "set" in wanted and type(got) is dict and ("list" in got or "tuple" in got):
            kind = "list" if "list" in got else "tuple"
            seen.setdefault(kind, f"{function} returns a {kind} where the text asks for a set; accepted, as it "
                                  "holds each element once, but a set says what is meant")
        number = got.get("npscalar") if type(got) is dict else got
        if type(wanted) in (int, float) and type(number) in (int, float) and type(number) is not type(wanted):
            kind, asked = type(number).__name__, type(wanted).__name__
            got_shown, wanted_shown = (f" ({number!r})", f" ({wanted!r})") if result.visibility == "public" \
                else ("", "")
            seen.setdefault(kind, f"{function} returns a {kind}{got_shown} where the answer is "
                                  f"{'an' if asked == 'int' else 'a'} {asked}{wanted_shown}; accepted: the same number")
    return tuple(seen.values())
