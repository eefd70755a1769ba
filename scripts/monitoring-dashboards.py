#!/usr/bin/env python3
"""Regenerate roles/monitoring/files/dashboards/*.json from ufcctl/domain/monitoring/dashboards.py.

Operators import the committed files into Grafana without running ufcctl; a unit test fails when
they drift from the Python.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ufcctl.domain.monitoring import dashboards  # noqa: E402

OUT = ROOT / "roles" / "monitoring" / "files" / "dashboards"

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, model in dashboards.dashboards().items():
        (OUT / name).write_text(dashboards.dashboard_json(model))
        print(f"wrote {OUT / name}")
