"""What the lab builds from Go modules: one entry per wrapper module (a folder beside this file with its
own go.mod), the upstream tag it pins and the commands it builds.

Pins (docs/reference/real-kubernetes.md says why each):
- Kubernetes 1.34.4: the newest release the Go module proxy serves that MindCluster 26.0.0's compatibility
  statement (Kubernetes 1.17-1.34) accepts; ufcctl's default `ufc_kube_version`.
- Kubernetes 1.35.4: the next minor, the `upgrade-cluster` target (built only when asked: `--only
  kubernetes-next`).
- etcd 3.6.17: the newest 3.6 patch; kubeadm 1.34 runs etcd 3.6 for a local etcd and accepts it as
  external etcd (`MinExternalEtcdVersion`).
- kwok v0.8.0: the newest kwok whose go.mod Go 1.26 builds (main needs Go 1.27).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Command:
    """One binary: the Go package, the file name it gets, whether it needs cgo."""

    package: str
    name: str
    cgo: bool = False


@dataclass(frozen=True)
class Component:
    name: str            # what `--only` takes and the cache folder starts with
    module_dir: str      # the wrapper module, relative to this folder
    upstream: str        # the upstream module the tag belongs to
    tag: str
    commands: tuple[Command, ...]
    ldflags: tuple[str, ...] = field(default=())
    default: bool = True  # built by a plain `python -m tests.lab_build`

    @property
    def module_path(self) -> Path:
        return HERE / self.module_dir


def kubernetes_ldflags(tag: str) -> tuple[str, ...]:
    """The version stamp kubeadm and the version-skew checks read: without it every binary reports
    `v0.0.0-master+$Format:%h$` and kubeadm refuses it (kubernetes/kubernetes PR #77590)."""
    major, minor = tag.lstrip("v").split(".")[:2]
    stamp = {
        "gitVersion": tag, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean",
        # a fixed date: the same tag builds the same bytes on every machine
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags = [f"-X k8s.io/component-base/version.{k}={v}" for k, v in stamp.items()]
    flags += [f"-X k8s.io/client-go/pkg/version.{k}={stamp[k]}"
              for k in ("gitVersion", "gitMajor", "gitMinor")]
    return tuple(flags)


def _kubernetes(name: str, module_dir: str, tag: str, default: bool) -> Component:
    base = "k8s.io/kubernetes/cmd/"
    # Every binary static (CGO_ENABLED=0), the kubelet too. Upstream's release builds the kubelet with cgo
    # (hack/lib/golang.sh: not in KUBE_STATIC_BINARIES) and names the switch for a static one
    # (KUBE_STATIC_OVERRIDES=kubelet), which static distributions use. Built with cgo, the kubelet shares no
    # compiled package with the six static binaries (cgo changes the `net` package, so every package above
    # it compiles again): measured on 2 cores, it alone took the last ~9 of v1.34.4's 22 minutes.
    commands = tuple(Command(base + cmd, cmd) for cmd in (
        "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubeadm", "kubectl",
        "kubelet"))
    return Component(name, module_dir, "k8s.io/kubernetes", tag, commands, kubernetes_ldflags(tag), default)


KUBERNETES = _kubernetes("kubernetes", "kubernetes", "v1.34.4", default=True)
KUBERNETES_NEXT = _kubernetes("kubernetes-next", "kubernetes-next", "v1.35.4", default=False)

ETCD = Component(
    "etcd", "etcd", "go.etcd.io/etcd/server/v3", "v3.6.17",
    (Command("go.etcd.io/etcd/server/v3", "etcd"), Command("go.etcd.io/etcd/etcdctl/v3", "etcdctl"),
     Command("go.etcd.io/etcd/etcdutl/v3", "etcdutl")),
)

# kwok v0.8.0 (go 1.26.0, no replace directives): fake nodes against the real control plane, for the
# scale rehearsal (tests/benchmarks/bench_scale.py, its CI smoke in tests/integration/
# test_benchmarks_smoke.py); built by default since that smoke runs in CI (~12 min on a first build)
KWOK = Component(
    "kwok", "kwok", "sigs.k8s.io/kwok", "v0.8.0",
    (Command("sigs.k8s.io/kwok/cmd/kwok", "kwok"), Command("sigs.k8s.io/kwok/cmd/kwokctl", "kwokctl"),
     # ours: prints the module's embedded default Stages (kwok alone starts with none)
     Command("ufcctl.lab/kwok/stages", "kwok-stages")),
)

# CoreDNS v1.12.1: the release kubeadm 1.34 deploys (`kubeadm config images list`); the cluster DNS image
CORE_DNS = Component("coredns", "coredns", "github.com/coredns/coredns", "v1.12.1",
                     (Command("github.com/coredns/coredns", "coredns"),), default=False)

# crictl of cri-tools v1.34.0 (the kubelet's minor): what an operator types on a node (`crictl ps`)
CRI_TOOLS = Component("cri-tools", "cri-tools", "sigs.k8s.io/cri-tools", "v1.34.0",
                      (Command("sigs.k8s.io/cri-tools/cmd/crictl", "crictl"),),
                      ("-X sigs.k8s.io/cri-tools/pkg/version.Version=v1.34.0",), default=False)

# The pod sandbox's program: ufcctl's own (tests/lab_build/pause/main.go), not upstream's C pause; the
# tag is the image tag kubeadm 1.34 pulls and containerd's sandbox_image names (registry.k8s.io/pause:3.10.1).
PAUSE = Component("pause", "pause", "", "3.10.1", (Command("ufcctl.lab/pause", "pause"),))

# The LAB ADD-ON STAND-IN: ufcctl's own program (tests/lab_build/addon-standin/main.go, stdlib only) in the
# lab's images of the add-ons whose real images cannot be pulled here (tests/lab_build/addons.py); the tag
# is ours, it names the program's cache entry only (each image keeps its add-on's tag).
ADDON_STANDIN = Component("addon-standin", "addon-standin", "", "ufcctl-1",
                          (Command("ufcctl.lab/addon-standin", "addon-standin"),))

COMPONENTS: tuple[Component, ...] = (ETCD, KUBERNETES, KUBERNETES_NEXT, KWOK, CORE_DNS, CRI_TOOLS, PAUSE,
                                     ADDON_STANDIN)
BY_NAME = {c.name: c for c in COMPONENTS}
