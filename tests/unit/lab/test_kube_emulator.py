"""The LAB KUBE EMULATOR (tests/lab_standins/kube_emulator) on loopback: its packages, its discovery
(the CA hash pinned,
TLS verified against the discovered CA) and its join path (token checked, expiry, registration counted,
faults). etcd is replaced by a dict here; on the lab it is the real etcd core cluster."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.lab_standins.kube_emulator import kubeadm as emu
from tests.lab_standins.kube_emulator import packages
from ufcctl.domain.controlplane.kubeadm import ca_hash

TOKEN = "abcdef.0123456789abcdef"


def test_packages_carry_their_version_and_sha256(tmp_path: Path) -> None:
    sums = packages.build(tmp_path, ("1.34.4",))
    directory = packages.binary_dir(tmp_path, "1.34.4")
    for name in ("kubeadm", "kubelet"):
        data = (directory / name).read_bytes()
        assert b'VERSION = "v1.34.4"' in data and b"LAB KUBE EMULATOR" in data
        assert (directory / f"{name}.sha256").read_text().strip() == hashlib.sha256(data).hexdigest()
        assert sums[f"kubernetes/v1.34.4/bin/linux/amd64/{name}"] == hashlib.sha256(data).hexdigest()


def test_the_emulated_releases_are_the_built_ones_and_share_their_directory_with_the_real_kubectl(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default (1.34.4) and the upgrade target (1.35.4) are the releases tests/lab_build builds, so the
    real kubectl lands in the emulator's v1.34.4 directory: each file its own, whichever is written first;
    and the lab keeps the kubectl skew check on (kubectl 1.34.4 against a 1.34, then 1.35, cluster)."""
    from tests.lab_build import build as lab_build
    from tests.lab_build import mirror
    from tests.lab_build.components import ETCD, KUBERNETES, KUBERNETES_NEXT

    assert packages.VERSIONS == (KUBERNETES.tag.lstrip("v"), KUBERNETES_NEXT.tag.lstrip("v")) == (
        "1.34.4", "1.35.4")

    def fake_build(component: object, say: object = None) -> lab_build.Built:
        folder = tmp_path / "built" / component.name  # type: ignore[attr-defined]
        folder.mkdir(parents=True, exist_ok=True)
        for command in component.commands:  # type: ignore[attr-defined]
            (folder / command.name).write_bytes(b"real " + command.name.encode())
        return lab_build.Built(component, folder, cached=True, seconds=1)  # type: ignore[arg-type]

    monkeypatch.setattr(lab_build, "build", fake_build)
    root = tmp_path / "mirror"
    variables = mirror.publish_lab(root, say=lambda text: None)
    packages.build(root)
    mirror.publish_lab(root, say=lambda text: None)  # a second `lab up`: the emulator's files stay
    folder = packages.binary_dir(root, "1.34.4")
    assert (folder / "kubectl").read_bytes() == b"real kubectl"
    assert b"LAB KUBE EMULATOR" in (folder / "kubeadm").read_bytes()
    assert b"LAB KUBE EMULATOR" in (folder / "kubelet").read_bytes()
    assert {p.name for p in folder.iterdir()} == {"kubectl", "kubectl.sha256", "kubeadm", "kubeadm.sha256",
                                                  "kubelet", "kubelet.sha256"}
    assert (packages.binary_dir(root, "1.35.4") / "kubeadm").is_file()
    assert variables == {"ufc_etcd_version": ETCD.tag.lstrip("v"), "kube_node_kubectl_version": "1.34.4"}


def test_go_durations() -> None:
    assert emu._duration("24h0m0s") == 86400 and emu._duration("21600s") == 21600
    assert emu._duration("1h30m") == 5400
    with pytest.raises(emu.Failed, match="invalid duration"):
        emu._duration("6 hours")


def _ca(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    crt, pem = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return crt, pem


class FakeEtcd:
    """The emulator's Etcd with a dict (the lab uses etcdctl against etcd core)."""

    data: dict[str, str] = {}

    def __init__(self, settings: object):
        pass

    def get(self, key: str) -> str | None:
        return self.data.get(key)

    def put(self, key: str, value: str) -> None:
        self.data[key] = value

    def delete(self, key: str) -> bool:
        return self.data.pop(key, None) is not None

    def prefix(self, key: str) -> dict[str, str]:
        return {k: v for k, v in self.data.items() if k.startswith(key)}


@pytest.fixture()
def apiserver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, object]]:
    """The emulator's apiserver on 127.0.0.1 with a serving certificate from a test CA."""
    ca_crt, ca_key = _ca(tmp_path, "kubernetes")
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "ca.crt").write_bytes(ca_crt.read_bytes())
    (pki / "ca.key").write_bytes(ca_key.read_bytes())
    monkeypatch.setattr(emu, "PKI", pki)
    monkeypatch.setattr(emu, "Etcd", FakeEtcd)
    FakeEtcd.data = {"/kubelet-config": "kind: KubeletConfiguration\n"}
    emu._serving_cert(["127.0.0.1"])
    emu._store_token(FakeEtcd(None), TOKEN, 3600, "test")
    sys.path.insert(0, str(Path(emu.__file__).parent))  # kubeadm imports apiserver as the zip app does
    import apiserver as standin

    api = standin.API(standin.MemoryStore(), standin.load_schemas(None), "v1.34.4")
    standin.bootstrap(api)
    standin.put_configmap(api, "kube-public", "cluster-info", {
        "kubeconfig": emu._kubeconfig("https://127.0.0.1:0", (pki / "ca.crt").read_bytes(), "")})
    server = standin.server(api, 0, str(pki / "apiserver.crt"), str(pki / "apiserver.key"),
                            str(pki / "ca.crt"), address="127.0.0.1", routes={emu.JOIN_PATH: emu._join_route})
    server.RequestHandlerClass.conf = {"etcd": {}}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", pki / "ca.crt", api
    finally:
        server.shutdown()


def test_discovery_pins_the_ca_and_the_join_is_counted(apiserver: tuple) -> None:
    endpoint, ca_file, api = apiserver
    ca = emu._discover(endpoint, [ca_hash(ca_file.read_text())], time.time() + 10)
    assert ca == ca_file.read_bytes()
    body = {"node": "w1", "kind": "worker", "labels": {}, "taints": [], "endpoint": endpoint}
    reply = emu._post_join(endpoint, ca, TOKEN, body)
    assert reply["count"] == 1 and reply["kubelet_config"].startswith("kind: KubeletConfiguration")
    assert reply["etcd"] is None  # only control planes get the etcd settings
    assert emu._post_join(endpoint, ca, TOKEN, body)["count"] == 2
    assert json.loads(FakeEtcd.data["/nodes/w1"])["count"] == 2
    node = api.get(api.resource("", "v1", "nodes"), None, "w1")  # the join registered the Node
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "w1"
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    assert node["spec"]["taints"] == [not_ready]  # no CNI DaemonSet yet


def test_a_wrong_ca_hash_is_refused(apiserver: tuple) -> None:
    endpoint, _, _ = apiserver
    with pytest.raises(emu.Failed, match="none of the public keys sha256:.* are pinned"):
        emu._discover(endpoint, ["sha256:" + "0" * 64], time.time() + 10)


def test_tls_is_verified_against_the_discovered_ca(apiserver: tuple, tmp_path: Path) -> None:
    endpoint, _, _ = apiserver
    other, _ = _ca(tmp_path, "someone-else")
    with pytest.raises(emu.Failed, match="TLS to 127.0.0.1:.* with the cluster CA"):
        emu._post_join(endpoint, other.read_bytes(), TOKEN, {"node": "w1"})


@pytest.mark.parametrize(("token", "why"), [("abcdef.ffffffffffffffff", "unknown bootstrap token"),
                                            ("zzzzzz.0123456789abcdef", "unknown bootstrap token")])
def test_an_unknown_token_is_401(apiserver: tuple, token: str, why: str) -> None:
    endpoint, ca_file, api = apiserver
    with pytest.raises(emu.Failed, match=f"refused the join: 401 Unauthorized: {why}"):
        emu._post_join(endpoint, ca_file.read_bytes(), token, {"node": "w1"})


def test_an_expired_token_is_401(apiserver: tuple) -> None:
    endpoint, ca_file, api = apiserver
    record = json.loads(FakeEtcd.data["/tokens/abcdef"])
    FakeEtcd.data["/tokens/abcdef"] = json.dumps({**record, "expires": time.time() - 1})
    with pytest.raises(emu.Failed, match="the bootstrap token has expired"):
        emu._post_join(endpoint, ca_file.read_bytes(), TOKEN, {"node": "w1"})


KEY = "0123456789abcdef" * 4  # a certificate key: 32 bytes in hex


def _cp_join(endpoint: str, ca_file: Path, key: str) -> dict:
    body = {"node": "cp2", "kind": "control-plane", "labels": {}, "taints": None, "endpoint": endpoint,
            "certificate_key_sha256": emu._key_hash(key)}
    return emu._post_join(endpoint, ca_file.read_bytes(), TOKEN, body)


def test_a_control_plane_join_downloads_the_certificates_under_their_key_within_two_hours(
        apiserver: tuple) -> None:
    endpoint, ca_file, api = apiserver
    with pytest.raises(emu.Failed, match=r'500 .*download-certs.*Secret "kubeadm-certs" was not found in the '
                                         r'"kube-system" Namespace. This Secret might have expired'):
        _cp_join(endpoint, ca_file, KEY)  # never uploaded
    emu._upload_certs(api, KEY)
    assert _cp_join(endpoint, ca_file, KEY)["etcd"] == {}
    with pytest.raises(emu.Failed, match="error decoding secret data with provided key"):
        _cp_join(endpoint, ca_file, "f" * 64)
    secrets = api.resource("", "v1", "secrets")
    uploaded = api.get(secrets, "kube-system", "kubeadm-certs")
    expires = float(uploaded["metadata"]["annotations"][emu.CERTS_EXPIRES])
    assert 2 * 3600 - 60 < expires - time.time() <= 2 * 3600
    key = api.key(secrets, "kube-system", "kubeadm-certs")
    live = api.store.get(key)
    uploaded["metadata"]["annotations"][emu.CERTS_EXPIRES] = str(time.time() - 1)  # two hours later
    api.store.put_if(key, json.dumps(uploaded), live[1])
    with pytest.raises(emu.Failed, match="This Secret might have expired"):
        _cp_join(endpoint, ca_file, KEY)
    emu._upload_certs(api, KEY)  # `kubeadm init phase upload-certs --upload-certs` again
    assert _cp_join(endpoint, ca_file, KEY)["etcd"] == {}
    with pytest.raises(emu.Failed, match="certificate key must be 32 bytes in hex"):
        emu._upload_certs(api, "short")


def test_token_create_with_a_given_token_and_delete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("ADMIN_CONF", "CONF"):
        (tmp_path / name).write_text(json.dumps({"etcd": {}}))
        monkeypatch.setattr(emu, name, tmp_path / name)
    monkeypatch.setattr(emu, "Etcd", FakeEtcd)
    FakeEtcd.data = {}
    assert emu.main(["token", "create", TOKEN, "--ttl", "24h0m0s", "--kubeconfig", "admin.conf"]) == 0
    assert json.loads(FakeEtcd.data["/tokens/abcdef"])["secret"] == "0123456789abcdef"
    assert emu.main(["token", "create", TOKEN, "--ttl", "1h"]) == 1  # kubeadm refuses an id that exists
    assert 'bootstrap-token-abcdef" already exists' in capsys.readouterr().err
    assert emu.main(["token", "delete", "abcdef", "--kubeconfig", "/etc/kubernetes/admin.conf"]) == 0
    assert "/tokens/abcdef" not in FakeEtcd.data
    assert emu.main(["token", "delete", "abcdef"]) == 1
    assert emu.main(["token", "create", "--ttl", "1h"]) == 0  # no token given: a new one
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", capsys.readouterr().out.splitlines()[-1])


def test_an_injected_join_failure_stops_before_discovery(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"join": "fail"}))
    config = tmp_path / "join.yaml"
    config.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"
                      "nodeRegistration: {name: w1, criSocket: 'unix:///nonexistent'}\n")
    monkeypatch.setattr(emu, "FAULTS", faults)
    monkeypatch.setattr(emu.preflight, "run", lambda *args: None)  # this node passes kubeadm's preflight
    monkeypatch.setattr(emu, "KUBELET_CONF", tmp_path / "kubelet.conf")
    monkeypatch.setattr(emu, "KUBELET_BIN", config)  # any file that exists
    assert emu.main(["join", "--config", str(config)]) == 1
    assert emu.main(["upgrade", "plan"]) == 2  # anything else is "not emulated"


def _joined_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list]:
    kube, kubelet = tmp_path / "etc-kubernetes", tmp_path / "var-lib-kubelet"
    for path in (kube / "pki" / "ca.crt", kube / "kubelet.conf", kube / "admin.conf",
                 kube / "ufcctl" / "join.yaml", kube / "manifests" / "x.yaml", kubelet / "config.yaml",
                 kubelet / "pki" / "kubelet.pem"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    calls: list = []
    monkeypatch.setattr(emu, "KUBERNETES_DIR", kube)
    monkeypatch.setattr(emu, "KUBELET_DIR", kubelet)
    monkeypatch.setattr(emu, "_systemctl", lambda *args: calls.append(args))
    monkeypatch.setattr(emu.os, "geteuid", lambda: 0)
    return kube, kubelet, calls


def test_reset_force_removes_what_kubeadm_reset_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    kube, kubelet, calls = _joined_root(tmp_path, monkeypatch)
    assert emu.main(["reset", "-f", "--cri-socket", "unix:///run/containerd/containerd.sock"]) == 0
    assert ("stop", "kubelet") in calls
    assert not (kube / "kubelet.conf").exists() and not (kube / "admin.conf").exists()
    assert list((kube / "pki").iterdir()) == [] and list(kubelet.iterdir()) == []  # contents, not the dirs
    assert (kube / "ufcctl" / "join.yaml").exists()  # not kubeadm's: reset leaves it
    assert "[reset] Deleting contents of directories" in capsys.readouterr().out
    assert emu.main(["reset", "-f"]) == 0  # again: nothing left, still 0 as kubeadm


def test_reset_without_force_asks_and_aborts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    kube, _kubelet, calls = _joined_root(tmp_path, monkeypatch)
    monkeypatch.setattr(emu.sys, "stdin", io.StringIO(""))  # no tty, no answer
    assert emu.main(["reset"]) == 1
    assert "aborted reset operation" in capsys.readouterr().err
    assert (kube / "kubelet.conf").exists() and calls == []
    assert emu.main(["reset", "--forse"]) == 1
    assert "unknown flag: --forse" in capsys.readouterr().err
    monkeypatch.setattr(emu.os, "geteuid", lambda: 1000)
    assert emu.main(["reset", "-f"]) == 1
    assert "IsPrivilegedUser" in capsys.readouterr().err and (kube / "kubelet.conf").exists()


def test_a_join_hands_the_node_a_client_certificate_its_kubelet_reports_its_version_with(
        apiserver: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lab_standins.kube_emulator import kubelet

    endpoint, ca_file, api = apiserver
    ca = ca_file.read_bytes()
    nodes = api.resource("", "v1", "nodes")
    reply = {n: emu._post_join(endpoint, ca, TOKEN, {"node": n, "kind": "worker", "labels": {},
                                                     "taints": [], "endpoint": endpoint})
             for n in ("w1", "w2")}
    cert = x509.load_pem_x509_certificate(reply["w1"]["client"].encode())
    assert cert.subject.rfc4514_string() == "CN=system:node:w1,O=system:nodes"
    assert cert.issuer == x509.load_pem_x509_certificate(ca).subject
    conf = {}
    for node in ("w1", "w2"):
        monkeypatch.setattr(emu, "KUBELET_CLIENT", tmp_path / f"{node}.pem")
        monkeypatch.setattr(emu, "KUBELET_CONF", tmp_path / f"{node}.conf")
        emu._write_kubelet_conf(endpoint, ca, node, reply[node]["client"])
        conf[node] = str(tmp_path / f"{node}.conf")
    assert oct((tmp_path / "w1.pem").stat().st_mode & 0o777) == "0o600"
    monkeypatch.setattr(kubelet, "VERSION", "v1.35.4")
    assert kubelet.report_version(conf["w1"], "w1") is None
    assert api.get(nodes, None, "w1")["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.4"
    assert api.get(nodes, None, "w2")["status"]["nodeInfo"]["kubeletVersion"] == emu.VERSION
    refused = kubelet.report_version(conf["w1"], "w2")  # NodeRestriction: its own Node only
    assert refused is not None and "403" in refused
    assert api.get(nodes, None, "w2")["status"]["nodeInfo"]["kubeletVersion"] == emu.VERSION
    # a patch of the Node itself leaves the kubelet's status alone (only the status subresource moves it)
    api.patch(nodes, None, "w1", "application/merge-patch+json",
              json.dumps({"status": {"nodeInfo": {"kubeletVersion": "v9.9.9"}}}).encode(), "t", False, "Warn",
              False)
    assert api.get(nodes, None, "w1")["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.4"


@pytest.fixture()
def control_plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A control plane for `kubeadm upgrade`: admin.conf, the apiserver's settings, etcd as a dict, the
    static pod swap recorded instead of run."""
    admin = tmp_path / "admin.conf"
    admin.write_text("apiVersion: v1\n")
    monkeypatch.setattr(emu, "ADMIN_CONF", admin)
    monkeypatch.setattr(emu, "UPGRADES", tmp_path / "upgrades.jsonl")
    monkeypatch.setattr(emu, "STATE", tmp_path)
    monkeypatch.setattr(emu, "_local_apiserver", lambda: {"etcd": {}, "port": 6443, "ca": "ca.crt"})
    monkeypatch.setattr(emu, "Etcd", FakeEtcd)
    monkeypatch.setattr(emu.os, "geteuid", lambda: 0)
    FakeEtcd.data = {"/cluster-version": "v1.34.4"}
    swaps: list[str] = []
    monkeypatch.setattr(emu, "_upgrade_static_pods", lambda conf, target: swaps.append(target) or True)
    sys.path.insert(0, str(Path(emu.__file__).parent))
    import apiserver as standin

    api = standin.API(standin.MemoryStore(), standin.load_schemas(None), "v1.34.4")
    standin.bootstrap(api)
    monkeypatch.setattr(emu, "_api", lambda etcd: api)
    return {"swaps": swaps, "api": api, "standin": standin}


@pytest.mark.parametrize(("kubeadm", "target", "why"), [
    ("v1.34.4", "v1.35.4", "is higher than the kubeadm version"),
    ("v1.36.1", "v1.36.1", "can upgrade only 1 minor version at a time"),
    ("v1.35.4", "v1.34.9", "can only be used to upgrade to Kubernetes version 1.35"),
    ("v1.35.4", "1.35", "not a semantic version"),
])
def test_upgrade_apply_refuses_what_kubeadm_refuses(control_plane: dict, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], kubeadm: str,
                                                    target: str, why: str) -> None:
    monkeypatch.setattr(emu, "VERSION", kubeadm)
    assert emu.main(["upgrade", "apply", target, "-y"]) == 1
    assert why in capsys.readouterr().err
    assert FakeEtcd.data["/cluster-version"] == "v1.34.4" and control_plane["swaps"] == []


def test_upgrade_apply_refuses_a_downgrade(control_plane: dict, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(emu, "VERSION", "v1.35.4")
    FakeEtcd.data["/cluster-version"] = "v1.35.5"
    assert emu.main(["upgrade", "apply", "v1.35.4", "-y"]) == 1
    assert "lower than the cluster version" in capsys.readouterr().err


def test_upgrade_apply_needs_ready_control_planes_and_an_answer(control_plane: dict,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(emu, "VERSION", "v1.35.4")
    standin = control_plane["standin"]
    standin.register_node(control_plane["api"], "cp1", "v1.34.4", {}, None, True)  # no CNI: NotReady
    assert emu.main(["upgrade", "apply", "v1.35.4", "-y"]) == 1
    assert "ControlPlaneNodesReady" in capsys.readouterr().err and control_plane["swaps"] == []
    monkeypatch.setattr(emu.sys, "stdin", io.StringIO("n\n"))
    assert emu.main(["upgrade", "apply", "v1.35.4", "--ignore-preflight-errors=ControlPlaneNodesReady"]) == 1
    assert "didn't answer" in capsys.readouterr().err and control_plane["swaps"] == []
    assert emu.main(["upgrade", "apply", "v1.35.4", "--yes",
                     "--ignore-preflight-errors=ControlPlaneNodesReady"]) == 0
    assert FakeEtcd.data["/cluster-version"] == "v1.35.4" and control_plane["swaps"] == ["v1.35.4"]
    assert "SUCCESS! Your cluster was upgraded to \"v1.35.4\"" in capsys.readouterr().out


def test_upgrade_node_follows_the_cluster_and_refuses_an_older_kubeadm(
        control_plane: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    FakeEtcd.data["/cluster-version"] = "v1.35.4"
    monkeypatch.setattr(emu, "VERSION", "v1.34.4")
    assert emu.main(["upgrade", "node"]) == 1
    assert "upgrade kubeadm first" in capsys.readouterr().err and control_plane["swaps"] == []
    monkeypatch.setattr(emu, "VERSION", "v1.35.4")
    assert emu.main(["upgrade", "node"]) == 0
    assert control_plane["swaps"] == ["v1.35.4"]
    record = json.loads(emu.UPGRADES.read_text().splitlines()[-1])
    assert record["verb"] == "node" and record["version"] == "v1.35.4"


def test_upgrade_node_on_a_worker_needs_its_kubelet_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(emu, "_local_apiserver", lambda: {})
    monkeypatch.setattr(emu, "KUBELET_CONF", tmp_path / "kubelet.conf")
    monkeypatch.setattr(emu.os, "geteuid", lambda: 0)
    assert emu.main(["upgrade", "node"]) == 1
    assert "has not joined" in capsys.readouterr().err


# ---- kubeadm certs renew | check-expiration ---------------------------------------------------------

@pytest.fixture()
def kube_pki(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A control plane as init leaves it on the lab: the cluster CA, apiserver.crt and admin.conf; its
    apiserver.json names external etcd."""
    ca_crt, ca_key = _ca(tmp_path, "kubernetes")
    kube = tmp_path / "kubernetes"
    pki = kube / "pki"
    pki.mkdir(parents=True)
    (pki / "ca.crt").write_bytes(ca_crt.read_bytes())
    (pki / "ca.key").write_bytes(ca_key.read_bytes())
    for name, value in (("PKI", pki), ("KUBERNETES_DIR", kube), ("ADMIN_CONF", kube / "admin.conf"),
                        ("STATE", tmp_path), ("RENEWALS", tmp_path / "renewals.jsonl")):
        monkeypatch.setattr(emu, name, value)
    monkeypatch.setattr(emu, "_local_apiserver", lambda: {"etcd": {"endpoints": []}, "port": 6443})
    monkeypatch.setattr(emu.os, "geteuid", lambda: 0)
    emu._serving_cert(["10.0.0.10", "127.0.0.1"])
    (kube / "admin.conf").write_text(emu._kubeconfig("https://10.0.0.10:8443", (pki / "ca.crt").read_bytes(),
                                                     "kubernetes-admin", emu._admin_client()))
    return pki


def _cert_of(path: Path) -> x509.Certificate:
    text = path.read_text()
    if path.suffix == ".conf":
        import base64

        import yaml

        user = yaml.safe_load(text)["users"][0]["user"]
        return x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    return x509.load_pem_x509_certificate(text.encode())


def test_certs_renew_all_resigns_what_exists_with_new_keys_and_says_what_is_missing(
        kube_pki: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admin = kube_pki.parent / "admin.conf"
    before = {p: _cert_of(p) for p in (kube_pki / "apiserver.crt", admin)}
    key_before = (kube_pki / "apiserver.key").read_bytes()
    time.sleep(1.1)  # a later notAfter, in whole seconds
    assert emu.main(["certs", "renew", "all"]) == 0
    out = capsys.readouterr().out
    assert "certificate for serving the Kubernetes API renewed" in out
    assert f"{emu.EMBEDDED} admin to use and for kubeadm itself renewed" in out
    # the lab has none of these; with external etcd the etcd certificates are not kubeadm's
    assert "MISSING! certificate for the front proxy client" in out and "MISSING! certificate embedded in " \
        "the kubeconfig file for the scheduler manager to use" in out and "etcd" not in out.split("Done")[0]
    assert "You must restart the kube-apiserver" in out
    for path, old in before.items():
        new = _cert_of(path)
        assert new.not_valid_after_utc > old.not_valid_after_utc and new.subject == old.subject
        assert new.issuer == old.issuer and new.serial_number != old.serial_number
    sans = before[kube_pki / "apiserver.crt"].extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert _cert_of(kube_pki / "apiserver.crt").extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value == sans.value
    assert (kube_pki / "apiserver.key").read_bytes() != key_before  # kubeadm makes a new key
    assert json.loads((kube_pki.parent.parent / "renewals.jsonl").read_text())["names"][0] == "admin.conf"


def test_certs_renew_one_name_and_check_expiration(kube_pki: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    admin = (kube_pki.parent / "admin.conf").read_text()
    assert emu.main(["certs", "renew", "apiserver"]) == 0
    assert (kube_pki.parent / "admin.conf").read_text() == admin  # only the one named
    assert emu.main(["certs", "renew", "apiserver-etcd-client"]) == 0  # external etcd: not kubeadm's
    assert "MISSING! certificate the apiserver uses to access etcd" in capsys.readouterr().out
    assert emu.main(["certs", "check-expiration"]) == 0
    table = capsys.readouterr().out
    assert re.search(r"^admin\.conf +\w{3} \d\d, \d{4} \d\d:\d\d UTC +36[45]d +ca +no$", table, re.M), table
    assert re.search(r"^apiserver +.* +ca +no$", table, re.M) and "!MISSING! front-proxy-client" in table
    assert re.search(r"^ca +\w{3} \d\d, \d{4} .* no$", table, re.M) and "!MISSING! front-proxy-ca" in table


@pytest.mark.parametrize(("argv", "why"), [
    (["certs", "renew"], 'missing subcommand; "renew" is not meant to be run on its own'),
    (["certs", "renew", "apiservr"], 'invalid subcommand: "apiservr"'),
    (["certs", "renew", "all", "--force"], "unknown flag: --force"),
])
def test_certs_renew_refuses_what_kubeadm_refuses(kube_pki: Path, capsys: pytest.CaptureFixture[str],
                                                  argv: list[str], why: str) -> None:
    before = (kube_pki / "apiserver.crt").read_bytes()
    assert emu.main(argv) == 1
    assert why in capsys.readouterr().err
    assert (kube_pki / "apiserver.crt").read_bytes() == before


def test_certs_renew_needs_root_and_the_ca(kube_pki: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = (kube_pki / "apiserver.crt").read_bytes()
    for path in (kube_pki / "ca.key", kube_pki.parent / "admin.conf"):
        path.chmod(0o600)
    monkeypatch.setattr(emu.os, "geteuid", lambda: 1000)
    assert emu.main(["certs", "renew", "all"]) == 1
    assert f"open {kube_pki.parent / 'admin.conf'}: permission denied" in capsys.readouterr().err
    monkeypatch.setattr(emu.os, "geteuid", lambda: 0)
    (kube_pki / "ca.key").unlink()  # external CA mode needs apiserver-kubelet-client, which the lab lacks
    assert emu.main(["certs", "renew", "apiserver"]) == 1
    assert "Error checking external CA condition for ca certificate authority" in capsys.readouterr().err
    (kube_pki / "ca.crt").unlink()
    assert emu.main(["certs", "renew", "all"]) == 1
    assert "failure loading ca certificate" in capsys.readouterr().err
    assert (kube_pki / "apiserver.crt").read_bytes() == before


def test_the_apiserver_serves_a_renewed_certificate_only_after_a_restart(kube_pki: Path) -> None:
    import socket
    import ssl

    sys.path.insert(0, str(Path(emu.__file__).parent))
    import apiserver as standin

    api = standin.API(standin.MemoryStore(), standin.load_schemas(None), "v1.34.4")

    def served(port: int) -> bytes:
        context = ssl.create_default_context(cafile=str(kube_pki / "ca.crt"))
        context.check_hostname = False
        with socket.create_connection(("127.0.0.1", port)) as sock, \
                context.wrap_socket(sock) as tls:
            return tls.getpeercert(binary_form=True) or b""

    def start() -> object:
        server = standin.server(api, 0, str(kube_pki / "apiserver.crt"), str(kube_pki / "apiserver.key"),
                                str(kube_pki / "ca.crt"), address="127.0.0.1")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def der(path: Path) -> bytes:
        return _cert_of(path).public_bytes(serialization.Encoding.DER)

    server = start()
    old = der(kube_pki / "apiserver.crt")
    assert emu.main(["certs", "renew", "apiserver"]) == 0
    assert served(server.server_address[1]) == old != der(kube_pki / "apiserver.crt")  # type: ignore[attr-defined]
    server.shutdown()  # type: ignore[attr-defined]
    server = start()  # the restart
    assert served(server.server_address[1]) == der(kube_pki / "apiserver.crt")  # type: ignore[attr-defined]
    server.shutdown()  # type: ignore[attr-defined]


def test_init_leaves_kubeadms_kube_proxy_daemonset_at_one_node_at_a_time(apiserver: tuple) -> None:
    """kubeadm's addon phase makes kube-proxy's DaemonSet with no rollingUpdate: the apiserver's default
    maxUnavailable 1 is what roles/kube_control_plane widens (D20); a second init leaves it as it is."""
    _, _, api = apiserver
    emu._kube_proxy_addon(api, "registry.k8s.io")
    daemonsets = api.resource("apps", "v1", "daemonsets")
    ds = api.get(daemonsets, "kube-system", "kube-proxy")
    assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 1
    container = ds["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"registry.k8s.io/kube-proxy:{emu.VERSION}"
    assert ds["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    emu._kube_proxy_addon(api, "registry.k8s.io")  # idempotent: _put_new leaves what exists
    assert api.get(daemonsets, "kube-system", "kube-proxy")["metadata"]["uid"] == ds["metadata"]["uid"]
