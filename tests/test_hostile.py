"""Hostile notebooks: each attack costs at most its own exercise, and nothing of it outlives the batch.

Every notebook of tests/fixtures/hostile is the bundled correct notebook with one attack added (see
build.py there, which says what each does). All of them, with correct.ipynb itself, are graded in ONE
batch by a module-scoped fixture, so the batch also proves that a class full of hostile submissions
completes with every other submission graded. Around the batch the fixture sets traps the attacks aim
at (a secret in the grader's environment, a TCP server on 127.0.0.1, a victim process, a leak-probe
control file, a grader cache of an earlier run) and afterwards looks at the host: surviving processes
(by the marker 7171 in their command line), canary files, the repository tree.

Assertions that only namespaces can make true (no network, course hidden, read-only world) check the
result's `isolation` and are skipped without namespaces; the grader surviving is asserted always.
Two attacks were grader bugs without namespaces, pinned as strict xfails until fixed (a forged fork pid the parent
killed, a deleted scratch that lost the submission): they hold in rlimits mode too, graded by a grader that is not
root, so they are asserted everywhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import pwd
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader.run.batch import grade
from grader.syntax.calls import call_arguments
from grader.judge.grading import Options
from grader.plan.cases import Plan, build_plan
from grader.store.status import STATUSES
from grader.store.results import SubmissionResult
from grader.rubric.schema import load_rubric
from grader import codec
from grader.sandbox.confine import HOME
from grader.sandbox.isolation import PIDS_MAX, detect
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

REPO = Path(__file__).resolve().parents[1]
HOSTILE = REPO / "tests" / "fixtures" / "hostile"
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"
EXERCISES = ("find_tile", "move_dir", "next_states", "matches", "manhattan", "find_numbers", "replace_numbers",
             "intermediate_goals", "extract_move", "extract_move_list", "apply_move_list", "search", "main")


def _load_builder():
    spec = importlib.util.spec_from_file_location("hostile_build", HOSTILE / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


BUILD = _load_builder()
ISOLATION = detect()
CASE_FLOOR = 3.0
RLIMITS_ONLY = not ISOLATION.namespaces
SECRET_VALUE = "hx7171-secret-value"
# The slowest attacks go first, so they overlap with the rest of the batch.
FIRST = ("infinite_loop_at_top_level", "progress_frames_forged_at_top_level", "swallowed_timeout_in_apply_move_list",
         "sigalrm_ignored_loop_in_search",
         "sigterm_ignored_loop_in_intermediate_goals", "infinite_loop_in_find_numbers")


# ------------------------------------------------------------------------------------------------ the batch


@dataclass(frozen=True)
class Corpus:
    results: dict[str, SubmissionResult]
    plan: Plan
    seconds: float
    out: Path
    cache: Path
    survivors: dict[int, str]          # host pid -> command line, of processes carrying the marker
    repo_changes: list[str]            # files of the repository created, changed or removed during the batch
    canaries: list[str]                # canary files that exist after the batch
    connections: list[bytes]           # what the test's TCP server received
    victim_alive: bool
    stale_cache: Path                  # a grader cache of an "earlier run", outside what the grader hides
    shm_left: bool                     # the published System V segment still exists on the host

    def __getitem__(self, name: str) -> SubmissionResult:
        return self.results[name]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file under root, except git internals and Python/pytest caches."""
    found = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f not in (".git", "__pycache__", ".pytest_cache")]
        for name in files:
            path = os.path.join(folder, name)
            try:
                status = os.lstat(path)
            except OSError:
                continue
            found[os.path.relpath(path, root)] = (status.st_mtime_ns, status.st_size)
    return found


def _marked_processes(exclude: set[int]) -> dict[int, str]:
    """Host processes (not zombies) whose command line or name carries the attacks' marker."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in exclude:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/comm", "rb") as handle:
                comm = handle.read()
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (b"\x007171." in cmdline or comm.startswith(b"hx7171")):
            found[int(entry)] = cmdline.replace(b"\x00", b" ").decode(errors="replace")
    return found


# What the batch itself or a contained attack could leave in the checkout: the marker, sandbox output,
# results, gradebooks. Other changes during the batch are people editing the shared checkout meanwhile.
_ARTIFACTS = ("output.log", ".sqlite", ".tmp", "puzzle-grader")


def _written_by_the_batch(change: str) -> bool:
    path = REPO / change
    if "7171" in change or any(mark in path.name for mark in _ARTIFACTS):
        return True
    try:
        ours = path.is_relative_to(HOSTILE) or path == Path(__file__).resolve()
        return path.is_file() and not ours and b"hx7171" in path.read_bytes()
    except OSError:
        return False


def _canaries() -> list[str]:
    homes = {Path.home(), Path(pwd.getpwuid(os.getuid()).pw_dir)}
    return sorted({path for number in (26, 34) for home in homes for path in BUILD.canary(number, REPO, home)})


def _host_shm_keys() -> set[int]:
    try:
        with open("/proc/sysvipc/shm", encoding="ascii") as table:
            return {int(line.split()[0]) for line in table.readlines()[1:] if line.split()}
    except OSError:
        return set()


def _remove_shm(key: int) -> None:
    import ctypes
    libc = ctypes.CDLL(None)
    segment = libc.shmget(key, 0, 0)
    if segment >= 0:
        libc.shmctl(segment, 0, None)   # IPC_RMID


@contextlib.contextmanager
def _classmates_and_a_course_copy():
    """CLASS/<student>/lab.ipynb outside /tmp and $HOME, and a second checkout of the course's reference."""
    made = []
    try:
        for folder, source, name in ((Path(BUILD.CLASS_FOLDER) / "alice", CORRECT, "lab.ipynb"),
                                     (Path(BUILD.COURSE_COPY) / "reference", REPO / "reference" /
                                      "taoistic_search.py", "taoistic_search.py")):
            try:
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(source.read_bytes())
                made.append(folder.parent)
            except OSError:
                pass
        yield
    finally:
        import shutil
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def _remove_canaries() -> None:
    for path in _canaries():
        try:
            os.remove(path)
        except OSError:
            pass


def _listen() -> socket.socket | None:
    for port in BUILD.PORTS:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.bind(("127.0.0.1", port))
        except OSError:
            server.close()
            continue
        server.listen(4)
        return server
    return None


def _received(server: socket.socket | None) -> list[bytes]:
    """Connections the server got during the batch (a bounded look: the backlog, then a short timeout)."""
    if server is None:
        return []
    received = []
    server.settimeout(0.2)
    for _ in range(4):
        try:
            connection, _ = server.accept()
        except (socket.timeout, OSError):
            break
        with connection:
            connection.settimeout(0.2)
            try:
                received.append(connection.recv(100))
            except OSError:
                received.append(b"")
    server.close()
    return received


@contextlib.contextmanager
def _exclusive():
    """One hostile batch at a time on this machine: the traps (victim, control file, canaries, port) and the
    survivor scan are machine-wide, and a test run elsewhere in the same checkout may be grading them too."""
    with open("/tmp/hx7171.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    with _exclusive():
        return _grade_corpus(tmp_path_factory)


def _grade_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    if RLIMITS_ONLY and os.geteuid() == 0 and not os.environ.get("PUZZLE_GRADER_HOSTILE_AS_ROOT"):
        pytest.skip("no namespaces and running as root: the hostile corpus would run unconfined as root "
                    "(set PUZZLE_GRADER_HOSTILE_AS_ROOT=1 to run it anyway)")
    paths = sorted(HOSTILE.glob("*.ipynb"), key=lambda p: (p.stem not in FIRST, FIRST.index(p.stem)
                                                            if p.stem in FIRST else 0, p.stem))
    out = tmp_path_factory.mktemp("hostile-results")
    cache = tmp_path_factory.mktemp("hostile-cache")
    stale = tmp_path_factory.mktemp("earlier-run-cache")
    build_plan(load_rubric(RUBRIC), stale)      # what a TA's earlier run with another --cache leaves behind
    _remove_canaries()
    Path(BUILD.LEAK_CONTROL_FILE).write_text(f"the leak probe must find this: {BUILD.LEAK_CONTROL_TEXT}\n")
    victim = subprocess.Popen(["sleep", "7171.99"], start_new_session=True)
    server, earlier = None, set()
    try:
        Path(BUILD.VICTIM_PID_FILE).write_text(str(victim.pid))
        time.sleep(0.05)
        assert victim.pid in _marked_processes(exclude=set()), "the survivor scan cannot see a marked sleeper"
        earlier = set(_marked_processes(exclude={victim.pid}))   # not ours to judge (or to kill)
        server = _listen()
        before = _snapshot(REPO)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(BUILD.SECRET_NAME, SECRET_VALUE)
            started = time.monotonic()
            # A 3 s floor per case (the rubric's is 1 s): the memory and fork bombs must hit their limits before
            # their case's clock runs out, also on a busy 2-core machine at load 4.
            with _classmates_and_a_course_copy():
                results = grade([*paths, CORRECT], RUBRIC, out, jobs=2, cache=cache,
                                options=Options(case_seconds=CASE_FLOOR))
            seconds = time.monotonic() - started
        after = _snapshot(REPO)
        changes = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        # A SIGKILLed process leaves /proc when the kernel next runs it: not at once on a busy machine. A
        # survivor is one still there after 30 s (the attacks' sleepers would last hours).
        survivors = _marked_processes(exclude={victim.pid, *earlier})
        waited_until = time.monotonic() + 30
        while survivors and time.monotonic() < waited_until:
            time.sleep(0.1)
            survivors = _marked_processes(exclude={victim.pid, *earlier})
        canaries = [path for path in _canaries() if os.path.lexists(path)]
        connections = _received(server)
        victim_alive = victim.poll() is None
        shm_left = BUILD.SHM_KEY in _host_shm_keys()
        plan = build_plan(load_rubric(RUBRIC), cache)
    finally:
        for pid in _marked_processes(exclude={victim.pid, *earlier}):   # only what our attacks started
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        victim.kill()
        victim.wait()
        _remove_shm(BUILD.SHM_KEY)
        for path in (BUILD.VICTIM_PID_FILE, BUILD.LEAK_CONTROL_FILE):
            try:
                os.remove(path)
            except OSError:
                pass
        _remove_canaries()
        if server is not None:
            server.close()
    return Corpus({r.submission: r for r in results}, plan, seconds, out, cache, survivors, changes, canaries,
                  connections, victim_alive, stale, shm_left)


# ------------------------------------------------------------------------------------------------ helpers


def graded(corpus: Corpus, name: str) -> SubmissionResult:
    """The notebook's result, after checking the grader did its job on it (whatever the attack did)."""
    result = corpus[name]
    assert result.isolation in ("namespaces", "namespaces-partial", "rlimits"), (name, result.warnings)
    assert tuple(e.id for e in result.exercises) == EXERCISES
    assert result.max_total == 30
    for exercise in result.exercises:
        assert 0 <= exercise.score <= exercise.max_score
        for case in exercise.cases:
            assert case.status in STATUSES, (case.id, case.status)
    assert (corpus.out / f"{name}.json").exists()
    return result


def lost(result: SubmissionResult) -> set[str]:
    return {e.id for e in result.exercises if e.score < e.max_score}


def failing(result: SubmissionResult, exercise: str):
    return [c for c in result.exercise(exercise).cases if c.status != "pass"]


def fired(result: SubmissionResult, exercise: str):
    """The case an attack that fires once per process cost (its first public case), and at most the first hidden
    one besides: an exercise's public cases and its hidden ones are two requests, and the hidden ones run in a
    fork of the loaded state when the public ones changed anything (the attack's own mark included)."""
    cases = result.exercise(exercise).cases
    firsts = {next(c.id for c in cases if c.visibility == kind) for kind in {c.visibility for c in cases}}
    lost = failing(result, exercise)
    assert lost and {c.id for c in lost} <= firsts, [(c.id, c.status, c.message[:80]) for c in lost]
    return next(c for c in lost if c.visibility == "public")


def only(corpus: Corpus, name: str, *exercises: str) -> SubmissionResult:
    """The attack cost exactly these exercises (their points, nothing else)."""
    result = graded(corpus, name)
    details = {e.id: [(c.id, c.status, c.message[:120]) for c in e.cases if c.status != "pass"][:3]
               for e in result.exercises if e.score < e.max_score}
    assert lost(result) == set(exercises), details
    return result


def got(case) -> object:
    return codec.decode(case.got)


def needs_namespaces(result: SubmissionResult) -> None:
    if result.isolation != "namespaces":
        pytest.skip(f"isolation is {result.isolation}: only namespaces can make this true")


# ------------------------------------------------------------------------------------------------ the batch as a whole


def test_every_hostile_notebook_is_the_correct_one_plus_one_cell():
    correct = nbformat.read(CORRECT, as_version=4)
    for path in HOSTILE.glob("*.ipynb"):
        hostile = nbformat.read(path, as_version=4)
        assert len(hostile.cells) == len(correct.cells) + 1, path.name
        assert [c.source for c in hostile.cells[:-1]] == [c.source for c in correct.cells], \
            f"{path.name} is not built from today's correct.ipynb: rerun tests/fixtures/hostile/build.py"


def test_batch_with_every_attack_grades_the_correct_notebook_in_full(corpus):
    names = {p.stem for p in HOSTILE.glob("*.ipynb")}
    assert len(names) >= 30
    assert set(corpus.results) == names | {"correct"}
    for name in names:
        graded(corpus, name)
    correct = graded(corpus, "correct")
    assert correct.total == 30 and not lost(correct)


def test_no_process_of_any_attack_outlives_the_batch(corpus):
    assert corpus.survivors == {}


def test_no_file_of_the_repository_changes_and_no_canary_appears(corpus):
    """Every file of the checkout is compared before and after the batch (mtime, size). A change counts
    against the batch when it carries the marker or is a grader artifact: people may edit a shared checkout
    while the batch runs (the message lists every change either way)."""
    blamed = [change for change in corpus.repo_changes if _written_by_the_batch(change)]
    assert blamed == [], f"changed during the batch: {corpus.repo_changes}"
    assert [c for c in corpus.canaries if "canary-34" not in c] == []


# ------------------------------------------------------------------------------------------------ loops, exits, signals


def test_infinite_loop_in_find_numbers_costs_only_find_numbers(corpus):
    result = only(corpus, "infinite_loop_in_find_numbers", "find_numbers")
    statuses = [c.status for c in result.exercise("find_numbers").cases]
    assert set(statuses) == {"timeout"}
    assert any("still running at" in c.message for c in result.exercise("find_numbers").cases)


def test_infinite_loop_at_top_level_is_left_out_and_everything_grades(corpus):
    result = only(corpus, "infinite_loop_at_top_level")
    # The loop binds nothing graded code reads: the dependency slice never runs it (no warning at all).
    assert not any("did not finish within" in w.shown for w in result.warnings), result.warnings
    assert result.total == 30


def test_sys_exit_in_move_dir_costs_only_move_dir(corpus):
    result = only(corpus, "sys_exit_in_move_dir", "move_dir")
    assert all(c.status == "error" and "sys.exit" in c.message for c in result.exercise("move_dir").cases)


def test_sys_exit_at_top_level_is_a_warning_and_everything_grades(corpus):
    result = only(corpus, "sys_exit_at_top_level")
    # Nothing graded reads what it binds: the dependency slice drops it, so it is not even a warning.
    assert not any("SystemExit" in w.shown for w in result.warnings), result.warnings


def test_os_exit_in_matches_costs_only_matches(corpus):
    result = only(corpus, "os_exit_in_matches", "matches")
    assert all(c.status == "error" and "exited with status 0" in c.message
               for c in result.exercise("matches").cases)


def test_raise_system_exit_in_manhattan_costs_only_manhattan(corpus):
    result = only(corpus, "raise_system_exit_in_manhattan", "manhattan")
    assert all("SystemExit" in c.message for c in result.exercise("manhattan").cases)


def test_raise_keyboard_interrupt_in_replace_numbers_costs_only_replace_numbers(corpus):
    result = only(corpus, "raise_keyboard_interrupt_in_replace_numbers", "replace_numbers")
    assert all("KeyboardInterrupt" in c.message for c in result.exercise("replace_numbers").cases)


def test_ignored_sigterm_and_endless_loop_cost_only_intermediate_goals(corpus):
    result = only(corpus, "sigterm_ignored_loop_in_intermediate_goals", "intermediate_goals")
    assert {c.status for c in result.exercise("intermediate_goals").cases} == {"timeout"}


def test_swallowed_timeout_is_hard_killed_and_costs_only_apply_move_list(corpus):
    result = only(corpus, "swallowed_timeout_in_apply_move_list", "apply_move_list")
    cases = result.exercise("apply_move_list").cases
    assert {c.status for c in cases} == {"timeout"}
    assert "(stopped)" in cases[0].message     # the soft interrupt was swallowed: the process was killed


def test_ignored_sigalrm_loop_is_hard_killed_and_costs_only_search(corpus):
    result = only(corpus, "sigalrm_ignored_loop_in_search", "search")
    cases = result.exercise("search").cases
    assert {c.status for c in cases} == {"timeout"}
    assert "(stopped)" in cases[0].message


def test_killing_the_loaded_child_from_search_loses_nothing_else(corpus):
    result = graded(corpus, "kill_parent_from_search")
    assert lost(result) <= {"search"}         # the loaded child dies; a fresh one runs what is left
    assert result.total >= 30 - 4


# ------------------------------------------------------------------------------------------------ resources


def test_bytearray_memory_bomb_costs_one_case_of_extract_move_list(corpus):
    result = only(corpus, "memory_bomb_bytearray_in_extract_move_list", "extract_move_list")
    case = fired(result, "extract_move_list")
    assert case.status == "error" and "MemoryError" in case.message


def test_growing_memory_bomb_costs_one_case_of_find_tile(corpus):
    result = only(corpus, "memory_bomb_growing_list_in_find_tile", "find_tile")
    case = fired(result, "find_tile")
    assert case.status == "error" and "MemoryError" in case.message, case.message


def test_segfault_from_deep_recursion_costs_one_case_of_next_states(corpus):
    result = only(corpus, "deep_recursion_segfault_in_next_states", "next_states")
    [case] = failing(result, "next_states")
    assert case.status == "error" and "SIGSEGV" in case.message


def test_sleepers_left_by_extract_move_cost_nothing_and_do_not_survive(corpus):
    result = only(corpus, "sleepers_left_by_extract_move")
    assert "left three sleepers" in result.exercise("extract_move").cases[0].output
    assert not [cmd for cmd in corpus.survivors.values() if "7171.1" in cmd]


def test_fork_bomb_is_capped_and_costs_its_exercise_where_the_cap_is_counted(corpus):
    """Its answers are right: where a pids cgroup caps the sandbox, the kernel counts the forks it refused and the
    exercise scores 0 (an incident, grader.incidents); elsewhere RLIMIT_NPROC refuses them unseen, and it costs
    nothing."""
    counted = ISOLATION.pids_root is not None
    result = only(corpus, "fork_bomb_in_replace_numbers", *(("replace_numbers",) if counted else ()))
    assert [(i.kind, i.exercise) for i in result.incidents] == ([("process cap", "replace_numbers")] if counted else [])
    output = result.exercise("replace_numbers").cases[0].output
    assert "hx7171.14 forked" in output
    forked = int(output.split("forked")[1].split()[0])
    assert 0 < forked < 2000
    if ISOLATION.pids_root is not None:
        assert forked <= PIDS_MAX
    assert not [cmd for cmd in corpus.survivors.values() if "7171.14" in cmd]


def test_ten_thousand_open_files_are_capped_and_cost_nothing(corpus):
    result = only(corpus, "ten_thousand_files_opened_by_extract_move_list")
    output = result.exercise("extract_move_list").cases[0].output
    held = int(output.split("holding")[1].split()[0])
    assert 0 < held < 10000


def test_ten_megabytes_of_prints_are_truncated_and_the_answers_count(corpus):
    result = only(corpus, "ten_megabytes_printed_by_move_dir")
    for case in result.exercise("move_dir").cases:
        assert len(case.output) < 70_000
        assert "more characters of output not kept" in case.output


def test_huge_return_value_costs_one_case(corpus):
    result = only(corpus, "huge_return_from_find_numbers", "find_numbers")
    case = fired(result, "find_numbers")
    assert case.status == "error" and "items" in case.message


def test_deeply_nested_return_value_costs_one_case(corpus):
    result = only(corpus, "deeply_nested_return_from_move_dir", "move_dir")
    case = fired(result, "move_dir")
    assert case.status == "error" and "deeper" in case.message


def test_self_referencing_return_value_costs_one_case(corpus):
    result = only(corpus, "self_referencing_return_from_matches", "matches")
    case = fired(result, "matches")
    assert case.status == "error" and "deeper" in case.message


def test_hanging_repr_of_the_answer_times_out_one_case(corpus):
    result = only(corpus, "hanging_repr_from_apply_move_list", "apply_move_list")
    [case] = failing(result, "apply_move_list")
    assert case.status == "timeout" and case.id == "apply_move_list#1"


def test_oracle_flood_costs_only_search(corpus):
    only(corpus, "oracle_flooded_by_search", "search")


# ------------------------------------------------------------------------------------ the channel and the runtime


def test_fake_results_on_every_output_stream_earn_nothing(corpus):
    result = only(corpus, "fake_results_printed_by_find_numbers", "find_numbers")
    exercise = result.exercise("find_numbers")
    assert exercise.score == 0 and result.total == 29
    assert all(c.status == "fail" and got(c) == ["forged"] for c in exercise.cases)
    assert "PASSED" in exercise.cases[0].output   # what it printed is shown as its output, nothing more


def test_garbage_and_forged_frames_on_every_fd_cost_only_intermediate_goals(corpus):
    result = only(corpus, "garbage_on_every_fd_in_intermediate_goals", "intermediate_goals")
    assert result.exercise("intermediate_goals").score == 0
    assert not any(c.status == "pass" for c in result.exercise("intermediate_goals").cases)


def test_forged_fork_pid_cannot_make_the_grader_kill_another_process_group(corpus):
    """A `forked` frame's pid is killed only when the kernel says it is the child's (Sandbox._verified_fork)."""
    graded(corpus, "garbage_on_every_fd_in_intermediate_goals")
    assert corpus.victim_alive


def test_builtins_patched_in_manhattan_cost_one_case_of_manhattan(corpus):
    """The patch breaks the notebook's own manhattan (it uses len) for that case; the runtime is immune and puts
    the builtins back after the case, so the next cases are judged on the real ones."""
    result = only(corpus, "builtins_patched_in_manhattan", "manhattan")
    [case] = failing(result, "manhattan")
    assert case.id == "manhattan#1" and case.status == "fail" and got(case) == 0


def test_builtins_patched_to_lie_to_the_runtime_still_score_full_marks(corpus):
    """len, isinstance, repr, __import__, os.write, math.isfinite, json, signal.setitimer, the standard streams...
    patched at top level to lie only to the grader's runtime: a runtime that keeps private references to all it
    uses still reports the notebook's correct answers."""
    result = only(corpus, "builtins_patched_to_lie_to_the_runtime_at_top_level")
    assert result.total == 30


# ------------------------------------------------------------------------------------------------ forged frames


def test_forged_forked_frames_do_not_rewind_the_case_clock(corpus):
    """8 s under a 3 s limit with a `forked` frame forged every 0.2 s: the parent restarted its case clock on each
    one (a pass), then ignored them (a timeout, each one parsed); now the first one costs the case."""
    result = only(corpus, "forked_frames_forged_by_find_tile", "find_tile")
    [case] = failing(result, "find_tile")
    assert case.id == "find_tile#1" and case.status == "error" and "while running a case" in case.message


def test_forged_progress_frames_do_not_renew_the_load_deadline(corpus):
    result = only(corpus, "progress_frames_forged_at_top_level")
    # Dropped by the dependency slice (nothing graded reads it), so it cannot hold the load at all.
    assert not any("did not finish within" in w.shown for w in result.warnings), result.warnings
    assert result.total == 30


def test_forged_seconds_out_of_any_float_cost_their_own_case_and_never_reach_the_json(corpus):
    result = only(corpus, "seconds_overflow_forged_by_find_numbers", "find_numbers", "replace_numbers")
    for exercise in ("find_numbers", "replace_numbers"):
        [case] = failing(result, exercise)
        assert case.id == f"{exercise}#1" and case.status == "error", case
    text = (corpus.out / "seconds_overflow_forged_by_find_numbers.json").read_text(encoding="utf-8")
    assert "Infinity" not in text and "NaN" not in text


def test_oracle_requests_flooded_unread_cost_only_search(corpus):
    """Without isolation the first forged request is refused (the run isolates nothing); with it, the parent's
    answers queue without blocking and the case ends at its limit of calls. Either way only search pays."""
    result = only(corpus, "oracle_requests_flooded_unread_by_search", "search")
    assert all(c.status in ("error", "timeout") for c in failing(result, "search"))


def test_rigged_tuple_subclass_fails_with_its_class_named(corpus):
    result = only(corpus, "rigged_tuple_from_find_tile", "find_tile")
    exercise = result.exercise("find_tile")
    assert exercise.score == 0
    assert all(c.status == "fail" and "RiggedPair" in c.message for c in exercise.cases)


def _honest_extract_move_score(plan: Plan, answer: tuple[int, int]) -> float:
    """The most a constant extract_move can earn from a genuine notebook of either era: the answer must give
    P2 under today's convention or the 2020/21 one, both recomputed by the parent (a forged probe may only
    choose between the two)."""
    reference = plan.reference
    cases = plan.cases["extract_move"]
    passed = 0
    for case in cases:
        args, kwargs = call_arguments(case.call, plan.data(case))
        verdict = reference.check_extract_move(got=answer, args=args, probes={},
                                               options={"convention": "reference"})
        today = bool(verdict[0] if isinstance(verdict, tuple) else verdict)
        passed += today or reference._transposed_move_gives(args[0], answer, args[1])
    exercise = next(e for e in plan.rubric.exercises if e.id == "extract_move")
    return exercise.points * passed / len(cases)


def test_patched_runtime_cannot_forge_probe_evidence(corpus):
    result = graded(corpus, "runtime_patched_to_forge_probes")
    assert lost(result) >= set(EXERCISES) - {"extract_move"}     # stubs: not run at all
    honest = _honest_extract_move_score(corpus.plan, (1, 0))
    assert honest < 3
    assert result.exercise("extract_move").score <= honest + 1e-9
    assert result.total <= honest + 1e-9


def test_thread_outliving_find_tile_does_not_reach_later_exercises(corpus):
    result = only(corpus, "thread_outliving_find_tile")
    assert "hx7171.24 thread noise" in result.exercise("find_tile").cases[0].output


def test_stdout_none_at_top_level_changes_nothing(corpus):
    result = only(corpus, "stdout_none_at_top_level")
    assert result.total == 30


# ------------------------------------------------------------------------------------------------ the world outside


def test_scratch_dir_deleted_and_left_costs_one_case(corpus):
    """In rlimits mode the scratch is a plain folder the child can remove: the child started after the timeout gets
    a new one (each start makes its own), and the submission is not lost."""
    result = only(corpus, "scratch_deleted_by_apply_move_list", "apply_move_list")
    [case] = failing(result, "apply_move_list")
    assert case.status == "timeout" and case.id == "apply_move_list#1"


def test_course_files_are_not_readable_by_absolute_path(corpus):
    result = only(corpus, "course_files_read_by_find_numbers", "find_numbers")
    reports = [got(c) for c in result.exercise("find_numbers").cases]
    assert all(report["repo"] == str(REPO) for report in reports)   # it did find the checkout
    needs_namespaces(result)
    assert all(report["readable"] == [] for report in reports)


def test_network_is_unreachable_and_the_test_server_sees_nothing(corpus):
    result = only(corpus, "network_from_find_tile", "find_tile")
    report = got(result.exercise("find_tile").cases[0])
    assert set(report) == {"connected", "errors"}
    needs_namespaces(result)
    assert report["connected"] == []
    assert not [c for c in corpus.connections if b"hx7171" in c]


def test_files_written_outside_scratch_are_not_created(corpus):
    result = only(corpus, "files_written_outside_scratch_by_matches", "matches")
    report = got(result.exercise("matches").cases[0])
    assert report["repo"] == str(REPO)
    needs_namespaces(result)
    # The jail's /tmp and home are its own scratch: what lands there is the child's, never the host's (canaries below).
    assert [path for path in report["written"] if not path.startswith(("/tmp/", f"{HOME}/"))] == []
    assert not [c for c in corpus.canaries if "canary-26" in c]


def test_environment_secret_of_the_grader_is_not_visible(corpus):
    result = only(corpus, "environment_secret_read_by_extract_move", "extract_move")
    found = got(result.exercise("extract_move").cases[0])
    assert not [place for place in found if place.startswith("os.environ")]   # the child's env is its own
    needs_namespaces(result)
    assert found == []                        # and the grader's /proc/PID/environ is out of sight


def _leak_report(corpus: Corpus) -> dict:
    result = only(corpus, "leak_probe_in_find_tile", "find_tile")
    case = fired(result, "find_tile")
    assert case.id == "find_tile#1"
    report = got(case)
    assert isinstance(report, dict), f"the probe reported nothing: {case.status}: {case.message}"
    needles = BUILD.leak_needles(corpus.plan)
    source = (HOSTILE / "leak_probe_in_find_tile.ipynb").read_text(encoding="utf-8")
    assert needles["sha"] in source, "the probe's needle is stale: rebuild the corpus (build.py)"
    assert report["memory_control"], "the memory scan did not even find the notebook's own Start"
    if result.isolation == "namespaces":   # /tmp is covered: the probe must not even see the control file
        assert BUILD.LEAK_CONTROL_FILE not in report["file_controls"], "the child can read the host's /tmp"
    else:
        assert BUILD.LEAK_CONTROL_FILE in report["file_controls"], "the file walk did not reach /tmp"
    assert report["descriptors"] and report["repo"] == str(REPO)
    return {"result": result, **report}


def test_leak_probe_finds_no_hidden_expected_value_in_memory_descriptors_environment_or_course(corpus):
    report = _leak_report(corpus)
    needs_namespaces(report["result"])
    batch_dirs = (str(corpus.out), str(corpus.cache), str(REPO))
    inside = [place for place in report["leaks"] if not place.startswith("file: /tmp/")
              or any(place.startswith(f"file: {d}") for d in batch_dirs)]
    assert inside == []


def test_leak_probe_finds_no_hidden_expected_value_in_other_files_under_tmp(corpus):
    report = _leak_report(corpus)
    needs_namespaces(report["result"])
    assert [place for place in report["leaks"] if str(corpus.stale_cache) in place] == []
    assert [place for place in report["leaks"] if place.startswith("file: /tmp/")] == []


def test_course_cannot_be_unhidden_by_unmounting(corpus):
    result = only(corpus, "course_unhidden_by_umount_in_find_numbers", "find_numbers")
    report = got(result.exercise("find_numbers").cases[0])
    assert report["repo"] == str(REPO)
    needs_namespaces(result)
    assert report["readable"] == []


def test_root_cannot_be_remounted_writable(corpus):
    result = only(corpus, "root_remounted_writable_by_matches", "matches")
    needs_namespaces(result)
    written = got(result.exercise("matches").cases[0])
    assert [path for path in written if not path.startswith(("/tmp/", f"{HOME}/"))] == []
    assert not [c for c in corpus.canaries if "canary-34" in c]


# ------------------------------------------------------------------------------------------------ the parent's own time


def test_isolated_helper_call_cannot_hold_the_parent_past_the_case_limit():
    """A slow reference answer stands in for the child's quadratic question (the real one, in the corpus
    as oracle_flooded_by_search, is kept small there so the batch stays quick): it computes 3 s of CPU, as the
    reference does on arguments the child chose (an answer's bound is the thread's CPU time, so that a busy
    machine keeping the parent off a CPU costs no case: test_busy_machine). Judged by whether the reference was
    allowed to finish its 3 s, not by the wall clock."""
    finished = []

    def slow_reference(name, args, kwargs):
        started = time.thread_time()
        while time.thread_time() - started < 3.0:
            pass
        finished.append(name)
        return 0

    source = "def asks(helper):\n    return helper(1)\n\ndef helper(x):\n    return 'broken'\n"
    statements = [{"code": source, "filename": "In [1] (cell 1)", "line": 1, "kind": "def"}]
    with Sandbox(statements, {}, ProcessLimits(load_seconds=3)) as sandbox:
        sandbox.load()
        [outcome] = sandbox.run_exercise([CaseRequest("c1", "asks(helper)", timeout=0.3)], ["helper"],
                                         slow_reference, time.monotonic() + 30)
    assert outcome.status == "timeout"
    assert finished == [], "the parent waited for the reference's whole answer"


# ------------------------------------------------------------------------------------------------ sandbox v2 attacks


def test_classmates_notebooks_are_not_found_outside_tmp_and_home(corpus):
    result = only(corpus, "classmates_run_by_find_numbers", "find_numbers")
    needs_namespaces(result)
    assert all(got(c) == {"found": []} for c in result.exercise("find_numbers").cases)


def test_host_secrets_and_a_second_course_checkout_are_out_of_reach(corpus):
    result = only(corpus, "shadow_and_course_copy_read_by_matches", "matches")
    case = fired(result, "matches")
    needs_namespaces(result)
    assert got(case) == {"shadow": False, "references": []}


def test_shared_memory_answers_reach_no_other_notebook_and_do_not_outlive_the_batch(corpus):
    only(corpus, "ipc_answers_published_at_top_level")
    reader = only(corpus, "ipc_answers_read_by_find_tile", "find_tile")
    case = fired(reader, "find_tile")
    needs_namespaces(reader)
    assert got(case) == {"published": None}
    assert not corpus.shm_left, "the System V segment stayed on the host after the batch"


def test_a_full_scratch_at_load_costs_nothing(corpus):
    result = only(corpus, "disk_filled_at_top_level")
    assert result.total == 30
    assert graded(corpus, "correct").total == 30


def test_files_of_one_exercise_are_gone_in_the_next(corpus):
    only(corpus, "files_persisting_from_find_tile_to_move_dir")


def test_double_forked_survivor_with_subreaper_off_does_not_outlive_the_batch(corpus):
    only(corpus, "survivor_double_forked_at_top_level")
    assert not [cmd for cmd in corpus.survivors.values() if "7171.41" in cmd]
