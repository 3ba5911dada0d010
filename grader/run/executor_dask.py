"""The Dask executor: the same jobs on a Dask cluster (a LocalCluster, or SLURM through dask-jobqueue).

Every Dask worker runs `grade_job`, exactly what a local worker runs: it builds the plan once per process and
grades each submission in its own sandbox child, so containment is the same on every machine. The notebook's
bytes travel with its job, so the workers need no access to the submissions; the course (rubric, reference,
support modules) is read by absolute path, and a worker that cannot read it says so instead of grading zeros.
A scheduler that cannot be reached is a ClusterError (one line, exit 2); a lost worker is reported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

from grader.run.executor import Done, Job, Setup, WorkerProblem, grade_job

CONNECT_SECONDS = 10
IN_FLIGHT_PER_WORKER = 4        # jobs (and their bytes) handed to the cluster ahead of the results


class ClusterError(Exception):
    """The cluster cannot be used: no scheduler at the address, or Dask is not installed."""


class Connection:
    """A client of a Dask cluster that answered: a scheduler at an address, or a LocalCluster started here.

    Made before a batch writes anything, so a scheduler that cannot be reached leaves no results folder behind.
    """

    def __init__(self, address: str = "local", *, workers: int | None = None):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise ClusterError("the Dask executor needs dask[distributed]: pip install 'puzzle-grader[dask]'") \
                from error
        self.address = address
        self.cluster: Any = None
        if address == "local":
            # One thread per worker process: a submission's grading is serial, parallelism is across workers.
            try:
                self.cluster = LocalCluster(n_workers=workers or None, threads_per_worker=1, processes=True,
                                            dashboard_address=None)
            except RuntimeError as error:   # e.g. "Nanny failed to start."
                raise ClusterError(f"cannot start a local Dask cluster: {error}") from None
            try:
                self.client = Client(self.cluster)
            except BaseException:
                self.cluster.close()    # a cluster nobody can use must not outlive the batch
                raise
        else:
            try:
                self.client = Client(address, timeout=CONNECT_SECONDS)
            except (OSError, TimeoutError, ValueError) as error:
                reason = " ".join(str(error).split()) or type(error).__name__
                raise ClusterError(f"cannot reach the Dask scheduler at {address}: {reason[:300]}") from None

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DaskExecutor:
    """Runs jobs through a connection's dask.distributed Client (closed by whoever made the connection)."""

    def __init__(self, setup: Setup, connection: Connection):
        self.setup = setup
        self.client = connection.client
        self.notes: list[str] = []

    def _workers(self) -> dict[str, str]:
        """Worker address -> its name, as the scheduler knows them now."""
        try:
            return {address: str(info.get("name", address))
                    for address, info in self.client.scheduler_info()["workers"].items()}
        except Exception:  # noqa: BLE001 - a scheduler gone mid-batch: the jobs' own errors say so
            return {}

    def run(self, jobs: Sequence[Job]) -> Iterator[Done]:
        from dask.distributed import as_completed
        if not jobs:
            return
        seen = self._workers()
        pending = list(jobs)[::-1]
        limit = max(1, len(seen)) * IN_FLIGHT_PER_WORKER
        futures: dict[Any, Job] = {}
        counter = 0

        def submit() -> Any:
            nonlocal counter
            job = pending.pop()
            try:
                data = Path(job.path).read_bytes()
            except OSError:
                data = None     # the worker reports it cannot read it either
            travelling = Job(job.student, job.path, job.source, data)
            counter += 1
            future = self.client.submit(grade_job, self.setup, travelling, pure=False,
                                        key=f"grade-{job.student}-{counter}")
            futures[future] = job
            return future

        stream = as_completed([submit() for _ in range(min(limit, len(pending)))])
        for future in stream:
            job = futures.pop(future)
            if pending:
                stream.add(submit())
            seen.update(self._workers())
            try:
                yield Done(job, future.result())
            except WorkerProblem as problem:
                yield Done(job, None, str(problem), record=False)
            except Exception as error:  # noqa: BLE001 - a lost worker or a grader bug: that submission is marked
                name = type(error).__name__
                if name == "KilledWorker":   # the task killed every worker it was given: the submission did it
                    yield Done(job, None, f"the Dask workers grading this submission died ({error})")
                else:
                    yield Done(job, None, f"the Dask worker failed on this submission: {name}: {error}",
                               record=False)
        gone = sorted(set(seen) - set(self._workers()))
        for address in gone:
            self.notes.append(f"Dask worker {seen[address]} ({address}) was lost during the batch; its "
                              f"submissions were given to other workers")
