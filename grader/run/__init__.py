"""Running a class: submissions -> workers (local processes or Dask) grading each with judge -> results
in the store and the exports; the Gradescope autograder and `grader doctor`.
"""
