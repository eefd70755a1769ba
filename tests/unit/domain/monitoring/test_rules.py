"""vmalert rules: all contract alerts, registry metrics only, accepted by vmalert, checked overrides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ufcctl.domain.monitoring import metrics, rules
from ufcctl.errors import InputError

REPO = Path(__file__).resolve().parents[4]
CONTRACT_ALERTS = {
    "ApiserverTooManyRequests", "ApiserverErrors", "EtcdDatabaseQuotaLowSpace", "EtcdHighFsyncDurations",
    "EtcdHighCommitDurations", "EtcdHighNumberOfLeaderChanges", "EtcdNoLeader", "EtcdMemberDown",
    "EtcdDefragFailing", "EtcdDefragOverdue", "EtcdBackupFailing", "EtcdBackupOverdue",
    "EtcdBackupCopyFailing",
    "HaproxyBackendDown", "HaproxyDown", "VipNotHeld",
    "VipHeldTwice", "NodeExporterDown", "NfsServerDown", "NpuChipUnhealthy", "NpuLinkDown",
    "NpuFabricMismatch", "CertificateExpiresSoon",
    "CertificateExpired",
}
VMALERT_REL = Path("opt/victoria-metrics/usr/bin/vmalert")


def _rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def _vmalert() -> Path:
    """The vmalert that scripts/setup.sh unpacks: in the running venv, else in the checkout's .venv."""
    for venv in (Path(sys.prefix), REPO / ".venv"):
        if (venv / VMALERT_REL).is_file():
            return venv / VMALERT_REL
    pytest.fail(f"vmalert not found under {sys.prefix}/{VMALERT_REL} or {REPO}/.venv/{VMALERT_REL}: "
                "run scripts/setup.sh")


def _dry_run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "rules.yml"
    path.write_text(text)
    return subprocess.run([str(_vmalert()), "-dryRun", f"-rule={path}"], capture_output=True, text=True,
                          timeout=60, check=False)


def test_rule_file_has_every_contract_alert_once_with_labels_and_annotations() -> None:
    found = _rules(rules.render_rules())
    assert sorted(r["alert"] for r in found) == sorted(CONTRACT_ALERTS)
    for rule in found:
        assert rule["labels"]["severity"] in {"critical", "warning"}
        assert rule["labels"]["component"] in rules.COMPONENTS
        assert rule["annotations"]["summary"]
        assert rule["annotations"]["runbook"] == f"roles/monitoring/README.md#{rule['alert'].lower()}"


def test_groups_follow_the_components() -> None:
    groups = yaml.safe_load(rules.render_rules(group_interval="30s"))["groups"]
    assert [g["name"] for g in groups] == [f"ufcctl-{c}" for c in rules.COMPONENTS]
    for group in groups:
        assert group["interval"] == "30s"
        assert {r["labels"]["component"] for r in group["rules"]} == {group["name"].removeprefix("ufcctl-")}
    assert "interval" not in yaml.safe_load(rules.render_rules())["groups"][0]


@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.name)
def test_expressions_name_only_registry_metrics(rule: rules.AlertRule) -> None:
    names = metrics.metric_names_in(rule.expr)
    assert names, "an alert must select at least one series"
    assert names <= metrics.known_metrics(), names - metrics.known_metrics()


def test_label_templates_survive_rendering() -> None:
    summaries = {r["alert"]: r["annotations"]["summary"] for r in _rules(rules.render_rules())}
    assert summaries["NodeExporterDown"].startswith("node exporter on {{ $labels.instance }}")


def test_vmalert_accepts_the_rendered_file(tmp_path: Path) -> None:
    result = _dry_run(tmp_path, rules.render_rules({"EtcdNoLeader": "10s"}, "15s"))
    assert result.returncode == 0, result.stderr[-2000:]


def test_vmalert_rejects_a_broken_expression(tmp_path: Path) -> None:
    # Proves the check above can fail: the same file with one expression cut short.
    text = rules.render_rules().replace('up{job="node"} == 0', 'sum(up{job="node"} == 0')
    assert text != rules.render_rules()
    assert _dry_run(tmp_path, text).returncode != 0


def test_for_overrides_apply() -> None:
    found = {r["alert"]: r["for"] for r in _rules(rules.render_rules({"NodeExporterDown": "30s"}))}
    assert found["NodeExporterDown"] == "30s"
    assert found["EtcdNoLeader"] == rules.DEFAULT_FOR["EtcdNoLeader"] == "1m"


def test_defrag_overdue_threshold_is_configurable() -> None:
    exprs = {r["alert"]: r["expr"] for r in _rules(rules.render_rules(defrag_overdue_seconds=3600))}
    assert exprs["EtcdDefragOverdue"].endswith("> 3600")
    assert rules.RULES[[r.name for r in rules.RULES].index("EtcdDefragOverdue")].expr.endswith("> 172800")


def test_certificate_threshold_is_configurable() -> None:
    exprs = {r["alert"]: r["expr"] for r in _rules(rules.render_rules(cert_warn_days=45))}
    assert exprs["CertificateExpiresSoon"] == (
        "(ufcctl_certificate_not_after_timestamp_seconds - time()) / 86400 < 45 > 0")
    assert exprs["CertificateExpired"].endswith("<= 0")
    default = {r["alert"]: r["expr"] for r in _rules(rules.render_rules())}
    assert "< 30 > 0" in default["CertificateExpiresSoon"]
    for bad in (0, -1, True, "30"):
        with pytest.raises(InputError, match="certificate warning days"):
            rules.render_rules(cert_warn_days=bad)  # type: ignore[arg-type]


BAD = [
    ("unknown alert", {"EtcdNoLeadr": "1m"}, None, "EtcdNoLeadr"),
    ("no unit", {"EtcdNoLeader": "60"}, None, "EtcdNoLeader"),
    ("two units", {"EtcdNoLeader": "1m30s"}, None, "1m30s"),
    ("not a string", {"EtcdNoLeader": 60}, None, "60"),
    ("bad group interval", None, "fast", "fast"),
]


@pytest.mark.parametrize(("overrides", "interval", "named"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_settings_are_refused(overrides: Any, interval: str | None, named: str) -> None:
    with pytest.raises(ValueError, match=named) as info:
        rules.render_rules(overrides, interval)
    assert isinstance(info.value, InputError)


def test_unknown_alert_error_lists_the_known_names() -> None:
    with pytest.raises(InputError) as info:
        rules.alert_for({"Nope": "1m"})
    assert info.value.hint is not None and "VipHeldTwice" in info.value.hint


@pytest.mark.parametrize("value", [0, -1, True, "3600"])
def test_bad_defrag_overdue_seconds(value: Any) -> None:
    with pytest.raises(ValueError, match="defrag overdue"):
        rules.render_rules(defrag_overdue_seconds=value)
