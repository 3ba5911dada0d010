"""Reference implementations of the course's puzzle assignments, one module per assignment.

Course material: read by the grader from the course checkout by path, never shipped to students.
"""
