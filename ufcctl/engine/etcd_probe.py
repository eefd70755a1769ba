"""Ask many etcd members at once, each within its own time budget (`ufcctl etcd status`).

Every endpoint gets a daemon thread and `timeout` seconds for all its calls (status, member list,
alarms, last-defrag records); the caller has every answer within timeout + GRACE seconds whatever
the network does: a black-holed address, a listener that never speaks TLS, a resolver that hangs
(getaddrinfo has no timeout, which is why the threads are daemons and the wait has a deadline).
"""

from __future__ import annotations

import queue
import ssl
import threading
import time
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
