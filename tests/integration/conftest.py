"""Parallel runs (pytest-xdist `--dist loadgroup`, see scripts/test.sh): every lab test module stays on
one worker, because its module-scoped fixture owns one lab (containers, network, subnet) and its tests
run in order against it. The deploy, etcd, NFS and VIP modules share one deployed lab (the session
fixture `stack`), so the four of them form one group. Molecule scenarios are independent (own instance
names), so they spread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.lab import STACK_MODULES, Stack, deployed_stack
from tests.helpers.worker_priority import STACK_GROUP

INDEPENDENT = {"test_molecule.py"}


def xdist_group_of(module: str) -> str | None:
    """The scheduling group of an integration test module (None: its tests may spread)."""
    if module in INDEPENDENT:
        return None
    if module in STACK_MODULES:
        return STACK_GROUP  # first in line for the CPU (tests/helpers/worker_priority.py)
    return module.removesuffix(".py")


# tryfirst: xdist's own collection hook turns the marker into the scheduling group; it must see it.
# Without it the markers came too late and one lab module ran on two workers at once (one worker's
# `lab down` pulled the lab from under the other's tests).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent.name == "integration" and (group := xdist_group_of(item.path.name)):
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The README's main job (`./scripts/run.sh`: lab up, both deploy phases, health) run once, for the
    modules in STACK_MODULES.
    They run in file order on one worker: test_deploy_lab (second deploy 0 changed, check mode) comes
    before the modules that stop services (etcd members, haproxy, keepalived) and start them again."""
    with deployed_stack(tmp_path_factory.mktemp("stack")) as deployed:
        yield deployed
