"""`ufcctl lab` for real: a test-owned lab on a test-owned subnet, reached over SSH with host keys checked."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from ufcctl.cli.main import cli
from ufcctl.lab.podman import CONTAINERS_CONF

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/ufcctl-node:bookworm"


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}
    return subprocess.run(["podman", *args], env=env, capture_output=True, text=True, check=check)


def _free_subnets(count: int) -> list[str]:
    """Unused /24s in 10.89.128.0/17, so the test never collides with a user's lab or podman's default."""
    used = []
    for name in _podman("network", "ls", "--format", "{{.Name}}").stdout.split():
        for net in json.loads(_podman("network", "inspect", name).stdout)[0].get("subnets") or []:
            used.append(ipaddress.ip_network(net["subnet"]))
    free = [str(n) for n in ipaddress.ip_network("10.89.128.0/17").subnets(new_prefix=24)
            if not any(n.overlaps(u) for u in used)]
    offset = secrets.randbelow(max(1, len(free) - count))  # two test runs at once pick different ones
    return free[offset:offset + count]


@dataclass(frozen=True)
class Lab:
    name: str
    subnet: str
    state: Path
    inventory: Path
    foreign_network: str
    foreign_containers: tuple[str, ...]

    def env(self) -> dict[str, str]:
        return {"UFC_LAB_NAME": self.name, "UFC_LAB_INVENTORY": str(self.inventory),
                "UFC_STATE_DIR": str(self.state)}

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, ["lab", *args], env=self.env())

    def ssh(self, ip: str, command: str, known_hosts: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
             "-o", f"UserKnownHostsFile={known_hosts or self.inventory / 'known_hosts.txt'}",
             "-i", str(self.state / "lab" / "id_ed25519"), f"root@{ip}", command],
            capture_output=True, text=True, timeout=60, check=False,
        )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed: apt-get install podman runc (scripts/setup.sh does)")
    base = tmp_path_factory.mktemp("lab")
    name = "it" + secrets.token_hex(3)
    subnet, foreign_subnet = _free_subnets(2)
    foreign_net = f"ufctest-foreign-{name}"
    # Things `lab down` must leave alone: a network with another label, a container named like a lab
    # node but without the lab labels, and one labelled for another lab.
    _podman("network", "create", "--subnet", foreign_subnet, "--label", "ufctest.foreign=1", foreign_net)
    foreign = (f"{name}-w99", f"{name}-w98")
    lab = Lab(name, subnet, base / "state", base / "inventory", foreign_net, foreign)
    try:
        for cname, labels in zip(foreign, (["ufctest.foreign=1"], ["ufcctl.lab=1", "ufcctl.lab.name=other"]),
                                 strict=True):
            label_args = [a for label in labels for a in ("--label", label)]
            _podman("run", "-d", "--name", cname, "--network", foreign_net, *label_args, IMAGE, "sleep", "1h")
        yield lab
    finally:
        lab.run("down")
        _podman("rm", "-f", "-t", "0", *foreign, check=False)
        _podman("network", "rm", foreign_net, check=False)


@pytest.fixture(scope="module")
def up(lab: Lab) -> Result:
    result = lab.run("up", "--nodes", "2", "--subnet", lab.subnet)
    assert result.exit_code == 0, result.output
    return result


def _status(lab: Lab) -> dict:
    result = lab.run("status", "--output", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ids(lab: Lab) -> dict[str, str]:
    label = f"label=ufcctl.lab.name={lab.name}"
    out = _podman("ps", "-a", "--filter", label, "--format", "{{.Names}} {{.ID}}")
    return dict(line.split() for line in out.stdout.splitlines())


def _nodes(status: dict) -> list[dict]:
    return [c for c in status["containers"] if c["role"] in ("control_plane", "worker")]


def test_up_starts_the_planned_containers(lab: Lab, up: Result) -> None:
    assert f"lab {lab.name!r} is up: 3 control planes + 2 workers on {lab.subnet}" in up.output
    status = _status(lab)
    net = ipaddress.ip_network(lab.subnet)
    expected = {f"{lab.name}-cp{i}": str(net.network_address + 10 + i) for i in (1, 2, 3)}
    expected |= {f"{lab.name}-w0{i}": str(net.network_address + 20 + i) for i in (1, 2)}
    expected[f"{lab.name}-hdk-mirror"] = str(net.network_address + 5)  # the NPU emulator's mirror
    assert {c["name"]: c["ip"] for c in status["containers"]} == expected
    assert {c["state"] for c in status["containers"]} == {"running"}
    assert status["subnet"] == lab.subnet and status["network"] == f"ufcctl-lab-{lab.name}"
    assert status["npu_mirror"] == {"name": f"{lab.name}-hdk-mirror", "state": "running",
                                    "ip": str(net.network_address + 5)}


def test_up_readies_the_npu_emulator_for_upgrade_drivers(lab: Lab, up: Result) -> None:
    url = f"http://{ipaddress.ip_network(lab.subnet).network_address + 5}:8080/hdk"
    assert f"NPU emulator: mirror {lab.name}-hdk-mirror serves {url}" in up.output
    node_vars = yaml.safe_load((lab.inventory / "group_vars" / "npu_node.yml").read_text())
    assert node_vars["ascend_driver_artifact_url"] == url
    # a worker downloads the emulated packages from the mirror, inside the lab network
    sums = _podman("exec", f"{lab.name}-w01", "curl", "-fsS", f"{url}/SHA256SUMS").stdout
    assert f"Ascend-hdk-910b-npu-driver_{node_vars['ufc_npu_driver_version']}_linux-x86_64.run" in sums


def test_ssh_works_with_the_generated_key_and_checked_host_keys(lab: Lab, up: Result) -> None:
    key = lab.state / "lab" / "id_ed25519"
    assert key.stat().st_mode & 0o777 == 0o600
    for container in _nodes(_status(lab)):
        proc = lab.ssh(container["ip"], "hostname")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == container["name"]


def test_host_key_checking_is_really_on(lab: Lab, up: Result, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    proc = lab.ssh(_status(lab)["containers"][0]["ip"], "true", known_hosts=empty)
    assert proc.returncode != 0
    assert "Host key verification failed" in proc.stderr


def test_every_container_has_its_own_host_key(lab: Lab, up: Result) -> None:
    keys = [line.split()[2] for line in (lab.inventory / "known_hosts.txt").read_text().splitlines()]
    assert len(keys) == 5 and len(set(keys)) == 5


def test_ansible_reaches_every_host_through_the_inventory(lab: Lab, up: Result) -> None:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), "-i", str(lab.inventory), "all",
         "-m", "ansible.builtin.ping"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("SUCCESS") == 5


def test_nodes_boot_clean_with_components_installed_but_off(lab: Lab, up: Result) -> None:
    node = f"{lab.name}-cp1"
    assert _podman("exec", node, "systemctl", "is-system-running").stdout.strip() == "running"
    units = ["etcd", "haproxy", "keepalived", "nfs-ganesha", "rpcbind", "chrony"]
    enabled = _podman("exec", node, "systemctl", "is-enabled", *units, check=False).stdout.split()
    assert enabled == ["disabled"] * len(units)
    # The image's drop-ins let these start without CAP_SYS_ADMIN / CAP_SYS_TIME.
    _podman("exec", node, "systemctl", "start", "haproxy", "chrony")
    active = _podman("exec", node, "systemctl", "is-active", "haproxy", "chrony").stdout.split()
    assert active == ["active", "active"]
    _podman("exec", node, "systemctl", "stop", "haproxy", "chrony")


def test_up_again_is_a_no_op(lab: Lab, up: Result) -> None:
    before = _ids(lab)
    inventory_before = {p: p.read_text() for p in lab.inventory.rglob("*") if p.is_file()}
    result = lab.run("up")
    assert result.exit_code == 0, result.output
    assert f"lab {lab.name!r} is already up" in result.output
    assert "inventory" in result.output and "unchanged" in result.output
    assert _ids(lab) == before
    assert {p: p.read_text() for p in lab.inventory.rglob("*") if p.is_file()} == inventory_before


def test_other_subnet_on_a_running_lab_is_refused(lab: Lab, up: Result) -> None:
    result = lab.run("up", "--subnet", "10.89.127.0/24")
    assert result.exit_code == 2
    assert f"is up on {lab.subnet}" in result.output


def test_a_stopped_node_is_started_and_reachable_again(lab: Lab, up: Result) -> None:
    node = f"{lab.name}-w01"
    _podman("stop", "-t", "2", node)
    result = lab.run("up")
    assert result.exit_code == 0, result.output
    assert f"started 1 stopped container(s): {node}" in result.output
    ip = str(ipaddress.ip_network(lab.subnet).network_address + 21)
    proc = lab.ssh(ip, "hostname")  # same MAC after restart: no stale neighbour entry on the host
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == node


def test_scaling_down_removes_only_the_extra_worker(lab: Lab, up: Result) -> None:
    before = _ids(lab)
    result = lab.run("up", "--nodes", "1")
    assert result.exit_code == 0, result.output
    after = _ids(lab)
    assert set(before) - set(after) == {f"{lab.name}-w02"}
    assert all(after[n] == before[n] for n in after)
    assert f"{lab.name}-w02" not in (lab.inventory / "hosts.yml").read_text()


def test_down_removes_exactly_what_up_created(lab: Lab, up: Result) -> None:
    assert (lab.state / "lab" / f"{lab.name}-npu-emulator").is_dir()  # the emulator's packages, before
    result = lab.run("down")
    assert result.exit_code == 0, result.output
    assert _ids(lab) == {}
    # no container of the lab or its emulators is left, whatever its labels
    names = _podman("ps", "-a", "--format", "{{.Names}}").stdout.split()
    assert [n for n in names if n.startswith(f"{lab.name}-") and n not in lab.foreign_containers] == []
    assert _podman("network", "exists", f"ufcctl-lab-{lab.name}", check=False).returncode == 1
    assert not lab.inventory.exists()
    # no file of the lab: inventory, NFS export and emulator directories are gone
    assert [str(p) for p in lab.state.rglob("*") if lab.name in p.name] == []
    # What the test created for contrast is still there, and the image too.
    for cname in lab.foreign_containers:
        assert _podman("container", "exists", cname, check=False).returncode == 0, cname
    assert _podman("network", "exists", lab.foreign_network, check=False).returncode == 0
    assert _podman("image", "exists", IMAGE, check=False).returncode == 0
    again = lab.run("down")
    assert again.exit_code == 0 and "is not up" in again.output
