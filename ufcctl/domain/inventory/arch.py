"""The CPU architecture a host's binaries are fetched for: one inventory variable, `ufc_arch` (issue 44, D12).

Atlas 800T/800I A2 servers are Kunpeng, aarch64; control planes and caches are often x86_64. So the
architecture is per host (group_vars of the NPU groups, say), in Kubernetes' and Go's spelling, the one
dl.k8s.io paths, etcd's release tarballs and OCI platforms use: `amd64` (x86_64) or `arm64` (aarch64),
`amd64` when unset. Every role variable that names an architecture follows it by default
(roles/kube_node `kube_node_arch`; roles/etcd's tarball; roles/container_runtime
`container_runtime_ascend_arch`, which the Ascend Docker Runtime spells as `uname -m` does; roles/kube_node
`kube_node_host_arch`, the `host-arch` label). An explicit role override must agree with `ufc_arch`
(`ufcctl inventory check`) and with the host itself (roles/preflight reads `uname -m`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ufcctl.domain.arch import ARCH_VAR, DEFAULT_ARCH, MACHINES
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import templated
from ufcctl.errors import shown

_OF_MACHINE = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_ETCD_TARBALL = re.compile(r"-linux-([a-z0-9_]+)\.tar\.gz$")


def arch_of_machine(machine: str) -> str | None:
    """`amd64` or `arm64` for what `uname -m` prints; None for an architecture ufcctl has no binaries for."""
    return _OF_MACHINE.get(str(machine).strip())


def _etcd_arch(url: Any) -> str | None:
    found = _ETCD_TARBALL.search(str(url))
    return found.group(1) if found else None


# Role variables that name the architecture in their own spelling: variable -> (its value's arch in
# Kubernetes' spelling or None when it names none, how ufc_arch is spelled there)
_UNAME = {machine: arch for arch, machine in MACHINES.items()}
OVERRIDES: Mapping[str, tuple[Callable[[Any], str | None], Callable[[str], str]]] = {
    "kube_node_arch": (str, lambda a: a),  # dl.k8s.io's .../bin/linux/<arch>/
    # the Ascend Docker Runtime's installer name, Ascend-docker-runtime_<v>_linux-<uname -m>.run
    "container_runtime_ascend_arch": (lambda v: _UNAME.get(str(v), str(v)), lambda a: MACHINES[a]),
    "etcd_tarball_url": (_etcd_arch, lambda a: f"...-linux-{a}.tar.gz"),
}
_FIX = (f"set {ARCH_VAR} to amd64 (x86_64) or arm64 (aarch64) for the host, in its group_vars or host_vars; "
        "leave the role variables unset, they follow it")


def configured(values: Mapping[str, Any]) -> dict[str, str | None]:
    """{variable: the architecture it names (Kubernetes' spelling)} for ufc_arch (default amd64) and each
    role override present in `values`; None for an override that names no architecture (a URL of another
    layout)."""
    arch = values.get(ARCH_VAR, DEFAULT_ARCH)
    out: dict[str, str | None] = {ARCH_VAR: str(arch) if arch not in (None, "") else DEFAULT_ARCH}
    for var, (read, _spell) in OVERRIDES.items():
        if var in values and not templated(values[var]):
            out[var] = read(values[var])
    return out


def host_mismatch(host: str, machine: str, values: Mapping[str, Any]) -> str:
    """One line naming the host and every variable whose architecture is not the host's; '' when they
    agree (roles/preflight: `machine` is the host's `uname -m`, `values` its inventory variables)."""
    actual = arch_of_machine(machine)
    if actual is None:
        return (f"{host} is {machine or 'of an unknown architecture'}: ufcctl fetches binaries for amd64 "
                "(x86_64) and arm64 (aarch64) only")
    wrong = [f"{var} is {arch}" for var, arch in configured(values).items()
             if arch is not None and arch != actual]
    if not wrong:
        return ""
    return (f"{host} is {machine} ({actual}) but {', '.join(wrong)}: its kubeadm, kubelet, etcd and Ascend "
            f"Docker Runtime would not run there -> fix: set {ARCH_VAR}: {actual} for {host} (group_vars or "
            "host_vars) and leave kube_node_arch, container_runtime_ascend_arch and etcd_tarball_url unset")


def check_arch(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """ufc_arch is amd64 or arm64, and a role override names the same architecture (`ufcctl inventory
    check`: refused before any host is contacted)."""
    for name, host in inv.hosts.items():
        arch = host.vars.get(ARCH_VAR)
        if arch is not None and not templated(arch) and str(arch) not in MACHINES:
            kube = _OF_MACHINE.get(str(arch))
            hint = f" (that is {kube} in Kubernetes' name)" if kube else ""
            problems.append(Problem(inv.var_origin(name, ARCH_VAR), f"host {name}",
                                    f"{ARCH_VAR} {shown(arch)} is not amd64 or arm64{hint}", _FIX))
            continue
        if templated(arch):
            continue
        found = configured(host.vars)
        want = found.pop(ARCH_VAR) or DEFAULT_ARCH
        for var, named in found.items():
            if named is None or named == want:
                continue
            spelled = OVERRIDES[var][1](want)
            problems.append(Problem(inv.var_origin(name, var), f"host {name}",
                                    f"{var} {shown(host.vars[var])} names {named}, but {ARCH_VAR} is {want}",
                                    f"remove {var} (it follows {ARCH_VAR}: {spelled}) or set {ARCH_VAR} to "
                                    "the host's architecture"))


RULES = (check_arch,)
