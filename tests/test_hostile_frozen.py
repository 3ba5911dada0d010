"""Garbage an exercise hides from the collector (gc.freeze) never hands its values to the next exercise of the fork.

The pristine check collects the young generations and says no where an exercise left garbage (its finalizers would
run in the next exercise). gc.freeze() moves everything, garbage included, where no collection looks: the check
found nothing, the fork served the next exercise, and that one's gc.unfreeze() and gc.collect() ran the finalizer,
which handed it what the exercise before it saw. Graded for real (the correct Taoistic notebook plus one cell): each
case's call first unfreezes and collects, looks whether a finalizer gave it a request that is not its own exercise's
(answers None if so: every case of that exercise lost), then leaves a cycle holding its own request and freezes it.
A fresh fork has none, so the notebook keeps full marks exactly when the check saw the freeze (pristine.freeze).
"""

from __future__ import annotations

from pathlib import Path

from taoistic_attack import REQUEST, graded, lost, wrapped

CARRY = '''
import functools as _functools, gc as _gc, sys as _sys

_HANDED = []


class _Keeper:
    def __init__(self, request):
        self.request, self.me = request, self    # a cycle: only a collection frees it
    def __del__(self):
        _HANDED.append(self.request)
''' + REQUEST + '''

def _carried(function):
    @_functools.wraps(function)
    def call(*args, **kwargs):
        if _sys._getframe(1).f_code.co_name == "<module>":   # called by a case, not by another function
            request = _request()
            _gc.unfreeze()
            _gc.collect()
            if any(handed is not request for handed in _HANDED):
                return None
            _Keeper(request)
            _gc.freeze()
        return function(*args, **kwargs)
    return call


''' + wrapped("_carried")


def test_what_an_exercise_freezes_never_reaches_the_next(tmp_path: Path):
    result = graded(tmp_path, {"frozen": CARRY}, jobs=1)["frozen"]
    assert lost(result) == {}
    assert result.total == result.max_total == 30
