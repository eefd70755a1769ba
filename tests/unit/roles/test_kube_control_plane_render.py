"""kube_control_plane renders schema-valid kubeadm/scheduler files for inventories/sample and 16,000 nodes.

The role's own expressions are evaluated with Ansible's templating: defaults, vars/main.yml, the
set_fact step of tasks/main.yml (the plan), and templates/docs.yaml.j2, against the variables ufcctl
resolves from the inventory (only the control-plane and etcd hosts reach Ansible, as in a run).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.template import trust_as_template

from tests.helpers import kcp_render
from tests.helpers.ansible_values import trusted as _trusted
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.domain.controlplane.schema import documents_errors

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "kube_control_plane"
MAIN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())


@pytest.fixture(scope="module")
def templar_factory():
    return kcp_render.templar_factory()


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
    files = kcp_render.render(inventories[inventory], host, templar_factory, kcp_render.ca_pem())
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
    variables = kcp_render.variables_of(inventories["sample"], "cp1", templar_factory, kcp_render.ca_pem(),
                                        overrides)
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
    variables = kcp_render.variables_of(inventories["sample"], "cp1", templar_factory, kcp_render.ca_pem(),
                                        overrides)
    templar = templar_factory(variables)
    proxy = templar.template(trust_as_template("{{ __kube_control_plane_kube_proxy_doc }}"))
    dns_defaults = yaml.safe_load((ROOT / "roles" / "nodelocaldns" / "defaults" / "main.yml").read_text())
    dns_mode = templar.template(_trusted(dns_defaults["nodelocaldns_kube_proxy_mode"]))
    assert proxy["mode"] == dns_mode == (mode or "iptables")


def test_failcgroupv1_is_written_only_when_the_inventory_sets_it() -> None:
    """From 1.35 the kubelet refuses a cgroup v1 host unless failCgroupV1 is false; unset keeps the release's
    default, the lab (a cgroup v1 host) sets it false."""
    from tests.helpers import kcp_render

    templar, ca = kcp_render.templar_factory(), kcp_render.ca_pem()
    sample = kcp_render.ROOT / "inventories" / "sample"

    def kubelet(**overrides: object) -> dict:
        text = kcp_render.render_text(sample, "cp1", templar, ca, overrides)["kubeadm.yaml"]
        docs = yaml.safe_load_all(text)
        return next(d for d in docs if d and d["kind"] == "KubeletConfiguration")

    assert "failCgroupV1" not in kubelet()
    assert kubelet(kube_control_plane_kubelet_fail_cgroup_v1=False)["failCgroupV1"] is False
