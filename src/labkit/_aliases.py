"""Pre-0.2 module paths (``labkit.roofline``, ``labkit.serving``, ...) as aliases.

Gradebooks generated before the layered layout hold hidden-test cells that import the old
paths, and nbgrader restores those cells at autograde time. This finder maps each old name
to the module that now holds its code: attribute access on the old module returns the new
module's own objects (never copies), and importing it warns once. Names that left for
another module (``_MOVED``) resolve there.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

OLD_PATHS: dict[str, str] = {
    "labkit.units": "labkit.core.units",
    "labkit.validation": "labkit.core.validation",
    "labkit.registry": "labkit.core.lookup",
    "labkit.answers": "labkit.core.answers",
    "labkit.hardware": "labkit.registries.hardware",
    "labkit.models": "labkit.registries.models",
    "labkit.roofline": "labkit.physics.roofline",
    "labkit.kvcache": "labkit.physics.kvcache",
    "labkit.capacity": "labkit.physics.capacity",
    "labkit.parallelism": "labkit.physics.parallelism",
    "labkit.phases": "labkit.physics.phases",
    "labkit.batching": "labkit.physics.batching",
    "labkit.edge": "labkit.physics.edge",
    "labkit.economy": "labkit.physics.economy",
    "labkit.serving": "labkit.plans.serving",
    "labkit.widgets": "labkit.ui",
}

# Old module -> {name: new module} for names that left the module they used to live in.
_MOVED: dict[str, dict[str, str]] = {
    "labkit.phases": {"track_phases": "labkit.plans.workload"},
    "labkit.batching": {"track_inputs": "labkit.plans.workload",
                        "track_policies": "labkit.plans.serving"},
    "labkit.economy": {"track_crossover": "labkit.plans.economy",
                       "track_economy": "labkit.plans.economy",
                       "TrackEconomy": "labkit.plans.economy"},
    "labkit.serving": {"state_capacity": "labkit.physics.memory",
                       "StateCapacity": "labkit.physics.memory",
                       "resident_weight_bytes": "labkit.physics.memory",
                       "format_bytes": "labkit.core.format"},
}


class _AliasLoader(importlib.abc.Loader):
    """Makes the old name a thin module whose attributes are the new module's own objects."""

    def __init__(self, old: str) -> None:
        self.old = old

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        target = importlib.import_module(OLD_PATHS[self.old])
        moved = _MOVED.get(self.old, {})
        view = types.ModuleType(self.old, target.__doc__)

        def resolve(name: str) -> object:
            home = importlib.import_module(moved[name]) if name in moved else target
            try:
                return getattr(home, name)
            except AttributeError:
                raise AttributeError(f"module {self.old!r} has no attribute {name!r}") from None

        view.__getattr__ = resolve  # type: ignore[method-assign]  # PEP 562 module hook
        return view

    def exec_module(self, module: types.ModuleType) -> None:
        warnings.warn(f"{self.old} is deprecated; import {OLD_PATHS[self.old]}",
                      DeprecationWarning, stacklevel=2)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in OLD_PATHS:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname))


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
