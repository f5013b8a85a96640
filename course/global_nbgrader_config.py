"""nbgrader settings every account on the hub shares (students and graders).

Install as ``/etc/jupyter/nbgrader_config.py`` on the JupyterHub machine. Students'
assignment list then shows the ``labkit`` course and fetches from / submits to the
exchange; the grader's ``course/nbgrader_config.py`` (loaded from the course repository)
adds the course root and the authoring settings on top.
"""

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "labkit"
# World-writable with the sticky bit (mode 1777), created by the admin once:
#   mkdir -p /srv/nbgrader/exchange && chmod 1777 /srv/nbgrader/exchange
c.Exchange.root = "/srv/nbgrader/exchange"
