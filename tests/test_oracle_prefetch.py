"""Answers sent with a reply before the child asks (grader/sandbox/prefetch.py): a search that asks `h(e, goal)`
for the members e of each `neighbours` reply gets those answers with the reply, so the calls cost no round trip;
the answers are the very ones it would have got, a call whose text changed misses, and a hostile stream costs the
parent at most the case's bound. Real sandboxes; round trips are counted (the replies the parent writes), never
timed."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import codec
from grader.sandbox import prefetch, process
from grader.sandbox.process import CaseRequest, Outcome, ProcessLimits, PureOracle
from sandbox_run import run_cases, statements

# A graph search over states (tuples of rows of strs): the shape of Taoistic's A* with isolated next_states and
# manhattan. `neighbours` and `h` are the isolated helpers; the child's own versions are never called.
SEARCH = '''
def neighbours(state):
    return None

def h(state, goal):
    return None

def search(start, goal, limit):
    seen, frontier, order = {start}, [start], []
    while frontier and len(order) < limit:
        state = frontier.pop(0)
        order.append(state)
        for nxt in sorted(neighbours(state)):
            if nxt not in seen:
                seen.add(nxt)
                order.append(h(nxt, goal))
                frontier.append(nxt)
    return order

def mutated(start, goal, limit):
    seen, frontier, order = {start}, [start], []
    while frontier and len(order) < limit:
        state = frontier.pop(0)
        for nxt in sorted(neighbours(state)):
            if nxt not in seen:
                seen.add(nxt)
                order.append([h(nxt, goal), nxt, goal])
                frontier.append(nxt)
                if len(order) % 10 == 0:   # another goal, after the rule was learnt with this one
                    goal = (goal[0], (str(len(order)),) + goal[1][1:])
    return order

def flood(start, rounds):
    # Learns the rule honestly, then asks only for neighbours, never for h: everything prefetched is waste.
    goal = (("g",),)
    for nxt in sorted(neighbours(start))[:3]:
        h(nxt, goal)
    state, got = start, 0
    for i in range(rounds):
        got += len(neighbours((("x", str(i)),)))
    return got
'''


def neighbours(state: tuple) -> set:
    """Four states next to `state`: a cell changed, as a move would."""
    return {tuple(row if r else (str(int(row[0]) + d),) + row[1:] for r, row in enumerate(state))
            for d in (1, 2, 3, 4)} if state[0][0].isdigit() else {(("0",) + state[0][1:],) + state[1:]}


def h(state: tuple, goal: Any) -> int:
    return sum(a != b for row, other in zip(state, goal, strict=False) for a, b in zip(row, other, strict=False))


class Reference:
    """The reference's helpers, counting what the parent asked of them (asked and prefetched)."""

    def __init__(self, wide: int = 0) -> None:
        self.calls: list[tuple[str, list]] = []
        self.wide = wide

    def __call__(self, name: str, args: list, kwargs: dict) -> Any:
        self.calls.append((name, args))
        if name == "neighbours":
            if self.wide:
                return {(("x", f"{args[0][0][1]}-{i}"),) for i in range(self.wide)}
            return neighbours(*args)
        if type(args[1]) is list:
            return h(args[0], [tuple(row) for row in args[1]])
        return h(*args)


def replies_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every reply frame the parent writes, by seq: one per round trip, whichever path answered it."""
    seqs: list[int] = []
    frame = process._reply_frame

    def counting(seq: int, tail: bytes) -> bytes:
        seqs.append(seq)
        return frame(seq, tail)

    monkeypatch.setattr(process, "_reply_frame", counting)
    return seqs


def run(code: str, oracle: Any, **fields: Any) -> Outcome:
    case = CaseRequest(id="c1", code=code, timeout=10.0, **fields)
    ran = run_cases(statements(SEARCH), [case], isolate=["neighbours", "h"], oracle=oracle,
                    limits=ProcessLimits(load_seconds=5))
    [outcome] = ran.outcomes
    assert outcome.status == "ok", outcome
    return outcome


START, GOAL = (("0", "a"), ("b", "c")), (("5", "a"), ("b", "c"))


def test_a_prefetched_answer_is_used_fewer_round_trips_the_same_answers(monkeypatch):
    code = f"search({START!r}, {GOAL!r}, 400)"
    plain_trips = replies_counted(monkeypatch)
    plain = run(code, Reference())             # not a PureOracle: nothing is prefetched
    asked = len(plain_trips)
    plain_trips.clear()
    fetched = run(code, PureOracle(Reference()))
    assert codec.decode(fetched.value) == codec.decode(plain.value)
    assert asked > 150 and len(plain_trips) < asked / 2, (asked, len(plain_trips))


def test_an_argument_whose_text_changed_misses_and_is_asked(monkeypatch):
    code = f"mutated({START!r}, {GOAL!r}, 60)"
    trips = replies_counted(monkeypatch)
    reference = PureOracle(Reference())
    got = codec.decode(run(code, reference).value)
    # Each answer is h of the goal as it was when called, though h of the old goal was prefetched for the same
    # states: the changed text is another key, so the call went to the parent.
    assert len(got) == 60 and all(answer == h(state, goal) for answer, state, goal in got)
    # Prefetching still paid: fewer round trips than h calls, though each new goal is learnt again (3 calls).
    assert len({codec.plain_text(goal) for _, _, goal in got}) == 6 and len(trips) < len(got)


def test_a_hostile_stream_makes_the_parent_prefetch_at_most_the_cases_bound():
    reference = PureOracle(Reference(wide=200))
    run("flood((('0', 'a'),), 40)", reference, oracle_calls=60)
    calls = reference.answer.calls
    asked = 1 + 3 + 40
    prefetched = len(calls) - asked
    # At most PER_REPLY with each reply, and the case's oracle_calls in all: never more, whatever the replies.
    assert 0 < prefetched <= 60, prefetched
    # oracle_calls bounds the round trips (44 here), the answers sent ahead apart (README, the rubric's
    # `limits`): more answers than oracle_calls in all, and the case still ran to its end (run: status "ok").
    assert len(calls) > 60


def test_nothing_is_prefetched_for_helpers_whose_replies_are_not_sets(monkeypatch):
    source = ("def h(state, goal):\n    return None\n\n"
              "def walk(n):\n    return [h((str(i),), ('g',)) for i in range(n)]\n")
    reference = PureOracle(Reference())
    trips = replies_counted(monkeypatch)
    case = CaseRequest(id="c1", code="walk(30)", timeout=10.0)
    ran = run_cases(statements(source), [case], isolate=["h"], oracle=reference, limits=ProcessLimits(load_seconds=5))
    assert ran.outcomes[0].status == "ok" and len(trips) == 30 and len(reference.answer.calls) == 30


_CELL = st.one_of(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=4),
                  st.integers(-99, 10**6))
_STATE = st.lists(st.lists(_CELL, min_size=1, max_size=4).map(tuple), min_size=1, max_size=4).map(tuple)
_OTHER = st.one_of(_STATE, _CELL, st.tuples(_CELL, _CELL))


@settings(max_examples=300, deadline=None)
@given(member=_STATE, others=st.lists(_OTHER, max_size=3), where=st.sampled_from([prefetch.FIRST, prefetch.LAST]))
def test_a_prefetched_calls_text_is_the_childs_own_text_of_that_call(member, others, where):
    """The key the child's memo gets for a prefetched call is, byte for byte, the one its own call makes."""
    if not others:
        where = prefetch.ONLY
    args = [member, *others] if where != prefetch.LAST else [*others, member]
    other_text = codec.plain_text(others)
    assert other_text is not None
    inner = other_text[len('{"list":['):-len("]}")].encode()
    if any(name in other_text for name in ('"op"', '"name"', '"seq"')) or \
            any(name in codec.plain_text(member) for name in ('"op"', '"name"', '"seq"')):
        return   # never prefetched (the next test)
    values = prefetch._values(inner)
    assert values == tuple(others)
    rule = prefetch.Rule("neighbours", "h", where, inner, values)
    made = prefetch._call(rule, codec.plain_text(member).encode(), member)
    child = codec.call_text(tuple(args), {})
    assert made is not None and child is not None
    rest, inner_text, got = made
    assert got == args
    assert '{"list":[' + inner_text.decode() + "]}" == child
    assert rest == f'"args":{child},"kwargs":{{"dict":[]}}}}'.encode()


def test_a_text_that_names_a_member_of_the_frames_head_is_never_a_prefetched_calls():
    """A kept call's rest never holds `"op"`, `"name"` or `"seq"` (process.Heard.keeps): neither a member's text
    nor the other arguments' may bring one into a prefetched call's."""
    assert prefetch._values(b'"seq"') is None and prefetch._values(b'"a"') == ("a",)
    tail = codec.pack({(("seq", "1"),), (("a", "1"),)})
    assert tail is not None
    found = prefetch.members_of("neighbours", tail)
    assert found is not None and found.values == ((("a", "1"),),)


def test_other_arguments_are_taken_only_in_the_text_the_runtime_writes_for_them():
    """A prefetched reply is kept for the batch under its call's bytes: they must parse to the arguments it
    answers. A text the runtime never writes (a later key that wins when parsed, spaces, a list) makes no rule."""
    goal = codec.plain_text((("1", "2"), ("3", "*")))
    assert goal is not None
    assert prefetch._values(goal.encode()) == ((("1", "2"), ("3", "*")),)
    assert prefetch._values(goal.encode() + b",3") == ((("1", "2"), ("3", "*")), 3)
    for other in (b'1],"list":[2', b" 1", b'{"tuple": ["a"]}', b'{"list":[1]}', b"1,", b'"\\u0061"'):
        assert prefetch._values(other) is None, other


def _still_thread(monkeypatch):
    """The grading thread's run-queue time and CPU time held still, so that only what a test moves moves: a busy
    machine may keep the test's own thread waiting for a CPU between two readings, which the share counts back."""
    monkeypatch.setattr(process.cpuclock, "own_waiting", lambda: 0.0)
    monkeypatch.setattr(process.time, "thread_time", lambda: 100.0)


def test_answers_sent_ahead_never_shorten_the_time_the_reference_has_for_the_calls_asked(monkeypatch):
    _still_thread(monkeypatch)
    clock = process._CaseClock(1.0, 0.0, None)
    clock.paused(5.0)                  # answering ahead used its whole share
    clock.prefetch_spent = 5.0
    assert clock.prefetch_seconds() <= 0 and clock.reference_seconds() == 1.0
    clock.paused(9.5)                  # and the calls asked theirs, but for half a second
    clock.cpu_base -= 9.5              # computing all the while (the thread's CPU time since the first answer)
    assert clock.reference_seconds() == 0.5


def test_the_wall_time_the_parent_spent_off_its_cpu_is_not_the_references_share(monkeypatch):
    """The share of the calls asked (10 times the limit) is the parent's work, so it is spent only once the grading
    thread's CPU time since the case's first computed answer is: wall time its thread waited (a busy machine, the
    GIL, a page read back in) leaves the share whole."""
    _still_thread(monkeypatch)
    clock = process._CaseClock(1.0, 0.0, None)
    assert clock.reference_seconds() == 1.0
    clock.paused(11.0)                 # more than the share's wall time answering, next to no CPU time
    assert clock.reference_seconds() == 1.0
    clock.cpu_base -= 9.7              # now 9.7 s of CPU time since the first answer: 0.3 s of the share is left
    assert 0.25 < clock.reference_seconds() <= 0.3


def test_the_parents_work_for_one_reply_is_bounded_whatever_the_rules():
    """Many rules on one trigger and replies whose calls the child holds already: the parent looks at no more than
    LOOKED calls for one reply, sent or not, and keeps at most PER_REPLY members of a reply."""
    hooks = prefetch.Prefetch(frozenset({"f", "g", "h"}))
    hooks.start_case(10**6)
    states = {(("s", str(i)),) for i in range(500)}
    tail = codec.pack(states)
    assert tail is not None
    found = prefetch.members_of("f", tail)
    assert found is not None and len(found.texts) == prefetch.PER_REPLY
    for helper, where in (("g", prefetch.FIRST), ("h", prefetch.FIRST), ("g", prefetch.LAST), ("f", prefetch.ONLY)):
        hooks.rules[("f", helper, where)] = prefetch.Rule("f", helper, where, b"1", (1,))
    hooks.triggers = frozenset({"f"})
    looked: list[bytes] = []

    def held(helper: str, rest: bytes, args: list) -> bytes | None:
        looked.append(rest)
        return None   # as if each were refused: nothing is sent, so only LOOKED stops the walk

    assert hooks.answers("f", tail, held) == []
    assert len(looked) == prefetch.LOOKED


def test_a_run_isolating_one_helper_learns_no_rules(monkeypatch):
    """Only a rule whose helper is another than its trigger sends answers ahead: a run isolating one helper never
    could, so the parent does not read its replies' members nor match its calls against them (int-tiles' search
    isolates next_states alone: ~25 us of the parent's CPU per computed call, for nothing)."""
    made: list[frozenset[str]] = []
    real = process.Prefetch

    def counted(isolate: frozenset[str]) -> prefetch.Prefetch:
        made.append(isolate)
        return real(isolate)

    monkeypatch.setattr(process, "Prefetch", counted)
    trips = replies_counted(monkeypatch)
    source = SEARCH.replace("order.append(h(nxt, goal))", "order.append(nxt)")
    reference = PureOracle(Reference())
    case = CaseRequest(id="c1", code=f"search({START!r}, {GOAL!r}, 200)", timeout=10.0)
    ran = run_cases(statements(source), [case], isolate=["neighbours"], oracle=reference,
                    limits=ProcessLimits(load_seconds=5))
    assert ran.outcomes[0].status == "ok" and made == []
    assert len(trips) == len(reference.answer.calls) > 20   # one round trip per call, nothing sent ahead
    assert not prefetch.can_prefetch(frozenset({"neighbours"}))
    assert prefetch.can_prefetch(frozenset({"neighbours", "h"}))


class Hanging(Reference):
    """A reference whose 20th call of h never ends (until the grader's alarm stops it; by then the rule is learnt
    and h's calls are answers sent ahead); asked again, that call answers."""

    def __init__(self) -> None:
        super().__init__()
        self.hanging: list[Any] = []

    def __call__(self, name: str, args: list, kwargs: dict) -> Any:
        if name == "h" and sum(called == "h" for called, _ in self.calls) == 19:
            self.calls.append((name, args))
            self.hanging = args
            return self.stall(args)
        return super().__call__(name, args, kwargs)

    def stall(self, args: list) -> Any:
        while True:
            pass


def test_a_reference_that_hangs_on_an_answer_sent_ahead_costs_the_share_and_ends_prefetching(monkeypatch):
    """Answers sent with one reply share one alarm: the hanging call is stopped within the case's share for
    answers sent ahead, nothing of it is kept or sent, and the child asks that call itself and gets it right."""
    code = f"search({START!r}, {GOAL!r}, 120)"
    plain = run(code, Reference())
    hanging = Hanging()
    case = CaseRequest(id="c1", code=code, timeout=1.0)
    ran = run_cases(statements(SEARCH), [case], isolate=["neighbours", "h"], oracle=PureOracle(hanging),
                    limits=ProcessLimits(load_seconds=5))
    [outcome] = ran.outcomes
    assert outcome.status == "ok", outcome
    assert codec.decode(outcome.value) == codec.decode(plain.value)
    # Asked again by the child, after prefetching stopped: the reference answered it then.
    assert hanging.calls.count(("h", hanging.hanging)) == 2


class Slow(Hanging):
    """Hanging's reference, with an end: its 20th call of h computes for 20 s of wall time, then answers."""

    def stall(self, args: list) -> Any:
        ends = time.monotonic() + 20
        while time.monotonic() < ends:
            pass
        return h(*args)


def test_an_answer_sent_ahead_is_bounded_in_a_thread_that_takes_no_signal():
    """A Dask worker grades in a thread of its pool, where no alarm rings: answers sent ahead were bounded only by
    the clock read between them, so one the reference took 20 s over was computed to its end, kept and sent. The
    ringer (alarm.bounded) stops it within the share, as the alarm does on the main thread."""
    code = f"search({START!r}, {GOAL!r}, 120)"
    plain = run(code, Reference())
    slow = Slow()
    found: list[Outcome] = []

    def grade() -> None:
        case = CaseRequest(id="c1", code=code, timeout=1.0)
        found.extend(run_cases(statements(SEARCH), [case], isolate=["neighbours", "h"], oracle=PureOracle(slow),
                               limits=ProcessLimits(load_seconds=5)).outcomes)

    worker = threading.Thread(target=grade)
    worker.start()
    worker.join(600)
    assert not worker.is_alive()
    [outcome] = found
    assert outcome.status == "ok", outcome
    assert codec.decode(outcome.value) == codec.decode(plain.value)
    # Stopped while sent ahead (nothing of it kept), then asked by the child and answered.
    assert slow.calls.count(("h", slow.hanging)) == 2


def test_an_alarm_ringing_outside_the_reference_and_the_package_ends_prefetching_never_the_case(monkeypatch):
    """The alarm of the answers sent with one reply stays armed over the grader's own prefetch work, where a frame
    may be no file of the package (a dataclass's generated __init__, as prefetch.Members' in members_of): a ring
    there raises, and must end prefetching for the case, not time the case out."""
    import signal

    from grader.sandbox import alarm
    code = f"search({START!r}, {GOAL!r}, 120)"
    plain = run(code, Reference())
    real = prefetch.members_of
    rang: list[bool] = []

    def members_of(name: str, tail: bytes) -> Any:   # a frame outside the package, as "<string>" is
        if not rang and isinstance(getattr(signal.getsignal(signal.SIGALRM), "__self__", None), alarm.TimeLimit):
            rang.append(True)
            signal.raise_signal(signal.SIGALRM)      # the prefetch's alarm rings here
        return real(name, tail)

    monkeypatch.setattr(prefetch, "members_of", members_of)
    outcome = run(code, PureOracle(Reference()))
    assert rang
    assert codec.decode(outcome.value) == codec.decode(plain.value)


def test_a_second_run_of_the_same_search_sends_the_same_answers_ahead_without_walking_them_again(monkeypatch):
    """A batch's searches get the same replies under the same rules: what was sent ahead with a reply is done
    again from the plan's walks (prefetch.Walk) where the child holds the same of its calls, with no look-up of
    the kept replies it is made of, and the child gets the very same answers in the same round trips."""
    code = f"search({START!r}, {GOAL!r}, 400)"
    trips = replies_counted(monkeypatch)
    reference = PureOracle(Reference())
    first = run(code, reference)
    first_trips, frames = len(trips), []
    trips.clear()
    looked: list[Any] = []
    arguments = prefetch._arguments
    frame = process._reply_frame

    def counted(rule: prefetch.Rule, value: Any) -> list[Any]:   # made for each answer a walk looks up
        looked.append(value)
        return arguments(rule, value)

    def recorded(seq: int, tail: bytes) -> bytes:
        frames.append(tail)
        return frame(seq, tail)

    monkeypatch.setattr(prefetch, "_arguments", counted)
    monkeypatch.setattr(process, "_reply_frame", recorded)
    second = run(code, reference)
    assert codec.decode(second.value) == codec.decode(first.value)
    assert len(frames) == first_trips and any(tail[:1] == b"P" for tail in frames)   # answers went ahead
    assert looked == []   # every answer sent ahead came from a walk done before, none was looked up again


def _walked(hooks: prefetch.Prefetch, name: str, tail: bytes, walks: prefetch.Walks | None) -> tuple[Any, ...]:
    """What answers() sends and leaves behind (memo, counts, members) on a copy of `hooks`."""
    copy = prefetch.Prefetch(hooks.isolate, set(hooks.known), dict(hooks.rules), hooks.triggers, dict(hooks.members),
                             allowed=hooks.allowed, signature=hooks.signature)

    def answer(helper: str, rest: bytes, args: list) -> bytes | None:
        value = Reference()(helper, args, {})
        return codec.pack(value)

    sent = copy.answers(name, tail, answer, walks)
    return sent, copy.known, copy.allowed, copy.sent, copy.members


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_walk_done_again_is_the_walk_it_stands_for_whatever_the_child_holds(data):
    """Whichever of a walk's calls the child's memo holds (some of those it sent, some of those it skipped, others),
    answers() with the plan's walks gives what walking gives: the same answers, memo, counts and members."""
    hooks = prefetch.Prefetch(frozenset({"neighbours", "h"}))
    hooks.start_case(10**6)
    goal = codec.plain_text(GOAL)
    assert goal is not None
    for trigger, helper, where, other in (("neighbours", "h", prefetch.FIRST, goal.encode()),
                                          ("neighbours", "neighbours", prefetch.ONLY, b"")):
        for _ in range(prefetch.CONFIRM):
            hooks._confirm(trigger, helper, where, other)
    assert len(hooks.rules) == 2 and hooks.triggers == frozenset({"neighbours"})
    tail = codec.pack(neighbours(START))
    assert tail is not None
    hooks.replied("neighbours", tail)
    everything, _, _, _, _ = _walked(hooks, "neighbours", tail, None)
    calls = [hash((helper, b'"args":{"list":[' + text.encode() + b']},"kwargs":{"dict":[]}}'))
             for helper, text, _ in everything]
    assert len(calls) > 10
    walks = prefetch.Walks()
    before = set(data.draw(st.sets(st.sampled_from(calls))))
    hooks.known = before
    _walked(hooks, "neighbours", tail, walks)                 # the walk made, with one memo
    assert len(walks.entries) == 1
    hooks.known = set(data.draw(st.sets(st.sampled_from(calls)))) | data.draw(st.sets(st.integers()))
    assert _walked(hooks, "neighbours", tail, walks) == _walked(hooks, "neighbours", tail, None)
