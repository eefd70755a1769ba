"""The hardware profile registry: one entry per contract row, duplicates and unknown types rejected."""

from __future__ import annotations

import pytest

from ufcctl.domain.placement import (
    PROFILES,
    DuplicateProfileError,
    HardwareProfile,
    ProfileRegistry,
    UnknownProfileError,
    profile_for,
)

EVEN = set(range(2, 17, 2))
# The contract's table (docs/reference/npu-placement.md), restated independently of profiles.py:
# type -> (chips/node, ring size, pair size, single-pod counts, multi-pod counts, super pod)
CONTRACT = {
    "module": (8, 4, None, {1, 2, 4, 8}, {1, 2, 4, 8}, False),
    "half": (4, 4, None, {1, 2, 4}, {1, 2, 4}, False),
    "card": (2, None, None, {1, 2}, {2}, False),
    "card-910b-2": (2, None, None, {1, 2}, {1, 2}, False),
    "module-910b-8": (8, None, None, set(range(1, 9)), set(range(1, 9)), False),
    "module-910b-16": (
        16,
        8,
        None,
        set(range(1, 9)) | {10, 12, 14, 16},
        set(range(1, 9)) | {10, 12, 14, 16},
        False,
    ),
    "module-a3-16": (16, None, 2, {1} | EVEN, EVEN, False),
    "module-a3-16-super-pod": (16, None, 2, set(), set(), True),
    "module-a3-8-super-pod": (8, None, 2, set(), set(), True),
}


@pytest.mark.parametrize("accelerator_type", sorted(CONTRACT))
def test_profile_matches_contract_row(accelerator_type: str) -> None:
    chips, ring, pair, single, multi, super_pod = CONTRACT[accelerator_type]
    profile = PROFILES.get(accelerator_type)
    assert (profile.chips_per_node, profile.ring_size, profile.pair_size) == (chips, ring, pair)
    assert (set(profile.single_pod_counts), set(profile.multi_pod_counts)) == (single, multi)
    assert profile.super_pod is super_pod
    assert profile.source, "every profile cites where its numbers come from"


def test_registry_holds_exactly_the_contract_types() -> None:
    assert PROFILES.types() == sorted(CONTRACT)


def test_one_pod_per_node_profiles() -> None:
    """NODE_SHARED applies to module, module-a3-16 and the SuperPoD profiles only."""
    assert {p.accelerator_type for p in PROFILES if p.one_pod_per_node} == {
        "module",
        "module-a3-16",
        "module-a3-16-super-pod",
        "module-a3-8-super-pod",
    }


def test_balanced_cross_ring_only_on_910b_16() -> None:
    assert [p.accelerator_type for p in PROFILES if p.balanced_cross_ring] == ["module-910b-16"]


def test_missing_type_means_module() -> None:
    assert profile_for(None) is PROFILES.get("module")
    assert profile_for("") is PROFILES.get("module")


@pytest.mark.parametrize("name", ["module-910b-4", "Module", "card-910b-infer", "350-Atlas-8"])
def test_unknown_type_raises_and_lists_known(name: str) -> None:
    with pytest.raises(UnknownProfileError, match="module-910b-8") as info:
        profile_for(name)
    assert info.value.accelerator_type == name


def test_duplicate_registration_raises() -> None:
    registry = ProfileRegistry()
    first = HardwareProfile("x", 8, frozenset({8}), frozenset({8}))
    registry.register(first)
    with pytest.raises(DuplicateProfileError, match="'x'"):
        registry.register(HardwareProfile("x", 16, frozenset({16}), frozenset({16})))
    assert registry.get("x") is first, "a rejected duplicate must not replace the original"


def test_default_registry_rejects_re_registration() -> None:
    with pytest.raises(DuplicateProfileError):
        PROFILES.register(HardwareProfile("module", 8, frozenset(), frozenset()))
    assert PROFILES.get("module").chips_per_node == 8


def test_profiles_are_frozen() -> None:
    with pytest.raises(AttributeError):
        PROFILES.get("module").chips_per_node = 16  # type: ignore[misc]


def test_a_new_variant_is_numbers_not_code() -> None:
    """A hypothetical 4-ring x 4-chip type gets ring rules from its numbers alone."""
    from placement_kube import node, pod

    from ufcctl.domain.placement.parse import parse_objects
    from ufcctl.domain.placement.rules import run_rules
    from ufcctl.domain.placement.state import build_state

    registry_profile = HardwareProfile(
        "ring4x4", 16, frozenset({1, 2, 4, 16}), frozenset({4}), ring_size=4, source="test"
    )
    PROFILES.register(registry_profile)
    try:
        state = build_state(
            parse_objects(
                [
                    (None, node("n1", "ring4x4")),
                    (None, pod("p", chips=[3, 4], on="n1", job="j", selector="ring4x4")),
                ]
            )
        )
        assert [v.code.value for v in run_rules(state)] == ["HCCS_RING"]
    finally:
        PROFILES._by_type.pop("ring4x4")
