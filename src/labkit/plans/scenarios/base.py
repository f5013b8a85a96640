"""The deployment-scenario protocol and its typed results.

A *scenario* is a kind of deployment Lab 2 designs for (a rented fleet, a handheld, a
wearable, a vehicle). Each is a small :class:`Scenario` subclass: which tracks it applies
to (from the track's data), the keys of a design and their defaults, how a design is
validated and evaluated against the track's constraints, the design space labkit searches
for its reference design and the order designs rank in. Instances live in a
:class:`ScenarioRegistry` (ordered: the first scenario that applies to a track wins).

Results are frozen dataclasses: :class:`Constraint`, :class:`Evaluation`,
:class:`ReferenceDesign` and :class:`DesignCheck`; ``as_dict()`` gives the JSON-ready dict
the lab report, the ledger and graders read.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast

from labkit.core.format import plain
from labkit.physics.parallelism import ParallelismSearch
from labkit.tracks import Track

OFF_SCALE = 3.0  # constraint ratio shown for "not evaluable" / off the chart

ConfigValue = int | float | str
Config = dict[str, ConfigValue]              # a normalised design: key -> setting
MetricValue = float | tuple[int, ...] | None  # ints are floats to the type checker
Metrics = Mapping[str, MetricValue]
JSONDict = dict[str, Any]                    # what ``as_dict()`` returns (JSON-ready)
Sense = Literal["max", "min"]
Rank = tuple[float, ...]                     # lower ranks first


@dataclass(frozen=True)
class Constraint:
    """One design constraint: ``value`` against ``limit`` (``sense`` 'max': value <= limit
    passes; 'min': value >= limit). ``value``/``limit`` are None when not evaluable."""

    name: str
    passed: bool
    value: float | None
    limit: float | None
    unit: str
    sense: Sense
    detail: str
    requirement: bool = False
    """A requirement the design itself sets (a context it promises to serve), not a
    resource it uses up: met, it is never the constraint "closest to its limit"."""

    @classmethod
    def compare(cls, name: str, value: float, limit: float, unit: str, detail: str,
                sense: Sense = "max", requirement: bool = False) -> Constraint:
        """The constraint whose verdict is the comparison itself."""
        passed = value <= limit if sense == "max" else value >= limit
        return cls(name, bool(passed), value, limit, unit, sense, detail, requirement)

    @property
    def true_ratio(self) -> float | None:
        """Use of the limit, uncapped (> 1 fails; inf past a zero limit); None when a
        value or limit is missing or not finite (not evaluable)."""
        if self.value is None or self.limit is None:
            return None
        val, lim = float(self.value), float(self.limit)
        if not (math.isfinite(val) and math.isfinite(lim)):
            return None
        if self.sense == "max":
            return val / lim if lim > 0 else (0.0 if val <= 0 else math.inf)
        return lim / val if val > 0 else (0.0 if lim <= 0 else math.inf)

    @property
    def ratio(self) -> float:
        """:attr:`true_ratio` capped at :data:`OFF_SCALE` for the charts (not evaluable
        shows as OFF_SCALE)."""
        r = self.true_ratio
        return OFF_SCALE if r is None else float(min(OFF_SCALE, r))

    def as_dict(self) -> JSONDict:
        return cast(JSONDict, plain({
            "name": self.name, "passed": self.passed, "value": self.value,
            "limit": self.limit, "unit": self.unit, "sense": self.sense,
            "detail": self.detail}))


def _named(constraints: Sequence[Constraint]) -> dict[str, Constraint]:
    return {c.name: c for c in constraints}


@dataclass(frozen=True)
class Evaluation:
    """A design against every constraint of its track: ``constraints`` by name (in order),
    ``metrics`` (``daily_cost`` is the objective: cost or energy per day) and the
    ``devices`` it uses."""

    constraints: Mapping[str, Constraint]
    metrics: Metrics
    devices: int

    @classmethod
    def of(cls, constraints: Sequence[Constraint], metrics: Metrics,
           devices: int) -> Evaluation:
        return cls(_named(constraints), dict(metrics), int(devices))

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(n for n, c in self.constraints.items() if not c.passed)

    @property
    def feasible(self) -> bool:
        return not self.failed

    @property
    def daily_cost(self) -> float:
        x = self.metrics["daily_cost"]
        if not isinstance(x, int | float):
            raise TypeError(f"metric daily_cost must be a number, got {x!r}")
        return float(x)

    def extended(self, constraints: Sequence[Constraint], metrics: Metrics) -> Evaluation:
        """This evaluation with ``constraints`` appended (a name already present is
        replaced in place) and ``metrics`` merged in."""
        cons = dict(self.constraints)
        cons.update(_named(constraints))
        return Evaluation(cons, {**self.metrics, **metrics}, self.devices)

    def as_dict(self) -> JSONDict:
        return {"constraints": {n: c.as_dict() for n, c in self.constraints.items()},
                "failed": list(self.failed), "feasible": self.feasible,
                "devices": self.devices, "metrics": cast(JSONDict, plain(self.metrics))}


@dataclass(frozen=True)
class ReferenceDesign:
    """labkit's best design for a track: its normalised ``config``, ``devices``, the
    ``objective`` (cost or energy per day), its ``evaluation``, the parallelism ``search``
    behind it (fleets) and scenario-specific ``extras`` (handheld: ``max_context``)."""

    config: Config
    devices: int
    objective: float
    evaluation: Evaluation
    search: ParallelismSearch | None = None
    extras: Metrics = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The dict ``reference_design`` returned before typed results (not JSON: it
        holds the search object)."""
        out: dict[str, object] = {"config": dict(self.config), "devices": self.devices}
        if self.search is not None:
            out["search"] = self.search
        out.update(evaluation=self.evaluation.as_dict(), objective=self.objective,
                   **self.extras)
        return out


@dataclass(frozen=True)
class Objective:
    """What Part D minimises: ``name`` ('daily cost' | 'daily energy'), ``unit``, this
    design's ``value`` and the reference design's (None when nothing is feasible)."""

    name: str
    unit: str
    value: float
    reference: float | None


@dataclass(frozen=True)
class DesignCheck:
    """:func:`labkit.plans.design.design_check`'s verdict on one design."""

    track: str
    scenario: str
    config: Config
    constraints: Mapping[str, Constraint]
    devices: int
    min_devices: int | None
    objective: Objective
    reference: ReferenceDesign | None
    metrics: Metrics

    @property
    def failed(self) -> tuple[str, ...]:
        """Names of the failing constraints, in order."""
        return tuple(n for n, c in self.constraints.items() if not c.passed)

    @property
    def feasible(self) -> bool:
        """Every constraint passes."""
        return not self.failed

    @property
    def extra_devices(self) -> int | None:
        """Devices beyond labkit's fewest (None when nothing is feasible)."""
        return None if self.min_devices is None else self.devices - self.min_devices

    def as_dict(self) -> JSONDict:
        """The JSON-ready dict: ``track``, ``scenario``, ``config``, ``feasible``, ``failed``,
        ``constraints`` ({name: {name, passed, value, limit, unit, sense, detail}}),
        ``devices``, ``min_devices``, ``extra_devices``, ``objective`` ({name, unit, value,
        reference}), ``reference`` ({config, devices, feasible, constraints, metrics} +
        extras such as ``max_context``, or None) and ``metrics``."""
        ref = self.reference
        ob = self.objective
        out = {
            "track": self.track, "scenario": self.scenario, "config": dict(self.config),
            "feasible": self.feasible, "failed": list(self.failed),
            "constraints": {n: c.as_dict() for n, c in self.constraints.items()},
            "devices": self.devices, "min_devices": self.min_devices,
            "extra_devices": self.extra_devices,
            "objective": {"name": ob.name, "unit": ob.unit, "value": ob.value,
                          "reference": ob.reference},
            "reference": None if ref is None else {
                "config": dict(ref.config), "devices": ref.devices,
                "feasible": ref.evaluation.feasible,
                "constraints": {n: c.as_dict() for n, c in ref.evaluation.constraints.items()},
                "metrics": ref.evaluation.metrics, **ref.extras},
            "metrics": self.metrics,
        }
        return cast(JSONDict, plain(out))

    def __getitem__(self, key: str) -> Any:
        """``check["feasible"]``: the :meth:`as_dict` entry (for code and gradebooks
        written when design_check returned a dict)."""
        return self.as_dict()[key]


class Scenario(ABC):
    """One kind of deployment. Subclasses set ``id``, ``label`` and ``design_keys`` and
    implement :meth:`applies_to`, :meth:`defaults`, :meth:`validate` and :meth:`evaluate`;
    the reference search uses :meth:`grid` and :meth:`rank` unless :meth:`reference` is
    overridden."""

    id: ClassVar[str]
    label: ClassVar[str]
    design_keys: ClassVar[tuple[str, ...]]
    #: the first feasible design of a :meth:`grid` group is the group's best (skip the rest)
    first_feasible_is_best: ClassVar[bool] = False
    #: the registry asks scenarios whether they apply in this order (lowest first)
    order: ClassVar[int] = 100

    @abstractmethod
    def applies_to(self, track: Track) -> bool:
        """Whether ``track`` is this kind of deployment (from its data, never its id)."""

    @abstractmethod
    def defaults(self, track: Track) -> Config:
        """The track's starting design (every key of :attr:`design_keys`, in order)."""

    @abstractmethod
    def validate(self, track: Track, raw: Mapping[str, object]) -> Config:
        """``raw`` (every design key present) checked and converted; raises ValueError
        naming the key."""

    @abstractmethod
    def evaluate(self, track: Track, config: Config) -> Evaluation:
        """A normalised design against the track's constraints of steady operation."""

    def serving_constraints(self, track: Track, config: Config,
                            evaluation: Evaluation) -> tuple[Sequence[Constraint], Metrics]:
        """Constraints of serving the demand on the design beyond :meth:`evaluate`'s (a
        fleet: each request's prefill and time to first token on the same replicas, and the
        utilisation cap), with the metrics behind them; none by default."""
        return (), {}

    def precision_note(self, config: Config) -> str:
        """Why the weight precision moves few of this design's checks, where the design
        itself explains it (a wearable that runs the model on the phone); "" otherwise."""
        return ""

    def over_budget_reference(self, track: Track) -> ReferenceDesign | None:
        """When no design fits the budget: the fewest that meets every other constraint
        (what the budget would have to pay for); None by default."""
        return None

    def check(self, track: Track, config: Config) -> Evaluation:
        """A normalised design against every constraint: :meth:`evaluate`, then
        :meth:`serving_constraints` (what :func:`labkit.plans.design.design_check` and the
        reference search judge a design by)."""
        ev = self.evaluate(track, config)
        extra, metrics = self.serving_constraints(track, config, ev)
        return ev.extended(extra, metrics) if extra or metrics else ev

    def normalise(self, track: Track, config: object) -> Config:
        """``config`` completed with :meth:`defaults` and validated (unknown keys raise)."""
        keys = ", ".join(self.design_keys)
        if not isinstance(config, Mapping):
            raise ValueError(f"config must be a dict with keys {keys}; "
                             f"got {type(config).__name__}")
        unknown = sorted(set(config) - set(self.design_keys))
        if unknown:
            raise ValueError(f"config has unknown key(s) {', '.join(unknown)}; a {self.id} "
                             f"design takes {keys}")
        return self.validate(track, {**self.defaults(track), **dict(config)})

    def objective_name(self, track: Track) -> str:
        return "daily cost" if track.cost_unit == "USD" else "daily energy"

    def grid(self, track: Track) -> list[list[Config]]:
        """The design space :meth:`reference` searches, in groups (see
        :attr:`first_feasible_is_best` and :meth:`exhausts_group`)."""
        raise NotImplementedError(f"scenario {self.id!r} has no design grid")

    ranking: ClassVar[str] = "the fewest devices, then the least cost or energy"
    objective_basis: ClassVar[str] = ""
    """How the objective is counted where that differs from the labs' other figures."""
    """:meth:`rank` in words (what Part D's objective checkpoint names)."""

    def rank(self, config: Mapping[str, ConfigValue], evaluation: Evaluation) -> Rank:
        """Order of feasible designs (lowest first): fewest devices, then least cost."""
        return (float(evaluation.devices), evaluation.daily_cost)

    def exhausts_group(self, evaluation: Evaluation) -> bool:
        """An infeasible design whose failures rule out the rest of its grid group."""
        return False

    def extras(self, track: Track) -> Metrics:
        """Scenario-specific figures of the reference design (none by default)."""
        return {}

    def reference(self, track: Track) -> ReferenceDesign | None:
        """The best-ranked feasible design of :meth:`grid`, or None."""
        best: tuple[Rank, Config, int] | None = None
        for group in self.grid(track):
            for cfg in group:
                ev = self.check(track, self.normalise(track, cfg))
                if not ev.feasible:
                    if self.exhausts_group(ev):
                        break
                    continue
                key = self.rank(cfg, ev)
                if best is None or key < best[0]:
                    best = (key, dict(cfg), ev.devices)
                if self.first_feasible_is_best:
                    break
        return None if best is None else self.finish(track, best[1], best[2])

    def finish(self, track: Track, config: Mapping[str, object], devices: int,
               search: ParallelismSearch | None = None) -> ReferenceDesign:
        """A chosen design as a :class:`ReferenceDesign` (normalised and evaluated)."""
        cfg = self.normalise(track, config)
        ev = self.check(track, cfg)
        return ReferenceDesign(cfg, devices, ev.daily_cost, ev, search, self.extras(track))

    def answer(self, reference: ReferenceDesign | None) -> str:
        """Part D's computed answer (default: the reference's device count)."""
        return "none fits" if reference is None else str(reference.devices)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id!r}>"


class ScenarioRegistry(Mapping[str, Scenario]):
    """Scenarios by id, in order; :meth:`for_track` picks the first that applies.

    ``load`` (optional) returns the scenarios to start with; it is called on first use, so
    a scenario module may import this package without a cycle at import time."""

    def __init__(self, scenarios: Sequence[Scenario] = (),
                 load: Callable[[], Sequence[Scenario]] | None = None) -> None:
        self._items: dict[str, Scenario] = {}
        self._load = load
        for sc in scenarios:
            self.register(sc)

    def _items_loaded(self) -> dict[str, Scenario]:
        if self._load is not None:
            load, self._load = self._load, None
            found = sorted(load(), key=lambda sc: sc.order)
            for sc in found:
                self._add(sc, None)
        return self._items

    def register(self, scenario: Scenario, *, before: str | None = None) -> Scenario:
        """Add ``scenario`` (last, or ahead of the scenario ``before``); returns it."""
        self._items_loaded()
        return self._add(scenario, before)

    def _add(self, scenario: Scenario, before: str | None) -> Scenario:
        if not isinstance(scenario, Scenario):
            raise ValueError(f"scenario must be a Scenario instance, got {scenario!r}")
        if scenario.id in self._items:
            raise ValueError(f"scenario {scenario.id!r} is already registered")
        if before is None:
            self._items[scenario.id] = scenario
            return scenario
        if before not in self._items:
            raise ValueError(f"before must be a registered scenario ({', '.join(self)}), "
                             f"got {before!r}")
        items = list(self._items.items())
        at = [k for k, _ in items].index(before)
        self._items = dict([*items[:at], (scenario.id, scenario), *items[at:]])
        return scenario

    def unregister(self, scenario_id: str) -> Scenario:
        items = self._items_loaded()
        if scenario_id not in items:
            raise ValueError(f"no scenario {scenario_id!r}; registered: {', '.join(self)}")
        return items.pop(scenario_id)

    def for_track(self, track: Track) -> Scenario:
        for sc in self._items_loaded().values():
            if sc.applies_to(track):
                return sc
        raise ValueError(f"no scenario applies to track {track.id!r} "
                         f"(registered: {', '.join(self)})")

    def __getitem__(self, key: str) -> Scenario:
        return self._items_loaded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items_loaded())

    def __len__(self) -> int:
        return len(self._items_loaded())
