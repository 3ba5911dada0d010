"""Executors: where submissions are graded. The local pool runs one worker process per core.

A worker is trusted: it loads the plan (reference and expected values) once and grades submissions one at a
time, each in its own sandbox child. The coordinator hands out one job at a time per worker, and the next one
ahead while more jobs than workers are left; when a worker dies (a student killed it, or it ran out of memory)
with one job in flight it knows which submission to mark, with two it tries each again alone (LocalPool.alone),
and it starts another worker.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence

from grader.judge.options import Options
from grader.sandbox.supervisor import temp_root

if TYPE_CHECKING:
    from grader.judge.grading import Preloaded, Read
    from grader.plan.cases import Case, Plan
    from grader.store.results import SubmissionResult
    from grader.rubric.schema import Rubric


@dataclass(frozen=True)
class Job:
    """One submission to grade."""

    student: str
    path: str                   # absolute, so a worker elsewhere (Dask) reads the same file
    source: str = ""
    data: bytes | None = None   # the file's bytes, when they travel with the job (Dask workers need no shared disk)
    last: bool = False          # no job follows it in this batch (the pool's queue was empty when it was handed out)


@dataclass(frozen=True)
class Setup:
    """What every worker needs to build the same plan: passed by value, so it works across machines too."""

    rubric: "Rubric"            # the parsed rubric itself, so a rubric adjusted in memory is the one graded
    cache: str | None
    options: Options = field(default_factory=Options)
    hide: tuple[str, ...] = ()

    @functools.cached_property
    def plan_key(self) -> str:
        """Which plan a worker grades this setup with: the rubric (parsed, as given) and the cache. Worked out
        once per setup, not per job (it pickles the whole rubric)."""
        return hashlib.sha256(pickle.dumps((self.rubric, self.cache))).hexdigest()


@dataclass(frozen=True)
class Done:
    """A finished job: the result as a dict (results.to_dict), or why there is none."""

    job: Job
    result: dict | None
    failure: str = ""
    # A failure is recorded (and not retried unless forced) when the submission caused it: its worker died or
    # was stopped by the watchdog. One the grading machine caused (a worker that cannot read the course or the
    # file, a grader bug, a lost cluster worker) is reported but not recorded, so the next run tries again.
    record: bool = True
    # From a local worker: what of the result it left out for the coordinator's plan to put back (_by_name).
    names: tuple[tuple[int, int, int, str], ...] = ()
    # The result is its bounded result's stored form (results.stored_form: lean, the fields in their order), as a
    # local worker sends it: the coordinator writes the file and the gradebook row from it as it is.
    stored: bool = False


class Executor(Protocol):
    def run(self, jobs: Sequence[Job]) -> Iterator[Done]:
        """Grade the jobs, yielding each as soon as it is finished (in any order)."""


class WorkerProblem(Exception):
    """This worker cannot grade anything: the course or the submission is out of its reach (not the student's fault)."""


def _readable(path: Path, what: str) -> None:
    if not os.access(path, os.R_OK):
        import socket
        raise WorkerProblem(f"the worker on {socket.gethostname()} cannot read {what} {path} "
                            f"({'no such file' if not path.exists() else 'permission denied'}); "
                            f"give absolute paths on a filesystem the workers share")


_PLANS: dict[str, tuple[Plan, dict[str, str]]] = {}   # this process's plans (and support sources), by setup


def grade_job(setup: Setup, job: Job, read: "Read | None" = None) -> dict:
    """Grade one job in this process (a worker, or a Dask worker), building the plan once per process: the result
    as a dict (results.to_dict). `read`: the job's file read ahead (read_ahead, by the worker's _Inbox), else it
    is read here.

    Raises WorkerProblem when the course or the submission cannot be read here, rather than grading a
    "file not found" zero.
    """
    from grader.store.results import to_dict
    return to_dict(grade_result(setup, job, read))


def grade_result(setup: Setup, job: Job, read: "Read | None" = None,
                 preloaded: "Preloaded | None" = None) -> "SubmissionResult":
    """grade_job's result before it is made a dict. `preloaded`: `read` loaded ahead too (_Inbox)."""
    import tempfile
    from grader.judge.grading import grade_read, read_submission
    plan, support = _plan(setup)
    options = replace(setup.options, last=True) if job.last else setup.options
    if job.data is None:
        if read is None:
            read = read_job(setup, job)
        return grade_read(read, plan, support, options, submission=job.student, preloaded=preloaded)
    hide = tuple(Path(h) for h in setup.hide)
    with tempfile.TemporaryDirectory(prefix="job-", dir=temp_root()) as folder:   # the bytes travelled with the job
        local = Path(folder) / Path(job.path).name
        local.write_bytes(job.data)
        result = grade_read(read_submission(local, plan, hide, shown=job.source), plan, support, options,
                            submission=job.student)
    return replace(result, path=job.path)


def _plan(setup: Setup) -> "tuple[Plan, dict[str, str]]":
    """This process's plan for the setup (and its support sources), built on first use."""
    from grader.judge.grading import support_sources
    from grader.plan.cases import build_plan
    key = _plan_key(setup)
    if key not in _PLANS:
        _readable(setup.rubric.reference, "the course's reference")
        if setup.rubric.support is not None:   # its modules and data files go to every student's code
            _readable(setup.rubric.support, "the course's support folder")
        plan = build_plan(setup.rubric, Path(setup.cache) if setup.cache else None)
        _PLANS[key] = (plan, support_sources(plan))
    return _PLANS[key]


def read_job(setup: Setup, job: Job) -> "Read":
    """A job's file (on a disk this process sees) read and extracted for its plan: grade_job's first step."""
    from grader.judge.grading import read_submission
    plan, _ = _plan(setup)
    _readable(Path(job.path), "the submission")
    return read_submission(Path(job.path), plan, tuple(Path(h) for h in setup.hide), shown=job.source)


# What a worker reads ahead (_Inbox), on a thread beside the one that answers the current child: the file's JSON
# and each code cell are parsed by C code that keeps the GIL throughout, so that thread waits for each whole (a
# notebook of twenty 1.85 MB cells held it 35 s, and an A* search waiting for its isolated helpers' answers ran
# into its wall backstop: redteam). Within these one parse keeps it a few milliseconds (12-25 at load 10); a
# larger file is read, and a notebook with more code extracted, when its turn comes, by the thread that grades
# it, as before. A Taoistic notebook: 35 kB, 10,000 characters of code, 1,500 in its largest cell.
READ_AHEAD_BYTES = 256 * 1024       # the file
READ_AHEAD_CELL = 10_000            # characters of one code cell
READ_AHEAD_CODE = 60_000            # characters of all its code cells


def read_ahead(setup: Setup, job: Job) -> "Read | None":
    """The job's file read, and extracted if small enough to be beside a running child (see above); None when the
    file is larger or anything goes wrong (grade_job reads it)."""
    from grader.judge.grading import read_submission
    if job.data is not None or _plan_key(setup) not in _PLANS:   # a spawned worker builds its plan on its 1st job
        return None
    path = Path(job.path)
    try:
        if path.stat().st_size > READ_AHEAD_BYTES:
            return None
        started = time.thread_time()
        read = read_submission(path, _PLANS[_plan_key(setup)][0], tuple(Path(h) for h in setup.hide),
                               cells=(READ_AHEAD_CELL, READ_AHEAD_CODE), shown=job.source)
    except Exception:  # noqa: BLE001 - met again (and reported) when the job is graded
        return None
    # The submission's budget counts this thread's CPU time for the read, not its wall time: beside the main
    # thread grading another student, this one waits for the GIL, and that wait is not this student's (redteam).
    computed = time.thread_time() - started
    return replace(read, seconds=computed, waited=0.0, computed=computed)


def _plan_key(setup: Setup) -> str:
    return setup.plan_key


def _adopt_plan(setup: Setup, plan: "Plan") -> None:
    """A worker forked from the coordinator grades with the plan the coordinator already built."""
    from grader.judge.grading import support_sources
    _PLANS[_plan_key(setup)] = (plan, support_sources(plan))


# What of a case travels by name (_by_name), as the bits of its entry: its call is its plan case's shown call;
# its expected value is the plan's (the reference's or a variant's); its answer is that very value (a right one).
_CALL, _EXPECTED, _GOT = 1, 2, 4


def _plan_cases(plan: "Plan") -> "dict[str, Case]":
    """The plan's cases by id, made once per plan."""
    return plan.memo.get(("cases by id",), lambda: {case.id: case for cases in plan.cases.values() for case in cases})


def _plan_values(plan: "Plan") -> dict[str, tuple[str, tuple[tuple[str, object], ...]]]:
    """What of each case the plan holds, by case id, made once per plan: its shown call and, for a case with an
    expected value, each stored expected value by variant ("" the reference's)."""
    from grader.judge.grading import stored_expected

    def make() -> dict[str, tuple[str, tuple[tuple[str, object], ...]]]:
        values = {}
        for case in _plan_cases(plan).values():
            known = plan.expected.get(case.id)
            variants = () if known is None else tuple(
                (name, stored_expected(plan, case.id, name)) for name in ("", *(name for name, _ in known.variants)))
            values[case.id] = (case.shown_call, variants)
        return values
    return plan.memo.get(("values by id",), make)


def _by_name(result: dict, plan: "Plan") -> tuple[dict, tuple[tuple[int, int, int, str], ...]]:
    """The result dict (fresh from to_dict) without what the coordinator's plan holds too, the same for every
    student and most of a result: each case's call that is its plan case's shown call, each expected value of the
    plan, and each answer that is that very value; and where they were, as names: (exercise position, case
    position, bits, variant). Names are plain tuples, which unpickle at C speed (an object per value cost the
    coordinator more to unpickle than the values it stood for)."""
    values = _plan_values(plan)
    names: list[tuple[int, int, int, str]] = []
    for exercise_position, exercise in enumerate(result["exercises"]):
        for case_position, case in enumerate(exercise["cases"]):
            known = values.get(case["id"])
            if known is None:
                continue
            bits, variant = 0, ""
            if case["call"] is known[0]:
                bits |= _CALL
            expected = case["expected"]
            if expected is not None:
                for name, value in known[1]:
                    if expected is value:
                        bits |= _EXPECTED | (_GOT if case["got"] is expected else 0)
                        variant = name
                        break
            if bits:    # left in place, holding None: put back, the case's fields keep their order (stored_form's)
                if bits & _CALL:
                    case["call"] = None
                if bits & _EXPECTED:
                    case["expected"] = None
                if bits & _GOT:
                    case["got"] = None
                names.append((exercise_position, case_position, bits, variant))
    return result, tuple(names)


def _by_value(result: dict, names: tuple[tuple[int, int, int, str], ...], plan: "Plan") -> dict:
    """The coordinator's side of _by_name: what each name stands for put back, from its own plan (the one the
    workers were forked with), each where _by_name left None: the dict is again the form the worker made (a
    stored_form, in its order: Done.stored)."""
    from grader.judge.grading import stored_expected
    cases_by_id = _plan_cases(plan)
    exercises = result["exercises"]
    for exercise_position, case_position, bits, variant in names:
        case = exercises[exercise_position]["cases"][case_position]
        if bits & _CALL:
            case["call"] = cases_by_id[case["id"]].shown_call
        if bits & _EXPECTED:
            case["expected"] = value = stored_expected(plan, case["id"], variant)
            if bits & _GOT:
                case["got"] = value
    return result


def prepare_workers(plan: "Plan", options: Options) -> None:
    """What the judge prepares per plan, worked out in this process for the workers it will fork with the plan
    (LocalPool): once per plan and options, whoever asks first. A batch asks while its new gradebook is still
    being made on a thread (batch._NewGradebook), which it must wait for before it forks: the preparation's
    ~40 ms of CPU then runs while that thread waits for the disk (~15 ms it waited alone before, quiet)."""
    def make() -> bool:
        from grader.judge.grading import prepare
        try:
            prepare(plan, replace(options, prefetch=True))
        except Exception:  # noqa: BLE001 - only a head start: what fails here fails (and is reported) per job
            pass
        return True
    plan.memo.get(("prepared for workers", replace(options, prefetch=True)), make)


def worker_cpus(allowed: Sequence[int], index: int) -> set[int] | None:
    """The one CPU worker `index` keeps to (its sandboxes with it), round robin over the CPUs the grader may use,
    or None (no pin) where it may use only one. On a quiet machine a worker and its sandbox on two CPUs paid for
    every frame between them (an isolated-helper call, a case's answer) in wake-ups of an idle CPU, ~27 us of
    CPU on each side in a VM against ~3 on one CPU: 4 int-tiles copies on one worker took 2.25 s of CPU, 1.55
    pinned. A busy machine's waiting for that CPU is the budget's run-queue credit (budget.py), as before."""
    if len(allowed) < 2:
        return None
    return {sorted(allowed)[index % len(allowed)]}


def aside_cpus(allowed: Sequence[int], workers: int) -> set[int] | None:
    """The CPUs no worker keeps to (worker_cpus) when a pool has fewer workers than the grader has CPUs, or None.
    A worker's own threads (the next file read ahead, results sent, its sandbox's next child ordered) run there:
    on the worker's CPU they queued behind the child grading a student (one worker on two CPUs: ~6 ms a
    Taoistic notebook read and sent beside it, while the other CPU had only the coordinator's ~6)."""
    cpus = sorted(allowed)
    if len(cpus) < 2 or workers >= len(cpus):
        return None
    return set(cpus) - {cpus[index] for index in range(workers)}


def _pin(cpus: set[int] | None) -> None:
    """Keep the calling thread to `cpus`, and the threads and sandboxes it makes after (see process._config): on
    Linux affinity is a thread's, so called first in a worker it keeps the process there, and in a helper thread
    that thread alone (the process's other threads and its sandboxes keep theirs)."""
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except (OSError, ValueError):   # a CPU gone offline since: the worker floats as before
            pass


def _worker(connection: Connection, setup: Setup, plan: "Plan | None" = None, by_name: bool = False,
            cpus: set[int] | None = None, aside: set[int] | None = None) -> None:
    """A worker process: jobs in, results out, until told to stop (None) or the coordinator goes away.

    `by_name`: the coordinator has the plan too, so what it holds travels by name (_by_name).
    `cpus`: the CPU it keeps to (worker_cpus), set before its threads start so that they keep to it too.
    `aside`: CPUs no worker keeps to (aside_cpus), where its helper threads run; its sandboxes keep to `cpus`."""
    _pin(cpus)
    if aside and cpus:
        from grader.sandbox import process
        process.keep_children_to(cpus, starter=aside, preload=True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the coordinator's to handle
    if plan is not None:
        _adopt_plan(setup, plan)
        # Forked: what the coordinator built (the grader's modules, the rubric, the plan and its expected values)
        # lives as long as this worker. Out of the collector's sight, a full collection neither walks it again
        # nor writes to its pages, which the fork shares with the coordinator until something writes to them.
        gc.freeze()
    # A submission's objects (its cells' trees, its frames and results) die by reference counting, having no
    # cycles: the collector's walks of the youngest generation every 700 allocations, and of everything the
    # worker keeps (plan memo, caches) when they add up, freed 3 objects in 40 notebooks for ~1.2 ms of a Taoistic
    # notebook's CPU (gc_time.py); at this threshold they cost ~0.2.
    gc.set_threshold(max(gc.get_threshold()[0], YOUNG_OBJECTS), *gc.get_threshold()[1:])
    # One submission after another: each sandbox starts the next child while its own is graded.
    setup = replace(setup, options=replace(setup.options, prefetch=True))
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG: die with the coordinator
    except (OSError, AttributeError):
        pass
    sys.setswitchinterval(WORKER_SWITCH)
    inbox, outbox = _Inbox(connection, setup, aside if cpus else None), _Outbox(connection, setup, by_name,
                                                                          aside if cpus else None)
    try:
        while not outbox.broken:
            got = inbox.next()
            if got is None:
                return
            job, read, preloaded = got
            try:
                outbox.put(job, grade_result(setup, job, read, preloaded))
            except (BrokenPipeError, OSError):
                return
            except WorkerProblem as problem:
                outbox.put(job, None, str(problem))
            except Exception as error:  # a grader bug on one submission must not stop the others
                outbox.put(job, None, _grader_failed(error))
    finally:
        inbox.close()
        outbox.close()


def _grader_failed(error: Exception) -> str:
    """A Done's failure for a grader bug on one submission (reported, not recorded: the next run tries again)."""
    return f"the grader failed on this submission: {type(error).__name__}: {error}"


class _Outbox:
    """A worker's results, each made the Done the coordinator reads (a dict, lean, expected values by name,
    pickled) and sent, in order, by a thread of the worker's own: the main thread goes on at once to its next
    submission, whose sandbox then loads while this one's result is made and sent (~1.5 ms of a Taoistic
    notebook's). The thread ends only at close(): were it to die, every result after would be lost and the main
    thread would block on the full queue until the coordinator's watchdog stopped the worker and marked a
    student for it."""

    def __init__(self, connection: Connection, setup: Setup, by_name: bool, cpus: set[int] | None = None):
        self.connection, self.setup, self.by_name = connection, setup, by_name
        self.results: queue.Queue[tuple[Job, SubmissionResult | None, str] | None] = queue.Queue(maxsize=2)
        self.broken = False     # the coordinator is gone: the worker stops
        self.thread = threading.Thread(target=self._send, args=(cpus,), name="results", daemon=True)
        self.thread.start()

    def put(self, job: Job, result: SubmissionResult | None, failure: str = "") -> None:
        """A job's result, or why there is none (a failure the grading machine caused: reported, not recorded)."""
        self.results.put((job, result, failure))

    def close(self) -> None:
        """Send what is left, then end the thread."""
        self.results.put(None)
        self.thread.join()

    def _send(self, cpus: set[int] | None = None) -> None:
        from grader.store.results import stored_form
        _pin(cpus)
        while True:
            item = self.results.get()
            if item is None:
                return
            job, result, failure = item
            if self.broken:
                continue
            done = Done(job, None, failure, record=False)
            if result is not None:
                try:
                    # Lean (a case's fields at their default left out, as the writers store it; from_dict reads
                    # either): most cases of a class pass with nothing to say; the pickle both ends pay is 40% less.
                    data = stored_form(result)
                    if self.by_name:
                        data, names = _by_name(data, _PLANS[_plan_key(self.setup)][0])
                        done = Done(job, data, names=names, stored=True)
                    else:
                        done = Done(job, data, stored=True)
                except Exception as error:  # noqa: BLE001 - a grader bug on one submission must not stop the others
                    done = Done(job, None, _grader_failed(error), record=False)
            self._deliver(done)

    def _deliver(self, done: Done, instead: bool = False) -> None:
        """Send a Done; one that fails for another reason than a closed pipe (it does not pickle: a grader bug)
        is replaced by a failure that says so (`instead`: this is that failure)."""
        try:
            self.connection.send(done)
        except (OSError, ValueError):
            self.broken = True
        except Exception as error:  # noqa: BLE001 - this thread must go on (see the class)
            if not instead:
                self._deliver(Done(done.job, None, _grader_failed(error), record=False), instead=True)


YOUNG_OBJECTS = 20_000     # a worker's allocations between two collections of the youngest generation (700)


# Seconds: a worker's switch interval. While its threads read ahead (_Inbox) or send a result (_Outbox), the main
# thread waiting for the GIL (a frame came) gets it within half a millisecond of their Python code, not the
# default 5 ms: a child never waits long for the parent's answer.
WORKER_SWITCH = 0.0005


class _Inbox:
    """A worker's jobs as they come, each read on arrival by a thread of the worker's own, and extracted there if
    small enough (read_ahead, READ_AHEAD_*); where the worker has a CPU to spare (executor.aside_cpus), loaded
    there too (grading.preload).

    The coordinator sends a worker its next job while the current one is graded (LocalPool._hand_out), so the
    next file is read and extracted while the current one's child runs its cases, when the worker has nothing
    else to do; the worker then goes from one submission to the next without waiting for the coordinator or for
    its own extraction. Whatever goes wrong reading ahead (an unreadable file, a notebook the extractor chokes
    on) is left for the grading itself to meet again, on the main thread, as it did before.

    A lone worker on two CPUs also loads the next notebook in its sandbox on the spare CPU (~5 ms of a Taoistic
    notebook's wall time on the worker's, its top-level code and the runtime's snapshot), while the one before it
    runs its cases on the worker's: two loaded sandboxes at once, each in its own groups and limits. The load is
    budgeted as it would have been when its turn came (grading.Preloaded); a load that hangs holds this thread,
    not the worker's current student, and the worker waits for it only when its turn comes."""

    def __init__(self, connection: Connection, setup: Setup, cpus: set[int] | None = None):
        self.jobs: queue.SimpleQueue[tuple[Job, Read | None, Preloaded | None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._receive, args=(connection, setup, cpus), name="read-ahead",
                         daemon=True).start()

    def _receive(self, connection: Connection, setup: Setup, cpus: set[int] | None = None) -> None:
        _pin(cpus)
        while True:
            try:
                job = connection.recv()
            except (EOFError, OSError):
                job = None
            if job is None:
                self.jobs.put(None)
                return
            read = read_ahead(setup, job)
            self.jobs.put((job, read, self._preload(setup, job, read)))

    @staticmethod
    def _preload(setup: Setup, job: Job, read: "Read | None") -> "Preloaded | None":
        """The job's notebook loaded on the worker's spare CPU (grading.preload), or None: the worker has none, the
        notebook was not extracted ahead, or anything went wrong (the grading loads it, as it did before)."""
        from grader.sandbox.process import aside_cpus
        aside = aside_cpus()
        if not aside or read is None or read.notebook is None or read.extracted is None:
            return None
        from grader.judge.grading import preload
        plan, support = _plan(setup)
        try:
            return preload(read, plan, support, replace(setup.options, last=True) if job.last else setup.options,
                           aside)
        except Exception:  # noqa: BLE001 - only a head start: the grading loads it again and meets what failed
            return None

    def next(self) -> tuple[Job, Read | None, Preloaded | None] | None:
        """The next job, its file read ahead (None: read it now) and loaded ahead (None: load it then), or None
        when there are no more."""
        return self.jobs.get()

    def close(self) -> None:
        """The worker stops: a sandbox loaded ahead for a job it will not grade goes."""
        while True:
            try:
                got = self.jobs.get_nowait()
            except queue.Empty:
                return
            if got is not None and got[2] is not None:
                got[2].close()


def _key(job: Job) -> tuple[str, str]:
    return (job.student, job.path)


WATCHDOG_MARGIN = 30.0     # seconds beyond the submission's own budget: start-up, plan, writing the result


def watchdog_for(setup: Setup) -> float:
    """How long a worker may spend on one submission: the rubric's (or the command line's) budget plus a margin.

    The sandbox already stops a submission at its budget, which a busy machine may move by up to SLACK_SHARE of it
    (sandbox/budget.py), and the grader's own reloads after isolated exercises by up to one load's budget
    (Sandbox._reload: a rubric's `load_seconds` may exceed the margin); the watchdog only catches a worker that is
    stuck, 10 % and the margin beyond that.
    """
    from grader.sandbox.cpuclock import SLACK_SHARE
    limit = setup.options.submission_seconds or setup.rubric.limits.submission_seconds
    return limit * (1 + SLACK_SHARE) * 1.1 + setup.rubric.limits.load_seconds + WATCHDOG_MARGIN


@dataclass
class _Slot:
    process: multiprocessing.process.BaseProcess
    connection: Connection
    job: Job | None = None      # the submission it is grading
    ahead: Job | None = None    # the one after it, already in its pipe: it starts it without waiting for us
    started: float = 0.0        # when it started `job` (as far as we know: when we read the one before)
    let_go: bool = False        # told to stop: nothing was left for it, so it exits while the others finish


class LocalPool:
    """One worker process per core (or `jobs`); a dead or stuck worker is replaced and its submission marked."""

    def __init__(self, setup: Setup, jobs: int | None = None, watchdog_seconds: float | None = None,
                 plan: "Plan | None" = None):
        self.setup = setup
        self.size = max(1, jobs or os.cpu_count() or 1)
        self.watchdog = watchdog_seconds if watchdog_seconds is not None else watchdog_for(setup)
        # Given the coordinator's plan, workers are forked: they start with the grader imported and the plan
        # built (a spawned worker imports the grader and builds the plan again, about 0.3 s of CPU each).
        # Only from a single-threaded process: a fork copies locks another thread may hold.
        from grader.sandbox.supervisor import can_fork
        forkable = plan is not None and can_fork()
        self.plan = plan if forkable else None
        if self.plan is not None:   # once, before the fork: every worker shares the grading machinery and what the
            prepare_workers(self.plan, setup.options)   # judge prepares per plan (not each on its first submission)
        if self.plan is not None and self.size > 1:   # forked workers share the reference's isolated answers
            from grader.judge.grading import share_replies
            share_replies(self.plan)
        self.values = plan      # the coordinator's plan: what it holds comes back by name (_by_name)
        self.context = multiprocessing.get_context("fork") if forkable else multiprocessing.get_context("spawn")
        self.replaced = 0
        # Jobs in flight when their worker died with two: which one killed it is unknown, so each is tried again
        # with no other in flight beside it (a death then names its submission, as with one job per worker).
        self.alone: set[tuple[str, str]] = set()
        self.allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

    def _start(self, index: int) -> _Slot:
        """Start worker `index` (a replacement keeps the index, so the CPU, of the one it replaces)."""
        from grader.sandbox import supervisor
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(theirs, self.setup, self.plan, self.values is not None,
                                                             worker_cpus(self.allowed, index),
                                                             aside_cpus(self.allowed, self.size)), daemon=True)
        if self.plan is not None:      # forked: the worker adopts a zygote started ahead, if one is left
            with supervisor.handing_over():
                process.start()
        else:
            process.start()
        theirs.close()
        return _Slot(process, ours)

    @staticmethod
    def _let_go(slot: _Slot) -> None:
        """Tell a worker to stop, without waiting for it."""
        if not slot.let_go:
            try:
                slot.connection.send(None)
            except (OSError, ValueError):
                pass
            slot.let_go = True

    @staticmethod
    def _stop(slot: _Slot) -> None:
        LocalPool._let_go(slot)
        slot.process.join(timeout=2)
        if slot.process.is_alive():
            slot.process.kill()
            slot.process.join(timeout=2)
        slot.connection.close()
        if slot.process.exitcode is not None:
            # Its zygote saw the socket close and killed its sandboxes; what a killed worker could not
            # remove (its temp folder, its pids cgroups) goes now.
            from grader.sandbox.supervisor import clean_leftovers
            clean_leftovers(slot.process.pid)

    def _hand_out(self, slots: list[_Slot], pending: list[Job], ahead: bool = True) -> None:
        """Give every idle worker its next job, and every busy one the job after it while more jobs are left than
        workers: a worker then goes on to its next submission the moment it sends a result, without waiting for
        us to read it (we may be writing the one before). The last jobs go only to a worker that is free, so
        the batch does not end with one worker holding a job another could have taken. An idle worker with
        nothing left to take is let go at once: it exits (its zygote with it) while the others finish, not
        after them."""
        for index, slot in enumerate(slots):
            if slot.job is None and not pending:
                self._let_go(slot)
            elif slot.job is None:
                job = pending.pop()
                if not pending:   # no worker gets another: this one's sandbox starts no child for a next
                    job = replace(job, last=True)
                if slot.let_go:   # a job came back to the queue (sent ahead to a worker that died) after it left
                    self._stop(slot)
                    slot = slots[index] = self._start(index)
                try:
                    slot.connection.send(job)
                except (OSError, ValueError):   # it died while idle: replace it and hand the job over
                    self._stop(slot)
                    slot = slots[index] = self._start(index)
                    self.replaced += 1
                    slot.connection.send(job)
                slot.job, slot.started = job, time.monotonic()
        for slot in slots:
            # Never beside a job that was in flight when a worker died with two (see run): it goes alone.
            if ahead and slot.job is not None and slot.ahead is None and len(pending) > len(slots) \
                    and _key(slot.job) not in self.alone and _key(pending[-1]) not in self.alone:
                job = pending.pop()
                try:
                    slot.connection.send(job)
                except (OSError, ValueError):   # it died grading: `run` sees it; another worker takes this job
                    pending.append(job)
                    continue
                slot.ahead = job

    def run(self, jobs: Sequence[Job]) -> Iterator[Done]:
        pending = list(jobs)[::-1]
        slots: list[_Slot] = []
        if pending:   # the spare zygotes the workers adopt were started off the coordinator's CPU: all CPUs now
            from grader.run.beside import rejoin
            from grader.sandbox.supervisor import spare_pids
            rejoin(spare_pids())
        try:
            for index in range(min(self.size, len(pending))):   # each grades its first job while the next is forked
                slots.append(self._start(index))
                self._hand_out(slots, pending, ahead=False)
            while pending or any(slot.job for slot in slots):
                self._hand_out(slots, pending)
                busy = [slot for slot in slots if slot.job is not None]
                ready = wait([s.connection for s in busy] + [s.process.sentinel for s in busy], timeout=1.0)
                finished: list[Done] = []
                for index, slot in enumerate(slots):
                    if slot.job is None:
                        continue
                    if slot.connection in ready:
                        try:
                            done = slot.connection.recv()
                        except (EOFError, OSError):
                            done = None
                        if done is not None:   # it has started the job sent ahead, if there is one
                            slot.job, slot.ahead, slot.started = slot.ahead, None, time.monotonic()
                            if done.result is not None and self.values is not None:
                                done = replace(done, result=_by_value(done.result, done.names, self.values), names=())
                            finished.append(done)
                            continue
                    stuck = time.monotonic() - slot.started > self.watchdog
                    if slot.process.sentinel in ready or not slot.process.is_alive() or stuck or \
                            slot.connection in ready:
                        job, ahead, slot.job, slot.ahead = slot.job, slot.ahead, None, None
                        self._stop(slot)   # joined first: a worker that had just died had no exit code yet
                        reason = (f"the grading worker took longer than {self.watchdog:g} s (the rubric's "
                                  f"budget and a margin) and was stopped" if stuck else
                                  f"the grading worker died while grading this submission "
                                  f"(exit code {slot.process.exitcode})")
                        slots[index] = self._start(index)
                        self.replaced += 1
                        if ahead is not None:   # back in the queue: never graded, but maybe read (_Inbox)
                            pending.append(ahead)
                            # Not the one it was stuck on (its time had not started); but reading it ahead may be
                            # what killed the worker: each is tried again alone, and one that kills a worker alone
                            # is marked then.
                            if not stuck:
                                self.alone.update((_key(job), _key(ahead)))
                                pending.append(job)
                                continue
                        finished.append(Done(job, None, reason))
                # The workers start their next submissions before the caller writes these results (JSON, the
                # gradebook, the notebook's copy): a worker never waits for the coordinator's disk.
                self._hand_out(slots, pending)
                yield from finished
        finally:
            for slot in slots:   # all told first: they exit together
                self._let_go(slot)
            for slot in slots:
                self._stop(slot)
