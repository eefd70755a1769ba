"""LAB ADD-ON STAND-IN images: the add-ons ufcctl applies (roles cni, nodelocaldns, volcano,
ascend_components, nfs_provisioner) under their upstream names and tags, each holding ufcctl's own
program (tests/lab_build/addon-standin) at every path the add-on's manifests run, because no real add-on
image can be pulled here. The program lets the Pods start, stay up and pass their probes; it does none of
the add-on's work (tests/lab_standins/README.md, "LAB ADD-ON STAND-IN").

STANDINS is the table of what each image must hold, written from our rendered manifests;
tests/unit/lab/test_addon_standins.py renders the roles for the lab inventory and fails when a
manifest names an image, a command, an exec probe or a probe port the table does not serve.

`publish` builds the program (cached, tests/lab_build), the images (reproducible digests) and pushes
them to the LAB UPSTREAM REGISTRY under the path after the registry host (calico/node,
ascendhub/vc-scheduler, dns/k8s-dns-node-cache, ...), where the lab's registry caches find the mirrored
registries' images (ufcctl/lab/inventory.py LAB_MIRRORED); a blob already there is not sent again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.lab_build.images import Image, build_image, layer
from ufcctl.domain.images.registries import HUAWEI, K8S, QUAY  # the upstream registries' names

BINARY = "/usr/local/bin/ufcctl-addon-standin"
CONFIG = "/etc/ufcctl-addon-standin.json"
# where the main process holds its lock: /dev/shm is the pod's own tmpfs, writable under
# readOnlyRootFilesystem (device-plugin, noded, npu-exporter) and by any user (typha runs as 999)
LOCK_DIRS = ("/dev/shm", "/run", "/tmp")
LABEL = "io.ufcctl.lab.addon-standin"

CALICO = "v3.29.3"
MINDCLUSTER = "v26.0.0"
VOLCANO = "v1.9.0-v26.0.0"
NODELOCALDNS_IP = "169.254.20.10"  # roles/nodelocaldns nodelocaldns_ip


@dataclass(frozen=True)
class Listen:
    """A port a probe names (httpGet, tcpSocket, grpc): the program answers there."""

    port: int
    host: str = ""          # "" every address, "localhost", or an IP (bound with IP_FREEBIND)
    scheme: str = "HTTP"    # HTTP (also serves tcpSocket), HTTPS, GRPC

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "scheme": self.scheme}


@dataclass(frozen=True)
class StandIn:
    reference: str                                  # upstream image reference, as the role's default
    component: str                                  # the add-on it belongs to
    entrypoint: tuple[str, ...] = ()                # the image's, for containers without `command`
    main: tuple[str, ...] = ()                      # paths that run the main process
    oneshot: tuple[str, ...] = ()                   # init / one-shot commands: exit 0
    probes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # exec probe path -> flags
    shells: tuple[str, ...] = ()                    # /bin/bash -c -- SCRIPT
    shell_mains: tuple[str, ...] = ()               # programs whose naming in SCRIPT runs the main process
    listen: tuple[Listen, ...] = ()
    host_network: bool = False                      # the pods share the node's ports

    @property
    def name(self) -> str:
        return self.reference.rsplit(":", 1)[0]

    @property
    def tag(self) -> str:
        return self.reference.rsplit(":", 1)[1]

    @property
    def repository(self) -> str:
        """The path after the registry host: where the LAB UPSTREAM REGISTRY holds it."""
        return self.name.split("/", 1)[1]

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the program is installed at (symlinks to BINARY)."""
        found = {*self.entrypoint[:1], *self.main, *self.oneshot, *self.probes, *self.shells}
        return tuple(sorted(found))

    def config(self) -> dict[str, Any]:
        return {
            "image": self.reference, "name": self.repository.rsplit("/", 1)[-1],
            "main": sorted({*self.main, *self.entrypoint[:1]}), "oneshot": list(self.oneshot),
            "probes": {p: list(f) for p, f in sorted(self.probes.items())},
            "shells": list(self.shells), "shell_mains": list(self.shell_mains),
            "listen": [lst.to_json() for lst in self.listen], "lock_dirs": list(LOCK_DIRS),
        }


def _mindcluster(name: str, program: str, host_network: bool = False) -> StandIn:
    """MindCluster's images run `/bin/bash -c -- "<program> ..."`: the program installed at
    /usr/local/bin (the scripts name it there or through PATH) as the main process too."""
    return StandIn(f"{HUAWEI}/ascendhub/{name}:{MINDCLUSTER}", "ascend_components",
                   main=(f"/usr/local/bin/{program}",), shells=("/bin/bash",), shell_mains=(program,),
                   host_network=host_network)


STANDINS: tuple[StandIn, ...] = (
    # roles/cni
    StandIn(f"{QUAY}/calico/node:{CALICO}", "cni", entrypoint=("/bin/calico-node",),
            main=("/bin/calico-node",),
            probes={"/bin/calico-node": ("-bird-live", "-bird-ready", "-felix-live", "-felix-ready")},
            host_network=True),
    StandIn(f"{QUAY}/calico/cni:{CALICO}", "cni", oneshot=("/opt/cni/bin/install",), host_network=True),
    StandIn(f"{QUAY}/calico/typha:{CALICO}", "cni", entrypoint=("/usr/bin/calico-typha",),
            main=("/usr/bin/calico-typha",), listen=(Listen(9098, "localhost"),), host_network=True),
    StandIn(f"{QUAY}/calico/kube-controllers:{CALICO}", "cni", entrypoint=("/usr/bin/kube-controllers",),
            main=("/usr/bin/kube-controllers",), probes={"/usr/bin/check-status": ()}),
    # roles/nodelocaldns
    StandIn(f"{K8S}/dns/k8s-dns-node-cache:1.26.4", "nodelocaldns", entrypoint=("/node-cache",),
            main=("/node-cache",), listen=(Listen(8080, NODELOCALDNS_IP),), host_network=True),
    StandIn(f"{K8S}/cpa/cluster-proportional-autoscaler:v1.8.9", "nodelocaldns",
            entrypoint=("/cluster-proportional-autoscaler",), main=("/cluster-proportional-autoscaler",)),
    # roles/nfs_provisioner
    StandIn(f"{K8S}/sig-storage/nfs-subdir-external-provisioner:v4.0.2", "nfs_provisioner",
            entrypoint=("/nfs-subdir-external-provisioner",), main=("/nfs-subdir-external-provisioner",)),
    # roles/volcano (MindCluster's Volcano build)
    StandIn(f"{HUAWEI}/ascendhub/vc-scheduler:{VOLCANO}", "volcano", main=("/vc-scheduler",)),
    StandIn(f"{HUAWEI}/ascendhub/vc-controller-manager:{VOLCANO}", "volcano",
            main=("/vc-controller-manager",)),
    # roles/ascend_components
    _mindcluster("ascend-k8sdeviceplugin", "device-plugin"),
    _mindcluster("ascend-operator", "ascend-operator"),
    _mindcluster("clusterd", "clusterd"),
    _mindcluster("noded", "noded", host_network=True),
    _mindcluster("npu-exporter", "npu-exporter"),
)


def program_layer(binary: bytes) -> tuple[bytes, str]:
    """The layer every stand-in image shares (one blob in a registry): the program at BINARY."""
    return layer({BINARY: (binary, 0o755)})


def standin_image(standin: StandIn, program: tuple[bytes, str], arch: str = "amd64") -> Image:
    """The stand-in's image: program_layer, then its own layer: a symlink to BINARY at each of its paths,
    CONFIG, /tmp and /run."""
    files = {CONFIG: (json.dumps(standin.config(), indent=1, sort_keys=True).encode() + b"\n", 0o644)}
    return build_image(standin.name, standin.tag, files, arch, entrypoint=standin.entrypoint or None,
                       links={p: BINARY for p in standin.paths},
                       dirs={"/tmp": 0o1777, "/run": 0o755},
                       labels={LABEL: f"ufcctl's lab stand-in for {standin.reference}, not the add-on"},
                       lower=(program,))


def standin_images(binary: bytes, arch: str = "amd64") -> list[Image]:
    program = program_layer(binary)
    return [standin_image(s, program, arch) for s in STANDINS]


def push_all(base_url: str, images: Iterable[Image], push: Callable[..., Any] | None = None) -> list[Any]:
    """Each image to the registry at base_url under its repository (the path after the registry host)."""
    if push is None:
        from tests.lab_standins.upstream_registry.push import push_image as push
    return [push(base_url, image.repository, image.tag, image) for image in images]


def publish(base_url: str, say: Callable[[str], None] = print) -> list[Any]:
    """Build the program (cached), the images, and push them to the LAB UPSTREAM REGISTRY at base_url;
    a second run sends manifests only (every blob is there)."""
    from tests.lab_build import build as lab_build
    from tests.lab_build.components import ADDON_STANDIN

    started = time.monotonic()
    binary = lab_build.build(ADDON_STANDIN, say=say).binary("addon-standin").read_bytes()
    pushed = push_all(base_url, standin_images(binary))
    sent = sum(p.uploaded for p in pushed)
    say(f"lab add-on stand-ins: {len(pushed)} images in {base_url} ({sent} blobs sent, "
        f"{sum(p.skipped for p in pushed)} present) in {time.monotonic() - started:.1f} s")
    return pushed


# ---- what the rendered manifests ask of the images (the drift check) ----

@dataclass(frozen=True)
class Needs:
    """What one image's containers in the rendered manifests run: (init?, command argv or (), args)."""

    runs: frozenset[tuple[bool, tuple[str, ...], tuple[str, ...]]] = frozenset()
    probes: frozenset[tuple[str, ...]] = frozenset()   # exec probe commands
    listen: frozenset[Listen] = frozenset()
    host_network: bool = False


def _probe_port(container: Mapping[str, Any], port: Any) -> int:
    if isinstance(port, int):
        return port
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"container {container.get('name')}: probe port {port!r} is not a named port")


def needs_of(objects: Iterable[Mapping[str, Any]]) -> dict[str, Needs]:
    """{image as rendered: Needs} over every pod template of `objects` (rendered manifests)."""
    found: dict[str, dict[str, Any]] = {}
    for obj in objects:
        spec = obj.get("spec") or {}
        pod = (spec.get("template") or {}).get("spec") if isinstance(spec, Mapping) else None
        if not pod:
            continue
        for init, key in ((True, "initContainers"), (False, "containers")):
            for c in pod.get(key) or []:
                need = found.setdefault(c["image"], {"runs": set(), "probes": set(), "listen": set(),
                                                     "host_network": False})
                need["host_network"] |= bool(pod.get("hostNetwork"))
                need["runs"].add((init, tuple(c.get("command") or ()), tuple(c.get("args") or ())))
                for probe in (c.get(k) for k in ("livenessProbe", "readinessProbe", "startupProbe")):
                    if not probe:
                        continue
                    if "exec" in probe:
                        need["probes"].add(tuple(probe["exec"]["command"]))
                    for kind in ("httpGet", "tcpSocket", "grpc"):
                        if kind in probe:
                            how = probe[kind]
                            scheme = {"httpGet": str(how.get("scheme") or "HTTP").upper(),
                                      "tcpSocket": "HTTP", "grpc": "GRPC"}[kind]
                            need["listen"].add(Listen(_probe_port(c, how["port"]), str(how.get("host") or ""),
                                                      scheme))
    return {image: Needs(frozenset(n["runs"]), frozenset(n["probes"]), frozenset(n["listen"]),
                         n["host_network"]) for image, n in found.items()}


def _shell_main(standin: StandIn, args: tuple[str, ...]) -> bool:
    script = args[-1] if args else ""
    words = script.replace(";", " ").replace("&", " ").replace("|", " ").split()
    return any(w.rsplit("/", 1)[-1] in standin.shell_mains for w in words)


def problems(standin: StandIn, need: Needs) -> list[str]:
    """What the manifests ask of the image that the stand-in does not serve."""
    ref = standin.reference
    wrong = []
    for init, command, args in sorted(need.runs):
        if not command:
            if not standin.entrypoint:
                wrong.append(f"{ref}: a container gives no command and the stand-in has no entrypoint")
            elif init:
                wrong.append(f"{ref}: an init container runs the entrypoint, which would not exit")
            continue
        path = command[0]
        if path in standin.shells:
            script_args = (*command[1:], *args)
            if init and _shell_main(standin, script_args):
                wrong.append(f"{ref}: init container's script {script_args[-1]!r} names a main program")
            if not init and not _shell_main(standin, script_args):
                wrong.append(f"{ref}: script {script_args[-1]!r} names none of {list(standin.shell_mains)}")
        elif init and path not in standin.oneshot:
            wrong.append(f"{ref}: init container command {path} is not a one-shot of the stand-in")
        elif not init and path not in standin.main:
            wrong.append(f"{ref}: command {path} is not a main path of the stand-in")
    for command in sorted(need.probes):
        flags = standin.probes.get(command[0])
        if flags is None:
            wrong.append(f"{ref}: exec probe {' '.join(command)}: {command[0]} is not a probe path")
        elif flags and not set(command[1:]) <= set(flags):
            wrong.append(f"{ref}: exec probe {' '.join(command)}: flags outside {list(flags)}")
        elif flags and not set(command[1:]) & set(flags):
            wrong.append(f"{ref}: exec probe {' '.join(command)} would run the main process")
    for listen in sorted(need.listen - set(standin.listen), key=lambda x: x.port):
        wrong.append(f"{ref}: probe port {listen.host or '*'}:{listen.port} ({listen.scheme}) "
                     "is not listened on")
    for listen in sorted(set(standin.listen) - need.listen, key=lambda x: x.port):
        wrong.append(f"{ref}: listens on {listen.host or '*'}:{listen.port}, which no probe names")
    if need.host_network != standin.host_network:
        wrong.append(f"{ref}: hostNetwork is {need.host_network} in the manifests")
    return wrong


def host_port_clashes(standins: Iterable[StandIn] = STANDINS) -> list[str]:
    """Ports two hostNetwork stand-ins would both bind on a node (the same port on the same or every
    address)."""
    seen: dict[int, list[tuple[str, str]]] = {}
    for s in standins:
        if s.host_network:
            for lst in s.listen:
                seen.setdefault(lst.port, []).append((s.reference, lst.host))
    clashes = []
    for port, users in sorted(seen.items()):
        for i, (a, ha) in enumerate(users):
            for b, hb in users[i + 1:]:
                if ha == hb or "" in (ha, hb):
                    clashes.append(f"port {port}: {a} and {b}")
    return clashes
