"""Submission intake: files, folders, globs and LMS zip exports in, one notebook per student out.

A TA points the grader at whatever the LMS gave them (a Canvas or Moodle bulk download, a folder of
student folders, a few loose files) and expects one result per student. So the intake names every
student from the naming convention their files follow, picks ONE notebook when a student left
several (by a rule that is stated in the notes, never silently), extracts archives safely into a
work folder, and turns everything it cannot use into a one-line problem instead of an exception:
a batch of 3,000 must not stop because one zip is corrupt.

Naming conventions are a registry of small functions tried in order, most specific first; a new
LMS export format is one more `@convention` function.
"""

from __future__ import annotations

import calendar
import csv
import glob
import hashlib
import io
import json
import os
import re
import stat
import struct
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Callable, Collection, Iterable, Iterator, NamedTuple, Sequence

import yaml

from grader.intake.notebook import MAX_SUBMISSION_BYTES, TOO_LARGE

NOTEBOOK_SUFFIXES = (".ipynb", ".py")
ARCHIVE_SUFFIX = ".zip"
UNSUPPORTED_ARCHIVES = (".rar", ".7z", ".tar", ".tgz", ".gz", ".bz2", ".xz")
SKIPPED_FOLDERS = frozenset({"__MACOSX", ".ipynb_checkpoints", "__pycache__"})
# The file that marks a results folder of `grader grade` (grader.run.batch writes it): such a folder holds copies
# of graded notebooks (notebooks/<sha256>.ipynb), never a submission, even inside the folder being graded.
RESULTS_MARK = ".assignment"
RESULTS_FOLDERS = ("notebooks", "shared")   # what the grader keeps in a results folder: never a student's
# The files it keeps at the top of one (the gradebook and SQLite's files beside it): `grade . --out .` reported its
# own gradebook as "skipped: gradebook.sqlite: not a notebook" on every run.
RESULTS_FILES = re.compile(r"^gradebook\.sqlite(-wal|-shm|-journal)?$")
# Files that travel with submissions but are never one: a student folder holding only these has no submission.
QUIET_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".webp", ".tif", ".tiff", ".ico",
    ".csv", ".tsv", ".json", ".txt", ".dat", ".npy", ".npz", ".pkl", ".pickle", ".h5", ".parquet",
    ".xls", ".xlsx", ".md", ".rst", ".log", ".ini", ".cfg", ".toml", ".yaml", ".yml", ".xml", ".pyc",
})
QUIET_NAMES = re.compile(r"^(readme|licen[cs]e|thumbs\.db$|desktop\.ini$)", re.IGNORECASE)

# Zip-bomb guards: an archive breaking them is a problem, not a full disk.
MAX_MEMBER_BYTES = MAX_SUBMISSION_BYTES  # uncompressed size of one extracted member: a submission's own rule
MAX_MEMBERS = 20_000                    # notebook, script and zip members read from one archive
MAX_ARCHIVE_DEPTH = 2                   # an archive, and archives inside it; deeper ones are not opened
# What one student's upload (their zip and the zips inside it) may extract in all: a few notebooks of the largest
# size, not a disk. The member cap alone allows MAX_MEMBERS full-size members, which a small zip can declare.
MAX_UPLOAD_BYTES = 4 * MAX_SUBMISSION_BYTES
OVERLAPPING = "its bytes overlap another member's (a zip bomb's trick); not extracted"
# An archive's central directory is read whole and parsed into an object per member before any member rule can
# apply: 25 MB of directory (500,000 empty members; 3 MB once zipped inside an upload) took 270 MB and 3 s. A
# Canvas export of 3,000 students has about 1 MB of directory.
MAX_DIRECTORY_BYTES = 8 * 1024 * 1024
# A file reached through a symbolic link inside a folder is never read: a student's folder (a git clone, an unpacked
# upload) can hold a link to a classmate's notebook (taking it, and leaving the classmate without a row) or to the
# course's reference (graded as the student's own and copied into their results). A path the TA names is followed.
LINKED = "a symbolic link, not followed (a link can name a classmate's notebook or a course file); hand in the file"
# A pipe, socket or device among the class's files: reading a pipe waits for a writer that never comes (a FIFO named
# lab.ipynb in a student's folder hung the whole batch), and a device's bytes are no hand-in.
NOT_REGULAR = "not a regular file (a pipe, socket or device), not read"
_CHUNK = 1024 * 1024
_LOCAL_HEADER = 30                      # the smallest local file header (no name, no extra field), in bytes


@dataclass(frozen=True)
class ResultsMark:
    """A results folder's mark: the assignment it holds, the rubric it was graded with."""

    assignment: str     # the rubric's `assignment` id the folder holds results of
    rubric: str = ""    # the rubric file it was graded with, as the batch was given it ("" when not written)


def read_mark(folder: str | Path) -> ResultsMark | None:
    """The folder's mark, or None when it has none that reads as one. One reader for the batch's claim on its
    folder, the class outputs' guess of the template and merge's refusal of another assignment's gradebook, which
    read it three ways: a mark is a JSON object whose `assignment` is a non-empty string; anything else (no file,
    not JSON, a list, a number where the name goes) is no mark, and each falls back as for a missing one."""
    try:
        data = json.loads((Path(folder) / RESULTS_MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("assignment"), str) or not data["assignment"]:
        return None
    rubric = data.get("rubric")
    return ResultsMark(data["assignment"], rubric if isinstance(rubric, str) else "")


@dataclass(frozen=True)
class Entry:
    """One student's graded submission."""

    student: str            # identity from the naming convention, file-name safe (letters, digits, ._-), unique
    path: Path              # a real file on disk (zip members are extracted under workdir)
    source: str             # human-readable origin, e.g. "export.zip:smithjohn_12345_67890_taoistic.ipynb"
    convention: str         # "canvas" | "moodle" | "gradescope" | "folder" | "file"
    others: tuple[str, ...] = ()   # sources of this student's other notebooks that were NOT chosen
    late: bool = False      # the LMS marked it late (Canvas `_LATE_` in the name, Moodle's worksheet)
    modified: float = 0.0   # the file's time (seconds since the epoch; a zip member's own date), 0 if unknown
    problem: str = ""       # why the notebook cannot be read (empty, does not extract): graded as unreadable
    handed_in: float = 0.0  # when it was handed in, as far as a file's time says (`_handed`), 0 if nothing does
    recorded: str = ""      # a time of the hand-in, ISO: the LMS's own record (Moodle's worksheet, zone-less and read
                            # in the course's zone; Gradescope's metadata, with its offset), else a zip member's date
                            # (the zip format has no zone)
    extended: str = ""      # the student's own due date from the LMS (an extension; ISO, no zone), "" if none
    former: str = ""        # the id an older grader gave this student, when safe_id now gives another (see
                            # keep_former_ids)
    nothing: str = ""       # the LMS's word that the student handed in nothing (Moodle's Status "No submission",
                            # EMPTY_FOLDER), when this intake has no file of theirs: an earlier hand-in's row outlives
                            # it, and a first one's state is `no submission`, not `unreadable`


@dataclass(frozen=True)
class Stamp:
    """When a file was handed in, as far as its time says: seconds since the epoch, or a time without a zone."""

    at: float = 0.0
    local: str = ""         # ISO, no zone (a zip member's date without the extended timestamp)


@dataclass(frozen=True)
class Intake:
    entries: tuple[Entry, ...]      # sorted by student
    problems: tuple[str, ...]       # unreadable / skipped items, each "source: reason" (never fatal)
    notes: tuple[str, ...]          # decisions worth reporting (which of several notebooks, renamed ids)


# ---------------------------------------------------------------------------------------------------
# Naming conventions

@dataclass(frozen=True)
class Place:
    """Where a file sits: its path as folder names and file name, of which the last `inside` are inside
    the input (the folders before them are context, e.g. the folder a single file was given from)."""

    parts: tuple[str, ...]
    inside: int

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def folders(self) -> tuple[str, ...]:
        return self.parts[:-1]

    @property
    def top_folder(self) -> str | None:
        """The first folder inside the input, which owns everything below it."""
        return self.parts[-self.inside] if self.inside >= 2 else None


@dataclass(frozen=True)
class Owner:
    """The student a file belongs to, by one naming convention."""

    student: str
    convention: str
    lms_name: str = ""      # the student's own file name inside a Canvas name; its "-N" counts resubmissions
    late: bool = False      # the LMS's own late flag
    lms_id: str = ""        # the LMS's id of the student in this export (Moodle's participant id), for its worksheet
    name: str = ""          # the folder's or file's own name `student` was made of (safe_id drops what it cannot
                            # fold), where two students' names can make one id
    former: str = ""        # the id an older grader gave this name, when safe_id now gives another (_former)


Convention = Callable[[Place], "Owner | None"]
CONVENTIONS: dict[str, Convention] = {}     # tried in insertion order: the first that answers names the student
# Conventions of an LMS's export, whose file times are the export's, not the hand-in's: Canvas dates every member
# with the hour its zip was made, Moodle with the hour the file's bytes were first stored (by anyone).
LMS_EXPORTS: set[str] = set()


def convention(name: str, lms: bool = False) -> Callable[[Convention], Convention]:
    """Register a naming convention; `lms`: its files come from an LMS's export (their times say nothing of when
    they were handed in)."""
    def register(function: Convention) -> Convention:
        CONVENTIONS[name] = function
        if lms:
            LMS_EXPORTS.add(name)
        return function
    return register


MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_?$")
MOODLE_FILE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_(?P<original>.+)$")
# Moodle's other submission plugins (online text, comments) are never notebooks.
MOODLE_OTHER = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?!file_)(?P<plugin>[a-z]+)_")
# Canvas squeezes "Last First" to lowercase letters; ids are database ids (3+ digits, so that a plain
# "hw_1_2_final.ipynb" is not taken for a Canvas name).
CANVAS_FILE = re.compile(
    r"^(?P<name>[^\W_](?:[^\W_]|-)*?)(?P<late>_late)?_(?P<user>\d{3,})_(?P<submission>\d{3,})_(?P<original>.+)$",
    re.IGNORECASE)


@convention("moodle", lms=True)
def moodle(place: Place) -> Owner | None:
    """`Full Name_123_assignsubmission_file_/lab.ipynb`, or in older Moodles the flat
    `Full Name_123_assignsubmission_file_lab.ipynb`."""
    for folder in place.folders:
        match = MOODLE_FOLDER.match(folder)
        if match:
            return _moodle_owner(match)
    match = MOODLE_FILE.match(place.name)
    return _moodle_owner(match) if match else None


def _moodle_owner(match: re.Match[str]) -> Owner:
    """The student a Moodle name's `name` and `id` groups say (a submission folder's, a flat file's, another
    plugin's): one id for all of them, so a student's file and online text are one row."""
    return _moodle_named(match["name"], match["id"])


def _moodle_named(name: str, lms_id: str) -> Owner:
    """The student Moodle names `name` (their full name) with participant id `lms_id`: in its export's folder
    names, and in its worksheet (a student who handed in nothing is only there)."""
    named = f"{name}_{lms_id}"
    return Owner(safe_id(named), "moodle", lms_id=lms_id, former=_former(named))


@convention("canvas", lms=True)
def canvas(place: Place) -> Owner | None:
    """`smithjohn_12345_67890_lab.ipynb`, `smithjohn_LATE_12345_67890_lab-2.ipynb`: name and user id."""
    match = CANVAS_FILE.match(place.name)
    if match:
        named = f"{match['name']}_{match['user']}"
        return Owner(safe_id(named), "canvas", match["original"], bool(match["late"]), former=_former(named))
    return None


GRADESCOPE_FOLDER = re.compile(r"^submission_(?P<id>\d+)$")


@convention("gradescope", lms=True)
def gradescope(place: Place) -> Owner | None:
    """`assignment_1234_export/submission_567890/lab.ipynb`: Gradescope's "Download Submissions" gives each
    submission a folder named by its number; its `submission_metadata.yml` names the students (see `_named`)."""
    top = place.top_folder
    match = GRADESCOPE_FOLDER.match(top) if top is not None else None
    if match:
        return Owner(f"submission_{match['id']}", "gradescope", lms_id=match["id"])
    return None


@convention("folder")
def folder(place: Place) -> Owner | None:
    """`<student>/<anything>.ipynb`, at any depth below the student's folder."""
    top = place.top_folder
    return Owner(safe_id(top), "folder", name=top, former=_former(top)) if top is not None else None


@convention("file")
def file(place: Place) -> Owner | None:
    """`<student>.ipynb`: the file name without its suffix, and without a browser's copy number (`bob (1).ipynb`,
    the second download of bob's file, is bob's: it was a second student `bob_1`)."""
    stem = _stem(place.name)
    copy = BROWSER_COPY.match(stem)
    stem = copy["base"] if copy else stem
    return Owner(safe_id(stem), "file", name=stem, former=_former(stem))


# A browser's name for a second download of a file it already has: `lab (1).ipynb` (Chrome, Edge), `lab(1).ipynb`
# (Firefox). Where content and time do not decide, the later download is graded (_attempts).
BROWSER_COPY = re.compile(r"^(?P<base>.*?\S) ?\((?P<n>[1-9]\d{0,3})\)$")


@dataclass(frozen=True)
class Record:
    """An LMS's word on one hand-in, from its worksheet."""

    late: bool
    recorded: str = ""      # its time of the hand-in, ISO; without a zone when the LMS writes the TA's local time
    extended: str = ""      # the student's own due date, when the LMS granted an extension (ISO, no zone)
    students: tuple[str, ...] = ()   # the students the LMS says handed it in (ids), when its file names do not say
                                     # (Gradescope's submitters: several for a group's hand-in)
    formers: tuple[str, ...] = ()    # for each of `students`, the id an older grader gave that name ("" if the
                                     # same; keep_former_ids)
    nothing: str = ""       # the LMS's word that this student handed in nothing (Moodle's Status "No submission")
    named: str = ""         # the student's name as the worksheet lists them (Moodle's "Full name"), for their row
    worksheet: str = ""     # the worksheet it was read from (set when it is read)


Worksheet = Callable[[str], "dict[str, Record] | None"]
WORKSHEETS: dict[str, Worksheet] = {}   # convention -> reader of its LMS's file that says who was late
WORKSHEET_SUFFIXES: dict[str, tuple[str, ...]] = {}   # convention -> the suffixes of its worksheet


def worksheet(name: str, suffixes: tuple[str, ...] = (".csv",)) -> Callable[[Worksheet], Worksheet]:
    """Register the reader of a convention's worksheet: its text in, {LMS id: Record} out, or None when the text
    is not that LMS's worksheet. An LMS that flags lateness beside its export, not in its file names, is one
    more `@worksheet` function."""
    def register(function: Worksheet) -> Worksheet:
        WORKSHEETS[name] = function
        WORKSHEET_SUFFIXES[name] = suffixes
        return function
    return register


MOODLE_LATE = " late"      # the English "{$a} late" Moodle adds to a late submission's status ("2 days 3 hours late")
MOODLE_MODIFIED = "Last modified (submission)"
MOODLE_EXTENSION = "extension granted until"   # a Status part, "Extension granted until Monday, 23 November ..."
# Why an LMS student's folder made a row at zero (_nothing_in_folders): no file came, as with "No submission", so a
# row an earlier intake graded is kept (Entry.nothing), where a .pdf alone is a hand-in of the wrong file.
EMPTY_FOLDER = "a folder with no file in it"
# Status parts that say a participant handed in nothing: their export has no folder, the worksheet alone lists them.
MOODLE_NOTHING = frozenset({"no submission", "no attempt", "draft (not submitted)"})
# userdate's English strftimedatetime, "%A, %d %B %Y, %I:%M %p" with Moodle's leading zeros dropped:
# "Saturday, 21 November 2026, 2:00 AM"
MOODLE_TIME = re.compile(r"(\d{1,2}) ([A-Za-z]+) (\d{4}), (\d{1,2}):(\d{2})(?: ?([AaPp][Mm]))?")   # or 24-hour
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")


def moodle_time(text: str) -> str:
    """Moodle's English date-time as ISO without a zone ("" when it is no date: "-", another language)."""
    match = MOODLE_TIME.search(text)
    if not match or match[2].lower() not in MONTHS:
        return ""
    hour = int(match[4]) if not match[6] else int(match[4]) % 12 + (12 if match[6].lower() == "pm" else 0)
    try:
        return datetime(int(match[3]), MONTHS.index(match[2].lower()) + 1, int(match[1]), hour,
                        int(match[5])).isoformat()
    except ValueError:
        return ""


@worksheet("moodle")
def moodle_worksheet(text: str) -> dict[str, Record] | None:
    """Moodle's grading worksheet (View all submissions > Download grading worksheet), which its "Download all
    submissions" zip lacks: the Identifier column ("Participant 1234567") is the id in the zip's folder names,
    and the Status column joins the submission's states with " - ", one of them "1 day 2 hours late" for a
    late one ("Submitted for grading - 1 day 2 hours late - Graded"). "Last modified (submission)" is Moodle's
    own time of the hand-in, in the downloading user's zone (the rubric's `late.zone`). Download it in English:
    the words are the TA's language."""
    rows = csv.DictReader(io.StringIO(text))
    fields = set(rows.fieldnames or ())
    if not {"Identifier", "Status"} <= fields:
        return None
    records: dict[str, Record] = {}
    for row in rows:
        identifier = str(row.get("Identifier") or "").strip()
        digits = identifier.rsplit(" ", 1)[-1]
        if digits.isdigit():
            parts = str(row.get("Status") or "").split(" - ")
            extension = next((moodle_time(part) for part in parts if part.strip().lower().startswith(
                MOODLE_EXTENSION)), "")
            nothing = next((part.strip() for part in parts if part.strip().lower() in MOODLE_NOTHING), "")
            records[digits] = Record(any(part.strip().endswith(MOODLE_LATE) for part in parts),
                                     moodle_time(str(row.get(MOODLE_MODIFIED) or "")), extension, nothing=nothing,
                                     named=str(row.get("Full name") or "").strip())
    return records


GRADESCOPE_METADATA = "submission_metadata.yml"   # at the top of Gradescope's "Download Submissions" export
# Ruby's Psych writes the export's times so: "2026-11-20 22:10:05.123456000 Z" (YAML reads it as a timestamp, unless
# quoted), or with an offset ("-08:00").
DOCUMENT_END = re.compile(r"^\.\.\.[ \t]*$", re.MULTILINE)   # never a scalar's line: those are indented or quoted
GRADESCOPE_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d+)?\s*(Z|[-+]\d\d:?\d\d)?$")


class _MetadataLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """yaml.safe_load's loader (libyaml's when PyYAML has it, which also bounds nesting), that reads a node of a tag it
    does not know (Psych's `!ruby/object:BigDecimal` scores, `!ruby/hash:...`) as the plain value under it, instead
    of refusing the whole file: nothing is built but strings, numbers, lists, mappings and times."""


def _untagged(loader: yaml.SafeLoader, suffix: object, node: object = None) -> object:
    node = suffix if node is None else node
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    return None


_MetadataLoader.add_multi_constructor("!", _untagged)
_MetadataLoader.add_multi_constructor("tag:", _untagged)
_MetadataLoader.add_constructor(None, _untagged)


def gradescope_time(value: object) -> str:
    """`:created_at:` as ISO with its offset ("" when it is no time); one without a zone stays without."""
    if isinstance(value, datetime):
        return value.isoformat()
    match = GRADESCOPE_TIME.match(str(value).strip()) if isinstance(value, str) else None
    if not match:
        return ""
    zone = match[4] or ""
    zone = "+00:00" if zone == "Z" else (zone if ":" in zone or not zone else f"{zone[:3]}:{zone[3:]}")
    try:
        return datetime.fromisoformat(f"{match[1]}T{match[2]}{(match[3] or '')[:7]}{zone}").isoformat()
    except ValueError:
        return ""


def _field(mapping: dict[object, object], name: str) -> object:
    """A field of Psych's dump: a Ruby symbol key (":created_at"), or a plain one where the file was rewritten."""
    return mapping.get(f":{name}", mapping.get(name))


def _submitter(person: object) -> tuple[str, str]:
    """A submitter's id: name and student id (else e-mail), as Canvas's and Moodle's ids hold a name and a number;
    and the id an older grader gave the same name ("" when it is the same: _former)."""
    if not isinstance(person, dict):
        return "", ""
    parts = [str(value).strip() for value in (_field(person, "name"), _field(person, "sid") or _field(person, "email"))
             if value is not None and not isinstance(value, (dict, list)) and str(value).strip()]
    named = "_".join(parts)
    return (safe_id(named), _former(named)) if parts else ("", "")


@worksheet("gradescope", suffixes=(".yml", ".yaml"))
def gradescope_metadata(text: str) -> dict[str, Record] | None:
    """Gradescope's `submission_metadata.yml` (its "Download Submissions" export holds it beside the folders
    `submission_<number>/`): per submission, `:submitters:` (name, sid, email: a group has several) and
    `:created_at:`, Gradescope's own time of the active hand-in, with its zone. Gradescope writes no late flag:
    the time and the rubric's due date decide. Psych may split the file into documents by a bare `...` line, which
    libyaml refuses without a `---` after it; any other shape, or a file that is no YAML, is not this worksheet."""
    try:
        documents = list(yaml.load_all(DOCUMENT_END.sub("---", text), Loader=_MetadataLoader))
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None
    records: dict[str, Record] = {}
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict):
            return None
        for key, submission in document.items():
            match = GRADESCOPE_FOLDER.match(str(key))
            if not match or not isinstance(submission, dict):
                continue
            people = _field(submission, "submitters")
            named = dict(_submitter(person) for person in people) if isinstance(people, list) else {}
            named.pop("", None)
            records[match["id"]] = Record(False, gradescope_time(_field(submission, "created_at")),
                                          students=tuple(named), formers=tuple(named.values()))
    return records or None


def identify(place: Place) -> Owner:
    for function in CONVENTIONS.values():
        owner = function(place)
        if owner is not None:
            return owner
    return file(place)  # type: ignore[return-value]  # never None


# Latin letters that Unicode does not decompose into a base letter and an accent, so NFKD alone dropped them
# ("Søren Ødegaard" was "Sren_degaard"): spelt as the languages that use them write them without the letter.
LETTERS = str.maketrans({"ø": "o", "Ø": "O", "ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE",
                         "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th",
                         "ı": "i", "ħ": "h", "Ħ": "H", "ŧ": "t", "Ŧ": "T", "ŋ": "ng", "Ŋ": "NG"})


def safe_id(text: str) -> str:
    """A file-name-safe id that still reads as the name: accents folded to ASCII ("Zoë" -> "Zoe", "Søren" ->
    "Soren"), letters with no ASCII form kept as they are (NFC: "李 华_2110" -> "李_华_2110", "Иван" stays), since
    dropping them left only Moodle's number ("2110") or nothing; everything else (separators, punctuation,
    controls, format and invisible characters) becomes "_". Too long (over 100 UTF-8 bytes) or with nothing
    left, it gets a stable hash."""
    kept: list[str] = []
    letter = False                      # the last character kept is a letter kept as it is
    for character in unicodedata.normalize("NFC", text.translate(LETTERS)):
        folded = unicodedata.normalize("NFKD", character).encode("ascii", "ignore").decode("ascii")
        category = unicodedata.category(character)
        if folded or not character.isascii() and (
                category[0] == "L" and character not in INVISIBLE_LETTERS or category == "Nd"
                or category[0] == "M" and letter):     # a mark only on a kept letter: "q\u0301" is "q"
            letter = not folded
            kept.append(folded or character)
        elif category[0] != "M":
            letter = False
    return _ident("".join(kept), text, ASCII_UNSAFE)


# What is neither [A-Za-z0-9._-] nor kept by safe_id (its only non-ASCII characters are letters, digits and marks):
# the other ASCII characters, spelt as ranges. Written as "not those, nor \u0080-\U0010ffff" it took 2.5 ms of
# every start-up to compile (a negated class over all of Unicode); this one takes 0.1.
ASCII_UNSAFE = re.compile(r"[\x00-,/:-@\[-^`{-\x7f]+")
UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Letters (category Lo) that show as nothing: Hangul's fillers.
INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


def former_id(text: str, named: str | None = None) -> str:
    """The id graders gave `text` before safe_id spelt LETTERS (what NFKD does not fold was dropped): a
    gradebook's rows for "Søren" are under "Sren", and keep_former_ids keeps them there. `named`: the name
    whose hash tells apart names with nothing left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _ident(folded, text if named is None else named, UNSAFE)


def _ident(folded: str, named: str, unsafe: re.Pattern[str]) -> str:
    ident = unsafe.sub("_", folded).strip("._-")
    if ident and len(ident.encode("utf-8")) <= 100:
        return ident
    digest = _name_digest(named)
    short = ident.encode("utf-8")[:80].decode("utf-8", "ignore").rstrip("._-")
    return f"{short}-{digest}" if ident else f"student-{digest}"


def ascii_id(text: str) -> str:
    """The id graders gave `text` from LETTERS until session 19: letters with no ASCII form dropped ("李 华_2110"
    was "2110")."""
    return former_id(text.translate(LETTERS), text)


def _former(text: str) -> str:
    """The id an older grader gave `text`, when it is not the one safe_id gives now (else ""): the ASCII-only id of
    sessions 17-18 where the name has letters with no ASCII form, else the id from before LETTERS."""
    current = safe_id(text)
    for former in (ascii_id(text), former_id(text)):
        if former != current:
            return former
    return ""


def keep_former_ids(entries: Sequence[Entry], known: Collection[str]) -> tuple[list[Entry], list[str]]:
    """Entries whose id changed with safe_id's transliteration take their former id back where the gradebook
    has rows under it and none under the new one, so a class graded before keeps its students' rows,
    overrides and history; an id another entry of this batch holds is never taken. With a note each."""
    taken = {entry.student for entry in entries}
    kept: list[Entry] = []
    notes: list[str] = []
    for entry in entries:
        former = entry.former
        if former and entry.student not in known and former in known and former not in taken:
            notes.append(f"{former}: {entry.source} keeps the id its gradebook rows have (this grader would now "
                         f"name it {entry.student})")
            taken.add(former)
            entry = replace(entry, student=former)
        kept.append(entry)
    return kept, notes


def _name_digest(text: str, digits: int = 8) -> str:
    """A short stable hash of a name (any text a file system gives, lone surrogates too): what tells apart names
    that make one id."""
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:digits]


# ---------------------------------------------------------------------------------------------------
# Public entry point

Defines = Callable[[Path], int]
"""How many of the rubric's graded names a file defines (-1 when it cannot be read): given by the caller that
knows the rubric, so a scratch notebook beside the real one is not graded."""


def gather(paths: Sequence[str | Path], workdir: Path, defines: Defines | None = None,
           own: Sequence[Path] = ()) -> Intake:
    """Every student's submission among `paths` (files, folders, glob patterns, .zip exports);
    archive members are extracted under `workdir`. Of a student's several notebooks one is graded (`choose`).
    `own`: the folders this run writes (its results folder), left out unsaid wherever the paths reach them
    (`grade class --out class/results` counted its own results folder "skipped" on every run)."""
    collector = _Collector(Path(workdir), own)
    for raw in paths:
        collector.add(raw)
    return collector.finish(defines)


def choose_upload(files: Sequence[Path], defines: Defines | None = None, student: str = "submission"
                  ) -> tuple[Path | None, list[Path], str]:
    """The file to grade among ONE student's upload (the Gradescope runner's submission folder, a folder a student
    self-checks), by the same rule as a class (`choose`): (graded file, the others, a note saying why, naming
    `student`, "" when there was one)."""
    candidates = []
    for path in files:
        if _suffix(path.name) not in NOTEBOOK_SUFFIXES:
            continue
        try:
            info = path.stat()
        except OSError as error:
            candidates.append(_Candidate(Owner("submission", "file"), path, str(path), path.name, 0.0, "",
                                         f"cannot be read ({error.strerror})"))
            continue
        when = datetime.fromtimestamp(info.st_mtime).strftime("%Y-%m-%d %H:%M:%S")
        candidates.append(_Candidate(Owner("submission", "file"), path, str(path), path.name, info.st_mtime,
                                     when, "" if info.st_size else f"empty {_suffix(path.name)} file"))
    if not candidates:
        return None, [], ""
    chosen, others, note = choose(student, candidates, defines)
    return chosen.path, [c.path for c in others], note


def choose_in_folder(folder: Path, defines: Defines | None = None, student: str = "submission"
                     ) -> tuple[Path | None, list[Path], str]:
    """`choose_upload` over the files of one student's folder (the Gradescope runner's upload, a folder a student
    self-checks with `grader check`): the same pick for both, so a student checks the notebook that is graded."""
    files = [p for p in collect([folder]) if "__MACOSX" not in p.parts] if folder.is_dir() else []
    return choose_upload(files, defines, student)


def collect(paths: Iterable[str | Path]) -> list[Path]:
    """Submission files from files and folders (folders searched recursively, checkpoints skipped). Inside a folder
    a symbolic link is never followed (LINKED): a Gradescope upload or a git clone can hold a link to the course's
    reference, which would be graded as the student's own. What `grader grade` wrote is left out as gather leaves
    it out: a results folder inside (`grade ada --out ada/results`, then `grader check ada` checked the copy in
    results/notebooks/, the newest file of the same content), and the copies and shared values of the folder given
    where it is one itself."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            real = os.path.realpath(path)
            files = (Path(folder, name) for folder, names in _outside_results(path) for name in names)
            found.extend(sorted(
                p for p in files
                if p.is_file() and p.suffix in NOTEBOOK_SUFFIXES
                and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(path).parts)
                and os.path.realpath(p) == os.path.join(real, *p.relative_to(path).parts)))
        else:
            found.append(path)
    return found


def _outside_results(top: Path) -> Iterator[tuple[str, list[str]]]:
    """walk(top)'s folders and file names, without what a results folder of grader grade keeps (_Collector._walk's
    rule, not walk for walk: no LMS export is read here)."""
    for folder, dirs, names in walk(top):   # not rglob: see walk
        kept = _without_results(folder, dirs, names, top, _results_folder(folder, names, top))
        if kept is not None:
            yield folder, kept


def _without_results(folder: str, dirs: list[str], names: list[str], top: Path, results: bool) -> list[str] | None:
    """The names of a walked folder that are read, `results` when it is a results folder of grader grade: None for
    one below the folder given (nothing of it, nor of its subfolders: `dirs` is emptied); for the folder given
    itself (`grade . --out .`: its students are graded) all but the copies and shared values the grader keeps
    there (`dirs` loses RESULTS_FOLDERS). Any other folder's names as they are."""
    if not results:
        return names
    if folder != str(top):
        dirs[:] = []
        return None
    dirs[:] = [d for d in dirs if d not in RESULTS_FOLDERS]
    return [name for name in names if not RESULTS_FILES.match(name)]


# ---------------------------------------------------------------------------------------------------
# Collecting

@dataclass(frozen=True)
class _Item:
    """A file inside an input, before it is read: on disk, or an archive member not yet extracted."""

    place: Place
    source: str
    size: int
    modified: float
    when: str                                   # `modified` as the TA would read it
    fetch: Callable[[], Path]                   # the file on disk (extracts an archive member)
    handed: Stamp | None = None                 # inside a student's upload: the upload's hand-in time (`_handed`)
    own: Stamp | None = None                    # a zip member's time as the zip gives it (None: `modified`, a disk's)


@dataclass(frozen=True)
class _Candidate:
    owner: Owner
    path: Path
    source: str
    name: str
    modified: float
    when: str
    problem: str = ""       # why this notebook cannot be read (empty, a member that does not extract)
    handed: Stamp = Stamp()  # when it was handed in, as far as its time says (`_handed`)
    nothing: str = ""       # why no file was handed in: the worksheet's Status (_listed_absent), EMPTY_FOLDER


class _Unusable(NamedTuple):
    """A file of a student's that cannot be graded, and why. `stray`: a file that is simply not a notebook (a
    .pdf beside the .ipynb), reported only when its student has no notebook at all; the others were reported
    as problems when found."""
    owner: Owner
    source: str
    reason: str
    stray: bool


class _Problem(Exception):
    """An item that cannot be used; its message becomes the reason in `Intake.problems`."""


class _Collector:
    """The state of one `gather` call: what was found so far, and where archives are extracted."""

    def __init__(self, workdir: Path, own: Sequence[Path] = ()) -> None:
        self.workdir = workdir
        self.workdir_real = os.path.realpath(workdir)
        self.own_real = tuple(os.path.realpath(folder) for folder in own)   # the run's own output folders
        self.candidates: list[_Candidate] = []
        self.unusable: list[_Unusable] = []           # files that cannot be graded, by owner: why
        self.problems: list[str] = []
        self.seen: set[tuple[int, int]] = set()       # (device, inode) of disk files already taken
        self.records: dict[tuple[str, str], Record] = {}   # (convention, LMS id) -> LMS worksheets' word
        self.worksheets: list[str] = []               # notes: which worksheets were read
        self.allowances: dict[tuple[str, str], _Allowance] = {}  # (convention, student) -> their upload's extraction
        # The folders an LMS's export names as a student's (a Gradescope `submission_N/`, a Moodle `..._file_/`), with
        # where each is: one that holds nothing to grade (an empty folder) still makes its student's row.
        self.folders: list[tuple[Owner, str]] = []

    # -- inputs on disk -----------------------------------------------------------------------------

    def add(self, raw: str | Path) -> None:
        text = str(raw)
        path = Path(text)
        if not os.path.lexists(text) and re.search(r"[*?[]", text):
            try:
                matches = sorted(glob.glob(text, recursive=True))
            except RecursionError:   # glob's `**` recurses once per folder level (see walk)
                self.problems.append(f"{text}: a folder this pattern reaches is nested too deep for a pattern; "
                                     f"give the folder itself")
                return
            if not matches:
                self.problems.append(f"{text}: no file or folder matches this pattern")
                return
            root = _glob_root(text)
            files: list[Path] = []
            folders: list[Path] = []
            for match in map(Path, matches):
                if self._in_workdir(match) or self._in_own(match):
                    continue
                if match.is_dir():
                    files.extend(self._walk(match, folders))
                elif match.is_file() and not _kept_by_the_grader(match):
                    files.append(match)
            self._take_folder(root, files, folders=folders)
        elif path.is_dir():
            folders = []
            self._take_folder(path, self._walk(path, folders), walked=True, folders=folders)
        elif path.is_file():
            self._take_direct(path)
        elif os.path.exists(text):
            self.problems.append(f"{text}: {NOT_REGULAR}")
        else:
            self.problems.append(f"{text}: no such file or folder")

    def _in_workdir(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real == self.workdir_real or real.startswith(self.workdir_real + os.sep)

    def _in_own(self, path: Path) -> bool:
        """A pattern's match that is a folder this run writes, or what the grader keeps in one (its copies, shared
        values and gradebook): never a student's, and never "skipped" either. The students' files beside them
        (`grade '*.ipynb' --out .`) are graded."""
        real = os.path.realpath(path)
        for own in self.own_real:
            if real == own or (os.path.dirname(real) == own and RESULTS_FILES.match(os.path.basename(real))):
                return True
            if any(real == kept or real.startswith(kept + os.sep)
                   for kept in (os.path.join(own, name) for name in RESULTS_FOLDERS)):
                return True
        return False

    def _walk(self, top: Path, folders: list[Path] | None = None) -> list[Path]:
        """The files below `top` (the folders entered added to `folders`)."""
        found: list[Path] = []
        def unreadable(error: OSError) -> None:
            self.problems.append(f"{error.filename}: cannot be read ({error.strerror or error})")

        ours: set[tuple[int, int]] = set()   # the batch's work folder and the run's own output folders
        for made in (str(self.workdir), *self.own_real):
            try:
                info = os.stat(made)
            except OSError:
                continue     # not made yet: nothing of it to leave out
            ours.add((info.st_dev, info.st_ino))

        def is_ours(path: str) -> bool:   # an identity, not a realpath: one stat, however deep the folder
            if not ours:
                return False
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                return False
            return (info.st_dev, info.st_ino) in ours

        for folder, dirs, names in walk(top, onerror=unreadable):
            kept = _without_results(folder, dirs, names, top,
                                    (folder == str(top) and is_ours(folder)) or _results_folder(folder, names, top))
            if kept is None:
                self.problems.append(f"{folder}: a results folder of grader grade (its notebooks are copies of "
                                     f"graded ones), not a student's: not graded")
                continue
            names = kept
            # (Moodle's other plugins' folders are entered: their files name a student, see _moodle_other)
            dirs[:] = sorted(d for d in dirs if not _debris(d) and not is_ours(os.path.join(folder, d)))
            found.extend(Path(folder, name) for name in sorted(names))
            if folders is not None:
                folders.append(Path(folder))
        return found

    def _disk_item(self, path: Path, place: Place, linked: bool = False) -> _Item | None:
        """`linked`: a link lies on the way to `path` inside the folder given; its item is unreadable (LINKED)."""
        try:
            info = path.lstat() if linked else path.stat()
        except OSError as error:
            self.problems.append(f"{path}: cannot be read ({error.strerror or error})")
            return None
        key = (info.st_dev, info.st_ino)
        if key in self.seen:        # the same file reached twice (a folder and a glob inside it)
            return None
        if not linked:              # a refused link never takes the file it names (a glob through a linked folder)
            self.seen.add(key)
        when = datetime.fromtimestamp(info.st_mtime).strftime("%Y-%m-%d %H:%M:%S")
        why = LINKED if linked else NOT_REGULAR if not stat.S_ISREG(info.st_mode) else ""

        def refused() -> Path:
            raise _Problem(why)
        return _Item(place, str(path), info.st_size, info.st_mtime, when, refused if why else lambda: path)

    def _take_direct(self, path: Path) -> None:
        above = os.path.basename(os.path.realpath(path.parent))
        item = self._disk_item(path, Place((above, path.name), 1))
        if item is not None:
            self._take_items([item], level=0, owner=None, direct=True)

    def _take_folder(self, root: Path, files: Iterable[Path], walked: bool = False,
                     folders: Iterable[Path] = ()) -> None:
        """`walked`: the files come from _walk, which enters no linked folder, so only a file itself can be a link
        (one lstat; a realpath per file costs a stat per level of a folder a student may nest 1,500 deep).
        `folders`: the folders _walk entered (an LMS student's is noted, _lms_folder)."""
        root_real = os.path.realpath(root)
        above = os.path.basename(root_real)
        relative: list[tuple[tuple[str, ...], Path, bool]] = []
        for path in files:
            try:
                parts = path.relative_to(root).parts
                linked = path.is_symlink() if walked else os.path.realpath(path) != os.path.join(root_real, *parts)
            except ValueError:
                parts, linked = (path.name,), path.is_symlink()
            relative.append((parts, path, linked))
        named = []
        for folder in folders:
            try:
                named.append((folder.relative_to(root).parts, str(folder)))
            except ValueError:
                continue
        wrappers = _wrappers([parts for parts, _, _ in relative if not _skipped(parts)] + _lms_named(named), None)
        self._lms_folders(above, named, [parts for parts, _, _ in relative], None)
        items = []
        for parts, path, linked in relative:
            item = self._disk_item(path, Place((above, *parts), len(parts) - wrappers), linked)
            if item is not None:
                items.append(item)
        self._take_items(items, level=0, owner=None, direct=False)

    # -- one batch of items, from a folder or an archive -----------------------------------------------

    def _take_items(self, items: Sequence[_Item], level: int, owner: Owner | None, direct: bool) -> None:
        for item in items:
            inner = item.place.parts[len(item.place.parts) - item.place.inside:]
            if _skipped(inner):
                other = _moodle_other(inner)
                if other is not None:
                    self.unusable.append(_Unusable(other[0], item.source, f"Moodle's {other[1]} submission, not a "
                                                                          f"notebook", stray=True))
                continue
            name = item.place.name
            suffix = _suffix(name)
            who = owner if owner is not None else identify(item.place)
            try:
                # Only the TA's: given by itself or at the top of an input, never a file of a student's, whose
                # forged worksheet could say who was late.
                if owner is None and item.place.inside == 1 and who.convention == "file" \
                        and any(suffix in suffixes for suffixes in WORKSHEET_SUFFIXES.values()) \
                        and self._take_worksheet(item):
                    continue
                if suffix in NOTEBOOK_SUFFIXES:   # even an unreadable notebook is the student's row, at zero
                    problem = f"empty {suffix} file, nothing to grade" if item.size == 0 else ""
                    try:
                        path = item.fetch()
                    except _Problem as unreadable:
                        path, problem = self.workdir / "unreadable" / safe_id(item.source), str(unreadable)
                    self.candidates.append(_Candidate(who, path, item.source, name, item.modified, item.when,
                                                      problem, _handed(item, who)))
                elif suffix == ARCHIVE_SUFFIX:
                    self._take_nested(item, level, owner, who, direct)
                elif suffix in UNSUPPORTED_ARCHIVES or name.lower().endswith(".tar.gz"):
                    raise _Problem(f"{suffix} archives are not read (only .zip); extract it and grade the folder")
                elif ".ipynb" in name.lower():
                    raise _Problem("looks like a notebook saved under another name; rename it to .ipynb to grade it")
                elif direct:
                    raise _Problem(f"not a notebook ({suffix or 'no suffix'}); expected .ipynb, .py or .zip")
                elif not (who.convention == "file" and _quiet(name)):
                    self.unusable.append(_Unusable(who, item.source, "not a notebook", stray=True))
            except _Problem as problem:
                self.problems.append(f"{item.source}: {problem}")
                self.unusable.append(_Unusable(who, item.source, str(problem), stray=False))

    def _take_worksheet(self, item: _Item) -> bool:
        """An LMS worksheet (a CSV beside or inside the export that says who was late): read, and True."""
        if item.size > MAX_MEMBER_BYTES:
            return False
        try:
            text = item.fetch().read_text(encoding="utf-8-sig")
        except (_Problem, OSError, UnicodeDecodeError):
            return False
        suffix = _suffix(item.place.name)
        for name, read in WORKSHEETS.items():
            if suffix not in WORKSHEET_SUFFIXES[name]:
                continue
            try:
                records = read(text)
            except (csv.Error, ValueError):
                records = None
            if records is not None:
                # (a reader written for {id: late} still works: a bare flag is a record without times)
                records = {lms_id: replace(r, worksheet=item.source) if isinstance(r, Record)
                           else Record(bool(r), worksheet=item.source) for lms_id, r in records.items()}
                self.records.update(((name, lms_id), record) for lms_id, record in records.items())
                students = sum(len(r.students) or 1 for r in records.values())
                timed = sum(bool(r.recorded) for r in records.values())
                self.worksheets.append(f"{item.source}: {name} worksheet, {students} students, "
                                       f"{sum(r.late for r in records.values())} late"
                                       + (f", {timed} hand-ins with the LMS's time" if timed else ""))
                return True
        return False

    # -- archives -------------------------------------------------------------------------------------

    def _take_nested(self, item: _Item, level: int, owner: Owner | None, who: Owner, direct: bool) -> None:
        """A zip is a student's upload when its name or place says whose it is (or it sits inside an upload);
        otherwise it is an export of many students, read like a folder."""
        if level >= MAX_ARCHIVE_DEPTH:
            raise _Problem(f"zip nested more than {MAX_ARCHIVE_DEPTH - 1} level deep, not opened")
        path = item.fetch()
        name = item.place.name
        handed = _handed(item, who)
        if owner is not None or who.convention != "file":
            self._take_archive(path, name, item.source, level + 1, upload=owner or who, fallback=None, handed=handed)
        elif direct:
            self._take_archive(path, name, item.source, level + 1, upload=None, fallback=None)
        else:
            self._take_archive(path, name, item.source, level + 1, upload=None, fallback=who, handed=handed)

    def _take_archive(self, path: Path, name: str, label: str, level: int, upload: Owner | None,
                      fallback: Owner | None, handed: Stamp = Stamp()) -> None:
        """Read one zip. `fallback`: the owner if its members carry no LMS names (a plain `alice.zip`
        found inside a folder or export is Alice's upload; one holding Canvas names is an export). The members
        of an upload were handed in when it was (`handed`): their own dates are the student's clock."""
        directory = _directory_bytes(path)
        if directory > MAX_DIRECTORY_BYTES:
            self._refused_archive(label, f"a member list of {directory:,} bytes, more than the "
                                         f"{MAX_DIRECTORY_BYTES:,} one archive may have; archive not read", upload)
            return
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
            self._refused_archive(label, f"not a readable zip archive ({error})", upload)
            return
        with archive:
            members = self._members(archive, label, upload)
            wanted = sum(1 for parts, _ in members
                         if not _skipped(parts) and _suffix(parts[-1]) in (*NOTEBOOK_SUFFIXES, ARCHIVE_SUFFIX))
            if wanted > MAX_MEMBERS:
                self._refused_archive(label, f"{wanted:,} notebook, script and zip members, more than the "
                                             f"{MAX_MEMBERS:,} one archive may hold; archive not read", upload)
                return
            if upload is None and fallback is not None and not any(
                    identify(Place(parts, len(parts))).convention in ("canvas", "moodle") for parts, _ in members):
                upload = fallback
            wrappers = 0
            if upload is None:   # an export's folders (a zip holds an empty one as a folder entry alone)
                named = [(parts, f"{label}:{info.filename.rstrip('/')}") for parts, info in (
                    (tuple(part for part in info.filename.replace("\\", "/").split("/") if part not in ("", ".")), info)
                    for info in archive.infolist() if info.is_dir()) if parts and ".." not in parts]
                wrappers = _wrappers([parts for parts, _ in members if not _skipped(parts)] + _lms_named(named),
                                     _stem(name))
                self._lms_folders(_stem(name), named, [parts for parts, _ in members], _stem(name))
            folder = self.workdir / _archive_folder(name, label)
            overlapping = _overlapping(archive)
            allowance = None if upload is None else self.allowances.setdefault(
                (upload.convention, upload.student), _Allowance(MAX_UPLOAD_BYTES))
            items = [self._member_item(archive, info, parts, wrappers, folder, label,
                                       info in overlapping, allowance) for parts, info in members]
            if upload is not None:
                items = [replace(item, handed=handed) for item in items]
            self._take_items(items, level, upload, direct=False)

    def _lms_folders(self, above: str, folders: Sequence[tuple[tuple[str, ...], str]],
                     files: Sequence[tuple[str, ...]], stem: str | None) -> None:
        """Note the folders of an input (each as its parts and where it is) that an LMS's export names as a student's:
        if nothing of that student's is found, the folder still makes their row (finish). Only a folder named as an
        LMS names a student's (`submission_N`, Moodle's `..._assignsubmission_file_`), and its place is read below
        the folders that wrap the whole input, the empty ones counted (an export whose only folder is empty)."""
        named = [(parts, source) for parts, source in folders if _is_lms_named(parts)]
        if not named:
            return
        wrappers = _wrappers([p for p in files if not _skipped(p)] + [(*parts, "") for parts, _ in named], stem)
        for parts, source in named:
            if len(parts) > wrappers:
                owner = identify(Place((above, *parts, ""), len(parts) + 1 - wrappers))
                if owner.convention in LMS_EXPORTS:
                    self.folders.append((owner, source))

    def _refused_archive(self, label: str, reason: str, upload: Owner | None) -> None:
        """A zip that is not read. A student's upload (`upload`, its owner) is that student's file: an LMS's
        student whose only hand-in it was keeps a row at zero saying why (a Canvas `smith_..._lab.zip` that did
        not open was only "skipped", and the CSV had no row for them)."""
        self.problems.append(f"{label}: {reason}")
        if upload is not None:
            self.unusable.append(_Unusable(upload, label, reason, stray=False))

    def _members(self, archive: zipfile.ZipFile, label: str,
                 upload: Owner | None = None) -> list[tuple[tuple[str, ...], zipfile.ZipInfo]]:
        """The archive's files with safe relative paths; unsafe, linked and repeated names are problems, and in a
        student's `upload` that student's files (an upload of nothing else keeps its row, as a zip that does not
        open does)."""
        members: list[tuple[tuple[str, ...], zipfile.ZipInfo]] = []
        names: set[tuple[str, ...]] = set()
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = info.filename.replace("\\", "/")
            parts = tuple(part for part in name.split("/") if part not in ("", "."))
            if name.startswith("/") or ".." in parts or not parts or re.match(r"^[A-Za-z]:", parts[0]):
                reason = "unsafe member path (absolute or '..'), not extracted"
            elif stat.S_ISLNK(info.external_attr >> 16):
                reason = "symbolic link, not extracted"
            elif parts in names:
                reason = "the archive holds this name twice; only the first is read"
            else:
                names.add(parts)
                members.append((parts, info))
                continue
            self.problems.append(f"{label}:{info.filename}: {reason}")
            if upload is not None:
                self.unusable.append(_Unusable(upload, f"{label}:{info.filename}", reason, stray=False))
        return members

    def _member_item(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, parts: tuple[str, ...],
                     wrappers: int, folder: Path, label: str, overlaps: bool, allowance: _Allowance | None) -> _Item:
        modified, when = _zip_time(info.date_time)
        target = folder.joinpath(*parts)
        utc = _extended_time(info.extra)
        own = Stamp(utc) if utc else Stamp(local=_local_time(info.date_time))

        def fetch() -> Path:
            if overlaps:
                raise _Problem(OVERLAPPING)
            return _extract(archive, info, target, modified, allowance)
        return _Item(Place(parts, len(parts) - wrappers), f"{label}:{info.filename}", info.file_size, modified,
                     when, fetch, own=own)

    # -- choosing -------------------------------------------------------------------------------------

    def finish(self, defines: Defines | None = None) -> Intake:
        self.candidates, apart = _apart(self.candidates)
        found = {(c.owner.convention, c.owner.student) for c in self.candidates}
        self._nothing_in_folders(found)
        nothing = self._handed_nothing(found) + self._listed_absent(found)
        # A student given a row for handing in nothing gradable has each file and why in that row: the same files
        # are no "skipped" line too (one student counted twice, and skipped counted files that were graded zero).
        rowed = {(c.owner.convention, c.owner.student) for c in nothing}
        told = {f"{u.source}: {u.reason}" for u in self.unusable
                if not u.stray and (u.owner.convention, u.owner.student) in rowed}
        problems = [problem for problem in self.problems if problem not in told]
        strays = self._stray_problems(found | rowed)
        self.candidates.extend(nothing)
        groups: dict[tuple[str, str], list[_Candidate]] = {}
        candidates, named = self._named()
        for candidate in candidates:
            groups.setdefault((candidate.owner.convention, candidate.owner.student), []).append(candidate)
        ids, id_notes = _unique_ids(groups)
        entries: list[Entry] = []
        notes: list[str] = []
        for key, group in groups.items():
            chosen, others, note = choose(ids[key], group, defines)
            record = self.records.get((key[0], chosen.owner.lms_id), Record(False))
            entries.append(Entry(ids[key], chosen.path, chosen.source, key[0], tuple(c.source for c in others),
                                 chosen.owner.late or record.late, chosen.modified, chosen.problem,
                                 chosen.handed.at, record.recorded or chosen.handed.local, record.extended,
                                 chosen.owner.former if ids[key] == chosen.owner.student else "", chosen.nothing))
            if note:
                notes.append(note)
        entries.sort(key=lambda e: e.student)
        return Intake(tuple(entries), tuple(problems + strays),
                      tuple(self.worksheets + named + sorted(notes) + apart + id_notes))

    def _stray_problems(self, found: set[tuple[str, str]]) -> list[str]:
        """A line for each student (not among `found`, who have a candidate) whose files are none of them a
        notebook."""
        strays = [u for u in self.unusable if u.stray]
        problems: list[str] = []
        reported: set[tuple[str, str]] = set()
        for owner, source, _, _ in strays:
            key = (owner.convention, owner.student)
            if key not in found and key not in reported:
                reported.add(key)
                count = sum(1 for u in strays if (u.owner.convention, u.owner.student) == key)
                more = f" (and {count - 1} other file{'s' if count > 2 else ''})" if count > 1 else ""
                problems.append(f"{source}: not a notebook; {owner.student} has no .ipynb or .py file to grade{more}")
        return problems

    def _handed_nothing(self, found: set[tuple[str, str]]) -> list[_Candidate]:
        """A row at zero for each student an LMS's export names who handed in nothing gradable (a .pdf, a .rar, a
        notebook renamed .txt): without one, the gradebook's CSV had no row for them, and an LMS import left their
        grade as it was instead of a zero that says why."""
        why: dict[tuple[str, str], tuple[Owner, list[tuple[str, str]]]] = {}
        for owner, source, reason, _ in self.unusable:
            key = (owner.convention, owner.student)
            if owner.convention in LMS_EXPORTS and key not in found:
                files = why.setdefault(key, (owner, []))[1]
                if all((_member(source), reason) != (_member(seen), said) for seen, said in files):
                    files.append((source, reason))   # one file reached twice (the export and its extracted folder)
        return [_Candidate(owner, self.workdir / "unreadable" / safe_id(files[0][0]), files[0][0], "", 0.0, "",
                           "handed in no notebook or script to grade: "
                           + "; ".join(f"{_member(source)} ({reason})" for source, reason in files),
                           nothing=EMPTY_FOLDER if all(reason == EMPTY_FOLDER for _, reason in files) else "")
                for owner, files in why.values()]

    def _nothing_in_folders(self, found: set[tuple[str, str]]) -> None:
        """An LMS student's folder with no file of theirs in it (Gradescope's `submission_N/` of a hand-in with no
        file, a Moodle folder emptied) is their hand-in of nothing: a row at zero (_handed_nothing) rather than no
        row at all."""
        known = found | {(u.owner.convention, u.owner.student) for u in self.unusable}
        for owner, source in self.folders:
            key = (owner.convention, owner.student)
            if key not in known:
                known.add(key)
                self.unusable.append(_Unusable(owner, source, EMPTY_FOLDER, stray=False))

    def _listed_absent(self, found: set[tuple[str, str]]) -> list[_Candidate]:
        """A row at zero for each student an LMS's worksheet lists as having handed in nothing (Moodle's "No
        submission": its export has no folder for them), unless this intake has something of theirs: the CSV had no
        row for them, and an LMS import left their grade as it was."""
        rows = []
        rowed = found | {(u.owner.convention, u.owner.student) for u in self.unusable}
        for (convention_name, lms_id), record in sorted(self.records.items()):
            if not record.nothing or convention_name != "moodle" or not record.named:
                continue
            owner = _moodle_named(record.named, lms_id)
            if (owner.convention, owner.student) in rowed:
                continue
            rowed.add((owner.convention, owner.student))
            rows.append(_Candidate(owner, self.workdir / "unreadable" / owner.student, record.worksheet, "", 0.0, "",
                                   f"handed in nothing (the worksheet's Status: {record.nothing!r})",
                                   nothing=record.nothing))
        return rows

    def _named(self) -> tuple[list[_Candidate], list[str]]:
        """The candidates under the students their LMS's worksheet names (Gradescope's files sit in folders named by
        the submission's number): one per student of a group's hand-in, each graded (a row each, as in the LMS)."""
        candidates: list[_Candidate] = []
        groups: dict[str, tuple[str, ...]] = {}
        unnamed: set[str] = set()
        for candidate in self.candidates:
            owner = candidate.owner
            if owner.convention not in WORKSHEETS or owner.lms_id == "":
                candidates.append(candidate)
                continue
            record = self.records.get((owner.convention, owner.lms_id))
            if record is None or not record.students:
                if owner.convention == "gradescope":
                    unnamed.add(owner.student)
                candidates.append(candidate)
                continue
            if len(record.students) > 1:
                groups[owner.student] = record.students
            formers = record.formers or ("",) * len(record.students)
            candidates.extend(replace(candidate, owner=replace(owner, student=student, former=former))
                              for student, former in zip(record.students, formers, strict=True))
        notes = [f"{submission}: a group's hand-in, graded for each of its {len(students)} students: "
                 f"{', '.join(students)}" for submission, students in sorted(groups.items())]
        if unnamed:
            shown = ", ".join(sorted(unnamed)[:3]) + (f" and {len(unnamed) - 3} more" if len(unnamed) > 3 else "")
            notes.append(f"{shown}: a Gradescope export's submission{'s' if len(unnamed) > 1 else ''} that its "
                         f"{GRADESCOPE_METADATA} does not name (give the file from the top of the export): "
                         "named by number, and no time says when it was handed in")
        return candidates, notes


def _member(source: str) -> str:
    """A source's own file name: `export.zip:kimsam_45678_90123_lab.pdf` -> `kimsam_45678_90123_lab.pdf`."""
    return source.rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def _handed(item: _Item, who: Owner) -> Stamp:
    """When a file was handed in, as far as its time says: an upload's member, when the upload was (its own date
    is the student's clock); an LMS export's file, never (its time is the export's); any other, its own time."""
    if item.handed is not None:
        return item.handed
    if who.convention in LMS_EXPORTS:
        return Stamp()
    return item.own if item.own is not None else Stamp(item.modified)


# ---------------------------------------------------------------------------------------------------
# Choosing one notebook per student, and unique ids

CHOICE_RULE = (
    "a readable file is preferred to an unreadable one",
    "a notebook is preferred to a .py script",
    "highest Canvas resubmission number",
    "defines the most graded names",
    "newest modification time",
    "the later browser download (`lab (1).ipynb` after `lab.ipynb`)",
    "last by file name, modified at the same time",
    "last by source, same file name and time",
)
"""The one rule that picks a student's graded file among several, for a class (gather) and for one upload
(choose_upload, the Gradescope runner): each step decides only where the ones before it tie."""


def choose(student: str, group: Sequence[_Candidate], defines: Defines | None = None
           ) -> tuple[_Candidate, list[_Candidate], str]:
    """The graded file of `group` by CHOICE_RULE, the others, and a note naming the step that decided.

    `defines` counts the rubric's graded names in a file (only read when there is a choice to make)."""
    attempts = _attempts(group)
    copies = _attempts(group, browser=True)
    counted = [defines(c.path) if defines is not None and len(group) > 1 and not c.problem else 0 for c in group]
    ranked = sorted(((not c.problem, c.name.lower().endswith(".ipynb"), attempts[i], counted[i], c.modified,
                      copies[i], c.name, c.source, i) for i, c in enumerate(group)), reverse=True)
    order = [group[key[-1]] for key in ranked]
    chosen, others = order[0], order[1:]
    if not others:
        return chosen, [], ""
    step = next((i for i in range(len(CHOICE_RULE)) if ranked[0][i] != ranked[1][i]), len(CHOICE_RULE) - 1)
    reason = CHOICE_RULE[step]
    if step == 2:
        reason += f", -{ranked[0][2]}"
    elif step == 3:
        reason += f", {ranked[0][3]} of them"
    elif step == 4:
        reason += f", {chosen.when}"
    kind = "notebooks" if all(c.name.lower().endswith(".ipynb") for c in group) else "files"
    shown = [c.source + (" (same content)" if _same_bytes(c.path, chosen.path) else "") for c in others]
    return chosen, others, (f"{student}: {len(group)} {kind}, graded {chosen.source} ({reason}); "
                            f"not graded: {', '.join(shown)}")


def _attempts(group: Sequence[_Candidate], browser: bool = False) -> list[int]:
    """Canvas resubmission numbers: Canvas renames a re-uploaded `lab.ipynb` to `lab-1.ipynb`, `lab-2.ipynb`. With
    `browser`, a browser's download numbers instead: it saves a second download of `bob.ipynb` as `bob (1).ipynb`
    (BROWSER_COPY; a weaker word than the LMS's, so it decides only after the file's content and time). A number
    counts only when the same student also has `lab.ipynb` or another numbered copy of it, so that a file the student
    named `lab-2023.ipynb` is not taken for attempt 2023."""
    parsed = [_numbered(candidate, browser) for candidate in group]
    names = {_own_name(c) for c in group}
    result = []
    for candidate, (base, number) in zip(group, parsed, strict=True):
        siblings = base in names or any(b == base and n and _own_name(c) != _own_name(candidate)
                                        for c, (b, n) in zip(group, parsed, strict=True))
        result.append(number if number and siblings else 0)
    return result


def _own_name(candidate: _Candidate) -> str:
    """The file's name as its student gave it: inside a Canvas name, the student's own (`lab-1.ipynb`)."""
    return candidate.owner.lms_name or candidate.name


def _numbered(candidate: _Candidate, browser: bool) -> tuple[str, int]:
    """(the name without its number, the number): Canvas's `lab-2.ipynb`, or with `browser` a browser's
    `lab (2).ipynb`; (the name, 0) without one."""
    name = _own_name(candidate)
    if not browser:
        if not candidate.owner.lms_name:
            return name, 0
        match = re.match(r"^(?P<base>.*)-(?P<n>\d+)(?P<ext>\.[^.]*)?$", name)
        if match and match["base"]:
            return match["base"] + (match["ext"] or ""), int(match["n"])
        return name, 0
    if candidate.owner.lms_name:
        return name, 0
    suffix = _suffix(name)
    copy = BROWSER_COPY.match(_stem(name))
    return (copy["base"] + name[len(name) - len(suffix):], int(copy["n"])) if copy else (name, 0)


def _apart(candidates: Sequence[_Candidate]) -> tuple[list[_Candidate], list[str]]:
    """Students whose folder or file names differ but make one id ("Zoë Li/" and "Zoe Li/" are both Zoe_Li:
    safe_id folds accents and spaces) are graded apart, not as one student of whose files one was
    graded and the other's silently dropped. The name the id spells whole (else the first by name) keeps the id,
    so a student graded before keeps their gradebook rows; each other gets the id and a hash of its own name.
    No other student's id changes."""
    names: dict[tuple[str, str], set[str]] = {}
    for candidate in candidates:
        if candidate.owner.name:
            names.setdefault((candidate.owner.convention, candidate.owner.student), set()).add(candidate.owner.name)
    moved: dict[tuple[str, str], str] = {}
    notes: list[str] = []
    for (convention, student), group in sorted(names.items()):
        if len(group) < 2:
            continue
        keeper = min(group, key=lambda name: (_letters(name) != _letters(student), name))
        for name in sorted(group - {keeper}):
            moved[(convention, name)] = ident = f"{student}-{_name_digest(name)}"
            notes.append(f"{ident}: the {convention} {name!r} makes the same id as {keeper!r} ({student}); "
                         f"graded apart as {ident}")
    if not moved:
        return list(candidates), notes
    return [replace(c, owner=replace(c.owner, student=moved[(c.owner.convention, c.owner.name)]))
            if (c.owner.convention, c.owner.name) in moved else c for c in candidates], notes


def _letters(text: str) -> str:
    return "".join(character for character in text if character.isalnum())


def _unique_ids(groups: dict[tuple[str, str], list[_Candidate]]) -> tuple[dict[tuple[str, str], str], list[str]]:
    """Each (convention, student) gets its own id; when two conventions give the same one, the more specific
    convention keeps it and the others get -2, -3 (never an id some other student has by right)."""
    rank = {name: i for i, name in enumerate(CONVENTIONS)}
    order = sorted(groups, key=lambda key: (key[1], rank.get(key[0], len(rank)),
                                            min(c.source for c in groups[key])))
    natural = {student for _, student in groups}
    taken: dict[str, tuple[str, str]] = {}
    ids: dict[tuple[str, str], str] = {}
    notes: list[str] = []
    for key in order:
        convention_name, student = key
        ident = student
        if ident in taken:
            number = 2
            while f"{student}-{number}" in taken or f"{student}-{number}" in natural:
                number += 1
            ident = f"{student}-{number}"
            first = taken[student]
            notes.append(f"{ident}: its {convention_name} submission ({min(c.source for c in groups[key])}) has the "
                         f"same id as the {first[0]} one ({min(c.source for c in groups[first])}); "
                         f"graded as {ident}")
        taken[ident] = key
        ids[key] = ident
    return ids, notes


# ---------------------------------------------------------------------------------------------------
# Small helpers

def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _stem(name: str) -> str:
    suffix = _suffix(name)
    return name[:-len(suffix)] if suffix else name


def _results_folder(folder: str, names: Sequence[str], top: str | Path | None = None) -> bool:
    """Whether a folder is one `grader grade --out` wrote (`grade . --out results`, run twice, graded the
    copies in results/notebooks/ as a student named "results"): its mark and its gradebook. A mark beside a
    `notebooks/` folder alone is a student's folder (it was skipped, and the student had no row), and so is a
    folder an LMS's export names as a student's (below `top`, the folder given), whatever it holds: a student
    cannot hide their hand-in as the grader's. (The run's own results folder is left out by gather's `own`.)"""
    if not (RESULTS_MARK in names and "gradebook.sqlite" in names and os.path.isfile(os.path.join(folder,
                                                                                                 "gradebook.sqlite"))):
        return False
    if top is None:
        return True
    parts = Path(folder).relative_to(top).parts if folder != str(top) else ()
    return identify(Place((*parts, RESULTS_MARK), len(parts) + 1)).convention not in LMS_EXPORTS


def _kept_by_the_grader(path: Path) -> bool:
    """A file in what the grader keeps in a results folder (results/notebooks/<sha256>.ipynb), which a glob found."""
    return path.parent.name in RESULTS_FOLDERS and _results_folder(str(path.parent.parent),
                                                                   os.listdir(path.parent.parent))


def _skipped_name(name: str) -> bool:
    return _debris(name) or bool(MOODLE_OTHER.match(name))


def _debris(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_FOLDERS


def _moodle_other(parts: Sequence[str]) -> tuple[Owner, str] | None:
    """The student and plugin of a file of Moodle's other submission plugins (`Dee Ra_2104_assignsubmission_
    onlinetext_/onlinetext.html`): never a notebook, but a student whose only hand-in it is keeps a row (they had
    none, and were named nowhere)."""
    if any(_debris(part) for part in parts):
        return None
    for part in parts:
        match = MOODLE_OTHER.match(part)
        if match:
            return _moodle_owner(match), match["plugin"]
    return None


def _skipped(parts: Sequence[str]) -> bool:
    """Hidden files and folders, OS and Jupyter debris, Office lock files, Moodle non-file plugins."""
    return any(_skipped_name(part) for part in parts) or parts[-1].startswith("~$")


def _quiet(name: str) -> bool:
    return _suffix(name) in QUIET_SUFFIXES or bool(QUIET_NAMES.match(name))


def walk(top: str | Path,
         onerror: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk(top, onerror=onerror): top-down, `dirs` prunable, links to folders listed but not entered, without
    recursion. Python 3.11's os.walk (and pathlib's rglob) recurse once per folder level: a student's folder 1,500
    levels deep (a git clone, an unpacked upload) raised RecursionError out of the intake, and no student of the
    class was graded."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as error:
            if onerror is not None:
                onerror(error)
            continue
        dirs: list[str] = []
        names: list[str] = []
        links: set[str] = set()
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                if is_dir and entry.is_symlink():
                    links.add(entry.name)
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
        yield folder, dirs, names
        stack.extend(os.path.join(folder, name) for name in reversed(dirs) if name not in links)


def _glob_root(pattern: str) -> Path:
    """The folder a pattern's matches are named relative to: its leading parts without wildcards."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts:
        if re.search(r"[*?[]", part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _wrappers(paths: Sequence[tuple[str, ...]], archive_stem: str | None) -> int:
    """How many leading folders merely wrap the whole input, e.g. `course/hw1/<student>/...` or the
    `export/` folder a zip of `export/` holds. A lone `<student>/lab.ipynb` is not unwrapped: its folder
    names the student. A Moodle student folder is never a wrapper."""
    depth = 0
    while paths and all(len(p) > depth + 1 for p in paths):
        tops = {p[depth] for p in paths}
        if len(tops) != 1:
            break
        top = tops.pop()
        deeper = any(len(p) - depth - 1 >= 2 for p in paths)
        if MOODLE_FOLDER.match(top) or not (deeper or (depth == 0 and top == archive_stem)):
            break
        depth += 1
    return depth


def _is_lms_named(parts: tuple[str, ...]) -> bool:
    """A folder an LMS's export names as a student's (`submission_N`, Moodle's `..._assignsubmission_file_`)."""
    return bool(parts) and not _skipped(parts) and bool(GRADESCOPE_FOLDER.match(parts[-1])
                                                        or MOODLE_FOLDER.match(parts[-1]))


def _lms_named(folders: Sequence[tuple[tuple[str, ...], str]]) -> list[tuple[str, ...]]:
    """The LMS-named `folders` as paths of a file inside each, for _wrappers: an export whose student folders are
    all empty (Gradescope's `export/submission_N/` beside `export/submission_metadata.yml`) is wrapped by `export/`
    as one with files is, so its worksheet is read at its top (it was taken for a file of a student `export`: the
    rows were named by number, with no hand-in time)."""
    return [(*parts, "") for parts, _ in folders if _is_lms_named(parts)]


def _archive_folder(name: str, label: str) -> str:
    """A per-archive folder under workdir, stable across runs: the archive's name and a hash of its source."""
    return f"{safe_id(_stem(name))}-{_name_digest(label, 10)}"


def _zip_time(date_time: tuple[int, int, int, int, int, int]) -> tuple[float, str]:
    """A member's date as seconds (read as UTC: the zip format has no time zone) and as text."""
    try:
        seconds = float(calendar.timegm((*date_time, 0, 0, 0)))
    except (ValueError, OverflowError, TypeError):
        return 0.0, "unknown time"
    return seconds, "%04d-%02d-%02d %02d:%02d:%02d" % date_time


def _local_time(date_time: tuple[int, int, int, int, int, int]) -> str:
    """A member's DOS date as ISO without a zone: the zipping machine's local time, whatever its zone was."""
    try:
        return datetime(*date_time).isoformat()
    except (ValueError, TypeError):
        return ""


UNIX_TIME = 0x5455      # the "extended timestamp" extra field (Info-ZIP, macOS, 7-Zip): seconds since the epoch


def _extended_time(extra: bytes) -> float:
    """A member's modification time from its extended timestamp (the central directory's copy: flags, then the
    modification time first when flag 1 is set), 0 when it has none. Unlike the DOS date it says its zone."""
    offset = 0
    while offset + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, offset)
        body = extra[offset + 4:offset + 4 + size]
        if kind == UNIX_TIME and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack_from("<i", body, 1)[0])
        offset += 4 + size
    return 0.0


@dataclass
class _Allowance:
    """The bytes one student's upload may still extract (MAX_UPLOAD_BYTES at first), shared by its nested zips."""

    left: int


def _directory_bytes(path: Path) -> int:
    """The size the archive's end record gives its central directory (zipfile reads that much whole), from the
    record alone; 0 when it cannot tell (zipfile then says what is wrong)."""
    end_record = getattr(zipfile, "_EndRecData", None)   # zipfile's own reader of the record (private, stable)
    if end_record is None:   # pragma: no cover - every CPython has it
        return 0
    try:
        with open(path, "rb") as stream:
            record = end_record(stream)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, struct.error):
        return 0
    return int(record[5]) if record else 0      # zipfile._ECD_SIZE


def _overlapping(archive: zipfile.ZipFile) -> set[zipfile.ZipInfo]:
    """Members whose compressed bytes run into the next member's header (or the central directory).

    Why: a zip bomb of overlapping members (Fifield's "quoted overlap") makes every member's data a stored quote
    of the next one's header followed by the next one's data, so one shared compressed kernel is extracted once
    per member: 10 kB declared 50 members of 5 MB (and 1 MB can declare MAX_MEMBERS of 100 MB, terabytes), each
    within the member cap. CPython's zipfile refuses them only since 3.11.8 / 3.12.2; an archive an LMS or a
    student's zip tool writes never overlaps.
    """
    infos = sorted(archive.infolist(), key=lambda info: info.header_offset)
    ends = [info.header_offset for info in infos[1:]] + [getattr(archive, "start_dir", 1 << 62)]
    return {info for info, end in zip(infos, ends, strict=True)
            if info.header_offset + _LOCAL_HEADER + info.compress_size > end}


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, modified: float,
             allowance: _Allowance | None = None) -> Path:
    """Extract one member, streaming, so that a member lying about its size still stops at the limit (and at what
    its student's upload may still extract, when it is one)."""
    if info.file_size > MAX_MEMBER_BYTES:
        raise _Problem(f"{info.file_size / 1024 / 1024:,.1f} MB uncompressed, {TOO_LARGE}; not extracted")
    written = 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(info) as source, open(target, "wb") as sink:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if written > MAX_MEMBER_BYTES:
                    raise _Problem(f"once uncompressed, {TOO_LARGE}; not extracted")
                if allowance is not None and written > allowance.left:
                    raise _Problem(f"with the upload's other members, over the {MAX_UPLOAD_BYTES >> 20} MB one "
                                   "student's upload may extract; not extracted")
                sink.write(chunk)
        if allowance is not None:
            allowance.left -= written
        if modified:
            os.utime(target, (modified, modified))
    except _Problem:
        target.unlink(missing_ok=True)
        raise
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError, ValueError,
            zlib.error) as error:
        target.unlink(missing_ok=True)
        raise _Problem(f"could not be extracted ({error})") from None
    return target


def _same_bytes(a: Path, b: Path) -> bool:
    try:
        return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()
    except OSError:
        return False
