"""Placement rules about the network: ToR switch affinity and the HCCL rank table."""

from __future__ import annotations

from collections.abc import Iterator

from ufcctl.domain.placement import keys
from ufcctl.domain.placement.model import ClusterState, Job, RankTable
from ufcctl.domain.placement.rules.base import Options, chip_list
from ufcctl.domain.placement.violations import Code, Violation
from ufcctl.errors import shown

LARGE_MODEL = "large-model-schema"
# ascend-for-volcano common/util/job.go fillJobMaxNPUTaskNum: a large-model job with fewer NPU pods
# is a "filler" job, which must stay under one ToR switch.
FILLER_MAX_NPU_PODS = 4


def check_tor_cm_missing(state: ClusterState, options: Options) -> Iterator[Violation]:
    if state.tor is not None:
        return
    for job in state.jobs:
        if job.tor_affinity is not None and job.tor_affinity != "null":
            yield Violation(
                Code.TOR_CM_MISSING,
                job.ref,
                None,
                None,
                f"tor-affinity={shown(job.tor_affinity)} needs ConfigMap "
                f"{keys.SYSTEM_NAMESPACE}/{keys.TOR_CONFIGMAP}, "
                f"which is not in the input",
            )


def check_tor_span(state: ClusterState, options: Options) -> Iterator[Violation]:
    if state.tor is None:
        return
    tor_by_ip = state.tor.tor_by_ip
    for job in state.jobs:
        if job.tor_affinity != LARGE_MODEL or job.npu_pod_count >= FILLER_MAX_NPU_PODS:
            continue
        pods_by_tor: dict[str, list[str]] = {}
        for holding in job.holdings:
            node = holding.node
            if node is not None and node.ip is not None and node.ip in tor_by_ip:
                pods_by_tor.setdefault(str(tor_by_ip[node.ip]), []).append(holding.pod.ref)
        if len(pods_by_tor) > 1:
            layout = "; ".join(f"ToR {tor}: {', '.join(pods)}" for tor, pods in sorted(pods_by_tor.items()))
            yield Violation(
                Code.TOR_SPAN,
                job.ref,
                None,
                None,
                f"filler job ({job.npu_pod_count} NPU pods < {FILLER_MAX_NPU_PODS}) spans ToR switches: "
                f"{layout}",
            )


def check_ranktable(state: ClusterState, options: Options) -> Iterator[Violation]:
    jobs = {(job.namespace, job.name): job for job in state.jobs if job.name is not None}
    for table in state.rank_tables:
        job = jobs.get((table.namespace, table.job))
        # Only a finished table is a claim about the placement (hccl.json "initializing" -> "completed").
        if job is not None and table.status == "completed":
            yield from _ranktable(state, job, table)


def _integer(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _ranktable(state: ClusterState, job: Job, table: RankTable) -> Iterator[Violation]:
    where = f"rank table {table.ref}"
    # server_id is the pod UID: one server entry per placed NPU pod (ascend-operator ranktable/common).
    servers = len(job.holdings)
    count = _integer(table.server_count)
    if count != servers:
        yield Violation(
            Code.RANKTABLE,
            job.ref,
            None,
            None,
            f"{where}: server_count {shown(table.server_count)} but the job has {servers} placed NPU pod(s)",
        )
    listed: dict[str, list[int]] = {}
    ranks: list[int | None] = []
    for server in table.servers:
        chips = listed.setdefault(str(server.host_ip), [])
        for device in server.devices:
            device_id = _integer(device.device_id)
            if device_id is None:
                yield Violation(
                    Code.RANKTABLE,
                    job.ref,
                    None,
                    None,
                    f"{where}: host {server.host_ip} lists device_id {shown(device.device_id)}, "
                    "not a chip id",
                )
            else:
                chips.append(device_id)
            ranks.append(_integer(device.rank_id))
    held: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    for holding in job.holdings:
        node = holding.node
        if node is not None and node.ip:
            held.setdefault(node.ip, []).extend(holding.chips)
            names[node.ip] = node.name
    for ip in sorted(listed.keys() | held.keys()):
        table_chips, node_chips = sorted(listed.get(ip, [])), sorted(held.get(ip, []))
        if table_chips != node_chips:
            node_name = names.get(ip)
            on = f"node {node_name} ({ip})" if node_name else f"host {ip} (no placed pod of the job)"
            yield Violation(
                Code.RANKTABLE,
                job.ref,
                None,
                node_name,
                f"{where}: {on} lists devices [{chip_list(table_chips)}], the job's pods hold "
                f"[{chip_list(node_chips)}]",
            )
    if sorted(ranks, key=lambda rank: -1 if rank is None else rank) != list(range(len(ranks))):
        yield Violation(
            Code.RANKTABLE,
            job.ref,
            None,
            None,
            f"{where}: rank_ids are not exactly 0..{len(ranks) - 1} each once",
        )
