"""A loopback stand-in for a registry's HTTP API v2 read path (test code): manifests by tag or
digest, blobs by digest, a request log, and blobs that can be served corrupted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.lab_standins.upstream_registry.image import TestImage, digest_of


@dataclass
class Standin:
    manifests: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # ref -> (media type, body)
    blobs: dict[str, bytes] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)  # blob digests served with a flipped byte
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)
    url: str = ""

    def add_image(self, repository: str, tag: str | None, image: TestImage) -> None:
        self.add_manifest(repository, tag, image.manifest, "application/vnd.oci.image.manifest.v1+json")
        self.blobs.update(image.blobs)

    def add_manifest(self, repository: str, tag: str | None, body: bytes, media: str) -> None:
        self.manifests[f"{repository}/{digest_of(body)}"] = (media, body)
        if tag:
            self.manifests[f"{repository}/{tag}"] = (media, body)

    def blob_gets(self) -> int:
        return sum(1 for m, p in self.requests if m == "GET" and "/blobs/" in p)


@contextmanager
def serve(standin: Standin) -> Iterator[Standin]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, body: bytes | None) -> None:
            standin.requests.append((self.command, self.path))
            path = self.path
            if path == "/v2/":
                self._send(200, "application/json", b"{}", body is not None)
                return
            repo, sep, ref = path[len("/v2/"):].rpartition("/manifests/")
            if sep and f"{repo}/{ref}" in standin.manifests:
                media, data = standin.manifests[f"{repo}/{ref}"]
                self._send(200, media, data, body is not None)
                return
            repo, sep, digest = path[len("/v2/"):].rpartition("/blobs/")
            if sep and digest in standin.blobs:
                data = standin.blobs[digest]
                if digest in standin.corrupt:
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
                self._send(200, "application/octet-stream", data, body is not None)
                return
            self._send(404, "application/json", b'{"errors":[{"code":"NOT_FOUND"}]}', body is not None)

        def _send(self, code: int, media: str, data: bytes, with_body: bool) -> None:
            self.send_response(code)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if with_body:
                self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self._answer(b"")

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(None)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
