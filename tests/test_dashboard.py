"""The dashboard's own numbers: students' rows, wrong answers grouped by what they are, pass rates by generator."""

from __future__ import annotations

from dataclasses import dataclass, replace

from grader.report.class_report import case_name, case_rates
from grader.report.dashboard import answer_groups, generator_rates, report_href, student_rows
from grader.store.results import CaseResult, ExerciseResult, SubmissionResult


@dataclass(frozen=True)
class Case(CaseResult):
    mistake: str = ""            # the known-mistake fact of a judged case (a field of newer results)


def result(name: str, cases: list[CaseResult], *, extra: dict | None = None) -> SubmissionResult:
    passed = sum(c.status == "pass" for c in cases)
    exercise = ExerciseResult("move_dir", "Move", float(passed), float(len(cases)), tuple(cases))
    return SubmissionResult(name, f"/{name}.ipynb", "0" * 64, "demo", "1" * 64, "0.1.0", "rlimits", float(passed),
                            float(len(cases)), (exercise,), extra=extra or {})


def case(case_id: str, status: str, got: object = None, mistake: str = "") -> Case:
    return Case(case_id, status, "public", "", call=f"move_dir({case_id})", expected=[1], got=got,
                fraction=1.0 if status == "pass" else 0.0, mistake=mistake)


def test_wrong_answers_group_by_known_mistake_across_cases_else_by_value_on_a_case() -> None:
    results = [
        result("a", [case("move_dir#1", "fail", [2], "transposed"), case("move_dir#2", "fail", [3], "transposed")]),
        result("b", [case("move_dir#1", "fail", [2], "transposed"), case("move_dir#2", "pass")]),
        result("c", [case("move_dir#1", "fail", [9]), case("move_dir#2", "fail", [9])]),
        result("d", [case("move_dir#1", "fail", [9]), case("move_dir#2", "error")]),
        result("e", [case("move_dir#1", "fail", [8]), case("move_dir#2", "pass")]),
    ]
    groups = answer_groups(results)["move_dir"]
    assert [(g.mistake, g.case, g.students, g.cases) for g in groups] == [
        ("transposed", "move_dir#1", ("a", "b"), 3),        # one mistake, whatever case it showed in
        ("", "move_dir#1", ("c", "d"), 2),                   # the same value on the same case
        ("", "move_dir#1", ("e",), 1),
        ("", "move_dir#2", ("c",), 1)]
    assert groups[0].got == [2] and groups[0].expected == [1]   # the example's board


def test_generated_cases_fold_into_their_generator_hardest_first() -> None:
    ids = ["move_dir#1", *(f"move_dir.random_moves[{n}]" for n in range(3)), "move_dir#2"]
    statuses = {"a": ["pass", "pass", "fail", "pass", "fail"], "b": ["pass", "pass", "pass", "pass", "fail"]}
    results = [result(name, [case(i, s) for i, s in zip(ids, row, strict=True)]) for name, row in statuses.items()]
    rows = generator_rates(case_rates(results), case_name)["move_dir"]
    assert [(r.group, r.cases, r.passed, r.runs) for r in rows] == [
        ("#2", 1, 0, 2), ("random_moves", 3, 5, 6), ("#1", 1, 2, 2)]
    assert (rows[1].hardest, rows[1].lowest) == ("move_dir.random_moves[1]", 0.5)


def test_student_rows_carry_flags_and_links_that_survive_odd_names() -> None:
    results = [replace(result("ann marie", [case("move_dir#1", "pass")]), late=True),
               result("bo", [case("move_dir#1", "fail", [2])])]
    rows = student_rows(results, ["move_dir", "gone"], flagged={"bo": (0.9, "class-similarity.html#pair-1")})
    assert [(r.student, r.scores, r.late, r.similarity) for r in rows] == [
        ("ann marie", (1.0, None), True, None), ("bo", (0.0, None), False, 0.9)]
    assert rows[0].report == "students/ann%20marie.html" and rows[1].similarity_link.endswith("#pair-1")
    assert report_href("../x?y#z", "") == "..%2Fx%3Fy%23z.html"
