"""Which MindCluster components, Kubernetes, Volcano and NPU driver versions go together; checked early.

Source: MindCluster docs/en/release_notes.md (docs/reference/ascend.md §7): components of one release are
never mixed; 26.0.0 supports Kubernetes 1.17-1.34 (Volcano needs >= 1.19), Ascend HDK 25.5.0 and
26.0.RC1, and ships its Volcano plugin for Volcano v1.7.0 and v1.9.0. Only releases read from the
notes are listed: an unknown release is an error, never assumed compatible.

A Kubernetes newer than a release states is a warning, not an error (`kube_warnings`): the statement is
the newest minor Huawei tested, not a known break, and ufcctl's upgrade path must reach the next minor
(1.35.4 is `upgrade-cluster`'s target while MindCluster 26.0.0 states 1.34: docs/reference/real-kubernetes.md
§2). Older than the release's minimum stays an error (Volcano needs 1.19's APIs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    mindcluster: str
    kube_min: tuple[int, int]
    kube_max: tuple[int, int]
    kube_min_with_volcano: tuple[int, int]
    hdk: tuple[str, ...]
    volcano: tuple[str, ...]  # upstream Volcano versions the MindCluster scheduler plugin is built for


RELEASES: Mapping[str, Release] = {
    "26.0.0": Release("26.0.0", (1, 17), (1, 34), (1, 19), ("25.5.0", "26.0.RC1"), ("v1.7.0", "v1.9.0")),
}


def _minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"^v?(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _show(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}"


def check_compatibility(
    mindcluster: str,
    components: Mapping[str, str],
    kube_version: str,
    volcano_version: str | None = None,
    driver_version: str | None = None,
) -> list[str]:
    """Every mismatch, one line each naming the variable to change (empty: compatible)."""
    release = RELEASES.get(mindcluster)
    if release is None:
        known = ", ".join(sorted(RELEASES))
        return [f"MindCluster {mindcluster!r} is not in ufcctl's compatibility table (known: {known})"]
    problems = [
        f"{name} {version!r} differs from MindCluster {mindcluster}: do not mix component versions"
        for name, version in components.items()
        if version != mindcluster
    ]
    kube = _minor(kube_version)
    low = release.kube_min_with_volcano if volcano_version else release.kube_min
    if kube is None:
        problems.append(f"Kubernetes version {kube_version!r} is not MAJOR.MINOR[.PATCH]")
    elif kube < low:
        problems.append(
            f"Kubernetes {kube_version} is outside {_show(low)}-{_show(release.kube_max)} "
            f"supported by MindCluster {mindcluster}" + (" with Volcano" if volcano_version else "")
        )
    if volcano_version and volcano_version not in release.volcano:
        problems.append(
            f"Volcano {volcano_version} has no MindCluster {mindcluster} scheduler plugin "
            f"(built for {', '.join(release.volcano)})"
        )
    if driver_version and driver_version not in release.hdk:
        problems.append(
            f"NPU driver (Ascend HDK) {driver_version} is not supported by MindCluster {mindcluster} "
            f"(supported: {', '.join(release.hdk)})"
        )
    return problems


def kube_warnings(mindcluster: str, kube_version: str) -> list[str]:
    """Why a Kubernetes newer than the release states is not refused but worth a look (empty: within
    the statement, or nothing to say here: an unknown release or version is check_compatibility's)."""
    release = RELEASES.get(mindcluster)
    kube = _minor(kube_version)
    if release is None or kube is None or kube <= release.kube_max:
        return []
    return [
        f"Kubernetes {kube_version} is newer than {_show(release.kube_max)}, the newest MindCluster "
        f"{mindcluster} states support for (its release notes, docs/reference/ascend.md §7): not refused, "
        "but Huawei has not validated MindCluster on it; look for a MindCluster release that states it "
        "before relying on it"
    ]
