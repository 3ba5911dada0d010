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


def test_an_answered_outcome_is_the_outcome_its_fields_make():
    """The parent makes each case's Outcome without the dataclass's __init__ (process._answered): the same object
    in every way the judge, the memo and a pickle see it."""
    import copy
    import pickle
    from dataclasses import replace
    from grader.sandbox.process import Outcome, _answered
    fields = ("c#1", "ok", [1, "x"], {"p": 2}, {"type": "E"}, "printed", 0.25, None)
    made, want = _answered(*fields), Outcome(*fields)
    assert made == want and repr(made) == repr(want) and list(vars(made)) == list(vars(want))
    assert pickle.loads(pickle.dumps(made)) == want and copy.copy(made) == want
    assert replace(made, status="timeout") == replace(want, status="timeout")
