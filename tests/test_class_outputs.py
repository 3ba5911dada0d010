"""Class-level outputs are a registry (grader.report.class_outputs), like the per-student formats: a new one is a
module and one registration, `grader export` offers it, and every output reads the whole class from the gradebook.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from grader.cli import main
from grader.report.class_outputs import OUTPUTS, ClassOutput, Classroom
from grader.run.batch import grade_batch

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
SUBMISSIONS = REPO / "assignments" / "taoistic-search" / "submissions"

ROLL_CALL = '''
from grader.report.class_outputs import Written


def write(classroom, target):
    """One line per student: their name and total, from the whole class."""
    lines = [f"{result.submission} {result.total:g}" for result in classroom.results()]
    target.write_text("\\n".join(lines) + "\\n", encoding="utf-8")
    return Written((target,), len(lines), (f"roll call of {len(lines)}",))
'''


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, grader_cache: Path) -> Path:
    """Two students graded in two batches: outputs must be the whole class, not the last batch."""
    out = tmp_path_factory.mktemp("class-outputs") / "results"
    for name in ("correct", "move-dir-transposed"):
        grade_batch([SUBMISSIONS / f"{name}.ipynb"], RUBRIC, out, jobs=1, cache=grader_cache)
    return out


def test_a_new_class_output_is_one_module_and_one_registration(results: Path, tmp_path: Path, monkeypatch,
                                                               capsys) -> None:
    (tmp_path / "roll_call.py").write_text(ROLL_CALL, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(OUTPUTS, "roll", ClassOutput("roll", "roll.txt", "roll_call:write", "who handed in", False))
    code = main(["export", str(results), "--out", str(tmp_path / "out"), "--format", "roll,csv"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    roll = (tmp_path / "out" / "roll.txt").read_text(encoding="utf-8").split("\n")
    assert sorted(line.split()[0] for line in roll if line) == ["correct", "move-dir-transposed"]
    assert "roll: 1 file of 2 students" in printed and "roll call of 2" in printed
    with (tmp_path / "out" / "gradebook.csv").open(encoding="utf-8") as stream:
        assert sorted(row["student"] for row in csv.DictReader(stream)) == ["correct", "move-dir-transposed"]
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert "roll = who handed in (roll.txt)" in capsys.readouterr().out


def test_an_unregistered_output_is_one_line_and_exit_2(results: Path, tmp_path: Path, capsys) -> None:
    assert main(["export", str(results), "--out", str(tmp_path / "out"), "--format", "csv,bogus"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"--format: no class output 'bogus' (there are {', '.join(OUTPUTS)})"]
    assert not (tmp_path / "out").exists()


def test_the_gradescope_output_is_every_student_of_the_gradebook(results: Path, tmp_path: Path,
                                                                 grader_cache: Path) -> None:
    """What `grade --gradescope` writes after the last batch is what the output writes from the gradebook."""
    written = OUTPUTS["gradescope"].write(Classroom(results), tmp_path / "gradescope")
    assert written.students == 2
    assert sorted(path.name for path in written.paths) == ["correct.json", "move-dir-transposed.json"]
    correct = json.loads((tmp_path / "gradescope" / "correct.json").read_text(encoding="utf-8"))
    assert correct["score"] == correct["extra_data"]["max_score"] > 0
    again = tmp_path / "again"
    grade_batch([SUBMISSIONS / "correct.ipynb"], RUBRIC, results, jobs=1, gradescope=again, cache=grader_cache)
    assert sorted(path.name for path in again.iterdir()) == ["correct.json", "move-dir-transposed.json"]
    assert json.loads((again / "correct.json").read_text(encoding="utf-8")) == correct


def test_the_dashboard_output_writes_the_class_report_its_csv_and_the_students_reports(results: Path,
                                                                                        tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    written = OUTPUTS["dashboard"].write(Classroom(results, similarity=False), tmp_path / "class.html")
    assert written.students == 2
    assert (tmp_path / "class.html").is_file() and (tmp_path / "class.csv").is_file()
    assert sorted(p.name for p in (tmp_path / "students").iterdir()) == [
        "correct.html", "correct.md", "move-dir-transposed.html", "move-dir-transposed.md"]
    assert written.lines[0].startswith("class report of 2 submissions written to ")


def test_a_rerun_with_gradescope_rewrites_only_what_changed(results: Path, tmp_path: Path,
                                                            grader_cache: Path) -> None:
    """A student whose result is the one the file was made from keeps the file (same inode and time); a deleted
    file, an altered one and an overridden student are written again; the folder is what a full export writes."""
    from grader.store import overrides
    results = Path(shutil.copytree(results, tmp_path / "results"))   # the override below is this test's own
    target = tmp_path / "gradescope"
    names = ["correct.json", "move-dir-transposed.json"]

    def state(name: str) -> tuple[int, int]:
        found = (target / name).stat()
        return found.st_ino, found.st_mtime_ns

    def regrade() -> None:
        grade_batch([SUBMISSIONS / "correct.ipynb"], RUBRIC, results, jobs=1, gradescope=target, cache=grader_cache)

    def same_as_a_full_export() -> None:
        full = tmp_path / f"full-{len(list(tmp_path.glob('full-*')))}"
        written = OUTPUTS["gradescope"].write(Classroom(results), full)
        assert written.lines == ()   # a new folder: every file written
        assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in full.iterdir()) == names
        for name in names:
            assert (target / name).read_bytes() == (full / name).read_bytes()

    regrade()
    first = {name: state(name) for name in names}
    csv_file = (results / "gradebook.csv").stat()
    regrade()
    assert {name: state(name) for name in names} == first
    assert (results / "gradebook.csv").stat().st_ino == csv_file.st_ino   # the CSV too: the class is the same
    written = OUTPUTS["gradescope"].write(Classroom(results), target)
    assert written.students == 2 and written.lines == ("0 written, 2 kept (made from the same result and untouched "
                                                       "since)",)
    assert {name: state(name) for name in names} == first
    same_as_a_full_export()

    (target / "correct.json").unlink()
    with (target / "move-dir-transposed.json").open("a", encoding="utf-8") as damaged:
        damaged.write("garbage")
    regrade()
    assert json.loads((target / "move-dir-transposed.json").read_text(encoding="utf-8"))["tests"]
    same_as_a_full_export()

    kept = {name: state(name) for name in names}
    overrides.record(results / "gradebook.sqlite", "move-dir-transposed", "move_dir", points=2.0,
                     reason="convention stated in class", author="ta")
    regrade()
    assert state("correct.json") == kept["correct.json"]
    assert state("move-dir-transposed.json") != kept["move-dir-transposed.json"]
    scored = json.loads((target / "move-dir-transposed.json").read_text(encoding="utf-8"))
    assert scored["extra_data"]["overrides"][0]["exercise"] == "move_dir"
    same_as_a_full_export()
    with (results / "gradebook.csv").open(encoding="utf-8") as stream:
        rows = {row["student"]: row for row in csv.DictReader(stream)}
    assert rows["move-dir-transposed"]["move_dir"] == "2" and "convention stated" in rows["move-dir-transposed"][
        "overrides"]


def test_a_class_report_run_again_writes_only_the_reports_of_students_that_changed(results: Path,
                                                                                   tmp_path: Path) -> None:
    """Every student's report is rendered when the page is made; run again, a report made from the same result (and
    template, and notebook) and untouched since is kept; a deleted one and an overridden student's are written
    again, and the folder is what a fresh class report writes."""
    pytest.importorskip("jinja2")
    from grader.store import overrides
    results = Path(shutil.copytree(results, tmp_path / "results"))
    page = tmp_path / "page" / "class.html"
    students = page.parent / "students"

    def run(target: Path = page) -> dict[str, tuple[int, int]]:
        OUTPUTS["dashboard"].write(Classroom(results, similarity=False), target)
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted((target.parent / "students").iterdir())}

    def same_as_a_fresh_one() -> None:
        fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}" / "class.html"
        run(fresh)
        for name in ("correct.md", "correct.html", "move-dir-transposed.md", "move-dir-transposed.html"):
            assert (students / name).read_bytes() == (fresh.parent / "students" / name).read_bytes(), name
        assert page.read_bytes() == fresh.read_bytes()

    first = run()
    assert run() == first
    same_as_a_fresh_one()
    overrides.record(results / "gradebook.sqlite", "move-dir-transposed", "move_dir", points=2.0,
                     reason="convention stated in class", author="ta")
    again = run()
    assert again["correct.html"] == first["correct.html"] and again["correct.md"] == first["correct.md"]
    assert again["move-dir-transposed.html"] != first["move-dir-transposed.html"]
    assert "convention stated in class" in (students / "move-dir-transposed.md").read_text(encoding="utf-8")
    same_as_a_fresh_one()
    (students / "correct.md").unlink()
    assert "correct.md" in run()
    same_as_a_fresh_one()


def test_report_run_again_writes_only_the_reports_of_students_that_changed(results: Path, tmp_path: Path,
                                                                          capsys) -> None:
    """`grader report` into the same folder: a student's reports made from the same result, untouched since, are
    kept; an overridden student's and a deleted file are written again; the folder is what a fresh run writes."""
    pytest.importorskip("jinja2")
    from grader.store import overrides
    results = Path(shutil.copytree(results, tmp_path / "results"))
    out = tmp_path / "feedback"

    def run(target: Path = out) -> dict[str, tuple[int, int]]:
        assert main(["report", str(results), "--out", str(target)]) == 0
        assert "4 report files written" in capsys.readouterr().out
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(target.iterdir())}

    def same_as_a_fresh_one() -> None:
        fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}"
        run(fresh)
        assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in fresh.iterdir())
        for file in fresh.iterdir():
            assert (out / file.name).read_bytes() == file.read_bytes(), file.name

    first = run()
    assert run() == first
    overrides.record(results / "gradebook.sqlite", "correct", "move_dir", points=1.0, reason="late cell",
                     author="ta")
    again = run()
    assert again["move-dir-transposed.md"] == first["move-dir-transposed.md"]
    assert again["correct.md"] != first["correct.md"]
    same_as_a_fresh_one()
    (out / "move-dir-transposed.html").unlink()
    assert "move-dir-transposed.html" in run()
    same_as_a_fresh_one()


def test_stamps_hold_only_for_the_same_regular_file_and_a_damaged_store_is_ignored(tmp_path: Path) -> None:
    """grader.report.stamps: a stamp holds for the file as it was written from the same thing; not for another
    thing, a file changed or replaced since, or a symbolic link put in its place; a damaged store is no stamp."""
    from grader.report.stamps import STAMPS, stamped
    results, out = tmp_path / "results", tmp_path / "out"
    results.mkdir()
    out.mkdir()
    target = out / "amy.json"
    target.write_text("one", encoding="utf-8")
    with stamped(results, "demo", out) as stamps:
        stamps.wrote(target, "result 1")
    with stamped(results, "demo", out) as stamps:
        assert stamps.holds(target, "result 1")
        assert not stamps.holds(target, "result 2") and not stamps.holds(target, None)
        assert not stamps.holds(out / "bob.json", "result 1")
    target.write_text("two", encoding="utf-8")          # same size, written since
    with stamped(results, "demo", out) as stamps:
        assert not stamps.holds(target, "result 1")
        stamps.wrote(target, "result 1")
    target.rename(out / "elsewhere.json")
    target.symlink_to(out / "elsewhere.json")           # the same bytes, but not the file that was written
    with stamped(results, "demo", out) as stamps:
        assert not stamps.holds(target, "result 1")
    target.unlink()
    (out / "elsewhere.json").rename(target)             # back, but another inode's stamp would not hold ...
    with stamped(results, "demo", out) as stamps:
        assert stamps.holds(target, "result 1")         # ... rename keeps the inode, time and size: it is that file
    for damaged in ("{", "[]", '{"version": 1, "demo ' + str(out.resolve()) + '": {"amy.json": [1, 2]}}'):
        (results / STAMPS).write_text(damaged, encoding="utf-8")
        with stamped(results, "demo", out) as stamps:
            assert not stamps.holds(target, "result 1")
