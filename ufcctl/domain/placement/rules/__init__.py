"""Every placement rule, in contract order; `run_rules` applies those the input allows."""

from __future__ import annotations

from ufcctl.domain.placement.model import ClusterState
from ufcctl.domain.placement.rules import chips, network, request, topology
from ufcctl.domain.placement.rules.base import DEFAULT_SUPER_POD_SIZE, Options, Rule
from ufcctl.domain.placement.violations import Code, Violation

RULES: tuple[Rule, ...] = (
    # Request level: a job file alone gets these three (contract, Clarifications).
    Rule((Code.CHIP_COUNT,), False, request.check_chip_count),
    Rule((Code.SP_BLOCK,), False, request.check_sp_block),
    Rule((Code.TOR_LABEL,), False, request.check_tor_label),
    # Need Nodes in the input.
    Rule((Code.SELECTOR_MISSING,), True, request.check_selector_missing),
    Rule((Code.TOR_CM_MISSING,), True, network.check_tor_cm_missing),
    Rule((Code.NODE_UNKNOWN,), True, chips.check_node_unknown),
    Rule((Code.SELECTOR_MISMATCH,), True, chips.check_selector_mismatch),
    Rule((Code.COUNT_MISMATCH,), True, chips.check_count_mismatch),
    Rule((Code.CHIP_MISSING,), True, chips.check_chip_missing),
    Rule((Code.CHIP_CONFLICT,), True, chips.check_chip_conflict),
    Rule((Code.CHIP_UNHEALTHY,), True, chips.check_chip_unhealthy),
    Rule((Code.HCCS_RING,), True, topology.check_hccs_ring),
    Rule((Code.RING_BALANCE,), True, topology.check_ring_balance),
    Rule((Code.CHIP_PAIR,), True, topology.check_chip_pair),
    Rule((Code.NODE_SHARED,), True, topology.check_node_shared),
    Rule((Code.GANG_INCOMPLETE,), True, topology.check_gang_incomplete),
    Rule((Code.SUPERPOD_SPLIT,), True, topology.check_superpod_split),
    Rule((Code.TOR_SPAN,), True, network.check_tor_span),
    Rule((Code.RANKTABLE,), True, network.check_ranktable),
)


def run_rules(state: ClusterState, options: Options | None = None) -> list[Violation]:
    options = options or Options()
    found: list[Violation] = []
    for rule in RULES:
        if state.has_nodes or not rule.needs_cluster:
            found.extend(rule.check(state, options))
    found.sort(key=Violation.sort_key)
    return found


__all__ = ["DEFAULT_SUPER_POD_SIZE", "RULES", "Options", "Rule", "run_rules"]
