"""The labs agree: per track, every quantity of the deployment model that a part of either
lab shows (:meth:`LabPart.shown`) equals the model's at the same (default) settings, or the
part names on screen the basis that makes it differ (another replica shape, the radio
included, the naive release candidate, ...).

``python tests/labs/test_cross_lab_table.py`` prints the table per track (the closing note's).
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.registry import LABS
from labkit.plans.deployment import deployment
from labkit.tracks import TRACKS

REL = 5e-3   # agreement: what three significant figures on screen cannot tell apart


def _visible(part) -> str:
    raw = " ".join([part.decision_line.value, part.readout.value, part.details.value,
                    part.math.body,
                    *(c.value for c in part.callouts.values() if c.active)]
                   + [f.title or "" for f in part.figures.values()])
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", raw)))


def rows(track: str, folder: Path) -> Iterator[tuple[str, str, str, float, float | None, str,
                                                    bool]]:
    """(lab, part, name, shown, model, basis, basis on screen) of each shown quantity."""
    model = deployment(track)
    for lab_id in LABS:
        lab = LABS[lab_id].lab(track, store=AnswerStore(folder / f"{lab_id}.json"))
        for part in lab.parts():
            part.predict.commit(part.expected)
            text = _visible(part)
            for name, q in part.shown().items():
                ref = model.quantities.get(name)
                yield (lab_id, part.letter, name, float(q.value or 0.0),
                       None if ref is None else ref.value, q.basis,
                       bool(q.basis) and q.basis in text)


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_shown_quantity_is_the_model_s_or_says_why_not(track, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    bad, seen = [], 0
    for lab, letter, name, shown, ref, basis, named in rows(track, tmp_path):
        if ref is None:
            continue
        seen += 1
        if shown == pytest.approx(ref, rel=REL):
            continue
        if not named:
            bad.append(f"{lab} Part {letter} {name}: shows {shown:.6g}, the model "
                       f"{ref:.6g}, and names no basis on screen ({basis!r})")
    assert seen >= 2, "no part shows a model quantity"
    assert not bad, "\n".join(bad)


def _named(shown: float, ref: float | None, basis: str, named: bool) -> str:
    if ref is None or abs(shown - ref) <= REL * abs(ref):
        return ""
    return basis if named else "NOT NAMED"


if __name__ == "__main__":   # the table for the closing note
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for t in (sys.argv[1:] or TRACKS):
            print(f"\n{t}\n| lab | part | quantity | shown | model | basis named |")
            print("| --- | --- | --- | --- | --- | --- |")
            for lab, letter, name, shown, ref, basis, named in rows(t, Path(tmp)):
                model = "-" if ref is None else f"{ref:.4g}"
                print(f"| {lab} | {letter} | {name} | {shown:.4g} | {model} | "
                      f"{_named(shown, ref, basis, named)} |")
