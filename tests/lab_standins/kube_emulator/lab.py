"""What tests read and set on lab nodes running the LAB KUBE EMULATOR (through podman exec)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

JOINS = "/var/lib/ufc-kube-emulator/joins.jsonl"
FAULTS = "/etc/ufc-kube-emulator/faults.json"
CONF = "/etc/ufc-kube-emulator/apiserver.json"
UPGRADES = "/var/lib/ufc-kube-emulator/upgrades.jsonl"
ROOT = Path(__file__).resolve().parents[3]  # tests/lab_standins/kube_emulator/lab.py -> checkout


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"), **(env or {})}


def _exec(container: str, script: str, env: Mapping[str, str] | None = None,
          check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["podman", "exec", container, "sh", "-c", script], env=_env(env),
                          capture_output=True, text=True, timeout=120, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"podman exec {container}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def joins(container: str, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every successful join the emulator recorded on the node, oldest first."""
    proc = _exec(container, f"cat {JOINS} 2>/dev/null || true", env)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def upgrades(container: str, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every `kubeadm upgrade apply|node` the emulator recorded on the node, oldest first."""
    proc = _exec(container, f"cat {UPGRADES} 2>/dev/null || true", env)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def write_faults(container: str, faults: Mapping[str, Any] | None,
                 env: Mapping[str, str] | None = None) -> None:
    """{"join": "fail"|"hang"} for the node's next kubeadm join; None removes every fault."""
    if faults is None:
        _exec(container, f"rm -f {FAULTS}", env)
        return
    text = json.dumps(dict(faults)).replace("'", "")
    _exec(container, f"mkdir -p {Path(FAULTS).parent} && printf '%s' '{text}' > {FAULTS}", env)


def registered_nodes(control_plane: str, env: Mapping[str, str] | None = None) -> dict[str, int]:
    """Node name -> how many times it registered, cluster-wide (etcd core, read on a control plane
    with the apiserver's etcd client certificate the emulator's apiserver uses)."""
    script = (
        "python3 -c \"import json,os,subprocess,base64; c=json.load(open('" + CONF + "'))['etcd'];"
        "o=subprocess.run(['etcdctl','--endpoints='+','.join(c['endpoints']),'--cacert='+c['caFile'],"
        "'--cert='+c['certFile'],'--key='+c['keyFile'],'get','/ufc-kube-emulator/nodes/','--prefix','-w',"
        "'json'],capture_output=True,text=True,check=True,env={**os.environ,'ETCDCTL_API':'3'}).stdout;"
        "print(json.dumps({base64.b64decode(k['key']).decode().rsplit('/',1)[1]:"
        "json.loads(base64.b64decode(k['value']))['count'] for k in json.loads(o).get('kvs',[])}))\""
    )
    return {str(k): int(v) for k, v in json.loads(_exec(control_plane, script, env).stdout).items()}
