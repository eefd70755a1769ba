"""Kubernetes' version-skew policy, as `ufcctl plan upgrade-cluster` applies it before any upgrade.

What the policy says (kubernetes.io "Version Skew Policy"; kubeadm's upgrade guide):
- the apiservers of an HA cluster are within one minor of each other, and an upgrade goes one minor
  at a time (no skipped minors);
- a kubelet is never newer than any apiserver and at most 3 minors older (1.28+), so after the
  control planes move to the target every kubelet must be at least target minor - 3;
- kubeadm refuses an external etcd older than its MinExternalEtcdVersion (preflight
  ExternalEtcdVersion: 3.5.11 for Kubernetes 1.31, 3.5.24 at 1.34.4 and 1.35.4) unless that check is
  ignored;
- no downgrade: kubeadm upgrade apply refuses a target older than the running control plane.

Pure: the versions come in (apiservers' /version, Nodes' kubeletVersion, etcd members' status), the
verdict goes out; ufcctl/app/upgrade_plan.py gathers them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$")
# kubelets may trail the apiservers by this many minors (3 since Kubernetes 1.28; 2 before)
KUBELET_MAX_MINORS_BEHIND = 3
# (major, minor) from which kubeadm's ExternalEtcdVersion preflight wants at least this etcd, newest
# first: MinExternalEtcdVersion in kubernetes/kubernetes cmd/kubeadm/app/constants/constants.go, "3.5.11-0"
# in 1.31, "3.5.24-0" at v1.34.4 and v1.35.4 (kubeadm raises it in patch releases too: the value of the
# pinned releases, docs/reference/real-kubernetes.md §2). roles/etcd/vars/main.yml has the same table.
MIN_EXTERNAL_ETCD = (((1, 34), (3, 5, 24)), ((1, 31), (3, 5, 11)))


def parse(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of `v1.34.4` / `1.34.4` / `v1.34.4-rc.0`; None when it is not one."""
    match = _SEMVER.match(version.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def text(version: tuple[int, int, int]) -> str:
    return "v" + ".".join(str(p) for p in version)


def _minor(version: tuple[int, int, int]) -> str:
    return f"v{version[0]}.{version[1]}"


@dataclass(frozen=True)
class Versions:
    """What runs now. Values are version strings as the components report them; None: did not answer."""

    apiservers: Mapping[str, str | None]  # control-plane host -> kube-apiserver gitVersion
    kubelets: Mapping[str, str] = field(default_factory=dict)  # node -> kubeletVersion
    etcd: Mapping[str, str] = field(default_factory=dict)  # "cluster/member" -> etcd version
    ignored_preflight: frozenset[str] = frozenset()  # kube_control_plane_ignore_preflight_errors


@dataclass(frozen=True)
class Verdict:
    target: str
    refusals: tuple[str, ...]  # each names what is in the way and what to do
    warnings: tuple[str, ...]
    current: str | None  # the oldest apiserver's version
    nothing_to_do: bool

    @property
    def allowed(self) -> bool:
        return not self.refusals


def check(target: str, versions: Versions) -> Verdict:
    """The skew policy's verdict on upgrading to `target` from `versions`."""
    wanted = parse(target)
    if wanted is None:
        return Verdict(target, (f"--version {target!r} is not a Kubernetes version (vMAJOR.MINOR.PATCH)",),
                       (), None, False)
    refusals: list[str] = []
    warnings: list[str] = []
    silent = sorted(h for h, v in versions.apiservers.items() if v is None)
    if silent:
        refusals.append(f"kube-apiserver on {', '.join(silent)} does not answer /version: an upgrade needs "
                        "every control plane up (kubeadm upgrade apply checks the control plane's health)")
    running = {h: parse(v) for h, v in versions.apiservers.items() if v is not None}
    unparsed = sorted(h for h, v in running.items() if v is None)
    if unparsed:
        refusals.append(f"kube-apiserver on {', '.join(unparsed)} reports a version ufcctl cannot read")
    known = {h: v for h, v in running.items() if v is not None}
    if not known:
        return Verdict(text(wanted), tuple(refusals) or ("no kube-apiserver answered",), (), None, False)
    oldest, newest = min(known.values()), max(known.values())
    if newest[:2] > (oldest[0], oldest[1] + 1):
        refusals.append(f"the apiservers are more than one minor apart ({_minor(oldest)} to "
                        f"{_minor(newest)}): finish the interrupted upgrade first")
    if wanted < newest:
        refusals.append(f"{text(wanted)} is older than the running kube-apiserver {text(newest)}: downgrades "
                        "are not supported (restore from an etcd snapshot taken before the upgrade instead)")
    elif wanted[:2] > (oldest[0], oldest[1] + 1):
        step = text((oldest[0], oldest[1] + 1, 0))[:-2]
        refusals.append(f"{text(wanted)} skips a minor: the control plane runs {text(oldest)} and upgrades "
                        f"go one minor at a time ({_minor(oldest)} -> {step} first)")
    _kubelets(wanted, oldest, versions, refusals, warnings)
    _etcd(wanted, versions, refusals, warnings)
    everyone = list(known.values()) + [v for v in map(parse, versions.kubelets.values()) if v is not None]
    nothing = not refusals and all(v == wanted for v in everyone)
    return Verdict(text(wanted), tuple(refusals), tuple(warnings), text(oldest), nothing)


def _kubelets(wanted: tuple[int, int, int], oldest_apiserver: tuple[int, int, int], versions: Versions,
              refusals: list[str], warnings: list[str]) -> None:
    if not versions.kubelets:
        warnings.append("kubelet versions unknown (no Node list): their skew is not checked")
        return
    floor = wanted[1] - KUBELET_MAX_MINORS_BEHIND
    parsed = {n: p for n, v in versions.kubelets.items() if (p := parse(v)) is not None}
    too_old = sorted(n for n, p in parsed.items() if p[:2] < (wanted[0], floor))
    if too_old:
        refusals.append(f"kubelet on {_names(too_old)} would trail {_minor(wanted)} by more than "
                        f"{KUBELET_MAX_MINORS_BEHIND} minors: bring it to v{wanted[0]}.{floor} or later "
                        "first")
    too_new = sorted(n for n, p in parsed.items() if p[:2] > oldest_apiserver[:2])
    if too_new:
        refusals.append(f"kubelet on {_names(too_new)} is newer than the oldest kube-apiserver "
                        f"({text(oldest_apiserver)}): the skew policy never allows that; upgrade the control "
                        "plane first")


def _etcd(wanted: tuple[int, int, int], versions: Versions, refusals: list[str], warnings: list[str]) -> None:
    minimum = next((m for since, m in MIN_EXTERNAL_ETCD if wanted[:2] >= since), None)
    if minimum is None:
        return
    old = sorted(m for m, v in versions.etcd.items() if (p := parse(v)) is None or p < minimum)
    if not old:
        return
    message = (f"etcd {_names(old)} is older than {text(minimum)[1:]}, the oldest kubeadm "
               f"{_minor(wanted)} accepts (preflight ExternalEtcdVersion)")
    if "ExternalEtcdVersion" in versions.ignored_preflight or "all" in versions.ignored_preflight:
        warnings.append(message + "; kube_control_plane_ignore_preflight_errors lets it through")
    else:
        refusals.append(message + ": upgrade etcd first (etcd_install_method: tarball, ufc_etcd_version)")


def _names(names: Sequence[str], shown: int = 5) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
