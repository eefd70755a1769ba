"""Controller-side role plugins reach ufcctl through the installed package only (no sys.path shim):
without it, Ansible's plugin loader says which plugin it skipped and that ufcctl is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import sys
sys.path.append(sys.argv[1])  # ansible's site-packages, without the .pth that installs ufcctl
from ansible.plugins.loader import filter_loader
filter_loader.add_directory(sys.argv[2])
print(sorted(p.ansible_name for p in filter_loader.all()))
"""


def _load_filters(tmp_path: Path, role: str) -> subprocess.CompletedProcess[str]:
    # -S: no site, so no editable-install .pth; no PYTHONPATH; the working directory is not the checkout
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-S", "-c", PROBE, sysconfig.get_paths()["purelib"],
         str(ROOT / "roles" / role / "filter_plugins")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False,
    )


def test_a_plugin_without_the_package_is_skipped_with_the_reason(tmp_path: Path) -> None:
    proc = _load_filters(tmp_path, "etcd")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "ufcctl_etcd.py" in out and "No module named 'ufcctl" in out, out
    assert "ufcctl_etcd_clusters" not in proc.stdout, out  # not loaded from the checkout


def test_no_role_plugin_puts_the_checkout_on_sys_path() -> None:
    shims = [p.relative_to(ROOT).as_posix()
             for p in [*ROOT.glob("roles/*/*_plugins/*.py"), *ROOT.glob("playbooks/*_plugins/*.py")]
             if "sys.path" in p.read_text()]
    assert shims == [], "import ufcctl from the installed package (pip install -e .)"
