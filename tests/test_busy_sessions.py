"""A busy machine in a TA's and a student's session: what it costs is the machine's, said as such, and graded again.

Real subprocesses: the grader runs pinned to one CPU beside busy processes on that CPU, with a
submission budget far below what the starved grading needs. No wall time is asserted: only verdicts, scores and the
words shown are compared with a quiet grading of the same notebook.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from conftest import REPO, RUBRIC, SUBMISSIONS
from grader.judge.grading import busy_in_rerun
from grader.kit.check import check_with_kit
from grader.kit.kit import write_kit
from grader.report.console import student_report
from grader.store.results import CaseResult, read_json
from grader.store.status import BUSY
from hogs import spinners, stop
from testclock import within

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")

# The grader runs at its own priority, not niced: with the kernel's autogroups (each session a scheduling group of
# its own: the sandbox's too, by setsid) nice reaches no busy process of another session and did nothing; without
# them (sched_autogroup_enabled 0) a grader at nice 10 beside twelve busy processes at nice 0 gets under 1% of the
# CPU: this test took 289 s here with them off (11 s with them on), and a CI run of 2026-11-29 passed the suite's
# 900 s net. At its own priority the grader gets about a thirteenth either way (11 s here with them off), and so
# does its sandbox: what that computes (about 0.17 s a notebook here) keeps it waiting about twelve times as long,
# far past a 0.5 s budget and its 0.5 s slack.
HOGS = 12
BUDGET = "0.5"   # several times what the notebook computes: on a quiet machine nothing of it is ever cut


def starved(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`command` run pinned to one CPU, beside HOGS busy processes pinned to the same CPU, each in a session of its
    own. Its own time limit is below the suite's net, so a run that starves for good fails this test with what it
    printed, not the whole run."""
    cpu = min(os.sched_getaffinity(0))
    hogs = spinners(cpu, HOGS)
    try:
        pinned = f"import os, sys; os.sched_setaffinity(0, {{{cpu}}}); sys.argv = sys.argv[1:]; " \
                 "import runpy; runpy.run_module('grader', run_name='__main__', alter_sys=True)"
        return subprocess.run([sys.executable, "-c", pinned, "grader", *command], cwd=cwd, capture_output=True,
                              text=True, timeout=within(600), env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        stop(hogs)


def test_a_students_check_on_a_busy_machine_says_to_run_it_again_not_that_the_grader_is_broken(tmp_path: Path,
                                                                                              grader_cache: Path):
    """The kit's words for cases the machine kept from being judged (as the judge records them: `problem`, reason
    `busy machine`): this machine was too busy, not your mistake, run the check again; never "a grader problem ...
    tell your instructor" (the words for a crashing check), never a failure. The notebook is checked for real; two
    exercises' cases are then made what a starved run makes of them."""
    kit = write_kit(RUBRIC, tmp_path / "kit.json", cache=grader_cache)
    result, hidden = check_with_kit(SUBMISSIONS / "correct.ipynb", kit)
    busy = {"manhattan", "search"}
    exercises = tuple(replace(e, cases=tuple(
        replace(c, status="problem", reason=BUSY, cause="the machine was too busy to run it",
                message="grader problem: not run: the machine was too busy (it kept the grading waiting 75 s for a "
                        "CPU, and the submission's time may move by 60 s)") for c in e.cases))
        if e.id in busy else e for e in result.exercises)
    buffer = io.StringIO()
    console = Console(file=buffer, width=10_000, soft_wrap=True)
    assert student_report(replace(result, exercises=exercises), hidden, console) is True
    out = buffer.getvalue()
    for exercise in busy:
        line = next(line for line in out.splitlines() if line.startswith(f"? {exercise}:"))
        assert "not judged (this machine was too busy, not your mistake: run the check again)" in line, out
    assert "were not judged for the same reason" in out and "failed the same way" not in out, out
    assert "grader problem" not in out and "tell your instructor" not in out, out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("No public case failed so far;") and "run the check again" in last, out


def test_a_busy_machine_never_costs_a_class_points_it_does_not_say_and_grade_again(tmp_path: Path,
                                                                                  grader_cache: Path):
    """Graded starved, every exercise scores as on a quiet machine or has a case marked `busy machine` (which the
    result counts, the TA is told, and the next run grades again). move-dir-transposed's apply_move_list earns its
    points only in the run with the course's move_dir: when the machine kept that run from being judged, the
    notebook's own run (0.2 of 2) was kept with no busy case, so the next run kept it as unchanged for good."""
    notebooks = tmp_path / "class"
    notebooks.mkdir()
    for name in ("move-dir-transposed",):
        (notebooks / f"{name}.ipynb").write_bytes((SUBMISSIONS / f"{name}.ipynb").read_bytes())
    common = ["--rubric", str(RUBRIC), "--cache", str(grader_cache), "--quiet", "--jobs", "1"]
    quiet = subprocess.run([sys.executable, "-m", "grader", "grade", str(notebooks), "--out", str(tmp_path / "quiet"),
                            *common], cwd=tmp_path, capture_output=True, text=True, timeout=within(600),
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    busy = starved(["grade", str(notebooks), "--out", str(tmp_path / "busy"), "--submission-seconds", BUDGET, *common],
                   tmp_path)
    assert busy.returncode == 0, busy.stdout + busy.stderr
    said = 0
    for name in ("move-dir-transposed",):
        calm_result = read_json(tmp_path / "quiet" / f"{name}.json")
        rushed_result = read_json(tmp_path / "busy" / f"{name}.json")
        busy_cases = 0
        for before, after in zip(calm_result.exercises, rushed_result.exercises, strict=True):
            marked = sum(case.reason == BUSY for case in after.cases)
            busy_cases += marked
            assert after.score == before.score or marked, (name, after.id, before.score, after.score)
        assert rushed_result.extra.get("budget", {}).get("busy_cases", 0) == busy_cases
        said += busy_cases > 0
    assert said, busy.stdout   # starved for certain (HOGS): a run with every case judged compared nothing
    assert "not judged: the machine was too busy" in busy.stdout


def _case(id_: str, status: str, fraction: float = 0.0, reason: str = "") -> CaseResult:
    return CaseResult(id_, status, "public", "", fraction=fraction, reason=reason)


def test_a_rerun_the_machine_kept_from_being_judged_marks_the_own_runs_unearned_cases_busy_and_keeps_the_rest():
    own = [_case("a", "pass", 1.0), _case("b", "fail"), _case("c", "fail", 0.5), _case("d", "error")]
    rerun = [_case("a", "problem", reason=BUSY), _case("b", "problem", reason=BUSY),
             _case("c", "problem", reason=BUSY), _case("d", "fail")]
    kept = busy_in_rerun(own, rerun)
    assert [(c.status, c.reason) for c in kept] == [("pass", ""), ("problem", BUSY), ("fail", ""), ("error", "")]
    assert busy_in_rerun(own, [_case(c.id, "fail") for c in own]) == own


def test_an_own_runs_failure_the_busy_rerun_judged_and_earned_is_not_final_either():
    """eight-puzzle's inversions-with-blank at load 16: the run with the reference's inversions passed astar_search's
    seed problems 1 and 3 (the own run's raised the wrong inversions' parity assert), but the machine kept 7 of its
    cases from being judged, so it did not beat the own run, and those two errors were kept as the student's. Which
    run counts is not known until the rerun finishes: they are busy too. A case both runs failed stays failed."""
    own = [_case("s1", "error"), _case("s2", "pass", 1.0), _case("s3", "error"), _case("s4", "fail")]
    rerun = [_case("s1", "pass", 1.0), _case("s2", "problem", reason=BUSY), _case("s3", "pass", 0.5),
             _case("s4", "fail")]
    kept = busy_in_rerun(own, rerun)
    assert [(c.id, c.status, c.reason) for c in kept] == [("s1", "problem", BUSY), ("s2", "pass", ""),
                                                         ("s3", "problem", BUSY), ("s4", "fail", "")]
    assert all(not c.fraction for c in kept if c.reason == BUSY)
    assert busy_in_rerun(own, [_case("s1", "pass", 1.0), *[_case(c.id, "fail") for c in own[1:]]]) == own
    # each case keeps its own call and visibility: the first busy case of the rerun (here hidden) lends it none
    own = [replace(_case("p1", "error"), call="astar(p1)"), replace(_case("h1", "pass", 1.0), visibility="hidden")]
    rerun = [_case("p1", "pass", 1.0), replace(_case("h1", "problem", reason=BUSY), visibility="hidden",
                                               call="astar(hidden)")]
    kept = busy_in_rerun(own, rerun)
    assert [(c.id, c.status, c.visibility, c.call) for c in kept] == [("p1", "problem", "public", "astar(p1)"),
                                                                      ("h1", "pass", "hidden", "")]
