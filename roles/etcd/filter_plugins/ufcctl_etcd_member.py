"""Jinja filters for what roles/etcd does on one member host (vars/main.yml, tasks/facts.yml,
tasks/members.yml): thin adapters over ufcctl/domain/etcd/member_plan.py, where the decisions live
(they were Jinja namespace() loops; issue 43). Ansible values in, plain lists and dicts out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.plugins.filter.core import to_bool

from ufcctl.domain.etcd import member_plan


def ufcctl_etcd_start(clusters: Sequence[str], data_clusters: Sequence[str],
                      answering: Sequence[str]) -> dict[str, str]:
    """cluster -> restart-safe, join or new."""
    return member_plan.start_modes(clusters, list(data_clusters), list(answering))


def ufcctl_etcd_restart(clusters: Sequence[str], start: Mapping[str, str], written: Sequence[str],
                        config_dir: str) -> list[str]:
    return member_plan.restart_units(clusters, start, list(written), str(config_dir))


def ufcctl_etcd_keys_to_fix(to_issue: Mapping[str, Sequence[str]]) -> list[str]:
    return member_plan.keys_to_fix(to_issue)


def ufcctl_etcd_directories(pki_directories: Sequence[Mapping[str, Any]], clusters: Sequence[str],
                            data_dirs: Mapping[str, str], agent_dir: str, backup_dir: str,
                            user: str) -> list[dict[str, Any]]:
    return member_plan.directories(pki_directories, list(clusters), data_dirs, agent_dir, backup_dir, user)


def ufcctl_etcd_member_files(clusters: Sequence[str], config_dir: str, user: str) -> list[dict[str, Any]]:
    return member_plan.member_files(clusters, str(config_dir), user)


def ufcctl_etcd_bootstrap_files(start: Mapping[str, str], config_dir: str) -> list[dict[str, Any]]:
    return member_plan.bootstrap_files(start, str(config_dir))


def ufcctl_etcd_ca_destinations(ca_pem: str, member: bool, control_plane: bool, pki_dir: str,
                                apiserver_pki_dir: str) -> list[str]:
    return member_plan.ca_destinations(ca_pem, member, control_plane, str(pki_dir), str(apiserver_pki_dir))


def ufcctl_etcd_cert_files(certs: Sequence[Mapping[str, Any]], signed: Mapping[str, str],
                           probed: Mapping[str, Any], to_issue: Mapping[str, Any],
                           ca_destinations: Sequence[str], ca_source: str) -> list[dict[str, Any]]:
    return member_plan.cert_files(certs, signed, probed, list(to_issue), ca_destinations, ca_source)


def _probe_data(hostvars: Mapping[str, Any], host: str) -> Mapping[str, Any]:
    """`hostvars[host].__etcd_state.data | default({})`: what that host's etcd_probe found."""
    host_vars = hostvars[host]
    state = host_vars["__etcd_state"] if "__etcd_state" in host_vars else {}
    data = state.get("data") if isinstance(state, Mapping) else None
    return data if isinstance(data, Mapping) else {}


def ufcctl_etcd_split(start: Mapping[str, str], play_hosts: Sequence[str],
                      groups: Mapping[str, Sequence[str]],
                      hostvars: Mapping[str, Any]) -> dict[str, list[str]]:
    """cluster -> the play's other members holding its data, for the clusters this host would bootstrap."""
    members = {cluster: list(groups["etcd_" + cluster]) for cluster, mode in start.items() if mode == "new"}
    candidates = {host for hosts in members.values() for host in hosts} & set(play_hosts)
    holds_data = {host: _probe_data(hostvars, host) for host in candidates}
    return member_plan.split(start, play_hosts, members, holds_data)


def ufcctl_etcd_to_start(clusters: Sequence[str], start: Mapping[str, str], units: Mapping[str, Any],
                         check_mode: bool, written: Sequence[str]) -> list[str]:
    return member_plan.to_start(clusters, start, units, bool(check_mode), list(written))


def ufcctl_etcd_to_wait(clusters: Sequence[str], start: Mapping[str, str],
                        started: Sequence[Mapping[str, Any]], health: Mapping[str, Any]) -> list[str]:
    """`started`: the start task's loop results; a member it changed was started in this run."""
    names = [result["__etcd_cluster"] for result in started if result.get("changed")]
    return member_plan.to_wait(clusters, start, names, health)


def ufcctl_etcd_timers(clusters: Sequence[str], overrides: Mapping[str, Any], defrag_enabled: Any,
                       backup_enabled: Any, units: Mapping[str, Any],
                       rewrite_all: bool) -> list[dict[str, Any]]:
    """The timers to change; a cluster's etcd_cluster_overrides defrag_enabled over etcd_defrag_enabled,
    each read as Ansible's `bool` filter reads it."""
    wanted = {}
    for name in clusters:
        override = overrides.get(name) if isinstance(overrides, Mapping) else None
        own = override if isinstance(override, Mapping) else {}
        wanted[name] = to_bool(own["defrag_enabled"] if "defrag_enabled" in own else defrag_enabled)
    return member_plan.timers(clusters, wanted, to_bool(backup_enabled), units, bool(rewrite_all))


def ufcctl_etcd_health_checks(topology: Sequence[Mapping[str, Any]], clusters: Sequence[str], host: str,
                              pki_dir: str) -> list[dict[str, Any]]:
    return member_plan.health_checks(topology, list(clusters), host, str(pki_dir))


def ufcctl_etcd_cert_paths(certs: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return member_plan.cert_paths(certs)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_etcd_start": ufcctl_etcd_start,
            "ufcctl_etcd_restart": ufcctl_etcd_restart,
            "ufcctl_etcd_keys_to_fix": ufcctl_etcd_keys_to_fix,
            "ufcctl_etcd_directories": ufcctl_etcd_directories,
            "ufcctl_etcd_member_files": ufcctl_etcd_member_files,
            "ufcctl_etcd_bootstrap_files": ufcctl_etcd_bootstrap_files,
            "ufcctl_etcd_ca_destinations": ufcctl_etcd_ca_destinations,
            "ufcctl_etcd_cert_files": ufcctl_etcd_cert_files,
            "ufcctl_etcd_split": ufcctl_etcd_split,
            "ufcctl_etcd_to_start": ufcctl_etcd_to_start,
            "ufcctl_etcd_to_wait": ufcctl_etcd_to_wait,
            "ufcctl_etcd_timers": ufcctl_etcd_timers,
            "ufcctl_etcd_health_checks": ufcctl_etcd_health_checks,
            "ufcctl_etcd_cert_paths": ufcctl_etcd_cert_paths,
        }
