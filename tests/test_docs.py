"""The README documents the rubric language: every key the parser accepts appears in its reference tables."""

from dataclasses import fields
from pathlib import Path

import pytest

from grader.checks.registry import CHECKS
from grader.rubric.schema import CASE_KEYS, EXERCISE_KEYS, EXTRACTION_KEYS, RUBRIC_KEYS, Limits

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
    ("\nTop level:", RUBRIC_KEYS), ("Exercise:", EXERCISE_KEYS), ("Case:", CASE_KEYS),
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


def test_ci_runs_the_readme_test_command_after_the_linters():
    """CI is the README's second command: its install, then ruff and mypy, then its tests, in that order."""
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    install, tests = README.splitlines()[2].rsplit(" && ", 1)
    steps = [install.replace("pip install -e", "pip install -q -e"), ".venv/bin/ruff check .", ".venv/bin/mypy", tests]
    where = [ci.find(step) for step in steps]
    assert -1 not in where and where == sorted(where), dict(zip(steps, where, strict=True))


def test_readme_documents_the_check_author_api():
    """What a check receives (parameters, NDArray and Opaque fields) and may return, as the code has it."""
    from dataclasses import fields as dataclass_fields

    from grader.checks.registry import CHECK_PARAMETERS, CheckAnswer, Verdict, reference_check
    from grader.codec import NDArray, Opaque
    section = README[README.index("### Writing a check function"):]
    documented = {}
    for line in section.splitlines()[1:]:
        if line.startswith("| `") and line.split("`")[1] in CHECK_PARAMETERS:
            documented[line.split("`")[1]] = line.split("|")[2].strip()
    assert documented == CHECK_PARAMETERS
    for cls in (NDArray, Opaque):
        assert f"`{cls.__name__}`" in section
        for field in dataclass_fields(cls):
            assert f"`{field.name}`" in section, (cls.__name__, field.name)
    assert f"Verdict({', '.join(f.name for f in dataclass_fields(Verdict))[:6]}" in section
    # Every documented return gives its verdict; anything else is the rubric's error.
    from grader.checks.registry import CheckContext, CheckError
    from grader import codec
    context = CheckContext(expected=codec.encode(1), got=codec.encode(1))
    no = "rejected by the check <lambda>"     # a failing verdict's cause, unless the check names its own
    for answer, verdict in [(True, Verdict(True, 1.0, "")), (0.5, Verdict(False, 0.5, "", no)),
                            ((False, "why"), Verdict(False, 0.0, "why", no)),
                            ((0.25, "why"), Verdict(False, 0.25, "why", no)),
                            (Verdict(True, 1.0, "ok"), Verdict(True, 1.0, "ok")),
                            (Verdict(False, 0.0, "ok", "moved twice"), Verdict(False, 0.0, "ok", "moved twice"))]:
        assert reference_check(lambda got, answer=answer: answer)(context) == verdict
    with pytest.raises(CheckError):
        reference_check(lambda got: "yes")(context)
    seen = {}
    reference_check(lambda **given: seen.update(given) or True)(context)
    assert set(seen) == set(CHECK_PARAMETERS)
    assert "Union[bool, float, tuple[bool, str], tuple[float, str], grader.checks.registry.Verdict]" in str(CheckAnswer)

def test_readme_documents_the_master_notebook_markers():
    from grader.authoring import assign
    section = README[README.index("### From one master notebook"):]
    for marker in ("# BEGIN SOLUTION", "# END SOLUTION", "# REFERENCE ONLY", "# TEMPLATE ONLY", "# tests",
                   "# rubric"):
        assert marker in section
    assert assign.BEGIN.match("    # BEGIN SOLUTION") and assign.END.match("# END SOLUTION")
