"""A fake kubectl process (ufcctl/engine/kubectl.py's `command`) that answers the readiness lists from a
script of cluster states, one per read, the last repeated; it records every argv."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ufcctl.engine.kubectl import Kubectl

WORKLOADS = "deployments.apps,daemonsets.apps,statefulsets.apps"


def node(name: str, ready: bool = True) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def daemonset(name: str, ns: str, desired: int, available: int) -> dict[str, Any]:
    return {"kind": "DaemonSet", "metadata": {"name": name, "namespace": ns, "generation": 1},
            "spec": {"updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": desired, "numberAvailable": available}}


def deployment(name: str, ns: str, want: int, available: int) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": name, "namespace": ns, "generation": 1},
            "spec": {"replicas": want},
            "status": {"observedGeneration": 1, "replicas": want, "updatedReplicas": want,
                       "availableReplicas": available}}


State = tuple[list[dict[str, Any]], list[dict[str, Any]]] | str  # (nodes, workloads), or an error


def cluster(nodes: int = 3, not_ready: int = 0, unavailable: int = 0) -> State:
    """`nodes` Nodes (the last `not_ready` of them NotReady) and the add-ons' workloads, `unavailable`
    of them short of pods."""
    names = [f"node{i}" for i in range(nodes)]
    node_list = [node(n, i < nodes - not_ready) for i, n in enumerate(names)]
    workloads = [daemonset("calico-node", "kube-system", nodes, nodes - (1 if unavailable > 0 else 0)),
                 deployment("volcano-scheduler", "volcano-system", 1, 0 if unavailable > 1 else 1),
                 deployment("nfs-provisioner", "nfs-system", 1, 0 if unavailable > 2 else 1),
                 deployment("user-web", "team-a", 2, 0)]  # a user's: never judged
    return node_list, workloads


class FakeApi:
    def __init__(self, *states: State):
        self.states = list(states) or [cluster()]
        self.calls: list[list[str]] = []
        self.reads = 0  # reads started

    def __call__(self, argv: Sequence[str], timeout: int) -> tuple[int, str, str]:
        args = list(argv)[3:]  # drop binary --kubeconfig PATH
        self.calls.append(args)
        if args[:2] == ["get", "nodes"]:  # each read starts with the Node list
            self.reads += 1
        state = self.states[min(self.reads - 1, len(self.states) - 1)]
        if isinstance(state, str):
            return 1, "", state
        nodes, workloads = state
        if args[:2] == ["get", "nodes"]:
            return 0, json.dumps({"kind": "List", "items": nodes}), ""
        if args[:2] == ["get", WORKLOADS]:
            return 0, json.dumps({"kind": "List", "items": workloads}), ""
        return 1, "", f"unexpected call: {args}"

    def kubectl(self) -> Kubectl:
        return Kubectl("kubectl", Path("/kc/admin.conf"), command=self)

    def client(self, inventory: object = None) -> tuple[Kubectl | None, str]:
        return self.kubectl(), "/kc/admin.conf"
