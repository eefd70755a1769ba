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
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers import kcp_render
from tests.helpers.addon_render import render_addons
from tests.helpers.ports import free_ports
from tests.lab_build.build import build
from tests.lab_build.components import ETCD, KUBERNETES
from ufcctl.domain.addons.apicalls import ADDON_CALLS

pytestmark = pytest.mark.integration

SAMPLE = kcp_render.ROOT / "inventories" / "sample"
PKI = "/etc/kubernetes/pki"
NODES = 1000  # 111x what the lab's API stand-in ever held (9 nodes)
ETCD_TLS = ("--etcd-cafile=", "--etcd-certfile=", "--etcd-keyfile=")


def _wait(what: str, done, seconds: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


@dataclass
class Etcd:
    name: str
    url: str
    etcdctl: Path

    def keys(self, prefix: str) -> list[str]:
        out = subprocess.run([str(self.etcdctl), "--endpoints", self.url, "get", "--prefix", "--keys-only",
                              prefix],
                             capture_output=True, text=True, check=True, timeout=30).stdout
        return [line for line in out.splitlines() if line]


def apiserver_command(kubeadm: Path, tmp: Path) -> list[str]:
    """kubeadm's kube-apiserver command for the sample inventory's first control plane, as rendered."""
    docs = kcp_render.render(SAMPLE, "cp1", kcp_render.templar_factory(), kcp_render.ca_pem())["kubeadm.yaml"]
    config = tmp / "kubeadm.yaml"
    config.write_text(yaml.safe_dump_all(docs))
    dry = tmp / "dry-run"
    dry.mkdir()
    proc = subprocess.run([str(kubeadm), "init", "phase", "control-plane", "apiserver", "--config",
                           str(config), "--dry-run"], capture_output=True, text=True, timeout=120,
                          check=False, env={"KUBEADM_INIT_DRYRUN_DIR": str(dry), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    pod = yaml.safe_load((dry / "kube-apiserver.yaml").read_text())
    return list(pod["spec"]["containers"][0]["command"])


def loopback(command: list[str], pki: Path, port: int, core: str, others: dict[str, str]) -> list[str]:
    """The same command on this machine: see the module docstring for what changes and why."""
    out = []
    for arg in command[1:]:
        if arg.startswith(ETCD_TLS):
            continue
        name, _, value = arg.partition("=")
        if name == "--advertise-address":
            value = "127.0.0.1"
        elif name == "--secure-port":
            value = str(port)
        elif name == "--etcd-servers":
            value = core
        elif name == "--etcd-servers-overrides":
            # each override's server list is one of ufcctl's clusters: map it onto that cluster's etcd
            value = ",".join(f"{key}#{others[servers]}" for key, servers in
                             (entry.split("#", 1) for entry in value.split(",")))
        out.append(f"{name}={value.replace(PKI, str(pki))}")
    return [*out, "--bind-address=127.0.0.1"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Etcd], list[str]]]:
    tmp = tmp_path_factory.mktemp("apiserver")
    kube, etcd = build(KUBERNETES, say=lambda _: None), build(ETCD, say=lambda _: None)
    command = apiserver_command(kube.binary("kubeadm"), tmp)
    overrides = next(a.split("=", 1)[1] for a in command if a.startswith("--etcd-servers-overrides="))
    lists = list(dict.fromkeys(entry.split("#", 1)[1] for entry in overrides.split(",")))
    assert len(lists) == 2, overrides  # events+leases and pods: ufcctl's three-cluster design
    port, *etcd_ports = free_ports(1 + 2 * 3)
    names = ["core", "events", "pods"]
    procs: list[subprocess.Popen[bytes]] = []
    clusters: dict[str, Etcd] = {}
    try:
        for i, name in enumerate(names):
            client, peer = etcd_ports[2 * i], etcd_ports[2 * i + 1]
            url = f"http://127.0.0.1:{client}"
            log = (tmp / f"etcd-{name}.log").open("ab")
            procs.append(subprocess.Popen(
                [str(etcd.binary("etcd")), "--name", name, "--data-dir", str(tmp / f"etcd-{name}"),
                 "--listen-client-urls", url, "--advertise-client-urls", url,
                 "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                 "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                 "--initial-cluster", f"{name}=http://127.0.0.1:{peer}", "--log-level", "warn"],
                stdout=log, stderr=log))
            clusters[name] = Etcd(name, url, etcd.binary("etcdctl"))
        pki = tmp / "pki"
        local = tmp / "local.yaml"  # certificates and the admin kubeconfig for 127.0.0.1 (kubeadm's own)
        local.write_text(yaml.safe_dump_all([
            {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration",
             # kubeadm refuses a loopback advertise address (it then looks for a default route); the
             # address only lands in the certificate's SANs, beside 127.0.0.1 (certSANs)
             "localAPIEndpoint": {"advertiseAddress": "192.0.2.1", "bindPort": port}},
            {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration",
             "kubernetesVersion": "v1.34.4", "certificatesDir": str(pki),
             "controlPlaneEndpoint": f"127.0.0.1:{port}", "apiServer": {"certSANs": ["127.0.0.1"]},
             "etcd": {"external": {"endpoints": [clusters["core"].url]}}},
        ]))
        kubeadm = str(kube.binary("kubeadm"))
        for phase in ("ca", "apiserver", "apiserver-kubelet-client", "front-proxy-ca", "front-proxy-client"):
            subprocess.run([kubeadm, "init", "phase", "certs", phase, "--config", str(local)], check=True,
                           capture_output=True, timeout=60)
        subprocess.run([kubeadm, "init", "phase", "certs", "sa", "--cert-dir", str(pki)], check=True,
                       capture_output=True, timeout=60)
        # super-admin (system:masters): a full init makes the binding admin.conf's group needs
        subprocess.run([kubeadm, "init", "phase", "kubeconfig", "super-admin", "--config", str(local),
                        "--kubeconfig-dir", str(tmp)], check=True, capture_output=True, timeout=60)
        args = loopback(command, pki, port, clusters["core"].url,
                        {lists[0]: clusters["events"].url, lists[1]: clusters["pods"].url})
        log = (tmp / "kube-apiserver.log").open("ab")
        procs.append(subprocess.Popen([str(kube.binary("kube-apiserver")), *args], stdout=log, stderr=log))
        kubectl = [str(kube.binary("kubectl")), f"--kubeconfig={tmp / 'super-admin.conf'}"]

        def ready() -> bool:
            assert procs[-1].poll() is None, (tmp / "kube-apiserver.log").read_text()[-3000:]
            return subprocess.run([*kubectl, "get", "--raw", "/readyz"], capture_output=True, text=True,
                                  timeout=30, check=False).stdout == "ok"

        _wait("kube-apiserver /readyz", ready, 180)
        yield tmp, clusters, kubectl
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


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
