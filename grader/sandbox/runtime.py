"""The child side of the sandbox: loads a student's extracted notebook and answers case requests over a pipe.

Runs as a script in a clean interpreter (`python -s -P runtime.py REQ_FD RESP_FD`, own environment) that never
imported the grader package or the reference. It only ever sees the student's code, the cases' input values, and
the reference's answers to isolated helper calls it asks for. Everything it sends back is judged by the parent.
"""

import ast
import builtins as _builtins
import gc
import io
import linecache
import marshal
import os
import random
import resource
import signal
import stat
import sys
import time
import types
from _thread import allocate_lock

_HERE = os.path.dirname(os.path.abspath(__file__))
# The value codec is neutral ground (the parent and the writers use it too): it lives in the package folder,
# one level up, and is as plain a file as the modules here (standard library only).
_CODEC_HOME = os.path.dirname(_HERE)
if __package__:  # imported as grader.sandbox.runtime (the in-kernel kit check, tests)
    from grader import codec as _codec
    from grader.sandbox import confine as _confine, pristine as _pristine, wire as _wire
else:  # loaded by the zygote (or run as a script with -P): this folder must not stay on sys.path
    import importlib.util as _importlib_util
    # The codec by its path, so nothing else of the package folder is ever importable here.
    _spec = _importlib_util.spec_from_file_location("codec", os.path.join(_CODEC_HOME, "codec.py"))
    assert _spec is not None and _spec.loader is not None
    _codec = sys.modules["codec"] = _importlib_util.module_from_spec(_spec)
    _spec.loader.exec_module(_codec)
    sys.path.insert(0, _HERE)
    import confine as _confine  # type: ignore[no-redef]  # noqa: E402
    import pristine as _pristine  # type: ignore[no-redef]  # noqa: E402
    import wire as _wire  # type: ignore[no-redef]  # noqa: E402
    sys.path.remove(_HERE)
    # Students may have their own `codec`, `wire` or `pristine` module; ours stay referenced here only.
    for _name in ("codec", "wire", "confine", "pristine"):
        sys.modules.pop(_name, None)

# Private references. Student code shares this process: it may rebind `builtins.len`, `os.write`,
# `signal.setitimer`, `sys.__stdout__` and so on. The runtime's functions resolve builtins in this module's own
# snapshot, and `os`, `signal`, `time` and `random` here are snapshots of those modules taken before any student
# code ran, so such a patch harms only the student's own answers. (Student code can still reach these objects
# through gc or frames; what it changes then is only what the parent judges as its answers, never its verdict.)
__builtins__ = dict(_builtins.__dict__)  # type: ignore[assignment]  # a private snapshot, on purpose
os, signal, time, random = (  # type: ignore[assignment]  # snapshots stand in for the modules, on purpose
    types.SimpleNamespace(**vars(_module)) for _module in (os, signal, time, random))
_STDOUT, _STDERR = sys.__stdout__, sys.__stderr__
_INPUT = _builtins.input   # the interpreter's, before any student code: NoKeyboard stands in for it in a case
# The global generator is set at each case's start to the state random.seed(0) gives, by a copy of its bytes or the
# C setstate (_seed_random; seed mixes 624 words each time, twice as long; Random.seed is Python code, which runs
# on patchable builtins).
_RANDOM, _C_RANDOM = random._inst, random.Random.__mro__[1]
_SET_STATE, _SEEDED = _C_RANDOM.setstate, _C_RANDOM.getstate(_C_RANDOM(0))  # type: ignore[attr-defined]

_SOURCES: dict = {}   # pseudo-file name -> source lines, for tracebacks (see _describe)
_PRISTINE: dict = dict(_builtins.__dict__)   # copied for each case's rubric expressions

_marshal_loads, _CODE_TYPE = marshal.loads, types.CodeType
# Code compiled by the parent (precompiled.py) is only ever good for the interpreter whose magic number it names.
_MAGIC = getattr(sys.modules.get("_frozen_importlib_external"), "MAGIC_NUMBER", None)
_write = os.write
_fork = os.fork
_get_threshold, _set_threshold = gc.get_threshold, gc.set_threshold
_THRESHOLD = gc.get_threshold()   # the interpreter's, before any student code
# During the load and the cases the collector walks its youngest generation every YOUNG_OBJECTS container
# allocations (Python's default: 700). A notebook's objects die by reference counting: those walks found next to
# nothing and cost ~4% of the student's own case time (bench_examples, correct: cases 116 -> 111 ms) and ~5 ms of
# a load that runs a search (seed-000). Cyclic garbage waits for at most this many more allocations. Set before
# the load, so the snapshot after it (which every fork is compared with) holds it: an exercise that sets another
# threshold is not pristine (pristine._interpreter) and the next runs in a fresh fork, with this one. A notebook
# that sets its own at load keeps it (as its hooks).
YOUNG_OBJECTS = 20_000
# A trace or profile function the notebook sets at load runs on every Python frame after it, and a collector
# callback at every collection: the runtime takes them off after the load and puts them back for each exercise's
# cases only, so none runs on the runtime's own code (its reset between exercises, the pristine check's walk),
# which would be student code in the runtime process.
_gettrace, _settrace, _getprofile, _setprofile = sys.gettrace, sys.settrace, sys.getprofile, sys.setprofile
_GC_CALLBACKS = gc.callbacks   # the collector's own list (so are its callbacks, run at its collections)
SESSION_OVER = 86            # an exercise's fork read the grader's last request: the runtime ends too
PASS_ON = 87                 # an exercise's fork said `exited` and left the next request unread: not pristine
_exit = os._exit
_getpid = os.getpid
_setitimer = signal.setitimer
# The load phase's budget is wall time (ITIMER_REAL, SIGALRM; moved by waiting for a CPU: LoadClock); a case's limit
# is CPU time (ITIMER_PROF, SIGPROF), so waiting for a CPU on a busy machine or for the parent's answer to an
# isolated-helper call costs the case nothing. The parent reads the same CPU time from the kernel and does not
# depend on this alarm.
# [in an exchange with the parent, an alarm came during it]: see Child.ask.
_EXCHANGE = [False, False]
# One exchange at a time: a notebook that calls an isolated helper from several threads (a thread pool evaluating
# a heuristic) had two threads send and read at once; one took the other's reply for an old one and skipped it,
# and the other waited for it until the submission's whole budget was spent (every later case skipped).
_ONE_EXCHANGE = allocate_lock()
# The same across processes: a process the notebook forked (a multiprocessing pool's worker) shares the exercise's
# pipes but not its sequence or reply stream, so it may not ask the parent at all (Child._oracle). Set in every
# process os.fork makes (its hook: no system call a round trip), cleared in the exercise's own at its start.
_FORKED = [False]
os.register_at_fork(after_in_child=lambda: _FORKED.__setitem__(0, True))
MEMO_BYTES = 16_000_000      # what the memo of isolated-helper answers may hold: arguments' text and replies
_perf = time.perf_counter
_S_ISDIR = stat.S_ISDIR
_O_PUT = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# A data file's bytes are compared through a look that never waits: a pipe or a student's lease at its path.
_O_LOOK = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_encode, _decode, _canonical = _codec.encode, _codec.decode, _codec.canonical
_plain_text, _call_args, _unpack = _codec.plain_text, _codec.call_text, _codec.unpack
_unpack_prefetched = _codec.unpack_prefetched
_student_value = _codec.decode_for_student
_CODE: dict = {}             # (rubric expression, pseudo-file) -> its code, for one exercise (_take_codes, _compiled)
_CODE_ENTRIES = 4096
_NO_KWARGS = _wire.json_text(_encode({}))
_EXITED = _wire.encode_frame({"op": "exited", "status": 0})   # an exercise's fork goes on (Child.exercises)
_QUIET_TAIL = _wire.json_text({"probes": {}, "output": ""})[1:]   # a result frame's end: no probes, no output
_HEAPTYPE = 1 << 9
_FLAGS = type.__dict__["__flags__"].__get__
_TYPE_DICT = type.__dict__["__dict__"].__get__
_MODULE_DICT = vars(types.ModuleType)["__dict__"].__get__
_MODULES = sys.modules       # the interpreter's own dict, whatever the student binds to `sys.modules`


def _state_memory(generator):
    """The bytes of a C generator's state where they lie in its object (CPython's RandomObject: the object's head,
    then `int index` and `uint32_t state[624]`), writable: one copy into them seeds it."""
    import ctypes
    return memoryview((ctypes.c_char * (4 + 624 * 4)).from_address(id(generator) + object.__basicsize__)).cast("B")


def _seeder():
    """The global generator's state memory and the bytes of the state random.seed(0) gives, when this interpreter
    lays its generators out as _state_memory reads them: checked here, before any student code, on generators of
    its own (a seeded one read back word for word, and a drawn one seeded by the copy and read by getstate). None
    otherwise: each case's start then seeds by setstate. Why: setstate converts 625 ints, ~7.7 us at every case's
    start (half the runtime's own work a case: ~1 ms of a correct Taoistic notebook's 137 cases); the copy is one
    memcpy of 2.5 kB, and gives the very same state."""
    try:
        if _C_RANDOM.__basicsize__ not in range(object.__basicsize__ + 4 + 624 * 4, object.__basicsize__ + 2508):
            return None
        index, words = _SEEDED[-1], _SEEDED[:-1]
        if len(words) != 624:
            return None
        seeded = index.to_bytes(4, sys.byteorder, signed=True) + b"".join(
            word.to_bytes(4, sys.byteorder) for word in words)
        fresh = _C_RANDOM(0)   # held while its memory is read
        if bytes(_state_memory(fresh)) != seeded:
            return None
        drawn = _C_RANDOM(12345)
        drawn.random()
        _state_memory(drawn)[:] = seeded
        if _C_RANDOM.getstate(drawn) != _SEEDED or drawn.random() != _C_RANDOM(0).random():  # type: ignore[attr-defined]
            return None
        return _state_memory(_RANDOM), seeded
    except Exception:  # noqa: BLE001 - any surprise: setstate, as before
        return None


_SEEDER = _seeder()


def _seed_random():
    """Put the global generator in the state random.seed(0) gives (_SEEDED), by C code only."""
    if _SEEDER is not None:
        _SEEDER[0][:] = _SEEDER[1]
    else:
        _SET_STATE(_RANDOM, _SEEDED)
    _RANDOM.gauss_next = None  # type: ignore[attr-defined]  # what Random.seed resets too


class CaseTimeout(BaseException):
    """Raised inside student code when its case runs out of time (the parent kills it if it is swallowed)."""


def _leave_if_forked(owner, error=None):
    """End here, as Python would have ended it, a process the student's code forked that came back into the
    runtime (an os.fork() whose child returned from or raised out of the student's code, sys.exit() included,
    instead of calling os._exit): only `owner`, the process that began the case or the load, answers for it.
    Before, the child answered first (its SystemExit as the case's error) and the parent's own answer then
    looked forged to the grader: an incident that cost an honest, if careless, fork its whole exercise."""
    if _getpid() == owner:
        return
    code = 0 if error is None else 1
    if isinstance(error, SystemExit):
        try:   # the exit status Python gives it: an int as is, None 0, anything else 1 (never a property's)
            given = vars(BaseException)["args"].__get__(error)
            given = given[0] if len(given) == 1 else (None if not given else given)
            code = given if type(given) is int else 0 if given is None else 1
        except BaseException:  # noqa: BLE001
            code = 1
    _exit(code & 0xFF)


def _queued():
    """This thread's run-queue time so far, in seconds (its schedstat's second field): 0.0 where /proc cannot say."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return int(os.read(fd, 128).split()[1]) / 1e9
        finally:
            os.close(fd)
    except (OSError, IndexError, ValueError):
        return 0.0


class LoadClock:
    """The load's alarm on a busy machine: a statement's wall-time allowance moves by what the kernel kept this
    thread waiting for a CPU (at most `most` seconds in all), as the parent's limit does (budget.LoadClock), so a
    slow honest statement starved of CPU is not cut as if it hung. The kernel is read once at the start and once at
    each ring; the parent never takes this clock's word."""

    __slots__ = ("most", "queued", "extra", "due")

    def __init__(self, most):
        self.most, self.queued, self.extra, self.due = most, _queued(), 0.0, 0.0

    def arm(self, seconds):
        self.due = _perf() + seconds
        _setitimer(signal.ITIMER_REAL, max(seconds, 0.001))

    def rearmed(self):
        """At a ring: whether the waiting since the last look moved the alarm, which is then set again."""
        extra = min(self.most, max(0.0, _queued() - self.queued))
        self.due += extra - self.extra
        self.extra = extra
        left = self.due - _perf()
        if left <= 0.001:
            return False
        _setitimer(signal.ITIMER_REAL, left)
        return True


_LOADING: list = [None]      # the load's clock while a statement runs (_on_alarm)


class Inert:
    """Stands in for a module a notebook imports but the grading machine lacks (ipycanvas, nb_mypy, ...).

    Every use of it does nothing and returns another stand-in, so drawing code is harmless at grading time.
    """

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attribute):
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return Inert(f"{self._name}.{attribute}")

    def __setattr__(self, attribute, value):
        pass

    def __call__(self, *args, **kwargs):
        # A decorator of a missing module (@profile, @njit, @jit(...)) leaves the function as it was, as if
        # undecorated: a stand-in in its place made a right graded function score 0.
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        # icecream's ic() returns what it is given (ic(x) is x, ic(a, b) the tuple): the n-puzzle template imports it.
        if self._name == "icecream.ic":
            return args[0] if len(args) == 1 else (args or None)
        return Inert(f"{self._name}()")

    def __getitem__(self, key):
        return Inert(f"{self._name}[]")

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def __repr__(self):
        return f"<stand-in for {self._name}>"


class Capture(io.TextIOBase):
    """A bounded text sink for sys.stdout/sys.stderr: 10 MB of prints cost memory only up to the limit.

    A text stream as Jupyter's are (ipykernel's OutStream): an encoding, writelines, closed, and a descriptor,
    the sandbox's own fd 1 (fd 2 is the same file, never the case's output): faulthandler.enable() and
    subprocess.run(..., stdout=sys.stdout) ask for one, and raised AttributeError in an honest case without it."""

    encoding = "UTF-8"
    name = "<stdout>"

    def __init__(self, limit):
        self.limit, self.parts, self.size, self.dropped = limit, [], 0, 0

    def write(self, text):
        text = _plain(text if isinstance(text, str) else _text(text, None))
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def fileno(self):
        return 1

    def text(self):
        shown = "".join(self.parts)
        if self.dropped:
            shown += f"\n... ({self.dropped} more characters of output not kept)"
        return shown


class NoKeyboard:
    """builtins.input while a case runs (and the kit's, in a notebook): the grader has no keyboard. It writes the
    prompt and raises the EOFError input() raises at the end of its input (the student's traceback is the same),
    and remembers that exception, so the case's error says stage "input" from what the runtime saw, never from its
    message: an EOFError of a pickle, an empty file or the student's own says nothing of the keyboard. sys.stdin
    stays what it was (/dev/null in the sandbox: read and readline give '', as before)."""

    def __init__(self):
        self.raised = None

    def input(self, prompt=""):
        sys.stdout.write(str(prompt))
        error = EOFError("EOF when reading a line")
        self.raised = error
        raise error


_KEYBOARD = NoKeyboard()


class _SeedNumpyRandom:
    """numpy imports numpy.random, and seeds its global generator from the machine's entropy, at the first use
    of `np.random`: often inside a case, whose draws a seed at the case's start could not reach. This finder
    has that generator seeded as soon as it exists (as each case's start seeds it), whoever imports it."""

    def find_spec(self, name, path=None, target=None):
        if name != "numpy.random.mtrand":
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _SeededLoader(spec.loader)  # type: ignore[assignment]  # a loader by its two methods
        return spec


class _SeededLoader:
    """numpy.random.mtrand's own loader, then numpy.random.seed(0) (see _numpy_random)."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _seed_numpy(_numpy_random())


class _SupportFinder:
    """Serves the assignment's support modules (e.g. Set.py) to `import` from sources the parent sent."""

    def __init__(self, sources):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(name, self)  # type: ignore[arg-type]  # a finder and its loader

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source = self.sources[module.__name__]
        module.__file__ = f"{module.__name__}.py"
        module.__builtins__ = _builtins
        _SOURCES[module.__file__] = source.splitlines()
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - course support code


def _make_parents(scratch, name):
    """The folders above a data file's path in the scratch, each a real folder its owner may write (what the student
    left there in their place, a file or a link, is removed first; a folder whose write bit a case took off, the
    scratch's own included, gets it back: os.chmod('.', 0o500) kept a case's rewritten words.txt for the next)."""
    _confine.open_to_owner(scratch)
    parts = name.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = f"{scratch}/{'/'.join(parts[:depth])}"
        try:
            status = os.lstat(folder)
        except OSError:
            os.mkdir(folder, 0o755)
            continue
        if not _S_ISDIR(status.st_mode):
            os.unlink(folder)
            os.mkdir(folder, 0o755)
        else:
            _confine.open_to_owner(folder)


def _remove(path, status):
    """Whatever the student left at a data file's path: a file, a link, a pipe, a folder and what it holds."""
    if _S_ISDIR(status.st_mode):
        _confine.empty_folder(path)   # which gives the folder back its owner's bits first (open_to_owner)
        os.rmdir(path)
    else:
        os.unlink(path)


class Child:
    def __init__(self, request_fd, response_fd):
        self.request_fd, self.response_fd = request_fd, response_fd
        self.module = None
        self.support = {}
        self.output_limit = 65536
        self.sequence = 0
        self.answers = {}            # (helper, arguments' text) -> the body of the parent's reply, for one exercise
        self.texts = {}              # id of an argument that cannot change -> it and its text (codec.call_text)
        self.memo_bytes = 0
        self.replies = None          # the exercise's stream of answers from the parent (wire.FrameStream)
        self.scratch = None          # the working folder, where the course's data files are put (restore_data)
        self.emptied: tuple = ()     # what the student may write, emptied between phases (a jail's /tmp too)
        self.tmpfs = None            # the device of a jail's scratch, a tmpfs (confine.empty_folder's `tmpfs`)
        self.made: tuple = ()        # each of `emptied` as the runtime found it (confine.folder_as_made)
        self.data = {}               # the course's data files (path -> bytes), put in the scratch (restore_data)
        self.written = {}            # data file -> (st_mode, st_mtime_ns) of the file restore_data last wrote there
        self.look = None             # restore_data's buffer for comparing a data file's bytes (64 kB, made once)
        self.sweep = False           # kill(-1) reaches only the student's processes
        self.jailed = False          # PID 1 of the sandbox's own pid namespace
        self.pristine = None         # the loaded module's snapshot (pristine.snapshot), None: not readable
        self.leaves = None           # its immutable objects, held alive (pristine.Leaves): no walk visits them
        self.numpy_random = None     # numpy's global generator and its class's seed, once numpy is loaded
        self.hooks: tuple = (None, None, [])   # the notebook's trace, profile and collector hooks (_gettrace)

    # -- messages -------------------------------------------------------------------------------------------
    def send(self, message):
        _wire.send(self.response_fd, message)

    def receive(self):
        return _wire.read_request_blocking(self.request_fd)

    # -- loading ------------------------------------------------------------------------------------------
    def _run_support(self, name):
        """`%run X.ipynb` in a notebook: run support module X and copy its names into the notebook."""
        stem = os.path.splitext(os.path.basename(str(name)))[0]
        if stem not in self.support:
            raise ImportError(f"%run {name}: no support module {stem!r} is provided by this assignment")
        namespace = {"__name__": stem, "__builtins__": _builtins}
        _SOURCES[f"{stem}.py"] = self.support[stem].splitlines()
        exec(compile(self.support[stem], f"{stem}.py", "exec"), namespace)  # noqa: S102
        for key, value in namespace.items():
            if not key.startswith("__"):
                self.module.__dict__[key] = value

    def _register_lines(self, statements):
        """Let tracebacks show notebook lines: each cell label becomes a pseudo-file for linecache."""
        files: dict = {}
        for statement in statements:
            lines = files.setdefault(statement["filename"], [])
            code_lines = statement["code"].splitlines(keepends=True)
            start = statement["line"] - 1
            end = start + len(code_lines)
            if len(lines) < end:   # the cell's lines before this statement's, blank until theirs come
                lines += ["\n"] * (end - len(lines))
            lines[start:end] = [line if line.endswith("\n") else line + "\n" for line in code_lines]
        for filename, lines in files.items():
            linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
            _SOURCES[filename] = lines

    def _stand_in_for_import(self, statement, error, missing=None):
        """Bind inert stand-ins for what a failed import statement names; the warning that says so, as fields.

        `missing`: the module a statement that is no import lacks (`try: import ipycanvas as cnv` / `except
        ImportError: !pip install ipycanvas` / `import ipycanvas as cnv`, an import under `if`): only its imports
        of that module, outside the functions and classes it defines, get stand-ins (Jupyter had the module), and
        the error stands when it has none."""
        tree = ast.parse(statement["code"])
        first = ""
        for node in (ast.walk(tree) if missing is None else _outside_definitions(tree)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if missing is not None and not _of_module(alias.name, missing):
                        continue
                    bound = alias.asname or alias.name.split(".")[0]
                    self.module.__dict__.setdefault(bound, Inert(alias.name))
                    first = first or alias.name
            elif isinstance(node, ast.ImportFrom):
                if missing is not None and (node.level or not _of_module(str(node.module or ""), missing)):
                    continue
                first = first or str(node.module or "")
                for alias in node.names:
                    if alias.name != "*":
                        self.module.__dict__.setdefault(alias.asname or alias.name,
                                                        Inert(f"{node.module}.{alias.name}"))
        if missing is not None and not first:
            raise error
        name = _error_name(error)
        text = f"{name}: {_text(error)}; the imported names are inert stand-ins"
        # A module this machine lacks (a drawing library, IPython) is the grading environment's business, not
        # the student's: the parent reports it to the TA, not as a warning in the student's feedback.
        if name == "ModuleNotFoundError":
            return "missing module", _module_name(error, first), text
        return "import error", name, text

    def load(self, request):
        self.output_limit = int(request.get("output_bytes", 65536))
        self.support = dict(request.get("support", {}))
        self.data = dict(request.get("data") or {})
        self.restore_data()   # the notebook's top-level code reads them as in Jupyter (words.txt beside it)
        sys.meta_path.insert(0, _SupportFinder(self.support))
        sys.meta_path.insert(0, _SeedNumpyRandom())
        _seed_random()   # what the load draws from the global generators is the same on every run
        _seed_numpy(_numpy_random())
        module = types.ModuleType("__main__")
        module.__dict__.update({
            "__builtins__": _builtins,   # the real module: the student may patch it, for its own code only
            "display": lambda *args, **kwargs: None,
            "get_ipython": lambda: Inert("get_ipython()"),
            "__grader_run__": self._run_support,
        })
        self.module = module
        sys.modules["__main__"] = module
        statements = request["statements"]
        self._register_lines(statements)
        warnings = []      # each (kind, statement index, subject, text): the parent adds the place
        capture = Capture(self.output_limit)
        sys.stdout = sys.stderr = capture
        budget = float(request.get("statement_seconds", 5.0))   # the whole load phase's wall time
        reserve = min(1.0, budget / 10)   # kept for the statements after one that runs out of time
        left_out: list = []
        compiled = _compiled_here(request)
        owner = _getpid()
        started = _perf()
        clock = LoadClock(float(request.get("waiting_seconds", 0.0)))   # moves the alarm by waiting for a CPU
        for index, statement in enumerate(statements):
            if not statement.get("quiet"):   # one that calls nothing cannot hang the load (precompiled.py)
                self.send({"op": "progress", "index": index, "left_out": list(left_out)})
            try:
                code = _statement_code(statement, compiled)
            except SyntaxError as error:
                warnings.append(("syntax error", index, "SyntaxError", f"left out: SyntaxError: {error.msg}"))
                continue
            remaining = budget + clock.extra - (_perf() - started)
            seconds = remaining - reserve if remaining > 2 * reserve else remaining
            clock.arm(seconds)
            _LOADING[0] = clock
            try:
                exec(code, module.__dict__)  # noqa: S102 - the student's own code, in the sandbox
                _leave_if_forked(owner)
            except CaseTimeout as error:
                _leave_if_forked(owner, error)
                left_out.append(index)
                names = [str(name) for name in statement.get("names", ()) if str(name) not in module.__dict__]
                unavailable = f"; {', '.join(names)} unavailable" if names else ""
                warnings.append(("load timeout", index, ", ".join(names),
                                 f"did not finish within {budget:g} s; left out{unavailable}"))
            except ImportError as error:
                _leave_if_forked(owner, error)
                try:
                    missing = None
                    if statement.get("kind") != "import":
                        if _error_name(error) != "ModuleNotFoundError":
                            raise error
                        missing = _module_name(error, "")
                        if not missing:
                            raise error
                    kind, subject, text = self._stand_in_for_import(statement, error, missing)
                    warnings.append((kind, index, subject, text))
                except BaseException as failure:  # noqa: BLE001 - e.g. ast broken by patched builtins
                    name = _error_name(failure)
                    warnings.append(("error at load", index, name, f"{name}: {_text(failure)}"))
            except BaseException as error:  # noqa: BLE001 - SystemExit and friends must not end the load
                _leave_if_forked(owner, error)
                name = _error_name(error)
                warnings.append(("error at load", index, name, f"{name}: {_text(error)} (statement skipped)"))
            finally:
                _LOADING[0] = None
                _setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stderr = _STDOUT, _STDERR
        names = sorted(k for k in module.__dict__ if type(k) is str and not k.startswith("__"))
        self.send({"op": "loaded", "warnings": [
                       # cut with room for the "..." marker: the parent refuses 201 and 4,001 characters
                       {"kind": kind, "statement": at, "subject": _cut(subject, 190), "text": _cut(text, 3990)}
                       for kind, at, subject, text in warnings[:10_000]],
                   "output": capture.text(), "names": [n for n in names if len(n) <= 1000][:100_000],
                   "left_out": left_out})

    # -- cases ----------------------------------------------------------------------------------------------
    def _oracle(self, name):
        child = self
        name_text = _wire.json_text(name)

        def oracle(*args, **kwargs):
            call = _call_text(name, args, kwargs, child.texts)
            # The reference's helpers are functions of their arguments: a call made before in this exercise is
            # answered from the memo, without a round trip. The key is the text of the arguments as they were
            # when called (the student may mutate them later), the very text the parent decodes; each answer is
            # made afresh from the reply's bytes (the student may mutate what it got).
            key = (name, *call)
            answer = child.answers.get(key)
            if answer is None:
                # A process the notebook forked (_FORKED): its calls and the others' took each other's replies, and
                # a pool mapping a function that calls the helper hung to the submission's time (every later case
                # skipped). It fails now, as the case's own error.
                if _FORKED[0]:
                    raise RuntimeError(f"{name} is the course's here and answers only in the process running the "
                                       "case, not in a process the notebook started (a multiprocessing pool's)")
                answer = child.ask(name_text, call)
                if answer[:1] == b"P":   # with the answers to calls it expects next (grader/sandbox/prefetch.py)
                    answer = child.prefetched(answer)
                child.remember(key, answer)
            if answer[:1] != b'"':   # a plain answer, packed by the parent (codec.pack)
                return _unpack(answer, child.texts)
            reply = _wire.parse_body(b"{" + answer)
            if "error" in reply:
                raise RuntimeError(f"{name} raised {reply['error']}")
            return _decode(reply["value"])

        oracle.__name__ = oracle.__qualname__ = name
        return oracle

    def ask(self, name_text, call):
        """One round trip to the parent: its reply to this call, after the reply's seq (process._reply_frame).
        One thread's at a time (_ONE_EXCHANGE)."""
        # The case's alarm must not interrupt an exchange halfway: a half-read reply would be read later as the
        # answer to another call. The case's clock is CPU time (ITIMER_PROF): it stands still by itself while
        # this process waits for the reference's answer, and an alarm due during the exchange is raised as soon
        # as the exchange is complete (_on_alarm defers it; no signal mask, which costs two system calls).
        _ONE_EXCHANGE.acquire()
        _EXCHANGE[0], _EXCHANGE[1] = True, False
        try:
            self.sequence += 1
            sequence = self.sequence
            frame = _wire.frame_of(f'{{"op":"oracle","name":{name_text},"seq":{sequence},'
                                   f'"args":{call[0]},"kwargs":{call[1]}}}')
            if self.replies is None:
                self.replies = _wire.FrameStream(self.request_fd)   # in the exercise's process: it reads them all
            _wire.send(self.response_fd, frame)
            # The parent's reply starts with its seq (see process._reply_frame): an older reply, which only an
            # exchange cut short could leave behind, is skipped without being parsed.
            prefix = b'{"seq":%d,' % sequence
            while True:
                body = self.replies.read_body()
                if body.startswith(prefix):
                    break
        finally:
            _EXCHANGE[0] = False
            _ONE_EXCHANGE.release()
        if _EXCHANGE[1]:
            _EXCHANGE[1] = False
            raise CaseTimeout("the time limit of this case was reached")
        return body[len(prefix):]

    def remember(self, key, answer):
        """Keep a reply's bytes for the rest of the exercise, within MEMO_BYTES (it counts toward the student's
        own memory): a full memo is emptied and starts again."""
        size = len(answer) + len(key[1]) + len(key[2])
        if self.memo_bytes + size > MEMO_BYTES:
            self.answers.clear()
            self.memo_bytes = 0
        if size <= MEMO_BYTES:
            self.answers[key] = answer
            self.memo_bytes += size

    def prefetched(self, data):
        """The reply in a reply with prefetched answers (codec.pack_prefetched), whose other answers go into the
        memo under the key this process makes for those calls (the same texts, made by the parent the same way):
        a call it then makes costs no round trip, one it never makes costs a memo entry."""
        answer, more = _unpack_prefetched(data)
        answers = self.answers
        for name, args, reply in more:
            key = (name, args, _NO_KWARGS)
            if key not in answers:
                self.remember(key, reply)
        return answer

    def _method_oracle(self, name, spec):
        """A stand-in for an isolated method: it sends the data the rubric's call reads from its arguments
        (`self.goal`, `node.state`), computed here on the student's objects, and returns the reference's answer."""
        ask = self._oracle(name)
        params = [str(param) for param in spec.get("params", ())]
        inputs = [compile(str(code), "<isolated method>", "eval") for code in spec.get("inputs", ())]

        def method(*args, **kwargs):
            scope = dict(zip(params, args, strict=False))
            scope.update((key, value) for key, value in kwargs.items() if key in params)
            scope["__builtins__"] = dict(_PRISTINE)
            return ask(*[eval(code, scope) for code in inputs])  # noqa: S307 - the rubric's attribute chains

        method.__name__ = method.__qualname__ = name.split(".")[-1]
        return method

    def _patch_methods(self, namespace, isolate, methods, missing):
        """Put the stand-ins on the student's classes for one case; returns what to put back."""
        patched = []
        for name in isolate:
            if "." not in name or name not in methods:
                continue
            owner, attribute = name.split(".", 1)
            cls = namespace.get(owner)
            if not isinstance(cls, type):
                continue   # no such class: the case fails as it would have
            try:
                old = cls.__dict__.get(attribute, missing)
                setattr(cls, attribute, self._method_oracle(name, methods[name]))
                patched.append((cls, attribute, old))
            except BaseException:  # noqa: BLE001 - a class that refuses: the student's own method answers
                pass
        return patched

    def run_case(self, case, isolate, methods=None):
        if self.data:   # each case finds the course's data files as they came, whatever an earlier case did
            self.restore_data()
        namespace = self.module.__dict__
        missing = object()
        patched: list = []
        saved: dict = {}
        if isolate or case.get("set"):   # most cases set no global and run with no helper of the reference
            settings = {name: _input(value) for name, value in case["set"].items()} if case.get("set") else {}
            replaced = {name: self._oracle(name) for name in isolate if "." not in name}
            patched = self._patch_methods(namespace, isolate, methods or {}, missing)
            saved = {name: namespace.get(name, missing) for name in {**settings, **replaced}}
            namespace.update(settings)
            namespace.update(replaced)
        scope = dict(namespace)
        scope.update({name: _input(value) for name, value in case.get("values", {}).items()})
        # The rubric's expressions see the original builtins (a fresh copy each case); the student's functions
        # see the builtins module, patched or not, as they left it.
        scope["__builtins__"] = dict(_PRISTINE)
        capture = Capture(self.output_limit)
        _seed_random()   # what random.seed(0) does (see _SEEDED)
        numpy_random = self.numpy_random
        if numpy_random is None and "numpy.random.mtrand" in _MODULES:   # imported by an exercise's own code
            numpy_random = self.numpy_random = _numpy_random()
        outcome = {"op": "result", "case": case["id"]}
        owner = _getpid()
        value = None       # the JSON text of the result's wire, when there is one
        stage = ""
        builtins_before = dict(_builtins.__dict__)   # what the student patches there lasts one case
        sys.stdout = sys.stderr = capture
        _KEYBOARD.raised = None
        if builtins_before.get("input") is _INPUT:   # an input() the notebook put in builtins stays its own
            _builtins.input = _KEYBOARD.input        # undone with the rest of builtins after the case
        _setitimer(signal.ITIMER_PROF, float(case["timeout"]))
        try:
            try:
                if numpy_random is not None:   # on the case's clock (see _numpy_random)
                    _seed_numpy(numpy_random)
                result = eval(_compiled(case["code"], "<case>"), scope)  # noqa: S307 - rubric expression
                if case.get("reduce"):
                    stage = "reduce"
                    result = eval(_compiled(case["reduce"], "<reduce>"),  # noqa: S307 - rubric expression
                                  {**scope, "result": result})
                    stage = ""
                probes = {}
                for name, code in case.get("probes", {}).items():
                    try:
                        probes[name] = {"value": _encode(eval(_compiled(code, "<probe>"),  # noqa: S307
                                                              {**scope, "result": result}))}
                    except CaseTimeout:
                        raise
                    except BaseException as error:  # noqa: BLE001
                        probes[name] = {"error": _cut(f"{_error_name(error)}: {_text(error)}", 3000)}
            finally:
                _setitimer(signal.ITIMER_PROF, 0)
                sys.stdout, sys.stderr = _STDOUT, _STDERR
            _leave_if_forked(owner)
            try:
                value = _value_text(result)
                outcome.update(status="ok", probes=probes)
            except _codec.CodecError as error:
                outcome.update(status="error", error={"type": "UnencodableResult", "message": _text(error),
                                                      "where": "", "traceback": ""})
        except CaseTimeout as error:
            _leave_if_forked(owner, error)
            outcome.update(status="timeout", error=_describe(error))
        except BaseException as error:  # noqa: BLE001 - sys.exit, KeyboardInterrupt: all cost only this case
            _leave_if_forked(owner, error)
            outcome.update(status="error", error=_describe(error, "input" if error is _KEYBOARD.raised else stage))
        finally:
            sys.stdout, sys.stderr = _STDOUT, _STDERR
            _restore(_builtins.__dict__, builtins_before)
            for cls, attribute, old_method in reversed(patched):
                try:
                    if old_method is missing:
                        delattr(cls, attribute)
                    else:
                        setattr(cls, attribute, old_method)
                except BaseException:  # noqa: BLE001
                    pass
            for name, old in saved.items():
                if old is missing:
                    namespace.pop(name, None)
                else:
                    namespace[name] = old
        outcome["output"] = capture.text()
        return _result_frame(outcome, value)

    def exercise(self, request):
        """Run an exercise's cases in a fork, so nothing one exercise does to the module leaks into the next.
        The fork goes on with the next exercise while it is as pristine as a new fork would be (see
        pristine.py): a fork is then made only after an exercise that changed something. `request` None: the
        fork reads it. False when the grader's requests are over."""
        init = self.jailed and os.getpid() == 1   # the jail's PID 1: its death kills every process of the jail
        pid = _fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                if not init:   # else the kernel does it (~0.1 ms and 26 copied pages for ctypes' prctl call)
                    _confine.die_with_parent()
                self.exercises(request)
            except BaseException:  # noqa: BLE001 - the parent learns from the exit status
                _exit(70)
            _exit(0)
        _, status = os.waitpid(pid, 0)
        try:  # sleepers and children the exercise left behind in its process group go with it
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        self.reset()
        code = os.waitstatus_to_exitcode(status)
        if code == SESSION_OVER:
            return False
        if code == PASS_ON and _wire.pending(self.request_fd, 0):
            return True   # the grader heard `exited` from the fork; its next request, unread, is served here
        self.send({"op": "exited", "status": code})
        return True

    def exercises(self, request):
        """In an exercise's fork: run exercises for as long as nothing of the last one can be seen by the next.
        Returns when the next one needs a fresh fork (the runtime then reports this one's end), or ends the fork
        with PASS_ON when it said so itself and left the next request to a fresh fork; ends it with SESSION_OVER
        when the grader has nothing more to ask."""
        # The /proc files its checks read, opened before any student code runs here (pristine.Files), and its
        # state as a fork starts: what each check compares with.
        files = _pristine.Files.open() if self.pristine is not None else None
        started = _pristine.process(files=files) if self.pristine is not None else None
        if request is None:   # made ahead of its request (serve)
            request = self.next_exercise()
        while True:
            more = request.get("more") is True   # read before any student code runs (only a hint, see below)
            self.answers, self.texts, self.memo_bytes, self.replies = {}, {}, 0, None   # this exercise's own
            _FORKED[0] = False   # the exercise's process: it may ask the parent
            _CODE.clear()   # so is the code of its calls: the pristine walk does not look at the runtime's objects
            _take_codes(request)
            self.send({"op": "forked", "pid": os.getpid()})
            _hooks_on(self.hooks)   # the notebook's own, for its cases only
            last = self.run_cases(request)
            try:
                _hooks_off()
                # An exercise that asked the reference (isolated helpers) ends its process: nothing the reference
                # answered may outlive it.
                if started is None or request.get("isolate") or self.replies is not None:
                    return
                # Whether this process may serve the next exercise is asked only once there is one: after the
                # last exercise the grader kills the sandbox (or closes the pipe) and no check is spent. Until the
                # check says so, the next request stays unread in the pipe, for a fresh fork (PASS_ON). No thread
                # or process the exercise left may be there to read it first, and the pipes must be the runtime's
                # own: otherwise this process ends now and the runtime reports it, as before.
                company = _pristine.company(files)
                if company is None or company != _pristine.company_of(started) \
                        or not _pristine.same_files(started, (self.request_fd, self.response_fd)):
                    return
                # The last answer and `exited` in one write: the parent reads both at one wake-up. The last
                # case's clock (the parent's) stops at this write, a few system calls (the check above) later.
                last, exited = b"", last + _EXITED
            finally:   # whatever ends this process here (a timer the notebook left raising) ends it answered
                if last:
                    _wire.send(self.response_fd, last)
            _wire.send(self.response_fd, exited)
            # Where the grader said another exercise follows (`more`), the check runs while it turns around, not
            # after its request came: no wall time of the notebook's. Its answer holds until the request is read:
            # no thread, process or hook of the student's is left to change anything (company, above; hooks off),
            # and the next request stays unread until then either way. A wrong hint costs time, never a check:
            # without it the check waits for the request, and after the last exercise none is spent.
            same = self.still_pristine(started, company, files) if more else None   # None: once the request came
            if same is not True:   # (known already to be pristine: the request is read as it comes, no wait first)
                if not _wire.pending(self.request_fd, None):
                    _exit(SESSION_OVER)
                if not (self.still_pristine(started, company, files) if same is None else same):
                    _exit(PASS_ON)
            self.empty_scratch()
            request = self.next_exercise()

    def next_exercise(self):
        """In an exercise's fork: the grader's next request; a request that is not an exercise (quit) or the
        pipe's end ends the fork with SESSION_OVER, as the runtime ends on them."""
        try:
            request = self.receive()
        except EOFError:
            _exit(SESSION_OVER)
        if request.get("op") != "exercise":
            _exit(SESSION_OVER)
        return request

    def run_cases(self, request):
        """An exercise's cases, each result written as its case ends, but the last: its frame is returned, to go
        with what this process says next (Child.exercises). The request holds how many there are (`count`) and
        its first case, or all of them (a public part, whose inputs the student has anyway: process._held); each
        next one comes once the last one's answer reached the grader (next_case): no case holds a later hidden
        case's input, to do that case's work on its own clock."""
        cases, isolate, methods = request["cases"], request.get("isolate", []), request.get("methods", {})
        count = request.get("count")
        count = count if type(count) is int and count > len(cases) else len(cases)
        last = count - 1
        for number in range(count):
            frame = self.run_case(cases[number] if number < len(cases) else self.next_case(), isolate, methods)
            if number == last:
                return frame
            _wire.send(self.response_fd, frame)   # a result is a frame already (_result_frame)
        return b""

    def next_case(self):
        """The exercise's next case, which the grader sends once the last answer reached it (process.py:
        _case_frame). Read through the exercise's stream of replies where there is one (it may hold what it read
        ahead); a reply an exchange cut short left there is skipped, as Child.ask skips it."""
        while True:
            if self.replies is not None:
                body = self.replies.read_body()
            else:   # one read: the case is all the pipe holds (but replies to calls a case forged, skipped too)
                bodies = [body for body in _wire.read_bodies(self.request_fd) if not body.startswith(b'{"seq":')]
                if len(bodies) > 1:   # the grader sends one case, then waits for its answer
                    raise _wire.FrameError("the grader sent more than the next case")
                body = bodies[0] if bodies else b'{"seq":'
            if not body.startswith(b'{"seq":'):
                break
        message = _wire.request_of(body)
        if message.get("op") != "case" or type(message.get("case")) is not dict:
            raise _wire.FrameError("the grader sent no next case")
        _take_codes(message)
        return message["case"]

    def still_pristine(self, started, company, files=None):
        """Whether this fork may serve the next exercise: nothing it could observe changed since the load
        (pristine.check; `files`: the /proc files it keeps open). The check reads the company again itself
        (`company`, read at the exercise's end, was before code of the student's that the check may run)."""
        return _pristine.check(self.pristine, self.snapshot, started, files)

    def snapshot(self, settle=None):
        """What the next exercise could observe of this process (pristine.snapshot), from the notebook's
        module, the support modules it imported and builtins; the runtime's own objects are not the student's.
        `settle`: pristine.check's."""
        roots = [self.module.__dict__, _builtins.__dict__]
        homes = {"__main__"}
        for name in self.support:
            module = sys.modules.get(name)
            if issubclass(type(module), types.ModuleType):   # never a student's __class__
                roots.append(vars(types.ModuleType)["__dict__"].__get__(module))
                homes.add(name)
        # The global random generators are seeded afresh at each case's start: their state between cases is no one's.
        own = (globals(), __builtins__, self, self.__dict__, _RANDOM, *(self.numpy_random or ())[:1])
        if self.leaves is None:   # once, after the load: what no exercise can change, for every walk to skip
            self.leaves = _pristine.leaves(roots, own=own, homes=homes, base=_BASE_LEAVES[0])
        return _pristine.snapshot(roots, own=own, homes=homes, skip=self.leaves, settle=settle)

    def restore_data(self):
        """Put each of the course's data files in the scratch (the working folder) as it came, whatever is at its
        path: an earlier case, exercise or load that rewrote, deleted or replaced one (by a folder, a link, a pipe)
        changes no other's input. Written afresh unless the file there is the one it wrote, unchanged (_unchanged:
        its bytes compared, a third of a write's cost). A file that cannot be written (the student filled or locked
        its own folder) is left out, never half written."""
        if not self.scratch:
            return
        for name, content in self.data.items():
            path = f"{self.scratch}/{name}"
            try:
                _make_parents(self.scratch, name)
                if self._unchanged(path, name, content):
                    continue
                self.written.pop(name, None)
                try:
                    status = os.lstat(path)
                except FileNotFoundError:
                    pass
                else:
                    _remove(path, status)
                fd = os.open(path, _O_PUT, 0o644)
            except OSError:
                continue
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(fd, view):]
                status = os.fstat(fd)
                self.written[name] = (status.st_mode, status.st_mtime_ns)
            except OSError:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            finally:
                os.close(fd)

    def _unchanged(self, path, name, content):
        """Whether the file at `path` is as restore_data wrote it: a regular file of the same mode, size and
        modification time, holding the same bytes. The bytes are compared, never judged by times alone: a write
        through a shared mapping on tmpfs leaves both times as they were, and a rewrite within the clock's tick
        keeps them on kernels whose file times are coarse. Anything unreadable counts as changed."""
        written = self.written.get(name)
        if written is None:
            return False
        try:
            fd = os.open(path, _O_LOOK)
        except OSError:
            return False
        try:
            status = os.fstat(fd)
            if (status.st_mode, status.st_mtime_ns, status.st_size) != (*written, len(content)):
                return False
            if self.look is None:
                self.look = bytearray(65536)
            look, done = memoryview(self.look), 0
            while done < len(content):
                count = os.readv(fd, [look])
                if not count or not content.startswith(look[:count], done):   # a memcmp, no copy
                    return False
                done += count
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def reset(self):
        """Between phases: no process of the student's survives (whatever session, group or parent it
        found) and the scratch is empty again, so each exercise starts from the same state."""
        if self.sweep and (self.jailed or os.getuid() == os.geteuid() >= _confine.UID_BASE):
            try:   # every process this uid may signal: in the jail's pid namespace, or of our unique uid
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        _kill_orphans()
        self.empty_scratch()

    def empty_scratch(self):
        """Empty every folder the student may write (the working folder, and in a jail /tmp, which shares its tmpfs)
        and put each folder's own mode, attributes and times back as made: nothing a phase wrote is there for the
        next."""
        for folder, made in zip(self.emptied, self.made, strict=True):
            _confine.empty_folder(folder, self.tmpfs, made)

    def serve(self):
        while True:
            try:
                request = self.receive()
            except EOFError:
                return
            operation = request.get("op")
            if operation == "load":
                if _get_threshold() == _THRESHOLD:   # the load's objects die by reference counting too
                    _set_threshold(YOUNG_OBJECTS, *_THRESHOLD[1:])
                # Read before any student code runs. False: no fork goes on to the next exercise (the grader's
                # reload for isolated exercises, whose forks end with them): no snapshot is taken for it.
                reuse = request.get("reuse") is not False
                self.load(request)
                self.hooks = _hooks_off()
                self.reset()
                # The loaded module is what every exercise's fork starts from: the collector leaves it alone
                # from now on, so a collection in a fork does not copy every page the module's objects are on.
                # The grader's own freeze: what each check compares the frozen objects with (pristine.freeze).
                _pristine.freeze()
                self.numpy_random = _numpy_random()
                if reuse:
                    self.pristine = self.snapshot()   # what a fork that goes on must still show (pristine.py)
                # From here on each exercise's fork is made before its request comes, and reads it itself: its
                # start (the fork, the first reading of its process state, ~1-2 ms) overlaps the grader's
                # turnaround instead of following it. The runtime reads nothing while a fork lives.
                while self.exercise(None):
                    pass
                return
            elif operation == "exercise":
                if not self.exercise(request):
                    return
            elif operation == "quit":
                return


_BASE_LEAVES: list = [None]   # builtins' leaves, taken by the zygote (take_base_leaves)


def take_base_leaves():
    """In the zygote, before its first fork: the leaves of builtins (pristine.leaves' `base`), the same in every
    sandbox, which each one's first snapshot found again (about 1 ms of CPU per notebook). Builtins are as the
    interpreter made them here: no student code has run in this process."""
    _BASE_LEAVES[0] = _pristine.leaves([_builtins.__dict__])


def _hooks_off():
    """Take the trace, profile and collector hooks off (why: where _gettrace is bound), returning those that were on."""
    hooks = (_gettrace(), _getprofile(), list(_GC_CALLBACKS))
    _settrace(None)
    _setprofile(None)
    _GC_CALLBACKS.clear()
    return hooks


def _hooks_on(hooks):
    """Put back hooks _hooks_off took off."""
    _settrace(hooks[0])
    _setprofile(hooks[1])
    _GC_CALLBACKS[:] = hooks[2]


def _numpy_random():
    """numpy's global generator (what numpy.random.seed and numpy.random.rand use) and its class's own seed, or
    None while numpy is not loaded. numpy seeds it from the machine's entropy at import, so a notebook drawing
    from it unseeded got another verdict on every run: each case seeds it as it seeds Python's `random`. Its
    class is numpy's C class (a class of the student's is left alone), whose seed cannot be rebound; what it
    calls (the generator's bit generator, an attribute a student may set) runs on the case's clock, as the
    student's own code."""
    mtrand = _MODULES.get("numpy.random.mtrand")
    if not issubclass(type(mtrand), types.ModuleType):
        return None
    generator = _MODULE_DICT(mtrand).get("_rand")
    kind = type(generator)
    seed = _TYPE_DICT(kind).get("seed")
    if _FLAGS(kind) & _HEAPTYPE or seed is None:
        return None
    return generator, seed


def _seed_numpy(found):
    """numpy.random.seed(0) on the generator _numpy_random found, if any. One whose bit generator is not MT19937
    (numpy.random.set_bit_generator) has no such seed: it is left as the notebook made it."""
    if found is not None:
        try:
            found[1](found[0], 0)
        except TypeError:
            pass


def _call_text(name, args, kwargs, kept):
    """The text of an isolated-helper call's arguments and keywords, as the parent decodes them: plain values in
    one walk (codec.call_text, which keeps the text of a state it saw before in `kept`), anything else through
    the wire."""
    try:
        return (_call_args(args, kept) or _wire.json_text(_encode(list(args))),
                (_plain_text(kwargs) or _wire.json_text(_encode(kwargs))) if kwargs else _NO_KWARGS)
    except _codec.CodecError as error:
        raise TypeError(f"{name}: arguments cannot be passed to the reference: {error}") from None


def _statement_code(statement, compiled):
    """A kept statement's code: the parent's compile of it (precompiled.py), when it sent one this interpreter
    can load, or else compiled here (a SyntaxError then says what is wrong with it, a SyntaxWarning goes to the
    load's output)."""
    code = _parents_code(statement.get("compiled")) if compiled else None
    if code is not None:
        return _labelled(code, statement["filename"])
    return compile("\n" * (statement["line"] - 1) + statement["code"], statement["filename"], "exec",
                   flags=_ANNOTATIONS, dont_inherit=True)


def _labelled(code, filename):
    """The parent's code (compiled under a neutral name) with the cell's label as its file, in every function and
    class body it holds too, as compiling it here would have made it."""
    consts = tuple(_labelled(const, filename) if type(const) is _CODE_TYPE else const for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _value_text(result):
    """The JSON text of a result's wire: a plain value's made in one walk (codec.plain_text), without the wire
    in between and a second walk to dump it; raises CodecError as encode does."""
    return _plain_text(result) or _wire.json_text(_encode(result))


def _result_frame(outcome, value):
    """A case's result frame: `outcome` with the value's JSON text in it, its keys in the order the parent knows
    a right answer's frame by (process.right_answer: op, case, status, value, probes, output)."""
    if value is None:
        return _wire.frame_of(_wire.json_text(outcome))
    case = _wire.json_text(outcome["case"])
    if not outcome["probes"] and outcome["output"] == "":   # most answers: the tail is always the same text
        return _wire.frame_of(f'{{"op":"result","case":{case},"status":"ok","value":{value},{_QUIET_TAIL}')
    tail = _wire.json_text({"probes": outcome["probes"], "output": outcome["output"]})
    return _wire.frame_of(f'{{"op":"result","case":{case},"status":"ok","value":{value},{tail[1:]}')


def _input(value):
    """A case's input as the student's code gets it, fresh: packed by the parent (codec.pack, in a marshalled
    request), or from the wire."""
    return _unpack(value) if type(value) is bytes else _student_value(value)


def _take_codes(request):
    """A case's rubric expressions as the parent compiled them (precompiled.expressions), into _CODE, when
    this interpreter can load its code: a load costs a fifteenth of a compile. What is not there is compiled
    by _compiled, as before. Each comes with its case (the request's first, then each next: Child.next_case),
    as an expression may hold a literal input; one this exercise loaded already is not loaded again."""
    if not _compiled_here(request) or type(request.get("codes")) is not list:
        return
    for entry in request["codes"][:_CODE_ENTRIES]:
        if type(entry) is not tuple or len(entry) != 3:
            continue
        text, filename, data = entry
        if type(text) is str and type(filename) is str and (text, filename) not in _CODE:
            code = _parents_code(data)
            if code is not None:
                _CODE[(text, filename)] = code


def _compiled_here(request):
    """Whether the code the parent compiled for this request (precompiled.py) is good in this interpreter."""
    return _MAGIC is not None and request.get("magic") == _MAGIC


def _parents_code(data):
    """The code object in the marshal data of the parent's compile, or None: data this interpreter cannot load (then
    the child compiles the text itself)."""
    if type(data) is not bytes:
        return None
    try:
        code = _marshal_loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is _CODE_TYPE else None


def _compiled(text, filename):
    """A rubric expression's code. An exercise's cases repeat a few call texts (`matches(__v0, __v1)` ten times),
    and a code object cannot change: each text is loaded from the parent's compile (_take_codes) or, where it sent
    none, compiled here, once per exercise."""
    key = (text, filename)
    code = _CODE.get(key)
    if code is None:
        if len(_CODE) >= _CODE_ENTRIES:
            _CODE.clear()
        code = _CODE[key] = compile(text, filename, "eval")
    return code


def _restore(namespace, saved):
    """Put a namespace back as it was, by identity only: comparing would call a student object's __eq__."""
    namespace.update(saved)
    if len(namespace) != len(saved):   # every saved name is back: only a name added since can make it longer
        for key in [key for key in namespace if key not in saved]:
            del namespace[key]


def _plain(text, limit=None):
    """Exact str, cut to `limit` characters: a student's str subclass may lie about its length or contents."""
    if type(text) is not str:
        text = str.__str__(text) if isinstance(text, str) else "<not text>"
    return text if limit is None or len(text) <= limit else text[:limit] + "..."


_cut = _plain


def _text(error, limit=2000):
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - a student exception whose __str__ fails
        text = "<unprintable>"
    return _plain(text, limit)


def _outside_definitions(tree):
    """The nodes of a statement whose imports bind names of the module: not those inside the functions, classes
    and lambdas it defines (a function's imports run when it is called, a class body's bind its attributes).
    Not syntax.analysis.walk_outside_lambdas: that one enters functions and classes, and the child imports no
    grader module."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) or node is tree:
            stack.extend(ast.iter_child_nodes(node))


def _of_module(imported, missing):
    """Whether importing `imported` imports the module `missing` (itself, or a module of its package)."""
    return imported == missing or imported.startswith(missing + ".")


def _module_name(error, fallback):
    """The module a ModuleNotFoundError names (`error.name`, set by the import system), else the imported one."""
    try:   # ImportError's own slot: a student's subclass cannot answer for it
        name = ImportError.__dict__["name"].__get__(error, type(error))
    except BaseException:  # noqa: BLE001 - not an ImportError after all
        name = None
    return _plain(name, 200) if type(name) is str and name else _plain(fallback, 200)


def _error_name(error):
    """The exception's class name, read through type's own descriptor so a metaclass cannot lie about it."""
    try:
        return _plain(type.__dict__["__name__"].__get__(type(error), type), 200)
    except BaseException:  # noqa: BLE001
        return "<exception>"


def _describe(error, stage=""):
    """Type, message and the student's own frames (cells), innermost last.

    The traceback is walked here, with source lines from the runtime's own copy of the notebook's cells, rather
    than through the traceback and linecache modules, which run on builtins the student may have patched.
    """
    frames: list = []
    # The descriptor itself: a student's exception class may override the attribute.
    tb = BaseException.__traceback__.__get__(error)  # type: ignore[union-attr]
    while tb is not None and len(frames) < 1000:
        code = tb.tb_frame.f_code
        filename = _plain(code.co_filename)
        if filename.startswith(("In [", "cell ")) or filename.endswith(".py") and not filename.startswith(_HERE):
            frames.append((filename, _line_of(tb), _plain(code.co_name, 200)))
        tb = tb.tb_next
    student = [f for f in frames if f[0].startswith(("In [", "cell "))]
    where = _place(*student[-1][:2]) if student else ""
    lines = []
    for filename, number, name in frames[-12:]:
        lines.append(_plain(f"  {_place(filename, number)}, in {name}", 400))
        source = _SOURCES.get(filename, ())
        if type(number) is int and 0 < number <= len(source):
            lines.append("    " + _plain(source[number - 1].strip(), 400))
    name = "timeout" if isinstance(error, CaseTimeout) else _error_name(error)
    described = {"type": name, "message": _text(error), "where": _plain(where, 1000),
                 "traceback": _plain("\n".join(lines), 19_000)}
    if stage:
        described["stage"] = stage
    return described


def _place(filename, number):
    return f"{filename}, line {number}" if number is not None else filename


def _line_of(tb):
    """The line a traceback entry stopped at. An alarm can land on an instruction the compiler gave no line (a
    loop's jump back, a function's cleanup: tb_lineno is None), and a timeout was reported 'at cell 4, line None':
    the line of the nearest instruction before it that has one is where the student's code was."""
    number = tb.tb_lineno
    if type(number) is int:
        return number
    best = None
    try:
        for start, _end, line in tb.tb_frame.f_code.co_lines():
            if start > tb.tb_lasti:
                break
            if type(line) is int:
                best = line
    except BaseException:  # noqa: BLE001 - a place is a courtesy: without one the frame has no line
        return None
    return best


def _become_subreaper():
    """Orphans of an exercise (even those that left its process group) become this process's children."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_confine.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


SWEEPS = 100   # rounds of _kill_orphans: each kills the children there are, whose own children then come here


def _kill_orphans():
    """Kill and reap every child still attached to this process (the exercise's fork is already gone): the
    children of its threads as /proc lists them (an exercise's orphans come here: the runtime is their
    subreaper, or its jail's PID 1), then those a killed child's death handed over, until none is left. It read
    every process's /proc/PID/stat for its parent instead: 3 ms a call with 140 processes on the machine, ~38 ms
    with a busy machine's, twice a notebook in rlimits mode (a jail's procfs shows its own processes only)."""
    me = os.getpid()
    for _ in range(SWEEPS):
        children = _pristine._children(me)
        if not children:   # none left (or /proc unreadable: nothing more to find either way)
            return
        for child in map(int, children):
            try:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
            except OSError:
                pass


def _on_alarm(signum, frame):
    if _EXCHANGE[0]:   # mid-exchange with the parent: raised when it is complete (Child.ask)
        _EXCHANGE[1] = True
        return
    clock = _LOADING[0]
    if clock is not None and signum == signal.SIGALRM and clock.rearmed():   # a load statement kept waiting
        return
    raise CaseTimeout("the time limit of this case was reached")



try:
    import __future__
    _ANNOTATIONS = __future__.annotations.compiler_flag
except (ImportError, AttributeError):  # pragma: no cover
    _ANNOTATIONS = 0


def _refuse_audit_hooks(event, args):
    """An audit hook cannot be listed or removed: a student's would outlive its exercise unseen by the pristine
    check and run inside the check's own reads of /proc, after its walk. The interpreter does not add a hook
    that an existing one refuses with a RuntimeError (the student's call returns as if it had)."""
    if event == "sys.addaudithook":
        raise RuntimeError("no audit hooks in the grader's sandbox")


def _apply_limits(limits):
    """Limits the student's process set for itself before running any student code."""
    for name, value in (("RLIMIT_AS", limits.get("memory_bytes")), ("RLIMIT_CPU", limits.get("cpu_seconds")),
                        ("RLIMIT_FSIZE", limits.get("file_bytes")), ("RLIMIT_CORE", 0),
                        ("RLIMIT_NOFILE", limits.get("open_files")), ("RLIMIT_NPROC", limits.get("processes"))):
        if value is None or not hasattr(resource, name):
            continue
        kind = getattr(resource, name)
        try:
            soft, hard = resource.getrlimit(kind)
            value = int(value)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass


def start(request_fd, response_fd, config, facts, jailed):
    """The runtime's start in a freshly forked child (see zygote.py): limits, scratch, then serve."""
    signal.signal(signal.SIGALRM, _on_alarm)   # the load phase's wall budget
    signal.signal(signal.SIGPROF, _on_alarm)   # a case's CPU time
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a Ctrl-C in the grader's terminal is the grader's business
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # oversized writes fail with an error instead
    if not (jailed and os.getpid() == 1):   # the init of its pid namespace reaps every orphan there already
        _become_subreaper()                  # (ctypes' prctl: ~0.45 ms and 135 copied pages of a sandbox)
    sys.addaudithook(_refuse_audit_hooks)
    child = Child(request_fd, response_fd)
    unique = os.getuid() == os.geteuid() >= _confine.UID_BASE and not jailed
    limits = dict(config.get("limits", {}))
    if not (unique or jailed):
        # RLIMIT_NPROC counts every process of a uid; in the jail's own user namespace that is only the
        # sandbox's (and with an unused uid, too), elsewhere it would count the grader user's processes.
        limits.pop("processes", None)
    _apply_limits(limits)
    scratch = _confine.HOME if jailed else config.get("scratch")
    environment = {"HOME": scratch, "TMPDIR": "/tmp" if jailed else scratch} if scratch else {}
    os.environ.update(environment)
    # The zygote's command line (the grader's path, its pid, its temp folder) is nothing of the student's, and it read
    # differently on every machine: an interactive interpreter's instead.
    sys.argv, sys.orig_argv = [""], ["python"]
    hide = list(config.get("hide", []))
    if scratch:
        os.chdir(scratch)
        sys.path.insert(0, scratch)
    if not jailed:
        needed = _confine.needed_paths(scratch or os.getcwd())
        for entry in hide:   # without a built root this is all that keeps the course off the import path
            sys.path[:] = [p for p in sys.path
                           if not _confine._inside(os.path.realpath(p or "."), os.path.realpath(entry))
                           or any(_confine._inside(os.path.realpath(p or "."), keep) for keep in needed)]
    child.scratch, child.sweep, child.jailed = scratch, jailed or unique, jailed
    child.emptied = (scratch, "/tmp") if jailed else (scratch,) if scratch else ()
    child.made = tuple(_confine.folder_as_made(folder) for folder in child.emptied)
    if jailed and scratch:   # the tmpfs confine mounted for this jail (_scratch), at HOME and /tmp: one device
        child.tmpfs = os.lstat(scratch).st_dev
    if jailed and os.getpid() != 1:
        child.sweep = False
    facts = dict(facts, uid=os.getuid(), student_uid=os.getuid(), host_uid=facts.get("host_uid", os.geteuid()),
                 filesystem=facts.get("filesystem", "none"))
    level = "namespaces" if jailed else "rlimits"
    child.send({"op": "ready", "isolation": level, "facts": facts, "problems": []})
    child.serve()


def main(argv):
    """Run without a zygote (`python -s -P runtime.py REQ_FD RESP_FD`): rlimits only, configured by the
    first message."""
    request_fd, response_fd = int(argv[1]), int(argv[2])
    first = _wire.read_request_blocking(request_fd)
    start(request_fd, response_fd, first, {"host_uid": os.geteuid(), "grader_uid": os.geteuid()}, jailed=False)


if __name__ == "__main__":
    main(sys.argv)
