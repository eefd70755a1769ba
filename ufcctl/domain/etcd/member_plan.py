"""What roles/etcd does on one member host, decided from its probe (etcd_probe) and its settings: how each
cluster's member starts, which units start, restart and are waited for, which timers change, and what the
one ufc_files call writes. Pure: plain values in (the role's filters, roles/etcd/filter_plugins/
ufcctl_etcd_member.py, pass them), plain lists and dicts out, in the order the role lists them.

Each function replaces a Jinja `namespace()` loop the role's vars held (issue 43); the outputs are the
same values, so the files rendered from them are the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

UNIT_DIR = "/etc/systemd/system"
# a certificate problem that only asks for a renewal: the key stays (etcd_probe's reasons, pki.py)
_RENEW_ONLY = re.compile("renew: ")


def member_unit(cluster: str) -> str:
    return f"etcd-{cluster}.service"


def start_modes(clusters: Iterable[str], data_clusters: Collection[str],
                answering: Collection[str]) -> dict[str, str]:
    """cluster -> restart-safe (it has data here: only reconfigured), join (its other members answer),
    new (bootstrap)."""
    return {name: "restart-safe" if name in data_clusters else ("join" if name in answering else "new")
            for name in clusters}


def restart_units(clusters: Iterable[str], start: Mapping[str, str], written: Collection[str],
                  config_dir: str) -> list[str]:
    """Units of running members whose settings or unit file this run wrote (the restart handler's list)."""
    return [member_unit(name) for name in clusters if start[name] == "restart-safe"
            and (f"{config_dir}/etcd-{name}.env" in written or f"{UNIT_DIR}/{member_unit(name)}" in written)]


def keys_to_fix(to_issue: Mapping[str, Sequence[str]]) -> list[str]:
    """Certificates whose key must be made or fixed: a reason other than a renewal (which keeps the key)."""
    return [name for name, why in to_issue.items() if any(not _RENEW_ONLY.match(w) for w in why)]


def directories(pki_directories: Sequence[Mapping[str, Any]], clusters: Sequence[str],
                data_dirs: Mapping[str, str], agent_dir: str, backup_dir: str,
                user: str) -> list[dict[str, Any]]:
    """The directories of the host's one ufc_files call: PKI, the agent's, its settings', the snapshots',
    and each member's data directory."""
    out = [dict(d) for d in pki_directories]
    if clusters:
        out += [{"path": agent_dir, "mode": "0755"},
                {"path": "/etc/ufcctl/etcd-defrag", "owner": "root", "group": user, "mode": "0750"},
                {"path": backup_dir, "owner": user, "group": user, "mode": "0700"}]
    return out + [{"path": data_dirs[name], "owner": user, "group": user, "mode": "0700"}
                  for name in clusters]


def member_files(clusters: Iterable[str], config_dir: str, user: str) -> list[dict[str, Any]]:
    """Per cluster: the agent's configuration, the member's settings and its unit (templates)."""
    out: list[dict[str, Any]] = []
    for name in clusters:
        out += [{"dest": f"/etc/ufcctl/etcd-defrag/{name}.json", "template": "agent.json.j2",
                 "vars": {"__etcd_cluster": name}, "owner": "root", "group": user, "mode": "0640"},
                {"dest": f"{config_dir}/etcd-{name}.env", "template": "etcd.env.j2",
                 "vars": {"__etcd_cluster": name}, "owner": "root", "group": user, "mode": "0640"},
                {"dest": f"{UNIT_DIR}/{member_unit(name)}", "template": "etcd.service.j2",
                 "vars": {"__etcd_cluster": name}, "mode": "0644"}]
    return out


def bootstrap_files(start: Mapping[str, str], config_dir: str) -> list[dict[str, Any]]:
    """The bootstrap settings of each cluster this host starts new (read by etcd only while its data
    directory is empty)."""
    return [{"dest": f"{config_dir}/etcd-{cluster}-bootstrap.env", "template": "etcd-bootstrap.env.j2",
             "vars": {"__etcd_cluster": cluster}, "mode": "0644"}
            for cluster, mode in start.items() if mode == "new"]


def cert_files(certs: Sequence[Mapping[str, Any]], signed: Mapping[str, str], probed: Mapping[str, Any],
               to_issue: Collection[str], ca_destinations: Sequence[str],
               ca_source: str) -> list[dict[str, Any]]:
    """Certificates signed in this run or, still valid, as the probe read them (written again only if
    their owner or mode drifted; unknown in check mode before the first signing: left out), then the CA
    certificate, copied from the controller to each of `ca_destinations`."""
    out: list[dict[str, Any]] = []
    for cert in certs:
        name = cert["name"]
        pem = signed.get(name) or (probed[name]["cert"] if name not in to_issue else "")
        if pem:
            out.append({"dest": f"{cert['dir']}/{name}.crt", "content": pem, "owner": "root", "group": "root",
                        "mode": "0644"})
    return out + [{"dest": dest, "src": ca_source, "owner": "root", "group": "root", "mode": "0644"}
                  for dest in ca_destinations]


def ca_destinations(ca_pem: str, member: bool, control_plane: bool, pki_dir: str,
                    apiserver_pki_dir: str) -> list[str]:
    """Where the CA certificate goes: the members' PKI directory, kube-apiserver's; none before the
    controller made it."""
    if not ca_pem:
        return []
    return (([f"{pki_dir}/ca.crt"] if member else [])
            + ([f"{apiserver_pki_dir}/etcd/ca.crt"] if control_plane else []))


def split(start: Mapping[str, str], play_hosts: Iterable[str], members: Mapping[str, Collection[str]],
          holds_data: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """cluster -> the play's other members of it that hold its data, for the clusters this host would
    bootstrap (they probed in step with this host). `members`: cluster -> its group's hosts;
    `holds_data`: host -> its probe's data (cluster -> whether it holds data)."""
    out: dict[str, list[str]] = {}
    for cluster, mode in start.items():
        if mode != "new":
            continue
        holders = [host for host in play_hosts
                   if host in members[cluster] and holds_data.get(host, {}).get(cluster, False)]
        if holders:
            out[cluster] = holders
    return out


def _state(units: Mapping[str, Mapping[str, str]], unit: str) -> tuple[bool, bool]:
    found = units.get(unit, {})
    return found.get("active", "") == "active", found.get("enabled", "") == "enabled"


def to_start(clusters: Iterable[str], start: Mapping[str, str], units: Mapping[str, Mapping[str, str]],
             check_mode: bool, written: Collection[str]) -> list[str]:
    """Members to start: not joining (the join command starts those), not both active and enabled
    already, and, in check mode, not those whose unit file would be written first (it does not exist)."""
    return [name for name in clusters if start[name] != "join"
            and _state(units, member_unit(name)) != (True, True)
            and not (check_mode and f"{UNIT_DIR}/{member_unit(name)}" in written)]


def to_wait(clusters: Iterable[str], start: Mapping[str, str], started: Collection[str],
            health: Mapping[str, Any]) -> list[str]:
    """Members to wait for: joined or started in this run, or not healthy when probed."""
    return [name for name in clusters
            if start[name] == "join" or name in started or not health.get(name, False)]


def timers(clusters: Iterable[str], defrag_wanted: Mapping[str, bool], backup_wanted: bool,
           units: Mapping[str, Mapping[str, str]], rewrite_all: bool) -> list[dict[str, Any]]:
    """Timers (defrag and snapshot, per cluster) whose state differs from what is wanted: {unit, want};
    every one when `rewrite_all` (their unit files changed: daemon-reload)."""
    out: list[dict[str, Any]] = []
    for name in clusters:
        for kind, want in (("defrag", defrag_wanted[name]), ("backup", backup_wanted)):
            unit = f"ufcctl-etcd-{kind}@{name}.timer"
            running, enabled = _state(units, unit)
            if rewrite_all or running != want or enabled != want:
                out.append({"unit": unit, "want": want})
    return out


def health_checks(topology: Iterable[Mapping[str, Any]], clusters: Collection[str], host: str,
                  pki_dir: str) -> list[dict[str, Any]]:
    """etcd_probe's health checks: each of this host's members, over its client port on loopback."""
    out = []
    for cluster in topology:
        if cluster["name"] not in clusters:
            continue
        port = [m for m in cluster["members"] if m["host"] == host][0]["client_port"]
        out.append({"cluster": cluster["name"], "url": f"https://127.0.0.1:{port}/health",
                    "ca": f"{pki_dir}/ca.crt", "cert": f"{pki_dir}/agent.crt", "key": f"{pki_dir}/agent.key"})
    return out


def cert_paths(certs: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """etcd_probe's certificates to read: name, certificate and key paths."""
    return [{"name": c["name"], "cert": f"{c['dir']}/{c['name']}.crt", "key": f"{c['dir']}/{c['name']}.key"}
            for c in certs]
