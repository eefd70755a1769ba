"""The gate server (engine/gate.py) and the shipped gate client (playbooks/action_plugins/ufc_gate.py)
speak the same protocol; bad requests and vanished askers do not break the server."""

from __future__ import annotations

import json
import socket
import stat
import threading
from pathlib import Path

import pytest

from tests.helpers.fake_ansible import ask_gate
from ufcctl.engine.gate import GATE_ENV, GO, SKIP, STOP, GateRequest, GateServer


class Collector:
    def __init__(self) -> None:
        self.requests: list[GateRequest] = []
        self.arrived = threading.Condition()

    def __call__(self, request: GateRequest) -> None:
        with self.arrived:
            self.requests.append(request)
            self.arrived.notify_all()

    def wait_for(self, count: int) -> list[GateRequest]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.requests) >= count, timeout=30)  # hang guard
            return list(self.requests)


def ask_in_thread(path: Path, host: str, answers: dict[str, dict]) -> threading.Thread:
    thread = threading.Thread(target=lambda: answers.__setitem__(host, ask_gate(str(path), host)))
    thread.start()
    return thread


def test_each_host_gets_its_own_answer(tmp_path: Path) -> None:
    collector = Collector()
    answers: dict[str, dict] = {}
    with GateServer(tmp_path, collector) as server:
        assert server.env() == {GATE_ENV: str(server.path)} and server.path.parent == tmp_path
        assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
        threads = [ask_in_thread(server.path, h, answers) for h in ("a", "b", "c")]
        requests = {r.host: r for r in collector.wait_for(3)}
        assert answers == {}  # every asker blocks until it is answered
        assert requests["b"].answer(SKIP, "NPU pods running")
        requests["a"].facts = {"labels_at_target": True}  # what the engine tells a's play with its go
        assert requests["a"].answer(GO)
        assert requests["c"].answer(STOP, "budget exceeded")
        assert not requests["c"].answer(GO)  # one answer per request
        for thread in threads:
            thread.join(timeout=30)
    assert answers == {"a": {"answer": "go", "reason": None, "facts": {"labels_at_target": True}},
                       "b": {"answer": "skip", "reason": "NPU pods running", "facts": {}},
                       "c": {"answer": "stop", "reason": "budget exceeded", "facts": {}}}
    assert not server.path.exists()


def raw(path: Path, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(payload)
        return sock.recv(4096)


@pytest.mark.parametrize("payload", [b"not json\n", b'{"host": ""}\n', b'["a"]\n', b'{"host": 7}\n'])
def test_a_malformed_request_is_told_to_stop_and_the_server_goes_on(tmp_path: Path, payload: bytes) -> None:
    collector = Collector()
    with GateServer(tmp_path, collector) as server:
        reply = json.loads(raw(server.path, payload))
        assert reply["answer"] == STOP and "malformed" in reply["reason"]
        answers: dict[str, dict] = {}
        thread = ask_in_thread(server.path, "a", answers)
        collector.wait_for(1)[0].answer(GO)
        thread.join(timeout=30)
    assert answers["a"]["answer"] == GO and [r.host for r in collector.requests] == ["a"]


def test_an_asker_that_went_away_is_answered_without_error(tmp_path: Path) -> None:
    collector = Collector()
    with GateServer(tmp_path, collector) as server:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(server.path))
            sock.sendall(b'{"host": "gone"}\n')
            request = collector.wait_for(1)[0]
        assert request.answer(GO) in (True, False)  # a closed peer: no exception either way
        with socket.socket(socket.AF_UNIX) as sock:  # a request cut short is dropped
            sock.connect(str(server.path))
            sock.sendall(b'{"host": "ha')
        answers: dict[str, dict] = {}
        thread = ask_in_thread(server.path, "next", answers)
        collector.wait_for(2)[1].answer(GO)
        thread.join(timeout=30)
    assert answers["next"]["answer"] == GO


def test_an_engine_that_dies_fails_the_gate(tmp_path: Path) -> None:
    collector = Collector()
    errors: list[Exception] = []
    server = GateServer(tmp_path, collector).start()

    def ask() -> None:
        try:
            ask_gate(str(server.path), "orphan")
        except (OSError, ValueError) as err:
            errors.append(err)

    thread = threading.Thread(target=ask)
    thread.start()
    collector.wait_for(1)
    server.close()  # unanswered: the connection closes as it does when the engine is killed
    thread.join(timeout=30)
    assert errors and "closed the gate without an answer" in str(errors[0])


def test_a_deep_state_directory_gets_a_short_private_socket_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    with GateServer(deep, Collector()) as server:
        assert len(str(server.path)) < 108 and server.path.parent != deep
        assert stat.S_IMODE(server.path.parent.stat().st_mode) == 0o700
        own = server.path.parent
    assert not own.exists()


def test_a_killed_attempts_processes_never_reach_the_next_attempts_gate(tmp_path: Path) -> None:
    # kill -9 leaves the first attempt's socket file and, for a while, its Ansible processes, whose
    # environment still names that file; the resumed attempt listens elsewhere and removes the file
    first = GateServer(tmp_path, Collector())
    first.start()
    orphaned = first.env()[GATE_ENV]
    first._listener.close()  # what the kernel does to a killed process's socket; the file stays
    assert Path(orphaned).exists()
    collector = Collector()
    with GateServer(tmp_path, collector) as second:
        assert str(second.path) != orphaned and not Path(orphaned).exists()
        with pytest.raises(OSError):
            ask_gate(orphaned, "w01")  # the orphan's host finds nobody: its own play fails it
        assert collector.requests == []
