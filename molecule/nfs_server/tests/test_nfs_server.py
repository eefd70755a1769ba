"""nfs-ganesha from roles/nfs_server: layout and modes on the server, NFSv4 reads and writes from a client
container (libnfs-utils), exports reloaded without a restart, honest check mode. Bad input is refused by
the planner before any task touches the node (unit-tested in tests/unit/domain/nfs; one playbook run
less here keeps the scenario short)."""

from __future__ import annotations

import re
import uuid

import pytest
import testinfra

EXPORT = "/srv/nfs"  # server directory (bind mount), exported as PSEUDO
PSEUDO = "/data"
SERVER_CHANGE = {"nfs_server_ganesha_lease_lifetime": 45, "nfs_server_ganesha_grace_period": 60}
LAYOUT = {  # path under the export -> (mode, uid, gid), roles/nfs_server/defaults
    "": (0o755, 0, 0),
    "atlas_dls": (0o755, 1000, 1000),
    "atlas_dls/public": (0o755, 1000, 1000),
    "atlas_dls/public/code": (0o755, 1000, 1000),
    "atlas_dls/public/dataset": (0o755, 1000, 1000),
    "atlas_dls/output": (0o2775, 1000, 1000),
}


@pytest.fixture(scope="module")
def server_name(instance_names) -> str:
    return next(n for n in instance_names if n.endswith("-srv"))


@pytest.fixture(scope="module")
def server(server_name):
    return testinfra.get_host(f"podman://{server_name}")


@pytest.fixture(scope="module")
def client(instance_names):
    return testinfra.get_host(f"podman://{next(n for n in instance_names if n.endswith('-client'))}")


@pytest.fixture(scope="module")
def url(server):
    address = server.interface("eth0").addresses[0]
    return lambda path: f"nfs://{address}{PSEUDO}/{path}?version=4"


def _main_pid(server) -> str:
    return server.check_output("systemctl show -p MainPID --value nfs-ganesha.service")


def test_ganesha_and_rpcbind_run_enabled(server):
    # one exec per check: every podman exec costs seconds on a loaded 2-core machine
    units = "nfs-ganesha.service rpcbind.service"
    assert server.check_output(f"systemctl is-active {units}; systemctl is-enabled {units}").split() == [
        "active", "active", "enabled", "enabled",
    ]
    assert server.run("grep -q 'skipping GRACE (Graceless is true)' /var/log/ganesha/ganesha.log").rc == 0


def test_layout_has_the_documented_modes_and_owners(server):
    paths = [f"{EXPORT}/{rel}".rstrip("/") for rel in LAYOUT]
    out = server.check_output(f"stat -c '%F %a %u %g' {' '.join(paths)}")
    found = [line.split(" ", 1)[1].split() for line in out.splitlines()]
    expected = [[f"{mode:o}", str(uid), str(gid)] for mode, uid, gid in LAYOUT.values()]
    assert [line.startswith("directory ") for line in out.splitlines()] == [True] * len(paths)
    assert dict(zip(paths, found, strict=True)) == dict(zip(paths, expected, strict=True))


def test_client_writes_and_reads_through_nfsv4(server, client, url):
    name = f"ckpt-{uuid.uuid4().hex[:8]}.txt"  # nfs-cp refuses to overwrite (NFS4ERR_EXIST on a rerun)
    client.check_output("printf 'checkpoint-7\\n' > /tmp/ckpt.txt")
    client.check_output("nfs-cp /tmp/ckpt.txt %s", url(f"atlas_dls/output/{name}"))
    assert client.check_output("nfs-cat %s", url(f"atlas_dls/output/{name}")) == "checkpoint-7"
    # the bytes landed in the exported directory on the server
    assert server.file(f"{EXPORT}/atlas_dls/output/{name}").content_string == "checkpoint-7\n"
    listing = client.check_output("nfs-ls %s", url("atlas_dls/public"))
    assert {"code", "dataset"} <= set(listing.split())


def test_export_change_is_a_reload_not_a_restart(server, client, url, run_playbook):
    pid = _main_pid(server)
    elsewhere = run_playbook(extra_vars={"nfs_server_export_network": "192.0.2.0/24"})
    assert elsewhere.rc == 0, elsewhere.output[-3000:]
    assert "Reload nfs-ganesha exports" in elsewhere.text
    assert _main_pid(server) == pid, "an exports-only change restarted ganesha"
    denied = client.run("nfs-ls %s", url("atlas_dls"))
    assert denied.rc != 0, "a client outside the exported network could still list the export"


def test_server_setting_change_restarts_and_wins_over_the_reload(server, client, url, run_playbook):
    # the exports go back to the scenario network (a reload) and a server setting changes (a
    # restart): one restart, and the client is served again
    pid = _main_pid(server)
    run = run_playbook(extra_vars=SERVER_CHANGE)
    assert run.rc == 0, run.output[-3000:]
    assert "Lease_Lifetime = 45;" in server.file("/etc/ganesha/ganesha.conf").content_string
    assert _main_pid(server) != pid
    assert re.search(r"Reload nfs-ganesha exports\] \**\s*skipping", run.text), run.text[-2000:]
    assert "output" in client.check_output("nfs-ls %s", url("atlas_dls"))


def test_check_mode_on_a_converged_server_changes_nothing(run_playbook):
    run = run_playbook(extra_vars=SERVER_CHANGE, check=True)
    assert run.rc == 0, run.output[-3000:]
    recap = re.findall(r"changed=(\d+)", run.text)
    assert recap and all(n == "0" for n in recap), run.text[-2000:]
