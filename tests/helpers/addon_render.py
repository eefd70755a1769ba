"""The add-on roles' templates rendered for inventories/sample as the roles would on the controller (the
roles' defaults and vars through Ansible's Templar), as plain objects per component; shared by the tests
that read the add-ons' manifests against their upstream releases (issue 44)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from tests.helpers.ansible_values import trusted
from ufcctl.app.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
DIRECTORIES = {
    "volcano": ROLES / "volcano" / "templates" / "manifests",
    **{part: ROLES / "ascend_components" / "templates" / part
       for part in ("ascend-operator", "clusterd", "noded", "device-plugin", "npu-exporter")},
    "nodelocaldns": ROLES / "nodelocaldns" / "templates" / "manifests",
    "nfs-provisioner": ROLES / "nfs_provisioner" / "templates" / "manifests",
}
# every add-on that runs containers: the above and MindCluster's NPU Exporter
WITH_EXPORTER = {**DIRECTORIES, "npu-exporter": ROLES / "ascend_components" / "templates" / "npu-exporter"}
SAMPLE = ROOT / "inventories" / "sample"


def render_addons(inventory: Path = SAMPLE, directories: dict[str, Path] | None = None,
                  **overrides: Any) -> dict[str, list[dict[str, Any]]]:
    """{component: its rendered objects} for cni, volcano, the MindCluster components, nodelocaldns and the
    NFS provisioner (`directories`: other components, e.g. WITH_EXPORTER), for `inventory`; `overrides` are
    set over the inventory's variables (as extra vars), for every role."""
    from tests.unit.roles.test_cni_render import Render

    init_plugin_loader()
    inv = load_inventory(inventory)
    groups = {g: inv.group_hosts(g) for g in inv.groups}
    variables: dict[str, Any] = {}
    for role in ("k8s_manifests", "volcano", "ascend_components", "nodelocaldns", "nfs_provisioner"):
        variables.update(trusted(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())))
    for role in ("ascend_components", "nfs_provisioner"):
        variables.update(trusted(yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text())))
    variables.update(trusted({k: v for k, v in inv.hosts[groups["kube_control_plane"][0]].vars.items()
                              if isinstance(k, str)}))
    variables.update(groups=groups, inventory_hostname=groups["kube_control_plane"][0],
                     hostvars={name: dict(host.vars) for name, host in inv.hosts.items()}, **overrides)
    templar = Templar(loader=DataLoader(), variables=variables)
    out = {
        component: [d for p in sorted(directory.glob("*.yaml.j2"))
                    for d in yaml.safe_load_all(str(templar.template(trust_as_template(p.read_text())))) if d]
        for component, directory in (directories or DIRECTORIES).items()
    }
    out["cni"] = [d for text in Render(inventory, **overrides).rendered().values()
                  for d in yaml.safe_load_all(text) if d]
    return out
