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

from ufcctl.domain.images.mirrors import Upstream

CONFIG_DIR = "/etc/ufcctl/registry-cache"
UNIT = "ufcctl-registry-cache@{name}.service"


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
    proxy: dict[str, Any] = {"remoteurl": upstream.url}
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
