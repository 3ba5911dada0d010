"""Statements compiled by the parent and loaded by the child: the very code the child would have compiled."""

from __future__ import annotations

import glob
import time
from pathlib import Path

from grader import codec
from grader.extract.source import extract
from grader.intake.notebook import read_notebook
from grader.sandbox import precompiled, runtime
from grader.sandbox.process import CaseRequest
from sandbox_run import run_cases, statement, statements

ROOT = Path(__file__).resolve().parent.parent


def _fields(code):
    """Everything a code object holds, nested code objects included (their files too)."""
    names = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags",
             "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_filename", "co_name",
             "co_qualname", "co_firstlineno", "co_linetable", "co_exceptiontable")
    consts = tuple(_fields(c) if type(c) is type(code) else (type(c).__name__, repr(c)) for c in code.co_consts)
    return tuple(getattr(code, name) for name in names) + (consts,)


def _compiled_here(kept):
    return compile("\n" * (kept["line"] - 1) + kept["code"], kept["filename"], "exec", flags=precompiled.FLAGS,
                   dont_inherit=True)


def test_every_bundled_and_fixture_statement_loads_as_the_child_would_have_compiled_it():
    paths = sorted(glob.glob(str(ROOT / "assignments/*/submissions/*.ipynb")))[:40] + sorted(
        glob.glob(str(ROOT / "tests/fixtures/hostile/*.ipynb")))
    compared = 0
    for path in paths:
        try:
            found = extract(read_notebook(path)).statements
        except Exception:  # noqa: BLE001 - a fixture that is not a notebook
            continue
        kept = [{"code": s.code, "filename": s.label, "line": s.line} for s in found]
        for each, made in zip(kept, precompiled.compiled(kept), strict=True):
            if made.code is not None:
                loaded = runtime._statement_code({**each, "compiled": made.code}, True)
                assert _fields(loaded) == _fields(_compiled_here(each)), (path, each["filename"], each["line"])
                compared += 1
    assert compared > 500


def test_one_compile_serves_every_label_of_the_same_code():
    first = statement("class A:\n    def f(self):\n        return lambda: 1\n", count=3, cell=2)
    second = {**first, "filename": "In [9] (cell 2)"}
    made = precompiled.compiled([first, second])
    assert made[0] is made[1]
    for each, code in zip((first, second), made, strict=True):
        assert _fields(runtime._statement_code({**each, "compiled": code.code}, True)) == _fields(_compiled_here(each))


def test_a_statement_that_warns_or_fails_is_left_to_the_child():
    kept = [statement("def f(x):\n    return x is 'ab'\n"), statement("return 1\n"), statement("x = 1\n")]
    assert [made.code is None for made in precompiled.compiled(kept)] == [True, True, False]


def test_code_for_another_interpreter_or_not_code_is_compiled_by_the_child():
    kept = statement("x = 1\n")
    for data, trusted in ((precompiled.compiled([statement("x = 2\n")])[0].code, False), (b"\xff", True),
                          (b"M" + b"junk", True)):
        assert _fields(runtime._statement_code({**kept, "compiled": data}, trusted)) == _fields(_compiled_here(kept))


def test_a_syntax_warning_still_reaches_the_load_output_and_errors_name_their_cell():
    source = "def f(x):\n    return x is 'ab'\n\nclass C:\n    def g(self):\n        return [1][2]\n"
    ran = run_cases([statement(source, count=5, cell=2)], [CaseRequest(id="c1", code="C().g()")])
    assert "SyntaxWarning" in ran.report.output
    assert ran.outcomes[0].error["where"] == "In [5] (cell 2), line 6"


def test_a_grader_run_with_optimizations_compiles_the_students_asserts_as_the_child_would():
    """The child compiles without -O (its interpreter starts with a clean environment); a grader started with -O or
    PYTHONOPTIMIZE compiled the statements without their asserts (and with __debug__ false): a find_tile that
    answers in its `except AssertionError` lost its points, 30 -> 25 of the bundled correct notebook's."""
    import subprocess
    import sys
    source = "def f():\n    try:\n        assert False\n        return 'stripped'\n    except AssertionError:\n" \
             "        return 'kept' if __debug__ else 'no debug'\n"
    probe = ("import marshal, sys\nfrom grader.sandbox import precompiled\n"
             f"[made] = precompiled.compiled([{{'code': {source!r}, 'line': 1}}])\n"
             "namespace = {}\nexec(marshal.loads(made.code), namespace)\nprint(namespace['f']())\n")
    done = subprocess.run([sys.executable, "-O", "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "kept"


def test_a_statement_that_only_makes_constants_and_functions_is_quiet():
    sources = {"def f(a, b=1, *, c=[1, 2], d={'x': (1,)}) -> int:\n    return g(a)\n": True, "n = 100\n": True,
               "X = [('a', 'b'), ('c',)]\n": True, "import heapq\n": False, "class A:\n    pass\n": False,
               "@dec\ndef f():\n    pass\n": False, "def g(x=f()):\n    pass\n": False, "Start: int = 1\n": False,
               "x = y\n": False, "print(1)\n": False}
    made = precompiled.compiled([statement(source) for source in sources])
    assert [each.quiet for each in made] == list(sources.values())


def test_a_load_announces_only_what_can_hang_and_a_hang_the_runtime_cannot_stop_is_still_placed():
    # The runtime's own alarm is swallowed: only the parent's deadline ends this load, and the last statement
    # announced is the one left out; the quiet ones around it are not announced and still load.
    from grader.sandbox import frames
    from grader.sandbox.process import ProcessLimits, Sandbox
    sources = ["def a():\n    return 1\n", "n = 2\n",
               "while True:\n    try:\n        while True:\n            pass\n"
               "    except BaseException:\n        pass\n",
               "def b():\n    return n\n", "m = 3\n"]
    kept = [statement(source, count, count) for count, source in enumerate(sources, start=1)]
    seen = []
    with Sandbox(kept, {}, ProcessLimits(load_seconds=0.5)) as sandbox:
        receive = sandbox._receive

        def recording(deadline):
            message = receive(deadline)
            seen.append(message)
            return message

        sandbox._receive = recording
        report = sandbox.load()
        outcomes = sandbox.run_exercise([CaseRequest(id="c1", code="(a(), b(), m)")], (), None, time.monotonic() + 60)
    assert [m.index for m in seen if isinstance(m, frames.Progress)][:1] == [2]   # the first attempt: only the loop
    assert set(report.names) >= {"a", "b", "n", "m"} and any("did not finish" in w.text for w in report.warnings)
    assert outcomes[0].value == codec.encode((1, 2, 3))



def test_a_long_statement_is_left_to_the_child_and_the_cache_holds_a_bounded_amount_of_source(monkeypatch):
    """A cell of pasted data is compiled on the child's load clock, not the grader's, and is not kept for later
    students; what the cache keeps is bounded by its source's size as well as by its entries."""
    long = statement("DATA = " + repr("x" * precompiled.MAX_CHARS) + "\n")
    [made] = precompiled.compiled([long])
    assert made.code is None and not made.quiet and (long["code"], long["line"]) not in precompiled._CACHE
    ran = run_cases([long], [CaseRequest(id="c1", code="len(DATA)")])
    assert codec.decode(ran.outcomes[0].value) == precompiled.MAX_CHARS
    monkeypatch.setattr(precompiled, "_CACHE_CHARS", 50_000)
    many = [statement(f"X{n} = {repr('y' * 5_000)}\n") for n in range(40)]
    assert all(made.code is not None for made in precompiled.compiled(many))
    assert 0 < sum(len(code) for code, _ in precompiled._CACHE) <= 50_000


def _folded(name: str) -> str:
    """A statement of under MAX_CHARS characters whose constants the compiler folds into megabytes of code
    (`"ab" * 2048` is one 4,096-character constant: each term here costs ~14 characters of source)."""
    source, n = f"{name} = (", 0
    while len(source) < precompiled.MAX_CHARS - 100:
        term = f"{name}_{n:x}"
        source, n = source + f'"{term}" * {4096 // len(term)}, ', n + 1
    return source + ")\n"


def test_a_short_statement_that_folds_into_megabytes_of_code_is_compiled_by_the_child():
    """Sixteen such statements made 80 MB of marshal data, a load request over the frame limit: the notebook could
    not be loaded at all (a 1 MB notebook scored 0 and the worker peaked at 880 MB). Its code is the child's to
    make, on its own clock and memory, and nothing of it stays in the grader's cache."""
    kept = statements(*(_folded(f"D{n}") for n in range(16)))
    made = precompiled.compiled(kept)
    assert all(m.code is None and not m.quiet for m in made)
    assert sum(len(code) for code, _ in precompiled._CACHE) + sum(
        len(m.code or b"") for m in precompiled._CACHE.values()) <= precompiled._CACHE_CHARS
    ran = run_cases(kept, [CaseRequest(id="c1", code="sum(len(s) for d in (D0, D15) for s in d)")])
    assert not ran.report.warnings
    assert codec.decode(ran.outcomes[0].value) == sum(
        len(s) for d in ("D0", "D15") for s in eval(_folded(d).split("=", 1)[1]))  # noqa: S307 - our own text


def test_one_load_request_carries_a_bounded_amount_of_compiled_code(monkeypatch):
    """The code the parent compiles goes down in the load request with the source: past REQUEST_CODE bytes the
    later statements go as source only, so a notebook of many statements never makes a request over the frame
    limit that its source alone fits in."""
    kept = statements(*(f"X{n} = {n}\n" for n in range(30)))
    each = len(precompiled.compiled(kept[:1])[0].code or b"")
    monkeypatch.setattr(precompiled, "REQUEST_CODE", 10 * each)
    made = precompiled.compiled(kept)
    assert [m.code is not None for m in made] == [True] * 10 + [False] * 20
    ran = run_cases(kept, [CaseRequest(id="c1", code="X0 + X29")])
    assert not ran.report.warnings and codec.decode(ran.outcomes[0].value) == 29


def test_every_rubric_expression_of_the_bundled_course_loads_as_the_child_would_have_compiled_it():
    from grader.judge import grading
    from grader.plan.cases import build_plan
    from grader.rubric.schema import load_rubric
    plan = build_plan(load_rubric(ROOT / "rubrics/taoistic-search.yaml"), None)
    requests = []
    for exercise in plan.rubric.exercises:
        requests += grading.build_requests(plan, exercise, plan.cases[exercise.id], exercise.function,
                                           grading.Options())
    cases = [{"code": r.code, "reduce": r.reduce, "probes": dict(r.probes)} for r in requests]
    made = precompiled.expressions(cases)
    assert len(made) == len({(text, name) for text, name, _ in made}) > 20
    try:
        runtime._CODE.clear()
        own = {(text, filename): runtime._compiled(text, filename) for text, filename, _ in made}   # the child's
        runtime._CODE.clear()
        runtime._take_codes({"magic": precompiled.MAGIC, "codes": made})
        assert {key: _fields(code) for key, code in runtime._CODE.items()} == {
            key: _fields(code) for key, code in own.items()}
    finally:
        runtime._CODE.clear()


def test_a_rubric_expression_that_warns_fails_or_is_for_another_interpreter_is_compiled_by_the_child():
    made = precompiled.expressions([{"code": "f(x is 'ab')"}, {"code": "f(", "reduce": "len(result)"},
                                    {"code": "g()", "probes": {"n": "result[0]"}}])
    assert [(text, name) for text, name, _ in made] == [("len(result)", "<reduce>"), ("g()", "<case>"),
                                                         ("result[0]", "<probe>")]
    runtime._CODE.clear()
    magic = precompiled.MAGIC
    for request in ({"magic": b"other", "codes": made}, {"magic": magic, "codes": [("g()", "<case>", b"x")]},
                    {"magic": magic, "codes": [("g()", "<case>", made[0][2][:5])]}):
        runtime._take_codes(request)
        assert runtime._CODE == {}


def _chain(name: str, terms: int, leaf: str = "'a'*4096") -> str:
    """A function whose return the compiler folds: `terms` constants (of 4 kB by default) added up, left to right."""
    return f"def {name}():\n    return {leaf}" + f"+{leaf}" * (terms - 1) + "\n"


def _compiling(monkeypatch) -> list[str]:
    """The code of each statement the parent compiles from now on."""
    seen: list[str] = []
    compile_one = precompiled._compile

    def recording(code, line, caught):
        seen.append(code)
        return compile_one(code, line, caught)

    monkeypatch.setattr(precompiled, "_compile", recording)
    return seen


def test_a_chain_of_constant_additions_is_compiled_by_the_child(monkeypatch):
    """The compiler keeps every partial sum of a folded chain until the statement is compiled: 40 statements of
    380-term chains (a 740 kB notebook) took the grader 13 s of CPU and 1.3 GB of memory, before the child had run
    a line. Over MAX_PLUSES `+` the statement is the child's to compile, on its own clock and memory, and it loads
    as the same code."""
    within, over = statements(_chain("f", precompiled.MAX_PLUSES + 1), _chain("g", precompiled.MAX_PLUSES + 2))
    compiling = _compiling(monkeypatch)
    made = precompiled.compiled([within, over])
    assert compiling == [within["code"]] and made[1].code is None
    assert (over["code"], over["line"]) not in precompiled._CACHE
    ran = run_cases([within, over], [CaseRequest(id="c1", code="(len(f()), len(g()))")])
    assert not ran.report.warnings
    assert codec.decode(ran.outcomes[0].value) == (4096 * (precompiled.MAX_PLUSES + 1),
                                                   4096 * (precompiled.MAX_PLUSES + 2))


def test_what_the_parent_compiles_of_one_submission_is_bounded(monkeypatch):
    """Under MAX_PLUSES each, 3,000 statements of 64-term chains (a 2 MB notebook) still cost the grader 10 s of CPU
    to compile. A submission's statements are compiled here within its allowance (SUBMISSION_CHARS, the folding
    counted by its square): the rest go as source, are not kept for other students, and a later load of the same
    submission (a restart) spends what is left, not a fresh allowance."""
    kept = statements(*(_chain(f"h{n}", 64, leaf=str(n)) for n in range(20)))
    allowance = precompiled.Allowance(left=5 * precompiled._cost(kept[0]["code"]))
    compiling = _compiling(monkeypatch)
    made = precompiled.compiled(kept, allowance)
    assert [m.code is not None for m in made] == [True] * 5 + [False] * 15
    assert compiling == [k["code"] for k in kept[:5]]
    assert not any((k["code"], k["line"]) in precompiled._CACHE for k in kept[5:])
    assert [m.code is not None for m in precompiled.compiled(kept, allowance)] == [True] * 5 + [False] * 15
    assert len(compiling) == 5
    ran = run_cases(kept, [CaseRequest(id="c1", code="(h0(), h19())")])
    assert not ran.report.warnings and codec.decode(ran.outcomes[0].value) == (0, 64 * 19)


def test_code_nested_deeper_than_marshal_goes_is_compiled_by_the_child():
    """2,400 nested lambdas compile, but marshal refuses them ("object too deeply nested"): the error escaped the
    parent's compile, into the load."""
    [made] = precompiled.compiled([statement("f = " + "lambda: " * 2400 + "0\n")])
    assert made.code is None
