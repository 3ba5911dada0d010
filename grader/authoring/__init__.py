"""Authoring tools for instructors: `grader assign` (a master notebook -> template, reference,
rubric), `grader validate` (reference 100 %, template 0, mistakes caught) and mutation testing.
"""
