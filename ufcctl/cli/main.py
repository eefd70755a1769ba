"""The `ufcctl` command group: global flags, logging setup, and the one place errors become exit codes."""

from __future__ import annotations

import errno
import logging
import os
import select
import sys
from typing import Any

import click

from ufcctl import __version__
from ufcctl.errors import EXIT_BAD_INPUT, EXIT_FAILED, Stopped, UfcError, cut_quoted
from ufcctl.report.terminal import sanitized_streams


class OutputLost(Exception):
    """stdout went away (EPIPE: the reader closed it, e.g. `| head -1`) or filled a disk (ENOSPC).

    Not an OSError on purpose: click's own main turns an EPIPE into a silent exit 1, and `main`
    below wants to decide (EPIPE is quiet with exit 0, like other CLIs; ENOSPC is one `Error:`).
    """

    def __init__(self, err: OSError):
        super().__init__(str(err))
        self.errno = err.errno
        self.reason = err.strerror or str(err)


def _output_error(err: OSError) -> bool:
    """True when `err` is about our own stdout: a full disk anywhere, or a pipe that stdout is.

    A broken pipe elsewhere (a child's stdin) stays a bug report. Whether stdout is the closed
    pipe is asked of the kernel (poll reports POLLERR on a pipe without readers), because a failed
    flush drops its buffer and a second flush no longer fails.
    """
    if err.errno == errno.ENOSPC:
        return True
    if err.errno != errno.EPIPE:
        return False
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError, AttributeError):  # no real file behind stdout (tests' CliRunner)
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


class UfcGroup(click.Group):
    """Maps UfcError to `Error:`/`Hint:` lines and an exit code; tracebacks only with --debug."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:  # --help and --version print while the context is made
            return super().make_context(*args, **kwargs)
        except OSError as err:
            if _output_error(err):
                raise OutputLost(err) from err
            raise

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # every text the command sends to the terminal, click's usage errors and the Error: line
        # included, shows control characters escaped (report/terminal.py)
        with sanitized_streams():
            return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OutputLost:
            raise
        except OSError as err:
            if not _output_error(err):
                return self._internal_error(ctx, err)
            raise OutputLost(err) from err
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
            return self._internal_error(ctx, err)

    @staticmethod
    def _internal_error(ctx: click.Context, err: Exception) -> Any:
        if ctx.meta.get("ufc_debug"):
            raise err
        click.echo(f"Error: internal error: {type(err).__name__}: {cut_quoted(str(err))}", err=True)
        click.echo("Hint: rerun with --debug for the traceback and report it", err=True)
        ctx.exit(EXIT_FAILED)


def report_error(err: UfcError) -> None:
    click.echo(f"Error: {cut_quoted(err.message)}", err=True)
    for line in err.details:
        click.echo(f"  - {cut_quoted(line)}", err=True)
    if err.hint:
        click.echo(f"Hint: {cut_quoted(err.hint)}", err=True)


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


@click.group("plan")
def plan() -> None:
    """Show what a command would do, touching nothing."""


def _register() -> None:
    # One line per command module; each module owns its flags and printing only; a module's
    # PLAN_COMMANDS hang under `ufcctl plan`.
    from ufcctl.cli import (
        certs,
        deploy,
        etcd,
        health,
        images,
        init,
        inventory,
        lab,
        npu,
        placement,
        remove,
        rollout,
        upgrade,
    )

    for module in (init, inventory, deploy, remove, images, lab, placement, etcd, health, certs, rollout,
                   upgrade, npu):
        for command in module.COMMANDS:
            cli.add_command(command)
        for command in getattr(module, "PLAN_COMMANDS", ()):
            plan.add_command(command)
    cli.add_command(plan)


_register()


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main() -> None:
    try:
        # With standalone_mode=False click returns ctx.exit()'s code instead of exiting: pass it on.
        code = cli.main(standalone_mode=False, prog_name="ufcctl")
        sys.stdout.flush()  # a closed or full stdout is found here, not in the exit's flush
    except OutputLost as exc:
        _silence_stdout()
        if exc.errno == errno.EPIPE:  # the reader has what it wanted: quiet, like other CLIs
            sys.exit(0)
        click.echo(f"Error: cannot write the output: {exc.reason}", err=True)
        sys.exit(EXIT_FAILED)
    except OSError as exc:
        if not _output_error(exc):
            raise
        _silence_stdout()
        if exc.errno == errno.EPIPE:
            sys.exit(0)
        click.echo(f"Error: cannot write the output: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_FAILED)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: click's own message, exit 2
        exc.show()
        sys.exit(EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_FAILED)
    sys.exit(code if isinstance(code, int) else 0)
