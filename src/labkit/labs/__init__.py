"""Course labs built from :mod:`labkit` physics and :mod:`labkit.ui.widgets` components.

``labkit.labs.inference_economy`` -- Lab 1, "The Inference Economy" (parts A-D + synthesis).
"""

from labkit.labs.inference_economy import LAB_ID, Lab

__all__ = ["LAB_ID", "Lab"]
