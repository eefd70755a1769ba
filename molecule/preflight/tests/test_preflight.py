"""preflight on the lab image: every problem in one failure naming host and fix; own services pass."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest

IMPOSSIBLE_DISK = [{"path": "/var/lib/ufcctl-test/absent", "min_free_gib": 1048576}]
STRANGER = "ufc-test-stranger"
ETCD = "ufc-test-etcd"


def _wait_listening(host, port: int) -> None:
    probe = (
        "import socket, time\n"
        "for _ in range(100):\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), 1).close(); break\n"
        "    except OSError:\n"
        "        time.sleep(0.1)\n"
        "else:\n"
        "    raise SystemExit(1)\n"
    )
    host.run_test("python3 -c %s", probe)


@contextlib.contextmanager
def _transient_unit(host, unit: str, command: str, ports: list[int]) -> Iterator[None]:
    """Run `command` as a transient systemd unit inside the instance while the block runs."""
    host.run_test(f"systemd-run --unit={unit} --collect {command}")
    try:
        for port in ports:
            _wait_listening(host, port)
        yield
    finally:
        host.run(f"systemctl stop {unit}")


@pytest.fixture
def stranger_on_etcd_port(host) -> Iterator[None]:
    """A program that is not etcd listening on the etcd core client port."""
    with _transient_unit(host, STRANGER, "python3 -m http.server 2379 --bind 127.0.0.1", [2379]):
        yield


@pytest.fixture
def etcd_on_its_ports(host) -> Iterator[None]:
    """The real etcd (from the image) on the core client and peer ports, as after a deploy."""
    urls = (
        "--data-dir /tmp/ufc-test-etcd --name probe "
        "--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 "
        "--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 "
        "--initial-cluster probe=http://127.0.0.1:2380"
    )
    with _transient_unit(host, ETCD, f"etcd {urls}", [2379, 2380]):
        yield
    host.run("rm -rf /tmp/ufc-test-etcd")


def test_ports_outside_the_hosts_groups_are_ignored(stranger_on_etcd_port, run_playbook):
    # The instance is in no etcd group, so 2379 is none of its business.
    run = run_playbook(extra_vars={"preflight_disk_requirements": []})
    assert run.rc == 0, run.output


def test_every_problem_is_listed_in_one_failure(stranger_on_etcd_port, run_playbook, instance_names):
    run = run_playbook(groups=["etcd_core"], extra_vars={"preflight_disk_requirements": IMPOSSIBLE_DISK})
    assert run.rc != 0
    assert f"preflight failed on {instance_names[0]} (2 problems):" in run.text, run.output
    assert "TCP port 2379 (etcd core client) is in use by pid" in run.text
    assert f"(unit {STRANGER}) -> fix: stop or move it; only etcd may hold this port" in run.text
    assert "needs 1048576 GiB (/var/lib/ufcctl-test/absent 1048576) -> fix:" in run.text
    assert "TCP port 2380" not in run.text  # the peer port is free


def test_check_mode_fails_the_same_way(run_playbook, instance_names):
    run = run_playbook(check=True, extra_vars={"preflight_disk_requirements": IMPOSSIBLE_DISK})
    assert run.rc != 0
    assert f"preflight failed on {instance_names[0]} (1 problem):" in run.text, run.output


def test_missing_python_fails_before_anything_else(run_playbook, instance_names):
    run = run_playbook(extra_vars={"ansible_python_interpreter": "/usr/bin/python-absent"})
    assert run.rc != 0
    expected = f"preflight failed on {instance_names[0]}: no python3 found -> fix: install python3"
    assert expected in run.text, run.output
    # the probe module never ran there: only the python problem is reported
    probe = r"Probe OS, time sync, swap, disk space and listening ports\] \**\s*skipping: \["
    assert re.search(probe + re.escape(instance_names[0]) + r"\]", run.text), run.output


# A re-deploy with etcd on its own ports passes preflight: the stack lab's second `ufcctl deploy`
# (tests/integration/test_deploy_lab.py) runs preflight onto three running etcd clusters.


def test_a_foreign_program_list_fails_even_our_etcd(etcd_on_its_ports, run_playbook):
    # The owner list is what makes a re-deploy pass: without etcd in it, etcd is a stranger too.
    ports = [
        {"port": 2379, "name": "etcd core client", "groups": ["etcd_core"], "owners": ["kube-apiserver"]},
    ]
    run = run_playbook(
        groups=["etcd_core"], extra_vars={"preflight_disk_requirements": [], "preflight_ports": ports}
    )
    assert run.rc != 0
    assert "TCP port 2379 (etcd core client) is in use by pid" in run.text
    assert f"etcd (unit {ETCD})" in run.text, run.output
