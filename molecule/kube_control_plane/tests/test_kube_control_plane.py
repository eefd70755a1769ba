"""kube_control_plane without kubeadm: files rendered and valid, CA installed, bootstrap reported SKIPPED."""

from __future__ import annotations

import pytest
import testinfra
import yaml

from ufcctl.domain.controlplane.schema import documents_errors

CONFIG = "/etc/kubernetes/ufcctl"


@pytest.fixture(scope="module")
def hosts(instance_names):
    return {name: testinfra.get_host(f"podman://{name}") for name in instance_names}


def _docs(host, name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(host.file(f"{CONFIG}/{name}").content_string) if d]


def test_first_host_inits_and_the_others_join(hosts):
    names = sorted(hosts)
    for name in names:
        kinds = [d["kind"] for d in _docs(hosts[name], "kubeadm.yaml")]
        expected = (
            ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration", "KubeProxyConfiguration"]
            if name == names[0]
            else ["JoinConfiguration"]
        )
        assert kinds == expected, name


def test_written_files_pass_the_schema_and_are_private(hosts):
    for name, host in hosts.items():
        for file in ("kubeadm.yaml", "kube-scheduler-config.yaml"):
            assert documents_errors(_docs(host, file)) == [], (name, file)
            assert host.file(f"{CONFIG}/{file}").mode == 0o600
        assert host.file("/etc/kubernetes/pki/ca.key").mode == 0o600


def test_wiring_vip_etcd_and_dns(hosts):
    first = hosts[sorted(hosts)[0]]
    addresses = sorted(h.check_output("hostname -I").split()[0] for h in hosts.values())
    docs = {d["kind"]: d for d in _docs(first, "kubeadm.yaml")}
    cluster = docs["ClusterConfiguration"]
    assert cluster["controlPlaneEndpoint"] == "10.255.255.10:8443"
    assert (
        sorted(u.split("//")[1].split(":")[0] for u in cluster["etcd"]["external"]["endpoints"]) == addresses
    )
    args = {a["name"]: a["value"] for a in cluster["apiServer"]["extraArgs"]}
    assert args["etcd-servers-overrides"].count("#") == 3  # events, leases, pods
    assert set(addresses) <= set(cluster["apiServer"]["certSANs"])
    assert docs["KubeletConfiguration"]["clusterDNS"] == ["169.254.20.10"]
    assert docs["KubeletConfiguration"]["serializeImagePulls"] is False


def test_join_discovery_pins_the_installed_ca(hosts):
    other = hosts[sorted(hosts)[1]]
    join = _docs(other, "kubeadm.yaml")[0]
    script = (
        "openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der "
        "| sha256sum | cut -d' ' -f1"
    )
    assert join["discovery"]["bootstrapToken"]["caCertHashes"] == ["sha256:" + other.check_output(script)]


@pytest.mark.parametrize("step", [-2, -1], ids=["converge", "idempotence"])
def test_bootstrap_is_reported_skipped_never_done(logged_runs, hosts, step):
    run = logged_runs("Converge")[step]
    assert run.text.count("kubeadm bootstrap SKIPPED") == 3
    assert "kubeadm, kubelet, container runtime socket missing" in run.text
    for host in hosts.values():  # nothing pretended to initialise or join
        assert not host.file("/etc/kubernetes/admin.conf").exists
        assert not host.file("/etc/kubernetes/kubelet.conf").exists
