"""The checks, one registry: `equal`, `unordered`, `path` and the reference module's own check
functions, each with the options it takes declared once. A check gets plain data and returns a Verdict.
"""
