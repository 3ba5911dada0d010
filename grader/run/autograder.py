"""Gradescope autograder: build the zip from a rubric (instructor side) and grade one submission inside Gradescope.

Gradescope unpacks the zip into /autograder/source, runs setup.sh once when it builds the image, then runs
run_autograder for every submission with the student's files in /autograder/submission; whatever
/autograder/results/results.json holds afterwards is the grade. The zip holds:

    setup.sh, run_autograder      the two scripts Gradescope requires at the root
    puzzle-grader.json            manifest: assignment, rubric path, how the grader is shipped
    course/<rubric>.yaml          the rubric, rewritten so its paths point inside the zip
    course/reference/<module>.py  the reference module
    course/support/...            the support folder (if the rubric has one)
    wheels/puzzle_grader-*.whl    the grader itself, built from this checkout (or, if no wheel can be built,
    python/grader/... + requirements.txt   its package source and dependency list)

No example submissions, no template, no other rubric. Every path the scripts use hangs off $AUTOGRADER_ROOT
(default /autograder), so the whole thing can run against a fake tree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path
from typing import Callable

import yaml

import grader
from grader.files import atomic_open
from grader.report.gradescope import failure_results, to_gradescope, write_results
from grader.rubric.schema import Rubric, load_rubric, withheld
from grader.run.wheel import copy_tree, grader_wheel, left_out
from grader.sandbox.supervisor import temp_root

ROOT_ENV = "AUTOGRADER_ROOT"
DEFAULT_ROOT = "/autograder"
MANIFEST = "puzzle-grader.json"
COURSE = "course"
MIN_PYTHON = (3, 11)
ZIP_TIME = (2020, 1, 1, 0, 0, 0)          # fixed entry times: the same inputs give the same archive listing


# ---------------------------------------------------------------------------------------------- building


def repo_root() -> Path | None:
    """The checkout the running grader package comes from, if it is one (a pyproject.toml beside `grader/`)."""
    root = Path(grader.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def _requirements(root: Path | None) -> list[str]:
    """The grader's runtime dependencies: from the checkout's pyproject.toml, else from the installed metadata."""
    if root is not None:
        import tomllib
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
        return [str(d) for d in project.get("dependencies", [])]
    from importlib import metadata
    try:
        return [r for r in (metadata.requires("puzzle-grader") or []) if "extra ==" not in r]
    except metadata.PackageNotFoundError:
        return ["nbformat>=5.9", "nbconvert>=7.0", "pyyaml>=6.0", "rich>=13.0", "numpy>=1.24"]


def _stage_course(rubric: Rubric, stage: Path) -> str:
    """Copy the rubric's reference and support into stage/course and write the rubric pointing at them.

    Returns the rubric's path inside the zip. The rubric is re-serialised (comments are lost); its line
    numbers in error messages are those of the bundled file.
    """
    course = stage / COURSE
    (course / "reference").mkdir(parents=True)
    shutil.copy2(rubric.reference, course / "reference" / rubric.reference.name)
    data = yaml.safe_load(rubric.path.read_text(encoding="utf-8"))
    data["reference"] = f"reference/{rubric.reference.name}"
    if rubric.support is not None and rubric.support.is_dir():
        shutil.copytree(rubric.support, course / "support", ignore=_not_shipped(rubric, rubric.support))
        data["support"] = "support"
    else:
        data.pop("support", None)
    for key in ("template", "submissions"):    # not shipped: the grader needs neither to grade
        data.pop(key, None)
    header = (f"# {rubric.path.name} as bundled for Gradescope by puzzle-grader {grader.__version__};\n"
              f"# paths are relative to this file. Edit the original rubric and rebuild instead of this copy.\n")
    target = course / rubric.path.name
    target.write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120),
                      encoding="utf-8")
    return f"{COURSE}/{rubric.path.name}"


def _not_shipped(rubric: Rubric, support: Path) -> Callable[[str, list[str]], list[str]]:
    """copytree's ignore for the support folder: what never goes into the zip's course/support, where every file is
    a module or a data file the students' code gets (schema.data_files): the rubric or the reference kept there
    (their hidden cases and answers), and a link to a data file outside the folder (copytree copies what a link
    names: a link the checkout's data_files leaves out would become a file of the zip's folder)."""
    inside = os.path.realpath(support)

    def ignore(folder: str, names: list[str]) -> list[str]:
        dropped = []
        for name in names:
            if left_out(name) or withheld(os.path.join(folder, name), inside, (rubric.path, rubric.reference)):
                dropped.append(name)
        return dropped
    return ignore


def _check_bundle(rubric_in_stage: Path) -> None:
    """The bundled rubric must load and its plan build from the staged files alone (a reference that imports
    a sibling module of the checkout fails here, not on Gradescope)."""
    from grader.run.batch import check_course
    check_course(load_rubric(rubric_in_stage))


SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope setup, written by puzzle-grader {version} for {assignment}:
# a Python >= {min_python} virtual environment in $ROOT/venv with the grader bundled in this zip.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SOURCE="$ROOT/source"
VENV="$ROOT/venv"
export DEBIAN_FRONTEND=noninteractive

python_ok() {{ "$1" -c 'import sys; sys.exit(sys.version_info < ({min_tuple}))' 2>/dev/null; }}
PY=""
for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
        PY="$(command -v "$candidate")"; break
    fi
done
if [ -z "$PY" ]; then
    apt-get update
    apt-get install -y python3.11 python3.11-venv
    PY="$(command -v python3.11)"
fi
if ! "$PY" -m venv "$VENV"; then
    apt-get update
    apt-get install -y "python3.$("$PY" -c 'import sys; print(sys.version_info[1])')-venv"
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --upgrade pip
{install}
"$VENV/bin/python" -c 'import grader; print("puzzle-grader", grader.__version__, "installed")'
# The course (rubric, reference, support) is root's alone: without user namespaces student code runs as an
# unused uid, which must read the interpreter ($VENV from a system Python, outside /root) and nothing else.
chmod -R go-rwx "$SOURCE"
chmod -R go+rX "$VENV"
"""

INSTALL_WHEEL = '"$VENV/bin/python" -m pip install "$SOURCE/{wheel}"'
INSTALL_SOURCE = ('# no wheel could be built ({reason}): the package source is in $SOURCE/python\n'
                  '"$VENV/bin/python" -m pip install -r "$SOURCE/requirements.txt"\n'
                  'echo "$SOURCE/python" > "$("$VENV/bin/python" -c \'import sysconfig; '
                  'print(sysconfig.get_paths()["purelib"])\')/puzzle-grader-source.pth"')

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope entry point, written by puzzle-grader {version} for {assignment}: grades the notebook in
# $ROOT/submission into $ROOT/results/results.json. Whatever fails, a valid results.json is written
# (score 0, the reason in its output). $AUTOGRADER_ROOT moves the whole tree (default /autograder);
# $PYTHON chooses the interpreter (default: the venv setup.sh made, else python3).
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SOURCE="$ROOT/source"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
# Course, submission and results readable by root only (student code runs as another uid).
chmod -R go-rwx "$SOURCE" "$ROOT/submission" "$ROOT/results" 2>/dev/null || true
rm -f "$RESULTS"
if [ -n "${{PYTHON:-}}" ]; then
    PY="$PYTHON"
elif [ -x "$ROOT/venv/bin/python" ]; then
    PY="$ROOT/venv/bin/python"
else
    PY="$(command -v python3 || echo python3)"
fi
if [ -d "$SOURCE/python" ]; then
    export PYTHONPATH="$SOURCE/python${{PYTHONPATH:+:$PYTHONPATH}}"
fi
ERRORS="$(mktemp)"
# -P: the working folder is not put on the import path (from the upload's folder, a student's yaml.py ran as root).
"$PY" -P -m grader.run.autograder --root "$ROOT" --rubric "$SOURCE/{rubric}" 2>"$ERRORS"
STATUS=$?
cat "$ERRORS" >&2
if [ "$STATUS" -ne 0 ]; then echo "puzzle-grader exited with status $STATUS" >&2; fi

# The grader normally writes results.json itself, even when grading fails; this covers the grader not starting.
NO_PYTHON='{{"score": 0.0, "output": "The autograder could not start (no working Python). '
NO_PYTHON="$NO_PYTHON"'Please tell your instructor.", "visibility": "visible", "stdout_visibility": "hidden", '
NO_PYTHON="$NO_PYTHON"'"tests": []}}'
"$PY" -I - "$RESULTS" "$ERRORS" <<'PYTHON' || printf '%s\n' "$NO_PYTHON" > "$RESULTS"
import json, sys
results, errors = sys.argv[1], sys.argv[2]
try:
    with open(results, encoding="utf-8") as handle:
        data = json.load(handle)
    if isinstance(data, dict) and isinstance(data.get("score"), (int, float)):
        sys.exit(0)
except (OSError, ValueError):
    pass
try:
    with open(errors, encoding="utf-8", errors="replace") as handle:
        tail = handle.read()[-3000:]
except OSError:
    tail = ""
message = "The autograder could not grade this submission. Please tell your instructor.\n\n" + tail
with open(results, "w", encoding="utf-8") as handle:
    json.dump({{"score": 0.0, "output": message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
               "visibility": "visible", "stdout_visibility": "hidden", "tests": []}}, handle)
PYTHON
rm -f "$ERRORS"
exit 0
"""


def _zip(stage: Path, output_zip: Path) -> None:
    output_zip.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(output_zip, "wb") as stream, zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED) \
            as archive:
        # The stage by the same rule as the copies: the bundle check imports the staged reference, and where
        # Python writes bytecode its __pycache__ is in the stage.
        for path in sorted(p for p in stage.rglob("*")
                           if p.is_file() and not any(left_out(part) for part in p.relative_to(stage).parts)):
            name = path.relative_to(stage).as_posix()
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            executable = name in ("setup.sh", "run_autograder")
            info.external_attr = ((0o700 if executable else 0o600) | 0o100000) << 16   # root's alone
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())


def build_autograder(rubric_path: Path, output_zip: Path, *, wheel: bool = True, cache: Path | None = None,
                     notes: list[str] | None = None) -> Path:
    """Write a Gradescope autograder zip for the rubric and return its path.

    `wheel=False` ships the grader's package source instead of a wheel (what also happens, with the reason in
    the manifest and setup.sh, when no wheel can be built). The wheel is kept in `cache` (default: the grader's
    cache folder) for the next zip of the same source (grader.run.wheel); `notes` gets a line when it was.
    Raises RubricError if the rubric is invalid or the bundled copy does not build a plan.
    """
    rubric = load_rubric(rubric_path)          # the original must be valid before anything is bundled
    output_zip = Path(output_zip)
    root = repo_root()
    with tempfile.TemporaryDirectory(prefix="autograder-", dir=temp_root()) as scratch:
        stage = Path(scratch) / "zip"
        stage.mkdir()
        bundled_rubric = _stage_course(rubric, stage)
        _check_bundle(stage / bundled_rubric)
        package, reason = "source", "asked for the package source" if not wheel else ""
        install = ""
        if wheel:
            if root is None:
                reason = f"the grader at {Path(grader.__file__).parent} is not a checkout with a pyproject.toml"
            else:
                try:
                    built, cached = grader_wheel(root, stage / "wheels", cache)
                    if cached and notes is not None:
                        notes.append(f"the grader's wheel {built.name} is the one built before from the same "
                                     f"source, kept in {cached}")
                    package = "wheel"
                    install = INSTALL_WHEEL.format(wheel=built.relative_to(stage).as_posix())
                except RuntimeError as error:
                    reason = str(error)
                    shutil.rmtree(stage / "wheels", ignore_errors=True)
        if package == "source":
            copy_tree(Path(grader.__file__).parent, stage / "python" / "grader")
            (stage / "requirements.txt").write_text("\n".join(_requirements(root)) + "\n", encoding="utf-8")
            install = INSTALL_SOURCE.format(reason=" ".join(reason.split())[:300].replace("'", ""))
        fields = dict(version=grader.__version__, assignment=rubric.assignment)
        (stage / "setup.sh").write_text(SETUP_SH.format(
            **fields, install=install, min_python=".".join(map(str, MIN_PYTHON)),
            min_tuple=", ".join(map(str, MIN_PYTHON))), encoding="utf-8")
        (stage / "run_autograder").write_text(RUN_AUTOGRADER.format(**fields, rubric=bundled_rubric),
                                              encoding="utf-8")
        manifest = {"assignment": rubric.assignment, "title": rubric.title, "rubric": bundled_rubric,
                    "grader_version": grader.__version__, "package": package, "package_note": reason}
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        _zip(stage, output_zip)
    return output_zip


# ---------------------------------------------------------------------------------------------- running


def find_submission(folder: Path, rubric: Rubric) -> tuple[Path | None, list[Path]]:
    """The file to grade among the student's upload, and the other candidates it left aside: by the rule a
    class is graded by (grader.intake.gather.CHOICE_RULE), so a stray scratch notebook is not graded."""
    from grader.run.batch import choose_in_upload
    return choose_in_upload(folder, rubric)


def run(root: Path, rubric_path: Path) -> dict:
    """Grade the submission under root/submission into root/results/results.json; never raises.

    Returns what was written. Any failure (no notebook, an invalid rubric, a grader bug) still writes a valid
    results.json with score 0 and the reason, and the traceback goes to stderr for the course staff.
    """
    results_path = root / "results" / "results.json"
    try:
        data = _grade_into_results(root, rubric_path)
    except Exception as error:  # noqa: BLE001 - the one place that must turn every failure into a grade file
        traceback.print_exc()
        data = failure_results("The autograder could not grade this submission "
                               f"({type(error).__name__}: {error}). Please tell your instructor.")
    try:
        write_results(data, results_path)
    except Exception as error:  # noqa: BLE001 - e.g. a value JSON cannot hold: still a grade file, saying why
        traceback.print_exc()
        data = failure_results(f"The autograder could not write this submission's results ({type(error).__name__}). "
                               "Please tell your instructor.")
        write_results(data, results_path)
    print(f"results.json: score {data.get('score')}", flush=True)
    return data


def _grade_into_results(root: Path, rubric_path: Path) -> dict:
    from grader.run.batch import grade_one
    rubric = load_rubric(rubric_path)
    submission_dir = root / "submission"
    submission, others = find_submission(submission_dir, rubric)
    if submission is None:
        found = sorted(p.relative_to(submission_dir).as_posix() for p in submission_dir.rglob("*") if p.is_file()) \
            if submission_dir.is_dir() else []
        return failure_results("No notebook (.ipynb) was found in your submission"
                               + (f"; it holds: {', '.join(found[:20])}" if found else "")
                               + ". Upload your notebook file itself.")
    # The expected values go to a private folder of this process (hidden expected values), removed after; a run
    # killed before it could remove it leaves it to the next grader process's clean_leftovers.
    result = grade_one(submission, rubric, hide=(root / "results",))
    data = to_gradescope(result)
    if others:
        from html import escape
        listed = ", ".join(p.relative_to(submission_dir).as_posix() for p in others)
        data["output"] += escape(f"\n\nGraded {submission.relative_to(submission_dir).as_posix()}; "
                                 f"also in your submission, not graded: {listed}.", quote=False)
    print(f"{result.submission}: {result.total:g}/{result.max_total:g} "
          f"(isolation {result.isolation}, {result.seconds:.2f} s)", flush=True)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.run.autograder",
                                     description="Grade the Gradescope submission under ROOT "
                                                 "(what run_autograder runs).")
    parser.add_argument("--root", default=os.environ.get(ROOT_ENV, DEFAULT_ROOT),
                        help=f"the autograder tree (default ${ROOT_ENV} or {DEFAULT_ROOT})")
    parser.add_argument("--rubric", default=None, help="the bundled rubric (default: the one the manifest names)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    rubric = args.rubric
    if rubric is None:
        try:
            rubric = str(root / "source" / json.loads((root / "source" / MANIFEST).read_text("utf-8"))["rubric"])
        except (OSError, ValueError, KeyError) as error:
            rubric = str(root / "source" / COURSE / "missing-manifest.yaml")
            print(f"cannot read the manifest: {error}", file=sys.stderr)
    run(root, Path(rubric))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
