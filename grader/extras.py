"""Which optional extra brings a third-party module, so a command run without it fails in one clear line.

The base install is what a student needs to self-check; the TA's reports and clusters come as extras
(pyproject.toml). A command that reaches for a module of a missing extra says what to install, not a traceback.
"""

from __future__ import annotations

EXTRA_OF = {
    "jinja2": "reports", "markupsafe": "reports", "matplotlib": "reports", "nbconvert": "reports",
    "pygments": "reports", "nh3": "reports", "copydetect": "reports",
    "dask": "dask", "distributed": "dask", "dask_jobqueue": "dask",
}


def missing_extra(error: ImportError) -> str | None:
    """The line to show for `error`, when it is a module of an extra that is not installed; else None."""
    module = (error.name or "").split(".")[0]
    extra = EXTRA_OF.get(module)
    if extra is None:
        return None
    return f"this command needs {module}, which comes with the {extra} extra: pip install 'puzzle-grader[{extra}]'"
