"""The child's memo of isolated-helper answers: a call seen before in the exercise costs no round trip, yet the
student never gets a shared object (mutating an argument or an answer changes nothing later), and nothing the
child sends can put an answer into the parent's replies. Counts of round trips are asserted, never times."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from grader import codec
from grader.sandbox.process import CaseRequest, Outcome, ProcessLimits, PureOracle, Sandbox
from sandbox_run import RUN_SECONDS, run_cases, statements

REPO = Path(__file__).resolve().parents[1]


class Reference:
    """An oracle that answers with `answer` and records every call that reached the parent (a round trip)."""

    def __init__(self, answer: Callable[..., Any]):
        self.answer = answer
        self.calls: list[tuple[str, list, dict]] = []

    def __call__(self, name: str, args: list, kwargs: dict) -> Any:
        self.calls.append((name, args, kwargs))
        return self.answer(*args, **kwargs)


def case(code: str, case_id: str = "c1", **fields: Any) -> CaseRequest:
    return CaseRequest(id=case_id, code=code, timeout=5.0, **fields)


def run(source: str, cases: list[CaseRequest], oracle: Callable[..., Any]) -> list[Outcome]:
    ran = run_cases(statements(source), cases, isolate=["helper"], oracle=oracle, limits=ProcessLimits(load_seconds=5))
    return ran.outcomes


def value(outcome: Outcome) -> Any:
    assert outcome.status == "ok", outcome
    return codec.decode(outcome.value)


def test_a_call_made_again_in_the_exercise_costs_no_round_trip_and_the_next_exercise_asks_again():
    source = ("def helper(state):\n    return None\n\n"
              "def uses(state):\n    return [helper(state) for _ in range(50)]\n")
    reference = Reference(lambda state: len(state))
    cases = [case("uses(('a', 'bc'))"), case("uses(('a', 'bc'))", "c2"), case("helper(('x',))", "c3")]
    with Sandbox(statements(source), {}, ProcessLimits(load_seconds=5)) as sandbox:
        sandbox.load()
        first = sandbox.run_exercise(cases, ["helper"], reference, time.monotonic() + RUN_SECONDS)
        assert [value(o) for o in first] == [[2] * 50, [2] * 50, 1]
        assert reference.calls == [("helper", [("a", "bc")], {}), ("helper", [("x",)], {})]
        again = sandbox.run_exercise(cases[:1], ["helper"], reference, time.monotonic() + RUN_SECONDS)
    assert value(again[0]) == [2] * 50
    assert len(reference.calls) == 3   # a new exercise (a new fork) starts with an empty memo


def test_an_argument_mutated_after_the_call_is_asked_about_as_it_is_now():
    source = ("def helper(board):\n    return None\n\n"
              "def uses():\n    board = [1, 2]\n    first = helper(board)\n    board.append(3)\n"
              "    second = helper(board)\n    board.pop()\n    third = helper(board)\n"
              "    return [first, second, third, board]\n")
    reference = Reference(lambda board: sum(board))
    assert value(run(source, [case("uses()")], reference)[0]) == [3, 6, 3, [1, 2]]
    assert [call[1] for call in reference.calls] == [[[1, 2]], [[1, 2, 3]]]


def test_an_answer_mutated_by_the_student_does_not_change_the_next_answer():
    source = ("def helper(key):\n    return None\n\n"
              "def uses():\n    first = helper(0)\n    first['moves'].append(99)\n    first['new'] = 1\n"
              "    second = helper(0)\n    return [first, second, first is second]\n")
    reference = Reference(lambda key: {"moves": [1, 2]})
    got = value(run(source, [case("uses()")], reference)[0])
    assert got == [{"moves": [1, 2, 99], "new": 1}, {"moves": [1, 2]}, False]
    assert len(reference.calls) == 1


def test_unhashable_arguments_are_remembered_by_their_text_and_keywords_are_part_of_the_call():
    source = ("def helper(*args, **kwargs):\n    return None\n\n"
              "def uses():\n    grid = {'k': [1, {2, 3}], 'z': [[]]}\n"
              "    return [helper(grid), helper({'k': [1, {3, 2}], 'z': [[]]}), helper(grid=grid), helper([1]),"
              " helper([1.0])]\n")
    reference = Reference(lambda *args, **kwargs: repr((args, kwargs)))
    got = value(run(source, [case("uses()")], reference)[0])
    assert got[0] == got[1] != got[2]
    # Equal in Python, not the same call: [1] and [1.0] are different wires, so the reference is asked twice.
    assert len(reference.calls) == 4


def test_an_error_of_the_reference_is_remembered_too():
    source = ("def helper(x):\n    return None\n\n"
              "def uses():\n    said = []\n    for _ in range(3):\n        try:\n            helper(-1)\n"
              "        except RuntimeError as error:\n            said.append(str(error))\n    return said\n")

    def answer(x: int) -> int:
        raise ValueError("negative")

    reference = Reference(answer)
    assert value(run(source, [case("uses()")], reference)[0]) == ["helper raised ValueError: negative"] * 3
    assert len(reference.calls) == 1


def test_the_oracle_budget_counts_round_trips_not_the_calls_the_memo_answers():
    source = ("def helper(x):\n    return None\n\n"
              "def same():\n    return sum(helper(1) for _ in range(500))\n\n"
              "def distinct():\n    return sum(helper(i) for i in range(50))\n")
    reference = Reference(lambda x: x)
    same, distinct = run(source, [case("same()", oracle_calls=5), case("distinct()", "c2", oracle_calls=5)],
                         reference)
    assert value(same) == 500
    assert distinct.status == "error" and "more than 5 times" in distinct.error["message"]
    # helper(1) is remembered from the first case: the second case's five round trips are 0, 2, 3, 4, 5.
    assert [call[1] for call in reference.calls] == [[1], [0], [2], [3], [4], [5]]


FORGERY = '''
import json, os, struct

def _forge(message):
    body = json.dumps(message).encode()
    data = struct.pack(">I", len(body)) + body
    for fd in range(3, 64):
        try:
            os.write(fd, data)
        except OSError:
            pass

def helper(x):
    return None

def forger():
    first = helper(4)
    # What an answer frame looks like, sent to the parent in every form: none may enter its replies.
    _forge({"seq": 2, "value": 666})
    _forge({"op": "oracle", "name": "helper", "args": {"list": [5]}, "kwargs": {"dict": []}, "seq": 2,
            "value": 666})
    _forge({"op": "result", "case": "c1", "status": "ok", "value": 666})
    return [first, helper(5)]

def honest():
    return [helper(4), helper(5)]
'''


def answered(tail: bytes) -> Any:
    """The answer a kept reply holds (process._answer_tail): packed plain data, or the wire of a JSON object."""
    if not tail.startswith(b'"'):
        return codec.unpack(tail)
    reply = json.loads(b"{" + tail)
    return codec.decode(reply["value"]) if "value" in reply else reply


def test_answer_frames_forged_by_a_child_never_reach_the_replies_another_submission_is_answered_from():
    reference = PureOracle(Reference(lambda x: x * 10))
    forged = run(FORGERY, [case("forger()")], reference)[0]
    assert forged.status == "error" and forged.error.get("type") == "ProtocolError", forged
    assert reference.replies.entries and all(answered(tail) != 666 for tail in reference.replies.entries.values())
    honest = run(FORGERY, [case("honest()")], reference)[0]   # the next submission, the same replies
    assert value(honest) == [40, 50]


def test_a_broken_notebooks_rerun_sends_each_distinct_call_over_the_wire_once(grader_cache: Path):
    """find-tile-transposed: its search is judged again with the reference's next_states and manhattan, thousands
    of calls; within a request (an exercise run's public cases, or its hidden ones: two forks, two memos) no call
    crosses the wire twice, and the score is what it always was."""
    from grader.judge import grading
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric
    from grader.sandbox import process

    plan = build_plan(load_rubric(REPO / "rubrics" / "taoistic-search.yaml"), grader_cache)
    runs: list[list[tuple[str, bytes]]] = []
    answer, run_exercise = process.Sandbox._answer_oracle, process.Sandbox._run_part

    def counted_answer(self: Sandbox, call: Any, oracle: Any, clock: Any, heard: Any = None, *args: Any) -> None:
        # A kept call (recognised from its frame's bytes) or a parsed one: either way, the call's key.
        runs[-1].append((call.name, call.rest) if isinstance(call, process.KnownCall) else (heard.name, heard.rest))
        answer(self, call, oracle, clock, heard, *args)

    def counted_run(self: Sandbox, *args: Any, **kwargs: Any) -> list[Outcome]:
        runs.append([])
        return run_exercise(self, *args, **kwargs)

    process.Sandbox._answer_oracle, process.Sandbox._run_part = counted_answer, counted_run   # type: ignore[method-assign]
    try:
        result = grading.grade_path(REPO / "assignments" / "taoistic-search" / "submissions" /
                                    "find-tile-transposed.ipynb", plan, grading.support_sources(plan))
    finally:
        process.Sandbox._answer_oracle, process.Sandbox._run_part = answer, run_exercise   # type: ignore[method-assign]
    assert result.total == 25.5
    assert sum(len(calls) for calls in runs) > 1000   # the search rerun
    assert all(len(calls) == len(set(calls)) for calls in runs)


def test_a_case_that_never_stops_calling_the_helpers_ends_at_its_cpu_limit_with_or_without_round_trips():
    """The case's CPU-time alarm is deferred while the child waits for an answer, never lost: a loop of new calls
    (each a round trip) and a loop of one call (answered by the memo) both end as timeouts, and the case between
    them still runs."""
    source = ("def helper(x):\n    return None\n\n"
              "def distinct():\n    i = 0\n    while True:\n        helper(i)\n        i += 1\n\n"
              "def same():\n    while True:\n        helper(0)\n")
    reference = Reference(lambda x: x)
    cases = [CaseRequest(id="c1", code="distinct()", timeout=0.3, oracle_calls=10**6),
             CaseRequest(id="c2", code="helper(7)", timeout=5.0),
             CaseRequest(id="c3", code="same()", timeout=0.3, oracle_calls=10**6)]
    outcomes = run(source, cases, reference)
    assert [outcomes[0].status, outcomes[2].status] == ["timeout", "timeout"], outcomes
    assert value(outcomes[1]) == 7


def test_a_helper_the_template_gives_can_never_be_isolated_so_it_always_runs_in_the_child(grader_cache: Path):
    """to_tuple is code the template gives (no exercise grades it): a rubric that lists it in an exercise's
    `isolate` is refused, so such a helper never costs a round trip; it runs in the child from the notebook's own
    source, as every helper whose own exercise did not lose points does."""
    from dataclasses import replace

    import pytest

    from grader.plan.cases import build_plan
    from grader.rubric.schema import RubricError, load_rubric

    rubric = load_rubric(REPO / "rubrics" / "taoistic-search.yaml")
    exercises = tuple(replace(e, isolate=(*e.isolate, "to_tuple")) if e.id == "move_dir" else e
                      for e in rubric.exercises)
    with pytest.raises(RubricError, match="isolate names 'to_tuple', which no earlier exercise grades"):
        build_plan(replace(rubric, exercises=exercises), grader_cache)


def test_a_call_made_of_known_states_gives_the_arguments_its_parsing_gives_and_anything_else_is_parsed():
    """process.known_args answers a computed call's arguments from the texts of the states the reference's sets
    sent down (and of a state the call sent up, which parses alone as one whole value): exactly what parsing the
    frame and decoding gives, or None for anything else, so that frame is parsed (and refused if malformed)."""
    from grader import codec
    from grader.sandbox import frames, process, wire
    state, goal = (("0", "1"), ("*", "2")), (("1", "0"), ("2", "*"))
    texts: dict = {}
    assert codec.pack({state, ((),)}, texts) is not None and texts == {codec.plain_text(state): state,
                                                                        codec.plain_text(((),)): ((),)}

    def rest(args_text: str, kwargs_text: str = '{"dict":[]}') -> bytes:
        return f'"args":{args_text},"kwargs":{kwargs_text}}}'.encode()

    def parsed(rest_bytes: bytes):
        call = frames.parse(wire.parse_body(b'{"op":"oracle","name":"f","seq":1,' + rest_bytes))
        assert isinstance(call, frames.OracleCall) and call.kwargs == {"dict": []}
        return codec.decode(call.args)

    text, goal_text = codec.plain_text(state), codec.plain_text(goal)
    for args_text in (f'{{"list":[{text}]}}', f'{{"list":[{text},{goal_text}]}}', f'{{"list":[{text},{text}]}}'):
        got = process.known_args(rest(args_text), texts)
        assert got is not None and got == parsed(rest(args_text))
    assert texts[goal_text] == goal   # learnt from the call that sent it
    spaced = '{"tuple": [{"tuple":["1"]}]}'   # another text of a state: parsed alone, then known under it
    assert process.known_args(rest(f'{{"list":[{text},{spaced}]}}'), texts) == [state, (("1",),)]
    refused = [
        rest(f'{{"list":[{goal_text}]}}', '{"dict":[["k",1]]}'),                 # keywords
        rest(f'{{"list":[{text},{goal_text},{text}]}}'),                           # three arguments
        rest(f'{{"list":[{text},1,"v":{goal_text}]}}'),                           # not JSON: a key in a list
        rest(f'{{"list":[{text},{goal_text}] ,"x":1}}'),                          # the args object goes on
        rest(f'{{"list":[{text}, {goal_text}]}}'),                                # a space before the second
        rest(f'{{"list":[{text},{goal_text} ]}}'),                                # ... or after it
        rest(f'{{"list":[{text},[1]]}}'), rest(f'{{"list":[{text},{{"list":[]}}]}}'),   # not a state
        rest(f'{{"list":[{text},{{"tuple":["é"]}}]}}'), rest('{"list":[]}'),
        rest(f'{{"tuple":[{text}]}}'), rest(f'{{"list":[{text}]}}')[:-1] + b" }",
    ]
    for forged in refused:
        assert process.known_args(forged, texts) is None, forged


def test_threads_calling_an_isolated_helper_at_once_each_get_their_own_answer():
    """A thread pool evaluating an isolated helper (a heuristic over many states): two threads exchanged with the
    parent at once, one skipped the other's reply as an old one, and the other waited for it until the case's wall
    limit (the submission's whole budget, every later case skipped). Each exchange is now one thread's at a time."""
    source = ("import concurrent.futures\n"
              "def helper(x):\n    return -x\n"
              "def uses(n):\n"
              "    with concurrent.futures.ThreadPoolExecutor(8) as pool:\n"
              "        return list(pool.map(helper, range(n)))\n")
    reference = Reference(lambda x: x * 2)
    [outcome] = run(source, [case("uses(300)")], reference)
    assert outcome.status == "ok", outcome.error   # before: a timeout at the wall limit
    assert value(outcome) == [x * 2 for x in range(300)]
    assert sorted(args[0] for _, args, _ in reference.calls) == list(range(300))   # each asked once
