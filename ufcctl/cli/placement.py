"""`ufcctl placement validate`: flags, printing and exit codes for the NPU placement audit."""

from __future__ import annotations

import click

from ufcctl.app.placement import validate_files
from ufcctl.cli.numbers import MAX_COUNT, integer
from ufcctl.domain.placement import DEFAULT_SUPER_POD_SIZE
from ufcctl.errors import EXIT_FAILED, EXIT_OK
from ufcctl.report.placement import render_json, render_text


@click.group("placement")
def placement_group() -> None:
    """Audit where NPU jobs landed against the Ascend topology rules."""


@placement_group.command("validate")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--output",
    "-o",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--super-pod-size",
    type=integer(1, MAX_COUNT),
    default=DEFAULT_SUPER_POD_SIZE,
    show_default=True,
    help="Nodes per physical SuperPoD (Volcano init-param super-pod-size).",
)
@click.pass_context
def validate_command(ctx: click.Context, files: tuple[str, ...], output: str, super_pod_size: int) -> None:
    """Check NPU jobs in kubectl snapshots against the placement rules.

    FILE is JSON or YAML: a List, single objects, or several YAML documents; `-` reads stdin.
    Nodes, Pods, ConfigMaps (device info, ToR map, rank tables), Volcano PodGroups and
    AscendJobs are read; other kinds are ignored. Take a snapshot with

    \b
      kubectl get nodes,pods,configmaps,podgroups.scheduling.volcano.sh,\\
        ascendjobs.mindxdl.gitee.com -A -o json > snapshot.json
      ufcctl placement validate snapshot.json

    A job file alone (no Nodes in the input) gets only the request-level rules
    (CHIP_COUNT, SP_BLOCK, TOR_LABEL), so it can be checked before submission:

    \b
      ufcctl placement validate my-acjob.yaml

    Exit status: 0 no error-severity violation, 1 at least one, 2 unreadable input.
    """
    report = validate_files(files, super_pod_size=super_pod_size)
    click.echo(render_json(report) if output == "json" else render_text(report))
    ctx.exit(EXIT_OK if report.valid else EXIT_FAILED)


COMMANDS = [placement_group]
