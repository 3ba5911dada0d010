"""What a notebook can make run inside the pristine check, which then says yes while the next exercise would see
what the last one left: graded for real (the correct Taoistic notebook plus one cell), the verdicts must be those of
fresh forks.

Each attack cell wraps the notebook's exercise functions: called by a case, each first waits for any thread of the
student's and runs a collection, then answers None (every case of that exercise lost) when `_LEFT`, a list a fresh
fork of the load always finds empty, holds anything. Each attack fills `_LEFT` from code that runs inside an
exercise's check, after the check read what the change would show, so that on its own the next exercise is graded
as if it had run in a process that was not pristine. The grader must then give the notebook full marks: the check
says no (a fresh fork) or nothing of the student's runs inside it at all.

- a one-shot timer whose handler fires after the walk, changes walked state, and puts back the runtime's handler
  before the check reads the handlers (its timer spent by then: nothing armed is left to see);
- a finalizer of cyclic garbage the exercise left: no collection in the check, the next exercise's first one;
- a thread started by code the check runs (numpy.geterr replaced; a numpy scalar of the student's class, whose
  tobytes the walk called; a key of a class's namespace whose __eq__ a lookup of `__module__` called), which acts
  once the check is over (the company was read before the check).
"""

from __future__ import annotations

import pytest

from taoistic_attack import REQUEST, graded, lost, wrapped

WATCH = '''
import _thread, gc as _gc, functools as _functools, signal as _signal, sys as _sys, time as _time
_LEFT = []   # filled only inside a check (a fresh fork of the load finds it empty)


def _in_check(frame=None):
    frame = frame or _sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "still_pristine":
            return True
        frame = frame.f_back
    return False
''' + REQUEST + '''

def _act_after_the_check(what):
    """A thread that waits while the process is inside its check, then fills _LEFT."""
    if not _in_check() or _thread._count():
        return
    main = _thread.get_ident()

    def later():
        while _in_check(_sys._current_frames().get(main)):
            _time.sleep(0.0002)
        _LEFT.append(what)
    _thread.start_new_thread(later, ())


_KEPT = _setup()   # what the attack keeps where the walk sees it


def _watched(function):
    @_functools.wraps(function)
    def call(*args, **kwargs):
        _KEPT   # noqa: B018 - so the attack's objects stay with the notebook
        top = _sys._getframe(1).f_code.co_name == "<module>"   # called by a case, not by another function
        if top:
            while _thread._count():   # a thread of the notebook's is still on its way
                _time.sleep(0.0002)
            _gc.collect()
        if _LEFT:
            return None
        if top:
            _arm()
        return function(*args, **kwargs)
    return call


''' + wrapped("_watched")

NOTHING = '''
def _setup():
    return None


def _arm():
    return None
'''

# Each attack defines _setup (run once at load: what it returns stays with the notebook) and _arm (run by each
# case's call): the watch above uses them.
ATTACKS = {
    # Ticks every 20 us (re-armed by its handler) until one lands in the process check before it reads the handlers.
    "timer": '''
def _setup():
    return None


def _tick(runtime, signum, frame):
    while frame is not None:
        if frame.f_code.co_name == "_process" and "handlers" not in frame.f_locals:
            _LEFT.append("timer")
            _signal.signal(_signal.SIGALRM, runtime)
            return
        frame = frame.f_back
    _signal.setitimer(_signal.ITIMER_REAL, 0.00002)


def _arm():
    runtime = _signal.getsignal(_signal.SIGALRM)
    if type(runtime) is not _functools.partial:
        _signal.signal(_signal.SIGALRM, _functools.partial(_tick, runtime))
        _signal.setitimer(_signal.ITIMER_REAL, 0.00002)
''',
    "finalizer": '''
def _setup():
    return None


class _Garbage:
    def __init__(self, request):
        self.request, self.me = request, self

    def __del__(self):
        if _request() is not self.request:
            _LEFT.append("finalizer")


def _arm():
    _Garbage(_request())
''',
    "numpy.geterr": '''
import numpy as _np


def _setup():
    real = _np.geterr

    def sneaky():
        _act_after_the_check("numpy.geterr")
        return real()
    _np.geterr = sneaky
    return _np


def _arm():
    return None
''',
    "numpy scalar": '''
import numpy as _np


class _Scalar(_np.float64):
    def tobytes(self, *args):
        _act_after_the_check("tobytes")
        return _np.float64.tobytes(self, *args)


def _setup():
    return _Scalar(1.0)


def _arm():
    return None
''',
    "class namespace key": '''
class _Key:
    def __hash__(self):
        return hash("__module__")

    def __eq__(self, other):
        _act_after_the_check("__eq__")
        return self is other


def _setup():
    return type("_Odd", (), {_Key(): 1})


def _arm():
    return None
''',
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    return graded(tmp_path_factory.mktemp("pristine-attacks"),
                  {name: attack + WATCH for name, attack in {"nothing": NOTHING, **ATTACKS}.items()})


@pytest.mark.parametrize("name", ["nothing", *sorted(ATTACKS)])
def test_what_the_check_runs_cannot_leave_anything_for_the_next_exercise(results, name):
    """"nothing": the watch alone, which costs no point (each attack's lost points are the attack's)."""
    result = results[name]
    assert lost(result) == {}
    assert result.total == result.max_total == 30
