"""What an exercise can leave for the next exercise its fork serves where the fork's check does not look: the
bindings of a library module no name of the notebook's reaches (pristine compares the bindings of the modules the
notebook's objects reach, and sys's), the codec error handlers (`codecs.register_error`: the interpreter's registry,
which no module names), re's compiled-pattern cache and the encodings package's cache (README's open class), and
the scratch folder's extended attributes, times and mode (the scratch was emptied between exercises, not its folder).

Graded for real as tests/test_hostile_registries.py (taoistic_attack: the correct Taoistic notebook plus one cell):
each case's call first looks whether what is left there came from another exercise (the runtime's request it was
left under, or a mark of its exercise's, is not its own), answers None if so (every case of that exercise lost), then
leaves it under its own request. A fresh fork has nothing left, so the notebook keeps full marks exactly when the
fork's check saw the change and took a fresh fork.

FOUND (session 26): every one of them reaches the next exercise. The first two carry whole objects (a closure, the
runtime's request with its cases' inputs), the caches and the scratch folder a mark (any string, 64 kB bytes a name
of an extended attribute, 2 x 64 bits of times: data); the student's own computation can
go the same way (a table built on an earlier exercise's clock, looked up by a later exercise's cases). What they can
reach is the same child's later exercises only: a public case never runs in a child that heard a hidden input, and
a child the reference answered is replaced before any exercise that does not isolate those helpers
(Sandbox._retire_for), so neither a hidden input nor a reference's answer reaches a case the student sees through
them. All closed in session 26: the check reads the first four, and the runtime puts the scratch folder's
attributes, mode and times back as it empties it (confine.empty_folder's `made`).
"""

from __future__ import annotations

import pytest

from taoistic_attack import graded_ways, lost

SETUP = '''
import codecs as _codecs, os as _os, zlib as _zlib


def _token(request):
    # the exercise's own mark, its first case's id: id(request) could be the next exercise's request's too (the
    # address of the freed one), and would pass for its own
    return _zlib.crc32(repr(request['cases'][0]['id']).encode())


def _handler(seen, error):
    raise error
'''

WAYS = {
    # json.decoder: loaded in every sandbox (the runtime's codec), named by no object of the notebook's
    "library module binding": ("left = getattr(_sys.modules['json.decoder'], 'carried', None)\n"
                                   "    return left is not None and left is not request",
                                   "_sys.modules['json.decoder'].carried = request"),
    "codec error handler": ("try:\n        left = _codecs.lookup_error('carried')\n"
                            "    except LookupError:\n        return False\n"
                            "    return left.args[0] is not request",
                            "_codecs.register_error('carried', _functools.partial(_handler, request))"),
    "re cache": ("mine = 'carried%d' % _token(request)\n"
                   "    return any(type(key[1]) is str and key[1].startswith('carried') and key[1] != mine\n"
                   "               for key in _sys.modules['re']._cache)",
                   "_sys.modules['re'].compile('carried%d' % _token(request))"),
    # the scratch is emptied between exercises, but its folder keeps what is set on it: an extended attribute (up to
    # 64 kB a name on a tmpfs), its times, its mode
    "scratch folder attribute": ("try:\n        left = _os.getxattr('.', 'user.carried')\n"
                                 "    except OSError:\n        return False\n"
                                 "    return left != b'%d' % _token(request)",
                                 "_os.setxattr('.', 'user.carried', b'%d' % _token(request))"),
    "scratch folder times": ("left = _os.stat('.').st_mtime_ns\n"
                             "    return left < 10**15 and left != _token(request) % 10**15",
                             "_os.utime('.', ns=(0, _token(request) % 10**15))"),
    # the sticky bit marks that an exercise set the others (the folder is made without it)
    "scratch folder mode": ("left = _os.stat('.').st_mode\n"
                            "    return bool(left & 0o1000) and left & 0o77 != _token(request) % 64",
                            "_os.chmod('.', 0o1700 | _token(request) % 64)"),
    "encodings cache": ("mine = 'carried_%d' % _token(request)\n"
                         "    return any(key.startswith('carried_') and key != mine\n"
                         "               for key in _sys.modules['encodings']._cache)",
                         "try:\n        _codecs.lookup('carried_%d' % _token(request))\n"
                         "    except LookupError:\n        pass"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    return graded_ways(tmp_path_factory.mktemp("carriers"), WAYS, SETUP)


@pytest.mark.parametrize("name", sorted(WAYS))
def test_what_an_exercise_leaves_where_the_check_does_not_look_never_reaches_the_next(results, name):
    result = results[name]
    assert lost(result) == {}
    assert result.total == result.max_total == 30


def test_an_exercise_that_compiles_its_own_patterns_keeps_its_fork():
    """re's cache is put back as the load left it where every entry is re's own (review, session 26: compared by
    identity alone, a notebook calling re in its functions took a fresh fork for every exercise, +38% of its CPU);
    what an exercise compiled is gone in the next, and a key of another kind still costs the next a fresh fork."""
    from test_sandbox_reuse import exercises
    source = ("import os, re\n"
              "def find(tail):\n    return [os.getpid(), re.findall(r'\\d+' + tail, '12a 34b'), len(re._cache)]\n"
              "def odd():\n    re._cache[(str, 'odd', 0)] = None\n    return os.getpid()\n")
    first, second, third = exercises(source, "find('a')", "find('b')", "find('c')")
    assert first[0] == second[0] == third[0]   # one fork served all three
    assert [first[1], second[1], third[1]] == [["12a"], ["34b"], []]
    assert first[2] == second[2] == third[2]   # each found the load's cache, and added one pattern
    before, after = exercises(source, "odd()", "find('a')")
    assert before != after[0]


# A pattern made by hand (_sre.compile, as re's compiler calls it) whose group tuple holds an object of the exercise's:
# freed when the check puts re's cache back, its __del__ would run in the middle of the check, after the registries
# were read (review, session 26: a codec error handler it registered there carried the first exercise's data into the
# next exercise of the same fork).
LATE = r'''
import codecs, functools, os, re, _sre
from re import _parser, _compiler


class _Late:
    def __init__(self, data):
        self.data = data

    def __del__(self):
        codecs.register_error("carried", functools.partial(_handler, self.data))


def _handler(data, error):
    raise error


def plant(data):
    text = "(?P<a>z)"
    parsed = _parser.parse(text, 0)
    pattern = _sre.compile(text, parsed.state.flags, _compiler._code(parsed, 0), parsed.state.groups - 1,
                           {"a": 1}, (None, _Late(data)))
    re._cache[(str, text, 0)] = pattern
    return os.getpid()


def look():
    try:
        return [os.getpid(), codecs.lookup_error("carried").args[0]]
    except LookupError:
        return [os.getpid(), None]
'''


def test_a_pattern_made_by_hand_in_res_cache_runs_nothing_in_the_check():
    """Only an entry of re's own making is put back by the check (nothing of the student's runs as it goes); a
    pattern holding an object of the exercise's costs the next exercise a fresh fork, which finds no handler."""
    from test_sandbox_reuse import exercises
    planted, (pid, found) = exercises(LATE, "plant('left by the first exercise')", "look()")
    assert found is None
    assert pid != planted
