"""Length-prefixed JSON frames over pipe file descriptors, between the grader and its sandbox child.

Why frames: the parent must take exactly one answer per request from a dedicated pipe, never block past
a case's deadline, and survive a child that dies or is killed halfway through writing. A frame is a
4-byte big-endian unsigned length followed by that many bytes of UTF-8 JSON holding one object.

The module is loaded into the untrusted child as a plain top-level module, so it imports only the
standard library (and not ``codec``: values are encoded before they reach this layer).
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import time

__all__ = [
    "CHUNK",
    "MAX_FRAME",
    "Closed",
    "FrameError",
    "FrameReader",
    "Timeout",
    "encode_frame",
    "read_frame_blocking",
    "send",
]

MAX_FRAME = 64 * 1024 * 1024
CHUNK = 1024 * 1024
_HEADER = struct.Struct(">I")


class Closed(EOFError):
    """The other end closed the pipe (possibly in the middle of a frame)."""


class FrameError(ValueError):
    """A frame is malformed: its length is over the bound, or its body is not UTF-8 JSON of one object."""


class Timeout(TimeoutError):
    """The deadline passed before a whole frame arrived; what did arrive stays buffered."""


def encode_frame(message: dict) -> bytes:
    """The bytes of one frame holding ``message`` (a JSON object)."""
    if type(message) is not dict:
        raise TypeError(f"a frame holds a dict, not {type(message).__name__}")
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in a Python str, not in UTF-8): escape it as \udXXX instead.
        body = json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    if len(body) > MAX_FRAME:
        raise FrameError(f"frame of {len(body)} bytes is over the {MAX_FRAME}-byte limit")
    return _HEADER.pack(len(body)) + body


def send(fd: int, message: dict) -> None:
    """Write one whole frame to ``fd``; raises Closed if the reader has gone (EPIPE)."""
    view = memoryview(encode_frame(message))
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        except BrokenPipeError:
            raise Closed("the reader closed the pipe") from None
        view = view[written:]


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _parse(body: bytes | bytearray) -> dict:
    try:
        message = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as error:
        raise FrameError(f"frame is not UTF-8: {error}") from None
    except RecursionError:
        raise FrameError("frame JSON is nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, NaN/Infinity, ints over the digit limit
        raise FrameError(f"frame is not valid JSON: {error}") from None
    if type(message) is not dict:
        raise FrameError(f"frame holds a JSON {type(message).__name__}, not an object")
    return message


def _wait_readable(fd: int, timeout: float | None) -> bool:
    """True when ``fd`` has data or EOF; False when ``timeout`` seconds (None: forever) pass first."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR)
        millis = None if timeout is None else max(0, math.ceil(timeout * 1000))
        return bool(poller.poll(millis))
    readable, _, _ = select.select([fd], [], [], timeout)
    return bool(readable)


class FrameReader:
    """Reads frames from one pipe end with deadlines, buffering partial data between calls."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME) -> None:
        self.fd = fd
        self.max_frame = max_frame
        self._buffer = bytearray()

    def _take(self) -> dict | None:
        """The next whole frame in the buffer, or None when more bytes are needed."""
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
        return _parse(body)

    def read(self, deadline: float | None = None) -> dict:
        """The next message. ``deadline`` is an absolute time.monotonic() value (None: wait forever);
        raises Timeout when it passes first, Closed on EOF, FrameError on malformed data."""
        while True:
            message = self._take()
            if message is not None:
                return message
            timeout = None
            if deadline is not None:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    raise Timeout(f"no whole frame before the deadline ({len(self._buffer)} bytes buffered)")
            if not _wait_readable(self.fd, timeout):
                continue  # the loop re-checks the clock: poll may wake a little early
            try:
                chunk = os.read(self.fd, CHUNK)
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
                chunk = os.read(self.fd, CHUNK)
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
            chunk = os.read(fd, min(count - len(data), CHUNK))
        except BlockingIOError:
            _wait_readable(fd, None)
            continue
        if not chunk:
            got = f" after {len(data)} of {count} bytes" if data else ""
            raise Closed(f"the writer closed the pipe while reading {what}{got}")
        data += chunk
    return data


def read_frame_blocking(fd: int) -> dict:
    """Read exactly one frame (header, then exactly its body) for the child side; raises Closed on EOF."""
    (length,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, "a frame header"))
    if length > MAX_FRAME:
        raise FrameError(f"frame length {length} is over the {MAX_FRAME}-byte limit")
    return _parse(_read_exactly(fd, length, "a frame body"))
