"""registry_cache's and container_runtime's filters: the cache instances' files, restarts, and each
node's registry mirrors computed from the inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from tests.helpers.pyimports import load_file
from tests.helpers.role_templates import render_entry
from ufcctl.domain.images import cache_config
from ufcctl.domain.images.mirrors import Upstream

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "registry_cache"
UPSTREAMS = [
    {
        "name": "dockerhub",
        "registry": "docker.io",
        "url": "https://registry-1.docker.io",
        "port": 5000,
        "username": "bot",
        "password": "s3cret",
    },
    {"name": "site", "registry": "10.1.2.3:5000", "url": "http://10.1.2.3:5000", "port": 5001},
]
GROUPS = {"registry_cache": ["rc1"], "kube_node": ["n1", "n2"]}
HOSTVARS: dict[str, dict[str, Any]] = {
    "rc1": {"ansible_host": "10.0.0.1", "npu_tor_id": 0},
    "n1": {
        "npu_tor_id": 0,
        "npu_super_pod_id": 0,
        "registry_cache_upstreams": UPSTREAMS,
        "registry_cache_scheme": "http",
        "registry_cache_insecure": True,
    },
    "n2": {"npu_tor_id": 1, "registry_cache_upstreams": UPSTREAMS},
}


@pytest.fixture(scope="module")
def cache_filters() -> Any:
    return load_file(ROLE / "filter_plugins" / "ufcctl_registry_cache.py", "ufcctl_registry_cache_filters")


@pytest.fixture(scope="module")
def runtime_filters() -> Any:
    return load_file(
        ROOT / "roles" / "container_runtime" / "filter_plugins" / "ufcctl_container_runtime.py",
        "ufcctl_container_runtime_filters",
    )


def _rendered(entry: dict[str, Any]) -> str:
    """A ufc_files entry's file as the action renders it: the role's template with the entry's vars."""
    env = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.from_string((ROLE / "templates" / entry["template"]).read_text()).render(entry["vars"])


def _settings(**over: Any) -> dict[str, Any]:
    return {
        "upstreams": UPSTREAMS,
        "scheme": "https",
        "insecure": False,
        "address": "10.0.0.1",
        "tls_cert_src": "/pki/c.pem",
        "tls_key_src": "/pki/k.pem",
        "storage_dir": "/var/lib/rc",
        "max_gib": 100,
        "prune_interval": "15min",
        "log_level": "info",
        "front_max_gib": 20,
        "parent": "",
        "role_path": "/r",
        **over,
    }


def test_every_instance_gets_its_config_and_the_secret_ones_stay_secret(cache_filters: Any) -> None:
    out = cache_filters.ufcctl_registry_cache_render(_settings(), "rc1", HOSTVARS["rc1"])
    assert out["problems"] == []
    files = {f["dest"]: f for f in out["files"]}
    hub = yaml.safe_load(files["/etc/ufcctl/registry-cache/dockerhub.yml"]["content"])
    assert hub["proxy"] == {
        "remoteurl": "http://127.0.0.1:25000",  # the host's front, which asks the upstream
        "username": "bot",
        "password": "s3cret",
    }
    assert files["/etc/ufcctl/registry-cache/dockerhub.yml"]["secret"] is True
    assert files["/etc/ufcctl/registry-cache/site.yml"]["secret"] is False
    assert hub["http"]["addr"] == "10.0.0.1:5000" and hub["http"]["debug"]["addr"] == "10.0.0.1:15000"
    assert hub["http"]["tls"] == {
        "certificate": "/etc/ufcctl/registry-cache/tls.crt",
        "key": "/etc/ufcctl/registry-cache/tls.key",
    }
    assert hub["storage"]["filesystem"]["rootdirectory"] == "/var/lib/rc/dockerhub"
    key = files["/etc/ufcctl/registry-cache/tls.key"]
    assert (key["mode"], key["secret"], key["src"]) == ("0600", True, "/pki/k.pem")
    prune_default = _rendered(files["/etc/default/ufcctl-registry-cache-prune"])
    assert 'INSTANCES="dockerhub site"' in prune_default
    assert "MAX_GIB=100" in prune_default
    assert "STORAGE_DIR=/var/lib/rc\n" in prune_default
    timer = _rendered(files["/etc/systemd/system/ufcctl-registry-cache-prune.timer"])
    assert "OnUnitActiveSec=15min\n" in timer
    assert [i["unit"] for i in out["instances"]] == [
        "ufcctl-registry-cache@dockerhub.service",
        "ufcctl-registry-cache@site.service",
    ]
    assert {d["path"] for d in out["directories"]} >= {"/var/lib/rc/dockerhub", "/var/lib/rc/site"}


def test_insecure_http_has_no_tls_files(cache_filters: Any) -> None:
    out = cache_filters.ufcctl_registry_cache_render(
        _settings(scheme="http", insecure=True, tls_cert_src="", tls_key_src=""), "rc1", HOSTVARS["rc1"]
    )
    assert out["problems"] == []
    assert not any("tls" in f["dest"] for f in out["files"])
    assert "tls" not in yaml.safe_load(out["files"][1]["content"])["http"]


@pytest.mark.parametrize(
    ("over", "hostvars", "expected"),
    [
        (
            {"tls_key_src": ""},
            HOSTVARS,
            "https needs registry_cache_tls_cert_src and registry_cache_tls_key_src",
        ),
        ({"scheme": "http"}, HOSTVARS, "set registry_cache_insecure: true only in a lab"),
        ({"upstreams": []}, HOSTVARS, "registry_cache_upstreams is empty"),
        (
            {},
            {**HOSTVARS, "rc1": {"registry_cache_tier": "rack"}},
            "host rc1: registry_cache_tier 'rack' is unknown",
        ),
    ],
    ids=["https-without-key", "http-without-insecure", "no-upstreams", "bad-tier-anywhere-in-the-group"],
)
def test_bad_settings_are_problems_not_tracebacks(
    cache_filters: Any, over: dict[str, Any], hostvars: dict[str, Any], expected: str
) -> None:
    out = cache_filters.ufcctl_registry_cache_render(_settings(**over), "rc1", hostvars["rc1"])
    assert any(expected in p for p in out["problems"]), out["problems"]


def test_only_the_changed_instances_restart(cache_filters: Any) -> None:
    instances = cache_filters.ufcctl_registry_cache_render(_settings(), "rc1", HOSTVARS["rc1"])["instances"]
    restarts = cache_filters.ufcctl_registry_cache_restarts
    assert restarts({"changed_paths": ["/etc/ufcctl/registry-cache/site.yml"]}, instances) == [
        "ufcctl-registry-cache@site.service"
    ]
    assert restarts({"changed_paths": ["/etc/ufcctl/registry-cache/tls.crt"]}, instances) == [
        "ufcctl-registry-cache@dockerhub.service",
        "ufcctl-registry-cache@site.service",
    ]
    assert restarts(
        {"changed_paths": ["/etc/systemd/system/ufcctl-registry-cache-prune.timer"]}, instances
    ) == ["ufcctl-registry-cache-prune.timer"]
    assert restarts({"changed_paths": []}, instances) == []
    assert restarts({"changed_paths": ["/etc/ufcctl/registry-cache/front.conf"]}, instances) == [
        "ufcctl-registry-front.service"
    ]


def _front(out: dict[str, Any]) -> str:
    """front.conf as ufc_files renders it: templates/front.conf.j2 with the values from the domain."""
    entry = next(f for f in out["files"] if f["dest"] == "/etc/ufcctl/registry-cache/front.conf")
    assert entry["template"] == "front.conf.j2" and "content" not in entry
    return render_entry("registry_cache", entry)


def test_a_super_pod_cache_fills_from_the_upstream_through_its_front(cache_filters: Any) -> None:
    out = cache_filters.ufcctl_registry_cache_render(_settings(), "rc1", HOSTVARS["rc1"])
    front = _front(out)
    entry = next(f for f in out["files"] if f["dest"] == "/etc/ufcctl/registry-cache/front.conf")
    assert entry["validate"] == "/usr/sbin/nginx -t -q -e stderr -c %s"
    # one server per instance on loopback, the instance's remoteurl; blob GETs cached with a lock (one
    # remote fetch for the instance's two), the upstream's TLS verified, no fallback without a parent
    assert "listen 127.0.0.1:25000;" in front and "listen 127.0.0.1:25001;" in front
    assert front.count("proxy_cache_lock on;") == 2 and front.count("proxy_cache_key $uri;") == 2
    assert "max_size=20g inactive=10m" in front
    assert "proxy_pass https://registry-1.docker.io;" in front
    assert "proxy_ssl_verify on;" in front and "proxy_ssl_name registry-1.docker.io;" in front
    assert "proxy_pass http://10.1.2.3:5000;" in front and "error_page" not in front


def test_a_tor_cache_fills_from_its_super_pod_cache_then_the_upstream(cache_filters: Any) -> None:
    out = cache_filters.ufcctl_registry_cache_render(_settings(scheme="http", insecure=True,
                                                               parent="10.0.9.1"), "rc1", HOSTVARS["rc1"])
    front = _front(out)
    site = front[front.index("# instance site"):]
    # the parent first (blobs and everything else), the upstream when it fails to answer
    assert site.count("proxy_pass http://10.0.9.1:5001;") == 2, site
    assert "error_page 500 502 503 504 = @ufc_site_upstream_blob;" in site
    assert site.count("proxy_pass http://10.1.2.3:5000;") == 2
    assert "location @ufc_site_upstream_blob {" in site and "location @ufc_site_upstream {" in site


def test_a_tor_caches_parent_is_the_first_cache_of_its_super_pod(cache_filters: Any) -> None:
    parent = cache_filters.ufcctl_registry_cache_parent
    groups = {"registry_cache": ["tor1", "pod1", "pod2"]}
    hostvars = {"tor1": {"registry_cache_tier": "tor", "registry_cache_serves": ["0"]},
                "pod1": {"registry_cache_tier": "super_pod", "registry_cache_serves": ["0"],
                         "ansible_host": "10.9.0.1"},
                "pod2": {"registry_cache_tier": "super_pod", "registry_cache_serves": ["0", "1"]}}
    assert parent("0", "tor", None, groups, hostvars, "tor1") == "10.9.0.1"
    assert parent(1, "tor", None, groups, hostvars, "tor1") == "pod2"
    assert parent("7", "tor", None, groups, hostvars, "tor1") == ""  # no cache serves super pod 7
    assert parent("", "tor", None, groups, hostvars, "tor1") == ""
    assert parent("0", "super_pod", None, groups, hostvars, "pod2") == ""  # a super pod cache: the upstream
    # a run carrying registry_cache_index reads no cache host
    assert parent("0", "tor", {"super_pod/0": ["10.9.0.5"]}, {}, {"tor1": {}}, "tor1") == "10.9.0.5"


def test_config_problems_name_the_missing_key() -> None:
    upstream = Upstream("hub", "docker.io", "https://registry-1.docker.io", 5000, 15000)
    doc = cache_config.instance_config(
        upstream, cache_config.CacheSettings("10.0.0.1", "/var/lib/rc", "https", "/c", "/k")
    )
    assert cache_config.problems("hub", doc) == []
    del doc["proxy"]
    assert cache_config.problems("hub", doc) == ["registry cache hub: config.yml lacks proxy.remoteurl"]


def test_node_mirrors_come_from_the_inventory_and_none_without_caches(runtime_filters: Any) -> None:
    mirrors = runtime_filters.ufcctl_registry_cache_mirrors
    assert mirrors(GROUPS, HOSTVARS, "n1") == {
        "docker.io": [{"url": "http://10.0.0.1:5000", "capabilities": ["pull", "resolve"]}],
        "10.1.2.3:5000": [{"url": "http://10.0.0.1:5001", "capabilities": ["pull", "resolve"]}],
    }
    assert mirrors({"kube_node": ["n1"]}, HOSTVARS, "n1") == {}
    assert mirrors({**GROUPS, "registry_cache": []}, HOSTVARS, "n1") == {}


def test_node_mirrors_refuse_a_bad_setup_in_one_line(runtime_filters: Any) -> None:
    # n2 has the https default but the caches are not a problem by themselves: an unknown tier is
    hostvars = {**HOSTVARS, "rc1": {"registry_cache_tier": "rack"}}
    with pytest.raises(
        Exception, match=r"registry caches: host rc1: registry_cache_tier 'rack' is unknown"
    ) as err:
        runtime_filters.ufcctl_registry_cache_mirrors(GROUPS, hostvars, "n2")
    assert "\n" not in str(err.value)
    with pytest.raises(Exception, match="set registry_cache_insecure: true only in a lab"):
        runtime_filters.ufcctl_registry_cache_mirrors(
            GROUPS, {**HOSTVARS, "n2": {**HOSTVARS["n2"], "registry_cache_scheme": "http"}}, "n2"
        )


def test_a_run_given_the_index_var_needs_no_cache_hosts(runtime_filters: Any) -> None:
    # ufcctl's node phase: the chunk's inventory holds the nodes and registry_cache_index, no cache host
    node = {**HOSTVARS["n1"], "registry_cache_index": {"tor/0": ["10.0.0.1"], "super_pod/0": ["10.0.9.1"]}}
    mirrors = runtime_filters.ufcctl_registry_cache_mirrors({"kube_node": ["n1"]}, {"n1": node}, "n1")
    assert [m["url"] for m in mirrors["docker.io"]] == ["http://10.0.0.1:5000", "http://10.0.9.1:5000"]


def test_the_last_fallback_speaks_the_upstreams_scheme(runtime_filters: Any) -> None:
    # issue 31: a node whose every cache is down pulls from the `server` of hosts.toml; an upstream
    # speaking plain http must be named http:// there, or containerd tries TLS and the pull fails
    mirrors = runtime_filters.ufcctl_registry_cache_mirrors(GROUPS, HOSTVARS, "n1")
    files = runtime_filters.ufcctl_containerd_files({
        "sandbox_image": "10.1.2.3:5000/pause:3.10", "max_concurrent_downloads": 10,
        "snapshotter": "overlayfs", "cni_bin_dir": "/usr/lib/cni", "cni_conf_dir": "/etc/cni/net.d",
        "mirrors": mirrors, "ascend": False, "ascend_path": "", "upstreams": UPSTREAMS})
    assert files["problems"] == []
    hosts = {f["dest"]: render_entry("container_runtime", f) for f in files["files"]}
    assert {f["format"] for f in files["files"]} == {"toml"}  # each parsed once rendered
    site = hosts["/etc/containerd/certs.d/10.1.2.3:5000/hosts.toml"]
    assert site.splitlines()[0] == 'server = "http://10.1.2.3:5000"', site
    assert '[host."http://10.0.0.1:5001"]' in site
    hub = hosts["/etc/containerd/certs.d/docker.io/hosts.toml"]
    assert hub.splitlines()[0] == 'server = "https://registry-1.docker.io"', hub


def test_a_node_without_caches_still_reaches_a_plain_http_upstream_over_http(runtime_filters: Any) -> None:
    # found by the real kubeadm in the lab: a control plane has no ToR cache, and the caches are deployed
    # after the control plane anyway; with no hosts.toml containerd pulled `https://10.1.2.3:5000` ("server
    # gave HTTP response to HTTPS client") and kubeadm's image preflight failed
    files = runtime_filters.ufcctl_containerd_files({
        "sandbox_image": "10.1.2.3:5000/pause:3.10", "max_concurrent_downloads": 10,
        "snapshotter": "overlayfs", "cni_bin_dir": "/opt/cni/bin", "cni_conf_dir": "/etc/cni/net.d",
        "mirrors": {}, "ascend": False, "ascend_path": "", "upstreams": UPSTREAMS})
    assert files["problems"] == []
    hosts = {f["dest"]: render_entry("container_runtime", f) for f in files["files"]}
    site = hosts["/etc/containerd/certs.d/10.1.2.3:5000/hosts.toml"]
    assert site.splitlines()[0] == 'server = "http://10.1.2.3:5000"', site
    # ...and as a [host] entry: containerd 1.6.20 asked https:// of a bare http `server`
    assert '[host."http://10.1.2.3:5000"]' in site, site
