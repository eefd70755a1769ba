"""`ufcctl deploy`: run playbooks/deploy.yml with live progress and a recap."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.deploy import deploy as run_deploy
from ufcctl.cli.options import accelerate_option, forks_option, inventory_option, output_option
from ufcctl.engine.runner import RunOptions
from ufcctl.errors import RunFailed
from ufcctl.report.output import print_json, print_run_summary
from ufcctl.report.progress import RunProgress


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t.strip() for v in values for t in v.split(",") if t.strip())


@click.command()
@inventory_option()
@click.option("--limit", "-l", default=None, help="Ansible host pattern; only these hosts are run.")
@click.option("--tags", "-t", multiple=True, help="Only tasks with these tags (comma list or repeated).")
@click.option("--skip-tags", multiple=True, help="Skip tasks with these tags.")
@click.option("--check", "-C", is_flag=True, help="Ansible check mode: report what would change.")
@click.option("--diff", "-D", is_flag=True, help="Show file differences.")
@forks_option()
@accelerate_option()
@click.option("-v", "--verbose", count=True, help="Ansible verbosity (repeat for more).")
@output_option()
def deploy(
    inventory: Path, limit: str | None, tags: tuple[str, ...], skip_tags: tuple[str, ...],
    check: bool, diff: bool, forks: int, accelerate: str | None, verbose: int, output: str,
) -> None:
    """Deploy the whole stack (playbooks/deploy.yml) onto INVENTORY."""
    options = RunOptions(
        forks=forks, check=check, diff=diff, tags=_split(tags), skip_tags=_split(skip_tags),
        accelerate=accelerate, verbosity=verbose,
    )
    with RunProgress(quiet=output == "json") as progress:
        result = run_deploy(inventory, options, limit=limit, observer=progress)
    if output == "json":
        print_json(result.to_json())
    else:
        print_run_summary(result)
        if result.rc != 0 and not result.hosts and result.output_tail:
            click.echo("Ansible said:\n  " + "\n  ".join(result.output_tail[-15:]), err=True)
    if not result.succeeded:
        failed = result.failed_hosts
        raise RunFailed(
            f"deploy {result.status} on {len(failed)} of {len(result.hosts)} host(s)"
            + (f": {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}" if failed else ""),
            f"details in {result.run_dir}/failures.jsonl; fix and rerun (roles are idempotent)",
        )


COMMANDS = [deploy]
