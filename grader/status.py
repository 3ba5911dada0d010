"""A case's status: its words and symbols, owned here. Every writer imports them; none spells its own.

The status itself is a field of CaseResult (grader.results); why a case failed is in the other fields
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
