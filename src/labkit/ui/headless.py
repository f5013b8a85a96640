"""What the labs build instead of views in a headless run (:mod:`labkit.core.headless`).

A lab part is built inside :func:`building` (``True`` in a headless run). There the chart
helpers of :mod:`labkit.ui.charts` return a :class:`Sink` instead of a bqplot object (so
bqplot is never imported), :class:`~labkit.ui.Callout` is a :class:`TextCallout`, and the
part's HTML boxes are :class:`TextBox` es: plain objects with the same attributes and
methods, no widget, no comm, no trait machinery. What a cell shows is a :class:`TextView`,
plain text (the HTML's words, tags stripped).

Nothing graded is read from a view: answers, the computed answers and the results come
from the model, which a headless part still computes (once, when a reveal, a summary or
the report first needs it), so a broken model still fails the cell that shows it.
"""

from __future__ import annotations

import contextlib
import html
import importlib
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

LIVE = "show in the live notebook (headless run)"
"""How headless text ends: what it stands for is shown where a front end renders it."""
_BUILDING: ContextVar[bool] = ContextVar("labkit_headless_building", default=False)
_TAG = re.compile(r"<[^>]+>")
_BLOCK = re.compile(r"</?(div|p|li|tr|br|h\d|ol|ul|table)\b[^>]*>", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\r\f\v]+")


@contextlib.contextmanager
def building(headless: bool) -> Iterator[None]:
    """Build views headless (``True``) or not inside this block."""
    token = _BUILDING.set(bool(headless))
    try:
        yield
    finally:
        _BUILDING.reset(token)


def active() -> bool:
    """Whether the view being built now is headless."""
    return _BUILDING.get()


def plain_text(markup: str) -> str:
    """The words of an HTML fragment: block tags become line breaks, other tags go,
    entities are decoded and blank lines collapse."""
    text = html.unescape(_TAG.sub("", _BLOCK.sub("\n", markup)))
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


class LazyModule:
    """A module imported on first attribute use (bqplot: never, in a headless run)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


class Sink:
    """A stand-in for a chart object (figure, scale, axis, mark) in a headless run.

    Any attribute reads back what was set, else another sink; a call, an item or a
    ``hold_sync()`` block does nothing. Arithmetic on it fails: no model value may ever
    come from a chart.
    """

    def __init__(self, **traits: object) -> None:
        self.__dict__.update(traits)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = Sink()
        self.__dict__[name] = value
        return value

    def __call__(self, *args: object, **kwargs: object) -> Sink:
        return Sink()

    def __getitem__(self, key: object) -> Sink:
        return Sink()

    def __setitem__(self, key: object, value: object) -> None:
        return None

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def hold_sync(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def observe(self, *args: object, **kwargs: object) -> None:
        return None

    def __repr__(self) -> str:
        return "Sink()"


class TextBox:
    """An HTML value holder standing in for an ``ipywidgets.HTML`` in a headless run."""

    def __init__(self, value: str = "") -> None:
        self.value = value
        self.classes: list[str] = []

    def add_class(self, name: str) -> None:
        self.classes.append(name)

    def hold_sync(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def text(self) -> str:
        return plain_text(self.value)


class TextChoice:
    """A question's choice without a widget: ``value`` (observers told of a change, as
    ``ipywidgets`` does) and ``disabled``."""

    def __init__(self, value: Any = None) -> None:
        self._value = value
        self.disabled = False
        self._observers: list[Callable[[dict[str, Any]], object]] = []

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, new: Any) -> None:
        old, self._value = self._value, new
        if old != new:
            for fn in list(self._observers):
                fn({"name": "value", "old": old, "new": new, "owner": self})

    def observe(self, fn: Callable[[dict[str, Any]], object], names: object = None) -> None:
        self._observers.append(fn)

    def hold_sync(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


class ShowOrClear:
    """A callout's ``set``, one for the widget and its headless stand-in: ``show(...)``
    when ``active`` else ``clear()`` (the class supplies both)."""

    def show(self, title: str, detail: str = "", recovery: str | None = None) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def set(self, active: bool, title: str = "", detail: str = "",
            recovery: str | None = None) -> None:
        if active:
            self.show(title, detail, recovery)
        else:
            self.clear()


class TextCallout(ShowOrClear, TextBox):
    """:class:`~labkit.ui.Callout`'s API without a widget: ``show`` / ``clear`` / ``set``
    keep the title, detail and recovery; :meth:`text` is the callout in words."""

    def __init__(self, kind: str = "info") -> None:
        super().__init__()
        self.kind = kind
        self.active = False
        self.title, self.detail = "", ""
        self.recovery: str | None = None

    def show(self, title: str, detail: str = "", recovery: str | None = None) -> None:
        self.title, self.detail, self.recovery, self.active = title, detail, recovery, True

    def clear(self) -> None:
        self.title, self.detail, self.recovery, self.active = "", "", None, False

    def text(self) -> str:
        return callout_text(self)


def callout_text(callout: Any) -> str:
    """A callout (a :class:`~labkit.ui.Callout` or a :class:`TextCallout`) in words:
    its kind, title, detail and recovery while it is shown, else ""."""
    if not callout.active:
        return ""
    parts = [f"[{callout.kind}] {plain_text(callout.title)}", plain_text(callout.detail)]
    if callout.recovery:
        parts.append("Recovery: " + plain_text(callout.recovery))
    return "\n".join(p for p in parts if p)


class TextMath:
    """:class:`~labkit.ui.MathPeek`'s API without a widget: the latest formulas."""

    def __init__(self, title: str, body: str = "") -> None:
        self.title, self._body = title, body
        self.is_open = False

    @property
    def body(self) -> str:
        return self._body

    def update(self, body: str) -> None:
        self._body = body

    def __repr__(self) -> str:
        return f"{self.title}: the formulas {LIVE}."


class TextView:
    """What a cell shows in a headless run: plain text, computed when it is made (so a
    model error fails the cell), or each time it is shown when given a function."""

    def __init__(self, text: str | Callable[[], str]) -> None:
        self._text = text

    @property
    def text(self) -> str:
        return self._text() if callable(self._text) else self._text

    def __repr__(self) -> str:
        return self.text
