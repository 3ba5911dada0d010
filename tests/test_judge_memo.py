"""The judge checks a class's identical answers once per plan: the verdict is a function of the case and the
answer, and the rest of a case's result (its time, output, traceback) stays each submission's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader import codec
from grader.judge import grading
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.store import results
from grader.sandbox.process import Outcome

MINI = Path(__file__).parent / "fixtures" / "rubrics" / "mini.yaml"


@pytest.fixture
def solve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The mini rubric's path-checked exercise, its one case, and a count of the checks the judge runs."""
    plan = build_plan(load_rubric(MINI), tmp_path)
    exercise = next(e for e in plan.rubric.exercises if e.id == "solve")
    case = plan.cases["solve"][0]
    calls: list[object] = []
    resolve = grading.resolve_check

    def counted(name, reference):
        check = resolve(name, reference)

        def run(context):
            calls.append(context.got)
            return check(context)
        return run
    monkeypatch.setattr(grading, "resolve_check", counted)
    return plan, exercise, case, calls


def _answer(case_id: str, value, *, seconds: float = 0.01, output: str = "") -> Outcome:
    return Outcome(case_id, "ok", value=value, seconds=seconds, output=output)


def test_identical_answers_are_checked_once_and_keep_their_own_output(solve):
    plan, exercise, case, calls = solve
    path = plan.expected[case.id].value
    first = grading.judge(plan, exercise, case, _answer(case.id, path, seconds=0.5, output="one\n"))
    second = grading.judge(plan, exercise, case, _answer(case.id, json.loads(json.dumps(path)),
                                                         seconds=0.25, output="two\n"))
    assert len(calls) == 1
    assert first.status == second.status == "pass"
    assert (second.message, second.fraction, second.got) == (first.message, first.fraction, first.got)
    assert (first.output, second.output) == ("one\n", "two\n")
    assert (first.seconds, second.seconds) == (0.5, 0.25)


def test_a_checked_right_answer_again_is_made_from_its_template_as_the_full_path_makes_it(solve):
    """A path check's second answer of the expected wire comes from the template the first one's verdict left
    (sized where it is made, results.sized_case): every field as the full path makes it, in the same order, but
    its own time, output and traceback."""
    plan, exercise, case, calls = solve
    path = plan.expected[case.id].value
    grading.judge(plan, exercise, case, _answer(case.id, path, seconds=0.5, output="one\n"))
    outcome = Outcome(case.id, "ok", value=json.loads(json.dumps(path)), seconds=0.25, output="two\n",
                      cpu_seconds=0.125, error={"traceback": "a warning's"})
    second = grading.judge(plan, exercise, case, outcome)
    full = grading._without_shown_inputs(grading._judge(plan, exercise, case, outcome))
    assert results._known_size(second) is not None and results._known_size(full) is None
    assert list(second.__dict__.items()) == list(full.__dict__.items())
    assert second.path_answer and (second.output, second.cpu_seconds, second.traceback) == ("two\n", 0.125,
                                                                                          "a warning's")
    assert len(calls) == 1
    assert results.bound_case(second) is second


def test_an_answer_with_probes_or_another_value_is_judged_in_full(solve):
    plan, exercise, case, calls = solve
    path = plan.expected[case.id].value
    grading.judge(plan, exercise, case, _answer(case.id, path))
    probed = Outcome(case.id, "ok", value=path, probes={"p": {"value": 1}})
    shorter = codec.encode(codec.decode(path)[:-1])
    for outcome in (probed, _answer(case.id, shorter)):
        judged = grading.judge(plan, exercise, case, outcome)
        assert results._known_size(judged) is None
        again = grading._judge(plan, exercise, case, outcome)
        assert grading._without_shown_inputs(judged) == grading._without_shown_inputs(again)
    assert len(calls) == 3


def test_a_different_answer_is_checked_and_its_verdict_kept_for_the_next(solve):
    plan, exercise, case, calls = solve
    path = plan.expected[case.id].value
    wrong = codec.encode([codec.decode(path)[0]])          # the start alone: not a path to the goal
    first = grading.judge(plan, exercise, case, _answer(case.id, path))
    failed = grading.judge(plan, exercise, case, _answer(case.id, wrong))
    again = grading.judge(plan, exercise, case, _answer(case.id, wrong))
    assert len(calls) == 2
    assert first.status == "pass" and failed.status == again.status == "fail"
    assert (again.message, again.reason, again.cause, again.got) == (failed.message, failed.reason, failed.cause,
                                                                      failed.got)


def test_an_unreadable_answer_is_an_error_every_time_without_a_check(solve):
    plan, exercise, case, calls = solve
    forged = {"__set__": "not a list"}
    results = [grading.judge(plan, exercise, case, _answer(case.id, forged)) for _ in range(2)]
    assert calls == []
    assert [r.status for r in results] == ["error", "error"]
    assert results[0].message == results[1].message and results[1].got is None


def test_a_known_mistake_judged_again_from_the_memo_keeps_every_field_of_its_verdict(tmp_path: Path) -> None:
    """The second identical wrong answer takes its verdict from the memo: it must be the first one's field for
    field (the advice and the message without it, `detail`, included), whichever notebook a worker judged first.
    Before, `detail` was left out, so a class's results depended on the order its notebooks reached a worker."""
    from dataclasses import asdict
    plan = build_plan(load_rubric(MINI), tmp_path)
    exercise = next(e for e in plan.rubric.exercises if e.id == "double")
    case = plan.cases["double"][0]
    first, again = (grading.judge(plan, exercise, case, _answer(case.id, codec.encode(7))) for _ in range(2))
    assert first.mistake == "double_plus_one" and first.detail and first.advice
    assert asdict(again) == asdict(first)


def test_a_variants_question_of_the_plans_own_answers_is_asked_once_and_never_of_a_childs_value(
        plan, monkeypatch: pytest.MonkeyPatch) -> None:
    """_reads_as (an accepted variant's `when`: were an earlier exercise's answers a function's?) asks the check
    once per plan when both values are the plan's own objects: a known answer against the expected value, or
    against a right answer (the stored expected value). A value the child sent, equal or not, is asked each time,
    so a memo entry can never answer for it."""
    case = plan.cases["move_dir"][0]
    known = plan.expected[case.id]
    transposed = dict(known.mistakes)["move_dir_transposed"]
    asked: list[object] = []
    is_answer = grading._is_answer

    def counted(plan_, case_, outcome, answer, base):
        asked.append(outcome.value)
        return is_answer(plan_, case_, outcome, answer, base)
    monkeypatch.setattr(grading, "_is_answer", counted)
    right = grading.stored_expected(plan, case.id)
    first = grading._reads_as(plan)(case.id, transposed, right)
    again = grading._reads_as(plan)(case.id, transposed, right)
    base = {"id": case.id, "visibility": case.visibility}
    assert first is again is is_answer(plan, case, Outcome(case.id, "ok", value=right), transposed, base) is False
    assert len(asked) == 1
    assert grading._reads_as(plan)(case.id, transposed, known.value) == first and len(asked) <= 2
    before = len(asked)
    sent = json.loads(json.dumps(transposed))       # the mistake's answer, as a child's frame would bring it
    assert sent is not transposed
    assert grading._reads_as(plan)(case.id, transposed, sent) is True
    assert grading._reads_as(plan)(case.id, transposed, sent) is True
    other = json.loads(json.dumps(right))
    assert grading._reads_as(plan)(case.id, transposed, other) is first
    assert len(asked) == before + 3
