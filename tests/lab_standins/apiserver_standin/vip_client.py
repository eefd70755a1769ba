#!/usr/bin/env python3
"""Test client for the VIP failover test: GET https://VIP:PORT/version in a loop and log every outcome.

One line per request: `<unix time> ok <backend>` or `<unix time> fail <error>`; the backend is the
stand-in's X-Standin-Backend header, or else `sha256:` and the first 16 hex digits of the sha256 of the
serving certificate (kubeadm gives each kube-apiserver its own). New connection each
time (what matters is whether a new request gets through), one every tenth of a second. A request
fails when its connection is refused or reset, or no answer comes within --timeout: 5 s, because on a
2-core CI machine saturated by the other lanes a TLS handshake through haproxy to a Python stand-in
has taken over 1 s (the 1 s of before failed a run of 8 requests that way while every backend was
UP); a backend that is really gone refuses or resets at once. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import ssl
import time


def _certificate(conn: http.client.HTTPSConnection) -> str:
    der = conn.sock.getpeercert(binary_form=True) if conn.sock is not None else None
    return "sha256:" + hashlib.sha256(der).hexdigest()[:16] if der else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vip", required=True)
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--log", default="/tmp/ufcctl-vip-client.log")
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the stand-in's certificate is self-signed
    with open(args.log, "a", buffering=1) as log:
        while True:
            started = time.time()
            try:
                conn = http.client.HTTPSConnection(args.vip, args.port, timeout=args.timeout, context=context)
                # /version: what kube-apiserver (and the lab's API stand-in) serves without credentials
                conn.request("GET", "/version")
                certificate = _certificate(conn)  # before the response: a closing one drops conn.sock
                response = conn.getresponse()
                backend = response.getheader("X-Standin-Backend") or certificate
                conn.close()
                line = (
                    f"{started:.3f} ok {backend}"
                    if response.status == 200
                    else f"{started:.3f} fail http{response.status}"
                )
            except OSError as err:
                line = f"{started:.3f} fail {type(err).__name__}"
            log.write(line + "\n")
            time.sleep(max(0.0, args.interval - (time.time() - started)))


if __name__ == "__main__":
    main()
