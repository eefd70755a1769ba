"""engine/http_get.py against loopback servers: one deadline for the whole request, a capped answer,
no redirect to another host, no credentials in the URL. The deadlines are small (0.3 s) and the
trickles send one byte every 20 ms for far longer, so only a whole-request deadline stops them."""

from __future__ import annotations

import pytest

from tests.helpers.raw_http import Script, raw_server, response
from ufcctl.engine.http_get import HttpError, HttpTimeout, request

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
