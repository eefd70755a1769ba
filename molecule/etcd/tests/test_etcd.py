"""etcd on three containers: TLS-only members, private keys, SANs, tuning, the agent, then a join."""

from __future__ import annotations

import json

import pytest
import testinfra

CLIENT_PORTS = {"core": 2379, "events": 2383, "pods": 2385}
METRICS_PORTS = {"core": 2381, "events": 2386, "pods": 2387}
AGENT = "/usr/local/lib/ufcctl-etcd/ufcctl-etcd-agent.zip"

# Runs on a member with the shipped modules: the cluster as the agent sees it, as JSON.
VIEW = """
import json, sys
sys.path.insert(0, "{agent}")
from ufcctl.domain.etcd.defrag import health_problems
from ufcctl.engine.etcd_client import ClusterClient, TlsFiles
tls = TlsFiles("/etc/etcd/pki/ca.crt", "/etc/etcd/pki/agent.crt", "/etc/etcd/pki/agent.key")
view = ClusterClient("{cluster}", ["https://127.0.0.1:{port}"], tls).view()
print(json.dumps({{"members": sorted(m.name for m in view.members), "leader": view.leader,
                  "problems": health_problems(view), "ids": sorted(m.member_id for m in view.members)}}))
"""


@pytest.fixture(scope="module")
def hosts(instance_names):
    return {name: testinfra.get_host(f"podman://{name}") for name in instance_names}


@pytest.fixture(scope="module")
def first(hosts):
    return hosts[sorted(hosts)[0]]


def _view(host, cluster: str) -> dict:
    script = VIEW.format(agent=AGENT, cluster=cluster, port=CLIENT_PORTS[cluster])
    out = host.check_output("python3 -c %s", script)
    return json.loads(out)


def _clusters_of(name: str, joined: bool = False) -> list[str]:
    return ["core", "events", "pods"] if name.endswith("etcd1") or joined else ["core", "events"]


def test_members_run_one_unit_per_cluster(hosts):
    for name, host in hosts.items():
        for cluster in _clusters_of(name):
            assert host.service(f"etcd-{cluster}").is_running, (name, cluster)
            assert host.service(f"etcd-{cluster}").is_enabled, (name, cluster)
            assert host.service(f"ufcctl-etcd-defrag@{cluster}.timer").is_enabled, (name, cluster)
        assert not host.service("etcd").is_running  # Debian's own single-member etcd stays masked


@pytest.mark.parametrize("cluster", ["core", "events"])
def test_three_member_clusters_are_healthy_over_tls(hosts, cluster):
    for host in hosts.values():
        view = _view(host, cluster)
        assert view["members"] == sorted(hosts) and view["problems"] == [] and view["leader"] in hosts


def test_clients_without_a_certificate_are_refused(first):
    script = (
        "import ssl, urllib.request\n"
        "ctx = ssl.create_default_context(cafile='/etc/etcd/pki/ca.crt')\n"
        "try:\n"
        "    urllib.request.urlopen('https://127.0.0.1:2379/health', context=ctx, timeout=5)\n"
        "    print('accepted')\n"
        "except Exception as err:\n"
        "    print('refused', type(err).__name__)\n"
    )
    assert first.check_output("python3 -c %s", script).startswith("refused")
    plain = first.run(
        "python3 -c %s", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:2379/health')"
    )
    assert plain.rc != 0


def test_private_keys_are_private_and_the_ca_key_stays_on_the_controller(hosts, first):
    for host in hosts.values():
        for name in ("member", "agent"):
            key = host.file(f"/etc/etcd/pki/{name}.key")
            assert (key.user, key.mode) == ("etcd", 0o600), name
        assert host.run("find / -xdev -name ca.key -print -quit").stdout.strip() == ""
    apiserver = first.file("/etc/kubernetes/pki/apiserver-etcd-client.key")
    assert (apiserver.user, apiserver.mode) == ("root", 0o600)
    assert first.file("/etc/kubernetes/pki/etcd/ca.crt").exists


def test_member_certificates_name_the_address_and_the_host(hosts):
    for name, host in hosts.items():
        address = host.check_output("hostname -I").split()[0]
        sans = host.check_output("openssl x509 -in /etc/etcd/pki/member.crt -noout -ext subjectAltName")
        assert f"IP Address:{address}" in sans and f"DNS:{name}" in sans and "IP Address:127.0.0.1" in sans


def test_tuning_reaches_etcd(first):
    metrics = first.check_output(
        "python3 -c %s",
        "import urllib.request; print(urllib.request.urlopen("
        "'http://127.0.0.1:2381/metrics').read().decode())",
    )
    assert "etcd_server_quota_backend_bytes 8.589934592e+09" in metrics
    env = first.file("/etc/etcd/etcd-core.env").content_string
    for line in (
        "ETCD_HEARTBEAT_INTERVAL=250",
        "ETCD_ELECTION_TIMEOUT=5000",
        "ETCD_SNAPSHOT_COUNT=100000",
        "ETCD_AUTO_COMPACTION_MODE=periodic",
        "ETCD_AUTO_COMPACTION_RETENTION=1h",
    ):
        assert line in env


def test_timer_path_runs_the_agent_and_logs_to_the_journal(first):
    first.check_output("systemctl start ufcctl-etcd-defrag@events.service")
    journal = first.check_output("journalctl -u ufcctl-etcd-defrag@events.service --no-pager -o cat")
    result = [line for line in journal.splitlines() if line.startswith("result ")][-1]
    outcome = json.loads(result[len("result ") :])["outcomes"][0]
    assert outcome["member"] == first.check_output("hostname")
    assert outcome["action"] in ("defragmented", "skipped") and outcome["before"]["db_size"] > 0


def test_two_members_join_the_running_pods_cluster(hosts, first, run_playbook):
    before = _view(first, "pods")
    assert len(before["members"]) == 1
    joiners = sorted(name for name, host in hosts.items() if host is not first)
    # only the joiners run: they find the running cluster through the first member's endpoint
    run = run_playbook(groups=["etcd_pods"], limit=",".join(joiners))
    assert run.rc == 0, run.output
    after = _view(first, "pods")
    assert after["members"] == sorted(hosts) and after["problems"] == []
    assert set(before["ids"]) <= set(after["ids"])  # the original member kept its identity: no re-init
    for name, host in hosts.items():
        assert host.service("etcd-pods").is_running, name
        bootstrap = host.file("/etc/etcd/etcd-pods-bootstrap.env").content_string
        state = "new" if host is first else "existing"
        assert f"ETCD_INITIAL_CLUSTER_STATE={state}" in bootstrap, name
