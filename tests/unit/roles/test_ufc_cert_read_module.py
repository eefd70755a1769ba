"""roles/ufc_common's ufc_cert_read module: the first certificate of each file, never a key."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.helpers.certs import kubeconfig, make_pem
from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
module = load_file(ROOT / "roles" / "ufc_common" / "library" / "ufc_cert_read.py")
LATER = dt.datetime.now(dt.UTC) + dt.timedelta(days=365)


def test_a_file_with_certificate_and_key_returns_only_the_certificate(tmp_path: Path) -> None:
    path = tmp_path / "kubelet-client-current.pem"
    path.write_text(make_pem("system:node:w1", LATER, with_key=True))
    link = tmp_path / "link.pem"
    link.symlink_to(path)  # kubelet's current file is a symbolic link
    for p in (path, link):
        got = module.read_one(str(p))
        assert got["error"] == "" and got["pem"].startswith("-----BEGIN CERTIFICATE-----")
        assert "PRIVATE KEY" not in got["pem"] and got["pem"].rstrip().endswith("-----END CERTIFICATE-----")


def test_a_kubeconfig_gives_its_client_certificate_only(tmp_path: Path) -> None:
    pem = make_pem("kubernetes-admin", LATER, with_key=True)
    path = tmp_path / "admin.conf"
    path.write_text(kubeconfig(pem))
    got = module.read_one(str(path))
    assert got["error"] == "" and got["pem"] == pem[:pem.index("-----END CERTIFICATE-----") + 25] + "\n"
    assert "PRIVATE KEY" not in got["pem"]


@pytest.mark.parametrize(
    ("make", "pem", "error"),
    [
        pytest.param(lambda p: None, None, "", id="absent"),
        pytest.param(lambda p: p.mkdir(), None, "not a regular file", id="directory"),
        pytest.param(lambda p: p.write_text("hello"), None, "no PEM certificate in the file", id="no-pem"),
        pytest.param(lambda p: p.write_text("- user:\n    client-certificate-data: bm90IGEgY2VydA==\n"),
                     None, "no PEM certificate in the file", id="kubeconfig-without-a-certificate"),
        pytest.param(lambda p: p.write_bytes(b"x" * (module.MAX_BYTES + 1)), None, "larger than",
                     id="too-large"),
    ],
)
def test_files_without_a_certificate(tmp_path: Path, make, pem: str | None, error: str) -> None:
    path = tmp_path / "x.crt"
    make(path)
    got = module.read_one(str(path))
    assert got["pem"] is pem and error in got["error"] and (error or got["error"] == "")
