"""Storage: the result model every writer reads (SubmissionResult, schema-versioned JSON, bounds), the
SQLite gradebook of a class, and TA overrides kept apart from automatic scores; the status vocabulary
(words and symbols) every writer shows.
"""
