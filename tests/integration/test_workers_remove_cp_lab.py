"""`ufcctl remove-nodes --control-plane` on the shared deployed lab, with the README's commands as written:
ufc-cp3 (a control plane, a member of all three etcd clusters, an haproxy/keepalived host) is taken out
while a client requests /version through the VIP every 0.1 s on a new connection each time, then joined
again by the README's deploy line.

Checked: a removal while one etcd cluster is unhealthy is refused (exit 2, one `Error:` line naming the
cluster, nothing touched); cp3 is made the leader of events first, and `--dry-run` says leadership moves
and touches nothing; the removal exits 0 and then every etcd cluster
lists 2 members and is healthy, cp3's etcd members, timers and kube-apiserver are stopped and disabled,
its data directories are moved aside (never deleted), its Node is gone, every haproxy has it in MAINT in
both backends, keepalived is stopped there (the VIP is elsewhere), and no request through the VIP failed;
a second removal changes nothing; the deploy line joins it again, after the kubeadm-certs Secret and the
control-plane join token are deleted as two hours and a day after init would leave them (D17): 3 healthy
members per cluster (cp3 a new member), its Node back, every backend server UP again on every haproxy,
keepalived running, the Secret uploaded again and the token made again.

A stack module (tests/helpers/lab.py STACK_MODULES): its file name sorts after test_workers_lab.py and
before test_workers_remove_lab.py (file order on one worker), and it leaves the lab as it found it: three
control planes and three 3-member etcd clusters, which every later module expects.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers import real_cluster
from tests.helpers.lab import ROOT, STACK_LAB, Stack, haproxy_servers, ufcctl
from tests.lab_standins import apiserver_standin
from ufcctl.app.etcd_maint import cluster_targets
from ufcctl.domain.controlplane.kubeadm import token_objects
from ufcctl.lab.layout import KUBE_REAL
from ufcctl.rollout.store import StateStore

pytestmark = pytest.mark.integration

HOST = f"{STACK_LAB}-cp3"
APISERVER = "kube-apiserver"
CONTROL_PLANES = [f"{STACK_LAB}-cp{i}" for i in (1, 2, 3)]
CLIENT = f"{STACK_LAB}-w06"
KUBECTL = ["kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"]
CLUSTERS = ("core", "events", "pods")


def readme_line(start: str) -> list[str]:
    """The README's first line starting with `start`, as written (its comment cut)."""
    for line in (ROOT / "README.md").read_text().splitlines():
        words = line.split("#", 1)[0].strip()
        if words.startswith(start):
            return shlex.split(words)
    raise AssertionError(f"README.md has no `{start} ...` line")


REMOVE = readme_line(f"ufcctl remove-nodes --inventory lab --limit {HOST} --control-plane")
READD = readme_line("ufcctl deploy --inventory lab --phase cluster")


def _exec(stack: Stack, host: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", "exec", host, *argv], env=stack.env, capture_output=True, text=True,
                          timeout=120, check=False)


def _etcd(stack: Stack) -> dict[str, dict]:
    proc = ufcctl(["etcd", "status", "--inventory", "lab", "--output", "json"], stack.env, timeout=120)
    return {c["cluster"]: c for c in json.loads(proc.stdout)}


def _members(status: dict) -> list[str]:
    return sorted(m["member"] for m in status["members"])


def _servers(stack: Stack) -> dict[tuple[str, str, str], str]:
    """(haproxy host, backend, server) -> status, for both apiserver backends of every haproxy."""
    return {key: row["status"] for key, row in haproxy_servers(stack.env, CONTROL_PLANES).items()}


def _node(stack: Stack) -> dict | None:
    proc = _exec(stack, CONTROL_PLANES[0], *KUBECTL, "get", "node", HOST, "-o", "json")
    if proc.returncode != 0:
        assert "NotFound" in proc.stderr, proc.stderr
        return None
    return json.loads(proc.stdout)


def _newest(stack: Stack) -> tuple[str, list]:
    with StateStore(Path(stack.env["UFC_STATE_DIR"]) / "state.db") as store:
        run = store.runs("remove-control-plane")[0]
        assert run.status == "done", (run.status, run.message)
        return run.run_id, store.nodes(run.run_id)


def _control_plane_tokens(stack: Stack) -> list[str]:
    """Ids of the bootstrap tokens kube_control_plane made (kubeadm.yaml's; not the workers' join token)."""
    listed = _exec(stack, CONTROL_PLANES[0], "kubeadm", "token", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    return [str(obj["token"]).split(".", 1)[0] for obj in token_objects(listed.stdout)
            if obj.get("description") == "ufcctl join token (control plane)"]


def _expire_join_secrets(stack: Stack) -> None:
    """What two hours (kubeadm-certs) and a day (the init token) after init leave: neither."""
    gone = _exec(stack, CONTROL_PLANES[0], *KUBECTL, "-n", "kube-system", "delete", "secret", "kubeadm-certs")
    assert gone.returncode == 0, gone.stderr
    ids = _control_plane_tokens(stack)
    assert ids, "kubeadm init made the control-plane join token"
    for token_id in ids:
        deleted = _exec(stack, CONTROL_PLANES[0], "kubeadm", "token", "delete", token_id)
        assert deleted.returncode == 0, deleted.stderr


def _units(stack: Stack, verb: str, *units: str) -> list[str]:
    """`systemctl is-active|is-enabled` of the units on cp3; on the real lab kube-apiserver is kubeadm's
    static Pod, not a unit: active while its process runs, enabled while its manifest is there."""
    if stack.kube != KUBE_REAL or APISERVER not in units:
        return _exec(stack, HOST, "systemctl", verb, *units).stdout.split()
    rest = [u for u in units if u != APISERVER]
    states = dict(zip(rest, _exec(stack, HOST, "systemctl", verb, *rest).stdout.split(), strict=True))
    states[APISERVER] = real_cluster.static_pod_state(HOST, APISERVER, verb, stack.env)
    return [states[u] for u in units]


def _lead_events_from_cp3(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make cp3 the leader of the events cluster (etcd's MoveLeader through ufcctl's client), so the removal
    must hand leadership over before its member remove."""
    monkeypatch.setenv("UFC_STATE_DIR", stack.env["UFC_STATE_DIR"])
    (target,) = cluster_targets(stack.inventory, "events")
    current = target.client.view(with_last=False)
    leader, heir = current.member(current.leader or ""), current.member(HOST)
    assert leader is not None and heir is not None, current
    if leader.name != HOST:
        target.client.gateway(leader.endpoint).move_leader(heir.member_id)
    deadline = time.monotonic() + 30
    while target.client.view(with_last=False).leader != HOST:
        assert time.monotonic() < deadline, "cp3 did not take the lead of events"
        time.sleep(0.5)


ETCD_UNITS = [f"etcd-{c}.service" for c in CLUSTERS]
TIMERS = [f"ufcctl-etcd-{k}@{c}.timer" for c in CLUSTERS for k in ("defrag", "backup")]


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Iterator[Stack]:
    stack.require_deployed()
    status = _etcd(stack)
    assert all(s["healthy"] and _members(s) == CONTROL_PLANES for s in status.values()), status
    yield stack


def test_a_removal_while_a_cluster_is_unhealthy_is_refused_and_touches_nothing(lab: Stack) -> None:
    other = CONTROL_PLANES[1]
    assert _exec(lab, other, "systemctl", "stop", "etcd-pods.service").returncode == 0
    try:
        refused = ufcctl(REMOVE[1:], lab.env, timeout=300)
    finally:
        assert _exec(lab, other, "systemctl", "start", "etcd-pods.service").returncode == 0
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    errors = [line for line in refused.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "etcd cluster pods is not healthy" in errors[0] and HOST in errors[0], errors
    assert "Traceback" not in refused.stderr
    assert _units(lab, "is-active", *ETCD_UNITS, "kube-apiserver", "keepalived") == ["active"] * 5
    deadline = time.monotonic() + 60
    while not all(s["healthy"] for s in _etcd(lab).values()):
        assert time.monotonic() < deadline, "etcd-pods on cp2 did not come back"
        time.sleep(1)


def test_remove_cp3_then_again_then_join_it_back(lab: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    _lead_events_from_cp3(lab, monkeypatch)  # the removal must move leadership off cp3 first
    dry = ufcctl([*REMOVE[1:], "--dry-run"], lab.env, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    # core and pods: cp3 may lead them too (elections are the lab's); events: it leads (made so above)
    for cluster in ("core", "pods"):
        assert re.search(rf"etcd {cluster}: {HOST} leaves( \(it leads: leadership moves to \S+ first\))?, "
                         r"2 member\(s\) stay", dry.stderr), dry.stderr
    assert f"etcd events: {HOST} leaves (it leads: leadership moves to" in dry.stderr, dry.stderr
    assert _units(lab, "is-active", *ETCD_UNITS, "kube-apiserver", "keepalived") == ["active"] * 5
    assert all(_members(s) == CONTROL_PLANES for s in _etcd(lab).values())
    units = [*ETCD_UNITS, *TIMERS, "kube-apiserver", "keepalived", "kubelet"]
    active, enabled = _units(lab, "is-active", *units), _units(lab, "is-enabled", *units)

    vip = str(yaml.safe_load((lab.inventory / "group_vars/all/cluster.yml").read_text())["ufc_vip"])
    apiserver_standin.start_client(CLIENT, vip, env=lab.env)
    started = time.time()
    try:
        proc = ufcctl(REMOVE[1:], lab.env)  # exactly the README's command (cwd: the checkout root)
    finally:
        ended = time.time()
        time.sleep(1)
        apiserver_standin.stop_client(CLIENT, env=lab.env)
    removal = ended - started
    print(proc.stdout[-3000:], proc.stderr[-2000:])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    requests = [e for e in apiserver_standin.client_log(CLIENT, env=lab.env) if started <= e[0] <= ended]
    failed = [e for e in requests if not e[1]]
    run_id, nodes = _newest(lab)
    assert [(n.host, n.state, n.changed) for n in nodes] == [(HOST, "done", True)], nodes

    status = _etcd(lab)
    for cluster in CLUSTERS:
        assert status[cluster]["healthy"], status[cluster]
        assert _members(status[cluster]) == CONTROL_PLANES[:2], status[cluster]
    assert _units(lab, "is-active", *units) == ["inactive"] * len(units)
    assert _units(lab, "is-enabled", *units) == ["disabled"] * len(units)
    dirs = _exec(lab, HOST, "sh", "-c", "ls -d /var/lib/etcd-*").stdout.split()
    for cluster in CLUSTERS:  # moved aside, never deleted
        assert f"/var/lib/etcd-{cluster}" not in dirs, dirs
        assert [d for d in dirs if d.startswith(f"/var/lib/etcd-{cluster}.removed-")], dirs
    assert _node(lab) is None
    servers = _servers(lab)
    assert len(servers) == 18, servers
    assert {s for k, s in servers.items() if k[2] == HOST} == {"MAINT"}, servers
    assert {s for k, s in servers.items() if k[2] != HOST} == {"UP"}, servers
    assert vip not in _exec(lab, HOST, "ip", "-4", "addr").stdout  # the VIP is elsewhere
    print(f"remove-nodes --control-plane of {HOST}: {removal:.1f} s (run {run_id}); {len(requests)} "
          f"requests through the VIP, {len(failed)} failed: {failed[:5]}")
    assert len(requests) > 20  # the client ran the whole time
    assert failed == []

    again = ufcctl(REMOVE[1:], lab.env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    second, nodes = _newest(lab)
    assert second != run_id, second
    assert [(n.host, n.state, n.changed) for n in nodes] == [(HOST, "done", False)], nodes

    # D17: the re-add comes more than two hours' worth of TTL later: kubeadm-certs (2 h) and the init token
    # (24 h) are gone, as the garbage collector and the token cleaner would leave them
    _expire_join_secrets(lab)
    started = time.time()
    back = ufcctl(READD[1:], lab.env)  # exactly the README's line: cp3 joins again
    readd = time.time() - started
    assert back.returncode == 0, back.stdout[-3000:] + back.stderr[-3000:]
    status = _etcd(lab)
    for cluster in CLUSTERS:
        assert status[cluster]["healthy"] and _members(status[cluster]) == CONTROL_PLANES, status[cluster]
    # every unit as before the removal (the timers as the inventory wants them)
    assert _units(lab, "is-active", *units) == active and _units(lab, "is-enabled", *units) == enabled
    node = _node(lab)
    assert node is not None
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready.get("Ready") == "True", node["status"]
    deadline = time.monotonic() + 60
    while set(_servers(lab).values()) != {"UP"}:
        assert time.monotonic() < deadline, _servers(lab)
        time.sleep(1)
    print(f"re-add of {HOST} (`{' '.join(READD)}`): {readd:.1f} s")
    assert _control_plane_tokens(lab), "the deploy made the control-plane join token again"
    secret = _exec(lab, CONTROL_PLANES[0], *KUBECTL, "-n", "kube-system", "get", "secret", "kubeadm-certs")
    assert secret.returncode == 0, secret.stderr  # uploaded again under the certificate key
    # the lab as it was: the operator deletes the directories moved aside once sure (README)
    assert _exec(lab, HOST, "sh", "-c", "rm -rf /var/lib/etcd-*.removed-*").returncode == 0
