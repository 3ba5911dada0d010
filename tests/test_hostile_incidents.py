"""Incidents: an attack the sandbox stopped costs the student points even when its answers are right, is recorded
as facts a trusted observer saw (grader.incidents), and honest code's limits (time, memory, recursion) are none.

Each sandbox test grades a real notebook (the bundled correct one with one cell appended) in a real sandbox.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grader import codec, incidents
from grader.judge.grading import grade_path, support_sources
from grader.rubric.schema import RubricError, load_rubric
from grader.sandbox.confine import _KEYRING_CALLS
from grader.sandbox.isolation import PIDS_MAX, Isolation, detect
from grader.sandbox.process import CaseRequest, ProcessLimits
from grader.store.results import CaseResult, ExerciseResult, from_dict, to_dict
from honest_code import EXPECTED, HONEST
from notebook_build import appended, write
from sandbox_run import run_cases, statement

REPO = Path(__file__).resolve().parents[1]
KEYCTL = _KEYRING_CALLS.get(os.uname().machine, (0, 0, 0))[2]
# The kernel has seccomp user notifications (Linux >= 5.0) and the sandbox a filter for this architecture: then a
# refused call must be reported (the test fails if none came), not skipped.
NOTIFIES = KEYCTL != 0 and tuple(int(part) for part in os.uname().release.split(".")[:2] if part.isdigit()) >= (5, 0)
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"

# find_tile answers right, but during its first case it writes one well-formed `progress` frame (a frame of a load,
# never of a case) to the runtime's answer pipe, found through the runtime's frames as any student can. Before,
# that case was an error and the exercise kept its other cases' points.
FORGED_IN_FIND_TILE = '''
import json as _rt_json, os as _rt_os, struct as _rt_struct, sys as _rt_sys
_rt_find_tile = find_tile
def _rt_case(frame):
    while frame is not None:
        case = frame.f_locals.get("case")
        if isinstance(case, dict) and isinstance(case.get("id"), str):
            return case["id"]
        frame = frame.f_back
def find_tile(*args, **kwargs):
    if _rt_case(_rt_sys._getframe(1)) == "find_tile#1":
        frame = _rt_sys._getframe(1)
        while "self" not in frame.f_locals or not hasattr(frame.f_locals["self"], "response_fd"):
            frame = frame.f_back
        body = _rt_json.dumps({"op": "progress", "index": 0, "left_out": []}).encode()
        _rt_os.write(frame.f_locals["self"].response_fd, _rt_struct.pack(">I", len(body)) + body)
    return _rt_find_tile(*args, **kwargs)
'''

# The same frame written by top-level code, in the statement that binds the graded find_tile: the statement is
# left out (the load goes on without it: the notebook's own earlier find_tile is graded) and every answer is right.
FORGED_AT_LOAD = '''
import json as _rt_json, os as _rt_os, struct as _rt_struct
def _rt_forging(function):
    body = _rt_json.dumps({"op": "ready", "pid": 1}).encode()
    for fd in range(3, 32):
        try:
            _rt_os.write(fd, _rt_struct.pack(">I", len(body)) + body)
        except OSError:
            pass
    return function
find_tile = _rt_forging(find_tile)
'''

# replace_numbers answers right, after forking sleepers until the sandbox's process cap refuses (bounded).
FORK_BOMB_IN_REPLACE_NUMBERS = f'''
import os as _rt_os, sys as _rt_sys
_rt_replace_numbers = replace_numbers
def replace_numbers(*args, **kwargs):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        refused = 0
        for _ in range({PIDS_MAX + 64}):
            try:
                pid = _rt_os.fork()
            except OSError:
                refused += 1
                if refused >= 5:
                    break
                continue
            if pid == 0:
                try:
                    _rt_os.execv("/bin/sleep", ["sleep", "7171.91"])
                finally:
                    _rt_os._exit(0)
    return _rt_replace_numbers(*args, **kwargs)
'''

# find_numbers answers right, after asking three times for the session keyring's id (keyctl), which the sandbox's
# seccomp filter refuses in every mode: the sandbox inherits the grader's session keyring, and no notebook needs one.
KEYRING_IN_FIND_NUMBERS = f'''
import ctypes as _rt_ctypes, sys as _rt_sys
_rt_find_numbers = find_numbers
def find_numbers(*args, **kwargs):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>":
        for _ in range(3):
            _rt_ctypes.CDLL(None).syscall({KEYCTL}, 0, -3, 0)   # KEYCTL_GET_KEYRING_ID of the session keyring
    return _rt_find_numbers(*args, **kwargs)
'''

# What honest code hits: a memory bomb in find_numbers' first case, runaway recursion in manhattan's. They cost
# their cases as before, and are no incidents.
HONEST_LIMITS = '''
import sys as _rt_sys
_RT_SEEN = []
_rt_find_numbers, _rt_manhattan = find_numbers, manhattan
def find_numbers(*args, **kwargs):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>" and "f" not in _RT_SEEN:
        _RT_SEEN.append("f")
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))
    return _rt_find_numbers(*args, **kwargs)
def _rt_deep(n):
    return _rt_deep(n + 1) + 1
def manhattan(*args, **kwargs):
    if _rt_sys._getframe(1).f_code.co_filename == "<case>" and "m" not in _RT_SEEN:
        _RT_SEEN.append("m")
        return _rt_deep(0)
    return _rt_manhattan(*args, **kwargs)
'''


def _lost(result) -> dict[str, float]:
    return {e.id: e.score for e in result.exercises if e.score < e.max_score}


def test_a_forged_frame_costs_its_whole_exercise_and_is_recorded_as_the_parent_saw_it(plan, tmp_path):
    result = grade_path(write(tmp_path / "forged.ipynb", appended(CORRECT, FORGED_IN_FIND_TILE)), plan,
                        support_sources(plan))
    assert _lost(result) == {"find_tile": 0.0}   # before: the first case only (the others passed)
    exercise = result.exercise("find_tile")
    assert [c.status for c in exercise.cases].count("pass") == len(exercise.cases) - 1
    assert incidents.STUDENT_NOTE in exercise.notes
    assert result.incidents == (incidents.Incident(incidents.FORGED_FRAME, incidents.PARENT, "find_tile",
                                                   exercise.cases[0].id, 1),)
    # Kept as facts in the stored result, and read back the same.
    assert from_dict(to_dict(result)).incidents == result.incidents


def test_an_attack_at_load_costs_every_exercise_unless_the_rubric_says_none(plan, tmp_path):
    path = write(tmp_path / "forged-at-load.ipynb", appended(CORRECT, FORGED_AT_LOAD))
    result = grade_path(path, plan, support_sources(plan))
    assert result.incidents and all(i.exercise == "" and i.kind == incidents.FORGED_FRAME for i in result.incidents)
    assert result.total == 0 and all(incidents.STUDENT_NOTE_LOAD in e.notes for e in result.exercises)
    # Its answers were all right: under `incidents: none` it is only shown.
    shown = grade_path(path, replace(plan, rubric=replace(plan.rubric, incidents=incidents.NONE)),
                       support_sources(plan))
    assert shown.total == shown.max_total and shown.incidents == result.incidents
    assert all(incidents.STUDENT_NOTE_SHOWN_LOAD in e.notes for e in shown.exercises)


@pytest.mark.skipif(detect().pids_root is None, reason="no pids cgroup here: nothing counts the forks it refused")
def test_a_fork_bomb_stopped_at_the_cap_costs_its_exercise(plan, tmp_path):
    result = grade_path(write(tmp_path / "fork-bomb.ipynb", appended(CORRECT, FORK_BOMB_IN_REPLACE_NUMBERS)),
                        plan, support_sources(plan))
    assert _lost(result) == {"replace_numbers": 0.0}   # before: full marks, all its answers right
    assert all(c.status == "pass" for c in result.exercise("replace_numbers").cases)
    [incident] = result.incidents
    assert (incident.kind, incident.observer, incident.exercise) == \
        (incidents.PROCESS_CAP, incidents.PIDS_CGROUP, "replace_numbers")
    assert incident.count >= 1


@pytest.mark.skipif(KEYCTL == 0, reason="no seccomp filter known for this architecture")
def test_a_call_the_seccomp_filter_refused_costs_its_exercise_as_the_zygote_reported_it(plan, tmp_path):
    result = grade_path(write(tmp_path / "keyring.ipynb", appended(CORRECT, KEYRING_IN_FIND_NUMBERS)), plan,
                        support_sources(plan))
    if not NOTIFIES:
        pytest.skip("no seccomp user notifications here (Linux < 5.0 or another architecture)")
    assert _lost(result) == {"find_numbers": 0.0}   # before: full marks (each call failed with EPERM, unseen)
    assert all(c.status == "pass" for c in result.exercise("find_numbers").cases)
    cases = len(result.exercise("find_numbers").cases)
    assert result.incidents == (incidents.Incident(f"{incidents.REFUSED_CALL}: keyring", incidents.SECCOMP,
                                                   "find_numbers", "", 3 * cases),)


def test_memory_and_recursion_limits_are_no_incidents(plan, tmp_path):
    result = grade_path(write(tmp_path / "honest.ipynb", appended(CORRECT, HONEST_LIMITS)), plan,
                        support_sources(plan))
    assert set(_lost(result)) == {"find_numbers", "manhattan"}
    assert all(e.score > 0 for e in result.exercises)   # one case each, as before
    assert result.incidents == ()
    assert not any(incidents.STUDENT_NOTE in e.notes for e in result.exercises)


# What honest notebooks do that the sandbox allows: numpy's BLAS (its threads), a thread pool, a subprocess, a
# multiprocessing pool, reading their own scheduling. None of it may be an incident: each would cost an exercise.
HONEST_LIBRARIES = """
import concurrent.futures, multiprocessing, os, subprocess
import numpy as np
def work():
    a = np.random.default_rng(0).random((300, 300))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        doubled = list(pool.map(lambda x: x * 2, range(8)))
    echoed = subprocess.run(["/bin/echo", "hi"], capture_output=True, check=True).stdout
    with multiprocessing.Pool(2) as pool:
        absolute = pool.map(abs, [-1, -2])
    os.sched_getaffinity(0)
    os.getpriority(os.PRIO_PROCESS, 0)
    return [float((a @ a).sum()) > 0, doubled[-1], echoed.decode().strip(), absolute]
"""


def test_honest_libraries_processes_and_threads_are_no_incidents():
    pytest.importorskip("numpy")
    ran = run_cases([statement(HONEST_LIBRARIES)], [CaseRequest(id="c", code="work()", timeout=60.0)],
                    limits=ProcessLimits(memory_mb=2048))
    [outcome] = ran.outcomes
    assert outcome.status == "ok", outcome.error
    assert codec.decode(outcome.value) == [True, 14, "hi", [1, 2]]
    assert ran.sandbox.seen == []


# What honest notebooks do, at top level (bound into what find_tile reads, so the load runs it) and in find_tile's
# first case: limits and recursion, their CPUs, os.nice(0) and os.nice(5) (they seem to succeed and change nothing),
# a timeout made of signal.alarm/setitimer, os.kill(own pid, 0), process and thread pools, /proc/self, tqdm,
# matplotlib, sleep, faulthandler, a subprocess. None is an incident (a load-time one would zero every exercise).
HONEST_PATTERNS = '''
import concurrent.futures, faulthandler, multiprocessing, os, resource, signal, subprocess, sys, time
def _rt_patterns():
    resource.setrlimit(resource.RLIMIT_STACK, resource.getrlimit(resource.RLIMIT_STACK))
    resource.setrlimit(resource.RLIMIT_AS, resource.getrlimit(resource.RLIMIT_AS))
    sys.setrecursionlimit(5000)
    cpus = len(os.sched_getaffinity(0)) + (os.cpu_count() or 1)
    for step in (0, 5):   # a setpriority either way: it seems to succeed and the filter keeps the grader's nice
        os.nice(step)
    old = signal.signal(signal.SIGALRM, lambda *args: None)
    signal.alarm(30)
    signal.setitimer(signal.ITIMER_REAL, 20)
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
    os.kill(os.getpid(), 0)
    with multiprocessing.Pool(4) as pool:
        assert pool.map(abs, [-1, -2]) == [1, 2]
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        assert list(pool.map(abs, [-3])) == [3]
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        assert sum(pool.map(abs, range(64))) == 2016
    status = open("/proc/self/status").read() + open("/proc/self/stat").read()
    try:
        import tqdm
        for _ in tqdm.tqdm(range(3), file=sys.stdout):
            pass
    except ImportError:
        pass
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.plot([1, 2])
        plt.close("all")
    except ImportError:
        pass
    time.sleep(0.01)
    faulthandler.enable()
    faulthandler.dump_traceback_later(60, file=sys.__stderr__)
    faulthandler.cancel_dump_traceback_later()
    subprocess.run(["true"], check=True)
    return cpus > 0 and bool(status)
_RT_DONE = _rt_patterns()
_rt_find_tile = find_tile
def _rt_case(frame):
    while frame is not None:
        case = frame.f_locals.get("case")
        if isinstance(case, dict) and isinstance(case.get("id"), str):
            return case["id"]
        frame = frame.f_back
def find_tile(*args, **kwargs):
    if _RT_DONE and _rt_case(sys._getframe(1)) == "find_tile#1":
        _rt_patterns()
    return _rt_find_tile(*args, **kwargs)
'''


def test_honest_patterns_at_top_level_and_in_a_graded_function_are_no_incidents(plan, tmp_path):
    result = grade_path(write(tmp_path / "honest-patterns.ipynb", appended(CORRECT, HONEST_PATTERNS)), plan,
                        support_sources(plan))
    assert result.incidents == ()
    assert result.total == result.max_total, _lost(result)
    assert not [w.shown for w in result.warnings if "_rt_patterns" in w.shown or "_RT_DONE" in w.shown]


@pytest.mark.parametrize("mode", ["namespaces", "rlimits"])
def test_what_honest_notebooks_do_works_as_in_jupyter_and_is_no_incident(mode):
    """tests/honest_code.py at load and in a case, in a jail and in rlimits mode (root's: an unused uid, or root
    itself where the interpreter is root's only; then the filter protects the zygote as for a grader that is not
    root). Before: os.nice(0) and os.sched_setaffinity(0, its own CPUs) raised PermissionError, faulthandler.enable()
    and subprocess.run(stdout=sys.stdout) AttributeError (the captured stream had no fileno()), and in rlimits mode
    as root os.kill(os.getppid(), 0) at load was an incident that zeroed every exercise."""
    isolation = Isolation(namespaces=False, pids_root=None) if mode == "rlimits" else None
    ran = run_cases([statement(HONEST, kind="other")], [CaseRequest(id="c", code="work()", timeout=60.0)],
                    isolation=isolation, allow_root=True)
    assert ran.sandbox.level == mode
    assert ran.report.warnings == ()
    [outcome] = ran.outcomes
    assert outcome.status == "ok", outcome.error
    assert codec.decode(outcome.value) == [EXPECTED, EXPECTED]
    assert ran.sandbox.seen == []


# A graded function that maps a function calling a helper over a pool of forked workers: in the rerun with the
# course's helpers (isolation) the helper is the parent's, and the workers shared the exercise's pipes without its
# sequence or reply stream. They took each other's replies and the case hung to the submission's time (every later
# case skipped); now each call from a worker fails at once, as the case's own error.
POOL_OF_HELPER_CALLS = """
import multiprocessing
def helper(n):
    return n + 1
def score(n):
    return 2 * helper(n)
def work():
    with multiprocessing.get_context("fork").Pool(2) as pool:
        return sum(pool.map(score, range(40)))
"""


def test_an_isolated_helper_called_from_a_forked_pool_fails_its_case_at_once():
    oracle = lambda name, args, kwargs: args[0] + 1   # noqa: E731 - the course's helper
    ran = run_cases([statement(POOL_OF_HELPER_CALLS, kind="other")],
                    [CaseRequest(id=f"c{n}", code="work()", timeout=10.0) for n in range(2)], isolate=["helper"],
                    oracle=oracle)
    for outcome in ran.outcomes:   # before: the first timed out when the submission's time ran out, the next skipped
        assert (outcome.status, outcome.error.get("type")) == ("error", "RuntimeError"), outcome.error
        assert "not in a process the notebook started" in outcome.error["message"]
    assert ran.sandbox.seen == []
    # The notebook's own run (no isolated helper) is as in Jupyter.
    [own] = run_cases([statement(POOL_OF_HELPER_CALLS, kind="other")],
                      [CaseRequest(id="c", code="work()", timeout=10.0)]).outcomes
    assert own.status == "ok" and codec.decode(own.value) == 2 * sum(range(1, 41)), own.error


# The textbook fork, careless about how its child ends: sys.exit() (or an exception, or a plain return) instead of
# os._exit. The child came back into the runtime and answered the case (or went on with the load and announced it
# loaded) before its parent: the parent's own answer then looked forged, an incident that zeroed the exercise (all
# of them at load), and the case was the child's SystemExit. Each child now ends as Python would have ended it.
CARELESS_FORKS = """
import os, sys
def _forked(end):
    pid = os.fork()
    if pid == 0:
        end()
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
def _raise():
    raise ValueError("the child's own error")
def _exit_with(code):
    def end():
        sys.exit(code)
    return end
AT_LOAD = _forked(_exit_with(0))
def _returned():
    pid = os.fork()
    if pid == 0:
        return "the child's answer"   # out of the case, into the runtime
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
def work():
    return [AT_LOAD, _forked(_exit_with(3)), _forked(_exit_with(None)), _forked(_exit_with("bye")), _forked(_raise),
            _returned()]
"""


def test_a_fork_whose_child_returns_or_exits_into_the_runtime_is_no_incident():
    ran = run_cases([statement(CARELESS_FORKS, kind="other")],
                    [CaseRequest(id=f"c{n}", code="work()", timeout=60.0) for n in range(2)])
    assert ran.report.warnings == ()
    for outcome in ran.outcomes:
        assert outcome.status == "ok", outcome.error   # before: SystemExit, the child's answer
        # Exit statuses as Python gives them; a child that returned into the case ends with 0.
        assert codec.decode(outcome.value) == [0, 3, 0, 1, 1, 0]
    assert ran.sandbox.seen == []   # before: a forged frame at load and in each case


# Intel's and LLVM's OpenMP runtimes (conda's MKL numpy, pip's intel-openmp, conda-forge's llvm-openmp) pin the
# thread to each CPU in turn at their first use (three sched_setaffinity calls under strace for omp_get_num_procs):
# refused by the filter (EPERM), libiomp5 aborted the child (SIGABRT): every case that used it crashed.
OPENMP_FIRST_USE = """
import ctypes, os
def work(path):
    runtime = ctypes.CDLL(path) if path else None
    return [os.environ.get("KMP_AFFINITY"), runtime.omp_get_num_procs() > 0 if runtime else None]
"""


def _openmp_runtimes() -> list[str]:
    """Intel or LLVM OpenMP libraries installed under this interpreter's site-packages (visible in a jail)."""
    import site
    found: list[str] = []
    for folder in {*site.getsitepackages(), site.getusersitepackages()}:
        for name in ("libiomp5.so", "libomp.so"):
            found += [str(path) for path in Path(folder).glob(f"*/{name}")][:1]
    return found


def test_openmp_runtimes_probe_no_cpu_affinity_in_the_sandbox():
    cases = [CaseRequest(id=f"c{n}", code=f"work({path!r})", timeout=60.0)
             for n, path in enumerate(["", *_openmp_runtimes()])]
    ran = run_cases([statement(OPENMP_FIRST_USE)], cases)
    for outcome in ran.outcomes:
        assert outcome.status == "ok", outcome.error   # before: the child died of SIGABRT with libiomp5
        assert codec.decode(outcome.value)[0] == "disabled"   # before: None
    assert ran.sandbox.seen == []


def test_a_rubric_naming_no_known_policy_is_refused_with_its_line(tmp_path):
    source = (REPO / "rubrics" / "taoistic-search.yaml").read_text(encoding="utf-8")
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "assignments").symlink_to(REPO / "assignments")
    (tmp_path / "reference").symlink_to(REPO / "reference")
    rubric = tmp_path / "rubrics" / "taoistic-search.yaml"
    rubric.write_text(source + "\nincidents: forgive\n", encoding="utf-8")
    with pytest.raises(RubricError, match="incidents: must be one of exercise, none"):
        load_rubric(rubric)
    rubric.write_text(source + "\nincidents: none\n", encoding="utf-8")
    assert load_rubric(rubric).incidents == incidents.NONE
    assert load_rubric(REPO / "rubrics" / "taoistic-search.yaml").incidents == incidents.EXERCISE


# ------------------------------------------------------------------------------------------------ the policy, pure

IDS = ("a", "b", "c")


def _exercise(exercise_id: str, score: float) -> ExerciseResult:
    return ExerciseResult(exercise_id, exercise_id, score, 2.0, (CaseResult(f"{exercise_id}#1", "pass", "public", ""),))


sightings = st.lists(st.builds(incidents.Seen, st.sampled_from(incidents.KINDS), st.sampled_from(incidents.OBSERVERS),
                               st.sampled_from(("", "a#1", "b#1")), st.sampled_from(("", "a#1", "c#1")),
                               st.integers(1, 5)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(sightings, st.lists(st.floats(0, 2), min_size=3, max_size=3), st.sampled_from(incidents.POLICIES))
def test_the_policy_only_ever_takes_points_and_only_where_something_was_seen(seen, scores, policy):
    exercises = [_exercise(i, s) for i, s in zip(IDS, scores, strict=True)]
    placed = incidents.placed(seen, {f"{i}#1": i for i in IDS})
    assert sum(i.count for i in placed) == sum(s.count for s in seen)
    judged = incidents.apply(exercises, placed, policy)
    hit = {i.exercise for i in placed}
    for before, after in zip(exercises, judged, strict=True):
        assert after.cases == before.cases
        if policy == incidents.NONE or not ("" in hit or before.id in hit):
            assert after.score == before.score
        else:
            assert after.score == 0
        assert (after.notes == before.notes) == (not ("" in hit or before.id in hit))
