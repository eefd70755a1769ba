"""containerd's configuration for Kubernetes nodes (config version 2, containerd 1.6/1.7) and registry
mirrors as `certs.d/<registry>/hosts.toml` (docs/reference/nodes-observability-images.md §1).

Pure: settings in, TOML text out; `problems` parses what was rendered (tomllib) and checks it, so
a role never writes a file containerd would refuse.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CRI = 'plugins."io.containerd.grpc.v1.cri"'
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
    cni_bin_dir: str = "/usr/lib/cni"
    cni_conf_dir: str = "/etc/cni/net.d"
    certs_dir: str = "/etc/containerd/certs.d"
    root: str = "/var/lib/containerd"
    state: str = "/run/containerd"
    socket: str = "/run/containerd/containerd.sock"
    runtimes: tuple[Runtime, ...] = field(default_factory=lambda: (Runtime("runc"),))
    default_runtime: str = "runc"


def _q(value: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML for the characters we write)."""
    return json.dumps(value, ensure_ascii=False)


def config_toml(s: ContainerdSettings) -> str:
    lines = [
        "version = 2",
        f"root = {_q(s.root)}",
        f"state = {_q(s.state)}",
        "",
        "[grpc]",
        f"  address = {_q(s.socket)}",
        "",
        f"[{CRI}]",
        f"  sandbox_image = {_q(s.sandbox_image)}",
        f"  max_concurrent_downloads = {int(s.max_concurrent_downloads)}",
        f"  [{CRI}.containerd]",
        f"    snapshotter = {_q(s.snapshotter)}",
        f"    default_runtime_name = {_q(s.default_runtime)}",
    ]
    for runtime in s.runtimes:
        table = f'{CRI}.containerd.runtimes."{runtime.name}"'
        lines += [f"    [{table}]", f"      runtime_type = {_q(RUNC_V2)}", f"      [{table}.options]",
                  "        SystemdCgroup = true"]  # the kubelet's cgroupDriver: systemd (one manager)
        if runtime.binary:
            lines.append(f"        BinaryName = {_q(runtime.binary)}")
    lines += [
        f"  [{CRI}.cni]",
        f"    bin_dir = {_q(s.cni_bin_dir)}",
        f"    conf_dir = {_q(s.cni_conf_dir)}",
        f"  [{CRI}.registry]",
        f"    config_path = {_q(s.certs_dir)}",
    ]
    return "\n".join(lines) + "\n"


def upstream(registry: str) -> str:
    return UPSTREAM.get(registry, f"https://{registry}")


def hosts_toml(registry: str, mirrors: Sequence[Mapping[str, Any]], server: str | None = None) -> str:
    """hosts.toml of one registry: its mirrors in order (tried first to last), then the upstream
    `server` as the fallback containerd uses when every mirror failed: `server` when given (the
    upstream's own URL, e.g. registry_cache_upstreams' `url`: an upstream speaking plain http must be
    named http://, or the last fallback fails), else https://<registry>."""
    lines = [f"server = {_q(server.rstrip('/') if server else upstream(registry))}"]
    for mirror in mirrors:
        caps = list(mirror.get("capabilities") or ["pull", "resolve"])
        lines += ["", f"[host.{_q(str(mirror['url']))}]",
                  f"  capabilities = [{', '.join(_q(c) for c in caps)}]"]
        if mirror.get("skip_verify"):
            lines.append("  skip_verify = true")
    return "\n".join(lines) + "\n"


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


def problems(rendered: Mapping[str, str]) -> list[str]:
    """Every rendered file parses as TOML ({file name: text}); empty: all fine."""
    found = []
    for name, text in rendered.items():
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            found.append(f"{name}: not valid TOML: {err}")
    return found
