"""The HTTP clients (VictoriaMetrics, registry, etcd gateway) against loopback servers that trickle,
answer too much, redirect elsewhere or answer well-formed JSON of the wrong shape: each gives one
clear error naming what went wrong, never a hang, a traceback or an unbounded read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.raw_http import Script, json_answer, raw_server, response
from ufcctl.engine import etcd_client, registry_client, victoria
from ufcctl.engine.etcd_client import EtcdError, Gateway
from ufcctl.engine.registry_client import image_size
from ufcctl.engine.victoria import VictoriaError, query

DEADLINE = 0.3
# the wrong-shape cases answer at once: a deadline only a loaded machine could reach (CI at load 30 once
# took longer than DEADLINE to serve one local answer, and the message named the timeout instead)
SHAPE_DEADLINE = 30.0
CAP = 1000


def ask_victoria(base: str, deadline: float = DEADLINE) -> str:
    with pytest.raises(VictoriaError) as caught:
        query(base, "up", deadline)
    return str(caught.value)


def ask_registry(base: str, deadline: float = DEADLINE) -> str:
    size, why = image_size(base, "library/app", "v1", timeout=deadline)
    assert size is None
    return why


def ask_etcd(base: str, deadline: float = DEADLINE) -> str:
    with pytest.raises(EtcdError) as caught:
        Gateway(base, None, deadline).status()
    return str(caught.value)


CLIENTS: dict[str, Callable[[str], str]] = {"victoria": ask_victoria, "registry": ask_registry,
                                            "etcd": ask_etcd}
HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\nConnection: close\r\n\r\n"
TRANSPORT: dict[str, tuple[Script, str]] = {
    "trickled-body": (lambda path: ([HEAD] + [b" "] * 200, 0.02), f"no answer within {DEADLINE:g} s"),
    "over-the-cap": (lambda path: ([response("200 OK", b" " * (CAP + 1))], 0.0),
                     f"answer of {CAP + 1} bytes is over the limit of {CAP} bytes"),
    "redirect-elsewhere": (lambda path: ([response("307 Temporary Redirect", b"",
                                                   ["Location: http://127.0.0.2:9/x"])], 0.0),
                           "redirected to another host (127.0.0.2:9): refused"),
}


@pytest.fixture()
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    caps = ((victoria, "MAX_ANSWER"), (registry_client, "MAX_MANIFEST"), (etcd_client, "MAX_ANSWER"))
    for module, name in caps:
        monkeypatch.setattr(module, name, CAP, raising=False)  # raising: the test runs on old clients too


@pytest.mark.usefixtures("small_caps")
@pytest.mark.parametrize("client", CLIENTS.values(), ids=CLIENTS.keys())
@pytest.mark.parametrize(("script", "reason"), TRANSPORT.values(), ids=TRANSPORT.keys())
def test_a_bad_server_is_one_clear_error(client: Callable[[str], str], script: Script, reason: str) -> None:
    with raw_server(script) as base:
        message = client(base)
    assert message.endswith(reason)
    assert base in message


def vm(result_type: str, result: Any) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}}).encode()


SHAPES: dict[str, tuple[Callable[[str, float], str], bytes, str]] = {
    "vm-result-is-a-string": (ask_victoria, vm("vector", "oops"), "data.result is str, not a list"),
    "vm-value-not-a-number": (ask_victoria, vm("vector", [{"metric": {}, "value": [1, "many"]}]),
                              'value [1, "many"] is not a [time, "number"] pair'),
    "vm-value-is-a-list": (ask_victoria, vm("vector", [{"metric": {}, "value": [1, [2]]}]),
                           'value [1, [2]] is not a [time, "number"] pair'),
    "vm-metric-is-a-list": (ask_victoria, vm("vector", [{"metric": ["a"], "value": [1, "1"]}]),
                            "a sample's metric is not a map of label values"),
    "vm-data-is-a-list": (ask_victoria, b'{"status": "success", "data": []}', "unexpected result type None"),
    "etcd-dbsize-not-a-number": (ask_etcd, b'{"header": {}, "dbSize": "big"}',
                                 "unexpected answer from /v3/maintenance/status: ValueError: dbSize 'big'"),
    "etcd-dbsize-an-object": (ask_etcd, b'{"header": {}, "dbSize": {}}', "dbSize is dict, not a number"),
    "etcd-header-a-string": (ask_etcd, b'{"header": "x"}', "header is str, not an object"),
    "etcd-answer-a-list": (ask_etcd, b"[1, 2]", "not a JSON object from /v3/maintenance/status"),
    "registry-platform-a-string": (
        ask_registry, b'{"manifests": [{"digest": "sha256:1", "platform": "linux"}, {"digest": "sha256:2"}]}',
        "index has no linux/amd64 entry"),
    "registry-layers-an-object": (ask_registry, b'{"config": {"size": 1}, "layers": {"size": 2}}',
                                  "manifest lists no sizes"),
}


@pytest.mark.parametrize(("client", "body", "reason"), SHAPES.values(), ids=SHAPES.keys())
def test_an_answer_of_the_wrong_shape_is_one_clear_error(client: Callable[[str, float], str], body: bytes,
                                                         reason: str) -> None:
    with raw_server(json_answer(body)) as base:
        message = client(base, SHAPE_DEADLINE)
    assert reason in message
    assert "\n" not in message
