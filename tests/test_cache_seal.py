"""The expected-value cache cannot be poisoned: files are sealed with a per-folder key only the grader's uid can
read, a file that does not verify is recomputed and reported, and a sandboxed child can neither read the key
nor write the cache."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.plan import sealed
from grader.plan.cases import build_plan, cache_path
from grader.rubric.schema import load_rubric
from grader import codec
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"


def answers(plan):
    """The expected values and known mistakes' answers (the reference's timings differ between runs)."""
    return {case: (e.value, e.mistakes) for case, e in plan.expected.items()}


@pytest.fixture(scope="module")
def rubric():
    return load_rubric(RUBRIC)


def test_the_key_is_private_and_the_cache_file_verifies(rubric, tmp_path):
    cache = tmp_path / "cache"
    plan = build_plan(rubric, cache)
    assert plan.warnings == ()
    key = cache / sealed.KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_uid == os.getuid()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    path = cache_path(rubric, cache)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = build_plan(rubric, cache)
    assert again.warnings == () and answers(again) == answers(plan)


def _edit(path: Path, change) -> None:
    header, _, body = path.read_bytes().partition(b"\n")
    stored = json.loads(body)
    change(stored)
    path.write_bytes(header + b"\n" + json.dumps(stored).encode())


def test_a_cache_file_edited_by_hand_is_recomputed_and_reported(rubric, tmp_path):
    cache = tmp_path / "cache"
    honest = build_plan(rubric, cache)
    path = cache_path(rubric, cache)
    wrong = codec.encode(["forged"])

    def poison(stored):
        for entry in stored["expected"].values():
            entry["value"] = wrong

    _edit(path, poison)
    plan = build_plan(rubric, cache)
    assert answers(plan) == answers(honest)                     # the poison was not believed
    assert any(str(path) in w and "does not verify" in w for w in plan.warnings), plan.warnings
    assert build_plan(rubric, cache).warnings == ()             # rewritten, sealed again


def test_a_file_sealed_with_another_key_is_not_believed(rubric, tmp_path):
    cache = tmp_path / "cache"
    honest = build_plan(rubric, cache)
    path = cache_path(rubric, cache)
    _, _, body = path.read_bytes().partition(b"\n")
    stored = json.loads(body)
    for entry in stored["expected"].values():
        entry["value"] = codec.encode(0)
    path.write_bytes(sealed.seal(os.urandom(sealed.KEY_BYTES), json.dumps(stored).encode()))
    plan = build_plan(rubric, cache)
    assert answers(plan) == answers(honest) and plan.warnings


def test_a_key_others_can_read_is_replaced_and_what_it_sealed_is_recomputed(rubric, tmp_path):
    cache = tmp_path / "cache"
    build_plan(rubric, cache)
    key = cache / sealed.KEY_FILE
    old = key.read_bytes()
    key.chmod(0o644)
    plan = build_plan(rubric, cache)
    assert any("read or changed by others" in w for w in plan.warnings), plan.warnings
    assert key.read_bytes() != old and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert build_plan(rubric, cache).warnings == ()


def test_an_old_unsealed_cache_file_is_recomputed(rubric, tmp_path):
    cache = tmp_path / "cache"
    honest = build_plan(rubric, cache)
    path = cache_path(rubric, cache)
    _, _, body = path.read_bytes().partition(b"\n")
    path.write_bytes(body)                                      # what grader 0.1 wrote: plain JSON
    plan = build_plan(rubric, cache)
    assert answers(plan) == answers(honest) and plan.warnings


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_unseal_to_nothing_or_to_what_was_sealed(data):
    key = b"k" * sealed.KEY_BYTES
    assert sealed.unseal(key, data) is None or sealed.seal(key, sealed.unseal(key, data)) == data
    assert sealed.unseal(key, sealed.seal(key, data)) == data


def test_a_sandboxed_child_can_neither_read_the_key_nor_write_the_cache(rubric, tmp_path_factory):
    cache = tmp_path_factory.mktemp("grader-cache")
    build_plan(rubric, cache)
    path = cache_path(rubric, cache)
    probe = ("def probe(key, cache):\n"
             "    found = []\n"
             "    try:\n"
             "        found.append(('read key', len(open(key, 'rb').read())))\n"
             "    except OSError as error:\n"
             "        pass\n"
             "    try:\n"
             "        with open(cache, 'ab') as handle:\n"
             "            handle.write(b'poison')\n"
             "        found.append(('wrote cache', 1))\n"
             "    except OSError as error:\n"
             "        pass\n"
             "    return found\n")
    before = path.read_bytes()
    with Sandbox([{"code": probe, "filename": "In [1]", "line": 1, "kind": "def"}], {}, ProcessLimits()) as box:
        box.load(time.monotonic() + 60)
        request = CaseRequest("c1", "probe(__k, __c)", values={
            "__k": codec.encode(str(cache / sealed.KEY_FILE)), "__c": codec.encode(str(path))}, timeout=5)
        [outcome] = box.run_exercise([request], (), None, time.monotonic() + 60)
    assert outcome.status == "ok", outcome
    assert codec.decode(outcome.value) == []
    assert path.read_bytes() == before
