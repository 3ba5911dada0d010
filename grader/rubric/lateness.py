"""Lateness: when a submission came in, whether it was late, and the rubric's penalty for it.

The penalty is shown apart from the score (a result's `total` stays what the code earned; `penalty` is what
the late policy takes off), so a TA can see both and waive one without regrading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

DAY = 86400.0


@dataclass(frozen=True)
class LatePolicy:
    """`per_day` of the score is taken off for each day or part of a day after `due`, at most `cap`."""

    due: datetime                 # timezone-aware
    per_day: float = 0.1
    cap: float = 1.0


@dataclass(frozen=True)
class Lateness:
    late: bool                    # the LMS said so (Canvas `_LATE_`), or the file time is after the due date
    submitted_at: str = ""        # the file's time (UTC ISO), as the intake saw it; "" when unknown
    days: int = 0                 # whole days late, a part of a day counting as one (0 without a due date)
    penalty: float = 0.0          # points taken off by the rubric's policy


def parse_due(text: str) -> datetime:
    """An ISO date or date-time; without a zone it is read as UTC (say the zone: '2026-11-20T23:59+01:00')."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def assess(flagged: bool, modified: float | None, total: float, policy: LatePolicy | None) -> Lateness:
    """Pure: the lateness of a submission with this LMS flag and file time, and its penalty on `total` points."""
    submitted = (datetime.fromtimestamp(modified, timezone.utc).isoformat(timespec="seconds")
                 if modified else "")
    if policy is None:
        return Lateness(flagged, submitted)
    days = 0
    if modified:
        seconds = modified - policy.due.timestamp()
        days = max(0, math.ceil(seconds / DAY)) if seconds > 0 else 0
    if flagged:
        # Late by the LMS's word: at least one day, whatever the file's time says. That time can be the student's
        # own (a zip they made keeps the dates their clock gave its members): a late upload whose notebook was
        # dated before the due date was flagged late and took no penalty.
        days = max(days, 1)
    share = min(policy.cap, policy.per_day * days)
    exact = max(0.0, total) * share
    return Lateness(flagged or days > 0, submitted, days, min(round(exact, 4), exact))   # never above the policy
