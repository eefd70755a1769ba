"""Fixtures shared by the rollout tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ufcctl.rollout.store import StateStore


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StateStore]:
    """A fresh run store; KUBECONFIG names a missing file, so drains are reported skipped, never run."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    s = StateStore(tmp_path / "state.db")
    yield s
    s.close()
