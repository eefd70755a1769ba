"""engine/http_get.py against loopback servers: one deadline for the whole request, a capped answer,
no redirect to another host, no credentials in the URL. The deadlines are small (0.3 s) and the
trickles send one byte every 20 ms for far longer, so only a whole-request deadline stops them."""

from __future__ import annotations

import pytest

from tests.helpers.raw_http import Script, raw_server, response
from ufcctl.engine.http_get import HttpError, HttpTimeout, request, stream_lines

DEADLINE = 0.3
CAP = 1000
TRICKLE = 0.02  # seconds between bytes: each read is quick, the whole answer never is
HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\nConnection: close\r\n\r\n"


def trickle(data: bytes) -> Script:
    return lambda path: ([data[i:i + 1] for i in range(len(data))], TRICKLE)


FAILURES: dict[str, tuple[Script, str, type[HttpError]]] = {
    "headers-one-byte-at-a-time": (
        trickle(HEAD + b"x" * 10), f"no answer within {DEADLINE:g} s", HttpTimeout),
    "body-one-byte-at-a-time": (
        lambda path: ([HEAD] + [b"x"] * 500, TRICKLE), f"no answer within {DEADLINE:g} s", HttpTimeout),
    "declared-over-the-cap": (
        lambda path: ([response("200 OK", b"x" * (CAP + 1))], 0.0),
        f"answer of {CAP + 1} bytes is over the limit of {CAP} bytes", HttpError),
    "undeclared-over-the-cap": (
        lambda path: ([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"x" * (CAP * 3)], 0.0),
        f"answer over the limit of {CAP} bytes", HttpError),
    "redirect-to-another-host": (
        lambda path: ([response("302 Found", b"", ["Location: http://127.0.0.2:9/elsewhere"])], 0.0),
        "redirected to another host (127.0.0.2:9): refused", HttpError),
    "redirect-loop": (
        lambda path: ([response("307 Temporary Redirect", b"", [f"Location: {path}x"])], 0.0),
        "more than 5 redirects", HttpError),
}


@pytest.mark.parametrize(("script", "reason", "kind"), FAILURES.values(), ids=FAILURES.keys())
def test_a_bad_server_gives_one_clear_error(script: Script, reason: str, kind: type[HttpError]) -> None:
    with raw_server(script) as base:
        with pytest.raises(HttpError) as caught:
            request(base + "/q", deadline=DEADLINE, max_bytes=CAP)
    assert caught.value.reason == reason
    assert isinstance(caught.value, kind)
    assert str(caught.value) == f"{base}/q: {reason}"


def test_a_redirect_on_the_same_host_is_followed() -> None:
    def script(path: str) -> tuple[list[bytes], float]:
        if path == "/old":
            return [response("301 Moved Permanently", b"", ["Location: /new"])], 0.0
        return [response("200 OK", path.encode())], 0.0

    with raw_server(script) as base:
        answer = request(base + "/old", deadline=5, max_bytes=CAP)
    assert (answer.status, answer.body, answer.url) == (200, b"/new", base + "/new")


CREDENTIALS = {
    "user-and-password": ("http://admin:s3cret@127.0.0.1:9/x", "http://admin:***@127.0.0.1:9/x"),
    "token-as-user": ("https://tok3n@127.0.0.1:9/x", "https://***@127.0.0.1:9/x"),
}


@pytest.mark.parametrize(("url", "shown"), CREDENTIALS.values(), ids=CREDENTIALS.keys())
def test_credentials_in_the_url_are_refused_and_never_printed(url: str, shown: str) -> None:
    with pytest.raises(HttpError) as caught:
        request(url, deadline=DEADLINE, max_bytes=CAP)
    assert str(caught.value) == f"{shown}: credentials in the URL are not supported; remove user:password@"
    assert "s3cret" not in str(caught.value) and "tok3n" not in str(caught.value)


def test_stream_lines_hands_over_each_line_of_a_body_of_any_size() -> None:
    body = b"".join(b'{"n": %d}\n' % i for i in range(5000))  # over any answer cap request() uses
    with raw_server(lambda path: ([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", body], 0.0)) as base:
        lines: list[bytes] = []
        assert stream_lines(base + "/s", lines.append, deadline=5, max_line=100) == 200
    assert b"".join(lines) == body and len(lines) == 5000


@pytest.mark.parametrize(("answer", "reason"), [
    (response("503 Service Unavailable", b"etcd is down"), "HTTP 503: etcd is down"),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 300 + b"\n",
     "a line of the answer is over 100 bytes"),
])
def test_stream_lines_refuses_an_error_status_and_an_endless_line(answer: bytes, reason: str) -> None:
    with raw_server(lambda path: ([answer], 0.0)) as base:
        with pytest.raises(HttpError) as caught:
            stream_lines(base + "/s", lambda line: None, deadline=5, max_line=100)
    assert caught.value.reason == reason


def test_stream_lines_has_one_deadline_for_the_whole_stream() -> None:
    with raw_server(lambda path: ([HEAD] + [b"x\n"] * 500, TRICKLE)) as base:
        with pytest.raises(HttpTimeout):
            stream_lines(base + "/s", lambda line: None, deadline=DEADLINE, max_line=100)
