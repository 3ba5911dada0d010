"""The kept statements and the rubric's expressions compiled by the parent, for the child to load instead of
compiling them itself.

Compiling a notebook's statements is most of the child's load (about 2.7 ms of CPU of a fresh sandbox, whose
first compile touches pages a warm process has in place); the parent has the same source and the same
interpreter, and a statement it has compiled before (a class's notebooks share the template's code, whatever
their cells' execution counts) costs it nothing. What goes down is the marshal data of the code object the child
would have made (the form of a .pyc), compiled under a neutral file name that the child replaces by the cell's
label; it travels in a request, from the parent to the child: nothing the child sends is ever loaded this way.

A statement whose compile warns (a SyntaxWarning of `x is 'a'`) or fails is not sent compiled: the child then
compiles it itself, and the warning goes to the load's output, or the error to its warnings, as before. So is one
longer than MAX_CHARS (a cell of pasted data), whose compile is then the student's load time, not the grader's, one
whose code is far larger than its source (folded constants), any past the first REQUEST_CODE bytes of code, one with
more than MAX_PLUSES `+` (whose folding costs the compiler the square of them), and any past what one submission may
cost the parent to compile (SUBMISSION_CHARS, `Allowance`): what the grader spends compiling a notebook is bounded
by a constant, whatever its code, and the rest is the child's, on its own clock and memory.

A statement is `quiet` when its code only makes constants and functions and binds names (a plain `def`, `n = 100`):
it calls nothing, so it cannot be the one a load hangs in, and the runtime announces it with no `progress` frame
(one wake-up of the parent less each; a correct notebook's load sends a third of the frames). The only code such
a statement can run is a finalizer of the student's (an object freed by the rebinding or by a collection); a load
that hangs there is taken to hang in the statement announced before it, which costs only that notebook.

An exercise's rubric expressions (each case's call, reduce and probes: `expressions`) go down the same way with
the exercise's request, under the file names the runtime compiles them under, whole: they are the course's, not
the student's, and a case's expressions are short.
"""

from __future__ import annotations

import __future__
import importlib.util
import marshal
import opcode
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The child checks it against its own: marshal data of code objects is only ever good for the same interpreter.
MAGIC = importlib.util.MAGIC_NUMBER
FLAGS = __future__.annotations.compiler_flag   # annotations are not evaluated (the runtime's own flags)
FILENAME = "<statement>"                       # the child puts the cell's label in its place
# What a quiet statement's own code may do: load constants, build tuples, lists and dicts of them, make functions,
# bind names in the module's namespace (a plain dict). By the names of every version from 3.11 (each where it has
# it): 3.12 ends a statement with RETURN_CONST (without it no statement there was quiet), 3.13 sets a function's
# defaults with SET_FUNCTION_ATTRIBUTE, 3.14 loads a small int with LOAD_SMALL_INT.
_QUIET = frozenset(opcode.opmap[name] for name in (
    "CACHE", "NOP", "RESUME", "EXTENDED_ARG", "LOAD_CONST", "LOAD_SMALL_INT", "BUILD_TUPLE", "BUILD_LIST",
    "LIST_EXTEND", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "STORE_NAME",
    "RETURN_VALUE", "RETURN_CONST") if name in opcode.opmap)


@dataclass(frozen=True)
class Compiled:
    """A kept statement as the parent compiled it: its code's marshal data (None: the child compiles it), and
    whether that code calls nothing (quiet)."""

    code: bytes | None
    quiet: bool = False


# A longer statement is compiled by the child, on its load's clock: a cell of pasted data (extraction keeps cells
# up to 2,000,000 characters) would otherwise cost the grader its compile and stay in this worker's cache while
# later students are graded. The bundled and fixture notebooks' longest statement has ~3,100 characters.
MAX_CHARS = 20_000
# A statement's code may be this large at most, or the child compiles it: the compiler folds `"ab" * 2048` (11
# characters) into a 4,096-character constant, so 20,000 characters of source made 7.4 MB of marshal data, and a
# 1 MB notebook of such statements a 300 MB load request that the frame limit refused (the notebook scored 0 and
# the worker peaked at 880 MB). The bundled and fixture statements' code is under 1,024 + 2.6 bytes a character.
CODE_BASE, CODE_PER_CHAR = 1024, 8
# A statement with more `+` than this is compiled by the child. The compiler folds a chain of constant `+` (strings,
# bytes, tuples: `'a'*4096 + 'a'*4096 + ...`) into one constant and keeps every partial sum until the statement is
# compiled, so n terms cost it n**2 / 2 times 4 kB of memory and copying (~0.8 us of CPU per n**2): 40 statements of
# 380-term chains, a 740 kB notebook, took a worker 13 s of CPU and 1.3 GB. Here at most ~18 MB (64 partial sums of
# at most MAX_CHARS and 64 times 4 kB) and ~3 ms a statement; the bundled and fixture statements have at most 16.
MAX_PLUSES = 64
# What compiling one submission's statements may cost the parent, in characters of plain code (~0.2 us of CPU each;
# a statement costs its length and 4 per square of its `+`, the folding's share): past it, the child compiles the
# rest: 4,000,000 characters of code (what extraction keeps at most) of 64-term chains would cost ~22 s.
SUBMISSION_CHARS = 1_000_000
REQUEST_CODE = 16_000_000   # the compiled code one load request carries at most: later statements go as source
_CACHE: dict[tuple[str, int], Compiled] = {}
_CACHE_ENTRIES = 4096
_CACHE_CHARS = 8_000_000    # the source and code the cache holds at most (characters and bytes)
_held = 0                   # the source and code it holds now


@dataclass
class Allowance:
    """What the parent may still spend compiling one submission's statements (SUBMISSION_CHARS, as it counts
    them), across its loads: a statement taken from the cache costs nothing."""

    left: int = SUBMISSION_CHARS


def _cost(code: str) -> int:
    pluses = code.count("+")
    return len(code) + 4 * pluses * pluses


def compiled(statements: Sequence[Mapping[str, Any]], allowance: Allowance | None = None) -> list[Compiled]:
    """For each statement, the marshal data of its code as the child would compile it (its first line at its
    line in the cell), or None where the child must compile it itself; and whether it is quiet. `allowance`: the
    submission's, which what is compiled here is taken from (None: a fresh one)."""
    global _held
    allowance = allowance if allowance is not None else Allowance()
    found: list[Compiled] = []
    carried = 0    # the code this request carries so far
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for statement in statements:
            key = (str(statement["code"]), int(statement["line"]))
            made = _CACHE.get(key)
            if made is None:
                cost = _cost(key[0])
                if len(key[0]) > MAX_CHARS or key[0].count("+") > MAX_PLUSES:
                    made = Compiled(None)
                elif cost > allowance.left:   # this submission's, not the code's: not kept for others
                    found.append(Compiled(None))
                    continue
                else:
                    allowance.left -= cost
                    made = _compile(*key, caught)
                    size = len(key[0]) + len(made.code or b"")
                    if len(_CACHE) >= _CACHE_ENTRIES or _held + size > _CACHE_CHARS:
                        _CACHE.clear()
                        _held = 0
                    _CACHE[key] = made
                    _held += size
            if made.code is not None:
                carried += len(made.code)
                if carried > REQUEST_CODE:
                    made = Compiled(None)
            found.append(made)
    return found


def _compile(code: str, line: int, caught: list[Any]) -> Compiled:
    warned = len(caught)
    try:
        # optimize=0: as the child compiles (its interpreter starts without -O), whatever flags the grader runs with
        made = compile("\n" * (line - 1) + code, FILENAME, "exec", flags=FLAGS, dont_inherit=True, optimize=0)
        data = marshal.dumps(made)   # ValueError: nested deeper than marshal goes (2,500 nested lambdas)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return Compiled(None)
    if len(caught) > warned:
        return Compiled(None)
    if len(data) > CODE_BASE + CODE_PER_CHAR * len(code):
        return Compiled(None)
    return Compiled(data, quiet=set(made.co_code[::2]) <= _QUIET)


# The file names the runtime compiles a case's rubric expressions under (runtime._compiled): its call, its reduce,
# its probes. A traceback's frames in them are the rubric's, never shown as the student's.
CALL_FILE, REDUCE_FILE, PROBE_FILE = "<case>", "<reduce>", "<probe>"


def expressions(cases: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, bytes]]:
    """An exercise's rubric expressions (each case's call, reduce and probes: the exercise request's `cases`),
    each once, as (text, file name, marshal data of the code the runtime would compile): a correct notebook's
    exercises have ~32 of them, which cost the child ~35 us each to compile and ~2.5 us to load. One whose
    compile warns or fails is left out: the child compiles it, with its warning or error, as before."""
    wanted: dict[tuple[str, str], None] = {}
    for case in cases:
        wanted[(str(case["code"]), CALL_FILE)] = None
        if case.get("reduce"):
            wanted[(str(case["reduce"]), REDUCE_FILE)] = None
        for code in dict(case.get("probes") or {}).values():
            wanted[(str(code), PROBE_FILE)] = None
    found = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for text, filename in wanted:
            try:   # as the runtime compiles them: no future flags (its own module has none), no -O
                made = compile(text, filename, "eval", dont_inherit=True, optimize=0)
            except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
                continue
            if caught:
                caught.clear()
                continue
            found.append((text, filename, marshal.dumps(made)))
    return found
