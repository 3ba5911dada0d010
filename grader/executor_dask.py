"""The Dask executor: the same jobs on a Dask cluster (a LocalCluster, or SLURM through dask-jobqueue).

Every Dask worker runs `grade_job`, exactly what a local worker runs: it builds the plan once per process and
grades each submission in its own sandbox child, so containment is the same on every machine. Submissions
and the course must be on a filesystem the workers share (as on a university cluster).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from grader.executor import Done, Job, Setup, grade_job


class DaskExecutor:
    """Runs jobs through a dask.distributed Client; `address` is a scheduler address or "local"."""

    def __init__(self, setup: Setup, address: str = "local", *, workers: int | None = None):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise RuntimeError("the Dask executor needs dask[distributed]: pip install 'puzzle-grader[dask]'") \
                from error
        self.setup = setup
        self.cluster: Any = None
        if address == "local":
            # One thread per worker process: a submission's grading is serial, parallelism is across workers.
            self.cluster = LocalCluster(n_workers=workers or None, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            self.client = Client(address)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> "DaskExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, jobs: Sequence[Job]) -> Iterator[Done]:
        from dask.distributed import as_completed
        if not jobs:
            return
        futures = {self.client.submit(grade_job, self.setup, job, pure=False, key=f"grade-{job.student}-{i}"): job
                   for i, job in enumerate(jobs)}
        for future in as_completed(futures):
            job = futures[future]
            try:
                yield Done(job, future.result())
            except Exception as error:  # a worker lost or a grader bug: that submission is marked, the rest go on
                yield Done(job, None, f"the Dask worker failed on this submission: {type(error).__name__}: {error}")
