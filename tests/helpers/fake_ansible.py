"""A test double of engine.runner.run_playbook that plays a rollout chunk like a host_pinned play.

One call is one long-lived Ansible process (a chunk): `options.forks` workers take the hosts in
the order given; each host first asks the real rollout gate (the client function of
playbooks/action_plugins/ufc_gate.py, over the engine's unix socket) and, on go, "runs" its
scripted Behaviour, reporting through the same RunObserver calls the real runner makes: the
marker task (done), a failed or unreachable task, or nothing (silent). No Ansible, no containers.

Hosts reach the gate in whatever order their worker threads get there, as a real play's forked
workers do. A test whose assertion depends on which hosts were waiting when a slot freed orders
the arrivals with `arrive` and a GateWatch, which sees the gate from the engine's side: a host asks
only once the engine has taken in the request of the host it follows. Waiting on the engine, not on
a sleep, is what makes those tests deterministic.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.pyimports import load_file
from ufcctl.domain.inventory.model import Host
from ufcctl.engine.gate import GATE_ENV, GateRequest, GateServer
from ufcctl.engine.run_result import HostResult, RunResult
from ufcctl.engine.runner import RunOptions

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MARKER = "Report the node done to the rollout engine"
SKIP_TASK = "Report the join as SKIPPED (no join token on the controller)"


def _gate_client() -> Any:
    return load_file(ROOT / "playbooks" / "action_plugins" / "ufc_gate.py", "ufc_gate_action")


ask_gate: Callable[[str, str], dict[str, Any]] = _gate_client().ask

# A guard against a test that hangs, never a timing assertion: what it waits for normally comes at once.
HANG_GUARD = 120.0


class GateWatch:
    """The rollout gate seen from the engine's side: which hosts' requests the engine has taken in
    (its handler returned, so the host waits at the gate or has its answer).

    Installed with monkeypatch over the executor's GateServer; what it has seen is per gate server,
    that is per execution of a rollout (tests run their rollouts one after another)."""

    def __init__(self, monkeypatch: Any):
        self._cond = threading.Condition()
        self._events: dict[str, threading.Event] = {}
        watch = self

        class WatchedGate(GateServer):
            def __init__(self, directory: Path, on_request: Callable[[GateRequest], None]):
                def taken_in(request: GateRequest) -> None:
                    on_request(request)
                    watch.taken_in(request.host).set()

                super().__init__(directory, taken_in)
                watch._new_gate()

        monkeypatch.setattr("ufcctl.rollout.executor.GateServer", WatchedGate)

    def _new_gate(self) -> None:
        with self._cond:
            for event in self._events.values():
                event.clear()

    def taken_in(self, host: str) -> threading.Event:
        """Set once the engine has taken in `host`'s gate request (e.g. a Behaviour's hold)."""
        with self._cond:
            return self._events.setdefault(host, threading.Event())

    def wait_for(self, host: str) -> None:
        assert self.taken_in(host).wait(HANG_GUARD), f"{host} never reached the engine's gate"

    def in_inventory_order(self, host: str, process_hosts: tuple[str, ...]) -> None:
        """An `arrive` for FakeAnsible: a process's hosts reach the gate in its inventory order, as a
        host_pinned play starts them (idealised: real workers may overtake each other)."""
        index = process_hosts.index(host)
        if index > 0:
            self.wait_for(process_hosts[index - 1])

    def after(self, follows: dict[str, str]) -> Callable[[str, tuple[str, ...]], None]:
        """An `arrive` for FakeAnsible: each host in `follows` asks only once the host it maps to was
        taken in; the others ask at once."""

        def arrive(host: str, _process_hosts: tuple[str, ...]) -> None:
            if host in follows:
                self.wait_for(follows[host])

        return arrive


@dataclass
class Behaviour:
    outcome: str = "done"  # done | failed | unreachable | silent (never reaches the marker)
    seconds: float = 0.01
    changed: bool = True
    hold: threading.Event | None = None  # wait for this before ending (a straggler)
    skipped: str | None = None  # a step the role reports SKIPPED before the marker (its message)


@dataclass
class FakeAnsible:
    """Same signature as run_playbook; scripted per-host outcomes; records everything it saw."""

    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    marker: str = DEFAULT_MARKER
    calls: list[tuple[str, tuple[str, ...], RunOptions, dict[str, str]]] = field(default_factory=list)
    running: int = 0  # processes (calls) in progress
    overlaps: int = 0  # calls that started while another was still in progress
    starts: dict[str, int] = field(default_factory=dict)  # host -> times it passed the gate with go
    answers: dict[str, list[str]] = field(default_factory=dict)  # host -> gate answers it got
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # host -> the facts of its last answer
    arrivals: list[str] = field(default_factory=list)  # hosts in the order they asked the gate
    # called in a host's worker, with the host and its process's hosts, just before it asks the gate
    # (GateWatch.in_inventory_order, GateWatch.after): orders the arrivals
    arrive: Callable[[str, tuple[str, ...]], None] | None = None
    in_flight: int = 0
    max_in_flight: int = 0
    on_call: Callable[[str], None] | None = None  # called with the run id when a process starts
    on_start: Callable[[str], None] | None = None  # called when a host passed the gate with go
    on_end: Callable[[str], None] | None = None
    raise_error: Exception | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def processes(self) -> int:
        return len(self.calls)

    def __call__(self, playbook: Path, hosts: list[Host], options: RunOptions, *, run_id: str,
                 observer: Any, cancel: Callable[[], bool] | None = None,
                 env: Mapping[str, str] | None = None, on_result: Any = None) -> RunResult:
        names = tuple(h.name for h in hosts)
        with self._lock:
            self.calls.append((run_id, names, options, dict(env or {})))
            self.overlaps += self.running > 0
            self.running += 1
        if self.on_call:
            self.on_call(run_id)
        try:
            return self._process(playbook, names, options, run_id, observer, cancel, env)
        finally:
            with self._lock:
                self.running -= 1

    def _process(self, playbook: Path, names: tuple[str, ...], options: RunOptions, run_id: str,
                 observer: Any, cancel: Callable[[], bool] | None,
                 env: Mapping[str, str] | None) -> RunResult:
        if self.raise_error:
            raise self.raise_error
        cancelled = cancel or (lambda: False)
        results: dict[str, HostResult] = {}
        queue = list(names)
        lock = threading.Lock()

        def worker() -> None:
            while not cancelled():
                with lock:
                    if not queue:
                        return
                    host = queue.pop(0)
                self._host(run_id, host, names, observer, results, env or {}, cancelled)

        workers = [threading.Thread(target=worker) for _ in range(min(options.forks, len(names)))]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        status = "canceled" if cancelled() else "successful"
        rc = 0 if all(r.succeeded for r in results.values()) and status == "successful" else 2
        return RunResult(run_id, playbook.name, status if rc == 0 or status == "canceled" else "failed", rc,
                         results, Path("/nonexistent"), 0.0, not_run=[n for n in names if n not in results])

    def _host(self, run_id: str, host: str, names: tuple[str, ...], observer: Any,
              results: dict[str, HostResult], env: Mapping[str, str], cancelled: Callable[[], bool]) -> None:
        if self.arrive:
            self.arrive(host, names)
        with self._lock:
            self.arrivals.append(host)
        path = env.get(GATE_ENV)
        reply = ask_gate(path, host) if path else {"answer": "go", "facts": {}}
        answer = reply["answer"]
        result = results[host] = HostResult(host, ok=1)  # the gate task itself
        with self._lock:
            self.answers.setdefault(host, []).append(answer)
            self.facts[host] = reply.get("facts") or {}
            if answer != "go":
                return
            self.starts[host] = self.starts.get(host, 0) + 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.on_start:
            self.on_start(host)
        b = self.behaviours.get(host, Behaviour())
        deadline = time.monotonic() + b.seconds
        while time.monotonic() < deadline and not cancelled():
            time.sleep(min(0.005, b.seconds))
        if b.hold is not None:
            waited = time.monotonic()
            while not b.hold.wait(0.05) and not cancelled():
                assert time.monotonic() - waited < HANG_GUARD, f"{host} was held and never released"
        with self._lock:
            self.in_flight -= 1
        if cancelled():
            return  # killed with its process: no event
        if b.skipped is not None:
            observer.host_task_done(run_id, host, SKIP_TASK, "ok", b.skipped)
        if b.outcome == "done":
            result.changed = int(b.changed)
            observer.host_task_done(run_id, host, self.marker, "changed" if b.changed else "ok", None)
        elif b.outcome == "failed":
            result.failed, result.failed_task, result.message = 1, "Install the driver", "installer rc 1"
            observer.host_task_done(run_id, host, "Install the driver", "failed", "installer rc 1")
        elif b.outcome == "unreachable":
            result.unreachable, result.message = True, "ssh: connect refused"
            observer.host_task_done(run_id, host, "Read versions", "unreachable", "ssh: connect refused")
        if self.on_end:
            self.on_end(host)
