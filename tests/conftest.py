"""Hooks for every test: the full lane's workers run the shared lab's tests first in line for the CPU
(tests/helpers/worker_priority.py)."""

from __future__ import annotations

import pytest

from tests.helpers import worker_priority


@pytest.hookimpl(tryfirst=True)  # before the fixtures' setup: the stack's main job runs in it
def pytest_runtest_setup(item: pytest.Item) -> None:
    worker_priority.apply(item)
