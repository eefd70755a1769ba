"""`ufcctl deploy`: run playbooks/deploy.yml with live progress and a recap."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.deploy import deploy as run_deploy
from ufcctl.cli.options import accelerate_option, forks_option, inventory_option, output_option
from ufcctl.engine.runner import RunOptions
from ufcctl.errors import InputError, RunFailed
from ufcctl.report.output import print_json, print_run_summary
from ufcctl.report.progress import RunProgress


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t.strip() for v in values for t in v.split(",") if t.strip())


def _filters(limit: str | None, options: RunOptions) -> str:
    used = [f"{flag} {','.join(values)}" for flag, values in
            (("--tags", options.tags), ("--skip-tags", options.skip_tags)) if values]
    if limit is not None:
        used.append(f"--limit {limit}")
    return f" ({'; '.join(used)})" if used else ""


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
    if result.succeeded and result.nothing_ran:
        # Exit 2, not 0: nothing was deployed, and automation reading 0 would take the stack as
        # installed. Not 1 either: no host failed; the selection (flags or inventory groups)
        # matched no task, so the input is what to fix, as for any other bad flag.
        raise InputError(
            f"deploy ran no task on any of its {len(result.hosts) + len(result.not_run)} host(s)"
            f"{_filters(limit, options)}: nothing was deployed",
            ("the tags chosen select no task of the plays that target these hosts' groups"
             if options.tags or options.skip_tags else "no play targets these hosts' groups, or every "
             "task was skipped") + "; see the plays and their groups in playbooks/deploy.yml",
        )
    if not result.succeeded:
        failed = result.failed_hosts
        raise RunFailed(
            f"deploy {result.status} on {len(failed)} of {len(result.hosts)} host(s)"
            + (f": {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}" if failed else ""),
            f"details in {result.run_dir}/failures.jsonl; fix and rerun (roles are idempotent)",
        )


COMMANDS = [deploy]
