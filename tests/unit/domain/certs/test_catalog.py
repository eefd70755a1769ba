"""The certificate catalog matches what the roles write: every certificate path found in the roles'
tasks, vars, templates and plugins is listed, and every listed file a role issues is found there."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml

from ufcctl.domain.certs import catalog
from ufcctl.domain.certs.catalog import CATALOG, CONTROLLER, expected_on_controller, expected_on_host
from ufcctl.domain.images.cache_config import CONFIG_DIR

ROOT = Path(__file__).resolve().parents[4]
ROLES = ROOT / "roles"
SEARCHED = ("tasks", "vars", "defaults", "templates", "filter_plugins", "lookup_plugins", "library",
            "action_plugins")
CTRL = "/STATE/pki/default"
# what each directory variable of the roles stands for (role defaults; the controller's under CTRL)
DIRS = {
    "etcd_pki_dir": "/etc/etcd/pki",
    "etcd_apiserver_pki_dir": "/etc/kubernetes/pki",
    "etcd_pki_controller_dir": f"{CTRL}/etcd",
    "kube_control_plane_pki_controller_dir": f"{CTRL}/kubernetes",
    "kube_node_pki_controller_dir": f"{CTRL}/kubernetes",
    "config_dir": CONFIG_DIR,
    "cache_config.CONFIG_DIR": CONFIG_DIR,
}
# `{{ var }}/x.crt`, `var ~ '/x.crt'`, f"{var}/x.crt", and plain absolute paths
TEMPLATED = re.compile(r"(?:\{\{ *([\w.]+) *\}\}|\b([\w.]+) ~ '|\{([\w.]+)\})(/[\w./-]+\.(?:crt|pem))\b")
ABSOLUTE = re.compile(r"(?<![\w}.])(/[\w./-]+\.(?:crt|pem))\b")
# `cert.dir ~ '/' ~ cert.name ~ '.crt'` in roles/etcd: expanded over __etcd_certs' entries
ETCD_CERT_ENTRY = re.compile(r"'name': '([\w-]+)'.*?'dir': (\w+)", re.S)


def _role_files(roles: Path) -> list[Path]:
    return sorted(p for role in roles.iterdir() for sub in SEARCHED if (role / sub).is_dir()
                  for p in (role / sub).rglob("*") if p.is_file() and p.name != "ufc_cert_read.py")


def _etcd_certs() -> list[str]:
    text = (ROLES / "etcd" / "vars" / "main.yml").read_text()
    block = text[text.index("__etcd_certs:"):text.index("__etcd_pki_directories:")]
    entries = ETCD_CERT_ENTRY.findall(block)
    assert entries, "roles/etcd/vars/main.yml: __etcd_certs changed shape; update this test"
    return [f"{DIRS[d]}/{name}.crt" for name, d in entries]


def written_paths(roles: Path = ROLES) -> dict[str, str]:
    """Every certificate path the roles name, resolved -> where it was found."""
    found: dict[str, str] = {}
    for path in _role_files(roles):
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            where = f"{path.relative_to(roles.parent)}:{lineno}"
            for m in TEMPLATED.finditer(line):
                var = m.group(1) or m.group(2) or m.group(3)
                assert var in DIRS, f"{where}: certificate under {var}: add it to the catalog and DIRS"
                found.setdefault(DIRS[var] + m.group(4), where)
            for m in ABSOLUTE.finditer(TEMPLATED.sub("", line)):
                found.setdefault(m.group(1), where)
            if "cert.dir ~ '/' ~ cert.name ~ '.crt'" in line:
                for cert in _etcd_certs():
                    found.setdefault(cert, where)
    return found


@functools.cache
def _written() -> dict[str, str]:
    return written_paths()


def listed_paths() -> set[str]:
    nodes = {c.resolved({}) for c in CATALOG if CONTROLLER not in c.groups}
    dirs = {"etcd": f"{CTRL}/etcd", "kubernetes": f"{CTRL}/kubernetes"}
    ctrl = {e.path for e in expected_on_controller(dirs)}
    return nodes | ctrl


def test_every_certificate_a_role_names_is_listed() -> None:
    missing = {path: where for path, where in _written().items() if path not in listed_paths()}
    assert not missing, f"certificates the roles write that ufcctl/domain/certs/catalog.py lacks: {missing}"


@pytest.mark.parametrize("cert", [c for c in CATALOG if c.issuer in ("etcd", "etcd-ca", "kube-ca", "site")],
                         ids=lambda c: c.path)
def test_every_listed_role_certificate_is_written_by_a_role(cert: catalog.CertFile) -> None:
    path = (f"{CTRL}/{cert.path}" if CONTROLLER in cert.groups else cert.resolved({}))
    assert path in _written(), f"{path}: no role writes it any more; drop it from the catalog"


def test_path_defaults_are_the_roles_defaults() -> None:
    defaults = yaml.safe_load((ROLES / "etcd" / "defaults" / "main.yml").read_text())
    for key, value in catalog.PATH_DEFAULTS.items():
        assert defaults[key] == value, key


def test_kubeadm_pki_and_registry_dir_are_the_roles() -> None:
    text = (ROLES / "kube_control_plane" / "vars" / "main.yml").read_text()
    assert f"certificatesDir: {catalog.KUBEADM_PKI}" in text
    assert catalog.REGISTRY_CACHE_DIR == CONFIG_DIR


def test_the_sweep_finds_a_new_certificate(tmp_path: Path) -> None:
    """The check can fail: a role naming a certificate the catalog lacks is reported."""
    role = tmp_path / "roles" / "newrole" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text("- ansible.builtin.copy:\n    dest: /etc/newthing/tls.crt\n")
    assert "/etc/newthing/tls.crt" in written_paths(tmp_path / "roles")
    assert "/etc/newthing/tls.crt" not in listed_paths()


@pytest.mark.parametrize(
    ("groups", "hostvars", "paths"),
    [
        pytest.param({"etcd_core", "kube_control_plane"}, {}, {
            "/etc/etcd/pki/ca.crt", "/etc/etcd/pki/member.crt", "/etc/etcd/pki/agent.crt",
            "/etc/kubernetes/pki/etcd/ca.crt", "/etc/kubernetes/pki/apiserver-etcd-client.crt",
            "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/apiserver.crt",
            "/etc/kubernetes/pki/apiserver-kubelet-client.crt", "/etc/kubernetes/pki/front-proxy-ca.crt",
            "/etc/kubernetes/pki/front-proxy-client.crt", "/var/lib/kubelet/pki/kubelet-client-current.pem",
            "/var/lib/kubelet/pki/kubelet.crt", "/etc/kubernetes/admin.conf",
            "/etc/kubernetes/super-admin.conf", "/etc/kubernetes/controller-manager.conf",
            "/etc/kubernetes/scheduler.conf"},
            id="control-plane-and-etcd"),
        pytest.param({"kube_node"}, {}, {"/etc/kubernetes/pki/ca.crt",
                                         "/var/lib/kubelet/pki/kubelet-client-current.pem",
                                         "/var/lib/kubelet/pki/kubelet.crt"}, id="worker"),
        pytest.param({"registry_cache"}, {"registry_cache_scheme": "http"}, set(), id="cache-http"),
        pytest.param({"registry_cache"}, {}, {"/etc/ufcctl/registry-cache/tls.crt"}, id="cache-https"),
        pytest.param({"etcd_pods"}, {"etcd_pki_dir": "/srv/pki"}, {
            "/srv/pki/ca.crt", "/srv/pki/member.crt", "/srv/pki/agent.crt"}, id="etcd-dir-overridden"),
        pytest.param({"etcd_pods"}, {"etcd_pki_dir": "{{ x }}"}, {
            "/etc/etcd/pki/ca.crt", "/etc/etcd/pki/member.crt", "/etc/etcd/pki/agent.crt"},
            id="templated-dir-uses-default"),
        pytest.param({"nfs_server"}, {}, set(), id="none"),
    ],
)
def test_expected_on_host(groups: set[str], hostvars: dict[str, str], paths: set[str]) -> None:
    got = expected_on_host("h", groups, hostvars)
    assert {e.path for e in got} == paths
    assert len(got) == len(paths)  # a path once, even when two entries name it


def test_worker_control_plane_keeps_the_required_ca_once() -> None:
    got = expected_on_host("h", {"kube_control_plane", "kube_node"}, {})
    ca = [e for e in got if e.path == "/etc/kubernetes/pki/ca.crt"]
    assert len(ca) == 1 and ca[0].required


def test_controller_copies_follow_the_inventory_parts() -> None:
    etcd = expected_on_controller({"etcd": "/s/etcd"})
    assert [e.path for e in etcd] == ["/s/etcd/ca.crt", "/s/etcd/ufcctl.crt"]
    assert [e.path for e in expected_on_controller({"kubernetes": "/s/k/"})] == ["/s/k/ca.crt"]
    assert expected_on_controller({}) == []
