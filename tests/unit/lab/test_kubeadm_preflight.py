"""The LAB KUBE EMULATOR's kubeadm preflight (tests/lab_standins/kube_emulator/preflight.py) on a fake node:
a root directory with /proc files and tools in PATH, and injected probes for ports, the CRI socket and etcd.
Each check fails by the name kubeadm 1.34 prints, ignorePreflightErrors and --ignore-preflight-errors are
honoured as kubeadm does, and the emulator's init/join stop on a preflight error."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.lab_standins.kube_emulator import kubeadm as emu
from tests.lab_standins.kube_emulator import preflight
from tests.lab_standins.kube_emulator.preflight import Host, PreflightFailed

VERSION = "v1.34.4"
ETCD = {"endpoints": ["https://10.0.0.11:2379"], "caFile": "/pki/ca.crt", "certFile": "/pki/c.crt",
        "keyFile": "/pki/c.key"}


def _node(tmp_path: Path, kubelet: str = "Kubernetes v1.34.4", **probes: Any) -> Host:
    """A node that passes every check: root, 4 CPUs, 8 GB, every tool, ip_forward 1, no swap."""
    root = tmp_path / "root"
    for tool in (*preflight.REQUIRED_TOOLS, *preflight.REQUIRED_BEFORE_1_32, "kubelet"):
        path = root / "usr/bin" / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n" + (f"echo '{kubelet}'\n" if tool == "kubelet" else ""))
        path.chmod(0o755)
    files = {"proc/self/status": "Name:\tkubeadm\nCpus_allowed_list:\t0-1,4-5\n",
             "proc/meminfo": "MemTotal:        8000000 kB\n", "proc/swaps": "Filename\tType\tSize\n",
             "proc/sys/net/ipv4/ip_forward": "1\n", "proc/sys/net/ipv6/conf/default/forwarding": "0\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    defaults: dict[str, Any] = {"euid": lambda: 0, "port_free": lambda port: True,
                                "cri_error": lambda url: None, "etcd_version": lambda *args: "3.6.17"}
    return Host(root=root, path="/usr/local/bin:/usr/bin", **{**defaults, **probes})


def _init(**registration: Any) -> dict[str, dict[str, Any]]:
    return {"InitConfiguration": {"localAPIEndpoint": {"advertiseAddress": "10.0.0.11", "bindPort": 6443},
                                  "nodeRegistration": {"name": "cp1", **registration}},
            "ClusterConfiguration": {"kubernetesVersion": "v1.34.4", "etcd": {"external": dict(ETCD)}}}


def _join(control_plane: bool = False, **registration: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"nodeRegistration": {"name": "w1", **registration},
                           "discovery": {"bootstrapToken": {"apiServerEndpoint": "10.0.0.100:8443"}}}
    if control_plane:
        doc["controlPlane"] = {"localAPIEndpoint": {"advertiseAddress": "10.0.0.12", "bindPort": 6443}}
    return doc


def _names(findings: list[preflight.Finding]) -> list[tuple[str, bool]]:
    return [(f.name, f.fatal) for f in findings]


def test_a_healthy_node_passes_init_and_both_joins(tmp_path: Path) -> None:
    host = _node(tmp_path)
    assert preflight.init_checks(host, _init(), VERSION) == []
    assert preflight.join_checks(host, _join(), VERSION) == []
    assert preflight.join_checks(host, _join(control_plane=True), VERSION) == []
    assert host.cpus() == 4 and host.mem_mb() == 7812


def _write(host: Host, path: str, text: str) -> None:
    host.file(path).parent.mkdir(parents=True, exist_ok=True)
    host.file(path).write_text(text)


@pytest.mark.parametrize(("change", "expected"), [
    (lambda h: _write(h, "/proc/self/status", "Cpus_allowed_list:\t0\n"), ("NumCPU", True)),
    (lambda h: _write(h, "/proc/meminfo", "MemTotal:  1000000 kB\n"), ("Mem", True)),
    (lambda h: _write(h, "/proc/sys/net/ipv4/ip_forward", "0\n"),
     ("FileContent--proc-sys-net-ipv4-ip_forward", True)),
    (lambda h: h.file("/proc/sys/net/ipv4/ip_forward").unlink(),
     ("FileContent--proc-sys-net-ipv4-ip_forward", True)),
    (lambda h: _write(h, "/proc/swaps", "Filename\tType\n/dev/sda3\tpartition\t8388604\t0\t-2\n"),
     ("Swap", False)),
    (lambda h: h.file("/usr/bin/losetup").unlink(), ("FileExisting-losetup", True)),
    (lambda h: h.file("/usr/bin/cp").unlink(), ("FileExisting-cp", True)),
    (lambda h: h.file("/usr/bin/mount").unlink(), ("FileExisting-mount", True)),
    (lambda h: h.file("/usr/bin/kubelet").unlink(), ("KubeletVersion", True)),
    (lambda h: setattr(h, "euid", lambda: 1000), ("IsPrivilegedUser", True)),
    (lambda h: setattr(h, "cri_error", lambda url: f"connect {url}: refused"), ("CRI", True)),
    (lambda h: setattr(h, "etcd_version", lambda *a: "3.4.23"), ("ExternalEtcdVersion", True)),
    (lambda h: setattr(h, "etcd_version", lambda *a: "3.5.23"), ("ExternalEtcdVersion", True)),
    (lambda h: setattr(h, "port_free", lambda port: port != 10259), ("Port-10259", True)),
    (lambda h: setattr(h, "port_free", lambda port: port != 10250), ("Port-10250", True)),
], ids=["cpus", "mem", "ip_forward-0", "ip_forward-absent", "swap-warns", "losetup", "cp", "mount",
        "no-kubelet", "not-root", "cri", "etcd-3.4", "etcd-3.5.23", "scheduler-port",
        "kubelet-port"])
def test_each_check_fails_by_kubeadms_name(tmp_path: Path, change: Any, expected: tuple[str, bool]) -> None:
    host = _node(tmp_path)
    change(host)
    found = preflight.check_root(host) + preflight.init_checks(host, _init(), VERSION)
    assert _names(found) == [expected]


@pytest.mark.parametrize(("kubelet", "plane", "message"), [
    ("Kubernetes v1.30.9", "v1.34.4", 'Kubelet version "v1.30.9" is lower than kubeadm can support'),
    ("Kubernetes v1.35.4", "v1.34.4", 'Kubelet version: "1.35.4" Control plane version: "1.34.4"'),
    ("Kubernetes v1.34.4", "v1.33.2", 'Kubelet version: "1.34.4" Control plane version: "1.33.2"'),
])
def test_kubelet_version_skew_is_an_error(tmp_path: Path, kubelet: str, plane: str, message: str) -> None:
    docs = _init()
    docs["ClusterConfiguration"]["kubernetesVersion"] = plane
    found = preflight.init_checks(_node(tmp_path, kubelet=kubelet), docs, VERSION)
    assert _names(found) == [("KubeletVersion", True)] and message in found[0].message


@pytest.mark.parametrize("kubelet", ["Kubernetes v1.31.0", "Kubernetes v1.34.0 (LAB KUBE EMULATOR)"])
def test_kubelet_three_minors_older_passes(tmp_path: Path, kubelet: str) -> None:
    assert preflight.init_checks(_node(tmp_path, kubelet=kubelet), _init(), VERSION) == []


@pytest.mark.parametrize(("plane", "join", "conntrack_checked"), [
    ("v1.34.4", False, False),  # kubeadm 1.34: kube-proxy needs no conntrack in PATH from 1.32
    ("v1.31.9", False, True),  # an older control plane still needs it (checks_linux.go addExecChecks)
    ("v1.31.9", True, False),  # a join passes no version to the exec checks
])
def test_conntrack_is_required_only_below_1_32(tmp_path: Path, plane: str, join: bool,
                                               conntrack_checked: bool) -> None:
    host = _node(tmp_path)
    host.file("/usr/bin/conntrack").unlink()
    if join:
        found = preflight.join_checks(host, _join(), VERSION)
    else:
        docs = _init()
        docs["ClusterConfiguration"]["kubernetesVersion"] = plane
        found = [f for f in preflight.init_checks(host, docs, VERSION) if f.name != "KubeletVersion"]
    assert (("FileExisting-conntrack", True) in _names(found)) is conntrack_checked


def test_external_etcd_version_names_each_old_endpoint(tmp_path: Path) -> None:
    docs = _init()
    docs["ClusterConfiguration"]["etcd"]["external"]["endpoints"] = ["https://a:2379", "https://b:2379"]
    asked: list[tuple[str, ...]] = []

    def version(*args: str) -> str:
        asked.append(args)
        return "3.5.24" if args[0].startswith("https://a") else "3.4.23"

    found = preflight.init_checks(_node(tmp_path, etcd_version=version), docs, VERSION)
    assert [f.message for f in found] == ["this version of kubeadm only supports external etcd version >= "
                                          "3.5.24-0. Current version: 3.4.23"]
    assert asked[0] == ("https://a:2379", "/pki/ca.crt", "/pki/c.crt", "/pki/c.key")


def test_join_files_left_by_an_earlier_join(tmp_path: Path) -> None:
    host = _node(tmp_path)
    for name in ("etc/kubernetes/kubelet.conf", "etc/kubernetes/bootstrap-kubelet.conf",
                 "etc/kubernetes/pki/ca.crt"):
        _write(host, name, "x")
    assert _names(preflight.join_checks(host, _join(), VERSION)) == [
        ("FileAvailable--etc-kubernetes-kubelet.conf", True),
        ("FileAvailable--etc-kubernetes-bootstrap-kubelet.conf", True),
        ("FileAvailable--etc-kubernetes-pki-ca.crt", True)]
    # a control plane's join has the CA the role installed before it (kubeadm checks ca.crt on workers only)
    host.file("etc/kubernetes/kubelet.conf").unlink()
    host.file("etc/kubernetes/bootstrap-kubelet.conf").unlink()
    assert preflight.join_checks(host, _join(control_plane=True), VERSION) == []


def test_a_control_plane_join_checks_the_control_plane_ports(tmp_path: Path) -> None:
    host = _node(tmp_path, port_free=lambda port: port not in (6443, 10257))
    assert preflight.join_checks(host, _join(), VERSION) == []
    assert _names(preflight.join_checks(host, _join(control_plane=True), VERSION)) == [
        ("Port-6443", True), ("Port-10257", True)]


def test_ipv6_endpoints_check_ipv6_forwarding(tmp_path: Path) -> None:
    doc = _join()
    doc["discovery"]["bootstrapToken"]["apiServerEndpoint"] = "[fd00::100]:8443"
    assert _names(preflight.join_checks(_node(tmp_path), doc, VERSION)) == [
        ("FileContent--proc-sys-net-ipv6-conf-default-forwarding", True)]


def _listener(host: Host, pid: int, unit: str, inode: int = 4242, port: int = 6443) -> None:
    """A LISTEN socket on 0.0.0.0:port in the fake /proc, held by `pid` running in `unit`."""
    _write(host, "/proc/net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                                  "retrnsmt   uid  timeout inode\n"
                                  f"   0: 00000000:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 "
                                  f"00000000     0        0 {inode} 1 0000000000000000 100 0 0 10 0\n")
    fd = host.file(f"/proc/{pid}/fd")
    fd.mkdir(parents=True)
    (fd / "3").symlink_to(f"socket:[{inode}]")
    _write(host, f"/proc/{pid}/cgroup", f"0::/system.slice/{unit}.service\n")
    _write(host, f"/proc/{pid}/comm", "python3\n")


def test_the_apiserver_port_may_be_held_by_the_emulators_own_unit_only(tmp_path: Path) -> None:
    ours = _node(tmp_path / "ours", port_free=lambda port: port != 6443)
    _listener(ours, 812, "kube-apiserver")
    assert preflight.init_checks(ours, _init(), VERSION) == []
    stranger = _node(tmp_path / "stranger", port_free=lambda port: port != 6443)
    _listener(stranger, 977, "legacy-proxy")
    found = preflight.init_checks(stranger, _init(), VERSION)
    assert [(f.name, f.message) for f in found] == [
        ("Port-6443", "Port 6443 is in use by pid 977 python3 (unit legacy-proxy)")]


def test_port_free_binds_like_kubeadm() -> None:
    with socket.create_server(("127.0.0.1", 0)) as held:
        assert preflight._port_free(held.getsockname()[1]) is False


@pytest.mark.parametrize(("config", "argv", "ignore"), [
    (["ExternalEtcdVersion"], [], {"externaletcdversion"}),
    ([], ["--ignore-preflight-errors=NumCPU,mem"], {"numcpu", "mem"}),
    ([], ["--ignore-preflight-errors", "Swap", "--ignore-preflight-errors=cri"], {"swap", "cri"}),
    (["Port-6443"], ["--ignore-preflight-errors=ALL"], None),
    (["all"], [], {"all"}),
])
def test_ignore_preflight_errors(config: list[str], argv: list[str], ignore: set[str] | None) -> None:
    if ignore is None:
        with pytest.raises(ValueError, match="don't specify individual checks if 'all' is used"):
            preflight.ignored_names(config, argv)
    else:
        assert preflight.ignored_names(config, argv) == ignore


def _config(tmp_path: Path, docs: dict[str, dict[str, Any]]) -> str:
    path = tmp_path / "kubeadm.yaml"
    path.write_text(yaml.safe_dump_all([{"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": k, **v}
                                        for k, v in docs.items()]))
    return str(path)


def test_errors_fail_as_kubeadm_prints_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host = _node(tmp_path, etcd_version=lambda *a: "3.4.23")
    _write(host, "/proc/swaps", "Filename\tType\n/dev/sda3\tpartition\t8388604\t0\t-2\n")
    _write(host, "/proc/sys/net/ipv4/ip_forward", "0\n")
    with pytest.raises(PreflightFailed) as caught:
        preflight.run("init", _config(tmp_path, _init()), [], VERSION, host=host)
    assert str(caught.value) == (
        "error execution phase preflight: [preflight] Some fatal errors occurred:\n"
        "\t[ERROR FileContent--proc-sys-net-ipv4-ip_forward]: /proc/sys/net/ipv4/ip_forward contents are not "
        "set to 1\n"
        "\t[ERROR ExternalEtcdVersion]: this version of kubeadm only supports external etcd version >= "
        "3.5.24-0. Current version: 3.4.23\n"
        "[preflight] If you know what you are doing, you can make a check non-fatal with "
        "`--ignore-preflight-errors=...`")
    assert "\t[WARNING Swap]: swap is supported for cgroup v2 only." in capsys.readouterr().out


def test_ignored_errors_print_as_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host = _node(tmp_path, etcd_version=lambda *a: "3.4.23")
    _write(host, "/proc/sys/net/ipv4/ip_forward", "0\n")
    config = _config(tmp_path, _init(ignorePreflightErrors=["externalEtcdVersion"]))
    preflight.run("init", config, ["--ignore-preflight-errors=FileContent--proc-sys-net-ipv4-ip_forward"],
                  VERSION, host=host)
    out = capsys.readouterr().out
    assert "\t[WARNING ExternalEtcdVersion]: this version of kubeadm only supports" in out
    assert "\t[WARNING FileContent--proc-sys-net-ipv4-ip_forward]: " in out


def test_not_root_stops_before_the_other_checks(tmp_path: Path) -> None:
    host = _node(tmp_path, euid=lambda: 1000, cri_error=lambda url: "refused")
    with pytest.raises(PreflightFailed, match=r"(?s)\[ERROR IsPrivilegedUser\]: user is not running as root\n"
                                              r"\[preflight\] If you know"):
        preflight.run("join", _config(tmp_path, {"JoinConfiguration": _join()}), [], VERSION, host=host)


def test_the_emulators_join_stops_at_preflight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    host = _node(tmp_path)
    _write(host, "/etc/kubernetes/bootstrap-kubelet.conf", "x")
    monkeypatch.setattr(preflight, "Host", lambda: host)
    monkeypatch.setattr(emu, "KUBELET_CONF", tmp_path / "absent")
    monkeypatch.setattr(emu, "_discover", lambda *a: pytest.fail("discovery ran after a preflight error"))
    config = _config(tmp_path, {"JoinConfiguration": _join()})
    assert emu.main(["join", "--config", config]) == 1
    assert "[ERROR FileAvailable--etc-kubernetes-bootstrap-kubelet.conf]: /etc/kubernetes/bootstrap-kubelet" \
           ".conf already exists" in capsys.readouterr().err


# -- ExternalEtcdVersion's real probe: TLS with the client certificate against a loopback /version -----


def _cert(tmp_path: Path, name: str, issuer: tuple[Any, Any] | None, **ext: Any) -> tuple[Any, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(issuer[0].subject if issuer else subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
               .not_valid_after(now + dt.timedelta(days=1)))
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    else:
        names = x509.SubjectAlternativeName([x509.DNSName("localhost")])
        builder = builder.add_extension(names, critical=False)
    cert = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    (tmp_path / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert, key


@pytest.fixture()
def etcd_tls(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTPS /version as etcd 3.4.23 answers it, demanding a client certificate of the CA."""
    ca = _cert(tmp_path, "ca", None)
    _cert(tmp_path, "server", ca)
    _cert(tmp_path, "client", ca)

    class Version(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = json.dumps({"etcdserver": "3.4.23", "etcdcluster": "3.4.0"}).encode()
            self.send_response(200 if self.path == "/version" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Version)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    context.load_verify_locations(tmp_path / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://localhost:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()


def test_etcd_version_is_asked_over_tls_with_the_client_certificate(etcd_tls: tuple[str, Path]) -> None:
    endpoint, pki = etcd_tls
    ca, cert, key = (str(pki / n) for n in ("ca.crt", "client.crt", "client.key"))
    assert preflight._etcd_version(endpoint, ca, cert, key) == "3.4.23"
    with pytest.raises((ssl.SSLError, OSError)):  # no client certificate: etcd refuses the handshake
        preflight._etcd_version(endpoint, ca, "", "")
