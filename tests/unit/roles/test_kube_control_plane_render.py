"""kube_control_plane renders schema-valid kubeadm/scheduler files for inventories/sample and 16,000 nodes.

The role's own expressions are evaluated with Ansible's templating: defaults, vars/main.yml, the
set_fact step of tasks/main.yml (the plan), and templates/docs.yaml.j2, against the variables ufcctl
resolves from the inventory (only the control-plane and etcd hosts reach Ansible, as in a run).
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader, init_plugin_loader
from ansible.template import Templar, trust_as_template
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.helpers.ansible_values import trusted as _trusted
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.controlplane.schema import documents_errors

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "kube_control_plane"
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())


def _ca_pem() -> str:
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


@pytest.fixture(scope="module")
def templar_factory():
    init_plugin_loader()
    filter_loader.add_directory(str(ROLE / "filter_plugins"))
    return lambda variables: Templar(loader=DataLoader(), variables=variables)


_LOADED: dict[Path, Any] = {}


def _variables(
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


def _render(inventory_dir: Path, host: str, templar_factory, ca_pem: str) -> dict[str, list[dict]]:
    variables = _variables(inventory_dir, host, templar_factory, ca_pem)
    templar = templar_factory(variables)
    source = trust_as_template((ROLE / "templates" / "docs.yaml.j2").read_text())
    files = {}
    for item in templar.template(trust_as_template("{{ __kube_control_plane_files }}")):
        text = templar_factory({**variables, "__kube_control_plane_docs": item["docs"]}).template(source)
        files[item["name"]] = [d for d in yaml.safe_load_all(text) if d is not None]
    return files


@pytest.fixture(scope="module")
def inventories(tmp_path_factory) -> dict[str, Path]:
    big = tmp_path_factory.mktemp("inv16k")
    write_cluster_inventory(big, ClusterShape(npu_nodes=16000))
    return {"sample": ROOT / "inventories" / "sample", "16k": big}


@pytest.mark.parametrize("inventory", ["sample", "16k"])
@pytest.mark.parametrize(
    ("host", "kinds"),
    [
        pytest.param(
            "cp1", ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration",
                    "KubeProxyConfiguration"], id="first-init"
        ),
        pytest.param("cp2", ["JoinConfiguration"], id="other-join"),
    ],
)
def test_rendered_files_are_schema_valid(inventories, inventory, host, kinds, templar_factory):
    started = time.perf_counter()
    files = _render(inventories[inventory], host, templar_factory, _ca_pem())
    print(f"\nrendered {inventory} {host} in {time.perf_counter() - started:.2f} s (inventory load included)")
    assert [d["kind"] for d in files["kubeadm.yaml"]] == kinds
    for name, docs in files.items():
        assert documents_errors(docs) == [], name
    by_kind = {d["kind"]: d for d in files["kubeadm.yaml"] + files["kube-scheduler-config.yaml"]}
    if "ClusterConfiguration" in by_kind:
        cluster = by_kind["ClusterConfiguration"]
        assert cluster["controlPlaneEndpoint"] == "10.0.0.10:8443"
        assert cluster["etcd"]["external"]["endpoints"] == [f"https://10.0.0.1{i}:2379" for i in (1, 2, 3)]
        args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
        assert args["etcd-servers-overrides"].startswith("/events#https://10.0.0.11:2383;")
        assert "/pods#https://etcd-pods1:2385" in args["etcd-servers-overrides"]
        assert args["max-requests-inflight"] == "3000" and args["goaway-chance"] == "0.001"
        assert "10.0.0.10" in cluster["apiServer"]["certSANs"] and "cp3" in cluster["apiServer"]["certSANs"]
        assert by_kind["KubeletConfiguration"]["clusterDNS"] == ["169.254.20.10"]
        proxy = by_kind["KubeProxyConfiguration"]
        assert proxy["mode"] == "iptables" and proxy["clusterCIDR"] == cluster["networking"]["podSubnet"]
        assert proxy["conntrack"] == {"maxPerCore": 32768, "min": 131072}
    else:
        join = by_kind["JoinConfiguration"]
        assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "10.0.0.10:8443"
        assert join["controlPlane"]["localAPIEndpoint"]["advertiseAddress"] == "10.0.0.12"
    assert by_kind["KubeSchedulerConfiguration"]["percentageOfNodesToScore"] == 10


def _task(name_start: str) -> tuple[int, dict[str, Any]]:
    (found,) = [(i, t) for i, t in enumerate(MAIN_TASKS) if t["name"].startswith(name_start)]
    return found


@pytest.mark.parametrize(
    ("overrides", "file", "fragment"),
    [
        pytest.param({"kube_control_plane_kubelet_max_pods": 0}, "kubeadm.yaml", "maxPods", id="kubelet"),
        # NodeLocal DNSCache is set up for iptables and ipvs only: another mode would break DNS
        pytest.param({"ufc_kube_proxy_mode": "nftables"}, "kubeadm.yaml", "mode", id="kube-proxy-mode"),
        pytest.param(
            {"kube_control_plane_scheduler_percentage_of_nodes_to_score": 101},
            "kube-scheduler-config.yaml", "percentageOfNodesToScore", id="scheduler",
        ),
    ],
)
def test_a_schema_violation_fails_the_roles_check_before_the_write(
    inventories, templar_factory, overrides, file, fragment
):
    # The role's own check (tasks/main.yml), evaluated as Ansible does for each file name, refuses the
    # file; the task that writes comes after it, so a failed check leaves the old files in place.
    check_at, check = _task("Check each file against the strict schema")
    write_at, write = _task("Install the Kubernetes CA and write")
    assert check_at < write_at and "ignore_errors" not in check and "failed_when" not in check
    assert {f["template"] for f in write["ufc_files"]["files"] if "template" in f} == {"docs.yaml.j2"}
    variables = _variables(inventories["sample"], "cp1", templar_factory, _ca_pem(), overrides)
    errors = {}
    for name in ("kubeadm.yaml", "kube-scheduler-config.yaml"):
        local = {**variables, **check["vars"], check["loop_control"]["loop_var"]: name}
        errors[name] = templar_factory(local).template(_trusted(check["vars"]["__kube_control_plane_errors"]))
    assert [n for n, e in errors.items() if e] == [file]
    assert fragment in " ".join(errors[file])


@pytest.mark.parametrize("mode", [None, "iptables", "ipvs"])
def test_kube_proxy_and_nodelocaldns_read_one_mode(inventories, templar_factory, mode):
    # ipvs makes the IPVS interface own the kube-dns ClusterIP, so the cache must not bind it: the
    # mode kube-proxy runs in and the one nodelocaldns is set up for come from one variable
    overrides = {} if mode is None else {"ufc_kube_proxy_mode": mode}
    variables = _variables(inventories["sample"], "cp1", templar_factory, _ca_pem(), overrides)
    templar = templar_factory(variables)
    proxy = templar.template(trust_as_template("{{ __kube_control_plane_kube_proxy_doc }}"))
    dns_defaults = yaml.safe_load((ROOT / "roles" / "nodelocaldns" / "defaults" / "main.yml").read_text())
    dns_mode = templar.template(_trusted(dns_defaults["nodelocaldns_kube_proxy_mode"]))
    assert proxy["mode"] == dns_mode == (mode or "iptables")
