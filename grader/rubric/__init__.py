"""Configuration: a YAML rubric -> frozen dataclasses (every problem as file:line: reason), its limits
and late policy. Imports no stage.
"""
