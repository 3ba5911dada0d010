"""The sandbox with real child processes: answers, errors, timeouts, crashes and isolated helpers."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import pytest

from grader import codec
from grader.sandbox import supervisor, zygote
from grader.sandbox.process import CaseRequest, ProcessLimits, Sandbox
from grader.intake.warning import Kind
from sandbox_run import processes_left, run_cases, statement
import testclock


def statements(source: str) -> list[dict]:
    return [statement(source, count=7, cell=3)]


def run(source: str, *cases: CaseRequest, isolate=(), oracle=None, limits=ProcessLimits(load_seconds=3)):
    ran = run_cases(statements(source), cases, isolate=isolate, oracle=oracle, limits=limits)
    return ran.outcomes, ran.sandbox


def case(code: str, timeout: float = 1.0, **values) -> CaseRequest:
    return CaseRequest(id=f"c{abs(hash(code)) % 10000}", code=code,
                       values={k: codec.encode(v) for k, v in values.items()}, timeout=timeout)


def test_values_come_back_with_exact_types():
    outcomes, _ = run("def f(x):\n    return (x, [x], {x})\n", case("f(__v0)", __v0="a"))
    assert outcomes[0].status == "ok"
    assert codec.decode(outcomes[0].value) == ("a", ["a"], {"a"})


def test_inputs_arrive_as_the_plan_has_them_whether_packed_or_on_the_wire():
    # Plain inputs travel packed in a marshalled request, others (a set inside a tuple, a big int) as wire: the
    # student's code gets the same values, types, set order and fresh objects either way.
    source = ("SEEN = []\ndef f(x):\n    SEEN.append(x)\n"
              "    in_order = isinstance(x, (set, frozenset)) and list(x) == list(type(x)(sorted(x)))\n"
              "    return (type(x).__name__, x, in_order, len(SEEN), any(x is y for y in SEEN[:-1]))\n")
    inputs = [("a", "ab\ud800c"), ["x", ["y"]], {"k": (1, 2.5), 3: None}, {"bb", "aa", "cc"},
              frozenset({1, 2}), ("s", {1}), 2 ** 80, ["x", ["y"]], -0.0]
    outcomes, _ = run(source, *[case("f(__v0)", __v0=value) for value in inputs])
    got = [codec.decode(outcome.value) for outcome in outcomes]
    for position, (value, answer) in enumerate(zip(inputs, got, strict=True)):
        kind, seen, in_order, count, shared = answer
        assert (kind, seen, count, shared) == (type(value).__name__, value, position + 1, False)
        # A set is built by adding its elements in the wire's order (sorted, for these): its order is that one's.
        assert in_order == isinstance(value, (set, frozenset))


def test_every_case_starts_from_the_state_random_seed_0_gives():
    source = ("import random\ndef draw(n):\n    random.gauss(0, 1)\n"
              "    return [random.random(), random.randrange(10 ** 30), random.gauss(0, 1), n]\n")
    outcomes, _ = run(source, case("draw(1)"), case("draw(2)"))
    mine = random.Random(0)
    mine.gauss(0, 1)
    expected = [mine.random(), mine.randrange(10 ** 30), mine.gauss(0, 1)]
    assert [codec.decode(outcome.value) for outcome in outcomes] == [expected + [1], expected + [2]]


def test_the_runtime_seeds_the_global_generator_by_copying_the_seeded_state_into_it():
    """Each case's start seeds `random` by one copy of the seeded state's bytes into the generator (~0.2 us, where
    setstate took ~2.5 us a case), where this interpreter lays its generators out as the runtime checked at its
    start; the state is then exactly random.seed(0)'s, whatever a case left: draws, another seed, a state set, a
    pending gauss."""
    from grader.sandbox import runtime
    assert runtime._SEEDER is not None, "CPython 3.11's generator layout: the copy should be in use"
    generator = runtime._RANDOM   # this process's own global generator: put back as it was after
    before = generator.getstate()
    try:
        _seeded_from_anything(runtime, generator)
    finally:
        generator.setstate(before)


def test_the_sandboxs_runtime_seeds_by_the_copy():
    """The runtime the zygote loads checked the layout too (its own interpreter): the copy is what the cases get."""
    source = ("import sys\ndef seeders():\n    frames = [sys._getframe(depth) for depth in range(1, 6)]\n"
              "    return [frame.f_globals['_SEEDER'] is not None for frame in frames "
              "if '_seed_random' in frame.f_globals]\n")
    outcomes, _ = run(source, case("seeders()"))
    assert outcomes[0].status == "ok" and codec.decode(outcomes[0].value)[:1] == [True], outcomes[0]


def _seeded_from_anything(runtime, generator) -> None:
    for disturb in (lambda: generator.random(), lambda: generator.seed(12345), lambda: generator.gauss(0, 1),
                    lambda: generator.setstate(random.Random(7).getstate()),
                    lambda: [generator.getrandbits(64) for _ in range(700)]):
        disturb()
        runtime._seed_random()
        assert generator.getstate() == random.Random(0).getstate()
        mine = random.Random(0)
        assert [generator.gauss(0, 1), generator.random()] == [mine.gauss(0, 1), mine.random()]


def test_error_points_at_notebook_cell_and_line():
    outcomes, _ = run("def f():\n    x = 1\n    return x + 'a'\n", case("f()"))
    assert outcomes[0].status == "error"
    assert outcomes[0].error["type"] == "TypeError"
    assert outcomes[0].error["where"] == "In [7] (cell 3), line 3"
    assert "return x + 'a'" in outcomes[0].error["traceback"]


def test_infinite_loop_costs_only_its_case():
    source = "def spin():\n    while True:\n        pass\n\ndef ok():\n    return 1\n"
    outcomes, _ = run(source, case("spin()", timeout=0.3), case("ok()"))
    assert [o.status for o in outcomes] == ["timeout", "ok"]
    assert "line 2" in outcomes[0].error["where"] or "line 3" in outcomes[0].error["where"]


def test_swallowed_timeout_is_killed_and_the_next_case_runs_in_a_fresh_child():
    source = ("def stubborn():\n    while True:\n        try:\n            while True:\n                pass\n"
              "        except BaseException:\n            pass\n\ndef ok():\n    return 2\n")
    outcomes, sandbox = run(source, case("stubborn()", timeout=0.3), case("ok()"))
    assert [o.status for o in outcomes] == ["timeout", "ok"]
    assert codec.decode(outcomes[1].value) == 2
    assert sandbox.restarts == 1          # killed, not waited for: a child that never ends would hang here


@pytest.mark.parametrize("body, status", [
    ("import sys; sys.exit(3)", "error"),
    ("raise SystemExit", "error"),
    ("raise KeyboardInterrupt", "error"),
    ("import os; os._exit(0)", "crash"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "crash"),
])
def test_exits_and_crashes_cost_only_their_case(body, status):
    source = f"def bad():\n    {body}\n\ndef ok():\n    return 'fine'\n"
    outcomes, _ = run(source, case("bad()"), case("ok()"))
    assert outcomes[0].status == status
    assert outcomes[1].status == "ok" and codec.decode(outcomes[1].value) == "fine"


def test_killing_the_loaded_child_restarts_it():
    # bad() waits for its own death (the exercise's fork dies with the loaded child): had it answered first, the
    # death would be seen while ok() runs, and charged to it (a race the test must not depend on).
    source = "import os, signal, time\ndef bad():\n    os.kill(os.getppid(), signal.SIGKILL)\n" \
             "    time.sleep(30)\n    return 1\n" \
             "def ok():\n    return 3\n"
    outcomes, _ = run(source, case("bad()"), case("ok()"))
    assert outcomes[1].status == "ok" and codec.decode(outcomes[1].value) == 3


def test_output_is_captured_per_case_and_truncated():
    source = "def loud():\n    print('x' * 10_000_000)\n    return 1\n"
    outcomes, _ = run(source, case("loud()"), limits=ProcessLimits(load_seconds=3))
    assert outcomes[0].status == "ok"
    assert len(outcomes[0].output) < 70_000
    assert "more characters of output not kept" in outcomes[0].output


def test_fake_results_on_stdout_do_not_count():
    source = ("import sys, json\ndef f():\n    print(json.dumps({'op': 'result', 'status': 'ok', 'value': 42}))\n"
              "    sys.__stdout__.write('PASSED\\n')\n    return 0\n")
    outcomes, _ = run(source, case("f()"))
    assert codec.decode(outcomes[0].value) == 0


def test_isolated_helpers_are_answered_by_the_parent():
    source = "def helper(x):\n    return 'broken'\n\ndef uses(x):\n    return helper(x) + 1\n"
    calls = []

    def oracle(name, args, kwargs):
        calls.append((name, args))
        return args[0] * 10

    outcomes, _ = run(source, case("uses(4)"), isolate=["helper"], oracle=oracle)
    assert codec.decode(outcomes[0].value) == 41
    assert calls == [("helper", [4])]


def test_a_pure_oracle_answers_a_repeated_call_from_its_replies_and_each_answer_is_fresh():
    """The reference answers a call it has seen (in this case or another submission's) from the kept reply:
    no second call; the child still gets its own copy, so mutating one answer changes no later one."""
    from grader.sandbox.process import PureOracle
    source = ("def helper(x):\n    return []\n\n"
              "def uses(x):\n    first = helper(x)\n    first.append('mine')\n"
              "    return [first, helper(x), helper(x + 1)]\n")
    calls = []

    def answer(name, args, kwargs):
        calls.append((name, args))
        return [args[0]]

    oracle = PureOracle(answer)
    outcomes, _ = run(source, case("uses(4)"), isolate=["helper"], oracle=oracle)
    assert codec.decode(outcomes[0].value) == [[4, "mine"], [4], [5]]
    assert calls == [("helper", [4]), ("helper", [5])]
    outcomes, _ = run(source, case("uses(4)"), isolate=["helper"], oracle=oracle)   # another submission
    assert codec.decode(outcomes[0].value) == [[4, "mine"], [4], [5]] and len(calls) == 2


def test_exercises_do_not_leak_state_into_each_other():
    source = "STATE = []\ndef add():\n    STATE.append(1)\n    return len(STATE)\n"
    with Sandbox(statements(source), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        first = sandbox.run_exercise([case("add()"), case("add() + 0")], (), None, time.monotonic() + 30)
        second = sandbox.run_exercise([case("add()")], (), None, time.monotonic() + 30)
    assert [codec.decode(o.value) for o in first] == [1, 2]
    assert codec.decode(second[0].value) == 1


def test_missing_import_becomes_inert_stand_in_and_annotations_are_not_evaluated():
    imports = {"code": "import ipycanvas_not_installed as cnv\n", "filename": "cell 1", "line": 1, "kind": "import"}
    define = {"code": "def draw(c: cnv.Canvas) -> cnv.Nothing:\n    cnv.Canvas(size=(1, 2)).fill_rect(0, 0)\n"
                      "    return 5\n", "filename": "cell 1", "line": 2, "kind": "def"}
    with Sandbox([imports, define], {}, ProcessLimits()) as box:
        report = box.load()
        outcomes = box.run_exercise([case("draw(None)")], (), None, time.monotonic() + 30)
    # The grading machine's lack, not the student's mistake: information for the TA, not a warning.
    assert any("inert stand-in" in w.text and w.kind == Kind.MISSING_MODULE for w in report.environment)
    assert not any("inert stand-in" in w.text for w in report.warnings)
    assert codec.decode(outcomes[0].value) == 5


def test_a_missing_module_imported_under_try_or_if_gets_stand_ins_for_that_module_only():
    """An import under `try`/`if` whose ModuleNotFoundError ends the statement: that module's imports bind stand-ins
    (not one inside a function the statement defines, nor another module's import that never ran), and an error
    from a statement that imports no such module stands."""
    retried = {"code": "try:\n    import ipycanvas_not_installed as cnv\nexcept ImportError:\n    pass\n"
                       "    import ipycanvas_not_installed.sub as cnv_sub\n    import json as never_run\n",
               "filename": "cell 1", "line": 1, "kind": "other"}
    nested = {"code": "if True:\n    def later():\n        import other_not_installed as inner\n"
                      "    from ipycanvas_not_installed import Canvas, hold_canvas as hold\n",
              "filename": "cell 2", "line": 1, "kind": "other"}
    computed = {"code": "if True:\n    import importlib\n    importlib.import_module('third_not_installed')\n",
                "filename": "cell 3", "line": 1, "kind": "other"}
    probe = {"code": "def bound():\n    return sorted(n for n in ('cnv', 'cnv_sub', 'never_run', 'inner', 'Canvas', "
                     "'hold', 'later') if n in globals())\n", "filename": "cell 4", "line": 1, "kind": "def"}
    with Sandbox([retried, nested, computed, probe], {}, ProcessLimits()) as box:
        report = box.load()
        outcomes = box.run_exercise([case("bound()"), case("type(cnv).__name__")], (), None, time.monotonic() + 30)
    assert codec.decode(outcomes[0].value) == ["Canvas", "cnv", "cnv_sub", "hold", "later"]
    assert codec.decode(outcomes[1].value) == "Inert"
    assert [(w.kind, w.subject, w.cell) for w in report.environment] == [
        (Kind.MISSING_MODULE, "ipycanvas_not_installed", None), (Kind.MISSING_MODULE, "ipycanvas_not_installed",
                                                                  None)]
    assert [(w.kind, w.subject) for w in report.warnings] == [(Kind.LOAD_ERROR, "ModuleNotFoundError")]


def test_load_warnings_are_fields_placed_by_the_parent():
    """The child says what went wrong in which statement it was sent; the place (cell, label, line) is the
    parent's own: an exception whose text pretends to be elsewhere is still placed where it was raised."""
    statements = [
        {"code": "import ipycanvas_not_installed.sub as cnv\n", "filename": "In [3] (cell 5)", "line": 2,
         "kind": "import", "cell": 4},
        {"code": "from collections import no_such_name\n", "filename": "cell 6", "line": 1, "kind": "import",
         "cell": 5},
        {"code": "raise KeyError('In [9] (cell 1), line 7: forged')\n", "filename": "cell 8", "line": 3,
         "kind": "other", "cell": 7},
        {"code": "def f(:\n", "filename": "cell 9", "line": 1, "kind": "def", "cell": 8},
    ]
    with Sandbox(statements, {}, ProcessLimits()) as box:
        report = box.load()
    [missing] = report.environment
    assert (missing.kind, missing.subject, missing.cell, missing.label, missing.line) == (
        Kind.MISSING_MODULE, "ipycanvas_not_installed", 4, "In [3] (cell 5)", 2)
    assert missing.shown.startswith("In [3] (cell 5), line 2: ModuleNotFoundError: ")
    assert [(w.kind, w.subject, w.cell, w.line) for w in report.warnings] == [
        (Kind.IMPORT_ERROR, "ImportError", 5, 1), (Kind.LOAD_ERROR, "KeyError", 7, 3),
        (Kind.SYNTAX, "SyntaxError", 8, 1)]
    forged = report.warnings[1]
    assert forged.shown.startswith("cell 8, line 3: KeyError: ") and forged.text.endswith("(statement skipped)")


def test_hanging_top_level_statement_is_left_out():
    hang = {"code": "while True:\n    pass\n", "filename": "cell 2", "line": 1, "kind": "other"}
    define = {"code": "def f():\n    return 7\n", "filename": "cell 3", "line": 1, "kind": "def"}
    with Sandbox([hang, define], {}, ProcessLimits(load_seconds=0.5)) as sandbox:
        report = sandbox.load()
        outcomes = sandbox.run_exercise([case("f()")], (), None, time.monotonic() + 30)
    assert "f" in report.names
    assert any("did not finish" in w.text for w in report.warnings)
    assert codec.decode(outcomes[0].value) == 7


def test_child_environment_holds_no_grader_secrets(monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "s3cr3t")
    outcomes, _ = run("import os\ndef env():\n    return dict(os.environ)\n", case("env()"))
    environment = codec.decode(outcomes[0].value)
    assert "GRADER_SECRET_TOKEN" not in environment
    assert environment["PYTHONHASHSEED"] == "0"


def test_the_sandbox_starts_with_its_interpreters_site_but_no_finder_of_an_editable_grader():
    # zygote.start_site: the zygote (started with -S) runs `site` as every interpreter of the environment does, all
    # but the .pth of an editable install of this package (its finder imported 8 modules into every sandbox)
    source = ("import sys\ndef start():\n    return (sys.path[1:], sorted(name for name in sys.modules if "
              "name.startswith('__editable__')), callable(exit), callable(help))\n")
    outcomes, _ = run(source, case("start()"))
    path, editable, exits, helps = codec.decode(outcomes[0].value)
    plain = subprocess.run([sys.executable, "-s", "-P", "-c", "import json, sys; print(json.dumps(sys.path))"],
                           env=supervisor.child_environment(), cwd="/", capture_output=True, text=True, check=True,
                           timeout=testclock.within(120))
    assert path == [entry for entry in json.loads(plain.stdout) if not entry.startswith(zygote.OWN_EDITABLE)]
    assert editable == [] and exits and helps


@pytest.mark.parametrize("spawn", [
    "subprocess.Popen(['sleep', '313.1'])",
    "subprocess.Popen(['sleep', '313.1'], start_new_session=True)",   # escapes the process group
])
def test_no_process_survives_the_exercise(spawn):
    source = f"import subprocess, os\ndef spawn():\n    {spawn}\n    return 1\n\ndef ok():\n    return 2\n"
    with Sandbox(statements(source), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        sandbox.run_exercise([case("spawn()")], (), None, time.monotonic() + 30)
        sandbox.run_exercise([case("ok()")], (), None, time.monotonic() + 30)
        assert not processes_left("313.1"), "the exercise's sleeper outlived its exercise"
    assert not processes_left("313.1"), "a sleeper outlived the sandbox"


def test_only_a_sandbox_asked_to_prefetch_starts_the_next_child_ahead() -> None:
    """Prefetching is the caller's choice (a worker grading one submission after another), never a module flag:
    a one-off sandbox leaves no spare child behind, a prefetching one leaves one that the next sandbox takes."""
    from grader.sandbox import process
    kept, case = [statement("def f(x):\n    return x + 1\n")], CaseRequest("f#1", "f(1)", timeout=30.0)
    try:
        assert run_cases(kept, [case]).outcomes[0].value == 2
        assert process._SPARES == {}
        assert run_cases(kept, [case], prefetch=True).outcomes[0].value == 2
        assert len(process._SPARES) == 1
        (spare,) = process._SPARES.values()
        waiting = spare.result(timeout=120)
        assert run_cases(kept, [case], prefetch=True).outcomes[0].value == 2   # runs in the spare ...
        process.settle()
        assert waiting.process.poll() is not None                                  # ... which is gone now
        assert len(process._SPARES) == 1                                           # and the next one waits
    finally:
        process._drop_spares()
    assert process._SPARES == {}


def test_a_workers_last_submission_runs_in_the_spare_and_starts_no_other() -> None:
    """Where no submission follows (the pool's last job: spare_next=False) the sandbox still takes the child started
    ahead for it, and starts none for a next one, which would only be killed unused."""
    from grader.sandbox import process
    kept, case = [statement("def f(x):\n    return x + 1\n")], CaseRequest("f#1", "f(1)", timeout=30.0)
    try:
        assert run_cases(kept, [case], prefetch=True).outcomes[0].value == 2
        (spare,) = process._SPARES.values()
        waiting = spare.result(timeout=120)
        assert run_cases(kept, [case], prefetch=True, spare_next=False).outcomes[0].value == 2   # in the spare
        process.settle()
        assert waiting.process.poll() is not None
        assert process._SPARES == {}
    finally:
        process._drop_spares()


def test_a_prefetching_sandbox_is_torn_down_after_it_closes_and_leaves_nothing() -> None:
    """A worker's sandbox hands its teardown (kill, namespaces, cgroups) to the spare starter so the next
    submission need not wait for it; once that has run, its child is gone and its cgroups are removed."""
    from grader.sandbox import process
    kept, case = [statement("def f(x):\n    return x + 1\n")], CaseRequest("f#1", "f(1)", timeout=30.0)
    try:
        with Sandbox(kept, {}, ProcessLimits(), prefetch=True) as sandbox:
            sandbox.load()
            assert sandbox.run_exercise([case], (), None, time.monotonic() + 30)[0].value == 2
            jail, groups = sandbox.process, [g.path for g in (sandbox.pids, sandbox.memory) if g is not None]
        assert sandbox.process is None and sandbox.pids is None and sandbox.memory is None
        process.settle()
        assert jail is not None and jail.poll() is not None
        assert not any(group.exists() for group in groups)
    finally:
        process._drop_spares()


TWO_CPUS = pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                              reason="one CPU: nothing to start a spare beside")
CPUS_SEEN = "import os\ndef cpus():\n    return sorted(os.sched_getaffinity(0))\n"


@pytest.fixture
def lone_worker(monkeypatch):
    """This process as a lone worker on a machine of two CPUs or more (executor.worker_cpus, aside_cpus): its
    sandboxes keep to its first CPU, its spare children start on the others. Spares are dropped after."""
    from grader.sandbox import process
    allowed = sorted(os.sched_getaffinity(0))
    process._drop_spares()   # one another test left would have been started elsewhere
    monkeypatch.setattr(process, "_CHILD_CPUS", allowed[:1])
    monkeypatch.setattr(process, "_STARTER_CPUS", set(allowed[1:]))
    yield allowed
    process._drop_spares()


@TWO_CPUS
def test_a_lone_workers_spare_starts_on_the_spare_cpu_and_grades_on_the_workers(lone_worker, monkeypatch):
    """The spare's making (the jail, the runtime's start: ~3 ms of CPU a notebook) runs on the CPU no worker keeps
    to, beside the current student's cases; once ready the zygote moves it to the worker's CPU, so the next
    student's load, cases and forks run there as any sandbox's do (cpuclock.waits_by_choice)."""
    from grader.sandbox import process, supervisor
    kept, asked = statements(CPUS_SEEN), CaseRequest("cpus#1", "cpus()", timeout=30.0)
    assert codec.decode(run_cases(kept, [asked], prefetch=True).outcomes[0].value) == lone_worker[:1]
    (spare,) = process._SPARES.values()
    waiting = spare.result(timeout=120)
    assert os.sched_getaffinity(waiting.process.pid) == set(lone_worker[:1])
    assert codec.decode(run_cases(kept, [asked], prefetch=True).outcomes[0].value) == lone_worker[:1]   # in it
    process.settle()
    assert waiting.process.poll() is not None
    # Where it started: without the zygote's move it stays on the spare CPU.
    monkeypatch.setattr(supervisor.Zygote, "keep", lambda self, pid, cpus: None)
    unmoved = process._spawn(process.detect(), ProcessLimits(), [], start_on=lone_worker[1:])
    try:
        assert os.sched_getaffinity(unmoved.process.pid) == set(lone_worker[1:])
    finally:
        process._discard(unmoved)


def test_the_zygote_moves_only_its_own_children():
    """The zygote's `keep` names a pid: any other process than a child it started and has not reaped is refused
    (a pid it does not reap could be anyone's by then), and nothing is moved."""
    from grader.sandbox import supervisor
    mine = os.sched_getaffinity(0)
    with Sandbox(statements(CPUS_SEEN), {}, ProcessLimits()) as sandbox:
        sandbox.load()
        zygote = supervisor.zygote()
        for stranger in (os.getpid(), zygote.process.pid, 1):
            with pytest.raises(supervisor.SpawnError, match="not a child"):
                zygote.keep(stranger, [min(mine)])
        assert sandbox.process is not None
        zygote.keep(sandbox.process.pid, sorted(mine))   # its own child: kept to where it is
    assert os.sched_getaffinity(0) == mine


@TWO_CPUS
def test_a_finished_sandbox_is_moved_to_the_spare_cpu_before_it_is_killed(lone_worker):
    """A lone worker's finished sandbox dies on the CPU no worker keeps to (its exit, memory and namespaces torn
    down, ~2 ms of CPU a notebook, off the CPU grading the next student): every process of its group is moved,
    none outside it."""
    from grader.sandbox import process
    child = process._spawn(process.detect(), ProcessLimits(), [])
    try:
        with Sandbox(statements(CPUS_SEEN), {}, ProcessLimits(), prefetch=True, spare_next=False) as sandbox:
            sandbox.load()
            asked = case("cpus()", timeout=30)
            assert codec.decode(sandbox.run_exercise([asked], (), None, time.monotonic() + 60)[0].value) == \
                lone_worker[:1]
            group = sandbox.pids or sandbox.cpu or sandbox.memory
            if group is None:
                pytest.skip("no cgroup holds the sandbox here")
            assert group.move_members(set(lone_worker[1:])) >= 1
            # Listed after the move: a fork the runtime makes meanwhile is the moved runtime's, with its CPUs.
            for pid in [int(pid) for pid in (group.path / "cgroup.procs").read_text().split()]:
                try:
                    assert os.sched_getaffinity(pid) == set(lone_worker[1:])
                except ProcessLookupError:   # a fork that ended meanwhile
                    pass
            jail = sandbox.process
        assert os.sched_getaffinity(child.process.pid) == set(lone_worker[:1])   # not in that group: as it was
        assert os.sched_getaffinity(0) == set(lone_worker)
    finally:
        process._discard(child)
    process.settle()
    assert jail is not None and jail.poll() is not None


LOOKS_FOR_THE_SPARE = '''import os, signal
def look(pid):
    seen = {"procs": sorted(int(name) for name in os.listdir("/proc") if name.isdigit())}
    for what, act in (("status", lambda: open(f"/proc/{pid}/status").read()),
                      ("cpus", lambda: os.sched_setaffinity(pid, {0})),
                      ("kill", lambda: os.kill(pid, signal.SIGKILL))):
        try:
            act()
            seen[what] = "done"
        except OSError as error:
            seen[what] = type(error).__name__
    return seen
'''


@TWO_CPUS
def test_a_hostile_notebook_cannot_reach_the_next_students_spare(lone_worker):
    """The next student's sandbox is started (on the spare CPU) while this one's cases run: a notebook that is
    told its host pid still cannot see it, move it or kill it, and the next student is graded in it."""
    from grader.sandbox import process
    asked = CaseRequest("cpus#1", "cpus()", timeout=30.0)
    with Sandbox(statements(LOOKS_FOR_THE_SPARE), {}, ProcessLimits(), prefetch=True) as sandbox:
        sandbox.load()
        (spare,) = process._SPARES.values()
        waiting = spare.result(timeout=120)
        pid = waiting.process.pid
        [looked] = sandbox.run_exercise([case("look(__v0)", timeout=30, __v0=pid)], (), None, time.monotonic() + 60)
        seen = codec.decode(looked.value)
        if sandbox.isolation.namespaces:   # its own pid namespace: the number is no process of its
            assert pid not in seen["procs"] and seen["status"] == "FileNotFoundError", seen
            assert seen["kill"] == "ProcessLookupError", seen
    assert waiting.process.poll() is None and os.sched_getaffinity(pid) == set(lone_worker[:1]), seen
    ran = run_cases(statements(CPUS_SEEN), [asked], prefetch=True, spare_next=False)
    assert codec.decode(ran.outcomes[0].value) == lone_worker[:1]
    process.settle()
    assert waiting.process.poll() is not None   # it graded the next student, and went with that sandbox
