"""The student kit: a rubric -> kit.json (public cases with their expected answers, no reference), and
`grader check` / `from grader import check`, the same judging on a student's machine or live kernel.
"""
