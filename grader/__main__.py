"""`python -m grader`: the same as the `grader` command."""

import os
import sys

# `python -m` puts the working folder first on the import path (unless -P): from a folder of students' files, a
# student's yaml.py or numpy.py would run as the TA when the grader imports that name. The package is found.
if not sys.flags.safe_path and sys.path and sys.path[0] == os.getcwd():
    del sys.path[0]

from grader.cli import console  # noqa: E402

console()
