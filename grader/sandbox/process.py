"""The parent side of the sandbox: one child process per submission, driven over pipes with hard deadlines.

The parent (trusted) sends the student's statements and case inputs, answers isolated-helper calls with the
reference, and accepts exactly one answer per started case. A case that overruns is killed with its whole
process group; the child is restarted and the remaining cases go on.
"""

from __future__ import annotations

import atexit
import bisect
import mmap
import multiprocessing
import os
import re
import signal
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from grader import codec, incidents
from grader.intake.warning import GraderWarning, Kind
from grader.kept import SizedMemo
from grader.sandbox import cpuclock, frames, precompiled, supervisor, wire
from grader.sandbox.confine import REFUSED, remove_tree
from grader.sandbox.alarm import TimeLimit, bounded
from grader.sandbox.budget import Budget, LoadClock, Mark
from grader.sandbox.prefetch import ARGS_HEAD as _ARGS_HEAD, ARGS_TAIL as _ARGS_TAIL, SETS as prefetch_sets, Prefetch, \
    Walks, can_prefetch
from grader.sandbox.isolation import (PIDS_MAX, CpuGroup, CpuMeter, Isolation, MemoryGroup, PidsGroup,
                                      acquire_cpu_group, acquire_group, acquire_memory_group, cpu_meter, detect,
                                      release_cpu_group, release_group, release_memory_group)
from grader.sandbox.supervisor import Jail, SpawnError

GRACE_SECONDS = 0.5           # after the soft alarm, before the hard kill
RUNTIME_SECONDS = 5.0         # time the runtime itself may need between cases (fork, encode, send)
MAX_RESTARTS = 4
ORACLE_CALLS = 10_000         # isolated-helper round trips one case may make (rubric: limits.oracle_calls)
# What those calls' frames may hold in all, per case, counted before each is parsed: what the parent parses and decodes
# for a case's calls. The most an honest case sent, over the bundled submissions: 861 kB (eight-puzzle's A*, 5,780
# calls); at eight-puzzle's 60,000-call limit its calls would be 9 MB. At 64 MB, frames of arguments the codec reads
# (190k empty lists each) cost the parent 31 s of CPU for one sliding-3x3 notebook.
ORACLE_BYTES = 16 << 20
OUTPUT_SLACK = 200            # the cut marker the child appends to an output it truncated
_STRENGTH = {"namespaces": 2, "namespaces-partial": 1, "rlimits": 0}
# What the zygote may preload (zygote.PRELOAD, which it checks again): asked for only where the course's code names
# it (preloads), since its mappings make every fork and exit of the chain dearer.
PRELOADABLE = ("numpy", "heapq")
# What a case killed for its files (Jail.over: where the zygote found them over) is told, beside the limit.
_OVER_WHERE = {"shared": ", counting what it left in /tmp, /var/tmp and /dev/shm",
               "unlinked": ", counting files it deleted but kept open"}
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class ProcessLimits:
    memory_mb: int = 1024
    cpu_seconds: int = 600
    file_mb: int = 64
    open_files: int = 256
    load_seconds: float = 10.0
    disk_mb: int = 64             # the scratch tmpfs (it counts toward memory_mb)
    files: int = 1000             # inodes in the scratch
    processes: int = PIDS_MAX


@dataclass(frozen=True)
class CaseRequest:
    id: str
    code: str                                   # expression over the submission's names and placeholders
    values: Mapping[str, Any] = field(default_factory=dict)      # placeholder -> wire
    set: Mapping[str, Any] = field(default_factory=dict)         # module global -> wire
    probes: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 1.0
    reduce: str | None = None                   # expression over `result`, applied before encoding
    oracle_calls: int = ORACLE_CALLS            # at most this many isolated-helper round trips, then the case ends
    oracle_bytes: int = ORACLE_BYTES            # and at most this many bytes of them (each parsed and decoded)
    # The parent's own: a hidden case, whose input must never reach a child that will run a public case after
    # it (Sandbox.run_exercise). Never sent, like `right`.
    hidden: bool = field(default=False, compare=False)
    # The parent's own: the body of the `result` frame a right answer makes, as the runtime writes it, and the
    # message it is (right_answer). A frame of exactly these bytes is that answer, taken without parsing (most
    # answers of a class are right). Never sent: the child is sent the fields _exercise_message names.
    right: tuple[bytes, frames.Result] | None = field(default=None, compare=False, repr=False)
    # The parent's own: the most a result frame may weigh (frames.weighed: its bytes less its texts) and still hold
    # an answer the case can compare; a heavier frame is refused unread, the case's answer too large
    # (Outcome.unread). None: no bound (a check function judges the answer, whatever its size). Never sent.
    answer_bytes: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What the child answered for one case: a value (wire), an error, or why there is no answer."""

    case: str
    status: str                   # ok | error | timeout | crash | skipped
    value: Any = None
    probes: Mapping[str, Any] = field(default_factory=dict)
    error: Mapping[str, str] = field(default_factory=dict)   # type, message, where, traceback
    output: str = ""
    seconds: float = 0.0          # wall time measured by the parent, from the case's start to its answer
    cpu_seconds: float | None = None   # CPU time the kernel charged the case (None where it cannot be read)
    unread: int = 0               # an answer refused unread (frames.Result.unread): what its frame weighed


# _answered sets an outcome's fields without __init__: a check the dataclass might gain would be skipped.
assert not hasattr(Outcome, "__post_init__"), "_answered must then call it"


def _answered(case: str, status: str, value: Any, probes: dict[str, Any], error: dict[str, str], output: str,
              seconds: float, cpu_seconds: float | None, unread: int = 0) -> Outcome:
    """Outcome(...) of a case the child answered, without the frozen dataclass's __init__, which sets each field
    through object.__setattr__ (~2 us, for every case of every notebook: a tenth of the per-case loop's Python)."""
    outcome = object.__new__(Outcome)
    outcome.__dict__.update(case=case, status=status, value=value, probes=probes, error=error, output=output,
                            seconds=seconds, cpu_seconds=cpu_seconds, unread=unread)
    return outcome


@dataclass(frozen=True)
class LoadReport:
    warnings: tuple[GraderWarning, ...]
    output: str
    seconds: float
    names: tuple[str, ...]
    environment: tuple[GraderWarning, ...] = ()    # what the grading machine lacks (modules given inert stand-ins)


def _placed(statement: Mapping[str, Any] | None, kind: Kind, subject: str, text: str) -> GraderWarning:
    """A load warning at its statement's cell and line (the statement as the parent sent it)."""
    if statement is None:
        return GraderWarning(kind, text, subject)
    cell = statement.get("cell")
    return GraderWarning(kind, text, subject, cell=cell if type(cell) is int else None,
                         label=str(statement["filename"]), line=int(statement["line"]))


Oracle = Callable[[str, list, dict], Any]


# The first bytes of an isolated-helper call's frame as the runtime writes it (Child.ask): its name and seq are read
# from them, and the rest of the frame (the arguments and keywords) is the call's key, without parsing.
_CALL_HEAD = re.compile(rb'\{"op":"oracle","name":"([A-Za-z_][A-Za-z0-9_.]{0,199})","seq":(0|[1-9][0-9]{0,17}),')


class Heard(NamedTuple):
    """An isolated-helper call's frame as the runtime writes it, split without parsing: the name and seq its
    first bytes give, and the rest of its bytes. (A named tuple, not a dataclass: one is made for every frame of
    an A* search, and a frozen dataclass costs a microsecond more to make.)

    Why the rest is the call's key: the frame's JSON makes the same arguments and keywords of the same rest,
    whatever the head before it (later members override earlier ones, and the head holds neither). A rest could
    override a member of the head too (`"seq":7` again): such a call is never kept (`keeps`), so a kept rest
    completes any head into the very call the head names."""

    name: str
    seq: int
    rest: bytes

    def key(self, answered_by: str = "") -> tuple[str, str, bytes]:
        """Its key among kept replies, with what answers the helper (PureOracle.answered_by)."""
        return (self.name, answered_by, self.rest)

    def keeps(self, call: frames.OracleCall) -> bool:
        """Whether the reply to this parsed call may be kept under this key: the rest names no member of the head
        (not even inside a string, which only errs on the side of not keeping) and the call is the head's."""
        rest = self.rest
        return (call.name == self.name and call.seq == self.seq
                and b'"op"' not in rest and b'"name"' not in rest and b'"seq"' not in rest)


def heard(body: bytes, longest: int) -> Heard | None:
    """The call a frame's body holds, split (Heard), if it starts as the runtime writes it and is at most
    `longest` bytes long (a longer one is not kept, and hashing it would cost the parent for nothing)."""
    if len(body) > longest:
        return None
    head = _CALL_HEAD.match(body)
    return Heard(head[1].decode("ascii"), int(head[2]), body[head.end():]) if head is not None else None


class KnownCall(NamedTuple):
    """An isolated-helper call whose reply is kept, recognised from the bytes of its frame (Replies.recall)."""

    name: str
    seq: int
    rest: bytes                           # the frame after the seq: the call's key, with its name (Heard)
    tail: bytes                           # the kept reply (see _reply_frame)


class SharedReplies:
    """Kept replies that the workers a coordinator forks for one batch share: what one worker's reference
    answered, the others answer without decoding, calling the reference or encoding (the first wrong notebook
    of each worker otherwise computes the same thousands of A* answers again).

    An append-only log in anonymous shared memory, made before the workers are forked (a sandbox child is an
    exec'd interpreter and never maps it). Written and read only by the grader's workers, under a lock that is
    never waited for long: a worker that finds it held too long (its holder died mid-write) stops sharing and
    keeps its own replies, so a dying worker costs the others speed, never correctness. A reply is a function
    of its key (the reference's helpers are pure, and their answers are encoded canonically), so a reply read
    here is the very bytes this worker would have computed. Each worker indexes what it read apart from its own
    kept replies (Replies.entries), so another worker's calls never evict those; the log's size and count bound
    the index."""

    _END = struct.Struct("<QQ")         # the committed end of the log (records before it are never written again)
                                        # and how many records it holds
    _RECORD = struct.Struct("<IIII")    # the lengths of a key's name, answered_by and rest, and of the reply
    WAIT = 0.005                        # seconds a worker waits for the lock before it gives sharing up
    RECORDS = 40_000                    # at most (each worker keeps an index of them all: a dict this size)

    def __init__(self, size: int = 12 << 20):
        self.memory = mmap.mmap(-1, size)           # MAP_SHARED | MAP_ANONYMOUS: shared with forked workers
        self.lock = multiprocessing.get_context("fork").Lock()
        self.size = size
        self.read = self._END.size                  # how far this process has read (each worker its own copy)
        self.known: dict[tuple[str, str, bytes], bytes] = {}   # the log as this process has read it, by key
        self.waited = 0                             # lock waits in a row that ran out
        self.broken = False

    def _end(self) -> tuple[int, int]:
        end, count = self._END.unpack_from(self.memory, 0)
        return end or self._END.size, count

    def _locked(self) -> bool:
        """Take the lock, or give up after WAIT; three give-ups in a row end sharing in this process."""
        if self.broken:
            return False
        if self.lock.acquire(timeout=self.WAIT):
            self.waited = 0
            return True
        self.waited += 1
        self.broken = self.waited >= 3
        return False

    def get(self, key: tuple[str, str, bytes]) -> bytes | None:
        """The reply kept under `key` by any worker of the batch, if it is in the log (read up to its end)."""
        tail = self.known.get(key)
        if tail is None:
            self._pull()
            tail = self.known.get(key)
        return tail

    def _pull(self) -> None:
        """Read what the other workers added since this process last looked."""
        if not self._locked():
            return
        try:
            end, _ = self._end()
        finally:
            self.lock.release()
        if end <= self.read:
            return
        data, position = self.memory[self.read:end], 0
        while position < len(data):
            name, answered_by, rest, tail = self._RECORD.unpack_from(data, position)
            position += self._RECORD.size
            key = (data[position:position + name].decode("ascii"),
                   data[position + name:position + name + answered_by].decode("utf-8", "surrogatepass"),
                   data[position + name + answered_by:position + name + answered_by + rest])
            position += name + answered_by + rest
            self.known[key] = data[position:position + tail]
            position += tail
        self.read = end

    def push(self, key: tuple[str, str, bytes], tail: bytes) -> None:
        """Add a reply this worker computed (nothing when it is there already, the log is full or the lock cannot
        be had)."""
        if key in self.known:
            return
        name, answered_by = key[0].encode("ascii"), key[1].encode("utf-8", "surrogatepass")
        record = self._RECORD.pack(len(name), len(answered_by), len(key[2]), len(tail)) + name + answered_by \
            + key[2] + tail
        if not self._locked():
            return
        try:
            end, count = self._end()
            if end + len(record) > self.size or count >= self.RECORDS:
                return
            self.memory[end:end + len(record)] = record
            self._END.pack_into(self.memory, 0, end + len(record), count + 1)
            self.known[key] = tail
            if self.read == end:      # nothing of the others' in between: this worker's own need not be read back
                self.read = end + len(record)
        finally:
            self.lock.release()


@dataclass
class Replies:
    """The reference's answers to isolated-helper calls, kept by the helper's name, what answers it (an isolated
    method's call, which two exercises may write differently for the same name) and the call's bytes (Heard.key),
    and shared by whoever may share answers (one plan's runs, so every submission of a batch): a call seen before
    is answered from its frame's bytes, before they are parsed, with the same rules as a parsed call.

    Why a budget in characters: the child chooses every argument, so a kept key can be as large as a frame
    (tens of MB) and a reply as large as the reference makes it; counted in calls alone, a few hundred calls
    with huge arguments held gigabytes in the parent for the rest of the batch. A call whose key is over
    `max_key_chars` is answered but not kept; when keeping one would pass `max_chars` (keys and replies) or
    `limit` calls, everything kept is dropped and counting starts again."""

    max_chars: int = 16_000_000
    max_key_chars: int = 16_384
    limit: int = 20_000
    entries: dict[tuple[str, str, bytes], bytes] = field(default_factory=dict)   # call -> its reply's tail
    chars: int = 0
    shared: SharedReplies | None = None    # the batch's other workers' replies, where they are shared
    walks: Walks = field(default_factory=Walks)   # answers sent ahead with a reply, made of these (prefetch.Walk)

    def hear(self, body: bytes) -> Heard | None:
        """The call a frame holds, split, when it could be kept (see heard)."""
        return heard(body, self.max_key_chars + _CALL_HEAD_BYTES)

    def recall(self, call: Heard, answered_by: str = "") -> KnownCall | None:
        """The call with its kept reply, if it is kept (here, or by another worker of the batch)."""
        tail = self.kept(call.key(answered_by))
        return KnownCall(call.name, call.seq, call.rest, tail) if tail is not None else None

    def kept(self, key: tuple[str, str, bytes]) -> bytes | None:
        """The reply kept for a call's key (Heard.key), here or by another worker of the batch, or None."""
        tail = self.entries.get(key)
        if tail is None and self.shared is not None:   # the log's replies stay there: they never evict these
            tail = self.shared.get(key)
        return tail

    def keep(self, key: tuple[str, str, bytes], tail: bytes) -> None:
        """Keep a reply, encoded as the tail of its frame (see _reply_frame), and share it with the batch's
        other workers."""
        size = sum(map(len, key)) + len(tail)
        if len(key[0]) + len(key[-1]) > self.max_key_chars or size > self.max_key_chars * 4:
            return   # a huge question, or a huge answer to a small one: answered again when asked again
        if self.chars + size > self.max_chars or len(self.entries) >= self.limit:
            self.entries.clear()
            self.chars = 0
        if key not in self.entries:
            self.entries[key] = tail
            self.chars += size
            if self.shared is not None:
                self.shared.push(key, tail)


_CALL_HEAD_BYTES = 300    # more than the longest head _CALL_HEAD matches
_NO_KEYWORDS: dict[str, list[Any]] = {"dict": []}   # the wire of a call's keywords when there are none (most calls)


@dataclass(frozen=True)
class PureOracle:
    """An oracle whose answers depend only on the call (the reference's helpers are functions of their
    arguments): its replies are kept (see Replies), so a call seen before (the same states come up in every
    search of a class) is answered without decoding, calling the reference or encoding."""

    answer: Oracle
    replies: Replies = field(default_factory=Replies)
    # helper name -> what answers it, where the name alone does not say (an isolated method: the rubric's call)
    answered_by: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, function: str, args: list, kwargs: dict) -> Any:
        return self.answer(function, args, kwargs)


_Pending = tuple[bytes, "Heard | None", "KnownCall | None"]   # a frame read ahead: its body, heard, looked up


class SandboxError(RuntimeError):
    """The child could not be started or loaded at all."""


class MachineBusy(SandboxError):
    """The load ran past the submission's deadline because the machine kept it waiting for a CPU longer than the
    deadline may move (budget.py): the machine's fault, not the notebook's; its cases are graded again."""


def preloads(texts: Iterable[str]) -> tuple[str, ...]:
    """The modules of PRELOADABLE whose name appears in `texts`: the course's code (its support modules, its
    template), never a submission's. The zygote keeps what it was asked for, for every later child: were a
    student's mention to ask, the next student of the worker could tell from sys.modules that someone did. A
    mention is enough (a comment preloads for nothing, which is harmless); a student who imports a module the
    course does not name imports it in the child, as every notebook did before preloading."""
    texts = list(texts)
    return tuple(name for name in PRELOADABLE if any(name in text for text in texts))


def scratch_base() -> Path:
    """This grader process's one temp folder (rlimits-mode scratch dirs live there; hidden from children)."""
    return supervisor.temp_root()


def _kill_group(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Sandbox:
    """One student's child process, restartable; use as a context manager so nothing outlives it."""

    def __init__(self, statements: Sequence[Mapping[str, Any]], support: Mapping[str, str],
                 limits: ProcessLimits, output_bytes: int = 65536, hide_paths: Sequence[str] = (),
                 isolation: Isolation | None = None, allow_root: bool = False, prefetch: bool = False,
                 preload: Sequence[str] | None = None, spare_next: bool = True, slack: float = 0.0,
                 data: Mapping[str, bytes] | None = None, since: Mark | None = None):
        self.isolation = isolation if isolation is not None else detect()
        self.level: str | None = None            # what the children report they achieved (the weakest)
        self.facts: dict[str, Any] = {}          # what held for the weakest child: namespaces, uid, filesystem
        self.allow_root = allow_root             # run student code as root where no unused uid can be had
        # A worker grading one submission after another starts the next child (a spare) while this one is used,
        # so its start costs no wall time; elsewhere (tests, one-off checks) a spare would only be thrown away.
        self.prefetch = prefetch
        self.spare_next = spare_next             # with prefetch: False where no submission follows (a spare
                                                 # started for one would be killed unused: ~30-50 ms of CPU)
        self.pids: PidsGroup | None = None
        self.memory: MemoryGroup | None = None   # the whole sandbox's memory, where cgroups allow
        self.cpu: CpuGroup | None = None         # counts the whole sandbox's CPU time, where cgroups allow
        self.meter: CpuMeter | None = None       # reads it (the cpu group's, or the memory group's in v2)
        self.made = 0.0                          # when the current child's groups were made (_Child.made)
        self.started_waiting = 0.0               # what the zygote waited to start it (_Child.waited)
        # The meter's reading at the load's end or the last answer: the next exercise's first case is charged from
        # it (None: from its fork). Between exercises the sandbox works (the pristine check, the scratch, a fork),
        # and student code it calls there (a library function the notebook replaced) ran outside every clock.
        self.carried: float | None = None
        self.statements = list(statements)
        self.compiling = precompiled.Allowance()   # what compiling them may still cost this process (every load)
        self.support = dict(support)
        # The course's data files (path in the support folder -> bytes): the runtime writes them into the scratch
        # at the load and before every case (runtime.Child.restore_data), as Jupyter has them beside the notebook.
        self.data = dict(data or {})
        # What the zygote should have imported (the course's choice: see preloads); by default what the support
        # modules name.
        self.preload = tuple(preload) if preload is not None else preloads(self.support.values())
        self.limits = limits
        self.output_bytes = output_bytes
        self.hide_paths = list(hide_paths)
        self.process: Jail | None = None
        self.fork_pid: int | None = None
        self.reader: wire.FrameReader | None = None
        self.request_fd: int | None = None
        self.scratch: str | None = None          # a host folder in rlimits mode only
        self.outbox: wire.Outbox | None = None       # requests to the child, written without ever blocking
        self._outbox_reader: wire.FrameReader | None = None
        self.bounds = frames.Bounds(output=output_bytes + OUTPUT_SLACK)
        self.restarts = 0
        self.retired = False     # the child was ended on purpose (_retire_for): the next start is not a restart
        self.answered: frozenset[tuple[str, str]] = frozenset()   # helpers the reference answered this child
        self.heard_hidden = False   # a hidden case's input was sent to this child (see run_exercise)
        self.reloaded = 0.0      # seconds of the grader's own reloads given back to the deadline (_reload)
        self.load_report: LoadReport | None = None
        self.skipped_statements: set[int] = set()
        self.overfull: dict[int, str] = {}     # of those, the ones whose files went over the scratch's limit: where
        # The texts of states the reference's answers sent this submission's child, and of states it sent back,
        # with their values: a call made of them is not parsed and decoded again (known_args).
        self.known_texts: dict[str, Any] = {}
        # The caller's deadline moves by what a busy machine took from the grading, at most `slack` s (budget.py),
        # counted from the submission's start (`since`: its deadline's; else from now).
        self.budget = Budget.start(slack, since if since is not None else Mark.now())
        # What the grader's side saw student code try that no honest code does (grader.incidents): grading places
        # them. `near`: a case of the request being served, "" during a load (the notebook's top-level code), where
        # the pids group's refused forks go; `refused_forks`: that count of the current child's group as last read.
        self.seen: list[incidents.Seen] = []
        self.near = ""
        self.refused_forks = 0

    # -- lifecycle ------------------------------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.prefetch and self.isolation.namespaces and self.process is not None and self.reader is not None \
                and self.request_fd is not None:
            # A worker's next submission need not wait for this one's teardown (the kill, the kernel ending
            # the namespaces, the cgroups' removal): the spare starter does it, between spares. Only with
            # namespaces, where the kill goes through the pidfd; a bare pid could be another process by then.
            if self.budget.slack > 0:   # what it waited and computed is kept (_stop does it for the others)
                self.budget.child_stopping(self.process.pid, self._computed())
            self._count_refusals()
            child = _Child(self.process, self.request_fd, self.reader, self.pids, self.scratch, "", {}, self.memory,
                           self.cpu)
            self.process, self.request_fd, self.reader, self.pids, self.scratch, self.memory, self.cpu = \
                None, None, None, None, None, None, None
            self.fork_pid = None
            _later(_discard, child)
        self._stop()

    def _retire_for(self, isolate: Sequence[str], methods: Mapping[str, Any] | None, public: bool = True) -> None:
        """Before an exercise: the child goes if the reference answered it helpers this exercise does not
        isolate (the next one is loaded fresh), for what the reference answered must not outlive the exercise
        that asked it, and ending its fork is not enough. The answers went out through whatever the notebook made
        at load for every fork to share: a MAP_SHARED page, a pipe or socket the runtime holds, SysV or POSIX IPC
        objects of the sandbox's namespace, the runtime's own memory (made ptrace-able by the notebook's load),
        a thread of its own left in the runtime; the next exercise's fork read them back (redteam's probes). All
        of those die with the child's namespaces. An exercise that isolates them all may keep the child: the
        reference answers it any call of theirs anyway. Not a death: it does not count against the restarts.
        Likewise before `public` cases in a child that heard a hidden case's input: the student sees what a
        public case prints, answers and raises, and the same channels would carry that input into it."""
        if self.process is not None and (public and self.heard_hidden or
                                         self.answered and not self.answered <= _answering(isolate, methods)):
            self.close()
            self.retired = True

    def _reload(self, deadline: float, reuse: bool = True) -> float:
        """Load the notebook again in a fresh child after _retire_for, and return the seconds given back to the
        submission's `deadline`: the reload is the grader's choice, so its time (a slow top-level statement is
        run again) must not come out of the student's budget. At most one load's budget in all, which the
        watchdog allows for (executor.watchdog_for). `reuse` False: for an exercise that isolates helpers, whose
        fork ends with it anyway (see load)."""
        allowance = max(0.0, self.limits.load_seconds - self.reloaded)
        started = time.monotonic()
        self.load(deadline + allowance, reuse=reuse)
        given = min(allowance, time.monotonic() - started)
        self.reloaded += given
        return given

    def saw(self, kind: str, case: str = "", near: str | None = None) -> None:
        """Student code did what only hostile code does, as the parent saw it (a frame the runtime never writes)."""
        self.seen.append(incidents.Seen(kind, incidents.PARENT, case, self.near if near is None else near))

    def _count_refusals(self) -> None:
        """What the kernel refused since the last look, as seen during what is running now (`near`): forks and
        threads at the sandbox's process cap (a fork bomb's, which honest code never reaches: PIDS_MAX), and the
        calls its seccomp filter refused, each reported by the zygote (confine.REFUSED)."""
        if self.pids is not None:
            count = self.pids.refused()
            if count > self.refused_forks:
                self.seen.append(incidents.Seen(incidents.PROCESS_CAP, incidents.PIDS_CGROUP, "", self.near,
                                                count - self.refused_forks))
                self.refused_forks = count
        reported = self.process.refusals() if self.process is not None else b""
        for index in sorted(set(reported)):
            self.seen.append(incidents.Seen(
                f"{incidents.REFUSED_CALL}: {REFUSED[index] if index < len(REFUSED) else 'unknown'}",
                incidents.SECCOMP, "", self.near, reported.count(index)))

    def _stop(self) -> None:
        self._count_refusals()
        if self.process is not None and self.budget.slack > 0:
            self.budget.child_stopping(self.process.pid, self._computed())
        if self.meter is not None:
            self.meter.close()
            self.meter = None
        if not self.isolation.namespaces:
            _kill_group(self.fork_pid)   # inside a pid namespace this number means another process here
        self.fork_pid = None
        if self.process is not None:
            if not self.isolation.namespaces and self.process.poll() is None:
                _kill_group(self.process.pid)   # its session's group, while the number is surely still its own
            self.process.kill()   # with namespaces: its PID 1 dies, and the namespace with it
            self.process.wait(timeout=5)
            self.process.close()
            self.process = None
        for fd in (self.request_fd, self.reader.fd if self.reader else None):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.request_fd, self.reader = None, None
        _release(self.pids, self.memory, self.cpu, self.scratch)
        self.pids, self.memory, self.cpu, self.scratch = None, None, None, None

    def _start(self, aside: Sequence[int] = ()) -> None:
        """A child for the next load: the spare if one is ready, else a new one; kept to `aside` (a load ahead,
        see load) or else to the worker's CPUs."""
        key = (self.isolation, self.limits, tuple(self.hide_paths))
        child = _take_spare(key, self.preload, aside) if self.prefetch and self.restarts == 0 else None
        if child is None:
            child = _spawn(self.isolation, self.limits, self.hide_paths, self.preload, aside, stay=bool(aside))
        if self.prefetch and self.spare_next:   # the next submission is taken to be like this one (one course)
            _order_spare(key, self.isolation, self.limits, self.hide_paths, self.preload)
        self.process, self.request_fd, self.reader, self.pids, self.scratch, self.memory, self.cpu = \
            child.process, child.request_fd, child.reader, child.pids, child.scratch, child.memory, child.cpu
        self.meter = cpu_meter(self.cpu, self.memory)
        self.made, self.started_waiting = child.made, child.waited
        self.refused_forks = self.pids.refused() if self.pids is not None else 0   # a spare's start is not ours
        self.carried = None
        self.answered = frozenset()
        self.heard_hidden = False
        # Set here, never taken from the child: what counts a case's CPU time (see _CaseClock).
        child.facts["cpu_clock"] = "cgroup" if self.meter is not None else \
            "proc" if os.path.exists("/proc/self/stat") else "wall"
        if self.level is None or _STRENGTH.get(child.level, -1) < _STRENGTH.get(self.level, -1):
            self.level = child.level   # a result reports the weakest containment any of its children had
            self.facts = child.facts
        if child.facts.get("host_uid") == 0 and not self.allow_root:
            self._stop()
            why = child.facts.get("root_because") or "no unused uid could be had"
            raise SandboxError(f"refusing to run student code as root without namespaces: {why} "
                               "(give --allow-root-sandbox to run it anyway)")

    def _send(self, message: dict | bytes) -> None:
        """Queue a request for the child: it is written while the parent waits for frames, never blocking."""
        assert self.request_fd is not None and self.reader is not None
        if self.outbox is None or self._outbox_reader is not self.reader:   # a new child: a new queue
            self.outbox = wire.Outbox(self.request_fd)
            self._outbox_reader = self.reader
        self.outbox.put(message)

    def _receive(self, deadline: float) -> frames.Message:
        """The child's next frame, validated against the schema (frames.Invalid when it does not fit)."""
        return frames.parse(wire.parse_body(self._receive_body(deadline)), self.bounds)

    def _receive_body(self, deadline: float) -> bytes:
        """The body of the child's next frame, not yet parsed."""
        assert self.reader is not None
        outbox = self.outbox if self._outbox_reader is self.reader else None
        return self.reader.read_body(deadline, outbox)

    def load(self, deadline: float | None = None, reuse: bool = True, aside: Sequence[int] = ()) -> LoadReport:
        """Start (or restart) the child and run the kept statements; a statement that hangs is left out.
        `aside`: the CPUs the child loads on, not the worker's (a worker loading its next submission while the one
        before it is graded: aside_cpus); the caller moves it to the worker's before its cases (to_worker).
        `reuse` False: the runtime takes no snapshot of the loaded module (pristine.py), so no exercise's fork
        goes on to serve the next: each gets a fresh fork, as where the snapshot cannot be read. A reload for
        an exercise that isolates helpers asks so: such a fork ends with its exercise anyway (runtime.Child
        .exercises), and after the own runs grading sends only those, so the snapshot (~1.7 ms of the child's
        CPU for a Taoistic notebook) and each fork's reading of its process state would be spent for nothing.

        Each attempt has one budget, limits.load_seconds from when it starts, moved only by what the kernel says
        the machine kept it waiting (budget.LoadClock), and never past the submission's `deadline`. The child's
        progress frames only say which statement was running when the budget ran out (that one is left out of the
        next attempt); nothing the child says makes the parent wait longer.
        """
        started = time.monotonic()
        while True:
            self._stop()
            self.near = ""   # what happens now is the notebook's top-level code's
            self._start(aside)
            if self.process is not None:
                self.budget.child_started(self.process.pid, self.meter.stalled if self.meter is not None else None,
                                          self.made, self.started_waiting)
            indices = [i for i in range(len(self.statements)) if i not in self.skipped_statements]
            skipped_before = sorted(self.skipped_statements)
            clock = LoadClock(self.limits.load_seconds, time.monotonic(), self._waiting(), self._all_computed())
            own_limit = clock.started + self.limits.load_seconds + GRACE_SECONDS
            until = self._until(deadline) if deadline is not None else None
            limit = min(own_limit, until) if until is not None else own_limit
            running: int | None = None
            left_out: tuple[int, ...] = ()
            try:
                sent = _with_code([self.statements[i] for i in indices], self.compiling)
                # The statements the runtime announces (a quiet one is not: it calls nothing, see precompiled.py)
                announced = [position for position, statement in enumerate(sent) if not statement.get("quiet")]
                self._send(wire.marshal_frame({
                    "op": "load", "statements": sent,
                    "magic": precompiled.MAGIC, "support": dict(self.support), "output_bytes": self.output_bytes,
                    "statement_seconds": self.limits.load_seconds, "waiting_seconds": clock.most,
                    "reuse": reuse, **({"data": self.data} if self.data else {})}))
                while True:
                    try:
                        message = self._receive(limit)
                    except wire.Timeout:
                        # A busy machine moves both limits: the load's own by what it kept the sandbox waiting
                        # (budget.LoadClock), and the submission's deadline once it has passed (budget.py), as for
                        # cases. A load that slept or blocked moves neither.
                        own_limit = max(own_limit, GRACE_SECONDS + clock.limit(
                            time.monotonic(), self._waiting(), self._all_computed()))
                        if deadline is not None and until is not None:
                            until = self._until(deadline)
                        moved = min(own_limit, until) if until is not None else own_limit
                        if moved <= limit + 0.001:
                            raise
                        limit = moved
                        continue
                    if isinstance(message, frames.Loaded):
                        break
                    # The runtime announces statements in order, each once, and says nothing else until
                    # `loaded`: any other frame is student code's, the running statement's (student code runs
                    # only once its statement is announced), which is left out as if it hung. Ignored, such
                    # frames were read and parsed until the load's budget ran out (10 s of the grader's CPU per
                    # attempt, for next to none of the child's), once for each statement that wrote them.
                    if not isinstance(message, frames.Progress) \
                            or message.index != _announced_after(announced, running):
                        raise frames.Invalid("a frame the runtime does not send while it loads")
                    running, left_out = message.index, message.left_out
            except (wire.Timeout, wire.Closed, wire.FrameError, frames.Invalid) as error:
                if isinstance(error, (wire.FrameError, frames.Invalid)):
                    self.saw(incidents.FORGED_FRAME)
                self._leave_out(left_out, indices)
                out_of_time = until is not None and time.monotonic() >= until
                if (running is not None and running < len(indices) and self.restarts < len(self.statements)
                        and not out_of_time):
                    self.skipped_statements.add(indices[running])
                    over = self._overfull(isinstance(error, wire.Closed))
                    if over is not None:
                        self.overfull[indices[running]] = over
                    self.restarts += 1
                    continue
                self._stop()
                if out_of_time and deadline is not None:
                    self._until(deadline)      # the credit as it stands now: the last reading may be older
                if out_of_time and deadline is not None and self.budget.load_starved(deadline, time.monotonic()):
                    raise MachineBusy(
                        f"the notebook's code could not be loaded: the machine was too busy (it kept the grading "
                        f"waiting {self.budget.granted:.0f} s for a CPU, and the submission's time may move by "
                        f"{self.budget.slack:g} s)") from None
                why = "the submission's time budget ran out" if out_of_time else type(error).__name__
                raise SandboxError(f"the notebook's code could not be loaded: {why}") from None
            # The child says what went wrong in which statement it was sent; where that statement is in the
            # notebook is the parent's own fact (a statement number out of range gets no place).
            warnings = [_placed(self.statements[indices[w.statement]] if w.statement < len(indices) else None,
                                w.kind, w.subject, w.text) for w in message.warnings]
            for index in skipped_before:
                statement = self.statements[index]
                names = ", ".join(str(name) for name in statement.get("names", ()))
                warnings.append(_placed(statement, Kind.LOAD_TIMEOUT, names,
                                        (f"its files went over the sandbox's limit "
                                         f"({self._scratch_limit(self.overfull[index])}); left out"
                                         if index in self.overfull else
                                         f"did not finish within {self.limits.load_seconds:g} s; left out")
                                        + (f"; {names} unavailable" if names else "")))
            self._leave_out(message.left_out, indices)   # not run again when the child is restarted
            self._count_refusals()
            self.carried = self.meter.seconds() if self.meter is not None else None   # the runtime's snapshot next
            # A module this machine lacks is the environment's business (for the TA), not the student's.
            self.load_report = LoadReport(
                tuple(w for w in warnings if w.kind != Kind.MISSING_MODULE), message.output,
                time.monotonic() - started, message.names,
                tuple(w for w in warnings if w.kind == Kind.MISSING_MODULE))
            return self.load_report

    def to_worker(self) -> bool:
        """Move a child loaded `aside` (load) to the worker's CPUs, where its cases and forks run: False if it
        cannot be, and then it is not to be used (the caller loads the notebook again, on the worker's CPUs).

        Every process of its sandbox is moved (isolation.Cgroup.keep_all_to): the runtime, the exercise's fork it
        made ahead, and any process the notebook's load left running, which would otherwise stay on the CPU where
        the worker loads the next student. Refused where one of them runs more than one thread (affinity is a
        thread's; the student's threads cannot move themselves: confine.keep_scheduling), or more processes than
        are moved at once. Where this process may not move them (not root), nothing is loaded ahead again. A
        process made by a signal handler of the notebook's (its only code that runs in a loaded sandbox unasked)
        while the group is moved could still start where it was: it stays in the sandbox's groups and limits,
        and goes with them."""
        global _SPARES_STAY
        group = self.pids or self.cpu or self.memory
        if self.process is None or group is None or not _CHILD_CPUS:
            return False
        try:
            return group.keep_all_to(set(_CHILD_CPUS), expected=FORKED_AHEAD, wait=SETTLE_SECONDS)
        except PermissionError:
            _SPARES_STAY = False
            return False

    def _leave_out(self, positions: Sequence[int], indices: Sequence[int]) -> None:
        """Statements the child says it stopped on time: leaving them out costs only the student."""
        self.skipped_statements.update(indices[p] for p in positions if p < len(indices))

    # -- the submission's deadline on a busy machine (budget.py) ---------------------------------------------
    def _until(self, deadline: float) -> float:
        """The caller's `deadline` as it stands now: moved by what the machine took from the grading, at most the
        slack. The kernel is read only once the deadline itself has passed: before it, nothing can be late."""
        now = time.monotonic()
        if now < deadline or self.budget.slack <= 0:
            return deadline
        return self.budget.until(deadline, now, self.process.pid if self.process is not None else None,
                                 self._computed())

    def _starved(self, deadline: float) -> bool:
        return self.budget.slack > 0 and self.budget.starved(deadline, time.monotonic())

    def _spent(self, deadline: float, now: float) -> dict[str, str]:
        """Why a case was not run when the submission's time ran out: its own time (its budget, the student's), or
        the machine's (it kept the grading waiting for a CPU longer than the deadline may move: a grader problem)."""
        if self.budget.slack > 0 and self.budget.starved(deadline, now):
            return {"reason": "starved", "message": (
                f"not run: the machine was too busy (it kept the grading waiting {self.budget.granted:.0f} s for a "
                f"CPU, and the submission's time may move by {self.budget.slack:g} s)")}
        return {"message": "the submission's time budget is spent", "reason": "budget"}

    def _computed(self) -> float | None:
        """The current child's CPU time so far: its cgroup's, else its processes' in /proc."""
        if self.meter is not None:
            return self.meter.seconds()
        return cpuclock.tree_cpu(self.process.pid) if self.process is not None else None

    def _waiting(self) -> float:
        """What the current child waited for a CPU so far: its group's stall where the kernel keeps it, else its
        runtime's run-queue time (the load's thread)."""
        stalled = self.meter.stalled() if self.meter is not None else None
        if stalled is not None:
            return stalled
        return cpuclock.run_delay(self.process.pid) if self.process is not None else 0.0

    def _all_computed(self) -> float:
        """The current child's CPU time so far and the grading thread's own: neither is the machine's."""
        return (self._computed() or 0.0) + time.thread_time()

    def _read_fork(self, process: "_Locator | None", now: float) -> None:
        """The running exercise's fork's run-queue time, read now and then: it is lost when the fork ends."""
        if process is not None and self.budget.fork_due(now):
            found = process()
            if found is not None:
                self.budget.fork_read(found.fork, now)

    # -- cases ----------------------------------------------------------------------------------------------
    def run_exercise(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle,
                     deadline: float, max_timeouts: int = 2,
                     methods: Mapping[str, Any] | None = None, more: bool = False) -> list[Outcome]:
        """Run cases in order; each started case gets exactly one outcome, even if the child dies.

        `methods` describes the isolated names that are methods (`Class.method`): the parameters of the method
        and the attribute chains over them the child sends to the oracle as data. `more`: another exercise
        follows in this sandbox (the child's fork checks it may serve it while this side turns around).

        Hidden cases' inputs never reach a child before a public case it runs: a request of both goes to the
        child as two, its public cases first (the outcomes come back in the request's order, the hidden part
        with the timeouts the public part left), and public cases are never sent to a child that heard a hidden
        input; that child goes and the notebook is loaded fresh (`_retire_for`).
        Whatever the notebook made to keep what it saw (a global, a file, a page shared since its load, a
        process left running) dies with that child, so no output, answer or message of a public case, which
        the student sees, can carry a hidden input. Grading orders every exercise's public cases before any
        hidden one (judge.grading.OwnRunsFirst), so a correct notebook is loaded once."""
        public = [case for case in cases if not case.hidden]
        if not public or len(public) == len(cases):
            return self._run_part(cases, isolate, oracle, deadline, max_timeouts, methods, more)
        # Two requests (the public one whole, the hidden one case by case, each once the last one's answer came).
        found = dict(zip((case.id for case in public),
                         self._run_part(public, isolate, oracle, deadline, max_timeouts, methods, True), strict=True))
        hidden = [case for case in cases if case.hidden]
        found.update(zip((case.id for case in hidden), with_timeouts_left(
            hidden, max_timeouts, timed_out(found.values()),
            lambda left: self._run_part(hidden, isolate, oracle, deadline, left, methods, more)), strict=True))
        return [found[case.id] for case in cases]

    def _run_part(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle,
                  deadline: float, max_timeouts: int = 2,
                  methods: Mapping[str, Any] | None = None, more: bool = False) -> list[Outcome]:
        """run_exercise's cases, all public or all hidden: one request to the child (more after a death)."""
        self._retire_for(isolate, methods, public=not all(case.hidden for case in cases))
        deadline += self.reloaded   # the time of the grader's own reloads (_reload) is not the submission's
        outcomes: list[Outcome] = []
        timeouts = 0
        position = 0
        while position < len(cases):
            now = time.monotonic()
            if now >= deadline and now >= self._until(deadline):
                outcomes.extend(Outcome(c.id, "skipped", error=self._spent(deadline, now)) for c in cases[position:])
                break
            if timeouts >= max_timeouts:
                outcomes.extend(skipped_after_timeouts(cases[position:], timeouts))
                break
            if self.process is None or self.process.poll() is not None:
                retired, self.retired = self.retired, False
                if not retired and self.restarts >= MAX_RESTARTS + len(self.statements):
                    outcomes.extend(Outcome(c.id, "crash", error={"message": "the submission's process kept dying"})
                                    for c in cases[position:])
                    break
                self.restarts += 0 if retired else 1
                try:
                    if retired:
                        deadline += self._reload(deadline, reuse=not isolate)
                    else:
                        self.load(deadline)
                except MachineBusy as error:   # the machine's fault (a reload is no different from the first load)
                    outcomes.extend(Outcome(c.id, "skipped", error={"reason": "starved", "message": str(error)})
                                    for c in cases[position:])
                    break
                except SandboxError as error:
                    outcomes.extend(Outcome(c.id, "crash", error={"message": str(error)}) for c in cases[position:])
                    break
            batch = cases[position:]
            self.near = batch[0].id
            produced, clean = self._run_batch(batch, isolate, oracle, deadline, max_timeouts - timeouts, methods,
                                              more)
            self._count_refusals()
            self.budget.exercise_ended(time.monotonic())   # the fork's waiting, as last read, is kept
            if not produced:  # the child died before running anything: count it against the restarts
                self.restarts += 1
                if self.restarts >= MAX_RESTARTS + len(self.statements):
                    outcomes.extend(Outcome(c.id, "crash", error={"message": "the submission's process kept dying"})
                                    for c in batch)
                    break
            outcomes.extend(produced)
            position += len(produced)
            timeouts += timed_out(produced)
            if not clean:
                self._stop()  # state unknown: the next batch starts in a fresh child
        if isolate and self.process is not None:
            self.answered |= _answering(isolate, methods)
        return outcomes

    def _run_batch(self, cases: Sequence[CaseRequest], isolate: Sequence[str], oracle: Oracle,
                   deadline: float, timeouts_left: int,
                   methods: Mapping[str, Any] | None = None, more: bool = False) -> tuple[list[Outcome], bool]:
        """One fork running cases until done or dead. Returns the outcomes and whether the child is still sane.

        The parent's clocks decide: the first case starts when the fork is announced (once per batch; a later
        `forked` is forged), each next case when the previous answer arrives. A case's limit is the CPU time the
        kernel charges the exercise's process (cpuclock), so neither a busy machine nor the parent's answers to
        isolated-helper calls count against it; a case past its limit plus a grace is stopped whatever the child
        says, and one that reaches the wall backstop without using its CPU time is stopped too, its verdict
        taken from the kernel's numbers (cpuclock.wall_verdict). A frame that does not fit the schema, breaks the
        oracle's rules, answers another case or could only come from a start, a load or a fork's start, costs the
        case it arrives in an error and the child is replaced; outside a case, any frame but `forked` and `exited`
        has the child replaced.
        """
        outcomes: list[Outcome] = []
        current: CaseRequest | None = None
        clock: _CaseClock | None = None
        forked = False
        reported = False                   # an `exited` came before the fork's `forked` (the last fork's death)
        calls = 0
        asked = 0                          # bytes of the running case's isolated-helper calls
        process: _Locator | None = None    # finds its fork and runtime by host pid, when a case first needs them
        # The first case is charged from the load's end or the last exercise's last answer, where all went well
        # (a case that crashed was not answered: its CPU time must not be charged again to the next).
        carried, self.carried = self.carried, None
        held = _held(cases)                # the cases the request holds; each later one is released (_release)
        try:
            self._send(_exercise_frame(cases, isolate, methods, more))
        except (wire.Closed, wire.FrameError):
            return outcomes, False
        finally:
            self.heard_hidden = self.heard_hidden or any(case.hidden for case in cases)
        wait_until = time.monotonic() + RUNTIME_SECONDS   # between cases: the runtime's own work
        until = self._until(deadline)      # the deadline as it stands: moved only once it has passed (budget.py)
        self.budget.exercise_started(time.monotonic())
        pending: _Pending | None = None    # a frame the run of kept calls read and left (see _answer_kept)
        # Answers sent before they are asked, learnt from the case's own calls: only where answers are pure.
        prefetch = Prefetch(frozenset(isolate), context=tuple(sorted(oracle.answered_by.items()))) \
            if can_prefetch(frozenset(isolate)) and isinstance(oracle, PureOracle) else None
        while True:
            wake = clock.wake if clock is not None else wait_until
            message: frames.Message | KnownCall | None = None
            call: Heard | None = None
            try:
                if pending is not None:
                    (body, call, message), pending = pending, None
                else:
                    body = self._receive_body(min(wake, until + GRACE_SECONDS))
                if call is not None:
                    pass   # heard (and looked up) already
                elif current is not None and current.right is not None and body == current.right[0]:
                    message = current.right[1]   # what parsing it would give (_outcome copies its dicts)
                elif current is not None and isinstance(oracle, PureOracle):   # most frames of A*: helper calls
                    call = oracle.replies.hear(body)
                    if call is not None:
                        message = oracle.replies.recall(call, oracle.answered_by.get(call.name, ""))
                decoded = None
                if message is None and call is not None:
                    decoded = known_args(call.rest, self.known_texts)
                    if decoded is not None:   # what parsing would give, its arguments decoded already
                        message = frames.OracleCall(call.name, None, _NO_KEYWORDS, call.seq)
                if message is None and current is not None:
                    message = _unread(body, current, self.bounds) or _over_asked(body, asked, current)
                if message is None:
                    message = _parsed(body, self.bounds)
                    if current is not None and isinstance(message, frames.OracleCall) \
                            and message.name in isolate and not _as_written(body, message):
                        raise frames.Invalid("an isolated-helper call its runtime does not write so")
            except wire.Timeout:
                now = time.monotonic()
                self._read_fork(process, now)
                until = self._until(deadline)
                if current is None or clock is None:
                    if now < min(wait_until, until + GRACE_SECONDS):
                        continue   # the deadline moved: the runtime's own work may go on
                    return outcomes, False
                stopped = clock.expired(current, until, self._starved(deadline) if self.budget.slack > 0 else None)
                if stopped is None:
                    continue   # its CPU time is not spent yet: look again when it could be
                outcomes.append(stopped)
                return outcomes, False
            except wire.Closed as error:
                if current is not None and clock is not None:
                    outcomes.append(self._crash(current, clock.started, error))
                return outcomes, False
            except (wire.FrameError, frames.Invalid) as error:
                victim = current or (cases[len(outcomes)] if len(outcomes) < len(cases) else None)
                self.saw(incidents.FORGED_FRAME, current.id if current is not None else "")
                if victim is not None:
                    outcomes.append(_broken_rule(victim, clock.started if clock else time.monotonic(),
                                                 f"sent the grader a malformed message ({error})"))
                return outcomes, False
            now = time.monotonic()
            if current is None and not isinstance(message, frames.Exited) \
                    and not (isinstance(message, frames.Forked) and not forked):
                # Outside a case only the fork's `forked` and an `exited` may come. Anything else is student code
                # (run by the pristine check between exercises, or left by the last case) writing frames that
                # the parent read and parsed until the runtime's own deadline: RUNTIME_SECONDS of the grader's
                # CPU per exercise for next to none of the child's. The child is replaced now.
                self.saw(incidents.FORGED_FRAME)
                return outcomes, False
            if isinstance(message, frames.Forked) and current is None:
                forked = True
                self.fork_pid = self._verified_fork(message.pid)
                if self.process is not None and isinstance(message.pid, int) and message.pid > 0:
                    process = _Locator(self.process.pid, message.pid)
                current, calls, asked = cases[0], 0, 0
                clock = _CaseClock(current.timeout, now, process, self.meter, spent=carried)
                if prefetch is not None:
                    prefetch.start_case(current.oracle_calls)
            elif isinstance(message, (frames.OracleCall, KnownCall)):
                if current is None or clock is None:
                    continue   # no case is running: nobody may ask (never here: see above)
                calls += 1
                asked += len(body)
                problem = _oracle_problem(message.name, isolate, calls, current.oracle_calls) or \
                    _oracle_bytes_problem(asked, current.oracle_bytes)
                if problem is None:
                    try:
                        if prefetch is not None and call is not None:
                            prefetch.heard(call.name, call.rest)
                        self._answer_oracle(message, oracle, clock, call, decoded, prefetch)
                        # The reference's time is not the student's: its CPU clock stands still while it waits
                        # for the answer, and the wall backstop moves by the time the parent spent answering.
                        clock.paused(time.monotonic() - now)
                        if isinstance(message, KnownCall) and isinstance(oracle, PureOracle):
                            calls, asked, pending = self._answer_kept(oracle, isolate, current, clock, calls, asked,
                                                                      until + GRACE_SECONDS, prefetch)
                    except (wire.Closed, wire.FrameError):
                        problem = "does not read the grader's answers to its isolated-helper calls"
                    except _Unreadable as error:
                        problem = f"sent an isolated-helper call whose arguments the grader cannot read ({error})"
                    except _ReferenceTooSlow:   # the case's time went on the reference's answer: by our clock
                        outcomes.append(Outcome(current.id, "timeout", seconds=time.monotonic() - clock.started,
                                                error={"message": f"did not finish within {current.timeout:g} s "
                                                                  f"(stopped while the reference answered its "
                                                                  f"call to an isolated helper)"}))
                        return outcomes, False
                if problem is not None:
                    if message.name not in isolate:   # the runtime asks only for what it was told (the limits: not)
                        self.saw(incidents.FORGED_CALL, current.id)
                    outcomes.append(_broken_rule(current, clock.started, problem))
                    return outcomes, False
            elif isinstance(message, frames.Result):
                if current is None or clock is None:
                    continue   # no case is running (never here: see above)
                if message.case != current.id:
                    # The runtime answers the case it runs, once; anything else is forged (a noise frame of
                    # tens of MB costs the parent its parsing): the case it arrives in pays, not the grader.
                    self.saw(incidents.FORGED_FRAME, current.id)
                    outcomes.append(_broken_rule(current, clock.started, "sent an answer to a case it was not "
                                                                         "running"))
                    return outcomes, False
                # The case's CPU read first: the next case's clock starts from this reading (clock.last), so
                # what the sandbox computes once it can read the next case's input is that case's, never this
                # one's (an answer forged early, then the next input stolen off the pipe while the worker waited
                # for a CPU, would have had the later case's work paid on this one's clock).
                usage = clock.usage()
                # A hidden part's next case's input only now (no earlier case could work on it:
                # _exercise_message), and at once where it runs whatever this answer's verdict: the child waits
                # for it. A public part's cases are all in the child already (held).
                released = None
                if timeouts_left > 1 and held <= len(outcomes) + 1 < len(cases):
                    released = self._release(cases[len(outcomes) + 1], isolate, methods)
                outcomes.append(self._outcome(current, message, now - clock.started,
                                              usage.cpu if usage is not None else None))
                self._read_fork(process, now)
                reading, current, clock = clock.last, None, None
                if outcomes[-1].status == "timeout":
                    timeouts_left -= 1
                    if timeouts_left <= 0 and len(outcomes) < len(cases):
                        return outcomes, False   # enough waiting on this exercise: the rest are skipped
                if len(outcomes) < len(cases):
                    current, calls, asked = cases[len(outcomes)], 0, 0
                    if released is None and held <= len(outcomes):   # (else sent above, or held)
                        released = self._release(current, isolate, methods)
                    if released:
                        outcomes.append(_broken_rule(current, now, released) if released != "crash" else
                                        self._crash(current, now, wire.Closed("the child closed its pipe")))
                        return outcomes, False
                    clock = _CaseClock(current.timeout, now, process, self.meter, spent=reading)
                    if prefetch is not None:
                        prefetch.start_case(current.oracle_calls)
                else:
                    wait_until = now + RUNTIME_SECONDS
                    self.carried = reading   # every case answered: the next exercise is charged from here
            elif isinstance(message, frames.Exited):
                # The child has already killed what the exercise left behind in its process group.
                self.fork_pid = None
                if not forked:
                    # The last exercise's fork said `exited`, then died while it waited (a timer the notebook
                    # left): the runtime reports that death late and serves this request itself, so a `forked`
                    # follows. A fork that took this request and died before saying `forked` sends nothing more:
                    # the runtime's deadline replaces the child. Sending the request again would have it run twice.
                    # That report comes once: more are student code's (read until the runtime's deadline).
                    if reported:
                        self.saw(incidents.FORGED_FRAME)
                        return outcomes, False
                    reported = True
                    continue
                if current is not None and clock is not None:
                    outcomes.append(Outcome(current.id, "crash", seconds=now - clock.started,
                                            error=self._death(_exit_text(message.status))))
                return outcomes, True
            elif current is not None and clock is not None:
                # During a case the runtime sends its calls, its answer or the fork's end, nothing else: a second
                # `forked`, a `progress`, `loaded` or `ready` of a start or load, a `done`, are forged, and cost
                # the case. Ignored, a prebuilt 600 kB `progress` written again and again cost the parent 6.5 s of
                # CPU parsing it in the 10 s to the wall backstop, for 0.05 s of the case's (130 times).
                self.saw(incidents.FORGED_FRAME, current.id)
                outcomes.append(_broken_rule(current, clock.started, "sent a frame of its start, load or fork "
                                                                     "while running a case"))
                return outcomes, False

    def _release(self, case: CaseRequest, isolate: Sequence[str], methods: Mapping[str, Any] | None) -> str:
        """Send the child the exercise's next case (runtime.Child.next_case): "" once queued, "crash" where the
        child closed its end, else why the case is lost (the child does not read its requests)."""
        try:
            self._send(_case_frame(case, isolate, methods))
        except wire.Closed:
            return "crash"
        except wire.FrameError:
            return "does not read the grader's requests"
        return ""

    def _verified_fork(self, pid: Any) -> int | None:
        """The pid a child says it forked, if the kernel agrees it is its child: a forged message must never
        make the grader kill some other process group."""
        if self.isolation.namespaces or self.process is None or not isinstance(pid, int) or pid <= 1:
            return None   # inside a pid namespace the number means nothing here; PID 1's death ends them all
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return pid if int(fields[1]) == self.process.pid else None

    def _crash(self, case: CaseRequest, started: float, error: Exception) -> Outcome:
        status = None
        if self.process is not None:
            status = self.process.wait(timeout=0.2)
        reason = _exit_text(status) if status is not None else "the submission's process stopped answering"
        return Outcome(case.id, "crash", seconds=time.monotonic() - started, error=self._death(reason))

    def _death(self, reason: str) -> dict[str, str]:
        """Why a process of the case died: the memory cgroup's OOM killer (the kernel's count, never the
        child's word) makes it the case's memory error."""
        if self.memory is not None and self.memory.out_of_memory():
            self.memory.kills = self.memory.oom_kills()   # charged once, to the case it happened in
            return {"type": "MemoryError", "message": f"the sandbox ran out of memory (its limit is "
                                                      f"{self.memory.limit >> 20} MB for all its processes and files)"}
        over = self._overfull(False)
        if over is not None:
            return {"type": "OSError",
                    "message": f"the sandbox's files went over their limit ({self._scratch_limit(over)})"}
        return {"message": reason}

    def _overfull(self, ending: bool) -> str | None:
        """Where the zygote found the child's files over the sandbox's limit, if that is why it killed it
        (zygote.Zygote.watch, rlimits mode): its word, read once the child has ended (supervisor.Jail.over). A
        look at the scratch folder here missed files held unlinked or left in /tmp. `ending`: its pipes closed,
        so it is ending, and is given a moment to."""
        if self.process is None:
            return None
        if ending:
            self.process.wait(timeout=0.2)
        return self.process.over if self.process.poll() is not None else None

    def _scratch_limit(self, over: str = "folder") -> str:
        return f"{self.limits.disk_mb} MB, {self.limits.files} files in all{_OVER_WHERE.get(over, '')}"

    def _answer_kept(self, oracle: PureOracle, isolate: Sequence[str], case: CaseRequest, clock: _CaseClock,
                     calls: int, asked: int, until: float,
                     prefetch: Prefetch | None = None) -> tuple[int, int, _Pending | None]:
        """Answer the calls that follow while each is kept and within the rules, as the loop of _run_batch would
        (the same counts, rules, clock and deadlines), without its dispatch: A* asks thousands in a row. Returns
        the counts and the first frame it does not answer, heard and looked up (None: the wait for it ended,
        the child closed its end or sent a frame that cannot be read, which the loop's next read meets again).
        Raises wire.Closed or wire.FrameError when the child does not read its answers."""
        assert self.reader is not None and self.outbox is not None
        read, put, replies, answered_by = self.reader.read_body, self.outbox.put, oracle.replies, oracle.answered_by
        entries, shared, longest = replies.entries, replies.shared, replies.max_key_chars + _CALL_HEAD_BYTES
        allowed, allowed_bytes = case.oracle_calls, case.oracle_bytes
        match, monotonic = _CALL_HEAD.match, time.monotonic
        while True:
            try:
                body = read(min(clock.wake, until), self.outbox)
            except (wire.Timeout, wire.Closed, wire.FrameError):
                return calls, asked, None
            now = monotonic()
            head = match(body) if len(body) <= longest else None   # Replies.hear and recall, spelt out
            if head is None:
                return calls, asked, (body, None, None)
            name = head[1].decode("ascii")
            key = (name, answered_by.get(name, ""), body[head.end():])
            tail = entries.get(key)
            if tail is None and shared is not None:
                tail = shared.get(key)
            if tail is None or name not in isolate or calls >= allowed or asked + len(body) > allowed_bytes:
                call = Heard(name, int(head[2]), key[2])   # the loop answers it, or says which rule it breaks
                known = KnownCall(name, call.seq, call.rest, tail) if tail is not None else None
                return calls, asked, (body, call, known)
            calls += 1
            asked += len(body)
            if prefetch is not None:
                prefetch.heard(name, key[2])
                tail = self._with_prefetched(prefetch, oracle, clock, name, tail)
            put(_reply_frame(int(head[2]), tail))
            clock.paused(monotonic() - now)

    def _answer_oracle(self, call: frames.OracleCall | KnownCall, oracle: Oracle, clock: _CaseClock,
                       heard: Heard | None = None, decoded: list | None = None,
                       prefetch: Prefetch | None = None) -> None:
        """The reference's answer to an isolated-helper call the child made (already checked as allowed); `heard`
        is the call's frame split as the runtime writes it, if it was (its key, when the reply may be kept)."""
        if isinstance(call, KnownCall):
            tail = call.tail
            if prefetch is not None and isinstance(oracle, PureOracle):
                tail = self._with_prefetched(prefetch, oracle, clock, call.name, tail)
            self._send(_reply_frame(call.seq, tail))
            return
        seconds = clock.reference_seconds()
        key = heard.key(oracle.answered_by.get(call.name, "")) \
            if heard is not None and heard.keeps(call) and isinstance(oracle, PureOracle) else None
        # Arguments the codec refuses end the case (_Unreadable): the runtime encodes them with the same codec and
        # raises in the student's own call what it cannot encode, so answering such a call with an error and going
        # on let a case have the parent parse frame after frame of them, to oracle_bytes, off the case's clock.
        try:
            args = decoded if decoded is not None else codec.decode(call.args)
            kwargs = {} if call.kwargs == _NO_KEYWORDS else codec.decode(call.kwargs)
        except codec.CodecError as error:
            raise _Unreadable(str(error)[:200]) from None
        if type(args) is not list or type(kwargs) is not dict or kwargs and any(type(k) is not str for k in kwargs):
            raise _Unreadable("its arguments are not a list and its keywords not a dict of names")
        try:
            # The child chose the arguments: the reference gets no more than the case's remaining time.
            tail = _answer_tail(_bounded(lambda: oracle(call.name, args, kwargs), seconds), self.known_texts)
        except _ReferenceTooSlow:
            raise
        except Exception as error:  # the reference rejects the student's arguments: the student's call fails
            tail = wire.json_text({"error": f"{type(error).__name__}: {error}"[:500]})[1:].encode("utf-8")
        if key is not None and isinstance(oracle, PureOracle):
            oracle.replies.keep(key, tail)
        if prefetch is not None and isinstance(oracle, PureOracle):
            tail = self._with_prefetched(prefetch, oracle, clock, call.name, tail)
        self._send(_reply_frame(call.seq, tail))

    def _with_prefetched(self, prefetch: Prefetch, oracle: PureOracle, clock: _CaseClock, name: str,
                         tail: bytes) -> bytes:
        """The reply `tail` to a call of `name`, with the answers to the calls the case's rules expect next
        (grader/sandbox/prefetch.py). Each is kept, or computed by the reference within the case's share for
        answers sent ahead (_CaseClock.prefetch_seconds, apart from the asked calls' share): a prefetch that runs
        out ends prefetching for the case, never the case. The time goes on the parent's clock, as any answer's."""
        if tail[:1] not in prefetch_sets:
            return tail   # only a set's members start a rule's calls
        if name not in prefetch.triggers:
            prefetch.replied(name, tail)   # its members may yet confirm a rule
            return tail
        share = clock.prefetch_seconds()
        if share <= 0:   # the parent's time on answers sent ahead, looked-up ones too, is bounded per case
            prefetch.stopped = True
            prefetch.replied(name, tail)
            return tail
        replies, answered_by, texts, monotonic = oracle.replies, oracle.answered_by, self.known_texts, time.monotonic
        seconds = min(clock.limit, share)
        started = monotonic()

        def too_slow() -> _ReferenceTooSlow:
            return _ReferenceTooSlow(f"answers sent ahead took longer than {seconds:.2g} s")

        # One alarm for all the answers sent with this reply (each reference call under an alarm of its own cost
        # ~2.6 us of system calls), armed when the first of them must be computed (a reply whose answers are all
        # kept, every reply of a batch's later copies, costs no alarm: the walk looks at LOOKED calls at most) to
        # ring when the share would have: it rings in the reference (raising there) or in the grader's own code
        # (then `expired` stops the next call); off the main thread, where no alarm rings, each answer is bounded
        # by the ringer (alarm.bounded) to what is left of the share: before, only the clock read between answers
        # bounded them, and one answer ran as long as the reference took.
        limit: TimeLimit | None = None

        def answer(helper: str, rest: bytes, args: list) -> bytes | None:
            nonlocal limit
            key = (helper, answered_by.get(helper, ""), rest)
            kept = replies.kept(key)
            if kept is not None:
                return kept
            spent = monotonic() - started
            if limit is not None and limit.expired or spent >= seconds:
                prefetch.stopped = True
                return None
            if limit is None:
                limit = TimeLimit(seconds - spent, too_slow).__enter__()
            try:
                if limit.armed:
                    answered = oracle(helper, args, {})
                else:   # a thread that takes no signal (a Dask worker's): each answer under the ringer's limit
                    answered = bounded(lambda: oracle(helper, args, {}), seconds - spent, too_slow)
                if limit.expired:   # it rang during the call: what the reference made of that is not kept
                    raise _ReferenceTooSlow("rang")
                made = _answer_tail(answered, texts)
            except _ReferenceTooSlow:
                prefetch.stopped = True
                return None
            except Exception:  # noqa: BLE001 - the reference refuses these arguments: nothing is sent
                return None
            replies.keep(key, made)
            return made

        try:
            more = prefetch.answers(name, tail, answer, replies.walks)
        except _ReferenceTooSlow:
            # It rang in a frame that is neither the reference's nor a file of the package (a dataclass's
            # generated __init__, prefetch.Members' in members_of): prefetching ends, never the case.
            more = []
            prefetch.stopped = True
        finally:
            if limit is not None:
                limit.disarm()
        if limit is not None and limit.expired:
            prefetch.stopped = True
        clock.prefetch_spent += monotonic() - started
        return codec.pack_prefetched(tail, more) if more else tail

    def _outcome(self, case: CaseRequest, message: frames.Result, seconds: float, cpu: float | None) -> Outcome:
        """The child's answer as the parent sees it: the kernel's CPU time (else the parent's wall clock)
        decides whether it came in time, never the child's word."""
        status, error = message.status, dict(message.error)
        if status != "timeout":
            if cpu is not None and cpuclock.over(cpu, case.timeout + GRACE_SECONDS):
                status, error = "timeout", {"message": f"did not finish within {case.timeout:g} s of CPU time "
                                                       f"(it used {cpu:.1f} s)"}
            elif cpu is None and seconds > case.timeout + GRACE_SECONDS:
                status, error = "timeout", {"message": f"did not finish within {case.timeout:g} s "
                                                       f"(the answer came after {seconds:.1f} s)"}
        return _answered(case.id, status, message.value, dict(message.probes), error, message.output, seconds, cpu,
                         message.unread)


# Result frames parsed before, by their bytes: the same bytes parse to the same message, so a class's many equal
# answers to a case the judge must check (a search's path, a run's output) are parsed once per worker, and the
# judge meets the very value again (its memo by identity). Only what the parent parses, never sent to a child.
# Bounded in bytes (a parsed frame of small lists costs ~30 times its bytes), oldest out.
_HEARD_FRAME = 16 * 1024          # a larger frame is parsed every time
_HEARD: SizedMemo[bytes, tuple[frames.Bounds, frames.Message]] = SizedMemo(512 * 1024)
# How the runtime writes the frames kept there (any other spelling is parsed every time).
_HEARD_HEADS = b'{"op":"result",'
# The `forked` and `exited` that frame every exercise request (two of each notebook's 26 Taoistic requests: ~6 us
# each to parse), as the runtime writes them: read from their bytes (_framing), never parsed, never kept in _HEARD.
# Kept there, in rlimits mode a fork's host pid, which never repeats, made each notebook put ~26 `forked` frames in
# it that no later frame matched, pushing out the result frames it is for. Any other spelling is parsed as ever.
_FRAMING_HEADS = (b'{"op":"forked",', b'{"op":"exited",')
_FORKED_FRAME = re.compile(rb'\{"op":"forked","pid":(0|[1-9][0-9]{0,6})\}')
_EXITED_FRAME = re.compile(rb'\{"op":"exited","status":(-?(?:0|[1-9][0-9]{0,3}))\}')
_FRAMING_LONGEST = 40


def skipped_after_timeouts(cases: Sequence[CaseRequest], timeouts: int) -> list[Outcome]:
    """The outcomes of an exercise's cases not run because `timeouts` of its cases timed out (max_timeouts)."""
    return [Outcome(c.id, "skipped", error={"message": f"not run: {timeouts} earlier cases of this exercise timed "
                                                       f"out", "reason": "timeouts"}) for c in cases]


def timed_out(outcomes: Iterable[Outcome]) -> int:
    """How many of an exercise's outcomes are timeouts (what its max_timeouts counts)."""
    return sum(1 for outcome in outcomes if outcome.status == "timeout")


def with_timeouts_left(cases: Sequence[CaseRequest], max_timeouts: int, timeouts: int,
                       run: Callable[[int], list[Outcome]]) -> list[Outcome]:
    """A later part of an exercise (its hidden cases, run apart from its public ones): `run` given the timeouts
    the `timeouts` of its earlier parts left of `max_timeouts`, or every case skipped when none are left. The
    one rule of both splits (Sandbox.run_exercise, judge.grading.OwnRunsFirst.run_ahead)."""
    left = max_timeouts - timeouts
    return run(left) if left > 0 else skipped_after_timeouts(cases, timeouts)


def _parsed(body: bytes, bounds: frames.Bounds) -> frames.Message:
    """The frame's message (frames.Invalid or wire.FrameError when it does not fit); a result frame heard before is
    taken from _HEARD, a forked or exited frame as the runtime writes it is read from its bytes (_framing)."""
    if len(body) <= _FRAMING_LONGEST and body.startswith(_FRAMING_HEADS):
        framing = _framing(body)
        if framing is not None:
            return framing
    if len(body) > _HEARD_FRAME or not body.startswith(_HEARD_HEADS):
        return frames.parse(wire.parse_body(body), bounds)
    known = _HEARD.get(body)
    if known is not None and known[0] == bounds:
        return known[1]
    message = frames.parse(wire.parse_body(body), bounds)
    _HEARD.put(body, (bounds, message), len(body))
    return message


def _framing(body: bytes) -> frames.Forked | frames.Exited | None:
    """The message of a `forked` or `exited` frame spelt as the runtime writes it, the very one parsing gives
    (frames.parse: a pid up to MAX_PID, a status in EXIT_STATUSES); None for any other frame, which is parsed."""
    found = _FORKED_FRAME.fullmatch(body)
    if found is not None:
        pid = int(found[1])
        return frames.Forked(pid) if pid <= frames.MAX_PID else None
    found = _EXITED_FRAME.fullmatch(body)
    if found is not None:
        status = int(found[1])
        return frames.Exited(status) if status in frames.EXIT_STATUSES else None
    return None


def _unread(body: bytes, case: CaseRequest, bounds: frames.Bounds) -> frames.Result | None:
    """The running case's answer refused unread, when its frame weighs more than any answer the case can compare
    (CaseRequest.answer_bytes), else None (the frame is parsed). Raises frames.Invalid for such a frame that is
    not the runtime's answer to the case (it writes its keys in one order): forged, and not parsed to find out.
    An isolated-helper call's frame is the runtime's too, bounded by the case's oracle_bytes: parsed as ever.
    Without it a result frame of 2 MB of nested lists cost the parent 0.42 s to parse (1.2 s at
    wire.MAX_CONTAINERS), then more to measure, for every case."""
    limit = case.answer_bytes
    if limit is None:   # a check judges the answer, whatever its size: but only one the codec can decode
        if body.startswith(_ORACLE_HEAD) or frames.readable(body, 1 + len(case.probes), bounds):
            return None
        weight, output = len(body), frames.weighed(body, case.id, bounds)[1]
    elif len(body) <= limit or body.startswith(_ORACLE_HEAD):
        return None
    else:
        weight, output = frames.weighed(body, case.id, bounds)
        if weight <= limit:
            return None
    if not body.startswith(frames.result_head(case.id)):
        raise frames.Invalid(f"a frame of {len(body):,} bytes that is not the runtime's answer to the case")
    return frames.Result(case.id, "ok", None, output=output, unread=weight)


_ORACLE_HEAD = b'{"op":"oracle","name":"'    # how the runtime writes an isolated-helper call (_CALL_HEAD)


def _over_asked(body: bytes, asked: int, case: CaseRequest) -> frames.OracleCall | None:
    """The running case's isolated-helper call, unparsed, when its frame's bytes would take the case's calls past
    `oracle_bytes` (the loop then ends the case by that rule, or by the name's), else None (the frame is parsed).
    Counted before parsing: a frame over the bound costs the parent no parse. Its name and seq are its head's
    (_CALL_HEAD); a frame that starts as a call but not as the runtime writes one has no name (forged)."""
    if asked + len(body) <= case.oracle_bytes or not body.startswith(_ORACLE_HEAD):
        return None
    head = _CALL_HEAD.match(body)
    if head is None:
        return frames.OracleCall("", None, None, 0)
    return frames.OracleCall(head[1].decode("ascii"), None, None, int(head[2]))


def _as_written(body: bytes, call: frames.OracleCall) -> bool:
    """Whether a call's frame starts as the runtime writes it (Child.ask), with the parsed call's helper and seq:
    the runtime writes its keys in one order, once each, so any other spelling of a call is forged."""
    return body.startswith(b'{"op":"oracle","name":%s,"seq":%d,' % (wire.json_text(call.name).encode("utf-8"),
                                                                     call.seq))


def right_answer(case_id: str, value: Any) -> tuple[bytes, frames.Result] | None:
    """CaseRequest.right for a case whose right answer is the wire `value`: the body of the runtime's `result`
    frame holding it with no probes and no output (its keys in the runtime's order), and the message parsing it
    would give, made once (a frozen dataclass costs ~2 us to make, for most cases of every notebook); or None if
    no frame can hold it."""
    try:
        body = wire.encode_body({"op": "result", "case": case_id, "status": "ok", "value": value, "probes": {},
                                 "output": ""})
    except (TypeError, ValueError, RecursionError, wire.FrameError):
        return None
    return body, frames.Result(case_id, "ok", value)


def _exercise_message(cases: Sequence[CaseRequest], isolate: Sequence[str],
                      methods: Mapping[str, Any] | None, more: bool) -> dict:
    """The exercise request, and how many cases it has (`count`). A hidden part holds its first case only, each
    next one sent once the last one's answer arrived (_case_frame): the child never holds a later hidden case's
    input, which a case could find (gc) and work on, on its own clock, so that the later case answers at once.
    A public part comes whole (_held): its inputs are the student's already (the kit carries each public case as
    the sandbox receives it), so a notebook can do a later public case's work on an earlier case's clock
    whatever the child holds, and sending them one by one would cost a round trip a case for no trust."""
    return {"op": "exercise", "isolate": list(isolate), "methods": dict(methods or {}), "more": more,
            "cases": [_case_message(c) for c in cases[:_held(cases)]], "count": len(cases)}


def _held(cases: Sequence[CaseRequest]) -> int:
    """How many of a part's cases its request holds: all of a public part, the first of a hidden one."""
    return 1 if any(case.hidden for case in cases) else len(cases)


def _case_message(case: CaseRequest) -> dict:
    return {"id": case.id, "code": case.code, "values": dict(case.values), "set": dict(case.set),
            "probes": dict(case.probes), "timeout": case.timeout, "reduce": case.reduce}


# An own run's exercise frame by the requests it carries: every student of a batch gets the plan's very requests
# (grading keeps them per plan), so each exercise's frame is encoded once per worker, not once per student. Kept
# with its requests, so that their ids name no other objects while the frame is here.
_FRAMES: dict[tuple[bool, tuple[int, ...]], tuple[tuple[CaseRequest, ...], bytes]] = {}
_FRAMES_LIMIT = 512


def _exercise_frame(cases: Sequence[CaseRequest], isolate: Sequence[str],
                    methods: Mapping[str, Any] | None, more: bool = False) -> dict | bytes:
    """The exercise request for the child: the frame's bytes for an own run, the message for an isolated one."""
    if isolate or methods:
        return _exercise_message(cases, isolate, methods, more)
    key = (more, tuple(map(id, cases)))
    known = _FRAMES.get(key)
    if known is not None and all(kept is case for kept, case in zip(known[0], cases, strict=True)):
        return known[1]
    message = _exercise_message(cases, (), None, more)
    for request in message["cases"]:
        request["values"], request["set"] = _packed(request["values"]), _packed(request["set"])
    # The rubric's expressions compiled here, once per worker with the frame (see precompiled.expressions): the
    # cases' it holds only, each next case's with it (_case_frame): a call may hold a literal input.
    message["magic"], message["codes"] = precompiled.MAGIC, precompiled.expressions(message["cases"])
    frame = wire.marshal_frame(message)
    if len(_FRAMES) >= _FRAMES_LIMIT:
        _FRAMES.clear()
    _FRAMES[key] = (tuple(cases), frame)
    return frame


# The frames of own runs' later cases (_case_frame), made once per worker, kept with their request.
_CASE_FRAMES: dict[int, tuple[CaseRequest, bytes]] = {}


def _case_frame(case: CaseRequest, isolate: Sequence[str], methods: Mapping[str, Any] | None) -> dict | bytes:
    """An exercise's next case for the child (runtime.Child.next_case), sent once the last one's answer
    arrived: the frame's bytes for an own run (its inputs packed), the message for an isolated one."""
    if isolate or methods:
        return {"op": "case", "case": _case_message(case)}
    known = _CASE_FRAMES.get(id(case))
    if known is not None and known[0] is case:
        return known[1]
    message = _case_message(case)
    message["values"], message["set"] = _packed(message["values"]), _packed(message["set"])
    frame = wire.marshal_frame({"op": "case", "case": message, "magic": precompiled.MAGIC,
                                "codes": precompiled.expressions([message])})
    if len(_CASE_FRAMES) >= 8 * _FRAMES_LIMIT:
        _CASE_FRAMES.clear()
    _CASE_FRAMES[id(case)] = (case, frame)
    return frame


def _with_code(statements: Sequence[Mapping[str, Any]], allowance: precompiled.Allowance) -> list[dict]:
    """The kept statements for the load request, each with its code compiled here where it can be (within the
    submission's `allowance`), and marked quiet where that code calls nothing (see precompiled.py: the runtime
    announces no quiet statement)."""
    sent = []
    for statement, made in zip(statements, precompiled.compiled(statements, allowance), strict=True):
        sent.append(dict(statement) if made.code is None else
                    {**statement, "compiled": made.code, "quiet": True} if made.quiet else
                    {**statement, "compiled": made.code})
    return sent


def _announced_after(announced: Sequence[int], running: int | None) -> int | None:
    """The position of the statement the runtime announces next after `running` (None: before the first)."""
    at = bisect.bisect_right(announced, -1 if running is None else running)
    return announced[at] if at < len(announced) else None


def _packed(values: dict) -> dict:
    """A case's inputs for a marshalled request: each plain one packed (codec.pack: the child unpacks it in a
    microsecond where decoding the wire took tens), the others as wire."""
    packed = {}
    for name, value in values.items():
        try:
            packed[name] = codec.pack(codec.decode(value))
        except codec.CodecError:
            packed[name] = None
        if packed[name] is None:
            packed[name] = value
    return packed


class _Locator:
    """The exercise's processes in the kernel's /proc, looked for once and only when a case first outlasts its
    limit in wall time: a case that answers in time costs the parent no /proc read at all."""

    def __init__(self, outer: int, reported: int):
        self.outer, self.reported = outer, reported
        self.found: cpuclock.Exercise | None = None
        self.looked = False

    def __call__(self) -> cpuclock.Exercise | None:
        if not self.looked:
            self.looked = True
            self.found = cpuclock.exercise_process(self.outer, self.reported)
        return self.found


class _CaseClock:
    """One running case's clocks, as the parent keeps them.

    Where a cgroup counts the sandbox's CPU time (`meter`), the case's CPU time is what the kernel charged the
    whole sandbox from the case's start to its answer: every process and thread, parallel or hidden, whatever
    the child does with its signals, for a pread at each end. Elsewhere (rlimits mode without cgroups) the wall
    clock until the case outlasts its limit (an answer by then is in time: one thread's CPU time cannot be
    more), then the kernel's CPU time of the exercise's processes in /proc, counted from that first look; that
    is lenient with work done in parallel before it (up to as many times the limit as the machine has CPUs),
    which the child's own CPU-time alarm bounds for honest code only. Where neither can be read, the wall
    clock alone decides. Against the wall backstop, /proc's run-queue time (the fork's, and the parent's: the
    child waits for its answers) says whether the case was starved.
    A measure equal to its allowance is in time (cpuclock.over)."""

    def __init__(self, limit: float, started: float, process: _Locator | None, meter: CpuMeter | None = None,
                 spent: float | None = None):
        self.limit = limit
        self.started = started              # wall; moved on by the parent's time answering isolated helpers
        self.process = process
        self.meter = meter
        # The sandbox's CPU time at the start: read now, or the reading the last case's answer was measured by
        # (`spent`, the parent's own pread when that answer arrived: one reading ends a case and starts the next).
        self.spent = spent if spent is not None else meter.seconds() if meter is not None else None
        self.last: float | None = None      # the meter's last reading (counted)
        self.base: cpuclock.Usage | None = None   # the kernel's count in /proc at the first check
        self.checked: float | None = None   # wall time of the first check
        self.chose = False                  # the fork was seen waiting by its own choice (see usage)
        self.answering: float | None = None  # the parent's own run-queue time at the first check
        self.wake = started + limit + GRACE_SECONDS   # CPU time never outruns one thread's wall time much
        self.reference_spent = 0.0          # the parent's time answering, answers sent ahead included
        self.prefetch_spent = 0.0           # of which answers sent ahead (see Sandbox._with_prefetched)
        self.waiting_base: float | None = None   # the parent's run-queue time at the case's first computed answer
        self.cpu_base = 0.0                 # and its thread's CPU time then

    def _read(self) -> cpuclock.Usage | None:
        return cpuclock.read_usage(self.process()) if self.process is not None else None

    def counted(self) -> float | None:
        """The CPU time the sandbox's cgroup charged since the case started, or None where none counts."""
        if self.meter is None or self.spent is None:
            return None
        now = self.last = self.meter.seconds()
        return None if now is None else max(0.0, now - self.spent)

    def usage(self) -> cpuclock.Usage | None:
        """The case's CPU time (the cgroup's since its start, else /proc's since the first check) and the fork's
        run-queue time since the first check (0.0 before it), or None when nothing can be read."""
        proc = None
        if self.base is not None:
            now = self._read()
            if now is not None:
                # A fork seen waiting by its own choice at any reading has no run-queue time of the machine's:
                # its count is read as 0.0 then, so a difference with a reading of another moment would be its
                # whole life's (a fork pinned to a busy CPU at the first check, set free at the next, was
                # "starved" by the waiting of its earlier cases, or of its pinned time, while it slept).
                self.chose = self.chose or self.base.chosen or now.chosen
                proc = cpuclock.Usage(max(0.0, now.cpu - self.base.cpu),
                                      0.0 if self.chose else max(0.0, now.waiting - self.base.waiting))
        counted = self.counted()
        # The parent's wait for a CPU since the first check is the case's too: the child waits for its answers.
        parent = max(0.0, cpuclock.own_waiting() - self.answering) if self.answering is not None else 0.0
        if counted is not None:
            return cpuclock.Usage(counted, (proc.waiting if proc is not None else 0.0) + parent)
        return cpuclock.Usage(proc.cpu, proc.waiting + parent) if proc is not None else None

    @property
    def backstop(self) -> float:
        return self.started + cpuclock.WALL_FACTOR * self.limit + GRACE_SECONDS

    def paused(self, seconds: float) -> None:
        self.started += seconds
        self.reference_spent += seconds
        self.wake += seconds

    def reference_seconds(self) -> float:
        """What one answer of the reference may take: the case's limit, and all of them together the backstop's
        share, so a child cannot hold the parent with questions the reference is slow to answer. Answers sent
        ahead have a share of their own (prefetch_seconds): they never shorten this one. The share is wall time,
        and the parent's own waiting for a CPU since the case's first answer is not the reference's: at load 16
        eight-puzzle's A* rerun spent its 10 s on thousands of round trips that each waited for a CPU, and a case
        the notebook answered right was a timeout "while the reference answered". Nor is the wall time the thread
        spent off a CPU for any other reason (another thread's turn with the GIL, a page read back in): the share
        is spent only once the thread's CPU time since that first answer, the answers' and the parent's other
        work on the case, is spent too, so it bounds the grader's CPU, which a busy machine does not inflate."""
        if self.waiting_base is None:
            self.waiting_base, self.cpu_base = cpuclock.own_waiting(), time.thread_time()
        share = cpuclock.WALL_FACTOR * self.limit
        left = share - (self.reference_spent - self.prefetch_spent)
        if left < self.limit:   # running short: read how long the parent waited and computed (only then)
            left = max(left + max(0.0, cpuclock.own_waiting() - self.waiting_base),
                       share - (time.thread_time() - self.cpu_base))
        return min(self.limit, left)

    def prefetch_seconds(self) -> float:
        """What answers sent ahead may still take in this case: half the backstop's share, besides it."""
        return min(self.limit, cpuclock.WALL_FACTOR * self.limit / 2 - self.prefetch_spent)

    def expired(self, case: CaseRequest, deadline: float, starved: bool | None = None) -> Outcome | None:
        """The case's outcome if it must be stopped now, or None (and when to look again) if not.

        At the wall backstop the kernel says why the case has not used its CPU time: it waited by itself (slept,
        blocked) and is stopped, a timeout that says so; or it was kept waiting for a CPU, and then it goes on
        until its CPU time is spent or the submission's time runs out (that last one a grader problem): a busy
        machine makes grading slower, never different. `starved`: whether the submission's deadline passed only
        because the machine took more of its time than the deadline may move by (budget.py: a grader problem), or
        else its own time ran out; None where the deadline never moves, and then the case's own run-queue time
        since its first look decides. (Not the case's alone where it moves: a fork made to wait by busy processes
        of its own, started just before the deadline, had its case "starved".)"""
        now = time.monotonic()
        wall = now - self.started
        used: cpuclock.Usage | None
        if self.checked is None:   # the first look: /proc's counts start here (the cgroup's at the case's start)
            self.base, self.checked, self.answering = self._read(), now, cpuclock.own_waiting()
            counted = self.counted()
            used = cpuclock.Usage(counted if counted is not None else 0.0, 0.0) \
                if counted is not None or self.base is not None else None
            first = True
        else:
            used, first = self.usage(), False
        if now >= deadline + GRACE_SECONDS:
            if starved is not None and not starved:
                return Outcome(case.id, "timeout", seconds=wall, error={
                    "message": f"did not finish within {case.timeout:g} s (stopped: the submission's time ran out)"})
            if starved:
                return Outcome(case.id, "timeout", seconds=wall, cpu_seconds=used.cpu if used else None, error={
                    "reason": "starved", "message": (
                        f"stopped when the submission's time ran out, after {wall:.0f} s of wall time: the machine "
                        f"was too busy (it kept the grading waiting for a CPU longer than the budget may move)")})
            if used is not None and cpuclock.wall_verdict(now - self.checked, used.waiting) == "starved":
                return Outcome(case.id, "timeout", seconds=wall, cpu_seconds=used.cpu, error={
                    "reason": "starved", "message": (
                        f"stopped when the submission's time ran out, after {wall:.0f} s of wall time but only "
                        f"{used.cpu:.2f} s of CPU time: the machine was too busy (it waited {used.waiting:.0f} s "
                        f"for a CPU)")})
            return Outcome(case.id, "timeout", seconds=wall, error={
                "message": f"did not finish within {case.timeout:g} s (stopped: the submission's time ran out)"})
        if used is None:
            if first:   # no kernel accounting here: the wall clock is the case's clock
                return None if now < self.wake else Outcome(case.id, "timeout", seconds=wall, error={
                    "message": f"did not finish within {case.timeout:g} s (stopped)"})
            # the processes are gone: the answer or the crash is on its way, or never comes
            return Outcome(case.id, "timeout", seconds=wall, error={
                "message": f"did not finish within {case.timeout:g} s (stopped)"})
        if cpuclock.over(used.cpu, self.limit + GRACE_SECONDS):
            return Outcome(case.id, "timeout", seconds=wall, cpu_seconds=used.cpu, error={
                "message": f"did not finish within {case.timeout:g} s of CPU time (stopped)"})
        starved = cpuclock.wall_verdict(now - self.checked, used.waiting) == "starved"
        if now >= self.backstop and not starved:
            return Outcome(case.id, "timeout", seconds=wall, cpu_seconds=used.cpu, error={
                "message": f"did not finish within {cpuclock.WALL_FACTOR * case.timeout:g} s of wall time, "
                           f"having used {used.cpu:.2f} s of CPU time: it was waiting (sleep, input, a lock), "
                           f"not computing (stopped)"})
        # A cgroup counts every CPU the sandbox runs on at once: look again before they could spend what is left.
        left = max(0.02, (self.limit + GRACE_SECONDS - used.cpu) / (_CPUS if self.meter is not None else 1))
        self.wake = now + left if now >= self.backstop else min(self.backstop, now + left)
        return None


def _answer_tail(answer: Any, texts: dict[str, Any] | None = None) -> bytes:
    """The reply to an isolated-helper call after its seq: the answer packed (codec.pack: a letter, then marshal
    data) when it is plain data, which the child loads in microseconds; else ``"value":`` and its wire, the end
    of a JSON object. (A set's states go into `texts`, see known_args.)"""
    packed = codec.pack(answer, texts)
    if packed is not None:
        return packed
    return wire.json_text({"value": codec.encode(answer)})[1:].encode("utf-8")


def known_args(rest: bytes, texts: dict[str, Any]) -> list | None:
    """The arguments of a call (a Heard's rest: its frame after the seq) made of one or two states whose texts are
    in `texts`, as parsing its frame and decoding them would give, or None (then it is parsed). A* sends back the
    states the reference's next_states sent down (the child writes them with the very texts the parent made:
    codec.unpack) and its goal with every call.

    Why it is what parsing gives: the rest is exactly `"args":{"list":[A]},"kwargs":{"dict":[]}}` or the same
    with `A,B`, and A and B are each the whole text of one value (a kept text, or a text that parses alone as one
    JSON value, whole, which is then decoded and kept): so the frame is the runtime's JSON of a call with those
    arguments and no keywords, and a JSON value's text ends where its own brackets close, so the comma after A
    is the one between the two arguments. States are tuples of strs and ints (nothing in them can change, so
    each call may share one), of at most codec.KEPT_TEXT characters: far inside every bound of the decoder."""
    if not (rest.startswith(_ARGS_HEAD) and rest.endswith(_ARGS_TAIL)) \
            or len(rest) > 2 * codec.KEPT_TEXT + len(_ARGS_HEAD) + len(_ARGS_TAIL) + 1:
        return None
    try:
        inner = rest[len(_ARGS_HEAD):-len(_ARGS_TAIL)].decode("ascii")
    except UnicodeDecodeError:
        return None
    alone = texts.get(inner)
    if alone is not None:
        return [alone]
    at = inner.find("},{")
    while at != -1:
        first = texts.get(inner[:at + 1])
        if first is not None:
            second = texts.get(inner[at + 2:])
            if second is None:
                second = _state(inner[at + 2:], texts)
            return [first, second] if second is not None else None
        at = inner.find("},{", at + 1)
    return None


def _state(text: str, texts: dict[str, Any]) -> Any:
    """The state a text is the whole JSON of (kept in `texts` under it), or None."""
    if len(text) > codec.KEPT_TEXT:
        return None
    try:
        value = codec.decode(wire.parse_value(text))
    except (wire.FrameError, codec.CodecError):
        return None
    if type(value) is not tuple or not codec.frozen(value) or codec.plain_text(value) is None:
        return None
    codec.keep(texts, text, value)
    return value


def _reply_frame(seq: int, tail: bytes) -> bytes:
    """The frame answering call `seq`: its body is `{"seq":N,` and the reply's tail (_answer_tail), encoded once
    (kept encoded, a reply seen before costs no encoding). The seq comes first: the child matches the body's
    first bytes against the call it waits for before it reads anything else."""
    return wire.frame_of(b'{"seq":%d,%s' % (seq, tail))


def _oracle_bytes_problem(asked: int, allowed: int) -> str | None:
    """Why a case's isolated-helper calls are too much to parse and decode, or None: the count of calls alone
    would let each be a frame of tens of MB (every one parsed, its arguments decoded, before the reference)."""
    if asked > allowed:
        return f"sent the grader more than {allowed:,} bytes of isolated-helper calls in one case"
    return None


def _oracle_problem(name: str, isolate: Sequence[str], calls: int, allowed: int) -> str | None:
    """Why an isolated-helper call breaks the rules (the runtime itself never breaks them), or None."""
    if name not in isolate:
        return f"asked the grader for {name[:80]!r}, which this run does not isolate"
    if calls > allowed:
        return f"called the isolated helpers more than {allowed} times in one case"
    return None


def _broken_rule(case: CaseRequest, started: float, what: str) -> Outcome:
    return Outcome(case.id, "error", seconds=time.monotonic() - started, error={
        "type": "ProtocolError", "message": f"the submission's process {what}"})


class _ReferenceTooSlow(Exception):
    pass


class _Unreadable(Exception):
    """An isolated-helper call whose arguments the parent's codec refuses (the message says why)."""


def _bounded(call: Callable[[], Any], seconds: float) -> Any:
    """Run a trusted call for at most `seconds` of this thread's CPU time (alarm.bounded: an alarm, or off the
    main thread, as in a Dask worker, the ringer thread). CPU, not wall time: the child's arguments can make the
    reference compute, not wait, and a thread a busy machine keeps off its CPU computes nothing (at load 18-36 on
    2 cores one answer that took ~0.01 s of CPU outlasted its 1 s of wall, and int-tiles lost a search case the
    notebook answered right, "stopped while the reference answered": 3 gradings of 14)."""
    if seconds <= 0:
        raise _ReferenceTooSlow("the case's time ran out")

    def too_slow() -> _ReferenceTooSlow:
        return _ReferenceTooSlow(f"the reference took longer than {seconds:.2g} s of CPU time on these arguments")

    return bounded(call, seconds, too_slow, cpu=True)


@dataclass
class _Child:
    """A started, initialised (and confined) child, waiting for its notebook."""

    process: Jail
    request_fd: int
    reader: wire.FrameReader
    pids: PidsGroup | None
    scratch: str | None
    level: str
    facts: dict[str, Any]
    memory: MemoryGroup | None = None
    cpu: CpuGroup | None = None
    made: float = 0.0      # when its groups were made (monotonic): its start waited and computed from then on
    waited: float = 0.0    # the zygote's run-queue time while it started this child (and itself, if it was new)
    cpus: tuple[int, ...] = ()   # the CPUs it keeps to now (moved only by the zygote: Zygote.keep)


def memory_cgroup_bytes(isolation: Isolation, limits: ProcessLimits) -> int:
    """The whole sandbox's memory: the rubric's limit, plus the scratch where it is a tmpfs (its pages are
    memory charged to the sandbox)."""
    return (limits.memory_mb + (limits.disk_mb if isolation.namespaces else 0)) * 1024 * 1024


def _config(isolation: Isolation, limits: ProcessLimits, hide_paths: Sequence[str], scratch: str | None,
            pids: PidsGroup | None, group: MemoryGroup | None = None, cpu: CpuGroup | None = None,
            preload: Sequence[str] = (), cpus: Sequence[int] = ()) -> dict[str, Any]:
    """What the zygote's child needs to know: plain data, sent as JSON. `cpus`: where it starts (else _cpus())."""
    memory = limits.memory_mb * 1024 * 1024
    if isolation.namespaces:   # the scratch is a tmpfs: what it holds is memory, in the same budget
        memory = max(memory // 2, memory - limits.disk_mb * 1024 * 1024)
    return {
        "namespaces": isolation.namespaces, "grader_uid": os.geteuid(), "scratch": scratch,
        "protect": supervisor.protected_pids() if not isolation.namespaces and os.geteuid() != 0 else [],
        "scratch_bytes": limits.disk_mb * 1024 * 1024, "scratch_files": limits.files,
        "cgroup_procs": [each.procs for each in (pids, group, cpu) if each is not None], "hide": list(hide_paths),
        "cover": list(hide_paths), "preload": list(preload), "cpus": list(cpus) or _cpus(),
        "limits": {"memory_bytes": memory, "cpu_seconds": limits.cpu_seconds,
                   "file_bytes": min(limits.file_mb, limits.disk_mb) * 1024 * 1024, "open_files": limits.open_files,
                   "processes": limits.processes if pids is None else limits.processes + NPROC_ROOM}}


# Where a pids cgroup caps the sandbox (at PIDS_MAX), RLIMIT_NPROC stays only a backstop this far above it: at the
# same number the rlimit refused first, silently, and the group's count of refused forks (pids.events), which makes
# a fork bomb an incident (grader.incidents), stayed 0.
NPROC_ROOM = 64


# Set by a pool worker whose helper threads run on CPUs no worker keeps to (keep_children_to): the CPUs its
# children keep to (its own), and those of the thread that starts its spare children.
_CHILD_CPUS: list[int] = []
_STARTER_CPUS: set[int] = set()
# The processes of a loaded sandbox once settled: its runtime and the exercise's fork it makes ahead (runtime.serve).
FORKED_AHEAD = 2
SETTLE_SECONDS = 2.0   # waited for the fork made ahead: a few ms, more on a busy machine (else loaded again in turn)
# Set with them where the worker loads its next submission ahead on `starter` (Sandbox.load's `aside`): a spare then
# stays there once ready, and whoever takes it moves it where it is needed (_take_spare).
_SPARES_STAY = False


def keep_children_to(cpus: set[int], starter: set[int], preload: bool = False) -> None:
    """In a pool worker kept to `cpus` (executor.worker_cpus): every child keeps to them, whichever thread starts
    it, and the thread that starts spare children runs on `starter` (executor.aside_cpus), beside the child that
    grades a student rather than queued behind it on the worker's CPU. `preload`: the worker loads its next
    submission on `starter` too (executor._Inbox), so spares stay there when ready."""
    global _CHILD_CPUS, _STARTER_CPUS, _SPARES_STAY
    _CHILD_CPUS, _STARTER_CPUS, _SPARES_STAY = sorted(cpus), set(starter), preload and bool(cpus and starter)


def aside_cpus() -> list[int]:
    """The CPUs a submission is loaded on ahead (Sandbox.load's `aside`), or [] where the worker has none."""
    return sorted(_STARTER_CPUS) if _SPARES_STAY and _CHILD_CPUS else []


def _cpus() -> list[int]:
    """The CPUs the child keeps to: the worker's (keep_children_to), else this thread's (a pool worker's one CPU,
    executor.worker_cpus). The zygote, started ahead by the coordinator, has the coordinator's: it sets these in
    the child before anything runs there, so the runtime, its threads and every fork inherit them, and
    cpuclock.waits_by_choice (a fork's affinity against the worker's) sees the grader's choice, not the
    student's."""
    if _CHILD_CPUS:
        return list(_CHILD_CPUS)
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _starter_thread() -> None:
    """The spare starter thread's first act: keep to the CPUs keep_children_to gave it, if any."""
    if _STARTER_CPUS:
        try:
            os.sched_setaffinity(0, _STARTER_CPUS)
        except (OSError, ValueError):   # a CPU gone offline since: it stays with the worker
            pass


def _spawn(isolation: Isolation, limits: ProcessLimits, hide_paths: Sequence[str],
           preload: Sequence[str] = (), start_on: Sequence[int] = (), stay: bool = False) -> _Child:
    """Have the zygote fork a child, jailed where the machine allows, and wait until it is ready. `start_on`: the
    CPUs it starts on, where they are not the worker's (a spare, on the CPU no worker keeps to: _order_spare);
    once ready it is moved to the worker's (_cpus), before anything of a student's runs in it, unless it is to
    `stay` there (a worker that loads ahead: _take_spare moves it where its taker needs it)."""
    made = time.monotonic()
    scratch = None if isolation.namespaces else supervisor.make_temp_folder("submission-")
    pids = None
    if isolation.pids_root is not None:
        try:
            pids = acquire_group(isolation.pids_root)
        except OSError:
            pids = None
    memory = None
    if isolation.memory_root is not None:
        try:
            memory = acquire_memory_group(isolation.memory_root, memory_cgroup_bytes(isolation, limits))
        except OSError:
            memory = None   # RLIMIT_AS stays the backstop; the facts say no group held
    cpu = None
    if isolation.cpu_root is not None and (memory is None or not memory.v2):   # a v2 memory group counts CPU too
        try:
            cpu = acquire_cpu_group(isolation.cpu_root)
        except OSError:
            cpu = None   # the /proc clock applies; the facts say so
    request_read, request_write = os.pipe()
    response_read, response_write = os.pipe()
    # The child's descriptors 1 and 2 (the runtime captures what a case prints itself): never a file in its working
    # folder, which a case would list (rlimits mode's output.log) and whose size counted against its scratch.
    output = os.open(os.devnull, os.O_WRONLY)
    try:
        zygote = supervisor.zygote()
        queued = 0.0 if zygote.born >= made else zygote.queued()
        process = zygote.spawn(_config(isolation, limits, hide_paths, scratch, pids, memory, cpu, preload, start_on),
                               [request_read, response_write, output])
        waited = max(0.0, zygote.queued() - queued)
    except (SpawnError, OSError) as error:
        os.close(request_write)
        os.close(response_read)
        _release(pids, memory, cpu, scratch)
        raise SandboxError(f"cannot start the sandbox: {error}") from None
    finally:
        for fd in (output, request_read, response_write):
            os.close(fd)
    reader = wire.FrameReader(response_read)
    try:
        ready = reader.read(time.monotonic() + RUNTIME_SECONDS * 2)
        if ready.get("op") != "ready":
            raise wire.FrameError("not a ready frame")
        cpus = tuple(sorted(start_on)) if start_on else tuple(_cpus())
        if start_on and sorted(start_on) != _cpus() and not stay:
            zygote.keep(process.pid, _cpus())
            cpus = tuple(_cpus())
    except (wire.Timeout, wire.Closed, wire.FrameError, SpawnError) as error:
        process.kill()
        process.wait(timeout=5)
        process.close()
        os.close(request_write)
        os.close(response_read)
        _release(pids, memory, cpu, scratch)
        raise SandboxError(f"the sandbox did not start: {type(error).__name__}") from None
    facts = dict(found) if isinstance(found := ready.get("facts"), dict) else {}
    # Set here, never taken from the child: the limit in MB of the cgroup that holds the whole sandbox.
    facts["memory_cgroup"] = memory.limit >> 20 if memory is not None else None
    return _Child(process, request_write, reader, pids, scratch, str(ready.get("isolation", "unknown")), facts,
                  memory, cpu, made, waited, cpus)


# Spare children started ahead by sandboxes made with prefetch=True, by (isolation, limits, hidden paths).
_SPARES: dict[tuple, Any] = {}
_SPARES_LOCK = threading.Lock()
_SPARE_STARTER: Any = None


def _starter() -> Any:
    """The spare starter (one thread), made at its first use; called with _SPARES_LOCK held."""
    global _SPARE_STARTER
    if _SPARE_STARTER is None:
        from concurrent.futures import ThreadPoolExecutor
        _SPARE_STARTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spare-child",
                                            initializer=_starter_thread)
        atexit.register(_drop_spares)
    return _SPARE_STARTER


def _order_spare(key: tuple, isolation: Isolation, limits: ProcessLimits, hide_paths: Sequence[str],
                 preload: Sequence[str] = ()) -> None:
    with _SPARES_LOCK:
        if key in _SPARES:
            return
        # Started on the starter's CPU where it has one of its own (keep_children_to): the jail's making and the
        # runtime's start (~3 ms of CPU a Taoistic notebook) then run beside the worker's current child, not on its
        # CPU; ready, it is moved there (_spawn).
        _SPARES[key] = _starter().submit(_spawn, isolation, limits, list(hide_paths), tuple(preload),
                                         sorted(_STARTER_CPUS) if _CHILD_CPUS else [], _SPARES_STAY)


def _answering(isolate: Sequence[str], methods: Mapping[str, Any] | None) -> frozenset[tuple[str, str]]:
    """The helpers an exercise has the reference answer, each with how (a method's call: two exercises may
    isolate one method with different calls)."""
    return frozenset((name, repr((methods or {}).get(name))) for name in isolate)


def _later(task: Callable[..., Any], *args: Any) -> None:
    """Run `task` on the spare starter's thread, after what it already has to do (at the latest at exit:
    the thread's queue is drained before the interpreter ends, so nothing is left behind)."""
    with _SPARES_LOCK:
        _starter().submit(task, *args)


def settle() -> None:
    """Wait until what was handed to the spare starter so far is done (the teardowns of closed sandboxes)."""
    with _SPARES_LOCK:
        starter = _SPARE_STARTER
    if starter is not None:
        starter.submit(lambda: None).result()


def _forget_inherited_spares() -> None:
    """In a forked process: the parent's spare children and their starter thread are not ours."""
    global _SPARE_STARTER, _SPARES_LOCK
    _SPARES.clear()
    _SPARE_STARTER = None
    _SPARES_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_inherited_spares)


def _take_spare(key: tuple, preload: Sequence[str] = (), cpus: Sequence[int] = ()) -> _Child | None:
    """The spare started for `key`, if it started and has what `preload` asks for (the zygote was asked for
    it before the spare's fork), kept to `cpus` (else the worker's: _cpus) where it is not yet; else None, and a
    spare without it is discarded, off the critical path."""
    with _SPARES_LOCK:
        future = _SPARES.pop(key, None)
    if future is None:
        return None
    try:
        child = future.result(timeout=RUNTIME_SECONDS * 3)
    except Exception:  # a spare that failed to start is simply not used
        return None
    if child.process.poll() is not None:
        _discard(child)
        return None
    if not set(preload) <= set(child.process.preload):
        _later(_discard, child)
        return None
    wanted = tuple(sorted(cpus)) if cpus else tuple(_cpus())
    if wanted and child.cpus != wanted:   # a spare that stayed where it started (_SPARES_STAY): one thread still
        try:
            supervisor.zygote().keep(child.process.pid, list(wanted))
        except (SpawnError, OSError):
            _later(_discard, child)
            return None
        child.cpus = wanted
    return child


def _discard(child: _Child) -> None:
    group = child.pids or child.cpu or child.memory
    if _STARTER_CPUS and _CHILD_CPUS and group is not None:   # its exit runs beside the worker, not on its CPU
        group.move_members(_STARTER_CPUS)
    child.process.kill()
    child.process.wait(timeout=5)
    child.process.close()
    for fd in (child.request_fd, child.reader.fd):
        try:
            os.close(fd)
        except OSError:
            pass
    _release(child.pids, child.memory, child.cpu, child.scratch)


def _release(pids: PidsGroup | None, memory: MemoryGroup | None, cpu: CpuGroup | None, scratch: str | None) -> None:
    """Give back what a child held: its cgroups (what is left in them is killed) and its scratch folder."""
    if pids is not None:
        release_group(pids)
    if memory is not None:
        release_memory_group(memory)
    if cpu is not None:
        release_cpu_group(cpu)
    if scratch:
        remove_tree(scratch)


def _drop_spares() -> None:
    with _SPARES_LOCK:
        futures = list(_SPARES.values())
        _SPARES.clear()
    for future in futures:
        try:
            child = future.result(timeout=RUNTIME_SECONDS)
        except Exception:
            continue
        _discard(child)


def _exit_text(status: Any) -> str:
    if not isinstance(status, int):
        return "the submission's process died"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        hint = {"SIGKILL": " (killed: out of memory or time?)", "SIGSEGV": " (crashed, e.g. infinite recursion)",
                "SIGXCPU": " (CPU time limit)"}.get(name, "")
        return f"the submission's process died from {name}{hint}"
    return f"the submission's process exited with status {status} (os._exit or a crash)"
