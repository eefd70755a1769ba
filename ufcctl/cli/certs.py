"""`ufcctl certs check|renew`: flags and printing for the certificate expiry check and renewal."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.certs import certs_check
from ufcctl.app.certs_renew import certs_renew
from ufcctl.cli.numbers import integer
from ufcctl.cli.options import forks_option, inventory_option, output_option
from ufcctl.domain.certs.check import DEFAULT_WARN_DAYS
from ufcctl.errors import InputError, RunFailed
from ufcctl.report.certs import print_certs, print_renew_plan, print_renew_result
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


@certs.command()
@inventory_option()
@click.option("--only", multiple=True, metavar="WHAT",
              help="etcd (every certificate etcd's CA signs), etcd:<cluster> (that cluster's members), "
                   "kubeadm (kubeadm's on the control planes) or registry (the site's registry cache "
                   "certificate, copied again); repeatable; default: all of them, in that order.")
@click.option("--within-days", type=integer(1, MAX_WARN_DAYS), default=None, metavar="N",
              help=f"Renew what has fewer than N days left [default: {DEFAULT_WARN_DAYS}, what `certs check` "
                   "warns about].")
@click.option("--force", is_flag=True, help="Renew every chosen certificate, whatever its days left.")
@click.option("--check", "-C", is_flag=True, help="Print the plan; change nothing.")
@forks_option()
@output_option()
def renew(inventory: Path, only: tuple[str, ...], within_days: int | None, force: bool, check: bool,
          forks: int, output: str) -> None:
    """Renew, one host at a time and in this order: the etcd certificates (each member's peer/server
    certificate, the defrag agent's, kube-apiserver's and ufcctl's etcd client certificates) with the
    existing CA, leaders last, each member restarted and caught up before the next; kubeadm's on each
    control plane (`kubeadm certs renew all`, kube-apiserver restarted out of haproxy's backends); the
    site's registry cache certificate, copied again where the controller's differs (ufcctl cannot sign
    it). The CAs are never renewed here.

    Exit codes: 0 renewed, or nothing due (the plan is printed); 1 a step failed (the hosts before it
    are renewed: run it again); 2 bad input (inventory, --only, --within-days with --force), an etcd
    cluster that is not healthy, or a chosen certificate missing or unreadable: nothing touched.
    """
    if force and within_days is not None:
        raise InputError("--within-days and --force: give one", "--force renews every chosen certificate")
    days = DEFAULT_WARN_DAYS if within_days is None else within_days
    say = (lambda _line: None) if output == "json" else (lambda line: print(line, flush=True))
    result = certs_renew(inventory, only=only, within_days=days, force=force, check=check, forks=forks,
                         log=say)
    if output == "json":
        print_json(result.to_json())
    elif check or not result.times:
        print_renew_plan(result.plan, check=check)
    else:
        print_renew_result(result.plan, [(f"{t.kind} {t.host}", t.seconds) for t in result.times],
                           result.seconds)


COMMANDS = [certs]
