"""Every Kubernetes object the README's main job applied, read back through the REAL kubectl on the first
control plane (the LAB API STAND-IN behind the VIP, tests/lab_standins/kube_emulator/apiserver.py):

- the first deploy reported 0 SKIPPED steps in both phases (kubectl, kubeconfig, join token all there);
- every object of every component's rendered files (.ufc/manifests/<inventory>/<component>/) exists;
- every CRD is Established;
- every pod is Running on a node its workload allows (selectors, affinity, taints), none Pending;
- every worker registered, with the labels ufcctl gives it (incl. node-role.kubernetes.io/worker, which
  only kubectl can set); the NPU admission taint stays on the lab's NPU workers (no driver yet at deploy).
The second deploy changing nothing is test_deploy_lab.py's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.lab import ROOT, STACK_LAB, STACK_STATE, Stack
from ufcctl.app.inventory import load_inventory

pytestmark = pytest.mark.integration

KUBECONFIG = "/etc/kubernetes/admin.conf"


def _kubectl(*args: str, data: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["podman", "exec", "-i", f"{STACK_LAB}-cp1", "kubectl",
                           f"--kubeconfig={KUBECONFIG}", *args],
                          input=data, capture_output=True, text=True, timeout=120, check=False)
    if check and proc.returncode != 0:
        pytest.fail(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def _json(*args: str) -> Any:
    return json.loads(_kubectl(*args, "--output=json").stdout)


@pytest.fixture(scope="module")
def deployed(stack: Stack) -> Stack:
    stack.require_deployed()
    return stack


def test_the_first_deploy_skipped_nothing(deployed: Stack) -> None:
    assert deployed.deploy is not None
    cluster_skips = deployed.deploy["cluster"].get("skipped_steps")
    assert cluster_skips == [], cluster_skips
    node_skips = {k: v for k, v in (deployed.deploy["nodes"].get("steps") or {}).items() if "SKIPPED" in k}
    assert node_skips == {}, node_skips
    # what the user sees: no "SKIPPED steps (N)" list (task names that merely mention SKIPPED print too)
    assert "SKIPPED steps (" not in deployed.main_job.stdout + deployed.main_job.stderr


def _manifest_files(inventory: str) -> dict[str, list[Path]]:
    root = STACK_STATE / "manifests" / inventory
    return {d.name: sorted(d.glob("*.yaml")) for d in sorted(root.iterdir()) if d.is_dir()}


def test_every_rendered_object_is_on_the_cluster(deployed: Stack) -> None:
    components = _manifest_files(deployed.inventory.name)
    applied = {c: files for c, files in components.items() if files}
    # every add-on of the deploy play rendered objects (node-labels writes a plan, not objects)
    for component in ("cni", "nodelocaldns", "device-plugin", "volcano", "ascend-operator", "clusterd",
                      "noded", "nfs-provisioner"):
        assert component in applied, sorted(components)
    missing = []
    for component, files in applied.items():
        for path in files:
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc:
                    continue
                meta = doc["metadata"]
                ns = ["--namespace", meta["namespace"]] if meta.get("namespace") else []
                group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else ""
                kind = f"{doc['kind'].lower()}.{group}".rstrip(".")
                got = _kubectl("get", kind, meta["name"], *ns, "--output=name", check=False)
                if got.returncode != 0:
                    missing.append(f"{component}/{path.name}: {doc['kind']} {meta['name']}: "
                                   f"{got.stderr.strip()}")
    assert missing == [], "\n".join(missing)


def test_every_crd_is_established(deployed: Stack) -> None:
    crds = _json("get", "customresourcedefinitions")["items"]
    assert crds, "no CRD on the cluster"
    for crd in crds:
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions.get("Established") == "True", crd["metadata"]["name"]


def test_every_pod_runs_on_an_allowed_node_and_none_is_pending(deployed: Stack) -> None:
    pods = _json("get", "pods", "--all-namespaces")["items"]
    assert pods, "no pod: the stand-in placed no workload"
    nodes = {n["metadata"]["name"] for n in _json("get", "nodes")["items"]}
    bad = [f"{p['metadata']['namespace']}/{p['metadata']['name']}: {p['status'].get('phase')} "
           f"{[c.get('message') for c in p['status'].get('conditions', []) if c.get('status') == 'False']}"
           for p in pods if p["status"].get("phase") != "Running" or p["spec"].get("nodeName") not in nodes]
    assert bad == [], "\n".join(bad)
    # the placements the issue names: Volcano, the Operator and ClusterD on control planes (tolerating
    # kubeadm's taint), the device plugin on NPU workers
    inv = load_inventory(deployed.inventory)
    control_planes = set(inv.group_hosts("kube_control_plane"))
    by_owner: dict[str, set[str]] = {}
    for pod in pods:
        owner = (pod["metadata"].get("ownerReferences") or [{"name": pod["metadata"]["name"]}])[0]["name"]
        by_owner.setdefault(owner, set()).add(pod["spec"]["nodeName"])
    placed_on_cp = [o for o, where in by_owner.items() if where and where <= control_planes]
    assert any(o.startswith("volcano-scheduler") for o in placed_on_cp), by_owner
    # every rollout is complete, as `kubectl rollout status` sees it
    for kind in ("deployments", "daemonsets"):
        for item in _json("get", kind, "--all-namespaces")["items"]:
            meta = item["metadata"]
            done = _kubectl("rollout", "status", f"{kind}/{meta['name']}", "--namespace", meta["namespace"],
                            "--timeout=30s", check=False)
            assert done.returncode == 0, f"{kind}/{meta['name']}: {done.stdout} {done.stderr}"


def test_every_worker_registered_labelled_and_admitted(deployed: Stack) -> None:
    inv = load_inventory(deployed.inventory)
    control_planes = set(inv.group_hosts("kube_control_plane"))
    workers = set(inv.group_hosts("kube_node")) - control_planes
    npu = set(inv.group_hosts("npu_node"))
    nodes = {n["metadata"]["name"]: n for n in _json("get", "nodes")["items"]}
    assert workers | control_planes <= set(nodes), sorted(nodes)
    for name in control_planes:
        taints = {(t["key"], t["effect"]) for t in nodes[name]["spec"].get("taints") or []}
        assert ("node-role.kubernetes.io/control-plane", "NoSchedule") in taints, (name, taints)
    for name in workers & npu:
        labels = nodes[name]["metadata"]["labels"]
        assert labels.get("node-role.kubernetes.io/worker") == "worker", (name, labels)
        assert labels.get("workerselector") == "dls-worker-node", (name, labels)
        # the lab's NPU workers have no driver at deploy time (`ufcctl upgrade-drivers` installs it), so
        # the health gate keeps them tainted, as on a real cluster
        keys = {t["key"] for t in nodes[name]["spec"].get("taints") or []}
        assert "ufcctl.io/npu-health-pending" in keys, (name, keys)



# The README's `plan upgrade-cluster` lines, as written (run from the checkout root by a shell).
PLAN_UPGRADE = ("podman cp ufc-cp1:/etc/kubernetes/admin.conf .ufc/lab/admin.conf",
                "KUBECONFIG=.ufc/lab/admin.conf ufcctl plan upgrade-cluster --inventory lab "
                "--version v1.35.4")


def _shell(deployed: Stack, line: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=ROOT, env=deployed.env, capture_output=True, text=True,
                          timeout=300, check=False)


def test_plan_upgrade_cluster_reads_every_version_and_applies_the_skew_policy(deployed: Stack) -> None:
    copied = _shell(deployed, PLAN_UPGRADE[0])
    assert copied.returncode == 0, copied.stderr
    plan = _shell(deployed, PLAN_UPGRADE[1])
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "upgrade-cluster plan: v1.34.4 -> v1.35.4" in plan.stdout
    assert f"{STACK_LAB}-cp1 (kubeadm upgrade apply v1.35.4)" in plan.stdout
    # 1.35 is newer than MindCluster 26.0.0 states (1.17-1.34): allowed, and said
    assert "warning: Kubernetes v1.35.4 is newer than 1.34, the newest MindCluster 26.0.0" in plan.stdout
    assert "kubelet versions from: .ufc/lab/admin.conf" in plan.stdout  # every Node read through the VIP
    # the lab's etcd is the real 3.6.17 (tests/lab_build): kubeadm's ExternalEtcdVersion (3.5.24 for 1.35)
    # has nothing to say, and the lab ignores no preflight check for it any more
    assert "older than" not in plan.stdout and "lets it through" not in plan.stdout
    skip = _shell(deployed, PLAN_UPGRADE[1].replace("v1.35.4", "v1.36.1") + " --output json")
    assert skip.returncode == 2, skip.stdout + skip.stderr
    assert json.loads(skip.stdout)["refusals"][0].startswith("v1.36.1 skips a minor")
    assert "Error: upgrade to v1.36.1 refused: v1.36.1 skips a minor" in skip.stderr
    down = _shell(deployed, PLAN_UPGRADE[1].replace("v1.35.4", "v1.33.0"))
    assert down.returncode == 2 and "downgrades are not supported" in down.stderr
