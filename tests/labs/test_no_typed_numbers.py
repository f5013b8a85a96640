"""No number typed into prose: every figure a student reads in a lab's text comes from a
computed value through the one formatter (:mod:`labkit.core.format`).

Every string literal under ``src/labkit/labs`` (f-strings: their literal parts; docstrings
and format specs aside) is read as a student would see it -- HTML tags and attributes
removed -- and every number left must be one of :data:`ALLOWED`: a lab's or a part's name,
an ordinal, a section of the paper, a name with digits in it (INT4, H100, L*), or a small
constant of a formula (``1 + S/L*``, ``2N``; inside TeX or between operators). A number
such as "~70 ms of a 10 mW MCU", "4-bit" or "under 10%" typed into a sentence fails: it
is true of one setting and goes on being shown at every other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "src" / "labkit" / "labs"

TAG = re.compile(r"<[^<>]*>")
TEX = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|\\\(.*?\\\)", re.S)
NUMBER = re.compile(r"(?<![\w.*^])\d[\d,]*(?:\.\d+)?(?![\w*])")
TEX_COMMAND = re.compile(r"\\(?:frac|text|cdot|times|mathrm|left|right|qquad|sum|max|min)\b")
CSS = re.compile(r"^(?:[a-z-]+\s*:\s*[^;:]+;?\s*)+$")   # an inline style, not a sentence
SMALL_IN_FORMULA = re.compile(r"^\d$")
OPERATORS = set("+-−×*/=<>()^·→")
ALLOWED = (
    re.compile(r"\bLab [12]\b"),              # the labs' names
    re.compile(r"\bPart [A-D]\b"),
    re.compile(r"§\s?\d+(?:\.\d+)*"),           # sections of the paper
    re.compile(r"\bsection \d+(?:\.\d+)*"),
    re.compile(r"\b\d+(?:st|nd|rd|th)\b"),    # ordinals
    re.compile(r"#[0-9a-fA-F]{3,6}\b"),        # colours left in inline styles
)


def _literals(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)):
            skip.add(id(body[0].value))
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            skip.update(id(n) for n in ast.walk(node.format_spec))
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.Constant | ast.JoinedStr):
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            text = "\x00".join(v.value for v in node.values
                               if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node.value, str):
            text = node.value
        else:
            continue
        yield node.lineno, text


def _formula_constant(text: str, m: re.Match[str]) -> bool:
    """A one-digit constant between operators (``B*/B + 1 + S/L*``)."""
    if not SMALL_IN_FORMULA.match(m.group()):
        return False
    before = text[:m.start()].rstrip()[-1:]
    rest = text[m.end():]
    after = rest.lstrip()[:1]
    if rest[:1] == "-" and rest[1:2].isalpha():
        return False   # "4-bit": a quantity, not a term of a formula
    return bool(before and before in OPERATORS) or bool(after and after in OPERATORS)


def typed_numbers(text: str) -> list[str]:
    """The numbers a student would read in ``text`` that no allowance covers."""
    if CSS.match(text.strip()):
        return []
    if " " not in text or not re.search(r"[A-Za-z]{3}", TAG.sub(" ", text)):
        return []   # an id, a key, a unit or a CSS value: not a sentence
    plain = TAG.sub(" ", text)
    # TeX: a whole math block, or a piece of one (a string with a TeX command whose $$ are
    # in another literal); its one-digit constants are the formula's own
    for tex in TEX.findall(plain) + ([plain] if TEX_COMMAND.search(TEX.sub(" ", plain)) else []):
        if any(len(n) > 1 for n in NUMBER.findall(tex.replace("\\,", ""))):
            return [tex]
    plain = TEX.sub(" ", plain)
    if TEX_COMMAND.search(plain):
        return []
    for pattern in ALLOWED:
        plain = pattern.sub(" ", plain)
    return [m.group() for m in NUMBER.finditer(plain) if not _formula_constant(plain, m)]


def test_the_reader_catches_typed_numbers_and_spares_the_rest():
    assert typed_numbers("the model costs ~70 ms of a 10 mW MCU per window") == ["70", "10"]
    assert typed_numbers("fewer bytes: 4-bit weights") == ["4"]
    assert typed_numbers("under 10% once B is large") == ["10"]
    assert typed_numbers("In Lab 1 you chose INT4 weights on an H100 (§5.2)") == []
    assert typed_numbers("per token = B*/B + 1 + S/L* in units of compute") == []
    assert typed_numbers("<div style='margin:6px 0'>From the ledger</div>") == []
    assert typed_numbers("margin:8px 0;padding:8px 12px;border-left:4px solid #7d3c98") == []
    assert typed_numbers("the knee: $B = 2N/\\mathrm{AI}$ in tokens") == []
    assert typed_numbers("a day: $86400 \\cdot E$ joules") == ["$86400 \\cdot E$"]
    assert typed_numbers("\\frac{AI b}{2} = \\frac{x}{2}$$ and so on") == []
    assert typed_numbers("E_{day} = n \\cdot E / 3.6 per day") != []


def test_no_number_is_typed_into_a_lab_sentence():
    found = [f"{path.relative_to(ROOT)}:{line}: {nums} in {text[:100]!r}"
             for path in sorted(LABS.rglob("*.py"))
             for line, text in _literals(path)
             if (nums := typed_numbers(text))]
    assert not found, (f"{len(found)} number(s) typed into prose (format them from the "
                       "value they describe):\n" + "\n".join(found))
