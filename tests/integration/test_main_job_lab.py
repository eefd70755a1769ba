"""The README's main job, `./scripts/run.sh` from the checkout root, exactly as a new user runs it.

The shared lab of the integration tests is this job's lab (tests/helpers/lab.py `deployed_stack`), so
if the README's first command breaks, this module and every module on the shared lab are red. Here:
its exit code, that the deploy ran both phases on the lab's hosts, and that the health report it
printed names the three etcd clusters and one VIP holder; that the deploy ended with its readiness wait
(D19) read through the admin.conf it kept on the controller (0600) and found every Node Ready and every
add-on workload available, and the health report read the same API."""

from __future__ import annotations

import re

import pytest

from tests.helpers.lab import STACK_LAB, STACK_STATE, STACK_WORKERS, Stack
from ufcctl.app.inventory import load_inventory

pytestmark = pytest.mark.integration


def _section(text: str, start: str, end: str) -> str:
    """The last health report's lines from `start` up to `end` (run.sh may ask more than once)."""
    begin = text.rindex(start)
    return text[begin:text.index(end, begin)]


def test_the_main_job_exits_0(stack: Stack) -> None:
    job = stack.main_job
    assert job.returncode == 0, (f"./scripts/run.sh exited {job.returncode}:\n"
                                 f"{job.stdout[-3000:]}\n{job.stderr[-3000:]}")
    assert "setup: ok" in job.stdout, job.stdout[:2000]


def test_the_deploy_ran_both_phases(stack: Stack) -> None:
    # one line of words: the recaps wrap at the terminal's width wherever a word ends
    out = " ".join(stack.main_job.stdout.split())
    inv = load_inventory(stack.inventory)
    control_planes = inv.group_hosts("kube_control_plane")
    workers = sorted(set(inv.group_hosts("kube_node")) - set(control_planes))
    assert len(workers) == STACK_WORKERS
    # the cluster phase's recap: deploy.yml on the control planes, nothing failed
    recap = re.search(r"deploy\.yml: successful in \S+ \W (\d+) host\(s\): ok=\d+ changed=\d+ failed=0 "
                      r"unreachable=0", out)
    assert recap and int(recap[1]) == len(control_planes), out[-4000:]
    # the node phase on the fleet engine: every worker done, none failed or pending
    # durations print as 62.0s or 2m35s
    nodes = re.search(r"deploy-nodes \S+: done in \S+ - done (\d+) \(changed \d+\), failed 0, "
                      r"skipped 0, pending 0", out)
    assert nodes and int(nodes[1]) == len(workers), out[-4000:]
    # what the runs recorded agrees with what was printed
    assert stack.deploy is not None and stack.deploy["nodes"]["status"] == "done"
    assert sorted(n["host"] for n in stack.deploy["nodes"]["nodes"]) == workers


def test_the_health_report_names_three_etcd_clusters_and_a_vip_holder(stack: Stack) -> None:
    out = stack.main_job.stdout
    assert re.search(r"^asked http://\S+: healthy$", out, re.MULTILINE), out[-3000:]
    etcd = _section(out, "etcd clusters: 3", "VIP:")
    for cluster in ("core", "events", "pods"):
        assert re.search(rf"\b{cluster}\b", etcd), etcd
    vip = _section(out, "VIP: 1", "Nodes down:")
    holders = set(re.findall(rf"\b{STACK_LAB}-cp\d\b", vip))
    assert len(holders) == 1, vip
    assert "Nodes down: none" in out


def test_the_deploy_waited_for_every_node_ready_and_every_workload_available(stack: Stack) -> None:
    out = " ".join(stack.main_job.stdout.split())
    inventory = load_inventory(stack.inventory)
    kept = STACK_STATE / "pki" / "default" / "kubernetes" / "admin.conf"
    cluster = inventory.hosts[f"{STACK_LAB}-cp1"].vars.get("ufc_cluster_name")
    if cluster:
        kept = STACK_STATE / "pki" / str(cluster) / "kubernetes" / "admin.conf"
    nodes = len({*inventory.group_hosts("kube_control_plane"), *inventory.group_hosts("kube_node")})
    found = re.search(r"cluster ready: (\d+) Node\(s\) Ready, (\d+) workload\(s\) available "
                      r"\(read through (\S+?)[,;)]", out)
    assert found, out[-3000:]
    assert int(found.group(1)) == nodes and int(found.group(2)) > 0, found.group(0)
    assert found.group(3) == str(kept), found.group(0)
    assert kept.stat().st_mode & 0o777 == 0o600
