"""containerd's configuration for Kubernetes nodes (config version 2, containerd 1.6/1.7) and registry
mirrors as `certs.d/<registry>/hosts.toml` (docs/reference/nodes-observability-images.md §1).

Pure: settings in, the values `roles/container_runtime/templates/{config,hosts}.toml.j2` read out
(strings quoted there by `toml_string`, the role's filter `ufcctl_toml_string`). The rendered files
are parsed as TOML before any is written (ufc_files `format: toml`), so a role never writes a file
containerd would refuse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RUNC_V2 = "io.containerd.runc.v2"
# A registry host as containerd names its certs.d directory: host[:port], no scheme, no path.
REGISTRY = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$")
CAPABILITIES = ("pull", "resolve", "push")
# Docker Hub's registry API lives on another host than its name (containerd's hosts.md).
UPSTREAM = {"docker.io": "https://registry-1.docker.io"}


@dataclass(frozen=True)
class Runtime:
    name: str
    binary: str | None = None  # options.BinaryName (a runc-compatible wrapper), None: runc itself


@dataclass(frozen=True)
class ContainerdSettings:
    sandbox_image: str
    max_concurrent_downloads: int = 10
    snapshotter: str = "overlayfs"
    # where Calico's install-cni puts calico, calico-ipam and the standard plugins; containerd 1.6 searches
    # only this one directory (docs/reference/components.md §9.1; issue 44, D9)
    cni_bin_dir: str = "/opt/cni/bin"
    cni_conf_dir: str = "/etc/cni/net.d"
    certs_dir: str = "/etc/containerd/certs.d"
    root: str = "/var/lib/containerd"
    state: str = "/run/containerd"
    socket: str = "/run/containerd/containerd.sock"
    runtimes: tuple[Runtime, ...] = field(default_factory=lambda: (Runtime("runc"),))
    default_runtime: str = "runc"


def toml_string(value: Any) -> str:
    """A TOML basic string (JSON's escapes are valid TOML for the characters we write)."""
    return json.dumps(str(value), ensure_ascii=False)


def config_values(s: ContainerdSettings) -> dict[str, Any]:
    """What config.toml.j2 reads: the settings, each runtime with its type and optional BinaryName
    (a runc-compatible wrapper; every runtime gets SystemdCgroup, the kubelet's cgroupDriver)."""
    return {
        "root": s.root, "state": s.state, "socket": s.socket,
        "sandbox_image": s.sandbox_image, "max_concurrent_downloads": int(s.max_concurrent_downloads),
        "snapshotter": s.snapshotter, "default_runtime": s.default_runtime,
        "runtimes": [{"name": r.name, "type": RUNC_V2, "binary": r.binary or ""} for r in s.runtimes],
        "cni_bin_dir": s.cni_bin_dir, "cni_conf_dir": s.cni_conf_dir, "certs_dir": s.certs_dir,
    }


def upstream(registry: str) -> str:
    return UPSTREAM.get(registry, f"https://{registry}")


def hosts_values(registry: str, mirrors: Sequence[Mapping[str, Any]],
                 server: str | None = None) -> dict[str, Any]:
    """What hosts.toml.j2 reads for one registry: its mirrors in order (tried first to last), then the
    upstream `server` as the fallback containerd uses when every mirror failed: `server` when given (the
    upstream's own URL, e.g. registry_cache_upstreams' `url`: an upstream speaking plain http must be
    named http://, or the last fallback fails), else https://<registry>."""
    fallback = server.rstrip("/") if server else upstream(registry)
    entries = [{"url": str(m["url"]),
                "capabilities": [str(c) for c in m.get("capabilities") or ["pull", "resolve"]],
                "skip_verify": bool(m.get("skip_verify"))} for m in mirrors]
    if fallback.startswith("http://"):
        # containerd 1.6.20 (Debian 12's) still asks https:// of a `server` named http:// when no [host]
        # entry names it (measured in the lab: "server gave HTTP response to HTTPS client"); as the last
        # [host] entry it is asked over http
        entries.append({"url": fallback, "capabilities": ["pull", "resolve"], "skip_verify": False})
    return {"server": fallback, "mirrors": entries}


def mirror_problems(mirrors: Mapping[str, Any]) -> list[str]:
    """What is wrong with a {registry: [{url, capabilities, skip_verify}]} mapping (empty: fine)."""
    problems: list[str] = []
    if not isinstance(mirrors, Mapping):
        return ["registry mirrors must be a mapping of registry -> list of mirrors"]
    for registry, entries in mirrors.items():
        if not REGISTRY.match(str(registry)):
            problems.append(f"registry {registry!r}: expected host[:port], e.g. docker.io or reg.local:5000")
        if not isinstance(entries, Sequence) or isinstance(entries, str) or not entries:
            problems.append(f"registry {registry}: a non-empty list of mirrors, each {{url: ...}}")
            continue
        for entry in entries:
            url = entry.get("url") if isinstance(entry, Mapping) else None
            if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
                problems.append(f"registry {registry}: mirror {entry!r} needs url: http(s)://host[:port]")
                continue
            bad = [c for c in entry.get("capabilities") or [] if c not in CAPABILITIES]
            if bad:
                problems.append(f"registry {registry}: mirror {url}: unknown capabilities {bad}; "
                                f"known: {', '.join(CAPABILITIES)}")
    return problems
