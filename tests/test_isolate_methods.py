"""`isolate` for methods: the child stands in for a method of the student's class with the reference's answer,
computed by the parent from data the child reads off the student's objects. Real children, real rubrics."""

from __future__ import annotations

import time

import pytest

from grader import codec
from grader.syntax.calls import isolated_call
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

SOURCE = '''
class Node:
    def __init__(self, state):
        self.state = state

class Puzzle:
    def __init__(self, goal):
        self.goal = goal
    def h(self, node):
        return h2(self, node)          # AIMA upstream: a NameError
    def solve(self, state):
        return self.h(Node(state)) + 1

def own_h_after():
    return Puzzle.__dict__["h"].__name__
'''
METHODS = {"Puzzle.h": {"params": ["self", "node"], "inputs": ["node.state", "self.goal"]}}


def run(cases, isolate=(), methods=None, oracle=None):
    statements = [{"code": SOURCE, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    with Sandbox(statements, {}, ProcessLimits(load_seconds=5)) as sandbox:
        sandbox.load(time.monotonic() + 60)
        return sandbox.run_exercise(cases, isolate, oracle or (lambda *a: None), time.monotonic() + 60,
                                    methods=methods)


def test_an_isolated_method_is_answered_by_the_reference_from_data_read_off_the_students_objects():
    asked = []

    def oracle(name, args, kwargs):
        asked.append((name, args))
        state, goal = args
        return abs(state - goal)

    [outcome] = run([CaseRequest("c1", "Puzzle(10).solve(3)")], ["Puzzle.h"], METHODS, oracle)
    assert outcome.status == "ok" and codec.decode(outcome.value) == 8
    assert asked == [("Puzzle.h", [3, 10])]


def test_without_isolation_the_students_method_runs_and_fails():
    [outcome] = run([CaseRequest("c1", "Puzzle(10).solve(3)")])
    assert outcome.status == "error" and "h2" in outcome.error["message"]


def test_each_case_gets_the_stand_in_named_like_the_method():
    outcomes = run([CaseRequest("c1", "Puzzle(10).solve(3)"), CaseRequest("c2", "own_h_after()")],
                   ["Puzzle.h"], METHODS, lambda name, args, kwargs: 0)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    # Set for each case (and the student's method put back after it): what the case reads is the stand-in.
    assert codec.decode(outcomes[1].value) == "h"


def test_the_call_is_split_into_what_the_child_computes_and_what_the_reference_evaluates():
    class Reference:
        def h(self, node):
            return 0

    call = isolated_call("Reference.h", "Reference(node.state, self.goal).h(Node(node.state))", Reference.h)
    assert call.params == ("self", "node")
    assert call.inputs == ("node.state", "self.goal")
    assert call.code == "Reference(__m0, __m1).h(Node(__m0))"
    with pytest.raises(ValueError, match="reads none of the method's parameters"):
        isolated_call("Reference.h", "Reference((1, 2)).h(None)", Reference.h)


def test_a_kept_reply_answers_only_the_helper_that_gave_it_even_under_the_same_name():
    """The parent keeps the reference's replies for the whole batch (every exercise, every submission). Two
    exercises may isolate the same method with different calls (a rubric's `call:` over h1 for one, h2 for the
    other): the same name and the same arguments, two answers. A reply is kept under what answers the helper
    (its call), not only its name, so one exercise's reply never answers the other's question."""
    from grader.sandbox.process import PureOracle, Replies

    replies = Replies()
    by_distance = PureOracle(lambda name, args, kwargs: abs(args[0] - args[1]), replies,
                             {"Puzzle.h": "abs(node.state - self.goal)"})
    by_constant = PureOracle(lambda name, args, kwargs: 100, replies, {"Puzzle.h": "100"})
    [first] = run([CaseRequest("c1", "Puzzle(10).solve(3)")], ["Puzzle.h"], METHODS, by_distance)
    [second] = run([CaseRequest("c1", "Puzzle(10).solve(3)")], ["Puzzle.h"], METHODS, by_constant)
    [again] = run([CaseRequest("c1", "Puzzle(10).solve(3)")], ["Puzzle.h"], METHODS, by_distance)
    assert [codec.decode(o.value) for o in (first, second, again)] == [8, 101, 8]
    assert len(replies.entries) == 2
