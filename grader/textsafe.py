"""Text the grader did not write (student output, answers, messages, file names), made safe to store and show.

Why one module: every writer (JSON, SQLite, CSV, Markdown, HTML, terminal) must survive any string a
submission can produce, and they must all follow the same policy, which is:

- **Valid Unicode on display, lossless in JSON.** A Python string may hold lone surrogates (student code
  prints "\\ud800"; an undecodable byte of a file name is held as a surrogate escape). JSON writers keep them
  as \\udXXX escapes (valid JSON that Python reads back to the same string); every display writer (CSV,
  Markdown, HTML, terminal, Gradescope) writes U+FFFD in their place.
- **Bounded.** Stored text is cut to a limit keeping its head and its tail, with a marker in the middle saying
  how much was cut (as Autolab's Tango does), so the start and the end of a long output both survive.
- **Inert.** Each format escapes what it would interpret: control characters never reach a terminal, student
  text never becomes Markdown structure, and HTML is escaped (or sanitized, see report/annotated.py). A report
  file is read in a terminal too (`cat feedback.md`, `less -R`, `head gradebook.csv`): display formats carry no
  escape sequence, bell, bidirectional override or lone carriage return either (a notebook printing
  "\\x1b]52;c;..." would set the TA's clipboard, "\\x1b[2J" or "\\r" hide the lines before it).
"""

from __future__ import annotations

import json
import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls except tab and newline, DEL, and the bidirectional overrides that reorder what a terminal
# or an editor shows ("Trojan source"). A carriage return would let a line overwrite itself: it becomes a newline.
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# The same for a display format but for carriage returns: one before a newline stays (CSV's line ends), a lone
# one becomes a newline. Two patterns, as one with an alternative searched a page at half the speed.
_DISPLAY_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_LONE_CR = re.compile("\r(?!\n)")


def unicode(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8."""
    return _SURROGATE.sub(REPLACEMENT, text) if not text.isascii() and _SURROGATE.search(text) else text


def display(text: str) -> str:
    """For a display format (CSV, Markdown, HTML): valid Unicode without NUL, escape or other control characters
    (tab, newline and CRLF kept; a lone carriage return becomes a newline), as terminal() but for CRLF."""
    if _DISPLAY_UNSAFE.search(text):
        text = _DISPLAY_UNSAFE.sub(REPLACEMENT, text)
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def terminal(text: str) -> str:
    """For a terminal: no escape sequences, no control characters (tab and newline kept), valid Unicode."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _TERMINAL_UNSAFE.sub(REPLACEMENT, text) if _TERMINAL_UNSAFE.search(text) else text


def one_line(text: str) -> str:
    """terminal() for a line that must stay one line (a note naming a student's file, a reason): newlines and
    carriage returns become U+FFFD too, so a file name holding one cannot print a made-up line of its own."""
    return terminal(text).replace("\n", REPLACEMENT)


def cut(text: str, limit: int) -> str:
    """At most `limit` characters: the head and the tail of `text` around a marker saying how much was cut.

    Idempotent: a text already within the limit (a cut one included) comes back unchanged.
    """
    if len(text) <= limit:
        return text
    removed = len(text) - limit
    while True:   # the marker's own length depends on the number it shows
        marker = f"\n[... {removed:,} characters cut ...]\n"
        keep = max(0, limit - len(marker))
        if len(text) - keep <= removed:
            break
        removed = len(text) - keep
    if keep == 0:
        return marker[:limit]
    head = (keep + 1) // 2
    return text[:head] + marker + text[len(text) - (keep - head):]


def json_text(data: Any, **options: Any) -> str:
    """JSON of `data` that encodes as UTF-8 whatever strings it holds.

    Readable UTF-8 normally; when a string holds a lone surrogate the whole document is ASCII with \\u escapes
    instead, which keeps the surrogate (Python reads it back as it was) and is still valid JSON.
    """
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, **options)
    # isascii() reads a flag the string carries (no scan): most results are ASCII and need no search.
    if not text.isascii() and _SURROGATE.search(text):
        text = json.dumps(data, ensure_ascii=True, allow_nan=False, **options)
    return text


def value_size(wire: Any) -> int:
    """Characters of a wire value's JSON form (what storing it costs)."""
    return len(json.dumps(wire, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str))
