"""The LAB API STAND-IN (tests/lab_standins/kube_emulator/apiserver.py) with the real kubectl as its client:
it refuses what kube-apiserver refuses for everything ufcctl does (missing namespaces, custom resources
without an established CRD, unknown fields, nodes that have not registered, anonymous requests), and its
scheduler leaves untolerated workloads Pending with the scheduler's reason."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parents[3] / "tests" / "lab_standins" / "kube_emulator"
sys.path.insert(0, str(HERE))
import apiserver  # noqa: E402

from tests.lab_standins.kube_emulator.packages import schema_file  # noqa: E402


def _kubectl() -> Path:
    """The real kubectl the lab installs on its control planes: built from k8s.io/kubernetes by
    tests/lab_build (scripts/setup.sh builds it before any test runs)."""
    from tests.lab_build.build import cached
    from tests.lab_build.components import KUBERNETES

    built = cached(KUBERNETES)
    if built is None:
        pytest.fail("the lab's kubectl is not built: run `python -m tests.lab_build` (scripts/setup.sh does)")
    return built.binary("kubectl")


def _cert(
    subject: str, ca: tuple | None, *, is_ca: bool = False, sans: tuple[str, ...] = (), org: str = ""
) -> tuple:
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, subject)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    name = x509.Name(attrs)
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca[0].subject if ca else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
    )
    if is_ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    if sans:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(s)) for s in sans]),
            critical=False,
        )
    cert = builder.sign(ca[1] if ca else key, hashes.SHA256())
    return cert, key


def _pem(cert, key) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization

    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


class Cluster:
    def __init__(self, work: Path, api: apiserver.API, port: int, ca_pem: bytes):
        self.work, self.api, self.port, self.ca_pem = work, api, port, ca_pem
        self.kubeconfig = work / "admin.conf"
        self.env = {**os.environ, "HOME": str(work), "KUBECACHEDIR": str(work / "cache")}

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        binary = str(_kubectl())
        return subprocess.run(
            [binary, f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        proc = self.kubectl(*args, stdin=stdin)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def apply(self, *docs: dict) -> subprocess.CompletedProcess[str]:
        return self.kubectl(
            "apply", "--server-side", "--field-manager=ufcctl", "--filename=-", stdin=yaml.safe_dump_all(docs)
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("standin")
    ca = _cert("kubernetes", None, is_ca=True)
    server = _cert("kube-apiserver", ca, sans=("127.0.0.1",))
    admin = _cert("kubernetes-admin", ca, org="kubeadm:cluster-admins")
    ca_pem, _ = _pem(*ca)
    (work / "ca.crt").write_bytes(ca_pem)
    cert_pem, key_pem = _pem(*server)
    (work / "apiserver.crt").write_bytes(cert_pem)
    (work / "apiserver.key").write_bytes(key_pem)
    schemas = schema_file("1.34.4")
    api = apiserver.API(apiserver.MemoryStore(), apiserver.load_schemas(schemas), "v1.34.4")
    apiserver.bootstrap(api)
    httpd = apiserver.server(
        api,
        0,
        str(work / "apiserver.crt"),
        str(work / "apiserver.key"),
        str(work / "ca.crt"),
        address="127.0.0.1",
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    admin_cert, admin_key = _pem(*admin)
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    cluster_entry = {
        "name": "lab",
        "cluster": {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": b64(ca_pem)},
    }
    user = {"client-certificate-data": b64(admin_cert), "client-key-data": b64(admin_key)}
    (work / "admin.conf").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster_entry],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "lab", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    yield Cluster(work, api, port, ca_pem)
    httpd.shutdown()


NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ufc-test"}}
CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c1", "namespace": "ufc-test"},
    "data": {"a": "1"},
}


def _crd(group: str = "example.ufc.io", kind: str = "Widget", plural: str = "widgets") -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
                "shortNames": ["wd"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                            },
                        }
                    },
                }
            ],
        },
    }


def _deployment(
    name: str,
    selector: dict | None = None,
    tolerations: list | None = None,
    replicas: int = 1,
    anti: bool = False,
) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "registry.example/c:1"}]}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if anti:
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ufc-test"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def _cni_daemonset() -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "cni", "namespace": "ufc-test"},
        "spec": {
            "selector": {"matchLabels": {"app": "cni"}},
            "template": {
                "metadata": {"labels": {"app": "cni"}},
                "spec": {
                    "hostNetwork": True,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "cni", "image": "registry.example/cni:1"}],
                    "volumes": [{"name": "net", "hostPath": {"path": "/etc/cni/net.d"}}],
                },
            },
        },
    }


def test_namespace_must_exist_then_apply_is_idempotent(cluster: Cluster) -> None:
    missing = cluster.apply(CM)
    assert missing.returncode == 1 and 'namespaces "ufc-test" not found' in missing.stderr
    assert "serverside-applied" in cluster.apply(NS, CM).stdout
    diff = cluster.kubectl(
        "diff", "--server-side", "--field-manager=ufcctl", "--filename=-", stdin=yaml.safe_dump_all([NS, CM])
    )
    assert diff.returncode == 0, diff.stdout + diff.stderr  # nothing changes: same resourceVersion
    changed = dict(CM, data={"a": "2"})
    diff = cluster.kubectl(
        "diff", "--server-side", "--field-manager=ufcctl", "--filename=-", stdin=yaml.safe_dump(changed)
    )
    assert diff.returncode == 1 and '+  a: "2"' in diff.stdout
    assert json.loads(cluster.ok("get", "cm", "c1", "-n", "ufc-test", "-o", "json"))["data"] == {"a": "1"}


def test_a_field_dropped_from_the_apply_is_removed(cluster: Cluster) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c2", "namespace": "ufc-test"},
        "data": {"keep": "1", "drop": "2"},
    }
    cluster.apply(NS)
    assert cluster.apply(cm).returncode == 0
    assert cluster.apply(dict(cm, data={"keep": "1"})).returncode == 0
    assert json.loads(cluster.ok("get", "cm", "c2", "-n", "ufc-test", "-o", "json"))["data"] == {"keep": "1"}


def test_unknown_fields_are_refused_by_the_openapi_schema(cluster: Cluster) -> None:
    cluster.apply(NS)
    bad = dict(_deployment("typo"))
    bad["spec"] = dict(bad["spec"], replicaz=2)
    proc = cluster.apply(bad)
    assert proc.returncode == 1
    assert 'unknown field "spec.replicaz"' in proc.stderr


def test_custom_resource_needs_an_established_crd(cluster: Cluster) -> None:
    cluster.apply(NS)
    widget = {
        "apiVersion": "example.ufc.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "ufc-test"},
        "spec": {"size": 3},
    }
    before = cluster.apply(widget)
    # kube-apiserver's answer reaches kubectl as 'no matches for kind'; the stand-in serves no /openapi/v2
    # (protobuf), so kubectl's validation stops one step earlier: refused either way.
    assert before.returncode == 1, before.stdout
    assert any(m in before.stderr for m in ('no matches for kind "Widget"', "could not find the requested"))
    assert cluster.apply(_crd()).returncode == 0
    assert "condition met" in cluster.ok(
        "wait", "--for=condition=Established", "--timeout=20s", "crd/widgets.example.ufc.io"
    )
    assert cluster.apply(widget).returncode == 0
    assert json.loads(cluster.ok("get", "wd", "w1", "-n", "ufc-test", "-o", "json"))["spec"] == {"size": 3}
    typo = dict(widget, spec={"sise": 3})
    proc = cluster.apply(typo)
    assert proc.returncode == 1 and 'unknown field "spec.sise"' in proc.stderr


def test_label_or_taint_of_a_node_that_has_not_joined_is_not_found(cluster: Cluster) -> None:
    proc = cluster.kubectl("label", "node", "ghost", "a=b")
    assert proc.returncode == 1 and 'nodes "ghost" not found' in proc.stderr
    apiserver.register_node(
        cluster.api,
        "w-label",
        "v1.34.4",
        {"ufc.io/npu": "true"},
        [{"key": "ufc.io/npu-unhealthy", "effect": "NoSchedule"}],
        False,
    )
    cluster.ok("label", "--overwrite", "node", "w-label", "node-role.kubernetes.io/worker=")
    cluster.ok("taint", "nodes", "w-label", "ufc.io/npu-unhealthy:NoSchedule-")
    node = json.loads(cluster.ok("get", "node", "w-label", "-o", "json"))
    assert node["metadata"]["labels"]["node-role.kubernetes.io/worker"] == ""
    assert all(t["key"] != "ufc.io/npu-unhealthy" for t in node["spec"].get("taints") or [])


def test_anonymous_requests_reach_only_the_public_paths(cluster: Cluster) -> None:
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cadata=cluster.ca_pem.decode())  # no client certificate
    base = f"https://127.0.0.1:{cluster.port}"
    with urllib.request.urlopen(f"{base}/version", context=context, timeout=10) as reply:
        assert json.loads(reply.read())["gitVersion"] == "v1.34.4"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{base}/api/v1/nodes", context=context, timeout=10)
    assert refused.value.code == 403 and "system:anonymous" in refused.value.read().decode()


def test_untolerated_control_plane_taint_leaves_the_pod_pending(cluster: Cluster) -> None:
    for name in ("cp-a", "cp-b"):
        apiserver.register_node(cluster.api, name, "v1.34.4", {}, None, True)
    cluster.apply(NS, _cni_daemonset())
    selector = {"node-role.kubernetes.io/control-plane": ""}
    assert cluster.apply(_deployment("no-toleration", selector)).returncode == 0
    pods = json.loads(cluster.ok("get", "pods", "-n", "ufc-test", "-l", "app=no-toleration", "-o", "json"))
    assert [p["status"]["phase"] for p in pods["items"]] == ["Pending"]
    message = pods["items"][0]["status"]["conditions"][0]["message"]
    assert "untolerated taint {node-role.kubernetes.io/control-plane}" in message
    status = cluster.kubectl(
        "rollout", "status", "deployment/no-toleration", "-n", "ufc-test", "--timeout=2s"
    )
    assert status.returncode == 1
    tolerated = _deployment(
        "tolerated",
        selector,
        [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
        2,
        anti=True,
    )
    assert cluster.apply(tolerated).returncode == 0
    assert "successfully rolled out" in cluster.ok(
        "rollout", "status", "deployment/tolerated", "-n", "ufc-test", "--timeout=20s"
    )
    pods = json.loads(cluster.ok("get", "pods", "-n", "ufc-test", "-l", "app=tolerated", "-o", "json"))
    assert sorted(p["spec"]["nodeName"] for p in pods["items"]) == ["cp-a", "cp-b"]  # spread by anti-affinity
    table = cluster.ok("get", "pods", "-n", "ufc-test", "-l", "app=tolerated", "-o", "wide")
    assert "Running" in table and "cp-a" in table


def test_a_node_is_ready_once_a_cni_daemonset_runs_on_it(cluster: Cluster) -> None:
    apiserver.register_node(cluster.api, "w-ready", "v1.34.4", {}, None, False)
    cluster.apply(NS)
    cluster.kubectl("delete", "daemonset", "cni", "-n", "ufc-test", "--ignore-not-found")
    node = json.loads(cluster.ok("get", "node", "w-ready", "-o", "json"))
    assert node["status"]["conditions"][0]["status"] == "False"
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in node["spec"]["taints"]
    cluster.apply(_cni_daemonset())
    node = json.loads(cluster.ok("get", "node", "w-ready", "-o", "json"))
    assert node["status"]["conditions"][0]["status"] == "True" and not node["spec"].get("taints")
    assert "successfully rolled out" in cluster.ok(
        "rollout", "status", "ds/cni", "-n", "ufc-test", "--timeout=20s"
    )


def test_system_namespaces_cannot_be_deleted(cluster: Cluster) -> None:
    proc = cluster.kubectl("delete", "namespace", "kube-system")
    assert proc.returncode == 1 and "this namespace may not be deleted" in proc.stderr


def _budget(app: str, **rule: int) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "ufc-test"},
        "spec": {**rule, "selector": {"matchLabels": {"app": app}}},
    }


def test_kubectl_drain_evicts_through_the_eviction_subresource(cluster: Cluster) -> None:
    """kubectl drain as roles/k8s_manifests runs it: cordon, pods by spec.nodeName, DaemonSet pods left,
    the rest evicted (policy/v1) and replaced elsewhere, a PodDisruptionBudget honoured; then the Node
    is deleted."""
    for name in ("dr-w1", "dr-w2"):
        apiserver.register_node(cluster.api, name, "v1.34.4", {"drain-test": "yes"}, None, False)
    cluster.apply(NS, _cni_daemonset())
    app = _deployment("drained", {"drain-test": "yes"}, replicas=2, anti=False)
    budget = _budget("drained", maxUnavailable=1)
    assert cluster.apply(app, budget).returncode == 0

    def pods_on(node: str) -> list[dict]:
        found = json.loads(
            cluster.ok("get", "pods", "-A", "--field-selector", f"spec.nodeName={node}", "-o", "json")
        )
        return found["items"]

    before = [
        p["metadata"]["name"] for p in pods_on("dr-w1") if p["metadata"]["labels"].get("app") == "drained"
    ]
    assert before, "the deployment has a pod on dr-w1 before the drain"
    refused = cluster.kubectl("drain", "dr-w1", "--timeout=20s")  # DaemonSet pods need --ignore-daemonsets
    assert refused.returncode == 1 and "cannot delete DaemonSet-managed Pods" in refused.stderr
    proc = cluster.kubectl("drain", "dr-w1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s")
    assert proc.returncode == 0, proc.stderr
    assert "evicting pod ufc-test/" + before[0] in proc.stderr + proc.stdout
    assert "node/dr-w1 drained" in proc.stdout
    node = json.loads(cluster.ok("get", "node", "dr-w1", "-o", "json"))
    assert node["spec"]["unschedulable"] is True
    left = {p["metadata"]["labels"].get("app") for p in pods_on("dr-w1")}
    assert left == {"cni"}  # only the DaemonSet's pod stays
    moved = json.loads(cluster.ok("get", "pods", "-n", "ufc-test", "-l", "app=drained", "-o", "json"))[
        "items"
    ]
    assert sorted(p["spec"]["nodeName"] for p in moved) == ["dr-w2", "dr-w2"]
    assert before[0] not in {p["metadata"]["name"] for p in moved}  # a new pod, not the evicted one
    cluster.ok("delete", "node", "dr-w1")
    assert cluster.kubectl("get", "node", "dr-w1").returncode == 1
    again = cluster.kubectl("delete", "node", "dr-w1", "--ignore-not-found")
    assert again.returncode == 0 and again.stdout == ""


def test_an_eviction_a_budget_forbids_is_429(cluster: Cluster) -> None:
    apiserver.register_node(cluster.api, "pdb-w1", "v1.34.4", {"pdb-test": "yes"}, None, False)
    cluster.apply(NS, _cni_daemonset())
    app = _deployment("guarded", {"pdb-test": "yes"})
    budget = _budget("guarded", minAvailable=1)
    assert cluster.apply(app, budget).returncode == 0
    pod = json.loads(cluster.ok("get", "pods", "-n", "ufc-test", "-l", "app=guarded", "-o", "json"))["items"][
        0
    ]
    with pytest.raises(apiserver.ApiError) as refused:
        cluster.api.evict(
            "ufc-test",
            pod["metadata"]["name"],
            {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod["metadata"]["name"]}},
            False,
        )
    assert refused.value.code == 429
    assert "needs 1 healthy pods and has 1 currently" in json.dumps(refused.value.status())
    proc = cluster.kubectl("drain", "pdb-w1", "--ignore-daemonsets", "--timeout=3s")
    assert proc.returncode == 1 and "disruption budget" in proc.stderr


def test_a_replacement_stays_where_it_was_bound_when_its_old_node_comes_back(cluster: Cluster) -> None:
    """A bound pod never moves by itself (kube-scheduler binds once): after a drain the evicted pods'
    replacements stay on the nodes they were bound to when the drained node is uncordoned, and while a
    second node is cordoned and drained concurrently its pods are exactly the ones bound to it."""
    for name in ("bw-1", "bw-2", "bw-3"):
        apiserver.register_node(cluster.api, name, "v1.34.4", {"bound-test": "yes"}, None, False)
    cluster.apply(NS, _cni_daemonset())
    assert cluster.apply(_deployment("bound", {"bound-test": "yes"}, replicas=6)).returncode == 0

    def where() -> dict[str, str]:
        found = json.loads(cluster.ok("get", "pods", "-n", "ufc-test", "-l", "app=bound", "-o", "json"))
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in found["items"]}

    start = where()
    assert sorted(start.values()) == ["bw-1", "bw-1", "bw-2", "bw-2", "bw-3", "bw-3"]
    proc = cluster.kubectl("drain", "bw-1", "--ignore-daemonsets", "--timeout=30s")
    assert proc.returncode == 0, proc.stderr
    drained = where()
    assert "bw-1" not in drained.values()
    cluster.ok("uncordon", "bw-1")
    assert where() == drained  # nothing moves back by itself
    cluster.ok("cordon", "bw-2")
    assert where() == drained  # a cordon moves nothing either
    on_w2 = {p for p, n in drained.items() if n == "bw-2"}
    proc = cluster.kubectl("drain", "bw-2", "--ignore-daemonsets", "--timeout=30s")
    assert proc.returncode == 0, proc.stderr
    for pod in on_w2:
        assert f"evicting pod ufc-test/{pod}" in proc.stderr + proc.stdout
    after = where()
    assert "bw-2" not in after.values() and not on_w2 & set(after)
    stayed = {p: n for p, n in drained.items() if n != "bw-2"}
    assert {p: n for p, n in after.items() if p in drained} == stayed
    cluster.ok("uncordon", "bw-2")


class _KubectlModule:
    """roles/k8s_manifests' ufcctl_kubectl module's host: the real kubectl against the stand-in."""

    def __init__(self, cluster: Cluster, check: bool = False, **params: str) -> None:
        self.cluster, self.check_mode = cluster, check
        self.params = {"kubectl": str(_kubectl()), "kubeconfig": str(cluster.kubeconfig), **params}
        self.calls: list[list[str]] = []

    def run_command(self, argv: list[str], data: str | None = None) -> tuple[int, str, str]:
        self.calls.append(argv)
        proc = subprocess.run(argv, input=data, capture_output=True, text=True, env=self.cluster.env,
                              timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def fail_json(self, **kw: object) -> None:
        raise AssertionError(kw["msg"])


def test_kubeadms_kube_proxy_rolls_one_node_at_a_time_until_ufcctl_widens_it(cluster: Cluster) -> None:
    """Issue 44, D20: kubeadm's kube-proxy DaemonSet says only `type: RollingUpdate`; the apiserver defaults
    maxUnavailable 1 (and maxSurge 0), and a strategic-merge patch (what ufcctl_kubectl mode=rollout sends)
    or a merge patch widens it as on the real apiserver; a second run reads and changes nothing."""
    from tests.helpers.pyimports import load_file

    module = load_file(Path(__file__).resolve().parents[3] / "roles" / "k8s_manifests" / "library"
                       / "ufcctl_kubectl.py")
    proxy = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
            "updateStrategy": {"type": "RollingUpdate"},  # kubeadm's manifests.go
            "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                         "spec": {"hostNetwork": True, "tolerations": [{"operator": "Exists"}],
                                  "containers": [{"name": "kube-proxy",
                                                  "image": "registry.k8s.io/kube-proxy:v1"}]}},
        },
    }
    cluster.ok("create", "--filename=-", stdin=json.dumps(proxy))

    def strategy() -> dict:
        found = json.loads(cluster.ok("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json"))
        return found["spec"]["updateStrategy"]

    assert strategy() == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    checked = _KubectlModule(cluster, check=True, daemonset="kube-system/kube-proxy", max_unavailable="10%")
    assert module.rollout(checked) == {"changed": True, "exists": True, "max_unavailable_was": "1"}
    assert strategy()["rollingUpdate"]["maxUnavailable"] == 1  # check mode reads only
    run = _KubectlModule(cluster, daemonset="kube-system/kube-proxy", max_unavailable="10%")
    assert module.rollout(run) == {"changed": True, "exists": True, "max_unavailable_was": "1"}
    assert strategy() == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 0}}
    again = _KubectlModule(cluster, daemonset="kube-system/kube-proxy", max_unavailable="10%")
    assert module.rollout(again) == {"changed": False, "exists": True, "max_unavailable_was": "10%"}
    assert not any("patch" in argv for argv in again.calls)
    # kubeadm upgrade rewrites the object (Update): the window falls back to the default
    live = json.loads(cluster.ok("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json"))
    live["spec"]["updateStrategy"] = {"type": "RollingUpdate"}
    cluster.ok("replace", "--filename=-", stdin=json.dumps(live))
    assert strategy()["rollingUpdate"]["maxUnavailable"] == 1
    merge = '{"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 50}}}}'
    cluster.ok("patch", "daemonset", "kube-proxy", "-n", "kube-system", "--type=merge", f"--patch={merge}")
    assert strategy()["rollingUpdate"] == {"maxUnavailable": 50, "maxSurge": 0}
    missing = _KubectlModule(cluster, daemonset="kube-system/no-such-proxy", max_unavailable="10%")
    assert module.rollout(missing) == {"changed": False, "exists": False, "max_unavailable_was": ""}
