"""The `ufcctl` command group: global flags, logging setup, and the one place errors become exit codes."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from ufcctl import __version__
from ufcctl.errors import EXIT_BAD_INPUT, EXIT_FAILED, Stopped, UfcError


class UfcGroup(click.Group):
    """Maps UfcError to `Error:`/`Hint:` lines and an exit code; tracebacks only with --debug."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UfcError as err:
            if ctx.meta.get("ufc_debug"):
                raise
            report_error(err)
            ctx.exit(err.exit_code)
        except Stopped as err:  # SIGINT/SIGTERM: the Ansible processes were stopped and waited for
            click.echo(f"Error: stopped by {err.signal_name}: {err.what or 'interrupted'}", err=True)
            ctx.exit(err.exit_code)
        except KeyboardInterrupt:
            click.echo("Error: interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as err:  # an unexpected bug: one line, the traceback behind --debug
            if ctx.meta.get("ufc_debug"):
                raise
            click.echo(f"Error: internal error: {type(err).__name__}: {err}", err=True)
            click.echo("Hint: rerun with --debug for the traceback and report it", err=True)
            ctx.exit(EXIT_FAILED)


def report_error(err: UfcError) -> None:
    click.echo(f"Error: {err.message}", err=True)
    for line in err.details:
        click.echo(f"  - {line}", err=True)
    if err.hint:
        click.echo(f"Hint: {err.hint}", err=True)


@click.group(cls=UfcGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ufcctl")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Deploy and operate ultra-large Ascend NPU Kubernetes clusters with Ansible."""
    ctx.meta["ufc_debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _register() -> None:
    # One line per command module; each module owns its flags and printing only.
    from ufcctl.cli import deploy, etcd, health, images, init, inventory, placement, rollout
    from ufcctl.lab import cli as lab  # the lab package's own commands (ufcctl/lab/)

    for module in (init, inventory, deploy, images, lab, placement, etcd, health, rollout):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    try:
        # With standalone_mode=False click returns ctx.exit()'s code instead of exiting: pass it on.
        code = cli.main(standalone_mode=False, prog_name="ufcctl")
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: click's own message, exit 2
        exc.show()
        sys.exit(EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_FAILED)
    sys.exit(code if isinstance(code, int) else 0)
