"""Intake: submission files (a notebook, a .py, a folder, an LMS zip export) -> one entry per student,
each read into a Notebook (nbformat, v3 upgraded) or refused with the file and the reason.
"""
