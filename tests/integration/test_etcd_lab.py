"""etcd on a real container lab: three TLS clusters after `ufcctl deploy`, the timer path defragmenting
every member one at a time (leader last) under a concurrent writer, a member killed mid-run, and
`ufcctl etcd status|defrag|prune`. The lab is the test-owned stack shared with the deploy, NFS and
VIP modules (tests/integration/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from etcd_writer import Writer

from tests.helpers.lab import ROOT, STACK_LAB, Stack
from tests.helpers.lab import ufcctl as _ufcctl
from ufcctl.engine.etcd_client import ClusterClient, Gateway, TlsFiles

pytestmark = pytest.mark.integration

LAB = STACK_LAB  # the deployed lab shared with the deploy, NFS and VIP modules (conftest.py)
MEMBERS = [f"{LAB}-cp{i}" for i in (1, 2, 3)]
PORTS = {"core": 2379, "events": 2383, "pods": 2385}
MiB = 1024 * 1024


@dataclass(frozen=True)
class Lab:
    inventory: Path
    env: dict[str, str]
    tls: TlsFiles
    addresses: dict[str, str]  # member -> IP

    def endpoints(self, cluster: str) -> list[str]:
        return [f"https://{self.addresses[m]}:{PORTS[cluster]}" for m in MEMBERS]

    def client(self, cluster: str) -> ClusterClient:
        return ClusterClient(cluster, self.endpoints(cluster), self.tls)


def _exec(env: dict[str, str], member: str, command: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["podman", "exec", member, "sh", "-c", command],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if check:
        assert proc.returncode == 0, f"{member}: {command}: {proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Lab:
    stack.require_deployed()  # with the lab-sized defrag settings `lab up` writes (group_vars/all/etcd.yml)
    hosts = yaml.safe_load((stack.inventory / "hosts.yml").read_text())
    cps = hosts["all"]["children"]["kube_control_plane"]["hosts"]
    pki = Path(stack.env["UFC_STATE_DIR"]) / "pki" / "default" / "etcd"
    return Lab(
        stack.inventory,
        stack.env,
        TlsFiles(str(pki / "ca.crt"), str(pki / "ufcctl.crt"), str(pki / "ufcctl.key")),
        {m: cps[m]["ansible_host"] for m in MEMBERS},
    )


def _status(lab: Lab, *extra: str) -> list[dict]:
    proc = _ufcctl(["etcd", "status", "--inventory", str(lab.inventory), "--output", "json", *extra], lab.env)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _fragment(lab: Lab, cluster: str, megabytes: int = 24) -> None:
    """Write then delete `megabytes` of 100 KB values: free pages the next defrag can reclaim."""
    gateway = Gateway(lab.endpoints(cluster)[0], lab.tls)
    value = "x" * (100 * 1024)
    for i in range(megabytes * 10):
        gateway.put(f"/itest/fill/{i:05d}", value)
    assert gateway.delete_prefix("/itest/fill/") == megabytes * 10


def _results(lab: Lab, member: str, cluster: str, since: str) -> list[dict]:
    """The agent's `result {...}` lines in the journal since `since` (a systemd timestamp)."""
    journal = _exec(
        lab.env,
        member,
        f"journalctl -u ufcctl-etcd-defrag@{cluster}.service --since '{since}' --no-pager -o cat",
    )
    return [json.loads(line[len("result ") :]) for line in journal.splitlines() if line.startswith("result ")]


def _start_agents(lab: Lab, cluster: str) -> list[threading.Thread]:
    """Start the unit the timer starts, on every member at once (`systemctl start` waits for it)."""
    threads = [
        threading.Thread(
            target=_exec,
            args=(lab.env, m, f"systemctl start ufcctl-etcd-defrag@{cluster}"),
            kwargs={"check": False},
        )
        for m in MEMBERS
    ]
    for thread in threads:
        thread.start()
    return threads


def _now(lab: Lab) -> str:
    return _exec(lab.env, MEMBERS[0], "date -u '+%Y-%m-%d %H:%M:%S'").strip()


def test_three_tls_clusters_are_healthy_after_deploy(lab: Lab) -> None:
    clusters = _status(lab)
    assert [c["cluster"] for c in clusters] == ["core", "events", "pods"]
    for cluster in clusters:
        assert cluster["healthy"], cluster["problems"]
        assert sorted(m["member"] for m in cluster["members"]) == MEMBERS
        assert sum(m["leader"] for m in cluster["members"]) == 1
    for member in MEMBERS:  # TLS only: a client without a certificate is refused
        code = subprocess.run(
            [
                "podman",
                "exec",
                member,
                "python3",
                "-c",
                "import ssl,urllib.request as u; c=ssl.create_default_context("
                "cafile='/etc/etcd/pki/ca.crt'); u.urlopen('https://127.0.0.1:2383/health', context=c)",
            ],
            env=lab.env,
            capture_output=True,
            timeout=60,
            check=False,
        ).returncode
        assert code != 0, member


# What each member holds as deployed, read in one exec per member (every exec costs seconds on a loaded
# 2-core machine): checked here since the role's molecule scenario, a second deploy of etcd (Debian's
# 3.4 package), was retired for the shared lab's.
MEMBER_FACTS = (
    "for u in etcd-core etcd-events etcd-pods etcd; do echo \"active $u $(systemctl is-active $u)\"; done; "
    "for u in etcd-core etcd-events etcd-pods ufcctl-etcd-defrag@core.timer ufcctl-etcd-defrag@events.timer "
    "ufcctl-etcd-defrag@pods.timer; do echo \"enabled $u $(systemctl is-enabled $u)\"; done; "
    "stat -c 'mode %n %U %a' /etc/etcd/pki/member.key /etc/etcd/pki/agent.key "
    "/etc/kubernetes/pki/apiserver-etcd-client.key; "
    "for f in /etc/kubernetes/pki/etcd/ca.crt /etc/etcd/pki/ca.key /etc/kubernetes/pki/etcd/ca.key; do "
    "test -e $f && echo \"exists $f\"; done; "
    "echo \"san $(openssl x509 -in /etc/etcd/pki/member.crt -noout -ext subjectAltName | tail -n +2)\"; "
    "echo \"address $(hostname -I | cut -d' ' -f1)\"; "
    "sed 's/^/env /' /etc/etcd/etcd-core.env; "
    "python3 -c \"import urllib.request as u; print(*[l for l in u.urlopen('http://127.0.0.1:2381/metrics')"
    ".read().decode().splitlines() if l.startswith('etcd_server_quota_backend_bytes ')])\""
)


def test_members_run_one_unit_per_cluster_with_private_keys_their_names_and_the_tuning(lab: Lab) -> None:
    for member in MEMBERS:
        facts = _exec(lab.env, member, MEMBER_FACTS).splitlines()
        rows = {tuple(line.split()[:2]): line.split()[2:] for line in facts if line.split()}
        for cluster in PORTS:
            assert rows[("active", f"etcd-{cluster}")] == ["active"], (member, cluster)
            assert rows[("enabled", f"etcd-{cluster}")] == ["enabled"], (member, cluster)
            assert rows[("enabled", f"ufcctl-etcd-defrag@{cluster}.timer")] == ["enabled"], (member, cluster)
        assert rows[("active", "etcd")] != ["active"], member  # Debian's own single-member etcd stays off
        for key, owner in (("member.key", "etcd"), ("agent.key", "etcd")):
            assert rows[("mode", f"/etc/etcd/pki/{key}")] == [owner, "600"], (member, key)
        assert rows[("mode", "/etc/kubernetes/pki/apiserver-etcd-client.key")] == ["root", "600"], member
        # the CA's key stays on the controller: only its certificate reaches the members
        exists = {line.split()[1] for line in facts if line.startswith("exists ")}
        assert exists == {"/etc/kubernetes/pki/etcd/ca.crt"}, (member, exists)
        address = next(line.split()[1] for line in facts if line.startswith("address "))
        san = next(line for line in facts if line.startswith("san "))
        for name in (f"IP Address:{address}", f"DNS:{member}", "IP Address:127.0.0.1"):
            assert name in san, (member, san)
        env = {line[4:] for line in facts if line.startswith("env ")}
        assert {"ETCD_HEARTBEAT_INTERVAL=250", "ETCD_ELECTION_TIMEOUT=5000", "ETCD_SNAPSHOT_COUNT=100000",
                "ETCD_AUTO_COMPACTION_MODE=periodic", "ETCD_AUTO_COMPACTION_RETENTION=1h"} <= env, member
        assert "etcd_server_quota_backend_bytes 8.589934592e+09" in facts, member


def test_timer_path_defrags_each_member_once_leader_last_under_a_writer(lab: Lab) -> None:
    _fragment(lab, "events")
    leader = next(m["member"] for m in _status(lab, "--cluster", "events")[0]["members"] if m["leader"])
    since = _now(lab)
    with Writer(lab.endpoints("events"), lab.tls, "/itest/writes", rate=320, threads=16) as writer:
        time.sleep(3)
        for thread in _start_agents(lab, "events"):
            thread.join(timeout=900)
        time.sleep(3)
    stats = writer.stats
    outcomes = [o for m in MEMBERS for r in _results(lab, m, "events", since) for o in r["outcomes"]]
    done = sorted((o for o in outcomes if o["action"] == "defragmented"), key=lambda o: o["finished_at"])
    assert sorted(o["member"] for o in done) == MEMBERS, outcomes
    assert done[-1]["member"] == leader and done[-1]["leader"], [(o["member"], o["leader"]) for o in done]
    for earlier, later in zip(done, done[1:], strict=False):  # one at a time: no two defrags overlap
        assert earlier["finished_at"] <= later["finished_at"] - later["seconds"] + 0.01
    for o in done:  # reclaimed: the file shrank to about its live data
        assert o["after"]["db_size"] < o["before"]["db_size"] - 8 * MiB
        assert o["after"]["db_size"] - o["after"]["db_size_in_use"] < 4 * MiB
    # the writer: none lost, none failed for good, and a steady stream throughout (the floor proves
    # writes kept flowing while members were defragmented; it is not a speed test: the shared lab
    # runs beside molecule and the monitoring stack on two cores, where 128-159/s were seen)
    assert not stats.failed, stats.failed[:5]
    assert stats.rate >= 50, f"writer reached only {stats.rate:.0f} writes/s"
    stored = lab.client("events").first("get_prefix", "/itest/writes/")
    missing = [k for k, v in stats.acked.items() if stored.get(k) != v]
    assert missing == [], f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"


def test_killing_a_member_mid_run_keeps_the_cluster_healthy_and_skips_are_reported(lab: Lab) -> None:
    _fragment(lab, "core", megabytes=64)  # big enough that the run lasts a few seconds
    client = lab.client("core")
    leader = next(m["member"] for m in _status(lab, "--cluster", "core")[0]["members"] if m["leader"])
    started = time.time()
    since = _now(lab)
    threads = _start_agents(lab, "core")
    victim = None
    deadline = time.monotonic() + 600
    while victim is None and time.monotonic() < deadline:
        time.sleep(0.2)
        records = client.view().last
        done = {m for m, r in records.items() if r.at >= started}
        if done:  # one member is finished: kill one that is not, preferably the waiting leader
            pending = [m for m in MEMBERS if m not in done]
            assert pending, "every member finished before the test could kill one"
            victim = leader if leader in pending else pending[0]
            _exec(lab.env, victim, "systemctl kill -s KILL etcd-core && systemctl stop etcd-core")
    assert victim is not None, "no member was defragmented within 10 minutes"
    for thread in threads:
        thread.join(timeout=900)
    results = {m: _results(lab, m, "core", since) for m in MEMBERS}
    assert all(results.values()), {m: len(r) for m, r in results.items()}  # every agent reported
    outcomes = [o for r in results.values() for res in r for o in res["outcomes"]]
    reported = [
        o
        for o in outcomes
        if (o["action"] in ("skipped", "failed") and victim in o["reason"])
        or (o["member"] == victim and o["action"] != "defragmented")
    ]
    assert reported, outcomes
    _exec(lab.env, victim, "systemctl start etcd-core")
    core = _status(lab, "--cluster", "core")[0]
    assert core["healthy"], core["problems"]


def test_status_shows_last_defrag_and_controller_defrag_goes_leader_last(lab: Lab) -> None:
    events = _status(lab, "--cluster", "events")[0]
    assert all(m["last_defrag"] and m["last_defrag"]["by"].startswith("agent@") for m in events["members"])
    assert all(m["fragmentation_percent"] is not None for m in events["members"])
    _fragment(lab, "pods")
    dry = _ufcctl(
        [
            "etcd",
            "defrag",
            "--inventory",
            str(lab.inventory),
            "--cluster",
            "pods",
            "--dry-run",
            "--output",
            "json",
        ],
        lab.env,
    )
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)[0]["outcomes"]
    # no compaction in a dry run, so the rule may still see the deleted values as in use
    assert {o["action"] for o in planned} <= {"would-defragment", "skipped"} and planned[-1]["leader"]
    assert all(o["after"] is None for o in planned)
    real = _ufcctl(
        ["etcd", "defrag", "--inventory", str(lab.inventory), "--cluster", "pods", "--output", "json"],
        lab.env,
    )
    assert real.returncode == 0, real.stderr
    outcomes = json.loads(real.stdout)[0]["outcomes"]
    summary = [(o["member"], o["action"], o["leader"], o["reason"]) for o in outcomes]
    assert [o["action"] for o in outcomes] == ["defragmented"] * 3 and outcomes[-1]["leader"], summary


def test_prune_counts_then_deletes_orphans_in_core(lab: Lab) -> None:
    """Keys of the resources the other two clusters hold, left in core: counted, kept without --yes, then
    deleted, and nothing else. On the real lab core also holds the cluster's own objects, which the
    apiservers read: the kept key is one no apiserver reads, and it is removed after. (This test once kept
    `/registry/configmaps/default/keep` = "{}": on the real lab that one undecodable object stopped every
    ConfigMap watch of the three apiservers, so no kubelet could mount kube-root-ca.crt and the bootstrap
    signer never signed a new join token, until the key was deleted.)"""
    core = Gateway(lab.endpoints("core")[0], lab.tls)
    orphans = ("/registry/events/default/e1", "/registry/leases/kube-node-lease/n1",
               "/registry/pods/default/p1")
    keep = "/registry/ufcctl-test-prune/keep"
    for key in (*orphans, keep):
        core.put(key, "{}")
    prefixes = {"/registry/events/": 1, "/registry/leases/": 1, "/registry/pods/": 1}
    try:
        args = ["etcd", "prune", "--inventory", str(lab.inventory), "--cluster", "core", "--output", "json"]
        counted = _ufcctl(args, lab.env)
        assert counted.returncode == 0, counted.stderr
        assert json.loads(counted.stdout)["counts"] == prefixes
        assert all(core.get(key) == "{}" for key in orphans)  # nothing deleted without --yes
        deleted = _ufcctl([*args, "--yes"], lab.env)
        assert json.loads(deleted.stdout)["deleted"] == prefixes
        assert [core.count_prefix(prefix) for prefix in prefixes] == [0, 0, 0]
        assert core.get(keep) == "{}"
    finally:
        core.delete_prefix("/registry/ufcctl-test-prune/")


def test_member_timers_take_one_checked_snapshot_per_cluster(lab: Lab) -> None:
    """Every member's `ufcctl-etcd-backup@events` runs; exactly one (the first healthy follower) takes a
    snapshot, which `sha256sum -c` accepts on the member, writes its textfile metrics, and copies it to
    the NFS server's snapshot store, which a worker cannot reach."""
    directory = "/var/backups/ufcctl-etcd/events"
    before = {m: _exec(lab.env, m, f"ls {directory} 2>/dev/null || true").split() for m in MEMBERS}
    for member in MEMBERS:
        _exec(lab.env, member, "systemctl start ufcctl-etcd-backup@events.service")
    after = {m: _exec(lab.env, m, f"ls {directory} 2>/dev/null || true").split() for m in MEMBERS}
    new = {m: sorted(set(after[m]) - set(before[m])) for m in MEMBERS}
    takers = [m for m in MEMBERS if new[m]]
    assert len(takers) == 1, new
    taker = takers[0]
    db = next(n for n in new[taker] if n.endswith(".db"))
    assert f"{db}.sha256" in new[taker], new
    assert _exec(lab.env, taker, f"cd {directory} && sha256sum -c {db}.sha256").strip() == f"{db}: OK"
    assert _exec(lab.env, taker, f"stat -c %a {directory}/{db}").strip() == "600"  # Secrets in core
    prom = _exec(lab.env, taker, "cat /var/lib/ufcctl-etcd-defrag/ufcctl-etcd-backup-events.prom")
    assert f'ufcctl_etcd_backup_last_result{{etcd_cluster="events",member="{taker}"}} 1' in prom, prom
    others = [m for m in MEMBERS if m != taker]
    log = _exec(lab.env, others[0], "journalctl -u ufcctl-etcd-backup@events.service -o cat -n 5 --no-pager")
    assert f"member {taker} takes this run's snapshot" in log, log
    # copied off the member: the NFS server's etcd snapshot store (roles/nfs_server, a second export for
    # the members only), the snapshot whole and its .sha256 beside it, owned by the squashed id
    assert f'ufcctl_etcd_backup_offsite_last_result{{etcd_cluster="events",member="{taker}"}} 1' in prom, prom
    server = _nfs_server(lab)
    store = "/srv/ufcctl-etcd-backups/events"
    assert _exec(lab.env, server, f"cd {store} && sha256sum -c {db}.sha256").strip() == f"{db}: OK"
    assert _exec(lab.env, server, f"stat -c '%u %a' {store} {store}/{db}").split() == ["65534", "700",
                                                                                     "65534", "660"]
    # a worker is not among the store's clients: refused (the dataset export is open to it)
    worker = f"{LAB}-w01"
    refused = subprocess.run(["podman", "exec", worker, "nfs-ls",
                              f"nfs://{lab.addresses[server]}/srv/ufcctl-etcd-backups/events?version=3"],
                             env=lab.env, capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode != 0 and db not in refused.stdout, refused.stdout + refused.stderr
    # the server's retention timer's unit runs clean (keeps 168 per cluster: nothing to prune here)
    _exec(lab.env, server, "systemctl start ufcctl-etcd-backup-prune.service")
    assert db in _exec(lab.env, server, f"ls {store}")


def _nfs_server(lab: Lab) -> str:
    hosts = yaml.safe_load((lab.inventory / "hosts.yml").read_text())["all"]["children"]
    return next(iter(hosts["nfs_server"]["hosts"]))


def test_restore_drill_brings_back_every_acknowledged_key_and_the_api(lab: Lab, tmp_path: Path) -> None:
    """Keys written, `ufcctl etcd backup`, more keys, every member's data of core destroyed,
    `ufcctl etcd restore`: every key acknowledged before the snapshot is back with its value, none
    written after it, the revision is bumped, the old data is kept aside and the API answers again.
    Bad input first: a live cluster, a corrupt and a truncated snapshot are exit 2 with nothing touched."""
    core = lab.client("core")
    prefix = f"/ufc-drill/{time.time_ns()}/"  # this run's keys only
    acked = {f"{prefix}k{i:03d}": f"v{i}" for i in range(200)}
    for key, value in acked.items():
        core.first("put", key, value)
    backup = _ufcctl(["etcd", "backup", "--inventory", "lab"], lab.env)  # the README's command, as written
    assert backup.returncode == 0, backup.stdout + backup.stderr
    taken = {c: sorted((Path(lab.env["UFC_STATE_DIR"]) / "backups" / "etcd" / c).glob(f"{c}-*.db"))[-1]
             for c in PORTS}
    for cluster, path in taken.items():
        assert f"cluster {cluster}: {path} (" in backup.stdout, backup.stdout
        assert path.stat().st_mode & 0o777 == 0o600
    # the README's restore, with the file the backup just wrote (relative to the checkout root)
    source = taken["core"].relative_to(ROOT)
    for i in range(20):
        core.first("put", f"{prefix}late{i}", "after the snapshot")
    def state() -> tuple[dict[str, str], int, list[str]]:
        """The members, the late keys, the data set aside: what a refused restore must leave as it was.
        Not core's revision: on the real lab the apiservers write to core all the time."""
        aside = [_exec(lab.env, m, "ls -d /var/lib/etcd-core.before-restore-* 2>/dev/null || true").strip()
                 for m in MEMBERS]
        members = {m.name: m.member_id for m in core.first("members")}
        return members, core.first("count_prefix", f"{prefix}late"), aside

    before = state()
    assert before[1] == 20

    def restore(path: Path) -> subprocess.CompletedProcess[str]:
        return _ufcctl(["etcd", "restore", "--inventory", "lab", "--cluster", "core", "--from", str(path)],
                       lab.env)

    live = restore(source)
    assert live.returncode == 2, live.stdout + live.stderr
    assert "etcd cluster core is running" in live.stderr, live.stderr
    corrupt = tmp_path / "corrupt.db"
    data = bytearray((ROOT / source).read_bytes())
    data[4096] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    assert "fails etcd's sha256 trailer" in restore(corrupt).stderr
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes((ROOT / source).read_bytes()[:100_000])
    assert restore(truncated).returncode == 2
    assert state() == before  # nothing touched

    for member in MEMBERS:  # the disaster: every member of core loses its data
        _exec(lab.env, member, "systemctl stop etcd-core.service && rm -rf /var/lib/etcd-core/member")
    restored = restore(source)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert core.first("get_prefix", f"{prefix}k") == acked
    assert core.first("count_prefix", f"{prefix}late") == 0
    assert core.first("status").revision > 1_000_000_000
    for member in MEMBERS:
        aside = _exec(lab.env, member, "ls -d /var/lib/etcd-core.before-restore-*").split()
        assert aside, member
    nodes = subprocess.run(["podman", "exec", f"{LAB}-cp1", "kubectl",
                            "--kubeconfig=/etc/kubernetes/admin.conf", "get", "nodes", "--output=name"],
                           env=lab.env, capture_output=True, text=True, timeout=120, check=False)
    assert nodes.returncode == 0, nodes.stderr
    assert f"node/{LAB}-cp1" in nodes.stdout.split()
    assert all(row["health"] == "healthy" for c in _status(lab, "--cluster", "core") for row in c["members"])


def test_member_replace_rejoins_a_dead_member_empty_with_a_new_id(lab: Lab) -> None:
    """events on cp3 loses its data; `ufcctl etcd member replace` stops it, keeps the rest aside,
    removes it, and roles/etcd joins it again: a new member id, every key served by cp3 itself.
    A healthy member is refused first (exit 2, nothing touched)."""
    member = MEMBERS[2]
    args = ["etcd", "member", "replace", "--inventory", "lab", "--cluster", "events", "--member", member]
    events = lab.client("events")
    before = {m.name: m.member_id for m in events.first("members")}
    healthy = _ufcctl(args, lab.env)
    assert healthy.returncode == 2 and f"member {member} of etcd cluster events is healthy" in healthy.stderr
    prefix = f"/ufc-replace/{time.time_ns()}/"
    keys = {f"{prefix}k{i}": f"v{i}" for i in range(50)}
    for key, value in keys.items():
        events.first("put", key, value)
    _exec(lab.env, member, "systemctl stop etcd-events.service && rm -rf /var/lib/etcd-events/member")
    replaced = _ufcctl(args, lab.env)
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    after = {m.name: m.member_id for m in events.first("members")}
    assert set(after) == set(MEMBERS) and after[member] != before[member]
    assert {n: i for n, i in after.items() if n != member} == {n: i for n, i in before.items() if n != member}
    own = Gateway(lab.endpoints("events")[2], lab.tls)  # cp3's own endpoint
    assert own.get_prefix(prefix) == keys
    assert _exec(lab.env, member, "ls -d /var/lib/etcd-events.replaced-*").strip()
