"""haproxy sizing for the apiserver VIP: two frontends sized apart, within the host's descriptor limit."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Descriptors haproxy keeps for itself (listeners, health checks, stats socket, logs) beyond two
# per proxied connection (client side + server side).
FD_RESERVE = 200


@dataclass(frozen=True)
class FrontendSize:
    name: str
    maxconn: int  # frontend maxconn
    server_maxconn: int  # per-server maxconn in the frontend's backend


@dataclass(frozen=True)
class HaproxySizing:
    nodes: FrontendSize
    clients: FrontendSize
    global_maxconn: int
    fd_limit: int  # LimitNOFILE for haproxy.service
    capped: bool  # the host's hard descriptor limit forced smaller numbers than asked
    note: str

    @property
    def wanted_fds(self) -> int:
        return 2 * (self.nodes.maxconn + self.clients.maxconn) + FD_RESERVE


def _server_maxconn(frontend_maxconn: int, servers: int) -> int:
    # With one apiserver down the others must take its share: size each for servers-1 survivors.
    return math.ceil(frontend_maxconn / max(1, servers - 1))


def size_haproxy(
    node_count: int,
    conns_per_node: int,
    client_maxconn: int,
    servers: int,
    hard_fd_limit: int,
) -> HaproxySizing:
    """Frontend and per-server maxconn for `node_count` nodes, capped to what the host allows.

    Every node holds `conns_per_node` long-lived connections (kubelet, kube-proxy, node agents);
    a VIP holder in ARP mode carries all of them. If 2 fds per connection do not fit the hard
    limit, both frontends shrink proportionally and `capped` says so (a lab container: 20,000).
    """
    nodes_max = max(1, node_count * conns_per_node)
    clients_max = max(1, client_maxconn)
    wanted = 2 * (nodes_max + clients_max) + FD_RESERVE
    capped = hard_fd_limit > 0 and wanted > hard_fd_limit
    note = f"sized for {node_count} nodes x {conns_per_node} connections + {clients_max} clients"
    if capped:
        ratio = max(0.0, (hard_fd_limit - FD_RESERVE) / (wanted - FD_RESERVE))
        nodes_max = max(1, int(nodes_max * ratio))
        clients_max = max(1, int(clients_max * ratio))
        note += (
            f"; capped to {nodes_max}+{clients_max} by the hard descriptor limit {hard_fd_limit} "
            f"(needs {wanted}: raise the nofile hard limit)"
        )
    fd_limit = 2 * (nodes_max + clients_max) + FD_RESERVE
    return HaproxySizing(
        nodes=FrontendSize("nodes", nodes_max, _server_maxconn(nodes_max, servers)),
        clients=FrontendSize("clients", clients_max, _server_maxconn(clients_max, servers)),
        global_maxconn=nodes_max + clients_max,
        fd_limit=fd_limit,
        capped=capped,
        note=note,
    )
