"""vmagent's scrape configuration from the inventory, and which service a changed file reaches."""

from __future__ import annotations

from ufcctl.domain.monitoring.scrape import ScrapeSettings, scrape_config, service_actions, targets

GROUPS = {
    "all": ["cp1", "cp2", "w1"],
    "etcd_core": ["cp1", "cp2"], "etcd_events": ["cp1"], "etcd_pods": ["cp2"],
    "apiserver_lb": ["cp1"], "monitoring": ["cp2"], "npu_node": ["w1"], "kube_control_plane": ["cp1"],
}
HOSTVARS = {
    "cp1": {"ansible_host": "10.0.0.1", "etcd_address": "10.1.0.1"},
    "cp2": {"ansible_host": "10.0.0.2", "etcd_core_metrics_port": 12381, "monitoring_address": "10.2.0.2"},
    "w1": {"ansible_host": "fd00::3", "monitoring_agent_port": "{{ some_template }}"},
}


def _by_job(settings: ScrapeSettings) -> dict[str, list[tuple[str, dict[str, str]]]]:
    jobs: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for t in targets(GROUPS, HOSTVARS, settings):
        jobs.setdefault(t.job, []).append((t.address, dict(t.labels)))
    return jobs


def test_every_host_has_a_node_target_named_as_in_the_inventory() -> None:
    jobs = _by_job(ScrapeSettings())
    # a templated inventory value is not resolved here: the default port stands
    assert jobs["node"] == [("10.0.0.1:9100", {"instance": "cp1"}), ("10.0.0.2:9100", {"instance": "cp2"}),
                            ("[fd00::3]:9100", {"instance": "w1"})]


def test_etcd_targets_use_the_member_address_and_each_cluster_port() -> None:
    etcd = _by_job(ScrapeSettings())["etcd"]
    assert etcd == [
        ("10.1.0.1:2381", {"instance": "cp1", "etcd_cluster": "core", "member": "cp1"}),
        ("10.0.0.2:12381", {"instance": "cp2", "etcd_cluster": "core", "member": "cp2"}),
        ("10.1.0.1:2386", {"instance": "cp1", "etcd_cluster": "events", "member": "cp1"}),
        ("10.0.0.2:2387", {"instance": "cp2", "etcd_cluster": "pods", "member": "cp2"}),
    ]


def test_optional_jobs_appear_only_when_asked() -> None:
    plain = _by_job(ScrapeSettings())
    assert set(plain) == {"node", "etcd", "haproxy"}
    full = _by_job(ScrapeSettings(self_ports={"victoria-metrics": 8428}, npu_exporter=True,
                                  apiserver_cert="/c.pem", apiserver_key="/k.pem"))
    assert full["victoria-metrics"] == [("10.2.0.2:8428", {"instance": "cp2"})]  # monitoring_address
    assert full["npu-exporter"] == [("[fd00::3]:8082", {"instance": "w1"})]
    assert full["kube-apiserver"] == [("10.0.0.1:6443", {"instance": "cp1"})]


def test_haproxy_metrics_off_means_no_target() -> None:
    hostvars = {**HOSTVARS, "cp1": {**HOSTVARS["cp1"], "apiserver_lb_metrics_port": 0}}
    assert "haproxy" not in {t.job for t in targets(GROUPS, hostvars, ScrapeSettings())}


def test_the_config_has_one_job_per_label_and_tls_only_for_the_apiserver() -> None:
    settings = ScrapeSettings(interval="15s", apiserver_cert="/c.pem", apiserver_key="/k.pem")
    config = scrape_config(targets(GROUPS, HOSTVARS, settings), settings)
    assert config["global"] == {"scrape_interval": "15s", "scrape_timeout": "10s"}
    names = [job["job_name"] for job in config["scrape_configs"]]
    assert names == ["node", "etcd", "haproxy", "kube-apiserver"]
    api = config["scrape_configs"][-1]
    assert api["scheme"] == "https" and api["tls_config"] == {"cert_file": "/c.pem", "key_file": "/k.pem"}
    assert all("scheme" not in job for job in config["scrape_configs"][:-1])


def test_changed_files_reload_or_restart_their_service_once() -> None:
    config = "/etc/ufcctl/monitoring"
    assert service_actions([f"{config}/rules/ufcctl.yml", f"{config}/scrape.yml"], config) == [
        {"unit": "ufcctl-vmalert.service", "state": "reloaded"},
        {"unit": "ufcctl-vmagent.service", "state": "reloaded"}]
    # a restart wins over a reload of the same service; unknown paths (dashboards) touch nothing
    assert service_actions([f"{config}/scrape.yml", "/etc/default/ufcctl-vmagent",
                            f"{config}/dashboards/etcd.json"], config) == [
        {"unit": "ufcctl-vmagent.service", "state": "restarted"}]


def test_registry_caches_get_one_target_per_instance_on_its_metrics_port() -> None:
    upstreams = [{"name": "dockerhub", "registry": "docker.io", "url": "https://registry-1.docker.io",
                  "port": 5000},
                 {"name": "site", "registry": "r.local:5000", "url": "http://r.local:5000", "port": 5001,
                  "metrics_port": 9500}]
    groups = {**GROUPS, "registry_cache": ["rc1", "rc2"]}
    hostvars = {**HOSTVARS,
                "rc1": {"ansible_host": "10.3.0.1", "registry_cache_upstreams": upstreams},
                "rc2": {"ansible_host": "10.3.0.2", "registry_cache_address": "10.4.0.2",
                        "registry_cache_upstreams": upstreams}}
    found = [(t.address, dict(t.labels)) for t in targets(groups, hostvars, ScrapeSettings())
             if t.job == "registry-cache"]
    assert found == [("10.3.0.1:15000", {"instance": "rc1", "upstream": "dockerhub"}),
                     ("10.3.0.1:9500", {"instance": "rc1", "upstream": "site"}),
                     ("10.4.0.2:15000", {"instance": "rc2", "upstream": "dockerhub"}),
                     ("10.4.0.2:9500", {"instance": "rc2", "upstream": "site"})]
    names = [job["job_name"] for job in scrape_config(targets(groups, hostvars, ScrapeSettings()),
                                                      ScrapeSettings())["scrape_configs"]]
    assert names == ["node", "etcd", "haproxy", "registry-cache"]
