"""Missing lab tools are named with the Debian packages that provide them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.errors import EnvironmentMissing
from ufcctl.lab.podman import require_tools


@pytest.mark.parametrize(
    ("tools", "named", "install"),
    [
        (["podman"], "podman", "apt-get install podman"),
        (["netavark"], "netavark", "apt-get install aardvark-dns netavark"),
        (["ssh", "ssh-keygen"], "ssh, ssh-keygen", "apt-get install openssh-client"),
        (["runc", "debootstrap"], "runc, debootstrap", "apt-get install debootstrap runc"),
    ],
    ids=["podman", "netavark-with-dns", "one-package-two-tools", "two-packages"],
)
def test_missing_tools_name_their_packages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           tools: list[str], named: str, install: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("ufcctl.lab.podman.EXTRA_BIN_DIRS", ())
    with pytest.raises(EnvironmentMissing) as err:
        require_tools(tools)
    assert err.value.message.startswith(f"{named} not found")
    assert install in (err.value.hint or "")


def test_present_tools_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tool = tmp_path / "podman"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("ufcctl.lab.podman.EXTRA_BIN_DIRS", ())
    require_tools(["podman"])
