"""Jinja filters exposing ufcctl's vmalert rules and Grafana dashboards (ufcctl/domain/monitoring/).

The role writes what these return with `copy: content=`, never `template:`, so the `{{ $labels.x }}`
in alert annotations reach vmalert as written.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    from ufcctl.domain.monitoring import dashboards, rules
except ImportError:  # plain ansible-playbook from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from ufcctl.domain.monitoring import dashboards, rules


def ufcctl_monitoring_rules(for_overrides: Mapping[str, str] | None = None, group_interval: str | None = None,
                            defrag_overdue_seconds: int = rules.DEFRAG_OVERDUE_SECONDS) -> str:
    """The vmalert rule file; `for_overrides` is `monitoring_alert_for` (alert name -> duration)."""
    return rules.render_rules(for_overrides or None, group_interval or None, int(defrag_overdue_seconds))


def ufcctl_monitoring_dashboards(_: Any = None) -> dict[str, str]:
    """File name -> dashboard JSON text (a filter needs an input; it is ignored)."""
    return {name: dashboards.dashboard_json(model) for name, model in dashboards.dashboards().items()}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_monitoring_rules": ufcctl_monitoring_rules,
                "ufcctl_monitoring_dashboards": ufcctl_monitoring_dashboards}
