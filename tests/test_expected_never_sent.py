"""No expected value reaches the child: every byte the parent writes to a sandbox (the load, each exercise's
request, whatever a faster encoding adds) is searched for every case's expected answer, and each known mistake's
and accepted variant's, in every encoding the parent makes of them (the wire's JSON, canonical JSON, marshal,
codec.pack). Replies to isolated-helper calls are left out: they answer the child's own questions.

Real notebooks in real sandboxes: one whose move_dir is transposed (its dependents are run again with the
reference's move_dir) and the correct one (every case right, the path a right answer's shortcuts take).
"""

from __future__ import annotations

import json
import marshal
from pathlib import Path
from typing import Any

import pytest

from grader import codec
from grader.judge.grading import grade_path, support_sources
from grader.plan.cases import Plan
from grader.sandbox import process, wire

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = REPO / "assignments" / "taoistic-search"
MIN_BYTES = 24     # shorter encodings (a bool, a small int, a short str) may be anyone's bytes


def _parts(value: Any) -> list[Any]:
    """`value` and every container inside it."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        found.append(item)
        if isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _text(value: Any) -> str:
    return json.dumps(codec.encode(value), sort_keys=True, separators=(",", ":"))


def _secrets(plan: Plan) -> dict[str, str]:
    """The canonical text of each expected value (and each mistake's and variant's answer) that is distinctive and
    no case's input (an input is sent, and may equal another case's answer), with the case it answers."""
    inputs = {_text(part) for cases in plan.cases.values() for case in cases
              for part in _parts(dict(plan.data(case)))}
    secrets: dict[str, str] = {}
    for case_id, expected in plan.expected.items():
        for label, value in (("expected", expected.value), *expected.mistakes, *expected.variants):
            try:
                text = _text(codec.decode(value))
            except (codec.CodecError, TypeError, ValueError):
                continue
            if len(text) >= MIN_BYTES and text not in inputs:
                secrets[text] = f"{case_id} ({label})"
    return secrets


def _decoded(data: bytes) -> list[Any]:
    """What `data` holds, as JSON, marshal, or either after a one-letter tag (codec.pack): whatever decodes."""
    found = []
    for candidate in (data, data[1:]):
        for load in (json.loads, marshal.loads):
            try:
                found.append(load(candidate))
            except Exception:  # noqa: BLE001 - not this encoding
                pass
    return found


def _sent_values(frames: list[bytes]) -> set[str]:
    """The canonical text of every value inside every frame, however it is encoded: JSON bodies and marshal
    bodies, the wire's tagged values in them, and marshal or packed bytes nested inside."""
    texts: set[str] = set()
    stack = [value for frame in frames for value in _decoded(frame[4:])]
    while stack:
        value = stack.pop()
        for part in _parts(value):
            if isinstance(part, dict):
                try:
                    stack.append(codec.decode(part))
                except Exception:  # noqa: BLE001 - not a wire value
                    pass
            elif isinstance(part, (bytes, str)) and len(part) >= MIN_BYTES:
                stack.extend(_decoded(part.encode() if isinstance(part, str) else part))
            try:
                texts.add(_text(part))
            except Exception:  # noqa: BLE001 - a code object, a value the codec does not take
                pass
    return texts


def _sent(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every frame the parent queues for a child, from now on, but replies to isolated-helper calls."""
    frames: list[bytes] = []
    send = process.Sandbox._send

    def recording(self: process.Sandbox, message: dict | bytes) -> None:
        frame = message if isinstance(message, bytes) else wire.encode_frame(message)
        if not frame[4:].startswith(b'{"seq":'):
            frames.append(frame)
        send(self, message)

    monkeypatch.setattr(process.Sandbox, "_send", recording)
    return frames


@pytest.mark.parametrize("notebook", ["move-dir-transposed.ipynb", "correct.ipynb"])
def test_no_expected_value_is_in_any_byte_the_child_is_sent(plan, monkeypatch, notebook):
    secrets = _secrets(plan)
    assert len(set(secrets.values())) > 50   # the searches' paths, find_numbers' lists, the states of move_dir...
    frames = _sent(monkeypatch)
    result = grade_path(ASSIGNMENT / "submissions" / notebook, plan, support_sources(plan))
    assert result.state == "graded" and len(frames) > 10
    assert all(_decoded(frame[4:]) for frame in frames)   # every frame read (a new encoding: teach _decoded)
    sent = b"".join(frames)
    assert [label for text, label in secrets.items() if text.encode() in sent] == []   # as text, anywhere
    values = _sent_values(frames)
    assert [label for text, label in secrets.items() if text in values] == []   # decoded


def test_the_search_finds_an_expected_value_however_it_is_encoded(plan):
    """The test above would see a leak: one expected value put in a frame as JSON, as marshal inside a marshal
    request, and packed."""
    secrets = _secrets(plan)
    [(text, _)] = [(text, label) for text, label in secrets.items() if label == "search#3 (expected)"]
    value = codec.decode(plan.expected["search#3"].value)
    for body in (wire.json_text({"op": "exercise", "x": plan.expected["search#3"].value}).encode(),
                 marshal.dumps({"op": "exercise", "cases": [{"x": value, "y": (1, "a")}]}),
                 marshal.dumps({"op": "exercise", "cases": [{"x": codec.pack(value)}]})):
        assert text in _sent_values([wire.frame_of(body)])


def test_every_prefetched_answer_is_one_the_child_could_have_asked_for(plan, monkeypatch):
    """Answers sent before they are asked (grader/sandbox/prefetch.py) are a new way bytes reach the child: each
    must be the reference's answer to a helper the run isolates, called with values the child already held (a
    member of a set it was sent, in this reply or before in the same request, or an argument it sent itself), so it
    shows the child nothing it could not have asked for. A rerun's public and hidden cases are two requests
    (Sandbox._run_part), the hidden part's held values its own. find-tile-transposed: its search rerun prefetches
    thousands."""
    runs: list[tuple[frozenset[str], set[str], list[tuple[str, list, bytes]]]] = []
    run_part, reply_frame, head = process.Sandbox._run_part, process._reply_frame, process._CALL_HEAD

    def held_texts(tail: bytes) -> list[str]:
        found = codec.unpack(tail) if tail[:1] in (b"S", b"F") else ()
        return [_text(member) for member in found]

    def running(self: process.Sandbox, cases: Any, isolate: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append((frozenset(isolate), set(), []))
        return run_part(self, cases, isolate, *args, **kwargs)

    class Calls:
        def match(self, body: bytes, *args: Any) -> Any:
            found = head.match(body, *args)
            if found is not None and runs:
                sent = json.loads(b"{" + body[found.end():])
                runs[-1][1].update(_text(arg) for arg in codec.decode(sent["args"]))
            return found

    def replying(seq: int, tail: bytes) -> bytes:
        held = runs[-1][1]
        if tail[:1] == b"P":
            answer, more = codec.unpack_prefetched(tail)
            held.update(held_texts(answer))
            for helper, args_text, reply in more:
                args = codec.decode(wire.parse_value(args_text))
                assert all(_text(arg) in held for arg in args), (helper, args_text)   # before this answer's
                runs[-1][2].append((helper, args, reply))
                held.update(held_texts(reply))
        else:
            held.update(held_texts(tail))
        return reply_frame(seq, tail)

    monkeypatch.setattr(process.Sandbox, "_run_part", running)
    monkeypatch.setattr(process, "_reply_frame", replying)
    monkeypatch.setattr(process, "_CALL_HEAD", Calls())
    result = grade_path(ASSIGNMENT / "submissions" / "find-tile-transposed.ipynb", plan, support_sources(plan))
    assert result.state == "graded"
    prefetched = [(isolate, answer) for isolate, _, answers in runs for answer in answers]
    assert len(prefetched) > 1000
    for isolate, (helper, args, reply) in prefetched:
        assert helper in isolate
        assert reply == process._answer_tail(getattr(plan.reference, helper)(*args))
