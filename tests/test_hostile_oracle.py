"""Attacks on the isolated-helper (oracle) path: each costs the attacker points and nothing else.

The parent answers a child's isolated-helper calls with the reference and keeps the answers (PureOracle), shared
by every submission graded with the same plan. The child chooses every argument, so whatever the parent keeps
from a call must be bounded by the parent, whatever the child sends. Each test grades a real notebook (the
bundled correct one with one cell appended) in a real sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.judge.grading import grade_path, support_sources
from grader.plan.cases import Plan, build_plan
from grader.rubric.schema import load_rubric
from grader.sandbox.process import Replies
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"


@pytest.fixture(scope="module")
def plan(grader_cache: Path) -> Plan:
    return build_plan(load_rubric(RUBRIC), grader_cache)


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
    if not _rt_flooded:
        _rt_flooded.append(1)
        pad = "x" * 600_000
        for i in range(40):
            try:
                matches(goal, start, pad=pad + str(i))
            except Exception:
                pass
    return _rt_search(start, goal, next_states, heuristic)
'''


def test_oracle_calls_with_huge_arguments_do_not_grow_the_parents_kept_replies(plan, tmp_path):
    """24 million characters of arguments: the parent keeps at most its budget, however the calls are made,
    and the notebook is graded as its code deserves (matches lost, search right with the reference's matches)."""
    path = write(tmp_path / "bloated-keys.ipynb", appended(CORRECT, BLOATED_KEYS))
    result = grade_path(path, plan, support_sources(plan))
    scores = {exercise.id: exercise.score for exercise in result.exercises}
    assert scores["matches"] < 2 and scores["search"] == 4
    replies = _replies(plan)
    kept = sum(len(part) for key in replies.entries for part in key)
    assert kept <= replies.max_chars and replies.chars <= replies.max_chars
    assert all(len(key[0]) + len(key[-1]) <= replies.max_key_chars for key in replies.entries)   # name, arguments
