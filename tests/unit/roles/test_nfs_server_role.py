"""roles/nfs_server agrees with ufcctl/domain/nfs: settings handed to the planner, filter plugin, lab vars."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helpers.pyimports import load_file
from ufcctl.domain.nfs.plan import plan_server

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "nfs_server"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SETTINGS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__nfs_server_settings"]
# Used by tasks directly, never by the planner.
ROLE_ONLY = {
    "nfs_server_kernel_threads",
    "nfs_server_kernel_exports_file",
    "nfs_server_kernel_conf_file",
    "nfs_server_ganesha_config_file",
    "nfs_server_backup_keep",  # the store's retention timer (vars/main.yml), not the planner's
}


def test_every_planner_setting_is_a_role_default_and_back() -> None:
    handed = {f"nfs_server_{key}" for key in SETTINGS}
    assert handed <= set(DEFAULTS)
    assert set(DEFAULTS) - handed == ROLE_ONLY
    for key, template in SETTINGS.items():
        assert f"nfs_server_{key}" in template, f"{key} is not fed from nfs_server_{key}"


def test_filter_plugin_exposes_the_planner() -> None:
    module = load_file(ROLE / "filter_plugins" / "ufcctl_nfs.py")
    filters = module.FilterModule().filters()
    settings = {key: DEFAULTS[f"nfs_server_{key}"] for key in SETTINGS}
    settings.update(ganesha_pseudo_path="/data", export_network="10.0.0.0/16", backup_clients=["10.0.0.11"])
    assert filters["ufcctl_nfs_server_plan"](settings) == plan_server(settings).as_dict()
    groups = {"etcd_core": ["cp1", "cp2"], "etcd_events": ["cp2", "cp3"], "nfs_server": ["nfs1"]}
    hostvars = {"cp1": {"ansible_host": "10.0.0.12"}, "cp2": {"ansible_host": "10.0.0.11"}, "cp3": {}}
    assert filters["ufcctl_nfs_backup_clients"](groups, hostvars) == ["10.0.0.11", "10.0.0.12", "cp3"]
    assert filters["ufcctl_nfs_server_plan"](settings)["problems"] == []
