"""Sealed cache files: contents only the grader's own uid can have written, checked before they are believed.

Why: the expected-value cache decides every verdict, and a student's process that could rewrite it would grade
every later batch (a correct notebook wrong, a wrong one right). Each cache folder holds a secret key, made on
first use, mode 0600 and owned by the grader's uid (the sandbox child runs as another uid and never sees it);
each file carries an HMAC-SHA256 of its body under that key. A file that does not verify is not believed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.files import write_bytes

KEY_FILE = ".key"
KEY_BYTES = 32
HEADER = b"puzzle-grader sealed v1 hmac-sha256="


def default_cache() -> Path:
    """Where expected values are cached when no folder is given (XDG cache folder)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "puzzle-grader"


@dataclass(frozen=True)
class FolderKey:
    """A cache folder's key (None: no key could be had, so nothing there is believed), and why not."""

    key: bytes | None
    problems: tuple[str, ...] = ()


def folder_key(folder: Path) -> FolderKey:
    """The folder's key, made (with the folder, mode 0700) on first use. A key file another uid owns, or that
    others may read, is replaced: whoever could read it could seal files, so what it sealed is not believed."""
    problems: list[str] = []
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as error:
        return FolderKey(None, (f"cache folder {folder}: {error.strerror or error}; values are not cached",))
    if info.st_uid != os.getuid():
        return FolderKey(None, (f"cache folder {folder} belongs to uid {info.st_uid}, not to the grader's "
                                f"uid {os.getuid()}: it is not used",))
    if info.st_mode & 0o022:
        problems.append(f"cache folder {folder} is writable by others (mode {stat.S_IMODE(info.st_mode):o}); "
                        f"its files are believed only when their seal verifies")
    path = folder / KEY_FILE
    key, why = _read_key(path)
    if key is not None:
        return FolderKey(key, tuple(problems))
    if why:
        problems.append(f"{path}: {why}; a new key is made and every value cached there is recomputed")
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as error:
            return FolderKey(None, (*problems, f"{path}: cannot be replaced: {error.strerror or error}"))
    try:
        key = _make_key(path)
    except OSError as error:
        return FolderKey(None, (*problems, f"{path}: cannot be made: {error.strerror or error}"))
    return FolderKey(key, tuple(problems))


def _open_unlinked(path: Path) -> tuple[int | None, str]:
    """The file opened for reading, never through a symbolic link (one planted in the folder is not followed):
    (fd, ""), (None, "") when there is no such file, (None, why) when it cannot be opened."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW), ""
    except FileNotFoundError:
        return None, ""
    except OSError as error:
        return None, str(error.strerror or error)


def _read_key(path: Path) -> tuple[bytes | None, str]:
    """(key, "") when the file is a good key; (None, why) when it is bad; (None, "") when there is none."""
    fd, why = _open_unlinked(path)
    if fd is None:
        return None, f"the key cannot be read ({why})" if why else ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "the key is not a regular file"
        if info.st_uid != os.getuid():
            return None, f"the key belongs to uid {info.st_uid}"
        if info.st_mode & 0o077:
            return None, f"the key may be read or changed by others (mode {stat.S_IMODE(info.st_mode):o})"
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        return None, "the key has the wrong length"
    return key, ""


def _make_key(path: Path) -> bytes:
    """Write a fresh key to a private temporary file, then link it into place: a process racing to make the
    same key finds either no file or a whole one, and the loser reads the winner's."""
    key = secrets.token_bytes(KEY_BYTES)
    temporary = path.with_name(f"{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)
    except FileExistsError:
        winner, why = _read_key(path)
        if winner is None:
            raise OSError(f"another key appeared meanwhile and is not usable: {why}") from None
        key = winner
    finally:
        os.unlink(temporary)
    return key


def seal(key: bytes, body: bytes) -> bytes:
    """The file contents: a header line with the body's HMAC, then the body."""
    return HEADER + hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii") + b"\n" + body


def unseal(key: bytes, data: bytes) -> bytes | None:
    """The body, when `data` was sealed with `key`; None when it was not (edited, forged, or not sealed)."""
    first, newline, body = data.partition(b"\n")
    if not newline or not first.startswith(HEADER):
        return None
    expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii")
    return body if hmac.compare_digest(first[len(HEADER):], expected) else None


def write_sealed(key: bytes, path: Path, body: bytes) -> None:
    """Write a sealed file atomically, readable by the grader's uid only."""
    write_bytes(path, seal(key, body), private=True)


def read_sealed(key: bytes, path: Path) -> tuple[bytes | None, str]:
    """(body, "") for a file that verifies; (None, why) for one that exists and does not; (None, "") when
    there is no such file."""
    fd, why = _open_unlinked(path)
    if fd is None:
        return None, f"cannot be read ({why})" if why else ""
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    body = unseal(key, data)
    if body is None:
        return None, "its seal does not verify (edited, or written by someone without the folder's key)"
    return body, ""
