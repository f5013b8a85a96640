"""Jupyter settings the example hub (``course/jupyterhub_config.py``) gives its servers.

Each folder is a Jupyter config directory that the hub puts on a server's
``JUPYTER_CONFIG_PATH``; it ships inside the installed package, so every account on the
hub can read it:

* :data:`STUDENT_CONFIG` -- every user's own server (students and instructors): the
  Assignments list and Validate stay; the formgrader, the course list and Create
  Assignment are turned off (server extensions and JupyterLab plugins), as nbgrader's
  JupyterHub guide tabulates.
* :data:`GRADING_CONFIG` -- the shared grading service: nbgrader's formgrader runs in an
  iframe of the service's own JupyterLab, which JupyterHub >= 4.1 forbids by default
  (``frame-ancestors 'none'``). The hub serves every server and service from its own
  subdomain (``JupyterHub.subdomain_host``), so ``frame-ancestors 'self'`` admits only
  the service's own pages, the secure fix nbgrader's documentation describes. The rest of
  its Content-Security-Policy is the strictest the formgrader works under: everything
  from the service itself (``default-src``, ``connect-src``, ``base-uri``,
  ``form-action``: ``'self'``), images ``'self'`` and ``data:`` only, no plugins. The
  formgrader's inline ``<script>`` elements carry per-page values (ids, the base URL), so
  elements need ``'unsafe-inline'``, and JupyterLab compiles its settings schemas with
  ``new Function`` (``'unsafe-eval'``); inline *handlers* (``onerror=...``) are refused
  except the formgrader's own five, admitted by hash (``script-src-attr``; tests/hub
  checks the hashes against nbgrader's templates). nbconvert's MathJax, from a CDN, is
  refused: the formgrader shows TeX as typed.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
STUDENT_CONFIG = HERE / "student"
GRADING_CONFIG = HERE / "grading"
