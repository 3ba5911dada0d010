"""The per-run choices of grading, apart from the grading machinery: the CLI, the batch and the executors name
them without importing the judge, the sandbox and the extractor (a regrade with nothing to grade needs none)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """Per-run choices: what a TA may change on the command line, and how the caller runs submissions."""

    case_seconds: float | None = None        # overrides the rubric's floor
    submission_seconds: float | None = None
    memory_mb: int | None = None
    allow_root_sandbox: bool = False         # run student code as root where no unused uid can be had
    prefetch: bool = False                   # a worker grading submission after submission: start each next
                                             # sandbox child while this one runs (see Sandbox)
    last: bool = False                       # with prefetch: no submission follows this one (the pool's last
                                             # job): a child started ahead is used, none is started for a next
