"""container_runtime on a lab-image container: containerd runs with the rendered configuration."""

import tomllib


def test_containerd_runs_and_answers(host):
    assert host.service("containerd").is_running and host.service("containerd").is_enabled
    version = host.run("ctr version")
    assert version.rc == 0 and "Server:" in version.stdout


def test_config_is_what_kubelet_needs(host):
    config = tomllib.loads(host.file("/etc/containerd/config.toml").content_string)
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert cri["cni"]["bin_dir"] == "/opt/cni/bin"  # where Calico installs its plugins (issue 44, D9)
    dump = host.run("containerd config dump").stdout  # what containerd itself read
    assert "SystemdCgroup = true" in dump and "max_concurrent_downloads = 10" in dump


def test_registry_mirror_hosts_toml(host):
    hosts = tomllib.loads(host.file("/etc/containerd/certs.d/docker.io/hosts.toml").content_string)
    assert hosts["server"] == "https://registry-1.docker.io"
    assert hosts["host"]["http://10.0.0.5:5000"]["capabilities"] == ["pull", "resolve"]


def test_kubelet_unit_is_installed_and_enabled_without_a_join(host):
    dropin = host.file("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf")
    assert dropin.contains("--config=/var/lib/kubelet")
    assert host.run("systemctl is-enabled kubelet").stdout.strip() == "enabled"
    assert not host.file("/etc/kubernetes/kubelet.conf").exists
    assert not host.file("/etc/kubernetes/ufcctl/kubeadm-join.yaml").exists
    assert host.package("nfs-common").is_installed
