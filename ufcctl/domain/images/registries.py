"""Where ufcctl's default images live, and the site's mirror of each upstream registry
(`ufc_image_registries`, issue 44 D13).

Every default image keeps its upstream registry and path (docs/reference/components.md §9.6): Calico on
quay.io, the DNS cache, its autoscaler, the NFS provisioner and the pause image on registry.k8s.io, and
MindCluster's Volcano build and components on Huawei's registry under `ascendhub/`. A site that mirrors
a registry maps that registry's host to its mirror's prefix (`host[:port][/path]`); an image keeps its
path under it: `quay.io/calico/node:v3.29.3` with `{quay.io: harbor.example/quay}` is
`harbor.example/quay/calico/node:v3.29.3`, the layout pull-through caches and registry mirrors keep.
A registry the mapping does not name is pulled from itself.

`ufc_image_registry`, the single prefix this replaces, is refused (exit 2): one prefix put before three
layouts made names no registry holds, and honouring it for every registry would silently move
Volcano's and MindCluster's images to new paths (`<prefix>/ascendhub/...`) under a site's feet.

Pure: values in, values and problems out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

VAR = "ufc_image_registries"
OLD_VAR = "ufc_image_registry"

K8S = "registry.k8s.io"
DOCKER_HUB = "docker.io"
QUAY = "quay.io"
# Huawei Cloud SWR, region cn-south-1: MindCluster's published images are under ascendhub/ there
# (docs/reference/components.md §9.6).
HUAWEI = "swr.cn-south-1.myhuaweicloud.com"
# The upstream registries ufcctl's defaults pull from, and docker.io for a site's own images.
UPSTREAMS = (K8S, DOCKER_HUB, QUAY, HUAWEI)

# Every default image of an add-on role: (role variable, upstream reference). Versions are the roles'
# defaults; tests/unit/roles/test_role_default_images.py holds each role's rendered default to this table.
DEFAULT_IMAGES: tuple[tuple[str, str], ...] = (
    ("cni_calico_node_image", f"{QUAY}/calico/node:v3.29.3"),
    ("cni_calico_cni_image", f"{QUAY}/calico/cni:v3.29.3"),
    ("cni_calico_typha_image", f"{QUAY}/calico/typha:v3.29.3"),
    ("cni_calico_kube_controllers_image", f"{QUAY}/calico/kube-controllers:v3.29.3"),
    ("nodelocaldns_image", f"{K8S}/dns/k8s-dns-node-cache:1.26.4"),
    ("nodelocaldns_coredns_autoscaler_image", f"{K8S}/cpa/cluster-proportional-autoscaler:v1.8.9"),
    ("nfs_provisioner_image_repository", f"{K8S}/sig-storage/nfs-subdir-external-provisioner"),
    ("volcano_scheduler_image", f"{HUAWEI}/ascendhub/vc-scheduler:v1.9.0-v26.0.0"),
    ("volcano_controller_image", f"{HUAWEI}/ascendhub/vc-controller-manager:v1.9.0-v26.0.0"),
    ("container_runtime_sandbox_image", f"{K8S}/pause:3.10.1"),
)
# MindCluster's components (roles/ascend_components): <registry>/ascendhub/<name>:v<version>.
MINDCLUSTER_IMAGES = ("ascend-k8sdeviceplugin", "ascend-operator", "clusterd", "noded", "npu-exporter")

# A registry host[:port] as image references name it, and a mirror prefix host[:port][/path].
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?"
REGISTRY = re.compile(rf"^{_HOST}$")
PREFIX = re.compile(rf"^{_HOST}(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
SAMPLE = ("{registry.k8s.io: mirror.example/k8s, quay.io: mirror.example/quay, "
          f"docker.io: mirror.example/hub, {HUAWEI}: mirror.example/swr}}")


def parse(raw: Any) -> tuple[dict[str, str], list[str]]:
    """`ufc_image_registries` as {upstream registry: prefix}, plus what is wrong with it (empty: fine).
    An entry whose prefix is empty or null means the upstream itself."""
    if raw in (None, ""):
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"{VAR} must be a mapping of upstream registry to your mirror's prefix, e.g. {SAMPLE}"]
    found: dict[str, str] = {}
    problems: list[str] = []
    for key, value in raw.items():
        registry = str(key)
        if not REGISTRY.match(registry):
            problems.append(f"{VAR}: key {registry!r} is not a registry host[:port] as images name it "
                            f"(one of {', '.join(UPSTREAMS)}, or another host)")
            continue
        if value in (None, ""):
            continue
        prefix = str(value)
        if not isinstance(value, str) or not PREFIX.match(prefix):
            problems.append(f"{VAR}: {registry}: {prefix!r} is not a mirror prefix host[:port][/path] (no "
                            "scheme, no trailing '/', lowercase path), e.g. mirror.example:5000/quay")
            continue
        found[registry] = prefix
    return found, problems


def split(reference: str) -> tuple[str, str]:
    """(registry, the rest) of a fully qualified reference; ("", reference) for a bare name."""
    first, sep, rest = reference.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return "", reference


def mapped(reference: str, registries: Mapping[str, str]) -> str:
    """The name a node pulls for an upstream `reference` under the site's mapping (unchanged when its
    registry is not mapped, or the reference names none)."""
    registry, rest = split(reference)
    prefix = registries.get(registry) if registry else None
    return f"{prefix}/{rest}" if prefix else reference


def old_prefix_problem(value: Any) -> tuple[str, str]:
    """(what is wrong, what to set) for an inventory that still sets `ufc_image_registry`."""
    shown = str(value)[:80] or "<your prefix>"
    return (f"{OLD_VAR} is no longer read: one prefix cannot serve registry.k8s.io's, quay.io's and Huawei's "
            "layouts (issue 44, D13)",
            f"set {VAR} to your mirror's prefix per upstream registry, e.g. {{registry.k8s.io: {shown}, "
            f"quay.io: {shown}, docker.io: {shown}, {HUAWEI}: {shown}}}, with Volcano and MindCluster under "
            f"<prefix>/ascendhub/, and delete {OLD_VAR} (docs/images.md, \"Where the images come from\")")
