"""Cutting batches is linear in the nodes: each node is copied O(1) times, whatever the shape.

Counted, not timed: the domains' member lists count every element that slicing or concatenation
copies out of them (and out of the lists made from them). The quadratic cut (`members =
members[size:]`, `hosts = hosts + members`) copies n**2 / 2 elements at --batch 1, which took
minutes at the 200,000-host cap before the first node started.
"""

from __future__ import annotations

from typing import Any, SupportsIndex

import pytest

from ufcctl.domain.rollout.plan import _pack


class Copies:
    count = 0


class CountingList(list[str]):
    """A list that counts the elements its slices and concatenations copy, and passes that on."""

    def __getitem__(self, key: SupportsIndex | slice) -> Any:
        got = super().__getitem__(key)
        if isinstance(key, slice):
            Copies.count += len(got)
            return CountingList(got)
        return got

    def __add__(self, other: Any) -> CountingList:  # type: ignore[override]  # counts, then as list's
        Copies.count += len(self) + len(other)
        return CountingList(list(self) + list(other))

    def __radd__(self, other: Any) -> CountingList:
        Copies.count += len(self) + len(other)
        return CountingList(list(other) + list(self))


def copies(nodes: int, per_domain: int, size: int) -> int:
    domains: list[tuple[str, list[str]]] = [(f"d{d}" if per_domain < nodes else "",
                CountingList(f"n{i}" for i in range(d * per_domain, min(nodes, (d + 1) * per_domain))))
               for d in range(-(-nodes // per_domain))]
    Copies.count = 0
    batches = _pack(domains, size)
    assert sum(len(hosts) for hosts, _ in batches) == nodes
    return Copies.count


# (nodes per failure domain, batch size) at N nodes; "all" is one domain (--by none)
SHAPES = {
    "by-none-batch-1": (None, 1),
    "by-none-batch-7": (None, 7),
    "tor-1-node-one-big-batch": (1, 10**9),
    "tor-16-batch-half-the-fleet": (16, None),
    "tor-24-batch-16": (24, 16),
}
N = 4000


@pytest.mark.parametrize(("per_domain", "size"), SHAPES.values(), ids=SHAPES.keys())
def test_each_node_is_copied_a_bounded_number_of_times(per_domain: int | None, size: int | None) -> None:
    for nodes in (N, 2 * N):
        count = copies(nodes, per_domain or nodes, size or nodes // 2)
        assert count <= 2 * nodes, f"{count} element copies for {nodes} nodes"
