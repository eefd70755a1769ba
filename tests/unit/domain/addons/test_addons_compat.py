"""MindCluster compatibility table: mismatches fail early, each naming what to change."""

from __future__ import annotations

import pytest

from ufcctl.domain.addons.compat import RELEASES, check_compatibility, kube_warnings

SAME = {"device_plugin": "26.0.0", "noded": "26.0.0", "clusterd": "26.0.0"}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, [], id="compatible"),
        pytest.param(
            {"components": {**SAME, "noded": "7.0.RC1"}},
            ["noded '7.0.RC1' differs from MindCluster 26.0.0: do not mix component versions"],
            id="mixed",
        ),
        # newer than MindCluster states: a warning (kube_warnings), not a mismatch
        pytest.param({"kube_version": "1.35.4"}, [], id="kube-newer-is-no-error"),
        pytest.param(
            {"kube_version": "1.18.3"},
            ["Kubernetes 1.18.3 is outside 1.19-1.34 supported by MindCluster 26.0.0 with Volcano"],
            id="kube-too-old-for-volcano",
        ),
        pytest.param({"kube_version": "1.18.3", "volcano_version": None}, [], id="kube-1.18-without-volcano"),
        pytest.param(
            {"volcano_version": "v1.15.0"},
            ["Volcano v1.15.0 has no MindCluster 26.0.0 scheduler plugin (built for v1.7.0, v1.9.0)"],
            id="volcano",
        ),
        pytest.param(
            {"driver_version": "24.1.0"},
            [
                "NPU driver (Ascend HDK) 24.1.0 is not supported by MindCluster 26.0.0 "
                "(supported: 25.5.0, 26.0.RC1)"
            ],
            id="driver",
        ),
        pytest.param(
            {"mindcluster": "6.0.0"},
            ["MindCluster '6.0.0' is not in ufcctl's compatibility table (known: 26.0.0)"],
            id="unknown",
        ),
    ],
)
def test_check(kwargs: dict, expected: list[str]) -> None:
    args = {
        "mindcluster": "26.0.0",
        "components": SAME,
        "kube_version": "1.34.4",
        "volcano_version": "v1.9.0",
        "driver_version": "25.5.0",
        **kwargs,
    }
    assert check_compatibility(**args) == expected


def test_table_entries_are_consistent() -> None:
    for name, release in RELEASES.items():
        assert release.mindcluster == name
        assert release.kube_min <= release.kube_min_with_volcano <= release.kube_max


@pytest.mark.parametrize(("mindcluster", "kube", "warned"), [
    ("26.0.0", "1.35.4", True),  # upgrade-cluster's target in the lab
    ("26.0.0", "v1.36.1", True),
    ("26.0.0", "1.34.4", False),  # the default: within 1.17-1.34
    ("26.0.0", "1.18.3", False),  # too old is check_compatibility's error, not a warning
    ("6.0.0", "1.35.4", False),  # unknown release: check_compatibility's error
    ("26.0.0", "", False),  # no version: nothing to check
])
def test_a_kubernetes_newer_than_mindcluster_states_is_a_warning_that_says_why(
        mindcluster: str, kube: str, warned: bool) -> None:
    warnings = kube_warnings(mindcluster, kube)
    if not warned:
        assert warnings == []
        return
    (warning,) = warnings
    assert warning.startswith(f"Kubernetes {kube} is newer than 1.34, the newest MindCluster 26.0.0 states "
                              "support for")
    assert "not refused, but Huawei has not validated MindCluster on it" in warning
