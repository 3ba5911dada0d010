"""pristine.check: nothing of the student's runs inside the check after it read what that code could change, or it
says no. Each test runs in a fork of this process, single-threaded as an exercise's fork (test_pristine_files), with
a small loaded module; `take` stands in for the runtime's snapshot, `during` for a library function of the student's
that the check runs before its walk (numpy.geterr replaced)."""

from __future__ import annotations

import builtins
import gc
import os
import resource
import signal
import threading
import types
from typing import Any

from grader.sandbox import pristine
from test_pristine_files import in_a_fork


def _loaded(files: pristine.Files) -> tuple[types.ModuleType, Any, Any, Any]:
    """The module, its snapshot function, the load's snapshot and the process state as the fork starts. The fork
    drops the test process's collector callbacks, which no sandbox has: Hypothesis's, once an earlier test file ran
    a property, rebinds two globals of one of its modules at every collection, a library module's binding the
    check rightly says no to (the whole suite failed 10 of these tests, each passing alone)."""
    gc.callbacks.clear()
    module = types.ModuleType("__main__x")
    exec("X = [1]\ndef f():\n    return X\n", module.__dict__)  # noqa: S102 - the notebook's code
    roots = [module.__dict__, builtins.__dict__]
    leaves = pristine.leaves(roots, homes={"__main__x"})

    def take(settle: Any = None) -> Any:
        return pristine.snapshot(roots, homes={"__main__x"}, skip=leaves, settle=settle)
    before = take()
    gc.collect()   # what the test process left is no exercise's garbage
    pristine.freeze()   # as the grader's own (what the check compares the frozen objects with)
    return module, take, before, pristine.process(files=files)


@in_a_fork
def test_a_process_as_it_was_is_pristine_and_its_signal_mask_is_left_as_it_was(files):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    module, take, before, started = _loaded(files)
    assert pristine.check(before, take, started, files)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == {signal.SIGUSR2}
    module.X.append(2)
    assert not pristine.check(before, take, started, files)


@in_a_fork
def test_a_signal_that_comes_during_the_check_waits_for_its_end_and_makes_it_say_no(files):
    handled: list[str] = []
    signal.signal(signal.SIGUSR1, lambda *_: handled.append("handled"))
    _, take, before, started = _loaded(files)

    def during(settle: Any) -> Any:
        os.kill(os.getpid(), signal.SIGUSR1)
        handled.append("sent")
        return take(settle)
    assert not pristine.check(before, during, started, files)
    assert handled == ["sent", "handled"]
    assert pristine.check(before, take, started, files)   # nothing waiting any more


@in_a_fork
def test_garbage_an_exercise_left_makes_the_check_say_no_once_collected(files):
    _, take, before, started = _loaded(files)
    finalized: list[int] = []

    class Cycle:
        def __del__(self) -> None:
            finalized.append(1)
    cycle = Cycle()
    cycle.me = cycle   # type: ignore[attr-defined]
    del cycle
    assert not pristine.check(before, take, started, files)
    assert finalized == [1]
    assert pristine.check(before, take, started, files)


@in_a_fork
def test_a_thread_started_by_what_the_check_runs_makes_it_say_no(files):
    _, take, before, started = _loaded(files)
    stop = threading.Event()

    def during(settle: Any) -> Any:
        threading.Thread(target=stop.wait, daemon=True).start()
        return take(settle)
    try:
        assert not pristine.check(before, during, started, files)
    finally:
        stop.set()


@in_a_fork
def test_a_numpy_scalar_of_a_python_class_is_not_read_through_its_own_methods(files):
    numpy = __import__("numpy")
    calls: list[int] = []

    class Scalar(numpy.float64):
        def tobytes(self, *args: Any) -> bytes:
            calls.append(1)
            return bytes(numpy.float64.tobytes(self, *args))
    module, take, before, started = _loaded(files)
    module.S = Scalar(1.0)   # type: ignore[attr-defined]
    assert not pristine.check(before, take, started, files)
    assert calls == []


@in_a_fork
def test_a_class_whose_namespace_holds_a_key_of_its_own_is_not_looked_up_through_it(files):
    calls: list[int] = []

    class Key:
        def __hash__(self) -> int:
            return hash("__module__")

        def __eq__(self, other: object) -> bool:
            calls.append(1)
            return self is other
    module, take, before, started = _loaded(files)
    module.Odd = type("Odd", (), {Key(): 1})   # type: ignore[attr-defined]
    calls.clear()   # type() looked up its own names in that namespace
    assert not pristine.check(before, take, started, files)
    assert calls == []


@in_a_fork
def test_os_environs_own_attributes_holding_a_key_of_its_own_are_not_looked_up_through_it(files):
    """The process state reads os.environ's mapping from its attributes, after the walk: a key there that shares
    the mapping's name's hash had its __eq__ run by that lookup."""
    calls: list[int] = []

    class Key:
        def __hash__(self) -> int:
            return hash("_data")

        def __eq__(self, other: object) -> bool:
            calls.append(1)
            return self is other
    _, take, before, started = _loaded(files)
    assert pristine.check(before, take, started, files)   # the environment as it was: the same copy, read again
    attributes = vars(os.environ)
    data = attributes.pop("_data")
    attributes[Key()] = 1
    attributes["_data"] = data   # now probed after the key of the student's
    calls.clear()
    assert not pristine.check(before, take, started, files)
    assert calls == []


@in_a_fork
def test_a_namespace_changed_and_put_back_as_it_was_is_pristine_and_a_change_is_not(files):
    """The check reads a dict's version tag where the interpreter keeps one (pristine._tag_reader), and its
    entries where the tag moved: a value rebound and bound back again is the same dict, a new value is not."""
    assert pristine._TAG_READ is not None or __import__("sys").version_info[:2] != (3, 11)
    module, take, before, started = _loaded(files)
    first = module.X
    module.X = [1]
    module.X = first
    assert pristine.check(before, take, started, files)
    assert pristine.check(before, take, started, files)   # the tag read again is the one kept
    module.X = [1]
    assert not pristine.check(before, take, started, files)
    module.X = first
    assert pristine.check(before, take, started, files)


@in_a_fork
def test_hooks_no_name_of_sys_shows_and_exit_functions_make_it_say_no(files):
    """An exercise's async generator hooks (a closure holding what its cases saw), coroutine origin depth or atexit
    function reached the next exercise the fork served: sys.get_asyncgen_hooks().firstiter.__defaults__ gave it back,
    atexit._run_exitfuncs ran it there."""
    import atexit
    import sys
    _, take, before, started = _loaded(files)
    seen = ["a hidden board"]
    assert pristine.check(before, take, started, files)
    for change, undo in ((lambda: sys.set_asyncgen_hooks(firstiter=lambda agen, kept=seen: None),
                          lambda: sys.set_asyncgen_hooks(firstiter=None)),
                         (lambda: sys.set_asyncgen_hooks(finalizer=lambda agen, kept=seen: None),
                          lambda: sys.set_asyncgen_hooks(finalizer=None)),
                         (lambda: sys.set_coroutine_origin_tracking_depth(7),
                          lambda: sys.set_coroutine_origin_tracking_depth(0))):
        change()
        assert not pristine.check(before, take, started, files)
        undo()
        assert pristine.check(before, take, started, files)
    atexit.register(seen.append, "left")
    assert not pristine.check(before, take, started, files)
    atexit.unregister(seen.append)   # its count stays: a fork that ever held one is not taken again (the safe side)
    assert not pristine.check(before, take, started, files)


@in_a_fork
def test_garbage_that_a_collection_of_the_exercise_moved_to_the_oldest_generation_is_found(files):
    _, take, before, started = _loaded(files)

    class Cycle:
        pass
    kept = [Cycle()]
    kept[0].me = kept[0]   # type: ignore[attr-defined]
    gc.collect(1)   # survivors of the two young generations go to the oldest
    assert gc.get_objects(2)
    del kept
    assert not pristine.check(before, take, started, files)
    assert pristine.check(before, take, started, files)


@in_a_fork
def test_what_an_exercise_leaves_in_a_registry_makes_it_say_no_and_taken_back_yes(files):
    """The interpreter's codec search functions and functions run at a fork, and the standard library's registries
    (sys.path_importer_cache, linecache.cache, copyreg's, weakref.finalize's): a closure or an entry left there came
    back to the next exercise the fork served. What is taken back (the very objects again) is as it was."""
    import codecs
    import copyreg
    import linecache
    import sys
    import weakref
    class Kept:
        pass
    weakref.finalize(Kept, int)   # the registry's first registers an atexit function (counted: see above)
    _, take, before, started = _loaded(files)
    seen = ["a hidden board"]
    made: list[Any] = []

    def search(name: str, kept: list[str] = seen) -> None:
        return None
    for change, undo in (
            (lambda: codecs.register(search), lambda: codecs.unregister(search)),
            (lambda: sys.path_importer_cache.__setitem__("left", seen),
             lambda: sys.path_importer_cache.pop("left")),
            (lambda: linecache.cache.__setitem__("left", (0, None, seen, "left")), lambda: linecache.cache.pop("left")),
            (lambda: copyreg.pickle(Kept, lambda k, kept=seen: (Kept, ())), lambda: copyreg.dispatch_table.pop(Kept)),
            (lambda: copyreg.add_extension("left", "x", 4321), lambda: copyreg.remove_extension("left", "x", 4321)),
            (lambda: made.append(weakref.finalize(Kept, seen.append, "left")), lambda: made.pop().detach())):
        change()
        assert not pristine.check(before, take, started, files)
        undo()
        assert pristine.check(before, take, started, files)
    cache = linecache.cache
    linecache.cache = dict(cache)   # an equal registry, but another: what a later exercise adds goes there
    assert not pristine.check(before, take, started, files)
    linecache.cache = cache
    assert pristine.check(before, take, started, files)
    os.register_at_fork(after_in_child=lambda kept=seen: None)   # no way to take one back
    assert not pristine.check(before, take, started, files)


@in_a_fork
def test_every_kind_of_rlimit_an_exercise_changes_makes_it_say_no_and_each_is_asked_once(files):
    """The check reads each kind of rlimit once (a name that is another's alias, Linux's RLIMIT_OFILE, cost a system
    call more at every check), and a change to any of them, by any of its names, makes it say no."""
    assert len(set(pristine._RLIMITS)) == len(pristine._RLIMITS)
    _, take, before, started = _loaded(files)
    for name in sorted(name for name in dir(resource) if name.startswith("RLIMIT_")):
        kind = getattr(resource, name)
        assert kind in pristine._RLIMITS, name
        soft, hard = resource.getrlimit(kind)
        if soft == resource.RLIM_INFINITY:
            changed = 1 << 40 if hard == resource.RLIM_INFINITY else hard - 1
        else:
            changed = soft - 1 if soft > 0 else 1
        if changed == soft or not (hard == resource.RLIM_INFINITY or 0 <= changed <= hard):
            continue   # (a soft and hard limit of 0: nothing an unprivileged exercise could change either)
        resource.setrlimit(kind, (changed, hard))
        assert not pristine.check(before, take, started, files), name
        resource.setrlimit(kind, (soft, hard))
        assert pristine.check(before, take, started, files), name


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@in_a_fork
def test_an_exercise_that_froze_objects_makes_it_say_no_and_a_collection_of_its_own_does_not(files):
    """gc.freeze() puts an exercise's objects, garbage included, where no collection looks (the next exercise of the
    fork could unfreeze and collect them, and a finalizer hand it what this one saw): the check says no whatever was
    frozen, garbage or live objects only. Told by the grader's young canary leaving the young generations, not by the
    permanent generation's count (a walk of all of it, the load's ~100,000 objects in a jail: 1.7 ms a check). A
    collection of the exercise's own moves the canary to an older young generation, and the check still says yes;
    gc.unfreeze() puts the grader's frozen garbage canary where the check's own collection frees it: no."""
    _, take, before, started = _loaded(files)
    assert pristine.check(before, take, started, files)
    held: list[Any] = []
    for leave in (_Cycle, lambda: held.append([1])):   # garbage, then a live object only
        leave()
        gc.freeze()
        assert not pristine.check(before, take, started, files)
        pristine.freeze()   # the grader's own again (a real fork would be gone): the check sees nothing more
        assert pristine.check(before, take, started, files)
    for generation in (0, 1, 2):
        gc.collect(generation)
        assert pristine.check(before, take, started, files)
    gc.unfreeze()
    assert not pristine.check(before, take, started, files)
    assert not pristine.check(before, take, started, files)   # the canary stays dead until the grader freezes
    # A process the grader goes on with after an unfreeze of its own (a batch's collector in this test process,
    # which earlier tests' snapshots froze a canary in) makes a new canary at its next freeze: checks say yes again.
    pristine.freeze()
    assert pristine.check(before, take, started, files)
