"""The only adapter around ansible-runner: run one playbook on a host subset and stream its events.

Ansible never sees the whole inventory (docs/architecture.md, decision 2): each run gets a small
generated inventory that holds only its hosts, their merged vars and their group memberships.

Disk use: ansible-runner writes every event twice (a partial file, then a final job event file),
which for 16,000 hosts x 30 tasks is about a million files (docs/reference/scale.md §4). The event
handler here returns False, so runner deletes each partial and writes no final file; ufcctl keeps
only `summary.json` (one record per host) and `failures.jsonl` (one line per failed or unreachable
host-task, messages truncated). The runner's own stdout copy is suppressed. Measured bytes per
host-task are noted in README ("Artifacts").
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.inventory.values import to_ansible_json
from ufcctl.engine import ansible_cfg, proctree, statedir, stops
from ufcctl.errors import EnvironmentMissing, InputError
from ufcctl.paths import state_dir

log = logging.getLogger(__name__)

# Default forks: 50 keeps the controller well inside AWX's 100 MB/fork model on a small controller
# and below the ~100-200 forks where maintainers report no further gain (docs/reference/scale.md §1.3).
DEFAULT_FORKS = 50
# Messages kept per failure: enough to read the cause, bounded so 16k failures stay small.
MAX_MESSAGE_CHARS = 2000

# Lines of Ansible's own output kept for error messages (a syntax error prints a few lines).
TAIL_LINES = 40

# How every Ansible run learns ufcctl's absolute state directory (roles: `ufc_state_dir` first,
# see README "State directory").
STATE_DIR_VAR = "ufc_state_dir"
STATE_DIR_ENV = "UFC_STATE_DIR"

HOST_STATUSES = ("ok", "changed", "failed", "unreachable", "skipped")

# Tasks Ansible inserts itself and runs whatever --tags says: a role's argument check (tagged
# `always`) and implicit fact gathering. They do not count as work done on a host.
IMPLICIT_ACTIONS = frozenset({
    "ansible.builtin.validate_argument_spec", "validate_argument_spec",
    "ansible.builtin.gather_facts", "gather_facts",
})
IMPLICIT_TASKS = frozenset({"Gathering Facts"})
# What failures.jsonl and summary.json keep of a `no_log: true` task's result: Ansible's own
# censored note, never its msg/stdout/stderr.
NO_LOG_MESSAGE = "output hidden: the task has no_log: true"


class RunObserver(Protocol):
    """Receives a run's events as they happen (called from ansible-runner's reader thread)."""

    def run_started(self, run_id: str, hosts: list[str]) -> None: ...

    def task_started(self, run_id: str, task: str) -> None: ...

    def host_task_done(self, run_id: str, host: str, task: str, status: str, message: str | None) -> None: ...

    def run_finished(self, result: RunResult) -> None: ...


@dataclass
class HostResult:
    """What happened on one host in one run (counts are host-tasks, like Ansible's recap)."""

    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    skipped: int = 0
    unreachable: bool = False
    failed_task: str | None = None
    message: str | None = None
    # host-tasks that ran (ok, changed, failed, unreachable), leaving out the ones Ansible adds by
    # itself (role argument checks, fact gathering): 0 means the selection left nothing to do here
    ran: int = 0

    @property
    def status(self) -> str:
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        if self.changed:
            return "changed"
        return "ok"

    @property
    def succeeded(self) -> bool:
        return not self.unreachable and not self.failed


@dataclass
class RunResult:
    run_id: str
    playbook: str
    status: str  # ansible-runner's: successful, failed, canceled, timeout
    rc: int
    hosts: dict[str, HostResult]
    run_dir: Path
    seconds: float
    check: bool = False
    # hosts that were asked for but never reported (e.g. the play's `hosts:` pattern excluded them)
    not_run: list[str] = field(default_factory=list)
    # Ansible's last lines outside host results: why a run failed before reaching any host
    output_tail: list[str] = field(default_factory=list)
    # steps a role reported SKIPPED (a task result whose msg says so): {"host", "task", "message"}
    skipped_steps: list[dict[str, str]] = field(default_factory=list)

    @property
    def failed_hosts(self) -> list[str]:
        return [h for h, r in self.hosts.items() if not r.succeeded]

    @property
    def succeeded(self) -> bool:
        return self.rc == 0 and not self.failed_hosts

    @property
    def nothing_ran(self) -> bool:
        """No task ran on any host (tags or --limit matched nothing there, or all was skipped)."""
        return not any(r.ran for r in self.hosts.values())

    @property
    def outcome(self) -> str:
        """What to tell the user: runner's status, except that a run of no task is not "successful"."""
        return "nothing ran" if self.succeeded and self.nothing_ran else self.status

    def totals(self) -> dict[str, int]:
        totals = {"ok": 0, "changed": 0, "failed": 0, "skipped": 0, "unreachable": 0}
        for r in self.hosts.values():
            totals["ok"] += r.ok
            totals["changed"] += r.changed
            totals["failed"] += r.failed
            totals["skipped"] += r.skipped
            totals["unreachable"] += int(r.unreachable)
        return totals

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "playbook": self.playbook,
            "status": self.status,
            "rc": self.rc,
            "check": self.check,
            "seconds": round(self.seconds, 3),
            "totals": self.totals(),
            "hosts": {h: {**asdict(r), "status": r.status} for h, r in self.hosts.items()},
            "nothing_ran": self.nothing_ran,
            "not_run": self.not_run,
            "output_tail": self.output_tail,
            "skipped_steps": self.skipped_steps,
            "run_dir": str(self.run_dir),
        }


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


def new_run_id(prefix: str) -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def render_inventory(hosts: Iterable[Host]) -> dict[str, Any]:
    """A YAML/JSON inventory holding only these hosts, their merged vars and their groups."""
    hostvars: dict[str, Any] = {}
    members: dict[str, dict[str, None]] = {}
    for host in hosts:
        hostvars[host.name] = dict(host.vars)
        for group in host.groups:
            if group not in ("all", "ungrouped"):
                members.setdefault(group, {})[host.name] = None
    children = {g: {"hosts": names} for g, names in sorted(members.items())}
    return {"all": {"hosts": hostvars, "children": children}}


def context_limit(limit: str | None, context: Iterable[str]) -> str | None:
    """The --limit that keeps context hosts out of every play: `all,!cp1,!lb1` (a comma list:
    Ansible evaluates exclusions after the union). A run with context hosts takes no other limit,
    since an arbitrary pattern (`a:&b`) cannot be joined with exclusions safely."""
    excluded = [f"!{name}" for name in context]
    if not excluded:
        return limit
    if limit:
        raise ValueError("a run with context hosts takes no --limit pattern")
    return ",".join(["all", *excluded])


def _write_inventory(path: Path, hosts: Iterable[Host]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON is valid YAML, so Ansible's yaml inventory plugin reads it; 0600 because host vars may
    # hold secrets (become passwords, tokens).
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        # to_ansible_json keeps `!unsafe`/`!vault` values and YAML dates in a JSON form Ansible reads back.
        json.dump(to_ansible_json(render_inventory(hosts)), fh)


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


class _EventSink:
    """Folds ansible-runner events into per-host results; keeps only failures on disk."""

    def __init__(self, run_id: str, run_dir: Path, observer: RunObserver | None):
        self.run_id = run_id
        self.observer = observer
        self.hosts: dict[str, HostResult] = {}
        self.stats: dict[str, dict[str, int]] | None = None
        self.task = ""
        # the last lines Ansible printed outside host results (syntax errors, warnings), for messages
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.skipped_steps: list[dict[str, str]] = []
        self._failures = open(run_dir / "failures.jsonl", "a", encoding="utf-8")
        self._lock = threading.Lock()

    def close(self) -> None:
        self._failures.close()

    def _result(self, host: str) -> HostResult:
        result = self.hosts.get(host)
        if result is None:
            result = self.hosts[host] = HostResult(host)
        return result

    def __call__(self, event: dict[str, Any]) -> bool:
        try:
            self._handle(event)
        except Exception:  # never let a display problem break the run
            log.exception("event handler failed on %s", event.get("event"))
        return False  # do not write job_events/*.json: see module docstring

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_task_start":
            self.task = data.get("task", "") or data.get("name", "")
            if self.observer:
                self.observer.task_started(self.run_id, self.task)
            return
        if kind in ("verbose", "error", "warning", "deprecated") and event.get("stdout"):
            self.tail.extend(str(event["stdout"]).splitlines())
            return
        if kind == "playbook_on_stats":
            self.stats = {
                key: dict(data.get(key) or {})
                for key in ("ok", "changed", "failures", "dark", "skipped", "ignored", "rescued")
            }
            return
        if not kind.startswith("runner_on_") or kind == "runner_on_start":
            return
        host = data.get("host")
        if not host:
            return
        res = data.get("res") or {}
        task = data.get("task") or self.task
        with self._lock:
            result = self._result(host)
            message: str | None = None
            if kind == "runner_on_ok":
                status = "changed" if res.get("changed") else "ok"
                message = skipped_step(res)
                if message is not None:
                    self.skipped_steps.append({"host": host, "task": task, "message": message})
            elif kind == "runner_on_skipped":
                status = "skipped"
            elif kind == "runner_on_unreachable":
                status = "unreachable"
                message = _message(res)
            elif kind == "runner_on_failed":
                status = "ok" if data.get("ignore_errors") else "failed"
                message = _message(res) if status == "failed" else None
            else:
                return
            if status != "skipped" and not _implicit(data, task):
                result.ran += 1
            failure = message is not None and status in ("failed", "unreachable")
            if failure and result.failed_task is None:
                result.failed_task, result.message = task, message
            if failure:
                line = {"host": host, "task": task, "status": status, "message": message}
                self._failures.write(json.dumps(line) + "\n")
                self._failures.flush()
        if self.observer:
            self.observer.host_task_done(self.run_id, host, task, status, message)

    def finalize(self) -> None:
        """Take the authoritative per-host counts from playbook_on_stats when it arrived."""
        if not self.stats:
            return
        names = set().union(*(set(v) for v in self.stats.values()))
        for host in names:
            result = self._result(host)
            result.ok = self.stats["ok"].get(host, 0)
            result.changed = self.stats["changed"].get(host, 0)
            result.failed = self.stats["failures"].get(host, 0)
            result.skipped = self.stats["skipped"].get(host, 0)
            result.unreachable = self.stats["dark"].get(host, 0) > 0


# A role says a step did not run, and why, in its task's message: "<step> SKIPPED ..." (roles' debug
# reports, k8s_manifests' `apply SKIPPED`). Whole word, upper case: Ansible's own "skipping" is not it.
_SKIPPED = re.compile(r"\bSKIPPED\b")


def skipped_step(res: Mapping[str, Any]) -> str | None:
    """The first line of a task result's message that reports a step SKIPPED (None: it does not)."""
    msg = res.get("msg")
    if not isinstance(msg, str) or not _SKIPPED.search(msg):
        return None
    line = next(ln for ln in msg.splitlines() if _SKIPPED.search(ln))
    return " ".join(line.split())[:300]


def _implicit(data: Mapping[str, Any], task: str) -> bool:
    action = data.get("resolved_action") or data.get("task_action") or ""
    return action in IMPLICIT_ACTIONS or (task in IMPLICIT_TASKS and action.endswith("setup"))


def _no_log(res: Mapping[str, Any]) -> bool:
    """Ansible replaces a no_log result with {"censored": ...}; `_ansible_no_log` marks the rest."""
    return "censored" in res or bool(res.get("_ansible_no_log"))


def _message(res: Mapping[str, Any]) -> str:
    if _no_log(res):
        return NO_LOG_MESSAGE
    items = res.get("results")
    if isinstance(items, list):
        # a loop: Ansible's own msg says only "One or more items failed", or "All items completed"
        # when the items were unreachable rather than failed; the first such item has the reason
        failed = next((i for i in items if isinstance(i, Mapping)
                       and (i.get("failed") or i.get("unreachable"))), None)
        if failed is not None:
            return _message(failed)
    parts = [str(res.get("msg") or "").strip()]
    for key in ("stderr", "stdout"):
        text = str(res.get(key) or "").strip()
        if text and text not in parts[0]:
            parts.append(text)
    message = " | ".join(p for p in parts if p) or "failed (no message)"
    return message[:MAX_MESSAGE_CHARS]


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
) -> RunResult:
    """Run `playbook` on exactly `hosts` and return one HostResult per host that reported.

    The inventory lists the hosts in the order given (host_pinned plays start them in that
    order). `env` adds variables for the play's own plugins, such as the rollout gate's socket
    (engine/gate.py); Ansible's settings come from ansible.cfg alone.

    Stopping: when `cancel()` turns true, or (with no `cancel`) when ufcctl gets SIGINT/SIGTERM
    (engine/stops.py), every process of the run is stopped and waited for (engine/proctree.py)
    before this returns; after a signal it then raises Stopped, the summary written.
    """
    # Private (0600/0700): the run directory, ansible-runner's files in it (status, rc, ...) and
    # whatever the Ansible process writes under .ufc/ (PKI, manifests); it inherits the umask.
    run_id = run_id or new_run_id(playbook.stem)
    what = (f"ansible run {run_id} ({playbook.name}) stopped, its processes ended; "
            "run the same command again to continue (the roles are idempotent)")
    with statedir.private_files(), stops.stopping(what):
        return _run_playbook(playbook, hosts, options, run_id=run_id, observer=observer, cancel=cancel,
                             env=env or {})


def _run_playbook(
    playbook: Path,
    hosts: list[Host],
    options: RunOptions,
    *,
    run_id: str,
    observer: RunObserver | None,
    cancel: Callable[[], bool] | None,
    env: Mapping[str, str],
) -> RunResult:
    import ansible_runner  # the only import of ansible_runner in the package

    if not playbook.is_file():
        raise InputError(f"playbook {playbook} does not exist")
    if not hosts:
        raise InputError(f"no hosts selected for {playbook.name}", "check --limit and the inventory groups")
    state = state_dir()
    run_dir = statedir.ensure_private_dir(statedir.prepare(state) / "runs") / run_id
    run_dir.mkdir(mode=0o700, exist_ok=True)
    inventory_path = run_dir / "inventory" / "hosts.json"
    names = [h.name for h in hosts]
    run_on = set(names)
    context = [h for h in options.context if h.name not in run_on]  # a target is never context too
    _write_inventory(inventory_path, [*hosts, *context])
    limit = context_limit(options.limit, [h.name for h in context])

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

    cmdline: list[str] = []
    if options.check:
        cmdline.append("--check")
    if options.diff:
        cmdline.append("--diff")
    if options.skip_tags:
        cmdline += ["--skip-tags", ",".join(options.skip_tags)]

    marker = proctree.token(run_id)
    envvars.update(proctree.marker_env(marker))
    stop_asked = cancel or stops.requested

    def cancel_run() -> bool:
        # called by ansible-runner between two reads of the playbook's output (at least once per
        # pexpect_timeout): the whole process tree is stopped here, gracefully, before runner's
        # own cancel (a SIGKILL to the playbook's group alone) finds nothing left to kill
        if not stop_asked():
            return False
        proctree.stop(marker, hurry=stops.hurry)
        return True

    sink = _EventSink(run_id, run_dir, observer)
    if observer:
        observer.run_started(run_id, names)
    started = time.monotonic()
    try:
        runner = ansible_runner.run(
            private_data_dir=str(run_dir),
            artifact_dir=str(run_dir / "artifacts"),
            ident="ansible",
            playbook=str(playbook.resolve()),
            inventory=str(inventory_path),
            envvars=envvars,
            # last, so no --extra-vars can send the roles' CA keys elsewhere than ufcctl looks
            extravars={**options.extravars, STATE_DIR_VAR: str(state)},
            forks=options.forks,
            limit=limit,
            tags=",".join(options.tags) or None,
            cmdline=" ".join(cmdline) or None,
            verbosity=options.verbosity or None,
            quiet=True,
            event_handler=sink,
            cancel_callback=cancel_run,
            fact_cache_type="memory",
            timeout=options.timeout,
            # pexpect_timeout: how long runner waits for output before asking cancel_run again (5 s
            # by default): a stop starts within a second even while every host waits at the gate
            settings={"suppress_output_file": True, "suppress_ansible_output": True, "pexpect_timeout": 1},
            # Nothing under env/: ansible-runner writes envvars/extravars/cmdline there only when the
            # file is missing and then lets the file win over what it is given, so a second run in
            # the same directory (a resumed rollout's chunk, run ids are stable) would get the first
            # run's environment and variables, e.g. a gate socket that no longer exists.
            suppress_env_files=True,
        )
        if runner.status in ("canceled", "timeout"):  # runner's timeout kills the playbook's group only
            proctree.stop(marker, hurry=stops.hurry)
    except BaseException:  # e.g. a KeyboardInterrupt where no handler was installed: leave nothing running
        proctree.stop(marker, hurry=stops.hurry)
        raise
    finally:
        sink.close()
    sink.finalize()
    result = RunResult(
        run_id=run_id,
        playbook=playbook.name,
        status=runner.status,
        rc=runner.rc if runner.rc is not None else 1,
        hosts={n: sink.hosts[n] for n in names if n in sink.hosts},
        run_dir=run_dir,
        seconds=time.monotonic() - started,
        check=options.check,
        not_run=[n for n in names if n not in sink.hosts],
        output_tail=list(sink.tail),
        skipped_steps=list(sink.skipped_steps),
    )
    with open(run_dir / "summary.json", "w", encoding="utf-8") as fh:
        json.dump(result.to_json(), fh, indent=1)
    if observer:
        observer.run_finished(result)
    return result
