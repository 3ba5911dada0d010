"""Property tests of the frame schema and of the parent's reading loop: any frame, any bytes, never a crash of
the parent. Each frame either becomes a typed message or is rejected with a reason, and a batch fed garbage
still ends with one valid outcome per case it started."""

from __future__ import annotations

import json
import os
import struct
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import codec
from grader.intake.warning import LOAD_KINDS
from grader.sandbox import frames, wire
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

OPS = ["result", "oracle", "forked", "exited", "done", "progress", "loaded", "ready", "start", ""]
KEYS = ["op", "case", "status", "value", "probes", "error", "output", "seconds", "name", "args", "kwargs", "seq",
        "pid", "index", "left_out", "warnings", "names", "isolation", "problems", "type", "message", "kind",
        "statement", "subject", "text"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["ok", "error", "timeout", "c1", "helper", *OPS]))
json_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5)),
    max_leaves=20)
frame_dicts = st.builds(lambda op, rest: {**rest, "op": op} if op is not None else rest,
                        st.sampled_from(OPS) | st.none() | scalars,
                        st.dictionaries(st.sampled_from(KEYS), json_like, max_size=6))


@settings(max_examples=400, deadline=None)
@given(frame_dicts)
def test_any_frame_is_a_message_or_invalid(message):
    try:
        parsed = frames.parse(message)
    except frames.Invalid as error:
        assert str(error)
        return
    assert isinstance(parsed, (frames.Ready, frames.Progress, frames.Loaded, frames.Forked, frames.OracleCall,
                               frames.Result, frames.Done, frames.Exited))
    for name, value in vars(parsed).items():
        if isinstance(value, float):
            assert value == value and abs(value) != float("inf"), name


load_warning = st.dictionaries(
    st.sampled_from(["kind", "statement", "subject", "text"]) | st.text(max_size=5),
    st.sampled_from(["missing module", "error at load", "not loaded", "grader", ""]) | scalars
    | st.text(min_size=190, max_size=4_010), max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.lists(load_warning, max_size=4))
def test_load_warnings_from_the_child_are_typed_and_bounded_or_the_frame_is_invalid(warnings):
    """The child's load report is fields, never trusted: a kind the child may claim, a statement number, a
    subject and a text within bounds; anything else (the grader's own kinds included) rejects the frame."""
    try:
        loaded = frames.parse({"op": "loaded", "warnings": warnings, "output": "", "names": []})
    except frames.Invalid as error:
        assert str(error)
        return
    assert isinstance(loaded, frames.Loaded) and len(loaded.warnings) == len(warnings)
    for warning in loaded.warnings:
        assert warning.kind in LOAD_KINDS and type(warning.statement) is int and warning.statement >= 0
        assert len(warning.subject) <= frames.Bounds().subject and len(warning.text) <= frames.Bounds().text


def test_a_load_warning_of_the_graders_own_kind_is_invalid():
    entry = {"kind": "missing module", "statement": 0, "subject": "x", "text": "t"}
    assert frames.parse({"op": "loaded", "warnings": [entry], "output": "", "names": []}).warnings[0].subject == "x"
    for forged in ({**entry, "kind": "mismatch"}, {**entry, "statement": -1}, {**entry, "extra": 1},
                   {**entry, "subject": "s" * 201}, {**entry, "statement": True}):
        try:
            frames.parse({"op": "loaded", "warnings": [forged], "output": "", "names": []})
        except frames.Invalid:
            continue
        raise AssertionError(f"{forged} was accepted")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_frame_body_parses_to_an_object_or_a_frame_error(body):
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, struct.pack(">I", len(body)) + body)
        try:
            message = wire.FrameReader(read_end).read(time.monotonic() + 5)
        except wire.FrameError:
            return
        assert type(message) is dict
    finally:
        os.close(read_end)
        os.close(write_end)


def test_numbers_json_can_write_but_a_float_cannot_hold_are_frame_errors():
    for text in (b'{"seconds":1e400}', b'{"seconds":-1e400}', b'{"x":Infinity}', b'{"x":NaN}'):
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, struct.pack(">I", len(text)) + text)
            try:
                wire.FrameReader(read_end).read(time.monotonic() + 5)
            except wire.FrameError:
                continue
            raise AssertionError(f"{text!r} was accepted")
        finally:
            os.close(read_end)
            os.close(write_end)


def _encoded(message) -> bytes:
    try:
        body = json.dumps(message, allow_nan=True).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError):
        body = b"{"
    return struct.pack(">I", len(body)) + body


CASES = [CaseRequest("c1", "f()", timeout=0.5), CaseRequest("c2", "f()", timeout=0.5)]
likely = st.one_of(
    frame_dicts,
    st.sampled_from([{"op": "forked", "pid": 12}, {"op": "done"}, {"op": "exited", "status": 0},
                     {"op": "result", "case": "c1", "status": "ok", "value": 1},
                     {"op": "result", "case": "c2", "status": "error", "error": {"message": "m"}},
                     {"op": "oracle", "name": "helper", "args": {"list": []}, "kwargs": {"dict": []}, "seq": 1}]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(likely | st.binary(max_size=40), max_size=8))
def test_the_parent_survives_any_sequence_of_frames_and_every_started_case_gets_one_outcome(sequence):
    """The parent's reading loop fed from a pipe instead of a child: forged, duplicated, malformed frames."""
    sandbox = Sandbox([], {}, ProcessLimits())
    from_child, to_parent = os.pipe()
    to_child, from_parent = os.pipe()
    try:
        data = b"".join(item if isinstance(item, bytes) else _encoded(item) for item in sequence)
        os.write(to_parent, data[:60_000])
        os.close(to_parent)
        to_parent = -1
        sandbox.reader, sandbox.request_fd = wire.FrameReader(from_child), from_parent
        outcomes, _clean = sandbox._run_batch(CASES, ["helper"], lambda *call: 0, time.monotonic() + 5, 2)
        assert [o.case for o in outcomes] == [c.id for c in CASES[:len(outcomes)]]
        for outcome in outcomes:
            assert outcome.status in ("ok", "error", "timeout", "crash")
            assert outcome.seconds >= 0
    finally:
        for fd in (from_child, to_parent, to_child, from_parent):
            if fd >= 0:
                os.close(fd)
        sandbox.reader = None
        sandbox.request_fd = None
        sandbox.close()


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                     st.text(alphabet=",[{}]\"\\ax\ud800"), st.binary(max_size=20))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=40), st.lists(inner, max_size=6).map(tuple), st.frozensets(_SCALARS, max_size=6),
    st.dictionaries(st.one_of(st.text(alphabet=",[{x", max_size=4), st.integers()), inner, max_size=4),
    st.lists(st.one_of(st.just([]), st.just(()), st.just({})), max_size=40)), max_leaves=40)
_SMALL = codec.Limits(max_depth=64, max_items=30, max_chars=8)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES)
def test_a_value_the_codec_encodes_holds_no_more_tokens_than_its_limits_allow(value):
    """frames.readable refuses unparsed a frame holding more `,[{` than values within the codec's limits can: so
    every value the codec encodes within them, written as the runtime writes it, holds at most that many."""
    try:
        encoded = codec.encode(value, _SMALL)
    except codec.CodecError:
        return
    text = wire.json_text(encoded).encode("utf-8")
    assert frames.tokens(text) <= frames.value_tokens(_SMALL), text
