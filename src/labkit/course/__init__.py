"""Instructor tooling: generate nbgrader source notebooks from one lab spec per lab and
regenerate the student release with the real ``nbgrader generate_assignment``.

Lab specs (with solutions and hidden tests) live in the course repository under
``course/labs/`` and are *not* part of the installed package, so a student's labkit
cannot be asked for an answer.
"""
