"""Executors: the local pool survives a dying worker; a Dask LocalCluster grades exactly like the local pool."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.cli import exit_code, summary_line
from grader.run.batch import grade_batch
from grader.run.executor import Job, LocalPool, Setup
from grader.store.results import to_dict
from grader.rubric.schema import load_rubric
from testclock import within

REPO = Path(__file__).resolve().parents[1]
RUBRIC = REPO / "rubrics" / "taoistic-search.yaml"
SUBMISSIONS = REPO / "assignments" / "taoistic-search" / "submissions"
SAMPLE = ["correct", "move-dir-transposed", "syntax-error", "seed-000"]


def scores(results) -> dict:
    return {r.submission: (r.total, [(e.id, e.score, [c.status for c in e.cases]) for e in r.exercises])
            for r in results}


@pytest.fixture(scope="module")
def pool_results(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in SAMPLE]
    return grade_batch(paths, RUBRIC, tmp_path_factory.mktemp("out"), jobs=2, cache=cache).results, cache


def test_a_dask_local_cluster_gives_the_same_results_as_the_local_pool(pool_results, tmp_path):
    pytest.importorskip("dask.distributed")
    results, cache = pool_results
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in SAMPLE]
    on_dask = grade_batch(paths, RUBRIC, tmp_path / "out", jobs=2, cache=cache, dask="local").results
    assert scores(on_dask) == scores(results)
    assert all(r.isolation == results[0].isolation for r in on_dask)


def test_a_worker_killed_mid_submission_is_replaced_and_only_that_submission_is_marked(tmp_path):
    killer = tmp_path / "killer.py"
    killer.write_text("import os, signal\n"
                      "os.kill(os.getppid(), signal.SIGKILL) if os.getpid() != 1 else None\n"
                      "def find_tile(tile, S):\n    return (0, 0)\n")
    # Without namespaces the loaded child's parent is the worker: killing it is the attack. With namespaces
    # the child cannot see the worker, so we kill the worker from outside to the same effect.
    setup = Setup(load_rubric(RUBRIC), str(tmp_path / "cache"))
    pool = LocalPool(setup, jobs=1)
    jobs = [Job("killer", str(killer)), Job("correct", str(SUBMISSIONS / "correct.ipynb"))]
    done = {}
    import os
    import signal
    import threading
    import time

    def children() -> set[int]:
        """This process's children but multiprocessing's helpers (the resource tracker starts with a first
        spawned worker)."""
        found = set()
        for pid in os.popen(f"pgrep -P {os.getpid()}").read().split():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    command = handle.read()
            except OSError:
                continue
            if b"resource_tracker" not in command and b"forkserver" not in command:
                found.add(int(pid))
        return found

    before = children()     # this process's zygote, if it has one: not the pool's worker

    finished_all = threading.Event()

    def kill_worker_once() -> None:
        if finished_all.wait(1.0):
            return
        while not finished_all.is_set():     # once the pool is done, a new child is another test's
            for child in sorted(children() - before):
                os.kill(child, signal.SIGKILL)
                return
            time.sleep(0.05)

    killer_thread = threading.Thread(target=kill_worker_once, daemon=True)
    killer_thread.start()
    try:
        for finished in pool.run(jobs):
            done[finished.job.student] = finished
    finally:
        finished_all.set()
        killer_thread.join()
    assert set(done) == {"killer", "correct"}
    assert json.dumps(done["correct"].result) if done["correct"].result else True
    killed = [d for d in done.values() if d.result is None]
    assert len(killed) <= 1
    if killed:
        assert "worker died" in killed[0].failure
        assert "(exit code -9)" in killed[0].failure    # read once it is joined: it said "exit code None"
    assert pool.replaced == len(killed)
    survivors = [d for d in done.values() if d.result is not None]
    assert all(to_dict is not None and d.result["total"] >= 0 for d in survivors)


# ------------------------------------------------------------------------------------------ a real cluster


def _free_port() -> int:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Cluster:
    address: str
    workers: list     # the two `dask worker` processes (each the leader of its own session)


@pytest.fixture
def cluster(tmp_path):
    """A real `dask scheduler` and two `dask worker` processes on loopback, started from another folder."""
    pytest.importorskip("dask.distributed")
    import subprocess
    import sys
    import time
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip("no dask command in this environment")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    address = f"tcp://127.0.0.1:{_free_port()}"
    log = open(tmp_path / "cluster.log", "w")
    common = dict(cwd=elsewhere, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    processes = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                   "--no-dashboard", "--no-show"], **common)]
    try:
        for _ in range(2):
            processes.append(subprocess.Popen([str(dask), "worker", address, "--nworkers", "1", "--nthreads", "1",
                                               "--no-dashboard", "--host", "127.0.0.1"], **common))
        from dask.distributed import Client
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield Cluster(address, processes[1:])
    finally:
        import os
        import signal
        for process in processes[::-1]:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        for process in processes:
            try:
                process.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.close()
        # A Dask worker process ends without Python's exit handlers (killed, or multiprocessing's os._exit): its
        # zygote removes its temp folder, and its cgroups are the next grader's on that machine to remove: ours.
        from grader.sandbox.supervisor import clean_leftovers
        clean_leftovers()


@pytest.mark.slow
def test_a_real_dask_cluster_grades_relative_paths_like_the_local_pool(pool_results, cluster, tmp_path, monkeypatch):
    """Workers started in another folder get absolute course paths and the notebooks' bytes: no zeros."""
    results, cache = pool_results
    monkeypatch.chdir(REPO)
    paths = [f"assignments/taoistic-search/submissions/{name}.ipynb" for name in SAMPLE]
    batch = grade_batch(paths, "rubrics/taoistic-search.yaml", tmp_path / "out", cache=cache, dask=cluster.address)
    assert batch.failed == [] and batch.graded + batch.unreadable == len(SAMPLE)
    assert scores(batch.results) == scores(results)


@pytest.mark.slow
def test_a_dask_worker_killed_mid_batch_is_reported_and_its_submissions_are_graded_by_the_other(
        pool_results, cluster, tmp_path):
    """The whole `dask worker` (nanny, worker and its sandboxes) is killed once the first result is in: the
    scheduler gives its submissions to the other worker, every student is graded as on the local pool, and the
    batch says which worker was lost."""
    import signal
    results, cache = pool_results
    expected = scores(results)
    folder = tmp_path / "class"
    folder.mkdir()
    paths = []
    for copy in range(2):
        for name in SAMPLE:
            path = folder / f"{name}--{copy}.ipynb"
            path.write_bytes((SUBMISSIONS / f"{name}.ipynb").read_bytes())
            paths.append(path)
    victim = cluster.workers[0]

    def kill_once(result, unchanged):
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait(timeout=30)

    batch = grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, dask=cluster.address, on_result=kill_once)
    assert victim.poll() is not None
    assert batch.failed == [] and batch.graded + batch.unreadable == len(paths)
    assert scores(batch.results) == {path.stem: expected[path.stem.split("--")[0]] for path in paths}
    assert any("was lost during the batch" in note for note in batch.notes), batch.notes


def test_an_unreachable_scheduler_is_one_line_and_exit_2_and_leaves_nothing_behind(tmp_path):
    """The scheduler is asked before anything is written: an empty gradebook.sqlite was left in --out."""
    pytest.importorskip("dask.distributed")
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(SUBMISSIONS / "correct.ipynb"),
                           "--rubric", str(RUBRIC), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"),
                           "--dask", f"tcp://127.0.0.1:{_free_port()}"], capture_output=True, text=True,
                          timeout=within(120))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("cannot reach the Dask scheduler at tcp://127.0.0.1:")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------- supervision


def test_watchdog_follows_the_rubrics_budget_with_a_margin():
    """Beyond the latest deadline a busy machine may move the budget to (SLACK_SHARE more) and the grader's own
    reloads after isolated exercises give back (one load's budget, Sandbox._reload), 10 % and a margin."""
    from dataclasses import replace as changed
    from grader.run.executor import WATCHDOG_MARGIN, watchdog_for
    from grader.judge.grading import Options
    from grader.sandbox.cpuclock import SLACK_SHARE
    rubric = load_rubric(RUBRIC)
    short = changed(rubric, limits=changed(rubric.limits, submission_seconds=20.0, load_seconds=10.0))
    latest = 20.0 * (1 + SLACK_SHARE)
    assert watchdog_for(Setup(short, None)) == pytest.approx(latest * 1.1 + 10.0 + WATCHDOG_MARGIN)
    assert watchdog_for(Setup(short, None, Options(submission_seconds=5.0))) == \
        pytest.approx(5.0 * (1 + SLACK_SHARE) * 1.1 + 10.0 + WATCHDOG_MARGIN)
    # A slow load (a rubric's 60 s) given back after the moved deadline: beyond the margin alone.
    slow = changed(short, limits=changed(short.limits, load_seconds=60.0))
    assert watchdog_for(Setup(slow, None)) > latest + 60.0
    assert LocalPool(Setup(short, None)).watchdog == watchdog_for(Setup(short, None))


class _Stops:
    """An executor whose worker is always stopped: what the watchdog does to a stuck submission."""

    def __init__(self):
        self.seen = []

    def run(self, jobs):
        from grader.run.executor import Done
        for job in jobs:
            self.seen.append(job.student)
            yield Done(job, None, "the grading worker took longer than 42 s (the rubric's budget and a margin) "
                                  "and was stopped")


def test_a_stopped_submission_is_recorded_with_its_reason_and_not_retried_unless_forced(tmp_path, pool_results):
    _, cache = pool_results
    paths = [SUBMISSIONS / "correct.ipynb"]
    stops = _Stops()
    first = grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=stops)
    assert first.failed == ["correct"] and "was stopped" in first.reasons["correct"]
    stored = json.loads((tmp_path / "out" / "correct.json").read_text(encoding="utf-8"))
    assert stored["state"] == "failed" and "was stopped" in stored["warnings"][0]["text"]
    assert stored["warnings"][0]["kind"] == "not finished"
    again = grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=stops)
    assert (again.unchanged, stops.seen) == (1, ["correct"])
    # Not retried, but not hidden either: the rerun said "0 failed, 1 unchanged" and exit 0 for a class that
    # still has a student the grader could not finish.
    assert again.failed_before == ["correct"]
    assert "1 unchanged (1 of them failed before: --force grades them again)" in summary_line(again, "out")
    assert exit_code(again, allow_mismatch=False) == 1
    forced = grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=stops, force=True)
    assert forced.failed == ["correct"] and stops.seen == ["correct", "correct"]
    assert "failed" in (tmp_path / "out" / "gradebook.csv").read_text(encoding="utf-8")


class _Timed:
    """An executor that grades nothing itself: each job gets the result its student was given, with the time it
    is said to have taken, and the order the jobs came in is kept."""

    def __init__(self, results, seconds):
        self.results, self.seconds, self.seen = results, seconds, []

    def run(self, jobs):
        from dataclasses import replace
        from grader.run.executor import Done
        for job in jobs:
            self.seen.append(job.student)
            yield Done(job, to_dict(replace(self.results[job.student], seconds=self.seconds.get(job.student, 0.5))))


def test_a_regrade_hands_out_the_longest_submissions_first(tmp_path, pool_results):
    """Ordered by how long each student's last grading took (from the gradebook), so two workers end together;
    a student never graded before counts as a typical one, and a first batch keeps the intake order."""
    results, cache = pool_results
    by_student = {r.submission: r for r in results}
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in ("correct", "move-dir-transposed", "seed-000")]
    seconds = {"correct": 0.2, "move-dir-transposed": 1.6, "seed-000": 0.9}
    first = _Timed(by_student, seconds)
    grade_batch(paths[:2], RUBRIC, tmp_path / "out", cache=cache, executor=first)
    assert first.seen == ["correct", "move-dir-transposed"]           # nothing known yet: intake order
    forced = _Timed(by_student, seconds)
    grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=forced, force=True)
    # seed-000 was never graded: the median of the known times (the larger of two), so after the slowest.
    assert forced.seen == ["move-dir-transposed", "seed-000", "correct"]
    again = _Timed(by_student, seconds)
    grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=again, force=True)
    assert again.seen == ["move-dir-transposed", "seed-000", "correct"]


class _Watched(_Timed):
    """A _Timed executor that, asked for more after its last result (where a pool waits for its workers to exit),
    notes what the class's CSV held at that moment."""

    def __init__(self, results, csv: Path):
        super().__init__(results, {})
        self.csv, self.after_last = csv, None

    def run(self, jobs):
        yield from super().run(jobs)
        self.after_last = self.csv.read_text(encoding="utf-8") if self.csv.exists() else ""


def test_the_class_outputs_are_written_before_the_executor_winds_down(tmp_path, pool_results):
    """The CSV is written once the last result is recorded, while the pool's workers exit (not after it has
    waited for them), and only once; a batch whose executor yields fewer results than jobs still writes it."""
    results, cache = pool_results
    by_student = {r.submission: r for r in results}
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in ("correct", "move-dir-transposed")]
    csv = tmp_path / "out" / "gradebook.csv"
    watched = _Watched(by_student, csv)
    grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=watched)
    assert watched.after_last is not None and csv.read_text(encoding="utf-8") == watched.after_last
    assert {"correct", "move-dir-transposed"} <= {line.split(",")[0] for line in watched.after_last.splitlines()}

    class _Short(_Timed):      # loses its last job: the CSV is still written, after the loop, with what came
        def run(self, jobs):
            yield from super().run(jobs[:1])

    short = _Short(by_student, {})
    grade_batch([SUBMISSIONS / "seed-000.ipynb", *paths], RUBRIC, tmp_path / "short", cache=cache, executor=short,
                force=True)
    assert short.seen[0] in (tmp_path / "short" / "gradebook.csv").read_text(encoding="utf-8")


class _Sized(_Timed):
    """A _Timed executor that notes the gradebook file's size (the database, not its write-ahead log) when it starts
    and again just before it yields its last result."""

    def __init__(self, results, book: Path):
        super().__init__(results, {})
        self.book, self.sizes = book, []

    def run(self, jobs):
        self.sizes.append(self.book.stat().st_size)
        for number, done in enumerate(super().run(jobs), 1):
            if number == len(jobs):
                self.sizes.append(self.book.stat().st_size)
            yield done


def test_the_gradebook_is_checkpointed_before_the_last_result(tmp_path, pool_results):
    """Once every result but the last is recorded, the gradebook's write-ahead log is copied into its file (while
    the last submission is graded), so closing it at the batch's end has only the last result left to copy and
    sync: the database file has grown by the first results before the last one comes."""
    results, cache = pool_results
    by_student = {r.submission: r for r in results}
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in ("correct", "move-dir-transposed")]
    sized = _Sized(by_student, tmp_path / "out" / "gradebook.sqlite")
    batch = grade_batch(paths, RUBRIC, tmp_path / "out", cache=cache, executor=sized)
    assert batch.graded == 2
    created, before_last = sized.sizes
    assert before_last > created


def _after_last_events(count: int, yielded: int) -> list[str]:
    """What after_last did around an executor of `yielded` results for `count` jobs, in order."""
    from grader.run.batch import after_last
    events: list[str] = []

    def results():
        for index in range(yielded):
            events.append(f"asked {index + 1}")
            yield index + 1

    for item in after_last(results(), count, lambda: events.append("then"), lambda: events.append("before")):
        events.append(f"took {item}")
    return events


def test_after_last_runs_before_while_the_last_result_is_awaited():
    """`before` runs once the caller has taken every result but the last (at once for a single job), `then` once
    it has taken the last; neither runs twice, and an executor that yields fewer results runs neither."""
    for count in (1, 2, 3):
        expected = [event for index in range(1, count + 1) for event in (f"asked {index}", f"took {index}")]
        expected.insert(expected.index(f"asked {count}"), "before")
        assert _after_last_events(count, count) == [*expected, "then"], count
    assert _after_last_events(3, 1) == ["asked 1", "took 1"]


def test_longest_first_is_stable_and_keeps_unknowns_typical():
    from grader.run.batch import longest_first
    jobs = [Job(name, f"/x/{name}.ipynb") for name in "abcde"]
    order = longest_first(jobs, {"a": 1.0, "b": 3.0, "d": 1.0, "e": 2.0})
    assert [job.student for job in order] == ["b", "c", "e", "a", "d"]   # c: the median (2.0), before e as given
    assert longest_first(jobs, {}) == jobs


def test_forked_workers_grade_with_the_coordinators_plan_and_their_own_zygote(tmp_path):
    """Given the coordinator's plan, the pool forks its workers (no import, no plan built again); a zygote the
    coordinator already runs stays its own: the worker starts another, and the coordinator's still works."""
    from grader.plan.cases import build_plan
    from grader.sandbox import supervisor
    setup = Setup(load_rubric(RUBRIC), str(tmp_path / "cache"))
    plan = build_plan(setup.rubric, tmp_path / "cache")
    ours = supervisor.zygote()
    pool = LocalPool(setup, jobs=1, plan=plan)
    import threading
    # Forked only from a single-threaded process (another test may have left a thread running).
    assert pool.context.get_start_method() == ("fork" if threading.active_count() == 1 else "spawn")
    done = list(pool.run([Job("correct", str(SUBMISSIONS / "correct.ipynb"))]))
    assert [d.result["total"] for d in done] == [plan.rubric.max_total]
    assert supervisor.zygote() is ours and ours.alive()
    assert LocalPool(setup, jobs=1).context.get_start_method() == "spawn"   # no plan: a fresh interpreter


def test_the_progress_bar_leaves_the_coordinator_single_threaded_so_its_workers_are_forked():
    """A TA's terminal shows a progress bar; drawn by a refresh thread, it made every pool spawn its workers
    (each importing the grader and building the plan again, and unable to take over the zygotes started for it)."""
    import io
    import threading
    from rich.console import Console
    from grader.report.progress import BatchProgress
    before = threading.active_count()
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with BatchProgress(console) as progress:
        progress.start(total=2, unchanged=0)
        assert threading.active_count() == before
    assert "0/2" in console.file.getvalue()   # type: ignore[attr-defined]


PROBES = """
import os, sys
from grader.sandbox import isolation, supervisor
original_probe, original_zygote, log = isolation._run_probe, supervisor.Zygote.__init__, sys.argv[1]
coordinator = os.getpid()

def note(what):
    with open(log, "a", encoding="utf-8") as file:      # forked workers append to the same file
        file.write(f"{what}-{'coordinator' if os.getpid() == coordinator else 'worker'}\\n")

def probe():
    note("probe")
    return original_probe()

def zygote(self):
    note("zygote")
    original_zygote(self)

isolation._run_probe, supervisor.Zygote.__init__ = probe, zygote
from grader.run import executor
original_spares, original_worker, spare_sockets = supervisor.start_spares, executor._worker, set()

def start_spares(count):
    original_spares(count)
    spare_sockets.update(os.fstat(spare.socket.fileno()).st_ino for spare in supervisor._SPARES)

def worker(*args):      # which spares' sockets a forked worker holds: its own only
    held = sorted(os.stat(f"/proc/self/fd/{fd}").st_ino for fd in os.listdir("/proc/self/fd")
                  if os.path.exists(f"/proc/self/fd/{fd}") and os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
                  and os.stat(f"/proc/self/fd/{fd}").st_ino in spare_sockets)
    note(f"holds{len(held)}:{held[0] if held else 0}")
    return original_worker(*args)

supervisor.start_spares, executor._worker = start_spares, worker
from grader.cli import main
args = sys.argv[2:]
first = main(args)
after_first = sorted(open(log).read().split())
isolation.probe.cache_clear()
second = main(args)
print(first, second, isolation._PENDING is None, supervisor._SPARES == [],
      [line for line in after_first if not line.startswith("holds")], sorted(open(log).read().split()))
"""


def test_a_batch_probes_the_sandbox_once_beside_its_start_up_and_its_forked_workers_inherit_it(tmp_path):
    """The isolation probe (a clean interpreter that tries namespaces) and a zygote per worker start once
    `grader grade` knows a submission will run, beside its plan and the grading machinery's imports; the probe is
    read before the workers are forked and each worker adopts a zygote: one probe for the batch, no probe and no
    zygote started by a worker. A regrade with nothing to grade starts neither. In a process of its own: under
    pytest-timeout's thread the pool spawns its workers."""
    import subprocess
    import sys
    paths = [str(SUBMISSIONS / f"{name}.ipynb") for name in ("correct", "seed-000", "old-era")]
    done = subprocess.run([sys.executable, "-c", PROBES, str(tmp_path / "probes.log"), "grade", *paths, "--rubric",
                           str(RUBRIC), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
                           "--jobs", "2", "--quiet"], capture_output=True, text=True, timeout=within(600), cwd=tmp_path)
    first = ["probe-coordinator", "zygote-coordinator", "zygote-coordinator"]
    *_, log = done.stdout.splitlines()[-1].partition("] ")
    assert done.stdout.splitlines()[-1].startswith(f"0 0 True True {first} "), done.stdout + done.stderr
    held = [line for line in eval(log) if line.startswith("holds")]   # noqa: S307 - our own printed list
    assert [(line.partition(":")[0], line.endswith("-worker")) for line in held] == [("holds1", True)] * 2, log
    assert len({line.partition(":")[2] for line in held}) == 2, log     # each its own zygote
    assert sorted(line for line in eval(log) if not line.startswith("holds")) == sorted(first)  # noqa: S307
    assert "3 graded" in done.stdout and "3 unchanged" in done.stdout


def test_the_job_handed_out_when_the_queue_empties_is_marked_last(tmp_path):
    """No worker gets a job after the queue is empty: the one handed out then is marked (Job.last), and only it,
    so its sandbox starts no child ahead for a submission that will not come."""
    from grader.run.executor import _Slot

    class Pipe:
        def __init__(self) -> None:
            self.sent: list[Job] = []

        def send(self, job: Job) -> None:
            self.sent.append(job)
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), jobs=2)
    slots = [_Slot(None, Pipe()), _Slot(None, Pipe())]   # type: ignore[arg-type]
    pending = [Job(name, f"/{name}.ipynb") for name in ("c", "b", "a")]
    pool._hand_out(slots, pending)
    slots[0].job = None
    pool._hand_out(slots, pending)
    sent = [job for slot in slots for job in slot.connection.sent]   # type: ignore[attr-defined]
    assert [(job.student, job.last) for job in sent] == [("a", False), ("c", True), ("b", False)]


def test_a_worker_gets_its_next_submission_before_the_coordinator_writes_the_last_result(tmp_path, monkeypatch):
    """The coordinator hands out the next job before it gives the caller a finished one: while the caller writes
    a result (JSON, gradebook, the notebook's copy) the worker is already grading, never waiting for it."""
    setup = Setup(load_rubric(RUBRIC), str(tmp_path / "cache"))
    events: list[tuple[str, object]] = []
    hand_out = LocalPool._hand_out

    def recorded(self, slots, pending, **options):
        hand_out(self, slots, pending, **options)
        events.append(("busy", sorted(slot.job.student for slot in slots if slot.job is not None)))
    monkeypatch.setattr(LocalPool, "_hand_out", recorded)
    jobs = [Job(name, str(SUBMISSIONS / f"{name}.ipynb")) for name in ("syntax-error", "correct")]
    for done in LocalPool(setup, jobs=1).run(jobs):
        assert done.result is not None
        events.append(("done", done.job.student))
    first = events.index(("done", "syntax-error"))
    assert ("busy", ["correct"]) in events[:first]


def test_a_busy_worker_gets_its_next_job_ahead_only_while_more_jobs_than_workers_are_left(tmp_path):
    """A busy worker has its next job in its pipe (it starts it without waiting for the coordinator to read its
    result) while more jobs than workers are left; the last ones go to whichever worker is free first."""
    from grader.run.executor import _Slot

    class Pipe:
        def __init__(self) -> None:
            self.sent: list[str] = []

        def send(self, job: Job) -> None:
            self.sent.append(job.student)
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), jobs=2)
    slots = [_Slot(None, Pipe()), _Slot(None, Pipe())]   # type: ignore[arg-type]
    pending = [Job(name, f"/{name}.ipynb") for name in "gfedcba"]
    pool._hand_out(slots, pending)
    assert [(s.job and s.job.student, s.ahead and s.ahead.student) for s in slots] == [("a", "c"), ("b", "d")]
    slots[1].job, slots[1].ahead = slots[1].ahead, None     # worker 1 sent b's result and went on to d
    pool._hand_out(slots, pending)
    assert [(s.job and s.job.student, s.ahead and s.ahead.student) for s in slots] == [("a", "c"), ("d", "e")]
    slots[1].job, slots[1].ahead = slots[1].ahead, None     # and e's: two jobs left for two workers
    pool._hand_out(slots, pending)
    assert [(s.job and s.job.student, s.ahead and s.ahead.student) for s in slots] == [("a", "c"), ("e", None)]
    assert [job.student for job in pending] == ["g", "f"]
    assert [slot.connection.sent for slot in slots] == [["a", "c"], ["b", "d", "e"]]   # type: ignore[attr-defined]


def test_the_job_sent_ahead_to_a_worker_that_dies_is_graded_by_its_replacement(tmp_path, monkeypatch):
    """A worker killed with a job sent ahead: nothing is lost. The worker reads the job sent ahead while it grades
    the other, so either may have killed it: both go back to the queue and are graded again, each alone (a
    submission that kills a worker alone is then marked: see the test below); this kill came once, from outside."""
    import os
    import signal
    hand_out = LocalPool._hand_out
    killed: list[int] = []

    def kill_once_ahead(self, slots, pending, **options):
        hand_out(self, slots, pending, **options)
        for slot in slots:
            if slot.ahead is not None and not killed:
                killed.append(slot.process.pid)
                os.kill(slot.process.pid, signal.SIGKILL)
    monkeypatch.setattr(LocalPool, "_hand_out", kill_once_ahead)
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), jobs=1)
    path = str(SUBMISSIONS / "syntax-error.ipynb")
    done = {finished.job.student: finished for finished in pool.run([Job(name, path) for name in "abc"])}
    assert killed and pool.replaced == 1
    assert sorted(done) == ["a", "b", "c"]
    assert all(done[name].result is not None for name in "abc")
    assert pool.alone == {("a", path), ("b", path)}


def test_an_idle_worker_with_nothing_left_is_let_go_and_a_job_that_comes_back_gets_a_new_one(tmp_path,
                                                                                            monkeypatch):
    """Once the queue is empty an idle worker is told to stop at once (it exits while the others finish, not
    after them); a job that comes back to the queue afterwards (sent ahead to a worker that died) gets a new
    worker in that place."""
    from grader.run.executor import _Slot

    class Pipe:
        def __init__(self) -> None:
            self.sent: list[str | None] = []

        def send(self, job: Job | None) -> None:
            self.sent.append(job.student if job is not None else None)
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), jobs=2)
    started: list[_Slot] = []
    stopped: list[_Slot] = []
    monkeypatch.setattr(pool, "_start", lambda index: started.append(_Slot(None, Pipe())) or started[-1])  # type: ignore[arg-type]
    monkeypatch.setattr(pool, "_stop", stopped.append)
    busy = _Slot(None, Pipe(), job=Job("a", "/a.ipynb"))   # type: ignore[arg-type]
    idle = _Slot(None, Pipe())   # type: ignore[arg-type]
    slots = [idle, busy]
    pool._hand_out(slots, [])
    assert idle.let_go and idle.connection.sent == [None]   # type: ignore[attr-defined]
    assert not busy.let_go and busy.connection.sent == []   # type: ignore[attr-defined]
    pool._hand_out(slots, [])
    assert idle.connection.sent == [None]                    # type: ignore[attr-defined]   # told once
    pool._hand_out(slots, [Job("c", "/c.ipynb")])           # c was sent ahead to a worker that then died
    assert stopped == [idle] and started == [slots[0]] and pool.replaced == 0
    assert slots[0].connection.sent == ["c"] and slots[0].job is not None and slots[0].job.last   # type: ignore[attr-defined]


AHEAD = """
import json, os, sys, threading, time
from pathlib import Path
from grader.plan.cases import build_plan
from grader.rubric.schema import load_rubric
from grader.run import executor
from grader.run.executor import Job, LocalPool, Setup
log, cache, rubric, submissions = sys.argv[1:]
original_read, original_grade = executor.read_ahead, executor.grade_result

def note(what):
    with open(log, "a", encoding="utf-8") as file:      # forked workers append to the same file
        file.write(what + "\\n")

def read_ahead(setup, job):
    note(f"read {job.student}")
    if job.student == "killer":
        os._exit(3)      # the worker dies while it reads this one ahead
    return original_read(setup, job)

def grade_result(setup, job, read=None, preloaded=None):
    note(f"grade {job.student} {'ahead' if read is not None else 'now'}")
    if job.student == "first":      # graded only once the next file is read: it was read while this one ran
        for _ in range(600):
            if "read second" in open(log).read():
                break
            time.sleep(0.1)
    result = original_grade(setup, job, read, preloaded)
    note(f"graded {job.student}")
    return result

from grader.judge import grading
original_preload = grading.preload

def preload(*args, **kwargs):      # a lone worker on two CPUs or more loads its next submission ahead too
    preloaded = original_preload(*args, **kwargs)
    note(f"loaded ahead, moved {preloaded.moved}")
    return preloaded

executor.read_ahead, executor.grade_result, grading.preload = read_ahead, grade_result, preload
setup = Setup(load_rubric(Path(rubric)), cache)
pool = LocalPool(setup, jobs=1, plan=build_plan(setup.rubric, Path(cache)))
assert threading.active_count() == 1 and pool.context.get_start_method() == "fork"
names = ["first", "second", "killer", "third", "fourth", "fifth"]
jobs = [Job(name, str(Path(submissions) / ("syntax-error.ipynb" if name == "third" else "correct.ipynb")))
        for name in names]
done = {d.job.student: [d.result["total"] if d.result else None, d.failure] for d in pool.run(jobs)}
print(json.dumps({"done": done, "replaced": pool.replaced}))
"""


def test_a_worker_reads_its_next_submission_while_it_grades_one_and_a_death_names_the_right_one(tmp_path):
    """A worker gets its next job ahead and reads it while the current one is graded (`first` is graded only once
    `second` was read, ahead). A worker that dies with two jobs in flight does not know which one killed it: both
    are tried again, each alone, so only the one that kills a worker alone is marked (here `killer`, which dies
    while read ahead of `second`: with one job per worker `second` would have been marked for it)."""
    import subprocess
    import sys
    log = tmp_path / "log"
    log.touch()
    done = subprocess.run([sys.executable, "-c", AHEAD, str(log), str(tmp_path / "cache"), str(RUBRIC),
                           str(SUBMISSIONS)], capture_output=True, text=True, timeout=within(600), cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    lines = log.read_text().splitlines()
    assert lines.index("read second") < lines.index("graded first"), lines
    assert {name: total for name, (total, _) in report["done"].items()} == {
        "first": 30.0, "second": 30.0, "killer": None, "third": 25.0, "fourth": 30.0, "fifth": 30.0}
    assert "worker died" in report["done"]["killer"][1]
    assert report["replaced"] == 2      # killer read ahead of second, then alone
    # second, whose grading the death cut short, is graded again; killer is read again, alone, and kills again
    assert (lines.count("graded second"), lines.count("read killer")) == (1, 2), lines
    if len(os.sched_getaffinity(0)) >= 2:    # loaded ahead on the CPU the worker does not keep to, and moved
        assert "loaded ahead, moved True" in lines, lines


def test_each_worker_gets_its_first_job_before_the_next_worker_is_forked(tmp_path, monkeypatch):
    """The first submission starts while the next worker is forked (a fork copies the coordinator's page tables),
    and the jobs sent ahead follow only once every worker has its first."""
    from grader.run import executor
    from grader.run.executor import _Slot
    events: list[str | None] = []

    class Pipe:
        def send(self, job: Job | None) -> None:
            events.append(job.student if job is not None else None)

    class Process:
        sentinel = -1

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), jobs=2)
    monkeypatch.setattr(pool, "_start", lambda index: events.append("fork") or _Slot(Process(), Pipe()))  # type: ignore[arg-type]
    monkeypatch.setattr(pool, "_stop", lambda slot: None)
    monkeypatch.setattr(executor, "wait", stop)     # the first wait for a result ends the run here
    with pytest.raises(Stop):
        list(pool.run([Job(name, f"/{name}.ipynb") for name in "abcde"]))
    assert events == ["fork", "a", "fork", "b", "c", None, None]   # c: ahead of a; then both told to stop


def test_a_worker_reads_ahead_only_what_it_parses_in_a_few_milliseconds(tmp_path, plan, grader_cache):
    """The thread that reads ahead keeps the GIL through each C parse (the file's JSON, a cell's code), while the
    current child may wait for the parent's answers: a notebook with a larger cell or more code is read but
    extracted by the grading thread, a larger file not read at all (redteam: twenty 1.85 MB cells held the
    worker 35 s and an A* search ran into its wall backstop)."""
    from grader.run.executor import READ_AHEAD_BYTES, READ_AHEAD_CELL, _adopt_plan, read_ahead
    setup = Setup(plan.rubric, str(grader_cache))
    _adopt_plan(setup, plan)
    notebook = json.loads((SUBMISSIONS / "correct.ipynb").read_text(encoding="utf-8"))

    def written(name: str, cell: dict) -> Job:
        path = tmp_path / f"{name}.ipynb"
        path.write_text(json.dumps({**notebook, "cells": [*notebook["cells"], cell]}), encoding="utf-8")
        return Job(name, str(path))
    small = read_ahead(setup, written("small", {"cell_type": "markdown", "metadata": {}, "source": "notes"}))
    assert small is not None and small.extracted is not None
    code = "x = 1\n" * (READ_AHEAD_CELL // 6 + 1)
    large_cell = read_ahead(setup, written("cell", {"cell_type": "code", "execution_count": None, "metadata": {},
                                                    "outputs": [], "source": code}))
    assert large_cell is not None and large_cell.notebook is not None and large_cell.extracted is None
    text = "y" * READ_AHEAD_BYTES
    assert read_ahead(setup, written("file", {"cell_type": "markdown", "metadata": {}, "source": text})) is None
    from grader.judge.grading import grade_read, support_sources
    assert grade_read(large_cell, plan, support_sources(plan)).total == plan.rubric.max_total   # extracted there


def test_a_result_comes_back_from_its_worker_by_name_and_reads_back_as_the_worker_made_it(plan):
    """What the coordinator's plan holds too (the cases' calls, expected values, right answers) crosses from the
    worker by name and is put back from the coordinator's plan: the same result, the same stored text, and the
    plan's own objects (what the results' writers recognise by identity). The dict put back is the worker's stored
    form, fields in order: the coordinator writes from it (stored_form_of) the same text as from the result."""
    import pickle
    from dataclasses import replace
    from grader.run.batch import grade_one
    from grader.run.executor import _by_name, _by_value
    from grader.store.results import from_dict, stored_form, stored_form_of
    from grader import textsafe
    for name in ("correct", "move-dir-transposed", "syntax-error"):
        made = stored_form(grade_one(SUBMISSIONS / f"{name}.ipynb", plan))
        want = from_dict(pickle.loads(pickle.dumps(made)))
        sent = pickle.dumps(_by_name(made, plan), protocol=pickle.HIGHEST_PROTOCOL)
        assert pickle.loads(sent)[1]   # something went by name: every result holds the plan's calls
        back = _by_value(*pickle.loads(sent), plan)
        got = from_dict(back)
        assert got == want
        assert textsafe.json_text(stored_form(got)) == textsafe.json_text(stored_form(want))
        late = replace(got, late=True, penalty=2.5, submitted_at="2026-11-28T08:00:00+00:00", notebook="notebooks/x")
        assert textsafe.json_text(stored_form_of(dict(back), got, late)) == textsafe.json_text(stored_form(late))
        other = replace(late, exercises=late.exercises[1:], extra={"x": 1})   # not only its plain fields: made again
        assert textsafe.json_text(stored_form_of(dict(back), got, other)) == textsafe.json_text(stored_form(other))
        calls = {case.id: case.shown_call for cases in plan.cases.values() for case in cases}
        for exercise in got.exercises:
            for case in exercise.cases:
                assert case.call is calls[case.id] or case.call != calls[case.id]
    correct = _by_name(stored_form(grade_one(SUBMISSIONS / "correct.ipynb", plan)), plan)[0]
    # (a right answer that is not the reference's, another shortest path, travels: it is the student's)
    assert all(case["call"] is None and case["expected"] is None for e in correct["exercises"] for case in e["cases"])


def test_an_on_time_result_is_written_from_its_workers_form_and_a_late_one_keeps_its_share(plan):
    """The batch assesses each result's lateness before writing it; a student on time (most of a class) changes
    only plain fields, so the worker's stored form is written as it came (stored_form_of returns it), not made
    again case by case from the result (~0.3 ms of the coordinator's CPU a Taoistic notebook). A late one with a
    share still gets it in `extra`, and a share a result held is dropped when the new assessment has none."""
    from grader.rubric.lateness import LATE_SHARE, Lateness
    from grader.run.batch import _late, grade_one
    from grader.store.results import from_dict, stored_form, stored_form_of
    made = stored_form(grade_one(SUBMISSIONS / "correct.ipynb", plan))
    read = from_dict(made)
    on_time = _late(read, Lateness(late=False, submitted_at="2026-11-20T12:00:00+00:00"))
    data = dict(made)
    assert stored_form_of(data, read, on_time) is data
    assert data["submitted_at"] == "2026-11-20T12:00:00+00:00" and data["late"] is False
    late = _late(read, Lateness(late=True, days=1, penalty=3.0, share=0.1))
    assert late.extra[LATE_SHARE] == 0.1 and LATE_SHARE not in read.extra
    assert stored_form_of(dict(made), read, late) == stored_form(late)
    again = _late(late, Lateness(late=False))
    assert LATE_SHARE not in again.extra and again.extra == read.extra


def test_results_arrive_with_the_coordinators_plan_frozen_and_its_collector_settings_come_back(tmp_path):
    import gc
    from grader.run.batch import YOUNG_OBJECTS
    seen = []
    before = gc.get_threshold(), gc.get_freeze_count()
    grade_batch([SUBMISSIONS / "syntax-error.ipynb"], RUBRIC, tmp_path / "out", jobs=1, cache=tmp_path / "cache",
                on_result=lambda result, unchanged: seen.append((gc.get_freeze_count(), gc.get_threshold()[0])))
    assert len(seen) == 1 and seen[0][0] > 0 and seen[0][1] >= YOUNG_OBJECTS
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_result_its_worker_cannot_send_is_reported_and_the_results_after_it_still_go(tmp_path):
    """The worker's results go out on a thread of their own (_Outbox): a Done that fails to be sent for another
    reason than a closed pipe (it does not pickle: a grader bug) is answered by a failure the grading machine
    caused, not lost with the thread, which would leave the coordinator waiting until its watchdog and then record
    the student as the cause."""
    import pickle
    from multiprocessing import Pipe
    from grader.run.executor import _Outbox

    class Refusing:
        """The worker's end of the pipe, whose first send does not pickle."""

        def __init__(self, connection) -> None:
            self.connection, self.refused = connection, False

        def send(self, done) -> None:
            if not self.refused:
                self.refused = True
                raise pickle.PicklingError("cannot pickle this result")
            self.connection.send(done)
    ours, theirs = Pipe()
    outbox = _Outbox(Refusing(theirs), Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), by_name=False)
    outbox.put(Job("a", "/a.ipynb"), None, "first")
    outbox.put(Job("b", "/b.ipynb"), None, "second")
    outbox.close()
    got = []
    while ours.poll():
        got.append(ours.recv())
    assert [(done.job.student, done.record) for done in got] == [("a", False), ("b", False)]
    assert "PicklingError" in got[0].failure and got[1].failure == "second"


def test_a_new_gradebook_is_made_beside_the_plan_and_waited_for_before_the_fork(tmp_path, pool_results, monkeypatch):
    """A class graded for the first time has its gradebook made on a thread while the plan is built; no thread
    of it is left when the pool forks its workers, and what went wrong making it is raised as before."""
    import threading
    _, cache = pool_results
    before = threading.active_count()
    seen = []
    original = LocalPool.__init__

    def init(self, *args, **kwargs):
        seen.append((threading.active_count(), (tmp_path / "out" / "gradebook.sqlite").is_file()))
        original(self, *args, **kwargs)

    monkeypatch.setattr(LocalPool, "__init__", init)
    batch = grade_batch([SUBMISSIONS / "correct.ipynb"], RUBRIC, tmp_path / "out", jobs=1, cache=cache)
    assert seen == [(before, True)]
    assert [row.student for row in batch.rows] == ["correct"] and batch.graded == 1
    blocked = tmp_path / "file"
    blocked.write_text("not a folder", encoding="utf-8")
    with pytest.raises(OSError):
        grade_batch([SUBMISSIONS / "correct.ipynb"], RUBRIC, tmp_path / "out2", jobs=1, cache=cache,
                    gradebook=blocked / "gradebook.sqlite")
    assert threading.active_count() == before


def test_grade_collects_no_garbage_before_its_results_and_restores_the_collector(tmp_path, monkeypatch):
    """`grade` keeps the collector off through its start-up (what it makes lives for the batch), the results'
    collector turns it on while results stream in (and back off after), and the command restores it (main() is
    called in-process by library users)."""
    import argparse
    import gc
    import grader.cli as cli
    from grader.run.batch import results_collector
    seen: list[tuple[str, bool]] = []

    def batch(args):
        seen.append(("start-up", gc.isenabled()))
        with results_collector():
            seen.append(("results", gc.isenabled()))
        seen.append(("after the results", gc.isenabled()))
        return 0

    started = cli._grade_started

    def imports(args):   # the sandbox modules' imports and the probe's start: collector off already
        seen.append(("imports", gc.isenabled()))
        return started(args)

    monkeypatch.setattr(cli, "_grade_batch", batch)
    monkeypatch.setattr(cli, "_grade_started", imports)
    (tmp_path / "gradebook.sqlite").write_bytes(b"")   # not a first grading: no probe or zygote is started
    args = argparse.Namespace(gradebook=str(tmp_path / "gradebook.sqlite"), out=str(tmp_path), dask=None,
                              force=False, jobs=1)
    assert gc.isenabled()
    assert cli._grade(args) == 0
    assert seen == [("imports", False), ("start-up", False), ("results", True), ("after the results", False)]
    assert gc.isenabled()

FAILS_BEFORE_ITS_POOL = """
import sys, threading
from pathlib import Path
from grader.plan import cases
from grader.rubric.schema import RubricError
from grader.run import batch
from grader.sandbox import isolation, supervisor
real = batch._entries

def entries(*args):   # a class that takes longer to read than the new gradebook to make: its thread has ended
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join()
    return real(*args)

def broken(*args, **kwargs):
    raise RubricError(["reference.py:1: the reference module fails to import: ImportError"])

batch._entries, cases.build_plan = entries, broken
out, notebook, rubric, cache = map(Path, sys.argv[1:])
try:
    batch.grade_batch([notebook], rubric, out, jobs=1, cache=cache)
except RubricError:
    print(len(supervisor._SPARES), isolation._PENDING is None)
"""


def test_a_new_gradebooks_batch_that_fails_before_its_pool_leaves_no_spare_zygote_or_probe(tmp_path, pool_results):
    """Beside a new gradebook's making, the probe and the workers' spare zygotes start with the plan, before the
    batch's try that stops them: a plan that failed to build left them running as long as the process lived. In a
    process of its own: under pytest-timeout's thread no spare is started."""
    import subprocess
    import sys
    _, cache = pool_results
    done = subprocess.run([sys.executable, "-c", FAILS_BEFORE_ITS_POOL, str(tmp_path / "out"),
                           str(SUBMISSIONS / "correct.ipynb"), str(RUBRIC), str(cache)],
                          capture_output=True, text=True, cwd=REPO, timeout=within(120))
    assert done.stdout.split() == ["0", "True"], (done.stdout, done.stderr[-2000:])



AFFINITY = "import os\ndef find_tile(tile, S):\n    return sorted(os.sched_getaffinity(0))\n"


def _cpus_seen(result: dict) -> set[tuple[int, ...]]:
    """What a probe's find_tile cases saw as their CPUs (each case's got, a list in its stored form)."""
    return {tuple(case["got"]["list"]) for exercise in result["exercises"] for case in exercise["cases"]
            if isinstance(case.get("got"), dict) and "list" in case["got"]}


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="one CPU: nothing to pin")
def test_each_pool_worker_keeps_to_one_cpu_with_its_sandboxes_and_grades_as_unpinned(tmp_path, pool_results,
                                                                                     monkeypatch):
    """A pool's workers keep one CPU each, round robin over the grader's, and every sandbox (its runtime and each
    exercise's fork) the CPU of the worker it serves, whatever the zygote's: a frame between them then wakes no
    idle CPU. The verdicts (pool_results: pinned) are those of workers left to float."""
    import multiprocessing
    from grader.run import executor
    allowed = sorted(os.sched_getaffinity(0))
    probes = []
    for n in range(4):
        probes.append(tmp_path / f"affinity{n}.py")
        probes[-1].write_text(AFFINITY)
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(tmp_path / "cache")), jobs=2)
    workers, seen = [], {}
    for done in pool.run([Job(path.stem, str(path)) for path in probes]):   # 0, 2 to worker 0; 1, 3 to worker 1
        workers = workers or [os.sched_getaffinity(p.pid) for p in multiprocessing.active_children()]
        seen[done.job.student] = _cpus_seen(done.result)
    assert sorted(map(sorted, workers)) == [[allowed[0]], [allowed[1]]]
    assert seen["affinity0"] == {(allowed[0],)} and seen["affinity1"] == {(allowed[1],)}, seen
    assert all(len(cpus) == 1 and len(next(iter(cpus))) == 1 for cpus in seen.values()), seen
    monkeypatch.setattr(executor, "worker_cpus", lambda allowed, index: None)
    paths = [SUBMISSIONS / f"{name}.ipynb" for name in SAMPLE]
    floating = grade_batch([*paths, probes[0]], RUBRIC, tmp_path / "out", jobs=2, cache=pool_results[1]).results
    assert scores([r for r in floating if r.submission != "affinity0"]) == scores(pool_results[0])
    probe = next(r for r in floating if r.submission == "affinity0")
    assert _cpus_seen(to_dict(probe)) == {tuple(allowed)}


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="one CPU: nothing to set aside")
def test_a_lone_worker_runs_its_own_threads_on_a_cpu_no_worker_keeps_to(tmp_path, pool_results):
    """One worker on a machine of two CPUs or more: every sandbox keeps to the worker's CPU, the spare children
    its starter thread orders too, while the worker's threads that read the next file, send results and order
    the next child run on the CPUs no worker keeps to (executor.aside_cpus): on the worker's CPU they queued
    behind the child grading a student, while another CPU idled."""
    import multiprocessing
    allowed = sorted(os.sched_getaffinity(0))
    probes = []
    for n in range(3):
        probes.append(tmp_path / f"affinity{n}.py")
        probes[-1].write_text(AFFINITY)
    pool = LocalPool(Setup(load_rubric(RUBRIC), str(pool_results[1])), jobs=1)
    threads: dict[int, dict[int, tuple[int, ...]]] = {}
    seen = {}
    for done in pool.run([Job(path.stem, str(path)) for path in probes]):
        for worker in multiprocessing.active_children():
            for task in os.listdir(f"/proc/{worker.pid}/task"):
                try:
                    threads.setdefault(worker.pid, {})[int(task)] = tuple(sorted(os.sched_getaffinity(int(task))))
                except OSError:   # a thread that has just ended
                    pass
        seen[done.job.student] = _cpus_seen(done.result)
    assert len(threads) == 1, threads
    [(pid, tasks)] = threads.items()
    assert tasks.pop(pid) == (allowed[0],)
    assert len(tasks) >= 3 and set(tasks.values()) == {tuple(allowed[1:])}, tasks   # read-ahead, results, spares
    assert all(cpus == {(allowed[0],)} for cpus in seen.values()), seen


class _Cluster:
    """A stand-in LocalCluster that records whether it was closed."""
    made: list["_Cluster"] = []

    def __init__(self, **_: object) -> None:
        self.closed = False
        _Cluster.made.append(self)

    def close(self) -> None:
        self.closed = True


def test_a_local_cluster_no_client_can_use_is_closed_and_the_error_is_one_line(monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    from grader.run.executor_dask import ClusterError, Connection

    def refuse(*_: object, **__: object) -> None:
        raise OSError("no client today")

    _Cluster.made.clear()
    monkeypatch.setattr(distributed, "LocalCluster", _Cluster)
    monkeypatch.setattr(distributed, "Client", refuse)
    with pytest.raises(OSError):
        Connection("local", workers=1)
    assert [c.closed for c in _Cluster.made] == [True]

    def no_nanny(**_: object) -> None:
        raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(distributed, "LocalCluster", no_nanny)
    with pytest.raises(ClusterError, match="cannot start a local Dask cluster: Nanny failed to start."):
        Connection("local", workers=1)
