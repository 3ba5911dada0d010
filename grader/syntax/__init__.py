"""Neutral ground over Python syntax, used by every layer: which names a function or statement reads
(analysis) and rubric expressions split into plain data and child code (calls). Pure functions.
"""
