"""Case expressions: data is computed in the trusted parent and shipped as values; student names stay names."""

from __future__ import annotations

import copy

import pytest

from grader.syntax.calls import (ChildExpression, ExpressionError, _NotData, call_arguments, evaluate_data, for_child,
                                 free_names)

START = ("*", "1", "2")
DATA = {"Start": START, "Goal": ("1", "2", "*"), "row": 2, "states": [START, ("1", "*", "2")]}


def run_in_child(child: ChildExpression, submission: dict) -> object:
    """Evaluate a child expression the way the child does: placeholders bound to their values."""
    return eval(child.code, {**submission, **dict(child.values)})  # noqa: S307 - test data


# ---------------------------------------------------------------- for_child


def test_fixture_is_folded_into_a_placeholder_and_its_name_never_reaches_the_child() -> None:
    child = for_child("move(Start, 0, 1)", DATA)
    assert child == ChildExpression("move(__v0, 0, 1)", (("__v0", START),))
    assert "Start" not in child.code


def test_generated_variable_is_folded_like_a_fixture() -> None:
    assert for_child("move(Start, row)", DATA) == ChildExpression(
        "move(__v0, __v1)", (("__v0", START), ("__v1", 2)))


def test_data_only_subexpression_is_folded_whole() -> None:
    assert for_child("move(Start[0], Goal + Start)", DATA) == ChildExpression(
        "move(__v0, __v1)", (("__v0", "*"), ("__v1", DATA["Goal"] + START)))


def test_builtins_on_data_are_computed_in_the_parent() -> None:
    assert for_child("move(len(Start), sorted(Start))", DATA) == ChildExpression(
        "move(__v0, __v1)", (("__v0", 3), ("__v1", ["*", "1", "2"])))


def test_submission_names_stay_names() -> None:
    child = for_child("helper(move(Start), next_states)", DATA)
    assert child.code == "helper(move(__v0), next_states)"


def test_builtin_applied_to_a_submission_call_is_left_to_the_child() -> None:
    assert for_child("len(search(Start))", DATA).code == "len(search(__v0))"


def test_literals_stay_literal() -> None:
    child = for_child("move(Start, 0, 'up', (1, 2), [3], None)", DATA)
    assert child.code == "move(__v0, 0, 'up', (1, 2), [3], None)"
    assert child.values == (("__v0", START),)


def test_expression_without_data_is_unchanged() -> None:
    assert for_child("move((1, 2), 3)", DATA) == ChildExpression("move((1, 2), 3)", ())


def test_alias_is_renamed_to_the_notebook_name() -> None:
    child = for_child("find_numbers(Start) + find_numbers(Goal)", DATA, {"find_numbers": "find_tiles"})
    assert child.code == "find_tiles(__v0) + find_tiles(__v1)"


def test_rename_leaves_attributes_and_keywords_alone() -> None:
    child = for_child("obj.find_numbers(find_numbers=find_numbers)", {}, {"find_numbers": "find_tiles"})
    assert child.code == "obj.find_numbers(find_numbers=find_tiles)"


def test_comprehension_variable_is_not_folded_even_when_it_shares_a_data_name() -> None:
    data = {**DATA, "state": ("x",)}
    child = for_child("[move(state) for state in states]", data)
    assert child == ChildExpression("[move(state) for state in __v0]", (("__v0", DATA["states"]),))


def test_lambda_parameter_is_not_folded_or_renamed() -> None:
    child = for_child("search(Start, lambda row: helper(row))", DATA, {"helper": "aid", "row": "col"})
    assert child.code == "search(__v0, lambda row: aid(row))"


def test_starred_data_argument_keeps_its_star() -> None:
    data = {"Args": (START, 1)}
    child = for_child("move(*Args)", data)
    assert child == ChildExpression("move(*__v0)", (("__v0", (START, 1)),))
    assert run_in_child(child, {"move": lambda *args: args}) == (START, 1)


def test_slice_bounds_are_folded_but_the_slice_stays_syntax() -> None:
    child = for_child("search(Start)[1:row]", DATA)
    assert child == ChildExpression("search(__v0)[1:__v1]", (("__v0", START), ("__v1", 2)))
    assert run_in_child(child, {"search": list}) == ["1"]


@pytest.mark.parametrize("code", [
    "move(Start, row)",
    "move(*states)",
    "move(**{'state': Start})",
    "[move(s) for s in states if len(s) == row + 1]",
    "move(Start)[0:row]",
    "{'a': move(Goal), **{'b': row}}",
    "move(Start) if row > 1 else None",
    "(lambda s: move(s))(Goal)",
])
def test_child_code_evaluates_to_what_the_whole_expression_would(code: str) -> None:
    submission = {"move": lambda *args, **kwargs: (args, kwargs)}
    whole = eval(code, {**submission, **DATA})  # noqa: S307 - test data
    assert run_in_child(for_child(code, DATA), submission) == whole


# ---------------------------------------------------------------- evaluate_data and free_names


def test_evaluate_data_computes_over_data_and_safe_builtins() -> None:
    assert evaluate_data("len(Start) + row", DATA) == 5
    assert evaluate_data("[s[0] for s in states]", DATA) == ["*", "1"]


@pytest.mark.parametrize("code", ["move(Start)", "open('/etc/passwd')", "__import__('os')", "Start[7]"])
def test_evaluate_data_refuses_what_is_not_data(code: str) -> None:
    with pytest.raises(ExpressionError, match=r"cannot evaluate"):
        evaluate_data(code, DATA)


def test_evaluate_data_error_names_the_expression_and_the_error() -> None:
    with pytest.raises(ExpressionError) as failure:
        evaluate_data("move(Start)", DATA)
    assert str(failure.value) == "cannot evaluate 'move(Start)': NameError: name 'move' is not defined"


def test_free_names_leave_out_names_the_expression_binds() -> None:
    assert free_names("[f(s, t) for s in Start] + [(y := g(x))]") == {"f", "t", "Start", "g", "x"}


# ---------------------------------------------------------------- call_arguments


def test_call_arguments_gives_data_values_and_marks_submission_names() -> None:
    args, kwargs = call_arguments("search(Start, next_states, Goal[0], depth=row, using=helper)", DATA)
    assert args == (START, _NotData("next_states"), "1")
    assert kwargs == {"depth": 2, "using": _NotData("helper")}


def test_call_arguments_of_a_nested_call_marks_the_inner_call() -> None:
    assert call_arguments("solve(move(Start), Goal)", DATA) == ((_NotData("move(Start)"), DATA["Goal"]), {})


@pytest.mark.parametrize("code", ["Start", "search(Start)[0]", "search(*states)", "search(**{'a': 1})"])
def test_call_arguments_is_none_when_the_arguments_cannot_be_listed(code: str) -> None:
    assert call_arguments(code, DATA) is None


def test_a_check_unpacking_an_argument_that_is_not_data_is_told_to_make_it_a_fixture():
    """`measure(SMALL, 2)` with SMALL the template's, not a fixture: a check reading args[0] learns why it has no
    value, rather than failing on an unknown object."""
    (small, target), _ = call_arguments("measure(SMALL, 2)", DATA)
    assert target == 2
    with pytest.raises(TypeError, match=r"argument SMALL is evaluated in the submission, .* 'fixtures:'"):
        capacities, litres = small


def test_a_check_reading_an_attribute_of_an_argument_built_by_the_submission_is_told_why():
    """`solve(Problem(*PUZZLES["classic"]))` with Problem the template's given class: a check reading
    `args[0].initial` got "'_NotData' object has no attribute 'initial'" (session 21, a river-crossing master),
    which names neither the argument nor the way out."""
    (problem,), _ = call_arguments('solve(Problem(*PUZZLES["classic"]))', DATA)
    with pytest.raises(TypeError, match=r"argument Problem\(\*PUZZLES\['classic'\]\) is evaluated in the "
                       r"submission, .* built by the submission's code; .*'variables' of a generated case"):
        problem.initial  # noqa: B018
    assert copy.deepcopy(problem) == problem
    assert not hasattr(problem, "__deepcopy__")
