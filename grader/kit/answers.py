"""The course's answers to an isolated method, for a kit: recorded when the kit is built, looked up when it checks.

The grader judges astar_search of a notebook whose h2 is wrong with the reference's EightPuzzle.h answering
(`isolate: [{method: EightPuzzle.h, call: ...}]`): the child sends the data the call reads from the student's
objects (`node.state`, `self.goal`) and the parent evaluates the call over the reference. A kit has no
reference, so it carries the answers instead: the reference's method is watched while the reference itself
runs the exercise's public cases, and every question it is asked (the call's inputs, as the child would send
them) is kept with its answer. A notebook whose search asks what the reference's asked gets the course's answers,
as when graded; a question the kit has no answer for (a search that visits other states) is recorded, and the
kit says that case can only be checked after submission.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from grader import codec
from grader.syntax.calls import MethodCall


@dataclass(frozen=True)
class MethodAnswers:
    """An isolated method as a kit carries it: the call's split (grader.syntax.calls.MethodCall) and the
    reference's answers, by the canonical wire text of the inputs the child sends."""

    name: str                          # Class.method
    call: MethodCall
    answers: Mapping[str, Any]         # canonical wire of the inputs -> the answer (wire)

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "params": list(self.call.params), "inputs": list(self.call.inputs),
                "code": self.call.code, "answers": dict(self.answers)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MethodAnswers:
        answers = {str(key): answer for key, answer in dict(data.get("answers") or {}).items()}
        for answer in answers.values():
            codec.decode(answer)           # a damaged value fails when the kit loads, never in a case
        return cls(str(data["name"]), MethodCall(tuple(map(str, data["params"])), tuple(map(str, data["inputs"])),
                                                 str(data["code"])), answers)


def record(plan: Any, exercise: Any, method: Any) -> MethodAnswers:
    """Run the reference on the exercise's public cases with its `method` watched: each call's inputs (computed
    from its arguments as the child computes them) and the answer the grader's oracle gives for them."""
    from grader.plan.cases import evaluate_reference
    from grader.syntax.calls import isolated_call
    owner_name, attribute = method.name.split(".")
    owner = getattr(plan.reference, owner_name)
    own = attribute in owner.__dict__
    original = getattr(owner, attribute)
    split = isolated_call(method.name, method.call, original)
    inputs = [compile(code, "<isolated method>", "eval") for code in split.inputs]
    code = compile(split.code, "<isolated method>", "eval")
    answers: dict[str, Any] = {}

    def watched(*args: Any, **kwargs: Any) -> Any:
        scope = dict(zip(split.params, args, strict=False))
        scope.update((key, value) for key, value in kwargs.items() if key in split.params)
        values = [eval(chain, scope) for chain in inputs]  # noqa: S307 - the rubric's attribute chains
        setattr(owner, attribute, original)   # the oracle's own evaluation calls the real method
        try:
            answer = eval(code, {**vars(plan.reference),  # noqa: S307 - the rubric's call, trusted side
                                 **{f"__m{index}": value for index, value in enumerate(values)}})
        finally:
            setattr(owner, attribute, watched)
        try:
            answers.setdefault(codec.canonical(codec.encode(values)), codec.encode(answer))
        except codec.CodecError:
            pass                               # not data: the kit cannot send it either
        return answer

    setattr(owner, attribute, watched)
    try:
        for case in plan.cases[exercise.id]:
            if case.visibility != "public":
                continue
            try:
                evaluate_reference(plan.reference, case, plan.data(case), exercise)
            except Exception:  # noqa: BLE001, S112 - the plan already computed this case: nothing new to learn
                continue
    finally:
        if own:
            setattr(owner, attribute, original)
        else:
            delattr(owner, attribute)
    return MethodAnswers(method.name, split, answers)


@dataclass
class TableOracle:
    """The kit's oracle: answers an isolated method's calls from its recorded answers; a call it has no answer
    for raises (the student's call fails, as it would with a reference that rejects it) and is counted."""

    tables: Mapping[str, MethodAnswers]
    missed: int = field(default=0)

    def __call__(self, function: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        table = self.tables.get(function)
        if table is None:
            raise LookupError(f"{function} is not isolated in this run")
        try:
            key = codec.canonical(codec.encode(list(args)))
        except codec.CodecError:
            key = None
        if key is None or key not in table.answers:
            self.missed += 1
            raise LookupError(f"the kit has no answer of the course's {function} for these arguments")
        return codec.decode(table.answers[key])
