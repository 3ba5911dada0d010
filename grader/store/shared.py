"""What every result of a rubric shares (each case's call and expected value), stored once per rubric in the
results folder and referenced by key from each result file, so a class of 10,000 does not store 10,000 copies.

Layout: `<results>/shared/<rubric_sha256>/<key>.json`, one file per case, holding the canonical JSON of
`{"call": ..., "expected": ...}`; its key is the first 32 hex digits of the SHA-256 of those bytes (content
addressed: the same values always get the same key, whoever writes them, and two values never share a file).
A file is written once, atomically, and checked against its key whenever it is read: a file edited by hand,
truncated or damaged is a SharedValuesError naming it, never a wrong grade.

A result file (results schema 2) refers to it per case: the case's dict has `shared: <key>` instead of `call`
and `expected`, and no `got` when the answer was the expected value (the common case: a right answer). An
answer that differs stays inline, and so does any case whose values cannot be shared. `slim` and `restore`
are the only two functions that know this form; they work on the JSON dicts of grader.store.results.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from grader import textsafe
from grader.files import write_text

FOLDER = "shared"
KEY_DIGITS = 32                     # 128 bits of SHA-256: content addressing, not a secret
_KEY = re.compile(r"[0-9a-f]{%d}" % KEY_DIGITS)
_KEYS_LIMIT = 100_000                # values remembered by a writer (a plan has a few hundred)
_RUBRIC_HASH = re.compile(r"[0-9A-Za-z_-][0-9A-Za-z._-]{0,127}")    # one plain folder name: never "..", no "/"


class SharedValuesError(Exception):
    """A shared-values file that is missing, damaged or does not match its key: which file, and what to do."""


def canonical(value: Any) -> str:
    """The one text a value is stored and hashed as (sorted keys, no spaces, lone surrogates kept as escapes)."""
    return textsafe.json_text(value, sort_keys=True, separators=(",", ":"))


def key_of(text: str) -> str:
    return _digest(text.encode("utf-8", "surrogatepass"))


def _digest(data: bytes) -> str:
    """The key of a file's bytes: what its name must be."""
    return hashlib.sha256(data).hexdigest()[:KEY_DIGITS]


def folder(results: Path, rubric_sha256: str) -> Path:
    """Where a rubric's shared values live under a results folder; refuses a "hash" that is not one folder name
    (a hand-edited result must not send a reader outside the store)."""
    if not isinstance(rubric_sha256, str) or not _RUBRIC_HASH.fullmatch(rubric_sha256):
        raise SharedValuesError(f"{results}: a result names rubric hash {str(rubric_sha256)[:80]!r}, which is not "
                                f"a hash: the result file was edited or damaged")
    return Path(results) / FOLDER / rubric_sha256


class SharedWriter:
    """Puts a rubric's case values into the store as results are written; remembers which keys are on disk (and
    verified), so each file is written, or checked, once per writer (a batch has one)."""

    def __init__(self, results: Path, rubric_sha256: str) -> None:
        self.rubric_sha256 = rubric_sha256
        self.folder = folder(results, rubric_sha256)
        self._stored: set[str] = set()
        # (call, id of the expected value) -> (that value, its key). Every result of a batch holds the plan's
        # own expected objects (the coordinator's plan, by name from the workers), so a class's thousands of
        # cases are each encoded and hashed once, not once per student. The value is held so that its id
        # cannot name another object while it is here; bounded, since a restored result brings fresh objects.
        self._keys: dict[tuple[str, int], tuple[Any, str]] = {}
        # The folder (device, inode) and its mtime (ns) when every stored key's file was last seen there
        self._seen: tuple[int, int, int] | None = None
        # The names in the folder when it was last listed (_listing), for the values of one result: check forgets it
        self._listed: frozenset[str] | None = None

    def check(self) -> None:
        """Before a result's values are put: forget the stored keys whose file has gone (put writes them again).

        One stat of the folder per result, not one per case: removing a file changes the folder's mtime, and while
        it is the one it was when every file was seen, none has gone: the same folder's (its device and inode: a
        copy put in its place by cp -a or rsync -a has the old mtime, to the nanosecond). Trusted only when that
        mtime is older than the moment it was read by more than the filesystem's tick, so a removal in the tick of
        the last write still shows: 2 s where times have whole seconds (FAT's tick is 2 s), else 0.1 s (ext4,
        tmpfs, xfs: a few ms)."""
        self._listed = None
        try:
            status = os.stat(self.folder)
        except OSError:      # no folder (yet, or deleted): nothing is on disk
            self._stored.clear()
            self._seen = None
            return
        mtime = status.st_mtime_ns
        seen = (status.st_dev, status.st_ino, mtime)
        if seen == self._seen:
            return
        self._stored = {key for key in self._stored if os.path.isfile(os.path.join(self.folder, f"{key}.json"))}
        tick = 2_000_000_000 if mtime % 1_000_000_000 == 0 else 100_000_000
        self._seen = seen if time.time_ns() - mtime > tick else None

    def put(self, call: Any, expected: Any) -> str:
        known = self._keys.get((call, id(expected))) if type(call) is str else None
        if known is not None and known[0] is expected:
            key = known[1]
            text = None
        else:
            text = canonical({"call": call, "expected": expected})
            key = key_of(text)
            if type(call) is str:
                if len(self._keys) >= _KEYS_LIMIT:
                    self._keys.clear()
                self._keys[(call, id(expected))] = (expected, key)
        # Checked whole once per writer; after that, check() says whether it is still there (a TA may delete the
        # folder).
        if key not in self._stored:
            name = f"{key}.json"
            path = os.path.join(self.folder, name)
            if text is None:
                text = canonical({"call": call, "expected": expected})
            good = False
            if name in self._listing():   # else it was absent a moment ago: nothing to read
                try:
                    good = Path(path).read_bytes() == text.encode("utf-8", "surrogatepass")
                except OSError:
                    good = False
            if not good:       # absent, or not what its name promises: (re)written whole
                try:
                    write_text(path, text, encoding="utf-8")
                except FileNotFoundError:   # no folder yet (or removed since): made, then written
                    self.folder.mkdir(parents=True, exist_ok=True)
                    write_text(path, text, encoding="utf-8")
            self._stored.add(key)
        return key

    def _listing(self) -> frozenset[str]:
        """The folder's names, listed once per result that has a value to put (check forgets them). The first
        result of a batch into a new results folder wrote each of its values' file after trying to read it there
        and making the folder again: for the 137 Taoistic cases 135 failed opens, 139 mkdirs and 132 stats fewer
        now (strace -c of that one result), in the 20-60 ms of the coordinator's CPU it costs, most of it the
        kernel creating the files, which stays. A name listed is read and compared as before; a file that
        appears after the listing is written over with the same bytes, whole (atomic_open)."""
        if self._listed is None:
            try:
                self._listed = frozenset(os.listdir(self.folder))
            except OSError:   # no folder yet: nothing in it
                self._listed = frozenset()
        return self._listed


def slim(data: dict[str, Any], store: SharedWriter) -> dict[str, Any]:
    """`data` (results.to_dict's form) with every case's call and expected value moved to the store, and every
    right answer (equal to the expected value, exact types) left out. Changes `data` and returns it."""
    store.check()
    for exercise in data["exercises"]:
        for case in exercise["cases"]:
            if "call" not in case or "expected" not in case:
                continue
            expected = case["expected"]
            got = case.get("got")
            right = "got" in case and (got is expected or (got == expected and canonical(got) == canonical(expected)))
            case["shared"] = store.put(case.pop("call"), case.pop("expected"))
            if right:
                del case["got"]
    return data


class SharedReader:
    """Reads a results folder's store for a pass over its results: each file is read and checked once per
    reader, and what it read goes when the pass ends (no module-level cache grows with the folders read)."""

    def __init__(self, results: Path) -> None:
        self.results = Path(results)
        self._texts: dict[tuple[str, str], str] = {}

    def values(self, rubric_sha256: Any, key: Any) -> dict[str, Any]:
        """A fresh copy of the values under `key` (no two results share a mutable value)."""
        where = folder(self.results, rubric_sha256)
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise SharedValuesError(f"{where}: a result refers to shared value {str(key)[:80]!r}, which is not a "
                                    f"key: the result file was edited or damaged")
        text = self._texts.get((rubric_sha256, key))
        if text is None:
            text = self._texts[(rubric_sha256, key)] = _verified(where / f"{key}.json", key)
        values: dict[str, Any] = json.loads(text)
        return values


def restore(data: dict[str, Any], store: SharedReader) -> dict[str, Any]:
    """The whole result again from its slim form (a result without `shared` keys is returned as it is). Raises
    SharedValuesError naming the file when a value cannot be read back exactly."""
    for exercise in data.get("exercises", ()):
        for case in exercise.get("cases", ()):
            key = case.pop("shared", None)
            if key is None:
                continue
            values = store.values(data.get("rubric_sha256", ""), key)
            case["call"] = values["call"]
            case["expected"] = values["expected"]
            if "got" not in case:
                case["got"] = values["expected"]
    return data


def _verified(path: Path, key: str) -> str:
    """The file's text once it matches its key."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SharedValuesError(f"{path}: missing: the results folder lost a shared value its results refer to "
                                f"(regrade with --force to write it again)") from None
    except OSError as error:
        raise SharedValuesError(f"{path}: cannot be read: {error}") from None
    if _digest(data) != key:
        raise SharedValuesError(f"{path}: does not match its key (edited, truncated or damaged): the results that "
                                f"refer to it cannot be read; regrade with --force to write it again")
    try:
        text = data.decode("utf-8")
        values = json.loads(text)
    except ValueError as error:
        raise SharedValuesError(f"{path}: not a shared value ({error})") from None
    if not isinstance(values, dict) or set(values) != {"call", "expected"}:
        raise SharedValuesError(f"{path}: not a shared value (expected call and expected)")
    return text
