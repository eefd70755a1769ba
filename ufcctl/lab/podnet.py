"""The LAB POD NETWORK of a lab running the real Kubernetes (`lab up --kube real`): what gives its Pods
addresses and lets them reach each other, since Calico cannot be built here (its images are the LAB ADD-ON
STAND-IN's, which run none of Calico's work).

Each node gets one /24 of the lab's pod range (layout.LAB_POD_SUBNET, in layout order), a CNI conflist
using Debian's containernetworking-plugins (bridge `cni0` with host-local addresses and masquerading,
portmap), those plugins where containerd looks for them (/opt/cni/bin, where Calico's install-cni puts them
on a real node), and a systemd unit that routes every other node's /24 through that node's lab address (and
puts NodeLocal DNSCache's address on lo), so it survives a node's restart. Nothing here is a role's: a
real site's pod network is roles/cni's Calico.
"""

from __future__ import annotations

import ipaddress
import json

from ufcctl.lab.layout import LAB_POD_SUBNET, POD_PREFIX, LabLayout
from ufcctl.lab.podman import Podman

CONFLIST = "/etc/cni/net.d/10-ufcctl-lab.conflist"
PLUGINS_FROM = "/usr/lib/cni"   # Debian's containernetworking-plugins
PLUGINS_TO = "/opt/cni/bin"     # ufcctl.domain.runtime.containerd's cni_bin_dir
ROUTES_UNIT = "ufcctl-lab-pod-routes.service"
NETWORK_NAME = "ufcctl-lab"
# roles/nodelocaldns' nodelocaldns_ip, the kubelet's clusterDNS: node-cache puts it on a dummy interface of
# its own, which the LAB ADD-ON STAND-IN in its image cannot make; the node's lo holds it instead, so the
# stand-in's listener and the kubelet's probes of that address meet
NODELOCALDNS_IP = "169.254.20.10"


def pod_cidrs(layout: LabLayout) -> dict[str, str]:
    """Node name -> its pods' /24, in layout order."""
    blocks = ipaddress.ip_network(LAB_POD_SUBNET).subnets(new_prefix=POD_PREFIX)
    return {node.name: str(next(blocks)) for node in layout.nodes}


def conflist(cidr: str) -> str:
    doc = {
        "cniVersion": "1.0.0", "name": NETWORK_NAME,
        "plugins": [
            {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": True, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": cidr}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(doc, indent=1) + "\n"


def routes(layout: LabLayout, name: str, cidrs: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(destination /24, via) for every other node of the lab (`cidrs`: pod_cidrs(layout), if known)."""
    cidrs = cidrs or pod_cidrs(layout)
    return [(cidrs[n.name], n.ip) for n in layout.nodes if n.name != name]


def routes_unit(layout: LabLayout, name: str, cidrs: dict[str, str] | None = None) -> str:
    commands = "; ".join([f"ip addr replace {NODELOCALDNS_IP}/32 dev lo",
                          *(f"ip route replace {dst} via {via}" for dst, via in routes(layout, name, cidrs))])
    return ("[Unit]\nDescription=ufcctl lab: routes to the other lab nodes' pods (ufcctl/lab/podnet.py)\n"
            "After=network.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
            f"ExecStart=/bin/sh -c '{commands}'\n\n[Install]\nWantedBy=multi-user.target\n")


def node_script(layout: LabLayout, name: str, cidrs: dict[str, str] | None = None) -> str:
    """What one node runs (through podman exec) to get its pod network; the same on every `lab up`."""
    cidrs = cidrs or pod_cidrs(layout)
    unit = f"/etc/systemd/system/{ROUTES_UNIT}"
    return "\n".join([
        "set -eu",
        f"mkdir -p {PLUGINS_TO} {CONFLIST.rsplit('/', 1)[0]}",
        f"for p in {PLUGINS_FROM}/*; do ln -sfn \"$p\" {PLUGINS_TO}/; done",
        f"cat > {CONFLIST}.tmp <<'EOF'\n{conflist(cidrs[name])}EOF",
        f"mv {CONFLIST}.tmp {CONFLIST}",
        f"cat > {unit} <<'EOF'\n{routes_unit(layout, name, cidrs)}EOF",
        "systemctl daemon-reload",
        f"systemctl enable {ROUTES_UNIT} >/dev/null 2>&1",
        f"systemctl restart {ROUTES_UNIT}",
        "",
    ])


def write_pod_network(podman: Podman, layout: LabLayout) -> int:
    """Every node's pod network (rewritten on each `lab up`: the nodes may have changed); returns how many."""
    cidrs = pod_cidrs(layout)  # once for the lab, not again for every node's script and routes
    for node in layout.nodes:
        podman.exec(node.name, ["sh", "-c", node_script(layout, node.name, cidrs)])
    return len(layout.nodes)
