"""labkit: inference-economy and accelerator models for a graded JupyterLab course.

The package is layered; each layer imports only the ones below it (see the README's
"Architecture" section): ``core`` (units, validation, formatting) and ``registries``
(hardware, models) -> ``physics`` -> ``tracks`` -> ``plans`` -> ``ui`` -> ``labs`` ->
``course`` and ``cli``. This module stays light so ``import labkit`` is fast in every
notebook kernel.
"""

from __future__ import annotations

from labkit import _aliases

_aliases.install()

__version__ = "0.1.0"
__all__ = ["__version__"]
