"""Render roles/kube_control_plane's files the way a run does, without Ansible's executor: the role's
defaults and vars, the set_fact steps of tasks/main.yml (the plan) and templates/docs.yaml.j2, evaluated
with Ansible's templating against the variables ufcctl resolves from an inventory (only the control-plane
and etcd hosts reach Ansible, as in a run). Used by the render unit tests and by the real-kubeadm check
(tests/integration/test_real_kubeadm_config.py)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader, init_plugin_loader
from ansible.template import Templar, trust_as_template
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.helpers.ansible_values import trusted as _trusted
from ufcctl.app.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "kube_control_plane"
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())


def templar_factory() -> Callable[[dict[str, Any]], Templar]:
    init_plugin_loader()
    filter_loader.add_directory(str(ROLE / "filter_plugins"))
    return lambda variables: Templar(loader=DataLoader(), variables=variables)


def ca_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "test ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


_LOADED: dict[Path, Any] = {}


def variables_of(
    inventory_dir: Path, host: str, templar_factory, ca_pem: str, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The variables a task of the role sees on `host`, after the role's plan step."""
    if inventory_dir not in _LOADED:  # the 16k inventory is loaded once for all cases
        _LOADED[inventory_dir] = load_inventory(inventory_dir)
    inv = _LOADED[inventory_dir]
    wanted = set(inv.group_hosts("kube_control_plane"))
    for group in ("etcd_core", "etcd_events", "etcd_pods"):
        wanted |= set(inv.group_hosts(group))
    groups = {g: [h for h in inv.group_hosts(g) if h in wanted] for g in inv.groups}
    hostvars = {h: dict(inv.hosts[h].vars) for h in wanted}
    variables: dict[str, Any] = {
        **_trusted(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())),
        **_trusted(yaml.safe_load((ROLE / "vars" / "main.yml").read_text())),
        **hostvars[host],
        "groups": groups,
        "hostvars": hostvars,
        "inventory_hostname": host,
        "role_path": str(ROLE),
        "ansible_managed": "managed by test",
        "playbook_dir": str(ROOT / "playbooks"),
        "__kube_control_plane_token": "abcdef.0123456789abcdef",
        "__kube_control_plane_certificate_key": "0" * 64,
        **(overrides or {}),
    }
    variables["__kube_control_plane_ca_hash"] = templar_factory({"pem": ca_pem}).template(
        trust_as_template("{{ pem | ufcctl_kcp_ca_hash }}")
    )
    # what each host's probe would read (the lab's hosts have an IP ansible_host, as here)
    for name in hostvars:
        probe = {"address": hostvars[name].get("ansible_host"), "missing": []}
        hostvars[name]["__kube_control_plane_probe"] = probe
    variables["__kube_control_plane_probe"] = hostvars[host]["__kube_control_plane_probe"]
    variables["ansible_play_hosts_all"] = groups["kube_control_plane"]
    # tasks/main.yml's set_fact steps in order (the role's own expressions)
    for task in MAIN_TASKS:
        for name, expr in (task.get("ansible.builtin.set_fact") or {}).items():
            hostvars[host][name] = variables[name] = templar_factory(variables).template(_trusted(expr))
    return variables


def render_text(inventory_dir: Path, host: str, templar_factory, ca_pem: str,
                overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """Each file the role writes, as the text the host gets (what the real kubeadm reads)."""
    variables = variables_of(inventory_dir, host, templar_factory, ca_pem, overrides)
    templar = templar_factory(variables)
    source = trust_as_template((ROLE / "templates" / "docs.yaml.j2").read_text())
    files = {}
    for item in templar.template(trust_as_template("{{ __kube_control_plane_files }}")):
        docs = {**variables, "__kube_control_plane_docs": item["docs"]}
        files[item["name"]] = templar_factory(docs).template(source)
    return files


def render(inventory_dir: Path, host: str, templar_factory, ca_pem: str) -> dict[str, list[dict]]:
    """Each file's YAML documents (a document of comments alone, which PyYAML reads as None, left out)."""
    return {name: [d for d in yaml.safe_load_all(text) if d is not None]
            for name, text in render_text(inventory_dir, host, templar_factory, ca_pem).items()}
