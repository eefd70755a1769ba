"""Controller-side view of the etcd role's settings: defrag knobs per cluster and where the PKI lives.

`ufcctl etcd defrag` must decide exactly as the agents on the nodes do, so it reads the same
inventory variables with the same defaults as roles/etcd/defaults/main.yml (a unit test keeps the
two equal) and the same per-cluster `etcd_cluster_overrides`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ufcctl.domain.etcd.defrag import DefragSettings
from ufcctl.domain.etcd.rule import DEFAULT_RULE, RuleError, parse_rule
from ufcctl.domain.inventory.values import literal

# roles/etcd/defaults/main.yml, the keys the controller needs (name without the etcd_ prefix).
ROLE_DEFAULTS: dict[str, Any] = {
    "quota_backend_bytes": 8 * 1024**3,
    "defrag_rule": DEFAULT_RULE,
    "defrag_min_interval": 3600,
    "defrag_compaction_keep_revisions": 1000,
    "defrag_disarm_threshold": 0.9,
    "defrag_move_leader": False,
    "defrag_lock_ttl": 60,
    "defrag_leader_wait": 600,
}


class SettingsError(ValueError):
    """An inventory value the controller cannot use (the message names the variable)."""


@dataclass(frozen=True)
class ClusterDefragConfig:
    settings: DefragSettings
    lock_ttl_seconds: int
    leader_wait_seconds: float


def _value(hostvars: Mapping[str, Any], cluster: str, key: str) -> Any:
    overrides = literal(hostvars.get("etcd_cluster_overrides")) or {}
    if isinstance(overrides, Mapping) and key in (overrides.get(cluster) or {}):
        return overrides[cluster][key]
    value = literal(hostvars.get(f"etcd_{key}"))
    return ROLE_DEFAULTS[key] if value is None else value


def _truthy(value: Any) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on") if isinstance(value, str) else bool(value)


def defrag_config(hostvars: Mapping[str, Any], cluster: str) -> ClusterDefragConfig:
    """The defrag settings of `cluster` from a member's merged inventory vars."""

    def get(key: str) -> Any:
        return _value(hostvars, cluster, key)

    try:
        rule = parse_rule(str(get("defrag_rule")))
    except RuleError as err:
        raise SettingsError(f"etcd_defrag_rule for cluster {cluster}: {err}") from err
    try:
        settings = DefragSettings(
            rule=rule,
            quota_bytes=int(get("quota_backend_bytes")),
            min_interval_seconds=float(get("defrag_min_interval")),
            compaction_keep_revisions=int(get("defrag_compaction_keep_revisions")),
            disarm_threshold=float(get("defrag_disarm_threshold")),
            move_leader=_truthy(get("defrag_move_leader")),
        )
        return ClusterDefragConfig(settings, int(get("defrag_lock_ttl")), float(get("defrag_leader_wait")))
    except (TypeError, ValueError) as err:
        raise SettingsError(f"etcd settings for cluster {cluster}: {err}") from err


def controller_pki_dir(hostvars: Mapping[str, Any], state_dir: Path) -> Path:
    """Where the role put the CA and ufcctl's client certificate (role default, or the inventory's)."""
    explicit = literal(hostvars.get("etcd_pki_controller_dir"))
    if explicit:
        return Path(str(explicit))
    name = literal(hostvars.get("ufc_cluster_name")) or "default"
    return state_dir / "pki" / str(name) / "etcd"
