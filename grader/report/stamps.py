"""What each file of a class output was written from, so that writing the output again rewrites only what changed.

A class output (Gradescope's results files, say) is one file per student, made from the student's current result.
Writing 10,000 of them again when nothing changed cost minutes of CPU: decoding every result and encoding every
file. Instead the results folder remembers, per output folder and file, a stamp: what the file was made from
(the result's identity, the overrides applied, the writer's version) and what the file was once written (size,
modification time, inode). A file whose stamp still holds is the file a full export would write, and is kept;
one that is missing, was changed or replaced since (its size, time or inode differ), or whose result changed, is
written again. Stamps are a cache: a folder they cannot be saved in only means every file is written next time.

    <results folder>/.stamps        {"version": 2, "<output> <output folder>": {"<file name>": "<digest of made_from>
                                     <size> <mtime_ns> <inode>", ...}, ...}

A stamp is one string, held as read: a class of 10,000 has 20,000 report files, and a stamp as a list of four
(version 1), made a tuple of a digest and three integers, held beside what was read, cost ~380 bytes a file
in `grader report`'s memory; one string, ~260.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grader.files import write_text

STAMPS = ".stamps"     # in the results folder: JSON, but not *.json (what reads results takes every *.json)
VERSION = 2     # 1 (stamps as lists) is read as no stamps: every file is written once more, then stamped again


class Stamps:
    """The stamps of one output's folder: which of its files still hold what they were made from."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.changed = False

    def holds(self, path: Path, made_from: str | None) -> bool:
        """Whether `path` is the file written from `made_from` and untouched since (None: not known, never)."""
        stamp = self.files.get(path.name)
        if made_from is None or stamp is None:
            return False
        state = _state(path)
        return state is not None and stamp == _stamp(made_from, state)

    def wrote(self, path: Path, made_from: str | None) -> None:
        """`path` was just written from `made_from` (None: nothing to remember)."""
        state = _state(path)
        self.changed = True
        if made_from is None or state is None:
            self.files.pop(path.name, None)
        else:
            self.files[path.name] = _stamp(made_from, state)


def _stamp(made_from: str, state: tuple[int, int, int]) -> str:
    return f"{_digest(made_from)} {state[0]} {state[1]} {state[2]}"


def _digest(made_from: str) -> str:
    """What a file was made from, in 32 characters (a stamp per student of a class of 10,000)."""
    return hashlib.blake2b(made_from.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _state(path: Path) -> tuple[int, int, int] | None:
    """(size, mtime_ns, inode) of a regular file; None for anything else (missing, a symlink, a folder)."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    if not (found.st_mode & 0o170000 == 0o100000):
        return None
    return found.st_size, found.st_mtime_ns, found.st_ino


@contextmanager
def stamped(results_folder: Path, output: str, target: Path) -> Iterator[Stamps]:
    """The stamps of `output`'s files in `target`, saved in the results folder when the block ends (also when it
    raises: what was written by then was written whole)."""
    store = Path(results_folder) / STAMPS
    name = f"{output} {Path(target).resolve()}"
    saved = _load(store)
    found = saved.get(name, {})
    stamps = Stamps(found if all(type(stamp) is str for stamp in found.values()) else {})
    try:
        yield stamps
    finally:
        if stamps.changed:
            saved[name] = stamps.files
            _save(store, saved)


def _save(store: Path, saved: dict[str, Any]) -> None:
    try:
        write_text(store, json.dumps({**saved, "version": VERSION}, separators=(",", ":")))
    except OSError:
        pass   # a results folder we cannot write in: the output is whole, the next one writes every file


def _load(store: Path) -> dict[str, Any]:
    try:
        saved = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict) or saved.get("version") != VERSION:
        return {}
    return {name: files for name, files in saved.items() if name != "version" and isinstance(files, dict)}

