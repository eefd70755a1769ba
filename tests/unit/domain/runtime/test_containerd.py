"""containerd's config.toml and hosts.toml (roles/container_runtime/templates/, fed by the domain's
values): valid TOML, what kubelet and MindCluster need, checked mirrors."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from tests.helpers.role_templates import render
from ufcctl.domain.runtime import containerd

CRI = "io.containerd.grpc.v1.cri"


def _settings(**kw) -> containerd.ContainerdSettings:  # type: ignore[no-untyped-def]
    return containerd.ContainerdSettings(sandbox_image="registry.local:5000/pause:3.10", **kw)


def _config_toml(settings: containerd.ContainerdSettings) -> str:
    values = containerd.config_values(settings)
    return render("container_runtime", "config.toml.j2", {"__container_runtime_config": values})


def _hosts_toml(registry: str, mirrors: Sequence[Mapping[str, Any]], server: str | None = None) -> str:
    values = containerd.hosts_values(registry, mirrors, server)
    return render("container_runtime", "hosts.toml.j2", {"__container_runtime_hosts": values})


def test_config_for_a_cpu_node() -> None:
    config = tomllib.loads(_config_toml(_settings()))
    cri = config["plugins"][CRI]
    assert config["version"] == 2 and config["grpc"]["address"] == "/run/containerd/containerd.sock"
    assert cri["sandbox_image"] == "registry.local:5000/pause:3.10" and cri["max_concurrent_downloads"] == 10
    assert cri["containerd"]["default_runtime_name"] == "runc"
    assert cri["containerd"]["runtimes"]["runc"] == {"runtime_type": "io.containerd.runc.v2",
                                                     "options": {"SystemdCgroup": True}}
    assert cri["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert cri["cni"] == {"bin_dir": "/opt/cni/bin", "conf_dir": "/etc/cni/net.d"}


def test_npu_nodes_default_to_the_ascend_runtime() -> None:
    runtimes = (containerd.Runtime("runc"), containerd.Runtime("ascend", "/opt/A B/ascend-docker-runtime"))
    text = _config_toml(_settings(runtimes=runtimes, default_runtime="ascend"))
    cri = tomllib.loads(text)["plugins"][CRI]
    assert cri["containerd"]["default_runtime_name"] == "ascend"
    ascend = cri["containerd"]["runtimes"]["ascend"]
    assert ascend["options"] == {"SystemdCgroup": True, "BinaryName": "/opt/A B/ascend-docker-runtime"}


def test_hosts_toml_lists_mirrors_in_order_then_the_upstream() -> None:
    text = _hosts_toml("docker.io", [{"url": "http://tor-cache:5000"},
                                     {"url": "https://pod-cache:5000", "capabilities": ["pull"],
                                      "skip_verify": True}])
    data = tomllib.loads(text)
    assert data["server"] == "https://registry-1.docker.io"
    assert list(data["host"]) == ["http://tor-cache:5000", "https://pod-cache:5000"]  # the order tried
    assert data["host"]["http://tor-cache:5000"] == {"capabilities": ["pull", "resolve"]}
    assert data["host"]["https://pod-cache:5000"] == {"capabilities": ["pull"], "skip_verify": True}
    assert tomllib.loads(_hosts_toml("reg.local:5000", []))["server"] == "https://reg.local:5000"


def test_bad_mirrors_are_named() -> None:
    problems = containerd.mirror_problems({
        "https://docker.io": [{"url": "http://m:5000"}],
        "ghcr.io": [{"url": "m:5000"}],
        "quay.io": [{"url": "http://m:5000", "capabilities": ["pull", "fetch"]}],
        "nvcr.io": [],
    })
    assert len(problems) == 4
    assert "registry 'https://docker.io': expected host[:port]" in problems[0]
    assert "ghcr.io: mirror {'url': 'm:5000'} needs url" in problems[1]
    assert "unknown capabilities ['fetch']" in problems[2] and "nvcr.io: a non-empty list" in problems[3]
    assert containerd.mirror_problems({"docker.io": [{"url": "http://m:5000"}]}) == []


def test_a_string_is_quoted_as_toml_reads_it_back() -> None:
    # the TOML check on the rendered files themselves: roles/ufc_common's ufc_files `format: toml`
    # (tests/unit/roles/test_ufc_common_files.py)
    for value in ("/opt/A B/x", 'q"uote', "back\\slash", "tab\t", "ünï"):
        assert tomllib.loads(f"k = {containerd.toml_string(value)}\n")["k"] == value


def test_a_p2p_daemon_on_the_node_is_one_more_mirror() -> None:
    # Sites running Dragonfly point containerd at the node's own dfdaemon proxy (port 65001 in
    # Dragonfly's "Mirror mode" docs) through the same variable; rendered and checked here, never
    # run (no P2P daemon can be installed on this machine).
    mirrors = {"docker.io": [{"url": "http://127.0.0.1:65001", "capabilities": ["pull", "resolve"]}]}
    assert containerd.mirror_problems(mirrors) == []
    text = _hosts_toml("docker.io", mirrors["docker.io"])
    doc = tomllib.loads(text)  # valid TOML, as ufc_files' `format: toml` checks it
    assert doc["server"] == "https://registry-1.docker.io"
    assert doc["host"]["http://127.0.0.1:65001"]["capabilities"] == ["pull", "resolve"]
