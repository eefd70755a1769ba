"""`ufcctl certs check`: flags and printing for the certificate expiry check."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.certs import certs_check
from ufcctl.cli.numbers import integer
from ufcctl.cli.options import forks_option, inventory_option, output_option
from ufcctl.domain.certs.check import DEFAULT_WARN_DAYS
from ufcctl.errors import RunFailed
from ufcctl.report.certs import print_certs
from ufcctl.report.output import print_json

# a bound only against absurd input (datetime's range ends in 9999): a threshold above every
# lifetime (e.g. 100000, which makes every certificate "expires soon") is still accepted
MAX_WARN_DAYS = 999_999


@click.group()
def certs() -> None:
    """Certificates ufcctl issued or kubeadm manages on the inventory's hosts."""


@certs.command()
@inventory_option()
@click.option("--limit", default=None, metavar="PATTERN",
              help="Only these hosts (Ansible pattern); the controller's copies are then left out.")
@click.option("--warn-days", type=integer(0, MAX_WARN_DAYS), default=DEFAULT_WARN_DAYS, show_default=True,
              help="A certificate with fewer days left is reported as expiring soon (exit 1).")
@forks_option()
@output_option()
def check(inventory: Path, limit: str | None, warn_days: int, forks: int, output: str) -> None:
    """Subject, issuer, not-after and days left of every certificate (etcd, Kubernetes CA and kubeadm's,
    kubelet, registry cache TLS, the controller's copies), read in one module run per host.

    Exit codes: 0 every certificate has at least --warn-days left; 1 one expires sooner, has
    expired, is missing where its role puts it, cannot be read, or a host did not answer (the list
    is printed first); 2 bad input (inventory, --limit, --warn-days).
    """
    report = certs_check(inventory, limit=limit, warn_days=warn_days, forks=forks)
    if output == "json":
        print_json(report.to_json())
    else:
        print_certs(report)
    if not report.passed:
        first = report.failing[0]
        raise RunFailed(
            f"{len(report.failing)} certificate(s) need attention, first {first.host}:{first.path} "
            f"({first.status}{': ' + first.detail if first.detail else ''})",
            "renew what expires (README: Certificates), or rerun `ufcctl deploy` for a missing file",
        )


COMMANDS = [certs]
