"""Kubernetes' version-skew policy as `ufcctl plan upgrade-cluster` applies it (controlplane/skew.py)."""

from __future__ import annotations

import pytest

from ufcctl.domain.controlplane import skew
from ufcctl.domain.controlplane.skew import Versions, check

CPS = {"cp1": "v1.34.4", "cp2": "v1.34.4", "cp3": "v1.34.4"}
KUBELETS = {"w1": "v1.34.4", "w2": "v1.33.9"}
ETCD = {"core/cp1": "3.6.17", "events/cp1": "3.6.17"}


def test_versions_parse_with_or_without_v_and_with_a_pre_release() -> None:
    assert skew.parse("v1.34.4") == (1, 34, 4) == skew.parse("1.34.4")
    assert skew.parse("v1.35.0-rc.1") == (1, 35, 0)
    for bad in ("1.34", "v1.34.x", "latest", ""):
        assert skew.parse(bad) is None, bad


def test_the_next_minor_and_a_patch_are_allowed() -> None:
    for target in ("v1.35.4", "v1.34.5"):
        verdict = check(target, Versions(CPS, KUBELETS, ETCD))
        assert verdict.allowed and verdict.refusals == () and verdict.current == "v1.34.4", verdict
        assert not verdict.nothing_to_do


@pytest.mark.parametrize(("target", "apiservers", "reason"), [
    ("v1.36.1", CPS, "v1.36.1 skips a minor: the control plane runs v1.34.4"),
    ("v1.33.2", CPS, "v1.33.2 is older than the running kube-apiserver v1.34.4: downgrades"),
    ("v1.34.3", CPS, "is older than the running kube-apiserver"),
    # an interrupted upgrade: one apiserver ahead; the next minor counts from the oldest
    ("v1.36.1", {"cp1": "v1.35.4", "cp2": "v1.34.4"}, "skips a minor: the control plane runs v1.34.4"),
    ("v1.35.4", {"cp1": "v1.36.1", "cp2": "v1.34.4"}, "more than one minor apart (v1.34 to v1.36)"),
    ("v1.35.4", {"cp1": None, "cp2": "v1.34.4"}, "kube-apiserver on cp1 does not answer /version"),
    ("v1.35.4", {"cp1": "weird", "cp2": "v1.34.4"}, "kube-apiserver on cp1 reports a version ufcctl cannot"),
    ("nope", CPS, "--version 'nope' is not a Kubernetes version"),
])
def test_refusals_name_what_is_in_the_way(target: str, apiservers: dict, reason: str) -> None:
    verdict = check(target, Versions(apiservers, KUBELETS, ETCD))
    assert not verdict.allowed
    assert any(reason in r for r in verdict.refusals), verdict.refusals


def test_kubelets_at_most_three_minors_behind_and_never_ahead() -> None:
    old = check("v1.35.4", Versions(CPS, {"w1": "v1.31.9", "w2": "v1.32.0", "w3": "v1.34.4"}, ETCD))
    assert old.refusals == ("kubelet on w1 would trail v1.35 by more than 3 minors: bring it to v1.32 or "
                            "later first",)
    ahead = check("v1.35.4", Versions(CPS, {"w1": "v1.35.4"}, ETCD))
    assert any("kubelet on w1 is newer than the oldest kube-apiserver (v1.34.4)" in r for r in ahead.refusals)
    unknown = check("v1.35.4", Versions(CPS, {}, ETCD))
    assert unknown.allowed and "kubelet versions unknown" in unknown.warnings[0]


def test_many_names_are_cut_in_a_message() -> None:
    kubelets = {f"w{i:05d}": "v1.30.0" for i in range(16000)}
    (reason,) = check("v1.34.5", Versions(CPS, kubelets, ETCD)).refusals
    assert reason.startswith("kubelet on w00000, w00001, w00002, w00003, w00004 and 15995 more would trail")


def test_etcd_older_than_kubeadm_accepts_is_refused_unless_the_preflight_check_is_ignored() -> None:
    old = {"core/cp1": "3.4.23", "core/cp2": "3.6.17"}
    refused = check("v1.35.4", Versions(CPS, KUBELETS, old))
    assert refused.refusals == ("etcd core/cp1 is older than 3.5.24, the oldest kubeadm v1.35 accepts "
                                "(preflight ExternalEtcdVersion): upgrade etcd first (etcd_install_method: "
                                "tarball, ufc_etcd_version)",)
    let_through = check("v1.35.4", Versions(CPS, KUBELETS, old, frozenset({"ExternalEtcdVersion"})))
    assert let_through.allowed and "lets it through" in let_through.warnings[0]
    older_target = check("v1.30.9", Versions({"cp1": "v1.30.1"}, {}, old))  # before 1.31: not checked
    assert older_target.allowed and not any("etcd" in w for w in older_target.warnings)


@pytest.mark.parametrize(("target", "running", "etcd", "minimum"), [
    # kubeadm raised MinExternalEtcdVersion from 3.5.11 (1.31) to 3.5.24 (v1.34.4, v1.35.4: constants.go)
    ("v1.35.4", "v1.34.4", "3.5.17", "3.5.24"),
    ("v1.34.5", "v1.34.4", "3.5.23", "3.5.24"),
    ("v1.32.0", "v1.31.4", "3.5.10", "3.5.11"),
])
def test_the_etcd_minimum_follows_the_target_minor(target: str, running: str, etcd: str,
                                                   minimum: str) -> None:
    cps = {"cp1": running}
    (refusal,) = check(target, Versions(cps, {"w1": running}, {"core/cp1": etcd})).refusals
    assert refusal.startswith(f"etcd core/cp1 is older than {minimum},")
    assert check(target, Versions(cps, {"w1": running}, {"core/cp1": minimum})).allowed


def test_nothing_to_do_when_everything_runs_the_target() -> None:
    same = check("v1.34.4", Versions(CPS, {"w1": "v1.34.4"}, ETCD))
    assert same.allowed and same.nothing_to_do
    assert not check("v1.34.4", Versions(CPS, {"w1": "v1.33.0"}, ETCD)).nothing_to_do
