"""Whether a validated component reaches the cluster, and the one line that says what happened."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A component is a directory name under .ufc/manifests/<inventory>/ and a message prefix.
COMPONENT_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class ApplyDecision:
    """`probe`: ask the apply host; `skip`: do not apply, for `reason`; else apply now."""

    apply: bool
    probe: bool
    reason: str = ""


def decide_apply(*, enabled: bool, check_mode: bool, apply_host: str, probe: Any) -> ApplyDecision:
    """Apply only for real (never in check mode), on a host that has kubectl and a kubeconfig.

    `probe` is the registered result of the k8s_manifests probe task (`ready`, `reason`), or anything
    else (missing, skipped) when that task did not run for this play: then the caller probes itself.
    """
    if not enabled:
        return ApplyDecision(False, False, "k8s_manifests_apply is false")
    if check_mode:
        return ApplyDecision(False, False, "check mode")
    if not apply_host:
        return ApplyDecision(False, False, "no kube_control_plane host in the inventory")
    if not isinstance(probe, Mapping) or "ready" not in probe:
        return ApplyDecision(False, True)
    if not probe["ready"]:
        return ApplyDecision(False, False, str(probe.get("reason") or "kubectl or kubeconfig missing"))
    return ApplyDecision(True, False)


def report_line(
    component: str,
    *,
    validated: str,
    dest: str,
    apply_host: str,
    skipped: str = "",
    applied: str = "",
    note: str = "",
) -> str:
    """`<component>: apply SKIPPED on <host> (<why>); <validated> in <dest>`, or what was applied.

    `applied` says what changed on the cluster ('' with no skip: the cluster already matched).
    """
    where = f" on {apply_host}" if apply_host else ""
    if skipped:
        head = f"{component}: apply SKIPPED{where} ({skipped})"
    elif applied:
        head = f"{component}: applied{where}: {applied}"
    else:
        head = f"{component}: the cluster already matches{where}"
    return f"{head}; {validated} in {dest}" + (f"; {note}" if note else "")
