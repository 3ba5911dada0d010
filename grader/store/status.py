"""A case's status: its words and symbols, owned here. Every writer imports them; none spells its own.

The status itself is a field of CaseResult (grader.store.results); why a case failed is in the other fields
(the known mistake or variant matched, the culprit), never to be read back out of a message.
"""

from __future__ import annotations

PASS, FAIL, ERROR, TIMEOUT, MISSING, PROBLEM = "pass", "fail", "error", "timeout", "missing", "problem"
UNVERIFIED = "unverified"   # the kit's: a case whose check needs the reference is checked after submission

STATUSES = (PASS, FAIL, ERROR, TIMEOUT, MISSING, PROBLEM)
# What counts against the student in a self-check ("unverified" does not; "problem" is the grader's).
FAILING = (FAIL, ERROR, TIMEOUT, MISSING)

# In DejaVu Sans (the HTML reports) and in every terminal font we know of.
SYMBOLS = {PASS: "✓", FAIL: "✗", ERROR: "!", TIMEOUT: "◔", MISSING: "–", PROBLEM: "⚠", UNVERIFIED: "?"}
# Terminal colours (rich style names).
COLOURS = {PASS: "green", FAIL: "red", ERROR: "red", TIMEOUT: "yellow", MISSING: "bright_black", PROBLEM: "magenta",
           UNVERIFIED: "yellow"}
WORDS = {PASS: "passed", FAIL: "failed", ERROR: "raised an error", TIMEOUT: "timed out", MISSING: "not run",
         PROBLEM: "not judged (a grader problem, not your mistake)", UNVERIFIED: "checked after submission"}

# Why a case did not pass: a small vocabulary, set where the verdict is born (grader.judge.grading, the kit) and
# stored as CaseResult.reason. The status says how it shows; the reason says what happened (a case skipped
# because the submission's time budget ran out shows as an error, but its reason is BUDGET, not the student's
# exception).
WRONG, RAISED, TOO_SLOW, BUDGET, NOT_GRADED, GRADER_PROBLEM = (
    "wrong answer", "error", "timeout", "budget", "not graded", "grader problem")
# A grader problem of the machine's: it kept the case waiting for a CPU until the submission's time ran out, even
# moved (grader.sandbox.budget). Like any case not judged it earns nothing (were it left out of the score, a notebook
# able to make its last cases "busy" would gain by it), and the next run grades the submission again.
BUSY = "busy machine"
# A case not run because earlier cases of its exercise timed out (limits.max_timeouts): it shows as a timeout and
# costs its points, but the student's code never ran on it; "8 hidden cases: 8 timed out" would say it did.
AFTER_TIMEOUTS = "after timeouts"
REASONS = (WRONG, RAISED, TOO_SLOW, BUDGET, NOT_GRADED, GRADER_PROBLEM, BUSY, UNVERIFIED, AFTER_TIMEOUTS)
# The reason a result written before reasons were stored stands for, from its status alone.
REASON_OF_STATUS = {FAIL: WRONG, ERROR: RAISED, TIMEOUT: TOO_SLOW, MISSING: NOT_GRADED, PROBLEM: GRADER_PROBLEM,
                    UNVERIFIED: UNVERIFIED}


def reason_of(status: str, reason: str = "") -> str:
    """The case's reason: the stored one, or (a result from before reasons were stored) its status's."""
    return reason or REASON_OF_STATUS.get(status, "")


def machine_busy(status: str, reason: str) -> bool:
    """A case a busy machine kept from being judged: a `problem` of the machine's, not the rubric's. Every count
    and word tells the two apart (wait for the next run, against fix the rubric and --force)."""
    return status == PROBLEM and reason == BUSY

# The headline of a case whose reason says more than its status: a case skipped because the submission's time
# budget ran out shows as an error, yet nothing of the student's raised; it must not read "raised an error".
REASON_WORDS = {BUDGET: "not run (the submission's time budget was spent)",
                AFTER_TIMEOUTS: "not run (earlier cases of the exercise timed out)",
                BUSY: "not judged (the grading machine was too busy; it is graded again, not your mistake)"}


def headline(status: str, reason: str = "") -> str:
    """The words a writer shows for a case: its reason's when that says more than its status, else its status's."""
    return REASON_WORDS.get(reason) or WORDS.get(status, status)


def limit_note(status: str, limit: float) -> str:
    """What a timeout's message leaves out: the limit it ran into (the case's `limit` fact), so a student knows how far
    off the code is; "" for any other case, and for a result stored before the fact existed."""
    return f" (the case's time limit is {limit:g} s of CPU time)" if status == TIMEOUT and limit > 0 else ""


def alike_words(status: str) -> str:
    """How the cases shown under a first one went: a case not judged did not fail."""
    if status == UNVERIFIED:      # the kit's: not a failure either
        return "left to check after submission"
    return "were not judged for the same reason" if status == PROBLEM else "failed the same way"
