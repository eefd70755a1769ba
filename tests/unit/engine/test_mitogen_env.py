"""`--accelerate mitogen`: used only when Mitogen imports and supports the installed ansible-core,
otherwise a clear error. Mitogen is not a dependency, so the three cases use stand-in modules."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from ansible.release import __version__ as ansible_version

from ufcctl.engine.runner import mitogen_env
from ufcctl.errors import EnvironmentMissing

INSTALLED = tuple(int(p) for p in ansible_version.split(".")[:2])


def _fake_mitogen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, low: tuple, high: tuple) -> Path:
    package = types.ModuleType("ansible_mitogen")
    package.__file__ = str(tmp_path / "ansible_mitogen" / "__init__.py")
    loaders = types.ModuleType("ansible_mitogen.loaders")
    loaders.ANSIBLE_VERSION_MIN = low  # type: ignore[attr-defined]
    loaders.ANSIBLE_VERSION_MAX = high  # type: ignore[attr-defined]
    package.loaders = loaders  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ansible_mitogen", package)
    monkeypatch.setitem(sys.modules, "ansible_mitogen.loaders", loaders)
    return tmp_path / "ansible_mitogen" / "plugins" / "strategy"


def test_missing_mitogen_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ansible_mitogen", None)  # import raises ImportError
    with pytest.raises(EnvironmentMissing, match="Mitogen is not installed"):
        mitogen_env()


def test_mitogen_for_another_ansible_core_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    newer = (INSTALLED[0], INSTALLED[1] + 1)
    _fake_mitogen(monkeypatch, tmp_path, newer, (newer[0], newer[1] + 2))
    with pytest.raises(EnvironmentMissing, match=f"installed is {ansible_version}"):
        mitogen_env()


def test_supported_mitogen_selects_its_strategy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    strategies = _fake_mitogen(monkeypatch, tmp_path, (2, 0), (INSTALLED[0], INSTALLED[1]))
    env = mitogen_env()
    assert env == {"ANSIBLE_STRATEGY_PLUGINS": str(strategies), "ANSIBLE_STRATEGY": "mitogen_linear"}
