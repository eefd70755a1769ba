"""The REAL kube-apiserver v1.34.4, started with the command kubeadm makes of what ufcctl renders, on
three REAL etcd 3.6.17 clusters: ufcctl's split of the API over core / events+leases / pods holds, and
the API holds a thousand Nodes.

No container: the binaries of the lab's build cache (tests/lab_build) run on loopback. The command is
not written here: the first control plane's kubeadm configuration that roles/kube_control_plane renders
for the sample inventory goes through the real kubeadm (`init phase control-plane apiserver --dry-run`),
and the kube-apiserver command of the static Pod it writes runs as it is, except for what only a lab
machine can change: addresses (127.0.0.1, a free port), certificate paths (a kubeadm-made PKI in a
temporary directory), and each etcd cluster's endpoints, mapped one to one onto a loopback etcd that
speaks plain HTTP (the etcd TLS flags go with it; TLS to etcd is the lab's, tests/integration/
test_etcd_lab.py). What it proves that the lab's API stand-in cannot: the real apiserver starts on
ufcctl's flags (admission, priority and fairness, inflight limits, watch cache, compaction, event TTL),
parses ufcctl's --etcd-servers-overrides, and stores Events and Leases in the events cluster, Pods in
the pods cluster and everything else in core; it serves 1,000 Node objects; and its RBAC authorizer, given
the ServiceAccounts and roles ufcctl renders for the add-ons, allows every API call their pinned releases
make (ufcctl/domain/addons/apicalls.py; the unit test of the same table uses ufcctl's own evaluator).
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.addon_render import render_addons
from tests.helpers.real_control_plane import Etcd, control_plane
from ufcctl.domain.addons.apicalls import ADDON_CALLS

pytestmark = pytest.mark.integration

NODES = 1000  # 111x what the lab's API stand-in ever held (9 nodes)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Etcd], list[str]]]:
    with control_plane(tmp_path_factory.mktemp("apiserver")) as started:
        yield started


def _kubectl(kubectl: list[str], *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run([*kubectl, *args], input=stdin, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, (args, proc.stderr[-2000:])
    return proc.stdout


def test_the_real_apiserver_runs_on_ufcctls_flags_and_splits_the_api_over_three_etcd_clusters(
        cluster: tuple[Path, dict[str, Etcd], list[str]]) -> None:
    _, etcd, kubectl = cluster
    objects = [  # the ServiceAccount a Pod's admission looks up (kube-controller-manager would make it)
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "itest-split"}, "data": {"a": "b"}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "itest-split.1"},
         "involvedObject": {"kind": "ConfigMap", "name": "itest-split", "namespace": "default"},
         "reason": "Test", "message": "split", "type": "Normal"},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "itest-split"},
         "spec": {"holderIdentity": "itest", "leaseDurationSeconds": 40}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "itest-split"},
         "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10.1"}]}},
    ]
    _kubectl(kubectl, "create", "--namespace=default", "-f", "-",
             stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    where: dict[str, set[str]] = {name: set() for name in etcd}
    for name, member in etcd.items():
        for prefix in ("configmaps", "events", "leases", "pods"):
            if member.keys(f"/registry/{prefix}/default/itest-split"):
                where[name].add(prefix)
    assert where == {"core": {"configmaps"}, "events": {"events", "leases"}, "pods": {"pods"}}, where
    # the apiserver's own objects follow the same split: its lease in events, the namespaces in core
    assert etcd["events"].keys("/registry/leases/kube-system/apiserver-")
    assert not etcd["core"].keys("/registry/leases/")
    assert etcd["core"].keys("/registry/namespaces/kube-system")


def test_the_real_apiserver_holds_a_thousand_nodes(cluster: tuple[Path, dict[str, Etcd], list[str]]) -> None:
    _, etcd, kubectl = cluster

    def node(i: int) -> dict:
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": f"npu-{i:05d}", "labels": {"npu-tor-id": f"tor-{i // 64:03d}",
                                                                "node-role.kubernetes.io/worker": ""}}}

    began = time.monotonic()
    batches = [[node(i) for i in range(start, min(start + 250, NODES))] for start in range(0, NODES, 250)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda items: _kubectl(kubectl, "create", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": items})), batches))
    created = time.monotonic() - began
    listed = json.loads(_kubectl(kubectl, "get", "nodes", "--output=json", "--chunk-size=500"))["items"]
    tor = json.loads(_kubectl(kubectl, "get", "nodes", "--output=json", "--selector=npu-tor-id=tor-003"))
    tor = tor["items"]
    assert len(listed) == NODES and len(tor) == 64
    assert len(etcd["core"].keys("/registry/minions/")) == NODES  # Nodes live in core
    print(f"real kube-apiserver: {NODES} Nodes created in {created:.1f} s (4 clients), listed and selected")
    assert re.fullmatch(r"npu-\d{5}", listed[-1]["metadata"]["name"])


RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def test_the_real_rbac_authorizer_allows_every_call_the_addon_releases_make(
        cluster: tuple[Path, dict[str, Etcd], list[str]]) -> None:
    _, _, kubectl = cluster
    rendered = render_addons()
    objects = [o for c in rendered.values() for o in c if o.get("kind") in RBAC_KINDS]
    namespaces = {o["metadata"].get("namespace") for o in objects} - {None, "default", "kube-system"}
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(namespaces)
               ] + sorted(objects, key=lambda o: RBAC_KINDS.index(o["kind"]))
    _kubectl(kubectl, "apply", "--server-side", "--force-conflicts", "-f", "-",
             stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    reviews, asked = [], []
    for component, namespace, account, calls in ADDON_CALLS:
        for call in calls:
            resource, _, subresource = call.resource.partition("/")
            attributes = {"verb": call.verb, "group": call.group, "resource": resource,
                          "subresource": subresource, "name": call.name, "namespace": call.namespace}
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]
            reviews.append({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                            "spec": {"user": f"system:serviceaccount:{namespace}:{account}", "groups": groups,
                                     "resourceAttributes": attributes}})
            asked.append(f"{component} {namespace}/{account}: {call}")
    out = _kubectl(kubectl, "create", "--output=json", "-f", "-",
                   stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": reviews}))
    answers, at, decoder = [], 0, json.JSONDecoder()
    while out[at:].strip():  # one JSON document per review, one after another
        answer, at = decoder.raw_decode(out, len(out) - len(out[at:].lstrip()))
        answers.append(answer)
    allowed = [a["status"].get("allowed", False) for a in answers]
    assert len(allowed) == len(asked) > 150
    refused = [q for q, ok in zip(asked, allowed, strict=True) if not ok]
    assert refused == [], "\n".join(refused)
