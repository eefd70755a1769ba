"""One docker-registry (distribution 2.8) pull-through cache instance: its config.yml as a document.

docker-registry 2.8 has no configuration check: `serve` is the only command that reads a whole
config without side effects on storage, and `garbage-collect --dry-run` parses it but then walks
the storage (every repository of a full cache; an error on an empty one). So the document is built
here from data, `problems` checks the keys the proxy needs, and the role writes it with
yaml.safe_dump (valid YAML by construction); the unit's /debug/health answers after a start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ufcctl.domain.images.mirrors import Upstream

CONFIG_DIR = "/etc/ufcctl/registry-cache"
UNIT = "ufcctl-registry-cache@{name}.service"
# The host's front (nginx, one process for every instance): what each instance's proxy.remoteurl is.
FRONT_CONF = f"{CONFIG_DIR}/front.conf"
FRONT_UNIT = "ufcctl-registry-front.service"
FRONT_USER = "www-data"  # Debian's nginx workers
# A front's cached blob is dropped this long after its last read: long enough for the instance's own
# second fetch of a blob (docker-registry 2.8 fetches a missed blob twice), short enough that the
# host does not keep a second copy of its cache.
FRONT_INACTIVE = "10m"
# How long a second fetch of a blob waits for the first to fill the front (a multi-GiB layer).
FRONT_LOCK = "1h"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"  # Debian's system CAs (the site's cache certificate)


@dataclass(frozen=True)
class CacheSettings:
    address: str  # the host's address: http.addr and http.debug.addr listen there
    storage_dir: str  # one subdirectory per instance
    scheme: str = "https"
    tls_cert: str = ""  # paths on the cache host (https)
    tls_key: str = ""
    log_level: str = "info"


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def instance_config(upstream: Upstream, settings: CacheSettings, username: str = "",
                    password: str = "") -> dict[str, Any]:
    """config.yml of the instance mirroring `upstream` (distribution's configuration reference)."""
    http: dict[str, Any] = {
        "addr": f"{_host(settings.address)}:{upstream.port}",
        "headers": {"X-Content-Type-Options": ["nosniff"]},
        # Prometheus metrics and /debug/health, plain HTTP on its own port (vmagent's job registry-cache)
        "debug": {"addr": f"{_host(settings.address)}:{upstream.metrics_port}",
                  "prometheus": {"enabled": True, "path": "/metrics"}},
    }
    if settings.scheme == "https":
        http["tls"] = {"certificate": settings.tls_cert, "key": settings.tls_key}
    # the host's front on loopback, never the upstream itself (front_values says why)
    proxy: dict[str, Any] = {"remoteurl": f"http://127.0.0.1:{upstream.front}"}
    if username:
        proxy.update(username=username, password=password)
    return {
        "version": 0.1,
        "log": {"level": settings.log_level,
                "fields": {"service": "registry-cache", "upstream": upstream.name}},
        "storage": {
            "filesystem": {"rootdirectory": f"{settings.storage_dir}/{upstream.name}"},
            # the proxy removes blobs past their TTL only when deletes are enabled
            "delete": {"enabled": True},
            "cache": {"blobdescriptor": "inmemory"},
            "maintenance": {"uploadpurging": {"enabled": True, "age": "168h", "interval": "24h",
                                              "dryrun": False}},
        },
        "http": http,
        "health": {"storagedriver": {"enabled": True, "interval": "10s", "threshold": 3}},
        "proxy": proxy,
    }


REQUIRED = (
    ("version",), ("storage", "filesystem", "rootdirectory"), ("storage", "delete", "enabled"),
    ("http", "addr"), ("http", "debug", "addr"), ("http", "debug", "prometheus", "enabled"),
    ("health", "storagedriver", "enabled"), ("proxy", "remoteurl"),
)


def _get(doc: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = doc
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def problems(name: str, doc: Mapping[str, Any]) -> list[str]:
    """What the instance `name` would refuse or do wrong with `doc` (empty: fine)."""
    found = [f"registry cache {name}: config.yml lacks {'.'.join(path)}" for path in REQUIRED
             if _get(doc, path) in (None, "")]
    tls = _get(doc, ("http", "tls"))
    if tls is not None and not (tls.get("certificate") and tls.get("key")):
        found.append(f"registry cache {name}: https needs registry_cache_tls_cert_src and "
                     "registry_cache_tls_key_src (or registry_cache_scheme: http with "
                     "registry_cache_insecure: true)")
    if _get(doc, ("proxy", "username")) and not _get(doc, ("proxy", "password")):
        found.append(f"registry cache {name}: upstream username without password")
    return found


def _proxy(url: str) -> dict[str, str]:
    """Where a location proxies to: `url`, with TLS verified against the system CAs for https
    (`tls_name`: the name checked, empty for http)."""
    host = (urlsplit(url).hostname or "") if url.startswith("https://") else ""
    return {"url": url.rstrip("/"), "tls_name": host}


def front_values(upstreams: list[Upstream], parents: Mapping[str, str], cache_dir: str,
                 max_gib: int) -> dict[str, Any]:
    """What roles/registry_cache/templates/front.conf.j2 reads: the host's front, one server on
    127.0.0.1:<front_port> per instance, the instance's proxy.remoteurl.

    Why a front (issue 31): docker-registry 2.8's proxy fetches a missed blob twice from its remote
    (one stream to the client, one into its storage; N concurrent misses: N+1), and exits at start
    when its one remote does not answer. The front caches blob GETs for FRONT_INACTIVE with
    proxy_cache_lock, so the instance's fetches of one blob collapse into one fetch from the remote;
    manifests and tags pass uncached (a tag always asks the remote). `parents[name]`, when set (a ToR
    cache: its super pod cache's URL for this upstream), is asked first, and the upstream itself when
    the parent fails to answer (connection refused, timeout, 5xx). The front always answers, so the
    instance starts whether or not its remote is up.
    """
    instances = []
    for u in upstreams:
        parent = parents.get(u.name) or ""
        instances.append({
            "name": u.name,
            "zone": f"ufc_{u.name.replace('-', '_')}",
            "front": u.front,
            "cache_path": f"{cache_dir}/{u.name}",
            "parent": parent,
            "upstream_url": u.url,
            "first": _proxy(parent or u.url),  # the parent when there is one, else the upstream
            "upstream": _proxy(u.url),  # the fallback when the parent fails to answer
        })
    return {"user": FRONT_USER, "max_gib": int(max_gib), "inactive": FRONT_INACTIVE, "lock": FRONT_LOCK,
            "ca_bundle": CA_BUNDLE, "instances": instances}
