"""Ascend hardware profiles keyed by the node label `accelerator-type`: one registry of frozen data."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ufcctl.errors import shown

# What the scheduler assumes for a node or job without an `accelerator-type`: 910A 8-chip rules
# (ascend-for-volcano internal/npu/factory.go, handler "huawei.com/Ascend910module").
DEFAULT_ACCELERATOR_TYPE = "module"


class UnknownProfileError(LookupError):
    """An `accelerator-type` that no registered profile describes."""

    def __init__(self, accelerator_type: str, known: list[str]):
        super().__init__(f"unknown accelerator-type {shown(accelerator_type)} (known: {', '.join(known)})")
        self.accelerator_type = accelerator_type


class DuplicateProfileError(ValueError):
    """A second profile registered under an `accelerator-type` that already has one."""


@dataclass(frozen=True, slots=True)
class HardwareProfile:
    """The topology facts of one node type; every rule reads these numbers, none hard-codes a type."""

    accelerator_type: str
    chips_per_node: int
    # Chips one pod may request when its job has one NPU pod / several. Empty for SuperPoD
    # profiles, whose counts are judged by the sp-block rules (contract, Clarifications).
    single_pod_counts: frozenset[int]
    multi_pod_counts: frozenset[int]
    # HCCS ring = chip ids [k*ring_size, (k+1)*ring_size). None: full mesh, no ring rule.
    ring_size: int | None = None
    # A pod with more chips than one ring: False = it must hold the whole node;
    # True = it must hold the same number of chips in each ring (module-910b-16).
    balanced_cross_ring: bool = False
    # Chips bound in pairs {2k, 2k+1} (A3 SIO pairs): a multi-chip pod takes whole pairs.
    pair_size: int | None = None
    super_pod: bool = False
    # Multi-pod jobs may place at most one NPU pod per node.
    one_pod_per_node: bool = False
    source: str = ""

    def allowed_counts(self, multi_pod: bool) -> frozenset[int]:
        return self.multi_pod_counts if multi_pod else self.single_pod_counts

    def ring_of(self, chip: int) -> int:
        """The HCCS ring index of a chip; only meaningful when `ring_size` is set."""
        return chip // self.ring_size if self.ring_size else 0


def _span(first: int, last: int, step: int = 1) -> frozenset[int]:
    return frozenset(range(first, last + 1, step))


class ProfileRegistry:
    """Profiles by accelerator-type. A duplicate key and an unknown type are errors, never defaults."""

    def __init__(self) -> None:
        self._by_type: dict[str, HardwareProfile] = {}

    def register(self, profile: HardwareProfile) -> HardwareProfile:
        if profile.accelerator_type in self._by_type:
            raise DuplicateProfileError(
                f"accelerator-type {shown(profile.accelerator_type)} is already registered"
            )
        self._by_type[profile.accelerator_type] = profile
        return profile

    def get(self, accelerator_type: str) -> HardwareProfile:
        try:
            return self._by_type[accelerator_type]
        except KeyError:
            raise UnknownProfileError(accelerator_type, self.types()) from None

    def types(self) -> list[str]:
        return sorted(self._by_type)

    def __contains__(self, accelerator_type: object) -> bool:
        return accelerator_type in self._by_type

    def __iter__(self) -> Iterator[HardwareProfile]:
        return iter(self._by_type.values())

    def __len__(self) -> int:
        return len(self._by_type)


_AFV = "ascend-for-volcano internal/npu/"

# chips_per_node of each profile: docs/reference/npu-placement.md, "Hardware profiles" (chips/node),
# which restates the scheduler's per-handler maximum (`source` below names the handler).

PROFILES = ProfileRegistry()
for _profile in (
    # Atlas 800 training server, 910A: rings {0-3},{4-7}; invalid counts {3,5,6,7}.
    HardwareProfile(
        "module",
        8,
        _span(1, 2) | {4, 8},
        _span(1, 2) | {4, 8},
        ring_size=4,
        one_pod_per_node=True,
        source=_AFV + "ascend910/ascend910old/module910x8",
    ),
    # Half-populated 910A server: one ring of 4; invalid {3}.
    HardwareProfile("half", 4, _span(1, 2) | {4}, _span(1, 2) | {4}, ring_size=4, source=_AFV + "factory.go"),
    # Atlas 300T training card: 1 or 2 alone, 2 in a distributed job (MindCluster yaml docs).
    HardwareProfile(
        "card", 2, _span(1, 2), frozenset({2}), source="docs/zh/scheduling/06_api/15_yaml_configuration.md"
    ),
    # Atlas 300T A2 card.
    HardwareProfile("card-910b-2", 2, _span(1, 2), _span(1, 2), source="v6.0.0 " + _AFV + "card910bx2"),
    # Atlas 800T A2: full mesh, no chip affinity.
    HardwareProfile("module-910b-8", 8, _span(1, 8), _span(1, 8), source=_AFV + "factory.go module910bx8"),
    # Atlas 200T A2 Box16: rings {0-7},{8-15}; invalid {9,11,13,15}; >8 split evenly.
    HardwareProfile(
        "module-910b-16",
        16,
        _span(1, 8) | {10, 12, 14, 16},
        _span(1, 8) | {10, 12, 14, 16},
        ring_size=8,
        balanced_cross_ring=True,
        source=_AFV + "ascend910b/module910bx16",
    ),
    # Atlas 800T A3: SIO pairs; 1 chip only for a single-pod job; no two pods of a job per node.
    HardwareProfile(
        "module-a3-16",
        16,
        frozenset({1}) | _span(2, 16, 2),
        _span(2, 16, 2),
        pair_size=2,
        one_pod_per_node=True,
        source=_AFV + "ascend910a3/module910a3x16",
    ),
    # Atlas 900 A3 SuperPoD, 16 and 8 dies per node: counts judged by sp-block rules.
    HardwareProfile(
        "module-a3-16-super-pod",
        16,
        frozenset(),
        frozenset(),
        pair_size=2,
        super_pod=True,
        one_pod_per_node=True,
        source=_AFV + "ascend910a3/superpod",
    ),
    HardwareProfile(
        "module-a3-8-super-pod",
        8,
        frozenset(),
        frozenset(),
        pair_size=2,
        super_pod=True,
        one_pod_per_node=True,
        source=_AFV + "ascend910a3/superpod",
    ),
):
    PROFILES.register(_profile)


# Every `accelerator-type` ufcctl knows, in registration order: what `inventory check` accepts for
# npu_accelerator_type and what roles/ascend_driver's health gate counts chips for (its generated
# vars/main/chips_by_type.yml; `python -m ufcctl.app.role_vars` rewrites it from this registry).
ACCELERATOR_TYPES: tuple[str, ...] = tuple(p.accelerator_type for p in PROFILES)


def chips_by_type() -> dict[str, int]:
    """Chips per node of every registered type (the health gate's expected `npu-smi info` rows)."""
    return {p.accelerator_type: p.chips_per_node for p in PROFILES}


def profile_for(accelerator_type: str | None) -> HardwareProfile:
    """The profile for a label or selector value; absent means `module`; unknown raises."""
    return PROFILES.get(accelerator_type or DEFAULT_ACCELERATOR_TYPE)
