"""Length-prefixed JSON frames over pipe file descriptors, between the grader and its sandbox child.

Why frames: the parent must take exactly one answer per request from a dedicated pipe, never block past
a case's deadline, and survive a child that dies or is killed halfway through writing. A frame is a
4-byte big-endian unsigned length followed by that many bytes of UTF-8 JSON holding one object (or, for the
parent's requests only, of marshal data: see marshal_frame).

The module is loaded into the untrusted child as a plain top-level module, so it imports only the
standard library (and not ``codec``: values are encoded before they reach this layer).
"""

from __future__ import annotations

import builtins as _builtins
import json
import marshal
import math
import os
import select
import struct
import time
from typing import Any

# Private references. In the child this module shares a process with student code, which may rebind
# `builtins.len`, `json.dumps`, `os.write` and the like: every function below resolves builtins in this
# snapshot and calls the originals bound here, so a patch harms only the student's own code.
__builtins__ = dict(_builtins.__dict__)  # type: ignore[assignment]  # a private snapshot, on purpose
_os_read, _os_write, _set_blocking = os.read, os.write, os.set_blocking
_poll_new, _select, _POLL_IN, _POLL_OUT = getattr(select, "poll", None), select.select, 0, 0
if _poll_new is not None:
    _POLL_IN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
    _POLL_OUT = select.POLLOUT | select.POLLHUP | select.POLLERR
_DATA = getattr(select, "POLLIN", 1) | getattr(select, "POLLPRI", 2)   # bytes to read (POLLHUP alone: EOF)
_ceil, _isfinite, _monotonic = math.ceil, math.isfinite, time.monotonic
_marshal_dumps, _marshal_loads = marshal.dumps, marshal.loads

__all__ = [
    "CHUNK",
    "MAX_FRAME",
    "Closed",
    "FrameError",
    "FrameReader",
    "FrameStream",
    "Outbox",
    "Timeout",
    "encode_body",
    "encode_frame",
    "frame_of",
    "json_text",
    "marshal_frame",
    "pending",
    "read_frame_blocking",
    "read_request_blocking",
    "send",
]

MAX_FRAME = 64 * 1024 * 1024
CHUNK = 1024 * 1024
# What one read asks for when no frame in progress needs more: an isolated-helper answer is a few hundred bytes,
# and a read of CHUNK costs the reader a 1 MB allocation (mmap, mremap and munmap: three system calls) each time.
SMALL_READ = 64 * 1024
_HEADER = struct.Struct(">I")


class Closed(EOFError):
    """The other end closed the pipe (possibly in the middle of a frame)."""


class FrameError(ValueError):
    """A frame is malformed: its length is over the bound, or its body is not UTF-8 JSON of one object."""


class Timeout(TimeoutError):
    """The deadline passed before a whole frame arrived; what did arrive stays buffered."""


def _unserializable(value: object) -> object:
    raise TypeError(f"a frame holds only JSON data, not {type(value).__name__}")


def _c_dumps(ascii: bool):  # noqa: ANN202 - a C encoder's call
    """A compact, strict JSON encoder made of the C accelerator's parts only, so no Python-level code of the
    json package (which a student may patch, or break through patched builtins) runs when a frame is made."""
    try:
        from _json import encode_basestring, encode_basestring_ascii, make_encoder
    except ImportError:  # pragma: no cover - CPython always has _json
        return json.JSONEncoder(ensure_ascii=ascii, separators=(",", ":"), allow_nan=False).iterencode
    encoder = make_encoder(None, _unserializable, encode_basestring_ascii if ascii else encode_basestring,
                           None, ":", ",", False, False, False)
    return lambda message: encoder(message, 0)


_DUMP_UTF8, _DUMP_ASCII = _c_dumps(False), _c_dumps(True)


def encode_frame(message: dict) -> bytes:
    """The bytes of one frame holding ``message`` (a JSON object)."""
    body = encode_body(message)
    return _HEADER.pack(len(body)) + body


def encode_body(message: dict) -> bytes:
    """The body of the frame encode_frame makes of ``message``: the bytes a reader's read_body returns."""
    if type(message) is not dict:
        raise TypeError(f"a frame holds a dict, not {type(message).__name__}")
    try:
        body = "".join(_DUMP_UTF8(message)).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in a Python str, not in UTF-8): escape it as \udXXX instead.
        body = "".join(_DUMP_ASCII(message)).encode("ascii")
    if len(body) > MAX_FRAME:
        raise FrameError(f"frame of {len(body)} bytes is over the {MAX_FRAME}-byte limit")
    return body


def json_text(value: object) -> str:
    """The compact JSON text of plain data, as a frame holds it (lone surrogates escaped)."""
    text = "".join(_DUMP_UTF8(value))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join(_DUMP_ASCII(value))
    return text


def frame_of(body: str | bytes) -> bytes:
    """The bytes of one frame whose body is ``body``, the JSON text of one object (json_text pieces)."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    if len(data) > MAX_FRAME:
        raise FrameError(f"frame of {len(data)} bytes is over the {MAX_FRAME}-byte limit")
    return _HEADER.pack(len(data)) + data


# The first byte of a request frame whose body is marshal data (a JSON body starts with "{").
MARSHALLED = b"M"


def marshal_frame(message: dict) -> bytes:
    """The bytes of one request frame holding ``message`` as marshal data, which the child loads in a fifth of
    JSON's time (and bytes in it are bytes: codec.pack's values). Only ever the parent's requests: nothing reads
    marshal data from the child. Version 2 shares no object between two places of the message (a list in one
    case's inputs is not another's) and interns no str, as JSON's parse does not."""
    if type(message) is not dict:
        raise TypeError(f"a frame holds a dict, not {type(message).__name__}")
    return frame_of(MARSHALLED + _marshal_dumps(message, 2))


def send(fd: int, message: dict | bytes) -> None:
    """Write one whole frame (``message``, or a frame made by frame_of) to ``fd``, blocking until it is
    written (the child's side: its reader is the trusted parent); raises Closed if the reader has gone."""
    data = message if isinstance(message, bytes) else encode_frame(message)
    try:   # the usual case: the pipe takes the whole frame at once (an isolated-helper call, thousands per case)
        written = _os_write(fd, data)
    except BlockingIOError:
        written = 0
    except BrokenPipeError:
        raise Closed("the reader closed the pipe") from None
    view = memoryview(data)[written:]
    while view:
        try:
            written = _os_write(fd, view)
        except BlockingIOError:
            _select([], [fd], [])
            continue
        except BrokenPipeError:
            raise Closed("the reader closed the pipe") from None
        view = view[written:]


class Outbox:
    """Frames queued for a reader that may never read (the parent's side: the child is untrusted).

    Writes never block: what the pipe takes now is written, the rest waits in memory and goes out while
    the parent waits for the child's frames (``FrameReader.read(deadline, outbox)``), so the parent's
    deadlines hold even when the child stops reading. ``limit`` bounds what may wait.
    """

    def __init__(self, fd: int, limit: int = 2 * MAX_FRAME) -> None:
        self.fd = fd
        self.limit = limit
        self._pending = bytearray()
        _set_blocking(fd, False)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def put(self, message: dict | bytes) -> None:
        """Queue one frame (``message``, or a frame made by frame_of) and write what fits; raises FrameError
        when the queue would pass ``limit`` (the child is not reading) and Closed when the child has gone."""
        frame = message if isinstance(message, bytes) else encode_frame(message)
        if not self._pending:   # the usual case: the pipe takes the whole frame now, with no copy
            try:
                written = _os_write(self.fd, frame)
            except BlockingIOError:
                written = 0
            except BrokenPipeError:
                raise Closed("the reader closed the pipe") from None
            if written == len(frame):
                return
            frame = frame[written:]
        if len(self._pending) + len(frame) > self.limit:
            raise FrameError(f"{len(self._pending)} bytes already wait for a reader that does not read")
        self._pending += frame
        self.flush()

    def flush(self) -> None:
        """Write as much of the queue as the pipe takes right now."""
        while self._pending:
            try:
                written = _os_write(self.fd, self._pending[:CHUNK])
            except BlockingIOError:
                return
            except BrokenPipeError:
                self._pending.clear()
                raise Closed("the reader closed the pipe") from None
            del self._pending[:written]


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not _isfinite(value):   # 1e400: a number JSON can write but a float cannot hold
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


# A private decoder (its scanner is C code): json.loads and the module's default decoder may be patched.
_SCAN = json.JSONDecoder(parse_float=_finite_float, parse_constant=_reject_constant).scan_once  # type: ignore[attr-defined]


# Lists and objects one frame may hold. Parsing costs about 60 bytes of the reader's memory per container, so
# 60 MB of `[]` would cost the trusted parent 1.6 GB before the frame's op is even looked at; a real answer
# (a path of puzzle states, a case's inputs) holds a few thousand. Counted in the raw bytes, before parsing:
# brackets inside strings count too, which only errs on the side of refusing.
MAX_CONTAINERS = 500_000


def _parse(body: bytes | bytearray) -> dict:
    containers = body.count(b"[") + body.count(b"{")
    if containers > MAX_CONTAINERS:
        raise FrameError(f"frame holds up to {containers} lists and objects, over the {MAX_CONTAINERS} limit")
    try:
        text = body.decode("utf-8")
        message, end = _SCAN(text, 0)
    except UnicodeDecodeError as error:
        raise FrameError(f"frame is not UTF-8: {error}") from None
    except StopIteration:
        raise FrameError("frame is not valid JSON: no value at the start") from None
    except RecursionError:
        raise FrameError("frame JSON is nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, NaN/Infinity, 1e400, ints over the digit limit
        raise FrameError(f"frame is not valid JSON: {error}") from None
    if end != len(text):
        raise FrameError(f"frame is not valid JSON: extra data after character {end}")
    if type(message) is not dict:
        raise FrameError(f"frame holds a JSON {type(message).__name__}, not an object")
    return message


def _wait(fd: int, timeout: float | None, outbox: Outbox | None = None) -> tuple[bool, bool]:
    """(readable, writable) for ``fd`` and the outbox's fd, once either is ready or ``timeout`` seconds
    (None: forever) pass; a pipe at EOF or in error counts as ready."""
    write_fd = outbox.fd if outbox is not None and outbox.pending else None
    if _poll_new is not None:
        poller = _poll_new()
        poller.register(fd, _POLL_IN)
        if write_fd is not None:
            poller.register(write_fd, _POLL_OUT)
        millis = None if timeout is None else max(0, _ceil(timeout * 1000))
        events = dict(poller.poll(millis))
        return fd in events, write_fd is not None and write_fd in events
    readable, writable, _ = _select([fd], [write_fd] if write_fd is not None else [], [], timeout)
    return bool(readable), bool(writable)


def pending(fd: int, timeout: float | None) -> bool:
    """Whether a frame's bytes wait in ``fd`` within ``timeout`` seconds (None: until some come or the writer
    closes its end), without reading them: False at EOF. Without poll(2), EOF counts as bytes waiting."""
    if _poll_new is None:
        return _wait_readable(fd, timeout)
    poller = _poll_new()
    poller.register(fd, _POLL_IN)
    millis = None if timeout is None else max(0, _ceil(timeout * 1000))
    return any(events & _DATA for _, events in poller.poll(millis))


def _wait_readable(fd: int, timeout: float | None) -> bool:
    """True when ``fd`` has data or EOF; False when ``timeout`` seconds (None: forever) pass first."""
    return _wait(fd, timeout)[0]


class FrameReader:
    """Reads frames from one pipe end with deadlines, buffering partial data between calls."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME) -> None:
        self.fd = fd
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._poller: Any = None      # kept for waits with nothing to write: one object, one registration

    def _wanted(self) -> int:
        """How much to read: the rest of the frame in progress when it is large, else SMALL_READ."""
        if len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            return max(SMALL_READ, min(CHUNK, _HEADER.size + length - len(self._buffer)))
        return SMALL_READ

    def _wait(self, timeout: float | None, outbox: Outbox | None) -> tuple[bool, bool]:
        if _poll_new is None or (outbox is not None and outbox.pending):
            return _wait(self.fd, timeout, outbox)
        if self._poller is None:
            self._poller = _poll_new()
            self._poller.register(self.fd, _POLL_IN)
        millis = None if timeout is None else max(0, _ceil(timeout * 1000))
        return bool(self._poller.poll(millis)), False

    def _take(self) -> bytes | None:
        """The body of the next whole frame in the buffer, or None when more bytes are needed."""
        if len(self._buffer) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buffer)
        if length > self.max_frame:
            # Left in the buffer: the stream is out of step from here on, so every read says so.
            raise FrameError(f"frame length {length} is over the {self.max_frame}-byte limit")
        end = _HEADER.size + length
        if len(self._buffer) < end:
            return None
        body = bytes(memoryview(self._buffer)[_HEADER.size : end])
        del self._buffer[:end]  # consumed even when malformed, so the next frame still parses
        return body

    def read(self, deadline: float | None = None, outbox: Outbox | None = None) -> dict:
        """The next message. ``deadline`` is an absolute time.monotonic() value (None: wait forever);
        raises Timeout when it passes first, Closed on EOF, FrameError on malformed data. While waiting,
        queued frames of ``outbox`` are written as the other end takes them."""
        return _parse(self.read_body(deadline, outbox))

    def read_body(self, deadline: float | None = None, outbox: Outbox | None = None) -> bytes:
        """The next frame's body, unparsed (``parse_body`` makes it a message); as ``read`` otherwise."""
        while True:
            body = self._take()
            if body is not None:
                return body
            timeout = None
            if deadline is not None:
                timeout = deadline - _monotonic()
                if timeout <= 0:
                    raise Timeout(f"no whole frame before the deadline ({len(self._buffer)} bytes buffered)")
            readable, writable = self._wait(timeout, outbox)
            if writable and outbox is not None:
                outbox.flush()
            if not readable:
                continue  # the loop re-checks the clock: poll may wake a little early
            try:
                chunk = _os_read(self.fd, self._wanted())
            except BlockingIOError:
                continue
            if not chunk:
                where = f" in the middle of a frame ({len(self._buffer)} bytes buffered)" if self._buffer else ""
                raise Closed(f"the writer closed the pipe{where}")
            self._buffer += chunk

    def drain(self) -> int:
        """Discard the buffer and whatever the pipe holds right now, without blocking; returns the bytes
        discarded. Stops after 2 x max_frame bytes so a writer that never stops cannot hold it."""
        discarded = len(self._buffer)
        self._buffer.clear()
        cap = 2 * max(self.max_frame, CHUNK)
        while discarded < cap and _wait_readable(self.fd, 0):
            try:
                chunk = _os_read(self.fd, CHUNK)
            except BlockingIOError:
                break
            if not chunk:
                break
            discarded += len(chunk)
        return discarded


def _read_exactly(fd: int, count: int, what: str) -> bytearray:
    data = bytearray()
    while len(data) < count:
        try:
            chunk = _os_read(fd, min(count - len(data), CHUNK))
        except BlockingIOError:
            _wait_readable(fd, None)
            continue
        if not chunk:
            got = f" after {len(data)} of {count} bytes" if data else ""
            raise Closed(f"the writer closed the pipe while reading {what}{got}")
        data += chunk
    return data


class FrameStream:
    """Blocking, buffered frame reads for the child's side, where the writer is the trusted parent: one read
    takes a whole small frame (header and body) instead of two. Only for a stream that the reader alone
    consumes to its end (the answers to an exercise's isolated-helper calls, in the exercise's own process):
    what it reads ahead is gone for any other reader of the same pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()

    def read(self) -> dict:
        """The next frame; raises Closed on EOF and FrameError on an oversized header or a malformed body."""
        return _parse(self.read_body())

    def read_body(self) -> bytes:
        """The next frame's body, unparsed (parse it with ``parse_body``)."""
        buffer = self._buffer
        if not buffer:   # the usual case: one read brings exactly one whole answer, taken without the buffer
            try:
                chunk = _os_read(self.fd, SMALL_READ)
            except BlockingIOError:
                chunk = b""
                _wait_readable(self.fd, None)
            else:
                if not chunk:
                    raise Closed("the writer closed the pipe")
            if len(chunk) >= _HEADER.size and _HEADER.unpack_from(chunk)[0] == len(chunk) - _HEADER.size:
                return chunk[_HEADER.size:]
            buffer += chunk
        while True:
            if len(buffer) >= _HEADER.size:
                (length,) = _HEADER.unpack_from(buffer)
                if length > MAX_FRAME:
                    raise FrameError(f"frame length {length} is over the {MAX_FRAME}-byte limit")
                end = _HEADER.size + length
                if len(buffer) >= end:
                    body = bytes(buffer[_HEADER.size:end])
                    del buffer[:end]
                    return body
                wanted = max(SMALL_READ, min(CHUNK, end - len(buffer)))
            else:
                wanted = SMALL_READ
            try:
                chunk = _os_read(self.fd, wanted)
            except BlockingIOError:
                _wait_readable(self.fd, None)
                continue
            if not chunk:
                raise Closed("the writer closed the pipe" + (" in the middle of a frame" if buffer else ""))
            buffer += chunk


def parse_value(text: str) -> Any:
    """The one JSON value `text` is, whole (no space around it, nothing after it); FrameError otherwise."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        raise FrameError("not a JSON value") from None
    except (RecursionError, ValueError) as error:
        raise FrameError(f"not a JSON value: {error}") from None
    if end != len(text):
        raise FrameError("not one JSON value")
    return value


def parse_body(body: bytes) -> dict:
    """One frame's body as its JSON object (FrameError when it is not one)."""
    return _parse(body)


def _read_body_blocking(fd: int) -> bytearray:
    (length,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, "a frame header"))
    if length > MAX_FRAME:
        raise FrameError(f"frame length {length} is over the {MAX_FRAME}-byte limit")
    return _read_exactly(fd, length, "a frame body")


def read_frame_blocking(fd: int) -> dict:
    """Read exactly one frame (header, then exactly its body) for the child side; raises Closed on EOF."""
    return _parse(_read_body_blocking(fd))


def read_request_blocking(fd: int) -> dict:
    """The parent's next request, as read_frame_blocking, JSON or marshal data (marshal_frame). Only the child
    reads requests: the parent, the trusted writer, is the only one that can make them."""
    return request_of(_read_body_blocking(fd))


def read_bodies(fd: int) -> list[bytes]:
    """The bodies of the frames the pipe holds now, the last read to its end (the child's side), unparsed:
    ``request_of`` makes each a request. Only where the trusted writer sends nothing more until this side
    answers (an exercise's next case): one read takes the frame whole, where reading its header and then its
    body took two."""
    while True:
        try:
            chunk = _os_read(fd, SMALL_READ)
            break
        except BlockingIOError:
            _wait_readable(fd, None)
    if not chunk:
        raise Closed("the writer closed the pipe")
    if len(chunk) >= _HEADER.size and _HEADER.unpack_from(chunk)[0] == len(chunk) - _HEADER.size:
        return [chunk[_HEADER.size:]]   # the usual case: one whole frame
    bodies = []
    at = 0
    while at < len(chunk):
        if len(chunk) - at < _HEADER.size:
            chunk += _read_exactly(fd, _HEADER.size - (len(chunk) - at), "a frame header")
        (length,) = _HEADER.unpack_from(chunk, at)
        if length > MAX_FRAME:
            raise FrameError(f"frame length {length} is over the {MAX_FRAME}-byte limit")
        end = at + _HEADER.size + length
        if end > len(chunk):
            chunk += _read_exactly(fd, end - len(chunk), "a frame body")
        bodies.append(chunk[at + _HEADER.size:end])
        at = end
    return bodies


# Below this many bytes a request's marshal data is loaded from a copy: loading it through a memoryview costs
# more (~1.5 us for a case frame's 300 bytes) than the copy.
_COPIED = 1 << 16


def request_of(body: bytes | bytearray) -> dict:
    """A request's body as its message: JSON, or marshal data after MARSHALLED (read_request_blocking)."""
    if body[:1] != MARSHALLED:
        return _parse(body)
    try:
        message = _marshal_loads(body[1:] if len(body) < _COPIED else memoryview(body)[1:])
    except (EOFError, ValueError, TypeError) as error:
        raise FrameError(f"frame is not valid marshal data: {error}") from None
    if type(message) is not dict:
        raise FrameError(f"frame holds a {type(message).__name__}, not a dict")
    return message
