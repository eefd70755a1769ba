"""The fleet side of `ufcctl npu check` (tier 2 of the NPU fabric): which device IPs each chip pings.

Each chip i of a node pings chip i of every other node under the same ToR switch (npu_tor_id): the
pairs a collective's ring or tree puts on that switch first, and the ones tier 1 cannot see (tier 1
checks a chip's own link, health, address and LLDP neighbour; a wrong VLAN, MTU or a switch port
fault shows only on a packet between two chips). The controller lists every ToR's addresses once per
run, by chip; a node drops its own (roles/ascend_driver, module ufc_ascend_driver, mode fabric).
Per ToR rather than per node: at 16,000 nodes the list is 128,000 addresses once, not once per peer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ufcctl.domain.npu.fabric_plan import ChipPlan


def tor_addresses(plans: Iterable[tuple[Any, Sequence[ChipPlan]]]) -> dict[str, dict[str, list[str]]]:
    """{str(npu_tor_id): {str(chip): [device IP of that chip on each node under the ToR]}}, from
    (npu_tor_id, the node's plan) pairs; nodes without a plan or ToR add nothing."""
    tors: dict[str, dict[str, list[str]]] = {}
    for tor, plan in plans:
        if tor is None or not plan:
            continue
        chips = tors.setdefault(str(tor), {})
        for chip in plan:
            chips.setdefault(str(chip.chip), []).append(str(chip.address))
    return tors

