"""Lets the placement tests import the shared kubectl-shaped builders in tests/fixtures/placement."""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "placement"
sys.path.insert(0, str(FIXTURES))
