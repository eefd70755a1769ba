"""Parallel runs (pytest-xdist `--dist loadgroup`, see scripts/test.sh): every lab test module stays on
one worker, because its module-scoped fixture owns one lab (containers, network, subnet) and its tests
run in order against it. Molecule scenarios are independent (own instance names), so they spread."""

from __future__ import annotations

import pytest

INDEPENDENT = {"test_molecule.py"}


# tryfirst: xdist's own collection hook turns the marker into the scheduling group; it must see it.
# Without it the markers came too late and one lab module ran on two workers at once (one worker's
# `lab down` pulled the lab from under the other's tests).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent.name == "integration" and item.path.name not in INDEPENDENT:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
