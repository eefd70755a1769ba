"""The container runtime's plan from one probe (ufcctl/domain/runtime/upgrade.py): installs, version
changes, and the drain around a change on a joined worker."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.runtime import upgrade

PACKAGES = ["containerd", "containernetworking-plugins"]
INSTALLED = ["pkg containerd installed 1.6.20~ds1-1+b1",
             "pkg containernetworking-plugins installed 1.1.1+ds1-3"]


def _plan(lines: list[str], **kw: Any) -> upgrade.RuntimePlan:
    v = {"probe_lines": lines, "packages": PACKAGES, "containerd_version": "", "ascend": True,
         "ascend_version": "6.0.0", "drain": True}
    v.update(kw)
    return upgrade.plan(v)


def test_converged_worker_does_nothing() -> None:
    p = _plan(INSTALLED + ["adr 6.0.0", "joined"])
    assert (p.apt, p.changes, p.ascend, p.drain, p.left_drained) == ([], [], "none", False, False)


def test_fresh_node_installs_everything_without_a_drain() -> None:
    fresh = ["pkg containerd not-installed -", "pkg containernetworking-plugins not-installed -",
             "adr absent"]
    p = _plan(fresh, containerd_version="1.6.20~ds1-1+b1")
    assert p.apt == ["containerd=1.6.20~ds1-1+b1", "containernetworking-plugins"]
    assert p.ascend == "install" and p.changes == [] and not p.drain


def test_runtime_version_change_on_a_joined_worker_drains_it() -> None:
    p = _plan(INSTALLED + ["adr 6.0.0", "joined"], ascend_version="6.0.1")
    assert p.ascend == "upgrade" and p.ascend_seen == "6.0.0"
    assert p.changes == ["Ascend Docker Runtime 6.0.0 -> 6.0.1"] and p.drain


def test_pinned_containerd_change_drains_and_installs_the_pin() -> None:
    p = _plan(INSTALLED + ["adr 6.0.0", "joined"], containerd_version="1.6.24~ds1-1")
    assert p.apt == ["containerd=1.6.24~ds1-1"]
    assert p.changes == ["containerd 1.6.20~ds1-1+b1 -> 1.6.24~ds1-1"] and p.drain


@pytest.mark.parametrize("lines,drain", [
    (INSTALLED + ["adr 6.0.0"], True),      # not joined: no pods to move
    (INSTALLED + ["adr 6.0.0", "joined"], False),  # a control plane: changed in place
])
def test_no_drain_where_no_pods_or_a_control_plane(lines: list[str], drain: bool) -> None:
    p = _plan(lines, ascend_version="6.0.1", drain=drain)
    assert p.ascend == "upgrade" and not p.drain


def test_unrecorded_runtime_is_adopted_not_reinstalled() -> None:
    p = _plan(INSTALLED + ["adr unrecorded", "joined"], ascend_version="6.0.1")
    assert p.ascend == "adopt" and p.changes == [] and not p.drain


def test_a_node_left_drained_by_a_killed_run_is_released() -> None:
    p = _plan(INSTALLED + ["adr 6.0.1", "joined", "drained"], ascend_version="6.0.1")
    assert p.left_drained and not p.drain and p.changes == []


def test_not_an_npu_node_ignores_the_runtime() -> None:
    p = _plan(INSTALLED + ["adr absent", "joined"], ascend=False, ascend_version="bogus version")
    assert p.ascend == "none" and p.problems == []


@pytest.mark.parametrize("kw,word", [({"containerd_version": "latest please"}, "containerd_version"),
                                     ({"ascend_version": "6.0.1; rm -rf /"}, "ascend_version")])
def test_bad_versions_are_problems_and_plan_nothing(kw: dict[str, str], word: str) -> None:
    p = _plan(INSTALLED + ["adr 6.0.0", "joined"], **kw)
    assert len(p.problems) == 1 and word in p.problems[0]
    assert (p.apt, p.changes, p.drain) == ([], [], False)


def test_probe_script_reports_what_the_plan_reads(tmp_path: Path) -> None:
    """The script itself (sh, with dpkg-query absent or present): every line the parser expects."""
    flag, conf, record, binary = (tmp_path / n for n in ("flag", "kubelet.conf", "rec", "bin"))
    conf.write_text("x")
    binary.write_text("x")
    record.write_text("6.0.0\n")

    def probe(*packages: str) -> list[str]:
        paths = [str(p) for p in (flag, conf, record, binary)]
        argv = ["sh", "-c", upgrade.PROBE_SCRIPT, "sh", *paths, *packages]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()

    assert probe("no-such-package-ufcctl") == ["pkg no-such-package-ufcctl not-installed -", "adr 6.0.0",
                                               "joined"]
    flag.write_text("x")
    record.unlink()
    assert probe() == ["adr unrecorded", "joined", "drained"]
    binary.unlink()
    conf.unlink()
    assert probe() == ["adr absent", "drained"]
