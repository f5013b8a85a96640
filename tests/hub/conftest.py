"""tests/hub: the course on a real JupyterHub (marker ``hub``); see test_hub.py."""

from __future__ import annotations

import sys
from pathlib import Path

# browser_helpers (JupyterLab driving) lives beside the browser tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
