"""Checks: pure verdicts on plain data, type-strict by default, with the path check on a one-row sliding puzzle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grader.syntax.calls import _NotData
from grader.checks.registry import CHECKS, CheckContext, CheckError, ProbeError, Verdict, reference_check
from grader.plan.cases import load_reference
from grader import codec

REFERENCE = load_reference(Path(__file__).parent / "fixtures" / "rubrics" / "mini_reference.py")
START, MIDDLE, GOAL = ("*", "1", "2"), ("1", "*", "2"), ("1", "2", "*")
SHORTEST = [START, MIDDLE, GOAL]
PATH_OPTIONS = {"next_states": "next_states", "start": "args[0]", "goal": "args[1]", "optimal": True}


def context(expected: Any, got: Any, **rest: Any) -> CheckContext:
    """A context as the grader builds it: both answers in wire form."""
    return CheckContext(expected=codec.encode(expected), got=codec.encode(got), **rest)


def judge_path(got: Any, expected: Any = SHORTEST, **options: Any) -> Verdict:
    return CHECKS["path"](context(expected, got, args=(START, GOAL), options={**PATH_OPTIONS, **options},
                                  reference=REFERENCE))


# ---------------------------------------------------------------- equal


def test_equal_passes_on_the_same_value() -> None:
    assert CHECKS["equal"](context({"a": (1, [2.5])}, {"a": (1, [2.5])})) == Verdict(True, 1.0, "")


@pytest.mark.parametrize(("expected", "got"), [
    ((1, 2), [1, 2]),
    ([1, 2], (1, 2)),
    (1, True),
    (True, 1),
    (1, 1.0),
    ("1", 1),
    (frozenset({1, 2}), {1, 2}),     # a set cannot go where a frozenset must (it cannot be hashed)
    (None, 0),
])
def test_equal_is_type_strict(expected: Any, got: Any) -> None:
    verdict = CHECKS["equal"](context(expected, got))
    assert (verdict.passed, verdict.fraction) == (False, 0.0)
    assert verdict.message


def test_equal_names_the_first_difference() -> None:
    verdict = CHECKS["equal"](context((1, 2, 3), (1, 5, 3)))
    assert verdict.message == "at [1]: expected 2, got 5"


def test_equal_compares_floats_exactly_unless_given_a_tolerance() -> None:
    assert not CHECKS["equal"](context(0.3, 0.1 + 0.2)).passed
    assert CHECKS["equal"](context(0.3, 0.1 + 0.2, options={"tolerance": 1e-9})).passed
    assert not CHECKS["equal"](context(0.3, 0.31, options={"tolerance": 1e-9})).passed


# ---------------------------------------------------------------- unordered


def test_unordered_ignores_order() -> None:
    assert CHECKS["unordered"](context([3, 1, 2], [1, 2, 3])).passed
    assert CHECKS["unordered"](context((("a", 1), ("b", 2)), (("b", 2), ("a", 1)))).passed


def test_unordered_compares_as_a_multiset() -> None:
    assert not CHECKS["unordered"](context([1, 1, 2], [1, 2, 2])).passed
    assert not CHECKS["unordered"](context([1, 2], [1, 2, 2])).passed


def test_unordered_still_tells_a_list_from_a_tuple() -> None:
    verdict = CHECKS["unordered"](context([1, 2], (2, 1)))
    assert not verdict.passed
    assert verdict.message == "expected list, got tuple"


def test_unordered_keeps_the_element_types_strict() -> None:
    assert not CHECKS["unordered"](context([1, 2], [2.0, 1])).passed


def test_unordered_applies_the_tolerance_to_values_that_are_not_sequences() -> None:
    assert CHECKS["unordered"](context(0.3, 0.1 + 0.2, options={"tolerance": 1e-9})).passed


# ---------------------------------------------------------------- path


def test_path_shortest_valid_path_passes() -> None:
    assert judge_path(SHORTEST) == Verdict(True, 1.0, "a valid path of 2 moves")


def test_path_accepts_a_tuple_of_states() -> None:
    assert judge_path(tuple(SHORTEST)).passed


def test_path_longer_valid_path_earns_the_suboptimal_credit_and_names_both_lengths() -> None:
    longer = [START, MIDDLE, START, MIDDLE, GOAL]
    assert judge_path(longer) == Verdict(False, 0.5, "a valid path of 4 moves, but the shortest has 2 moves",
                                       "a valid path longer than the shortest")
    assert judge_path(longer, suboptimal_credit=0.25).fraction == 0.25


def test_path_longer_valid_path_passes_when_optimality_is_not_asked() -> None:
    assert judge_path([START, MIDDLE, START, MIDDLE, GOAL], optimal=False) == Verdict(
        True, 1.0, "a valid path of 4 moves")


def test_path_illegal_step_is_named() -> None:
    verdict = judge_path([START, MIDDLE, ("2", "1", "*"), GOAL])
    assert (verdict.passed, verdict.fraction) == (False, 0.0)
    assert verdict.message == "step 2 is not a legal move: from ('1', '*', '2') to ('2', '1', '*')"


def test_path_that_skips_a_state_is_illegal() -> None:
    assert judge_path([START, GOAL]).message == (
        "step 1 is not a legal move: from ('*', '1', '2') to ('1', '2', '*')")


def test_path_with_a_wrong_start_fails() -> None:
    verdict = judge_path([MIDDLE, GOAL])
    assert not verdict.passed
    assert verdict.message.startswith("the path does not begin with the start state: ")


def test_path_that_stops_before_the_goal_fails() -> None:
    verdict = judge_path([START, MIDDLE])
    assert not verdict.passed
    assert verdict.message == ("the path ends in ('1', '*', '2'), which does not match the goal "
                               "('1', '2', '*')")


def test_path_goal_may_be_a_pattern_judged_by_the_reference_matches() -> None:
    verdict = CHECKS["path"](context(SHORTEST, [START, MIDDLE], args=(START, ("1", "?", "?")),
                                     options={**PATH_OPTIONS, "matches": "matches"}, reference=REFERENCE))
    assert verdict.passed


def test_path_none_means_no_path_was_found() -> None:
    assert judge_path(None) == Verdict(False, 0.0, "returned None: no path was found", "no path (None)")


def test_path_empty_list_fails() -> None:
    assert judge_path([]) == Verdict(False, 0.0, "returned an empty path", "an empty path")


@pytest.mark.parametrize("got", [
    [list(START), list(MIDDLE), list(GOAL)],
    [START, list(MIDDLE), GOAL],
    [START, [[1]], GOAL],
    [{"*": 1}],
])
def test_path_of_wrongly_typed_states_fails_without_crashing(got: Any) -> None:
    verdict = judge_path(got)
    assert (verdict.passed, verdict.fraction) == (False, 0.0)
    assert verdict.message.startswith(("the path does not begin", "step 1 is not a legal move"))


@pytest.mark.parametrize(("got", "shown"), [(5, "5"), ("abc", "'abc'"), ({GOAL}, "{('1', '2', '*')}")])
def test_path_that_is_not_a_list_fails(got: Any, shown: str) -> None:
    assert judge_path(got) == Verdict(False, 0.0, f"expected a list of states, got {shown}",
                                         "not a list of states")


def test_path_without_next_states_is_a_rubric_error() -> None:
    with pytest.raises(CheckError, match="needs the option 'next_states'"):
        CHECKS["path"](context(SHORTEST, SHORTEST, args=(START, GOAL), options={"start": "args[0]",
                                                                                "goal": "args[1]"},
                               reference=REFERENCE))


def test_path_naming_a_missing_reference_function_is_a_rubric_error() -> None:
    with pytest.raises(CheckError, match="has no function 'successors'"):
        judge_path(SHORTEST, next_states="successors")


def test_path_option_that_cannot_be_evaluated_is_a_rubric_error() -> None:
    with pytest.raises(CheckError, match="path check option 'goal'"):
        judge_path(SHORTEST, goal="Nowhere")


def test_path_start_and_goal_may_name_fixtures() -> None:
    verdict = CHECKS["path"](context(SHORTEST, SHORTEST, options={**PATH_OPTIONS, "start": "Start", "goal": "Goal"},
                                     data={"Start": START, "Goal": GOAL}, reference=REFERENCE))
    assert verdict.passed


# ---------------------------------------------------------------- reference check functions


def test_reference_check_receives_only_what_it_asks_for() -> None:
    seen = {}

    def parity(got, expected):
        seen.update(got=got, expected=expected)
        return got % 2 == expected % 2

    verdict = reference_check(parity)(context(4, 6, args=(3,), probes={"p": 1}))
    assert verdict == Verdict(True, 1.0, "")
    assert seen == {"got": 6, "expected": 4}


def test_reference_check_gets_decoded_values_and_case_data() -> None:
    seen = {}

    def inspect_all(args, kwargs, probes, variables, options):
        seen.update(args=args, kwargs=kwargs, probes=probes, variables=variables, options=options)
        return True

    failure = ProbeError("boom")
    reference_check(inspect_all)(context(1, 1, args=(START, _NotData("f")), kwargs={"k": 2},
                                         probes={"moved": (1, 2), "bad": failure}, variables={"x": 3},
                                         options={"strict": True}))
    assert seen == {"args": (START, _NotData("f")), "kwargs": {"k": 2}, "probes": {"moved": (1, 2), "bad": failure},
                    "variables": {"x": 3}, "options": {"strict": True}}


def test_reference_check_with_var_keywords_gets_everything_decoded() -> None:
    seen = {}

    def everything(**given):
        seen.update(given)
        return True

    reference_check(everything)(context([1, (2,)], {3}))
    assert set(seen) == {"got", "expected", "args", "kwargs", "probes", "variables", "options", "data"}
    assert (seen["got"], seen["expected"]) == ({3}, [1, (2,)])


NO = "rejected by the check <lambda>"   # what a course's check says no to is the check itself


@pytest.mark.parametrize(("answer", "verdict"), [
    (True, Verdict(True, 1.0, "")),
    (False, Verdict(False, 0.0, "", NO)),
    ((False, "the blank moved twice"), Verdict(False, 0.0, "the blank moved twice", NO)),
    ((True, "fine"), Verdict(True, 1.0, "fine")),
    ((0.25, "a quarter right"), Verdict(False, 0.25, "a quarter right", NO)),
    ((1.0, "all right"), Verdict(True, 1.0, "all right")),
    (0, Verdict(False, 0.0, "", NO)),
    (Verdict(False, 0.5, "own verdict"), Verdict(False, 0.5, "own verdict", NO)),
    (Verdict(False, 0.5, "own verdict", "its own cause"), Verdict(False, 0.5, "own verdict", "its own cause")),
])
def test_reference_check_answers_become_verdicts(answer: Any, verdict: Verdict) -> None:
    assert reference_check(lambda got: answer)(context(1, 1)) == verdict


@pytest.mark.parametrize("answer", [None, "yes", 1.5, -0.1, float("nan"), (0.5, "m", "extra"), ("yes", "m"), [True]])
def test_reference_check_bad_answer_is_a_check_error(answer: Any) -> None:
    def bad(got):
        return answer

    with pytest.raises(CheckError, match=r"check bad returned .*; expected bool, \(bool, message\) or "
                                         r"\(fraction, message\)"):
        reference_check(bad)(context(1, 1))


def test_reference_check_asking_for_something_not_offered_is_a_check_error() -> None:
    def wants_state(got, state):
        return True

    with pytest.raises(CheckError, match="check wants_state asks for state"):
        reference_check(wants_state)(context(1, 1))


def test_reference_check_from_the_reference_module() -> None:
    check = reference_check(REFERENCE.check_same_parity)
    assert check(context(8, 6)).passed
    # the course's check is the cause of its no: its message may hold the answer's values
    rejected = "rejected by the check check_same_parity"
    assert check(context(8, 7)) == Verdict(False, 0.0, "parity differs", rejected)
    assert check(context(8, "7")) == Verdict(False, 0.0, "expected an int, got str", rejected)
