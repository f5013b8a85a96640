"""The inference economy: when the recurring serving bill overtakes the one-time setup.

Setup (fine-tuning, compilation, validation) is paid once; every request then costs
``cost_per_event`` (USD on rented devices, mWh or Wh of energy on owned ones). With
``events_per_day`` requests a day, cumulative serving cost grows linearly,

    recurring(t) = cost_per_event x (1 - saving) x events_per_day x t      (t in days)

and passes the setup cost at t* = setup / daily cost. :func:`track_economy` gathers a
track's defaults -- crossover, phase split, state capacity, serving plan and guardrails --
into one JSON-ready record for the notebooks and ``labkit economy --track ID --json``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.core import validation as v
from labkit.core.units import DAYS_PER_YEAR, SECONDS_PER_HOUR
from labkit.physics.roofline import Derating, decode_roofline
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model

DAYS_PER_WEEK = 7.0


# -- cost crossover ------------------------------------------------------------------------

@dataclass(frozen=True)
class Crossover:
    """Setup vs recurring cost, in the caller's cost unit (USD, mWh, Wh).

    daily_cost / weekly_cost: recurring cost after the optimisation saving, per day / week.
    crossover_days: days until cumulative recurring cost exceeds ``setup_cost``; None when
    that lies beyond ``horizon_days`` (never inf or NaN). For an array of ``events_per_day``
    it is a tuple with one entry per element, and ``crossover_days_capped`` (min(t*,
    horizon)) with the boolean ``crosses`` is the plottable form.
    annual_savings: what the saving removes over a 365-day year.
    days, cumulative_recurring, cumulative_total: daily curves over the horizon (arrays of
    shape (horizon + 1,) or (len(events_per_day), horizon + 1)).
    """

    setup_cost: float
    cost_per_event: float
    effective_cost_per_event: float
    events_per_day: float | np.ndarray
    optimisation_saving: float
    horizon_days: int
    daily_cost: float | np.ndarray
    weekly_cost: float | np.ndarray
    crossover_days: float | tuple[float | None, ...] | None
    crossover_days_capped: float | np.ndarray
    crosses: bool | np.ndarray
    annual_savings: float | np.ndarray
    days: np.ndarray
    cumulative_recurring: np.ndarray
    cumulative_total: np.ndarray


def crossover_day(setup_cost: float, daily_cost: float) -> float | None:
    """t* = setup_cost / daily_cost, days; None when nothing recurs (daily cost 0)."""
    s = float(v.non_negative("setup_cost", setup_cost))
    d = float(v.non_negative("daily_cost", daily_cost))
    if d == 0.0:
        return None
    t = s / d
    return t if np.isfinite(t) else None


def cost_crossover(setup_cost: object, cost_per_event: object, events_per_day: object,
                   horizon_days: int = 365, optimisation_saving: object = 0.0) -> Crossover:
    """When cumulative serving cost passes the setup cost (vectorised over events_per_day).

    daily = cost_per_event x (1 - optimisation_saving) x events_per_day
    t*    = setup_cost / daily                      (None past the horizon, or if daily = 0)
    annual_savings = cost_per_event x saving x events_per_day x 365
    """
    setup = float(v.non_negative("setup_cost", setup_cost))
    cpe = float(v.non_negative("cost_per_event", cost_per_event))
    events = v.non_negative("events_per_day", events_per_day)
    horizon = v.positive_int("horizon_days", horizon_days)
    saving = float(v.fraction("optimisation_saving", optimisation_saving, allow_one=False))
    effective = cpe * (1.0 - saving)
    ev = np.asarray(events, dtype=float)
    daily = effective * ev
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t_star = np.where(daily > 0, setup / np.where(daily > 0, daily, 1.0), np.inf)
    crosses = np.isfinite(t_star) & (t_star <= horizon)
    capped = np.minimum(t_star, float(horizon))
    days = np.arange(horizon + 1, dtype=float)
    recurring = daily[..., None] * days
    annual = cpe * saving * ev * DAYS_PER_YEAR

    if ev.ndim == 0:
        cross: float | tuple[float | None, ...] | None = (
            float(t_star) if bool(crosses) else None)
        return Crossover(
            setup, cpe, effective, float(ev), saving, horizon, float(daily),
            float(daily) * DAYS_PER_WEEK, cross, float(capped), bool(crosses), float(annual),
            days, recurring, recurring + setup)
    cross = tuple(float(t) if c else None for t, c in zip(t_star.ravel(), crosses.ravel(),
                                                           strict=True))
    return Crossover(
        setup, cpe, effective, ev, saving, horizon, daily, daily * DAYS_PER_WEEK, cross,
        capped, crosses, annual, days, recurring, recurring + setup)


def cost_per_token(hardware: str | Hardware, model: str | Model, batch: object = 1,
                   context_tokens: object = 4096, weight_bits: int = 16, kv_bits: int = 16,
                   tp: int = 1, price_per_device_hour: object = None,
                   mode: str | Derating = "achievable") -> float | np.ndarray:
    """Rented cost of one decoded token, USD: tp x price / 3600 x step_s(batch) / batch.

    In the memory-bound regime the step barely grows with the batch, so the cost per token
    falls almost as 1 / batch; once compute or the KV read dominate it flattens.
    """
    hw = get_hardware(hardware)
    price = hw.price_usd_per_hour if price_per_device_hour is None else price_per_device_hour
    if price is None:
        raise ValueError(f"price_per_device_hour must be given: {hw.id} has no rental price")
    p = float(v.positive("price_per_device_hour", price))
    r = decode_roofline(hw, model, batch=batch, context_tokens=context_tokens,
                        weight_bits=weight_bits, kv_bits=kv_bits, tp=tp, mode=mode)
    return tp * p / SECONDS_PER_HOUR * r.per_token_s
