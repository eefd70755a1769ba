"""A worker's kubeadm join: its JoinConfiguration, the labels it may register with, its token's freshness.

Used by roles/kube_node through its filter plugin. The KubeletConfiguration is not here: kubeadm join
downloads the cluster's (the kubelet-config ConfigMap kubeadm init uploaded from the document
roles/kube_control_plane renders), so control planes and workers share one source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ufcctl.domain import label_syntax
from ufcctl.domain.controlplane.kubeadm import TOKEN

# kubelet refuses --node-labels in these namespaces except the prefixes below (kubelet's
# well_known_labels.go, docs/reference/nodes-observability-images.md §2); the node-labels add-on sets
# the rest (node-role.kubernetes.io/...) with kubectl.
_KUBE_NAMESPACES = ("kubernetes.io", "k8s.io")
_KUBELET_ALLOWED = ("kubelet.kubernetes.io/", "node.kubernetes.io/")


def registration_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a kubelet may set on its own Node at registration."""
    allowed = {}
    for key, value in labels.items():
        prefix = key.split("/", 1)[0] if "/" in key else ""
        restricted = any(prefix == ns or prefix.endswith("." + ns) for ns in _KUBE_NAMESPACES)
        if not restricted or key.startswith(_KUBELET_ALLOWED):
            allowed[key] = value
    return allowed


def join_configuration(*, name: str, endpoint: str, token: str, ca_hash: str, cri_socket: str,
                       node_ip: str | None, labels: Mapping[str, str],
                       taints: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """kubeadm.k8s.io/v1beta4 JoinConfiguration of a worker (no controlPlane section); ValueError naming a
    label that is no label key or value."""
    extra = []
    if labels:
        # refused here too, not only by the inventory check: a ',' or '=' would add labels of its own
        extra.append({"name": "node-labels", "value": label_syntax.node_labels_flag(labels)})
    if node_ip:
        extra.append({"name": "node-ip", "value": node_ip})
    return {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "JoinConfiguration",
        "discovery": {
            "bootstrapToken": {"apiServerEndpoint": endpoint, "token": token, "caCertHashes": [ca_hash]},
            "tlsBootstrapToken": token,
        },
        "nodeRegistration": {"name": name, "criSocket": cri_socket, "taints": [dict(t) for t in taints],
                             "kubeletExtraArgs": extra},
    }


def token_record(text: str | None) -> dict[str, Any] | None:
    """The stored join token ({"token", "expires"}), or None when missing or not ours."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(data, dict) or not TOKEN.match(str(data.get("token", ""))):
        return None
    try:
        datetime.fromisoformat(str(data.get("expires")))
    except ValueError:
        return None
    return data


def token_fresh(text: str | None, now: datetime, margin_seconds: float) -> bool:
    """A stored token that stays valid for more than `margin_seconds` from `now` (an aware datetime)."""
    record = token_record(text)
    if record is None:
        return False
    expires = datetime.fromisoformat(str(record["expires"]))
    return (expires - now).total_seconds() > margin_seconds
