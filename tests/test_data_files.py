"""The course's data files (the support folder's words.txt) reach the student's code as in Jupyter, where the file sits
beside the notebook: at load and in every case, afresh each case, in every isolation mode and in the kit; never a
module, the rubric or the reference, and bounded. On the old code a notebook reading words.txt lost every point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import codec
from grader.kit.kit import build_kit, kit_from_dict
from grader.plan.given import support_data
from grader.rubric.schema import RubricError, load_rubric
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from sandbox_run import statement
from testclock import within

REPO = Path(__file__).resolve().parents[1]
LADDER = REPO / "tests" / "fixtures" / "word-ladder"
NOTEBOOKS = ("reads_words_beside_it.ipynb", "tidies_the_dictionary.ipynb")
GRADE = ("import json, os, sys\nfrom grader.judge.options import Options\nfrom grader.run.batch import grade_one\n"
         "options = Options(allow_root_sandbox=bool(os.environ.get('ROOT_SANDBOX')))\n"
         "for path in sys.argv[2:]:\n"
         "    result = grade_one(path, sys.argv[1], options=options)\n"
         "    print(json.dumps({'total': result.total, 'warnings': [w.text for w in result.warnings],\n"
         "                      'scores': {e.id: e.score for e in result.exercises}}))\n")


def _grade(*notebooks: str, environment: dict[str, str] | None = None,
           **user: object) -> list[dict]:
    """Each notebook's total and scores, graded by a grader process of its own (in `environment`)."""
    done = subprocess.run([sys.executable, "-c", GRADE, str(LADDER / "ladder.yaml"),
                           *(str(LADDER / name) for name in notebooks)],
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(REPO),
                               "PYTHONDONTWRITEBYTECODE": "1", **(environment or {})},
                          cwd="/", capture_output=True, text=True, timeout=within(400), **user)  # type: ignore[call-overload]
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("isolation", ["namespaces", "rlimits"])
def test_a_notebook_reading_the_course_dictionary_beside_it_gets_every_point(isolation: str) -> None:
    """Both notebooks read words.txt at load (WORDS) and count_words opens it at each call; the second deletes it
    and puts a folder in its place after counting, so its next case (the same exercise's) finds the course's
    file again only if every case gets it afresh. Old code: FileNotFoundError at load (WORDS unavailable) and at
    each case: 0 of 2 exercises."""
    if isolation == "namespaces":
        results = _grade(*NOTEBOOKS)
    else:   # a grader that is not root (root refuses rlimits mode): the student runs as its uid (hostile_grader.py)
        uid = 0x3FFF0000 + (os.getpid() + 7) % 0xFFFF
        user = {"user": uid, "group": uid, "extra_groups": []} if os.geteuid() == 0 else {}
        environment = {"PUZZLE_GRADER_ISOLATION": "rlimits"}
        try:
            subprocess.run([sys.executable, "-c", "import grader.sandbox.process"], cwd="/", check=True,
                           capture_output=True, timeout=within(120), env={"PYTHONPATH": str(REPO)}, **user)
        except (OSError, subprocess.SubprocessError):   # our interpreter is root's alone: a root grader, told to
            user, environment = {}, {**environment, "ROOT_SANDBOX": "1"}   # run student code as root (tests only)
        results = _grade(*NOTEBOOKS, environment=environment, **user)
    assert len(results) == len(NOTEBOOKS)
    for name, result in zip(NOTEBOOKS, results, strict=True):
        assert result["scores"] == {"neighbours": 1.0, "count_words": 1.0}, (name, result)
        assert not any("FileNotFoundError" in text for text in result["warnings"]), (name, result)


def test_the_kit_carries_the_data_files_and_the_self_check_finds_them(tmp_path: Path) -> None:
    """`grader check --kit`: the student's self-check predicts the grade (old code: every public case failed
    with FileNotFoundError)."""
    kit = tmp_path / "kit.json"
    made = subprocess.run([sys.executable, "-m", "grader", "kit", str(LADDER / "ladder.yaml"), "-o", str(kit)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=within(300),
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert made.returncode == 0, made.stdout + made.stderr
    for name in NOTEBOOKS:
        shutil.copy(LADDER / name, tmp_path / name)
        checked = subprocess.run([sys.executable, "-m", "grader", "check", "--kit", str(kit), name], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=within(300),
                                 env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
                                      "COLUMNS": "160"})
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "FileNotFoundError" not in checked.stdout, checked.stdout


def test_only_data_files_travel_never_a_module_the_rubric_or_the_reference(tmp_path: Path) -> None:
    """The support folder's modules go as sources (support_texts), and what holds the answers never goes: a rubric
    kept in the support folder (its hidden cases), a hard link to the reference under a data file's name (refused),
    a link out of the folder (left out)."""
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    support = course / "support"
    (support / "helpers.py").write_text("X = 1\n")
    (support / "maze").mkdir()
    (support / "maze" / "small.txt").write_text("#.#\n")
    (course / "teacher-notes.txt").write_text("the hidden cases' answers\n")
    (support / "outside.txt").symlink_to(course / "teacher-notes.txt")
    shutil.move(course / "ladder.yaml", support / "ladder.yaml")
    rubric_text = (support / "ladder.yaml").read_text()
    (support / "ladder.yaml").write_text(rubric_text.replace("reference: ladder_reference.py",
                                                             "reference: ../ladder_reference.py")
                                                    .replace("support: support", "support: ."))
    rubric = load_rubric(support / "ladder.yaml")
    data = support_data(rubric)
    assert sorted(data) == ["maze/small.txt", "words.txt"]
    assert data["words.txt"] == (LADDER / "support" / "words.txt").read_bytes()
    kit = build_kit(support / "ladder.yaml", cache=tmp_path / "cache")
    assert kit_from_dict(kit).data == dict(data)

    os.link(course / "ladder_reference.py", support / "answers.txt")
    with pytest.raises(RubricError, match="answers.txt is the reference"):
        load_rubric(support / "ladder.yaml")


def test_too_many_or_too_big_data_files_are_a_rubric_error_naming_the_file(tmp_path: Path) -> None:
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    (course / "support" / "zz-big.bin").write_bytes(b"\0" * (33 * 1024 * 1024 // 2))
    with open(course / "ladder.yaml", "a") as rubric:
        rubric.write("limits:\n  disk_mb: 32\n")
    with pytest.raises(RubricError, match=r"support: zz-big.bin brings the data files to \d+ bytes, past the "
                                          r"8388608"):
        load_rubric(course / "ladder.yaml")
    (course / "support" / "zz-big.bin").unlink()
    for index in range(70):
        (course / "support" / f"level-{index:02}.txt").write_text(str(index))
    with pytest.raises(RubricError, match="support: level-64.txt is data file 65, past the 64 each student"):
        load_rubric(course / "ladder.yaml")


def test_a_kit_data_file_outside_the_working_folder_is_refused(tmp_path: Path) -> None:
    kit = build_kit(LADDER / "ladder.yaml", cache=tmp_path / "cache")
    assert set(kit["data"]) == {"words.txt"}
    for bad in ("../words.txt", "/etc/words", "a//b", "./x"):
        with pytest.raises(Exception, match="not a path inside the working folder"):
            kit_from_dict({**kit, "data": {bad: ""}})


def test_the_gradescope_zip_ships_the_same_data_files_and_never_the_rubric_kept_in_the_support_folder(
        tmp_path: Path) -> None:
    """The zip's course/support is what the students' code gets there: copytree copied a rubric kept in the support
    folder (hidden cases) and the file a link out of the folder names, both then data files of the zip's folder."""
    from grader.run.autograder import _stage_course
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    support = course / "support"
    (course / "teacher-notes.txt").write_text("the hidden cases' answers\n")
    (support / "outside.txt").symlink_to(course / "teacher-notes.txt")
    (support / "dictionary.txt").symlink_to(support / "words.txt")
    text = (course / "ladder.yaml").read_text()
    (support / "ladder.yaml").write_text(text.replace("reference: ladder_reference.py",
                                                      "reference: ../ladder_reference.py").replace("support: support",
                                                                                                  "support: ."))
    rubric = load_rubric(support / "ladder.yaml")
    stage = tmp_path / "stage"
    bundled = load_rubric(stage / _stage_course(rubric, stage))
    assert sorted(support_data(rubric)) == ["dictionary.txt", "words.txt"]
    assert dict(support_data(bundled)) == dict(support_data(rubric))
    shipped = {path.name for path in (stage / "course" / "support").iterdir()}
    assert "ladder.yaml" not in shipped and "outside.txt" not in shipped


def test_a_support_file_that_cannot_be_compared_is_withheld_by_the_zip_as_by_the_checkout(tmp_path: Path) -> None:
    """A link to nothing (a data file renamed after the link was made) or a loop of links: the checkout's data_files
    left them out, but the zip's copy took them in, and copytree failed on them with a traceback for the TA."""
    from grader.run.autograder import _stage_course
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    support = course / "support"
    (support / "old-words.txt").symlink_to(support / "renamed.txt")
    (support / "loop.txt").symlink_to(support / "loop.txt")
    rubric = load_rubric(course / "ladder.yaml")
    stage = tmp_path / "stage"
    bundled = load_rubric(stage / _stage_course(rubric, stage))
    assert set(support_data(rubric)) == set(support_data(bundled)) == {"words.txt"}
    shipped = {path.name for path in (stage / "course" / "support").iterdir()}
    assert "old-words.txt" not in shipped and "loop.txt" not in shipped and "words.txt" in shipped


# A case that rewrites the data files and takes the write bit off their folders, the working folder's own included.
LOCKED = """
import os
def spoil():
    open("words.txt", "w").write("mine")
    open("sub/more.txt", "w").write("mine")
    os.chmod("sub", 0o500)
    os.chmod(".", 0o500)
    return open("words.txt").read()
def read():
    return [open("words.txt").read(), open("sub/more.txt").read()]
"""


def test_a_case_that_locks_its_folder_still_leaves_the_next_case_the_course_files() -> None:
    """The runtime puts the data files back before each case as the student's uid: a case that ran
    os.chmod('.', 0o500) (and on a subfolder) kept its rewritten words.txt for every later case of the exercise."""
    data = {"words.txt": b"cold\ncord\n", "sub/more.txt": b"more"}
    with Sandbox([statement(LOCKED, kind="other")], {}, ProcessLimits(), data=data) as sandbox:
        sandbox.load()
        outcomes = sandbox.run_exercise([CaseRequest(id=f"c#{n}", code=code, timeout=10.0)
                                         for n, code in enumerate(("spoil()", "read()"))],
                                        (), lambda *args: None, time.monotonic() + within(120))
    assert [(o.status, codec.decode(o.value) if o.status == "ok" else o.error) for o in outcomes] == \
        [("ok", "mine"), ("ok", ["cold\ncord\n", "more"])]


# Cases that keep a writable shared mapping of words.txt and write through it in a later case: on tmpfs such a write
# leaves the file's times as they were, so only its bytes tell that it changed.
MAPPED = """
import mmap, os
held = []
def inode():
    return os.stat("words.txt").st_ino
def map_it():
    held.append(mmap.mmap(os.open("words.txt", os.O_RDWR), 0))
    return held[0][:4]
def write_through_it():
    held[0][:4] = b"MINE"
    return open("words.txt", "rb").read()
def read():
    return open("words.txt", "rb").read()
"""


def test_an_unchanged_data_file_is_kept_and_one_changed_through_a_mapping_is_put_back() -> None:
    """restore_data wrote every data file afresh before every case (3 ms a case at the 8 MB bound): the file a case
    left as it came is now kept (the same inode in the next case), and one whose bytes a case changed, even through
    a mapping made in an earlier case, which leaves the file's times as they were, is written again."""
    data = {"words.txt": b"cold\ncord\n"}
    with Sandbox([statement(MAPPED, kind="other")], {}, ProcessLimits(), data=data) as sandbox:
        sandbox.load()
        outcomes = sandbox.run_exercise([CaseRequest(id=f"c#{n}", code=code, timeout=10.0) for n, code in
                                         enumerate(("inode()", "inode()", "map_it()", "write_through_it()", "read()"))],
                                        (), lambda *args: None, time.monotonic() + within(120))
    found = [(o.status, codec.decode(o.value) if o.status == "ok" else o.error) for o in outcomes]
    assert found[0] == found[1] and found[0][0] == "ok", found
    assert found[2:] == [("ok", b"cold"), ("ok", b"MINE\ncord\n"), ("ok", b"cold\ncord\n")], found


def test_a_worker_that_cannot_reach_the_support_folder_says_so_rather_than_grade_without_it(tmp_path: Path) -> None:
    """A Dask worker on another machine read an absent support folder as empty (is_dir False): every student's
    code then ran without the course's modules and words.txt, and lost the points (a zero that is the machine's)."""
    from grader.run.executor import Setup, WorkerProblem, _plan
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    rubric = load_rubric(course / "ladder.yaml")
    shutil.rmtree(course / "support")
    with pytest.raises(WorkerProblem, match="cannot read the course's support folder .*support \\(no such file\\)"):
        _plan(Setup(rubric, str(tmp_path / "cache")))


def test_a_results_folder_or_cache_kept_in_the_support_folder_never_reaches_the_child_or_the_kit(
        tmp_path: Path) -> None:
    """A TA's --out or --cache inside the support folder: its files (other students' results, expected values) are
    hidden from the child as folders (hidden_folders), but the data files went as bytes, past every mount; the
    kit shipped the expected-value cache as data files to every student."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    results = course / "support" / "results"
    results.mkdir()
    (results / "ada.json").write_text('{"total": 2}')
    notebook = nbformat.read(LADDER / "reads_words_beside_it.ipynb", as_version=4)
    notebook.cells.append(new_code_cell(
        "import os\n\ndef count_words(length):\n    seen = sum(len(files) for _, _, files in os.walk('.'))\n"
        "    with open('words.txt') as file:\n"
        "        return sum(1 for w in file.read().split() if len(w) == length) + seen - 1"))
    nbformat.write(new_notebook(cells=notebook.cells), tmp_path / "lists.ipynb")
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                           "from grader.run.batch import grade_one\n"
                           "r = grade_one(sys.argv[1], sys.argv[2], hide=[Path(sys.argv[3])])\n"
                           "print({e.id: e.score for e in r.exercises})",
                           str(tmp_path / "lists.ipynb"), str(course / "ladder.yaml"), str(results)],
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(REPO)}, cwd="/",
                          capture_output=True, text=True, timeout=within(300))
    assert done.stdout.strip() == "{'neighbours': 1.0, 'count_words': 1.0}", done.stdout + done.stderr[-2000:]

    kit = build_kit(course / "ladder.yaml", cache=course / "support" / "cache")
    assert any((course / "support" / "cache").rglob("*"))
    assert set(kit["data"]) == {"words.txt", "results/ada.json"}


def test_a_file_the_notebook_wrote_while_loading_is_missing_in_a_case_and_the_check_says_why(tmp_path: Path) -> None:
    """Session 21 (persona): a notebook's top level wrote cache/words.txt and count_words read it, as Jupyter allows;
    the case's working folder holds only the course's data files, and the self-check said a bare
    'FileNotFoundError: ... cache/words.txt' with nothing about why the file it made was gone."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    kit = tmp_path / "kit.json"
    made = subprocess.run([sys.executable, "-m", "grader", "kit", str(LADDER / "ladder.yaml"), "-o", str(kit)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=within(300),
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert made.returncode == 0, made.stdout + made.stderr
    cells = [new_code_cell("import os\nos.makedirs('cache', exist_ok=True)\n"
                           "with open('cache/words.txt', 'w') as out:\n    out.write(open('words.txt').read())"),
             new_code_cell("def count_words(length):\n    with open('cache/words.txt') as file:\n"
                           "        return sum(1 for w in file.read().split() if len(w) == length)")]
    nbformat.write(new_notebook(cells=cells), tmp_path / "cached.ipynb")
    checked = subprocess.run([sys.executable, "-m", "grader", "check", "--kit", str(kit), "cached.ipynb"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=within(300),
                             env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
                                  "COLUMNS": "400"})
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FileNotFoundError" in checked.stdout, checked.stdout
    assert "a file the notebook wrote while it loaded, or in another exercise, is not there" in checked.stdout, \
        checked.stdout


def test_a_results_folder_or_cache_the_grader_wrote_in_the_support_folder_is_no_data_file_anywhere(
        tmp_path: Path) -> None:
    """`grade --out support/results`, a --cache or a --gradebook there: the grading hid the first two by path (its
    own --out and --cache only), but the kit took their files as data (other students' results, the sealed expected
    values) and the Gradescope zip copied them into its support folder, whose own load made them data files (the
    gradebook was a data file everywhere). Old code: both lists held results/ada.json and cache/plan.sealed."""
    from grader.intake.gather import RESULTS_MARK
    from grader.plan.sealed import KEY_FILE
    from grader.rubric.schema import data_files
    from grader.run.autograder import _not_shipped
    course = tmp_path / "course"
    shutil.copytree(LADDER, course)
    support = course / "support"
    for folder, mark, name in (("results", RESULTS_MARK, "ada.json"), ("deep/cache", KEY_FILE, "plan.sealed")):
        (support / folder / "inner").mkdir(parents=True)
        (support / folder / mark).write_text("{}")
        (support / folder / name).write_text('{"total": 2}')
        (support / folder / "inner" / name).write_text('{"total": 2}')
    from grader.store.gradebook import Gradebook
    Gradebook(support / "class.sqlite").close()     # `grade --gradebook support/class.sqlite`
    (support / "class.sqlite-wal").write_bytes(b"")
    rubric = load_rubric(course / "ladder.yaml")
    names = {path.relative_to(support).as_posix() for path in data_files(support, (rubric.path, rubric.reference))}
    assert names == {"words.txt"}
    assert set(support_data(rubric)) == {"words.txt"}
    shutil.copytree(support, tmp_path / "zip-support", ignore=_not_shipped(rubric, support))
    shipped = {path.relative_to(tmp_path / "zip-support").as_posix() for path in (tmp_path / "zip-support").rglob("*")
               if path.is_file()}
    assert not any(word in name for name in shipped for word in ("results", "cache", "class")), shipped
    assert "words.txt" in shipped


def test_a_hidden_folder_named_from_the_working_folder_still_hides_its_data_files(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """`grader kit R -o kit.json --cache support/cache`: the kit hides its own cache by the path it was given, and a
    relative one was compared with the support folder's resolved path, so the cache's files went out as data."""
    from grader.plan.given import visible_data
    support = tmp_path / "support"
    (support / "cache").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    data = {"words.txt": b"a", "cache/plan.sealed": b"the expected values"}
    assert sorted(visible_data(data, support, [Path("support/cache")])) == ["words.txt"]

