"""monitoring_agent + monitoring on a lab-image container: every component runs and answers."""

import json
import time

UNITS = ("prometheus-node-exporter", "ufcctl-host-metrics", "victoria-metrics", "ufcctl-vmagent",
         "ufcctl-vmalert", "prometheus-alertmanager")


def _get(host, url):
    result = host.run(f"curl -sf --max-time 5 {url}")
    assert result.rc == 0, f"{url}: {result.stderr}"
    return result.stdout


def test_every_component_runs_enabled(host):
    for unit in UNITS:
        assert host.service(unit).is_running and host.service(unit).is_enabled, unit


def test_node_exporter_serves_the_host_metrics(host):
    metrics = _get(host, "http://127.0.0.1:9100/metrics")
    assert 'ufcctl_service_active{unit="ssh"} 1' in metrics
    assert "node_load1" in metrics and "node_arp_entries" not in metrics  # arp is turned off


def test_vmagent_scrapes_every_target_up(host):
    deadline = time.monotonic() + 60  # a guard: scrapes run every 5 s here
    while True:
        targets = json.loads(_get(host, "http://127.0.0.1:8429/api/v1/targets"))["data"]["activeTargets"]
        jobs = {t["labels"]["job"]: t["health"] for t in targets}
        if set(jobs) >= {"node", "victoria-metrics", "vmagent", "vmalert", "alertmanager"} and \
                set(jobs.values()) == {"up"} or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert set(jobs.values()) == {"up"}, jobs
    assert all(t["labels"]["instance"] == "ufcctl-molecule-monitoring" for t in targets)


def test_vmalert_loaded_the_rule_groups(host):
    groups = json.loads(_get(host, "http://127.0.0.1:8880/api/v1/rules"))["data"]["groups"]
    assert {g["name"] for g in groups} == {f"ufcctl-{c}" for c in ("apiserver", "etcd", "lb", "nodes", "nfs", "npu",
                                                                   "certs")}


def test_victoria_metrics_and_alertmanager_answer(host):
    assert _get(host, "http://127.0.0.1:8428/health").strip() == "OK"
    _get(host, "http://127.0.0.1:9093/-/ready")
    assert host.file("/etc/default/ufcctl-vmagent").contains("-promscrape.cluster.membersCount=1")


def test_dashboards_are_copied(host):
    names = host.run("ls /etc/ufcctl/monitoring/dashboards").stdout.split()
    assert names == ["apiserver-lb.json", "etcd.json", "nodes.json", "npu.json"]


def test_certificate_metrics_are_written_and_their_timer_runs(host):
    assert host.service("ufcctl-cert-metrics.timer").is_enabled
    assert host.run("systemctl is-active ufcctl-cert-metrics.timer").stdout.strip() == "active"
    metrics = _get(host, "http://127.0.0.1:9100/metrics")
    line = ('ufcctl_certificate_not_after_timestamp_seconds{path="/usr/share/ca-certificates/mozilla/'
            'ISRG_Root_X1.crt",subject="CN=ISRG Root X1,O=Internet Security Research Group,C=US"}')
    assert line in metrics
    assert float(metrics.split(line, 1)[1].split()[0]) == 2064567878  # 2035-06-04 11:04:38 UTC
    assert "/etc/absent.crt" not in metrics
