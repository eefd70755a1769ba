"""registry_cache on a lab-image container: a cache instance proxies a plain docker-registry upstream."""

import time

CACHE = "http://127.0.0.1:5001"
METRICS = "http://127.0.0.1:15001"
UNIT = "ufcctl-registry-cache@lab.service"


def _status(host, url):
    return host.run(f"curl -s -o /dev/null -w '%{{http_code}}' --max-time 5 {url}").stdout


def _wait_healthy(host):
    deadline = time.monotonic() + 60  # a hang guard: the instance answers within seconds
    while _status(host, f"{METRICS}/debug/health") != "200" and time.monotonic() < deadline:
        time.sleep(1)


def test_the_instance_runs_enabled_and_debians_unit_stays_off(host):
    assert host.service(UNIT).is_running and host.service(UNIT).is_enabled
    assert not host.service("docker-registry").is_running
    assert not host.service("docker-registry").is_enabled
    assert host.service("ufcctl-registry-cache-prune.timer").is_enabled
    # the front (nginx) the instance fills through; Debian's own nginx.service stays off
    front = host.service("ufcctl-registry-front")
    assert front.is_running and front.is_enabled
    assert not host.service("nginx").is_running and not host.service("nginx").is_enabled


def test_the_cache_answers_v2_and_serves_registry_metrics(host):
    assert _status(host, f"{CACHE}/v2/") == "200"
    metrics = host.run(f"curl -sf --max-time 5 {METRICS}/metrics")
    assert metrics.rc == 0, metrics.stderr
    assert "registry_" in metrics.stdout


def test_the_config_proxies_the_upstream_and_is_not_world_readable(host):
    config = host.file("/etc/ufcctl/registry-cache/lab.yml")
    assert config.mode == 0o640 and config.group == "docker-registry"
    # the instance's remote is the host's front, which proxies the upstream (no super pod cache here)
    assert "remoteurl: http://127.0.0.1:25001" in config.content_string
    front = host.file("/etc/ufcctl/registry-cache/front.conf").content_string
    assert "proxy_pass http://127.0.0.1:5000;" in front
    assert "rootdirectory: /var/lib/ufcctl-registry-cache/lab" in config.content_string


def test_the_cache_pulls_through_from_the_upstream(host):
    # the upstream holds no repository: the cache forwards the lookup and answers the upstream's 404
    assert _status(host, f"{CACHE}/v2/nothing/here/manifests/latest") == "404"
    upstream_log = host.run("journalctl -u ufcctl-test-upstream --no-pager").stdout
    assert "/v2/nothing/here/manifests/latest" in upstream_log


def test_the_size_bound_wipes_the_storage_and_restarts_the_instance(host):
    marker = "/var/lib/ufcctl-registry-cache/lab/marker"
    host.run(f"touch {marker}")
    run = host.run("STORAGE_DIR=/var/lib/ufcctl-registry-cache MAX_GIB=0 INSTANCES=lab "
                   "/usr/local/sbin/ufcctl-registry-cache-prune")
    assert run.rc == 0, run.stderr
    assert "exceeds 0 GiB" in run.stdout
    assert not host.file(marker).exists
    _wait_healthy(host)
    assert host.service(UNIT).is_running
    assert _status(host, f"{METRICS}/debug/health") == "200"
