"""`python -m grader`: the same as the `grader` command."""

from grader.cli import console

console()
