"""labkit: inference-economy and accelerator models for a graded JupyterLab course.

Import the domain modules directly, e.g. ``from labkit import roofline``; this package
module stays light so ``import labkit`` is fast in every notebook kernel.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
