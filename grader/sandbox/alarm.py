"""Time limits for code this process runs itself (a self-check in the student's kernel, mutants of the reference,
the reference's answers and a course's checks on values a child chose: `bounded`), in wall or thread CPU time.

A child process can be killed; code in our own process can only be interrupted, by an exception raised from a
SIGALRM handler. One alarm is not enough: when it rings while a garbage-collector finalizer (`__del__`, a
ResourceWarning of an unclosed file) or a bare `except:` is running, the exception is swallowed, and a search
that never ends then runs until memory runs out. So the alarm rings again every REPEAT_SECONDS until the block
ends, `expired` records that the limit was reached even when every exception was swallowed, and the handler
never raises inside the grader's own code, so the limit is always taken down and the previous handler put back.
Nor does it raise while the interpreter's hook for a lost or uncaught exception runs (`sys.unraisablehook`,
`sys.excepthook`: pytest's, IPython's): a repeat ringing there broke the hook reporting the first lost
exception; the next ring, 50 ms later, reaches the student's code again.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module under `signal`, without its enum wrappers
import functools
import os
import signal
import sys
import threading
import time
from pathlib import Path
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import TypeVar

T = TypeVar("T")

REPEAT_SECONDS = 0.05


def _package_folders() -> tuple[str, ...]:
    """The package's folder as it was imported and as resolved, each ending in a separator. A frame names its
    file by the path its module was imported by, which a symlinked install does not resolve; and a course kept
    beside the package under a longer name (/x/grader-course) is not the grader."""
    here = Path(os.path.abspath(__file__)).parent.parent
    return tuple(dict.fromkeys(os.path.join(str(folder), "") for folder in (here, here.resolve())))


PACKAGE_FOLDERS = _package_folders()


def _code_of(hook: object) -> object:
    """The code object a hook runs (through functools.partial and bound methods), or None."""
    while isinstance(hook, functools.partial):
        hook = hook.func
    hook = getattr(hook, "__func__", hook)
    return getattr(hook, "__code__", None)


def _in_hook(frame: FrameType | None) -> bool:
    """Whether an exception hook is running somewhere on this stack."""
    hooks = {code for code in (_code_of(sys.unraisablehook), _code_of(sys.excepthook)) if code is not None}
    while frame is not None:
        if frame.f_code in hooks:
            return True
        frame = frame.f_back
    return False


def can_interrupt() -> bool:
    """Only the main thread takes signals, and only where the platform has interval timers."""
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


class TimeLimit:
    """`with TimeLimit(seconds, CaseTimeout) as limit:` raises `stop()` in the code the block runs once `seconds`
    have passed, and again every REPEAT_SECONDS while it still runs; `limit.expired` says so afterwards.

    Off the main thread it does nothing (`limit.armed` is False): signals cannot reach other threads.
    With `cpu`, the limit is this thread's CPU time: each ring (the first after `seconds` of wall time) reads the
    thread's clock and lets the code run on while it has used less (a busy machine's waiting costs it nothing).
    """

    def __init__(self, seconds: float, stop: Callable[[], BaseException], *, cpu: bool = False):
        self.seconds = max(seconds, 0.001)
        self.stop = stop
        self.expired = False
        self.armed = False
        self.cpu = cpu
        self._cpu_from = 0.0
        self._previous: signal._HANDLER = None

    def __enter__(self) -> TimeLimit:
        if can_interrupt():
            if self.cpu:
                self._cpu_from = time.thread_time()
            # The C function, not signal.signal: its enum conversions cost five times the call, and the parent
            # bounds every reference answer to an isolated-helper call (thousands per case) with one of these.
            self._previous = _signal.signal(signal.SIGALRM, self._ring)
            self.armed = True
            signal.setitimer(signal.ITIMER_REAL, self.seconds, REPEAT_SECONDS)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.disarm()

    def disarm(self) -> None:
        """Stop the alarm and put the previous handler back (idempotent; a late ring here raises nothing)."""
        if self.armed:
            self.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            _signal.signal(signal.SIGALRM, signal.SIG_DFL if self._previous is None else self._previous)

    def _ring(self, signum: int, frame: FrameType | None) -> None:
        if self.cpu and time.thread_time() - self._cpu_from < self.seconds:
            return     # the wall time passed, not the CPU time: the next ring looks again
        self.expired = True
        if self.armed and not (frame is not None and frame.f_code.co_filename.startswith(PACKAGE_FOLDERS)) \
                and not _in_hook(frame):
            raise self.stop()


class Rang(BaseException):
    """What ThreadLimit raises in the thread it limits (a class: an asynchronous exception carries no message).
    A BaseException, so that an `except Exception` of the limited code does not take it."""


def _raise_in(thread: int, kind: type[BaseException] | None) -> None:
    """Have `thread` raise `kind` at its next bytecode boundary (None: take back one not raised yet)."""
    import ctypes
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(kind) if kind else None)


class ThreadLimit:
    """TimeLimit for a thread that takes no signals (a Dask worker runs each grading in a thread of its pool):
    one ringer thread (_Ringer, shared by every limit of the process) has the limited thread raise Rang once
    `seconds` have passed, and again every REPEAT_SECONDS while the block still runs; `expired` says so
    afterwards. The trusted caller calls `disarm` (which takes back a ring not raised yet, and may itself meet one
    raised just before: call it until it returns) and turns Rang into its own exception. Without it, the parent's
    answer to a child's isolated-helper call had no limit in a Dask worker: an `inversions` of 20,000 tiles the
    child chose took 20 s of the worker's CPU, and of 200,000 (within the codec's bounds) most of an hour, for
    every different board (session 18). A timer thread per limit cost 60-100 us of CPU a call; the ringer's
    lock and wake-up cost a few. With `cpu`, the limit is the limited thread's CPU time (read by the ringer
    through the thread's clock), as TimeLimit's."""

    def __init__(self, seconds: float, *, cpu: bool = False) -> None:
        self.seconds = max(seconds, 0.001)
        self.expired = False
        self.thread = threading.get_ident()
        self.clock = time.pthread_getcpuclockid(self.thread) if cpu else None
        self.cpu_from = time.clock_gettime(self.clock) if self.clock is not None else 0.0

    def short(self) -> bool:
        """Whether a CPU limit's thread has used less than its seconds (a wall-time limit never is)."""
        if self.clock is None:
            return False
        try:
            return time.clock_gettime(self.clock) - self.cpu_from < self.seconds
        except OSError:       # the thread is gone: nothing left to limit
            return False

    def arm(self) -> ThreadLimit:
        _RINGER.add(self, time.monotonic() + self.seconds)
        return self

    def disarm(self) -> None:
        """Stop ringing; a ring not raised yet is taken back (idempotent). Called in the limited thread."""
        _RINGER.remove(self)


class _Ringer:
    """The thread that rings every armed ThreadLimit when it is due, under one lock with add and remove, so no
    ring comes after remove has returned."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._due: dict[ThreadLimit, float] = {}
        self._thread: threading.Thread | None = None

    def add(self, limit: ThreadLimit, at: float) -> None:
        with self._condition:
            sooner = not self._due or at < min(self._due.values())
            self._due[limit] = at
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="puzzle-grader-ringer", daemon=True)
                self._thread.start()
            elif sooner:
                self._condition.notify()

    def remove(self, limit: ThreadLimit) -> None:
        with self._condition:
            if self._due.pop(limit, None) is not None:
                _raise_in(limit.thread, None)

    def _run(self) -> None:
        with self._condition:
            while True:
                now = time.monotonic()
                for limit, at in list(self._due.items()):
                    if at <= now and limit.short():
                        self._due[limit] = now + REPEAT_SECONDS
                    elif at <= now:
                        limit.expired = True
                        _raise_in(limit.thread, Rang)
                        self._due[limit] = now + REPEAT_SECONDS
                earliest = min(self._due.values(), default=None)
                self._condition.wait(None if earliest is None else max(0.0, earliest - time.monotonic()))


_RINGER = _Ringer()


def bounded(call: Callable[[], T], seconds: float, too_slow: Callable[[], Exception], *, cpu: bool = False) -> T:
    """call(), for at most `seconds` (of this thread's CPU time, with `cpu`): past them it raises too_slow().

    For trusted code on values the student chose (the reference answering a child's call, a course's check on a
    decoded answer). An alarm where this thread takes signals; elsewhere (a Dask worker's pool thread) the ringer
    has it raise Rang, which becomes too_slow(). Either repeats until the call ends: one rung inside a finalizer,
    or caught by an `except Exception`, would have let it run on."""
    if not can_interrupt():
        return _bounded_in_thread(call, seconds, too_slow, cpu)
    with TimeLimit(seconds, too_slow, cpu=cpu) as limit:
        answer = call()
    if limit.expired:
        raise too_slow()
    return answer


def _bounded_in_thread(call: Callable[[], T], seconds: float, too_slow: Callable[[], Exception], cpu: bool) -> T:
    limit = ThreadLimit(seconds, cpu=cpu)
    answer: T | None = None
    try:
        limit.arm()
        answer = call()
    except Rang:
        pass
    finally:
        while True:   # a ring raised in here, before disarm took the rest back, is taken as the limit's too
            try:
                limit.disarm()
                break
            except Rang:
                continue
    if limit.expired:
        raise too_slow()
    return answer  # type: ignore[return-value]
