"""puzzle-grader: autograder for puzzle programming assignments in Jupyter notebooks."""

__version__ = "0.1.0"
