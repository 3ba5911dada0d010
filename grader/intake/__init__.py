"""Intake: submission files (a notebook, a .py, a folder, an LMS zip export) -> one entry per student,
each read into a Notebook (nbformat 4 as plain JSON checked by v4check; older versions upgraded by
nbformat) or refused with the file and the reason. Also the warning
model (warning.py): the first stage defines it so every later stage can report a warning with its place.
"""
