"""The grader's own wheel, for an autograder zip: built by pip from a copy of the checkout, and kept sealed in
the grader's cache under the digest of what it is built from, so the next zip of the same source takes it
from there instead of a `pip wheel` (an isolated build installs its backend first: ~9 s wall).

What the zip holds and how it runs do not change: the cached wheel is the one pip built from the same files
(the build reads nothing else of the checkout). Sealed because a wheel is code every Gradescope submission
runs: a file in the cache that does not verify under the cache folder's key (grader.plan.sealed) is not used.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.plan.sealed import default_cache, folder_key, read_sealed, write_sealed
from grader.sandbox.supervisor import temp_root

SKIPPED_NAMES = ("__pycache__",)
WHEEL_NAME = re.compile(r"^puzzle_grader-[A-Za-z0-9_.+!-]+\.whl$")


def left_out(name: str) -> bool:
    """A file or folder name that never goes into the zip: bytecode and hidden files."""
    return name in SKIPPED_NAMES or name.startswith(".") or name.endswith((".pyc", ".pyo"))


def copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, ignore=lambda _dir, names: [n for n in names if left_out(n)])


def _top_files(root: Path) -> list[Path]:
    """The checkout's top-level files a wheel is built from (pyproject.toml, README.md for the metadata, LICENSE
    ...): every one but the hidden ones."""
    return sorted(item for item in root.iterdir() if item.is_file() and not item.name.startswith("."))


def _project_files(root: Path) -> list[Path]:
    """What a wheel is built from: the checkout's top-level files and the grader package, as build_wheel copies
    them."""
    files = _top_files(root)
    for folder, names, found in os.walk(root / "grader"):
        names[:] = sorted(n for n in names if not left_out(n))
        files += sorted(Path(folder) / n for n in found if not left_out(n))
    return files


def source_digest(root: Path) -> str:
    """The sha256 of every file a wheel of `root` is built from, with its path: a change anywhere is a new wheel."""
    digest = hashlib.sha256()
    for path in _project_files(root):
        body = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\0{len(body)}\0".encode("utf-8", "surrogateescape"))
        digest.update(body)
    return digest.hexdigest()


def grader_wheel(root: Path, into: Path, cache: Path | None = None) -> tuple[Path, str]:
    """The wheel of `root` in `into`, and where it came from: "" when pip built it now, else the cache file it
    was taken from. A cache that cannot be used (no key, not writable) only means building every time."""
    folder = (cache if cache is not None else default_cache()) / "wheels"
    digest = source_digest(root)
    key = folder_key(folder).key
    if key is not None:
        for kept in sorted(folder.glob(f"{digest}-*.whl")):
            body, _problem = read_sealed(key, kept)
            name = kept.name[len(digest) + 1:]
            if body is not None and WHEEL_NAME.match(name):
                into.mkdir(parents=True, exist_ok=True)
                (into / name).write_bytes(body)
                return into / name, str(kept)
    built = build_wheel(root, into)
    if key is not None:
        try:
            write_sealed(key, folder / f"{digest}-{built.name}", built.read_bytes())
        except OSError:
            pass      # a read-only or full cache: the next zip builds its wheel again
    return built, ""


def build_wheel(root: Path, into: Path) -> Path:
    """`pip wheel --no-deps` of the project at `root`, built from a copy so the checkout gets no build/ folder.

    The isolated build fetches the build backend from the package index; without one, a second try uses the
    backend installed here. Raises RuntimeError with pip's last lines when no wheel comes out.
    """
    into.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="wheel-", dir=temp_root()) as scratch:
        for attempt, extra in enumerate(([], ["--no-build-isolation"])):
            project = Path(scratch) / f"project{attempt}"
            project.mkdir()
            for item in _top_files(root):
                shutil.copy2(item, project / item.name)
            copy_tree(root / "grader", project / "grader")
            command = [sys.executable, "-m", "pip", "wheel", "--no-deps", *extra, "-w", str(into), str(project)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
            except (OSError, subprocess.TimeoutExpired) as error:
                failures.append(f"pip wheel {' '.join(extra)}did not run: {error}")
                continue
            wheels = sorted(into.glob("puzzle_grader-*.whl"))
            if done.returncode == 0 and wheels:
                return wheels[-1]
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            tried = " ".join(["pip wheel", *extra])
            failures.append(f"{tried} failed (exit {done.returncode}): {tail}")
    raise RuntimeError("; ".join(failures))
