"""The VictoriaMetrics client against the loopback stand-in: answers, and each way a query fails."""

from __future__ import annotations

import socket

import pytest

from tests.helpers.victoria_standin import victoria_standin
from ufcctl.engine.victoria import VictoriaError, query


def test_a_vector_becomes_samples_and_the_expression_reaches_the_server() -> None:
    expr = 'up{job="etcd"}'
    vectors = {expr: [({"__name__": "up", "member": "cp1"}, 1), ({"__name__": "up", "member": "cp2"}, 0)]}
    with victoria_standin(vectors) as vm:
        samples = query(vm.url + "/", expr, 5)
    assert [(x.labels["member"], x.value) for x in samples] == [("cp1", 1.0), ("cp2", 0.0)]
    assert vm.asked == [expr]


def test_an_empty_answer_is_no_samples() -> None:
    with victoria_standin() as vm:
        assert query(vm.url, "ufcctl_vip_held", 5) == []


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        pytest.param("http500", "HTTP 500 Internal Server Error: stand-in: internal error", id="http-500"),
        pytest.param("badjson", "answer to 'up' is not JSON", id="bad-json"),
        pytest.param("failed-status", "query 'up': status 'error': stand-in", id="status-not-success"),
    ],
)
def test_a_bad_answer_names_the_url_and_what_failed(mode: str, reason: str) -> None:
    with victoria_standin(mode=mode) as vm:
        with pytest.raises(VictoriaError) as caught:
            query(vm.url, "up", 5)
    assert caught.value.url == f"{vm.url}/api/v1/query"
    assert caught.value.reason.startswith(reason)
    assert str(caught.value).startswith(f"{vm.url}/api/v1/query: ")


def test_a_server_slower_than_the_timeout_is_reported_as_such() -> None:
    with victoria_standin(mode="sleep", sleep=3) as vm:
        with pytest.raises(VictoriaError) as caught:
            query(vm.url, "up", 0.3)
    assert caught.value.reason == "no answer within 0.3 s"


def test_a_closed_port_is_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(VictoriaError) as caught:
        query(f"http://127.0.0.1:{port}", "up", 5)
    assert caught.value.reason == "connection refused"
    assert caught.value.url == f"http://127.0.0.1:{port}/api/v1/query"
