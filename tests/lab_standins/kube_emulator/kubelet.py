#!/usr/bin/python3
"""LAB KUBE EMULATOR of the kubelet: NOT Kubernetes' kubelet. It runs no pod and registers nothing.

Like the real kubelet under kubeadm, it exits while its configuration is missing (systemd restarts it:
the crash loop of a node before its join); once kubeadm join wrote --config and --kubeconfig, it
checks that the config is a KubeletConfiguration and that the container runtime's socket accepts a
connection, writes its status to /run/ufc-kube-emulator/kubelet.json and stays up. Then, as the real
kubelet updates its Node's status, it reports its version (status.nodeInfo.kubeletVersion) to the
apiserver in kubelet.conf with the node's client certificate (PATCH nodes/NAME/status), retrying every
few seconds until the apiserver takes it: after a kubelet upgrade the Node shows the new version only
once the new kubelet runs. Unknown flags are accepted (the real kubelet has hundreds).
"""

from __future__ import annotations

import base64
import json
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

VERSION = "@VERSION@"
STATUS = Path("/run/ufc-kube-emulator/kubelet.json")
REPORT_EVERY = 3.0  # seconds between attempts until the apiserver took the node's status


def report_version(kubeconfig: str, node: str) -> str | None:
    """PATCH the Node's status with this kubelet's version; None when the apiserver took it, else why not."""
    try:
        doc = yaml.safe_load(Path(kubeconfig).read_text()) or {}
        cluster = doc["clusters"][0]["cluster"]
        user = doc["users"][0]["user"]
        context = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        context.load_cert_chain(user["client-certificate"], user["client-key"])
    except (OSError, ValueError, KeyError, IndexError, TypeError, ssl.SSLError) as err:
        return f"{kubeconfig}: no node credentials: {err}"
    body = json.dumps({"status": {"nodeInfo": {"kubeletVersion": VERSION}}}).encode()
    request = urllib.request.Request(f"{cluster['server']}/api/v1/nodes/{node}/status", data=body,
                                     method="PATCH",
                                     headers={"Content-Type": "application/merge-patch+json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10):
            return None
    except (OSError, urllib.error.URLError) as err:
        return f"{cluster['server']}: {err}"


def _flag(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def main(argv: list[str]) -> int:
    if "--version" in argv:
        print(f"Kubernetes {VERSION} (LAB KUBE EMULATOR)")
        return 0
    config, kubeconfig = _flag(argv, "--config"), _flag(argv, "--kubeconfig")
    for flag, path in (("--config", config), ("--kubeconfig", kubeconfig)):
        if not path or not Path(path).is_file():
            print(f"kubelet (LAB KUBE EMULATOR): {flag} {path}: no such file (not joined yet)",
                  file=sys.stderr)
            return 1
    doc = yaml.safe_load(Path(str(config)).read_text()) or {}
    if doc.get("kind") != "KubeletConfiguration":
        print(f"kubelet (LAB KUBE EMULATOR): {config} is not a KubeletConfiguration", file=sys.stderr)
        return 1
    endpoint = (_flag(argv, "--container-runtime-endpoint") or "unix:///run/containerd/containerd.sock")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(5)
        try:
            sock.connect(endpoint.removeprefix("unix://"))
        except OSError as err:
            print(f"kubelet (LAB KUBE EMULATOR): container runtime {endpoint}: {err}", file=sys.stderr)
            return 1
    STATUS.parent.mkdir(parents=True, exist_ok=True)
    STATUS.write_text(json.dumps({"started": time.time(), "config": config, "kubeconfig": kubeconfig,
                                  "cri": endpoint, "args": argv}))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    node = _flag(argv, "--hostname-override") or socket.gethostname()
    last = None
    while (why := report_version(str(kubeconfig), node)) is not None:
        if why != last:
            print(f"kubelet (LAB KUBE EMULATOR): node status not reported yet: {why}", file=sys.stderr)
            last = why
        time.sleep(REPORT_EVERY)
    print(f"kubelet (LAB KUBE EMULATOR): {node} reports kubelet {VERSION}", file=sys.stderr)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
