"""The runtime's result frame, made as text: the bytes the frame of the outcome dict would have had."""

from __future__ import annotations

import pytest

from grader import codec
from grader.sandbox import runtime, wire

VALUES = [(("0", "14"), ("8", "12")), [("a", 1), 2.5, None, True], {"k": [1, {"n": -0.0}]}, {"b", "a"},
          frozenset({3, 1}), "héllo", 2 ** 80, [[["deep"]]], 1e300, "", ()]


@pytest.mark.parametrize("value", VALUES)
def test_a_result_frame_is_the_frame_of_the_outcome_with_its_wire(value):
    outcome = {"op": "result", "case": "c#1", "status": "ok", "probes": {}, "output": ""}
    made = runtime._result_frame(outcome, runtime._value_text(value))
    assert made == wire.encode_frame({"op": "result", "case": "c#1", "status": "ok", "value": codec.encode(value),
                                      "probes": {}, "output": ""})


def test_a_lone_surrogate_travels_in_a_result_frame():
    outcome = {"op": "result", "case": "c#1", "status": "ok", "probes": {"p": {"value": "x"}}, "output": "a\ud800"}
    made = runtime._result_frame(outcome, runtime._value_text(["b\udc00"]))
    assert wire.parse_body(made[4:]) == {**outcome, "value": codec.encode(["b\udc00"])}


def test_an_error_frame_has_no_value():
    outcome = {"op": "result", "case": "c#2", "status": "error", "error": {"type": "E"}, "output": ""}
    assert runtime._result_frame(outcome, None) == wire.encode_frame(outcome)
