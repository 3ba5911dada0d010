"""The parent refuses a result frame too heavy to hold a comparable answer before it parses it.

grading.TOO_LARGE bounds judging a giant answer, but the parent parsed its frame first: a sliding-3x3 nextStates
answered with 2 MB of nested lists cost 0.42 s of the parent's CPU a case in wire._parse alone. Each case's request
now carries the heaviest frame its answer may come in (CaseRequest.answer_bytes, from the known answers' sizes);
a heavier one fails the case in TOO_LARGE's words, unparsed. The output and error texts the frame carries do not
weigh (frames.weighed), so no honest answer looks large for what it printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grader import codec
from grader.judge import grading
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.sandbox import frames, process, runtime, wire
from grader.sandbox.process import CaseRequest, Outcome
from grader.store import status

REPO = Path(__file__).resolve().parents[1]
SLIDING = REPO / "rubrics" / "sliding-3x3.yaml"
CORRECT = REPO / "assignments" / "sliding-3x3" / "submissions" / "correct.ipynb"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory):
    return build_plan(load_rubric(SLIDING), tmp_path_factory.mktemp("plan"))


def test_a_giant_answer_fails_as_too_large_and_its_frame_is_never_parsed(plan, tmp_path, monkeypatch):
    notebook = json.loads(CORRECT.read_text())
    giant = "def nextStates(state):\n    return [[[[[[[[[[i]]]]]]]]] for i in range(6000)]\n"   # 150 kB
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                              "source": giant})
    path = tmp_path / "giant.ipynb"
    path.write_text(json.dumps(notebook))
    parsed: list[int] = []
    parse_body = wire.parse_body
    monkeypatch.setattr(wire, "parse_body", lambda body: parsed.append(len(body)) or parse_body(body))
    result = grading.grade_path(path, plan, grading.support_sources(plan))
    cases = next(e for e in result.exercises if e.id == "nextStates").cases
    heaviest = max(grading.answer_bytes(plan, case) or 0 for case in plan.cases["nextStates"])
    assert heaviest > 0 and all(size <= heaviest for size in parsed)   # nothing parsed past the bound
    assert cases and all((c.status, c.cause, c.reason) == ("fail", grading.TOO_LARGE, status.WRONG) for c in cases)
    assert all(c.message.startswith("the answer is ") and " bytes of data, far more than any right answer to this "
               "case: it was not compared" in c.message for c in cases)
    assert parsed   # the other exercises' answers were read as ever


def test_an_unread_answer_fails_and_is_never_taken_for_the_right_one(plan):
    exercise = next(e for e in plan.rubric.exercises if e.id == "nextStates")
    case = plan.cases["nextStates"][0]
    outcome = Outcome(case.id, "ok", value=None, seconds=0.1, unread=123_456)
    result = grading.judge(plan, exercise, case, outcome)
    assert (result.status, result.cause, result.got) == ("fail", grading.TOO_LARGE, None)
    assert "123,456 bytes" in result.message
    assert grading.judge_variants(plan, exercise, case, outcome, result) == {}
    # The fast path for right answers does not look at the value first (None is the right answer of some cases).
    as_right = Outcome(case.id, "ok", value=plan.expected[case.id].value, seconds=0.1, unread=99)
    assert grading.judge(plan, exercise, case, as_right).cause == grading.TOO_LARGE


def test_check_functions_keep_their_own_bound(plan):
    checked = [case for cases in plan.cases.values() for case in cases if case.check.name not in ("equal", "unordered")]
    assert checked
    assert all(grading.answer_bytes(plan, case) is None for case in checked)


def _request(limit: int) -> CaseRequest:
    return CaseRequest("nextStates-1", "nextStates(s)", answer_bytes=limit)


def test_a_heavy_frame_is_never_parsed():
    request, bounds = _request(1000), frames.Bounds()
    heavy = b"[]," * 2000
    refused = process._unread(b'{"op":"result","case":"nextStates-1","status":"ok","value":[' + heavy + b'[]],'
                              b'"probes":{},"output":"[[[["}', request, bounds)
    assert refused is not None and refused.value is None and refused.output == "[[[["
    assert refused.unread == len(heavy) + len(b'{"op":"result","case":"nextStates-1","status":"ok","value":[[]],'
                                              b'"probes":{},"output":}')
    # Keys in another order than the runtime's, or another op, or another case: forged, and not parsed either.
    for body in (b'{"case":"nextStates-1","op":"result","status":"ok","value":[' + heavy + b'[]]}',
                 b'{"op":"result","case":"nextStates-2","status":"ok","value":[' + heavy + b'[]]}',
                 b'{"op":"progress","index":0,"junk":[' + heavy + b'[]]}'):
        with pytest.raises(frames.Invalid, match="not the runtime's answer"):
            process._unread(body, request, bounds)
    # An isolated-helper call has its own bound; a light frame is parsed as ever.
    assert process._unread(b'{"op":"oracle","name":"f","seq":0,"args":[' + heavy + b'[]],"kwargs":{}}',
                           request, bounds) is None
    assert process._unread(b'{"op":"result","case":"nextStates-1","status":"ok","value":1}', request, bounds) is None


_TEXT = st.text(st.characters(codec="utf-8") | st.characters(categories=["Cs"]) | st.sampled_from("[]{}\"\\,:"),
                max_size=300)


def _honest_frame(case_id: str, value: object, probes: dict, output: str) -> bytes:
    """A result frame exactly as the runtime writes it (its header off)."""
    outcome = {"op": "result", "case": case_id, "status": "ok", "probes": probes, "output": output}
    return runtime._result_frame(outcome, runtime._value_text(value))[4:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.recursive(st.none() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
                          lambda inner: st.lists(inner, max_size=4), max_leaves=12),
       output=_TEXT.map(lambda text: text * 50), probe=st.none() | _TEXT | st.integers(),
       case_id=st.from_regex(r"[A-Za-z0-9_.-]{1,40}", fullmatch=True))
def test_an_honest_frame_weighs_no_more_than_its_bound(value, output, probe, case_id):
    probes = {} if probe is None else {"h2": {"value": codec.encode(probe)}}
    wire_value = codec.encode(value)
    body = _honest_frame(case_id, value, probes, output)
    weight, shown = frames.weighed(body, case_id)
    assert shown == output   # what the case printed, kept
    # The bound a case whose longest known answer is this one's canonical text gives (grading.answer_bytes).
    longest = len(codec.canonical(wire_value))
    allowed = frames.BYTES_PER_CHAR * (longest + (grading.PROBE_TEXT_FLOOR + 2 + 16) * len(probes) + len(case_id)) \
        + grading.FRAME_KEYS
    assert weight <= allowed


@settings(max_examples=200, deadline=None)
@given(message=_TEXT, traceback=_TEXT.map(lambda text: text * 60), output=_TEXT.map(lambda text: text * 50),
       kind=st.sampled_from(["error", "timeout"]))
def test_an_honest_error_frame_weighs_little_whatever_its_texts(message, traceback, output, kind):
    outcome = {"op": "result", "case": "c-1", "status": kind,
               "error": {"type": "ValueError", "message": message, "where": "cell 3, line 2", "traceback": traceback},
               "output": output}
    body = runtime._result_frame(outcome, None)[4:]
    weight, shown = frames.weighed(body, "c-1")
    assert shown == output
    assert weight <= grading.FRAME_KEYS


def test_probes_are_decoded_once_per_outcome_within_a_bound(monkeypatch):
    """A probe's value is the child's choice, decoded for every check of the answer (the case, each known mistake,
    each variant) with the codec's own bounds (200,000 items) outside the check's CPU bound."""
    from grader.checks.registry import ProbeError

    decoded: list[object] = []
    decode = codec.decode
    monkeypatch.setattr(codec, "decode", lambda wire, *a, **k: decoded.append(wire) or decode(wire, *a, **k))
    huge, small = codec.encode(list(range(100_000))), codec.encode(17)
    outcome = Outcome("h-1", "ok", value=3, probes={"h2": {"value": small}, "big": {"value": huge},
                                                    "bad": {"error": "ValueError: no"}})
    for _ in range(3):
        probes = grading._probes(outcome)
        assert probes["h2"] == 17
        assert isinstance(probes["big"], ProbeError) and isinstance(probes["bad"], ProbeError)
        probes["h2"] = "changed by a check"   # each check gets its own dict
    assert decoded == [small, huge]
    other = Outcome("h-1", "ok", value=3, probes={"h2": {"value": codec.encode(5)}})
    assert grading._probes(other) == {"h2": 5}


_PIECE = st.sampled_from([b'"', b'\\"', b'\\\\', b'\\u00e9', b'\\n', b'}', b'{', b'[', b']', b',', b':', b'1', b'"x"',
                          b',"output":"', b'"error":{', b'{"op":"result","case":"c","status":"error","error":',
                          b"\xff", "é".encode(), b"a"])
_PIECES = st.lists(_PIECE, max_size=12).map(b"".join)
_HEAD = st.sampled_from([b'{"op":"result","case":"c","status":"ok","value":',
                         b'{"op":"result","case":"c","status":"error","error":', b'{"op":"result","case":"c"', b""])


@settings(max_examples=500, deadline=None)
@given(head=_HEAD, middle=_PIECES, text=_TEXT.map(lambda text: wire.json_text(text).encode("utf-8")) | _PIECES,
       end=st.sampled_from([b"}", b"}}", b""]))
def test_any_frame_weighs_at_most_its_length_and_credits_only_its_real_output(head, middle, text, end):
    body = head + middle + b',"output":' + text + end
    weight, output = frames.weighed(body, "c")
    assert 0 <= weight <= len(body)
    if weight < len(body):   # a text taken out of the weight: the output the frame holds, if it is a frame at all
        try:
            message = wire.parse_body(body)
        except wire.FrameError:
            return
        assert message.get("output") == output
