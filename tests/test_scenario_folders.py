"""One place per deployment scenario (:mod:`labkit.scenarios`): every scenario is one folder
holding its plan, views, hooks, objectives and reading; no code outside that folder (or a
track's own module) compares against its id; and a toy fifth scenario -- a folder and its
instructor module, nothing else -- gets Lab 2's widgets, design check and notebook."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from labkit import scenarios as folders
from labkit.core.keys import PARTS
from labkit.labs.accelerators.scenario_views import ScenarioViews, views
from labkit.plans.design import SCENARIOS
from labkit.tracks import TRACKS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "labkit"
COURSE_LABS = ROOT / "course" / "labs"
TOY = Path(__file__).resolve().parent / "scenario_toy"


# -- every folder holds its pieces ----------------------------------------------------------

def test_the_registry_is_the_folders():
    assert folders.ids() == tuple(sorted(SCENARIOS))
    assert SCENARIOS == ("fleet", "handheld", "wearable", "vehicle")  # the order they are asked


@pytest.mark.parametrize("sid", folders.ids())
def test_every_scenario_folder_holds_its_pieces(sid):
    assert folders.piece(sid, "plan.scenario").SCENARIO.id == sid
    about = folders.piece(sid, "about")
    assert about.OBJECTIVES["lab2"] and about.READING and about.MEMO_ASK
    assert isinstance(about.SHOWN_TERMS, tuple)
    v = views(sid)
    assert isinstance(v, ScenarioViews) and tuple(v.parts) == PARTS[:3]
    assert (COURSE_LABS / "scenarios" / f"{sid}.py").is_file()  # its instructor module
    for t in (t for t in TRACKS.values()
              if folders.piece(sid, "plan.scenario").SCENARIO.applies_to(t)):
        assert tuple(folders.piece(sid, "hooks").hooks(t)) == PARTS
        assert v.question(t) and v.part_d_hook(t) and v.part_d_prediction(t)[1]


def test_a_piece_must_be_one_of_the_kinds_and_the_folder_must_exist():
    with pytest.raises(ValueError, match="name"):
        folders.piece("fleet", "exercises")
    with pytest.raises(ValueError, match="scenario_id"):
        folders.piece("submarine", "about")


# -- no switch on an id outside its own folder -------------------------------------------------

SCENARIO_IDS = frozenset(folders.ids())
TRACK_IDS = frozenset(t for t in TRACKS if TRACKS.is_builtin(t))


def _ids_in(node: ast.AST) -> Iterator[str]:
    """Scenario or track ids written as string constants in ``node`` (a tuple, list or set
    of them counts)."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    for x in items:
        if isinstance(x, ast.Constant) and x.value in SCENARIO_IDS | TRACK_IDS:
            yield x.value


def switches(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, id) of every place ``tree`` branches on an id: a comparison or membership
    test, a dict key, a subscript, a ``.get`` key or a ``match`` case."""
    for node in ast.walk(tree):
        found: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            found = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):
            found = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Subscript):
            found = [node.slice]
        elif isinstance(node, ast.MatchValue):
            found = [node.value]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args):
            found = [node.args[0]]
        for f in found:
            for i in _ids_in(f):
                yield getattr(f, "lineno", getattr(node, "lineno", 0)), i


def _own_ids(path: Path) -> set[str]:
    """The ids ``path`` may name: its scenario folder's, its track module's, its
    instructor module's."""
    rel = path.relative_to(ROOT).parts
    if rel[:3] == ("src", "labkit", "scenarios") and len(rel) > 4:
        return {rel[3]}
    if rel[:3] == ("src", "labkit", "tracks"):
        return {path.stem}
    if rel[:3] == ("course", "labs", "scenarios"):
        return {path.stem}
    return set()


def _code_files() -> list[Path]:
    return sorted([*SRC.rglob("*.py"), *COURSE_LABS.rglob("*.py")])


def test_the_switch_reader_sees_every_form():
    code = ('if sc == "fleet": pass\nx = {"vehicle": 1}\ny = d["iphone"]\n'
            'z = sc in ("handheld", "other")\nw = m.get("robotaxi")\n'
            'match sc:\n    case "wearable": pass\nk = {("handheld", "memory"): 1}\n'
            'ok = f("fleet")\nrow = ("fleet", 3)\n')
    assert sorted(i for _, i in switches(ast.parse(code))) == [
        "fleet", "handheld", "handheld", "iphone", "robotaxi", "vehicle", "wearable"]


def test_no_code_outside_a_scenario_folder_compares_against_its_id():
    bad = []
    for path in _code_files():
        own = _own_ids(path)
        for line, i in switches(ast.parse(path.read_text(encoding="utf-8"))):
            if i not in own:
                bad.append(f"{path.relative_to(ROOT)}:{line} branches on {i!r}")
    assert not bad, "\n".join(bad)


# -- a fifth scenario is one folder --------------------------------------------------------------

_TOY_RUN = """
import json, sys
from pathlib import Path
import labkit.scenarios
labkit.scenarios.__path__.append(sys.argv[1])        # the toy folder, as if in the package
from labkit.course.build import load_spec
from labkit.course.hooks import lab2_hooks
from labkit.labs import LABS
from labkit.labs.accelerators import Lab
from labkit.plans.design import SCENARIOS, design_check, design_defaults, scenario
from labkit.tracks import custom_track, get_track, register_track
register_track(custom_track("oura_ring", id="toy_ring", label="Toy ring"))
lab = Lab("toy_ring", gate_explore=False)
chk = design_check("toy_ring", design_defaults("toy_ring"))
spec = load_spec(Path(sys.argv[2]), "lab2")
spec.SCENARIO_DIRS.append(Path(sys.argv[3]))         # its instructor module
nb = spec.build_notebook("toy_ring")
text = "\\n".join(c.source for c in nb.cells)
print(json.dumps({
    "scenarios": list(SCENARIOS), "toy": scenario("toy_ring"),
    "builtin": [scenario(t) for t in ("cloud_fleet", "iphone", "oura_ring", "robotaxi")],
    "parts": [type(p).__name__ for p in lab.parts()],
    "header": lab.header().value, "objectives": list(LABS["lab2"].objectives_for("toy_ring")),
    "hooks": lab2_hooks(get_track("toy_ring")), "check": sorted(chk.constraints),
    "part_d": lab.part("D").banner().value,
    "notebook": text,
}))
"""


def test_a_toy_fifth_scenario_is_one_folder_and_its_instructor_module(tmp_path):
    out = subprocess.run([sys.executable, "-c", _TOY_RUN, str(TOY), str(ROOT),
                          str(TOY / "instructor")], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path, check=False,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                              "LABKIT_LEDGER": str(tmp_path / "ledger.json")})
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["scenarios"][0] == "toy" and r["toy"] == "toy"      # asked first (order 0)
    assert r["builtin"] == ["fleet", "handheld", "wearable", "vehicle"]
    assert r["parts"] == ["PartACNN", "PartBWearable", "PartCWearable", "PartD"]
    assert "Toy question: how often can the toy listen?" in r["header"]
    assert r["objectives"][0].startswith("Toy objective one")
    assert r["hooks"]["B"] == "Toy hook B for Toy ring."
    assert {"flash", "sram", "energy"} <= set(r["check"])
    assert "Toy Part D: meet every toy budget." in r["part_d"]
    nb = r["notebook"]
    for text in ("Toy hook C for Toy ring.", "Toy objective two", "A. Toy, *On toy scenarios*",
                 "Toy exercise B", "Toy exercise C", "the toy decides on its own",
                 "how the toy listens and what it costs", "A strong toy memo"):
        assert text in nb, text
