"""A worker's join: labels it may register with, a JoinConfiguration the strict schema accepts, the token's
freshness, and the CA hash kubeadm pins (the same as openssl's)."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ufcctl.domain.controlplane import join, kubeadm, schema

TOKEN = "abcdef.0123456789abcdef"


def test_kubelet_may_not_set_kubernetes_io_labels_itself() -> None:
    labels = {"node-role.kubernetes.io/worker": "worker", "accelerator-type": "module-910b-8",
              "node.kubernetes.io/exclude-from-external-load-balancers": "true", "k8s.io/x": "y",
              "topology.kubernetes.io/zone": "z1", "huawei.com/npu": "8"}
    assert join.registration_labels(labels) == {
        "accelerator-type": "module-910b-8",
        "node.kubernetes.io/exclude-from-external-load-balancers": "true", "huawei.com/npu": "8"}


def test_the_join_configuration_passes_the_strict_schema() -> None:
    doc = join.join_configuration(
        name="npu00001", endpoint="10.0.0.250:8443", token=TOKEN, ca_hash="sha256:" + "a" * 64,
        cri_socket="unix:///run/containerd/containerd.sock", node_ip="10.0.1.1",
        labels={"accelerator-type": "module-910b-8", "host-arch": "huawei-x86"},
        taints=[{"key": "ufcctl.io/npu-health-pending", "value": "true", "effect": "NoSchedule"}])
    assert schema.documents_errors([doc]) == []
    assert "controlPlane" not in doc and doc["discovery"]["tlsBootstrapToken"] == TOKEN
    assert doc["nodeRegistration"]["kubeletExtraArgs"] == [
        {"name": "node-labels", "value": "accelerator-type=module-910b-8,host-arch=huawei-x86"},
        {"name": "node-ip", "value": "10.0.1.1"}]
    doc["discovery"]["bootstrapToken"]["unknownField"] = 1
    assert schema.documents_errors([doc])  # the strict schema refuses a field kubeadm does not know


def _record(token: str, expires: datetime) -> str:
    return json.dumps({"token": token, "expires": expires.isoformat()})


def test_a_token_is_fresh_only_with_more_than_the_margin_left() -> None:
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    assert join.token_fresh(_record(TOKEN, now + timedelta(hours=3)), now, 7200)
    assert not join.token_fresh(_record(TOKEN, now + timedelta(hours=1)), now, 7200)
    assert not join.token_fresh(_record("not-a-token", now + timedelta(hours=3)), now, 7200)
    assert not join.token_fresh("", now, 7200) and not join.token_fresh("{", now, 7200)
    assert not join.token_fresh(json.dumps({"token": TOKEN, "expires": "soon"}), now, 7200)


def test_secrets_are_masked_in_kubeadm_failures() -> None:
    result = {"cmd": ["kubeadm", "join", "--token", TOKEN], "rc": 1, "stdout": f"bad token {TOKEN}",
              "stderr": ""}
    message = kubeadm.failure_message(result, [kubeadm.token_secret(TOKEN)])
    assert "0123456789abcdef" not in message and "abcdef.<masked>" in message and "(rc 1)" in message


# kubeadm 1.34's own output on the lab at load 33 (the VIP answered the kube-proxy ConfigMap read too late)
SLOW_API = """[preflight] Running pre-flight checks
[preflight] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...
error: error execution phase preflight: unable to fetch the kubeadm-config ConfigMap: failed to get \
component \
configs: could not download the kube-proxy configuration from ConfigMap "kube-proxy": Get \
"https://10.89.64.250:8443/api/v1/namespaces/kube-system/configmaps/kube-proxy?timeout=10s": net/http: \
request canceled (Client.Timeout exceeded while awaiting headers)"""
PORT_IN_USE = """[preflight] Running pre-flight checks
error: error execution phase preflight: [preflight] Some fatal errors occurred:
\t[ERROR Port-10250]: Port 10250 is in use"""
LATER_PHASE = """[kubelet-start] Starting the kubelet
error: error execution phase kubelet-start: timed out waiting for the condition: context deadline exceeded"""


@pytest.mark.parametrize(("rc", "stderr", "again"), [
    (1, SLOW_API, True),
    (1, SLOW_API.replace("request canceled (Client.Timeout exceeded while awaiting headers)",
                         "dial tcp 10.89.64.250:8443: connect: connection refused"), True),
    (1, PORT_IN_USE, False),     # a preflight check failed: the node must be fixed, not asked again
    (1, LATER_PHASE, False),     # kubelet-start wrote files: a rerun would meet them
    (0, "", False), (None, "", False),
])
def test_a_join_runs_again_only_when_preflight_met_a_slow_or_absent_api(rc: int | None, stderr: str,
                                                                       again: bool) -> None:
    assert kubeadm.join_retryable({"rc": rc, "stdout": "", "stderr": stderr}) is again


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
@pytest.mark.parametrize("algorithm", [["-newkey", "rsa:2048"], ["-newkey", "ec", "-pkeyopt",
                                                                  "ec_paramgen_curve:prime256v1"]])
def test_the_ca_hash_is_openssls(tmp_path: Path, algorithm: list[str]) -> None:
    cert = tmp_path / "ca.crt"
    subprocess.run(["openssl", "req", "-x509", *algorithm, "-nodes", "-days", "1", "-subj", "/CN=kubernetes",
                    "-keyout", str(tmp_path / "ca.key"), "-out", str(cert)], check=True, capture_output=True)
    pubkey = subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-pubkey"], check=True,
                            capture_output=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pubkey, check=True,
                         capture_output=True).stdout
    import hashlib

    assert kubeadm.ca_hash(cert.read_text()) == "sha256:" + hashlib.sha256(der).hexdigest()
