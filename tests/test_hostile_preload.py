"""What a notebook's top-level code leaves running costs nobody graded beside it by one worker, whose next
notebook is loaded while the one before it runs its cases (README "Grading a class", one worker on two CPUs).

Graded for real, one worker: correct, hog, correct. The hog is the correct Taoistic notebook plus one cell run at
load (kept: find_tile reads what it binds): a thread spinning for good (its sandbox cannot be moved to the worker's
CPU, so it is loaded again), a process spinning for good, 100 MB held and a CPU timer whose handler forks whenever
it fires. Its neighbours, one loaded while the hog's cases run and one whose cases run while the hog loads, keep
every point; the hog gets a result (what it loses is its own doing).
"""

from __future__ import annotations

from pathlib import Path

from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from notebook_build import appended, write

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"

HOG = r'''
import os as _os, signal as _signal, threading as _threading


def _spin():
    while True:
        pass


def _hog():
    _threading.Thread(target=_spin, daemon=True).start()
    if _os.fork() == 0:
        _spin()
    _signal.signal(_signal.SIGVTALRM, lambda *_: _os.fork() == 0 and _os._exit(0))
    _signal.setitimer(_signal.ITIMER_VIRTUAL, 0.05, 0.05)
    return bytearray(100 << 20)


_HELD = _hog()   # kept and run at load: find_tile reads it
_find_tile = find_tile


def find_tile(*args, **kwargs):
    assert len(_HELD) == 100 << 20
    return _find_tile(*args, **kwargs)
'''


def test_a_hogging_load_costs_the_notebooks_graded_beside_it_nothing(tmp_path: Path):
    paths = [write(tmp_path / "a_before.ipynb", appended(CORRECT, "_before = 1\n")),
             write(tmp_path / "b_hog.ipynb", appended(CORRECT, HOG)),
             write(tmp_path / "c_after.ipynb", appended(CORRECT, "_after = 1\n"))]
    results = {result.submission: result
               for result in grade(paths, load_rubric(RUBRIC), tmp_path / "out", jobs=1, cache=tmp_path / "cache")}
    assert sorted(results) == ["a_before", "b_hog", "c_after"]
    assert not [c.message for e in results["b_hog"].exercises for c in e.cases if "NameError" in c.message]  # it ran
    for neighbour in ("a_before", "c_after"):
        result = results[neighbour]
        lost = {e.id: [(c.id, c.status, c.message[:80]) for c in e.cases if c.status != "pass"][:2]
                for e in result.exercises if e.score < e.max_score}
        assert lost == {}, neighbour
        assert result.total == result.max_total == 30
