"""The REAL kubeadm (built from k8s.io/kubernetes at the pinned tag by tests/lab_build) accepts the files
ufcctl renders, and names the images a cluster of them runs.

No container: the kubeadm binary of the lab's build cache (scripts/setup.sh builds it once per machine) runs
on this machine against the files roles/kube_control_plane renders for the sample inventory (the first
control plane's InitConfiguration + ClusterConfiguration + KubeletConfiguration + KubeProxyConfiguration,
another control plane's JoinConfiguration), the worker JoinConfiguration roles/kube_node writes
(ufcctl/domain/controlplane/join.py), and the first control plane's files for the lab's inventory (its
lab-only settings, ufcctl/lab/inventory.py). `kubeadm config validate` applies kubeadm's own defaulting and
validation, stricter than the schema ufcctl checks (it refuses, for one, a control-plane version below
what this kubeadm deploys: 1.31.4, the old default, fails here). `kubeadm config images list` is the
list of images such a cluster pulls: the lab must publish exactly these (tests/lab_build/images.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import kcp_render
from tests.lab_build.build import build
from tests.lab_build.components import KUBERNETES
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.controlplane.join import join_configuration

pytestmark = pytest.mark.integration

SAMPLE = kcp_render.ROOT / "inventories" / "sample"


@pytest.fixture(scope="module")
def kubeadm() -> Path:
    return build(KUBERNETES, say=lambda _: None).binary("kubeadm")


def _lab_inventory(folder: Path) -> tuple[Path, str]:
    """The inventory `ufcctl lab up` writes (ufcctl/lab/inventory.py), and its first control plane."""
    from ufcctl.lab.inventory import InventoryPaths, render_inventory
    from ufcctl.lab.layout import plan_layout

    layout = plan_layout("kcfg", 1, "10.89.71.0/24")
    keys = {n.name: "ssh-ed25519 KEY" for n in layout.nodes}
    for rel, content in render_inventory(layout, InventoryPaths(folder, folder / "key"), keys).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(content)
    return folder, layout.control_planes[0].name


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    templar = kcp_render.templar_factory()
    ca = kcp_render.ca_pem()
    # the text the hosts get, byte for byte: a leading document of comments alone is what kubeadm refused
    # ("kind and apiVersion is mandatory"), and PyYAML drops it
    first = kcp_render.render_text(SAMPLE, "cp1", templar, ca)["kubeadm.yaml"]
    other = kcp_render.render_text(SAMPLE, "cp2", templar, ca)["kubeadm.yaml"]
    # the lab's lab-only settings (KubeProxyConfiguration conntrack.maxPerCore: 0, ...)
    lab = kcp_render.render_text(*_lab_inventory(tmp_path_factory.mktemp("lab-inventory")), templar, ca)
    worker = yaml.safe_dump_all([join_configuration(
        name="node001", endpoint="10.0.0.10:8443", token="abcdef.0123456789abcdef",
        ca_hash="sha256:" + "0" * 64, cri_socket="unix:///run/containerd/containerd.sock",
        node_ip="10.1.0.1", labels={"ufcctl.io/tor": "tor-1"},
        taints=[{"key": "huawei.com/Ascend910", "effect": "NoSchedule"}])])
    return {"init": first, "control-plane join": other, "worker join": worker,
            "lab init": lab["kubeadm.yaml"]}


def _kubeadm(kubeadm: Path, tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "kubeadm.yaml"
    config.write_text(text)
    return subprocess.run([str(kubeadm), *args, "--config", str(config)], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("which", ["init", "control-plane join", "worker join", "lab init"])
def test_the_real_kubeadm_accepts_what_ufcctl_renders(kubeadm: Path, rendered: dict[str, str],
                                                       which: str, tmp_path: Path) -> None:
    done = _kubeadm(kubeadm, tmp_path, rendered[which], "config", "validate")
    assert done.returncode == 0, f"kubeadm {KUBERNETES.tag} refused the {which} configuration: {done.stderr}"
    assert done.stdout.strip() == "ok"


def test_the_cluster_pulls_the_images_the_lab_builds(kubeadm: Path, rendered: dict[str, str],
                                                      tmp_path: Path) -> None:
    sample = load_inventory(SAMPLE).hosts["cp1"].vars
    version = str(sample["ufc_kube_version"])
    assert f"v{version.lstrip('v')}" == KUBERNETES.tag  # the default is the release the lab builds
    done = _kubeadm(kubeadm, tmp_path, rendered["init"], "config", "images", "list")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        *(f"registry.k8s.io/{name}:{KUBERNETES.tag}" for name in
          ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")),
        "registry.k8s.io/coredns/coredns:v1.12.1",
        "registry.k8s.io/pause:3.10.1",
    ]
    # containerd's sandbox image is kubeadm's pause (roles/container_runtime; kubeadm's preflight warns on
    # another)
    assert sample["ufc_sandbox_image"] == done.stdout.split()[-1]
    runtime = kcp_render.ROOT / "roles" / "container_runtime" / "defaults" / "main.yml"
    defaults = yaml.safe_load(runtime.read_text())
    assert done.stdout.split()[-1] in defaults["container_runtime_sandbox_image"]


def test_a_mirror_of_registry_k8s_io_serves_every_image_under_its_upstream_path(kubeadm: Path,
                                                                                 tmp_path: Path) -> None:
    """With imageRepository a mirror, kubeadm looks for CoreDNS at <mirror>/coredns:TAG unless
    dns.imageRepository says otherwise; a path-keeping mirror (a pull-through cache, the lab's upstream)
    has it at coredns/coredns. Found by the real kubeadm's image preflight in the lab."""
    mirror = "mirror.example:5000/k8s"
    text = kcp_render.render_text(SAMPLE, "cp1", kcp_render.templar_factory(), kcp_render.ca_pem(),
                                  {"kube_control_plane_image_repository": mirror})["kubeadm.yaml"]
    done = _kubeadm(kubeadm, tmp_path, text, "config", "images", "list")
    assert done.returncode == 0, done.stderr
    assert f"{mirror}/coredns/coredns:v1.12.1" in done.stdout.split(), done.stdout


@pytest.mark.parametrize(("which", "max_per_core"), [("init", 32768), ("lab init", 0)])
def test_the_real_kube_proxy_accepts_its_configuration(kubeadm: Path, rendered: dict[str, str],
                                                       which: str, max_per_core: int, tmp_path: Path) -> None:
    """kubeadm passes the KubeProxyConfiguration through unchecked (`config validate` says ok to a
    negative maxPerCore); the built kube-proxy decodes, defaults and validates it, and
    `--write-config-to` writes the result and exits, touching no rule. The lab's says maxPerCore 0
    (ufcctl/lab/inventory.py), the sample's kube-proxy's own default."""
    proxy = next(d for d in yaml.safe_load_all(rendered[which])
                 if d and d["kind"] == "KubeProxyConfiguration")
    config, resolved = tmp_path / "kube-proxy.yaml", tmp_path / "resolved.yaml"
    config.write_text(yaml.safe_dump(proxy))
    done = subprocess.run([str(kubeadm.with_name("kube-proxy")), "--config", str(config), "--write-config-to",
                           str(resolved)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"kube-proxy {KUBERNETES.tag} refused the {which} config: {done.stderr}"
    conntrack = yaml.safe_load(resolved.read_text())["conntrack"]
    assert conntrack["maxPerCore"] == max_per_core
    # the timeouts kube-proxy writes stay its own: per network namespace, writable from its pod
    assert (conntrack["tcpEstablishedTimeout"], conntrack["tcpCloseWaitTimeout"]) == ("24h0m0s", "1h0m0s")
