"""Executors: the local pool survives a dying worker; a Dask LocalCluster grades exactly like the local pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.batch import grade_batch
from grader.executor import Job, LocalPool, Setup
from grader.results import to_dict
from grader.rubric import load_rubric

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
SUBMISSIONS = REPO / "assignments" / "taoistic-search" / "submissions"
SAMPLE = ["correct", "move-dir-transposed", "syntax-error", "seed-000"]


def scores(results) -> dict:
    return {r.submission: (r.total, [(e.id, e.score, [c.status for c in e.cases]) for e in r.exercises])
            for r in results}


@pytest.fixture(scope="module")
def pool_results(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in SAMPLE]
    return grade_batch(paths, RUBRIC, tmp_path_factory.mktemp("out"), jobs=2, cache=cache).results, cache


def test_a_dask_local_cluster_gives_the_same_results_as_the_local_pool(pool_results, tmp_path):
    pytest.importorskip("dask.distributed")
    results, cache = pool_results
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in SAMPLE]
    on_dask = grade_batch(paths, RUBRIC, tmp_path / "out", jobs=2, cache=cache, dask="local").results
    assert scores(on_dask) == scores(results)
    assert all(r.isolation == results[0].isolation for r in on_dask)


def test_a_worker_killed_mid_submission_is_replaced_and_only_that_submission_is_marked(tmp_path):
    killer = tmp_path / "killer.py"
    killer.write_text("import os, signal\n"
                      "os.kill(os.getppid(), signal.SIGKILL) if os.getpid() != 1 else None\n"
                      "def find_tile(tile, S):\n    return (0, 0)\n")
    # Without namespaces the loaded child's parent is the worker: killing it is the attack. With namespaces
    # the child cannot see the worker, so we kill the worker from outside to the same effect.
    setup = Setup(load_rubric(RUBRIC), str(tmp_path / "cache"))
    pool = LocalPool(setup, jobs=1)
    jobs = [Job("killer", str(killer)), Job("correct", str(SUBMISSIONS / "correct.ipynb"))]
    done = {}
    import os
    import signal
    import threading
    import time

    def kill_worker_once() -> None:
        time.sleep(1.0)
        for child in os.popen(f"pgrep -P {os.getpid()}").read().split():
            os.kill(int(child), signal.SIGKILL)
            break

    threading.Thread(target=kill_worker_once, daemon=True).start()
    for finished in pool.run(jobs):
        done[finished.job.student] = finished
    assert set(done) == {"killer", "correct"}
    assert json.dumps(done["correct"].result) if done["correct"].result else True
    killed = [d for d in done.values() if d.result is None]
    assert len(killed) <= 1
    if killed:
        assert "worker died" in killed[0].failure
    assert pool.replaced == len(killed)
    survivors = [d for d in done.values() if d.result is not None]
    assert all(to_dict is not None and d.result["total"] >= 0 for d in survivors)
