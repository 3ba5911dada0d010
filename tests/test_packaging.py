"""Dependencies by audience: a student's install has no report or cluster dependency, and every import is declared."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader.extras import EXTRA_OF
from testclock import within

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
CORRECT = REPO / "assignments" / "taoistic-search" / "submissions" / "correct.ipynb"

# Modules of the extras: what a student's install lacks. (pygments comes with rich too, so it is not blocked.)
BLOCKED = tuple(sorted(m for m in EXTRA_OF if m != "pygments"))
# The distribution that brings each third-party module imported by grader/.
DISTRIBUTION = {"yaml": "pyyaml", "dask_jobqueue": "dask-jobqueue", "distributed": "dask"}
# The sandbox child loads its own modules as plain files from its folder (not through the package).
CHILD_LOCAL = {"codec", "wire", "confine", "pristine", "runtime"}
# Imported only where the environment has it: the in-notebook check runs inside a Jupyter kernel.
ENVIRONMENT = {"IPython"}


def _name(requirement: str) -> str:
    for stop in "<>=[ ;":
        requirement = requirement.split(stop)[0]
    return requirement.strip().lower()


def _run(code: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=within(600))


def _blocking(then: str) -> str:
    """Python code that makes every module of an extra unimportable, then runs `then`."""
    return f"import sys\nfor _m in {BLOCKED!r}:\n    sys.modules[_m] = None\n{then}"


def test_the_base_install_has_no_report_or_cluster_dependency() -> None:
    base = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert not base & {"matplotlib", "nbconvert", "copydetect", "dask", "jinja2", "nh3", "dask-jobqueue"}
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"reports", "dask", "test", "bench"} <= set(extras)
    assert "puzzle-grader[reports,dask]" in extras["test"]     # the suite needs everything


def test_every_third_party_import_of_the_package_is_declared() -> None:
    declared = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    for requirements in PYPROJECT["project"]["optional-dependencies"].values():
        declared |= {_name(r) for r in requirements}
    imported: dict[str, str] = {}
    for path in sorted((REPO / "grader").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "grader" and top not in CHILD_LOCAL | ENVIRONMENT:
                    imported.setdefault(top, str(path.relative_to(REPO)))
    undeclared = {m: where for m, where in imported.items() if DISTRIBUTION.get(m, m).lower() not in declared}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    # A module the extras table names must be declared in that very extra.
    for module, extra in EXTRA_OF.items():
        wanted = DISTRIBUTION.get(module, module)
        extra_names = {_name(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]}
        assert wanted in extra_names, (module, extra)


def test_import_grader_and_its_cli_load_no_report_or_cluster_module() -> None:
    heavy = tuple(EXTRA_OF)
    probe = (f"import grader, grader.cli, sys\n"
             f"print(sorted(m for m in {heavy!r} if sys.modules.get(m) is not None))")
    out = _run(probe)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_student_self_checks_without_any_extra(tmp_path: Path) -> None:
    from grader.kit.kit import write_kit
    kit = write_kit(RUBRIC, tmp_path / "kit.json", cache=tmp_path / "cache")
    run = _blocking("from grader.cli import main\n"
                    "code = main(['check', sys.argv[1], '--kit', sys.argv[2]])\n"
                    f"print('loaded', sorted(m for m in {tuple(EXTRA_OF)!r} if sys.modules.get(m) is not None))\n"
                    "raise SystemExit(code)")
    out = _run(run, str(CORRECT), str(kit), cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "loaded []" in out.stdout
    assert "Traceback" not in out.stderr


def test_a_report_command_without_its_extra_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    run = _blocking("from grader.cli import main\nraise SystemExit(main(sys.argv[1:]))")
    out = _run(run, "class-report", str(results), "-o", str(tmp_path / "class.html"))
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'puzzle-grader[reports]'" in lines[0], out.stderr
