"""The lab's shape, computed without touching anything: names, fixed IPs, VIP and NPU topology."""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass

from ufcctl.errors import InputError

DEFAULT_LAB = "ufc"
DEFAULT_SUBNET = "10.89.64.0/24"
DEFAULT_WORKERS = 6
CONTROL_PLANE_COUNT = 3  # three etcd members per cluster: quorum survives one lost node
# Address plan, as offsets from the subnet's network address: the gateway podman takes is +1, the
# NPU emulator's package mirror +5, control planes +11..+13, workers from +21, the keepalived VIP 6
# below the end (.250 in a /24).
NPU_MIRROR_OFFSET = 5
CP_OFFSET = 11
WORKER_OFFSET = 21
VIP_FROM_END = 6
# Default spread: 2 workers per ToR switch, 2 ToRs per super pod. With the default 6 workers
# that is 3 ToRs in 2 super pods, so ToR and super pod are different failure domains in the lab.
NODES_PER_TOR = 2
TORS_PER_SUPER_POD = 2
ACCELERATOR_TYPE = "module-910b-8"  # Atlas 800T A2, 8 chips (docs/reference/ascend.md §1.3)

# What runs Kubernetes on the nodes (`lab up --kube`): the LAB KUBE EMULATOR (tests/lab_standins: a Python
# kubeadm, kubelet and API stand-in), or the real programs built from their Go modules (tests/lab_build)
KUBE_EMULATED = "emulated"
KUBE_REAL = "real"
KUBE_MODES = (KUBE_EMULATED, KUBE_REAL)
DEFAULT_KUBE = KUBE_EMULATED
# The real lab's pod network (ufcctl/lab/podnet.py), one /24 per node in layout order; the same range as
# roles/kube_control_plane's default kube_control_plane_pod_subnet, which the lab inventory writes out
LAB_POD_SUBNET = "100.64.0.0/10"
POD_PREFIX = 24

ROLE_CONTROL_PLANE = "control_plane"
ROLE_WORKER = "worker"
ROLE_NPU_MIRROR = "npu_mirror"  # the lab NPU emulator's package mirror: a lab container, not a node

_LAB_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")


@dataclass(frozen=True)
class NodeTopology:
    """Where a worker sits in the (emulated) fabric; becomes the npu_* host vars."""

    tor_id: int
    super_pod_id: int
    slice_id: int  # position under its ToR (NSLB slice), 0-based
    rack: str
    accelerator_type: str


@dataclass(frozen=True)
class LabNode:
    name: str
    role: str  # ROLE_CONTROL_PLANE or ROLE_WORKER
    ip: str
    topology: NodeTopology | None = None


@dataclass(frozen=True)
class LabLayout:
    lab: str
    network: str
    subnet: str
    gateway: str
    vip: str
    nodes: tuple[LabNode, ...]
    nfs_server: str  # the node that exports a bind-mounted directory over NFS (ganesha)
    npu_mirror: LabNode  # where the NPU emulator serves its packages; not in `nodes` (no inventory host)

    @property
    def control_planes(self) -> tuple[LabNode, ...]:
        return tuple(n for n in self.nodes if n.role == ROLE_CONTROL_PLANE)

    @property
    def workers(self) -> tuple[LabNode, ...]:
        return tuple(n for n in self.nodes if n.role == ROLE_WORKER)

    def node(self, name: str) -> LabNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)


def mac_for_ip(ip: str) -> str:
    """A fixed, locally administered MAC per lab IP.

    Podman picks a random MAC at every start; the host's neighbour cache then keeps the old one
    and the restarted node is unreachable for ~35 s (measured) until the entry expires.
    """
    return "02:fc:" + ":".join(f"{octet:02x}" for octet in ipaddress.IPv4Address(ip).packed)


def check_lab_name(name: str) -> str:
    if not _LAB_NAME.match(name):
        raise InputError(
            f"lab name {name!r} is not valid",
            "use 1-12 lowercase letters or digits starting with a letter (it prefixes container names)",
        )
    return name


def network_name(lab: str) -> str:
    """`ufcctl-lab` for the default lab; other labs (tests, a second user) get their own network."""
    return "ufcctl-lab" if lab == DEFAULT_LAB else f"ufcctl-lab-{lab}"


def container_prefix(lab: str) -> str:
    return f"{lab}-"


def worker_name(lab: str, index: int) -> str:
    """1-based; two digits so names sort by number up to 99 and never change when the lab grows."""
    return f"{container_prefix(lab)}w{index:02d}"


def control_plane_name(lab: str, index: int) -> str:
    return f"{container_prefix(lab)}cp{index}"


def npu_mirror_name(lab: str) -> str:
    return f"{container_prefix(lab)}hdk-mirror"


def parse_subnet(value: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as err:
        raise InputError(f"--subnet {value!r}: {err}", "give an IPv4 network such as 10.89.64.0/24") from None
    if not isinstance(net, ipaddress.IPv4Network):
        raise InputError(f"--subnet {value}: only IPv4 lab networks are supported", "e.g. 10.89.64.0/24")
    if not net.is_private:
        raise InputError(
            f"--subnet {value} is not a private range",
            "the lab network shadows real routes on this machine; use RFC 1918 space such as 10.89.64.0/24",
        )
    if net.prefixlen > 27:
        raise InputError(f"--subnet {value} is too small", "use a /27 or larger (a /24 holds 229 workers)")
    return net


def max_workers(net: ipaddress.IPv4Network) -> int:
    return net.num_addresses - VIP_FROM_END - WORKER_OFFSET


def spread_topology(
    workers: int,
    nodes_per_tor: int = NODES_PER_TOR,
    tors_per_super_pod: int = TORS_PER_SUPER_POD,
    accelerator_type: str = ACCELERATOR_TYPE,
) -> list[NodeTopology]:
    """Topology of workers 1..N in order: contiguous blocks per ToR and per super pod.

    Two or more workers always span at least two ToRs and two super pods, so batching by
    failure domain has something to tell apart even in a tiny lab. Blocks are balanced: sizes
    differ by at most one.
    """
    if workers < 0 or nodes_per_tor < 1 or tors_per_super_pod < 1:
        raise ValueError("workers must be >= 0 and group sizes >= 1")
    if workers == 0:
        return []
    tors = min(workers, max(2, math.ceil(workers / nodes_per_tor)))
    super_pods = min(tors, max(2, math.ceil(tors / tors_per_super_pod)))
    first_index_of_tor: dict[int, int] = {}
    result = []
    for i in range(workers):
        tor = i * tors // workers
        first_index_of_tor.setdefault(tor, i)
        result.append(
            NodeTopology(
                tor_id=tor,
                super_pod_id=tor * super_pods // tors,
                slice_id=i - first_index_of_tor[tor],
                rack=f"rack-{tor + 1:02d}",  # one rack per ToR switch (top-of-rack)
                accelerator_type=accelerator_type,
            )
        )
    return result


def plan_layout(
    lab: str = DEFAULT_LAB, workers: int = DEFAULT_WORKERS, subnet: str = DEFAULT_SUBNET
) -> LabLayout:
    """Every node's name, fixed IP and topology; raises InputError when the subnet cannot hold them."""
    check_lab_name(lab)
    net = parse_subnet(subnet)
    if workers < 1:
        raise InputError(f"--nodes {workers}: the lab needs at least one worker", "use --nodes 1 or more")
    if workers > max_workers(net):
        raise InputError(
            f"--nodes {workers} does not fit in {net}: at most {max_workers(net)} workers",
            "pass a larger --subnet (a /24 holds 229 workers, a /23 485)",
        )
    base = net.network_address
    nodes = [
        LabNode(control_plane_name(lab, k), ROLE_CONTROL_PLANE, str(base + CP_OFFSET + k - 1))
        for k in range(1, CONTROL_PLANE_COUNT + 1)
    ]
    for i, topo in enumerate(spread_topology(workers)):
        nodes.append(LabNode(worker_name(lab, i + 1), ROLE_WORKER, str(base + WORKER_OFFSET + i), topo))
    return LabLayout(
        lab=lab,
        network=network_name(lab),
        subnet=str(net),
        gateway=str(base + 1),
        vip=str(base + net.num_addresses - VIP_FROM_END),
        nodes=tuple(nodes),
        # NFS on the first control plane: workers are the nodes rollouts reboot and break on purpose.
        nfs_server=control_plane_name(lab, 1),
        npu_mirror=LabNode(npu_mirror_name(lab), ROLE_NPU_MIRROR, str(base + NPU_MIRROR_OFFSET)),
    )
