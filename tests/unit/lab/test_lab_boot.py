"""A node whose systemd exited before the boot wait: started once more, then a clear error."""

from __future__ import annotations

import subprocess

import pytest

from ufcctl.errors import RunFailed
from ufcctl.lab.nodes import prepare_node

BOOTED = "state=running\nhostkey=ssh-ed25519 AAAAkey root@n\n"


class StoppedPodman:
    """Answers like podman for a container that is stopped until it has been started `heals_after` times."""

    def __init__(self, heals_after: int | None) -> None:
        self.heals_after = heals_after
        self.starts = 0

    def _running(self) -> bool:
        return self.heals_after is not None and self.starts >= self.heals_after

    def exec(self, name, argv, *, input_text=None, check=True, timeout=120):
        if self._running():
            return subprocess.CompletedProcess(argv, 0, BOOTED, "")
        return subprocess.CompletedProcess(
            argv, 255, "", "Error: OCI runtime error: runc: exec failed: cannot exec in a stopped container")

    def exit_state(self, name):
        return ("running", 0, "") if self._running() else ("exited", 255, "")

    def logs(self, name, lines=15):
        return ["Failed to allocate manager object: Too many open files"]

    def start(self, names):
        self.starts += 1


def test_a_stopped_node_is_started_once_more_and_says_so() -> None:
    podman, said = StoppedPodman(heals_after=1), []
    ready = prepare_node(podman, "t1-cp1", "ssh-ed25519 ctl", "10.89.79.1", notify=said.append)  # type: ignore[arg-type]
    assert ready.host_key == "ssh-ed25519 AAAAkey" and podman.starts == 1
    assert len(said) == 1 and "t1-cp1 is exited (exit code 255)" in said[0] and "once more" in said[0]


def test_a_node_that_stops_again_is_an_error_with_its_console() -> None:
    podman, said = StoppedPodman(heals_after=None), []
    with pytest.raises(RunFailed) as err:
        prepare_node(podman, "t1-cp1", "ssh-ed25519 ctl", "10.89.79.1", notify=said.append)  # type: ignore[arg-type]
    assert podman.starts == 1
    assert "t1-cp1 is exited (exit code 255)" in err.value.message
    assert "Too many open files" in err.value.message
    assert "podman logs t1-cp1" in (err.value.hint or "")


class StoppingPodman(StoppedPodman):
    """A container podman still reports as "stopping" for a while after its systemd exited."""

    def __init__(self, stopping_reads: int) -> None:
        super().__init__(heals_after=1)
        self.stopping_reads = stopping_reads

    def exit_state(self, name):
        if not self._running() and self.stopping_reads > 0:
            self.stopping_reads -= 1
            return ("stopping", 0, "")
        return super().exit_state(name)


def test_a_node_still_stopping_is_waited_for_then_started_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ufcctl.lab.nodes.time.sleep", lambda _s: None)
    podman, said = StoppingPodman(stopping_reads=3), []
    ready = prepare_node(podman, "t1-cp1", "ssh-ed25519 ctl", "10.89.79.1", notify=said.append)  # type: ignore[arg-type]
    assert ready.host_key == "ssh-ed25519 AAAAkey" and podman.starts == 1 and podman.stopping_reads == 0
    assert "t1-cp1 is exited" in said[0]


class UnknownStatePodman(StoppedPodman):
    """exec says the container is stopped but inspect answers something else (CI, once: a 180 s "timeout")."""

    def exit_state(self, name):
        return ("running", 0, "") if self._running() else ("unknown", None, "")


def test_exec_refused_as_stopped_starts_it_once_more_whatever_inspect_says() -> None:
    podman, said = UnknownStatePodman(heals_after=1), []
    ready = prepare_node(podman, "t1-cp1", "ssh-ed25519 ctl", "10.89.79.1", notify=said.append)  # type: ignore[arg-type]
    assert ready.host_key == "ssh-ed25519 AAAAkey" and podman.starts == 1
    assert "t1-cp1 is unknown" in said[0]
