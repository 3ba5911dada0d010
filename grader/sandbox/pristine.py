"""Whether an exercise's process is still as the notebook's load left it, so the next exercise may run in it.

Each exercise used to get a fresh fork of the loaded runtime, so nothing one exercise did (a global list
mutated in place, a memo filled, a class attribute counted up, a module of the library patched, a thread or
process left running, a signal handler or rlimit changed) could change what the next one sees. That fork cost
about 4 ms of CPU (page tables copied, copy-on-write faults, teardown), 13-14 times per submission. Most
exercises change nothing of the kind: then the process they ran in is as good as a fresh fork, and the next
exercise runs there.

`snapshot` records, without calling any student code (no `__eq__`, `__hash__`, `__repr__`, property or
`__getattr__` of a student object runs: objects are read through the garbage collector's view of their
references and compared by identity or, for exact builtin values, by value), what an exercise could observe:

- everything reachable from the notebook's module, the support modules and builtins: containers and their
  contents, functions with their defaults and closures, the student's classes and instances with their
  attributes, numpy arrays with their bytes, random generators with their state. An object whose state the
  collector cannot show (a generator, an `lru_cache`, a C type's hidden fields) makes the answer "unknown";
- the library: which modules are loaded, what the names of the modules those objects reach are bound to (a
  patched `heapq.heappush`) and, by their dicts' version tags, every other module's (an attribute set on
  json.decoder), the codec error handlers, re's and encodings' caches, numpy's error and print state and its
  global random state (unless the runtime seeds it at each case's start, as it does Python's), the warnings
  filters, the locale;
- the interpreter's hooks and limits, sys's names, the collector's settings and callbacks, decimal's contexts;
- the process (`process`, taken by the fork when it starts): other processes and threads, descriptors,
  working folder, umask, environment, rlimits, signal handlers and mask, interval and POSIX timers, process group and
  session, priority, a signal waiting for the runtime, and how much address space it holds.

The runtime takes the snapshot once, after the load (every fork starts from that state). Equal snapshots
and process states mean nothing the next exercise can observe has changed; anything else, or
"unknown", means a fresh fork, as before. The fork's check (`check`) lets no code of the student's run after
it read what that code could change (signals blocked, the collector's garbage found first, the company read
after the library calls that may run some), or says no. What this does not see (deep changes inside a library module's
own objects, state kept in C by ctypes) only a student's own code can set there, and only that student's
later exercises can see it.

Standard library only: the zygote loads this module beside the runtime in a clean interpreter.
"""

import builtins as _builtins
import gc
import os
import resource
import signal
import sys
import types
from itertools import chain, compress, repeat
from typing import Any

# Private references. The student's code shares this process and may rebind `builtins.id`, `gc.get_referents` or
# `os.listdir` while it loads (and the state after the load is what every case starts from): a walk through
# such a patch would run the student's code and see what it is shown. The zygote imports this module before
# any student code runs; its functions resolve builtins here and call the functions bound here.
__builtins__ = dict(_builtins.__dict__)  # type: ignore[assignment]  # a private snapshot, on purpose
gc, os, resource, signal = (  # type: ignore[assignment]  # snapshots stand in for the modules, on purpose
    types.SimpleNamespace(**vars(_module)) for _module in (gc, os, resource, signal))

# An object's identity as id() gives it, without id()'s "builtins.id" audit event: the runtime's audit hook (a
# Python function, see runtime._refuse_audit_hooks) runs at every such event, 0.2 us each, seven times id's own
# cost, and a walk takes ~2,000 identities. object's own hash is its address rotated (an identity among live
# objects), called through object's slot whatever the object's class says its hash is: no student code runs.
_id = object.__hash__

MAX_OBJECTS = 20_000          # objects one walk may visit: past it the answer is "unknown" (a fork is cheaper)
MAX_GROWTH = 64 << 20         # address space an exercise may leave behind (RLIMIT_AS is per process)

_VALUES = frozenset(map(_id, (int, str, bytes, bool, type(None), type(...), type(NotImplemented))))
_BY_REPR = frozenset(map(_id, (float, complex)))
# Objects that never change, or whose changes are seen through the module bindings recorded elsewhere.
_FIXED = frozenset(map(_id, (types.CodeType, types.BuiltinFunctionType, types.WrapperDescriptorType,
                            types.MethodWrapperType, types.MethodDescriptorType, types.ClassMethodDescriptorType,
                            types.GetSetDescriptorType, types.MemberDescriptorType, types.ModuleType, range,
                            types.GenericAlias, types.UnionType,             # annotations: list[int], int | None
                            type(__import__("collections").namedtuple("_", "a").a))))   # a namedtuple's field
# Builtin types whose whole state the collector shows as references (their contents).
_OPEN = frozenset(map(_id, (list, tuple, dict, set, frozenset, types.FunctionType, types.MethodType,
                           types.CellType, staticmethod, classmethod, property, types.SimpleNamespace,
                           types.MappingProxyType, object, BaseException, Exception)))
_WEAKREF = _id(__import__("weakref").ref)
_HEAPTYPE = 1 << 9
_PF_EXITING = 0x4             # a process's flags in /proc/<pid>/stat: it is on its way out
_FLAGS = type.__dict__["__flags__"].__get__
_MRO = type.__dict__["__mro__"].__get__
_TYPE_DICT = type.__dict__["__dict__"].__get__
_MODULE_DICT: Any = vars(types.ModuleType)["__dict__"].__get__
_KEYS, _VALUES_OF = dict.keys, dict.values
_IS = __import__("operator").is_
_DEVICE_INODE = __import__("operator").attrgetter("st_dev", "st_ino")


_getsignal = __import__("_signal").getsignal
_gettrace, _getprofile, _getrecursionlimit = sys.gettrace, sys.getprofile, sys.getrecursionlimit
_getswitchinterval, _get_int_max_str_digits = sys.getswitchinterval, sys.get_int_max_str_digits
# Hooks of the interpreter that no name of sys shows: an async generator's first iteration and finalization, and how
# deep a coroutine's origin is kept. Set by one exercise (a closure holding what its cases saw), the next exercise
# the fork served got them back: sys.get_asyncgen_hooks().firstiter.__defaults__. So are the functions atexit holds
# (atexit._run_exitfuncs runs them, in the next exercise): counted.
_get_asyncgen_hooks, _get_origin_depth = sys.get_asyncgen_hooks, sys.get_coroutine_origin_tracking_depth
_exit_functions = getattr(__import__("atexit"), "_ncallbacks", lambda: 0)   # private, in CPython since 3.0
# The C function: signal's own makes an enum of each signal of the mask it returns (~1 us each, 60 when all).
_sigmask = __import__("_signal").pthread_sigmask
_UNCAUGHT = (int(signal.SIGKILL), int(signal.SIGSTOP))
# The signals whose handler a process can set (the kernel's list: the same for every process) and the kinds of
# rlimit, named once: each check then asks for them in C (map), not in a loop of Python. Each kind once: a name may be
# another's alias (Linux's RLIMIT_OFILE is RLIMIT_NOFILE), which cost a system call more at every check.
_SIGNALS = tuple(sorted(number for number in __import__("_signal").valid_signals() if number not in _UNCAUGHT))
_RLIMITS = tuple(dict.fromkeys(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")))
# The mask with every signal blocked, as this system has it (the C library keeps a few of its own out of reach):
# read once, in the zygote, before any thread or student code.
_OLD_MASK = _sigmask(signal.SIG_BLOCK, _SIGNALS)
_ALL_BLOCKED = _sigmask(signal.SIG_SETMASK, _OLD_MASK)
del _OLD_MASK
_C_RANDOM = __import__("_random").Random


def _tag_reader() -> tuple[Any, Any]:
    """How to read a dict's version tag (PEP 509), or (None, None) where it is not known to be where it is read.
    CPython 3.11 gives a dict a new number, from one counter, at every change of what it holds (a value rebound
    to the very same object is no change), so a dict whose tag is what it was holds the very keys and values it
    held then: one read of its memory instead of comparing each of its entries. Read through ctypes (loaded in
    the zygote already), a view made once per dict (held alive, so its memory stays its own) and the C getter of
    _SimpleCData's `value` (c_uint64's own attributes are a Python class's, which the student may patch). Checked
    here on a dict of its own: a change moves the tag, an equal rebinding does not."""
    if sys.version_info[:2] != (3, 11):
        return None, None
    try:
        import ctypes
        view, read = ctypes.c_uint64.from_address, vars(ctypes._SimpleCData)["value"].__get__
        probe: dict[str, int] = {}
        tag = view(id(probe) + _TAG_OFFSET)
        before = read(tag)
        probe["x"] = 1
        added = read(tag)
        probe["x"] = 1
        again = read(tag)
        del probe["x"]
        if before < added == again < read(tag):
            return view, read
    except Exception:  # noqa: BLE001 - no ctypes, or a layout not as this expects: entries compared, as before
        pass
    return None, None


_TAG_OFFSET = 24   # PyDictObject: reference count, type, ma_used, then ma_version_tag (8 bytes each)
_TAG_VIEW, _TAG_READ = _tag_reader()


def _tag_view(namespace: dict[Any, Any]) -> Any:
    """A view of a dict's version tag (None without one: see _tag_reader); the dict must be held alive."""
    return None if _TAG_VIEW is None else _TAG_VIEW(id(namespace) + _TAG_OFFSET)


# A C callable of this module's own, run at every fork of the process (a bound method of a list no one else holds:
# a new empty list each time, nothing else): registered before, in the parent after and in the child after each
# fork, so that the interpreter's three lists of such functions exist and can be found by what they hold.
_AT_FORK: Any = [].copy
os.register_at_fork(before=_AT_FORK, after_in_parent=_AT_FORK, after_in_child=_AT_FORK)


def _interpreter_lists() -> list[list[Any]] | None:
    """The lists the interpreter keeps, with no name of any module on them: the codec search functions
    (codecs.register; the encodings package's is the first, from the interpreter's start) and the functions run at
    a fork (os.register_at_fork; this module's own in each of the three). Found once, by what refers to those
    functions, in the zygote before any student code ran (the collector shows what it does not freeze: a frozen
    process finds nothing, and then no snapshot is taken, the safe side). None where they are not as expected."""
    search = getattr(sys.modules.get("encodings"), "search_function", None)
    found = [holder for holder in gc.get_referrers(search, _AT_FORK) if type(holder) is list]
    codecs = [holder for holder in found if any(item is search for item in holder)]
    forks = [holder for holder in found if any(item is _AT_FORK for item in holder)]
    if search is None or len(codecs) != 1 or len(forks) != 3 or len(found) != 4:
        return None
    return codecs + forks


def _error_handlers() -> dict[str, Any] | None:
    """The interpreter's registry of codec error handlers (codecs.register_error), which no module names: found
    once, in the zygote before any student code ran, as the dict that holds the built-in handlers under their
    names (a handler registered by one exercise came back to the next, tests/test_hostile_carriers.py). None
    where it is not as expected."""
    import codecs
    names = ("strict", "ignore", "replace", "surrogateescape")
    handlers = [codecs.lookup_error(name) for name in names]
    found = [holder for holder in gc.get_referrers(handlers[0]) if type(holder) is dict
             and all(holder.get(name) is handler for name, handler in zip(names, handlers, strict=True))]
    return found[0] if len(found) == 1 else None


class _Registries:
    """What an exercise can leave where no object of the notebook's reaches, in the interpreter's lists
    (_interpreter_lists) and in the standard library's registries: `sys.path_importer_cache`, `linecache.cache`,
    copyreg's dispatch table and extension registries, `weakref.finalize`'s registry (it holds each finalizer's
    arguments). A closure or a value left there came back to the next exercise the fork served (a search function's
    CodecInfo, a function run at the next fork, an entry read back). Compared by identity: which objects each
    holds, in order, and the registry itself. A registry is found through its module's (or class's) namespace, so a
    rebinding shows. Read again only where a version tag moved (_tag_reader): a registry's, or its holder's where
    the holder's names are not all bound to the very objects they were. But sys's: its tag moves at every case (the
    runtime swaps its streams), and its names are compared at every snapshot anyway (_modules: sys is always met),
    so a rebound `sys.path_importer_cache` makes the snapshot differ there."""

    __slots__ = ("dicts", "errors", "held", "lists", "places", "tags", "token", "views")

    def __init__(self) -> None:
        self.lists = _interpreter_lists()
        self.errors = _error_handlers()
        import copyreg
        import linecache
        import weakref
        finalize = gc.get_referents(vars(weakref.finalize))   # the class's own dict, under its mapping proxy
        self.places: list[tuple[dict[str, Any], str]] = [
            (vars(sys), "path_importer_cache"), (vars(linecache), "cache"),
            *((vars(copyreg), name) for name in ("dispatch_table", "_extension_registry", "_inverted_registry",
                                                 "_extension_cache")),
            *((holder, "_registry") for holder in finalize if type(holder) is dict)]
        # As last read: the registries (held alive for their tags' views), their token, and each holder with its
        # names and values (the very objects, held: an identity met again is the same object).
        self.dicts: list[dict[Any, Any]] = []
        self.token: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        self.held: list[tuple[dict[str, Any], list[Any], list[Any]]] = []
        self.views: list[Any] | None = None   # the version tags' views (_tag_reader): the registries', the holders'
        self.tags: list[int] = []

    def state(self) -> tuple[Any, ...]:
        """What the lists and registries hold, by identity (Unknown where they cannot be read)."""
        if self.lists is None or len(self.places) != 7 or self.errors is None:
            raise Unknown("the interpreter's registries not found")
        errors = self.errors
        lists = (tuple(map(len, self.lists)), tuple(map(_id, chain.from_iterable(self.lists))),
                 tuple(map(_id, errors)), tuple(map(_id, errors.values())))
        if self.views is not None:
            tags = list(map(_TAG_READ, self.views))
            if tags == self.tags:
                return lists, self.token   # (the usual case: one read of each tag)
            count = len(self.dicts)
            if tags[count:] == self.tags[count:] or all(
                    _same(holder, names) and _same(holder.values(), values) for holder, names, values in self.held):
                if tags[:count] != self.tags[:count]:
                    self.token = self._token(self.dicts)
                self.tags = tags   # (the same bindings: these tags stand for them now)
                return lists, self.token
        dicts = [_own(holder, name) for holder, name in self.places]
        token = self._token(dicts)
        if _TAG_VIEW is not None:   # (the holders are modules' and a class's namespaces: alive as long as they are)
            holders = list({id(holder): holder for holder, _ in self.places if holder is not vars(sys)}.values())
            self.dicts, self.token = dicts, token
            self.held = [(holder, list(holder), list(holder.values())) for holder in holders]
            self.views = [*map(_tag_view, dicts), *map(_tag_view, holders)]   # the registries' first
            self.tags = list(map(_TAG_READ, self.views))
        return lists, token

    @staticmethod
    def _token(dicts: list[Any]) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
        if not all(type(found) is dict for found in dicts):
            raise Unknown("a registry replaced")
        return [(_id(found), tuple(map(_id, found)), tuple(map(_id, found.values()))) for found in dicts]


_REGISTRIES = _Registries()
_PY_RANDOM = __import__("random").Random


def _generator_kinds() -> set[int]:
    """Random generators whose state can be read exactly (by type id): random.Random, numpy's legacy and new."""
    kinds = {_id(_PY_RANDOM)}
    for module, name in (("numpy.random._generator", "Generator"), ("numpy.random.mtrand", "RandomState")):
        kind = getattr(sys.modules.get(module), name, None)
        if kind is not None:
            kinds.add(_id(kind))
    return kinds


def _state_kinds() -> tuple[Any, Any, set[int]]:
    """numpy's array and scalar classes (None without numpy) and the generators' kinds, as a walk reads them."""
    numpy = sys.modules.get("numpy")
    return getattr(numpy, "ndarray", None), getattr(numpy, "generic", None), _generator_kinds()


def _generator_state(generator: Any) -> Any:
    """A generator's state, read through C code only: numpy's generators read theirs from their bit generator,
    whose class may be the student's (a subclass of PCG64 with a `state` property of its own): Unknown then."""
    if isinstance(generator, _C_RANDOM):
        return _C_RANDOM.getstate(generator)
    namespace = _TYPE_DICT(type(generator))
    bits = (_own(namespace, "bit_generator") or _own(namespace, "_bit_generator")).__get__(generator)
    if _FLAGS(type(bits)) & _HEAPTYPE:
        raise Unknown("a bit generator of a Python class")
    if _own(namespace, "bit_generator") is not None:
        return repr(generator.bit_generator.state)
    name, keys, position, gauss, cached = generator.get_state()
    return (name, keys.tobytes(), position, gauss, cached)


class Unknown(Exception):
    """The walk met something whose state it cannot read: the process is not known to be pristine."""


def _own(namespace: Any, name: str) -> Any:
    """A class's own `name` (None if it has none), read where no key of the student's can answer: a lookup
    compares the keys that share the name's hash with it, through their __eq__ (code of the student's, in the
    middle of a walk) unless all are exact str. Any other key: Unknown."""
    if not all(map(_IS, map(type, namespace), repeat(str))):
        raise Unknown("a key that is not a str in a class's namespace")
    return namespace.get(name)


def _instance_dict(obj: object, kind: type) -> dict[str, Any] | None:
    """The instance's own attribute dict, read through the interpreter's descriptor (never a student's), or
    None when it has none. Python 3.11 keeps small instance dicts as bare values, invisible to the collector."""
    for cls in _MRO(kind):
        entry = _own(_TYPE_DICT(cls), "__dict__")
        if entry is None:
            continue
        if type(entry) is not types.GetSetDescriptorType:
            raise Unknown("a class redefines __dict__")
        return entry.__get__(obj, kind)  # type: ignore[no-any-return]
    return None


def _open_type(kind: type) -> bool:
    """True when an instance of `kind` holds nothing the collector does not show: a builtin container, or a
    class of Python code over such bases (not over int, str, random.Random or any other C state)."""
    if _id(kind) in _OPEN:
        return True
    if not _FLAGS(kind) & _HEAPTYPE:
        return False
    return all(_id(base) in _OPEN or _FLAGS(base) & _HEAPTYPE for base in _MRO(kind))


def walk(roots: list[Any], stop: frozenset[int] = frozenset(), limit: int = MAX_OBJECTS,
         met: set[int] | None = None, homes: set[str] | None = None, leaves: dict[int, bool] | None = None,
         found: list[Any] | None = None, known: dict[int, tuple[list[Any], list[Any]]] | None = None,
         record: dict[int, list[Any]] | None = None, trace: list[Any] | None = None,
         kinds: tuple[Any, Any, set[int]] | None = None) -> list[Any]:
    """Tokens describing every object reachable from `roots` (depth first), or raise Unknown. Objects are named
    by id, exact builtin values by value; an entered object's token names what it references by id. `stop` holds
    ids not entered (other modules' dicts). The modules and module dicts the walk meets are added to `met`.
    Classes are entered when defined in a module named in `homes` (the notebook's, the support modules'); a
    library's classes are fixed, like its functions' modules (their instances are walked). `leaves` (Leaves.ids)
    are not visited at all: immutable and held alive, their id in the referrer's token says all. Every object
    met is appended to `found` (to find the leaves), and what each entered object references to `record`.
    `known` (Leaves.known): each entered object of the load (held alive) with what it referenced then, and
    the non-leaves among those; an object that still references the very same objects is not described again.
    `trace` (the load's snapshot, see Replay) gets each entered object: how its references were read and what
    they were, or where its token holds a state read otherwise (an array's bytes, a generator's state). `kinds`:
    _state_kinds, read before (it looks in sys.modules, whose keys are the student's).

    It runs at every exercise's end, over about a thousand objects (builtins and the notebook's names), so its
    loop keeps what it looks up in locals. Kinds are asked with issubclass on the real type, never isinstance:
    that would read a student object's `__class__`, which may be a property."""
    ndarray, generic, generators = kinds = kinds if kinds is not None else _state_kinds()
    if trace is not None:
        trace.append(kinds)   # what the walk took for arrays, numpy scalars and generators (Replay asks again)
    tokens: list[Any] = []
    seen: set[int] = set()
    stack = list(reversed(roots))
    append, pop, extend, see = tokens.append, stack.pop, stack.extend, seen.add
    values, by_repr, fixed, weakref, referents, opened = _VALUES, _BY_REPR, _FIXED, _WEAKREF, gc.get_referents, _OPEN
    inner = leaves.get if leaves else None
    before = known.get if known else None
    same, identity = _IS, _id
    while stack:
        obj = pop()
        if found is not None:
            found.append(obj)
        kind = type(obj)
        key = identity(kind)
        if key in values:
            append((key, obj))
            continue
        if key in by_repr:
            append((key, repr(obj)))
            continue
        ident = identity(obj)
        if ident in seen:
            append(ident)
            continue
        see(ident)
        if len(seen) > limit:
            raise Unknown("too many objects")
        if key in fixed or ident in stop:
            append((key, ident))
            if met is not None and (kind is types.ModuleType or ident in stop):
                met.add(ident)
            continue
        if kind is dict:   # the collector shows a dict's keys and values, nothing more
            references = [*_KEYS(obj), *_VALUES_OF(obj)]
            mode = _DICT
        elif key in opened:   # a builtin container, function or cell: the branches below would say the same
            references = referents(obj)
            mode = _OPENED
        elif key == weakref:
            append((key, ident, identity(obj())))   # what it points to is reached from elsewhere, or dead
            if trace is not None:
                trace.append((_S_WEAKREF, obj, kind, len(tokens) - 1))
            continue
        elif kind is type or issubclass(kind, type):
            if not _FLAGS(obj) & _HEAPTYPE:
                append((key, ident))     # a builtin or extension type: fixed
                continue
            entered = _class_references(obj, kind, homes)
            if entered is None:
                append((key, ident))     # a library's class
                continue
            references, mode = entered, _CLASS
        elif ndarray is not None and kind is ndarray:
            append(_array_token(obj, key, ident))
            if trace is not None:
                trace.append((_S_ARRAY, obj, kind, len(tokens) - 1))
            continue
        elif generic is not None and not _FLAGS(kind) & _HEAPTYPE and issubclass(kind, generic):   # numpy's own
            append((key, obj.tobytes()))
            if trace is not None:
                trace.append((_S_SCALAR, obj, kind, len(tokens) - 1))
            continue
        elif key in generators:
            append((key, ident, _generator_state(obj)))   # a random generator: its state, not hidden
            if trace is not None:
                trace.append((_S_GENERATOR, obj, kind, len(tokens) - 1))
            references = _generator_references(obj, kind)
            mode = _GENERATOR
        else:
            references = _instance_references(obj, kind)
            mode = _INSTANCE
        if record is not None:
            record[ident] = references
        if before is not None:
            then = before(ident)
            if then is not None and len(then[0]) == len(references) and all(map(same, references, then[0])):
                append((key, ident, True))   # as at the load: the same objects, by identity (held alive)
                if trace is not None:
                    trace.append((mode, obj, kind, then[0]))
                extend(then[1])
                continue
        ids = tuple(map(identity, references))
        append((key, ident, ids))
        if trace is not None:
            trace.append((_CHANGED, obj, kind, None))
        if inner is not None:    # only what is not a leaf (all in C: the walk's loop costs ~0.3 us per object)
            references = list(compress(references, map(inner, ids, repeat(True))))
        extend(reversed(references))
    return tokens


# How a walk read an entered object's references (Replay reads them the same way), or what else it recorded.
_DICT, _OPENED, _CLASS, _GENERATOR, _INSTANCE, _CHANGED = range(6)
_S_WEAKREF, _S_ARRAY, _S_SCALAR, _S_GENERATOR = range(10, 14)   # a token that holds a state: read again


def _class_references(obj: type, kind: type, homes: set[str] | None) -> list[Any] | None:
    """What a walk enters of a class of the student's (a heap type of a module in `homes`), or None for a
    library's class (fixed)."""
    namespace = _TYPE_DICT(obj)           # the class's own names, as a mapping proxy of its dict
    home = _own(namespace, "__module__")
    if homes is not None and not (type(home) is str and home in homes):
        return None
    return [kind, *_MRO(obj), *namespace.keys(), *namespace.values()]


def _array_token(obj: Any, key: int, ident: int) -> tuple[Any, ...]:
    """A numpy array's token: its bytes (never an array of objects: those hold references the bytes hide)."""
    if obj.dtype.hasobject:
        raise Unknown("an array of objects")
    return (key, ident, obj.dtype.str, obj.shape, obj.tobytes())


def _generator_references(obj: Any, kind: type) -> list[Any]:
    return [_instance_dict(obj, kind)] if kind is _PY_RANDOM else []


def _instance_references(obj: Any, kind: type) -> list[Any]:
    """What a walk enters of an instance whose state the collector shows (else Unknown)."""
    if not _open_type(kind):
        raise Unknown("an object that hides its state")
    if _FLAGS(kind) & _HEAPTYPE:
        _instance_dict(obj, kind)   # made a real dict now, so the collector shows it (and its keys)
    references = gc.get_referents(obj)
    if issubclass(kind, dict):
        references = [*_KEYS(obj), *_VALUES_OF(obj), *references]
    return references


class Leaves:
    """Objects of the loaded module that cannot change (exact str, int, float, bytes, None; tuples and
    frozensets of such; code, builtin functions, builtin and library classes), held alive so that no other
    object can ever take one's id: an id met again is the same object, in the same state, and a walk need
    not visit it (the referrer's token has its id: a rebinding shows there). Mutable objects (lists, dicts,
    sets, functions, cells, instances, the student's classes, modules) and anything holding one are no leaves."""

    __slots__ = ("base", "held", "ids", "known", "loaded", "replay", "roots", "traced")
    ids: dict[int, bool]
    known: dict[int, tuple[list[Any], list[Any]]]

    def __init__(self, held: list[Any], record: dict[int, list[Any]] | None = None,
                 roots: frozenset[int] = frozenset(), base: "Leaves | None" = None) -> None:
        self.held = held
        self.base = base        # leaves taken before (see leaves): it holds its own objects alive
        # ids of the roots taken from
        self.roots: frozenset[int] = roots | (base.roots if base is not None else frozenset())
        # False: "not to visit", for walk's compress. The base's ids and records are copied, its objects left
        # untouched: they are the zygote's, and a reference taken to each would copy its page in every fork.
        ids = {**(base.ids if base is not None else {}), **dict.fromkeys(map(_id, held), False)}
        self.ids = ids
        # Each object the load's walk entered, by id: what it referenced (held alive, so an id is always the
        # same object) and, reversed for the walk's stack, the non-leaves among them but the roots: every walk
        # enters each root from its start anyway, so a reference to one (each function's globals and builtins:
        # half of a walk's visits) would only add its id again, which the referrer's sameness says already.
        skipped = ids.keys() | self.roots
        known = {
            ident: (references, [obj for obj in reversed(references) if _id(obj) not in skipped])
            for ident, references in (record or {}).items()}
        self.known = {**base.known, **known} if base is not None else known
        self.loaded: Loaded | None = None                 # the last snapshot's view of sys.modules
        self.traced = False                # the first snapshot taken with these leaves (the load's) was traced
        self.replay: Replay | None = None  # that snapshot's Replay, when every object it entered was as here


def _immutable(obj: Any, known: dict[int, bool], homes: set[str] | None, depth: int = 0) -> bool:
    """Whether `obj` can never change in what a walk would see (read through type's own slots, as walk)."""
    kind = type(obj)
    key = _id(kind)
    if key in _VALUES or key in _BY_REPR:
        return True
    if key in _FIXED:
        return kind is not types.ModuleType    # a module's bindings are read by _modules, through `met`
    if kind is type or issubclass(kind, type):
        if not _FLAGS(obj) & _HEAPTYPE:
            return True
        home = _own(_TYPE_DICT(obj), "__module__")
        return homes is not None and not (type(home) is str and home in homes)   # a library's class
    if kind is not tuple and kind is not frozenset:
        return False
    ident = _id(obj)
    if ident not in known:
        known[ident] = False     # a tuple cannot hold itself; and deep nests are simply walked
        known[ident] = depth < 32 and all(_immutable(item, known, homes, depth + 1) for item in gc.get_referents(obj))
    return known[ident]


_LOADED: list[Any] = [None]   # the last Loaded made: the load's, which every fork starts from (rebase)


class Loaded:
    """sys.modules as a snapshot found it: which modules (by id, held alive so no later module takes one's id),
    the walk's `stop` set made from them, and where each module and module dict is. While sys.modules holds the
    same objects in the same order, the next snapshot (the same roots and own objects) reuses it."""

    __slots__ = ("bindings", "key", "modules", "names", "namespace", "placed", "rest", "rest_bindings", "rest_tags",
                 "rest_views", "stop", "tag", "tag_view", "values", "where")

    def __init__(self, roots: list[Any], own: tuple[Any, ...]) -> None:
        # Names too: an id in `key` is always the object it was, and `_same` compares with these by identity.
        self.namespace = sys.modules   # (the dict itself: its tag is read, see _loaded)
        self.tag_view = _tag_view(self.namespace)
        self.tag = _TAG_READ(self.tag_view) if self.tag_view is not None else None
        self.names, self.values = list(self.namespace), list(self.namespace.values())
        self.key = (tuple(map(_id, self.names)), tuple(map(_id, self.values)))
        # A met module's bindings as _modules found them: its names and values (held), their token, a view of
        # the namespace's version tag (_tag_reader) and the tag then.
        self.bindings: dict[int, tuple[list[Any], list[Any], tuple[int, ...], Any, Any]] = {}
        self.modules = [(module, _MODULE_DICT(module)) for module in list(sys.modules.values())
                        if issubclass(type(module), types.ModuleType)]
        namespaces = {_id(namespace) for _, namespace in self.modules}
        self.stop = frozenset(namespaces - set(map(_id, roots)) | set(map(_id, own)))
        self.where: dict[int, int] = {}
        self.placed: tuple[frozenset[int], list[int]] | None = None   # the replay's met modules' positions
        for position, (module, namespace) in enumerate(self.modules):
            self.where[_id(module)] = self.where[_id(namespace)] = position
        # Every module's bindings as this snapshot found them, those no object of the notebook's reaches included
        # (_modules reads the reached ones by identity): an attribute set on json.decoder, which no name of the
        # notebook's reaches, came back to the next exercise (tests/test_hostile_carriers.py). Their version tags
        # (_tag_reader): one read each, in C; sys's moves at every case (the runtime swaps its streams) and its
        # names are read by identity anyway. Where no tag can be read, the bindings themselves, by identity.
        self.rest = [(position, namespace) for position, (module, namespace) in enumerate(self.modules)
                     if _id(namespace) in self.stop and module is not sys]
        self.rest_views = [_tag_view(namespace) for _, namespace in self.rest] if _TAG_VIEW is not None else None
        self.rest_tags = list(map(_TAG_READ, self.rest_views)) if self.rest_views is not None else []
        self.rest_bindings = [_bindings(namespace) for _, namespace in self.rest]
        _LOADED[0] = self


class Replay:
    """The load's snapshot walk, kept to be checked again without walking: every object it entered, grouped by
    how the walk read its references (those references, as they were then), and the objects whose token holds a
    state read otherwise. While the roots, the grader's own objects, the home modules and sys.modules (Loaded)
    are the same, and every one of those objects still has its type and references the very same objects, a
    walk from the same roots would go the same way (it only ever follows references) and enter the same objects
    in the same order: its tokens would be the load's, but for the states, which are read again here. So
    `same` True means a walk would return the load's tokens; False means only that the walk is needed (it is
    then taken, as before). Most of it runs in C (map over the objects), where the walk's loop spends ~1 us
    of Python per object."""

    __slots__ = ("dict_keys", "dict_sizes", "dict_tags", "dict_values", "dict_views", "dicts", "homes",
                 "instance_kinds", "instance_mros", "instance_references", "instance_sizes", "instances", "kinds",
                 "loaded", "met", "objects", "opened", "opened_references", "opened_sizes", "others", "own",
                 "roots", "state_kinds", "states", "walked")

    def __init__(self, trace: list[Any], walked: list[Any], met: set[int], loaded: Loaded, roots: list[Any],
                 own: tuple[Any, ...], homes: set[str] | None) -> None:
        self.walked, self.met, self.loaded = walked, frozenset(met), loaded
        self.dict_views: list[Any] | None = None   # each dict's version tag (_tag_reader), read as the walk ended
        self.dict_tags: list[int] = []
        self.roots, self.own = list(roots), tuple(own)
        self.homes = None if homes is None else frozenset(homes)
        self.objects: list[Any] = []
        self.kinds: list[type] = []
        self.dicts: list[dict[Any, Any]] = []
        self.dict_sizes: list[int] = []
        self.dict_keys: list[Any] = []
        self.dict_values: list[Any] = []
        self.opened: list[Any] = []
        self.opened_sizes: list[int] = []
        self.opened_references: list[Any] = []
        # Instances of Python classes (not of dict's subclasses): what the collector shows of each (its class and
        # its dict, made a real dict by the load's walk, which it stays), compared in C as `opened`; the walk's
        # _instance_references would say the same while each class's MRO is the very tuple it was (a class's
        # __bases__ set anew makes a new one): whether the class hides state depends on nothing else.
        self.instances: list[Any] = []
        self.instance_kinds: list[type] = []
        self.instance_mros: list[tuple[type, ...]] = []
        self.instance_sizes: list[int] = []
        self.instance_references: list[Any] = []
        self.others: list[tuple[Any, type, int, list[Any]]] = []
        self.states: list[tuple[int, Any, Any, int]] = []
        self.state_kinds = trace[0]
        for mode, obj, kind, then in trace[1:]:
            if mode >= _S_WEAKREF:
                self.states.append((mode, obj, kind, then))
                continue
            self.objects.append(obj)
            self.kinds.append(kind)
            if mode == _DICT:
                half = len(then) // 2
                self.dicts.append(obj)
                self.dict_sizes.append(half)
                self.dict_keys.extend(then[:half])
                self.dict_values.extend(then[half:])
            elif mode == _OPENED:
                self.opened.append(obj)
                self.opened_sizes.append(len(then))
                self.opened_references.extend(then)
            elif mode == _INSTANCE and not issubclass(kind, dict):
                self.instances.append(obj)
                self.instance_kinds.append(kind)
                self.instance_mros.append(_MRO(kind))
                self.instance_sizes.append(len(then))
                self.instance_references.extend(then)
            else:
                self.others.append((obj, kind, mode, then))
        if _TAG_VIEW is not None:   # the walk, just taken, ran no code that could change a dict since it read it
            self.dict_views = list(map(_tag_view, self.dicts))
            self.dict_tags = list(map(_TAG_READ, self.dict_views))

    @staticmethod
    def of(trace: list[Any], walked: list[Any], met: set[int], loaded: Loaded, roots: list[Any],
           own: tuple[Any, ...], homes: set[str] | None) -> "Replay | None":
        """The Replay of a traced walk; None when it entered an object not as the leaves recorded it."""
        if any(entry[0] == _CHANGED for entry in trace[1:]):
            return None
        return Replay(trace, walked, met, loaded, roots, own, homes)

    def same(self, roots: list[Any], own: tuple[Any, ...], homes: set[str] | None, loaded: Loaded,
             kinds: tuple[Any, Any, set[int]]) -> bool:
        """Whether a walk from `roots` now would return the load's tokens (see the class; `kinds`: _state_kinds)."""
        try:
            return self._same(roots, own, homes, loaded, kinds)
        except Exception:  # noqa: BLE001 - Unknown or anything unforeseen: the walk decides
            return False

    def _same(self, roots: list[Any], own: tuple[Any, ...], homes: set[str] | None, loaded: Loaded,
              kinds: tuple[Any, Any, set[int]]) -> bool:
        if loaded is not self.loaded or len(roots) != len(self.roots) or len(own) != len(self.own):
            return False
        if not (all(map(_IS, roots, self.roots)) and all(map(_IS, own, self.own))):
            return False
        if (None if homes is None else frozenset(homes)) != self.homes:
            return False
        if not all(map(_IS, map(type, self.objects), self.kinds)):
            return False
        ndarray, generic, generators = kinds
        then_array, then_generic, then_generators = self.state_kinds
        if ndarray is not then_array or generic is not then_generic or generators != then_generators:
            return False
        dicts = self.dicts
        views = self.dict_views
        if views is None or list(map(_TAG_READ, views)) != self.dict_tags:   # else none changed (_tag_reader)
            if list(map(len, dicts)) != self.dict_sizes:
                return False
            if not (all(map(_IS, chain.from_iterable(map(_KEYS, dicts)), self.dict_keys))
                    and all(map(_IS, chain.from_iterable(map(_VALUES_OF, dicts)), self.dict_values))):
                return False
            if views is not None:   # changed back to the very same objects
                self.dict_tags = list(map(_TAG_READ, views))
        now = list(map(gc.get_referents, self.opened))
        if list(map(len, now)) != self.opened_sizes \
                or not all(map(_IS, chain.from_iterable(now), self.opened_references)):
            return False
        if not all(map(_IS, map(_MRO, self.instance_kinds), self.instance_mros)):
            return False
        now = list(map(gc.get_referents, self.instances))
        if list(map(len, now)) != self.instance_sizes \
                or not all(map(_IS, chain.from_iterable(now), self.instance_references)):
            return False
        for obj, kind, mode, then in self.others:
            if mode == _CLASS:
                references = _class_references(obj, kind, homes)
                if references is None:
                    return False
            elif mode == _GENERATOR:
                references = _generator_references(obj, kind)
            else:
                references = _instance_references(obj, kind)
            if len(references) != len(then) or not all(map(_IS, references, then)):
                return False
        walked = self.walked
        for mode, obj, kind, index in self.states:
            if type(obj) is not kind:
                return False
            key, ident = _id(kind), _id(obj)
            if mode == _S_WEAKREF:
                token: tuple[Any, ...] = (key, ident, _id(obj()))
            elif mode == _S_ARRAY:
                token = _array_token(obj, key, ident)
            elif mode == _S_SCALAR:
                token = (key, obj.tobytes())
            else:
                token = (key, ident, _generator_state(obj))
            if token != walked[index]:
                return False
        return True


def _same(now: Any, then: list[Any]) -> bool:
    """Whether `now` (a dict, its keys or values) holds the very objects of `then`, in order. By identity in C
    (`then` holds them alive): a quarter of the time of making and comparing their ids (object.__hash__)."""
    return len(now) == len(then) and all(map(_IS, now, then))


def _bindings(namespace: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """A module's names and the objects bound to them, held, for _holds to compare with later."""
    return list(namespace), list(namespace.values())


def _holds(namespace: dict[str, Any], bindings: tuple[list[str], list[Any]]) -> bool:
    """Whether `namespace` binds the very names and objects of `bindings` (_bindings), in order."""
    return _same(namespace, bindings[0]) and _same(namespace.values(), bindings[1])


def _loaded(roots: list[Any], own: tuple[Any, ...], cache: Leaves | None) -> Loaded:
    known = cache.loaded if cache is not None else None
    if known is not None:
        modules = sys.modules
        if modules is known.namespace and known.tag_view is not None and _TAG_READ(known.tag_view) == known.tag:
            return known   # unchanged since (_tag_reader)
        if _same(modules, known.names) and _same(modules.values(), known.values):
            if modules is known.namespace and known.tag_view is not None:
                known.tag = _TAG_READ(known.tag_view)   # changed back to the very same: the same view
            return known
    loaded = Loaded(roots, own)
    if cache is not None:
        cache.loaded = loaded
    return loaded


def rebase() -> None:
    """As a fork starts, before any student code runs there: the library modules' bindings it starts with become
    what its checks compare with (_rest_unchanged). A fork is not its parent: threading's fork handler binds new
    locks (_active_limbo_lock, _shutdown_locks), in every fork alike, so a fresh fork differs from the load there
    too; what an exercise binds afterwards is what the next exercise must not see."""
    loaded = _LOADED[0]
    if loaded is None:
        return
    views = loaded.rest_views
    tags = list(map(_TAG_READ, views)) if views is not None else None
    for index, (_, namespace) in enumerate(loaded.rest):
        if tags is None or tags[index] != loaded.rest_tags[index]:
            loaded.rest_bindings[index] = _bindings(namespace)
    if tags is not None:
        loaded.rest_tags = tags


def _modules(met: set[int] | frozenset[int], loaded: Loaded) -> list[tuple[int, ...]]:
    """Which modules are loaded, and the bindings (by identity) of those the student's objects reach (`met`:
    modules and module dicts by id): `heapq.heappush` patched shows when the notebook uses heapq. Every
    module's bindings would cost 25 ms with numpy loaded. A root's namespace (builtins, reached through every
    function's `__builtins__`) is left out: the walk reads it whole, by identity too."""
    found: list[tuple[int, ...]] = list(loaded.key)
    where, stop = loaded.where, loaded.stop
    bindings = loaded.bindings
    placed = loaded.placed
    if placed is not None and placed[0] is met:   # the replay's (a frozenset): where its modules are, found once
        positions = placed[1]
    else:
        positions = sorted({where[ident] for ident in met if ident in where})
        if type(met) is frozenset:
            loaded.placed = (met, positions)
    for position in positions:
        module, namespace = loaded.modules[position]
        if _id(namespace) not in stop:
            continue
        seen = bindings.get(position)   # the same names bound to the same objects: the same token as then
        if seen is not None and seen[3] is not None and _TAG_READ(seen[3]) == seen[4]:
            found.append(seen[2])   # unchanged since (_tag_reader)
            continue
        if seen is None or not (_same(namespace, seen[0]) and _same(namespace.values(), seen[1])):
            seen = (list(namespace), list(namespace.values()), (
                _id(module), *map(_id, namespace), -1, *map(_id, namespace.values())), None, None)
        view = _tag_view(namespace)   # (a module's dict lives as long as the module, which Loaded holds)
        bindings[position] = (*seen[:3], view, _TAG_READ(view) if view is not None else None)
        found.append(seen[2])
    _rest_unchanged(loaded, positions)
    return found


def _rest_unchanged(loaded: Loaded, positions: list[int]) -> None:
    """Raise Unknown unless every module not among `positions` (read by identity in _modules) holds the bindings it
    held when `loaded` was made (the load's snapshot, for every later one while sys.modules is the same): the very
    objects, compared only where a module's tag moved."""
    views = loaded.rest_views
    if views is not None:
        tags = list(map(_TAG_READ, views))
        if tags == loaded.rest_tags:
            return   # (the usual case: one read of each tag, in C)
        moved = [index for index, (then, now) in enumerate(zip(loaded.rest_tags, tags, strict=True)) if then != now]
    else:
        moved = list(range(len(loaded.rest)))
    reached = set(positions)
    for index in moved:
        position, namespace = loaded.rest[index]
        if position in reached:
            continue
        if not _holds(namespace, loaded.rest_bindings[index]):
            raise Unknown("a library module's binding changed")
        if views is not None:   # changed back to the very same: this tag stands for them now
            loaded.rest_tags[index] = tags[index]


def _read(path: str) -> bytes:
    """A /proc file's text, by system calls alone: a file object (io.open) costs more than the read itself."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = [os.read(fd, 65536)]
        while parts[-1]:
            parts.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(parts)


def _pread(fd: int) -> bytes:
    """A /proc file's text from its start, through a descriptor kept open (a read at offset 0 makes it afresh)."""
    parts = [os.pread(fd, 65536, 0)]
    while len(parts[-1]) == 65536:
        parts.append(os.pread(fd, 65536, 65536 * len(parts)))
    return b"".join(parts)


class Files:
    """The /proc files a check reads, opened once by an exercise's process as it starts (before any code of the
    student's runs in it) and read again with pread: by path each cost an open, two reads and a close, and /proc's
    walk of the path (~4 times a pread; a check read a dozen). A folder's count is its fstat: /proc/PID/task links
    2 + the process's threads (since Linux 2.6), /proc/PID/fd's size is how many descriptors are open (Linux >=
    6.2); the first reading (the state as the process starts) lists them as before and learns whether the counts
    agree here; where they do not, every reading lists them.

    The student's code shares the process and may close any of these descriptors or put another file at its
    number (dup2, or a close and an open): a file is read only once fstat shows it is still the procfs file opened
    here (its st_dev and st_ino, recorded at the open; the descriptor holds that inode, so no other file takes its
    number while it is open). What is not is no company known (`company` None: the process ends, as where /proc
    cannot be read) or a descriptor changed (`process`: the check says no): a fresh fork, the student's cost."""

    __slots__ = ("counted", "expected", "fds", "marks", "pid", "ppid", "threads")

    # name -> (its path, from this process's /proc folder or its parent's, opened as a folder)
    PATHS = {"task": ("task", False, True), "children": ("task/{pid}/children", False, False),
             "fd": ("fd", False, True), "statm": ("statm", False, False), "timers": ("timers", False, False),
             "parent_task": ("task", True, True), "parent_children": ("task/{pid}/children", True, False),
             "parent_stat": ("stat", True, False), "parent_status": ("status", True, False)}

    def __init__(self, pid: int, ppid: int) -> None:
        self.pid, self.ppid = pid, ppid
        self.fds: dict[str, int] = {}
        self.marks: dict[str, tuple[int, int]] = {}
        self.threads: bool | None = None   # whether /proc/PID/task's links count its threads here (None: not known)
        self.counted = False               # whether /proc/PID/fd's size counts the open descriptors here
        self.expected: tuple[Any, list[int], list[tuple[int, int]]] | None = None   # see _descriptors

    @classmethod
    def open(cls) -> "Files | None":
        """This process's files (None where one cannot be opened: then every check reads by path, as before)."""
        files = cls(os.getpid(), os.getppid())
        try:
            for name, (path, parents, folder) in cls.PATHS.items():
                pid = files.ppid if parents else files.pid
                flags = os.O_RDONLY | os.O_CLOEXEC | (os.O_DIRECTORY if folder else 0)
                fd = files.fds[name] = os.open(f"/proc/{pid}/{path.format(pid=pid)}", flags)
                status = os.fstat(fd)
                files.marks[name] = (status.st_dev, status.st_ino)
        except OSError:
            files.close()
            return None
        return files

    def close(self) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()

    def changed(self, descriptors: list[tuple[str, int, int]]) -> bool:
        """Whether a listing of the open descriptors lacks one of these files, as opened (number and inode)."""
        listed = set(descriptors)
        return not all((str(fd), *self.marks[name]) in listed for name, fd in self.fds.items())

    def _status(self, name: str) -> Any:
        """The file's fstat, once it shows the file is the one opened (OSError otherwise)."""
        status = os.fstat(self.fds[name])
        if (status.st_dev, status.st_ino) != self.marks[name]:
            raise OSError(f"/proc's {name} replaced")
        return status

    def read(self, name: str) -> bytes:
        """The file's text, once fstat shows it is the one opened (OSError otherwise)."""
        self._status(name)
        return _pread(self.fds[name])

    def links(self, name: str) -> int:
        """A task folder's threads: its links less its own two."""
        return int(self._status(name).st_nlink) - 2

    def count(self) -> int:
        """How many descriptors are open, by the size of /proc/PID/fd (meaningful where `counted`)."""
        return int(self._status("fd").st_size)

    def company(self) -> tuple[Any, ...]:
        """As _company reads it by path, where each process has one thread (a fork starts with one; the runtime
        too, unless the notebook's load left threads there): its one thread's children from the kept file."""
        if os.getppid() != self.ppid:
            raise OSError("the runtime is gone")
        threads = self.links("task") if self.threads else -1
        children = sorted(self.read("children").split()) if threads == 1 else None
        parents = self.links("parent_task") if self.threads else -1
        siblings = sorted(self.read("parent_children").split()) if parents == 1 else None
        if children is None or siblings is None:   # several threads, or the first reading: each one's children
            tasks, others = os.listdir("/proc/self/task"), os.listdir(f"/proc/{self.ppid}/task")
            if self.threads is None:
                self.threads = self.links("task") == len(tasks) and self.links("parent_task") == len(others)
            return (len(tasks), _children(self.pid, tasks), _children(self.ppid, others))
        return (threads, children, siblings)


def _children(pid: int, tasks: list[str] | None = None) -> list[bytes] | None:
    """The children of every thread of `pid` (`tasks`: its threads, listed already)."""
    found: list[bytes] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task") if tasks is None else tasks:
            found.extend(_read(f"/proc/{pid}/task/{task}/children").split())
    except OSError:
        return None
    return sorted(found)


_PENDING = (b"\nSigPnd:", b"\nShdPnd:")   # the lines of /proc/PID/status that hold its waiting signals


def _parent(pid: int, files: Files | None = None) -> tuple[Any, ...]:
    """The runtime as its fork sees it: its pid, its state and the signals waiting for it. A student's kill of
    the runtime is sent before the exercise's last answer but may act later (the runtime waits for a CPU): a
    fork that went on serving would then die in the middle of the next exercise. `files`: the kept files, known
    to be the ones opened (see _process)."""
    try:
        if files is not None and pid == files.ppid:
            stat, status = _pread(files.fds["parent_stat"]), _pread(files.fds["parent_status"])
        else:
            stat, status = _read(f"/proc/{pid}/stat"), _read(f"/proc/{pid}/status")
        flags = int(stat.rsplit(b")", 1)[1].split()[6])
        pending = [status[at + 1:status.find(b"\n", at + 1)] for at in map(status.find, _PENDING) if at >= 0]
    except (OSError, IndexError, ValueError):
        return (pid,)
    # Not its state letter: just after the fork the runtime may still be running on its way to waitpid.
    return (pid, flags & _PF_EXITING, *pending)


def company(files: Files | None = None) -> tuple[Any, ...] | None:
    """Who else could read this process's pipes: its other threads, its children and its parent's (an orphan of
    the student's becomes the runtime's child), as `process` records them; None when /proc cannot be read, or
    one of the kept `files` is no longer the file opened."""
    try:
        return _company(files)
    except Exception:  # noqa: BLE001 - as snapshot
        return None


def _company(files: Files | None = None) -> tuple[Any, ...]:
    """company, raising where /proc cannot be read: one reading for both the check and the `process` state."""
    if files is not None:
        return files.company()
    tasks = os.listdir("/proc/self/task")   # its threads, counted and asked for their children
    return (len(tasks), _children(os.getpid(), tasks), _children(os.getppid()))


def company_of(state: Any) -> tuple[Any, ...] | None:
    """The company a `process` state recorded (None for None)."""
    return None if state is None else (state["threads"], state["children"], state["siblings"])


def same_files(state: Any, fds: tuple[int, ...]) -> bool:
    """Whether each of `fds` is still the file a `process` state recorded for it (the runtime's pipes: closed,
    or another file put in their place, and this process can neither read the next request nor be heard)."""
    try:
        for fd in fds:
            status = os.fstat(fd)
            if (str(fd), status.st_dev, status.st_ino) not in state["descriptors"]:
                return False
    except Exception:  # noqa: BLE001 - as snapshot
        return False
    return True


def _process(known: tuple[Any, ...] | None, files: Files | None = None,
             before: dict[str, Any] | None = None, mask: Any = None) -> dict[str, Any]:
    """What the process itself carries from one exercise to the next (`known`: its company, read just before;
    `files`: its kept /proc files; `before`: the state this one will be compared with; `mask`: its signal mask,
    where the check has changed it)."""
    threads, children, siblings = known if known is not None else _company(files)
    if before is None:   # the state as the fork starts (see rebase)
        rebase()
    umask = os.umask(0o077)
    os.umask(umask)
    descriptors = _descriptors(files, before)
    # The kept files are read only where they are the very files opened: each is among the descriptors recorded
    # with its inode when the process started (opened just before). Else by path: the state differs anyway.
    if files is not None:
        if before is None:   # the state as the process starts: does /proc/PID/fd's size count them here?
            files.counted = files.count() == len(descriptors)
            opened = not files.changed(descriptors)
        else:
            opened = descriptors == before["descriptors"]
        files = files if opened else None
    limits = list(map(resource.getrlimit, _RLIMITS))
    # The C function (signal.getsignal makes an enum of each number and handler): each handler by identity, in
    # the order of _SIGNALS.
    handlers = list(map(_id, map(_getsignal, _SIGNALS)))
    timers = [signal.getitimer(which) for which in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)]
    statm = _pread(files.fds["statm"]) if files is not None else _read("/proc/self/statm")
    size = int(statm.split()[0]) * resource.getpagesize()
    try:   # POSIX timers (timer_create, through ctypes): getitimer does not see them, and one left armed would
        posix_timers = _pread(files.fds["timers"]) if files is not None else _read("/proc/self/timers")
    except OSError:   # a kernel without the file: the same answer before and after, as for what pristine never saw
        posix_timers = b"?"   # (run a handler of the load's in the next exercise)
    return {
        "threads": threads, "children": children, "siblings": siblings, "parent": _parent(os.getppid(), files),
        "cwd": os.getcwd(), "umask": umask,
        "descriptors": descriptors,
        "environ": _environment(), "limits": limits, "handlers": handlers,
        "mask": sorted(_sigmask(signal.SIG_BLOCK, ()) if mask is None else mask),
        "timers": timers, "posix_timers": posix_timers,
        "group": (os.getpgid(0), os.getsid(0)), "priority": os.getpriority(os.PRIO_PROCESS, 0),
        "ids": (os.getresuid(), os.getresgid()), "size": size,
    }


def _listed() -> list[tuple[str, int, int]]:
    """Each open descriptor (its number as text, as /proc lists it) with the device and inode of its file. The
    listing's own descriptor is listed too, closed by the time it is asked: left out."""
    descriptors: list[tuple[str, int, int]] = []
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            status = os.fstat(int(fd))
        except OSError:
            continue
        descriptors.append((fd, status.st_dev, status.st_ino))
    return descriptors


def _descriptors(files: Files | None, before: dict[str, Any] | None) -> list[tuple[str, int, int]]:
    """_listed, without listing where /proc/PID/fd counts as many open as `before` recorded, each still the
    file it was: then those are all the open ones, and the listing would say the same. Each one's fstat in C
    (map), against its number and file as recorded, unpacked once per `before` (Files.expected)."""
    if files is not None and files.counted and before is not None:
        recorded: list[tuple[str, int, int]] = before["descriptors"]
        expected = files.expected
        if expected is None or expected[0] is not recorded:
            expected = files.expected = (recorded, [int(fd) for fd, _, _ in recorded],
                                         [(device, inode) for _, device, inode in recorded])
        try:
            if files.count() == len(recorded) and list(map(_DEVICE_INODE, map(os.fstat, expected[1]))) == expected[2]:
                return recorded   # (the very list: `before` holds it, unchanged)
        except OSError:
            pass
    return _listed()


# os.environ's mapping as _environment last read it: the dict itself (held), a view of its version tag
# (_tag_reader), the tag then and the copy made of it.
_ENVIRON: list[Any] = [None, None, None, None]


def _environment() -> dict[Any, Any]:
    """os.environ's mapping, read as the plain dict of str or bytes it is: a subclass of the student's, a property
    over it or a key of a str subclass would run the student's code while the check runs, after its walk (so would
    a key of the student's in os.environ's own attributes: _own). A copy: two such dicts compare in C (exact str and
    bytes compare by value, whatever the order of their keys). The very copy made last while the mapping's version
    tag is what it was then: nothing in it changed, and the state's comparison finds the same object."""
    attributes = _instance_dict(os.environ, type(os.environ))
    data = _own(attributes, "_data") if attributes is not None else None
    if type(data) is not dict:
        raise Unknown("os.environ's mapping replaced")
    last, view, tag, copy = _ENVIRON
    if data is last and view is not None and _TAG_READ(view) == tag:
        return copy  # type: ignore[no-any-return]
    if not set(map(type, data)) | set(map(type, data.values())) <= {bytes, str}:
        raise Unknown("os.environ's mapping replaced")
    copy = dict(data)
    view = _tag_view(data)
    _ENVIRON[:] = data, view, _TAG_READ(view) if view is not None else None, copy
    return copy


def _interpreter(collecting: bool, own: tuple[Any, ...] = ()) -> dict[str, Any]:
    """The interpreter's own settings and hooks, and the libraries' global state that outlives a call
    (`collecting`: whether the collector was on before the snapshot turned it off; numpy's global generator is
    left out when it is among `own`: the runtime seeds it at each case's start). The libraries' state first:
    reading it may run the student's code (numpy.geterr replaced), whose hooks are then read after it, through
    the interpreter's own functions (sys.gettrace rebound would run more of it)."""
    state: dict[str, Any] = {}
    if "_decimal" in sys.modules:
        state["decimal"] = _decimal()
    warnings = sys.modules.get("warnings")
    if warnings is not None:
        state["warnings"] = list(map(_id, getattr(warnings, "filters", ())))
    locale = sys.modules.get("_locale")
    if locale is not None:
        state["locale"] = locale.setlocale(locale.LC_ALL)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        state["numpy"] = (sorted(numpy.geterr().items()), numpy.getbufsize(),
                          sorted((key, repr(value)) for key, value in numpy.get_printoptions().items()))
        generator = getattr(sys.modules.get("numpy.random.mtrand"), "_rand", None)
        if generator is not None and not any(generator is mine for mine in own):
            name, keys, position, gauss, cached = generator.get_state()
            state["numpy.random"] = (name, keys.tobytes(), position, gauss, cached)
    state["registries"] = _REGISTRIES.state()
    state["caches"] = _caches()
    state["hooks"] = [_id(getattr(sys, name, None)) for name in (
        "stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__", "displayhook", "excepthook",
        "unraisablehook", "breakpointhook")]
    state["path"] = [_id(entry) for entry in sys.path] + [(type(e) is str and e) for e in sys.path]
    state["meta_path"], state["path_hooks"] = list(map(_id, sys.meta_path)), list(map(_id, sys.path_hooks))
    state["limits"] = (_getrecursionlimit(), _getswitchinterval(), _get_int_max_str_digits())
    state["gc"] = (collecting, gc.get_threshold(), gc.get_debug(), list(map(_id, gc.callbacks)), len(gc.garbage))
    state["trace"] = (_id(_gettrace()), _id(_getprofile()), *map(_id, _get_asyncgen_hooks()), _get_origin_depth(),
                      _exit_functions())
    return state


# The library's caches that outlive a call and that any string reaches: re's compiled patterns (keyed by the
# pattern's text) and the encodings package's search results (keyed by the name asked for). A key left by one
# exercise came back to the next (tests/test_hostile_carriers.py: the fork's check read neither). Compared by identity:
# what an exercise added makes the next exercise's fork a fresh one; but re's is put back as the load's snapshot found
# it where every entry is re's own making, (str or bytes type, its exact pattern, int flags) -> re.Pattern, whose
# removal runs nothing of the student's: a notebook that calls re in its functions (every exercise compiling a pattern
# the load did not) took a fresh fork for each exercise, +38% of its CPU (review's sandbox run and bench).
_CACHES = (("re", "_cache"), ("encodings", "_cache"))
_PATTERN = type(__import__("re").compile(""))
_CACHE_BASE: dict[str, tuple[Any, list[Any], list[Any], bool]] = {}   # the load's: the cache, keys, values, plain


_REFERENTS = gc.get_referents   # as loaded


def _plain_pattern(key: Any, value: Any) -> bool:
    """Whether a cache entry is re's own making, so that its removal runs nothing of the student's: the key re
    makes and a pattern that holds (as its traverse lists them, which runs no code) its class, that very text, a
    dict of group names to numbers and a tuple of names. A pattern made by hand (_sre.compile) may hold any object
    there: one whose __del__ ran as the check put the cache back registered a codec error handler after the
    registries were read, and the next exercise of the same fork read the first one's data from it."""
    if not (type(key) is tuple and len(key) == 3 and (key[0] is str or key[0] is bytes) and type(key[1]) is key[0]
            and type(key[2]) is int and type(value) is _PATTERN):
        return False
    for held in _REFERENTS(value):
        kind = type(held)
        if held is _PATTERN or held is key[1] \
                or kind is dict and all(type(name) is str and type(number) is int for name, number in held.items()) \
                or kind is tuple and all(name is None or type(name) is str for name in held):
            continue
        return False
    return True


def _caches() -> list[tuple[int, ...]]:
    found = []
    for module_name, name in _CACHES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        if type(module) is not types.ModuleType:
            raise Unknown(f"{module_name} replaced")
        cache = _MODULE_DICT(module).get(name)
        if type(cache) is not dict:
            raise Unknown(f"{module_name}.{name} replaced")
        if module_name == "re":
            base = _CACHE_BASE.get(module_name)
            if base is None:   # the load's snapshot, the first taken in this process
                _CACHE_BASE[module_name] = (cache, list(cache), list(cache.values()),
                                            all(map(_plain_pattern, cache, cache.values())))
            elif base[0] is cache and base[3] and not (_same(cache, base[1]) and _same(cache.values(), base[2])) \
                    and all(map(_plain_pattern, cache, cache.values())):
                cache.clear()   # (only re's own objects go: nothing of the student's runs)
                cache.update(zip(base[1], base[2], strict=True))
        found.append((_id(cache), len(cache), *map(_id, cache), -1, *map(_id, cache.values())))
    return found


def _decimal() -> tuple[Any, ...]:
    """decimal's contexts as the next exercise would find them: this thread's, and the default that a new
    thread's copies. Read through _decimal's C getcontext and its C Context's repr, never a student's function
    or a Context subclass of the student's (then Unknown)."""
    namespace = _MODULE_DICT(sys.modules["_decimal"])
    getcontext, default = namespace.get("getcontext"), namespace.get("DefaultContext")
    if type(getcontext) is not types.BuiltinFunctionType or getcontext.__name__ != "getcontext":
        raise Unknown("decimal's getcontext replaced")
    context = getcontext()
    if _FLAGS(type(context)) & _HEAPTYPE or _FLAGS(type(default)) & _HEAPTYPE:
        raise Unknown("a decimal context of a Python class")
    return _id(context), repr(context), _id(default), repr(default)


def leaves(roots: list[Any], own: tuple[Any, ...] = (), homes: set[str] | None = None,
           base: Leaves | None = None) -> Leaves | None:
    """The immutable objects reachable from `roots` (as snapshot's arguments), for every later walk to skip;
    None when the walk cannot read them (snapshot would say None too). Taken once, before the load's snapshot.

    `base`: leaves taken before (the zygote's, of builtins: the same in every sandbox, and 60% of the walk),
    kept in these, its roots not walked again. What base holds stays what it was: an immutable object is so
    wherever it was found, and an object `known` to reference the very objects it referenced then is still
    described by them, whoever took the record. What the load added under base's roots (a builtin the notebook
    rebound) is then simply walked at every snapshot. Taken with `homes` None (any class walked, none a leaf),
    base holds no class, so it does not depend on which modules are the student's."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        found: list[Any] = []
        record: dict[int, list[Any]] = {}
        loaded = Loaded(roots, own)
        done = base.roots if base is not None else frozenset()   # not entered (functions reach builtins too)
        walk([root for root in roots if _id(root) not in done], loaded.stop | done, met=set(), homes=homes,
             found=found, record=record)
        known: dict[int, bool] = {}
        result = Leaves([obj for obj in found if _immutable(obj, known, homes)], record, frozenset(map(_id, roots)),
                        base)
        result.loaded = loaded    # the load's snapshot, taken next, reuses this view while sys.modules is the same
        return result
    except Exception:  # noqa: BLE001 - as snapshot
        return None
    finally:
        if collecting:
            gc.enable()


# What the grader's own gc.freeze() left (freeze: the runtime's after the load, each check's settle). An exercise that
# froze its garbage put it where no collection looks, and the next exercise of the fork unfroze and collected it, so
# a finalizer handed it what the exercise before it saw (a real sandbox's second exercise got the first one's input).
# gc.freeze() moves every object of the young generations to the permanent one, and nothing else does: so a live
# object of the grader's made just after its own freeze (the young canary, held here) stays in the young generations
# (a collection moves it to an older one at most) until someone freezes them, and found outside them it says the
# exercise froze. And a canary that is garbage the grader froze itself dies only where the frozen objects were unfrozen
# and collected. (The permanent generation's count, gc.get_freeze_count, told the first as well, but CPython walks the
# whole generation to count it: the load's ~100,000 frozen objects, 1.7 ms of each check's ~2.2 in a jail, twice a
# check; the young generations hold only what the exercise left there.) A canary replaced or freed through the
# runtime's own objects is README's open class (values on runtime objects).
_FROZEN: list[Any] = [None, None]   # the young canary, a weak reference to the frozen garbage canary


class _Canary:
    """Garbage of the grader's, frozen: alive exactly as long as no one unfroze and collected the frozen objects."""

    def __init__(self) -> None:
        self.me = self


class _Young:
    """The young canary: in the young generations until someone freezes them (see _FROZEN)."""


_gc_freeze, _get_objects, _weak = gc.freeze, gc.get_objects, __import__("weakref").ref   # as loaded


def freeze() -> None:
    """gc.freeze() as the grader's own: what it leaves frozen is what the next check compares with. A frozen
    garbage canary already freed is made again: a process the grader goes on with after a gc.unfreeze() of its
    own (a batch's `_collector` in the process that also takes snapshots) would else say no to every later check.
    No check heals an exercise's unfreeze this way: the check reads the canary (_froze_more) before it freezes."""
    if _FROZEN[1] is None or _FROZEN[1]() is None:
        canary = _Canary()
        _FROZEN[1] = _weak(canary)
        del canary
    _gc_freeze()
    _FROZEN[0] = _Young()   # (the last one, frozen by now, is freed: a frozen object that dies leaves its generation)


def _froze_more(*generations: list[Any]) -> bool:
    """Whether an exercise froze objects or unfroze and collected the frozen ones since the grader's last freeze
    (none yet: True). `generations`: the objects of each young generation now (gc.get_objects), each listed before
    any container holds the lists: a list made first lists a container made before the next, and that cycle of the
    grader's own is garbage the check's collection finds."""
    canary = _FROZEN[0]
    return canary is None or not any(any(map(_IS, objects, repeat(canary))) for objects in generations) \
        or _FROZEN[1]() is None


def snapshot(roots: list[Any], own: tuple[Any, ...] = (), homes: set[str] | None = None,
             skip: Leaves | None = None, settle: Any = None) -> Any:
    """What an exercise could observe of the student's objects and the libraries, reachable from `roots` (the
    namespaces the student's code lives in; `own`: the grader's objects among them, not entered; `homes`: the
    names of the modules whose classes are the student's; `skip`: the load's leaves, the same for every
    snapshot compared); None when part of it cannot be read (then only a fresh fork is known to be pristine).
    The runtime takes it once, after the load: every fork starts from it. `settle` (check's): asked once what
    may run the student's code has run, before the walk; False makes the answer None."""
    collecting = gc.isenabled()
    gc.disable()    # no collection (and no student __del__) in the middle of the walk
    try:
        # First: what reading the libraries' state runs (numpy.geterr, which a notebook may replace; sys.modules'
        # keys compared in lookups) may change what the walk sees, never after it.
        interpreter = _interpreter(collecting, own)
        met = {_id(sys)}   # sys's names, even where the notebook reaches sys only through __import__
        loaded = _loaded(roots, own, skip)
        kinds = _state_kinds()
        if settle is not None and not settle():
            return None
        replay = skip.replay if skip is not None else None
        if replay is not None and replay.same(roots, own, homes, loaded, kinds):
            return (replay.walked, _modules(replay.met, loaded), interpreter)   # what the walk would say
        trace: list[Any] | None = None
        if skip is not None and not skip.traced:   # the load's snapshot: every later one is checked against it
            skip.traced, trace = True, []
        walked = walk(roots, loaded.stop, met=met, homes=homes, leaves=skip.ids if skip is not None else None,
                      known=skip.known if skip is not None else None, trace=trace, kinds=kinds)
        if skip is not None and trace is not None:
            skip.replay = Replay.of(trace, walked, met, loaded, roots, own, homes)
            freeze()   # the leaves and the replay with the load's objects: no fork's collection looks at them
        return (walked, _modules(met, loaded), interpreter)
    except Unknown:
        return None
    except Exception:  # noqa: BLE001 - a state this code did not foresee: not known to be pristine
        return None
    finally:
        if collecting:
            gc.enable()


def check(before: Any, take: Any, started: Any, files: Files | None = None) -> bool:
    """Whether an exercise's process is still as pristine as a fresh fork: `before` the load's snapshot, `take`
    a function of `settle` that takes this one (snapshot's arguments but `settle`), `started` the process state
    as the fork started (`files`: its kept /proc files).

    Nothing of the student's may run inside the check after it read what that code could change: it would
    change it back, or act later, and the check would say yes to a process that is not. So every signal is
    blocked for the check's length (a handler of the student's, fired by a timer, ran after the walk, changed
    what it had seen and put the runtime's handler back before it was read), and one still waiting when it ends
    makes the answer no; the collector stays off (a collection in the middle runs the finalizers of what the
    exercise left). Student code may still run where the snapshot reads the libraries' state (numpy.geterr
    replaced), before the walk: `settle` then makes sure that nothing it could leave acts later, unseen: the
    signals still blocked, no garbage left for a collection after the check (its finalizers would run in the
    next exercise), and the company (threads, children: a thread started there could act after the walk)
    read only now, for the process state."""
    if before is None or started is None:
        return False
    try:
        mask = _sigmask(signal.SIG_BLOCK, _SIGNALS)
    except (OSError, ValueError):
        return False
    collecting = gc.isenabled()   # the snapshot turns it off for its length, and reads whether it was on
    company: list[Any] = []

    def settle() -> bool:
        # Everything older is frozen (the load, and what each check left): the exercise's objects are in the two
        # young generations unless a collection of theirs moved some to the oldest, and only then is that one
        # collected too (a full collection also empties the interpreter's free lists: ~0.1 ms of a fork's pages).
        youngest, younger, oldest = _get_objects(0), _get_objects(1), _get_objects(2)
        young = 2 if oldest else 1
        if _sigmask(signal.SIG_BLOCK, _SIGNALS) != _ALL_BLOCKED or _froze_more(youngest, younger, oldest):
            return False
        del youngest, younger, oldest   # (they hold every young object: the collection must see what the exercise left)
        if gc.collect(young):
            return False
        freeze()   # what is left is alive: the next check's collection need not look at it again
        company.append(_company(files))
        return bool(company[0] == company_of(started))

    try:
        after = take(settle)
        gc.disable()
        if not company:
            return False
        now = _process(company[0], files, started, mask)
        return unchanged(before, after, started, now) and not signal.sigpending()
    except Exception:  # noqa: BLE001 - as snapshot
        return False
    finally:
        _sigmask(signal.SIG_SETMASK, mask)
        if collecting:
            gc.enable()


def process(known: tuple[Any, ...] | None = None, files: Files | None = None, before: Any = None) -> Any:
    """What the process itself carries from one exercise to the next (taken by the fork when it starts: its
    pid, children and parent are its own); None when /proc cannot be read. `known`: its `company`, read since
    the exercise's end with no student code run in between (the runtime's hooks are off). `files`: its kept
    /proc files (Files.open, before the first state); `before`: the state this one is for comparing with."""
    try:
        return _process(known, files, before)
    except Exception:  # noqa: BLE001 - as snapshot
        return None


def unchanged(before: Any, after: Any, started: Any, now: Any) -> bool:
    """True when the snapshots and the process states are the same, up to MAX_GROWTH more address space."""
    if before is None or after is None or started is None or now is None:
        return False
    grown = now["size"] - started["size"]
    return grown <= MAX_GROWTH and bool(after == before) and bool({**now, "size": started["size"]} == started)
