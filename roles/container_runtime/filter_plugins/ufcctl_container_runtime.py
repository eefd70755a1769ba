"""Jinja filters over ufcctl/domain/runtime/containerd.py: config.toml and hosts.toml, checked."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    from ufcctl.domain.runtime import containerd
except ImportError:  # plain ansible-playbook from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from ufcctl.domain.runtime import containerd


def ufcctl_containerd_files(v: Mapping[str, Any]) -> dict[str, Any]:
    """Every file of the role as {dest, content} plus the problems found (empty: write them)."""
    runtimes = [containerd.Runtime("runc")]
    if v["ascend"]:
        runtimes.append(containerd.Runtime("ascend", f"{v['ascend_path']}/ascend-docker-runtime"))
    settings = containerd.ContainerdSettings(
        sandbox_image=v["sandbox_image"], max_concurrent_downloads=int(v["max_concurrent_downloads"]),
        snapshotter=v["snapshotter"], cni_bin_dir=v["cni_bin_dir"], cni_conf_dir=v["cni_conf_dir"],
        runtimes=tuple(runtimes), default_runtime="ascend" if v["ascend"] else "runc")
    mirrors = v["mirrors"] or {}
    problems = containerd.mirror_problems(mirrors)
    files = {"/etc/containerd/config.toml": containerd.config_toml(settings)}
    if not problems:
        for registry, entries in sorted(mirrors.items()):
            files[f"{settings.certs_dir}/{registry}/hosts.toml"] = containerd.hosts_toml(registry, entries)
    problems += containerd.problems(files)
    owned = {"owner": "root", "group": "root"}
    directories = [{"path": d, **owned, "mode": "0755"} for d in sorted({str(Path(f).parent) for f in files})]
    return {"files": [{"dest": k, "content": c, **owned, "mode": "0644"} for k, c in files.items()],
            "directories": directories, "problems": problems}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_containerd_files": ufcctl_containerd_files}
