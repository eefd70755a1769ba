"""roles/nfs_server on a real container lab: nfs-ganesha on the lab's NFS node (a bind-mounted host
directory), a worker container writing and reading through NFSv4 with libnfs-utils, the dataset layout
with its modes, and a rerun of the role alone with 0 changed. The lab is the test-owned stack shared with
the deploy, etcd and VIP modules (tests/integration/conftest.py): `ufcctl deploy` installed the server."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers.lab import STACK_LAB, Stack

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LAB = STACK_LAB  # the deployed lab shared with the deploy, etcd and VIP modules (conftest.py)
SERVER, CLIENT = f"{LAB}-cp1", f"{LAB}-w01"
PLAYBOOK = "- hosts: nfs_server\n  gather_facts: false\n  roles: [nfs_server]\n"
LAYOUT = {  # path under the export -> mode (octal, as stat %a prints it); roles/nfs_server/defaults
    "atlas_dls": "755",
    "atlas_dls/public": "755",
    "atlas_dls/public/code": "755",
    "atlas_dls/public/dataset": "755",
    "atlas_dls/output": "2775",
}


@dataclass(frozen=True)
class Lab:
    inventory: Path
    env: dict[str, str]
    export_dir: Path  # the host directory bind-mounted at /srv/nfs on the server
    server_ip: str

    def url(self, path: str) -> str:
        return f"nfs://{self.server_ip}/data/{path}?version=4"


def _run(cmd: list[str], env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False)


def _exec(lab: Lab, container: str, command: str) -> subprocess.CompletedProcess[str]:
    return _run(["podman", "exec", container, "sh", "-c", command], lab.env, timeout=120)


def _changed(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    return {host: int(n) for host, n in re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", proc.stdout, re.M)}


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Lab:
    stack.require_deployed()
    hosts = yaml.safe_load((stack.inventory / "hosts.yml").read_text())["all"]["children"]
    assert list(hosts["nfs_server"]["hosts"]) == [SERVER]
    mounts = _run(["podman", "inspect", SERVER, "--format",
                   "{{range .Mounts}}{{.Destination}} {{.Source}}\n{{end}}"], stack.env)
    export_dir = dict(line.split(" ", 1) for line in mounts.stdout.splitlines() if line)["/srv/nfs"]
    return Lab(stack.inventory, stack.env, Path(export_dir),
               hosts["kube_control_plane"]["hosts"][SERVER]["ansible_host"])


def test_deploy_runs_ganesha(lab: Lab) -> None:
    units = _exec(lab, SERVER, "systemctl is-active nfs-ganesha rpcbind; systemctl is-enabled nfs-ganesha")
    assert units.stdout.split() == ["active", "active", "enabled"], units.stdout + units.stderr


def test_layout_is_on_the_bind_mount_with_the_documented_modes(lab: Lab) -> None:
    # read on the host side of the bind mount: the directories are really on the exported disk
    for rel, mode in LAYOUT.items():
        info = (lab.export_dir / rel).stat()
        assert (f"{info.st_mode & 0o7777:o}", info.st_uid, info.st_gid) == (mode, 1000, 1000), rel


def test_worker_writes_and_reads_through_nfsv4(lab: Lab) -> None:
    payload = "resnet50 epoch 3 checkpoint\n"
    write = _exec(lab, CLIENT, f"printf '{payload}' > /tmp/ckpt.txt && nfs-cp /tmp/ckpt.txt "
                               f"'{lab.url('atlas_dls/output/ckpt.txt')}'")
    assert write.returncode == 0, write.stdout + write.stderr
    read = _exec(lab, CLIENT, f"nfs-cat '{lab.url('atlas_dls/output/ckpt.txt')}'")
    assert read.returncode == 0 and read.stdout == payload, read.stdout + read.stderr
    assert (lab.export_dir / "atlas_dls/output/ckpt.txt").read_text() == payload
    # a file put on the server's disk is read by the client (code uploaded by the data owner)
    (lab.export_dir / "atlas_dls/public/code/train_start.sh").write_text("#!/bin/sh\necho train\n")
    code = _exec(lab, CLIENT, f"nfs-cat '{lab.url('atlas_dls/public/code/train_start.sh')}'")
    assert code.stdout == "#!/bin/sh\necho train\n", code.stderr
    listing = _exec(lab, CLIENT, f"nfs-ls '{lab.url('atlas_dls/public')}'")
    assert {"code", "dataset"} <= set(listing.stdout.split()), listing.stdout + listing.stderr


def test_the_role_alone_changes_nothing_on_a_deployed_server(lab: Lab, tmp_path: Path) -> None:
    playbook = tmp_path / "nfs.yml"
    playbook.write_text(PLAYBOOK)
    env = {**lab.env, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
           "ANSIBLE_NOCOLOR": "1"}
    second = _run([str(BIN / "ansible-playbook"), "-i", str(lab.inventory), str(playbook)], env)
    assert second.returncode == 0, second.stdout[-4000:]
    assert _changed(second) == {SERVER: 0}, second.stdout[-3000:]
