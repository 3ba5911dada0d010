"""Student kits: what a kit holds (and never holds), and that checking with it gives the grader's public verdicts."""

from __future__ import annotations

import __future__
import io
import json
import linecache
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest import mock

import pytest

from conftest import REFERENCE, REPO, RUBRIC, SUBMISSIONS
from grader.run.batch import check as rubric_check
from grader.extract.source import extract
from grader.judge.grading import Options, build_requests
from grader.kit.kit import (FALLBACK_PASS, PATH_UNVERIFIED, UNVERIFIED, KitCheck, KitError, check, kit_from_dict,
                            path_failure, write_kit)
from grader.kit.check import check_with_kit, run_check
from grader.intake.notebook import read_notebook
from grader import codec
from testclock import within

EXAMPLES = ("correct", "move-dir-transposed", "seed-000", "syntax-error")


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strings(value) -> list[str]:
    """Every string in a JSON document, keys included: what a student can read in the kit, unescaped."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (key, *_strings(item))]
    return []


def _subvalues(wire) -> set[str]:
    """The canonical JSON of a wire value and of every value nested in it."""
    found = {_canonical(wire)}
    if isinstance(wire, list):
        for item in wire:
            found |= _subvalues(item)
    elif isinstance(wire, dict):
        for item in wire.values():
            found |= _subvalues(item)
    return found


@pytest.fixture(scope="module")
def kit_path(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Path:
    return write_kit(RUBRIC, tmp_path_factory.mktemp("kit") / "kit.json", cache=grader_cache)


@pytest.fixture(scope="module")
def kit_data(kit_path: Path) -> dict:
    return json.loads(kit_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def public_facts(plan) -> set[str]:
    """Values students get anyway: every public case's inputs, expected answer and known-mistake answers."""
    facts: set[str] = set()
    for exercise in plan.rubric.exercises:
        public = [c for c in plan.cases[exercise.id] if c.visibility == "public"]
        requests = build_requests(plan, exercise, public, exercise.function, Options())
        for case, request in zip(public, requests, strict=True):
            expected = plan.expected[case.id]
            for wire in (*request.values.values(), *request.set.values(), expected.value,
                         *(answer for _, answer in expected.mistakes)):
                facts |= _subvalues(wire)
    return facts


# ------------------------------------------------------------------------------------------ what a kit holds


def test_kit_contains_no_line_of_the_reference_module(kit_path: Path, kit_data: dict):
    text = kit_path.read_text(encoding="utf-8")
    readable = "\n".join(_strings(kit_data))
    lines = {line.strip() for line in REFERENCE.read_text(encoding="utf-8").splitlines() if len(line.strip()) >= 20}
    assert len(lines) > 100
    leaked = sorted(line for line in lines if line in text or line in readable)
    assert leaked == []


def test_kit_contains_no_hidden_case_expected_value_call_or_variables(plan, kit_path: Path, kit_data: dict,
                                                                      public_facts: set[str]):
    canonical_kit = _canonical(kit_data)
    readable = "\n".join(_strings(kit_data))
    hidden = [c for cases in plan.cases.values() for c in cases if c.visibility == "hidden"]
    checked = 0
    for case in hidden:
        assert case.shown_call not in readable, case.id
        assert case.shown_call not in kit_path.read_text(encoding="utf-8"), case.id
        values = [plan.expected[case.id].value]
        if case.variables:
            values.append(codec.encode(dict(case.variables)))
        for wire in values:
            shown = _canonical(wire)
            if len(shown) < 8 or shown in public_facts:
                continue   # True, 12, (1, 0) or a state some public case uses: not evidence of a leak
            checked += 1
            assert shown not in canonical_kit, case.id
            described = codec.describe(wire, 10_000)
            assert len(described) < 12 or described not in readable, case.id
    assert checked > 60       # most hidden answers are distinctive enough to be looked for


def test_kit_has_only_public_cases_and_counts_the_hidden_ones(plan, kit_data: dict):
    kit = kit_from_dict(kit_data)
    for exercise in kit.exercises:
        cases = plan.cases[exercise.id]
        assert [c.id for c in exercise.cases] == [c.id for c in cases if c.visibility == "public"]
        assert exercise.hidden_cases == sum(c.visibility == "hidden" for c in cases) > 0


def test_kit_cases_are_the_requests_the_grader_sends(plan, kit_data: dict):
    kit = kit_from_dict(kit_data)
    for exercise, kit_exercise in zip(plan.rubric.exercises, kit.exercises, strict=True):
        public = [c for c in plan.cases[exercise.id] if c.visibility == "public"]
        requests = build_requests(plan, exercise, public, exercise.function, Options())
        for request, case in zip(requests, kit_exercise.cases, strict=True):
            assert (case.code, dict(case.values), dict(case.set), dict(case.probes), case.reduce, case.timeout) == (
                request.code, dict(request.values), dict(request.set), dict(request.probes), request.reduce,
                request.timeout)
            assert case.expected == plan.expected[case.id].value


def test_kit_carries_the_support_modules_and_no_course_paths(kit_path: Path, kit_data: dict):
    support = REPO / "assignments" / "taoistic-search" / "support" / "Set.py"
    assert kit_data["support"]["Set"] == support.read_text(encoding="utf-8")
    assert str(REPO) not in kit_path.read_text(encoding="utf-8")


def test_kit_of_another_format_is_refused_with_the_reason(kit_data: dict):
    with pytest.raises(KitError, match="format 99"):
        kit_from_dict({**kit_data, "format": 99})
    with pytest.raises(KitError, match="not a puzzle-grader kit"):
        kit_from_dict({"exercises": []})


def test_damaged_wire_value_in_a_kit_is_refused(kit_data: dict):
    damaged = json.loads(json.dumps(kit_data))
    damaged["exercises"][0]["cases"][0]["expected"] = {"tuple": "not a list"}
    with pytest.raises(KitError, match="find_tile#1"):
        kit_from_dict(damaged)


# --------------------------------------------------------------------------------- judging without reference


START = codec.encode((("1", "0"), ("2", "3")))
STEP = codec.encode((("0", "1"), ("2", "3")))
GOAL = codec.encode((("2", "1"), ("0", "3")))


def _path(*states):
    return {"list": list(states)}


def test_path_that_does_not_begin_at_the_start_fails_without_the_rules():
    check_ = KitCheck("path", start=START, goal=GOAL, optimal=True)
    assert "does not begin with the start state" in path_failure(check_, _path(START, STEP, GOAL), _path(STEP, GOAL))


def test_path_of_another_length_than_the_shortest_fails_and_same_length_is_left_open():
    check_ = KitCheck("path", start=START, goal=GOAL, optimal=True)
    expected = _path(START, STEP, GOAL)
    assert "shortest has 2 moves" in path_failure(check_, expected, _path(START, STEP, START, STEP, GOAL))
    assert "shortest possible has 2" in path_failure(check_, expected, _path(START, GOAL))
    assert path_failure(check_, expected, _path(START, codec.encode((("1", "3"), ("2", "0"))), GOAL)) is None
    assert path_failure(check_, expected, None) == "returned None: no path was found"


# ------------------------------------------------------------------------------------- checking in the sandbox


@pytest.mark.parametrize("example", EXAMPLES)
def test_kit_check_gives_the_rubric_checks_public_verdicts(example: str, kit_path: Path, grader_cache: Path):
    notebook = SUBMISSIONS / f"{example}.ipynb"
    graded, hidden = rubric_check(notebook, RUBRIC, cache=grader_cache)
    checked, kit_hidden = check_with_kit(notebook, kit_path)
    assert kit_hidden == hidden
    real = {c.id: c for e in graded.exercises for c in e.cases}
    mine = {c.id: c for e in checked.exercises for c in e.cases}
    assert mine.keys() == real.keys()
    for case_id, case in mine.items():
        # What the kit cannot settle is unverified, never a verdict of its own.
        assert case.status in (real[case_id].status, UNVERIFIED), (case_id, case.status, real[case_id].status)
        assert case.call == real[case_id].call
        if case.status == real[case_id].status:
            assert case.inputs == real[case_id].inputs    # the self-check draws the fixtures the report does
    unverified = {i for i, c in mine.items() if c.status == UNVERIFIED}
    assert len(unverified) <= 8
    if example == "correct":
        assert unverified <= {"search#2", "main#1"}           # a different, equally short path
        assert all(mine[i].message.startswith(PATH_UNVERIFIED) for i in unverified)
        assert mine["search#1"].message == FALLBACK_PASS     # the reference's own path
    if example == "move-dir-transposed":
        assert [mine[f"move_dir#{n}"].status for n in (1, 2)] == ["fail", "fail"]
        assert "Rows and columns look swapped" in mine["move_dir#1"].message
        # move_dir was judged consistently transposed on the public cases, so the kit accepts the 2020/21 variant.
        assert mine["extract_move#1"].status == "pass"
        assert mine["extract_move#1"].variant == "extract_move_transposed"
    if example == "syntax-error":
        assert {mine[f"replace_numbers#{n}"].status for n in (1, 2)} == {"missing"}
        assert mine["intermediate_goals#1"].status == UNVERIFIED
        assert "replace_numbers missing" in mine["intermediate_goals#1"].message
        assert mine["main#1"].status == "error"


def test_known_mistake_answer_gets_the_full_checks_precomputed_verdict(tmp_path: Path, grader_cache: Path):
    """check_count is a reference function: the kit holds its verdict on the known mistakes' answers, not its code."""
    rubric = REPO / "rubrics" / "eight-puzzle-astar.yaml"
    kit = write_kit(rubric, tmp_path / "kit.json", cache=grader_cache)
    notebook = REPO / "assignments" / "eight-puzzle-astar" / "submissions" / "h2-counts-blank.ipynb"
    graded, _ = rubric_check(notebook, rubric, cache=grader_cache)
    checked, _ = check_with_kit(notebook, kit)
    real = {c.id: c for c in graded.exercise("h2").cases}
    mine = {c.id: c for c in checked.exercise("h2").cases}
    failing = [i for i, c in real.items() if c.status == "fail"]
    assert failing and all(mine[i].status == "fail" and mine[i].message == real[i].message for i in failing)


def test_an_isolated_method_is_answered_from_the_kit_as_grading_answers_it(tmp_path: Path, grader_cache: Path):
    """seed-004 leaves h2(self, node) the stub, so h returns None: grading judges astar_search again with the
    reference's EightPuzzle.h (isolate: {method: ...}); the kit carries the course's answers of h on the public
    cases and does the same, so astar_search is not shown failing (a search that asks h about a state the
    reference's never did is left unverified, never failed)."""
    rubric = REPO / "rubrics" / "eight-puzzle-astar.yaml"
    kit = write_kit(rubric, tmp_path / "kit.json", cache=grader_cache)
    [method] = [m for e in json.loads(kit.read_text(encoding="utf-8"))["exercises"] for m in e.get("methods", ())]
    assert (method["name"], method["inputs"]) == ("EightPuzzle.h", ["node.state", "self.goal"])
    notebook = REPO / "assignments" / "eight-puzzle-astar" / "submissions" / "seed-004.ipynb"
    graded, _ = rubric_check(notebook, rubric, cache=grader_cache)
    checked, _ = check_with_kit(notebook, kit)
    real, mine = graded.exercise("astar_search"), checked.exercise("astar_search")
    assert real.isolated == mine.isolated == ("EightPuzzle.h",)
    assert {c.status for c in real.cases if c.visibility == "public"} == {"pass"}
    assert {c.status for c in mine.cases} <= {"pass", "unverified"}
    assert sum(c.status == "pass" for c in mine.cases) >= 2
    assert checked.exercise("h2").score == 0      # the stub itself is still the student's to fix


def test_the_live_kernel_check_answers_an_isolated_method_from_the_kit_too(tmp_path: Path, grader_cache: Path):
    """In Jupyter (`from grader import check`) the notebook's class gets a stand-in for EightPuzzle.h while
    astar_search runs again, as the sandbox's child does; the notebook's own h is back afterwards."""
    kit = write_kit(REPO / "rubrics" / "eight-puzzle-astar.yaml", tmp_path / "kit.json", cache=grader_cache)
    namespace = _namespace_of(REPO / "assignments" / "eight-puzzle-astar" / "submissions" / "seed-004.ipynb")
    own_h = namespace["EightPuzzle"].__dict__["h"]
    summary = check(kit, namespace=namespace, console=_quiet())
    astar = summary.result.exercise("astar_search")
    # Run again with the stand-in, astar asked the kit about states it has answers for and about some it has
    # not (a case stopped by an unanswered question is unverified, never failed).
    assert {c.status for c in astar.cases} <= {"pass", "unverified"}
    assert any(c.cause == "the course's answers of an isolated method are not all in the kit" for c in astar.cases)
    assert namespace["EightPuzzle"].__dict__["h"] is own_h


def test_unreadable_notebook_still_gets_a_result_from_the_kit(kit_path: Path):
    result, hidden = check_with_kit(REPO / "tests" / "fixtures" / "notebooks" / "invalid_json.ipynb", kit_path)
    assert result.total == 0 and result.warnings
    assert {c.status for e in result.exercises for c in e.cases} == {"missing"}
    assert result.exercise("move_dir").cases[0].call == "move_dir(Start, 0, 0, 1, 0)"
    assert sum(hidden.values()) == 109


def test_run_check_exit_status_is_zero_only_when_no_public_case_fails(kit_path: Path):
    from rich.console import Console
    quiet = Console(file=io.StringIO())
    assert run_check(SUBMISSIONS / "correct.ipynb", kit_path, quiet) == 0
    assert run_check(SUBMISSIONS / "move-dir-transposed.ipynb", kit_path, quiet) == 1



def test_the_self_check_says_each_failure_once_and_draws_each_board_once(kit_path: Path, tmp_path: Path):
    """find-tile-transposed, self-checked from another folder with `grader check --kit`: its find_tile printed the
    note '2 cases fail the same way (...), e.g. <the first case's message>' above that case, then the other case
    with the known mistake's advice again (the advice three times), and drew the Start board five times, under each
    exercise that failed on it (328 lines). The kit's settled results kept that note for cases it turned into
    'checked after submission' (manhattan, extract_move...), failing no more."""
    notebook = tmp_path / "ada.ipynb"
    shutil.copy(SUBMISSIONS / "find-tile-transposed.ipynb", notebook)
    done = subprocess.run([sys.executable, "-P", "-m", "grader", "check", "--kit", str(kit_path), notebook.name],
                          capture_output=True, text=True, cwd=tmp_path, timeout=within(600))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "fail the same way" not in out, out
    assert out.count("Your answer looks like (col, row)") == 1, out
    assert out.count("│    │ 14 │  8 │ 12 │") == 2, out   # Start, and SeedPath[0]: another name
    assert "Start: as drawn above, under find_tile" in out
    result, _ = check_with_kit(notebook, kit_path)
    for exercise in result.exercises:
        if not any(case.status in ("fail", "error", "timeout") for case in exercise.cases):
            assert not any("fail the same way" in note for note in exercise.notes), (exercise.id, exercise.notes)
    assert any("2 cases fail the same way" in note for note in result.exercise("find_tile").notes)   # the judge's


def test_a_folder_is_checked_by_the_notebook_grading_takes_from_it(kit_path: Path, tmp_path: Path):
    """Two notebooks in one folder in the last hour: `grader check --kit KIT FOLDER` (refused before: 'must be a
    file') checks the one grade takes from it by CHOICE_RULE, and says which and why first: a fresh copy of the
    template beside the work is not it (it defines nothing), but a newer lab-old.ipynb is."""
    folder = tmp_path / "ada"
    folder.mkdir()
    shutil.copy(SUBMISSIONS / "correct.ipynb", folder / "lab.ipynb")
    os.utime(folder / "lab.ipynb", (1_700_000_000, 1_700_000_000))
    shutil.copy(REPO / "assignments" / "taoistic-search" / "template.ipynb", folder / "Untitled.ipynb")

    def check_folder() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-P", "-m", "grader", "check", "--kit", str(kit_path), "ada"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=within(600))
    done = check_folder()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ada: 2 notebooks, graded ada/lab.ipynb (defines the most graded names"), done.stdout
    assert "checking ada/lab.ipynb: the notebook grading takes from this folder" in done.stdout
    shutil.copy(SUBMISSIONS / "find-tile-transposed.ipynb", folder / "lab-old.ipynb")
    done = check_folder()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "graded ada/lab-old.ipynb (newest modification time" in done.stdout.splitlines()[0], done.stdout
    assert "Your answer looks like (col, row)" in done.stdout


# ------------------------------------------------------------------------------------------ in the live kernel


def _namespace_of(notebook: Path) -> dict:
    """The notebook's extracted module run as a kernel would have run its cells (unavailable imports mocked)."""
    namespace: dict = {"__name__": "__main__", "display": lambda *args, **kwargs: None}   # IPython's display
    for statement in extract(read_notebook(notebook)).statements:
        try:
            _run_cell(namespace, statement.code, statement.label, statement.line)
        except ImportError:
            namespace.update({name: mock.MagicMock() for name in statement.names})
    return namespace


def _run_cell(namespace: dict, source: str, label: str, line: int = 1) -> None:
    """Run code as IPython runs a cell: its source registered under the cell's name, so inspect can find it."""
    lines = ["\n"] * (line - 1) + [text + "\n" for text in source.splitlines()]
    linecache.cache[label] = (0, None, lines, label)
    code = compile("".join(lines), label, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - bundled example notebooks and test snippets


def _quiet():
    from rich.console import Console
    return Console(file=io.StringIO())      # no file left open for a finalizer to warn about mid-case


def test_in_kernel_check_passes_every_public_case_of_the_correct_notebook(kit_path: Path):
    namespace = _namespace_of(SUBMISSIONS / "correct.ipynb")
    start = namespace["Start"]
    summary = check(kit_path, namespace=namespace, console=_quiet())
    assert namespace["Start"] is start                      # main's case set Start = EasyStart, and undid it
    statuses = {c.id: c.status for e in summary.result.exercises for c in e.cases}
    sandboxed, _ = check_with_kit(SUBMISSIONS / "correct.ipynb", kit_path)
    assert statuses == {c.id: c.status for e in sandboxed.exercises for c in e.cases}
    assert summary.ok and summary.failed == 0 and summary.passed + summary.unverified == summary.public == 28
    assert "109 hidden cases, results after grading" in repr(summary)
    assert "all tests passed" not in repr(summary).lower()


def test_a_function_that_calls_input_is_told_the_grader_has_no_keyboard_in_the_live_kernel(kit_path: Path):
    """Jupyter's input() asks the notebook's user, so the self-check of a find_tile that calls input() waited for
    typing at every case (grading ends it as a bare "EOFError: EOF when reading a line"). The check stops it as
    grading does and says why, from what the check saw (its stand-in raised it), never from the message: an
    EOFError of the student's own says nothing of a keyboard. The notebook's input() is back after."""
    from grader.judge.grading import NO_KEYBOARD
    namespace = _namespace_of(SUBMISSIONS / "correct.ipynb")
    own_find_tile = namespace["find_tile"]

    def find_tile(tile, state):
        input(f"where is {tile}? ")
        return own_find_tile(tile, state)

    def move_dir(*args):
        raise EOFError("EOF when reading a line")

    namespace.update(find_tile=find_tile, move_dir=move_dir)
    import builtins
    asked = builtins.input
    summary = check(kit_path, namespace=namespace, console=_quiet())
    tile = [c for c in summary.result.exercise("find_tile").cases if c.visibility == "public"]
    assert tile and all(c.status == "error" and NO_KEYBOARD in c.message for c in tile), tile
    moved = [c for c in summary.result.exercise("move_dir").cases if c.visibility == "public"]
    assert moved and all(c.status == "error" and NO_KEYBOARD not in c.message for c in moved), moved
    assert builtins.input is asked


def test_in_kernel_check_reads_the_callers_globals(kit_path: Path):
    namespace = _namespace_of(SUBMISSIONS / "move-dir-transposed.ipynb")
    namespace["kit_path"] = str(kit_path)
    with mock.patch("grader.kit.kit.report"):
        exec("from grader import check\nsummary = check(kit_path)", namespace)  # noqa: S102 - as a notebook cell
    summary = namespace["summary"]
    move_dir = summary.result.exercise("move_dir")
    assert [c.status for c in move_dir.cases] == ["fail", "fail"] and not summary.ok


def test_in_kernel_case_over_its_time_limit_is_stopped(kit_path: Path):
    namespace: dict = {"__name__": "__main__"}
    _run_cell(namespace, "def find_tile(tile, S):\n    while True:\n        pass\n", "In [90]")
    summary = check(kit_path, namespace=namespace, console=_quiet())
    find_tile = summary.result.exercise("find_tile")
    assert [c.status for c in find_tile.cases] == ["timeout", "timeout", "timeout"]
    assert "still running at In [90], line " in find_tile.cases[0].message
    assert "earlier cases of this exercise timed out" in find_tile.cases[2].message
    assert {c.status for c in summary.result.exercise("move_dir").cases} == {"missing"}


# The alarm's exception can be lost: raised while a garbage-collector finalizer runs (here a __del__ that sleeps,
# in the full suite a ResourceWarning of some earlier test's unclosed file), it is swallowed as "Exception
# ignored in ...". One alarm then meant a search that never stops (the suite's pytest process ran away at 8 GB).
_SWALLOWED_THEN_LOOPS = """\
import time as _time

class _Finalizer:
    def __del__(self):
        _time.sleep(60)          # the case's alarm rings in here, and its exception is lost

def find_tile(tile, S):
    _Finalizer()
    ends = _time.monotonic() + 60
    while _time.monotonic() < ends:
        pass
    return (0, 0)                # only reached if no later alarm stopped the loop
"""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")   # the lost exception, as intended
def test_in_kernel_case_is_stopped_after_a_finalizer_swallowed_its_alarm(kit_path: Path):
    namespace: dict = {"__name__": "__main__"}
    _run_cell(namespace, _SWALLOWED_THEN_LOOPS, "In [92]")
    summary = check(kit_path, namespace=namespace, console=_quiet())
    cases = summary.result.exercise("find_tile").cases
    assert [c.status for c in cases] == ["timeout", "timeout", "timeout"]
    assert "still running at In [92], line " in cases[0].message


def test_in_kernel_case_that_catches_its_timeout_and_returns_is_still_a_timeout(kit_path: Path):
    namespace: dict = {"__name__": "__main__"}
    _run_cell(namespace, "def find_tile(tile, S):\n    try:\n        while True:\n            pass\n"
                         "    except BaseException:\n        return (0, 0)\n", "In [93]")
    summary = check(kit_path, namespace=namespace, console=_quiet())
    assert [c.status for c in summary.result.exercise("find_tile").cases] == ["timeout", "timeout", "timeout"]


def test_in_kernel_check_leaves_no_alarm_behind(kit_path: Path):
    import signal
    before = signal.getsignal(signal.SIGALRM)
    namespace: dict = {"__name__": "__main__"}
    _run_cell(namespace, "def find_tile(tile, S):\n    while True:\n        pass\n", "In [94]")
    check(kit_path, namespace=namespace, console=_quiet())
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


# In the full suite this is where the runaway was: the stub matches makes search explore forever, and its
# allocations run Hypothesis's gc callback, where the alarm often rings and its exception is lost (the warning).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_in_kernel_check_reports_a_stub_as_missing(kit_path: Path):
    namespace = _namespace_of(SUBMISSIONS / "correct.ipynb")
    _run_cell(namespace, 'def matches(Pattern, S):\n    "your code here"\n', "In [91]")
    summary = check(kit_path, namespace=namespace, console=_quiet())
    assert {c.status for c in summary.result.exercise("matches").cases} == {"missing"}


def test_import_grader_loads_nothing_heavy():
    probe = ("import grader, sys; "
             "print(sorted(m for m in ('grader.kit.kit', 'rich', 'yaml', 'nbformat') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def _kernel_cells(nbformat, name: str) -> list:
    """A bundled submission's kept statements as code cells of a new notebook, the drawing library mocked."""
    cells = [nbformat.v4.new_code_cell("import sys\nfrom unittest import mock\n"
                                       "sys.modules['ipycanvas'] = mock.MagicMock()")]
    return cells + [nbformat.v4.new_code_cell(s.code)
                    for s in extract(read_notebook(SUBMISSIONS / f"{name}.ipynb")).statements]


@pytest.mark.slow
def test_check_from_a_running_jupyter_kernel(kit_path: Path, tmp_path: Path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = _kernel_cells(nbformat, "correct")
    cells.append(nbformat.v4.new_code_cell(
        f"from grader import check\nsummary = check({str(kit_path)!r})\n"
        f"print('RESULT', summary.passed, summary.unverified, summary.failed)"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = notebook.cells[-1].outputs
    text = "".join(o.get("text", "") + "".join(str(v) for v in o.get("data", {}).values()) for o in outputs)
    assert "RESULT 26 2 0" in text
    assert "hidden cases, results after grading" in text


def test_the_kernel_check_without_the_reports_extra_prints_its_text_report(kit_path: Path, tmp_path: Path):
    """`from grader import check; check("kit.json")` with `pip install puzzle-grader` alone (no jinja2, no
    markupsafe: the reports extra) ended in ModuleNotFoundError: markupsafe, outside Jupyter too. It prints the
    text report; in a kernel without them the HTML block gives way to the same text."""
    script = textwrap.dedent(f"""
        import sys

        class ReportsExtraMissing:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("jinja2", "markupsafe"):
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None

        sys.meta_path.insert(0, ReportsExtraMissing())

        def find_tile(tile, S):
            for r, row in enumerate(S):
                for c, t in enumerate(row):
                    if t == tile:
                        return (r, c)

        from grader import check
        from grader.report import notebook_view
        assert not notebook_view.html_available()
        summary = check({str(kit_path)!r})
        print("RESULT", sum(e.score > 0 for e in summary.result.exercises))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          timeout=within(300))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "find_tile: 3/3 public cases pass" in done.stdout and "RESULT 1" in done.stdout
    assert "hidden cases, results after grading" in done.stdout


@pytest.mark.slow
def test_kit_check_works_from_the_wheel_alone(kit_path: Path, tmp_path: Path):
    """A fresh virtual environment with only the built wheel: no reference, rubric or assignment in reach."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
                   check=True, capture_output=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", *map(str, wheels.glob("*.whl"))], check=True,
                   capture_output=True)
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    for example, status in (("correct", 0), ("move-dir-transposed", 1)):
        work = tmp_path / example
        work.mkdir()
        shutil.copy(kit_path, work / "kit.json")
        shutil.copy(SUBMISSIONS / f"{example}.ipynb", work / "notebook.ipynb")
        grader = venv / "bin" / "grader"
        if "--kit" in subprocess.run([str(grader), "check", "--help"], capture_output=True, text=True,
                                     cwd=work, env=environment).stdout:
            command = [str(grader), "check", "--kit", "kit.json", "notebook.ipynb"]
        else:   # until the CLI verb is wired: the function it calls
            command = [str(python), "-c", "from grader.kit.check import run_check; "
                                          "raise SystemExit(run_check('notebook.ipynb', 'kit.json'))"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=work, env=environment, timeout=within(300))
        assert done.returncode == status, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert "hidden cases, results after grading" in done.stdout
        assert sorted(p.name for p in work.iterdir()) == ["kit.json", "notebook.ipynb"]
        located = subprocess.run([str(python), "-c", "import grader; print(grader.__file__)"], capture_output=True,
                                 text=True, cwd=work, env=environment, check=True).stdout
        assert str(venv) in located and str(REPO) not in located


@pytest.mark.slow
def test_in_jupyter_the_check_is_one_html_output_with_a_text_fallback(kit_path: Path, tmp_path: Path):
    """A failing notebook's check in a real kernel: one display (HTML + plain text), not one output per line."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = _kernel_cells(nbformat, "move-dir-transposed")
    cells.append(nbformat.v4.new_code_cell(f"from grader import check\nsummary = check({str(kit_path)!r})"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    # The student's main() draws its animation (ipycanvas, mocked here): those displays are the notebook's own.
    outputs = [o for o in notebook.cells[-1].outputs if "mock.Canvas" not in o.get("data", {}).get("text/plain", "")]
    assert [o.output_type for o in outputs] == ["display_data"]
    html, text = outputs[0].data["text/html"], outputs[0].data["text/plain"]
    # manhattan counting the blank is an accepted variant now: move_dir's swapped rows and columns still fail
    assert 'data-verdict="failing"' in html and 'data-exercise="move_dir"' in html
    assert "move_dir(Start, 0, 0, 1, 0)" in html and "Rows and columns look swapped" in html   # explained
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("✗ 1 of 13 exercises have failing public cases: move_dir.")
    assert last in html


def test_the_kit_names_each_public_case_inputs_as_the_call_does(kit_data: dict) -> None:
    """`search(Start5, Patterns[4], ...)` shows the state it searches for, Patterns[4], not the whole list."""
    cases = {c["call"]: c for e in kit_data["exercises"] for c in e["cases"]}
    assert sorted(cases["extract_move(Start, StartDown)"]["inputs"]) == ["Start", "StartDown"]
    assert sorted(cases["search(Start5, Patterns[4], next_states, manhattan)"]["inputs"]) == ["Patterns[4]", "Start5"]


STEPS_REFERENCE = '''
from rules import STEP


def walk(n):
    """n steps of STEP from 0."""
    return [STEP * i for i in range(n + 1)]


def steps(got, expected):
    """Each step is STEP long (the rule students have in rules.py)."""
    if not isinstance(got, list) or any(b - a != STEP for a, b in zip(got, got[1:])):
        return False, f"every step is {STEP} long"
    return got == expected
'''


def _steps_course(folder: Path, rules_in: str) -> Path:
    """A course whose reference takes STEP from rules.py (in the support folder, or beside the reference) and
    whose public check uses it."""
    (folder / rules_in).mkdir(parents=True, exist_ok=True)
    (folder / rules_in / "rules.py").write_text("STEP = 2\n")
    (folder / "steps.py").write_text(STEPS_REFERENCE)
    rubric = folder / "steps.yaml"
    support = "support: support\n" if rules_in == "support" else ""
    rubric.write_text("assignment: steps\nreference: steps.py\n" + support
                      + "exercises:\n  - id: walk\n    check: {name: steps, public: true}\n    cases:\n"
                      "      - call: walk(3)\n")
    return rubric


def test_a_public_check_that_imports_a_support_module_runs_in_the_students_check(tmp_path: Path):
    """The reference takes STEP from the support module rules.py, as README tells authors to; its public check
    uses STEP. The kit shipped `from rules import STEP` and the support module, but ran the public code with
    nothing to import it from: every self-check ended in a ModuleNotFoundError traceback. Now the check judges;
    and a module of the reference's own folder, which no kit carries, is refused by `grader kit` at its line."""
    import nbformat
    rubric = _steps_course(tmp_path / "course", "support")
    kit = tmp_path / "kit.json"
    built = subprocess.run([sys.executable, "-m", "grader", "kit", str(rubric), "-o", str(kit), "--cache",
                            str(tmp_path / "cache")], capture_output=True, text=True, timeout=within(300))
    assert built.returncode == 0, built.stderr
    notebook = tmp_path / "ada.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def walk(n):\n    return [3 * i for i in range(n + 1)]")]), notebook)
    done = subprocess.run([sys.executable, "-m", "grader", "check", "--kit", str(kit), str(notebook)],
                          capture_output=True, text=True, timeout=within(300), cwd=tmp_path)
    assert "Traceback" not in done.stderr and done.returncode == 1, done.stdout + done.stderr
    assert "every step is 2 long" in done.stdout
    own = _steps_course(tmp_path / "own", ".")
    refused = subprocess.run([sys.executable, "-m", "grader", "kit", str(own), "-o", str(tmp_path / "own.json"),
                              "--cache", str(tmp_path / "cache")], capture_output=True, text=True, timeout=within(300))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert f"{own.parent / 'steps.py'}:2: a public check needs 'rules', a module of the reference's own folder, " \
           f"which a student's kit does not carry" in refused.stderr
    assert not (tmp_path / "own.json").exists()


def test_cases_left_to_check_after_submission_say_why_once_a_group(kit_path: Path, tmp_path: Path):
    """move-dir-transposed's apply_move_list: both public cases wait for the course's move_dir. The self-check
    printed the same two-line explanation before each case's own result ('could not be verified here (your
    move_dir not passing ...) ... With your own: ...') and called the second 'failed the same way'. Now each
    case's own result comes first and the explanation, its advice, is said once for the group, which is 'left
    to check after submission'."""
    done = subprocess.run([sys.executable, "-P", "-m", "grader", "check", "--kit", str(kit_path),
                           str(SUBMISSIONS / "move-dir-transposed.ipynb")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=within(600))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    out = done.stdout
    assert out.count("could not be verified here (your move_dir not passing all of its own cases here)") == 1, out
    assert "and 1 more case left to check after submission (to be judged again with the course's helpers):" in out
    assert "apply_move_list(S1, [(-1, 0), (0, -1), (1, 0), (1, 0)]): with your move_dir: at [1][1][2]: " \
           "expected '2', got '0'\n" in out, out


def test_answers_only_the_course_can_judge_say_why_once_a_group(tmp_path: Path, grader_cache: Path):
    """The 8-puzzle's h is judged by a check of the course's code: h2-counts-blank's five public h cases each
    printed 'could not be verified here: your answer differs from the reference answer (...), and this case's
    check (check_default_heuristic) needs the course's code, so other answers may be right too; ...'. Now each
    says its own difference and the group says why once."""
    from rich.console import Console
    from grader.kit.kit import write_kit
    from grader.report.console import student_report
    kit = write_kit(REPO / "rubrics" / "eight-puzzle-astar.yaml", tmp_path / "kit.json", cache=grader_cache)
    result, hidden = check_with_kit(REPO / "assignments" / "eight-puzzle-astar" / "submissions" /
                                    "h2-counts-blank.ipynb", kit)
    assert [case.status for case in result.exercise("h").cases] == [UNVERIFIED] * 5
    buffer = io.StringIO()
    student_report(result, hidden, Console(file=buffer, width=10_000, soft_wrap=True))
    out = buffer.getvalue()
    assert out.count("needs the course's code, so other answers may be right too") == 1, out
    assert "and 4 more cases left to check after submission (the check check_default_heuristic needs the course's " \
           "code):" in out
    assert out.count("your answer differs from the reference answer (expected ") == 5, out


def test_the_kit_carries_the_given_code_so_a_library_user_checks_as_graded(tmp_path: Path,
                                                                           grader_cache: Path) -> None:
    """`from search import Problem, Node` (AIMA's library, absent here): grading puts the course's Problem and
    Node first (plan/given.py) and judges h1; the kit had no `given`, so the self-check said "this case needs the
    class Node" where the grade gives the points (fair, session 20). The kit carries the given code only."""
    eight = REPO / "rubrics" / "eight-puzzle-astar.yaml"
    kit = write_kit(eight, tmp_path / "kit.json", cache=grader_cache)
    data = json.loads(kit.read_text(encoding="utf-8"))
    assert sorted(data["given"]) == ["Node", "Problem"]
    graded = {name for exercise in data["exercises"] for name in (exercise["function"], *exercise["aliases"])}
    assert not graded & set(data["given"])
    result, _ = check_with_kit(REPO / "tests" / "fixtures" / "fair" / "aima_library_user.ipynb", kit)
    h1 = result.exercise("h1")
    assert h1.cases and all(c.status == "pass" for c in h1.cases), [(c.status, c.message) for c in h1.cases]
    assert any(w.subject == "Problem, Node" for w in result.warnings)


def test_a_kit_given_as_the_rubric_or_a_rubric_as_the_kit_is_one_line_naming_the_swap(kit_path: Path, tmp_path: Path,
                                                                                       capsys) -> None:
    """`check --rubric kit.json` printed two hundred lines of unknown rubric keys, and `check --kit rubric.yaml`
    "not JSON: Expecting value": options swapped are one line saying which is which, exit 2, nothing written."""
    from grader.cli import main
    notebook = str(SUBMISSIONS / "correct.ipynb")
    for argv, said in ((["check", notebook, "--rubric", str(kit_path)], "a student kit (made by grader kit), not a "
                                                                         "rubric"),
                       (["grade", notebook, "--rubric", str(kit_path), "--out", str(tmp_path / "out")], "not a rubric"),
                       (["check", notebook, "--kit", str(RUBRIC)], f"{RUBRIC}: a rubric (YAML), not a student kit: "
                                                                   f"give it as --rubric {RUBRIC}")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "out").exists()
