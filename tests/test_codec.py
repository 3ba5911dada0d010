"""Tests for grader.codec: exact types across the trust boundary, bounds, hostile values and wires."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest
from testclock import in_a_fork, within

from grader import codec
from grader.codec import (
    DEFAULT_LIMITS,
    CodecError,
    Limits,
    NDArray,
    Opaque,
    canonical,
    decode,
    describe,
    encode,
    same,
    size,
)

SANDBOX_DIR = Path(codec.__file__).resolve().parent / "sandbox"


def round_trip(value):
    wire = encode(value)
    # The wire must survive real JSON text, as it does on the pipe.
    return decode(json.loads(json.dumps(wire)))


def assert_same_type_and_value(decoded, original):
    assert type(decoded) is type(original)
    assert decoded == original


# ---------------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -7, 2**80, 10**3999, 0.0, -0.5, 1e300],
)
def test_numbers_and_none_round_trip_with_their_exact_type(value):
    assert_same_type_and_value(round_trip(value), value)


@pytest.mark.parametrize("value", ["", "tile '15'", "\u00e9\U0001f600", "a\ud800b", b"", b"\x00\xff"])
def test_text_and_bytes_round_trip_with_their_exact_type(value):
    assert_same_type_and_value(round_trip(value), value)


def test_containers_round_trip_with_their_exact_types_when_nested():
    value = [
        (("0", "1"), ("2", "3")),
        [],
        (),
        (1,),
        {1, 2, "a", (3, 4)},
        frozenset({frozenset({1}), frozenset()}),
        {"a": [1, {"b": (2.5, None)}], 3: {4}, (1, 2): b"xy", None: False},
        set(),
        bytearray(b"raw"),
    ]
    decoded = round_trip(value)
    expected = list(value)
    expected[-1] = b"raw"  # bytearray travels as bytes
    assert decoded == expected
    assert [type(item) for item in decoded] == [type(item) for item in expected]
    assert type(decoded[0][0]) is tuple
    assert type(decoded[6]["a"][1]["b"]) is tuple


def test_dict_keeps_insertion_order_on_the_wire():
    wire = encode({"z": 1, "a": 2, "m": 3})
    assert wire == {"dict": [["z", 1], ["a", 2], ["m", 3]]}
    assert list(decode(wire)) == ["z", "a", "m"]


def test_nan_and_infinities_are_tagged_and_round_trip():
    wire = encode([math.nan, math.inf, -math.inf, 1.5])
    assert wire == {"list": [{"float": "nan"}, {"float": "inf"}, {"float": "-inf"}, 1.5]}
    nan, inf, minus_inf, plain = decode(wire)
    assert math.isnan(nan) and inf == math.inf and minus_inf == -math.inf and plain == 1.5
    assert "NaN" not in json.dumps(wire) and "Infinity" not in json.dumps(wire)


def test_bytes_travel_as_base64_text():
    assert encode(b"\x00\x01") == {"bytes": "AAE="}


def test_canonical_is_sorted_compact_json():
    wire = {"b": [1, "\u00e9"], "a": None}
    assert canonical(wire) == '{"a":null,"b":[1,"\u00e9"]}'


# ---------------------------------------------------------------------------------------------- exact types


def test_tuple_list_set_and_frozenset_are_distinguished():
    forms = [(1, 2), [1, 2], {1, 2}, frozenset({1, 2})]
    for i, a in enumerate(forms):
        for j, b in enumerate(forms):
            message = same(encode(a), encode(b))
            assert (message is None) == (i == j), (a, b, message)
    assert same(encode((1, 2)), encode([1, 2])) == "expected tuple, got list"


def test_bool_int_and_float_are_distinguished():
    assert same(encode(True), encode(1)) == "expected True (bool), got 1 (int)"
    assert same(encode(1), encode(True)) == "expected 1 (int), got True (bool)"
    assert same(encode(1), encode(1.0)) == "expected 1 (int), got 1.0 (float)"
    assert same(encode([0, ("3", 1)]), encode([0, (3, 1)])) == "at [1][0]: expected '3' (str), got 3 (int)"


def test_length_and_value_differences_name_their_path():
    assert same(encode((1, 2, 3, 4)), encode((1, 2, 3))) == "expected a tuple of length 4, got length 3"
    assert same(encode([(1, 2), (3, 4)]), encode([(1, 2), (3, 5)])) == "at [1][1]: expected 4, got 5"
    assert same(encode([[1], [2]]), encode([[1], [2]])) is None


class RiggedTuple(tuple):
    """Everything Python would ask it lies: equal to anything, wrong length, other items, 'PASSED'."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __len__(self):
        return 4

    def __iter__(self):
        return iter(("0", "1", "2", "3"))

    def __getitem__(self, index):
        return "0"

    def __hash__(self):
        raise TypeError("no hashing")

    def __repr__(self):
        return "PASSED"


def test_rigged_tuple_subclass_encodes_its_true_contents_with_a_class_mark():
    rigged = RiggedTuple((9, 8))
    wire = encode(rigged)
    assert wire == {"tuple": [9, 8], "class": f"{__name__}.RiggedTuple"}
    decoded = decode(wire)
    assert type(decoded) is tuple and decoded == (9, 8)
    assert "PASSED" not in json.dumps(wire)


def test_rigged_tuple_subclass_gains_nothing_in_same():
    expected = encode([("0", "1", "2", "3")])
    rigged = encode([RiggedTuple(("0", "1", "2", "3"))])
    assert same(expected, rigged) == "at [0]: expected tuple, got RiggedTuple (a subclass of tuple)"
    # Even a rigged value that holds other items is judged by what it holds.
    assert same(encode([(1,)]), encode([RiggedTuple((2,))])) is not None


class RiggedStr(str):
    def __str__(self):
        return "PASSED"

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0

    def __len__(self):
        return 0

    def __iter__(self):
        return iter("PASSED")

    def __repr__(self):
        return "'PASSED'"


class RiggedInt(int):
    def __int__(self):
        return 999

    def __index__(self):
        return 999

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0

    def __repr__(self):
        return "999"


class RiggedFloat(float):
    def __float__(self):
        return 999.0

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def test_str_int_and_float_subclasses_encode_their_true_value_with_a_class_mark():
    assert encode(RiggedStr("7")) == {"str": "7", "class": f"{__name__}.RiggedStr"}
    assert encode(RiggedInt(5)) == {"int": 5, "class": f"{__name__}.RiggedInt"}
    assert encode(RiggedFloat(1.5)) == {"float": 1.5, "class": f"{__name__}.RiggedFloat"}
    assert encode(RiggedFloat("nan")) == {"float": "nan", "class": f"{__name__}.RiggedFloat"}
    assert_same_type_and_value(decode(encode(RiggedStr("7"))), "7")
    assert_same_type_and_value(decode(encode(RiggedInt(5))), 5)
    assert_same_type_and_value(decode(encode(RiggedFloat(1.5))), 1.5)


def test_same_reports_scalar_subclasses():
    message = same(encode("7"), encode(RiggedStr("7")))
    assert message == "expected '7' (str), got RiggedStr('7') (RiggedStr, a subclass of str)"
    assert same(encode(5), encode(RiggedInt(5))) == "expected 5 (int), got RiggedInt(5) (RiggedInt, a subclass of int)"
    assert same(encode(RiggedInt(5)), encode(RiggedInt(5))) is None
    assert same(encode(RiggedInt(5)), encode(RiggedInt(6))) == "expected RiggedInt(5), got RiggedInt(6)"


class RiggedDict(dict):
    def __iter__(self):
        return iter(["fake"])

    def items(self):
        return [("fake", 1)]

    def keys(self):
        return ["fake"]

    def __getitem__(self, key):
        return 1

    def __len__(self):
        return 1


class RiggedList(list):
    def __iter__(self):
        return iter([])

    def __len__(self):
        return 0


class RiggedSet(set):
    def __iter__(self):
        return iter([])

    def __len__(self):
        return 0


def test_container_subclasses_encode_through_the_base_type():
    assert encode(RiggedDict(a=1, b=2)) == {"dict": [["a", 1], ["b", 2]], "class": f"{__name__}.RiggedDict"}
    assert encode(RiggedList([3, 4])) == {"list": [3, 4], "class": f"{__name__}.RiggedList"}
    assert encode(RiggedSet({2, 1})) == {"set": [1, 2], "class": f"{__name__}.RiggedSet"}
    assert encode(OrderedDict(a=1))["class"] == "collections.OrderedDict"
    decoded = decode(encode(RiggedDict(a=1)))
    assert type(decoded) is dict and decoded == {"a": 1}


def test_namedtuple_is_a_marked_tuple_and_not_equal_to_a_plain_tuple():
    from collections import namedtuple

    Move = namedtuple("Move", "dx dy")
    wire = encode(Move(1, 0))
    assert wire == {"tuple": [1, 0], "class": f"{__name__}.Move"}
    assert same(encode((1, 0)), wire) == "expected tuple, got Move (a subclass of tuple)"


# ---------------------------------------------------------------------------------------------- sets and dicts


def test_sets_encode_deterministically_regardless_of_insertion_order():
    items = ["b", 3, (1, "x"), None, 2.5, "a", frozenset({"q", 1})]
    forward, backward = set(), set()
    for item in items:
        forward.add(item)
    for item in reversed(items):
        backward.add(item)
    assert encode(forward) == encode(backward)
    texts = [canonical(wire) for wire in encode(forward)["set"]]
    assert texts == sorted(texts)


SET_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import codec
value = {
    "s": {f"tile{i}" for i in range(50)} | {(i, str(i)) for i in range(20)},
    "f": frozenset({frozenset({"a", "b", "c"}), frozenset({"x"})}),
}
print(codec.canonical(codec.encode(value)))
"""


def test_set_encoding_does_not_depend_on_the_hash_seed():
    outputs = set()
    for seed in ("0", "1", "12345"):
        environment = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run(
            [sys.executable, "-c", SET_SCRIPT, str(SANDBOX_DIR.parent)],   # the folder that holds codec.py
            capture_output=True, text=True, env=environment, timeout=within(60), check=True,
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1


def test_sets_compare_order_free_and_report_missing_and_unexpected_elements():
    assert same({"set": [1, 2, 3]}, {"set": [3, 1, 2]}) is None
    assert same(encode({1, 2, 3}), encode({1, 2, 4})) == "set differs: missing 3; unexpected 4"
    assert same(encode({1, 2, 3}), encode({1, 2})) == "expected a set of 3 elements, got 2: missing 3"
    assert same(encode(frozenset({1})), encode({1})) == "expected frozenset, got set"


def test_dicts_compare_order_free_and_report_keys():
    assert same(encode({"a": 1, "b": 2}), encode({"b": 2, "a": 1})) is None
    assert same(encode({"a": 1, "b": 2}), encode({"a": 1})) == "missing key 'b'"
    assert same(encode({"a": 1}), encode({"a": 1, "c": 3})) == "unexpected key 'c'"
    assert same(encode([{"a": (1, 2)}]), encode([{"a": (1, 3)}])) == "at [0]['a'][1]: expected 2, got 3"
    assert same(encode({1: "x"}), encode({1.0: "x"})) == "missing key 1"


def test_floats_compare_exactly_by_default_and_within_a_tolerance_when_given():
    assert same(encode(0.1 + 0.2), encode(0.3)) is not None
    assert same(encode(0.1 + 0.2), encode(0.3), tolerance=1e-9) is None
    assert same(encode([1.0]), encode([1.5]), tolerance=0.1) == "at [0]: expected 1.0, got 1.5 (tolerance 0.1)"
    assert same(encode(math.nan), encode(math.nan)) is None
    assert same(encode(math.inf), encode(math.inf), tolerance=1.0) is None
    assert same(encode(math.inf), encode(-math.inf), tolerance=1.0) is not None
    assert same(encode({1.0, 2.0}), encode({1.0, 2.0 + 1e-12}), tolerance=1e-9) is None
    assert same(encode({1.0, 2.0}), encode({1.0, 2.0 + 1e-12})) is not None


def test_opaque_values_compare_by_type_and_repr():
    assert same(encode(3 + 4j), encode(3 + 4j)) is None
    assert same(encode(3 + 4j), encode(3 + 5j)) == "expected <opaque complex: (3+4j)>, got <opaque complex: (3+5j)>"
    assert same(encode(5), encode(5 + 0j)) == "expected 5 (int), got <opaque complex: (5+0j)> (complex)"


# ---------------------------------------------------------------------------------------------- opaque


class Board:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class Unrepresentable:
    def __repr__(self):
        raise RuntimeError("no repr for you")


def test_unknown_types_become_opaque_with_a_truncated_repr():
    wire = encode(Board("B" * 1000))
    assert wire == {"opaque": f"{__name__}.Board", "repr": "B" * 200}
    assert decode(wire) == Opaque(f"{__name__}.Board", "B" * 200)


def test_a_repr_that_raises_is_recorded_as_unrepresentable():
    assert encode([Unrepresentable()]) == {
        "list": [{"opaque": f"{__name__}.Unrepresentable", "repr": "<unrepresentable>"}]
    }


def test_an_opaque_repr_holds_no_memory_address_so_two_runs_give_one_answer():
    """A generator's or a plain object's repr names its address, which differs from run to run: a regrade read
    another answer and the feedback showed '<generator object f at 0x7f...>'. The address is cut, nothing else."""
    def successors():
        yield 1
    assert encode(successors()) == {"opaque": "builtins.generator",
                                    "repr": f"<generator object {successors.__qualname__}>"}
    assert encode(object())["repr"] == "<object object>"
    assert encode([object(), object()]) == encode([object(), object()])
    assert encode(Board("at 0xbeef stays"))["repr"] == "at 0xbeef stays"   # only ' at 0x...' is an address


def test_functions_and_classes_are_opaque():
    assert encode(len)["opaque"] == "builtins.builtin_function_or_method"
    assert encode(Board)["opaque"] == "builtins.type"


# ---------------------------------------------------------------------------------------------- bounds


def assert_codec_error_quickly(action, text):
    """`action` raises a CodecError matching `text`, run in a forked child waited on for at most within(120) s
    (testclock.in_a_fork): a hang (a quadratic blowup) fails the test instead of holding the run, and no wall time
    is asserted (a busy machine is slow, not wrong)."""
    def refused() -> str | None:
        try:
            action()
        except CodecError as error:
            return str(error)
        return None
    said = in_a_fork(refused)
    assert said is not None and re.search(text, said), said


def test_deep_nesting_is_refused_quickly():
    deep: list = []
    current = deep
    for _ in range(10_000):
        inner: list = []
        current.append(inner)
        current = inner
    assert_codec_error_quickly(lambda: encode(deep), "nested deeper than 64 levels")


def test_self_referencing_containers_are_refused_not_recursed():
    loop: list = []
    loop.append(loop)
    assert_codec_error_quickly(lambda: encode(loop), "nested deeper than 64 levels")
    wide: list = []
    wide.extend([wide] * 1000)
    assert_codec_error_quickly(lambda: encode(wide), "nested deeper|more than 200000 items")
    mapping: dict = {}
    mapping["self"] = mapping
    assert_codec_error_quickly(lambda: encode(mapping), "nested deeper")


def test_too_many_items_are_refused_quickly():
    assert_codec_error_quickly(lambda: encode(list(range(10**6))), "more than 200000 items")
    assert_codec_error_quickly(lambda: encode([[0] * 1000 for _ in range(1000)]), "more than 200000 items")
    assert_codec_error_quickly(lambda: encode({i: i for i in range(150_000)}), "more than 200000 items")


def test_too_much_text_is_refused_quickly():
    assert_codec_error_quickly(lambda: encode("x" * 50_000_000), "more than 8000000 characters")
    assert_codec_error_quickly(lambda: encode(["y" * 1_000_000] * 9), "more than 8000000 characters")
    assert_codec_error_quickly(lambda: encode(b"z" * 7_000_000), "more than 8000000 characters")


def test_huge_ints_are_refused():
    assert_codec_error_quickly(lambda: encode(10**4000), "more than 4000 digits")
    assert_codec_error_quickly(lambda: encode(-(10**5000)), "more than 4000 digits")
    assert encode(10**4000 - 1) == 10**4000 - 1


def test_a_value_exactly_at_the_limits_encodes_and_decodes():
    limits = Limits(max_depth=3, max_items=7, max_chars=5)
    value = [[["abc", "de"]], 1]  # 3 levels, 6 items, 5 characters
    wire = encode(value, limits)
    assert decode(wire, limits) == value
    with pytest.raises(CodecError):
        encode([value], limits)
    with pytest.raises(CodecError):
        decode({"list": [wire]}, limits)
    with pytest.raises(CodecError):
        encode([[["abc", "def"]], 1], limits)


def test_a_large_but_legal_value_round_trips():
    # No wall-time assertion (tests must hold on a busy machine): a value just under the item limit is legal.
    value = [(str(i), i, float(i)) for i in range(49_999)]
    wire = encode(value)
    assert decode(wire) == value
    assert same(wire, encode(value)) is None


# ---------------------------------------------------------------------------------------------- untrusted wire


@pytest.mark.parametrize(
    ("wire", "text"),
    [
        ({"pickle": "gASV"}, "exactly one known tag"),
        ({}, "exactly one known tag"),
        ({"list": [], "tuple": []}, "exactly one known tag"),
        ({"list": [], "extra": 1}, "unexpected key"),
        ({"list": 5}, "must hold a JSON list"),
        ({"tuple": {"a": 1}}, "must hold a JSON list"),
        ({"set": "abc"}, "must hold a JSON list"),
        ({"dict": [[1, 2, 3]]}, "pair"),
        ({"dict": [1]}, "pair"),
        ({"dict": {"a": 1}}, "JSON list"),
        ({"list": [], "class": 5}, "class"),
        ({"str": "x"}, "lacks its 'class'"),
        ({"int": "5", "class": "m.C"}, "JSON integer"),
        ({"int": True, "class": "m.C"}, "JSON integer"),
        ({"float": "NaN"}, "malformed float"),
        ({"float": 1.5}, "malformed float"),
        ({"bytes": "***"}, "base64"),
        ({"bytes": 5}, "base64"),
        ({"opaque": "m.C"}, "lacks its 'repr'"),
        ({"opaque": "m.C", "repr": 5}, "string"),
        ({"ndarray": [1, 2], "dtype": "int64", "shape": [3]}, "does not match its shape"),
        ({"ndarray": [1, 2], "dtype": "int64", "shape": [-2]}, "non-negative"),
        ({"ndarray": [1, 2], "dtype": "int64"}, "lacks its 'shape'"),
        ({"ndarray": [[1], 2], "dtype": "int64", "shape": [2, 1]}, "does not match its shape"),
        ({"npscalar": 1, "dtype": 64}, "dtype"),
        ([1, 2], "bare JSON list"),
        ((1, 2), "not JSON data"),
        ({"list": [(1, 2)]}, "not JSON data"),
        ({"list": [float("nan")]}, "non-finite"),
        ({"list": [{1, 2}]}, "not JSON data"),
        (10**4001, "more than 4000 digits"),
        ({"set": [{"list": []}]}, "not hashable"),
        ({"dict": [[{"list": [1]}, 2]]}, "not hashable"),
    ],
)
def test_decode_rejects_malformed_wire(wire, text):
    with pytest.raises(CodecError, match=text):
        decode(wire)


def test_decode_rejects_over_deep_wire_without_recursion():
    wire: object = 1
    for _ in range(100_000):
        wire = {"list": [wire]}
    assert_codec_error_quickly(lambda: decode(wire), "nested deeper than 64 levels")
    # An ndarray's dimensions count as levels too.
    flat = {"ndarray": [], "dtype": "int64", "shape": [0] * 100}
    assert_codec_error_quickly(lambda: decode(flat), "nested deeper")


def test_decode_applies_the_item_and_text_bounds():
    assert_codec_error_quickly(lambda: decode({"list": list(range(300_000))}), "more than 200000 items")
    assert_codec_error_quickly(lambda: decode({"list": ["x" * 5_000_000, "y" * 5_000_000]}), "characters")
    huge_shape = {"ndarray": [], "dtype": "int64", "shape": [10**9, 10**9]}
    assert_codec_error_quickly(lambda: decode(huge_shape), "more than 200000 items")


def test_same_validates_both_sides():
    with pytest.raises(CodecError):
        same(encode((1, 2)), {"tuple": [1, 2], "surprise": True})
    with pytest.raises(CodecError):
        same([1, 2], encode([1, 2]))


# ---------------------------------------------------------------------------------------------- numpy


def test_numpy_arrays_and_scalars_round_trip_as_plain_data():
    numpy = pytest.importorskip("numpy")
    board = numpy.arange(6).reshape(2, 3)
    wire = encode(board)
    assert wire == {"ndarray": [[0, 1, 2], [3, 4, 5]], "dtype": str(board.dtype), "shape": [2, 3]}
    assert decode(wire) == NDArray(str(board.dtype), (2, 3), ((0, 1, 2), (3, 4, 5)))
    assert decode(encode(numpy.zeros((2, 0)))) == NDArray("float64", (2, 0), ((), ()))
    assert encode(numpy.array([1.5, numpy.nan]))["ndarray"] == [1.5, {"float": "nan"}]
    assert encode(numpy.int64(7)) == {"npscalar": 7, "dtype": "int64"}
    assert decode(encode(numpy.float64(2.5))) == 2.5
    assert same(encode(board), encode(board.astype(numpy.float64))) is not None
    assert same(encode(numpy.int64(3)), encode(3)) is not None
    assert_codec_error_quickly(lambda: encode(numpy.zeros((1000, 1000))), "more than 200000 items")


def test_an_array_rebuilt_from_the_wire_is_refused_before_numpy_allocates_past_its_bound():
    """with_arrays makes real arrays of what the wire says, and the wire may be the child's (an isolated method's
    data, rebuilt in the trusted parent for the reference): three one-letter strings of dtype U100000000 made the
    parent fill 1.2 GB. Each of these would have been many GB (numpy refused, or filled them) or takes its size
    from the data; each is a CodecError now, found from the dtype and shape alone."""
    numpy = pytest.importorskip("numpy")
    huge = [("U500000000", (40,), ("a",) * 40),               # 80 GB
            ("(10000,20000)f8", (20,), (0.0,) * 20),          # 32 GB: a subarray dtype
            ("V2000000000", (1000,), (b"",) * 1000),            # 2 TB
            (f"S{codec.MAX_ARRAY_BYTES + 1}", (1,), (b"",))]
    for dtype, shape, data in huge:
        value = [NDArray(dtype, shape, data)]
        assert_codec_error_quickly(lambda: codec.with_arrays(value), "over the")   # noqa: B023 - called at once
    for dtype in ("U", "S0", "<U"):   # no size: numpy takes it from the data (here 20 x 4 MB)
        sized = NDArray(dtype, (20,), ("x" * 1_000_000,) + ("",) * 19)
        assert_codec_error_quickly(lambda: codec.with_arrays(sized), "has no size")   # noqa: B023 - called at once
    assert_codec_error_quickly(lambda: codec.with_arrays(NDArray("not a dtype", (1,), (1,))), "is not numpy's")
    assert_codec_error_quickly(lambda: codec.with_arrays(NDArray("i4," * 100, (1,), (1,))), "characters")
    at_bound = codec.with_arrays(NDArray(f"S{codec.MAX_ARRAY_BYTES}", (1,), (b"ab",)))
    assert at_bound.nbytes == codec.MAX_ARRAY_BYTES and at_bound[0] == b"ab"
    board = codec.with_arrays(decode(encode(numpy.arange(6).reshape(2, 3))))
    assert board.tolist() == [[0, 1, 2], [3, 4, 5]] and str(board.dtype) == str(numpy.arange(1).dtype)
    assert codec.with_arrays(NDArray("<U5", (0,), ())).shape == (0,)


# ---------------------------------------------------------------------------------------------- describe, size


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ((("0", "1"), ("2", "3")), "(('0', '1'), ('2', '3'))"),
        ([1, 2], "[1, 2]"),
        ((1,), "(1,)"),
        ({"a": 1}, "{'a': 1}"),
        (set(), "set()"),
        ({2, 1}, "{1, 2}"),
        (frozenset(), "frozenset()"),
        (frozenset({3}), "frozenset({3})"),
        ([None, True, 1.5, math.nan, -math.inf], "[None, True, 1.5, nan, -inf]"),
        (b"ab", "b'ab'"),
        (RiggedTuple((1, 2)), "RiggedTuple((1, 2))"),
    ],
)
def test_describe_renders_python_like_text(value, text):
    assert describe(encode(value)) == text


def test_describe_renders_opaque_and_arrays():
    assert describe(encode(Board("board!"))) == "<opaque Board: board!>"
    array = {"ndarray": [[1, 2]], "dtype": "int64", "shape": [1, 2]}
    assert describe(array) == "array([[1, 2]], dtype=int64)"
    assert describe({"npscalar": 5, "dtype": "int64"}) == "np.int64(5)"


def test_describe_truncates_past_the_limit():
    text = describe(encode(list(range(100_000))), limit=20)
    assert text == "[0, 1, 2, 3, 4, 5..."
    assert len(text) == 20
    assert describe(encode("x" * 1_000_000), limit=10) == "'xxxxxx..."


def test_size_counts_value_nodes():
    assert size(encode(5)) == 1
    assert size(encode((1, 2))) == 3
    assert size(encode({"a": (1, 2)})) == 5
    assert size(encode([{1, 2}, "x", math.nan])) == 6
    assert size({"ndarray": [[1, 2], [3, 4]], "dtype": "int64", "shape": [2, 2]}) == 5


def test_default_limits_are_the_documented_ones():
    assert DEFAULT_LIMITS == Limits(max_depth=64, max_items=200_000, max_chars=8_000_000)


# ---------------------------------------------------------------------------------------------- standalone

STANDALONE_SCRIPT = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("codec", sys.argv[2])   # as the sandbox's runtime loads it
codec = sys.modules["codec"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(codec)
sys.path.insert(0, sys.argv[1])
import wire
assert not any(name == "grader" or name.startswith("grader.") for name in sys.modules), "grader imported"
assert "numpy" not in sys.modules, "numpy imported"
print(codec.canonical(codec.encode({"a": (1, {2})})))
"""


def test_codec_loads_as_a_plain_top_level_module_without_the_package():
    result = subprocess.run(
        [sys.executable, "-I", "-c", STANDALONE_SCRIPT, str(SANDBOX_DIR), str(Path(codec.__file__).resolve())],
        capture_output=True, text=True, timeout=within(60),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '{"dict":[["a",{"tuple":[1,{"set":[2]}]}]]}'
