"""The compiled cell-metadata check gives nbgrader's verdicts (:mod:`labkit.course.metadata`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import ValidationError
from nbgrader.nbgraderformat.common import SchemaMismatchError
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3
from nbgrader.preprocessors import CheckCellMetadata as Stock

from labkit.course.metadata import CheckCellMetadata, _Validator

ROOT = Path(__file__).resolve().parents[1]
NB = nbformat.read(ROOT / "source" / "lab1_iphone" / "inference_economy.ipynb", 4)
GRADED = [i for i, c in enumerate(NB.cells) if "nbgrader" in c.metadata]
KEYS = ("grade", "solution", "locked", "points", "grade_id", "schema_version", "task",
        "cell_type", "extra")
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 5) | st.floats(-1, 9)
                    | st.text(max_size=4), lambda inner: st.lists(inner, max_size=2)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=2), max_leaves=4)


def _verdict(validator: object, nb: nbformat.NotebookNode) -> tuple[str, str] | None:
    try:
        validator.validate_nb(nb)  # type: ignore[attr-defined]
    except (ValidationError, SchemaMismatchError, KeyError, TypeError) as exc:
        return type(exc).__name__, str(exc)
    return None


def test_the_release_passes_both_checks():
    assert len(GRADED) > 20
    assert _verdict(_Validator(), NB) is None is _verdict(MetadataValidatorV3(), NB)
    out, _ = CheckCellMetadata().preprocess(copy.deepcopy(NB), {})
    assert out.cells == NB.cells


@settings(max_examples=150, deadline=None)
@given(cell=st.sampled_from(GRADED), key=st.sampled_from(KEYS), value=JSON,
       drop=st.booleans())
def test_a_tampered_cell_gets_nbgrader_s_own_verdict(cell, key, value, drop):
    nb = copy.deepcopy(NB)
    meta = nb.cells[cell].metadata["nbgrader"]
    if drop:
        meta.pop(key, None)
    else:
        meta[key] = value
    assert _verdict(_Validator(), nb) == _verdict(MetadataValidatorV3(), nb)


def test_a_duplicate_grade_id_or_bad_points_fails_like_stock():
    nb = copy.deepcopy(NB)
    first, second = (nb.cells[i].metadata["nbgrader"] for i in GRADED[:2])
    second["grade_id"] = first["grade_id"]
    for check in (Stock(), CheckCellMetadata()):
        with pytest.raises(ValidationError, match="metadata may be corrupted"):
            check.preprocess(copy.deepcopy(nb), {})
    bad = copy.deepcopy(NB)
    bad.cells[GRADED[0]].metadata["nbgrader"]["points"] = json.loads('"ten"')
    assert _verdict(_Validator(), bad) == _verdict(MetadataValidatorV3(), bad) is not None
