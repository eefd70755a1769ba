"""The REAL control plane on loopback, no container: three real etcd 3.6.17 clusters (core, events+leases,
pods) over plain HTTP and the real kube-apiserver v1.34.4 started with the command kubeadm makes of what
roles/kube_control_plane renders for the sample inventory's first control plane (kubeadm `init phase
control-plane apiserver --dry-run`), changed only where a lab machine must: addresses (127.0.0.1, a free
port), certificate paths (a kubeadm-made PKI in a temporary directory), and each etcd cluster's endpoints
mapped one to one onto a loopback etcd (the etcd TLS flags go with it; TLS to etcd is the lab's,
tests/integration/test_etcd_lab.py). Binaries from the lab's build cache (tests/lab_build). Used by
tests/integration/test_real_apiserver.py and tests/benchmarks/bench_scale.py."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.helpers import kcp_render
from tests.helpers.ports import free_ports
from tests.lab_build.build import build
from tests.lab_build.components import ETCD, KUBERNETES

SAMPLE = kcp_render.ROOT / "inventories" / "sample"
PKI = "/etc/kubernetes/pki"
ETCD_TLS = ("--etcd-cafile=", "--etcd-certfile=", "--etcd-keyfile=")


def wait(what: str, done, seconds: float) -> None:  # type: ignore[no-untyped-def]
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


@contextmanager
def control_plane(tmp: Path, extra_args: tuple[str, ...] = ()
                  ) -> Iterator[tuple[Path, dict[str, Etcd], list[str]]]:
    """(tmp, the etcd clusters by name, kubectl with the super-admin kubeconfig `tmp/super-admin.conf`);
    every process stopped on exit. `extra_args` are appended to the apiserver's command."""
    tmp.mkdir(parents=True, exist_ok=True)
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
        procs.append(subprocess.Popen([str(kube.binary("kube-apiserver")), *args, *extra_args], stdout=log,
                                      stderr=log))
        kubectl = [str(kube.binary("kubectl")), f"--kubeconfig={tmp / 'super-admin.conf'}"]

        def ready() -> bool:
            assert procs[-1].poll() is None, (tmp / "kube-apiserver.log").read_text()[-3000:]
            return subprocess.run([*kubectl, "get", "--raw", "/readyz"], capture_output=True, text=True,
                                  timeout=30, check=False).stdout == "ok"

        wait("kube-apiserver /readyz", ready, 180)
        yield tmp, clusters, kubectl
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
