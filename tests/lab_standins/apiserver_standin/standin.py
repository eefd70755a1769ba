#!/usr/bin/env python3
"""LAB EMULATOR of kube-apiserver (a stand-in): an HTTPS server answering /readyz, for load-balancer tests.

It is not kube-apiserver and implements none of its API. It answers every GET with 200 and this
host's name (so a client behind the VIP can count requests per backend), except /readyz, which
answers 503 while the flag file exists (`touch` it to make this backend unready, remove it to make
it ready again). Standard library only (runs on the lab image's python3); the self-signed
certificate is made with openssl at the first start.
"""

from __future__ import annotations

import argparse
import http.server
import os
import socket
import ssl
import subprocess
from pathlib import Path

HOST = socket.gethostname()


class Handler(http.server.BaseHTTPRequestHandler):
    unready_flag = Path("/run/ufcctl-apiserver-standin/unready")

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        unready = self.path.startswith("/readyz") and self.unready_flag.exists()
        body = f"{'unready' if unready else 'ok'} {HOST}\n".encode()
        self.send_response(503 if unready else 200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Standin-Backend", HOST)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # health checks every 2 s from 3 haproxies would flood the journal


def ensure_certificate(directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "standin.crt", directory / "standin.key"
    if not cert.exists() or not key.exists():
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                f"/CN={HOST} apiserver test double",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
        os.chmod(key, 0o600)
    return cert, key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--state-dir", type=Path, default=Path("/run/ufcctl-apiserver-standin"))
    args = parser.parse_args()
    Handler.unready_flag = args.state_dir / "unready"
    cert, key = ensure_certificate(args.state_dir)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("0.0.0.0", args.port), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
