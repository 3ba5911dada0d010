"""Safe tagged-JSON codec for values crossing the sandbox trust boundary (standard library only, never pickle).

Why it exists: the child process runs hostile student code, the parent judges. The child turns a returned
value into plain JSON data ("wire" form) that records exact types, so a tuple is not a list and a tuple
subclass with a rigged ``__eq__`` gains nothing; the parent only ever looks at that plain data (``decode``,
``same``, ``describe``) and never calls a method of a student object.

Wire grammar (every container and every non-JSON scalar is a one-tag JSON object):

    None, bool, int (at most 4000 digits), finite float, str  -> themselves
    {"float": "nan" | "inf" | "-inf"}                          non-finite float
    {"list" | "tuple" | "set" | "frozenset": [wire, ...]}       sets sorted by canonical() of their elements
    {"dict": [[key wire, value wire], ...]}                     insertion order
    {"bytes": base64 text}                                      bytes and bytearray
    {"str": s, "class": c} / {"int": n, "class": c} / {"float": x, "class": c}
                                                                subclasses of builtins; containers and bytes
                                                                take an optional "class" too ("module.QualName")
    {"ndarray": nested lists of wires, "dtype": str, "shape": [int, ...]}   (optional "class")
    {"npscalar": wire of .item(), "dtype": str}
    {"opaque": "module.QualName", "repr": first 200 characters of repr(), addresses " at 0x..." cut}

Neutral ground: both sides of the sandbox use it, and so do the checks and the writers, so it lives beside
the stages rather than inside the sandbox. The child's runtime loads this very file by its path as a plain
top-level module, so it imports only the standard library and nothing of the ``grader`` package.

Every walk is iterative and counts as it goes: a deep, cyclic or huge value trips a ``Limits`` bound instead of
a RecursionError or a hang.
"""

from __future__ import annotations

import base64
import binascii
import builtins as _builtins
import itertools
import json
import marshal
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

# Private references. In the sandbox child this module shares a process with student code, which may rebind
# `builtins.isinstance`, `math.isfinite`, `json.dumps` and the like: the functions below resolve builtins in this
# snapshot and call the originals bound here, so such a patch cannot corrupt how a correct answer is encoded.
__builtins__ = dict(_builtins.__dict__)  # type: ignore[assignment]  # a private snapshot, on purpose
_isfinite, _isnan, _prod = math.isfinite, math.isnan, math.prod
_b2a_base64, _b64decode, _Base64Error = binascii.b2a_base64, base64.b64decode, binascii.Error
_modules = sys.modules
_marshal_dumps, _marshal_loads = marshal.dumps, marshal.loads
_from_iterables = itertools.chain.from_iterable
# " at 0x7f3a..." in a repr: an address differs from run to run (a regrade would read another answer) and says
# nothing to a student. The bound method of a compiled pattern, so a patched `re` cannot touch it.
_no_address = re.compile(r" at 0x[0-9a-fA-F]+").sub
# An object's identity as id() gives it, without id()'s audit event: in the sandbox child an audit hook (a Python
# function) runs at every such event, and an isolated helper's every call asks for its arguments' identities
# (call_text). object's own hash is the object's address rotated, through object's slot whatever its class says.
_identity = object.__hash__
try:
    from _json import encode_basestring as _quote
except ImportError:  # pragma: no cover - CPython always has _json
    _quote = json.encoder.py_encode_basestring

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_ARRAY_BYTES",
    "MAX_INT_DIGITS",
    "CodecError",
    "Limits",
    "NDArray",
    "Opaque",
    "Wire",
    "canonical",
    "decode",
    "decode_for_student",
    "describe",
    "encode",
    "pack",
    "plain_text",
    "same",
    "size",
    "unpack",
    "without_addresses",
]

Wire = Any
"""JSON-compatible data in the tagged form above (None, bool, int, float, str, list and dict only)."""

MAX_INT_DIGITS = 4000
_INT_BOUND = 10**MAX_INT_DIGITS
REPR_CHARS = 200
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@dataclass(frozen=True)
class Limits:
    """Bounds on one value, so a huge or cyclic answer fails fast instead of exhausting the grader."""

    max_depth: int = 64  # nesting levels of containers
    max_items: int = 200_000  # nodes in total (a dict entry counts its key and its value)
    max_chars: int = 8_000_000  # characters of text (and base64 bytes) in total


DEFAULT_LIMITS = Limits()


class CodecError(ValueError):
    """A value broke a bound, or a wire value is malformed; the message says which."""


@dataclass(frozen=True)
class NDArray:
    """A decoded numpy array: plain data, no numpy needed in the parent. ``data`` is nested tuples
    (the element itself for a 0-d array)."""

    dtype: str
    shape: tuple[int, ...]
    data: Any


@dataclass(frozen=True)
class Opaque:
    """A decoded value of a type the codec does not carry: its type name and (truncated) repr only."""

    type: str
    repr: str


class _Budget:
    """Running totals of one encode or decode, checked as they grow so a bound trips early."""

    __slots__ = ("limits", "items", "chars")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.items = 0
        self.chars = 0

    def add_items(self, count: int) -> None:
        self.items += count
        if self.items > self.limits.max_items:
            raise CodecError(f"value has more than {self.limits.max_items} items")

    def add_chars(self, count: int) -> None:
        self.chars += count
        if self.chars > self.limits.max_chars:
            raise CodecError(f"value has more than {self.limits.max_chars} characters of text and bytes")

    def enter(self, level: int) -> None:
        if level > self.limits.max_depth:
            raise CodecError(f"value nested deeper than {self.limits.max_depth} levels")


def _check_int(value: int) -> int:
    # Compared, not converted: str() of a huge int is itself the slow path we must avoid.
    if not -_INT_BOUND < value < _INT_BOUND:
        raise CodecError(f"int has more than {MAX_INT_DIGITS} digits")
    return value


def _float_payload(value: float) -> float | str:
    if _isfinite(value):
        return value
    if _isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def _b64_len(count: int) -> int:
    return 4 * ((count + 2) // 3)


# ---------------------------------------------------------------------------------------------- encode

_VISIT, _FINISH = 0, 1
_CONTAINERS: dict[type, str] = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset", dict: "dict"}
# Subclassable builtins in lookup order; a subclass is encoded through the base's C-level slots only.
_BASES = (tuple, list, dict, set, frozenset, str, int, float, bytes, bytearray)


def _type_name(cls: type) -> str:
    """'module.QualName' read through type's own descriptors, so a metaclass cannot lie about it."""
    try:
        module = type.__dict__["__module__"].__get__(cls, type)
        qualname = type.__dict__["__qualname__"].__get__(cls, type)
    except Exception:
        return "?"
    if type(module) is not str:
        module = "?"
    if type(qualname) is not str:
        qualname = "?"
    return f"{module}.{qualname}"


def _safe_repr(obj: object) -> str:
    """repr() of an object the codec does not carry, without memory addresses ("<generator object f>")."""
    try:
        text = str.__str__(repr(obj))
    except Exception:
        return "<unrepresentable>"
    return without_addresses(text[:4 * REPR_CHARS])[:REPR_CHARS]


def without_addresses(text: str) -> str:
    """`text` without the memory addresses (" at 0x7f3a...") a repr puts in it: see _safe_repr."""
    return _no_address("", text)


def _numpy_types() -> tuple[type, type] | None:
    # Never import numpy: if the child's code made numpy values, numpy is already in sys.modules.
    numpy = _modules.get("numpy")
    if numpy is None:
        return None
    try:
        ndarray, generic = numpy.ndarray, numpy.generic
    except Exception:
        return None
    if isinstance(ndarray, type) and isinstance(generic, type):
        return ndarray, generic
    return None


# ------------------------------------------------------------------------------------------ plain fast path
# Most values that cross the sandbox are small and plain (a puzzle state: tuples of strs; a count; a set of
# states): the general walk costs about 1 us per node for them. These two recursive walks take exactly such
# values, far inside the default limits (so the general walk could not have refused them), and give exactly
# what the general walk gives; at the first thing that is not plain (a subclass, an object, a tag with a class,
# a big int, a non-finite float, a deep or large value) they give up and the general walk does it all.

_PLAIN_DEPTH = 16          # containers nested in one another
_PLAIN_NODES = 20_000      # nodes and characters both count against this budget (a node is one unit)
_PLAIN_INT = 1 << 62
_PLAIN_CHARS = 1_000_000   # in strs longer than _SHORT; shorter ones go uncounted (at most _PLAIN_NODES of them)
_SHORT = 256


class _NotPlain(Exception):
    pass


def _encode_plain(obj: Any, depth: int, left: list[int]) -> Wire:
    cls = type(obj)
    if cls is str:
        left[1] -= len(obj)
        if left[1] < 0:
            raise _NotPlain
        return obj
    if cls is int:
        if -_PLAIN_INT < obj < _PLAIN_INT:
            return obj
        raise _NotPlain
    if obj is None or cls is bool or (cls is float and _isfinite(obj)):
        return obj
    tag = _CONTAINERS.get(cls)
    if tag is None or depth >= _PLAIN_DEPTH:
        raise _NotPlain
    left[0] -= len(obj)
    if left[0] < 0:
        raise _NotPlain
    depth += 1
    if cls is dict:
        return {"dict": [[_encode_plain(key, depth, left), _encode_plain(value, depth, left)]
                         for key, value in obj.items()]}
    # A short str or a small int is its own wire: taken inline, without a call (a state is strs or ints).
    elements = [item if ((item_type := type(item)) is str and len(item) <= _SHORT)
                or (item_type is int and -_PLAIN_INT < item < _PLAIN_INT) else _encode_plain(item, depth, left)
                for item in obj]
    if cls is set or cls is frozenset:
        elements.sort(key=canonical)
    return {tag: elements}


def _decode_plain(wire: Wire, depth: int, left: list[int]) -> Any:
    kind = type(wire)
    if kind is str:
        left[1] -= len(wire)
        if left[1] < 0:
            raise _NotPlain
        return wire
    if kind is int:
        if -_PLAIN_INT < wire < _PLAIN_INT:
            return wire
        raise _NotPlain
    if wire is None or kind is bool or (kind is float and _isfinite(wire)):
        return wire
    if kind is not dict or len(wire) != 1 or depth >= _PLAIN_DEPTH:
        raise _NotPlain
    ((tag, payload),) = wire.items()
    if type(payload) is not list:
        raise _NotPlain
    left[0] -= len(payload)
    if left[0] < 0:
        raise _NotPlain
    depth += 1
    if tag == "tuple" or tag == "list":
        items = [item if ((item_type := type(item)) is str and len(item) <= _SHORT)
                 or (item_type is int and -_PLAIN_INT < item < _PLAIN_INT) else _decode_plain(item, depth, left)
                 for item in payload]
        return tuple(items) if tag == "tuple" else items
    try:
        if tag == "set":
            return {_decode_plain(item, depth, left) for item in payload}
        if tag == "frozenset":
            return frozenset([_decode_plain(item, depth, left) for item in payload])
        if tag == "dict":
            entries = {}
            for pair in payload:
                if type(pair) is not list or len(pair) != 2:
                    raise _NotPlain
                entries[_decode_plain(pair[0], depth, left)] = _decode_plain(pair[1], depth, left)
            return entries
    except TypeError:   # unhashable: the general walk says so
        raise _NotPlain from None
    raise _NotPlain


# ------------------------------------------------------------------------------------ isolated-helper calls
# An isolated helper is called thousands of times per case (A* asks for next_states and manhattan of every state
# it meets), each call a round trip to the parent: the child's arguments go up as text, the reference's answer
# comes down. Two shorter ways for the plain values those calls carry, each giving exactly what the general
# path gives, and None (the general path then) for anything else.

_TEXT_HEAD: dict[type, str] = {list: '{"list":[', tuple: '{"tuple":['}
_SET_HEAD: dict[type, str] = {set: '{"set":[', frozenset: '{"frozenset":['}
_ONLY_STR, _ONLY_INT, _ONLY_ROWS = frozenset({str}), frozenset({int}), frozenset({list, tuple})


def plain_text(obj: object) -> str | None:
    """The compact JSON text of ``encode(obj)`` for a plain value (ASCII strs, small ints, finite floats, None,
    bools, lists, tuples, dicts, sets and frozensets of them), made in one walk without the wire in between;
    None for anything else (a subclass, a non-ASCII str, a value past the plain bounds)."""
    try:
        return _plain_text(obj, 0, [_PLAIN_NODES, _PLAIN_CHARS])
    except _NotPlain:
        return None


def _bare(joined: str) -> bool:
    """Whether no cell in these ASCII cells' joined text has a character to escape: _quote then gives each cell
    its text in quotes."""
    return joined.isprintable() and '"' not in joined and "\\" not in joined


def _rows_text(rows: Any, bare: bool) -> str:
    """The texts of a state's rows of strs, comma-joined (their bounds checked by the caller); `bare` (_bare):
    each cell is its text in quotes, a row at once, with no call per cell."""
    if bare:
        return ",".join([_TEXT_HEAD[type(row)] + ('"' + '","'.join(row) + '"]}' if row else "]}") for row in rows])
    return ",".join([_TEXT_HEAD[type(row)] + ",".join(map(_quote, row)) + "]}" for row in rows])


def _plain_text(obj: Any, depth: int, left: list[int]) -> str:
    cls = type(obj)
    if cls is str:
        left[1] -= len(obj)
        if left[1] < 0 or not str.isascii(obj):   # a lone surrogate needs the general path's escaping
            raise _NotPlain
        return _quote(obj)
    if cls is int:
        if -_PLAIN_INT < obj < _PLAIN_INT:
            return int.__repr__(obj)
        raise _NotPlain
    if obj is None:
        return "null"
    if cls is bool:
        return "true" if obj else "false"
    if cls is float and _isfinite(obj):
        return float.__repr__(obj)
    if cls is set or cls is frozenset:   # a set of states (next_states): its elements sorted as the wire sorts
        if depth >= _PLAIN_DEPTH:        # them (canonical: for plain data, their text; see pack)
            raise _NotPlain
        left[0] -= len(obj)
        if left[0] < 0:
            raise _NotPlain
        return _SET_HEAD[cls] + ",".join(sorted([_plain_text(item, depth + 1, left) for item in obj])) + "]}"
    head = _TEXT_HEAD.get(cls)
    if (head is None and cls is not dict) or depth >= _PLAIN_DEPTH:
        raise _NotPlain
    left[0] -= len(obj)
    if left[0] < 0:
        raise _NotPlain
    depth += 1
    if head is not None:   # a row of strs or of ints (a state, a board): C loops instead of a call per item
        kinds = set(map(type, obj))
        if kinds <= _ONLY_STR:   # every str counted
            joined = "".join(obj)
            left[1] -= len(joined)
            if left[1] < 0 or not str.isascii(joined):
                raise _NotPlain
            return head + ",".join(map(_quote, obj)) + "]}"
        if kinds <= _ONLY_INT:
            if not (-_PLAIN_INT < min(obj) and max(obj) < _PLAIN_INT):
                raise _NotPlain
            return head + ",".join(map(int.__repr__, obj)) + "]}"
        if kinds <= _ONLY_ROWS:   # rows of strs (a state): every cell checked at once, no call per row
            cells = _chain(obj)
            found = set(map(type, cells))
            if found and found <= _ONLY_ROWS and depth + 1 < _PLAIN_DEPTH:
                # States of rows of strs (a path, a list of boards): what each state's own walk (the short way
                # below) would count and check, summed, and its text, without a call per state.
                inner = _chain(cells)
                if set(map(type, inner)) <= _ONLY_STR:
                    joined = "".join(inner)
                    left[0] -= len(cells) + len(inner)
                    left[1] -= len(joined)
                    if left[0] < 0 or left[1] < 0 or not str.isascii(joined):
                        raise _NotPlain
                    bare = _bare(joined)
                    return head + ",".join([_TEXT_HEAD[type(state)] + _rows_text(state, bare) + "]}"
                                            for state in obj]) + "]}"
            if found <= _ONLY_STR:
                # What each row's own walk would count and check, summed: the bounds only ever shrink, so
                # one check at the end refuses exactly what a check after each row would.
                joined = "".join(cells)
                left[0] -= len(cells)
                left[1] -= len(joined)
                if depth >= _PLAIN_DEPTH or left[0] < 0 or left[1] < 0 or not str.isascii(joined):
                    raise _NotPlain
                return head + _rows_text(obj, _bare(joined)) + "]}"
    if cls is dict:
        return '{"dict":[' + ",".join(["[" + _plain_text(key, depth, left) + "," + _plain_text(value, depth, left)
                                        + "]" for key, value in obj.items()]) + "]}"
    assert head is not None
    return head + ",".join([_quote(item) if type(item) is str and len(item) <= _SHORT and str.isascii(item)
                            else _plain_text(item, depth, left) for item in obj]) + "]}"


KEPT_TEXT = 1024            # the longest argument text call_text keeps
KEPT_ARGS = 4096            # and how many (then it forgets them all and starts again)


def keep(table: dict, key: Any, value: Any) -> None:
    """Put a state's text (or a text's state) in one of the tables call_text, pack, unpack and the parent's
    known_args keep: each forgets all it holds once it holds KEPT_ARGS, so a notebook sending ever new states
    keeps it small."""
    if len(table) >= KEPT_ARGS:
        table.clear()
    table[key] = value


def call_text(args: tuple, kept: dict[int, tuple]) -> str | None:
    """``plain_text(list(args))``, the text of an isolated helper's arguments, with the text of each argument that
    cannot change (a tuple of strs, ints and tuples of them: a puzzle state) kept in ``kept`` by its identity, the
    argument held alive there so that its id names no other object: A* sends its goal with every call, and each
    state it expands it sent before as a neighbour (or got from the parent: see unpack). The same text, refusing
    what plain_text refuses: a kept argument counts against the call's one budget what its walk counted when it
    was made. (A row of states takes plain_text's general walk of a list, which gives the text and the counts of
    its short way for rows of strs.)"""
    if not args or type(args) is not tuple or set(map(type, args)) != _ONLY_TUPLE:
        return plain_text(list(args))
    nodes, chars = _PLAIN_NODES - len(args), _PLAIN_CHARS
    texts = []
    for arg in args:
        known = kept.get(_identity(arg))
        if known is None or known[0] is not arg:
            left = [nodes, chars]
            try:
                text = _plain_text(arg, 1, left)
            except _NotPlain:
                return None
            known = (arg, text, nodes - left[0], chars - left[1])
            if len(text) <= KEPT_TEXT and frozen(arg):
                keep(kept, _identity(arg), known)
        nodes -= known[2]
        chars -= known[3]
        texts.append(known[1])
    if nodes < 0 or chars < 0:   # the counts only fall: a walk that overdrew would have refused where it did
        return None
    return '{"list":[' + ",".join(texts) + "]}"


_ONLY_TUPLE, _SCALARS = frozenset({tuple}), frozenset({str, int})


def frozen(obj: tuple) -> bool:
    """Whether a tuple holds only strs, ints and tuples of them (exact types): nothing in it can change."""
    kinds = set(map(type, obj))
    if kinds == _ONLY_TUPLE:   # rows (a state)
        return set(map(type, _chain(obj))) <= _SCALARS
    if kinds <= _SCALARS:
        return True
    return kinds <= _SCALARS | _ONLY_TUPLE and set(map(type, _chain([item for item in obj if type(item) is tuple]))) \
        <= _SCALARS


def pack(obj: Any, texts: dict[str, Any] | None = None) -> bytes | None:
    """A plain value (as plain_text takes, but any str, and no float that is not finite; a set or frozenset only
    as the whole value, of such elements) as a marker byte and marshal data: how the parent sends the reference's
    answers down to the child, which loads them in a few microseconds where JSON and the wire walk took tens.
    Only ever this way round: the parent never loads what a child made. None for anything else.
    A set's elements of short texts go into ``texts`` by their text (the parent's own: see process.known_args)."""
    left = [_PLAIN_NODES, _PLAIN_CHARS]
    kind = type(obj)
    try:
        if kind is set or kind is frozenset:
            # Its elements in the order the wire sorts them (canonical: for plain data, their plain_text), so the
            # child builds its set by the same insertions as from the wire: the set's order there owes nothing to
            # the parent's own hashes.
            # Each element's text goes down with it (and what its walk counted): the child sends the elements
            # back as arguments (A*'s next states), and call_text then need not write them again.
            left[0] -= len(obj)
            if left[0] < 0:
                raise _NotPlain
            keyed = []
            for element in obj:
                nodes, chars = left
                keyed.append((_plain_text(element, 1, left), element, nodes - left[0], chars - left[1]))
            keyed.sort(key=_first)
            if texts is not None:
                for text, element, _, _ in keyed:
                    if len(text) <= KEPT_TEXT and type(element) is tuple:
                        keep(texts, text, element)
            return (b"S" if kind is set else b"F") + _marshal_dumps(
                ([element for _, element, _, _ in keyed], [(text, nodes, chars) for text, _, nodes, chars in keyed]), 2)
        _packable(obj, 0, left)
    except _NotPlain:
        return None
    return b"M" + _marshal_dumps(obj, 2)   # version 2: no shared references, so every list is a list of its own


def _chain(rows: Any) -> list[Any]:
    """The cells of rows (lists or tuples), in order, as one list."""
    return list(_from_iterables(rows))


def _first(keyed: tuple) -> str:
    return keyed[0]


_SMALL_INT = b"Mi"     # pack's marker, then marshal's TYPE_INT (a signed 32-bit int follows, little-endian)
_int_from_bytes = int.from_bytes


def unpack(data: bytes, kept: dict[int, tuple] | None = None) -> object:
    """The value ``pack`` made (fresh objects on every call). The tuples of a set or frozenset go into ``kept``
    with their texts, as call_text keeps an argument it wrote (an element of a set cannot change: marshal made
    it of exact, hashable builtins). A small int (a distance: most answers of A*'s helpers) is read from its
    four bytes, as marshal would, without marshal's audit event (the child's audit hook runs at each)."""
    if len(data) == 6 and data[:2] == _SMALL_INT:
        return _int_from_bytes(data[2:], "little", signed=True)
    value = _marshal_loads(memoryview(data)[1:])
    marker = data[:1]
    if marker == b"M":
        return value
    elements, texts = value
    if kept is not None:
        for element, (text, nodes, chars) in zip(elements, texts, strict=True):
            if type(element) is tuple and len(text) <= KEPT_TEXT:
                keep(kept, _identity(element), (element, text, nodes, chars))
    return set(elements) if marker == b"S" else frozenset(elements)


def pack_prefetched(tail: bytes, more: list[tuple[str, str, bytes]]) -> bytes:
    """A reply to an isolated-helper call (its tail after the seq: pack's bytes, or the end of a JSON object) with
    the replies to calls the child is likely to make next, each as (helper, its arguments' text as the child
    writes it, reply): a marker byte and marshal data, parent to child only (grader/sandbox/prefetch.py)."""
    return b"P" + _marshal_dumps((tail, more), 2)


def unpack_prefetched(data: bytes) -> tuple[bytes, list[tuple[str, str, bytes]]]:
    """What pack_prefetched packed: the reply, and the other calls' replies."""
    tail, more = _marshal_loads(memoryview(data)[1:])
    return tail, more


def _packable(obj: Any, depth: int, left: list[int]) -> None:
    """Raises _NotPlain unless ``obj`` is within what the plain wire walk takes (counting every str, which is
    stricter). A sequence of strs, the rows of a puzzle state, is checked by C loops (map) instead of one by one."""
    cls = type(obj)
    if cls is str:
        left[1] -= len(obj)
        if left[1] < 0:
            raise _NotPlain
        return
    if cls is int:
        if -_PLAIN_INT < obj < _PLAIN_INT:
            return
        raise _NotPlain
    if obj is None or cls is bool or (cls is float and _isfinite(obj)):
        return
    if (cls is not list and cls is not tuple and cls is not dict) or depth >= _PLAIN_DEPTH:
        raise _NotPlain
    left[0] -= len(obj)
    if left[0] < 0:
        raise _NotPlain
    depth += 1
    if cls is dict:
        for key, value in obj.items():
            _packable(key, depth, left)
            _packable(value, depth, left)
        return
    if set(map(type, obj)) <= _ONLY_STR:   # exact strs only: their lengths cannot be anyone's code
        left[1] -= sum(map(len, obj))
        if left[1] < 0:
            raise _NotPlain
        return
    for item in obj:
        _packable(item, depth, left)


def encode(obj: object, limits: Limits = DEFAULT_LIMITS) -> Wire:
    """Turn a Python value into wire form; raises CodecError when a bound of ``limits`` is hit."""
    if limits is DEFAULT_LIMITS:
        try:
            return _encode_plain(obj, 0, [_PLAIN_NODES, _PLAIN_CHARS])
        except _NotPlain:
            pass
    budget = _Budget(limits)
    budget.add_items(1)
    numpy = _numpy_types()
    root: list[Wire] = [None]
    stack: list[tuple] = [(_VISIT, obj, 1, root, 0)]
    while stack:
        task = stack.pop()
        if task[0] == _VISIT:
            _, value, level, out, index = task
            out[index] = _encode_node(value, level, budget, stack, numpy)
        else:
            task[1](*task[2:])
    return root[0]


def _encode_node(obj, level, budget, stack, numpy) -> Wire:  # noqa: C901 - one dispatch table
    cls = type(obj)
    if obj is None or cls is bool:
        return obj
    if cls is int:
        return _check_int(obj)
    if cls is str:
        budget.add_chars(len(obj))
        return obj
    if cls is float:
        payload = _float_payload(obj)
        return payload if type(payload) is float else {"float": payload}
    tag = _CONTAINERS.get(cls)
    if tag is not None:
        return _encode_container(obj, cls, tag, None, level, budget, stack)
    if cls is bytes or cls is bytearray:
        return _encode_bytes(bytes(obj), None, budget)
    if numpy is not None:
        ndarray, generic = numpy
        if issubclass(cls, ndarray):
            return _encode_ndarray(obj, cls, ndarray, level, budget, stack)
        if issubclass(cls, generic):
            return _encode_npscalar(obj, generic, level, budget, stack)
    for base in _BASES:
        if issubclass(cls, base):
            name = _type_name(cls)
            budget.add_chars(len(name))
            if base is str:
                text = str.__str__(obj)
                budget.add_chars(len(text))
                return {"str": text, "class": name}
            if base is int:
                return {"int": _check_int(int.__int__(obj)), "class": name}
            if base is float:
                return {"float": _float_payload(float.__float__(obj)), "class": name}
            if base is bytes or base is bytearray:
                return _encode_bytes(bytes(memoryview(obj)), name, budget)
            return _encode_container(obj, base, _CONTAINERS[base], name, level, budget, stack)
    name = _type_name(cls)
    text = _safe_repr(obj)
    budget.add_chars(len(name) + len(text))
    return {"opaque": name, "repr": text}


def _encode_bytes(data: bytes, name: str | None, budget: _Budget) -> Wire:
    budget.add_chars(_b64_len(len(data)))
    node = {"bytes": _b2a_base64(data, newline=False).decode("ascii")}
    if name is not None:
        node["class"] = name
    return node


def _encode_container(obj, base, tag, name, level, budget, stack) -> Wire:
    budget.enter(level)
    # Length first, through the base type's slot: a million-item list trips before it is copied.
    declared = base.__len__(obj)
    budget.add_items(2 * declared if base is dict else declared)
    items = list(dict.items(obj)) if base is dict else list(base.__iter__(obj))
    if len(items) > declared:
        budget.add_items((2 if base is dict else 1) * (len(items) - declared))
    node: dict[str, Any]
    child = level + 1
    if base is dict:
        pairs = [[None, None] for _ in items]
        node = {"dict": pairs}
        for pair, (key, value) in zip(reversed(pairs), reversed(items), strict=True):
            stack.append((_VISIT, value, child, pair, 1))
            stack.append((_VISIT, key, child, pair, 0))
    else:
        elements: list[Wire] = [None] * len(items)
        node = {tag: elements}
        if base is set or base is frozenset:
            # Runs after every element is encoded (the stack is last in, first out).
            stack.append((_FINISH, _sort_canonical, elements))
        _fill(items, elements, child, budget, stack)
    if name is not None:
        node["class"] = name
    return node


def _fill(items: Sequence[Any], out: list[Any], child: int, budget: _Budget, stack: list[tuple]) -> None:
    """Put each of ``items`` (a container's children, to encode or to decode) at its index in ``out``. Plain
    scalars go inline: most of a large value is ints and strs, and a task per leaf is slow. Anything else
    becomes a task, pushed last first so the stack (last in, first out) visits them in order."""
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        kind = type(item)
        if kind is str:
            budget.add_chars(len(item))
            out[i] = item
        elif kind is int:
            out[i] = _check_int(item)
        elif item is None or kind is bool or (kind is float and _isfinite(item)):
            out[i] = item
        else:
            stack.append((_VISIT, item, child, out, i))


def _sort_canonical(elements: list[Wire]) -> None:
    elements.sort(key=canonical)


def _nd_counts(shape: tuple[int, ...], cap: int) -> int:
    """Nodes an array of this shape needs (inner lists plus leaves), stopping once past ``cap``."""
    total = 0
    product = 1
    for dim in shape:
        product *= dim
        total += product
        if total > cap:
            return total
    return total if shape else 1


def _encode_ndarray(obj, cls, ndarray, level, budget, stack) -> Wire:
    shape = tuple(ndarray.shape.__get__(obj))
    dtype = str(ndarray.dtype.__get__(obj))
    levels = max(len(shape), 1)
    budget.enter(level + levels - 1)
    budget.add_items(_nd_counts(shape, budget.limits.max_items))
    budget.add_chars(len(dtype))
    node: dict[str, Any] = {"ndarray": None, "dtype": dtype, "shape": list(shape)}
    if cls is not ndarray:
        name = _type_name(cls)
        budget.add_chars(len(name))
        node["class"] = name
    leaves = [leaf for _, leaf in _nd_leaves(ndarray.tolist(obj), shape)]
    flat: list[Wire] = [None] * len(leaves)
    stack.append((_FINISH, _set_nd_data, node, flat, shape))
    for i in range(len(leaves) - 1, -1, -1):
        stack.append((_VISIT, leaves[i], level + levels, flat, i))
    return node


def _set_nd_data(node: dict, flat: list, shape: tuple[int, ...]) -> None:
    node["ndarray"] = _reshape(flat, shape, list)


def _encode_npscalar(obj, generic, level, budget, stack) -> Wire:
    budget.enter(level)
    budget.add_items(1)
    dtype = str(generic.dtype.__get__(obj))
    budget.add_chars(len(dtype))
    node = {"npscalar": None, "dtype": dtype}
    stack.append((_VISIT, generic.item(obj), level + 1, node, "npscalar"))
    return node


def _nd_leaves(data: Any, shape: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], Any]]:
    """Yield (index, leaf) of array data nested as lists, row-major, checking it matches ``shape``."""
    if not shape:
        yield (), data
        return
    last = len(shape) - 1
    stack: list[tuple[tuple[int, ...], Any]] = [((), data)]
    while stack:
        index, node = stack.pop()
        depth = len(index)
        if type(node) is not list or len(node) != shape[depth]:
            raise CodecError(f"ndarray data does not match its shape {tuple(shape)} at {_index_path(index)}")
        if depth == last:
            for i, leaf in enumerate(node):
                yield index + (i,), leaf
        else:
            for i in range(len(node) - 1, -1, -1):
                stack.append((index + (i,), node[i]))


def _reshape(flat: list, shape: tuple[int, ...], make: Callable) -> Any:
    """Nest row-major ``flat`` leaves by ``shape`` with ``make`` (list or tuple); 0-d gives the leaf."""
    if not shape:
        return flat[0]
    zero = next((k for k, dim in enumerate(shape) if dim == 0), None)
    if zero == 0:
        return make()
    if zero is not None:
        # numpy's tolist() keeps the lists above the first empty dimension: shape (2, 0) -> [[], []].
        count = _prod(shape[:zero])
        items: list = [make() for _ in range(count)]
        dims = shape[1:zero]
    else:
        items = flat
        dims = shape[1:]
    for dim in reversed(dims):
        items = [make(items[i : i + dim]) for i in range(0, len(items), dim)]
    return make(items)


def _index_path(index: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in index) or "the top"


# ---------------------------------------------------------------------------------------------- wire nodes

_SCALAR_KINDS = frozenset({"none", "bool", "int", "float", "str", "bytes", "opaque"})
_SEQUENCE_KINDS = frozenset({"list", "tuple", "set", "frozenset"})
# tag -> (keys it requires besides the tag, keys it may have)
_TAGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "float": ((), ("class",)),
    "list": ((), ("class",)),
    "tuple": ((), ("class",)),
    "set": ((), ("class",)),
    "frozenset": ((), ("class",)),
    "dict": ((), ("class",)),
    "bytes": ((), ("class",)),
    "str": (("class",), ()),
    "int": (("class",), ()),
    "ndarray": (("dtype", "shape"), ("class",)),
    "npscalar": (("dtype",), ()),
    "opaque": (("repr",), ()),
}


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _node(wire: Wire, budget: _Budget | None = None) -> tuple[str, str | None, Any, Any]:
    """Check one wire node (not its children) and return (kind, class mark, value, extra).

    value is the Python scalar for scalar kinds (bytes decoded, Opaque built), the child wires for
    containers (``[[k, v], ...]`` for dict), the nested data for ndarray and the item wire for npscalar;
    extra is (dtype, shape) for ndarray, dtype for npscalar and the type name for opaque.
    """
    kind = type(wire)
    if wire is None:
        return "none", None, None, None
    if kind is bool:
        return "bool", None, wire, None
    if kind is int:
        return "int", None, _check_int(wire), None
    if kind is float:
        if not _isfinite(wire):
            raise CodecError('a non-finite float must be tagged ({"float": "nan"})')
        return "float", None, wire, None
    if kind is str:
        if budget is not None:
            budget.add_chars(len(wire))
        return "str", None, wire, None
    if kind is list:
        raise CodecError("a bare JSON list is not a value (lists are tagged {\"list\": [...]})")
    if kind is not dict:
        raise CodecError(f"wire holds a {_short(kind.__name__)}, which is not JSON data")
    tags = [key for key in wire if type(key) is str and key in _TAGS]
    if len(tags) != 1:
        keys = _short(", ".join(repr(key) for key in list(wire)[:5]), 80)
        raise CodecError(f"a tagged value needs exactly one known tag, got keys [{keys}]")
    tag = tags[0]
    required, optional = _TAGS[tag]
    for key in wire:
        if key != tag and key not in required and key not in optional:
            raise CodecError(f"unexpected key {_short(repr(key))} in a {tag} value")
    for key in required:
        if key not in wire:
            raise CodecError(f"a {tag} value lacks its {key!r}")
    mark = None
    if "class" in wire:
        mark = wire["class"]
        if type(mark) is not str:
            raise CodecError(f"the class of a {tag} value must be a string")
        if budget is not None:
            budget.add_chars(len(mark))
    payload = wire[tag]
    if tag == "float":
        if type(payload) is str and payload in _NON_FINITE:
            return "float", mark, _NON_FINITE[payload], None
        if type(payload) is float and mark is not None and _isfinite(payload):
            return "float", mark, payload, None
        raise CodecError(f"malformed float value {_short(repr(payload))}")
    if tag in _SEQUENCE_KINDS:
        if type(payload) is not list:
            raise CodecError(f"a {tag} value must hold a JSON list")
        return tag, mark, payload, None
    if tag == "dict":
        if type(payload) is not list:
            raise CodecError("a dict value must hold a JSON list of [key, value] pairs")
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise CodecError("a dict entry must be a [key, value] pair")
        return "dict", mark, payload, None
    if tag == "str":
        if type(payload) is not str:
            raise CodecError("a str value must hold a JSON string")
        if budget is not None:
            budget.add_chars(len(payload))
        return "str", mark, payload, None
    if tag == "int":
        if type(payload) is not int:
            raise CodecError("an int value must hold a JSON integer")
        return "int", mark, _check_int(payload), None
    if tag == "bytes":
        if type(payload) is not str:
            raise CodecError("a bytes value must hold base64 text")
        if budget is not None:
            budget.add_chars(len(payload))
        try:
            data = _b64decode(payload, validate=True)
        except (_Base64Error, ValueError) as error:
            raise CodecError(f"a bytes value holds invalid base64: {error}") from None
        return "bytes", mark, data, None
    if tag == "opaque":
        text = wire["repr"]
        if type(payload) is not str or type(text) is not str:
            raise CodecError("an opaque value needs string 'opaque' and 'repr'")
        if budget is not None:
            budget.add_chars(len(payload) + len(text))
        return "opaque", None, Opaque(payload, text), payload
    dtype = wire["dtype"]
    if type(dtype) is not str:
        raise CodecError(f"the dtype of a {tag} value must be a string")
    if budget is not None:
        budget.add_chars(len(dtype))
    if tag == "npscalar":
        return "npscalar", None, payload, dtype
    shape = wire["shape"]
    if type(shape) is not list:
        raise CodecError("an ndarray shape must be a JSON list of integers")
    for dim in shape:
        if type(dim) is not int or dim < 0:
            raise CodecError("an ndarray shape must be a JSON list of non-negative integers")
    return "ndarray", mark, payload, (dtype, tuple(shape))


# ---------------------------------------------------------------------------------------------- decode

_BUILDERS: dict[str, Callable[[list], Any]] = {"list": list, "tuple": tuple}


def _build_hashed(make: Callable, parts: list, what: str) -> Any:
    try:
        return make(parts)
    except TypeError as error:
        raise CodecError(f"{what} is not hashable: {error}") from None


def _build_dict(parts: list) -> dict:
    pairs = iter(parts)
    return _build_hashed(lambda _: dict(zip(pairs, pairs, strict=True)), parts, "a dict key")


_BUILDERS["set"] = lambda parts: _build_hashed(set, parts, "a set element")
_BUILDERS["frozenset"] = lambda parts: _build_hashed(frozenset, parts, "a frozenset element")
_BUILDERS["dict"] = _build_dict
_BUILDERS["npscalar"] = lambda parts: parts[0]


def decode(wire: Wire, limits: Limits = DEFAULT_LIMITS) -> object:
    """Turn untrusted wire data back into plain Python (class marks dropped); raises CodecError when
    it is malformed or breaks a bound of ``limits``."""
    if limits is DEFAULT_LIMITS:
        try:
            return _decode_plain(wire, 0, [_PLAIN_NODES, _PLAIN_CHARS])
        except _NotPlain:
            pass
    budget = _Budget(limits)
    budget.add_items(1)
    root: list[Any] = [None]
    stack: list[tuple] = [(_VISIT, wire, 1, root, 0)]
    while stack:
        task = stack.pop()
        if task[0] == _VISIT:
            _, node, level, out, index = task
            out[index] = _decode_node(node, level, out, index, budget, stack)
        else:
            _, build, parts, out, index = task
            out[index] = build(parts)
    return root[0]


def _decode_node(wire, level, out, index, budget, stack) -> Any:
    kind, _mark, value, extra = _node(wire, budget)
    if kind in _SCALAR_KINDS:
        return value
    budget.enter(level)
    child = level + 1
    if kind == "ndarray":
        dtype, shape = extra
        levels = max(len(shape), 1)
        budget.enter(level + levels - 1)
        budget.add_items(_nd_counts(shape, budget.limits.max_items))
        children = [leaf for _, leaf in _nd_leaves(value, shape)]
        child = level + levels
        build: Callable = lambda parts: NDArray(dtype, shape, _reshape(parts, shape, tuple))  # noqa: E731
    elif kind == "dict":
        budget.add_items(2 * len(value))
        children = [part for pair in value for part in pair]
        build = _BUILDERS["dict"]
    elif kind == "npscalar":
        budget.add_items(1)
        children = [value]
        build = _BUILDERS["npscalar"]
    else:
        budget.add_items(len(value))
        children = value
        build = _BUILDERS[kind]
    parts: list[Any] = [None] * len(children)
    stack.append((_FINISH, build, parts, out, index))
    _fill(children, parts, child, budget, stack)
    return None


# ---------------------------------------------------------------------------------------------- compare

_BASE_LABEL = {"none": "NoneType", "npscalar": "numpy scalar"}
_CONTAINER_KINDS = _SEQUENCE_KINDS | {"dict", "ndarray"}
_SET_MATCH_BUDGET = 10_000  # pairs tried when exact matching leaves elements over (floats within tolerance)


def canonical(wire: Wire) -> str:
    """One text per wire value (sorted keys, compact): used for sorting set elements and for hashing."""
    return "".join(_CANONICAL(wire, 0))


def _not_json(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not wire data")


def _canonical_encoder() -> Callable[[Wire, int], Any]:
    """One encoder for all calls (json.dumps with options builds a new JSONEncoder every time, which dominates
    sorting a large set), made of the C accelerator's parts: the json package's Python code runs on builtins
    the student may have patched in the child."""
    try:
        from _json import encode_basestring, make_encoder
    except ImportError:  # pragma: no cover - CPython always has _json
        encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return lambda wire, _level: encoder.encode(wire)
    return make_encoder(None, _not_json, encode_basestring, None, ":", ",", True, False, True)


_CANONICAL = _canonical_encoder()


@dataclass(frozen=True)
class Difference:
    """The first difference of two values: what kind it is, with none of their values in it ("expected str,
    got int", "wrong value"), and the message that shows it with the values and where it is."""

    cause: str
    message: str


def same(expected: Wire, got: Wire, tolerance: float = 0.0, *, limits: Limits = DEFAULT_LIMITS,
         validated: bool = False) -> str | None:
    """Type-strict comparison of two wire values: None when equal, else a message naming the first
    difference and where it is. Both are validated first (CodecError when malformed or over ``limits``),
    unless the caller already did (`validated`)."""
    found = difference(expected, got, tolerance, limits=limits, validated=validated)
    return None if found is None else found.message


def difference(expected: Wire, got: Wire, tolerance: float = 0.0, *, limits: Limits = DEFAULT_LIMITS,
               validated: bool = False) -> Difference | None:
    """`same`, with the kind of the difference as a fact beside its message."""
    if not validated:
        decode(expected, limits)
        decode(got, limits)
    if canonical(expected) == canonical(got):
        return None  # identical text is equal under every rule below, and far cheaper to find
    return _compare(expected, got, tolerance)


def _compare(expected: Wire, got: Wire, tolerance: float) -> Difference | None:  # noqa: C901 - one walk
    stack: list[tuple[str, Wire, Wire]] = [("", expected, got)]
    while stack:
        path, e, g = stack.pop()
        kind = type(e)
        if kind is type(g) and (kind is int or kind is str or kind is bool or e is None):
            if e != g:
                return Difference("wrong value", (f"at {path}: " if path else "")
                                  + f"expected {describe(e, 80)}, got {describe(g, 80)}")
            continue
        e_kind, e_mark, e_value, e_extra = _node(e)
        g_kind, g_mark, g_value, g_extra = _node(g)
        where = f"at {path}: " if path else ""
        if e_kind != g_kind or e_mark != g_mark:
            return Difference(f"expected {_label(e_kind, e_mark, e_extra, False)}, got "
                              f"{_label(g_kind, g_mark, g_extra, False)}",
                              where + _type_mismatch(e, e_kind, e_mark, e_extra, g, g_kind, g_mark, g_extra))
        if e_kind == "list" or e_kind == "tuple":
            if len(e_value) != len(g_value):
                return Difference(f"a {e_kind} of the wrong length",
                                  where + f"expected a {e_kind} of length {len(e_value)}, got length {len(g_value)}")
            for i in range(len(e_value) - 1, -1, -1):
                stack.append((f"{path}[{i}]", e_value[i], g_value[i]))
        elif e_kind == "set" or e_kind == "frozenset":
            message = _compare_sets(e_kind, e_value, g_value, tolerance)
            if message is not None:
                return Difference(f"wrong {e_kind} elements", where + message)
        elif e_kind == "dict":
            message, pairs = _compare_dicts(path, e_value, g_value)
            if message is not None:
                return Difference("wrong dict keys", where + message)
            stack.extend(reversed(pairs))
        elif e_kind == "ndarray":
            if e_extra[0] != g_extra[0]:
                return Difference(f"expected an array of dtype {e_extra[0]}, got dtype {g_extra[0]}",
                                  where + f"expected an array of dtype {e_extra[0]}, got dtype {g_extra[0]}")
            if e_extra[1] != g_extra[1]:
                return Difference("an array of the wrong shape",
                                  where + f"expected an array of shape {e_extra[1]}, got shape {g_extra[1]}")
            e_leaves = list(_nd_leaves(e_value, e_extra[1]))
            g_leaves = list(_nd_leaves(g_value, g_extra[1]))
            for (index, e_leaf), (_, g_leaf) in zip(reversed(e_leaves), reversed(g_leaves), strict=True):
                stack.append((path + "".join(f"[{i}]" for i in index), e_leaf, g_leaf))
        elif e_kind == "npscalar":
            if e_extra != g_extra:
                return Difference(f"expected a numpy {e_extra}, got a numpy {g_extra}",
                                  where + f"expected a numpy {e_extra}, got a numpy {g_extra}")
            stack.append((path, e_value, g_value))
        elif e_kind == "float":
            if not _floats_equal(e_value, g_value, tolerance):
                within = f" (tolerance {tolerance})" if tolerance else ""
                return Difference("wrong value", where + f"expected {e_value!r}, got {g_value!r}{within}")
        elif e_value != g_value:
            return Difference("wrong value", where + f"expected {describe(e, 80)}, got {describe(g, 80)}")
    return None


def _floats_equal(a: float, b: float, tolerance: float) -> bool:
    if a == b or (_isnan(a) and _isnan(b)):
        return True
    return tolerance > 0 and abs(a - b) <= tolerance


def _short_class(mark: str) -> str:
    return mark.rsplit(".", 1)[-1] or mark


def _label(kind: str, mark: str | None, extra: Any, inline: bool) -> str:
    if kind == "opaque":
        return _short_class(extra)
    if kind == "npscalar":
        return f"numpy.{extra}"
    base = _BASE_LABEL.get(kind, kind)
    if mark is None:
        return base
    return f"{_short_class(mark)}, a subclass of {base}" if inline else f"{_short_class(mark)} (a subclass of {base})"


def _type_mismatch(e, e_kind, e_mark, e_extra, g, g_kind, g_mark, g_extra) -> str:
    if e_kind in _CONTAINER_KINDS and g_kind in _CONTAINER_KINDS:
        return f"expected {_label(e_kind, e_mark, e_extra, False)}, got {_label(g_kind, g_mark, g_extra, False)}"
    return (
        f"expected {describe(e, 80)} ({_label(e_kind, e_mark, e_extra, True)}), "
        f"got {describe(g, 80)} ({_label(g_kind, g_mark, g_extra, True)})"
    )


def _some(wires: list[Wire]) -> str:
    shown = ", ".join(describe(wire, 60) for wire in wires[:3])
    return shown + (f" and {len(wires) - 3} more" if len(wires) > 3 else "")


def _compare_sets(kind: str, expected: list[Wire], got: list[Wire], tolerance: float) -> str | None:
    e_texts = [canonical(wire) for wire in expected]
    g_texts = [canonical(wire) for wire in got]
    e_count, g_count = Counter(e_texts), Counter(g_texts)
    missing_count, extra_count = e_count - g_count, g_count - e_count
    if not missing_count and not extra_count:
        return None
    missing = _take(expected, e_texts, missing_count)
    extra = _take(got, g_texts, extra_count)
    if missing and extra and len(missing) * len(extra) <= _SET_MATCH_BUDGET:
        # Exact text differs but the values may still be equal: floats within tolerance, 0.0 and -0.0.
        unmatched = []
        for wire in missing:
            for j, candidate in enumerate(extra):
                if _may_equal(wire, candidate) and _compare(wire, candidate, tolerance) is None:
                    del extra[j]
                    break
            else:
                unmatched.append(wire)
        missing = unmatched
        if not missing and not extra:
            return None
    if len(expected) != len(got):
        head = f"expected a {kind} of {len(expected)} element{'s' * (len(expected) != 1)}, got {len(got)}"
    else:
        head = f"{kind} differs"
    parts = []
    if missing:
        parts.append("missing " + _some(missing))
    if extra:
        parts.append("unexpected " + _some(extra))
    return head + ": " + "; ".join(parts)


def _may_equal(expected: Wire, got: Wire) -> bool:
    """Whether two wire values whose canonical texts differ may still be equal (a float within tolerance, 0.0 and
    -0.0, dict entries or set elements in another order), by their outermost node alone: the same kind and
    class, and a list or tuple of the same length. An int, str, bool or None is equal only to its own text.
    A set's elements are matched pair by pair (up to _SET_MATCH_BUDGET pairs), and a full comparison of a pair
    of different kinds describes both: 1,700 ints beside three missing states cost 0.08 s a comparison."""
    kind = type(expected)
    if kind is not type(got) or kind is int or kind is str or kind is bool or expected is None:
        return kind is float and type(got) is float
    if kind is not dict:
        return True
    tag = next((key for key in expected if key in _TAGS), None)
    if tag is None or expected.keys() != got.keys() or expected.get("class") != got.get("class"):
        return False
    payload, other = expected[tag], got[tag]
    return not (tag in ("list", "tuple") and type(payload) is list and type(other) is list
                and len(payload) != len(other))


def _take(wires: list[Wire], texts: list[str], wanted: Counter) -> list[Wire]:
    left = Counter(wanted)
    taken = []
    for wire, text in zip(wires, texts, strict=True):
        if left[text] > 0:
            left[text] -= 1
            taken.append(wire)
    return taken


def _compare_dicts(path: str, expected: list, got: list) -> tuple[str | None, list]:
    e_map = {canonical(key): (key, value) for key, value in expected}
    g_map = {canonical(key): (key, value) for key, value in got}
    if len(e_map) != len(expected) or len(g_map) != len(got):
        # Keys that only look alike (opaque objects with one repr): compare whole entries as a multiset.
        e_entries = Counter(canonical(pair) for pair in expected)
        g_entries = Counter(canonical(pair) for pair in got)
        return (None if e_entries == g_entries else "dict entries differ"), []
    missing = [key for text, (key, _) in e_map.items() if text not in g_map]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"missing key {describe(missing[0], 60)}{more}", []
    extra = [key for text, (key, _) in g_map.items() if text not in e_map]
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        return f"unexpected key {describe(extra[0], 60)}{more}", []
    pairs = [(f"{path}[{describe(key, 40)}]", value, g_map[text][1]) for text, (key, value) in e_map.items()]
    return None, pairs


# ---------------------------------------------------------------------------------------------- render

_LIT, _WIRE, _GEN = 0, 1, 2


def describe(wire: Wire, limit: int = 300) -> str:
    """A Python-like rendering of a wire value for messages, cut to ``limit`` characters with '...'."""
    out: list[str] = []
    length = 0
    stack: list[Iterator[tuple[int, Any]]] = [iter(((_WIRE, wire),))]
    while stack:
        token = next(stack[-1], None)
        if token is None:
            stack.pop()
            continue
        kind, item = token
        if kind == _LIT:
            out.append(item)
            length += len(item)
            if length > limit:
                break
        elif kind == _WIRE:
            stack.append(_tokens(item, limit))
        else:
            stack.append(item)
    text = "".join(out)
    if len(text) > limit:
        return text[: max(limit - 3, 0)] + "..."
    return text


def _joined(items: Iterator[Any] | list, render: Callable[[Any], Iterator]) -> Iterator[tuple[int, Any]]:
    first = True
    for item in items:
        if not first:
            yield _LIT, ", "
        first = False
        yield from render(item)


def _as_wire(item: Wire) -> Iterator[tuple[int, Any]]:
    yield _WIRE, item


def _as_entry(pair: list) -> Iterator[tuple[int, Any]]:
    yield _WIRE, pair[0]
    yield _LIT, ": "
    yield _WIRE, pair[1]


def _tokens(wire: Wire, limit: int) -> Iterator[tuple[int, Any]]:
    kind, mark, value, extra = _node(wire)
    if mark is not None:
        yield _LIT, _short_class(mark) + "("
    if kind == "str" or kind == "bytes":
        yield _LIT, repr(value[: limit + 1])
    elif kind in ("none", "bool", "int", "float"):
        yield _LIT, repr(value)
    elif kind == "opaque":
        yield _LIT, f"<opaque {_short_class(value.type)}: {value.repr}>"
    elif kind == "list":
        yield _LIT, "["
        yield from _joined(value, _as_wire)
        yield _LIT, "]"
    elif kind == "tuple":
        yield _LIT, "("
        yield from _joined(value, _as_wire)
        yield _LIT, ",)" if len(value) == 1 else ")"
    elif kind == "set" or kind == "frozenset":
        if not value:
            yield _LIT, f"{kind}()"
        else:
            yield _LIT, "{" if kind == "set" else "frozenset({"
            yield from _joined(value, _as_wire)
            yield _LIT, "}" if kind == "set" else "})"
    elif kind == "dict":
        yield _LIT, "{"
        yield from _joined(value, _as_entry)
        yield _LIT, "}"
    elif kind == "ndarray":
        dtype, shape = extra
        yield _LIT, "array("
        yield _GEN, _nd_tokens(value, len(shape))
        yield _LIT, f", dtype={dtype})"
    else:  # npscalar
        yield _LIT, f"np.{extra}("
        yield _WIRE, value
        yield _LIT, ")"
    if mark is not None:
        yield _LIT, ")"


def _nd_tokens(data: Any, ndim: int) -> Iterator[tuple[int, Any]]:
    if ndim == 0:
        yield _WIRE, data
        return
    if type(data) is not list:
        raise CodecError("ndarray data does not match its shape")
    yield _LIT, "["
    yield from _joined(data, lambda item: iter(((_GEN, _nd_tokens(item, ndim - 1)),)))
    yield _LIT, "]"


def size(wire: Wire) -> int:
    """Number of value nodes in a wire value (a dict entry counts its key and value; an array counts its
    elements): the measure generated cases are sorted by, smallest first. Meant for wires the grader made
    or has already decoded; it checks each node but applies no Limits."""
    count = 0
    stack = [wire]
    while stack:
        node = stack.pop()
        count += 1
        kind, _mark, value, extra = _node(node)
        if kind in _SEQUENCE_KINDS:
            stack.extend(value)
        elif kind == "dict":
            for pair in value:
                stack.extend(pair)
        elif kind == "ndarray":
            stack.extend(leaf for _, leaf in _nd_leaves(value, extra[1]))
    return count


def decode_for_student(wire: Wire) -> Any:
    """A case's input as student code receives it: decoded, with every NDArray a real numpy array again.

    Plain data (states as tuples of str: nearly every case input) is decoded in one walk, which cannot meet an
    array, so it needs no second walk through with_arrays (a third of a small case's cost in the sandbox)."""
    try:
        return _decode_plain(wire, 0, [_PLAIN_NODES, _PLAIN_CHARS])
    except _NotPlain:
        return with_arrays(decode(wire))


# The most bytes an array rebuilt by with_arrays may hold. Its dtype and shape are the wire's word, and the wire may be
# the child's (the data of an isolated method's call, rebuilt in the parent for the reference): a call of three
# one-letter strings of dtype "U100000000" made the trusted parent allocate and fill 1.2 GB (2.8 s of CPU, in C,
# where no alarm stops it), and a larger dtype or shape the machine's memory. A puzzle's board is a few hundred bytes.
MAX_ARRAY_BYTES = 16 * 1024 * 1024
MAX_DTYPE_CHARS = 200


def _array_dtype(numpy: Any, value: NDArray) -> Any:
    """The numpy dtype of `value`, if an array of it and its shape stays within MAX_ARRAY_BYTES; CodecError if not.
    A dtype of no size ("U", "S0") takes its size from the data, which no honest encoding writes (numpy's arrays
    have sized dtypes): refused too."""
    if len(value.dtype) > MAX_DTYPE_CHARS:
        raise CodecError(f"an ndarray dtype of {len(value.dtype)} characters is over the {MAX_DTYPE_CHARS} allowed")
    try:
        dtype = numpy.dtype(value.dtype)
    except (TypeError, ValueError, SyntaxError) as error:
        raise CodecError(f"an ndarray dtype {_short(value.dtype)!r} is not numpy's: {error}") from None
    count = 1
    for extent in value.shape:
        count *= extent
    if dtype.itemsize == 0 and count:
        raise CodecError(f"an ndarray dtype {_short(value.dtype)!r} has no size")
    if dtype.itemsize * count > MAX_ARRAY_BYTES:
        raise CodecError(f"an ndarray of shape {tuple(value.shape)} and dtype {_short(value.dtype)!r} would hold "
                         f"{dtype.itemsize * count} bytes, over the {MAX_ARRAY_BYTES} allowed")
    return dtype


def with_arrays(value: Any) -> Any:
    """Decoded data with every NDArray made a real numpy array again, for student code (numpy if present) or for the
    reference; CodecError when one would be over MAX_ARRAY_BYTES (_array_dtype)."""
    if isinstance(value, NDArray):
        try:
            import numpy
        except ImportError:
            return value
        return numpy.array(value.data, dtype=_array_dtype(numpy, value)).reshape(value.shape)
    if isinstance(value, list):
        return [with_arrays(v) for v in value]
    if isinstance(value, tuple):
        return tuple(with_arrays(v) for v in value)
    if isinstance(value, dict):
        return {k: with_arrays(v) for k, v in value.items()}
    return value
