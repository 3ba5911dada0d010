"""A hidden case's input reaches the child only once the case before it answered: no case can hold a later hidden
case's input (to work on it on its own clock), whatever it reads, writes or forges. A public part comes whole: its
inputs are the student's anyway (the kit carries every public case as the sandbox receives it), so a notebook can
already do a later public case's work on an earlier case's clock from the kit's copy, and releasing those one by one
bought no trust for a round trip a case."""

from __future__ import annotations

import time

from pathlib import Path

import pytest

from grader import codec, incidents
from grader.judge.grading import build_requests
from grader.judge.options import Options
from grader.kit.kit import build_kit
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import RUN_SECONDS, run_cases, statement

RUBRICS = sorted((Path(__file__).resolve().parents[1] / "rubrics").glob("*.yaml"))

# What a case can see of the runtime's case requests: every dict the collector tracks that looks like one.
SEEN = """
import gc
def seen():
    return sorted(held["id"] for held in gc.get_objects()
                  if type(held) is dict and isinstance(held.get("id"), str) and "values" in held)
def echo(x):
    return x
"""


def test_a_hidden_case_holds_no_later_cases_input():
    cases = [CaseRequest("c0", "seen()", hidden=True),
             CaseRequest("c1", "echo(__v0)", values={"__v0": codec.encode([4, 5])}, hidden=True),
             CaseRequest("c2", "seen()", hidden=True),
             CaseRequest("c3", "echo(__v0)", values={"__v0": codec.encode(6)}, hidden=True)]
    ran = run_cases([statement(SEEN)], cases)
    assert [o.status for o in ran.outcomes] == ["ok"] * 4
    assert codec.decode(ran.outcomes[0].value) == ["c0"]
    assert "c3" not in codec.decode(ran.outcomes[2].value)
    assert [codec.decode(ran.outcomes[1].value), codec.decode(ran.outcomes[3].value)] == [[4, 5], 6]


def test_a_public_part_arrives_whole_and_its_hidden_part_case_by_case():
    """One exercise of both: its public part is one request with every public case (their inputs are in the
    kit), then its hidden part as its own request, case by case."""
    cases = [CaseRequest("p0", "seen()"), CaseRequest("p1", "echo(__v0)", values={"__v0": codec.encode(1)}),
             CaseRequest("p2", "seen()"),
             CaseRequest("h0", "seen()", hidden=True),
             CaseRequest("h1", "echo(__v0)", values={"__v0": codec.encode(2)}, hidden=True),
             CaseRequest("h2", "seen()", hidden=True)]
    ran = run_cases([statement(SEEN)], cases)
    assert [o.status for o in ran.outcomes] == ["ok"] * 6
    assert codec.decode(ran.outcomes[0].value) == ["p0", "p1", "p2"]
    assert {"h1", "h2"}.isdisjoint(codec.decode(ran.outcomes[3].value))
    assert [codec.decode(ran.outcomes[1].value), codec.decode(ran.outcomes[4].value)] == [1, 2]


@pytest.mark.parametrize("rubric", RUBRICS, ids=lambda path: path.stem)
def test_every_case_the_grader_sends_whole_is_in_the_students_kit(rubric: Path, grader_cache: Path):
    """What makes a public part's release case by case worthless: each case the grader does not mark hidden, of
    every bundled rubric, is in the rubric's kit exactly as the sandbox gets it (call text, inputs, settings,
    probes, reduce, limit), so a notebook can hard-code it and do its work on any earlier case's clock."""
    plan = build_plan(load_rubric(rubric), grader_cache)
    kit = {case["id"]: case for exercise in build_kit(rubric, cache=grader_cache)["exercises"]
           for case in exercise["cases"]}
    sent_whole = [request for exercise in plan.rubric.exercises
                  for request in build_requests(plan, exercise, plan.cases[exercise.id],
                                                exercise.function.split(".")[0], Options())
                  if not request.hidden]
    assert sent_whole
    for request in sent_whole:
        case = kit[request.id]
        assert (case["code"], case["values"], case["set"], case["probes"], case["reduce"], case["timeout"]) == (
            request.code, dict(request.values), dict(request.set), dict(request.probes), request.reduce,
            request.timeout)


# A literal input in a later case's call (the rubric's `inversions((8, 7, 6, 5, 4, 3, 2, 1, 0))`): its text, compiled
# by the parent with the case's other expressions, comes with that case too.
LITERAL = """
import gc
def leaked():
    needle = "(8, 7, " + "6, 5"
    for held in gc.get_objects():
        items = list(held) if type(held) in (dict, list, tuple) else ()
        for item in items:
            if any(type(text) is str and needle in text for text in (item if type(item) is tuple else (item,))):
                return True
    return False
def echo(x):
    return x
"""


def test_a_later_hidden_cases_literal_input_is_not_in_the_child_before_its_turn():
    cases = [CaseRequest("c0", "leaked()", hidden=True), CaseRequest("c1", "echo(1)", hidden=True),
             CaseRequest("c2", "echo((8, 7, 6, 5, 4, 3, 2, 1, 0))", hidden=True),
             CaseRequest("c3", "leaked()", hidden=True)]
    ran = run_cases([statement(LITERAL)], cases)
    assert [o.status for o in ran.outcomes] == ["ok"] * 4
    assert [codec.decode(o.value) for o in ran.outcomes] == [False, 1, (8, 7, 6, 5, 4, 3, 2, 1, 0), True]


def test_the_next_case_comes_through_the_stream_of_helper_answers():
    """In an isolated run the child reads the reference's answers through a buffered stream of the same pipe: the
    next case is read through it too, whatever it read ahead, and a case that asks nothing follows one that did."""
    source = "def helper(x):\n    return -1\ndef twice(x):\n    return helper(x) + helper(x + 1)\n"
    cases = [CaseRequest(f"c{n}", "twice(__v0)" if n != 2 else "__v0 * 3", values={"__v0": codec.encode(n)},
                         hidden=True) for n in range(5)]
    ran = run_cases([statement(source)], cases, isolate=("helper",), oracle=lambda name, args, kwargs: 10 * args[0])
    assert [o.status for o in ran.outcomes] == ["ok"] * 5, [o.error for o in ran.outcomes]
    assert [codec.decode(o.value) for o in ran.outcomes] == [10, 30, 6, 70, 90]


STEAL = """
import json, os, select, struct, sys
def _fds():
    frame = sys._getframe(1)
    while "self" not in frame.f_locals or not hasattr(frame.f_locals["self"], "response_fd"):
        frame = frame.f_back
    return frame.f_locals["self"].request_fd, frame.f_locals["self"].response_fd
def steal():
    request, response = _fds()
    body = json.dumps({"op": "result", "case": "c0", "status": "ok", "value": 1, "probes": {},
                       "output": ""}).encode()
    os.write(response, struct.pack(">I", len(body)) + body)   # its own answer, early: the next case comes now
    readable, _, _ = select.select([request], [], [], 5)
    return len(os.read(request, 1 << 16)) if readable else 0
def echo(x):
    return x
"""


def test_a_case_that_answers_early_and_takes_the_next_case_costs_the_next_case():
    """The first case writes its own answer, then reads the next case's frame off the pipe before the runtime can:
    it holds that input, but the next case's clock started with the early answer, and the runtime's own answer
    to the first case then arrives while the next case runs: a forged frame, the next case's loss. The grader
    neither hangs (the case after it still runs and answers) nor gives the next case its point."""
    cases = [CaseRequest("c0", "steal()", hidden=True),
             CaseRequest("c1", "echo(__v0)", values={"__v0": codec.encode(2)}, hidden=True),
             CaseRequest("c2", "echo(__v0)", values={"__v0": codec.encode(3)}, hidden=True)]
    with Sandbox([statement(STEAL)], {}, ProcessLimits(load_seconds=10)) as sandbox:
        sandbox.load(time.monotonic() + RUN_SECONDS)
        outcomes = sandbox.run_exercise(cases, (), lambda *a: None, time.monotonic() + RUN_SECONDS)
    assert outcomes[0].status == "ok" and codec.decode(outcomes[0].value) == 1   # its own word for itself
    assert outcomes[1].status in ("error", "timeout", "crash") and outcomes[2].status == "ok"
    assert any(seen.kind == incidents.FORGED_FRAME for seen in sandbox.seen)
