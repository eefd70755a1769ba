"""haproxy sizing: frontends for N nodes, per-server maxconn for one apiserver down, the fd cap."""

from __future__ import annotations

import pytest

from ufcctl.domain.controlplane.haproxy import FD_RESERVE, size_haproxy


@pytest.mark.parametrize(
    ("nodes", "per_node", "clients", "servers", "hard", "node_max", "server_max", "capped"),
    [
        pytest.param(16000, 3, 20000, 3, 1048576, 48000, 24000, False, id="16k-three-apiservers"),
        pytest.param(16000, 3, 20000, 5, 1048576, 48000, 12000, False, id="16k-five-apiservers"),
        pytest.param(16000, 3, 20000, 1, 1048576, 48000, 48000, False, id="one-apiserver"),
        pytest.param(16000, 3, 20000, 3, 0, 48000, 24000, False, id="unlimited"),
        pytest.param(16000, 3, 20000, 3, 20000, 6988, 3494, True, id="lab-container-20000"),
    ],
)
def test_sizes(nodes, per_node, clients, servers, hard, node_max, server_max, capped):
    s = size_haproxy(nodes, per_node, clients, servers, hard)
    assert (s.nodes.maxconn, s.nodes.server_maxconn, s.capped) == (node_max, server_max, capped)
    assert s.global_maxconn == s.nodes.maxconn + s.clients.maxconn
    assert s.fd_limit == 2 * s.global_maxconn + FD_RESERVE
    if hard:
        assert s.fd_limit <= hard
    assert ("capped" in s.note) == capped
