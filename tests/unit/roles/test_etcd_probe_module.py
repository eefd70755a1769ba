"""roles/etcd's etcd_probe module: what it reads from dpkg, systemd, keys and certificates."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
probe = load_file(ROOT / "roles" / "etcd" / "library" / "etcd_probe.py")

DPKG = """\
Package: etcd-client
Status: install ok installed
Version: 3.4.23-4

Package: etcd-server
Status: deinstall ok config-files
Description: highly-available key value store
 continuation line: with a colon

Package: python3
Status: install ok installed
"""


@pytest.mark.parametrize(
    ("name", "installed"),
    [
        pytest.param("etcd-client", True, id="installed"),
        pytest.param("etcd-server", False, id="removed-config-files-left"),
        pytest.param("etcd", False, id="never-installed"),
        pytest.param("", False, id="not-asked"),
    ],
)
def test_package_installed_reads_dpkg_status(tmp_path, monkeypatch, name, installed) -> None:
    (tmp_path / "status").write_text(DPKG)
    monkeypatch.setattr(probe, "DPKG_STATUS", str(tmp_path / "status"))
    assert probe.package_installed(name) is installed


class FakeModule:
    def __init__(self, out: str, rc: int = 0) -> None:
        self.out, self.rc, self.commands = out, rc, []

    def get_bin_path(self, name: str) -> str:
        return f"/usr/bin/{name}"

    def run_command(self, command: list[str]) -> tuple[int, str, str]:
        self.commands.append(command)
        return self.rc, self.out, ""


POLICY = """etcd-server:
  Installed: (none)
  Candidate: 3.4.23-4+b4
  Version table:
     3.4.23-4+b4 500
"""


@pytest.mark.parametrize(
    ("name", "policy", "version", "asked"),
    [
        pytest.param("etcd-client", POLICY, "3.4.23-4", False, id="installed-from-dpkg"),
        pytest.param("etcd-server", POLICY, "3.4.23-4+b4", True, id="apt-candidate"),
        pytest.param("etcd", "etcd:\n  Installed: (none)\n  Candidate: (none)\n", "", True, id="none"),
        pytest.param("", POLICY, "", False, id="not-asked"),
    ],
)
def test_package_version_installed_else_apts_candidate(tmp_path, monkeypatch, name, policy, version,
                                                        asked) -> None:
    (tmp_path / "status").write_text(DPKG)
    monkeypatch.setattr(probe, "DPKG_STATUS", str(tmp_path / "status"))
    module = FakeModule(policy)
    assert probe.package_version(module, name) == version
    assert module.commands == ([["/usr/bin/apt-cache", "policy", name]] if asked else [])


def test_unit_states_come_from_one_systemctl_show() -> None:
    out = (
        "Id=etcd-core.service\nActiveState=active\nUnitFileState=enabled\n\n"
        "Id=ufcctl-etcd-defrag@core.timer\nActiveState=inactive\nUnitFileState=disabled\n\n"
        "Id=etcd-pods.service\nActiveState=inactive\nUnitFileState=\n"
    )
    module = FakeModule(out)
    units = ["etcd-core.service", "etcd-pods.service", "ufcctl-etcd-defrag@core.timer"]
    assert probe.unit_states(module, units) == {
        "etcd-core.service": {"active": "active", "enabled": "enabled"},
        "etcd-pods.service": {"active": "inactive", "enabled": ""},
        "ufcctl-etcd-defrag@core.timer": {"active": "inactive", "enabled": "disabled"},
    }
    assert len(module.commands) == 1 and module.commands[0][-3:] == units
    failed = probe.unit_states(FakeModule("", rc=1), ["etcd-core.service"])
    assert failed == {"etcd-core.service": {"active": "unknown", "enabled": "unknown"}}
    assert probe.unit_states(module, []) == {}


def _write_key(path: Path, key: Any, mode: int) -> str:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(mode)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def test_key_info_returns_the_public_half_and_the_file_attributes(tmp_path) -> None:
    public = _write_key(tmp_path / "member.key", ec.generate_private_key(ec.SECP256R1()), 0o600)
    info = probe.key_info(str(tmp_path / "member.key"))
    assert info == {
        "exists": True,
        "mode": "0600",
        "owner": pwd.getpwuid(os.getuid()).pw_name,
        "group": info["group"],
        "type": "EC",
        "curve": "secp256r1",
        "public_key": public,
    }
    assert "PRIVATE" not in str(info)
    _write_key(tmp_path / "rsa.key", rsa.generate_private_key(public_exponent=65537, key_size=2048), 0o640)
    rsa_info = probe.key_info(str(tmp_path / "rsa.key"))
    assert (rsa_info["type"], rsa_info["curve"], rsa_info["mode"]) == ("RSAPrivateKey", None, "0640")
    assert probe.key_info(str(tmp_path / "absent.key")) == {"exists": False}
    (tmp_path / "garbage.key").write_text("not a key")
    assert probe.key_info(str(tmp_path / "garbage.key"))["error"] == "unreadable key: ValueError"


def test_certificates_and_health(tmp_path) -> None:
    (tmp_path / "a.crt").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    assert probe.cert_text(str(tmp_path / "a.crt")).endswith("CERTIFICATE-----\n")
    assert probe.cert_text(str(tmp_path / "absent.crt")) is None
    # no client certificate yet (first deploy): unhealthy, not an error
    check = {"url": "https://127.0.0.1:9/health", "ca": str(tmp_path / "ca.crt"), "cert": "x", "key": "y"}
    assert probe.healthy(check) is False
