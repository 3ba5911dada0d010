"""The parent trusts no frame: student code in a real child forges frames on the wire, and the parent's clock,
schema and oracle rules still decide. Nothing here asserts wall time: limits are far apart (a case that runs
4 s under a 1 s limit), so only the status is checked, and it holds on a loaded machine."""

from __future__ import annotations

import threading
import time

import pytest

from grader import codec, incidents
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import RUN_SECONDS, run_cases, statements

# Student code finds the wire the way an attacker would: by writing to every descriptor it may have.
FORGE = '''
import json, os, signal, struct, time

def _frame(message):
    body = json.dumps(message).encode() if not isinstance(message, bytes) else message
    return struct.pack(">I", len(body)) + body

def _forge(message):
    data = _frame(message)
    for fd in range(3, 64):
        try:
            os.write(fd, data)
        except OSError:
            pass
'''


def case(code: str, timeout: float = 1.0, case_id: str = "c1", **fields) -> CaseRequest:
    return CaseRequest(id=case_id, code=code, timeout=timeout, **fields)


def run(sources: list[str], cases: list[CaseRequest], isolate=(), oracle=None,
        limits: ProcessLimits = ProcessLimits(load_seconds=5)):
    ran = run_cases(statements(*sources), cases, isolate=isolate, oracle=oracle, limits=limits,
                    load_deadline=time.monotonic() + RUN_SECONDS)
    return ran.report, ran.outcomes


def test_a_forged_forked_frame_does_not_rewind_the_case_clock():
    """The attack that made a 4 s case under a 1 s limit pass: the soft alarms ignored, a `forked` frame forged
    every 0.2 s so the parent restarted its clock, then the right answer. The case computes all along: 4 s of
    CPU time, which the parent reads from the kernel. The runtime says `forked` once per exercise, before its
    first case: one during a case is forged, and costs it an error at once."""
    slow = FORGE + '''
def answer():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGPROF, signal.SIG_IGN)
    for _ in range(20):
        _forge({"op": "forked", "pid": os.getpid()})
        spin = time.process_time() + 0.2
        while time.process_time() < spin:
            pass
    return 42
'''
    _, outcomes = run([slow], [case("answer()", timeout=1.0)])
    assert outcomes[0].status == "error" and "while running a case" in outcomes[0].error["message"], outcomes[0]
    assert outcomes[0].value is None


@pytest.mark.parametrize("seconds", ["1" + "0" * 400, "1e400", "-1", "NaN", '"fast"', "[1]"])
def test_a_forged_seconds_field_costs_that_case_an_error_and_the_next_case_runs(seconds):
    forged = FORGE + f'''
def forger():
    _forge(b'{{"op":"result","case":"c1","status":"ok","value":1,"seconds":{seconds}}}')
    time.sleep(0.5)
    return 1

def honest():
    return 2
'''
    _, outcomes = run([forged], [case("forger()"), case("honest()", case_id="c2")])
    assert outcomes[0].status == "error", outcomes[0]
    assert outcomes[0].error["type"] == "ProtocolError"
    assert outcomes[1].status == "ok" and codec.decode(outcomes[1].value) == 2


def test_a_forged_result_for_the_running_case_is_just_its_answer_and_times_are_the_parents():
    forged = FORGE + '''
def forger():
    _forge({"op": "result", "case": "c1", "status": "ok", "value": 7, "seconds": 0.0})
    return 1
'''
    _, outcomes = run([forged], [case("forger()")])
    assert outcomes[0].status == "ok" and codec.decode(outcomes[0].value) == 7   # what it sent is its answer
    assert outcomes[0].seconds > 0.0                                             # measured by the parent


def test_forged_progress_frames_do_not_renew_the_load_deadline():
    """A top-level statement that ignores the soft alarm and keeps saying it is making progress is stopped at
    the load budget, left out, and the rest of the notebook loads."""
    hang = FORGE + '''
signal.signal(signal.SIGALRM, signal.SIG_IGN)
for _ in range(300):          # 30 s at most, so an unfixed grader still ends
    _forge({"op": "progress", "index": 0})
    time.sleep(0.1)
Finished = True
'''
    define = "def f():\n    return 5\n"
    report, outcomes = run([hang, define], [case("f()")], limits=ProcessLimits(load_seconds=1.0))
    assert "Finished" not in report.names
    assert "f" in report.names and codec.decode(outcomes[0].value) == 5
    assert any("did not finish" in warning.text for warning in report.warnings), report.warnings


def test_the_load_phase_stops_at_the_submissions_deadline():
    hang = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    with Sandbox(statements(hang), {}, ProcessLimits(load_seconds=30)) as sandbox:
        from grader.sandbox.process import SandboxError
        with pytest.raises(SandboxError, match="time budget"):
            sandbox.load(time.monotonic() + 1.0)


def test_an_oracle_request_for_a_helper_this_run_does_not_isolate_is_refused():
    asked = []
    forged = FORGE + '''
def forger():
    _forge({"op": "oracle", "name": "secret", "args": [], "kwargs": {"dict": []}, "seq": 1})
    time.sleep(0.5)
    return 1
'''
    _, outcomes = run([forged], [case("forger()")], isolate=(), oracle=lambda *call: asked.append(call))
    assert asked == []
    assert outcomes[0].status == "error" and "does not isolate" in outcomes[0].error["message"]


def test_a_case_may_call_the_isolated_helpers_at_most_its_limit():
    calls = []
    source = "def helper(x):\n    return 'broken'\n\ndef uses():\n    return sum(helper(i) for i in range(50))\n"

    def oracle(name, args, kwargs):
        calls.append(args)
        return 1

    _, outcomes = run([source], [case("uses()", oracle_calls=5), case("helper(0)", case_id="c2", oracle_calls=5)],
                      isolate=["helper"], oracle=oracle)
    assert outcomes[0].status == "error" and "more than 5 times" in outcomes[0].error["message"]
    assert calls == [[0], [1], [2], [3], [4], [0]]   # five, then the next case's own call
    assert outcomes[1].status == "ok" and codec.decode(outcomes[1].value) == 1   # the next case starts afresh


def test_a_case_may_call_the_isolated_helpers_at_most_its_limit_when_every_answer_is_kept():
    """Kept answers go out from a short loop (Sandbox._answer_kept) with the same count: a run of them ends at the
    limit, and a call the parent has not kept, between kept ones, is answered afresh and counted too."""
    from grader.sandbox.process import PureOracle
    calls = []
    source = ("def helper(x):\n    return 'broken'\n\n"
              "def uses(n, new=-1):\n    return sum(helper(i) for i in [*range(n // 2), new, *range(n // 2, n)])\n")

    def oracle(name, args, kwargs):
        calls.append(args[0])
        return 1

    kept = PureOracle(oracle)
    _, first = run([source], [case("uses(40)", oracle_calls=100)], isolate=["helper"], oracle=kept)
    assert first[0].status == "ok" and codec.decode(first[0].value) == 41 and len(calls) == 41
    _, within = run([source], [case("uses(40, -2)", oracle_calls=41)], isolate=["helper"], oracle=kept)
    _, beyond = run([source], [case("uses(40, -3)", oracle_calls=40)], isolate=["helper"], oracle=kept)
    assert within[0].status == "ok" and codec.decode(within[0].value) == 41
    assert beyond[0].status == "error" and "more than 40 times" in beyond[0].error["message"]
    assert calls[41:] == [-2, -3]   # only the new calls reached the oracle


def test_a_case_may_send_the_isolated_helpers_at_most_its_bytes_kept_or_not():
    """The count of calls alone would let each be a frame of tens of MB for the parent to parse and decode: the
    bytes are capped too, per case, whether the parent answers a call from its kept replies or afresh."""
    from grader.sandbox.process import PureOracle
    calls = []
    source = ("def helper(x):\n    return 'broken'\n\n"
              "def uses(size):\n    return sum(helper('x' * size + str(i)) for i in range(10))\n")

    def oracle(name, args, kwargs):
        calls.append(args)
        return 1

    kept = PureOracle(oracle)
    big, small = case("uses(10_000)", oracle_bytes=50_000), case("uses(10)", case_id="c2", oracle_bytes=50_000)
    _, first = run([source], [big, small], isolate=["helper"], oracle=kept)
    assert first[0].status == "error" and "more than 50,000 bytes" in first[0].error["message"]
    assert len(calls) == 4 + 10 and first[1].status == "ok" and codec.decode(first[1].value) == 10
    _, again = run([source], [big], isolate=["helper"], oracle=kept)   # the same calls, answered as kept
    assert again[0].status == "error" and "more than 50,000 bytes" in again[0].error["message"]
    assert len(calls) == 4 + 10   # the big case's four calls were answered as kept: none reached the oracle


def test_a_child_that_floods_oracle_requests_and_never_reads_cannot_stall_the_parent():
    """Each answer is 200 kB and the child never reads one: with blocking writes the parent would wait forever
    once the pipe is full. The sandbox runs in a thread so that a stalled parent fails the test instead of
    hanging it."""
    flood = FORGE + '''
def flood():
    request = _frame({"op": "oracle", "name": "helper", "args": {"list": [1]}, "kwargs": {"dict": []}, "seq": 1})
    for fd in range(3, 64):
        try:
            for _ in range(100000):
                os.write(fd, request)
        except OSError:
            pass
    return 1

def helper(x):
    return 0
'''
    done: list = []

    def grade():
        done.append(run([flood], [case("flood()", oracle_calls=10**6)], isolate=["helper"],
                        oracle=lambda name, args, kwargs: "x" * 200_000)[1])

    worker = threading.Thread(target=grade, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the parent blocked writing to a child that does not read"
    assert done[0][0].status in ("error", "timeout"), done[0][0]


def test_a_frame_that_is_not_json_costs_the_running_case_an_error():
    forged = FORGE + '''
def forger():
    _forge(b"\\xff\\xfe not json")
    time.sleep(0.5)
    return 1

def honest():
    return 2
'''
    _, outcomes = run([forged], [case("forger()"), case("honest()", case_id="c2")])
    assert outcomes[0].status == "error" and "malformed" in outcomes[0].error["message"]
    assert codec.decode(outcomes[1].value) == 2


def test_a_frame_outside_the_schema_costs_the_running_case_an_error():
    forged = FORGE + '''
def forger():
    _forge({"op": "result", "case": "c1", "status": "ok", "value": 1, "output": "x" * 10_000_000})
    time.sleep(0.5)
    return 1
'''
    _, outcomes = run([forged], [case("forger()")])
    assert outcomes[0].status == "error" and "characters" in outcomes[0].error["message"]


PATCHED = '''
import builtins, json, math, os, random, sys

def _liar(real, lie):
    def patched(*args, **kwargs):
        if sys._getframe(1).f_code.co_filename.endswith(("runtime.py", "codec.py", "wire.py")):
            return lie(*args, **kwargs)
        return real(*args, **kwargs)
    return patched

def _refuse(*args, **kwargs):
    raise RuntimeError("patched")

for name, lie in (("len", lambda *a: 0), ("isinstance", lambda *a: True), ("repr", lambda *a: "lie"),
                  ("sorted", lambda *a, **k: []), ("__import__", _refuse), ("compile", _refuse)):
    setattr(builtins, name, _liar(getattr(builtins, name), lie))
os.write = _liar(os.write, lambda fd, data: os.write(fd, b"garbage"))
math.isfinite = _liar(math.isfinite, lambda x: False)
random.seed = json.dumps = json.loads = _refuse
sys.stdout = sys.__stdout__ = sys.stderr = sys.__stderr__ = None
'''


def test_builtins_patched_to_lie_to_the_runtime_do_not_change_a_correct_answer():
    """Everything the runtime, codec and wire use, patched to lie to them alone: a correct answer (a set, a
    tuple of floats, an opaque object) still arrives as it is, and so does an error."""
    answer = "def answer():\n    return ({1.5, 2}, (0.25, 'a'), [None])\n\ndef fails():\n    return 1 / 0\n"
    _, outcomes = run([PATCHED, answer], [case("answer()"), case("fails()", case_id="c2")])
    assert outcomes[0].status == "ok", outcomes[0]
    assert codec.decode(outcomes[0].value) == ({1.5, 2}, (0.25, "a"), [None])
    assert outcomes[1].status == "error" and outcomes[1].error["type"] == "ZeroDivisionError"
    assert "return 1 / 0" in outcomes[1].error["traceback"]


def test_builtins_patched_in_a_case_last_only_that_case():
    source = "import builtins\n\ndef patch():\n    builtins.len = lambda obj: 0\n    return len([1, 2])\n\n" \
             "def count():\n    return len([1, 2, 3])\n"
    _, outcomes = run([source], [case("patch()"), case("count()", case_id="c2")])
    assert codec.decode(outcomes[0].value) == 0          # the student's own answer, as patched
    assert codec.decode(outcomes[1].value) == 3          # the next case runs on the real builtins


# A call's frame as the runtime writes it (Child.ask: its keys in one order, compact), forged with other arguments.
def _call_frame(args: str, name: str = "helper", seq: int = 1) -> str:
    return '{"op":"oracle","name":"%s","seq":%d,"args":%s,"kwargs":{"dict":[]}}' % (name, seq, args)


def _forging(frame: str) -> str:
    """A notebook whose forger() writes `frame` whole as its one frame, beside the isolated helper it may name."""
    return FORGE + '''
def helper(x):
    return 0

def forger():
    _forge(%r.encode())
    return 1
''' % frame


def test_a_call_whose_arguments_the_codec_refuses_ends_the_case():
    """The runtime encodes a call's arguments with the parent's codec and raises in the student's own call what
    it cannot encode, so it never sends arguments the codec refuses. Answered with an error while the case went
    on, such calls had the parent parse frame after frame of raw lists (1.5 MB, 0.17 s each) up to oracle_bytes,
    off the case's clock: 90 s of the parent's CPU for one notebook."""
    forged = _forging(_call_frame("[[1]]"))
    ran = run_cases(statements(forged), [case("forger()")], isolate=["helper"], oracle=lambda *_: 0,
                    limits=ProcessLimits(load_seconds=5), load_deadline=time.monotonic() + RUN_SECONDS)
    outcome = ran.outcomes[0]
    assert outcome.status == "error" and outcome.error["type"] == "ProtocolError", outcome
    message = outcome.error["message"]
    assert "arguments the grader cannot read" in message and "bare JSON list" in message


def test_a_call_over_the_case_bytes_is_refused_before_it_is_parsed():
    """A call frame's bytes count against the case's oracle_bytes before the parent parses it: a frame that
    would pass them ends the case unparsed (here it is not even JSON, which a parse would have found)."""
    forged = FORGE + '''
def helper(x):
    return 0

def forger():
    _forge((%r + "[" * 60_000).encode())
    return 1
''' % _call_frame("")[:-len(',"kwargs":{"dict":[]}}')]
    _, outcomes = run([forged], [case("forger()", oracle_bytes=50_000)], isolate=["helper"], oracle=lambda *_: 0)
    assert outcomes[0].status == "error" and "more than 50,000 bytes" in outcomes[0].error["message"], outcomes[0]


def test_a_call_not_spelt_as_the_runtime_writes_it_is_forged():
    """The runtime writes a call's keys in one order, once each: a call spelt otherwise (keys reordered, a
    second name) is forged, whatever its arguments, and costs the case, whether or not its replies may be kept
    (a PureOracle's first split its head off: the second name slipped past it)."""
    spellings = ['{"name":"helper","op":"oracle","seq":1,"args":{"list":[1]},"kwargs":{"dict":[]}}',
                 _call_frame('{"list":[1]},"name":"other"')]
    from grader.sandbox.process import PureOracle
    oracles = (lambda *_: 0, PureOracle(lambda *_: 0))
    for spelt, oracle in [(spelt, oracle) for spelt in spellings for oracle in oracles]:
        forged = _forging(spelt)
        ran = run_cases(statements(forged), [case("forger()")], isolate=["helper", "other"], oracle=oracle,
                        limits=ProcessLimits(load_seconds=5), load_deadline=time.monotonic() + RUN_SECONDS)
        outcome = ran.outcomes[0]
        assert outcome.status == "error" and "malformed message" in outcome.error["message"], (spelt, outcome)
        assert incidents.FORGED_FRAME in {seen.kind for seen in ran.sandbox.seen}, spelt


def test_a_check_case_answer_the_codec_could_not_decode_is_never_parsed():
    """A check case's answer has no size bound of its own (a check judges it, whatever its size), but one the
    codec cannot decode (more than max_items items) is never the runtime's: refused unparsed by its commas and
    brackets (frames.readable). Forged with 9 million one-letter strings (36 MB), it cost the parent a parse and
    hundreds of MB before the codec refused it."""
    forged = FORGE + '''
def forger():
    _forge(('{"op":"result","case":"c1","status":"ok","value":{"list":[' + ",".join(['"U"'] * 9_000_000)
            + ']},"probes":{},"output":""}').encode())
    time.sleep(1)
    return 1
'''
    # Its own time is not what is tested: building 36 MB took 0.22 s of CPU and 1.7 s beside other work (load ~10).
    _, outcomes = run([forged], [case("forger()", timeout=30.0)])
    assert outcomes[0].status == "ok" and outcomes[0].value is None and outcomes[0].unread > 9_000_000, \
        (outcomes[0].status, outcomes[0].unread, type(outcomes[0].value))
