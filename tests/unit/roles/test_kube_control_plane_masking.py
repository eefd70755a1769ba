"""What a failed no_log kubeadm task may print: kubeadm's output with the token's secret half and the
certificate key masked wherever they appear (output and command line)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "roles" / "kube_control_plane" / "filter_plugins" / "ufcctl_kube_control_plane.py"
filters = load_file(PLUGIN, "ufcctl_kcp_filters")

TOKEN = "abcdef.0123456789abcdef"
CERT_KEY = "f" * 64
CONFIG = "/etc/kubernetes/ufcctl/kubeadm.yaml"


def test_the_failure_message_masks_the_token_secret_and_the_certificate_key() -> None:
    result = {
        "rc": 1,
        "cmd": ["kubeadm", "init", "--config", CONFIG, "--certificate-key", CERT_KEY],
        "stdout": f"kubeadm join 10.0.0.10:6443 --token {TOKEN} \\\n"
                  f"  --control-plane --certificate-key {CERT_KEY}",
        "stderr": "error execution phase upload-certs: timed out",
    }
    message = filters.ufcctl_kcp_kubeadm_failure(result, [TOKEN.split(".")[1], CERT_KEY])
    assert TOKEN.split(".")[1] not in message and CERT_KEY not in message
    assert "--token abcdef.<masked>" in message and "--certificate-key <masked>" in message
    assert message.startswith("kubeadm init --config /etc/kubernetes/ufcctl/kubeadm.yaml")
    assert "(rc 1)" in message and "error execution phase upload-certs: timed out" in message


def test_only_the_last_lines_are_kept() -> None:
    result = {"rc": 2, "cmd": ["kubeadm", "join"], "stdout": "\n".join(f"line {i}" for i in range(100))}
    message = filters.ufcctl_kcp_kubeadm_failure(result, [])
    assert "line 99" in message and "line 69" not in message


def test_the_role_masks_the_secret_half_of_the_token_and_the_certificate_key() -> None:
    role_vars = (ROOT / "roles" / "kube_control_plane" / "vars" / "main.yml").read_text()
    assert (
        "__kube_control_plane_secrets: \"{{ [__kube_control_plane_token.split('.') | last, "
        "__kube_control_plane_certificate_key] }}\""
    ) in role_vars
