"""The codec's fast path for plain values (puzzle states, counts, sets of states) gives exactly what the general
walk gives, and refuses nothing the general walk accepts nor accepts anything it refuses: the parent decodes
hostile wire data with it."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import codec
from grader.codec import CodecError, Limits

GENERAL = Limits()   # equal to the defaults but not them: the general walk only


def strict(value: Any) -> Any:
    """A value as a structure that compares types too (a set equals a frozenset, 1 equals True, in Python)."""
    kind = type(value)
    if kind in (list, tuple):
        return (kind.__name__, [strict(item) for item in value])
    if kind in (set, frozenset):
        return (kind.__name__, sorted(json.dumps(strict(item)) for item in value))
    if kind is dict:
        return ("dict", [[strict(key), strict(item)] for key, item in value.items()])
    if kind is float:
        return ("float", repr(value))
    return (kind.__name__, value)


scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300)
           | st.integers(min_value=2**61, max_value=2**64))
hashables = st.recursive(scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
                         max_leaves=12)
plain = st.recursive(
    scalars,
    lambda inner: (st.lists(inner, max_size=6) | st.tuples(inner, inner).map(tuple) | st.sets(hashables, max_size=5)
                   | st.frozensets(hashables, max_size=5) | st.dictionaries(hashables, inner, max_size=4)
                   | st.lists(st.lists(inner, max_size=3), max_size=3).map(lambda rows: tuple(map(tuple, rows)))),
    max_leaves=40)


def general_encode(value: Any) -> Any:
    return codec.encode(value, GENERAL)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain)
def test_plain_values_encode_exactly_as_the_general_walk_encodes_them(value: Any) -> None:
    assert json.dumps(codec.encode(value)) == json.dumps(general_encode(value))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain)
def test_plain_wires_decode_exactly_as_the_general_walk_decodes_them(value: Any) -> None:
    wire = general_encode(value)
    assert strict(codec.decode(wire)) == strict(codec.decode(wire, GENERAL))


json_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["tuple", "list", "set", "frozenset", "dict", "class", "str", "x"]), inner, max_size=2),
    max_leaves=25)


def outcome(decode: Any) -> Any:
    try:
        return ("ok", strict(decode()))
    except CodecError:
        return ("refused",)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_data)
def test_any_json_data_is_decoded_or_refused_exactly_as_the_general_walk_does(wire: Any) -> None:
    assert outcome(lambda: codec.decode(wire)) == outcome(lambda: codec.decode(wire, GENERAL))


def test_what_the_fast_path_leaves_to_the_general_walk_still_gets_its_checks() -> None:
    deep: Any = "leaf"
    for _ in range(70):
        deep = [deep]
    for value in (deep, 10**4001, float("nan"), [1] * 300_000):
        try:
            expected = ("ok", json.dumps(general_encode(value)))
        except CodecError as error:
            expected = ("refused", str(error))
        try:
            got = ("ok", json.dumps(codec.encode(value)))
        except CodecError as error:
            got = ("refused", str(error))
        assert got == expected
    for wire in ({"set": [{"list": []}]}, {"dict": [[{"list": []}, 1]]}, {"tuple": [[1]]},
                 {"tuple": [], "class": "x.Y"}, {"int": 10**4001}):
        assert outcome(lambda wire=wire: codec.decode(wire)) == outcome(lambda wire=wire: codec.decode(wire, GENERAL))


# The two short ways of isolated-helper calls (codec.plain_text up, codec.pack down) stand for the general path
# exactly, or step aside.
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain)
def test_a_calls_text_is_the_json_of_its_wire_or_none(value: Any) -> None:
    from grader.sandbox import wire
    text = codec.plain_text(value)
    assert text is None or text == wire.json_text(codec.encode(value))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain)
def test_a_packed_answer_unpacks_to_what_its_wire_decodes_to_or_is_not_packed(value: Any) -> None:
    packed = codec.pack(value)
    if packed is not None:
        unpacked, decoded = codec.unpack(packed), codec.decode(codec.encode(value))
        assert strict(unpacked) == strict(decoded)
        if isinstance(unpacked, (set, frozenset)):   # built by the same insertions: in the same order
            assert isinstance(decoded, (set, frozenset)) and list(unpacked) == list(decoded)


def test_states_and_counts_take_the_short_ways_and_subclasses_nested_sets_and_odd_text_do_not() -> None:
    from grader.sandbox import wire
    state = (("0", "14", "*", "*"), ("*", "*", "*", "15"))
    for value in ([state], [state, state], {"grid": [1, 2.5, None, True]}, 17, []):
        assert codec.plain_text(value) is not None and codec.pack(value) is not None
    for odd in ([Tile("3")], float("nan"), 2**70, [[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]):
        assert codec.plain_text(odd) is None and codec.pack(odd) is None
    for nested in ([{1, 2}], [frozenset()]):   # text up takes a set anywhere, packing down only a whole one
        assert codec.plain_text(nested) == wire.json_text(codec.encode(nested)) and codec.pack(nested) is None
    assert codec.unpack(codec.pack({state, ()}) or b"") == {state, ()}   # next_states: a set of states, whole
    assert codec.pack({Tile("3")}) is None and codec.plain_text({Tile("3")}) is None
    assert codec.plain_text(["é"]) is None and codec.pack(["é\udc80"]) is not None   # text up is ASCII only


def test_a_set_of_states_is_written_in_the_order_the_wire_sorts_its_elements() -> None:
    """next_states' answer (a set of states) takes the short way up, its elements in canonical order, so its
    frame is byte for byte the one the parent knows a right answer by (process.right_answer)."""
    from grader.sandbox import wire
    states = {(("0", "1"), ("2", "3")), (("1", "0"), ("2", "3")), (("2", "1"), ("0", "3")), ()}
    for value in (states, frozenset(states), [states, {1, -2, 3.5, None, False, "a\n"}], {frozenset({(1,), "x"})}):
        assert codec.plain_text(value) == wire.json_text(codec.encode(value))
    text = codec.plain_text(states) or ""
    assert text.startswith('{"set":[') and codec.decode(json.loads(text)) == states
    assert codec.plain_text({"é"}) is None and codec.plain_text({(Tile("3"),)}) is None


def test_a_packed_answer_shares_nothing_and_each_unpacking_is_new() -> None:
    row = [1, 2]
    packed = codec.pack([row, row])
    assert packed is not None
    first, second = codec.unpack(packed), codec.unpack(packed)
    assert first == [[1, 2], [1, 2]] and first[0] is not first[1] and first is not second


def test_rows_of_strs_are_written_at_once_exactly_as_row_by_row_or_step_aside_alike() -> None:
    """A state's rows are checked and written together (codec._plain_text): the same text, the same bounds."""
    from grader.sandbox import wire
    nested: Any = (("a",),)
    for _ in range(13):
        nested = [nested]
    rows = [(("0", "14"), ["*", '"', "\\"]), ((), ("x",), []), [("a",), ("b", "c")], (("é",),), ((Tile("3"),),),
            (("0", 1),), (("x" * 600_000,), ("y" * 600_000,)), [("a",)] * 3, nested, [nested], [[nested]]]
    for value in rows:
        text = codec.plain_text(value)
        try:
            general: str | None = wire.json_text(codec.encode(value))
        except CodecError:
            general = None
        assert text is None or text == general, value
    assert codec.plain_text(rows[0]) == wire.json_text(codec.encode(rows[0]))
    assert codec.plain_text(rows[5]) is not None                             # ints among the strs: row by row
    assert codec.plain_text(rows[6]) is None                                 # 1.2 M characters: past the bound
    assert codec.plain_text(rows[3]) is None and codec.plain_text(rows[4]) is None
    assert codec.plain_text(rows[-3]) is not None and codec.plain_text(rows[-1]) is None   # the depth bound


class Tile(str):
    pass


paths = st.lists(st.lists(st.lists(st.text(alphabet="0123456789*é\"", max_size=3), max_size=4).map(tuple),
                          max_size=4).map(tuple) | st.lists(st.lists(st.text(max_size=2), max_size=3), max_size=3),
                 max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths, st.integers(0, 60), st.integers(0, 40))
def test_states_in_a_row_are_written_at_once_exactly_as_state_by_state(path: list, nodes: int, chars: int) -> None:
    """A path's states are checked and written together (codec._plain_text): the same text, counts and bounds as
    each state's own walk, wherever the path sits and whatever is left of the budget."""
    from grader.sandbox import wire
    text = codec.plain_text(path)
    general = wire.json_text(codec.encode(path)) if all(map(str.isascii, _cells(path))) else None
    assert text == general
    for value, depth, budget in itertools.product((path, tuple(path)), range(codec._PLAIN_DEPTH + 1),
                                                  ((nodes, chars), (10**6, 10**6))):
        left = list(budget)
        try:
            got: Any = (codec._plain_text(value, depth, left), left)
        except codec._NotPlain:
            got = None
        left = [budget[0] - len(value), budget[1]]
        try:
            if depth >= codec._PLAIN_DEPTH or left[0] < 0:
                raise codec._NotPlain
            head = codec._TEXT_HEAD[type(value)]
            one_by_one: Any = (head + ",".join([codec._plain_text(state, depth + 1, left) for state in value]) + "]}",
                               left)
        except codec._NotPlain:
            one_by_one = None
        assert got == one_by_one


def _cells(path: list) -> list:
    return [cell for state in path for row in state for cell in row]


# An isolated helper's arguments (codec.call_text): the text of a state the child wrote before, or got from the
# parent in a set, is kept by the state's identity; the call's text and its bounds stay plain_text's.
states = st.lists(st.lists(st.text(alphabet="0123456789*é", max_size=3) | st.integers(-5, 2**63), max_size=4)
                  .map(tuple), max_size=4).map(tuple)
arguments = st.lists(states | plain, max_size=4).map(tuple)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments, arguments)
def test_a_calls_text_with_kept_arguments_is_plain_texts(first: tuple, second: tuple) -> None:
    kept: dict[int, tuple] = {}
    for args in (first, second, first + second, second + first, first):
        assert codec.call_text(args, kept) == codec.plain_text(list(args))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(states, max_size=6), arguments)
def test_the_states_of_a_packed_set_are_kept_with_their_texts(value: set, others: tuple) -> None:
    packed = codec.pack(value)
    if packed is None:
        return
    kept: dict[int, tuple] = {}
    unpacked = codec.unpack(packed, kept)
    assert strict(unpacked) == strict(value) and list(unpacked) == list(codec.unpack(packed))
    for state in unpacked:
        assert codec.call_text((state,), kept) == codec.plain_text([state])
        assert codec.call_text((state, *others, state), kept) == codec.plain_text([state, *others, state])


def test_kept_arguments_count_against_the_calls_budget_as_when_they_were_written() -> None:
    wide = (("x" * 300,) * 3,)                                 # 900 characters, kept (its text is short enough)
    big = (("y" * 999_500,),)                                  # not kept: its text is too long
    kept: dict[int, tuple] = {}
    assert codec.call_text((wide,), kept) is not None and len(kept) == 1
    assert codec.call_text((big,), kept) is not None and len(kept) == 1
    assert codec.call_text((big, wide), kept) is None is codec.plain_text([big, wide])   # over 1 M characters
    assert codec.call_text((wide, big), kept) is None
    many = (("a", "b"),) * 10_000                              # 30,000 nodes: past the bound, kept or not
    assert codec.call_text(many, kept) is None is codec.plain_text(list(many))
    mutable = ([["0"]], (["1"],))
    assert codec.call_text(mutable, kept) == codec.plain_text(list(mutable))
    assert not any(entry[0] is mutable[1] for entry in kept.values())   # a tuple of lists can change: never kept


def test_a_small_int_answer_is_read_from_its_bytes_as_marshal_reads_it() -> None:
    """codec.unpack reads marshal's 32-bit ints itself (no audit event in the child): every boundary, both signs,
    and the longer ints and bools marshal writes otherwise."""
    for value in (0, 1, -1, 7, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**60, True, False):
        packed = codec.pack(value)
        assert packed is not None
        got = codec.unpack(packed)
        assert got == value and type(got) is type(value)
