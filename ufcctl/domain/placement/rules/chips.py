"""Placement rules about single chips: selector vs node, allocation count, range, conflicts, health."""

from __future__ import annotations

from collections.abc import Iterator

from ufcctl.domain.placement import keys
from ufcctl.domain.placement.model import ClusterState, Holding
from ufcctl.domain.placement.rules.base import Options, chip_list
from ufcctl.domain.placement.violations import Code, Violation
from ufcctl.errors import shown


def _violation(code: Code, holding: Holding, message: str) -> Violation:
    return Violation(code, holding.job_ref, holding.pod.ref, holding.node_name, message)


def check_node_unknown(state: ClusterState, options: Options) -> Iterator[Violation]:
    nodes = state.nodes
    for job in state.jobs:
        for pod in job.pods:
            if pod.placed and pod.node_name not in nodes:
                yield Violation(
                    Code.NODE_UNKNOWN,
                    job.ref,
                    pod.ref,
                    pod.node_name,
                    f"pod runs on node {pod.node_name}, which is not in the input; node checks skipped",
                )


def check_selector_mismatch(state: ClusterState, options: Options) -> Iterator[Violation]:
    nodes = state.nodes
    for job in state.jobs:
        for pod in job.pods:
            if not pod.placed or pod.selector is None:
                continue
            node = nodes.get(pod.node_name or "")
            if node is not None and node.accelerator_type != pod.selector:
                label = repr(node.accelerator_type) if node.accelerator_type else "no accelerator-type label"
                yield Violation(
                    Code.SELECTOR_MISMATCH,
                    job.ref,
                    pod.ref,
                    node.name,
                    f"pod selects accelerator-type={shown(pod.selector)} but its node has {label}",
                )


def check_count_mismatch(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        for holding in job.holdings:
            request = holding.pod.request
            if not holding.annotated:
                yield _violation(
                    Code.COUNT_MISMATCH,
                    holding,
                    f"placed NPU pod requests {request} chips but has no "
                    f"{keys.ALLOCATION_ANNOTATION} annotation",
                )
            elif holding.held != request or holding.duplicates:
                repeated = f" (repeats {chip_list(set(holding.duplicates))})" if holding.duplicates else ""
                yield _violation(
                    Code.COUNT_MISMATCH,
                    holding,
                    f"allocation {shown(holding.pod.allocation)} names {holding.held} distinct "
                    f"chips{repeated}; "
                    f"the pod requests {request}",
                )


def check_chip_missing(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        for holding in job.holdings:
            if holding.bad_entries:
                node = holding.node
                scope = (
                    f"{node.name} ({node.hardware_type}) has chips 0-{node.profile.chips_per_node - 1}"
                    if node is not None and node.profile is not None
                    else f"expected {keys.CHIP_NAME_PREFIX}<id>"
                )
                entries = ", ".join(repr(entry) for entry in holding.bad_entries)
                yield _violation(
                    Code.CHIP_MISSING, holding, f"allocation entries {entries} are not chips: {scope}"
                )


def check_chip_conflict(state: ClusterState, options: Options) -> Iterator[Violation]:
    holders: dict[str, dict[int, Holding]] = {}
    for job in state.jobs:
        for holding in job.holdings:
            taken = holders.setdefault(holding.node_name, {})
            clashes: dict[str, list[int]] = {}
            for chip in holding.chips:
                first = taken.setdefault(chip, holding)
                if first is not holding:
                    clashes.setdefault(first.pod.ref, []).append(chip)
            for other, chips in clashes.items():
                yield _violation(
                    Code.CHIP_CONFLICT,
                    holding,
                    f"chip(s) {chip_list(chips)} on node {holding.node_name} are also held by pod {other}",
                )


def check_chip_unhealthy(state: ClusterState, options: Options) -> Iterator[Violation]:
    health = state.health
    for job in state.jobs:
        for holding in job.holdings:
            if holding.node is None:
                continue
            report = health.get(holding.node.name)
            if report is None:
                continue
            bad = report.unhealthy.intersection(holding.chips)
            if bad:
                yield _violation(
                    Code.CHIP_UNHEALTHY,
                    holding,
                    f"pod holds chip(s) {chip_list(bad)} that {holding.node.name} reports Unhealthy",
                )
            if job.multi_pod:
                cut_off = report.network_unhealthy.intersection(holding.chips)
                if cut_off:
                    yield _violation(
                        Code.CHIP_UNHEALTHY,
                        holding,
                        f"multi-pod job's pod holds chip(s) {chip_list(cut_off)} that {holding.node.name} "
                        f"reports NetworkUnhealthy",
                    )
