"""puzzle-grader: autograder for puzzle programming assignments in Jupyter notebooks."""

__version__ = "0.1.0"


def check(kit, *, namespace=None):
    """Self-check the running notebook's functions on a student kit: `from grader import check; check("kit.json")`.

    Runs the kit's public cases against the live functions of the caller's globals (in a notebook: the
    notebook's), prints the report and returns a summary; hidden cases are only counted. Imported lazily,
    so `import grader` stays cheap.
    """
    import sys
    from grader.kit.kit import check as check_kit
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    return check_kit(kit, namespace=namespace)
