"""Hidden cases' inputs never reach what the student sees (README "Isolation and trust", DESIGN.md "Trust model").

A notebook (the correct eight-puzzle one plus one cell) records every board its graded code is called with into
every channel it can reach: a global, files in its scratch and in /dev/shm, a MAP_SHARED page mapped at load, a
process forked at load and left running, os.environ, sys.modules, signals to the runtime, and it walks every
object of its process (the runtime's requests included). Each call then prints all it ever saw, returns it
(inversions: shown as "got") or raises it (the heuristics: the exception's message). The student's views of the
result (the Markdown and HTML report, the self-check text, Gradescope's results.json, hidden tests included as
they show once published) must name no board that only a hidden case used, while the boards of public cases do
show: the channels work. On the old code (one request per exercise, hidden cases included) the first public
inversions case printed the hidden boards. Real sandbox, real batch; bounded by the grader's own limits.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from grader.judge.grading import fixture_uses
from grader.judge.options import Options
from grader.plan.cases import build_plan
from grader.report.formats import Page
from grader.report.gradescope import to_gradescope
from grader.report.notebook_view import check_text
from grader.report.student import html_page, markdown_report
from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from grader.store.status import machine_busy

from notebook_build import appended

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = ROOT / "rubrics" / "eight-puzzle-astar.yaml"
CORRECT = ROOT / "assignments" / "eight-puzzle-astar" / "submissions" / "correct.ipynb"
# The walk of every object costs the first case of each fork about 0.6 s of CPU (2 cores, load 10), and the
# rubric's floor is 1.0 s: with three suites on 2 cores one such case used it all and timed out, the notebook's
# own doing (at case_seconds 0.4 every first case does, "still running at cell 19, line 5x"). The floor is raised
# so each case answers, and each is then held to the notebook's verdict; nothing else about the rubric changes.
CASE_FLOOR = 5.0

ATTACK = r'''
import gc as _gc, marshal as _marshal, mmap as _mmap, os as _os, re as _re, select as _select
import signal as _signal, sys as _sys, tempfile as _tempfile, time as _time, types as _types

_SEEN = set()
_PAGE = _mmap.mmap(-1, 1 << 16, flags=_mmap.MAP_SHARED)          # made at load: every fork shares it
_BITS = []                                                       # filled in the runtime by its signal handler
_HANDLERS = (_signal.signal(_signal.SIGUSR1, lambda *_: _BITS.append("0")),
             _signal.signal(_signal.SIGUSR2, lambda *_: _BITS.append("1")))
_MODULE = _sys.modules.setdefault("_seen_boards", _types.ModuleType("_seen_boards"))
_PIPES = (_os.pipe(), _os.pipe())
_KEEPER = (lambda pid: pid if pid else [_os.set_inheritable(_PIPES[1][1], True), _os.dup2(_PIPES[0][0], 0),
                                        _os.execv(_sys.executable, [_sys.executable, "-c", """
import os, sys
seen, out, buf = set(), int(sys.argv[1]), b""
while True:
    data = os.read(0, 65536)
    if not data:
        os._exit(0)
    buf += data
    while b"\\n" in buf:
        line, buf = buf.split(b"\\n", 1)
        if line == b"?":
            os.write(out, (" ".join(sorted(seen)) + "\\n").encode())
        else:
            seen.add(line.decode())
""", str(_PIPES[1][1])])])(_os.fork())
_FILES = [_os.path.join(_tempfile.gettempdir(), "seen.txt"), _os.path.join(_os.getcwd(), "seen.txt"),
          "/dev/shm/seen.txt"]
_WALKED = set()
_BOARD = _re.compile(r"\(([0-8]), ([0-8]), ([0-8]), ([0-8]), ([0-8]), ([0-8]), ([0-8]), ([0-8]), ([0-8]),?\)")


def _tokens(value, out, depth=0):
    if depth > 8:
        return
    try:
        if isinstance(value, (tuple, list)):
            if len(value) == 9 and all(type(x) is int for x in value) and sorted(value) == list(range(9)):
                out.add("SEEN" + "".join(map(str, value)))
            else:
                for item in list(value)[:200]:
                    _tokens(item, out, depth + 1)
        elif isinstance(value, dict):
            for item in list(value.values())[:200]:
                _tokens(item, out, depth + 1)
        elif isinstance(value, (bytes, bytearray)) and 0 < len(value) < 1 << 20:
            try:
                _tokens(_marshal.loads(bytes(value)), out, depth + 1)
            except Exception:
                _tokens(bytes(value).decode("latin-1"), out, depth + 1)
        elif isinstance(value, str) and len(value) < 1 << 20:
            out.update("SEEN" + "".join(m.groups()) for m in _BOARD.finditer(value))
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            _tokens(dict(vars(value)), out, depth + 1)
    except Exception:
        pass


def _store(found):
    for token in sorted(found - _SEEN):
        _SEEN.add(token)
        for name in _FILES:
            try:
                with open(name, "a") as file:
                    file.write(token + "\n")
            except OSError:
                pass
        end = int.from_bytes(_PAGE[:4], "big") or 4
        if end + 16 < len(_PAGE):
            _PAGE[end:end + 14] = (token + "\n").encode()[:14].ljust(14)
            _PAGE[:4] = (end + 14).to_bytes(4, "big")
        _os.environ["SEEN_BOARDS"] = _os.environ.get("SEEN_BOARDS", "") + " " + token
        _sys.modules["_seen_boards"].__dict__.setdefault("seen", set()).add(token)
        try:
            _os.write(_PIPES[0][1], (token + "\n").encode())
        except OSError:
            pass
        if not _BITS:   # one board as 36 signals to the runtime, whose later forks inherit what its handler kept
            try:
                for digit in token[4:]:
                    for bit in format(int(digit), "04b"):
                        _os.kill(_os.getppid(), _signal.SIGUSR2 if bit == "1" else _signal.SIGUSR1)
                        _time.sleep(0.002)
            except OSError:
                pass


def _gathered(where):
    everything = set(_SEEN) | set(getattr(_sys.modules.get("_seen_boards", _MODULE), "seen", ()))
    if not (_KEEPER and _HANDLERS):
        everything.add("NOKEEPER")
    everything.update(t for t in _os.environ.get("SEEN_BOARDS", "").split() if t)
    for name in _FILES:
        try:
            with open(name) as file:
                everything.update(line.strip() for line in file if line.strip())
        except OSError:
            pass
    end = int.from_bytes(_PAGE[:4], "big")
    if 4 <= end < len(_PAGE):
        everything.update(t for t in _PAGE[4:end].decode("latin-1").split() if t.startswith("SEEN"))
    bits = "".join(_BITS)
    if len(bits) >= 36:
        everything.add("SEEN" + "".join(str(int(bits[i:i + 4], 2)) for i in range(0, 36, 4)))
    try:
        _os.write(_PIPES[0][1], b"?\n")
        if _select.select([_PIPES[1][0]], [], [], 0.3)[0]:
            everything.update(_os.read(_PIPES[1][0], 1 << 20).decode().split())
    except OSError:
        pass
    if (_os.getpid(), where) not in _WALKED:   # every object of this process, the runtime's requests included
        _WALKED.add((_os.getpid(), where))
        frame = _sys._getframe()
        while frame is not None:
            _tokens(dict(frame.f_locals), everything)
            frame = frame.f_back
        for value in _gc.get_objects():
            if isinstance(value, (dict, list)):
                _tokens(value, everything, 6)
    return " ".join(sorted(everything))


def _leak(where, *args):
    found = set()
    for value in args:
        _tokens(value, found)
    _store(found)
    text = _gathered(where)
    print("LEAK", text)
    return "LEAK " + text


def inversions(state):
    return _leak("inversions", state)


class EightPuzzle(EightPuzzle):
    def h1(self, node):
        raise ValueError(_leak("h1", self, node))

    def h2(self, node):
        raise ValueError(_leak("h2", self, node))

    def h(self, node):
        raise ValueError(_leak("h", self, node))
'''


def _boards(value, out: set[str]) -> None:
    if isinstance(value, (tuple, list)):
        if len(value) == 9 and all(type(x) is int for x in value) and sorted(value) == list(range(9)):
            out.add("SEEN" + "".join(map(str, value)))
        else:
            for item in value:
                _boards(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _boards(item, out)


def _case_boards(plan, case) -> set[str]:
    """The boards a case's call passes: the course data it names and the literal boards it spells."""
    found: set[str] = set()
    _boards(list(fixture_uses(case.call, plan.data(case)).values()), found)
    for node in ast.walk(ast.parse(case.call, mode="eval")):
        if isinstance(node, ast.Tuple):
            try:
                _boards(ast.literal_eval(node), found)
            except ValueError:
                pass
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path):
    folder = tmp_path_factory.mktemp("hidden-inputs")
    path = folder / "records-every-board.ipynb"
    nbformat.write(appended(CORRECT, ATTACK), path)
    shm = Path("/dev/shm/seen.txt")
    before = shm.exists()
    try:
        [result] = grade([path], RUBRIC, folder / "out", jobs=1, cache=grader_cache,
                         options=Options(case_seconds=CASE_FLOOR))
    finally:
        if shm.exists() and not before:    # where the sandbox could write the host's /dev/shm (rlimits mode)
            shm.unlink()
    plan = build_plan(load_rubric(RUBRIC), grader_cache)
    public: set[str] = set()
    hidden: set[str] = set()
    for exercise in ("inversions", "h1", "h2", "h"):
        for case in plan.cases[exercise]:
            (public if case.visibility == "public" else hidden).update(_case_boards(plan, case))
    # Boards the notebook spells itself (EightPuzzle's default goal, its examples) are the student's own.
    spelled = {"SEEN" + "".join(m.groups()) for m in re.finditer(
        r"\(\s*" + r",\s*".join([r"([0-8])"] * 9) + r",?\s*\)",
        CORRECT.read_text(encoding="utf-8").replace("\\n", "\n"))}
    assert "SEEN012345678" in spelled
    return result, public, hidden - public - spelled


def _student_views(result) -> dict[str, str]:
    hidden_counts = {e.id: sum(1 for c in e.cases if c.visibility == "hidden") for e in result.exercises}
    return {"markdown": markdown_report(result), "html": html_page(Page(result)),
            "check": check_text(result, hidden_counts)[0],
            "gradescope": json.dumps(to_gradescope(result), ensure_ascii=False)}


def test_no_board_only_a_hidden_case_used_reaches_any_student_view(attacked) -> None:
    result, public, hidden_only = attacked
    assert len(hidden_only) >= 5, hidden_only          # GOAL-free hidden boards: the reversed one, random ones
    for view, text in _student_views(result).items():
        shown = set(re.findall(r"SEEN[0-8]{9}", text))
        assert not shown & hidden_only, (view, sorted(shown & hidden_only))


def test_the_channels_worked_on_public_cases(attacked) -> None:
    """Not vacuous: public cases' boards, recorded by the same code, are in what the student sees."""
    result, public, _ = attacked
    markdown = markdown_report(result)
    assert set(re.findall(r"SEEN[0-8]{9}", markdown)) & public
    warnings = " ".join(w.shown for w in result.warnings)
    assert "could not" not in warnings or "_KEEPER" not in warnings, warnings   # the attack loaded whole


def test_hidden_cases_still_run_and_are_judged(attacked) -> None:
    """The hidden cases ran (the order changed, not what is graded): each is judged on the notebook's answer."""
    result, _, _ = attacked
    for exercise, status in (("inversions", "fail"), ("h1", "error"), ("h2", "error"), ("h", "error")):
        cases = [c for c in result.exercise(exercise).cases if c.visibility == "hidden"]
        judged = [c for c in cases if not machine_busy(c.status, c.reason)]   # a busy machine may keep a few
        assert judged and all(c.status == status for c in judged), [(c.id, c.status, c.message) for c in cases]


# A notebook whose inversions is wrong, so h1, h2 and h run again with the reference's inversions after every
# hidden case, and whose heuristics raise in that second run once in each process (the first case that reaches
# them) and answer right after: the second run earns more and counts. Its first case's message is what a notebook
# that carried hidden inputs across through the host's page cache (which outlives the child) would fill.
RERUN = r'''
import os as _os

def inversions(state):
    return -1

_MINE = inversions
_SPOKEN = set()


class EightPuzzle(EightPuzzle):
    def _rerun(self, name, node):
        if globals()["inversions"] is not _MINE and _os.getpid() in _SPOKEN:
            return getattr(super(), name)(node)
        if globals()["inversions"] is not _MINE:
            _SPOKEN.add(_os.getpid())
        raise ValueError("RERUN-MARK")

    def h1(self, node):
        return self._rerun("h1", node)

    def h2(self, node):
        return self._rerun("h2", node)

    def h(self, node):
        return self._rerun("h", node)
'''


@pytest.fixture(scope="module")
def rerun(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path):
    folder = tmp_path_factory.mktemp("after-hidden")
    path = folder / "second-run-speaks.ipynb"
    nbformat.write(appended(CORRECT, RERUN), path)
    [result] = grade([path], RUBRIC, folder / "out", jobs=1, cache=grader_cache)
    return result


def test_a_run_after_the_hidden_cases_shows_verdicts_only(rerun) -> None:
    """The reference's run comes after every hidden case; the child is new, the host's page cache is not (README
    "Hidden cases' inputs never reach a public case"): what its public cases print, return or raise reaches no
    student view. The TA's view keeps it, and the scores are the second run's."""
    rerun_ones = [rerun.exercise(name) for name in ("h1", "h2", "h")]
    for exercise in rerun_ones:
        assert exercise.isolated, (exercise.id, exercise.notes)
        assert all(case.visibility == "hidden" for case in exercise.cases), exercise.id
        assert any("shown by its verdict only" in note for note in exercise.notes), exercise.notes
        assert exercise.score > 0, exercise.id
    marked = [case for exercise in rerun_ones for case in exercise.cases if "RERUN-MARK" in (case.message or "")]
    assert marked, "no case of the second runs raised (a busy machine kept all three first cases?)"
    assert "RERUN-MARK" in markdown_report(rerun, hidden_details=True)
    for view, text in _student_views(rerun).items():
        assert "RERUN-MARK" not in text, view
    # The own runs' public cases came before any hidden input and stay as they were.
    assert any(case.visibility == "public" for case in rerun.exercise("inversions").cases)
