"""registry.k8s.io's images for a lab that runs the real Kubernetes (`ufcctl lab up --kube real`): each
built release's control plane and kube-proxy (images.py, with Debian 12's iptables for kube-proxy), the
pod sandbox (pause) and CoreDNS, pushed to the LAB UPSTREAM REGISTRY under their upstream paths
(kube-apiserver, coredns/coredns, ...). The lab maps registry.k8s.io to its caches in front of that
registry (ufcctl/lab/inventory.py), so kubeadm's image preflight, its static Pods, kube-proxy's DaemonSet,
CoreDNS and containerd's sandbox pull them exactly as a site behind a registry mirror would.

The releases are the two the lab's roles install: ufc_kube_version's default (components.KUBERNETES) and
`upgrade-cluster`'s target (components.KUBERNETES_NEXT); CoreDNS is the release kubeadm 1.34 deploys
(components.CORE_DNS; kubeadm 1.35 deploys the same v1.12.1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tests.lab_build.build import Built
from tests.lab_build.images import CONTROL_PLANE, Image, build_image, kubernetes_images, pause_image

# upstream's CoreDNS image is distroless with /coredns as its entrypoint and the binary given
# cap_net_bind_service as a file capability so its nonroot user can bind :53. This one has no user:
# kubeadm's Deployment drops every capability but NET_BIND_SERVICE, so root here binds :53 with that
# capability alone (a layer of ours carries no xattrs).
COREDNS_REPOSITORY = "registry.k8s.io/coredns/coredns"


def coredns_image(binary: bytes, tag: str, arch: str = "amd64") -> Image:
    return build_image(COREDNS_REPOSITORY, tag, {"/coredns": (binary, 0o755)}, arch, entrypoint=["/coredns"])


def lab_images(kubernetes: Sequence[Built], pause: Built, coredns: Built, arch: str = "amd64",
               say: Callable[[str], None] = print) -> list[Image]:
    """Every image a real cluster of these releases pulls from registry.k8s.io (external etcd: no etcd
    image)."""
    from tests.lab_build.netfilter import kube_proxy_userspace

    userspace = kube_proxy_userspace(arch, say=say).layer_files
    images: list[Image] = []
    for built in kubernetes:
        binaries = {name: built.binary(name).read_bytes() for name in CONTROL_PLANE}
        images.extend(kubernetes_images(binaries, built.component.tag, arch, userspace))
    images.append(pause_image(pause.binary("pause").read_bytes(), arch, pause.component.tag))
    images.append(coredns_image(coredns.binary("coredns").read_bytes(), coredns.component.tag, arch))
    return images


def publish(base_url: str, say: Callable[[str], None] = print, arch: str = "amd64") -> list[Any]:
    """Build what the cache has not got (components), the images, and push them to the LAB UPSTREAM
    REGISTRY at base_url; a second run sends manifests only."""
    from tests.lab_build import build as lab_build
    from tests.lab_build.addons import push_all
    from tests.lab_build.components import CORE_DNS, KUBERNETES, KUBERNETES_NEXT, PAUSE

    started = time.monotonic()
    kubernetes = [lab_build.build(c, say=say) for c in (KUBERNETES, KUBERNETES_NEXT)]
    images = lab_images(kubernetes, lab_build.build(PAUSE, say=say), lab_build.build(CORE_DNS, say=say),
                        arch, say)
    pushed = push_all(base_url, images)
    say(f"lab kube images: {len(pushed)} images in {base_url} ({sum(p.uploaded for p in pushed)} blobs sent, "
        f"{sum(p.skipped for p in pushed)} present) in {time.monotonic() - started:.1f} s")
    return pushed
