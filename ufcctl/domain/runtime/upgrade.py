"""What roles/container_runtime does on a node, from one probe: packages to install, a pinned containerd
version to move to, the Ascend Docker Runtime to install, upgrade or adopt, and whether the node is
drained around it.

A version change of containerd or of the Ascend Docker Runtime on a worker that has joined the cluster
drains it first (kubectl drain on the first control plane, the node marked as cordoned by ufcctl), then
installs, restarts containerd and uncordons it once Ready: the drain-restart path `upgrade-cluster` uses
for the kubelet (docs/architecture.md decision 17). A node that is not joined yet runs no pods, so it is
never drained; control planes are not drained (they run only static pods and DaemonSets, whose
containers outlive a containerd restart: containerd.service's KillMode=process keeps the shims).

The probe (PROBE_SCRIPT, one command on the node) prints one line per fact:
  pkg <name> <dpkg status> <version>      for each wanted package (status `not-installed` if unknown)
  adr absent | adr <recorded version> | adr unrecorded
  joined                                   /etc/kubernetes/kubelet.conf exists
  drained                                  an earlier run drained the node and did not release it
Pure: lines in, a plan out (unit-tested in tests/unit/domain/runtime/test_upgrade.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Arguments: $1 flag file, $2 kubelet.conf, $3 the runtime's version record, $4 its binary, then packages.
PROBE_SCRIPT = (
    'flag=$1 joined=$2 record=$3 binary=$4; shift 4; '
    'for p in "$@"; do '
    "dpkg-query -W -f 'pkg ${Package} ${db:Status-Status} ${Version}\\n' \"$p\" 2>/dev/null "
    '|| echo "pkg $p not-installed -"; done; '
    'if test -e "$binary"; then echo "adr $(cat "$record" 2>/dev/null || echo unrecorded)"; '
    'else echo "adr absent"; fi; '
    'if test -e "$joined"; then echo joined; fi; '
    'if test -e "$flag"; then echo drained; fi; exit 0'
)
# A Debian package version (policy 5.6.12): [epoch:]upstream[-revision]
DEB_VERSION = re.compile(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
# The runtime's package version, as in Ascend-docker-runtime_<version>_linux-<arch>.run
ADR_VERSION = re.compile(r"^[0-9][A-Za-z0-9.]*$")


@dataclass
class RuntimePlan:
    apt: list[str] = field(default_factory=list)  # apt names to install (name or name=version)
    containerd_seen: str = ""
    ascend: str = "none"  # install | upgrade | adopt | none
    ascend_seen: str = ""
    changes: list[str] = field(default_factory=list)  # version changes on a running node, for the report
    joined: bool = False
    drain: bool = False  # drain before, release after
    left_drained: bool = False  # an earlier run drained it: release after, whatever else happens
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _parse(lines: Sequence[str]) -> tuple[dict[str, tuple[str, str]], str, bool, bool]:
    packages: dict[str, tuple[str, str]] = {}
    adr = "absent"
    joined = drained = False
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "pkg":
            packages[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
        elif len(parts) == 2 and parts[0] == "adr":
            adr = parts[1]
        elif parts == ["joined"]:
            joined = True
        elif parts == ["drained"]:
            drained = True
    return packages, adr, joined, drained


def plan(v: Mapping[str, Any]) -> RuntimePlan:
    """`v`: probe_lines, packages (the role's list), containerd_version ('' = never change it),
    ascend (bool), ascend_version, drain (bool: this host is drained around a version change)."""
    packages, adr, joined, drained = _parse([str(x) for x in v.get("probe_lines") or ()])
    out = RuntimePlan(joined=joined, left_drained=drained)
    pinned = str(v.get("containerd_version") or "").strip()
    if pinned and not DEB_VERSION.match(pinned):
        out.problems.append(f"container_runtime_containerd_version {pinned!r} is not a Debian package "
                            "version (e.g. 1.6.20~ds1-1+b1, as `apt-cache policy containerd` lists it)")
    target_adr = str(v.get("ascend_version") or "").strip()
    if v.get("ascend") and not ADR_VERSION.match(target_adr):
        out.problems.append(f"container_runtime_ascend_version {target_adr!r} is not a package version "
                            "(e.g. 6.0.0, as in Ascend-docker-runtime_6.0.0_linux-x86_64.run)")
    if out.problems:
        return out
    for name in [str(p) for p in v.get("packages") or ()]:
        status, version = packages.get(name, ("not-installed", ""))
        if name == "containerd":
            out.containerd_seen = version if status == "installed" else ""
        want = f"{name}={pinned}" if name == "containerd" and pinned else name
        if status != "installed":
            out.apt.append(want)
        elif name == "containerd" and pinned and version != pinned:
            out.apt.append(want)
            out.changes.append(f"containerd {version} -> {pinned}")
    if v.get("ascend"):
        if adr == "absent":
            out.ascend = "install"
        elif adr == "unrecorded":
            # installed by a ufcctl that kept no record: adopted as the target rather than reinstalled on
            # every NPU node at once (README of roles/container_runtime says so)
            out.ascend = "adopt"
        elif adr != target_adr:
            out.ascend, out.ascend_seen = "upgrade", adr
            out.changes.append(f"Ascend Docker Runtime {adr} -> {target_adr}")
        else:
            out.ascend_seen = adr
    out.drain = bool(out.changes) and joined and bool(v.get("drain"))
    return out
