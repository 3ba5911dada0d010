"""Incidents: what the sandbox refused or stopped that only hostile code does, as facts a trusted observer saw.

Why a module of its own: the sandbox contains an attack whatever it costs the student, but a contained attack whose
answers are right used to score full marks, unseen. An incident is recorded only where (1) no honest solution does
it and (2) the grader's side saw it (the parent's frame check, the kernel's pids cgroup, the seccomp filter's
notifications the zygote answers), never the child's word about itself. What honest code can hit (time, memory,
recursion, a full scratch, the isolated-helper call limits, a write outside the scratch: matplotlib writes its
cache under the home folder) stays a failed case, no incident.
The rubric's `incidents:` policy says what one costs (POLICIES); `apply` is that cost, a pure function of the
exercises and the incidents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

# What was seen. Words for the TA, each a fact of its own (never parsed out of a message).
FORGED_FRAME = "forged frame"        # a frame the runtime never writes at that point (noise, a start/load frame
                                     # during a case, an answer to another case, a malformed frame)
FORGED_CALL = "forged helper call"   # an isolated-helper call for a name this run does not isolate
PROCESS_CAP = "process cap"          # a fork or thread refused because the sandbox's process cap was reached
REFUSED_CALL = "refused call"        # a system call the seccomp filter refused: "refused call: <what>", the what
                                     # one of grader/sandbox/confine.py's REFUSED (a keyring, a signal to a
                                     # protected pid or kill(-1) as the grader's uid, another architecture's call);
                                     # never what honest code may try (os.nice, prlimit, a socket, IPC)
# The kinds, a refused call standing for all of confine.REFUSED's (not imported: this module is plain data).
KINDS = (FORGED_FRAME, FORGED_CALL, PROCESS_CAP, f"{REFUSED_CALL}: signal to a process not its own")

# Who saw it: the grader's own side, which student code cannot reach.
PARENT = "parent frame check"        # grader/sandbox/process.py reads and checks every frame
PIDS_CGROUP = "pids cgroup"          # the kernel's count of forks refused at the cap (pids.events: max)
SECCOMP = "seccomp (zygote)"         # the kernel's user notification of a refused call, answered by the zygote
OBSERVERS = (PARENT, PIDS_CGROUP, SECCOMP)

# The rubric's `incidents:` policy. exercise (default): the exercise during which it happened earns no points, and
# every exercise for one during the load (the notebook's top-level code runs before, and for, every exercise):
# a TA can say "the code graded for this exercise tried something no solution needs; the sandbox stopped it, and
# an exercise whose code attacks the grader is not credited". Not a share off the total (like a late penalty):
# that would make an attack that fails in a cheap exercise cost what a late hand-in does. none: recorded and
# shown to the TA, costs nothing (a course that wants to look first).
EXERCISE, NONE = "exercise", "none"
POLICIES = (EXERCISE, NONE)
DEFAULT_POLICY = EXERCISE

# What the student reads: that it happened and what it cost, never what was seen or how (that would teach the
# next attempt). The TA's report has the facts.
STUDENT_NOTE = ("the grader stopped something this exercise's code did that no solution needs to do; this exercise "
                "earns no points (your TA has the details)")
STUDENT_NOTE_LOAD = ("the grader stopped something the notebook's top-level code did that no solution needs to do; "
                     "no exercise earns points (your TA has the details)")
STUDENT_NOTE_SHOWN = "the grader stopped something this exercise's code did that no solution needs to do"
STUDENT_NOTE_SHOWN_LOAD = "the grader stopped something the notebook's top-level code did that no solution needs to do"


@dataclass(frozen=True)
class Incident:
    """One kind of thing a trusted observer saw the sandbox refuse or stop, where: `exercise` "" is the load (the
    notebook's top-level code), `case` "" is between cases or unknown; `count` how many times."""

    kind: str          # KINDS, or "refused call: <what>" for any of confine.REFUSED
    observer: str      # OBSERVERS
    exercise: str = ""
    case: str = ""
    count: int = 1


@dataclass(frozen=True)
class Seen:
    """What the sandbox saw, before grading placed it: `case` the case running ("" none), `near` a case of the
    request it was serving, whose exercise it belongs to ("" during the load)."""

    kind: str
    observer: str
    case: str = ""
    near: str = ""
    count: int = 1


def placed(seen: Iterable[Seen], exercise_of: Mapping[str, str]) -> tuple[Incident, ...]:
    """The sandbox's sightings as incidents of their exercises (`exercise_of`: case id -> exercise id), equal
    ones (kind, observer, exercise, case) merged into one with their counts added, in the order first seen."""
    merged: dict[tuple[str, str, str, str], int] = {}
    for item in seen:
        exercise = exercise_of.get(item.case or item.near, "")
        key = (item.kind, item.observer, exercise, item.case)
        merged[key] = merged.get(key, 0) + max(1, item.count)
    return tuple(Incident(kind, observer, exercise, case, count)
                 for (kind, observer, exercise, case), count in merged.items())


def apply(exercises: Sequence[Any], incidents: Sequence[Incident], policy: str) -> tuple[Any, ...]:
    """The exercises (results.ExerciseResult) as the policy has them: under `exercise`, those during which an
    incident happened (all of them for one during the load) score 0, with STUDENT_NOTE; under `none`, a note only.
    Cases keep their verdicts: what the code answered is still shown."""
    if not incidents:
        return tuple(exercises)
    at_load = any(incident.exercise == "" for incident in incidents)
    hit = {incident.exercise for incident in incidents}
    out = []
    for exercise in exercises:
        if not (at_load or exercise.id in hit):
            out.append(exercise)
        elif policy == NONE:
            shown = STUDENT_NOTE_SHOWN if exercise.id in hit else STUDENT_NOTE_SHOWN_LOAD
            out.append(replace(exercise, notes=(*exercise.notes, shown)))
        else:
            note = STUDENT_NOTE if exercise.id in hit else STUDENT_NOTE_LOAD
            out.append(replace(exercise, score=0.0, forfeited=exercise.score, notes=(*exercise.notes, note)))
    return tuple(out)


def for_the_ta(incidents: Sequence[Incident]) -> str:
    """The facts in one line for the TA's views (the CSV's `incidents` column, grade's summary, the class report):
    what was seen, how often, in which exercise (or the load) and by whom. Never for the student's report."""
    return "; ".join(f"{incident.kind}{f' x{incident.count}' if incident.count != 1 else ''} "
                     f"{f'in {incident.exercise}' if incident.exercise else 'during the load'}"
                     f"{f' (case {incident.case})' if incident.case else ''}, seen by the {incident.observer}"
                     for incident in incidents)


def to_json(incident: Incident) -> dict[str, Any]:
    return {"kind": incident.kind, "observer": incident.observer, "exercise": incident.exercise,
            "case": incident.case, "count": incident.count}


def from_json(data: Mapping[str, Any]) -> Incident:
    """An incident read back; a field a stored result lacks reads as its default."""
    return Incident(str(data.get("kind", "")), str(data.get("observer", "")), str(data.get("exercise", "")),
                    str(data.get("case", "")), int(data.get("count", 1)))
