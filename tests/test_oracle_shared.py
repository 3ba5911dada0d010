"""Kept replies shared by a batch's forked workers (process.SharedReplies): what one worker's reference answered,
another answers from the same bytes; a worker that dies holding the log's lock costs the others their sharing,
never their grading; and no sandbox child ever maps the log. Counts and contents are asserted, never times."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

from grader import codec
from grader.sandbox.process import CaseRequest, Heard, ProcessLimits, Replies, SharedReplies, heard
from sandbox_run import RUN_SECONDS, run_cases, statements

FORK = multiprocessing.get_context("fork")


def call(name: str, seq: int, argument: object) -> Heard:
    """An isolated-helper call as the runtime writes its frame, split as the parent hears it."""
    text = codec.plain_text([argument])
    found = heard(f'{{"op":"oracle","name":"{name}","seq":{seq},"args":{text},"kwargs":{{"dict":[]}}}}'.encode(),
                  1 << 20)
    assert found is not None
    return found


def tail(value: object) -> bytes:
    packed = codec.pack(value)
    assert packed is not None
    return packed


def keep_in_a_worker(replies: Replies, pairs: list[tuple[Heard, bytes]]) -> None:
    """A forked worker that keeps replies and ends (the coordinator's copy of `replies` never sees its dict)."""
    def work() -> None:
        for known, reply in pairs:
            replies.keep(known.key(), reply)
        os._exit(0)
    worker = FORK.Process(target=work)
    worker.start()
    worker.join(RUN_SECONDS)
    assert worker.exitcode == 0


def test_a_reply_kept_by_one_forked_worker_is_recalled_by_another_with_its_bytes():
    replies = Replies(shared=SharedReplies(size=1 << 20))
    states = [((str(i), "*"), ("0", "1")) for i in range(50)]
    pairs = [(call("next_states", seq, state), tail({state, state[::-1]})) for seq, state in enumerate(states)]
    keep_in_a_worker(replies, pairs)
    assert not replies.entries                       # this process computed nothing itself
    for known, reply in pairs:
        again = call(known.name, 1000 + known.seq, states[known.seq])   # the same call, asked again later
        recalled = replies.recall(again)
        assert recalled is not None and recalled.tail == reply and recalled.seq == 1000 + known.seq
    assert replies.recall(call("manhattan", 7, states[0])) is None   # another helper: another key
    assert replies.recall(call("next_states", 8, (("x",),))) is None


def test_what_answers_a_helper_is_part_of_the_shared_key():
    replies = Replies(shared=SharedReplies(size=1 << 20))
    known = call("Board.h", 1, (("1", "2"),))

    def work() -> None:
        replies.keep(known.key("self.h1()"), tail(3))
        os._exit(0)
    worker = FORK.Process(target=work)
    worker.start()
    worker.join(RUN_SECONDS)
    assert replies.recall(known, "self.h2()") is None
    recalled = replies.recall(known, "self.h1()")
    assert recalled is not None and codec.unpack(recalled.tail) == 3


def test_a_worker_dead_with_the_lock_ends_sharing_but_not_grading():
    shared = SharedReplies(size=1 << 20)
    replies = Replies(shared=shared)

    def take_and_die() -> None:
        shared.lock.acquire()
        os.kill(os.getpid(), signal.SIGKILL)
    dying = FORK.Process(target=take_and_die)
    dying.start()
    dying.join(RUN_SECONDS)
    assert dying.exitcode == -signal.SIGKILL
    known = call("next_states", 1, (("never asked",),))
    for attempt in range(5):
        replies.keep(call("next_states", attempt, ((str(attempt),),)).key(), tail(attempt))
        assert replies.recall(known) is None
    assert shared.broken                               # three waits that ran out, then it stops asking
    assert len(replies.entries) == 5                   # its own replies are still kept and recalled
    recalled = replies.recall(call("next_states", 9, (("3",),)))
    assert recalled is not None and codec.unpack(recalled.tail) == 3


def test_a_full_log_keeps_the_rest_to_each_worker():
    replies = Replies(shared=SharedReplies(size=4096))
    pairs = [(call("next_states", seq, ((str(seq),) * 8,)), tail(seq)) for seq in range(100)]
    keep_in_a_worker(replies, pairs)
    found = [replies.recall(known) for known, _ in pairs]
    assert 0 < sum(1 for recalled in found if recalled is not None) < len(pairs)
    for (_, reply), recalled in zip(pairs, found, strict=True):
        assert recalled is None or recalled.tail == reply


def test_another_workers_replies_never_evict_this_workers_own():
    replies = Replies(limit=10, shared=SharedReplies(size=1 << 20))
    own = [(call("manhattan", seq, ((str(seq), "0"),)), tail(seq)) for seq in range(5)]
    for known, reply in own:
        replies.keep(known.key(), reply)
    theirs = [(call("next_states", seq, (("x", str(seq)),)), tail(-seq)) for seq in range(50)]
    keep_in_a_worker(replies, theirs)
    assert all(replies.recall(known) is not None for known, _ in theirs)   # 50 read, past this worker's limit
    assert {key[2] for key in replies.entries} == {known.rest for known, _ in own}


def test_a_full_log_in_count_keeps_the_rest_to_each_worker():
    shared = SharedReplies(size=1 << 20)
    shared.RECORDS = 3
    replies = Replies(shared=shared)
    pairs = [(call("next_states", seq, ((str(seq),),)), tail(seq)) for seq in range(6)]
    keep_in_a_worker(replies, pairs)
    assert [replies.recall(known) is not None for known, _ in pairs] == [True] * 3 + [False] * 3


def test_a_sandbox_child_never_maps_the_shared_log(tmp_path: Path):
    """The log holds the reference's answers: a child started after it exists (an exec'd interpreter) has no
    shared writable mapping of its size."""
    size = 3 << 20
    shared = SharedReplies(size=size)
    shared.push(("next_states", "", b'"args":{"list":[]}'), b"M" + b"secret" * 100)
    source = ("def maps():\n"
              "    sizes = []\n"
              "    for line in open('/proc/self/maps'):\n"
              "        span, flags = line.split()[:2]\n"
              "        start, end = (int(x, 16) for x in span.split('-'))\n"
              "        if flags.endswith('s'):\n"
              "            sizes.append(end - start)\n"
              "    return sizes\n")
    ran = run_cases(statements(source), [CaseRequest(id="c1", code="maps()", timeout=10.0)],
                    limits=ProcessLimits(load_seconds=10))
    outcome = ran.outcomes[0]
    assert outcome.status == "ok", outcome
    assert size not in codec.decode(outcome.value)
