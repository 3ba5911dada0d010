"""An exercise's process serves the next exercise only while nothing of the last one can be seen there."""

from __future__ import annotations

import time

import pytest

from grader import codec
from grader.sandbox import runtime
from grader.sandbox.isolation import Isolation, detect
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import statement


def case(code: str) -> CaseRequest:
    return CaseRequest(id=f"c{abs(hash(code)) % 10000}", code=code, timeout=2.0)


def exercises(source: str, *calls: str, isolate: tuple[str, ...] = (), oracle=None, more: bool = True,
              restarts: list[int] | None = None) -> list:
    """Each call its own exercise, in one sandbox: the decoded values. `more`: each request but the last says
    another exercise follows, as grading's own runs do (the fork checks itself before the next request comes).
    `restarts`: gets how many times the sandbox's child was started again."""
    values = []
    with Sandbox([statement(source, count=1, cell=1)], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        for number, call in enumerate(calls, 1):
            outcome = sandbox.run_exercise([case(call)], isolate, oracle, time.monotonic() + 60,
                                           more=more and number < len(calls))[0]
            assert outcome.status == "ok", outcome.error
            values.append(codec.decode(outcome.value))
        if restarts is not None:
            restarts.append(sandbox.restarts)
    return values


@pytest.mark.parametrize("more", [True, False])
def test_exercises_that_change_nothing_share_one_process(more):
    first, second, third = exercises("import os\ndef pid():\n    return os.getpid()\n", "pid()", "pid()", "pid()",
                                     more=more)
    assert first == second == third


# Each `change()` leaves something behind that a fresh fork would not have; `look()` must not see it.
CHANGES = {
    "a global list mutated": ("S = []\ndef change():\n    S.append(1)\n    return 0\ndef look():\n"
                              "    return len(S)\n", 0),
    "a global dict's value": ("D = {'a': 1, 'b': 2}\ndef change():\n    D['a'] = 3\n    return 0\ndef look():\n"
                              "    return D['a']\n", 1),
    "a global dict's key": ("D = {'a': 1}\ndef change():\n    del D['a']\n    D['b'] = 1\n    return 0\n"
                            "def look():\n    return sorted(D)\n", ["a"]),
    "a global rebound": ("N = 0\ndef change():\n    global N\n    N = 5\n    return 0\ndef look():\n    return N\n", 0),
    "a default argument": ("def change(m=[]):\n    m.append(1)\n    return 0\ndef look():\n"
                           "    return len(change.__defaults__[0])\n", 0),
    "a class attribute": ("class C:\n    n = 0\ndef change():\n    C.n += 1\n    return 0\ndef look():\n"
                          "    return C.n\n", 0),
    "an attribute of an instance": ("class C:\n    pass\nc = C()\nc.a = 1\ndef change():\n    del c.a\n"
                                    "    c.b = 1\n    return 0\ndef look():\n    return sorted(vars(c))\n", ["a"]),
    "a closure's cell": ("def counter():\n    n = 0\n    def step():\n        nonlocal n\n        n += 1\n"
                         "        return n\n    return step\nstep = counter()\ndef change():\n    step()\n"
                         "    return 0\ndef look():\n    return step()\n", 1),
    "a numpy array in place": ("import numpy as np\nA = np.zeros(3)\ndef change():\n    A[0] = 7\n    return 0\n"
                               "def look():\n    return float(A[0])\n", 0.0),
    "a library function patched": ("import heapq\ndef change():\n    heapq.heappush = lambda h, x: None\n"
                                   "    return 0\ndef look():\n    h = []\n    heapq.heappush(h, 1)\n"
                                   "    return h\n", [1]),
    "a POSIX timer left": ("import ctypes\ndef change():\n    timer = ctypes.c_void_p()\n"
                           "    ctypes.CDLL(None).timer_create(1, None, ctypes.byref(timer))\n    return 0\n"
                           "def look():\n    with open('/proc/self/timers') as timers:\n"
                           "        return timers.read() == ''\n", True),
    "the recursion limit": ("import sys\ndef change():\n    sys.setrecursionlimit(123)\n    return 0\n"
                            "def look():\n    return sys.getrecursionlimit() != 123\n", True),
    "the working folder": ("import os\ndef change():\n    os.chdir('/')\n    return 0\ndef look():\n"
                           "    return os.getcwd() != '/'\n", True),
    "a signal handler": ("import signal\ndef change():\n    signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
                         "    return 0\ndef look():\n    return signal.getsignal(signal.SIGUSR1) != signal.SIG_IGN\n",
                         True),
    "a random generator of its own": ("import random\nR = random.Random(1)\nFIRST = random.Random(1).random()\n"
                                      "def change():\n    R.random()\n    return 0\ndef look():\n"
                                      "    return R.random() == FIRST\n", True),
    "a cache the walk cannot read": ("import functools\n@functools.lru_cache\ndef f(x):\n    return x\n"
                                     "def change():\n    f(1)\n    return 0\ndef look():\n"
                                     "    return f.cache_info().currsize\n", 0),
    "the collector switched off": ("import gc\ndef change():\n    gc.disable()\n    return 0\ndef look():\n"
                                   "    return gc.isenabled()\n", True),
    # Immutable objects of the load are not walked again (pristine.Leaves): what they hold or who binds them is.
    "a list inside a tuple": ("T = (1, 'a', [0])\ndef change():\n    T[2].append(1)\n    return 0\ndef look():\n"
                              "    return T[2]\n", [0]),
    "a tuple rebound to an equal one": ("T = (1, 2)\ndef change():\n    global T\n    T = tuple([1, 2, 3])[:2]\n"
                                        "    return 0\ndef look():\n    return T is ORIGINAL\nORIGINAL = T\n", True),
    "a str rebound in a dict": ("D = {'k': 'ab'}\ndef change():\n    D['k'] = 'xy'\n    return 0\ndef look():\n"
                                "    return D['k']\n", "ab"),
    "a tuple default holding a list": ("def change(m=(1, [0])):\n    m[1].append(1)\n    return 0\ndef look():\n"
                                       "    return len(change.__defaults__[0][1])\n", 1),
    "a keyword default rebound": ("def change(*, k=(1, 2)):\n    change.__kwdefaults__['k'] = (1, 2, 3)\n    return 0\n"
                                  "def look():\n    return change.__kwdefaults__['k']\n", (1, 2)),
    "a cell holding a tuple rebound": ("def outer():\n    t = (1, 2)\n    def get():\n        return t\n"
                                       "    def put(v):\n        nonlocal t\n        t = v\n    return get, put\n"
                                       "get, put = outer()\ndef change():\n    put((3,))\n    return 0\n"
                                       "def look():\n    return get()\n", (1, 2)),
    "a frozenset rebound": ("F = frozenset({1, 2})\ndef change():\n    global F\n    F = frozenset({3})\n    return 0\n"
                            "def look():\n    return sorted(F)\n", [1, 2]),
    # What builtins reach is walked from the zygote's leaves (runtime.take_base_leaves): a change there shows.
    "an object builtins hold": ("def change():\n    copyright._Printer__filenames.append('x')\n    return 0\n"
                                "def look():\n    return copyright._Printer__filenames[-1:] != ['x']\n", True),
    "a builtin's attribute set": ("def change():\n    exit.left = 1\n    return 0\ndef look():\n"
                                  "    return hasattr(exit, 'left')\n", False),
    # An object whose references are still the load's very objects is not described again (pristine.Leaves.known).
    "a list's items swapped": ("A = [1]\nB = [2]\nL = [A, B]\ndef change():\n    L[0], L[1] = L[1], L[0]\n"
                               "    return 0\ndef look():\n    return L\n", [[1], [2]]),
    "a dict's values swapped": ("D = {'a': 'x', 'b': 'y'}\ndef change():\n    D['a'], D['b'] = D['b'], D['a']\n"
                                "    return 0\ndef look():\n    return D['a']\n", "x"),
    "a list inside a list mutated": ("L = [[0], 'a']\ndef change():\n    L[0].append(1)\n    return 0\n"
                                     "def look():\n    return L[0]\n", [0]),
    # The walk's view of sys.modules is kept while it holds the same objects (pristine.Loaded): a swap shows.
    "a module replaced in sys.modules": ("import sys\ndef change():\n    sys.modules['heapq'] = type(sys)('heapq')\n"
                                         "    return 0\ndef look():\n    import heapq\n"
                                         "    return hasattr(heapq, 'heappush')\n", True),
    "an environment variable": ("import os\ndef change():\n    os.environ['X_LEFT'] = '1'\n    return 0\n"
                                "def look():\n    return 'X_LEFT' in os.environ\n", False),
    # State of the interpreter and its libraries that no object of the notebook reaches: sys's own names (sys met
    # only through __import__), the collector's callbacks and debug flags, decimal's contexts.
    "a sys attribute set unseen": ("def change():\n    __import__('sys').x_left = 1\n    return 0\ndef look():\n"
                                   "    return hasattr(__import__('sys'), 'x_left')\n", False),
    "the collector's debug flags": ("def change():\n    gc = __import__('gc')\n    gc.set_debug(gc.DEBUG_SAVEALL)\n"
                                    "    return 0\ndef look():\n    return __import__('gc').get_debug()\n", 0),
    "the decimal context": ("import decimal\ndef change():\n    decimal.getcontext().prec = 5\n    return 0\n"
                            "def look():\n    return decimal.getcontext().prec\n", 28),
    # Hooks no name of sys shows, and atexit's functions (its C list): a closure set there held what a case saw, and
    # the next exercise got it back (sys.get_asyncgen_hooks().firstiter.__defaults__, atexit._run_exitfuncs).
    "an async generator hook": ("def change():\n    __import__('sys').set_asyncgen_hooks(firstiter=lambda g, s=[1]: 0)"
                                "\n    return 0\ndef look():\n"
                                "    return __import__('sys').get_asyncgen_hooks().firstiter is None\n", True),
    "the coroutine origin depth": ("def change():\n    __import__('sys').set_coroutine_origin_tracking_depth(7)\n"
                                   "    return 0\ndef look():\n"
                                   "    return __import__('sys').get_coroutine_origin_tracking_depth()\n", 0),
    "an exit function": ("import atexit\nAT_LOAD = atexit._ncallbacks()\ndef change():\n    atexit.register(print)\n"
                         "    return 0\ndef look():\n    return atexit._ncallbacks() == AT_LOAD\n", True),
    # The interpreter's and the standard library's registries, which no name of the notebook's reaches: what a case
    # left there came back to the next exercise (a search function's answer, a function run at a fork, an entry).
    "a codec search function": ("import codecs\ndef change():\n    codecs.register(lambda name: name == 'left' and "
                                "codecs.CodecInfo(None, None, name=name) or None)\n    return 0\ndef look():\n"
                                "    try:\n        return codecs.lookup('left').name\n    except LookupError:\n"
                                "        return None\n", None),
    "a function run at a fork": ("import os\ndef change():\n"
                                 "    os.register_at_fork(after_in_child=lambda: os.write(WRITE, b'x'))\n    return 0\n"
                                 "READ, WRITE = os.pipe()\ndef look():\n    pid = os.fork()\n    if pid == 0:\n"
                                 "        os._exit(0)\n    os.waitpid(pid, 0)\n    os.set_blocking(READ, False)\n"
                                 "    try:\n        return os.read(READ, 8)\n    except BlockingIOError:\n"
                                 "        return b''\n", b""),
    "an importer cache entry": ("import sys\ndef change():\n    sys.path_importer_cache['left'] = None\n    return 0\n"
                                "def look():\n    return 'left' in sys.path_importer_cache\n", False),
    "a linecache entry": ("import linecache\ndef change():\n    linecache.cache['left'] = (0, None, ['x'], 'left')\n"
                          "    return 0\ndef look():\n    return 'left' in linecache.cache\n", False),
    "a copyreg reducer": ("import copyreg\nclass K:\n    pass\ndef change():\n"
                          "    copyreg.pickle(K, lambda k: (K, ()))\n    return 0\n"
                          "def look():\n    return K in copyreg.dispatch_table\n", False),
    "a copyreg extension code": ("import copyreg\ndef change():\n    copyreg.add_extension('left', 'x', 4321)\n"
                                 "    return 0\ndef look():\n    return 4321 in copyreg._inverted_registry\n", False),
    "a finalizer's arguments": ("import weakref\nclass K:\n    pass\nFIRST = weakref.finalize(K, int)\n"
                                "def change():\n    weakref.finalize(K, print, 'left')\n    return 0\ndef look():\n"
                                "    return [i.args for i in weakref.finalize._registry.values()]\n", [()]),
    # Left running, they could read the next request before the check (the fork checks who is left first).
    "a thread left running": ("import threading, time\ndef change():\n"
                              "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                              "    return 0\ndef look():\n    return __import__('threading').active_count()\n", 1),
    "a process left running": ("import os, time\ndef change():\n    if os.fork() == 0:\n        time.sleep(60)\n"
                               "        os._exit(0)\n    return 0\ndef look():\n"
                               "    return len(open('/proc/self/task/%d/children' % os.getpid()).read().split())\n", 0),
    "the request pipe closed": ("import os, stat, fcntl\ndef change():\n"
                                "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
                                "        try:\n            kind = os.fstat(fd).st_mode\n"
                                "        except OSError:\n            continue\n"
                                "        if stat.S_ISFIFO(kind) and not fcntl.fcntl(fd, fcntl.F_GETFL) & 3:\n"
                                "            os.close(fd)\n    return 0\ndef look():\n    return 0\n", 0),
    "decimal's default context": ("import decimal\ndef change():\n    decimal.DefaultContext.prec = 5\n    return 0\n"
                                  "def look():\n    import threading\n    seen = []\n"
                                  "    t = threading.Thread(target=lambda: seen.append(decimal.getcontext().prec))\n"
                                  "    t.start()\n    t.join()\n    return seen[0]\n", 28),
}


# The check reads /proc through descriptors its process opened before any student code ran (pristine.Files). An
# exercise that puts files of its own at their numbers, shaped as /proc's (a folder of 3 links: "one thread"; for a
# file, a copy of what it says now: "no children", "the fork is the runtime's only child"), then leaves a thread or
# a process reading the request pipe, which would take the next request (and its cases) if the check believed
# them: the next exercise must still come, in a fresh fork.
FORGE = ("import os, stat, fcntl, threading\n"
         "def _request():\n"
         "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
         "        try:\n            kind = os.fstat(fd).st_mode\n        except OSError:\n            continue\n"
         "        if stat.S_ISFIFO(kind) and not fcntl.fcntl(fd, fcntl.F_GETFL) & 3:\n            return fd\n"
         "def _forge():\n"
         "    os.makedirs('forged/one', exist_ok=True)\n"
         "    assert os.stat('forged').st_nlink == 3\n"
         "    folder = os.open('forged', os.O_RDONLY | os.O_DIRECTORY)\n"
         "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
         "        try:\n            target = os.readlink('/proc/self/fd/%d' % fd)\n        except OSError:\n"
         "            continue\n"
         "        if not target.startswith('/proc/'):\n            continue\n"
         "        if target.endswith('/task'):\n            os.dup2(folder, fd)\n"
         "        if stat.S_ISDIR(os.fstat(fd).st_mode):\n            continue\n"
         "        copy = os.open('forged/%d' % fd, os.O_RDWR | os.O_CREAT)\n"
         "        os.write(copy, os.pread(fd, 1 << 16, 0))\n"
         "        os.dup2(copy, fd)\n        os.close(copy)\n"
         "    os.close(folder)\n")
FORGED = {
    "a thread": FORGE + ("def change():\n    fd = _request()\n    _forge()\n"
                         "    threading.Thread(target=os.read, args=(fd, 1 << 20), daemon=True).start()\n"
                         "    return 0\n"
                         "def look():\n    return threading.active_count()\n"),
    "a process": FORGE + ("def change():\n    fd = _request()\n    _forge()\n    if os.fork() == 0:\n"
                          "        os.read(fd, 1 << 20)\n        os._exit(0)\n    return 0\n"
                          "def look():\n"
                          "    return len(open('/proc/self/task/%d/children' % os.getpid()).read().split())\n"),
}


@pytest.mark.parametrize("more", [True, False])
@pytest.mark.parametrize("name", sorted(FORGED))
def test_an_exercise_that_forges_the_checks_proc_files_cannot_take_the_next_request(name, more):
    """The forged descriptors are not the files the check opened (fstat: another inode), so it knows no company:
    the exercise's process ends with what it left, and the next exercise is served by a fresh fork."""
    source = FORGED[name] + "import os as _os\ndef pid():\n    return _os.getpid()\n"
    restarts: list[int] = []
    before, _, after, seen = exercises(source, "pid()", "change()", "pid()", "look()", more=more, restarts=restarts)
    assert seen == (1 if name == "a thread" else 0)
    assert before != after
    assert restarts == [0]   # a request taken by what the exercise left: the parent waits, then starts anew


@pytest.mark.parametrize("more", [True, False])
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_an_exercise_that_changed_something_is_followed_by_a_fresh_fork(name, more):
    """Whether the fork checks itself as soon as the exercise ends (the grader said another follows) or once
    the next request is there."""
    source, pristine = CHANGES[name]
    source += "import os as _os\ndef pid():\n    return _os.getpid()\n"
    before, _, after, seen = exercises(source, "pid()", "change()", "pid()", "look()", more=more)
    assert seen == pristine
    assert before != after


LEAVER = ("import os, time\n"
          "def leave():\n"   # a sleeper in a session of its own, its parent gone: the runtime's orphan
          "    middle = os.fork()\n    if middle == 0:\n        os.setsid()\n"
          "        if os.fork() == 0:\n            time.sleep(60)\n        os._exit(0)\n"
          "    os.waitpid(middle, 0)\n    return 0\n"
          "def others():\n"   # the runtime's children but this fork (a zombie too)
          "    runtime = os.getppid()\n"
          "    with open('/proc/%d/task/%d/children' % (runtime, runtime)) as children:\n"
          "        return [int(pid) for pid in children.read().split() if int(pid) != os.getpid()]\n")


@pytest.mark.parametrize("jail", [True, False], ids=["detected", "rlimits"])
def test_an_orphan_an_exercise_left_is_killed_and_reaped_before_the_next(jail):
    """Its own session and process group: the fork's end does not take it along. It becomes the runtime's child
    (its subreaper, or its jail's PID 1), which kills and reaps it (runtime._kill_orphans) before the next fork."""
    isolation = detect() if jail else Isolation(namespaces=False, pids_root=None)
    found = []
    with Sandbox([statement(LEAVER, count=1, cell=1)], {}, ProcessLimits(), isolation=isolation,
                 allow_root=True) as sandbox:
        sandbox.load()
        for call in ("others()", "leave()", "others()"):
            outcome = sandbox.run_exercise([case(call)], (), None, time.monotonic() + 60, more=True)[0]
            assert outcome.status == "ok", outcome.error
            found.append(codec.decode(outcome.value))
    assert found == [[], 0, []]


def test_an_audit_hook_is_not_added_so_it_cannot_act_after_the_walk():
    """A hook cannot be listed or removed; this one would set a name of sys at the check's own reading of /proc,
    after its walk, and the next exercise would see it. The sandbox refuses every audit hook."""
    source = ("import sys\ndef change():\n"
              "    sys.addaudithook(lambda event, args: event == 'os.listdir' and setattr(sys, 'x_audited', 1))\n"
              "    return 0\ndef look():\n    return hasattr(sys, 'x_audited')\n")
    assert exercises(source, "change()", "look()") == [0, False]


# Code the check itself may run, each acting from its second call on (a counter kept where no walk looks, in an
# unused module's dict) to leave a change the next exercise would see: numpy.geterr (the check reads numpy's error
# state through it, and the notebook may replace it) and os.environ's mapping (the process's state).
AFTER_THE_WALK = {   # name: (the notebook's code, how deep its counter sits)
    "numpy.geterr replaced": ("import numpy\n_real = numpy.geterr\ndef _sneaky():\n{count}    return _real()\n"
                              "numpy.geterr = _sneaky\n", 0),
    "os.environ's mapping replaced": ("import os\nclass _Sneaky(dict):\n    def items(self):\n{count}"
                                      "        return dict.items(self)\n"
                                      "os.environ._data = _Sneaky(os.environ._data)\n", 1),
    "a bit generator of the notebook's class": ("import numpy as np\nclass _Bits(np.random.PCG64):\n"
                                                "    @property\n    def state(self):\n{count}"
                                                "        return np.random.PCG64.state.__get__(self)\n"
                                                "G = np.random.Generator(_Bits(1))\n", 1),
    # The system calls of the process check (its /proc reads, the descriptors, the limits, the signal mask)
    "os.read replaced": ("import os\n_real = os.read\ndef _sneaky(fd, size):\n{count}    return _real(fd, size)\n"
                         "os.read = _sneaky\n", 0),
    "os.listdir replaced": ("import os\n_real = os.listdir\ndef _sneaky(path='.'):\n{count}"
                            "    return _real(path)\nos.listdir = _sneaky\n", 0),
    "resource.getrlimit replaced": ("import resource\n_real = resource.getrlimit\ndef _sneaky(kind):\n{count}"
                                    "    return _real(kind)\nresource.getrlimit = _sneaky\n", 0),
    "signal.pthread_sigmask replaced": ("import signal\n_real = signal.pthread_sigmask\ndef _sneaky(how, mask):\n"
                                        "{count}    return _real(how, mask)\nsignal.pthread_sigmask = _sneaky\n", 0),
}


@pytest.mark.parametrize("name", sorted(AFTER_THE_WALK))
def test_code_the_check_runs_cannot_change_what_its_walk_saw(name):
    """The library's and the process's state are read before the walk (what that runs, the walk then sees), the
    environment's mapping only as the dict it was, and a random generator only over numpy's own bit generators."""
    source, depth = AFTER_THE_WALK[name]
    count = ("    count = __import__('codecs').__dict__.setdefault('x_calls', [0])\n    count[0] += 1\n"
             "    if count[0] == 2:\n        S.append(1)\n")
    count = "".join("    " * depth + line + "\n" for line in count.splitlines())
    source = "S = []\n" + source.format(count=count) + "def look():\n    return len(S)\n"
    assert exercises(source, "0", "look()") == [0, 0]


def test_a_fresh_fork_starts_from_the_load_even_where_the_notebook_patched_what_the_runtime_uses():
    """Between exercises the runtime empties the scratch; it did so through the os module the notebook had patched
    at load, so student code ran in the runtime process itself, outside any case's clock, and what it changed
    there every later fresh fork inherited (here, a count of the exercises before it)."""
    source = ("import os\n_real = os.listdir\n"
              "def _sneaky(path='.'):\n    count = __import__('codecs').__dict__.setdefault('x_resets', [0])\n"
              "    count[0] += 1\n    return _real(path)\n"
              "os.listdir = _sneaky\n"
              "def seen():\n    return __import__('codecs').__dict__.get('x_resets', [0])[0]\n"
              "N = 0\ndef change():\n    global N\n    N = 1\n    return 0\n")
    first, _, again = exercises(source, "seen()", "change()", "seen()")
    assert again == first


@pytest.mark.parametrize("hook", ["settrace", "setprofile"])
def test_a_trace_function_set_at_load_sees_the_cases_and_nothing_of_the_runtime(hook):
    """A trace or profile function the notebook set at load ran on the runtime's own code between exercises
    (its reset, the scratch, the pristine check's walk): student code in the runtime process, whose changes every
    later fresh fork inherited (here, a count of the runtime's resets). It runs in the cases only."""
    source = ("import sys\n"
              "def _hook(frame, event, arg):\n    name = frame.f_code.co_name\n"
              "    if name in ('reset', 'empty_folder', 'walk', 'work'):\n"
              "        count = __import__('codecs').__dict__.setdefault('x_' + name, [0])\n"
              "        count[0] += 1\n    return None\n"
              f"sys.{hook}(_hook)\n"
              "def seen():\n    found = __import__('codecs').__dict__\n"
              "    return [found.get('x_' + name, [0])[0] for name in ('reset', 'empty_folder', 'walk')]\n"
              "def work():\n    return 1\n"
              "def traced():\n    work()\n    return __import__('codecs').__dict__.get('x_work', [0])[0] > 0\n"
              "N = 0\ndef change():\n    global N\n    N = 1\n    return 0\n")
    first, _, again, own = exercises(source, "seen()", "change()", "seen()", "traced()")
    assert first == again == [0, 0, 0]
    assert own is True   # the notebook's own hook still sees its own calls


def test_a_collector_callback_set_at_load_runs_in_the_cases_only():
    """The same for the collector's callbacks (here with a collection at every allocation): they ran in the runtime
    process at its collections between exercises. Counted where they run in the runtime's own process (the load's
    ran there too, before any fork): how many run in a fork before its first case depends on the allocations the
    runtime made before forking it, which differ with whether the grader's modules load from .pyc files."""
    source = ("import gc, os\ngc.set_threshold(1)\nRUNTIME = os.getpid()\n"
              "def _callback(phase, info):\n    found = __import__('codecs').__dict__\n"
              "    found.setdefault('x_gc', [0])[0] += 1\n"
              "    if os.getpid() == RUNTIME:\n        found.setdefault('x_gc_runtime', [0])[0] += 1\n"
              "gc.callbacks.append(_callback)\n"
              "def seen():\n    return __import__('codecs').__dict__.get('x_gc', [0])[0]\n"
              "def in_runtime():\n    return __import__('codecs').__dict__.get('x_gc_runtime', [0])[0]\n"
              "def called():\n    before = seen()\n    [[] for _ in range(10)]\n    return seen() > before\n"
              "N = 0\ndef change():\n    global N\n    N = 1\n    return 0\n")
    first, _, again, own = exercises(source, "in_runtime()", "change()", "in_runtime()", "called()")
    assert first == again
    assert own is True   # the notebook's own callback still runs in its cases
    # One an exercise adds is gone in the next, as in a fresh fork (the runtime puts the load's back).
    added = "def add():\n    __import__('gc').callbacks.append(lambda phase, info: None)\n    return 0\n"
    assert exercises(added, "add()", "len(__import__('gc').callbacks)") == [0, 0]


def test_the_cases_run_with_the_runtimes_collector_threshold_and_an_exercise_cannot_change_the_next():
    """The runtime walks the collector's youngest generation less often during the load and the cases
    (runtime.YOUNG_OBJECTS): an exercise that sets another threshold is not pristine, and the next runs with the
    runtime's again; a notebook that set its own at load keeps it in every exercise."""
    source = ("import gc, os\nAT_LOAD = gc.get_threshold()[0]\ndef young():\n    return gc.get_threshold()[0]\n"
              "def change():\n    gc.set_threshold(5)\n    return os.getpid()\n"
              "def pid():\n    return os.getpid()\n")
    load, before, first, changed, after, second = exercises(source, "AT_LOAD", "young()", "pid()", "change()",
                                                            "young()", "pid()")
    assert load == before == after == runtime.YOUNG_OBJECTS
    assert changed == first != second   # the exercise after the change ran in a fresh fork
    own = "import gc\ngc.set_threshold(50)\ndef young():\n    return gc.get_threshold()[0]\n"
    assert exercises(own, "young()", "young()") == [50, 50]


def test_numpy_draws_are_seeded_at_each_case_and_leave_the_process_pristine():
    """numpy's global generator is seeded at each case's start (and when numpy.random is first imported, which
    numpy does at the first use of np.random): its state between cases is no one's, so drawing changes nothing.
    (A first import of numpy.random in an exercise changes sys.modules: the load imports it here.)"""
    source = ("import numpy as np\nimport numpy.random\nimport os\n"
              "def draw():\n    return [int(np.random.randint(1000)) for _ in range(3)]\n"
              "def pid():\n    return os.getpid()\n")
    first, before, second, after = exercises(source, "draw()", "pid()", "draw()", "pid()")
    import numpy
    assert first == second == numpy.random.RandomState(0).randint(1000, size=3).tolist()
    assert before == after


def test_a_notebook_that_sets_numpys_global_bit_generator_still_draws():
    """numpy.random.set_bit_generator gives the global generator another bit generator (PCG64), which has no legacy
    seed: the case's start seeded it with a TypeError, and every case of such a notebook failed. Left unseeded."""
    source = ("import numpy as np\nnp.random.set_bit_generator(np.random.PCG64(1))\n"
              "def draw():\n    return int(np.random.randint(1000))\n")
    assert all(type(value) is int for value in exercises(source, "draw()", "draw()"))


def test_an_exercise_that_asked_the_reference_ends_its_process():
    source = "import os\ndef helper(x):\n    return x\ndef uses():\n    return helper(1)\ndef pid():\n" \
             "    return os.getpid()\n"
    before, _, after = exercises(source, "pid()", "uses()", "pid()", isolate=("helper",),
                                 oracle=lambda name, args, kwargs: args[0] + 1)
    assert before != after


def test_the_walk_runs_no_student_code():
    # isinstance(obj, type) would read the object's __class__: a property of the student's, run between exercises
    source = "class Liar:\n    hits = 0\n    @property\n    def __class__(self):\n        Liar.hits += 1\n" \
             "        return type\nL = Liar()\nimport os\ndef look():\n    return Liar.hits, os.getpid()\n"
    (hits, first), (again, second) = exercises(source, "look()", "look()")
    assert hits == again == 0
    assert first == second   # and the process was known to be pristine


def test_the_walk_does_not_use_what_the_student_patched():
    # ids all 0: every object but the first would look already seen, and a changed list unchanged
    source = "import builtins, gc\nbuiltins.id = lambda o: 0\ngc.get_referents = lambda *o: []\nS = []\n" \
             "def change():\n    S.append(1)\n    return 0\ndef look():\n    return len(S)\n"
    _, seen = exercises(source, "change()", "look()")
    assert seen == 0


def test_an_exercise_cannot_leave_code_for_the_next_ones_calls():
    # the runtime keeps each call's compiled code for the exercise's other cases; a frame leads to that cache
    source = "import sys\ndef plant():\n    frame = sys._getframe(1)\n    while frame is not None:\n" \
             "        cache = frame.f_globals.get('_CODE')\n        if type(cache) is dict:\n" \
             "            cache[('look()', '<case>')] = compile('7', '<case>', 'eval')\n" \
             "        frame = frame.f_back\n    return 0\ndef look():\n    return 0\n"
    _, seen = exercises(source, "plant()", "look()")
    assert seen == 0


def test_a_fork_that_dies_after_saying_exited_costs_no_exercise():
    """A timer the notebook left running (an alarm as a search's time limit, never cancelled) can go off in the
    exercise's fork after it said `exited`, while it waits for the next request: the fork dies there, and the
    runtime reports that death before it serves the next request itself. Taken as the next exercise's end, the
    report made the grader send that exercise again, and the exercise after it got the first copy's answer: a
    protocol error, and a reload, for a verdict the notebook had earned."""
    source = "import os, signal\ndef _give_up(*_):\n    raise TimeoutError('the search took too long')\n" \
             "def arm():\n    signal.signal(signal.SIGALRM, _give_up)\n" \
             "    signal.setitimer(signal.ITIMER_REAL, 0.2)\n    return os.getpid()\n" \
             "def pid():\n    return os.getpid()\n"
    outcomes = []
    with Sandbox([statement(source, count=1, cell=1)], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        for number, call in enumerate(("arm()", "pid()", "pid()", "pid()")):
            request = CaseRequest(id=f"c{number}", code=call, timeout=2.0)
            outcomes.append(sandbox.run_exercise([request], (), None, time.monotonic() + 60)[0])
            time.sleep(0.6)   # the grader busy between two exercises (judging, a loaded machine): the alarm rings
        restarts = sandbox.restarts
    assert [(outcome.status, outcome.error) for outcome in outcomes] == [("ok", {})] * 4
    assert restarts == 0


@pytest.mark.parametrize("code", [86, 87])
@pytest.mark.parametrize("more", [True, False])
def test_a_case_that_exits_with_the_runtimes_own_codes_costs_only_that_case(code, more):
    """86 and 87 are what an exercise's fork says to the runtime when it ends by itself (the grader's requests
    are over; the next one waits, unread, for a fresh fork). A case that exits with them is a crash of that
    case, whenever the fork checks itself: the next exercises run, in a fresh fork."""
    source = f"import os\ndef leave():\n    os._exit({code})\ndef pid():\n    return os.getpid()\n"
    outcomes = []
    with Sandbox([statement(source, count=1, cell=1)], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        calls = ("pid()", "leave()", "pid()", "pid()")
        for number, call in enumerate(calls, 1):
            request = CaseRequest(id=f"c{number}", code=call, timeout=2.0)
            outcomes.append(sandbox.run_exercise([request], (), None, time.monotonic() + 60,
                                                 more=more and number < len(calls))[0])
    assert [outcome.status for outcome in outcomes] == ["ok", "crash", "ok", "ok"]
    first, _, after, last = (codec.decode(outcome.value) for outcome in outcomes)
    assert after == last   # one process serves both: the fork after the crash goes on


PIDS = ("import os\ndef helper(x):\n    return -1\ndef ask():\n    return helper(1)\ndef pid():\n"
        "    return os.getpid()\n")


def test_a_load_that_asks_for_no_reuse_gives_each_exercise_a_fresh_fork():
    """load(reuse=False): the runtime takes no snapshot of the loaded module, so no fork goes on to the next
    exercise, as where the snapshot cannot be read (see the reload for isolated exercises, below)."""
    with Sandbox([statement(PIDS, count=1, cell=1)], {}, ProcessLimits()) as sandbox:
        sandbox.load(reuse=False)
        first, second = (codec.decode(sandbox.run_exercise([case("pid()")], (), None, time.monotonic() + 60,
                                                           more=True)[0].value) for _ in range(2))
    assert first != second


def test_the_reload_for_an_isolated_exercise_asks_for_no_reuse_and_the_one_for_an_own_run_does():
    """After a hidden input (or the reference's answers) the child is loaded again. For an exercise that isolates
    helpers its fork ends with the exercise anyway and grading sends only such exercises after its own runs: the
    snapshot a reload would take (~1.7 ms of the child's CPU for a Taoistic notebook) is not taken. The reload
    for an own run (the reference's answers must not reach it) takes it as the first load does."""
    asked: list[bool] = []
    with Sandbox([statement(PIDS, count=1, cell=1)], {}, ProcessLimits()) as sandbox:
        sandbox.load()
        load = sandbox.load

        def loads(deadline=None, reuse=True):
            asked.append(reuse)
            return load(deadline, reuse=reuse)
        sandbox.load = loads   # type: ignore[method-assign]
        hidden = CaseRequest(id="hidden", code="pid()", timeout=2.0, hidden=True)
        assert sandbox.run_exercise([hidden], (), None, time.monotonic() + 60)[0].status == "ok"
        [answered] = sandbox.run_exercise([case("ask()")], ("helper",), lambda name, args, kwargs: 42,
                                          time.monotonic() + 60)
        assert codec.decode(answered.value) == 42
        [own] = sandbox.run_exercise([case("pid()")], (), None, time.monotonic() + 60)
        assert own.status == "ok"
    assert asked == [False, True]
