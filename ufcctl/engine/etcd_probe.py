"""Ask many etcd members at once, each within its own time budget (`ufcctl etcd status`).

Every endpoint gets a daemon thread and `timeout` seconds for all its calls (status, member list,
alarms, last-defrag records); the caller has every answer within timeout + GRACE seconds whatever
the network does: a black-holed address, a listener that never speaks TLS, a resolver that hangs
(getaddrinfo has no timeout, which is why the threads are daemons and the wait has a deadline).
"""

from __future__ import annotations

import queue
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import replace

from ufcctl.domain.etcd.defrag import LastDefrag, last_prefix
from ufcctl.domain.etcd.snapshot import EndpointProbe
from ufcctl.engine.etcd_client import EtcdError, Gateway, TlsFiles

# Seconds the caller waits beyond `timeout` for a thread that is past its budget but not yet out of
# a socket call; after that the endpoint is reported as not answering and the thread is abandoned.
GRACE = 1.0

Target = tuple[str, str]  # (cluster, endpoint)


class _Late(Exception):
    pass


def _reason(err: BaseException, timeout: float) -> str:
    if isinstance(err, _Late) or isinstance(err.__cause__, TimeoutError):
        return f"no answer within {timeout:g} s"
    return err.message if isinstance(err, EtcdError) else f"{type(err).__name__}: {err}"


def probe_endpoint(cluster: str, endpoint: str, tls: TlsFiles | None, timeout: float) -> EndpointProbe:
    """Status, member list, alarms and last-defrag records of one endpoint, all within `timeout` s."""
    started = time.monotonic()
    deadline = started + timeout
    probe = EndpointProbe(cluster, endpoint)
    try:
        gateway = Gateway(endpoint, tls, timeout)

        def budget() -> Gateway:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Late
            gateway.timeout = remaining
            return gateway

        # each answer is kept as it comes, so a member that stalls half-way still shows its status
        probe = replace(probe, status=budget().status())
        probe = replace(probe, members=tuple(budget().members()))
        probe = replace(probe, alarms=tuple(budget().alarms()))
        prefix = last_prefix(cluster)
        records = {k[len(prefix):]: LastDefrag.from_json(v) for k, v in budget().get_prefix(prefix).items()}
        probe = replace(probe, last={name: r for name, r in records.items() if r is not None})
    except (EtcdError, _Late, OSError, ssl.SSLError, ValueError) as err:
        probe = replace(probe, error=_reason(err, timeout))
    return replace(probe, seconds=time.monotonic() - started)


def probe_all(
    targets: Sequence[Target],
    tls: TlsFiles | None,
    timeout: float,
    on_answer: Callable[[EndpointProbe], None] | None = None,
) -> dict[Target, EndpointProbe]:
    """Probe every target at once; returns within timeout + GRACE s, one probe per target."""
    answers: queue.Queue[EndpointProbe] = queue.Queue()
    for cluster, endpoint in targets:
        threading.Thread(
            target=lambda c=cluster, e=endpoint: answers.put(probe_endpoint(c, e, tls, timeout)),
            name=f"etcd-probe {cluster} {endpoint}",
            daemon=True,
        ).start()
    deadline = time.monotonic() + timeout + GRACE
    found: dict[Target, EndpointProbe] = {}
    while len(found) < len(set(targets)):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            probe = answers.get(timeout=remaining)
        except queue.Empty:
            break
        found[(probe.cluster, probe.endpoint)] = probe
        if on_answer:
            on_answer(probe)
    for target in targets:
        if target not in found:
            found[target] = EndpointProbe(*target, error=f"no answer within {timeout:g} s", seconds=timeout)
            if on_answer:
                on_answer(found[target])
    return found


def _listens(endpoint: str, timeout: float) -> bool:
    """True when something accepts a TCP connection at `endpoint`'s host and port (etcd or not)."""
    parts = urllib.parse.urlsplit(endpoint)
    try:
        port = parts.port
    except ValueError:
        return False
    if not parts.hostname or port is None:
        return False
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return True
    except OSError:  # refused, unreachable, no such name, or no answer in time: nothing listens there
        return False


def answering(targets: Sequence[Target], tls: TlsFiles | None, timeout: float) -> dict[Target, str]:
    """The targets where anything answers, each with what it answered: a TCP connection accepted counts,
    whatever TLS or etcd then say (an expired certificate, another CA, a damaged local CA), because a
    member that fails ufcctl's handshake may still be serving its clients. Returns within timeout + GRACE
    s; a target that did not answer in that time is left out."""
    answers: queue.Queue[tuple[Target, str | None]] = queue.Queue()
    listening: dict[Target, str] = {}  # a TCP answer is kept even if the probe after it runs out of time

    def ask(target: Target) -> None:
        if not _listens(target[1], timeout):
            answers.put((target, None))
            return
        listening[target] = "accepts TCP connections but did not finish a TLS exchange in time"
        probe = probe_endpoint(target[0], target[1], tls, timeout)
        answers.put((target, probe.error or "answers its status"))

    for target in targets:
        threading.Thread(target=ask, args=(target,), name=f"etcd-listen {target[1]}", daemon=True).start()
    deadline = time.monotonic() + timeout * 2 + GRACE
    found: dict[Target, str] = {}
    for _ in range(len(targets)):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            target, reason = answers.get(timeout=remaining)
        except queue.Empty:
            break
        if reason is not None:
            found[target] = reason
    return {**dict(listening), **found}
