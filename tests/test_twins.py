"""One student graded under two ids (a renamed file, a second LMS export of the class): the TA is told, naming
both, and every row stays; an LMS group's shared hand-in is no such case."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import RUBRIC, SUBMISSIONS
from testclock import within
from grader.store.twins import same_files, warning_lines

CORRECT = (SUBMISSIONS / "correct.ipynb").read_bytes()
TILES = (SUBMISSIONS / "int-tiles.ipynb").read_bytes()


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=within(600),
                          cwd=cwd, env={**os.environ, "COLUMNS": "200"})


def flat(text: str) -> str:
    return " ".join(text.split())


def test_ids_graded_from_one_files_bytes_from_two_places_are_a_group_and_a_shared_hand_in_is_not() -> None:
    rows = [("alice", "a" * 64, "subs/alice.ipynb", "graded"),
            ("alice_final", "a" * 64, "subs/alice_final.ipynb", "graded"),
            ("cy", "c" * 64, "export:submission_3", "graded"),          # a Gradescope group: one hand-in
            ("eve", "c" * 64, "export:submission_3", "graded"),
            ("x", "e" * 64, "subs/x.ipynb", "unreadable"),              # two empty files: the same bytes
            ("y", "e" * 64, "subs/y.ipynb", "unreadable"),
            ("bob", "b" * 64, "subs/bob.ipynb", "graded")]
    groups = same_files(rows)
    assert [group.students for group in groups] == [("alice", "alice_final")]
    lines = warning_lines(groups)
    assert len(lines) == 2 and "every id keeps its row" in lines[0] and "the LMS's roster" in lines[0]
    assert "alice (subs/alice.ipynb)" in lines[1] and "alice_final (subs/alice_final.ipynb)" in lines[1]
    # The group's file graded again from a second export under a third id: now from two places.
    mixed = same_files(rows + [("cy_dee_3001", "c" * 64, "moodle/Cy Dee_3001/lab.ipynb", "graded")])
    assert [group.students for group in mixed] == [("alice", "alice_final"), ("cy", "cy_dee_3001", "eve")]


def test_a_renamed_file_and_a_second_export_are_named_by_grade_export_and_the_class_report(tmp_path: Path,
                                                                                         grader_cache: Path) -> None:
    """Old code: the class graded again after Alice's file was renamed, and Bob's notebook taken in a second time
    from a Canvas export of the same class, listed alice and alice_final, bob and bobsmith_4242 as four students
    in every export, without a word. Now `grade`, `export` and the class report name each pair and where each was
    graded from; the CSV keeps every row."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.ipynb").write_bytes(CORRECT)
    (subs / "bob.ipynb").write_bytes(TILES)
    first = grader("grade", str(subs), "--rubric", str(RUBRIC), "--out", "out", "--cache", str(grader_cache),
                   cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "same file" not in first.stdout + first.stderr
    (subs / "alice.ipynb").rename(subs / "alice_final.ipynb")
    with zipfile.ZipFile(tmp_path / "canvas.zip", "w") as archive:
        archive.writestr("bobsmith_4242_90001_lab.ipynb", TILES)
    again = grader("grade", str(subs), str(tmp_path / "canvas.zip"), "--rubric", str(RUBRIC), "--out", "out",
                   "--cache", str(grader_cache), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    said = flat(again.stdout + again.stderr)
    assert "warning: 2 groups of ids graded from the same file's bytes" in said
    assert said.count("2 ids graded from the same file (sha256") == 2
    assert "alice (" in said and "alice_final (" in said and "bob (" in said and "bobsmith_4242 (" in said
    rows = (tmp_path / "out" / "gradebook.csv").read_text(encoding="utf-8").splitlines()
    assert sorted(row.split(",")[0] for row in rows[1:]) == ["alice", "alice_final", "bob", "bobsmith_4242"]

    exported = grader("export", "out", "--out", "exported", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert flat(exported.stdout).count("ids graded from the same file (sha256") == 2   # once, not under each output
    page = (tmp_path / "exported" / "class.html").read_text(encoding="utf-8")
    problems = page[page.index('id="problems"'):page.index("</section>", page.index('id="problems"'))]
    assert problems.count("ids graded from the same file (sha256") == 2
    assert problems.count("every id keeps its row") == 1                   # what they may be: said once
    assert "alice_final" in problems and "bobsmith_4242" in problems
