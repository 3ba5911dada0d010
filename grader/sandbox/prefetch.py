"""Which isolated-helper answers the parent sends the child before it asks: rules learnt from the case's own calls.

A* with isolated helpers asks `next_states(s)`, gets a set R, then asks `manhattan(e, goal)` for each new member e
of R: thousands of pipe round trips, each ~80 us of CPU on both sides. The parent can see that pattern in the
calls themselves ("g is called with a member of an earlier reply of f, the other arguments the same text each
time") and, once it has seen it CONFIRM times in a case, answer those calls with the reply to f: the child puts
them in its memo (runtime.Child._oracle) and the calls cost no round trip.

Trust: a prefetched call is one the child could have made itself. Its helper is isolated in this run (it was
called in this case), its arguments are a member of a reply the child gets with it and argument texts the child
sent in this case, so nothing reaches the child that it could not have asked for, and the answers are the
reference's answers to those very calls (the helpers are pure: only a PureOracle prefetches). What is learnt is
the child's own doing, so a hostile stream can only make the parent prefetch within the bounds: at most the case's
`oracle_calls` prefetched answers per case (besides the calls it asks, so the reference answers at most twice
that), at most PER_REPLY sent and LOOKED looked at per reply, none whose reply or arguments are large, and the
parent's time on them (the reference's included) within a share of the case's own, half the asked calls'
(process._CaseClock.prefetch_seconds, Sandbox._with_prefetched): never the grader's time beyond that bound.

Only set and frozenset replies have members here: the parent wrote their elements' texts anyway (codec.pack), so
a reply costs no text to index; the other assignments' isolated helpers (ints, single states, a method's `h`)
never trigger a rule and cost only the look at each call.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from grader import codec
from grader.sandbox import wire

CONFIRM = 3          # calls in a case that follow a pattern before it becomes a rule
PER_REPLY = 32       # prefetched answers sent with one reply, at most
LOOKED = 4 * PER_REPLY   # calls looked at for one reply, sent or not (held already): the parent's work per reply
LONGEST_TAIL = 4096  # a reply longer than this is not prefetched (the child asks for it if it needs it)
LONGEST_ARGS = 2048  # nor a call whose arguments' text is longer
_KNOWN = 65_536      # calls the child's memo holds as the parent counts them (then forgotten, which only re-sends)
LONGEST_SET = 65_536  # a set reply longer than this (bytes) is not looked into
_CANDIDATES = 256    # patterns counted at once (then forgotten: a case that keeps changing learns nothing)
_SCANNED = 16        # argument boundaries looked at in one call

ARGS_HEAD, ARGS_TAIL = b'"args":{"list":[', b']},"kwargs":{"dict":[]}}'   # a call's rest, positional only
_INNER_START, _INNER_END = len(ARGS_HEAD), -len(ARGS_TAIL)
_LIST_START, _LIST_END = len(b'"args":'), -len(b',"kwargs":{"dict":[]}}')   # the arguments' list in a rest
_LONGEST_REST = LONGEST_ARGS + len(ARGS_HEAD) + len(ARGS_TAIL)
_HEAD_MEMBERS = (b'"op"', b'"name"', b'"seq"')   # never in a kept key (process.Heard.keeps): never prefetched
_HEAD_TEXTS = tuple(member.decode() for member in _HEAD_MEMBERS)

SETS = (b"S", b"F")                              # the markers of a set's and a frozenset's reply (codec.pack)
ONLY, FIRST, LAST = "only", "first", "last"      # where the member is among the call's arguments


@dataclass(frozen=True)
class Rule:
    """After a reply of `trigger`, call `helper` with each member of it at `where`, the other arguments `other`
    (their text as the child sent it, between the list's brackets) and `others` (their values)."""

    trigger: str
    helper: str
    where: str
    other: bytes
    others: tuple[Any, ...]
    # A call's frame rest on a member is `before + member's text + after` (what _call makes, made once here: the
    # walk of answers makes it for every member of every reply a kept run of A* gets).
    before: bytes = field(init=False, repr=False, compare=False)
    after: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        before, after = ARGS_HEAD, ARGS_TAIL
        if self.where == FIRST:
            after = b"," + self.other + ARGS_TAIL
        elif self.where == LAST:
            before = ARGS_HEAD + self.other + b","
        object.__setattr__(self, "before", before)
        object.__setattr__(self, "after", after)


@dataclass(frozen=True)
class Members:
    """A set reply's members: their texts (those that may be an argument's text in a kept key) and values, and
    the texts by the helper that replied (to confirm patterns with)."""

    texts: tuple[bytes, ...]
    values: tuple[Any, ...]
    by_text: dict[bytes, str]


class Walk(NamedTuple):
    """What Prefetch.answers did for one reply under one set of rules, to be done again without walking: the
    answers it sent (`calls`: their hashes, as the child's memo is counted in Prefetch.known), the calls it looked
    at that the memo held before it (`held`) and those it did not (`free`: sent, or their reply too long), and
    the replies whose members it read, in their order. The walk is a function of the rules, the reply and the
    replies kept for the plan (pure answers, encoded canonically: see process.PureOracle), and of which of its
    calls the memo holds: where the memo holds all of `held` and none of `free`, walking again would look at the
    same calls, find the same held, and make exactly this. (A named tuple: one is made per reply walked.)"""

    sent: tuple[tuple[str, str, bytes], ...]
    calls: tuple[int, ...]
    held: frozenset[int]
    free: frozenset[int]
    replied: tuple[tuple[str, bytes], ...]
    size: int          # about what it holds, in bytes: its answers' texts and replies (kept for the plan too)


@dataclass
class Walks:
    """A plan's walks (process.Replies.walks), by the reply, the rules and what answers the helpers: a batch's
    searches get the same replies under the same rules (a wrong find-tile-transposed notebook walks ~1,500 replies
    to send ~9,300 answers ahead, each looked up and written again for every copy). Bounded by what they hold,
    not by their number (the child chooses what it asks): past `max_bytes` all are forgotten."""

    max_bytes: int = 8_000_000
    entries: dict[tuple[Any, ...], Walk] = field(default_factory=dict)
    held: int = 0

    def keep(self, key: tuple[Any, ...], walk: Walk) -> None:
        size = walk.size + 32 * (len(walk.held) + len(walk.free))
        if size > self.max_bytes // 64:
            return
        if self.held + size > self.max_bytes:
            self.entries.clear()
            self.held = 0
        self.entries[key] = walk
        self.held += size


@dataclass
class Prefetch:
    """The parent's prefetching for one exercise's fork: what the child's memo holds, and per case the rules."""

    isolate: frozenset[str]
    # The calls the child's memo holds, by the hash of (helper, rest): ints, so the child's long arguments cost the
    # parent no memory; two calls of one hash only mean one answer not prefetched.
    known: set[int] = field(default_factory=set)
    rules: dict[tuple[str, str, str], Rule] = field(default_factory=dict)
    # The helpers whose replies start prefetching: those of a rule whose helper is another (manhattan after
    # next_states). A rule whose helper is its own trigger alone starts nothing (see answers).
    triggers: frozenset[str] = frozenset()
    members: dict[bytes, str] = field(default_factory=dict)             # a member's text -> the helper it came from
    candidates: Counter[tuple[str, str, str, bytes]] = field(default_factory=Counter)
    allowed: int = 0           # prefetched answers the case may still get
    sent: int = 0              # prefetched answers sent (all cases)
    stopped: bool = False      # the reference was too slow for one: no more in this case
    # What answers the helpers where the name alone does not say (process.PureOracle.answered_by), as a key; and
    # the rules as one (their trigger, helper, place and other arguments, in their order): a Walk's key with them.
    context: tuple[tuple[str, str], ...] = ()
    signature: tuple[tuple[str, str, str, bytes], ...] = ()

    def start_case(self, allowed: int) -> None:
        """A new case: its rules are learnt from its own calls (an argument text of another case is not one the
        child sent in this one)."""
        self.rules.clear()
        self.signature = ()
        self.triggers = frozenset()
        self.members.clear()
        self.candidates.clear()
        self.allowed = allowed
        self.stopped = False

    def heard(self, name: str, rest: bytes) -> None:
        """A call the child made (its frame after the seq, process.Heard.rest): the child's memo now holds it,
        and it may confirm a pattern."""
        known = self.known
        if self.triggers:   # before any rule starts prefetching, a call asked twice only means an answer sent twice
            if len(known) >= _KNOWN:
                known.clear()
            known.add(hash((name, rest)))
        members = self.members
        if not members or name not in self.isolate or not rest.startswith(ARGS_HEAD) or not rest.endswith(ARGS_TAIL):
            return
        inner = rest[_INNER_START:_INNER_END]
        trigger = members.get(inner)
        if trigger is not None:
            self._confirm(trigger, name, ONLY, b"")
            return
        at, scanned = inner.find(b"},"), 0
        while at != -1 and scanned < _SCANNED:
            trigger = members.get(inner[:at + 1])
            if trigger is not None:
                self._confirm(trigger, name, FIRST, inner[at + 2:])
                return
            at, scanned = inner.find(b"},", at + 1), scanned + 1
        at, scanned = inner.rfind(b",{"), 0
        while at != -1 and scanned < _SCANNED:
            trigger = members.get(inner[at + 1:])
            if trigger is not None:
                self._confirm(trigger, name, LAST, inner[:at])
                return
            at, scanned = inner.rfind(b",{", 0, at), scanned + 1

    def _confirm(self, trigger: str, helper: str, where: str, other: bytes) -> None:
        if len(other) > LONGEST_ARGS:
            return
        rule = self.rules.get((trigger, helper, where))
        if rule is not None and rule.other == other:
            return   # asked although prefetched would have answered: a member of a reply not prefetched from
        if len(self.candidates) >= _CANDIDATES:
            self.candidates.clear()
        pattern = (trigger, helper, where, other)
        self.candidates[pattern] += 1
        if self.candidates[pattern] >= CONFIRM:
            others = _values(other)
            if others is not None:
                self.rules[(trigger, helper, where)] = Rule(trigger, helper, where, other, others)
                self.triggers = frozenset(rule.trigger for rule in self.rules.values() if rule.helper != rule.trigger)
                self.signature = tuple((rule.trigger, rule.helper, rule.where, rule.other)
                                       for rule in self.rules.values())
            del self.candidates[pattern]

    def answers(self, name: str, tail: bytes, answer: Callable[[str, bytes, list[Any]], bytes | None],
                walks: Walks | None = None) -> list[tuple[str, str, bytes]]:
        """The calls to answer with the reply `tail` to an asked call of `name`, as (helper, arguments' text as the
        child writes it, reply), each answered by `answer(helper, rest, args)` (None: not sent). The rules whose
        helper is another (manhattan of each next state) are followed from each reply sent, prefetched ones
        included (manhattan of the next states' next states, which A* asks when it expands them). A rule whose
        helper is its own trigger (next_states of each next state) is followed one step from the asked reply, and
        only for those: A* expands some of the states it meets (int-tiles used 1,540 of 2,530 sent), and alone
        it cost more CPU than the round trips it saved (4 int-tiles notebooks, perf stat: 1.94-2.05 s without
        prefetching, 2.05-2.22 s with), where with manhattan's it pays (find-tile-transposed: 614 -> 521 ms)."""
        found = self.replied(name, tail)
        if found is None or self.stopped or name not in self.triggers:
            return []
        # `walks`: the plan's walks, done again where the child's memo holds the same of their calls (Walk). Only a
        # walk the case's allowance does not cut is kept or done again: its bound is then PER_REPLY, as here.
        key = (name, tail, self.signature, self.context) if walks is not None and self.allowed >= PER_REPLY else None
        if key is not None:
            assert walks is not None
            walk = walks.entries.get(key)
            if walk is not None and self._again(walk):
                return list(walk.sent)
            held: list[int] = []
            free: list[int] = []
            calls: list[int] = []
            read: list[tuple[str, bytes]] = []
            sent, whole = self._walk(name, found, answer, (held, free, calls, read))
            if whole and not self.stopped:
                looked = frozenset(free)
                walks.keep(key, Walk(tuple(sent), tuple(calls), frozenset(held) - looked, looked, tuple(read),
                                     sum([len(text) + len(reply) for _, text, reply in sent])))
            return sent
        return self._walk(name, found, answer, None)[0]

    def _again(self, walk: Walk) -> bool:
        """Do `walk` again if the child's memo holds the same of its calls as when it was made (False: it does not,
        and nothing has changed)."""
        known = self.known
        if not known.issuperset(walk.held) or not known.isdisjoint(walk.free):
            return False
        known.update(walk.calls)
        self.allowed -= len(walk.sent)
        self.sent += len(walk.sent)
        for helper, reply in walk.replied:
            self.replied(helper, reply)
        return True

    def _walk(self, name: str, found: Members, answer: Callable[[str, bytes, list[Any]], bytes | None],
              record: tuple[list[int], list[int], list[int], list[tuple[str, bytes]]] | None
              ) -> tuple[list[tuple[str, str, bytes]], bool]:
        """answers' walk from the reply's members `found`, and whether what `record` got (the calls held when
        looked at, those not, those sent, the replies read: see Walk) is a whole Walk: not where an answer was not
        sent for a reason of the moment (the reference refused or ran out of time; nothing is recorded from there)."""
        sent: list[tuple[str, str, bytes]] = []
        whole = record is not None
        held, free, calls, read = record if record is not None else (None, None, None, None)
        known, triggers, rules = self.known, self.triggers, list(self.rules.values())
        queue = [(name, found, True)]
        # The bounds as locals (what _call and a check of all four at each member did, in that order): `left`
        # answers may still be sent with this reply, `looked` members looked at; only answer() stops prefetching.
        left, looked = min(PER_REPLY, self.allowed), 0
        if left <= 0:
            return sent, whole
        for trigger, members, asked in queue:
            for rule in rules:
                helper = rule.helper
                if rule.trigger != trigger or (helper == trigger and not asked):
                    continue
                before, after = rule.before, rule.after
                for text, value in zip(members.texts, members.values, strict=True):
                    looked += 1
                    if looked > LOOKED:
                        return sent, whole
                    rest = before + text + after
                    if len(rest) > _LONGEST_REST:
                        continue   # _call's None: the arguments' text is too long
                    call = hash((helper, rest))
                    if call in known:
                        if held is not None:
                            held.append(call)
                        continue
                    reply = answer(helper, rest, _arguments(rule, value))
                    if reply is None:
                        held = free = calls = read = None
                        whole = False
                        if self.stopped:
                            return sent, whole
                        continue
                    if free is not None:
                        free.append(call)
                    if len(reply) > LONGEST_TAIL:
                        continue
                    if calls is not None:
                        calls.append(call)
                    known.add(call)
                    self.allowed -= 1
                    self.sent += 1
                    sent.append((helper, rest[_LIST_START:_LIST_END].decode("ascii"), reply))
                    left -= 1
                    if left <= 0:
                        return sent, whole
                    if helper in triggers:
                        if read is not None:
                            read.append((helper, reply))
                        more = self.replied(helper, reply)
                        if more is not None:
                            queue.append((helper, more, False))
        return sent, whole

    def replied(self, name: str, tail: bytes) -> Members | None:
        """The members of a reply to `name` the child gets (None: not a set), kept as ones it holds."""
        found = members_of(name, tail)
        if found is not None:
            if len(self.members) >= codec.KEPT_ARGS:
                self.members.clear()
            self.members.update(found.by_text)
        return found


def can_prefetch(isolate: frozenset[str]) -> bool:
    """Whether a run isolating these helpers can ever send an answer ahead: only a rule whose helper is another than
    its trigger starts prefetching (Prefetch.triggers), so a run isolating one helper would only pay for learning
    rules (its every set reply's members read, its every call matched against them: int-tiles' next_states alone,
    ~25 us of the parent's CPU per computed call) that never send anything."""
    return len(isolate) >= 2


_MEMBERS: dict[tuple[str, bytes], Members | None] = {}   # by the reply: a worker sees the same replies again
_MEMBERS_BYTES = 8_000_000   # what it may hold, replies and texts (then it starts again)
_MEMBERS_HELD = [0]


def members_of(name: str, tail: bytes) -> Members | None:
    """The members of a set or frozenset reply of `name` with their texts (codec.pack wrote both), or None. Only
    the parent's own bytes are loaded here (a reply it or another worker of its batch made, never the child).
    At most PER_REPLY members (no more is ever sent with one reply). Kept per reply for the worker (a batch's
    searches ask the same states), within _MEMBERS_BYTES: the child chooses the arguments, so the replies too."""
    if tail[:1] not in SETS or len(tail) > LONGEST_SET:
        return None
    key = (name, tail)
    found = _MEMBERS.get(key)
    if found is None:
        elements, texts = codec._marshal_loads(memoryview(tail)[1:])
        kept = [(text[0].encode("ascii"), element) for element, text in zip(elements, texts, strict=True)
                if type(element) is tuple and len(text[0]) <= codec.KEPT_TEXT
                and not any(member in text[0] for member in _HEAD_TEXTS)][:PER_REPLY]
        found = Members(tuple(text for text, _ in kept), tuple(value for _, value in kept),
                        {text: name for text, _ in kept})
        size = len(tail) + 2 * sum(len(text) for text, _ in kept)   # the values about as large as their texts
        if _MEMBERS_HELD[0] + size > _MEMBERS_BYTES:
            _MEMBERS.clear()
            _MEMBERS_HELD[0] = 0
        _MEMBERS[key] = found
        _MEMBERS_HELD[0] += size
    return found


def _call(rule: Rule, text: bytes, value: Any) -> tuple[bytes, bytes, list[Any]] | None:
    """The frame's rest, the arguments' text inside their list's brackets and the arguments of the rule's call on
    one member, or None (too long). Neither the member's text nor the other arguments' name a member of the
    frame's head (members_of, _values): the rest is one a kept call may have. Prefetch.answers makes the same
    inline, from the same pieces (the rule's before and after, _LONGEST_REST, _arguments): what the tests check
    of this is what it sends."""
    rest = rule.before + text + rule.after
    if len(rest) > _LONGEST_REST:
        return None
    return rest, rest[_INNER_START:_INNER_END], _arguments(rule, value)


def _arguments(rule: Rule, value: Any) -> list[Any]:
    """The arguments of the rule's call on a member whose value is `value`."""
    where = rule.where
    return [value] if where == ONLY else [value, *rule.others] if where == FIRST else [*rule.others, value]


def _values(other: bytes) -> tuple[Any, ...] | None:
    """The values of the other arguments' text, when they are things that cannot change (shared by every
    prefetched call) and the text is exactly theirs as the child's runtime writes them (codec.plain_text), else
    None. Exactly: a prefetched reply is kept under the call's bytes for the batch (Replies), so those bytes must
    parse to the arguments it answers; a text the runtime never writes (`1],"list":[2`, whose later key wins
    when parsed) would have kept an answer to one call under another's bytes."""
    if not other:
        return ()
    if len(other) > LONGEST_ARGS or any(member in other for member in _HEAD_MEMBERS):
        return None
    try:
        values = codec.decode(wire.parse_value('{"list":[' + other.decode("ascii") + "]}"))
    except (UnicodeDecodeError, wire.FrameError, codec.CodecError):
        return None
    if type(values) is not list or not values \
            or not all(type(v) in (str, int) or (type(v) is tuple and codec.frozen(v)) for v in values):
        return None
    text = codec.plain_text(values)
    if text is None or text[len('{"list":['):-len("]}")].encode() != other:
        return None
    return tuple(values)
