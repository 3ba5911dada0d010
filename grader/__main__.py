"""`python -m grader`: the same as the `grader` command."""

from grader.cli import main

raise SystemExit(main())
