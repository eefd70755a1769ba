"""The one error family: every expected failure carries a message, a hint and an exit code."""

from __future__ import annotations

# Exit codes (docs/style.md, "Python"): 0 ok, 1 a run failed, 2 bad input or usage.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class UfcError(Exception):
    """An expected failure; the CLI prints `Error: message` and `Hint: hint` and exits `exit_code`."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, hint: str | None = None, *, details: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        # Extra lines (one problem each) printed under the message, e.g. every inventory problem.
        self.details = details or []


class InputError(UfcError):
    """Bad input or usage: a file, flag or object that the user must fix. Nothing was touched."""

    exit_code = EXIT_BAD_INPUT


class RunFailed(UfcError):
    """A run started and failed on at least one host, or an external tool failed."""

    exit_code = EXIT_FAILED


class EnvironmentMissing(UfcError):
    """A tool the command needs (podman, ansible-playbook, ...) is not installed."""

    exit_code = EXIT_FAILED


class Stopped(KeyboardInterrupt):
    """ufcctl was asked to stop by SIGINT or SIGTERM, and stopped (and waited for) its Ansible processes.

    A KeyboardInterrupt, so every `except KeyboardInterrupt` that records an interrupted run records
    this one too. Exit code 128 + signal number, as a shell reports a process a signal ended."""

    def __init__(self, signum: int, what: str = ""):
        super().__init__(signum, what)
        self.signum = signum
        self.what = what

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        import signal

        return signal.Signals(self.signum).name
