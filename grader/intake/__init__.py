"""Intake: submission files (a notebook, a .py, a folder, an LMS zip export) -> one entry per student,
each read into a Notebook (nbformat, v3 upgraded) or refused with the file and the reason. Also the warning
model (warning.py): the first stage defines it so every later stage can report a warning with its place.
"""
