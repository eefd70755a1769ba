"""Jinja filters over ufcctl/domain/controlplane (join.py, kubeadm.py) and domain/addons/labels.py."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ufcctl.domain.addons import labels
from ufcctl.domain.controlplane import join, kubeadm, schema

SAMPLE = "abcdef.0123456789abcdef"  # kubeadm's documented example token


def ufcctl_kube_node_join(v: Mapping[str, Any]) -> dict[str, Any]:
    """The node's JoinConfiguration and its schema problems; `token` absent: no document."""
    tor_label = v.get("tor_label") or ""
    every = labels.worker_labels(v["hostvars"], v["npu"], v["host_arch"], tor_label, v["labels"])
    registered = join.registration_labels(every)
    # what the kubelet may not set on itself (node-role.kubernetes.io/*): kubectl labels it after the join
    later = {k: val for k, val in every.items() if k not in registered}
    record = join.token_record(v["token_text"])
    if record is None:
        return {"doc": None, "problems": [], "secrets": [], "kubectl_labels": later}
    ca_hash = kubeadm.ca_hash(v["ca_pem"])
    try:
        doc = join.join_configuration(
            name=v["name"], endpoint=v["endpoint"], token=record["token"], ca_hash=ca_hash,
            cri_socket=v["cri_socket"], node_ip=v["address"] or None, labels=registered,
            taints=[v["taint"]] if v["npu"] else [])
    except ValueError as err:  # a label that would split kubelet's --node-labels: no document at all
        return {"doc": None, "problems": [f"node-labels: {err}"], "secrets": [], "kubectl_labels": later}
    # validated with a stand-in token of the same format, so no schema message can quote the real one
    bootstrap = {**doc["discovery"]["bootstrapToken"], "token": SAMPLE}
    stand_in = {**doc, "discovery": {"bootstrapToken": bootstrap, "tlsBootstrapToken": SAMPLE}}
    return {"doc": doc, "problems": schema.documents_errors([stand_in]),
            "secrets": [kubeadm.token_secret(record["token"])], "kubectl_labels": later}


def ufcctl_kube_node_token_state(text: str | None, margin_seconds: float) -> dict[str, Any]:
    """{"fresh": the stored token stays valid past the margin, "id": its public id (None: no token)}."""
    record = join.token_record(text)
    return {"fresh": join.token_fresh(text, datetime.now(UTC), float(margin_seconds)),
            "id": record["token"].split(".")[0] if record else None}


def ufcctl_kube_node_token_record(token: str, ttl_seconds: float) -> str:
    """What the controller stores for a token made now: {"token", "expires"} (JSON)."""
    expires = datetime.now(UTC) + timedelta(seconds=float(ttl_seconds))
    return json.dumps({"token": token.strip(), "expires": expires.isoformat(timespec="seconds")})


def ufcctl_kube_node_secrets(text: str | None) -> list[str]:
    record = join.token_record(text)
    return [kubeadm.token_secret(record["token"])] if record else []


def ufcctl_kube_node_kubeadm_failure(result: Mapping[str, Any], secrets: Sequence[str]) -> str:
    return kubeadm.failure_message(result, secrets)


def ufcctl_kube_node_join_retryable(result: Mapping[str, Any]) -> bool:
    return kubeadm.join_retryable(result)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_kube_node_join": ufcctl_kube_node_join,
            "ufcctl_kube_node_token_state": ufcctl_kube_node_token_state,
            "ufcctl_kube_node_token_record": ufcctl_kube_node_token_record,
            "ufcctl_kube_node_secrets": ufcctl_kube_node_secrets,
            "ufcctl_kube_node_kubeadm_failure": ufcctl_kube_node_kubeadm_failure,
            "ufcctl_kube_node_join_retryable": ufcctl_kube_node_join_retryable,
        }
