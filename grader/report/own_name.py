"""A result as its student reads it: their file named by its own name, never by the TA's path to the export.

Why: the reason an unreadable (or unfinished) submission was not graded is `<source>: <why>`, where the source is
the path the TA typed (`/home/ta/Downloads/canvas-export.zip:smithjohn_12345_67890_lab.ipynb`). The TA's terminal,
the JSON and the class report keep it (it says where to look); the student's report and Gradescope's results.json
showed it too. There the student's own file name (`smithjohn_12345_67890_lab.ipynb`) is all that is said.
"""

from __future__ import annotations

from dataclasses import replace

from grader.store.results import SubmissionResult


def own_name(path: str) -> str:
    """A recorded path's own file name: `/x/export.zip:a_1_2_lab.ipynb` -> `a_1_2_lab.ipynb`, `/x/bob/lab.ipynb` ->
    `lab.ipynb` (a zip member's name may hold folders of the zip: only the last counts)."""
    return path.rsplit(":", 1)[-1].replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _prefix(text: str, name: str) -> str:
    """The TA's path in front of `name` where `text` starts with `<path to it><name>: `, else ""."""
    at = text.find(f"{name}: ")
    if at <= 0 or "\n" in text[:at] or text[at - 1] not in "/:\\":
        return ""
    return text[:at]


def for_student(result: SubmissionResult) -> SubmissionResult:
    """The result with the TA's path to the file cut from its warnings and its cases' messages (the same object
    when none names it: a graded notebook's warnings are about its cells)."""
    name = own_name(result.path) if result.path else ""
    prefix = next((found for found in (_prefix(w.text, name) for w in result.warnings) if found), "") if name else ""
    if not prefix:
        return result
    said = prefix + name

    def cut(text: str) -> str:
        return text.replace(said, name) if said in text else text

    warnings = tuple(replace(w, text=cut(w.text)) for w in result.warnings)
    exercises = tuple(replace(e, cases=tuple(replace(c, message=cut(c.message), detail=cut(c.detail))
                                             if said in c.message or said in c.detail else c
                                             for c in e.cases)) for e in result.exercises)
    return replace(result, warnings=warnings, exercises=exercises)
