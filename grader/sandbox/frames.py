"""The schema of what the sandbox child may send: every frame becomes a typed message, or `Invalid`.

Why: the child runs hostile code in the same process as the runtime, so any frame may be forged. The parent
acts only on messages that fit this schema (exact JSON types, finite numbers, bounded sizes, known keys), and
even then treats the child's timing, pids and progress as advice: its own clock decides every deadline.
Values (`value`, oracle `args`) stay wire data here; the codec validates them when the parent decodes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from grader.codec import DEFAULT_LIMITS, Limits
from grader.intake.warning import LOAD_KINDS, Kind
from grader.sandbox.wire import json_text, parse_value

__all__ = [
    "Bounds",
    "Done",
    "Exited",
    "Forked",
    "Invalid",
    "LoadWarning",
    "Loaded",
    "Message",
    "OracleCall",
    "Progress",
    "Ready",
    "Result",
    "parse",
    "readable",
    "tokens",
    "value_tokens",
    "result_head",
    "weighed",
]

STATUSES = ("ok", "error", "timeout")
ERROR_FIELDS = {"type": 200, "message": 4_000, "where": 1_000, "traceback": 20_000, "stage": 20}
PROBE_FIELDS = ("value", "error")
MAX_SECONDS = 1e9        # an advisory duration beyond this is not a duration
MAX_PID = 1 << 22        # pid_max on Linux
EXIT_STATUSES = range(-1024, 1025)   # what an `exited` frame's status may be


@dataclass(frozen=True)
class Bounds:
    """Sizes a frame may reach; `output` follows the sandbox's output limit (plus room for the cut marker)."""

    output: int = 65_536 + 200
    text: int = 4_000              # one warning, one probe error, one oracle helper name
    items: int = 100_000           # names in `loaded`, warnings, probes
    ident: int = 1_000             # a case id
    subject: int = 200             # what a load warning is about (a module, an exception type)


class Invalid(ValueError):
    """A frame that does not fit the schema; the message says which field and why."""


@dataclass(frozen=True)
class Ready:
    isolation: str
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """The child says it starts kept statement `index` (advisory: it only chooses what to leave out)."""

    index: int
    left_out: tuple[int, ...] = ()


@dataclass(frozen=True)
class LoadWarning:
    """What the child says went wrong in one statement of the load; the parent knows where that statement is."""

    kind: Kind                            # one of LOAD_KINDS
    statement: int                        # its position among the statements the load was sent
    subject: str                          # the missing module, the exception type, the names left unbound
    text: str                             # the sentence, without its place


@dataclass(frozen=True)
class Loaded:
    warnings: tuple[LoadWarning, ...]
    output: str
    names: tuple[str, ...]
    left_out: tuple[int, ...] = ()        # statements the child stopped on time (advisory)


@dataclass(frozen=True)
class Forked:
    pid: int                              # advisory: the parent checks it against the kernel before using it


@dataclass(frozen=True)
class OracleCall:
    name: str
    args: Any                             # wire data, decoded by the parent only after the name is accepted
    kwargs: Any
    seq: int


@dataclass(frozen=True)
class Result:
    case: str
    status: str
    value: Any = None
    probes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    error: Mapping[str, str] = field(default_factory=dict)
    output: str = ""
    # The parent's own, never the child's word: the weight (`weighed`) of a result frame refused unread because
    # no answer the case can compare is that large (process.CaseRequest.answer_bytes); `value` is then None.
    unread: int = 0


@dataclass(frozen=True)
class Done:
    pass


@dataclass(frozen=True)
class Exited:
    status: int


Message = Ready | Progress | Loaded | Forked | OracleCall | Result | Done | Exited


def _keys(message: dict, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    for key in required:
        if key not in message:
            raise Invalid(f"'{message['op']}' frame lacks '{key}'")
    for key in message:
        if key != "op" and key not in required and key not in optional:
            raise Invalid(f"'{message['op']}' frame has an unexpected key {_short(key)}")


def _short(value: object, limit: int = 40) -> str:
    text = repr(value) if type(value) is str and len(value) <= limit else f"<{type(value).__name__}>"
    return text


def _text(value: Any, where: str, limit: int) -> str:
    if type(value) is not str:
        raise Invalid(f"{where} must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise Invalid(f"{where} has {len(value)} characters, over the {limit} allowed")
    return value


def _int(value: Any, where: str, low: int, high: int) -> int:
    if type(value) is not int:
        raise Invalid(f"{where} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:   # compared, never converted: 10**400 is just out of range
        raise Invalid(f"{where} is out of range")
    return value


def _seconds(value: Any, where: str) -> float:
    """An advisory duration: checked (a number, finite, in range), then never used for a deadline."""
    if type(value) is int:
        _int(value, where, 0, int(MAX_SECONDS))
        return float(value)
    if type(value) is not float or not 0.0 <= value <= MAX_SECONDS:   # NaN fails both comparisons
        raise Invalid(f"{where} must be a finite number of seconds")
    return value


def _texts(value: Any, where: str, bounds: Bounds) -> tuple[str, ...]:
    if type(value) is not list:
        raise Invalid(f"{where} must be a list")
    if len(value) > bounds.items:
        raise Invalid(f"{where} has {len(value)} entries, over the {bounds.items} allowed")
    return tuple(_text(item, f"an entry of {where}", bounds.text) for item in value)


_KINDS = {kind.value: kind for kind in LOAD_KINDS}
WARNING_FIELDS = ("kind", "statement", "subject", "text")


def _load_warnings(value: Any, bounds: Bounds) -> tuple[LoadWarning, ...]:
    """Each entry exactly {kind, statement, subject, text}: a load kind, a statement number, two bounded texts."""
    if type(value) is not list or len(value) > bounds.items:
        raise Invalid(f"'warnings' must be a list of at most {bounds.items} entries")
    warnings = []
    for item in value:
        if type(item) is not dict or set(item) != set(WARNING_FIELDS):
            raise Invalid(f"an entry of 'warnings' must have exactly the keys {', '.join(WARNING_FIELDS)}")
        kind = item["kind"]
        if type(kind) is not str or kind not in _KINDS:
            raise Invalid(f"an entry of 'warnings' has an unknown kind {_short(kind)}")
        warnings.append(LoadWarning(_KINDS[kind], _int(item["statement"], "a warning's 'statement'", 0, bounds.items),
                                    _text(item["subject"], "a warning's 'subject'", bounds.subject),
                                    _text(item["text"], "a warning's 'text'", bounds.text)))
    return tuple(warnings)


def _indices(value: Any, where: str, bounds: Bounds) -> tuple[int, ...]:
    if type(value) is not list or len(value) > bounds.items:
        raise Invalid(f"{where} must be a list of at most {bounds.items} statement numbers")
    return tuple(_int(item, f"an entry of {where}", 0, bounds.items) for item in value)


def _error(value: Any) -> dict[str, str]:
    if type(value) is not dict:
        raise Invalid("'error' must be an object")
    for key, text in value.items():
        if key not in ERROR_FIELDS:
            raise Invalid(f"'error' has an unexpected key {_short(key)}")
        _text(text, f"error '{key}'", ERROR_FIELDS[key])
    return dict(value)


def _probes(value: Any, bounds: Bounds) -> dict[str, dict[str, Any]]:
    if type(value) is not dict or len(value) > bounds.items:
        raise Invalid("'probes' must be an object of bounded size")
    probes = {}
    for name, probe in value.items():
        if type(probe) is not dict or len(probe) != 1 or next(iter(probe)) not in PROBE_FIELDS:
            raise Invalid(f"probe {_short(name)} must be {{'value': ...}} or {{'error': text}}")
        if "error" in probe:
            _text(probe["error"], f"probe {_short(name)} error", bounds.text)
        probes[name] = dict(probe)
    return probes


def parse(message: dict, bounds: Bounds = Bounds()) -> Message:
    """The typed message a frame holds; raises Invalid when it does not fit the schema."""
    operation = message.get("op")
    if type(operation) is not str:
        raise Invalid("a frame needs a string 'op'")
    if operation == "result":
        _keys(message, ("case", "status"), ("value", "probes", "error", "output", "seconds"))
        status = message["status"]
        if status not in STATUSES:
            raise Invalid(f"'status' must be one of {', '.join(STATUSES)}")
        if "seconds" in message:
            _seconds(message["seconds"], "'seconds'")
        if status == "ok" and "value" not in message:
            raise Invalid("an 'ok' result carries a 'value'")
        return Result(case=_text(message["case"], "'case'", bounds.ident), status=status,
                      value=message.get("value"), probes=_probes(message.get("probes", {}), bounds),
                      error=_error(message.get("error", {})),
                      output=_text(message.get("output", ""), "'output'", bounds.output))
    if operation == "oracle":
        _keys(message, ("name", "args", "kwargs", "seq"))
        return OracleCall(_text(message["name"], "'name'", bounds.text), message["args"], message["kwargs"],
                          _int(message["seq"], "'seq'", 0, 1 << 62))
    if operation == "forked":
        _keys(message, ("pid",))
        return Forked(_int(message["pid"], "'pid'", 0, MAX_PID))
    if operation == "exited":
        _keys(message, ("status",))
        return Exited(_int(message["status"], "'status'", EXIT_STATUSES[0], EXIT_STATUSES[-1]))
    if operation == "done":
        _keys(message, ())
        return Done()
    if operation == "progress":
        _keys(message, ("index",), ("left_out",))
        return Progress(_int(message["index"], "'index'", 0, bounds.items),
                        _indices(message.get("left_out", []), "'left_out'", bounds))
    if operation == "loaded":
        _keys(message, ("warnings", "output", "names"), ("seconds", "left_out"))
        if "seconds" in message:
            _seconds(message["seconds"], "'seconds'")
        return Loaded(_load_warnings(message["warnings"], bounds),
                      _text(message["output"], "'output'", bounds.output),
                      _texts(message["names"], "'names'", bounds),
                      _indices(message.get("left_out", []), "'left_out'", bounds))
    if operation == "ready":
        # The runtime's own first word, before any student code ran; extra facts are allowed but bounded.
        problems = message.get("problems", [])
        return Ready(_text(message.get("isolation"), "'isolation'", 100), _texts(problems, "'problems'", bounds))
    raise Invalid(f"unknown frame {_short(operation)}")


# The bytes one character of a text may take in a frame as the runtime writes it: a character outside the BMP
# escaped as a surrogate pair, `\\ud83d\\ude00`, once a lone surrogate anywhere in the same text makes the encoder
# escape all (wire.encode_body); at most 4 in UTF-8 otherwise, 6 for a control character (`\\u001b`).
BYTES_PER_CHAR = 12
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'     # one JSON string token: linear, it cannot backtrack
_TAIL = re.compile(rb',"output":(' + _STRING + rb')\}')
_TEXTS = re.compile(rb'\{(?:"[a-z]{1,20}":' + _STRING + rb'(?:,"[a-z]{1,20}":' + _STRING + rb')*)?\}')
_OUTPUT_KEY = b',"output":"'


def result_head(case: str) -> bytes:
    """How the runtime begins its result frame to `case`, up to its status's text: its keys in its own order
    (runtime._result_frame), which a frame the parent refuses unread must have (weighed, process._unread)."""
    return b'{"op":"result","case":' + json_text(case).encode("utf-8") + b',"status":"'


def weighed(body: bytes, case: str, bounds: Bounds = Bounds()) -> tuple[int, str]:
    """What a result frame weighs, as a bound on parsing it: its length, less its output text and (in an error
    frame) its error texts where they stand as the runtime writes them (`..."error":{...},"output":"..."}`), each
    at most as long as the schema lets it be. With it the output captured in the frame, "" when not found.

    Why: a frame is refused unread when it weighs more than any answer the case can compare (no scan beyond a
    few regular-expression matches), and texts must not make an honest answer look large: a case printing 64 kB
    of brackets is as light as one printing nothing. Texts are cheap to parse anyway (one string each); what a
    hostile frame costs is its containers and numbers, outside strings, and they all weigh."""
    weight, output = len(body), ""
    at = body.rfind(_OUTPUT_KEY)
    tail = _TAIL.fullmatch(body, at) if at >= 0 else None
    if tail is None or len(tail.group(1)) > BYTES_PER_CHAR * bounds.output + 2:
        return weight, output
    try:
        output = parse_value(tail.group(1).decode("utf-8"))
    except ValueError:   # not UTF-8, or an escape JSON does not have: the parse would say so
        return weight, ""
    weight -= len(tail.group(1))
    start = result_head(case)
    for status in (b"error", b"timeout"):
        head = start + status + b'","error":'
        if body.startswith(head):
            texts = _TEXTS.match(body, len(head))
            if texts is not None and texts.end() == at and \
                    len(texts.group()) <= BYTES_PER_CHAR * (sum(ERROR_FIELDS.values()) + 100):
                weight -= len(texts.group())
    return weight, output


def value_tokens(limits: Limits = DEFAULT_LIMITS) -> int:
    """The most `,`, `[` and `{` one value the codec decodes within `limits` (as the runtime encodes it) can put in
    a frame: at most three for each of its items outside strings (a tagged container's brace and bracket, a comma
    before it), and each character of its strings may be one more. (Not so for a zero-size numpy array, whose shape
    counts no item: 200,000 of 60 dimensions each would be refused; no answer is such.)"""
    return 3 * limits.max_items + limits.max_chars


def readable(body: bytes, values: int, bounds: Bounds = Bounds(), limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether a frame holding `values` wire values (a result's answer and its probes), its output and its error
    may be one the runtime wrote, by its `,`, `[` and `{` alone, counted without parsing: a frame holding more
    than such values can is one whose values the codec would refuse (more than max_items items), so parsing it is
    for nothing. A check case's answer has no size bound of its own (process._unread), and without this a
    forged answer of 15 million one-letter strings (60 MB) cost the parent 0.4 s and 700 MB a case to parse.
    Free for a frame shorter than the count (no scan)."""
    limit = values * value_tokens(limits) + bounds.output + sum(ERROR_FIELDS.values()) + 1_000
    return len(body) <= limit or tokens(body) <= limit


def tokens(text: bytes) -> int:
    """The `,`, `[` and `{` in `text`, strings' included (value_tokens allows for them)."""
    return text.count(b",") + text.count(b"[") + text.count(b"{")
