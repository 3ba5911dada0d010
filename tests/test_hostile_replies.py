"""What the reference answered an exercise must not outlive it, even where the exercise's own code tells its fork
that it asked nothing. An exercise that isolates helpers (the reference answers their calls) ends its fork: the
runtime reads that from the request (`isolate`) and from its own state (`Child.replies`), both of which a case
reaches through frames. A case that keeps the reference's answers where no walk looks (the runtime's own object),
takes `isolate` out of the request and clears `replies` has its fork checked as any other, found pristine, and
go on to the next exercise: the child does not protect itself from its student. The parent does not trust it
there: before an exercise that does not isolate every helper the reference answered the child, it replaces the
whole child (process.Sandbox._retire_for), so the kept answers reach only an exercise whose calls the reference
answers anyway.
"""

from __future__ import annotations

import time

from grader import codec
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import statement

KEEPER = """
import os, sys
def helper(x):
    return -1
def _runtime():
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "run_cases":
            return frame.f_locals["self"], frame.f_locals["request"]
        frame = frame.f_back
def _asked_nothing(child, request):
    request.pop("isolate", None)
    child.replies = None
def ask():
    answer = helper(1)
    child, request = _runtime()
    vars(child)["kept"] = dict(child.answers)   # the reference's answers to this exercise's calls
    _asked_nothing(child, request)
    return answer, os.getpid()
def kept():
    child, request = _runtime()
    _asked_nothing(child, request)
    return sorted(key[0] for key in vars(child).get("kept", {})), os.getpid()
"""


def _value(cases: list[CaseRequest], sandbox: Sandbox, isolate: tuple[str, ...]) -> object:
    [outcome] = sandbox.run_exercise(cases, isolate, lambda name, args, kwargs: 42, time.monotonic() + 60,
                                     more=True)
    assert outcome.status == "ok", outcome.error
    return codec.decode(outcome.value)


def test_answers_kept_by_a_fork_told_it_asked_nothing_reach_only_an_exercise_that_isolates_their_helpers():
    with Sandbox([statement(KEEPER, count=1, cell=1)], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        answer, asked_in = _value([CaseRequest(id="ask", code="ask()", timeout=2.0)], sandbox, ("helper",))
        assert answer == 42   # the reference answered
        child = sandbox.process
        kept, kept_in = _value([CaseRequest(id="kept", code="kept()", timeout=2.0)], sandbox, ("helper",))
        assert (kept, kept_in) == (["helper"], asked_in)   # the same fork went on, the answers with it
        assert sandbox.process is child
        kept, _ = _value([CaseRequest(id="kept2", code="kept()", timeout=2.0)], sandbox, ())
        assert kept == []   # a fresh child: helper is the notebook's own here
        assert sandbox.process is not child
