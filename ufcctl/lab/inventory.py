"""The lab's Ansible inventory, in the scheme of inventories/sample, rendered from a layout."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ufcctl.domain.images.registries import DOCKER_HUB, HUAWEI, K8S, QUAY
from ufcctl.domain.images.registries import VAR as IMAGE_REGISTRIES
from ufcctl.domain.inventory.model import (
    APISERVER_LB,
    CONTROL_PLANE,
    ETCD_GROUPS,
    KUBE_NODE,
    MONITORING,
    NFS_SERVER,
    NPU_NODE,
    REGISTRY_CACHE,
)
from ufcctl.domain.monitoring.rules import ALERT_NAMES
from ufcctl.lab.layout import KUBE_EMULATED, KUBE_REAL, LAB_POD_SUBNET, LabLayout, LabNode

MARKER = ".ufcctl-lab"  # marks a directory as generated, so `lab down` never deletes a user's inventory
NFS_EXPORT_DIR = "/srv/nfs"  # bind mount on the nfs_server node: ganesha's VFS backend fails on overlayfs
NFS_CLIENT_PATH = "/data"  # the NFSv4 path clients use, the seed's /data (roles/nfs_provisioner's default)
# The lab's NPU fabric: 10.200.<tor>.0/24 per ToR, outside the lab network (10.89.64.0/24 by default) and
# never routed: device IPs live only in the lab NPU emulator's hccn_tool state.
FABRIC_BLOCK = "10.200"


KNOWN_HOSTS = "known_hosts.txt"
# The NPU emulator's vars (its mirror's URL, the release to install); `lab up` writes the file as part
# of the inventory, so its pruning of files it did not write keeps it.
NPU_NODE_VARS = "group_vars/npu_node.yml"
ARTIFACT_VARS = "group_vars/all/artifacts.yml"
MONITORING_VARS = "group_vars/all/monitoring.yml"
ETCD_VARS = "group_vars/all/etcd.yml"
REGISTRY_CACHE_VARS = "group_vars/all/registry_cache.yml"
ADDON_VARS = "group_vars/all/addons.yml"
# The LAB UPSTREAM REGISTRY (tests/lab_standins/upstream_registry: Debian's docker-registry, started in
# the NPU
# emulator's mirror container by the image tests or by hand) and the caches' instance port.
LAB_UPSTREAM_PORT = 5000
LAB_CACHE_PORT = 5001
# The upstream registries whose images the lab takes from the LAB UPSTREAM REGISTRY, through its caches,
# under their upstream paths (calico/node, ascendhub/vc-scheduler, ...; issue 44, D13): the lab has no
# other source for them. registry.k8s.io is not among them: the lab builds those images itself under
# their upstream names (tests/lab_build: pause, the control plane), so the sandbox image and kubeadm's
# imageRepository, the DNS cache, its autoscaler and the NFS provisioner render as on a real site.
LAB_MIRRORED = (QUAY, DOCKER_HUB, HUAWEI)
# ...and where the lab runs the real Kubernetes (`lab up --kube real`), registry.k8s.io too: its images are
# the built releases' (tests/lab_build/kube_images.py), in the LAB UPSTREAM REGISTRY, which the nodes reach
# only through the caches (kubeadm's imageRepository and CoreDNS's then name the mirror, as on a site
# behind one)
LAB_MIRRORED_REAL = (*LAB_MIRRORED, K8S)
# Lab-only timing, so a test sees an alert fire within seconds instead of the production `for:`
# durations (minutes; roles/monitoring defaults and ufcctl/domain/monitoring/rules.py).
LAB_ALERT_FOR = "10s"
# ...except the etcd disk-latency alerts, which keep their production `for:` (10m). The lab's etcd members
# share one VM disk with every other test: a deploy under CI's load held the core cluster's backend commit
# p99 above 0.25 s past the main job's two-minute health window (CI at ff5d87a: EtcdHighCommitDurations on
# all three members, so run.sh exited 1); no lab test injects disk latency, and production waits 10 minutes.
LAB_PRODUCTION_FOR = frozenset({"EtcdHighCommitDurations", "EtcdHighFsyncDurations"})

# Lab containers share this machine's disk; preflight's production minimums (70 GiB on a host
# carrying the three etcd clusters, roles/preflight/defaults) would fail a laptop or CI runner for
# no reason. The lab asks for what its components really use.
LAB_DISK_REQUIREMENTS = [{"path": "/", "min_free_gib": 4}]
# roles/preflight's default preflight_npu_distributions, and the lab image's OS (ufcctl/lab/image: bookworm).
NPU_OS = ("Ubuntu 22.04", "Ubuntu 24.04")
LAB_OS = "Debian 12"


def _lab_resources(memory: str) -> dict[str, Any]:
    """10m CPU and `memory` requested, no CPU limit, 512 MiB of memory at most (a fresh dict each time, so
    the YAML dump writes no anchors)."""
    return {"requests": {"cpu": "10m", "memory": memory}, "limits": {"memory": "512Mi"}}


# Lab-only add-on resources. Lab nodes are containers that each see 2 CPUs, all on one 2-core machine, and
# the add-on pods there are the lab's idle stand-ins (Go programs using a few MiB): the roles' requests,
# sized for production sites, do not fit (2275m on every worker: Device Plugin 500m, NodeD 500m, NPU
# Exporter 1000m, calico-node 250m, DNS cache 25m; vc-scheduler alone asks 2 CPU of a control plane), so
# their pods stay Pending and deploy's readiness wait fails. 10m each keeps every pod schedulable; no CPU
# limit (throttling an idle stand-in buys nothing), and a memory limit far above what a stand-in uses.
# Memory requests stay small (every node sees the machine's RAM; CPU is what runs out). kubeadm's own pods
# keep their requests (CoreDNS 100m / 70 MiB, the control plane's 550m): they are not the add-on roles'.
LAB_ADDON_RESOURCES: dict[str, Any] = {
    # on every node
    "cni_calico_node_resources": _lab_resources("32Mi"),
    "nodelocaldns_cpu_request": "10m",  # its memory request is upstream's 5Mi already
    # on every NPU worker
    "ascend_components_device_plugin_resources": _lab_resources("32Mi"),
    "ascend_components_noded_resources": _lab_resources("32Mi"),
    "ascend_components_npu_exporter_resources": _lab_resources("32Mi"),
    # Deployments: control planes (Volcano, ClusterD, Ascend Operator, NFS provisioner, the autoscaler)
    # or any node (Typha, calico-kube-controllers)
    "cni_calico_typha_resources": _lab_resources("64Mi"),
    "cni_calico_kube_controllers_resources": _lab_resources("64Mi"),
    "nodelocaldns_coredns_autoscaler_resources": _lab_resources("16Mi"),
    "volcano_scheduler_resources": _lab_resources("64Mi"),
    "volcano_controller_resources": _lab_resources("64Mi"),
    "ascend_components_ascend_operator_resources": _lab_resources("64Mi"),
    "ascend_components_clusterd_resources": _lab_resources("64Mi"),
    "nfs_provisioner_resources": _lab_resources("32Mi"),
}


@dataclass(frozen=True)
class InventoryPaths:
    directory: Path
    private_key: Path

    @property
    def known_hosts(self) -> Path:
        # .txt: Ansible skips it when it reads the directory as an inventory (INVENTORY_IGNORE_EXTS),
        # so neither ufcctl nor ansible-playbook warns that it "cannot parse" it.
        return self.directory / KNOWN_HOSTS


def _header(layout: LabLayout) -> str:
    return (
        f"# Generated by `ufcctl lab up` for lab {layout.lab!r} on {layout.subnet} ({layout.network}).\n"
        "# Do not edit: `ufcctl lab up` rewrites it and `ufcctl lab down` deletes it.\n"
    )


def _dump(data: Mapping[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=200)


def fabric_subnet(tor_id: int) -> str:
    """The lab's NPU fabric subnet of a ToR: the chips' device IPs (only inside the lab NPU emulator's
    hccn_tool; no packet is sent on it), one /24 per ToR as a real RoCE plane has per leaf."""
    return f"{FABRIC_BLOCK}.{tor_id}.0/24"


def host_entry(node: LabNode) -> dict[str, Any]:
    """A node's host vars in the lab inventory (NPU workers: topology and fabric plan)."""
    entry: dict[str, Any] = {"ansible_host": node.ip}
    if node.topology is not None:
        t = node.topology
        entry.update(
            npu_accelerator_type=t.accelerator_type,
            npu_tor_id=t.tor_id,
            npu_super_pod_id=t.super_pod_id,
            npu_slice_id=t.slice_id,
            rack=t.rack,
            npu_fabric_subnet=fabric_subnet(t.tor_id),
        )
    return entry


def nfs_server_vars(layout: LabLayout) -> dict[str, Any]:
    """Userspace ganesha (containers have no nfsd) exporting the bind mount to the lab subnet as /data."""
    return {
        "ufc_lab_nfs_export_dir": NFS_EXPORT_DIR,
        "nfs_server_implementation": "ganesha",
        "nfs_server_export_path": NFS_EXPORT_DIR,
        "nfs_server_export_network": layout.subnet,
        "nfs_server_ganesha_pseudo_path": NFS_CLIENT_PATH,
        "nfs_server_ganesha_graceless": True,  # nothing to reclaim in a lab; saves 90 s after each restart
    }


def hosts_document(layout: LabLayout, monitoring: bool = True) -> dict[str, Any]:
    """The hosts.yml tree: every host's vars are given once, under its first group."""
    cps = {n.name: host_entry(n) for n in layout.control_planes}
    children: dict[str, Any] = {
        CONTROL_PLANE: {"hosts": cps},
        APISERVER_LB: {"children": {CONTROL_PLANE: {}}},
    }
    # The three etcd clusters share the control-plane hosts; their default ports differ
    # (core 2379/2380, events 2383/2382, pods 2385/2384), so no per-cluster port vars are needed.
    for group in ETCD_GROUPS:
        children[group] = {"hosts": {name: {} for name in cps}}
    children[KUBE_NODE] = {"children": {NPU_NODE: {}}}
    children[NPU_NODE] = {"hosts": {n.name: host_entry(n) for n in layout.workers}}
    children[NFS_SERVER] = {"hosts": {layout.nfs_server: nfs_server_vars(layout)}}
    # Two monitoring hosts (the HA pair), the last control planes: the first applies the add-ons.
    if monitoring:
        children[MONITORING] = {"hosts": {n.name: {} for n in layout.control_planes[-2:]}}
    caches = registry_cache_hosts(layout)
    if caches:
        children[REGISTRY_CACHE] = {"hosts": caches}
    return {"all": {"children": children}}


def registry_cache_hosts(layout: LabLayout) -> dict[str, dict[str, Any]]:
    """Two tiers on the last two control planes (roles/registry_cache): the second to last is the ToR
    cache of the first worker's ToR, the last the super pod cache of every super pod. So the first
    ToR's workers list both caches (ToR first), the other workers the super pod cache only. The ToR
    cache fills from the super pod cache (registry_cache_super_pod: its ToR's super pod)."""
    tops = [n.topology for n in layout.workers if n.topology is not None]
    if len(layout.control_planes) < 2 or not tops:
        return {}
    tor_cache, pod_cache = layout.control_planes[-2:]
    pods = sorted({t.super_pod_id for t in tops})
    return {
        tor_cache.name: {"registry_cache_tier": "tor", "registry_cache_serves": [str(tops[0].tor_id)],
                         "registry_cache_super_pod": str(tops[0].super_pod_id)},
        pod_cache.name: {"registry_cache_tier": "super_pod", "registry_cache_serves": [str(p) for p in pods]},
    }


def registry_cache_vars(layout: LabLayout, kube: str = KUBE_EMULATED) -> dict[str, Any]:
    upstream = f"{layout.npu_mirror.ip}:{LAB_UPSTREAM_PORT}"
    return {
        "registry_cache_upstreams": [{"name": "lab", "registry": upstream, "url": f"http://{upstream}",
                                      "port": LAB_CACHE_PORT}],
        # no certificates in the lab: the caches and their upstream speak plain http
        "registry_cache_scheme": "http",
        "registry_cache_insecure": True,
        IMAGE_REGISTRIES: {registry: upstream
                           for registry in (LAB_MIRRORED_REAL if kube == KUBE_REAL else LAB_MIRRORED)},
        "registry_cache_max_gib": 2,
        "registry_cache_front_max_gib": 2,
        # fetch the content, do not unpack it: the pre-heat tests count bytes, and unpacking every image on
        # every worker costs the shared 2-core machine CPU (lab nodes can unpack now: test_images_lab runs
        # a container from a pulled image)
        "image_preheat_unpack": False,
    }


def connection_vars(paths: InventoryPaths) -> dict[str, Any]:
    ssh_args = (
        f"-o UserKnownHostsFile={shlex.quote(str(paths.known_hosts.resolve()))} -o StrictHostKeyChecking=yes"
    )
    return {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(paths.private_key.resolve()),
        # Host keys are checked in the lab too: known_hosts holds each container's own key.
        "ansible_ssh_common_args": ssh_args,
        "ansible_python_interpreter": "/usr/bin/python3",
    }


def real_kube_vars() -> dict[str, Any]:
    """What the real kubeadm and kubelet need in the lab, beyond cluster_vars (`lab up --kube real`)."""
    return {
        # the LAB POD NETWORK's range (ufcctl/lab/podnet.py), written out: kube-proxy's clusterCIDR and
        # the controller-manager's node CIDRs come from it
        "kube_control_plane_pod_subnet": LAB_POD_SUBNET,
    }


def cluster_vars(layout: LabLayout) -> dict[str, Any]:
    return {
        "ufc_vip": layout.vip,  # unused address of the lab subnet, held by keepalived
        "ufc_vip_interface": "eth0",  # podman's interface name in every lab container
        "ufc_lab": True,  # roles use it to skip what containers cannot do (and say so)
        "ufc_lab_name": layout.lab,
        "preflight_disk_requirements": LAB_DISK_REQUIREMENTS,
        "cni_calico_bgp_peering": "none",  # no ToR switches to peer with (roles/cni README)
        # the lab's nodes are containers of an x86_64 machine and its mirror publishes amd64 binaries
        # (tests/lab_build/mirror.py): the default, written out; preflight refuses another machine
        "ufc_arch": "amd64",
        # The lab's nodes are Debian 12 containers and their NPU driver is the lab NPU emulator's, which has
        # no OS list: preflight's NPU-node list (Huawei's, Ubuntu 22.04/24.04) gets the lab's OS added, and
        # the driver role builds nothing (the emulator's installer has no kernel module to build, and lab
        # nodes have no package source for the host's kernel headers).
        "preflight_npu_distributions": [*NPU_OS, LAB_OS],
        "ascend_driver_build_toolchain": "never",
        # Lab containers lack CAP_SYS_MODULE, so modprobe cannot work there: br_netfilter is loaded or not
        # by the machine running the lab, and roles/node_tuning reports it (and its keys) as skipped when
        # it is absent instead of failing. A real node loads it.
        "node_tuning_load_modules": False,
        # The lab's kernel has no NFS client ("mount.nfs: No such device"), so the kubelet cannot mount the
        # NFS provisioner's root share; the lab gives it an emptyDir (its stand-in provisions nothing).
        "nfs_provisioner_root_volume": {"emptyDir": {}},
        # The machine running the lab is on cgroup v1: from Kubernetes 1.35 (upgrade-cluster's target) the
        # kubelet refuses to start there unless told (Kubespray's kubelet_fail_cgroup_v1); 1.34 only warns
        "kube_control_plane_kubelet_fail_cgroup_v1": False,
        # and kubeadm 1.35 refuses that cgroup v1 host in its SystemVerification preflight (init, join,
        # upgrade): the lab lets that one check through on control planes and workers alike; a real node
        # is on cgroup v2 and ignores no preflight check
        "kube_control_plane_ignore_preflight_errors": ["SystemVerification"],
        "kube_node_ignore_preflight_errors": ["SystemVerification"],
        # kube-proxy leaves nf_conntrack_max alone (KubeProxyConfiguration conntrack.maxPerCore: 0, as kind
        # sets it): the table size is the host kernel's, and a lab node's network namespace shows
        # nf_conntrack_max read-only, so kube-proxy stopped at start on `open /proc/sys/net/netfilter/
        # nf_conntrack_max: permission denied` (docs/reference/real-kubernetes.md §3). The TCP timeouts it
        # also writes are per network namespace and writable from its privileged pod: left at kube-proxy's.
        "kube_control_plane_kube_proxy_conntrack_max_per_core": 0,
        # keepalived's track script: 3 failed runs of up to 4 s each before a holder's priority drops
        # (production: 2 of 2 s). The lab's nodes share two cores with every other test: a stall of a few
        # seconds timed out the check on all three control planes at once (keepalived's log on a lab
        # beside two test workers), and the skew between their drops and rises can hand the VIP over and
        # back, resetting every connection through it. A stopped haproxy still fails the check at once.
        "apiserver_lb_check_script_fall": 3,
        "apiserver_lb_check_script_timeout": 4,
    }


def monitoring_vars() -> dict[str, Any]:
    return {
        "monitoring_alert_for": {name: LAB_ALERT_FOR for name in ALERT_NAMES
                                 if name not in LAB_PRODUCTION_FOR},
        # 10 s and one vmagent per target: the lab shares two cores with every other test
        "monitoring_rule_interval": "10s",
        "monitoring_scrape_interval": "10s",
        "monitoring_scrape_timeout": "5s",
        "monitoring_vmagent_replication": 1,
        "monitoring_agent_interval": 5,
        # no NPU Exporter runs: the LAB API STAND-IN places its pods, but no container of an add-on runs
        "monitoring_scrape_npu_exporter": False,
        # lab containers see the whole machine's RAM; VictoriaMetrics' caches need little here
        "monitoring_vm_memory_percent": 5,
        # VictoriaMetrics' 30 s default delays each alert twice (the rule's query, then ALERTS)
        "monitoring_vm_latency_offset": "5s",
    }


def etcd_vars() -> dict[str, Any]:
    """The etcd defrag agent sized for a lab whose databases hold a few MiB (the role's defaults are
    sized for 8 GiB databases and would never defrag here)."""
    return {
        "etcd_defrag_rule": "dbSizeFree > 4*1024*1024",
        "etcd_defrag_compaction_keep_revisions": 0,
        "etcd_defrag_min_interval": 30,
        # the timer is parked on a date in the past: a lab defrag runs when asked (`ufcctl etcd defrag
        # --inventory lab`, or a lab test starting the unit the timer starts), never in the middle of
        # a test measuring latency or member health
        "etcd_defrag_on_calendar": "2000-01-01 00:00:00",
        # the snapshot timers likewise: the lab tests start `ufcctl-etcd-backup@<cluster>` themselves
        "etcd_backup_on_calendar": "2000-01-01 00:00:00",
        # etcd itself: the role's default, the release tarball of ufc_etcd_version, which the lab mirror
        # serves from etcd built at that tag (tests/lab_build; `ufcctl lab up` writes the version beside
        # ufc_artifact_url), so kubeadm's ExternalEtcdVersion preflight passes as on a real cluster
    }


def known_hosts_text(layout: LabLayout, host_keys: Mapping[str, str]) -> str:
    """One line per node, matching both its name and its IP; host_keys maps name -> "type base64"."""
    lines = []
    for node in layout.nodes:
        key = host_keys.get(node.name)
        if key is None:
            raise ValueError(f"no host key collected for {node.name}")
        kind, blob = key.split()[:2]
        lines.append(f"{node.name},{node.ip} {kind} {blob}")
    return "\n".join(lines) + "\n"


def render_inventory(
    layout: LabLayout, paths: InventoryPaths, host_keys: Mapping[str, str],
    npu_node_vars: Mapping[str, Any] | None = None, artifact_vars: Mapping[str, Any] | None = None,
    monitoring: bool = True, kube: str = KUBE_EMULATED,
) -> dict[str, str]:
    """Relative file name -> content for the whole inventory directory; `npu_node_vars` are what the
    NPU emulator reported (None: no emulator, no group_vars/npu_node.yml)."""
    files = {
        "hosts.yml": _header(layout) + _dump(hosts_document(layout, monitoring)),
        "group_vars/all/connection.yml": _header(layout) + _dump(connection_vars(paths)),
        "group_vars/all/cluster.yml": _header(layout) + _dump(
            {**cluster_vars(layout), **(real_kube_vars() if kube == KUBE_REAL else {})}),
        KNOWN_HOSTS: known_hosts_text(layout, host_keys),
        MARKER: f"{layout.lab}\n",
        ETCD_VARS: _header(layout) + "# Lab-sized etcd defragmentation and backups (roles/etcd).\n"
        + _dump(etcd_vars()),
        ADDON_VARS: _header(layout) + "# Lab-sized add-on resources (ufcctl/lab/inventory.py "
        "LAB_ADDON_RESOURCES says why).\n" + _dump(LAB_ADDON_RESOURCES),
    }
    if registry_cache_hosts(layout):
        files[REGISTRY_CACHE_VARS] = (_header(layout) + "# Registry caches of the lab (roles/registry_cache) "
                                      "in front of the LAB UPSTREAM REGISTRY\n"
                                      "# (tests/lab_standins/upstream_registry).\n"
                                      + _dump(registry_cache_vars(layout, kube)))
    if monitoring:
        files[MONITORING_VARS] = (_header(layout) + "# Lab timing for the alert tests (roles/monitoring).\n"
                                  + _dump(monitoring_vars()))
    if npu_node_vars is not None:
        files[NPU_NODE_VARS] = (
            _header(layout) + "# From the lab NPU emulator\n"
            "# (tests/lab_standins/npu_emulator, not Huawei software): its "
            f"package mirror {layout.npu_mirror.name}, the release to install.\n" + _dump(npu_node_vars)
        )
    if artifact_vars:
        files[ARTIFACT_VARS] = (
            _header(layout) + "# The lab mirror as every host's artifact source: etcd and kubectl built\n"
            "# from their Go modules at the pinned tags (tests/lab_build), kubeadm/kubelet "
            + ("built the same way" if kube == KUBE_REAL
               else "of the\n# LAB KUBE EMULATOR (the same releases)")
            + ",\n# the emulated Ascend Docker Runtime and HDK.\n"
            + _dump(artifact_vars)
        )
    return files
