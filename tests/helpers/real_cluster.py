"""What the lab tests read and do on a lab running the real Kubernetes (`ufcctl lab up --kube real`):
the facts the real kubeadm, kubelet and kube-apiserver leave, where the LAB KUBE EMULATOR's tests read
its own records (tests/lab_standins/kube_emulator/lab.py). Each function names the real fact it reads.

- A join: each TLS bootstrap of the kubelet (what `kubeadm join` waits for) writes a new
  /var/lib/kubelet/pki/kubelet-client-<time>.pem, so their number counts the node's joins (a `kubeadm
  reset` empties the folder; the tests' partial reset keeps it, and the kubelet keeps its key).
- The endpoint a node joined through: the `server` of the kubeconfig the bootstrap wrote, kubelet.conf.
- A join that fails: kubeadm's preflight refuses a join while port 10250 (the kubelet's) is taken
  (`[ERROR Port-10250]`), so a listener there fails it before anything is written.
- A join that hangs: with the VIP unreachable from the node, kubeadm's discovery retries until its
  timeout (5 min), the process alive: long enough to kill ufcctl in the middle.
- An upgrade of a control plane: `kubeadm upgrade apply` and `kubeadm upgrade node` back the static Pod
  manifests up to /etc/kubernetes/tmp/kubeadm-backup-manifests-<time> before replacing them.
- An apiserver that serves but is not ready: its packets to etcd dropped, /readyz fails.
- Which apiserver answered through the VIP: kubeadm gives each its own serving certificate.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

KUBECTL = ["kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"]
KUBELET_PKI = "/var/lib/kubelet/pki"
KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
UPGRADE_BACKUPS = "/etc/kubernetes/tmp"
PORT_UNIT = "ufcctl-test-port-10250"


def _exec(container: str, script: str, env: dict[str, str], check: bool = True,
          timeout: int = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["podman", "exec", container, "sh", "-c", script], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman exec {container} sh -c {script!r}: rc {proc.returncode}: "
                             f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def kubelet_bootstraps(node: str, env: dict[str, str]) -> int:
    """How many client certificates the node's kubelet got by TLS bootstrap (one per join)."""
    out = _exec(node, f"ls {KUBELET_PKI} 2>/dev/null || true", env).stdout.split()
    return sum(1 for name in out if name.startswith("kubelet-client-2") and name.endswith(".pem"))


def joined_endpoint(node: str, env: dict[str, str]) -> str:
    """host:port of the apiserver the node's kubelet talks to (kubelet.conf's server)."""
    for line in _exec(node, f"cat {KUBELET_CONF}", env).stdout.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "server":
            return value.strip().removeprefix("https://")
    raise AssertionError(f"{node}: no server in {KUBELET_CONF}")


def nodes(control_plane: str, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every Node object by name, read with kubectl on a control plane."""
    out = _exec(control_plane, " ".join([*KUBECTL, "get", "nodes", "-o", "json"]), env).stdout
    return {n["metadata"]["name"]: n for n in json.loads(out)["items"]}


def delete_node(control_plane: str, node: str, env: dict[str, str]) -> None:
    """Delete `node`'s Node object (kubectl on a control plane), as an operator does before the node joins
    again: kubeadm join refuses a name whose Node is still Ready."""
    _exec(control_plane, " ".join([*KUBECTL, "delete", "node", node, "--ignore-not-found", "--wait=true"]),
          env)


def upgrade_backups(control_plane: str, env: dict[str, str]) -> list[str]:
    """The manifest backups kubeadm upgrade apply|node left on the node, oldest first."""
    out = _exec(control_plane, f"ls {UPGRADE_BACKUPS} 2>/dev/null || true", env).stdout.split()
    return sorted(n for n in out if n.startswith("kubeadm-backup-manifests-"))


@contextmanager
def join_refused(node: str, env: dict[str, str]) -> Iterator[None]:
    """A listener on port 10250 of `node` while the block runs: kubeadm's preflight fails the join."""
    listen = ("import socket,time; s=socket.socket(socket.AF_INET6); "
              "s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0); s.bind(('::', 10250)); "
              "s.listen(); time.sleep(3600)")
    _exec(node, f"systemd-run --unit {PORT_UNIT} --collect python3 -c \"{listen}\" && "
          f"for i in $(seq 50); do ss -Hltn 'sport = :10250' | grep -q . && exit 0; sleep 0.1; done; exit 1",
          env)
    try:
        yield
    finally:
        _exec(node, f"systemctl stop {PORT_UNIT} || true", env, check=False)


@contextmanager
def vip_unreachable(node: str, vip: str, env: dict[str, str]) -> Iterator[None]:
    """An unreachable route to the VIP on `node` while the block runs: kubeadm's discovery keeps retrying."""
    _exec(node, f"ip route replace unreachable {vip}/32", env)
    try:
        yield
    finally:
        _exec(node, f"ip route del unreachable {vip}/32 || true", env, check=False)


ETCD_CLIENT_PORTS = (2379, 2383, 2385)  # core, events, pods (roles/etcd/defaults/main.yml)
UNREADY_COMMENT = "ufcctl-test-unready"


def _unready_rule(action: str) -> str:
    ports = ",".join(str(p) for p in ETCD_CLIENT_PORTS)
    return (f"iptables -w -{action} OUTPUT -p tcp -m multiport --dports {ports} "
            f"-m comment --comment {UNREADY_COMMENT} -j DROP")


@contextmanager
def apiserver_unready(control_plane: str, env: dict[str, str]) -> Iterator[None]:
    """The control plane's kube-apiserver unready while the block runs: its packets to the three etcd
    clusters' client ports are dropped, so /readyz fails (its etcd checks time out) while it serves."""
    _exec(control_plane, _unready_rule("I"), env)
    try:
        yield
    finally:
        _exec(control_plane, f"while {_unready_rule('D')} 2>/dev/null; do :; done", env, check=False)


def serving_certificate_sha256(control_plane: str, env: dict[str, str]) -> str:
    """sha256 of the DER of the control plane's apiserver serving certificate (kubeadm gives each its
    own): how the VIP client names the apiserver that answered (tests/lab_standins/apiserver_standin)."""
    pem = _exec(control_plane, "cat /etc/kubernetes/pki/apiserver.crt", env).stdout
    return "sha256:" + hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()[:16]


def static_pod_state(node: str, name: str, verb: str, env: dict[str, str]) -> str:
    """What `systemctl is-active|is-enabled` would say of kubeadm's static Pod `name` on the node: active
    while its process runs, enabled while its manifest is in /etc/kubernetes/manifests."""
    if verb == "is-active":
        running = _exec(node, f"pgrep -x {name} >/dev/null", env, check=False).returncode == 0
        return "active" if running else "inactive"
    if verb == "is-enabled":
        there = _exec(node, f"test -f /etc/kubernetes/manifests/{name}.yaml", env, check=False)
        return "enabled" if there.returncode == 0 else "disabled"
    raise ValueError(f"no {verb} for a static Pod")
