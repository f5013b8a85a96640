"""Less per screen: every part of every track opens with at most three controls and two
charts; the rest sit in a collapsed "More" disclosure named after what it holds, so nothing
is lost (every control and every chart is still in the part, one click away)."""

from __future__ import annotations

import bqplot as bq
import ipywidgets as ipw
import pytest

import labkit.ui as lw
from labkit.core.answers import AnswerStore
from labkit.labs.common import OPEN_CHARTS, OPEN_CONTROLS
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS


def _open(w: ipw.Widget) -> list[ipw.Widget]:
    """The widgets shown without a click: everything outside a collapsed disclosure."""
    if isinstance(w, lw.More | lw.MathPeek) and not w.is_open:
        return [w]
    return [w] + [x for c in (getattr(w, "children", ()) or ()) for x in _open(c)]


def _all(w: ipw.Widget) -> list[ipw.Widget]:
    return [w] + [x for c in (getattr(w, "children", ()) or ()) for x in _all(c)]


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("lab", sorted(LABS))
def test_each_part_opens_with_few_controls_and_charts(lab, track, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    built = LABS[lab].lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False)
    for part in built.parts():
        shown, every = _open(part.explore), _all(part.explore)
        controls = [c for c in part.controls.values()]
        open_controls = [c for c in controls if any(c is w for w in shown)]
        open_charts = [w for w in shown if isinstance(w, bq.Figure)]
        where = f"{lab} {track} {part.letter}"
        assert len(open_controls) <= OPEN_CONTROLS, where
        assert len(open_charts) <= OPEN_CHARTS, where
        assert all(any(c is w for w in every) for c in controls), where
        assert all(any(f is w for w in every) for f in part.figures.values()), where
        for more in (w for w in every if isinstance(w, lw.More)):
            inside = _all(more.children[0])
            named = [str(c.description) for c in controls if any(c is w for w in inside)]
            named += [lw.figure_name(f) for f in inside if isinstance(f, bq.Figure)]
            assert named and more.title.endswith(", ".join(named)), (where, more.title)
        if len(controls) > OPEN_CONTROLS:   # the part's own choice opens first
            names = part.open_controls()
            assert [n for n in part.primary if n in part.controls][:OPEN_CONTROLS] == \
                names[:len([n for n in part.primary if n in part.controls])]
