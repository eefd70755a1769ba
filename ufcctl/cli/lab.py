"""`ufcctl lab image|up|down|status`: flags and printing for the container lab (ufcctl/lab/, imported
by no other cli module)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ufcctl.cli.numbers import integer
from ufcctl.cli.options import output_option
from ufcctl.lab.emulators import NO_MIRROR_NOTE, require_npu_emulator
from ufcctl.lab.lab import (
    DownResult,
    LabSettings,
    LabStatus,
    UpResult,
    build_image,
    lab_down,
    lab_status,
    lab_up,
)
from ufcctl.lab.layout import DEFAULT_LAB, DEFAULT_SUBNET, DEFAULT_WORKERS, KUBE_MODES, LabLayout
from ufcctl.lab.nodes import LABEL_ROLE
from ufcctl.report.lab import LabContainer, LabNode, print_lab_containers, print_lab_nodes
from ufcctl.report.output import print_json


def _say(message: str) -> None:
    click.echo(f"lab: {message}", err=True)


def lab_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--lab and --inventory-dir, shared by every lab command (a test lab sets both)."""
    func = click.option(
        "--inventory-dir", type=click.Path(file_okay=False, path_type=Path), envvar="UFC_LAB_INVENTORY",
        default=None, help="Where to write the lab inventory [default: inventories/lab].",
    )(func)
    return click.option(
        "--lab", "lab_name", default=DEFAULT_LAB, envvar="UFC_LAB_NAME", show_default=True,
        help="Lab name: prefixes container names; another name is a separate lab.",
    )(func)


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@click.group("lab")
def lab() -> None:
    """A local lab: systemd + sshd containers on a podman network, with an inventory for `deploy`."""


@lab.command("image")
@click.option("--rebuild", is_flag=True, help="Rebuild the node image even if its hash is current.")
def image_cmd(rebuild: bool) -> None:
    """Build the node image (debootstrap base + Containerfile) unless it is current."""
    result = build_image(LabSettings(), _say, force=rebuild)
    if not result.built:
        click.echo(f"{result.image} is up to date (hash {result.image_hash[:12]})")
        return
    timings = [
        f"{label} {value:.0f}s"
        for label, value in (("debootstrap", result.debootstrap_seconds), ("import", result.import_seconds),
                             ("build", result.build_seconds))
        if value is not None
    ]
    click.echo(f"built {result.image} (hash {result.image_hash[:12]}): {', '.join(timings)}")


@lab.command("up")
@lab_options
@click.option("--nodes", type=integer(1, 999), default=None,
              help=f"Worker containers [default: {DEFAULT_WORKERS}, or as many as the running lab has].")
@click.option("--subnet", default=None, metavar="CIDR",
              help=f"Network of the lab [default: {DEFAULT_SUBNET}, or the running lab's].")
@click.option("--monitoring/--no-monitoring", default=True, envvar="UFC_LAB_MONITORING", show_default=True,
              help="Give the inventory a `monitoring` group (the last two control planes), so deploy "
                   "installs roles/monitoring and the exporters.")
@click.option("--kube", type=click.Choice(KUBE_MODES), default=None, envvar="UFC_LAB_KUBE",
              help="What runs Kubernetes on the nodes: the real components built from their Go modules, or "
                   "the LAB KUBE EMULATOR [default: emulated, or the running lab's].")
@click.option("--allow-no-mirror", is_flag=True,
              help="Go on when this install has no lab NPU emulator to serve the packages a deploy "
                   "downloads (an installed wheel): nodes and inventory for `deploy --check`. Without "
                   "it such a lab is refused.")
def up_cmd(lab_name: str, inventory_dir: Path | None, nodes: int | None, subnet: str | None,
           monitoring: bool, kube: str | None, allow_no_mirror: bool) -> None:
    """Start 3 control-plane and N worker containers and the NPU emulator's mirror; write the inventory."""
    settings = LabSettings(lab=lab_name, inventory_dir=inventory_dir, monitoring=monitoring)
    # a lab whose deploy cannot download its packages is refused, not written, unless asked for
    mirror = require_npu_emulator(allow_no_mirror)
    result = lab_up(settings, _say, workers=nodes, subnet=subnet, kube=kube)
    _print_up(result)
    if not mirror:
        click.echo(f"note: {NO_MIRROR_NOTE}", err=True)


def _print_up(result: UpResult) -> None:
    layout = result.layout
    shape = (f"{len(layout.control_planes)} control planes + {len(layout.workers)} workers "
             f"on {layout.subnet} ({layout.network})")
    inventory = _rel(result.inventory_dir)
    if result.already_up:
        note = "rewritten" if result.inventory_changed else "unchanged"
        click.echo(f"lab {layout.lab!r} is already up: {shape}; inventory {inventory} {note}")
    else:
        total = sum(result.seconds.values())
        phases = ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items())
        click.echo(f"lab {layout.lab!r} is up: {shape} in {total:.1f}s ({phases})")
        _print_nodes(layout)
        click.echo(f"inventory: {inventory}   try: ufcctl deploy --inventory {inventory}")
    click.echo(f"NPU emulator: {result.npu_emulator.describe()}")
    if result.stale_image:
        click.echo(f"note: {', '.join(result.stale_image)} run an older image build; "
                   "`ufcctl lab down && ufcctl lab up` recreates them", err=True)
    for name, units in sorted(result.degraded.items()):
        click.echo(f"warning: {name}: systemd is degraded, failed units: {', '.join(units)}", err=True)


def _print_nodes(layout: LabLayout) -> None:
    nodes = [
        LabNode(n.name, n.role, n.ip, n.topology.tor_id, n.topology.super_pod_id, n.topology.rack)
        if n.topology else LabNode(n.name, n.role, n.ip)
        for n in layout.nodes
    ]
    print_lab_nodes(layout.lab, layout.vip, nodes)


@lab.command("down")
@lab_options
@click.option("--image", "remove_images", is_flag=True,
              help="Also remove the lab images and the cached root filesystem tarball.")
def down_cmd(lab_name: str, inventory_dir: Path | None, remove_images: bool) -> None:
    """Remove the lab's containers (emulators' too), network and inventory: only what `lab up` created."""
    result = lab_down(LabSettings(lab=lab_name, inventory_dir=inventory_dir), _say, remove_images)
    _print_down(result)


def _print_down(result: DownResult) -> None:
    if result.containers or result.network or result.inventory_dir:
        parts = [f"{len(result.containers)} container(s)"]
        if result.network:
            parts.append(f"network {result.network}")
        if result.inventory_dir:
            parts.append(f"inventory {_rel(result.inventory_dir)}")
        click.echo(f"lab {result.lab!r} removed: {', '.join(parts)}")
    else:
        click.echo(f"lab {result.lab!r} is not up; nothing to remove")
    if result.images:
        click.echo(f"removed images: {', '.join(result.images)}")
    for image, reason in result.kept_images.items():
        click.echo(f"warning: kept {image}: {reason}", err=True)


@lab.command("status")
@lab_options
@output_option()
def status_cmd(lab_name: str, inventory_dir: Path | None, output: str) -> None:
    """Containers of the lab with their state and IP."""
    status = lab_status(LabSettings(lab=lab_name, inventory_dir=inventory_dir))
    if output == "json":
        print_json(_status_json(status))
    else:
        _print_status(status)


def _print_status(status: LabStatus) -> None:
    if status.network is None and not status.containers:
        click.echo(f"lab {status.lab!r} is not up (run `ufcctl lab up`)")
        return
    running = sum(1 for c in status.containers if c.state == "running")
    click.echo(f"lab {status.lab!r}: network {status.network} {status.subnet}, "
               f"{running}/{len(status.containers)} running, inventory {status.inventory_dir or '(none)'}")
    print_lab_containers(
        [LabContainer(c.name, c.labels.get(LABEL_ROLE, ""), c.state, c.ip or "") for c in status.containers])
    mirror = status.npu_mirror
    click.echo(f"NPU emulator: mirror {mirror.name} {mirror.state} on {mirror.ip}" if mirror
               else "NPU emulator: no mirror (`ufcctl lab up` starts it from a source checkout)")


def _status_json(status: LabStatus) -> dict[str, Any]:
    mirror = status.npu_mirror
    return {
        "lab": status.lab,
        "network": status.network,
        "subnet": status.subnet,
        "inventory": status.inventory_dir,
        "containers": [
            {"name": c.name, "role": c.labels.get(LABEL_ROLE), "state": c.state, "ip": c.ip, "image": c.image}
            for c in status.containers
        ],
        "npu_mirror": {"name": mirror.name, "state": mirror.state, "ip": mirror.ip} if mirror else None,
    }


COMMANDS = [lab]
