"""Lateness: when a submission came in, whether it was late, and the rubric's penalty for it.

The penalty is shown apart from the score (a result's `total` stays what the code earned; `penalty` is what
the late policy takes off), so a TA can see both and waive one without regrading.

What counts as "when it came in" is decided by the intake (`grader.intake.gather.Entry.handed_in`): the LMS's
own record of the hand-in, else the file's time, but never a time the LMS gave its export (Canvas dates every
member with the hour the zip was made) nor the student's own clock (the dates inside a zip they made). An LMS's
late flag was judged against the LMS's due date, which the rubric's `due` may extend: a time of the hand-in wins
over it, and without one the flag counts as one day late (`lms_flag: trust`) or not at all (`lms_flag: ignore`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Sequence

DAY = 86400.0
LMS_FLAG = ("trust", "ignore")


@dataclass(frozen=True)
class LatePolicy:
    """`per_day` of the score is taken off for each day or part of a day after `due`, at most `cap`."""

    due: datetime                 # timezone-aware
    per_day: float = 0.1
    cap: float = 1.0
    lms_flag: str = "trust"       # a flagged hand-in with no time of its own: one day late, or not late ("ignore")
    zone: tzinfo | None = None    # the course's zone (`late.zone`), for times written without one (Moodle's)

    @property
    def local(self) -> tzinfo:
        """The zone a time written without one is read in: the course's, else the due date's own offset."""
        return self.zone or self.due.tzinfo or timezone.utc


@dataclass(frozen=True)
class HandIn:
    """What the intake knows of when a submission was handed in."""

    flagged: bool = False         # the LMS said it was late (Canvas `_LATE_`, Moodle's worksheet)
    at: float = 0.0               # seconds since the epoch, 0 when no time says when it was handed in
    recorded: str = ""            # the LMS's own record of the hand-in, as written, without a zone (ISO)
    extended: str = ""            # the student's own due date the LMS granted (an extension), without a zone


@dataclass(frozen=True)
class Lateness:
    late: bool                    # late by the rubric's due date (by the LMS's flag when the rubric has none)
    submitted_at: str = ""        # when it was handed in (UTC ISO), as far as a trustworthy time says; "" unknown
    days: int = 0                 # whole days late, a part of a day counting as one (0 without a due date)
    penalty: float = 0.0          # points taken off by the rubric's policy
    share: float = 0.0            # the share of the score it takes off: of a TA's overridden score too


LATE_SHARE = "late_share"         # a result's extra: `Lateness.share`, for the penalty of an overridden score


def penalty_of(total: float, share: float) -> float:
    """The points a late share takes off `total`: four decimals at most, never above the exact share (beyond a
    float's own error), so a CSV shows 2.1166 where a sixth of 12.7 was taken, not 2.11667 (the exact share, which
    `min` kept whenever rounding went up)."""
    exact = max(0.0, total) * share
    rounded = round(exact, 4)
    if rounded <= exact + 1e-9 * max(1.0, exact):
        return rounded
    return math.floor(exact * 10_000) / 10_000


COPIED_SECONDS = 120.0            # a class's hand-ins all dated within this: a copy's times, not the hand-ins'
COPIED_COUNT = 5


def copied_times(times: Sequence[float], policy: LatePolicy | None) -> str:
    """A note for the TA when the files' times look like those of one copy or download (`cp` without `-p`, a
    browser's download of each file), every one after the due date: each student would be charged, so say so."""
    known = [t for t in times if t]
    if policy is None or len(known) < COPIED_COUNT or min(known) <= policy.due.timestamp():
        return ""
    if max(known) - min(known) > COPIED_SECONDS:
        return ""
    return (f"the {len(known)} hand-ins dated by their files' times are all dated within "
            f"{max(known) - min(known):.0f} s of each other, after the due date: the times of a copy or a "
            f"download, not of each hand-in? Each is charged as late; grade the LMS's export, or files copied "
            f"with their times (cp -p, unzip)")


class NoZone(ValueError):
    """A due date written without an offset, in a rubric that names no zone: what time it is depends on where."""


def parse_due(text: str, zone: tzinfo | None = None) -> datetime:
    """An ISO date-time with its offset, or one without read in `zone` (daylight saving included). A date alone
    is due at the end of that day. Unreadable: ValueError; without an offset or a zone: NoZone. No zone is
    guessed: UTC would charge a course west of Greenwich a day for work handed in on time, and the grading
    machine's own zone is the course's on a TA's laptop but often UTC on a server or in CI, so the same rubric
    would charge the same hand-in differently."""
    stripped = text.strip()
    when = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
    if when.tzinfo is not None:
        return when
    if zone is None:
        raise NoZone("no time zone")
    if "T" not in stripped and " " not in stripped and when.time() == time(0):   # a day: due as it ends
        when = when + timedelta(days=1)
    return when.replace(tzinfo=zone)


def utc_text(at: float) -> str:
    """`at` (seconds since the epoch) as UTC ISO, or "" where no date can say it (outside years 1-9999, NaN)."""
    try:
        return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return ""


def local_zone_name(environ: Mapping[str, str], etc: Path = Path("/etc")) -> str | None:
    """This machine's IANA zone name (TZ, else /etc/timezone, else where /etc/localtime links), if it has one:
    what a rubric refused for a zone-less due date offers to write, never what it reads the date in."""
    named = environ.get("TZ", "").lstrip(":")
    if not named:
        try:
            named = (etc / "timezone").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            try:
                named = os.readlink(etc / "localtime").partition("zoneinfo/")[2]
            except OSError:
                named = ""
    return named if re.fullmatch(r"[A-Za-z_+-]+(?:/[A-Za-z0-9_+-]+)*", named or "") else None


def is_utc_name(name: str) -> bool:
    """Whether an IANA name is UTC under another name (a server's usual setting, no course's zone)."""
    return name.removeprefix("Etc/") in ("UTC", "UCT", "GMT", "GMT0", "GMT+0", "GMT-0", "Greenwich", "Universal",
                                         "Zulu")


def recorded_time(recorded: str, zone: tzinfo) -> float:
    """The LMS's zone-less record of a hand-in, read in `zone`: seconds since the epoch, 0 if unreadable (also a
    time a date cannot say in UTC: "31 December 9999, 11:59 PM" read west of Greenwich crashed the batch)."""
    try:
        when = datetime.fromisoformat(recorded)
        at = (when if when.tzinfo else when.replace(tzinfo=zone)).timestamp()
    except (ValueError, OverflowError):
        return 0.0
    return at if utc_text(at) else 0.0


def assess(hand_in: HandIn, total: float, policy: LatePolicy | None) -> Lateness:
    """Pure: the lateness of a submission handed in so, and its penalty on `total` points."""
    at = recorded_time(hand_in.recorded, policy.local if policy else timezone.utc) if hand_in.recorded else 0.0
    at = at or hand_in.at
    submitted = utc_text(at) if at else ""
    if not submitted:   # a time no date can say says nothing
        at = 0.0
    if policy is None:
        return Lateness(hand_in.flagged, submitted)
    due = policy.due.timestamp()
    if hand_in.extended:      # an extension the LMS granted this student: never earlier than the rubric's date
        due = max(due, recorded_time(hand_in.extended, policy.local))
    if at:
        seconds = at - due
        days = max(0, math.ceil(seconds / DAY)) if seconds > 0 else 0
    else:
        # No time says when: the LMS's flag is all there is. It was judged against the LMS's due date, which the
        # rubric may have extended; `lms_flag: ignore` says so.
        days = 1 if hand_in.flagged and policy.lms_flag == "trust" else 0
    share = min(policy.cap, policy.per_day * days)
    return Lateness(days > 0, submitted, days, penalty_of(total, share), share)
