"""A notebook's own code on the rubric's cases, run in this process with no isolation at all: the floor the
grader's time per notebook is compared with ("a correct notebook costs at most 1.3x its own code's time").

The same work as the sandbox's child, and nothing it does not do:
- the load: the statements the grader keeps (extract, child_statements), compiled as the child compiles them
  (annotations not evaluated), the support modules importable and `%run` served, a failed import bound to inert
  stand-ins; timed. The collector walks its youngest generation as seldom as the child's does (from the load on:
  runtime.YOUNG_OBJECTS; at Python's 700 the same cases took ~4% more CPU here, and the sandbox looked that much
  closer to its own code). Then the collector freezes what the load made, as the child does after its load (else
  a collection in this big process would walk the grader's and the reference's objects too).
- each exercise from the loaded notebook as it was after the load: an exercise runs in a fork of the loaded
  process, as in the sandbox, so what one exercise changes in the module is not seen by the next.
- each case: the very request the grader sends (build_requests: call, placeholders, `set` globals, reduce,
  probes), `random` seeded with 0, output captured in memory; timed are the call, the reduce and the probes.
  Not timed: decoding the inputs and encoding the answers (the sandbox's overhead, not the student's code) and
  the verdict, which the grader's own judge gives so the run shows it did the same cases with the same answers.
"""

from __future__ import annotations

import gc
import importlib.util
import io
import json
import os
import random
import sys
import time
import types
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from grader import codec
from grader.extract.source import extract
from grader.intake.notebook import read_notebook
from grader.judge import grading
from grader.plan.cases import Plan
from grader.sandbox.process import Outcome
from grader.sandbox.runtime import _ANNOTATIONS, YOUNG_OBJECTS, Inert


@dataclass(frozen=True)
class OwnCode:
    """Seconds of one notebook's own code (wall, and this process's CPU), and how its answers were judged."""

    load: float
    cases: float
    load_cpu: float
    cases_cpu: float
    run: int           # cases run
    passed: int        # of which the grader's judge passes

    def __add__(self, other: OwnCode) -> OwnCode:
        return OwnCode(*(a + b for a, b in zip(self.row(), other.row(), strict=True)))

    def row(self) -> tuple[Any, ...]:
        return (self.load, self.cases, self.load_cpu, self.cases_cpu, self.run, self.passed)

    @property
    def seconds(self) -> float:
        return self.load + self.cases

    @property
    def cpu(self) -> float:
        return self.load_cpu + self.cases_cpu


NOTHING = OwnCode(0.0, 0.0, 0.0, 0.0, 0, 0)


def own_code(paths: list[Path], plan: Plan) -> OwnCode:
    """The sum over `paths` of each notebook's own code, each in a fork of this process."""
    support = grading.support_sources(plan)
    total = NOTHING
    for path in paths:
        notebook = read_notebook(path)
        total += _in_fork(partial(_notebook, notebook, extract(notebook, plan.rubric.policy), plan, support))
    return total


def _in_fork(work: Any) -> OwnCode:
    """`work()` in a fork of this process (its changes die with it); its OwnCode back through a pipe."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        code = 1
        try:
            os.write(writer, json.dumps(work().row()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    if not text:
        raise RuntimeError(f"the in-process run failed in a fork ({pid})")
    return OwnCode(*json.loads(text))


class _Support:
    """The assignment's support modules, importable by name (as the child's finder serves them)."""

    def __init__(self, sources: dict[str, str]):
        self.sources = sources

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        return importlib.util.spec_from_loader(name, self) if name in self.sources else None  # type: ignore

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        exec(compile(self.sources[module.__name__], f"{module.__name__}.py", "exec"), module.__dict__)


def _notebook(notebook: Any, extracted: Any, plan: Plan, support: dict[str, str]) -> OwnCode:
    """In a fork: load the notebook as the child does, then each exercise in a fork of the loaded process."""
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])   # as the runtime sets it before the load
    sys.meta_path.insert(0, _Support(support))
    module = types.ModuleType("__main__")
    namespace = module.__dict__

    def run_support(name: str) -> None:   # `%run X.ipynb`
        stem = os.path.splitext(os.path.basename(str(name)))[0]
        scope: dict[str, Any] = {"__name__": stem}
        exec(compile(support[stem], f"{stem}.py", "exec"), scope)
        namespace.update((key, value) for key, value in scope.items() if not key.startswith("__"))

    namespace.update({"display": lambda *args, **kwargs: None, "get_ipython": lambda: Inert("get_ipython()"),
                      "__grader_run__": run_support})
    sys.modules["__main__"] = module
    statements = grading.child_statements(extracted)
    codes = []
    for statement in statements:
        try:
            codes.append((statement, compile("\n" * (statement["line"] - 1) + statement["code"],
                                             statement["filename"], "exec", flags=_ANNOTATIONS, dont_inherit=True)))
        except SyntaxError:
            continue
    sink, stdout = io.StringIO(), sys.stdout
    sys.stdout = sink
    wall, cpu = time.perf_counter(), time.process_time()
    for statement, code in codes:
        try:
            exec(code, namespace)
        except ImportError:
            _stand_ins(statement, namespace)
        except BaseException:  # noqa: BLE001 - an error at load is a warning for the grader too
            pass
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sys.stdout = stdout
    gc.freeze()
    loaded = sorted(name for name in namespace if not name.startswith("__"))
    total = OwnCode(wall, 0.0, cpu, 0.0, 0, 0)
    for exercise in plan.rubric.exercises:
        ready = grading._runnable(plan, exercise, notebook, extracted, loaded)   # as the grader resolves names
        if isinstance(ready, tuple):
            total += _in_fork(partial(_exercise, plan, exercise, ready[0], namespace))
    return total


def _stand_ins(statement: dict[str, Any], namespace: dict[str, Any]) -> None:
    import ast
    for node in ast.walk(ast.parse(statement["code"])):
        if isinstance(node, ast.Import):
            for alias in node.names:
                namespace.setdefault(alias.asname or alias.name.split(".")[0], Inert(alias.name))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    namespace.setdefault(alias.asname or alias.name, Inert(f"{node.module}.{alias.name}"))


def _exercise(plan: Plan, exercise: Any, name: str, namespace: dict[str, Any]) -> OwnCode:
    """In a fork of the loaded notebook: the exercise's cases, as the grader sends them."""
    cases = plan.cases[exercise.id]
    requests = grading.build_requests(plan, exercise, cases, name, grading.Options())
    missing = object()
    wall = cpu = 0.0
    passed = 0
    for case, request in zip(cases, requests, strict=True):
        settings = {key: codec.with_arrays(codec.decode(value)) for key, value in request.set.items()}
        saved = {key: namespace.get(key, missing) for key in settings}
        namespace.update(settings)
        scope = dict(namespace)
        scope.update({key: codec.with_arrays(codec.decode(value)) for key, value in request.values.items()})
        call = compile(request.code, "<case>", "eval")
        reduce = compile(request.reduce, "<reduce>", "eval") if request.reduce else None
        probes = {key: compile(code, "<probe>", "eval") for key, code in request.probes.items()}
        random.seed(0)
        sink, stdout, stderr = io.StringIO(), sys.stdout, sys.stderr
        sys.stdout = sys.stderr = sink
        status, result, probed = "ok", None, {}
        started, started_cpu = time.perf_counter(), time.process_time()
        try:
            result = eval(call, scope)  # noqa: S307 - the rubric's call, as the child evaluates it
            if reduce is not None:
                result = eval(reduce, {**scope, "result": result})  # noqa: S307
            for key, probe in probes.items():
                probed[key] = eval(probe, {**scope, "result": result})  # noqa: S307
        except BaseException:  # noqa: BLE001 - the grader records an error; the time up to it counts
            status = "error"
        wall += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
        sys.stdout, sys.stderr = stdout, stderr
        for key, old in saved.items():
            if old is missing:
                namespace.pop(key, None)
            else:
                namespace[key] = old
        if status == "ok":
            try:
                outcome = Outcome(case.id, "ok", value=codec.encode(result),
                                  probes={key: {"value": codec.encode(value)} for key, value in probed.items()})
                passed += grading.judge(plan, exercise, case, outcome).status == "pass"
            except Exception:  # noqa: BLE001 - not encodable: the grader fails it too
                pass
    return OwnCode(0.0, wall, 0.0, cpu, len(cases), passed)
