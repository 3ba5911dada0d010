"""The README documents the rubric language: every key the parser accepts appears in its reference tables."""

from dataclasses import fields
from pathlib import Path

import pytest

from grader.checks import CHECKS
from grader.rubric import CASE_KEYS, EXERCISE_KEYS, EXTRACTION_KEYS, RUBRIC_KEYS, Limits

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def table_keys(heading: str) -> set[str]:
    """Keys in the first column of the table that follows a heading line."""
    start = README.index(heading)
    keys = set()
    for line in README[start:].splitlines()[1:]:
        if line.startswith("| `"):
            keys.add(line.split("`")[1])
        elif keys and not line.startswith("|"):
            break
    return keys


@pytest.mark.parametrize("heading, keys", [
    ("Top level:", RUBRIC_KEYS), ("Exercise:", EXERCISE_KEYS), ("Case:", CASE_KEYS),
    ("Limits (rubric-wide", {f.name: "" for f in fields(Limits)}),
])
def test_readme_documents_every_rubric_key(heading, keys):
    assert table_keys(heading) == set(keys)


def test_readme_documents_extraction_keys_and_checks():
    for key in EXTRACTION_KEYS:
        assert f"`{key}`" in README
    for name in CHECKS:
        assert f"| `{name}` |" in README


def test_readme_starts_with_the_two_setup_commands():
    lines = README.splitlines()
    assert lines[0] == "```bash"
    assert "grader grade assignments/taoistic-search/submissions" in lines[1]
    assert "pytest" in lines[2]
    assert lines[3] == "```"


def test_ci_runs_the_readme_test_command():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    command = README.splitlines()[2].replace("pip install -e", "pip install -q -e")
    assert command in ci
