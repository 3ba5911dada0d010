"""Judging: a submission's Extracted module, the Plan and a case runner (the sandbox) -> per-case verdicts
(checks, on plain data only), accepted variants, and exercise scores (pure) -> a SubmissionResult.
"""
