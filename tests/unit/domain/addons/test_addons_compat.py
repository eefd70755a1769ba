"""MindCluster compatibility table: mismatches fail early, each naming what to change."""

from __future__ import annotations

import pytest

from ufcctl.domain.addons.compat import RELEASES, check_compatibility

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
        pytest.param(
            {"kube_version": "1.35.0"},
            ["Kubernetes 1.35.0 is outside 1.19-1.34 supported by MindCluster 26.0.0 with Volcano"],
            id="kube-too-new",
        ),
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
        "kube_version": "1.31.4",
        "volcano_version": "v1.9.0",
        "driver_version": "25.5.0",
        **kwargs,
    }
    assert check_compatibility(**args) == expected


def test_table_entries_are_consistent() -> None:
    for name, release in RELEASES.items():
        assert release.mindcluster == name
        assert release.kube_min <= release.kube_min_with_volcano <= release.kube_max
