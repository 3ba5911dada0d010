"""`equal` on sets: numpy scalars inside a set's elements are the numbers they stand for, as they already were
inside lists and tuples (`as_expected`)."""

from __future__ import annotations

import numpy as np

from grader import codec
from grader.checks.registry import CheckContext, Verdict, equal

EXPECTED = {((0, 1), (2, 3)), ((1, 0), (2, 3))}


def verdict(got: object, expected: object = EXPECTED, **options: object) -> Verdict:
    return equal(CheckContext(expected=codec.encode(expected), got=codec.encode(got), options=options))


def numpy_states(states: set) -> set:
    """The states a next_states builds from a numpy board (`tuple(map(tuple, board))`): np.int64 tiles."""
    return {tuple(tuple(np.int64(tile) for tile in row) for row in state) for state in states}


def test_a_set_of_states_built_from_a_numpy_board_is_the_set_asked_for():
    """Python calls it equal to the expected set (np.int64(2) == 2, same hash), and a caller that iterates it, tests
    membership or counts gets the same answers. Old code: 'set differs: missing ((0, 1), (2, 3)) ...; unexpected
    ((np.int64(0), np.int64(1)), ...)' and the exercise scored 0, while the same states in a tuple passed."""
    got = numpy_states(EXPECTED)
    assert got == EXPECTED
    assert verdict(got).passed and verdict(frozenset(got)).passed
    assert verdict([*got], sequence_as_set=True).passed                       # a list of them, where allowed


def test_inside_a_set_a_number_is_still_held_to_its_type_and_a_set_is_no_frozenset():
    floats = {tuple(tuple(np.float64(tile) for tile in row) for row in state) for state in EXPECTED}
    assert not verdict(floats).passed                     # 0.0 is not 0, as in a tuple
    assert not verdict({tuple(tuple(True for _ in row) for row in state) for state in EXPECTED}).passed
    wrong = numpy_states({((0, 1), (2, 3)), ((1, 0), (2, 4))})
    failed = verdict(wrong)
    assert not failed.passed and "(2, 4)" in failed.message and "np.int64" not in failed.message
    assert not verdict(set(EXPECTED), frozenset(EXPECTED)).passed             # unhashable where hashable is asked
    assert verdict(frozenset(numpy_states(EXPECTED)), frozenset(EXPECTED)).passed
    assert not verdict([*numpy_states(EXPECTED)]).passed                      # a list stays a list by default
