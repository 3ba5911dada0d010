"""Extraction: a Notebook -> the module the sandbox runs (kept statements in document order, the
dependency slice, magics handled) with a source map back to cells, and what was dropped and why.
"""
