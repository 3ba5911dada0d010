"""Attacks on the isolated-helper (oracle) path: each costs the attacker points and nothing else.

The parent answers a child's isolated-helper calls with the reference and keeps the answers (PureOracle), shared
by every submission graded with the same plan. The child chooses every argument, so whatever the parent keeps
from a call must be bounded by the parent, whatever the child sends. Each test grades a real notebook (the
bundled correct one with one cell appended) in a real sandbox.
"""

from __future__ import annotations

import threading
from pathlib import Path

from grader.judge.grading import grade_path, support_sources
from grader.plan.cases import Plan, build_plan
from grader.rubric.schema import load_rubric
from grader.sandbox.process import Replies, _bounded, _ReferenceTooSlow
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


def _replies(plan: Plan) -> Replies:
    return plan.memo.get(("oracle-replies",), Replies)


# A wrong matches gets search a second run with the reference's matches; that run asks the reference 40 times
# with a 600,000-character keyword argument (each call different), which the reference refuses (TypeError).
BLOATED_KEYS = '''
def matches(Pattern, S):
    return Pattern == S

_rt_search = search
_rt_flooded = []
def search(start, goal, next_states, heuristic):
    if not matches.__code__.co_filename.endswith("runtime.py"):
        return None                       # the first run fails, so the rerun with the reference's matches comes
    if len(_rt_flooded) < 2:              # two cases, 12 MB each: within a case's oracle_bytes (16 MB)
        _rt_flooded.append(1)
        pad = "x" * 600_000
        for i in range(20):
            try:
                matches(goal, start, pad=pad + str(i))
            except Exception:
                pass
    return _rt_search(start, goal, next_states, heuristic)
'''


def test_oracle_calls_with_huge_arguments_do_not_grow_the_parents_kept_replies(plan, tmp_path):
    """24 million characters of arguments, in two cases: the parent keeps at most its budget, however the calls are
    made, and the notebook is graded as its code deserves (matches lost, search right with the reference's matches)."""
    path = write(tmp_path / "bloated-keys.ipynb", appended(CORRECT, BLOATED_KEYS))
    result = grade_path(path, plan, support_sources(plan))
    scores = {exercise.id: exercise.score for exercise in result.exercises}
    assert scores["matches"] < 2 and scores["search"] == 4
    replies = _replies(plan)
    kept = sum(len(part) for key in replies.entries for part in key)
    assert kept <= replies.max_chars and replies.chars <= replies.max_chars
    assert all(len(key[0]) + len(key[-1]) <= replies.max_key_chars for key in replies.entries)   # name, arguments


# next_states forgets one move, so it loses points and search is judged again with the reference's next_states.
# During that rerun, search records the reference's answers in memory every process of the sandbox shares (an
# anonymous MAP_SHARED mapping made at load, inherited by every exercise's fork), and every later call of the
# notebook's next_states says how many it finds there.
STASHED_REFERENCE_ANSWERS = '''
import mmap as _rt_mmap, json as _rt_json
_RT_SHM = _rt_mmap.mmap(-1, 16 << 20)

def _rt_stash():
    size = int.from_bytes(_RT_SHM[:8], "big")
    return _rt_json.loads(_RT_SHM[8:8 + size]) if size else {}

def next_states(S):
    n = len(S)
    row, col = find_tile('0', S)
    Result = set()
    for dx, dy in [(1, 0), (0, 1), (0, -1)]:
        if 0 <= row + dy < n and 0 <= col + dx < n:
            Result.add(move_dir(S, row, col, dx, dy))
    if not globals().get("_RT_SAID"):
        globals()["_RT_SAID"] = True
        print(f"RT-STASH: {len(_rt_stash())} answers of the reference")
    return Result

_RT_OWN = next_states
_rt_search = search
def search(start, goal, next_states_, heuristic):
    if next_states_ is _RT_OWN:
        return _rt_search(start, goal, next_states_, heuristic)
    stash = _rt_stash()
    def recording(S):
        answer = next_states_(S)
        stash[repr(S)] = [repr(x) for x in answer]
        return answer
    try:
        return _rt_search(start, goal, recording, heuristic)
    finally:
        data = _rt_json.dumps(stash).encode()
        if len(data) + 8 <= len(_RT_SHM):
            _RT_SHM[8:8 + len(data)] = data
            _RT_SHM[:8] = len(data).to_bytes(8, "big")
'''


def test_the_references_answers_to_a_rerun_never_reach_an_exercise_run_with_the_notebooks_own_helpers(plan, tmp_path):
    """Isolation compensates: the reference answers a helper only in a second run of an exercise whose helper was
    judged wrong. Every exercise's own run comes first, before any such answer exists in the sandbox, so no
    channel the notebook opens between its processes (here shared memory made at load) can carry the reference's
    answers into an exercise judged with its own code (before, main, run after search's rerun, found 3,000 of
    them: next_states could answer main's states from them)."""
    path = write(tmp_path / "stashed-reference-answers.ipynb", appended(CORRECT, STASHED_REFERENCE_ANSWERS))
    result = grade_path(path, plan, support_sources(plan))
    exercises = {exercise.id: exercise for exercise in result.exercises}
    assert exercises["search"].isolated == ("next_states",)      # the rerun happened, with the reference's answers
    said = [line for exercise in result.exercises if not exercise.isolated for case in exercise.cases
            for line in (case.output or "").splitlines() if line.startswith("RT-STASH")]
    assert said and all(line == "RT-STASH: 0 answers of the reference" for line in said), said


N_PUZZLE_RUBRIC = REPO / "rubrics" / "n-puzzle.yaml"
N_PUZZLE_CORRECT = REPO / "assignments" / "n-puzzle" / "submissions" / "correct.ipynb"

# zeropos is wrong, so available_actions runs a second time with the reference's State.zeropos, whose stand-in sends
# the board (self.state) as data that the parent rebuilds as a numpy array for the reference. The notebook finds
# the stand-in's runtime through its closures and sends its own data instead: 40 one-letter strings of dtype
# U500000000 (80 GB; three of U100000000 made the parent fill 1.2 GB in 2.8 s of CPU). It answers right only when
# the parent refused that call by its bound, as it does any data over it.
FORGED_ARRAY = '''
def _rt_runtime(f, depth=0):
    for cell in (getattr(f, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if hasattr(value, "ask") and hasattr(value, "response_fd"):
            return value
        if callable(value) and depth < 3:
            found = _rt_runtime(value, depth + 1)
            if found is not None:
                return found

_rt_available_actions = State.available_actions
def _rt_forging(self):
    runtime = _rt_runtime(State.zeropos)
    if runtime is None:
        return []                              # the first run: wrong, so the second run comes
    rows = ",".join(['["a"]'] * 40)
    reply = bytes(runtime.ask('"State.zeropos"', (
        '{"list":[{"ndarray":[%s],"dtype":"U500000000","shape":[40,1]}]}' % rows, '{"dict":[]}'))).decode()
    if "CodecError" in reply and "over the 16777216 allowed" in reply:
        return _rt_available_actions(self)
    return [reply[:200]]
State.available_actions = _rt_forging
State.zeropos = lambda self: (0, 0)
'''


def test_an_isolated_methods_data_forged_by_the_child_is_rebuilt_within_the_parents_bound(tmp_path):
    plan = build_plan(load_rubric(N_PUZZLE_RUBRIC), tmp_path / "cache")
    path = write(tmp_path / "forged-array.ipynb", appended(N_PUZZLE_CORRECT, FORGED_ARRAY))
    result = grade_path(path, plan, support_sources(plan))
    exercises = {exercise.id: exercise for exercise in result.exercises}
    actions = exercises["available_actions"]
    assert actions.isolated == ("State.zeropos",), [case.message for case in actions.cases]
    assert actions.score == actions.max_score
    assert exercises["zeropos"].score < exercises["zeropos"].max_score


def _count(up_to: int) -> int:
    total = 0
    for number in range(up_to):
        total += number
    return total


def test_the_references_answer_to_a_call_is_bounded_in_a_thread_that_takes_no_signal():
    """A Dask worker grades in a thread of its pool, where no SIGALRM rings: the parent's answer to an isolated-helper
    call the child chose had no limit there (an eight-puzzle notebook had the reference count the inversions of
    20,000 tiles: 20 s of the worker's CPU for one call; 200,000 fit in the codec's bounds). Off the main thread
    the limit is a timer thread's (alarm.ThreadLimit): the call stops as it would on the main thread, a call in
    time answers, and nothing rings once _bounded has returned."""
    found: list = []

    def grade() -> None:
        try:
            found.append(_bounded(lambda: _count(300_000_000), 0.2))
        except _ReferenceTooSlow as error:
            found.append(error)
        found.append(_bounded(lambda: _count(10), 30.0))
        later = _count(3_000_000)   # long past the first limit's repeats: no ring is left to raise here
        found.append(later)

    thread = threading.Thread(target=grade)
    thread.start()
    thread.join(600)
    assert isinstance(found[0], _ReferenceTooSlow), found
    assert found[1:] == [45, _count(3_000_000)]
