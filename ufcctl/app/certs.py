"""Use case `ufcctl certs check`: every certificate the catalog lists, read in one module run per
host (playbooks/certs-check.yml) plus the controller's copies, judged against a threshold."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ufcctl.app.inventory import load_inventory, select_limit
from ufcctl.domain.certs.catalog import (
    CONTROL_PLANE,
    ETCD_GROUPS,
    Expected,
    expected_on_controller,
    expected_on_host,
)
from ufcctl.domain.certs.check import (
    CertReport,
    CertRow,
    FileRead,
    first_certificate,
    host_rows,
    report,
    unreachable_row,
)
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine.pki_files import bytes_of
from ufcctl.engine.runner import RunOptions, run_playbook
from ufcctl.paths import playbook, state_dir

PLAYBOOK = "certs-check.yml"
PATHS_VAR = "ufc_cert_paths"  # each host's list, written into the run's inventory


def _literal(hostvars: Mapping[str, Any], key: str) -> str | None:
    value = hostvars.get(key)
    return str(value) if value and "{{" not in str(value) else None


def controller_dirs(inventory: Inventory, state: Path) -> dict[str, str]:
    """Where the roles keep the controller's copies (role defaults or the inventory's literal values)
    for the parts the inventory has."""
    anyvars = next(iter(inventory.hosts.values())).vars if inventory.hosts else {}
    base = state / "pki" / (_literal(anyvars, "ufc_cluster_name") or "default")
    dirs = {}
    if any(inventory.group_hosts(g) for g in ETCD_GROUPS):
        dirs["etcd"] = _literal(anyvars, "etcd_pki_controller_dir") or str(base / "etcd")
    if inventory.group_hosts(CONTROL_PLANE):
        dirs["kubernetes"] = (_literal(anyvars, "kube_control_plane_pki_controller_dir")
                              or str(base / "kubernetes"))
    return dirs


def _controller_rows(expected: list[Expected], now: dt.datetime, warn_days: int) -> list[CertRow]:
    reads = {}
    for exp in expected:
        data = bytes_of(Path(exp.path))
        if data is None:
            reads[exp.path] = FileRead(exp.path, None, "" if not Path(exp.path).exists() else "cannot read")
        else:
            pem = first_certificate(data.decode("ascii", "replace"))
            reads[exp.path] = FileRead(exp.path, pem, "" if pem else "no PEM certificate in the file")
    return host_rows(expected, reads, now, warn_days)


def certs_check(inventory_dir: Path, *, limit: str | None, warn_days: int, forks: int,
                now: dt.datetime | None = None) -> CertReport:
    """Read and judge every listed certificate; bad input (inventory, --limit) raises before any host
    is contacted. The controller's copies are listed when no --limit narrows the hosts."""
    inventory = load_inventory(inventory_dir)
    names = select_limit(inventory, inventory_dir, limit)
    return read_certificates(inventory, names, warn_days=warn_days, forks=forks, controller=limit is None,
                             now=now)


def read_certificates(inventory: Inventory, names: list[str], *, warn_days: int, forks: int,
                      controller: bool, now: dt.datetime | None = None) -> CertReport:
    """The catalog's certificates on hosts `names` (one module run each) and, with `controller`, the
    controller's copies, judged against `warn_days` (`certs check`, and `certs renew`'s plan)."""
    now = now or dt.datetime.now(dt.UTC)
    expected = {}
    for name in names:
        host = inventory.hosts[name]
        wanted = expected_on_host(name, host.groups, host.vars)
        if wanted:
            expected[name] = wanted
    rows: dict[str, list[CertRow]] = {}

    def collect(host: str, result: Mapping[str, Any]) -> None:
        files = result.get("ufc_certs")
        if host not in expected or not isinstance(files, list):
            return
        reads = {str(f.get("path")): FileRead(str(f.get("path")), f.get("pem"), str(f.get("error") or ""))
                 for f in files if isinstance(f, Mapping)}
        rows[host] = host_rows(expected[host], reads, now, warn_days)

    if expected:
        hosts = [replace(inventory.hosts[n], vars={**inventory.hosts[n].vars,
                                                   PATHS_VAR: [e.path for e in expected[n]]})
                 for n in expected]
        options = RunOptions(forks=min(forks, len(hosts)), read_only=True)  # reads only: no node lock
        result = run_playbook(playbook(PLAYBOOK), hosts, options,
                              on_result=collect)
        for name in expected:
            if name not in rows:
                got = result.hosts.get(name)
                why = (got.message if got and got.message else None) or f"no result ({result.outcome})"
                rows[name] = [unreachable_row(name, why)]
    out = [row for name in expected for row in rows[name]]
    if controller:
        mine = expected_on_controller(controller_dirs(inventory, state_dir()))
        out += _controller_rows(mine, now, warn_days)
    return report(out, warn_days, now)
