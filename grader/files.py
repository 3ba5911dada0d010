"""Files written whole or not at all: the one way the grader replaces a file that something else may read.

A result, a CSV an LMS imports, a Gradescope results.json, a sealed cache file: a reader (or a crash) must never
see half of one. Each is written to a fresh temporary name in the same folder (os.replace must not cross file
systems), then renamed over the target; on any failure the temporary goes and the old file stays.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", *, private: bool = False, durable: bool = False,
                encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO[Any]]:
    """A stream whose content replaces `path` when the block ends without an exception.

    `private`: readable by the grader's uid only (0600) rather than by the umask's rule. `durable`: flushed to
    the disk before the rename (for files that leave the machine, such as an LMS import).
    """
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # O_EXCL and O_NOFOLLOW: never through a planted file or symlink of that name.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600 if private else 0o666)
    try:
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding,
                       newline=None if binary else newline) as stream:
            yield stream
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str, **options: Any) -> Path:
    """Replace `path` with `text` (UTF-8), whole or not at all; options as for atomic_open."""
    with atomic_open(path, "w", **options) as stream:
        stream.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes, **options: Any) -> Path:
    """Replace `path` with `data`, whole or not at all; options as for atomic_open."""
    with atomic_open(path, "wb", **options) as stream:
        stream.write(data)
    return Path(path)
