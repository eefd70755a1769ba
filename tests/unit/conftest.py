"""Unit tests never touch the checkout's own `.ufc/`: in the full lane it belongs to the lab that the
README's main job deployed (tests/helpers/lab.py), whose runs, locks and PKI live there while unit tests
run beside it. A test that wants another state directory sets or removes UFC_STATE_DIR itself."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(Path(tmp_path_factory.mktemp("ufc-state"))))
