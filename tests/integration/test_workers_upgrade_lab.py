"""`ufcctl upgrade-cluster` on the shared deployed lab, with the README's lines as written: the lab goes from
Kubernetes v1.34.4 to v1.35.4 (on the default lab the LAB KUBE EMULATOR's `kubeadm upgrade apply|node`, its
kubelet reporting its version through the LAB API STAND-IN; on `lab up --kube real` the built kubeadm and
kubelet of both releases, the upgrades counted by kubeadm's manifest backups), while a client requests
/version through the VIP every 0.1 s on a new connection each time.

Checked: a run the inventory does not record (ufc_kube_version still v1.34.4) is refused (exit 2) and
touches nothing; once the inventory says v1.35.4, `deploy` and `add-nodes` are refused (they would swap
kubeadm and kubelet under running nodes); then the README's run exits 0 after a snapshot of every etcd
cluster, the control planes one at a time (apply on the first, node on the others) and every worker on the
fleet engine; every apiserver answers v1.35.4, every Node reports kubelet v1.35.4, no node is left cordoned
or marked, every haproxy backend is UP again; the requests through the VIP that failed during the run are
counted and printed (the aim, asserted: none), and so are haproxy's connection errors, retries and
redispatches (asserted: none; they are what shows a control plane restarted while still in the backends,
since haproxy's retries hide that from a client making new connections). A second run has nothing to do.

Then the runtime's drain-restart path in `deploy`: the inventory records the Ascend Docker Runtime 6.0.1
(the LAB NPU EMULATOR's mirror serves 6.0.0 and 6.0.1) and the README's `ufcctl deploy --inventory lab`
runs as written (which also shows a deploy after an upgrade the inventory records is allowed): every NPU
worker ran the installer's `--upgrade` once and records 6.0.1, was seen cordoned with ufcctl's mark
`runtime-upgrade` during the run (the drain; a watcher polls the Nodes every second), and no node is left
cordoned or marked afterwards.

A stack module (tests/helpers/lab.py STACK_MODULES): its file name sorts after every other stack module
(file order on one worker, tests/integration/conftest.py), so the lab moves to the new version only after
every other module ran on v1.34.4.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers import real_cluster
from tests.helpers.lab import ROOT, STACK_LAB, STACK_STATE, Stack, haproxy_servers
from tests.lab_standins import apiserver_standin
from tests.lab_standins.kube_emulator import lab as emulator
from ufcctl.app.inventory import load_inventory
from ufcctl.lab.layout import KUBE_REAL

pytestmark = pytest.mark.integration

TARGET = "v1.35.4"
CONTROL_PLANES = [f"{STACK_LAB}-cp{i}" for i in (1, 2, 3)]
CLIENT = f"{STACK_LAB}-w06"
KUBECTL = ["kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"]
VERSIONS_FILE = "group_vars/all/versions.yml"


def readme_line(start: str, exact: bool = False) -> str:
    """The README's first line starting with `start` (or, `exact`, that is `start`), as written (its
    comment cut)."""
    for line in (ROOT / "README.md").read_text().splitlines():
        words = line.split("#", 1)[0].strip()
        if words == start or (not exact and words.startswith(start)):
            return words
    raise AssertionError(f"README.md has no `{start} ...` line")


UPGRADE = readme_line("KUBECONFIG=.ufc/lab/admin.conf ufcctl upgrade-cluster --inventory lab")
COPY_ADMIN = readme_line("podman cp ufc-cp1:/etc/kubernetes/admin.conf .ufc/lab/admin.conf")


def _shell(stack: Stack, line: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=ROOT, env=stack.env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _exec(stack: Stack, host: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", "exec", host, *argv], env=stack.env, capture_output=True, text=True,
                          timeout=120, check=False)


# haproxy's per-server counters of connections that went to a server and failed or had to be sent
# elsewhere (`show stat`): connection errors, retries, redispatches. A control plane restarted while still
# in the backends makes them grow (haproxy's retries and redispatch hide it from the client: measured on
# this lab, 3 apiserver restarts without the drain cost 8 redispatches and 0 failed client requests); taken
# out first (MAINT), it gets no connection to fail.
COUNTERS = ("econ", "wretr", "wredis")


def _haproxy_counters(stack: Stack) -> dict[tuple[str, str, str], tuple[int, ...]]:
    return {key: tuple(int(row[c] or 0) for c in COUNTERS)
            for key, row in haproxy_servers(stack.env, CONTROL_PLANES).items()}


def _nodes(stack: Stack) -> list[dict]:
    proc = _exec(stack, CONTROL_PLANES[0], *KUBECTL, "get", "nodes", "--output=json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["items"]


def _apiserver_version(stack: Stack, host: str) -> str:
    proc = _exec(stack, host, "python3", "-c",
                 "import json,ssl,urllib.request; "
                 "c=ssl.create_default_context(cafile='/etc/kubernetes/pki/ca.crt');"
                 "c.check_hostname=False; print(json.load(urllib.request.urlopen("
                 "'https://127.0.0.1:6443/version', context=c))['gitVersion'])")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _upgrades(stack: Stack) -> dict[str, list[str]]:
    """Per control plane, what kubeadm upgraded there: the emulator's recorded verbs that changed
    something, or on the real lab the manifest backups `kubeadm upgrade apply|node` left."""
    if stack.kube == KUBE_REAL:
        return {h: real_cluster.upgrade_backups(h, stack.env) for h in CONTROL_PLANES}
    return {h: [r["verb"] for r in emulator.upgrades(h, stack.env) if r.get("changed")]
            for h in CONTROL_PLANES}


@pytest.fixture(scope="module")
def versions_file(stack: Stack) -> Path:
    stack.require_deployed()
    return stack.inventory / VERSIONS_FILE


def test_an_upgrade_the_inventory_does_not_record_is_refused_and_touches_nothing(
        stack: Stack, versions_file: Path) -> None:
    assert not versions_file.exists()  # the lab runs the roles' default, v1.34.4
    assert _shell(stack, COPY_ADMIN).returncode == 0
    refused = _shell(stack, UPGRADE, timeout=300)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "says ufc_kube_version '1.34.4'" in refused.stderr and "set ufc_kube_version" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert {_apiserver_version(stack, h) for h in CONTROL_PLANES} == {"v1.34.4"}
    if stack.kube == KUBE_REAL:
        assert _upgrades(stack) == dict.fromkeys(CONTROL_PLANES, [])
    else:  # no kubeadm upgrade ran at all
        assert not any(r.get("verb") for h in CONTROL_PLANES for r in emulator.upgrades(h, stack.env))


def test_the_readme_upgrade_moves_every_node_and_the_vip_keeps_answering(
        stack: Stack, versions_file: Path) -> None:
    # the operator's step the README names: the inventory records the new version first
    versions_file.write_text(f'ufc_kube_version: "{TARGET[1:]}"\n')
    # from here a deploy or add-nodes would swap kubeadm and kubelet under running nodes: refused
    for line in ("ufcctl deploy --inventory lab", f"ufcctl add-nodes --inventory lab --limit {CLIENT}"):
        swap = _shell(stack, line, timeout=300)
        assert swap.returncode == 2, (line, swap.stdout[-2000:], swap.stderr[-2000:])
        assert "runs v1.34.4: a deploy would swap kubeadm and kubelet" in swap.stderr, swap.stderr
        assert "ufcctl upgrade-cluster --inventory" in swap.stderr and "Traceback" not in swap.stderr
    vip = str(yaml.safe_load((stack.inventory / "group_vars/all/cluster.yml").read_text())["ufc_vip"])
    before = _haproxy_counters(stack)
    with apiserver_standin.client_running(CLIENT, vip, env=stack.env) as window:
        run = _shell(stack, UPGRADE)
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    after = _haproxy_counters(stack)
    grown = {k: tuple(a - b for a, b in zip(v, before.get(k, (0, 0, 0)), strict=True))
             for k, v in after.items()}
    grown = {k: dict(zip(COUNTERS, v, strict=True)) for k, v in grown.items() if any(v)}
    requests, failed = window.requests, window.failed
    control = re.search(r"control planes on v1\.32\.3 in ([0-9.]+) s", run.stdout + run.stderr)
    print(f"upgrade-cluster: {window.ended - window.started:.1f} s in all, control planes "
          f"{control[1] if control else '?'} s; {len(requests)} requests through the VIP, {len(failed)} "
          f"failed: {failed[:5]}; haproxy connection errors, retries, redispatches: {grown or 'none'}")
    assert len(requests) > 50  # the client ran the whole time
    assert failed == []  # the aim: no request through the VIP failed
    assert grown == {}  # and haproxy sent no connection to a control plane while it restarted
    # a snapshot of every etcd cluster came first
    for cluster in ("core", "events", "pods"):
        assert list((STACK_STATE / "backups" / "etcd" / cluster).glob("*.db")), cluster
    assert {h: _apiserver_version(stack, h) for h in CONTROL_PLANES} == dict.fromkeys(CONTROL_PLANES, TARGET)
    upgraded = _upgrades(stack)
    if stack.kube == KUBE_REAL:  # one backup of the static Pod manifests per control plane: upgraded once
        assert {h: len(b) for h, b in upgraded.items()} == dict.fromkeys(CONTROL_PLANES, 1), upgraded
    else:
        assert upgraded == {CONTROL_PLANES[0]: ["apply"], CONTROL_PLANES[1]: ["node"],
                            CONTROL_PLANES[2]: ["node"]}
    nodes = _nodes(stack)
    inventory = load_inventory(stack.inventory)  # 9 hosts, or more after test_workers_lab added one
    hosts = set(inventory.group_hosts("kube_control_plane")) | set(inventory.group_hosts("kube_node"))
    assert {n["metadata"]["name"] for n in nodes} == hosts
    for node in nodes:
        name = node["metadata"]["name"]
        assert node["status"]["nodeInfo"]["kubeletVersion"] == TARGET, name
        assert not node["spec"].get("unschedulable"), name
        assert "ufcctl.io/cordoned-for" not in (node["metadata"].get("annotations") or {}), name
        ready = [c for c in node["status"].get("conditions") or [] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
    # every server of both backends UP again on every haproxy (3 haproxies x 2 backends x 3 servers)
    servers = {key: row["status"] for key, row in haproxy_servers(stack.env, CONTROL_PLANES).items()}
    assert len(servers) == 18 and set(servers.values()) == {"UP"}, servers


def test_a_second_run_has_nothing_to_do(stack: Stack, versions_file: Path) -> None:
    again = _shell(stack, UPGRADE, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"nothing to do: every apiserver and kubelet runs {TARGET}" in again.stdout


RUNTIME_TARGET = "6.0.1"  # the LAB NPU EMULATOR's mirror serves 6.0.0 (the default) and 6.0.1
ADR_PATH = "/usr/local/Ascend/Ascend-Docker-Runtime"
DEPLOY = readme_line("ufcctl deploy --inventory lab", exact=True)


class CordonWatcher:
    """Polls the Nodes once a second while a run goes on and keeps every Node seen cordoned with ufcctl's
    mark: the drain is visible only while it lasts (drain, upgrade, restart, release: tens of seconds)."""

    def __init__(self, stack: Stack, mark: str):
        self.stack, self.mark, self.seen = stack, mark, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            proc = _exec(self.stack, CONTROL_PLANES[0], *KUBECTL, "get", "nodes", "--output=json")
            if proc.returncode == 0:
                for node in json.loads(proc.stdout)["items"]:
                    marked = (node["metadata"].get("annotations") or {}).get("ufcctl.io/cordoned-for")
                    if node["spec"].get("unschedulable") and marked == self.mark:
                        self.seen.add(node["metadata"]["name"])
            self._stop.wait(1)

    def __enter__(self) -> CordonWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def test_a_runtime_version_change_in_deploy_drains_upgrades_and_releases_npu_workers(
        stack: Stack, versions_file: Path) -> None:
    inventory = load_inventory(stack.inventory)
    workers = set(inventory.group_hosts("npu_node")) - set(CONTROL_PLANES)
    assert workers
    # the operator's step the README names: the new version in the inventory, beside ufc_kube_version
    versions = yaml.safe_load(versions_file.read_text()) or {}
    versions["ufc_ascend_docker_runtime_version"] = RUNTIME_TARGET
    versions_file.write_text(yaml.safe_dump(versions, default_flow_style=False))
    installer_log = "/var/log/ascend-docker-runtime/installer.log"
    upgrades = {h: _exec(stack, h, "cat", installer_log).stdout.count("upgrade from") for h in workers}
    started = time.monotonic()
    with CordonWatcher(stack, "runtime-upgrade") as watcher:
        run = _shell(stack, DEPLOY)
    seconds = time.monotonic() - started
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    for host in sorted(workers):
        record = _exec(stack, host, "cat", f"{ADR_PATH}/ufcctl-version")
        assert record.stdout.strip() == RUNTIME_TARGET, (host, record.stdout, record.stderr)
        log = _exec(stack, host, "cat", installer_log).stdout
        assert log.count("upgrade from") == upgrades[host] + 1, (host, log)  # `--upgrade`, once
        assert log.splitlines()[-1].endswith(f"install {RUNTIME_TARGET} {ADR_PATH}"), (host, log)
        assert _exec(stack, host, "test", "-e", "/etc/kubernetes/ufcctl/runtime-upgrading").returncode == 1
        assert _exec(stack, host, "ctr", "version").returncode == 0, host  # containerd answers
    # each worker was drained (cordoned with ufcctl's mark) during the run, and released after it
    assert watcher.seen == workers, (sorted(watcher.seen), sorted(workers))
    for node in _nodes(stack):
        name = node["metadata"]["name"]
        assert not node["spec"].get("unschedulable"), name
        assert "ufcctl.io/cordoned-for" not in (node["metadata"].get("annotations") or {}), name
    print(f"deploy with an Ascend Docker Runtime change on {len(workers)} workers: {seconds:.1f} s; "
          f"seen cordoned with the mark: {sorted(watcher.seen)}")
