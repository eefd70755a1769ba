"""Registry caches from the inventory and each node's containerd mirror list.

Cache hosts are the `registry_cache` group. Each serves failure domains of one tier: `tor` (ToR ids,
`npu_tor_id`) or `super_pod` (super pod ids, `npu_super_pod_id`); by default its own. A node's
mirrors for a registry are its ToR's caches, then its super pod's, in inventory order; after them
containerd falls back to the upstream itself (`server` in hosts.toml, domain/runtime/containerd.py).
Each cache runs one docker-registry instance per upstream: distribution 2.8's proxy mirrors exactly
one remote (docs/reference/nodes-observability-images.md).

Pure: inventory data in, plain dicts and problems out. `CacheIndex` is built once per inventory so
a 16,000-node fleet costs one dictionary lookup per node and tier.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.inventory.model import REGISTRY_CACHE
from ufcctl.domain.inventory.values import literal
from ufcctl.domain.urls import mask

TIERS = {"tor": "npu_tor_id", "super_pod": "npu_super_pod_id"}  # tier -> the node var it matches
DEFAULT_TIER = "tor"
SCHEMES = ("https", "http")
# The cache index as one var (index_table), what roles/container_runtime reads instead of every
# cache host's vars; ufcctl's node phase passes it as an extra var.
INDEX_VAR = "registry_cache_index"
NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")  # a systemd instance and a file name
REGISTRY = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$")
URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")


@dataclass(frozen=True)
class Upstream:
    name: str  # instance name: ufcctl-registry-cache@<name>.service
    registry: str  # as images name it: docker.io, 10.1.2.3:5000
    url: str  # proxy.remoteurl
    port: int  # the cache instance's listen port (the same on every cache host)
    metrics_port: int  # its http.debug.addr port: /metrics (Prometheus) and /debug/health
    front_port: int = 0  # the cache host's front for this upstream on 127.0.0.1 (0: port + FRONT_PORT_OFFSET)

    @property
    def front(self) -> int:
        """Where the instance's proxy.remoteurl points: the host's nginx front (cache_config.py)."""
        return self.front_port or self.port + FRONT_PORT_OFFSET


# An instance's metrics port when the upstream names none: its port plus this (5000 -> 15000), so
# consecutive instance ports never collide with each other's metrics ports.
METRICS_PORT_OFFSET = 10000
# Its front port (127.0.0.1 only) when the upstream names none: its port plus this (5000 -> 25000).
FRONT_PORT_OFFSET = 20000


@dataclass(frozen=True)
class Cache:
    host: str
    address: str  # where nodes reach it (registry_cache_address, ansible_host, the name)
    tier: str
    serves: tuple[str, ...]


@dataclass(frozen=True)
class CacheIndex:
    """Caches by (tier, domain id), each list in inventory order."""

    by_domain: Mapping[tuple[str, str], tuple[Cache, ...]] = field(default_factory=dict)


def url_host(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def parse_upstreams(raw: Any) -> tuple[list[Upstream], list[str]]:
    """`registry_cache_upstreams` as Upstreams, plus what is wrong with it (empty: fine)."""
    if raw in (None, ""):
        return [], []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return [], ["registry_cache_upstreams: expected a list of {name, registry, url, port}"]
    found: list[Upstream] = []
    problems: list[str] = []
    ports: dict[int, str] = {}
    names: set[str] = set()
    registries: set[str] = set()
    for i, entry in enumerate(raw):
        label = f"registry_cache_upstreams[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{label}: expected a mapping {{name, registry, url, port}}, got {entry!r}")
            continue
        name, registry, url = (str(entry.get(k) or "") for k in ("name", "registry", "url"))
        label = f"registry_cache_upstreams {name or i}"
        bad = []
        if not NAME.match(name):
            bad.append(f"name {name!r} must be lowercase letters, digits and '-' (a systemd instance name)")
        elif name in names:
            bad.append(f"name {name!r} is used twice; give each upstream its own")
        if not REGISTRY.match(registry):
            bad.append(f"registry {registry!r} must be host[:port] as images name it, e.g. docker.io")
        elif registry in registries:
            bad.append(f"registry {registry} has two upstreams; a registry is mirrored by one instance")
        if not URL.match(url):
            bad.append(f"url {mask(url)!r} must be http(s)://host[:port]")
        port = _port(entry.get("port"))
        metrics, front = (_port(entry.get(key)) if entry.get(key) not in (None, "") else
                          (port + offset if port and port + offset <= 65535 else None)
                          for key, offset in (("metrics_port", METRICS_PORT_OFFSET),
                                              ("front_port", FRONT_PORT_OFFSET)))
        for key, value in (("port", port), ("metrics_port", metrics), ("front_port", front)):
            if value is None:
                bad.append(f"{key} {entry.get(key)!r} must be a TCP port 1-65535 (port: the instance's, "
                           f"metrics_port: its /metrics, default port + {METRICS_PORT_OFFSET}; front_port: "
                           f"its front on 127.0.0.1, default port + {FRONT_PORT_OFFSET})")
            elif value in ports:
                bad.append(f"{key} {value} is also used by upstream {ports[value]}; every instance needs "
                           "its own port and metrics_port")
        if port is not None and len({port, metrics, front}) < 3:
            bad.append(f"port, metrics_port and front_port must differ ({port}, {metrics}, {front})")
        if bad:
            problems += [f"{label}: {b}" for b in bad]
            continue
        assert port is not None and metrics is not None and front is not None
        ports[port] = ports[metrics] = ports[front] = name
        names.add(name)
        registries.add(registry)
        found.append(Upstream(name, registry, url.rstrip("/"), port, metrics, front))
    return found, problems


def _port(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        return None
    return int(value) if 1 <= int(value) <= 65535 else None


def _serves(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, Sequence):
        return [str(v) for v in value]
    return None


def parse_caches(groups: Mapping[str, Iterable[str]],
                 hostvars: Mapping[str, Mapping[str, Any]]) -> tuple[list[Cache], list[str]]:
    """The cache hosts of the inventory, plus what is wrong with them (empty: fine).

    Two caches serving the same domain are allowed: nodes there list both, in inventory order.
    """
    caches: list[Cache] = []
    problems: list[str] = []
    for host in groups.get(REGISTRY_CACHE, ()):
        hv = hostvars[host]
        tier = str(literal(hv.get("registry_cache_tier")) or DEFAULT_TIER)
        if tier not in TIERS:
            problems.append(f"host {host}: registry_cache_tier {tier!r} is unknown; "
                            f"use one of {', '.join(TIERS)}")
            continue
        raw = literal(hv.get("registry_cache_serves"))
        serves = _serves(raw)
        if raw is not None and serves is None:
            problems.append(f"host {host}: registry_cache_serves must be a list of {TIERS[tier]} values")
            continue
        if serves is None:
            own = literal(hv.get(TIERS[tier]))
            serves = [] if own in (None, "") else [str(own)]
        if not serves:
            problems.append(f"host {host}: registry cache (tier {tier}) serves nothing; set "
                            f"registry_cache_serves or the host's own {TIERS[tier]}")
            continue
        address = str(literal(hv.get("registry_cache_address")) or literal(hv.get("ansible_host")) or host)
        caches.append(Cache(host, address, tier, tuple(dict.fromkeys(serves))))
    return caches, problems


def scheme_problems(scheme: Any, insecure: Any) -> list[str]:
    """`registry_cache_scheme` is https, or http only with `registry_cache_insecure: true` (a lab)."""
    if scheme not in SCHEMES:
        return [f"registry_cache_scheme {scheme!r}: use https (or http with registry_cache_insecure: true)"]
    if scheme == "http" and insecure is not True:
        return ["registry_cache_scheme http: plain HTTP serves images unauthenticated and unverified; "
                "set registry_cache_insecure: true only in a lab, else use https"]
    return []


def index_caches(caches: Iterable[Cache]) -> CacheIndex:
    by_domain: dict[tuple[str, str], list[Cache]] = {}
    for cache in caches:
        for domain in cache.serves:
            by_domain.setdefault((cache.tier, domain), []).append(cache)
    return CacheIndex({k: tuple(v) for k, v in by_domain.items()})


def index_table(index: CacheIndex) -> dict[str, list[str]]:
    """The index as plain data for an inventory var (`registry_cache_index`): {"tier/id": [address]}.

    ufcctl computes it once for a whole fleet and hands it to a run, so the run's hosts need neither
    the cache hosts in their inventory nor one hostvars lookup per cache host and node.
    """
    return {f"{tier}/{domain}": [c.address for c in caches]
            for (tier, domain), caches in index.by_domain.items()}


def index_from_table(table: Any) -> tuple[CacheIndex, list[str]]:
    """`registry_cache_index` back as a CacheIndex (caches named by address), plus its problems."""
    if not isinstance(table, Mapping):
        return CacheIndex(), ["registry_cache_index: expected a mapping {\"tier/id\": [address, ...]}"]
    by_domain: dict[tuple[str, str], tuple[Cache, ...]] = {}
    problems = []
    for key, addresses in table.items():
        tier, _, domain = str(key).partition("/")
        if tier not in TIERS or not domain or isinstance(addresses, str) \
                or not isinstance(addresses, Sequence):
            problems.append(f"registry_cache_index: entry {key!r} must be \"tor/<id>\" or \"super_pod/<id>\" "
                            "-> a list of addresses")
            continue
        by_domain[(tier, domain)] = tuple(Cache(str(a), str(a), tier, (domain,)) for a in addresses)
    return CacheIndex(by_domain), problems


def caches_for(node_vars: Mapping[str, Any], index: CacheIndex) -> list[Cache]:
    """The caches a node pulls through, nearest first: its ToR's, then its super pod's (each host once)."""
    found: list[Cache] = []
    seen: set[str] = set()
    for tier, var in TIERS.items():
        value = literal(node_vars.get(var))
        if value in (None, ""):
            continue
        for cache in index.by_domain.get((tier, str(value)), ()):
            if cache.host not in seen:
                seen.add(cache.host)
                found.append(cache)
    return found


def node_mirrors(node_vars: Mapping[str, Any], index: CacheIndex, upstreams: Sequence[Upstream],
                 scheme: str = "https", skip_verify: bool = False) -> dict[str, list[dict[str, Any]]]:
    """`container_runtime_registry_mirrors` of one node: {registry: [{url, capabilities}, ...]}.

    Empty when no cache serves the node: containerd then pulls from the upstream itself.
    """
    caches = caches_for(node_vars, index)
    if not caches:
        return {}
    mirrors: dict[str, list[dict[str, Any]]] = {}
    for upstream in upstreams:
        entries: list[dict[str, Any]] = []
        for cache in caches:
            entry: dict[str, Any] = {"url": f"{scheme}://{url_host(cache.address)}:{upstream.port}",
                                     "capabilities": ["pull", "resolve"]}
            if skip_verify and scheme == "https":
                entry["skip_verify"] = True
            entries.append(entry)
        mirrors[upstream.registry] = entries
    return mirrors


def caches_used(nodes: Iterable[Mapping[str, Any]], index: CacheIndex) -> list[Cache]:
    """Every cache at least one of `nodes` pulls through (each once, first-use order)."""
    seen: dict[str, Cache] = {}
    for node_vars in nodes:
        for cache in caches_for(node_vars, index):
            seen.setdefault(cache.host, cache)
    return list(seen.values())


def expected_upstream_bytes(image_bytes: int, caches: Sequence[Cache]) -> int:
    """Bytes the upstream serves when a pre-heat pulls an image of `image_bytes` through `caches`:
    each cache fills once from the upstream (a cold cache, no cache-to-cache fill), and a node
    with no cache pulls from the upstream itself, which `uncached_nodes` counts separately."""
    return int(image_bytes) * len(caches)


def uncached_nodes(nodes: Mapping[str, Mapping[str, Any]], index: CacheIndex) -> list[str]:
    """Nodes no cache serves: each pulls every image from the upstream itself."""
    return [host for host, node_vars in nodes.items() if not caches_for(node_vars, index)]
