"""Every contract code has a rule, and valid and invalid table cases (the issue's "done when")."""

from __future__ import annotations

import re
from pathlib import Path

import test_placement_chip_rules as chip_rules
import test_placement_network_rules as network_rules
import test_placement_request_rules as request_rules
import test_placement_topology_rules as topology_rules

from ufcctl.domain.placement import PROFILES, RULES, Code

CONTRACT = Path(__file__).resolve().parents[4] / "docs/reference/npu-placement.md"

CONTRACT_CODES = {
    "CHIP_COUNT",
    "SELECTOR_MISSING",
    "SP_BLOCK",
    "TOR_LABEL",
    "SELECTOR_MISMATCH",
    "COUNT_MISMATCH",
    "CHIP_MISSING",
    "CHIP_CONFLICT",
    "CHIP_UNHEALTHY",
    "HCCS_RING",
    "RING_BALANCE",
    "CHIP_PAIR",
    "NODE_SHARED",
    "GANG_INCOMPLETE",
    "SUPERPOD_SPLIT",
    "TOR_SPAN",
    "TOR_CM_MISSING",
    "RANKTABLE",
    "NODE_UNKNOWN",
}

# code -> the table whose cases are about it (NODE_UNKNOWN has dedicated tests in the chip module)
TABLES = {
    "CHIP_COUNT": request_rules.CHIP_COUNT_CASES,
    "SELECTOR_MISSING": request_rules.SELECTOR_MISSING_CASES,
    "SP_BLOCK": request_rules.SP_BLOCK_CASES,
    "TOR_LABEL": request_rules.TOR_LABEL_CASES,
    "SELECTOR_MISMATCH": chip_rules.SELECTOR_MISMATCH_CASES,
    "COUNT_MISMATCH": chip_rules.COUNT_MISMATCH_CASES,
    "CHIP_MISSING": chip_rules.CHIP_MISSING_CASES,
    "CHIP_CONFLICT": chip_rules.CHIP_CONFLICT_CASES,
    "CHIP_UNHEALTHY": chip_rules.CHIP_UNHEALTHY_CASES,
    "HCCS_RING": topology_rules.HCCS_RING_CASES,
    "RING_BALANCE": topology_rules.RING_BALANCE_CASES,
    "CHIP_PAIR": topology_rules.CHIP_PAIR_CASES,
    "NODE_SHARED": topology_rules.NODE_SHARED_CASES,
    "GANG_INCOMPLETE": topology_rules.GANG_CASES,
    "SUPERPOD_SPLIT": topology_rules.SUPERPOD_CASES,
    "TOR_SPAN": network_rules.TOR_SPAN_CASES,
    "TOR_CM_MISSING": network_rules.TOR_CM_CASES,
    "RANKTABLE": network_rules.RANKTABLE_CASES,
}


def test_codes_are_exactly_the_contract() -> None:
    assert {code.value for code in Code} == CONTRACT_CODES


def test_every_code_has_exactly_one_rule() -> None:
    owners = [code.value for rule in RULES for code in rule.codes]
    assert sorted(owners) == sorted(CONTRACT_CODES)


def test_only_the_three_request_rules_run_without_nodes() -> None:
    assert {c.value for rule in RULES if not rule.needs_cluster for c in rule.codes} == {
        "CHIP_COUNT",
        "SP_BLOCK",
        "TOR_LABEL",
    }


def test_every_code_has_valid_and_invalid_cases() -> None:
    missing = []
    for code, table in TABLES.items():
        expectations = [case.values[-1] for case in table]
        if not any(code in expected for expected in expectations):
            missing.append(f"{code}: no invalid case")
        if not any(expected == [] for expected in expectations):
            missing.append(f"{code}: no valid case")
    assert not missing, missing
    assert set(TABLES) | {"NODE_UNKNOWN"} == CONTRACT_CODES


def _contract_section(title: str) -> str:
    text = CONTRACT.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"{CONTRACT.name} has no section {title!r}"
    return match.group(1)


def test_the_contract_page_lists_exactly_these_codes() -> None:
    """docs/reference/npu-placement.md is the contract: one bullet per code, in the enum's order."""
    listed = re.findall(r"^- `([A-Z_]+)`", _contract_section("Rules and violation codes"), re.M)
    assert listed == [code.value for code in Code]
    assert set(listed) == CONTRACT_CODES


def test_the_contract_page_lists_exactly_the_registered_profiles() -> None:
    rows = re.findall(r"^\| `([a-z0-9-]+)`", _contract_section("Hardware profiles"), re.M)
    assert sorted(rows) == PROFILES.types()
