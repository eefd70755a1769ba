"""Flag assembly for kubeadm v1beta4 extraArgs, cluster DNS, timing and pod CIDR checks."""

from __future__ import annotations

import pytest

from ufcctl.domain.controlplane import flags


@pytest.mark.parametrize(
    ("settings", "extra", "expected"),
    [
        pytest.param(
            {"b": 2, "a": True},
            {},
            [{"name": "a", "value": "true"}, {"name": "b", "value": "2"}],
            id="sorted-bool-int",
        ),
        pytest.param({"a": 1}, {"a": None}, [], id="extra-null-drops"),
        pytest.param(
            {"watch-cache-sizes": {"pods": 0, "nodes.": 0}},
            {},
            [{"name": "watch-cache-sizes", "value": "pods#0,nodes.#0"}],
            id="map-flag",
        ),
        pytest.param({"watch-cache-sizes": {}}, {}, [], id="empty-map-omitted"),
        pytest.param(
            {"goaway-chance": 0.001},
            {"event-ttl": "2h"},
            [{"name": "event-ttl", "value": "2h"}, {"name": "goaway-chance", "value": "0.001"}],
            id="extra-adds",
        ),
    ],
)
def test_extra_args(settings, extra, expected):
    assert flags.extra_args("apiserver", settings, extra) == expected


def test_flags_kubeadm_owns_are_refused():
    with pytest.raises(flags.FlagError, match="etcd-servers is set by kubeadm"):
        flags.extra_args("apiserver", {}, {"etcd-servers": "https://x:2379"})


@pytest.mark.parametrize(
    ("mode", "ip", "subnet", "expected"),
    [
        pytest.param("nodelocal", "169.254.20.10", "10.96.0.0/12", ["169.254.20.10"], id="nodelocal"),
        pytest.param("coredns", "169.254.20.10", "10.96.0.0/12", ["10.96.0.10"], id="coredns-10th"),
        pytest.param(
            "coredns", "169.254.20.10", "10.233.0.0/18", ["10.233.0.10"], id="coredns-kubespray-range"
        ),
    ],
)
def test_cluster_dns(mode, ip, subnet, expected):
    assert flags.cluster_dns(mode, ip, subnet) == expected


@pytest.mark.parametrize(
    ("mode", "ip", "match"),
    [
        pytest.param("kube-dns", "169.254.20.10", "must be one of", id="unknown-mode"),
        pytest.param("nodelocal", "10.0.0.10", "link-local", id="not-link-local"),
    ],
)
def test_cluster_dns_refuses(mode, ip, match):
    with pytest.raises(flags.FlagError, match=match):
        flags.cluster_dns(mode, ip, "10.96.0.0/12")


def _timing(**kw):
    base = {
        "node_monitor_period": "5s",
        "node_monitor_grace_period": "50s",
        "node_status_update_frequency": "10s",
        "goaway_chance": 0.001,
        "apiservers": 3,
    }
    return flags.TimingInputs(**{**base, **kw})


@pytest.mark.parametrize(
    ("kw", "fragment"),
    [
        pytest.param({}, None, id="defaults-consistent"),
        pytest.param({"node_monitor_grace_period": "30s"}, "under 4 x", id="grace-too-short"),
        pytest.param({"node_monitor_period": "1m"}, "longer than", id="period-over-grace"),
        pytest.param({"goaway_chance": 0.05}, "within 0..0.02", id="goaway-too-high"),
        pytest.param({"apiservers": 1}, "more than one kube-apiserver", id="goaway-single-apiserver"),
        pytest.param({"node_monitor_grace_period": "fifty"}, "not a Go duration", id="bad-duration"),
    ],
)
def test_timing_problems(kw, fragment):
    problems = flags.timing_problems(_timing(**kw))
    assert problems == [] if fragment is None else any(fragment in p for p in problems), problems


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("10s", 10, id="s"),
        pytest.param("1h30m", 5400, id="h-m"),
        pytest.param("500ms", 0.5, id="ms"),
    ],
)
def test_duration_seconds(text, seconds):
    assert flags.duration_seconds(text) == seconds


@pytest.mark.parametrize(
    ("subnet", "mask", "nodes", "ok"),
    [
        pytest.param("100.64.0.0/10", 24, 16000, True, id="slash10-16k"),
        pytest.param("10.244.0.0/16", 24, 16000, False, id="slash16-too-small"),
        pytest.param("10.244.0.0/16", 24, 256, True, id="slash16-256-nodes"),
        pytest.param("10.244.0.0/24", 16, 1, False, id="mask-larger-than-subnet"),
    ],
)
def test_pod_cidr(subnet, mask, nodes, ok):
    assert (flags.pod_cidr_problems(subnet, mask, nodes) == []) == ok


def test_cert_sans_unique_in_order():
    assert flags.cert_sans("10.0.0.10", ["10.0.0.11", "10.0.0.11"], ["cp1"], ["api.example", ""]) == [
        "10.0.0.10",
        "10.0.0.11",
        "cp1",
        "api.example",
    ]
