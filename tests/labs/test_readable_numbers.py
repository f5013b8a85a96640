"""Numbers a student reads are words, not code: no scientific notation (``2.6e+05``) in any
text of any part, on every lab and track, at the defaults and at each control's ends
(math peeks write powers of ten as TeX, ``\\times10^{5}``, which is allowed)."""

from __future__ import annotations

import re

import ipywidgets as ipw

E_NOTATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+\b")
TEX = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)


def _texts(part) -> list[str]:
    out = [part.readout.value, part.details.value, part._reveal_html.value,
           *(c.value for c in part.callouts.values() if c.active)]
    out.append(TEX.sub(" ", part.math.body))
    out += [f.title or "" for f in part.figures.values()]
    out += [str(getattr(a, "label", "")) for f in part.figures.values() for a in f.axes]
    return out


def _ends(ctl: ipw.ValueWidget) -> list[object]:
    opts = getattr(ctl, "options", None)
    if opts:
        vals = [o[1] if isinstance(o, tuple) else o for o in opts]
        return [vals[0], vals[-1]]
    if isinstance(ctl, ipw.FloatLogSlider):
        return [ctl.base ** ctl.min, ctl.base ** ctl.max]
    return [ctl.min, ctl.max]


def test_no_scientific_notation_in_what_a_student_reads(any_lab):
    bad = []
    for letter in "ABCD":
        part = any_lab.part(letter)
        part.predict.commit(part.expected)
        for name, ctl in [("defaults", None), *part.controls.items()]:
            values = [None] if ctl is None else _ends(ctl)
            start = None if ctl is None else ctl.value
            for v in values:
                if ctl is not None:
                    ctl.value = v
                for text in _texts(part):
                    plain = re.sub(r"<[^>]+>", " ", text)
                    for m in E_NOTATION.finditer(plain):
                        bad.append(f"Part {letter} ({name}={v}): {m.group()} in "
                                   f"...{plain[max(0, m.start() - 60):m.end() + 20]}...")
            if ctl is not None:
                ctl.value = start
    assert not bad, "\n".join(sorted(set(bad))[:40])
