"""The load's snapshot replayed (pristine.Replay) says what a walk says: the same tokens while nothing the
walk would see changed, a walk as before otherwise."""

from __future__ import annotations

import builtins
import types

import pytest

from grader.sandbox import pristine

SOURCE = """
import random, weakref
class Base: pass
class Other: pass
class Kept(Base):
    count = 0
    def method(self): return 1
class Holder: pass
class Table(dict): pass
kept = Kept()
kept.items = [1]
holder = Holder()
ref = weakref.ref(holder)
table = Table(a=1)
memo = {}
def default(a=[]): return a
cell = (lambda v: (lambda: v))([0])
nested = [1, [2, 3]]
pair = (nested,)
numbers = {1, 2}
draws = random.Random(3)
"""

NUMPY = """
import numpy as np
array = np.zeros(4)
scalar = np.float64(1.5)
generator = np.random.default_rng(1)
legacy = np.random.RandomState(2)
"""

# mutation -> whether a walk still finds the load's state
MUTATIONS = {
    "nothing": ("", True),
    "a list rebound to an equal one": ("nested[0] = 1", True),
    "a key added and removed": ("memo['a'] = 1; memo.clear()", True),
    "a set grown and shrunk": ("numbers.add(3); numbers.discard(3)", True),
    "a dict filled": ("memo['a'] = 1", False),
    "a nested list grown": ("nested[1].append(4)", False),
    "a set grown": ("numbers.add(3)", False),
    "a class attribute": ("Kept.count = 1", False),
    "a method replaced": ("Kept.method = lambda self: 2", False),
    "a class's module": ("Kept.__module__ = 'library'", False),
    "a class's bases": ("Kept.__bases__ = (Other,)", False),
    "an instance's list": ("kept.items.append(2)", False),
    "an instance's new attribute": ("kept.more = 1", False),
    "an instance's class": ("class Sub(Kept): pass\nkept.__class__ = Sub", False),
    "a dict subclass's item": ("table['b'] = 2", False),
    "a default mutated": ("default.__defaults__[0].append(1)", False),
    "a cell's content": ("cell.__closure__[0].cell_contents.append(1)", False),
    "a weak reference's target gone": ("del holder", False),
    "a generator drawn": ("draws.random()", False),
    "a builtin patched": ("import builtins; builtins.len = lambda x: 0", False),
    "a module imported": ("import fractions", False),
    "an array changed in place": ("array[0] = 1", False),
    "an array set to what it held": ("array[0] = 0.0", True),
    "numpy's generator drawn": ("generator.random()", False),
    "numpy's legacy generator drawn": ("legacy.rand()", False),
    "a numpy scalar rebound": ("scalar = np.float64(1.5)", False),
}


@pytest.mark.parametrize("label", MUTATIONS)
def test_the_load_snapshot_replayed_says_what_a_walk_says(label):
    code, same = MUTATIONS[label]
    numpy = "np." in code or label.startswith("numpy") or "array" in label
    if numpy:
        pytest.importorskip("numpy")
    saved = dict(builtins.__dict__)
    try:
        module = types.ModuleType("__main__x")
        module.__dict__["__builtins__"] = builtins
        exec(compile(SOURCE + (NUMPY if numpy else ""), "<load>", "exec"), module.__dict__)  # noqa: S102
        roots, homes = [module.__dict__, builtins.__dict__], {"__main__x"}
        leaves = pristine.leaves(roots, homes=homes)
        loaded = pristine.snapshot(roots, homes=homes, skip=leaves)
        assert loaded is not None and leaves.replay is not None   # every later snapshot can replay this one
        again = pristine.snapshot(roots, homes=homes, skip=leaves)
        assert again == loaded and again[0] is loaded[0]          # replayed: no walk
        exec(compile(code, "<exercise>", "exec"), module.__dict__)  # noqa: S102
        replayed = pristine.snapshot(roots, homes=homes, skip=leaves)
        leaves.replay = None   # the walk, as without a replay
        walked = pristine.snapshot(roots, homes=homes, skip=leaves)
        assert (replayed == loaded) is (walked == loaded) is same
    finally:
        builtins.__dict__.clear()
        builtins.__dict__.update(saved)


def test_a_replay_is_kept_only_where_the_load_snapshot_entered_each_object_as_its_leaves_recorded():
    module = types.ModuleType("__main__x")
    exec(compile("memo = {}\n", "<load>", "exec"), module.__dict__)  # noqa: S102
    roots = [module.__dict__]
    leaves = pristine.leaves(roots, homes={"__main__x"})
    module.__dict__["memo"]["late"] = []   # changed between the leaves and the load's snapshot
    loaded = pristine.snapshot(roots, homes={"__main__x"}, skip=leaves)
    assert loaded is not None and leaves.traced and leaves.replay is None
    assert pristine.snapshot(roots, homes={"__main__x"}, skip=leaves) == loaded   # walked, as before
