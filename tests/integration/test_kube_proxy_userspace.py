"""kube-proxy's lab image carries a complete iptables userspace: Debian 12's packages, fetched with this
machine's apt (cached under ~/.cache/ufcctl-lab/debs: a few MB once per machine), and only what the
programs load (tests/lab_build/netfilter.py). The files are written to a folder and the programs run there
under chroot: the loader finds every library in the folder or the program does not start, so a closure
that leans on the host's own /lib would fail here. No container, and nothing changes the host's rules: only
version and help output (a plugin's help makes iptables dlopen it).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.lab_build import netfilter

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    userspace = netfilter.kube_proxy_userspace(say=lambda _: None)
    assert {d.package for d in userspace.packages} == set(netfilter.PACKAGES)
    top = tmp_path_factory.mktemp("kube-proxy-root")
    for path, entry in userspace.files.items():
        target = top / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.target is not None:
            target.symlink_to(entry.target)
        else:
            target.write_bytes(entry.data or b"")
            target.chmod(entry.mode)
    return top


def _chroot(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True, timeout=60,
                          check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root (CI runs as root)")
@pytest.mark.parametrize(("argv", "says"), [
    (("/usr/sbin/iptables", "-V"), "iptables v1.8.9 (nf_tables)"),
    (("/usr/sbin/ip6tables-save", "-V"), "(nf_tables)"),
    (("/usr/sbin/iptables-restore", "-V"), "(nf_tables)"),
    (("/usr/sbin/iptables-legacy", "-V"), "(legacy)"),
    (("/usr/sbin/conntrack", "--version"), "conntrack v1.4.7"),
    # kube-proxy's rules use these matches and targets: each is a plugin iptables dlopens
    (("/usr/sbin/iptables", "-m", "statistic", "-m", "comment", "-m", "conntrack", "-m", "mark", "-j", "DNAT",
      "-h"), "statistic match options"),
], ids=["iptables", "ip6tables-save", "iptables-restore", "legacy", "conntrack", "plugins"])
def test_every_program_starts_with_the_images_own_files(root: Path, argv: tuple[str, ...], says: str) -> None:
    done = _chroot(root, *argv)
    assert done.returncode == 0, f"{argv[0]} did not start in the image's files: {done.stderr.strip()}"
    assert says in done.stdout + done.stderr
