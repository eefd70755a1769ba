"""Jinja filters over ufcctl/domain/runtime/containerd.py (the values of templates/config.toml.j2 and
hosts.toml.j2, and the TOML string quoting they use),
ufcctl/domain/runtime/upgrade.py (the node's probe and what it asks for: installs, upgrades, drain) and
ufcctl/domain/images/mirrors.py (a node's registry mirrors from the inventory's registry caches)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ufcctl.domain.images import mirrors as cache_mirrors
from ufcctl.domain.runtime import containerd
from ufcctl.domain.runtime import upgrade as runtime_upgrade

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # unit tests without Ansible's error types
    AnsibleFilterError = ValueError  # type: ignore[assignment,misc]

# The cache index, built once per (hostvars object, cache hosts) and reused while the same process
# templates again. Ansible templates task arguments in a forked worker per host and task, so on a
# plain ansible-playbook run each node still reads every cache host's vars once (seconds per node
# with 2,000 cache hosts); a run given `registry_cache_index` (mirrors.index_table, computed once
# for the fleet) reads none of them.
_INDEX: dict[tuple[int, tuple[str, ...]], tuple[Any, cache_mirrors.CacheIndex, list[str]]] = {}


def ufcctl_containerd_files(v: Mapping[str, Any]) -> dict[str, Any]:
    """Every file of the role as ufc_files entries (templates/config.toml.j2, one hosts.toml.j2 per
    mirrored registry, each parsed as TOML once rendered) plus the problems found (empty: write them)."""
    runtimes = [containerd.Runtime("runc")]
    if v["ascend"]:
        runtimes.append(containerd.Runtime("ascend", f"{v['ascend_path']}/ascend-docker-runtime"))
    settings = containerd.ContainerdSettings(
        sandbox_image=v["sandbox_image"], max_concurrent_downloads=int(v["max_concurrent_downloads"]),
        snapshotter=v["snapshotter"], cni_bin_dir=v["cni_bin_dir"], cni_conf_dir=v["cni_conf_dir"],
        runtimes=tuple(runtimes), default_runtime="ascend" if v["ascend"] else "runc")
    mirrors = v["mirrors"] or {}
    problems = containerd.mirror_problems(mirrors)
    # each mirrored registry's last fallback (hosts.toml `server`) at the scheme its upstream speaks:
    # registry_cache_upstreams' url (an http upstream stays http), else https://<registry>
    servers = {u.registry: u.url for u in cache_mirrors.parse_upstreams(v.get("upstreams"))[0]}
    owned = {"owner": "root", "group": "root", "mode": "0644", "format": "toml"}
    files = [{"dest": "/etc/containerd/config.toml", "template": "config.toml.j2",
              "vars": {"__container_runtime_config": containerd.config_values(settings)}, **owned}]
    if not problems:
        # every upstream gets its hosts.toml, mirrors or not: a node without a cache (a control plane with
        # no ToR, or before the caches exist: they are deployed after the control plane) must still reach
        # an upstream that speaks plain http as http (containerd's default is https://<registry>)
        for registry in sorted({str(r) for r in mirrors} | set(servers)):
            entries = mirrors.get(registry) or []
            values = containerd.hosts_values(registry, entries, servers.get(registry))
            files.append({"dest": f"{settings.certs_dir}/{registry}/hosts.toml", "template": "hosts.toml.j2",
                          "vars": {"__container_runtime_hosts": values}, **owned})
    directories = [{"path": d, "owner": "root", "group": "root", "mode": "0755"}
                   for d in sorted({str(Path(f["dest"]).parent) for f in files})]
    return {"files": files, "directories": directories, "problems": problems}


def _index(groups: Mapping[str, Any],
           hostvars: Mapping[str, Any]) -> tuple[cache_mirrors.CacheIndex, list[str]]:
    hosts = tuple(str(h) for h in groups.get(cache_mirrors.REGISTRY_CACHE) or ())
    key = (id(hostvars), hosts)
    if key not in _INDEX:
        caches, problems = cache_mirrors.parse_caches({cache_mirrors.REGISTRY_CACHE: hosts},
                                                      {h: hostvars[h] for h in hosts})
        _INDEX.clear()  # one inventory per play: keep only the newest
        # the entry holds hostvars itself, so its id cannot be reused by another object meanwhile
        _INDEX[key] = (hostvars, cache_mirrors.index_caches(caches), problems)
    _, index, problems = _INDEX[key]
    return index, problems


def ufcctl_registry_cache_mirrors(groups: Mapping[str, Any], hostvars: Mapping[str, Any],
                                  host: str) -> dict[str, list[dict[str, Any]]]:
    """`container_runtime_registry_mirrors` of `host` from the inventory's registry caches: its ToR's
    caches, then its super pod's, for every registry of `registry_cache_upstreams`; {} without caches.
    The caches come from `registry_cache_index` when the run carries it, else from the group's host vars."""
    node = hostvars[host]
    table = node.get(cache_mirrors.INDEX_VAR)
    if table not in (None, ""):
        index, problems = cache_mirrors.index_from_table(table)
    elif groups.get(cache_mirrors.REGISTRY_CACHE):
        index, problems = _index(groups, hostvars)
    else:
        return {}
    upstreams, upstream_problems = cache_mirrors.parse_upstreams(node.get("registry_cache_upstreams"))
    scheme = str(node.get("registry_cache_scheme") or "https")
    insecure = node.get("registry_cache_insecure")
    insecure = insecure is True or str(insecure).lower() in ("true", "yes", "1")
    problems = problems + upstream_problems + cache_mirrors.scheme_problems(scheme, insecure)
    if problems:
        raise AnsibleFilterError(f"registry caches: {'; '.join(problems)} "
                                 "(or set container_runtime_registry_mirrors by hand)")
    return cache_mirrors.node_mirrors(node, index, upstreams, scheme)


def ufcctl_runtime_plan(v: Mapping[str, Any]) -> dict[str, Any]:
    """What the node's probe asks for (ufcctl/domain/runtime/upgrade.py): packages, versions, drain."""
    return runtime_upgrade.plan(v).as_dict()


def ufcctl_runtime_probe_script(_: Any = None) -> str:
    """The probe's shell script (ufcctl/domain/runtime/upgrade.py PROBE_SCRIPT)."""
    return runtime_upgrade.PROBE_SCRIPT


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_containerd_files": ufcctl_containerd_files,
                "ufcctl_toml_string": containerd.toml_string,
                "ufcctl_registry_cache_mirrors": ufcctl_registry_cache_mirrors,
                "ufcctl_runtime_plan": ufcctl_runtime_plan,
                "ufcctl_runtime_probe_script": ufcctl_runtime_probe_script}
