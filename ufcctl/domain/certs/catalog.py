"""Every certificate file ufcctl's roles write or kubeadm manages, listed once, and which hosts hold it.

`tests/unit/domain/certs/test_catalog.py` reads the roles (etcd's certificate list, the files
kube_control_plane and registry_cache write, kubeadm's certificatesDir) and fails when a role writes
a certificate this list does not name, so a new certificate cannot be left out of `ufcctl certs check`.
Where each is issued (for renewal): `ISSUERS`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

ETCD_GROUPS = ("etcd_core", "etcd_events", "etcd_pods")
CONTROL_PLANE = "kube_control_plane"
KUBE_NODE = "kube_node"
REGISTRY_CACHE = "registry_cache"
CONTROLLER = "controller"  # the host column of the controller's own copies under the state directory

# Role defaults the paths depend on (roles/etcd/defaults/main.yml); a host var overrides each.
PATH_DEFAULTS: Mapping[str, str] = {
    "etcd_pki_dir": "/etc/etcd/pki",
    "etcd_apiserver_pki_dir": "/etc/kubernetes/pki",
}
# kubeadm's certificatesDir (roles/kube_control_plane/vars/main.yml, ClusterConfiguration), fixed
KUBEADM_PKI = "/etc/kubernetes/pki"
# ufcctl/domain/images/cache_config.py CONFIG_DIR (not imported: the test checks both agree)
REGISTRY_CACHE_DIR = "/etc/ufcctl/registry-cache"

# Who issues a certificate, for `ufcctl certs renew` and the operator reading the list.
ISSUERS = {
    "etcd": "roles/etcd (pki_node.yml: key and CSR on the node, signed on the controller by the etcd CA)",
    "etcd-ca": "roles/etcd (pki_controller.yml: self-signed on the controller, copied to the nodes)",
    "kube-ca": "roles/kube_control_plane (pki_controller.yml: self-signed on the controller, copied)",
    "kubeadm": "kubeadm on the control plane (init/join with the cluster CA; `kubeadm certs renew`)",
    "kubeadm-join": "kubeadm join (the cluster CA from the discovery; changes only with the CA)",
    "kubelet": "the kubelet itself (client certificate rotation through the CSR API)",
    "site": "the site (registry_cache_tls_cert_src on the controller, copied by roles/registry_cache)",
}


@dataclass(frozen=True)
class CertFile:
    """One certificate file: where (a path template over PATH_DEFAULTS), on which hosts, and whether
    its absence is a fault (required) or only means the component did not make it (optional)."""

    path: str
    what: str
    issuer: str  # a key of ISSUERS
    groups: tuple[str, ...]  # a host in any of them holds it; (CONTROLLER,) for the controller's copies
    required: bool = True
    when_https: bool = False  # only where registry_cache_scheme is https

    def resolved(self, host_vars: Mapping[str, Any]) -> str:
        # a templated value only Ansible can render falls back to the role default
        values = {k: v if "{{" in str(host_vars.get(k) or "") else str(host_vars.get(k) or v)
                  for k, v in PATH_DEFAULTS.items()}
        return self.path.format(**values)


_CP = (CONTROL_PLANE,)
_KUBELET = (CONTROL_PLANE, KUBE_NODE)

CATALOG: tuple[CertFile, ...] = (
    # roles/etcd, vars/main.yml __etcd_certs and __etcd_cert_files: one member certificate per host
    # serves clients and peers of every cluster the host is a member of (core, events, pods).
    CertFile("{etcd_pki_dir}/ca.crt", "etcd CA (all three clusters)", "etcd-ca", ETCD_GROUPS),
    CertFile("{etcd_pki_dir}/member.crt", "etcd member: peer + server, every cluster here", "etcd",
             ETCD_GROUPS),
    CertFile("{etcd_pki_dir}/agent.crt", "etcd defrag agent's client", "etcd", ETCD_GROUPS),
    CertFile("{etcd_apiserver_pki_dir}/etcd/ca.crt", "etcd CA for kube-apiserver", "etcd-ca", _CP),
    CertFile("{etcd_apiserver_pki_dir}/apiserver-etcd-client.crt", "kube-apiserver's etcd client", "etcd",
             _CP),
    # roles/kube_control_plane tasks/main.yml copies the cluster CA; kubeadm issues the rest with it.
    CertFile(f"{KUBEADM_PKI}/ca.crt", "Kubernetes CA", "kube-ca", _CP),
    CertFile(f"{KUBEADM_PKI}/apiserver.crt", "kube-apiserver serving", "kubeadm", _CP),
    # kubeadm makes these too; the LAB KUBE EMULATOR does not (tests/lab_standins/README.md), so a
    # missing one is not a fault here (a real control plane always has them)
    CertFile(f"{KUBEADM_PKI}/apiserver-kubelet-client.crt", "kube-apiserver's kubelet client", "kubeadm", _CP,
             required=False),
    CertFile(f"{KUBEADM_PKI}/front-proxy-ca.crt", "front proxy CA", "kubeadm", _CP, required=False),
    CertFile(f"{KUBEADM_PKI}/front-proxy-client.crt", "front proxy client", "kubeadm", _CP, required=False),
    # kubeconfigs with an embedded client certificate (kubeadm certs check-expiration lists them):
    # admin.conf on init and every control-plane join; the others kubeadm makes, the emulator not
    CertFile("/etc/kubernetes/admin.conf", "admin kubeconfig's client", "kubeadm", _CP),
    CertFile("/etc/kubernetes/super-admin.conf", "super-admin kubeconfig's client (first control plane)",
             "kubeadm", _CP, required=False),
    CertFile("/etc/kubernetes/controller-manager.conf", "kube-controller-manager's client", "kubeadm", _CP,
             required=False),
    CertFile("/etc/kubernetes/scheduler.conf", "kube-scheduler's client", "kubeadm", _CP, required=False),
    # kubeadm join writes the CA it discovered on every worker
    CertFile(f"{KUBEADM_PKI}/ca.crt", "Kubernetes CA (from kubeadm join)", "kubeadm-join", (KUBE_NODE,)),
    # the kubelet's own (client rotation; the serving one is self-signed unless serverTLSBootstrap)
    CertFile("/var/lib/kubelet/pki/kubelet-client-current.pem", "kubelet client", "kubelet", _KUBELET,
             required=False),
    CertFile("/var/lib/kubelet/pki/kubelet.crt", "kubelet serving (self-signed)", "kubelet", _KUBELET,
             required=False),
    # roles/registry_cache filter_plugins: tls.crt when registry_cache_scheme is https
    CertFile(f"{REGISTRY_CACHE_DIR}/tls.crt", "registry cache TLS", "site", (REGISTRY_CACHE,),
             when_https=True),
    # the controller's copies: {state}/pki/<ufc_cluster_name>/etcd (or etcd_pki_controller_dir) and
    # .../kubernetes (or kube_control_plane_pki_controller_dir)
    CertFile("etcd/ca.crt", "etcd CA (controller copy)", "etcd-ca", (CONTROLLER,)),
    CertFile("etcd/ufcctl.crt", "ufcctl's etcd client", "etcd", (CONTROLLER,)),
    CertFile("kubernetes/ca.crt", "Kubernetes CA (controller copy)", "kube-ca", (CONTROLLER,)),
)


@dataclass(frozen=True)
class Expected:
    """A certificate file one host should hold."""

    host: str
    path: str
    what: str
    issuer: str
    required: bool


def _applies(cert: CertFile, groups: Collection[str], host_vars: Mapping[str, Any]) -> bool:
    if not any(g in groups for g in cert.groups):
        return False
    if cert.when_https:
        return str(host_vars.get("registry_cache_scheme", "https")) == "https"
    return True


def expected_on_host(host: str, groups: Collection[str], host_vars: Mapping[str, Any]) -> list[Expected]:
    """The certificate files a node should hold, one per path (a control plane that is also a
    worker lists the CA once, with the stronger of the two entries)."""
    found: dict[str, Expected] = {}
    for cert in CATALOG:
        if CONTROLLER in cert.groups or not _applies(cert, groups, host_vars):
            continue
        path = cert.resolved(host_vars)
        if path not in found:
            found[path] = Expected(host, path, cert.what, cert.issuer, cert.required)
    return list(found.values())


def expected_on_controller(dirs: Mapping[str, str]) -> list[Expected]:
    """The controller's copies: `dirs` maps "etcd" and "kubernetes" to the controller directories
    the roles keep them in (etcd_pki_controller_dir, kube_control_plane_pki_controller_dir), for the
    parts the inventory has (etcd members, control planes)."""
    out = []
    for cert in CATALOG:
        part, _, name = cert.path.partition("/")
        if CONTROLLER in cert.groups and part in dirs:
            out.append(Expected(CONTROLLER, f"{dirs[part].rstrip('/')}/{name}", cert.what, cert.issuer,
                                cert.required))
    return out
