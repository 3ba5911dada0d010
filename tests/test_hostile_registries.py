"""What an exercise can leave in the interpreter's and the standard library's registries for the next exercise its
fork serves, where no object of the notebook's reaches it: a codec search function (`codecs.register`), a function
run at every fork (`os.register_at_fork`), an entry of `sys.path_importer_cache`, of `linecache.cache`, of
`copyreg.dispatch_table`, a `weakref.finalize` (its registry holds the arguments). Graded for real (the correct
Taoistic notebook plus one cell), as tests/test_hostile_hooks.py: each case's call first looks whether what is left
there came from another exercise (the runtime's request it was left under is not its own), answers None if so
(every case of that exercise lost), then leaves it under its own request. A fresh fork has nothing left, so the
notebook keeps full marks exactly when the fork's check saw the change and took a fresh fork
(pristine._registries).
"""

from __future__ import annotations

import pytest

from taoistic_attack import graded_ways, lost

# The cell's own names, defined before the carrying wrapper (a class for the copyreg and weakref registries to key
# on; at the load, one finalize: the registry's first registers its atexit function, which the check counts, and
# the finalize way's look reads it, so that the load keeps it).
SETUP = '''
import codecs as _codecs, copyreg as _copyreg, functools as _functools, linecache as _linecache, os as _os
import weakref as _weakref


class _Carried:
    pass


_AT_LOAD = _weakref.finalize(_Carried, int)


def _codec(name, seen):
    if name.replace("-", "_") != "carried_by_a_codec":
        return None
    info = _codecs.CodecInfo(None, None, name="carried_by_a_codec")
    info.seen = seen
    return info


def _forked():
    """What every function run at a fork left in `box` (the hook finds it in its caller's frame: this one)."""
    box = []
    pid = _os.fork()
    if pid == 0:
        _os._exit(0)
    _os.waitpid(pid, 0)
    return box


def _at_fork(seen):
    try:
        _sys._getframe(1).f_locals["box"].append(seen)
    except Exception:
        pass
'''

WAYS = {
    "codec search function": ("try:\n        left = _codecs.lookup('carried_by_a_codec')\n"
                              "    except LookupError:\n        return False\n"
                              "    return left.seen is not request",
                              "_codecs.register(_functools.partial(_codec, seen=request))"),
    "function run at fork": ("return any(seen is not request for seen in _forked())",
                             "_os.register_at_fork(before=_functools.partial(_at_fork, request))"),
    "path importer cache": ("left = _sys.path_importer_cache.get('carried')\n"
                            "    return left is not None and left is not request",
                            "_sys.path_importer_cache['carried'] = request"),
    "linecache entry": ("left = _linecache.cache.get('carried')\n"
                        "    return left is not None and left[3] is not request",
                        "_linecache.cache['carried'] = (0, None, [], request)"),
    "copyreg dispatch table": ("left = _copyreg.dispatch_table.get(_Carried)\n"
                               "    return left is not None and left.args[0] is not request",
                               "_copyreg.dispatch_table[_Carried] = _functools.partial(print, request)"),
    "weakref finalize": ("_AT_LOAD   # (so the load's finalize is kept)\n"
                         "    return any(info.args and info.args[0] is not request\n"
                         "               for info in _weakref.finalize._registry.values())",
                         "_weakref.finalize(_Carried, print, request)"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    return graded_ways(tmp_path_factory.mktemp("registries"), WAYS, SETUP)


@pytest.mark.parametrize("name", sorted(WAYS))
def test_what_an_exercise_leaves_in_a_registry_never_reaches_the_next(results, name):
    result = results[name]
    assert lost(result) == {}
    assert result.total == result.max_total == 30
