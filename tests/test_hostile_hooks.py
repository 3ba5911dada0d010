"""What an exercise can leave in the interpreter for the next exercise its fork serves, where no object of the
notebook's reaches it: the async generator hooks (`sys.set_asyncgen_hooks`, a closure) and the coroutine origin
depth. Graded for real (the correct Taoistic notebook plus one cell): each case's call first looks whether what is
set there came from another exercise (the runtime's request it was set under is not its own), answers None if so
(every case of that exercise lost), then sets it under its own request. A fresh fork has nothing set, so the
notebook keeps full marks exactly when the fork's check saw the change and took a fresh fork (pristine._interpreter).
"""

from __future__ import annotations

import pytest

from taoistic_attack import graded_ways, lost

WAYS = {
    "asyncgen hooks": ("left = _sys.get_asyncgen_hooks().firstiter\n"
                       "    return left is not None and left.__defaults__[0] is not request",
                       "_sys.set_asyncgen_hooks(firstiter=lambda agen, seen=request: None)"),
    "coroutine origin depth": ("depth = _sys.get_coroutine_origin_tracking_depth()\n"
                               "    return depth not in (0, 1 + id(request) % 997)",
                               "_sys.set_coroutine_origin_tracking_depth(1 + id(request) % 997)"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    return graded_ways(tmp_path_factory.mktemp("hooks"), WAYS)


@pytest.mark.parametrize("name", sorted(WAYS))
def test_what_an_exercise_leaves_in_the_interpreters_hooks_never_reaches_the_next(results, name):
    result = results[name]
    assert lost(result) == {}
    assert result.total == result.max_total == 30
