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
    # the host's front on loopback, never the upstream itself (front_conf says why)
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


def _proxy_lines(url: str, indent: str) -> list[str]:
    """proxy_pass to `url`, with TLS verified against the system CAs for https."""
    lines = [f"proxy_pass {url.rstrip('/')};"]
    if url.startswith("https://"):
        host = urlsplit(url).hostname or ""
        lines += ["proxy_ssl_verify on;", f"proxy_ssl_trusted_certificate {CA_BUNDLE};",
                  "proxy_ssl_server_name on;", f"proxy_ssl_name {host};"]
    return [indent + line for line in lines]


def front_conf(upstreams: list[Upstream], parents: Mapping[str, str], cache_dir: str, max_gib: int) -> str:
    """nginx.conf of the host's front: one server on 127.0.0.1:<front_port> per instance, the
    instance's proxy.remoteurl.

    Why a front (issue 31): docker-registry 2.8's proxy fetches a missed blob twice from its remote
    (one stream to the client, one into its storage; N concurrent misses: N+1), and exits at start
    when its one remote does not answer. The front caches blob GETs for FRONT_INACTIVE with
    proxy_cache_lock, so the instance's fetches of one blob collapse into one fetch from the remote;
    manifests and tags pass uncached (a tag always asks the remote). `parents[name]`, when set (a ToR
    cache: its super pod cache's URL for this upstream), is asked first, and the upstream itself when
    the parent fails to answer (connection refused, timeout, 5xx). The front always answers, so the
    instance starts whether or not its remote is up.
    """
    lines = [
        "# Generated by ufcctl (ufcctl/domain/images/cache_config.py): the registry caches' front.",
        f"user {FRONT_USER};",
        "worker_processes 2;",
        "pid /run/ufcctl-registry-front.pid;",
        "error_log stderr warn;",
        "events { worker_connections 4096; }",
        "http {",
        "  access_log off;",
        "  client_max_body_size 0;",
        "  proxy_connect_timeout 5s;",
        "  proxy_read_timeout 300s;",
        "  proxy_intercept_errors on;",
    ]
    for u in upstreams:
        zone = f"ufc_{u.name.replace('-', '_')}"
        lines += [f"  proxy_cache_path {cache_dir}/{u.name} levels=1:2 keys_zone={zone}:16m "
                  f"max_size={int(max_gib)}g inactive={FRONT_INACTIVE} use_temp_path=off;"]
    for u in upstreams:
        zone = f"ufc_{u.name.replace('-', '_')}"
        # GET and HEAD share the entry: the instance's HEAD (its Stat) on a miss fills it with one GET
        cache = [f"proxy_cache {zone};", "proxy_cache_key $uri;",
                 "proxy_cache_valid 200 " + FRONT_INACTIVE + ";", "proxy_cache_lock on;",
                 f"proxy_cache_lock_timeout {FRONT_LOCK};", f"proxy_cache_lock_age {FRONT_LOCK};",
                 # blobs are content-addressed: an upstream's no-cache headers do not apply
                 "proxy_ignore_headers Cache-Control Expires Set-Cookie Vary X-Accel-Expires;"]
        parent = parents.get(u.name) or ""
        first = parent or u.url
        fallback = ["error_page 500 502 503 504 = @{}_upstream{};"] if parent else []
        blob = r'"^/v2/.+/blobs/sha256:[0-9a-f]{64}$"'
        lines += ["", f"  # instance {u.name}: " + (f"parent {parent}, then the upstream {u.url}" if parent
                                                     else f"the upstream {u.url}"),
                  "  server {", f"    listen 127.0.0.1:{u.front};",
                  f"    location ~ {blob} {{"]
        lines += ["      " + c for c in cache] + _proxy_lines(first, "      ")
        lines += ["      " + f.format(zone, "_blob") for f in fallback] + ["    }", "    location / {"]
        lines += _proxy_lines(first, "      ") + ["      " + f.format(zone, "") for f in fallback] + ["    }"]
        if parent:
            lines += [f"    location @{zone}_upstream_blob {{"] + ["      " + c for c in cache] \
                + _proxy_lines(u.url, "      ") + ["    }", f"    location @{zone}_upstream {{"] \
                + _proxy_lines(u.url, "      ") + ["    }"]
        lines += ["  }"]
    lines += ["}"]
    return "\n".join(lines) + "\n"
