"""Grafana dashboards: registry metrics only, unique ids, a datasource variable, committed JSON current."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.monitoring import dashboards, metrics

REPO = Path(__file__).resolve().parents[4]
COMMITTED = REPO / "roles" / "monitoring" / "files" / "dashboards"
MODELS = dashboards.dashboards()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_panels_query_only_registry_metrics(name: str) -> None:
    for panel in MODELS[name]["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metrics.metric_names_in(target["expr"])
            unknown = names - metrics.known_metrics()
            assert names and not unknown, (panel["title"], unknown)
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_structure(name: str) -> None:
    model: dict[str, Any] = MODELS[name]
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    assert model["schemaVersion"] == 36 and model["uid"].startswith("ufcctl-")
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource"]
    for panel in model["panels"]:
        assert panel["type"] in {"timeseries", "stat"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))


def test_dashboard_uids_are_unique() -> None:
    uids = [m["uid"] for m in MODELS.values()]
    assert len(uids) == len(set(uids)) == 4


def test_committed_json_equals_generated() -> None:
    on_disk = {p.name: p.read_text() for p in COMMITTED.glob("*.json")}
    expected = {name: dashboards.dashboard_json(model) for name, model in MODELS.items()}
    assert on_disk.keys() == expected.keys(), "run scripts/monitoring-dashboards.py"
    for name, text in expected.items():
        assert on_disk[name] == text, f"{name} is stale: run scripts/monitoring-dashboards.py"
        json.loads(on_disk[name])


def test_role_filters_return_the_same_text() -> None:
    path = REPO / "roles" / "monitoring" / "filter_plugins" / "ufcctl_monitoring.py"
    spec = importlib.util.spec_from_file_location("ufcctl_monitoring_filter", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    filters = module.FilterModule().filters()
    assert filters["ufcctl_monitoring_dashboards"]() == {
        name: dashboards.dashboard_json(model) for name, model in MODELS.items()}
    assert "for: 20s" in filters["ufcctl_monitoring_rules"]({"EtcdNoLeader": "20s"}, "")
