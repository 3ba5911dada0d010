"""The plan: a Rubric and its reference module -> every case with its expected value (the reference's
answer, cached and sealed per rubric hash). Runs only trusted code.
"""
