"""The only adapter around ansible-runner: run one playbook on a host subset and stream its events.

Ansible never sees the whole inventory (docs/architecture.md, decision 2): each run gets a small
generated inventory that holds only its hosts, their merged vars and their group memberships
(engine/run_inventory.py). Events are folded as they arrive by engine/run_events.py, which keeps
only `failures.jsonl` on disk; this module writes `summary.json` (engine/run_result.py) once the
run ended. The runner's own stdout copy is suppressed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.rollout.states import run_id_problem
from ufcctl.engine import ansible_cfg, proctree, statedir, stops
from ufcctl.engine.files import write_file
from ufcctl.engine.locks import hold_nodes
from ufcctl.engine.run_events import EventSink, ResultHandler, RunObserver
from ufcctl.engine.run_inventory import context_limit, write_inventory
from ufcctl.engine.run_result import RunResult
from ufcctl.errors import EnvironmentMissing, InputError, shown
from ufcctl.paths import state_dir

# Default forks: 50 keeps the controller well inside AWX's 100 MB/fork model on a small controller
# and below the ~100-200 forks where maintainers report no further gain (docs/reference/scale.md §1.3).
DEFAULT_FORKS = 50

# How every Ansible run learns ufcctl's absolute state directory (roles: `ufc_state_dir` first,
# see README "State directory").
STATE_DIR_VAR = "ufc_state_dir"
STATE_DIR_ENV = "UFC_STATE_DIR"


@dataclass(frozen=True)
class RunOptions:
    forks: int = DEFAULT_FORKS
    check: bool = False
    diff: bool = False
    tags: tuple[str, ...] = ()
    skip_tags: tuple[str, ...] = ()
    limit: str | None = None  # an extra Ansible --limit pattern inside the chosen hosts
    # Hosts written into the run's inventory but never run on (an Ansible --limit leaves them out of
    # every play): what a play delegates to or reads (`groups`, `hostvars`), e.g. a fleet rollout's
    # chunk of workers with the cluster hosts beside it (RolloutKind.context_groups).
    context: tuple[Host, ...] = ()
    extravars: Mapping[str, Any] = field(default_factory=dict)
    accelerate: str | None = None  # None or "mitogen"
    verbosity: int = 0
    timeout: int | None = None  # whole-run timeout in seconds
    # A playbook that changes nothing on its hosts (certs-check.yml) takes no node lock; every other
    # run holds the nodes it runs on (engine/locks.py) for its life, re-entrant inside a use case that
    # holds them already, so no command acts on hosts a reset, deploy or rollout holds.
    read_only: bool = False


def new_run_id(prefix: str) -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def mitogen_env() -> dict[str, str]:
    """Environment enabling Mitogen's strategy, or EnvironmentMissing explaining why it cannot be used."""
    try:
        import ansible_mitogen  # type: ignore[import-not-found]
        from ansible_mitogen import loaders  # type: ignore[import-not-found]
    except ImportError as err:
        raise EnvironmentMissing(
            f"--accelerate mitogen: Mitogen is not installed ({err})",
            "pip install 'ufcctl[mitogen]', or run without --accelerate",
        ) from err
    from ansible.release import __version__ as ansible_version

    version = tuple(int(p) for p in ansible_version.split(".")[:2])
    low = getattr(loaders, "ANSIBLE_VERSION_MIN", None)
    high = getattr(loaders, "ANSIBLE_VERSION_MAX", None)
    if (low and version < tuple(low)[:2]) or (high and version > tuple(high)[:2]):
        raise EnvironmentMissing(
            f"--accelerate mitogen: this Mitogen supports ansible-core {low}..{high}, "
            f"installed is {ansible_version}",
            "install a Mitogen release that supports this ansible-core, or run without --accelerate",
        )
    strategy_dir = Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(strategy_dir), "ANSIBLE_STRATEGY": "mitogen_linear"}


def ansible_binary(name: str = "ansible-playbook") -> str:
    """The Ansible CLI of this Python environment (a venv need not be activated), else the PATH's."""
    here = Path(sys.executable).parent
    found = shutil.which(name, path=f"{here}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        raise EnvironmentMissing(f"{name} not found", "pip install ansible-core (see README: setup)")
    return found


def run_playbook(
    playbook: Path,
    hosts: list[Host],
    options: RunOptions,
    *,
    run_id: str | None = None,
    observer: RunObserver | None = None,
    cancel: Callable[[], bool] | None = None,
    env: Mapping[str, str] | None = None,
    on_result: ResultHandler | None = None,
) -> RunResult:
    """Run `playbook` on exactly `hosts` and return one HostResult per host that reported.

    The inventory lists the hosts in the order given (host_pinned plays start them in that
    order). `env` adds variables for the play's own plugins, such as the rollout gate's socket
    (engine/gate.py); Ansible's settings come from ansible.cfg alone. `on_result` gets each
    successful host-task's result as it arrives (a read-only command's data).

    Stopping: when `cancel()` turns true, or (with no `cancel`) when ufcctl gets SIGINT/SIGTERM
    (engine/stops.py), every process of the run is stopped and waited for (engine/proctree.py)
    before this returns; after a signal it then raises Stopped, the summary written.
    """
    # Private (0600/0700): the run directory, ansible-runner's files in it (status, rc, ...) and
    # whatever the Ansible process writes under .ufc/ (PKI, manifests); it inherits the umask.
    run_id = run_id or new_run_id(playbook.stem)
    what = (f"ansible run {run_id} ({playbook.name}) stopped, its processes ended; "
            "run the same command again to continue (the roles are idempotent)")
    targets = [] if options.read_only else _targets(hosts, options)
    held = hold_nodes(run_id, targets, reentrant=True) if targets else contextlib.nullcontext()
    with statedir.private_files(), stops.stopping(what), held:
        return _run_playbook(playbook, hosts, options, run_id=run_id, observer=observer, cancel=cancel,
                             env=env or {}, on_result=on_result)


def _targets(hosts: list[Host], options: RunOptions) -> list[str]:
    """The hosts a run acts on: all of `hosts`, or those an --limit of plain names keeps (a cluster
    phase writes every worker's vars into its inventory and limits the play to the cluster hosts)."""
    names = [h.name for h in hosts]
    if options.limit:
        terms = options.limit.split(",")
        if set(terms) <= set(names):
            return terms
    return names


def _run_playbook(
    playbook: Path,
    hosts: list[Host],
    options: RunOptions,
    *,
    run_id: str,
    observer: RunObserver | None,
    cancel: Callable[[], bool] | None,
    env: Mapping[str, str],
    on_result: ResultHandler | None = None,
) -> RunResult:
    import ansible_runner  # the only import of ansible_runner in the package

    if not playbook.is_file():
        raise InputError(f"playbook {playbook} does not exist")
    if not hosts:
        raise InputError(f"no hosts selected for {playbook.name}", "check --limit and the inventory groups")
    problem = run_id_problem(run_id)
    if problem:  # it names the run's directory: never a path of its own
        raise InputError(f"run id {shown(run_id)}: {problem}")
    state = state_dir()
    run_dir = statedir.ensure_private_dir(statedir.prepare(state) / "runs" / run_id)
    inventory_path, limit = _inventory(run_dir, hosts, options)
    _write_settings(run_dir)
    envvars = _envvars(env, options, state)
    marker = proctree.token(run_id)
    envvars.update(proctree.marker_env(marker))

    names = [h.name for h in hosts]
    sink = EventSink(run_id, run_dir, observer, on_result)
    if observer:
        observer.run_started(run_id, names)
    started = time.monotonic()
    try:
        runner = ansible_runner.run(
            **_runner_args(playbook, run_dir, inventory_path, limit, options, state),
            envvars=envvars,
            event_handler=sink,
            cancel_callback=_canceller(marker, cancel or stops.requested),
        )
        if runner.status in ("canceled", "timeout"):  # runner's timeout kills the playbook's group only
            proctree.stop(marker, hurry=stops.hurry)
    except BaseException:  # e.g. a KeyboardInterrupt where no handler was installed: leave nothing running
        proctree.stop(marker, hurry=stops.hurry)
        raise
    finally:
        sink.close()
    sink.finalize()
    result = _result(playbook, names, options, sink, run_id=run_id, run_dir=run_dir,
                     status=runner.status, rc=runner.rc, seconds=time.monotonic() - started)
    write_file(run_dir / "summary.json", json.dumps(result.to_json(), indent=1))
    if observer:
        observer.run_finished(result)
    return result


def _inventory(run_dir: Path, hosts: list[Host], options: RunOptions) -> tuple[Path, str | None]:
    """Write the run's inventory (targets, then context hosts); return it and the run's --limit."""
    inventory_path = run_dir / "inventory" / "hosts.json"
    run_on = {h.name for h in hosts}
    context = [h for h in options.context if h.name not in run_on]  # a target is never context too
    write_inventory(inventory_path, [*hosts, *context])
    return inventory_path, context_limit(options.limit, [h.name for h in context])


def _envvars(env: Mapping[str, str], options: RunOptions, state: Path) -> dict[str, str]:
    """The Ansible process's environment: `env`, this environment's Ansible first on PATH, the
    settings ansible-runner would replace, the state directory, Mitogen when asked for."""
    # ansible-runner finds ansible-playbook through PATH: put this environment's first.
    # Ansible's settings (SSH, pipelining, forks, roles path...) come from ansible.cfg alone, as
    # for a plain ansible-playbook run; ansible_cfg.runner_env() passes on the ones ansible-runner
    # would otherwise replace (tests/unit/engine/test_ansible_cfg.py checks the whole environment).
    ansible_settings = sorted(k for k in env if k.startswith("ANSIBLE_"))
    if ansible_settings:
        raise ValueError(f"Ansible settings come from ansible.cfg, not from a run's env: {ansible_settings}")
    envvars = {
        **env,
        "PATH": f"{Path(ansible_binary()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ansible_cfg.ANSIBLE_CFG),
        **ansible_cfg.runner_env(),
        # the output is parsed from events, never shown as a terminal
        "ANSIBLE_FORCE_COLOR": "False",
        # the roles' controller paths (PKI, secrets, manifests) go where ufcctl reads them back; the
        # extra var below decides, this absolute copy serves lookups that read the environment
        STATE_DIR_ENV: str(state),
    }
    if options.accelerate == "mitogen":
        envvars.update(mitogen_env())
    elif options.accelerate:
        raise InputError(f"--accelerate {options.accelerate!r}: unknown accelerator", "use: mitogen")
    return envvars


# ansible-runner's settings for every run:
# - pexpect_timeout: how long runner waits for output before asking cancel_run again (5 s by
#   default): a stop starts within a second even while every host waits at the gate;
# - suppress_output_file: no artifacts/ansible/stdout copy of Ansible's output (the events carry
#   it; runner wrote and flushed it once per event: 573 -> 492 B of artifacts per host-task,
#   bench_artifacts.py 10 5);
# - suppress_ansible_output: nothing printed on ufcctl's terminal.
RUNNER_SETTINGS: dict[str, Any] = {
    "pexpect_timeout": 1, "suppress_output_file": True, "suppress_ansible_output": True,
}


def _write_settings(run_dir: Path) -> None:
    """Write RUNNER_SETTINGS where ansible-runner reads them, rewritten by every run.

    ansible-runner 2.4 reads its settings from env/settings alone: with suppress_env_files it never
    writes a `settings=` argument there, and with no such file it replaces the argument with {}
    (RunnerConfig.prepare_env), so a `settings=` argument is silently ignored (pexpect_timeout
    was 5 s, the stdout copy was written). The file holds constants, so a second run in the same
    directory cannot get an earlier run's values from it.
    """
    write_file(run_dir / "env" / "settings", json.dumps(RUNNER_SETTINGS) + "\n")


def _cmdline(options: RunOptions) -> str | None:
    cmdline: list[str] = []
    if options.check:
        cmdline.append("--check")
    if options.diff:
        cmdline.append("--diff")
    if options.skip_tags:
        cmdline += ["--skip-tags", ",".join(options.skip_tags)]
    return " ".join(cmdline) or None


def _canceller(marker: str, stop_asked: Callable[[], bool]) -> Callable[[], bool]:
    def cancel_run() -> bool:
        # called by ansible-runner between two reads of the playbook's output (at least once per
        # pexpect_timeout): the whole process tree is stopped here, gracefully, before runner's
        # own cancel (a SIGKILL to the playbook's group alone) finds nothing left to kill
        if not stop_asked():
            return False
        proctree.stop(marker, hurry=stops.hurry)
        return True

    return cancel_run


def _runner_args(
    playbook: Path, run_dir: Path, inventory_path: Path, limit: str | None, options: RunOptions, state: Path
) -> dict[str, Any]:
    """ansible_runner.run's arguments but the environment and the callbacks."""
    return dict(
        private_data_dir=str(run_dir),
        artifact_dir=str(run_dir / "artifacts"),
        ident="ansible",
        playbook=str(playbook.resolve()),
        inventory=str(inventory_path),
        # last, so no --extra-vars can send the roles' CA keys elsewhere than ufcctl looks
        extravars={**options.extravars, STATE_DIR_VAR: str(state)},
        forks=options.forks,
        limit=limit,
        tags=",".join(options.tags) or None,
        cmdline=_cmdline(options),
        verbosity=options.verbosity or None,
        quiet=True,
        fact_cache_type="memory",
        timeout=options.timeout,
        # Nothing under env/ from runner (but the settings file, see _write_settings): ansible-runner
        # writes envvars/extravars/cmdline there only when the file is missing and then lets the
        # file win over what it is given, so a second run in the same directory (a resumed
        # rollout's chunk, run ids are stable) would get the first run's environment and variables,
        # e.g. a gate socket that no longer exists.
        suppress_env_files=True,
    )


def _result(
    playbook: Path,
    names: list[str],
    options: RunOptions,
    sink: EventSink,
    *,
    run_id: str,
    run_dir: Path,
    status: str,
    rc: int | None,
    seconds: float,
) -> RunResult:
    return RunResult(
        run_id=run_id,
        playbook=playbook.name,
        status=status,
        rc=rc if rc is not None else 1,
        hosts={n: sink.hosts[n] for n in names if n in sink.hosts},
        run_dir=run_dir,
        seconds=seconds,
        check=options.check,
        not_run=[n for n in names if n not in sink.hosts],
        output_tail=list(sink.tail),
        skipped_steps=list(sink.skipped_steps),
    )
