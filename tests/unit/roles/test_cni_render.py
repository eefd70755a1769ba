"""roles/cni renders and schema-validates Calico for inventories/sample and a generated 16,000-node
inventory, as the role would on the controller: its defaults and vars evaluated with Ansible's
templating, the ToR ids collected by the role's own set_fact expression, validation by
k8s_manifests (kubernetes-validate's schemas plus every roles/*/files/crds/*.yaml)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from tests.helpers.ansible_values import trusted
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.manifests.component import PreparedComponent, prepare_component
from ufcctl.domain.manifests.preapply import planned_nodes
from ufcctl.engine.k8s_schemas import KubernetesSchemas

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "cni"
TEMPLATES = ROLE / "templates" / "manifests"
# the cni component applies its own CRDs (files/crds) with its objects; other roles' only validate
OWN_CRDS = {p.name: p.read_text() for p in sorted((ROOT / "roles" / "cni" / "files" / "crds").glob("*.yaml"))}
CRDS = {p.name: p.read_text() for p in (ROOT / "roles").glob("*/files/crds/*.yaml") if p.name not in OWN_CRDS}


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(path: Path) -> dict[str, Any]:
    return trusted(yaml.safe_load(path.read_text()))


def _task(name: str) -> dict[str, Any]:
    (task,) = [t for t in yaml.safe_load((ROLE / "tasks" / "main.yml").read_text()) if t["name"] == name]
    return task


CHECK = _task("Check the CNI settings")["ansible.builtin.assert"]


class Render:
    """The role's variables for one inventory, with the role's own expressions evaluated."""

    def __init__(self, inventory_dir: Path, **overrides: Any) -> None:
        inv = load_inventory(inventory_dir)
        groups = {g: inv.group_hosts(g) for g in inv.groups}
        hostvars = {h: dict(host.vars) for h, host in inv.hosts.items()}
        first_cp = groups["kube_control_plane"][0]
        self.variables: dict[str, Any] = {
            **_yaml(ROOT / "roles" / "k8s_manifests" / "defaults" / "main.yml"),
            **_yaml(ROLE / "defaults" / "main.yml"),
            **_yaml(ROLE / "vars" / "main.yml"),
            **hostvars[first_cp],
            "groups": groups,
            "hostvars": hostvars,
            "inventory_hostname": first_cp,
            **overrides,
        }
        fact = _task("Collect the ToR ids of the kube_node hosts")["ansible.builtin.set_fact"]
        self.variables["__cni_calico_tor_ids"] = self.template(fact["__cni_calico_tor_ids"])

    def template(self, text: str) -> Any:
        return Templar(loader=DataLoader(), variables=self.variables).template(trust_as_template(text))

    def check_passes(self) -> bool:
        return all(self.template("{{ " + cond + " }}") for cond in CHECK["that"])

    def fail_msg(self) -> str:
        return " ".join(str(self.template(CHECK["fail_msg"])).split())

    def rendered(self) -> dict[str, str]:
        return {p.name: str(self.template(p.read_text())) for p in sorted(TEMPLATES.glob("*.yaml.j2"))}

    def prepare(self, rendered: dict[str, str] | None = None) -> PreparedComponent:
        schemas = KubernetesSchemas(str(self.template(self.variables["k8s_manifests_kube_version"])))
        nodes = planned_nodes(self.variables["groups"], self.variables["hostvars"],
                              npu_taint=self.variables["k8s_manifests_npu_taint"], tor_label="npu-tor-id")
        return prepare_component(rendered or self.rendered(), ["kube-system"], schemas, CRDS,
                                 own_crd_texts=OWN_CRDS, nodes=nodes)


def _objects(prepared: PreparedComponent) -> list[dict[str, Any]]:
    # libyaml's safe loader when built (the same documents as yaml.safe_load_all, ~10x faster on 16k nodes)
    return [d for text in prepared.files.values() for d in yaml.load_all(text, Loader=_SAFE_LOADER) if d]


def _one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


@pytest.fixture(scope="module")
def sample() -> Render:
    # the sample's own cni_calico_tor_peers (group_vars/all/addons.yml) cover its four ToRs
    init_plugin_loader()
    return Render(ROOT / "inventories" / "sample")


@pytest.fixture(scope="module")
def sample_prepared(sample: Render) -> PreparedComponent:
    """The sample's Calico rendered and validated once; the tests below read the same result."""
    return sample.prepare()


def test_sample_renders_valid_calico(sample: Render, sample_prepared: PreparedComponent) -> None:
    assert sample.check_passes(), sample.fail_msg()
    prepared = sample_prepared
    assert prepared.ok, "; ".join(map(str, prepared.problems))
    objects = _objects(prepared)
    print(f"\nsample: {prepared.objects} objects, files {list(prepared.order)}")
    # 16 kube_node hosts: floor(16 / 200) + 2 = 2, raised to the minimum of 3
    assert _one(objects, "Deployment", "calico-typha")["spec"]["replicas"] == 3
    pool = _one(objects, "IPPool", "ufc-pods")["spec"]
    assert (pool["cidr"], pool["blockSize"]) == ("100.64.0.0/10", 24)
    assert (pool["ipipMode"], pool["vxlanMode"], pool["natOutgoing"]) == ("Never", "Never", True)
    bgp = _one(objects, "BGPConfiguration", "default")["spec"]
    assert bgp == {"nodeToNodeMeshEnabled": False, "asNumber": 64512, "logSeverityScreen": "Info"}
    peers = sorted(
        (o["spec"]["nodeSelector"], o["spec"]["peerIP"], o["spec"]["asNumber"])
        for o in objects
        if o["kind"] == "BGPPeer"
    )
    # one per ToR, and the sample's extra peer for the control planes (which have no npu_tor_id)
    assert peers == [("has(node-role.kubernetes.io/control-plane)", "10.0.255.254", 65000),
                     *((f"npu-tor-id == 'tor-0{i}'", f"10.0.255.{i}", 65000 + i) for i in range(1, 5))]
    service = _one(objects, "Service", "calico-typha")["spec"]["ports"]
    assert [p["port"] for p in service] == [5473]


def test_cni_config_has_calico_ipam_and_portmap(sample_prepared: PreparedComponent) -> None:
    cm = _one(_objects(sample_prepared), "ConfigMap", "calico-config")["data"]
    conf = json.loads(cm["cni_network_config"])
    assert [p["type"] for p in conf["plugins"]] == ["calico", "portmap"]
    assert conf["plugins"][0]["ipam"] == {"type": "calico-ipam"}
    assert conf["plugins"][0]["mtu"] == 1500
    assert cm["typha_service_name"] == "calico-typha"


def test_calico_node_tolerates_the_npu_health_taint(sample_prepared: PreparedComponent) -> None:
    ds = _one(_objects(sample_prepared), "DaemonSet", "calico-node")
    taint = {"key": "ufcctl.io/npu-health-pending", "value": "true", "effect": "NoSchedule"}
    tolerations = ds["spec"]["template"]["spec"]["tolerations"]
    assert any(
        t.get("operator") == "Exists"
        and t.get("key") in (None, taint["key"])
        and t.get("effect") in (None, taint["effect"])
        for t in tolerations
    )
    assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "10%"
    assert ds["spec"]["template"]["spec"]["hostNetwork"] is True


def test_a_tor_without_a_peer_is_named(sample: Render) -> None:
    one = {"tor-01": {"ip": "10.0.255.1", "as_number": 65001}}
    missing = Render(ROOT / "inventories" / "sample", cni_calico_tor_peers=one)
    assert not missing.check_passes()
    assert "ToR(s) without a cni_calico_tor_peers entry: tor-02, tor-03, tor-04" in missing.fail_msg()


def test_no_peering_needs_no_peers_and_renders_none() -> None:
    # the sample's extra peer (its control planes') stays: `none` renders no BGPPeer, extra ones neither
    lab = Render(ROOT / "inventories" / "sample", cni_calico_bgp_peering="none", cni_calico_tor_peers={})
    assert lab.check_passes(), lab.fail_msg()
    prepared = lab.prepare()
    assert prepared.ok, prepared.problems
    assert [o for o in _objects(prepared) if o["kind"] == "BGPPeer"] == []
    # the same mapping with peering `tor` is refused
    assert not Render(ROOT / "inventories" / "sample", cni_calico_tor_peers={}).check_passes()


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("  ipipMode: Never", "  ipipMode: Never\n  ipipModee: Never", "ipipModee"),
        ("  natOutgoing: true", "  natOutgoing: yes-please", "natOutgoing"),
        ("  reportingInterval: 0s", "  reportingInterval: soon", "reportingInterval"),
    ],
)
def test_a_bad_calico_field_fails_validation(sample: Render, old: str, new: str, path: str) -> None:
    rendered = sample.rendered()
    name = "60-calico-resources.yaml.j2"
    assert old in rendered[name]
    rendered[name] = rendered[name].replace(old, new, 1)
    prepared = sample.prepare(rendered)
    assert not prepared.ok
    assert any(path in str(p) for p in prepared.problems), prepared.problems


def test_16k_nodes_give_82_typha_replicas(tmp_path: Path) -> None:
    init_plugin_loader()
    write_cluster_inventory(tmp_path, ClusterShape(npu_nodes=16000), style="explicit")
    big = Render(tmp_path, cni_calico_bgp_peering="none")
    assert len(big.variables["groups"]["kube_node"]) == 16000
    assert int(big.template("{{ cni_calico_typha_replicas }}")) == 82  # floor(16000 / 200) + 2
    tors = big.variables["__cni_calico_tor_ids"]
    peers = {t: {"ip": "10.255.0.1", "as_number": 65001} for t in tors}
    big.variables["cni_calico_tor_peers"] = peers
    big.variables["cni_calico_bgp_peering"] = "tor"
    assert big.check_passes(), big.fail_msg()
    prepared = big.prepare()
    assert prepared.ok, prepared.problems
    objects = _objects(prepared)
    print(f"\n16k: {len(tors)} ToRs, {prepared.objects} objects")
    # one per ToR, plus the generated inventory's peer for the control planes
    assert len([o for o in objects if o["kind"] == "BGPPeer"]) == len(tors) + 1 > 2
