"""`ufcctl certs check` on the deployed lab, run as the README says: every certificate the catalog
expects on each host is listed with more than 300 days left and the command exits 0; a threshold
above every lifetime exits 1. Read-only; shares the deployed stack (tests/integration/conftest.py)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.lab import STACK_STATE, Stack, ufcctl
from ufcctl.app.certs import controller_dirs
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.certs.catalog import expected_on_controller, expected_on_host

pytestmark = pytest.mark.integration

# the lab's newest certificates last a year (the kube emulator's apiserver.crt, as kubeadm's), the
# etcd ones 730 days and the CAs ten years: a fresh lab has far more than this left
FRESH_DAYS = 300


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Stack:
    stack.require_deployed()
    return stack


def test_check_lists_every_expected_certificate_fresh(lab: Stack) -> None:
    text = ufcctl(["certs", "check", "--inventory", "lab"], lab.env, timeout=300)  # README, as written
    assert text.returncode == 0, text.stdout + text.stderr
    assert "threshold 30 days: ok" in text.stdout
    proc = ufcctl(["certs", "check", "--inventory", "lab", "--output", "json"], lab.env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    listed = {(c["host"], c["path"]): c for c in doc["certificates"]}
    inventory = load_inventory(lab.inventory)
    wanted = [e for h in inventory.hosts.values() for e in expected_on_host(h.name, h.groups, h.vars)
              if e.required]
    wanted += expected_on_controller(controller_dirs(inventory, STACK_STATE))
    missing = [(e.host, e.path) for e in wanted if (e.host, e.path) not in listed]
    assert not missing, missing
    # the lab has every kind the catalog requires of it: etcd members, control planes, workers
    assert {"/etc/etcd/pki/member.crt", "/etc/kubernetes/pki/apiserver.crt",
            "/etc/kubernetes/pki/apiserver-etcd-client.crt"} <= {p for _, p in listed}
    stale = {k: c["days_left"] for k, c in listed.items()
             if c["status"] != "ok" or c["days_left"] <= FRESH_DAYS}
    assert not stale, stale
    assert all(c["subject"] and c["issuer"] and c["not_after"] for c in listed.values())


def test_a_threshold_above_every_lifetime_exits_1(lab: Stack) -> None:
    proc = ufcctl(["certs", "check", "--inventory", "lab", "--warn-days", "100000"], lab.env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "expires soon" in proc.stdout and proc.stderr.startswith("Error:")
