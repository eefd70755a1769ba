"""Node CLI used by roles/etcd: is a cluster running (probe), add this member to it (join), is it back
and caught up after a restart (wait-settled), take this member out of it (leave).

`--probe` prints {"running": bool, ...}; `--join` adds this member (or reuses an unfinished add) and
writes the bootstrap environment file with `ETCD_INITIAL_CLUSTER_STATE=existing`; with `--start UNIT` it
then starts the unit and waits until it is active, committing a lease grant and revoke through the other
members every NUDGE_SECONDS meanwhile (start_joined); one host at a time. `--wait-settled`
(tasks/renew.yml, after restarting this member) waits until every member answers under one leader and
this member's raft index reaches the leader's as first seen then; exit 1 after --timeout seconds.
`--leave` (tasks/leave.yml, `ufcctl remove-nodes --control-plane`) removes THIS member (the config's own
name, never another) through another member: refused (exit 2, nothing done) unless the cluster is
healthy and keeps a member; a leader first hands leadership to the most up-to-date other member; then it
waits until the members that stay are healthy under one leader. A member already removed prints
{"changed": false}: a rerun after a kill finishes the rest of the removal without a second remove.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from ufcctl.domain.etcd.defrag import ClusterView, health_problems, settled_leader_index
from ufcctl.domain.etcd.membership import initial_cluster, plan_join, plan_leave
from ufcctl.engine.etcd_client import ClusterClient, EtcdError
from ufcctl.nodeside.etcd_defrag_config import load_config
from ufcctl.nodeside.files import write_atomic
from ufcctl.nodeside.systemctl import systemctl as _systemctl

EXIT_REFUSED = 2
ADD_RETRY_SECONDS = 60.0
# How often a joining member's cluster gets one entry while the member starts (start_joined), and
# how long the lease of that entry lives if its revoke is lost (it then expires on its own).
NUDGE_SECONDS = 2.0
NUDGE_LEASE_TTL = 10
# The unit's TimeoutStartSec (templates/etcd.service.j2) plus a margin: systemd gives up first.
START_TIMEOUT = 330.0


def bootstrap_env(cluster: str, initial: str) -> str:
    return (
        "# Written by ufcctl-etcd-member --join; read by etcd only while the data dir is empty.\n"
        f"ETCD_INITIAL_CLUSTER={initial}\n"
        "ETCD_INITIAL_CLUSTER_STATE=existing\n"
        f"ETCD_INITIAL_CLUSTER_TOKEN=ufcctl-{cluster}\n"
    )


def _add(client: ClusterClient, peer_url: str) -> list[dict[str, Any]]:
    """member add, retried while etcd's strict reconfiguration check says "unhealthy cluster".

    The leader counts only members it has heard from for 5 s (etcd's HealthInterval) when it
    checks that the cluster keeps quorum after the add, so the member that joined just before
    this one makes the next add fail for a few seconds.
    """
    deadline = time.monotonic() + ADD_RETRY_SECONDS
    while True:
        try:
            return list(client.first("member_add", peer_url))
        except EtcdError as err:
            if "unhealthy cluster" not in err.message or time.monotonic() > deadline:
                raise
            time.sleep(2)


def start_joined(others: ClusterClient, unit: str, timeout: float = START_TIMEOUT,
                 systemctl: Callable[..., str] = _systemctl, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> str | None:
    """Start the unit of a member just added and wait until systemd says active; None, or why not.

    While it starts, one lease grant and its revoke go through `others` (the members already running)
    every NUDGE_SECONDS. etcd 3.6 refuses every proposal of a member whose committed index is more than
    5000 entries past its applied index ("etcdserver: too many requests", maxGapBetweenApplyAndCommitIndex
    in etcdserver/v3_server.go), and a member that joins a cluster further ahead than that receives a
    snapshot, which advances its committed index but not the applied index that guard reads (only an
    applied entry does: applyEntries, not applySnapshot, in etcdserver/server.go). Its first proposal is
    publishing itself, which systemd's READY waits for: in a cluster that commits nothing meanwhile (an
    idle events or pods cluster, a lab) the member never gets ready and TimeoutStartSec fails the join.
    One committed entry unblocks it; a lease grant and revoke touch no key.
    """
    systemctl("daemon-reload")
    systemctl("enable", unit)
    systemctl("start", "--no-block", unit)
    deadline = clock() + timeout
    last_nudge = float("-inf")
    while True:
        state = systemctl("show", "--property=ActiveState", "--value", unit)
        if state == "active":
            return None
        if state == "failed":
            return f"{unit} failed to start"
        if clock() > deadline:
            return f"{unit} not active within {timeout:.0f} s (state {state or 'unknown'})"
        if clock() - last_nudge >= NUDGE_SECONDS:
            last_nudge = clock()
            try:
                others.first("lease_revoke", others.first("lease_grant", NUDGE_LEASE_TTL))
            except EtcdError:
                pass  # the next round tries again; the unit's state decides
        sleep(0.5)


def wait_settled(client: ClusterClient, member: str, timeout: float, poll: float = 0.25) -> float | None:
    """Seconds until the cluster settled with `member` caught up; None when `timeout` passed first."""
    began = time.monotonic()
    goal: int | None = None
    while time.monotonic() - began <= timeout:
        try:
            view = client.view(with_last=False)
        except EtcdError:
            view = None
        index = settled_leader_index(view, member) if view is not None else None
        if index is not None:
            goal = index if goal is None else goal
            if view is not None and view.statuses[member].raft_index >= goal:
                return time.monotonic() - began
        time.sleep(poll)
    return None


def _view(client: ClusterClient) -> ClusterView | None:
    try:
        return client.view(with_last=False)
    except EtcdError:
        return None


def _wait_for(what: str, ready: Callable[[ClusterView], bool], client: ClusterClient, timeout: float,
              poll: float = 0.25) -> None:
    """Poll the cluster until `ready`; EtcdError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        view = _view(client)
        if view is not None and ready(view):
            return
        if time.monotonic() > deadline:
            raise EtcdError(client.cluster, f"{what}: not within {timeout:.0f} s")
        time.sleep(poll)


def leave(client: ClusterClient, name: str, timeout: float) -> tuple[int, dict[str, Any]]:
    """Remove member `name` from its cluster (plan_leave says whether and how); (exit code, result)."""
    try:
        view = client.view(with_last=False)
    except EtcdError as err:
        return EXIT_REFUSED, {"error": f"cluster {client.cluster} does not answer: {err}"}
    plan = plan_leave(view, name)
    if plan.action == "absent":
        return 0, {"changed": False, "reason": plan.reason}
    if plan.action == "refuse":
        return EXIT_REFUSED, {"error": plan.reason}
    own = view.member(name)
    endpoint = own.endpoint if own else None
    if plan.heir is not None:
        heir = view.member(plan.heir)
        assert heir is not None and endpoint
        client.gateway(endpoint).move_leader(heir.member_id)
        _wait_for(f"leadership of {client.cluster} off {name}",
                  lambda v: v.leader not in (None, name), client, timeout)
    client.first("member_remove", plan.member_id, avoid=endpoint)
    # the members that stay: listed without `name`, every one answering under one leader
    client.endpoints = [e for e in client.endpoints if e != endpoint] or client.endpoints
    _wait_for(f"cluster {client.cluster} healthy without {name}",
              lambda v: v.member(name) is None and not health_problems(v), client, timeout)
    return 0, {"changed": True, "removed": name, "member_id": plan.member_id, "leadership_to": plan.heir}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ufcctl-etcd-member", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="agent config (JSON) written by roles/etcd")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--probe", action="store_true", help="print whether the cluster answers")
    mode.add_argument("--join", action="store_true", help="add this member to the running cluster")
    mode.add_argument("--wait-settled", action="store_true",
                      help="wait until every member is healthy and this one caught up (after its restart)")
    mode.add_argument("--leave", action="store_true",
                      help="remove this member from its healthy cluster (leadership handed over first)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds (--wait-settled, --leave)")
    parser.add_argument("--name", help="this member's name (--join)")
    parser.add_argument("--peer-url", help="this member's peer URL (--join)")
    parser.add_argument("--bootstrap-env", help="file to write the initial-cluster settings to (--join)")
    parser.add_argument("--start", metavar="UNIT",
                        help="then start this systemd unit and wait until it is active (--join)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    # this member's own endpoint is among them and is refused quickly while it is not running
    client = ClusterClient(cfg.cluster, cfg.endpoints, cfg.tls, timeout=5)
    if args.wait_settled:
        took = wait_settled(client, cfg.member or "", args.timeout)
        if took is None:
            print(f"error: cluster {cfg.cluster}: member {cfg.member} not healthy and caught up within "
                  f"{args.timeout:.0f} s", file=sys.stderr)
            return 1
        print(json.dumps({"settled": True, "member": cfg.member, "seconds": round(took, 2)}))
        return 0
    if args.leave:
        try:
            code, result = leave(client, cfg.member or "", args.timeout)
        except EtcdError as err:
            code, result = 1, {"error": f"cluster {cfg.cluster}: removing member {cfg.member}: {err}"}
        if "error" in result:
            print(f"error: {result['error']}", file=sys.stderr)
        else:
            print(json.dumps(result))
        return code
    try:
        members = client.first("member_list_raw")
    except EtcdError as err:
        if args.probe:
            print(json.dumps({"running": False, "error": str(err)}))
            return 0
        print(f"error: cluster {cfg.cluster} does not answer, nothing to join: {err}", file=sys.stderr)
        return 1
    if args.probe:
        names = [m.get("name", "") for m in members]
        print(json.dumps({"running": True, "members": names}))
        return 0
    if not (args.name and args.peer_url and args.bootstrap_env):
        parser.error("--join needs --name, --peer-url and --bootstrap-env")
    plan = plan_join(members, args.name, args.peer_url)
    if plan.action == "refuse":
        print(f"error: cluster {cfg.cluster}: {plan.reason}", file=sys.stderr)
        return EXIT_REFUSED
    if plan.action == "add":
        try:
            members = _add(client, args.peer_url)
        except EtcdError as err:
            print(f"error: cluster {cfg.cluster}: member add {args.peer_url} failed: {err}", file=sys.stderr)
            return 1
    initial = initial_cluster(members, args.name, args.peer_url)
    write_atomic(args.bootstrap_env, bootstrap_env(cfg.cluster, initial))
    if args.start:
        others = [url for m in members if m.get("name") and m.get("name") != args.name
                  for url in m.get("clientURLs", ())[:1]]
        running = ClusterClient(cfg.cluster, others or cfg.endpoints, cfg.tls, timeout=5)
        problem = start_joined(running, args.start)
        if problem:
            print(f"error: cluster {cfg.cluster}: member {args.name} joined but {problem}", file=sys.stderr)
            return 1
    print(json.dumps({"changed": True, "action": plan.action, "reason": plan.reason}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
