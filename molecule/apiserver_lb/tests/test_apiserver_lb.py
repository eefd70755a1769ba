"""apiserver_lb on three containers: configs valid, one VIP holder, TLS /readyz checks route and drain."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import testinfra

ROOT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.lab_standins import apiserver_standin  # noqa: E402  (the kube-apiserver stand-in, an emulator)

STAT = (
    "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/haproxy/admin.sock'); "
    "s.sendall(b'show stat\\n'); print(s.makefile().read())"
)


@pytest.fixture(scope="module")
def hosts(instance_names):
    return {name: testinfra.get_host(f"podman://{name}") for name in instance_names}


@pytest.fixture(scope="module")
def vip(hosts) -> str:
    conf = next(iter(hosts.values())).file("/etc/keepalived/keepalived.conf").content_string
    return conf.split("virtual_ipaddress {")[1].split()[0].split("/")[0]


def _holders(hosts, vip: str) -> list[str]:
    return [
        n for n, h in hosts.items() if f"{vip}/32" in h.check_output("ip -o -4 addr show dev eth0").split()
    ]


def _server_status(host) -> dict[tuple[str, str], str]:
    rows = [line.split(",") for line in host.check_output("python3 -c %s", STAT).splitlines() if line]
    return {(r[0], r[1]): r[17] for r in rows[1:] if r[1] not in ("FRONTEND", "BACKEND")}


def _wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def test_services_run_and_configs_validate(hosts):
    for name, host in hosts.items():
        for unit in ("haproxy", "keepalived"):
            assert host.service(unit).is_running and host.service(unit).is_enabled, (name, unit)
        assert host.run("haproxy -c -q -f /etc/haproxy/haproxy.cfg").rc == 0, name
        assert host.file("/etc/keepalived/keepalived.conf").mode == 0o600, name


def test_config_has_tls_readyz_checks_and_no_network_stats(hosts):
    cfg = next(iter(hosts.values())).file("/etc/haproxy/haproxy.cfg").content_string
    assert cfg.count("http-check send meth GET uri /readyz") == 2
    assert cfg.count("check check-ssl verify none") == 2 and cfg.count("balance leastconn") == 2
    assert "stats uri" not in cfg and "stats socket /run/haproxy/admin.sock" in cfg
    for host in hosts.values():
        listening = host.check_output("ss -Hltn | awk '{print $4}'").split()
        assert sorted({a.rsplit(":", 1)[1] for a in listening} & {"8443", "9443"}) == ["8443", "9443"]


def test_exactly_one_host_holds_the_vip(hosts, vip):
    holders = _wait(lambda: _holders(hosts, vip), "a VIP holder", 30)
    assert len(holders) == 1, holders


def test_unicast_peers_are_the_other_hosts(hosts):
    for name, host in hosts.items():
        conf = host.file("/etc/keepalived/keepalived.conf").content_string
        own = host.check_output("ip -o -4 addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -1")
        block = conf.split("unicast_peer {")[1].split("}")[0].split()
        assert own not in block and len(block) == len(hosts) - 1, (name, block)


def test_vip_routes_readyz_to_ready_test_doubles_only(hosts, vip):
    for name in hosts:
        apiserver_standin.start(name)
    try:
        first = next(iter(hosts.values()))
        _wait(lambda: set(_server_status(first).values()) == {"UP"}, "every backend UP (TLS /readyz checks)")
        client = hosts[_holders(hosts, vip)[0]]
        seen: Counter[str] = Counter()
        for port in (8443, 9443):
            for _ in range(9):
                seen[client.check_output(f"curl -sk --max-time 3 https://{vip}:{port}/").split()[-1]] += 1
        assert set(seen) == set(hosts), seen  # leastconn spreads short connections over all three

        drained = sorted(hosts)[-1]
        apiserver_standin.set_ready(drained, False)
        _wait(
            lambda: all(s == "DOWN" for (b, srv), s in _server_status(first).items() if srv == drained),
            f"{drained} marked DOWN",
            30,
        )
        after = Counter(
            client.check_output(f"curl -sk --max-time 3 https://{vip}:8443/").split()[-1] for _ in range(12)
        )
        assert drained not in after and sum(after.values()) == 12, after
    finally:
        for name in hosts:
            apiserver_standin.stop(name)
