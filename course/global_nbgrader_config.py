"""nbgrader settings every account on the hub shares (students and graders).

Install as ``/etc/jupyter/nbgrader_config.py`` on the JupyterHub machine (or as
``<env>/etc/jupyter/nbgrader_config.py`` in the environment the hub and its servers run
from). Students' assignment list then shows the ``labkit`` course and fetches from /
submits to the exchange; the grader's ``course/nbgrader_config.py`` (loaded from the
course repository) adds the course root and the authoring settings on top.
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "labkit"
# World-writable with the sticky bit (mode 1777), created by the admin once:
#   mkdir -p /srv/nbgrader/exchange && chmod 1777 /srv/nbgrader/exchange
# course/jupyterhub_config.py passes LABKIT_EXCHANGE_ROOT on to every server when the
# hub's environment sets it (the hub test uses a temporary exchange).
c.Exchange.root = os.environ.get("LABKIT_EXCHANGE_ROOT", "/srv/nbgrader/exchange")
