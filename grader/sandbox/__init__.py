"""Sandbox: an Extracted module's statements and the cases' calls -> Outcomes (encoded values, errors,
timeouts), run in a confined child process. The child's side (runtime, zygote, confine, wire) imports
nothing of the trusted side; the parent's side (process, supervisor, isolation) never trusts what it reads.
"""
