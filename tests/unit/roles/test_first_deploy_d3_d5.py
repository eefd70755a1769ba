"""Issue 26's defects D3 and D5, checked on the roles' own templates and defaults (Ansible's Templar):

- D3: the Volcano scheduler and controllers, the Ascend Operator and ClusterD select the management
  nodes, kubeadm's control planes, tainted node-role.kubernetes.io/control-plane:NoSchedule, and none
  tolerated it: four workloads Pending forever. Each must now tolerate it and fit on the sample
  inventory's control planes; the scheduler runs one replica per control plane with leader election;
  the worker DaemonSets tolerate the NPU health taint NPU nodes register with.
- D5: Calico's and Volcano's CRDs were only used to validate, never applied, so a real apiserver would
  answer "no matches for kind" and the Ascend Operator could not create PodGroups. Each component now
  applies its role's CRDs first, and kubectl waits for them to be Established before the next file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from tests.helpers.ansible_values import trusted
from tests.helpers.pyimports import load_file
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.manifests.component import PreparedComponent, prepare_component
from ufcctl.domain.manifests.objects import K8sObject, parse_manifest
from ufcctl.domain.manifests.preapply import CONTROL_PLANE_TAINT, Taint, planned_nodes, tolerates
from ufcctl.engine.k8s_schemas import KubernetesSchemas

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"
SCHEMAS = KubernetesSchemas("1.34.4")


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    init_plugin_loader()
    inv = load_inventory(ROOT / "inventories" / "sample")
    groups = {g: inv.group_hosts(g) for g in inv.groups}
    hostvars = {h: dict(host.vars) for h, host in inv.hosts.items()}
    variables: dict[str, Any] = {}
    for role in ("k8s_manifests", "volcano", "ascend_components"):
        variables.update(trusted(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())))
    variables.update(trusted(yaml.safe_load((ROLES / "ascend_components" / "vars" / "main.yml").read_text())))
    variables.update(groups=groups, inventory_hostname=groups["kube_control_plane"][0])
    taint = variables["k8s_manifests_npu_taint"]
    return {"variables": variables, "nodes": planned_nodes(groups, hostvars, npu_taint=taint, tor_label="x")}


def _objects(sample: dict[str, Any], directory: Path) -> list[K8sObject]:
    templar = Templar(loader=DataLoader(), variables=sample["variables"])
    return [o for p in sorted(directory.glob("*.yaml.j2"))
            for o in parse_manifest(str(templar.template(trust_as_template(p.read_text()))), p.name)[0]]


def _workload(objects: list[K8sObject], name: str) -> K8sObject:
    (found,) = [o for o in objects if o.name == name and o.kind in ("Deployment", "DaemonSet")]
    return found


def _pod(obj: K8sObject) -> dict[str, Any]:
    return obj.body["spec"]["template"]["spec"]


MANAGEMENT = [
    ("volcano/templates/manifests", "volcano-scheduler"),
    ("volcano/templates/manifests", "volcano-controllers"),
    ("ascend_components/templates/ascend-operator", "ascend-operator-manager"),
    ("ascend_components/templates/clusterd", "clusterd"),
]


@pytest.mark.parametrize(("directory", "name"), MANAGEMENT, ids=[m[1] for m in MANAGEMENT])
def test_d3_management_workloads_tolerate_the_control_plane_taint_and_fit(sample, directory, name) -> None:
    obj = _workload(_objects(sample, ROLES / directory), name)
    pod = _pod(obj)
    assert pod["nodeSelector"] == {"masterselector": "dls-master-node"}  # still on the management nodes
    assert tolerates(pod.get("tolerations") or [], CONTROL_PLANE_TAINT), f"{name} stays Pending"
    fits = [n.name for n in sample["nodes"]
            if all(k in n.labels and n.labels[k] == v for k, v in pod["nodeSelector"].items())
            and all(tolerates(pod["tolerations"], t) for t in n.taints)]
    assert fits == ["cp1", "cp2", "cp3"]
    requests = pod["containers"][0]["resources"]["requests"]
    assert requests["cpu"] and requests["memory"]


def test_d3_volcano_scheduler_is_highly_available_with_leader_election(sample) -> None:
    objects = _objects(sample, ROLES / "volcano" / "templates" / "manifests")
    for name, replicas in (("volcano-scheduler", 3), ("volcano-controllers", 2)):
        obj = _workload(objects, name)
        args = _pod(obj)["containers"][0]["args"]
        assert obj.body["spec"]["replicas"] == replicas, name
        assert "--leader-elect=true" in args and "--lock-object-namespace=volcano-system" in args, args
        anti = _pod(obj)["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert anti[0]["topologyKey"] == "kubernetes.io/hostname"
        # one replica per control plane: an update may not surge onto a node that has one
        assert obj.body["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}


WORKER_DAEMONSETS = [
    ("device-plugin", "ascend-device-plugin-daemonset"),
    ("noded", "noded"),
    ("npu-exporter", "npu-exporter"),
]


@pytest.mark.parametrize(("part", "name"), WORKER_DAEMONSETS, ids=[w[0] for w in WORKER_DAEMONSETS])
def test_d3_worker_daemonsets_run_before_npu_admission(sample, part: str, name: str) -> None:
    obj = _workload(_objects(sample, ROLES / "ascend_components" / "templates" / part), name)
    taint = sample["variables"]["k8s_manifests_npu_taint"]
    pending = Taint(taint["key"], taint["effect"], taint["value"])
    assert tolerates(_pod(obj).get("tolerations") or [], pending)


def test_the_npu_taint_is_the_one_kube_node_registers_with() -> None:
    kube_node = yaml.safe_load((ROLES / "kube_node" / "defaults" / "main.yml").read_text())
    manifests = yaml.safe_load((ROLES / "k8s_manifests" / "defaults" / "main.yml").read_text())
    assert manifests["k8s_manifests_npu_taint"] == kube_node["kube_node_npu_taint"]


def _prepared(sample: dict[str, Any], role: str) -> PreparedComponent:
    templar = Templar(loader=DataLoader(), variables=sample["variables"])
    rendered = {p.name: str(templar.template(trust_as_template(p.read_text())))
                for p in sorted((ROLES / role / "templates" / "manifests").glob("*.yaml.j2"))}
    own = {p.name: p.read_text() for p in sorted((ROLES / role / "files" / "crds").glob("*.yaml"))}
    return prepare_component(rendered, [f"{role}-system"], SCHEMAS, {}, own_crd_texts=own,
                             nodes=sample["nodes"])


# The CRDs a first deploy must apply: every kind ufcctl's objects or its components' clients use.
NEEDED = {
    "volcano": {"queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh", "jobs.batch.volcano.sh",
                "commands.bus.volcano.sh", "numatopologies.nodeinfo.volcano.sh"},
}


def test_d5_volcano_applies_its_crds_first_and_they_are_waited_for(sample) -> None:
    prepared = _prepared(sample, "volcano")
    assert prepared.ok, prepared.problems
    applied = {name for names in prepared.crds.values() for name in names}
    assert NEEDED["volcano"] <= applied, f"missing: {NEEDED['volcano'] - applied}"
    crd_files = [n for n in prepared.order if prepared.crds.get(n)]
    assert prepared.order.index("30-queues.yaml") > max(prepared.order.index(n) for n in crd_files)


def test_d5_calico_applies_the_crds_calico_node_lists_at_start() -> None:
    crds = (ROLES / "cni" / "files" / "crds").iterdir()
    names = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in crds}
    for kind in ("ippools", "bgpconfigurations", "felixconfigurations", "bgppeers",
                 "clusterinformations", "ipamblocks", "blockaffinities", "ipamhandles", "ipamconfigs",
                 "kubecontrollersconfigurations"):
        assert f"{kind}.crd.projectcalico.org" in names


class _Module:
    """What ufcctl_kubectl's apply() uses of AnsibleModule; kubectl answers `diff` with 1 (differs)."""

    def __init__(self, manifests: list[dict[str, Any]]) -> None:
        self.params = {"kubectl": "kubectl", "kubeconfig": "/k", "manifests": manifests}
        self.check_mode = False
        self.calls: list[list[str]] = []

    def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
        self.calls.append(argv[2:])
        return (1 if argv[2] == "diff" else 0), "", ""

    def fail_json(self, **kwargs: Any) -> None:
        raise AssertionError(kwargs)


def test_d5_kubectl_waits_for_established_crds_before_the_next_file() -> None:
    module_file = load_file(ROLES / "k8s_manifests" / "library" / "ufcctl_kubectl.py", "ufcctl_kubectl_d5")
    module = _Module([
        {"name": "crds.yaml", "text": "a",
         "crds": ["queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh"]},
        {"name": "30-queues.yaml", "text": "b", "crds": []},
    ])
    module_file.apply(module)
    assert [c[0] for c in module.calls] == ["diff", "apply", "wait", "diff", "apply"]
    assert module.calls[2] == ["wait", "--for=condition=Established", "--timeout=60s",
                               "crd/queues.scheduling.volcano.sh", "crd/podgroups.scheduling.volcano.sh"]


def test_d5_a_crd_without_conditions_yet_is_waited_for_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real kube-apiserver, a second after the apply: `kubectl wait` stops at once on a CRD that has no
    conditions yet ("error: .status.conditions accessor error: <nil> is of the type <nil>"); the module
    asks again instead of failing the deploy."""
    module_file = load_file(ROLES / "k8s_manifests" / "library" / "ufcctl_kubectl.py", "ufcctl_kubectl_d5b")
    monkeypatch.setattr(module_file.time, "sleep", lambda _: None)
    answers = [(1, "", "error: .status.conditions accessor error: <nil> is of the type <nil>, expected "
                "[]interface{}")] * 2 + [(0, "condition met", "")]

    class Module(_Module):
        def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
            if argv[2] == "wait":
                self.calls.append(argv[2:])
                return answers.pop(0)
            return super().run_command(argv, data)

    module = Module([{"name": "crds.yaml", "text": "a", "crds": ["queues.scheduling.volcano.sh"]}])
    module_file.apply(module)
    assert [c[0] for c in module.calls] == ["diff", "apply", "wait", "wait", "wait"]
