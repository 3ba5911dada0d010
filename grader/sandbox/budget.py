"""A submission's deadline on a busy machine: it moves by the wall time the machine took from the grading.

The rubric's `submission_seconds` is wall time. On a busy machine the grading waits for a CPU (the worker's thread
and the sandbox's processes, often in turn: an isolated helper's call is a pipe round trip that needs both), and
eight-puzzle's A* rerun ran out of its 60 s at load 11 with cases "not run: the budget is spent" that cost points.
So the deadline the caller set moves by what the kernel says the grading waited for a CPU (cpuclock.credit: never
the child's word, never more than the sandbox's own idle wall time), at most `slack` seconds: the watchdog still
ends every submission. The sandbox's waiting is its cgroup's "full" CPU pressure where the kernel keeps it (the
wall time in which the sandbox had work and none of it ran: someone else's did), else the run-queue time of its
runtime and forks. Run-queue time is also what a notebook's own processes and threads make each other wait: several
of them waiting at once earned more than the wall time they waited, and a notebook that computed and slept by turns
had its cases "machine too busy" and graded again at every run. The group's stall never shows that: one of its own
was running. Nothing is read while the deadline is ahead; once it has passed, `starved` says whether it
passed only because the slack ran out (the machine's fault: the case is a grader problem and the result is
graded again), else the submission spent its own time (its budget, as on a quiet machine).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from grader.sandbox import cpuclock

Stall = Callable[[], float | None]   # a sandbox group's stall so far (isolation.CpuMeter.stalled)

FORK_READ_SECONDS = 0.25   # a running exercise's fork is read at most this often (its reading is lost when it ends)


@dataclass(frozen=True)
class Mark:
    """Where a submission's time starts, as its budget counts it. The deadline runs from the submission's start
    (grading.grade_notebook), before its sandbox is made: its reading and extraction (`spent` of it may have been
    done ahead), the course's given code, the sandbox's making. Counted from the sandbox's making, that time went
    on the deadline but never in the credit, though the grading thread waited for a CPU there too: at load 16 a
    worker's first eight-puzzle notebook took 2.3 s from its start to its sandbox, none of it credited."""

    at: float           # monotonic: the submission's start
    waited: float       # the grading thread's run-queue time then (cpuclock.own_waiting), less what the reading waited
    computed: float     # its CPU time then (time.thread_time), less what the reading computed

    @classmethod
    def now(cls, spent: float = 0.0, waited: float = 0.0, computed: float = 0.0) -> "Mark":
        """The submission starts `spent` seconds ago, of which the reading waited `waited` s for a CPU and
        computed `computed` s (the rest of its time: this thread's from now)."""
        return cls(time.monotonic() - spent, cpuclock.own_waiting() - waited, time.thread_time() - computed)


@dataclass
class Budget:
    """What the machine took from one submission's time, as the sandbox keeps it (monotonic seconds)."""

    slack: float              # the deadline moves by at most this much (0: never)
    started: float            # when the submission started (Mark): waiting and computing are counted from here
    own: float = 0.0          # the grading thread's run-queue time at the start (less what the reading waited)
    own_cpu: float = 0.0      # and its CPU time (time.thread_time)
    gone: float = 0.0         # run-queue time of the sandbox's processes that ended (their last readings)
    gone_cpu: float = 0.0     # CPU time of the sandbox's children that ended (their last readings)
    runtime: float = 0.0      # the current child's waiting when it started (its group's stall, or run-queue time)
    stall: Stall | None = None   # the current child's group's stall reader, where the kernel keeps it
    fork: float = 0.0         # the running exercise's fork: its last reading (its whole life's run-queue time)
    fork_pid: int = 0         # which fork that reading is of
    read_at: float = 0.0      # when the fork was last read, or its exercise started
    # Of each fork (host pid), the waiting already counted in `gone`: a fork that stays pristine serves the next
    # exercises too, and its reading is its whole life's (added again at each exercise's end, eight exercises of one
    # fork were credited eight times its waiting).
    counted: dict[int, float] = field(default_factory=dict)
    granted: float = 0.0      # the credit last worked out, uncapped
    reached: bool = False     # the caller's deadline passed at least once (the result then says what was granted)

    @classmethod
    def start(cls, slack: float, since: Mark) -> "Budget":
        """Counted from the submission's start (`since`), on the thread that grades it."""
        return cls(slack, since.at, own=since.waited, own_cpu=since.computed)

    def handed_over(self, since: Mark) -> None:
        """The submission is graded on from here by another thread (a load ahead: grading.preload), which counts
        from `since` as the loading thread did (`since`'s spent, waited and computed are that thread's since the
        submission's start): the wall time between the load's end and `since` (the worker finishing the submission
        before) is nobody's, and the thread clocks are this thread's from now."""
        self.started, self.own, self.own_cpu = since.at, since.waited, since.computed

    def child_started(self, pid: int, stall: Stall | None = None, made: float = 0.0, before: float = 0.0) -> None:
        """A new child: its waiting is its group's stall where `stall` reads one, else its processes' run-queue
        time (the runtime's, and each exercise's fork, read now and then: fork_read). A child whose groups were
        `made` since the budget started counts from its start, and what the zygote waited to start it (`before`)
        with it: that start (the zygote's fork, the jail, the runtime's imports; the zygote's own on first use) was
        on this submission's time too, and a first load starved at a few percent of a CPU passed its deadline
        with a fraction of that time credited, "the submission's time budget ran out" (ta's notes 12). A spare
        child, started ahead, counts from now."""
        if self.slack > 0:
            first = stall() if stall is not None else None
            self.stall = stall if first is not None else None
            if made >= self.started:
                self.gone += before
                first = 0.0
            self.runtime = first if first is not None else cpuclock.run_delay(pid)

    def child_stopping(self, pid: int, cpu: float | None) -> None:
        """A child about to be replaced: what it waited and computed is kept (its processes' counts die with it)."""
        if self.slack > 0:
            self.gone += self._child_waited(pid)
            self.gone_cpu += cpu or 0.0
            self.runtime, self.stall = 0.0, None

    def _child_waited(self, pid: int) -> float:
        """What the current child waited since it started: its group's stall, else its runtime's run-queue time."""
        if self.stall is not None:
            stalled = self.stall()
            return max(0.0, stalled - self.runtime) if stalled is not None else 0.0
        return max(0.0, cpuclock.run_delay(pid) - self.runtime)

    def exercise_started(self, now: float) -> None:
        self.fork, self.fork_pid, self.read_at = 0.0, 0, now

    def fork_due(self, now: float) -> bool:
        """Whether the running exercise's fork is to be read now: never where the group's stall counts it."""
        return self.slack > 0 and self.stall is None and now - self.read_at >= FORK_READ_SECONDS

    def fork_read(self, pid: int, now: float) -> None:
        self.fork, self.fork_pid, self.read_at = cpuclock.run_delay(pid), pid, now

    def _fork_new(self) -> float:
        """What the running exercise's fork waited that is not counted yet."""
        return max(0.0, self.fork - self.counted.get(self.fork_pid, 0.0))

    def exercise_ended(self, now: float) -> None:
        """What the exercise waited is kept in `gone`: its fork's last reading, or its child's group's stall."""
        if self.stall is not None:
            stalled = self.stall()
            if stalled is not None:
                self.gone += max(0.0, stalled - self.runtime)
                self.runtime = max(self.runtime, stalled)
        if self.fork_pid:
            self.gone += self._fork_new()
            self.counted[self.fork_pid] = max(self.fork, self.counted.get(self.fork_pid, 0.0))
        self.exercise_started(now)

    def until(self, deadline: float, now: float, runtime: int | None, cpu: float | None) -> float:
        """The deadline as it stands at `now` (>= `deadline`): moved by the credit, at most the slack. `runtime`
        is the current child's first process (None: none runs) and `cpu` its CPU time so far."""
        self.reached = True
        # The grading thread's run-queue time is the one count a notebook can raise itself (its processes busy beside
        # the thread), but by no more than they compute, which the credit leaves out: one such count can never
        # move the deadline past the slack (redteam's notes 12, item 1); the sandbox's own waiting would be a second.
        waited = self.gone + self._fork_new() + max(0.0, cpuclock.own_waiting() - self.own)
        if runtime is not None:
            waited += self._child_waited(runtime)
        # What computed is the sandbox's, and the grading thread's own (its answers to isolated helpers, its
        # parsing): neither is the machine's. Counted as idle, the thread's CPU gave a fork that spins beside it
        # (on one CPU) while a thread of it floods cheap helper calls credit for waiting it made itself.
        computed = self.gone_cpu + (cpu or 0.0) + max(0.0, time.thread_time() - self.own_cpu)
        self.granted = cpuclock.credit(waited, now - self.started, computed)
        return deadline + min(self.slack, self.granted)

    def starved(self, deadline: float, now: float) -> bool:
        """Whether the deadline passed only because the slack ran out: with all the credit it would be ahead."""
        return self.granted > self.slack and now < deadline + self.granted

    def load_starved(self, deadline: float, now: float) -> bool:
        """Whether a load that ran out of the submission's time is the machine's fault: starved, or the kernel's own
        count of what the machine took passed the slack. A case asks only `starved`; a load that fails costs every
        exercise, and the credit is a lower bound of what the machine took (not every wait is counted: loads starved
        beside busy processes on one CPU were credited 2.4-3.5 s and ran out ~1 s past deadline + credit, the whole
        notebook 0 "the submission's time budget ran out"). Past the slack, such a load is graded again, never
        charged. The credit never counts what the notebook computes, so its own busy processes cannot earn this."""
        return self.slack > 0 and (self.granted > self.slack or self.starved(deadline, now))

    def facts(self) -> dict[str, float]:
        """For the result, once the deadline was reached: the slack and the credit (what the machine took)."""
        return {"slack_seconds": round(self.slack, 3), "waited_seconds": round(self.granted, 3)}


@dataclass(frozen=True)
class LoadClock:
    """The load's own limit on a busy machine (process.Sandbox.load). `seconds` (limits.load_seconds) is wall time,
    for a top-level statement may sleep or block; but at a few percent of a CPU a slow honest load took all of it
    waiting, and its running statement was left out as "did not finish" (the student's fault). So the limit moves
    by what the kernel says the sandbox waited for a CPU since the attempt started (cpuclock.credit), up to WALL_FACTOR
    times `seconds` in all, a case's wall backstop; the submission's deadline still bounds it. The runtime moves its
    own alarm by its run-queue time likewise (runtime.LoadClock), as far (`most`)."""

    seconds: float
    started: float        # monotonic
    waited: float         # the child's waiting then (its group's stall, or its runtime's run-queue time)
    computed: float       # the child's CPU time then, and the grading thread's own (time.thread_time)

    @property
    def most(self) -> float:
        """The most the limit moves by."""
        return (cpuclock.WALL_FACTOR - 1) * self.seconds

    def limit(self, now: float, waited: float, computed: float) -> float:
        """When the attempt's time runs out, as it stands at `now`."""
        credit = cpuclock.credit(waited - self.waited, now - self.started, computed - self.computed)
        return self.started + self.seconds + min(self.most, credit)
