"""Shared fixtures for the end-to-end tests: repository paths, a private cache, and one graded batch; and the
check, when the run ends, that it left no process, grader temp folder or grader cgroup behind (leftovers.py).

Grading every bundled example takes several seconds (infinite-search alone spends most of them
on timeouts), so it happens once per session and many tests read the results.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

import leftovers
import testclock
from grader.plan.cases import Plan, build_plan
from grader.rubric.schema import load_rubric
from grader.run.batch import grade
from grader.authoring.validate import Validation, validate
from grader.store.results import SubmissionResult

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
ASSIGNMENT = REPO / "assignments" / "taoistic-search"
SUBMISSIONS = ASSIGNMENT / "submissions"
TEMPLATE = ASSIGNMENT / "template.ipynb"
REFERENCE = REPO / "reference" / "taoistic_search.py"
NOTEBOOKS = REPO / "tests" / "fixtures" / "notebooks"

# Hypothesis's per-example deadline (200 ms) is an assertion on wall time: on a busy 2-core machine a slow
# example is load, not a bug. Every property test runs without it; a test may still set its own settings.
settings.register_profile("busy-machine", deadline=None)
settings.load_profile("busy-machine")

# Graded in the same batch as the bundled examples: a file that is not a notebook must not stop the batch.
EXTRA_SUBMISSIONS = (NOTEBOOKS / "invalid_json.ipynb", NOTEBOOKS / "e2e_find_tiles_alias.ipynb", REFERENCE)


@dataclass(frozen=True)
class Batch:
    """One grading run: results by submission id, the folder of their JSON files, and its wall time."""

    results: dict[str, SubmissionResult]
    out: Path
    seconds: float

    def __getitem__(self, submission: str) -> SubmissionResult:
        return self.results[submission]


@pytest.fixture(scope="session")
def grader_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Reference answers are cached here, never in the home directory; shared so they are computed once."""
    return tmp_path_factory.mktemp("grader-cache")


@pytest.fixture(scope="session")
def bundled(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Batch:
    """Every bundled example submission, the reference module, an invalid file and the alias notebook."""
    out = tmp_path_factory.mktemp("bundled-results")
    started = time.monotonic()
    results = grade([SUBMISSIONS, *EXTRA_SUBMISSIONS], RUBRIC, out, jobs=2, cache=grader_cache)
    seconds = time.monotonic() - started
    return Batch({result.submission: result for result in results}, out, seconds)


@pytest.fixture(scope="module")
def plan(grader_cache: Path) -> Plan:
    """The Taoistic rubric's plan, built once per test module: a module's tests share its memo (what the parent
    keeps between submissions, which some of them inspect) and no module sees another's. A module that grades
    another rubric defines its own `plan`."""
    return build_plan(load_rubric(RUBRIC), grader_cache)


@pytest.fixture(scope="session")
def validation(grader_cache: Path) -> Validation:
    return validate(RUBRIC, cache=grader_cache, mutants=1)   # mutation testing proper: tests/test_mutation.py


# ------------------------------------------------------------------------------------------------ leftovers

_RUN: dict[str, object] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    testclock.started = time.monotonic()   # the test's time under pytest's net starts with its setup


def pytest_sessionstart(session: pytest.Session) -> None:
    _RUN["group"] = leftovers.RunGroup.enter()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every fixture's teardown: whatever the run left is reported, removed, and fails the run."""
    group = _RUN.pop("group", None)
    if isinstance(group, leftovers.RunGroup):
        _RUN["problems"] = problems = group.leave()
        if problems:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    problems = _RUN.get("problems") or []
    if problems:
        terminalreporter.write_sep("=", "the test run left these behind (now removed): it fails", red=True)
        for problem in problems:
            terminalreporter.write_line(str(problem), red=True)
