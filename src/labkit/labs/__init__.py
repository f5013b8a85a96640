"""Course labs built from :mod:`labkit` physics and :mod:`labkit.ui` components.

:data:`LABS` lists them in teaching order (id -> :class:`~labkit.labs.info.LabInfo`):

* ``lab1`` -- :mod:`labkit.labs.inference_economy`, "The Inference Economy";
* ``lab2`` -- :mod:`labkit.labs.accelerators`, "Accelerators: Rooflines, Capacity and
  Parallelism".

``LABS["lab1"].lab_class()`` imports a lab's ``Lab`` class on demand (importing this
package loads no widgets). Every ``Lab`` is a :class:`labkit.labs.session.LabBase`.
"""

from labkit.labs.info import LabInfo
from labkit.labs.registry import LABS, LabRegistry, get_lab

__all__ = ["LABS", "LabInfo", "LabRegistry", "get_lab"]
