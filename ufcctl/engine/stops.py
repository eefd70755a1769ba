"""SIGINT and SIGTERM while Ansible runs: the first asks for a stop, the second for an immediate one.

While a `stopping()` block runs on the main thread, both signals are caught: the first is
recorded and the code running Ansible acts on it at a safe point (engine/runner.py stops the run's
processes, rollout/executor.py stops admitting and cancels its chunks), waits for every process
of the run to end, records what happened, and only then raises `Stopped` when the outermost block
ends (the CLI exits 128 + signal number). A second signal makes the processes be killed at once
(SIGKILL), still waited for and recorded. A third gets the default action: ufcctl dies at once.

Only over Python's default dispositions (SIGINT raising KeyboardInterrupt, SIGTERM ending the
process): never over SIG_IGN (a background job started with nohup) nor an embedding program's
handler. Handlers can be set on the main thread only; elsewhere a block only shares the state.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ufcctl.errors import Stopped

SIGNALS: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)
_DEFAULTS: dict[int, Any] = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


@dataclass
class _State:
    depth: int = 0
    signum: int | None = None
    count: int = 0
    what: str = ""
    installed: dict[int, Any] = field(default_factory=dict)  # signal -> the handler it replaced
    listeners: list[Callable[[], None]] = field(default_factory=list)


_state = _State()
_lock = threading.RLock()  # reentrant: the handler runs on the main thread, maybe inside a block


def requested() -> bool:
    """A stop was asked (a first signal arrived inside the current blocks)."""
    return _state.signum is not None


def hurry() -> bool:
    """An immediate stop was asked (a second signal)."""
    return _state.count >= 2


def _handler(signum: int, frame: FrameType | None) -> None:
    with _lock:
        _state.count += 1
        if _state.signum is None:
            _state.signum = signum
        if _state.count >= 3:  # the escape: the default action, ufcctl ends now
            for sig, previous in _state.installed.items():
                signal.signal(sig, previous)
            signal.raise_signal(signum)
            return
        listeners = list(_state.listeners)
    for listener in listeners:  # each only sets a flag and wakes its thread
        listener()


@contextmanager
def stopping(what: str = "") -> Iterator[None]:
    """Catch SIGINT/SIGTERM for the block; raise Stopped at the end of the outermost block if one came.

    `what` is the line the CLI prints after a stop (what was stopped, how to continue); the
    outermost block that gives one wins."""
    main = threading.current_thread() is threading.main_thread()
    with _lock:
        outermost = _state.depth == 0
        if outermost:
            _state.signum, _state.count, _state.what = None, 0, ""
            if main:
                for sig in SIGNALS:
                    if signal.getsignal(sig) is _DEFAULTS[sig]:
                        _state.installed[sig] = signal.signal(sig, _handler)
        _state.depth += 1
        if what and not _state.what:
            _state.what = what
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        with _lock:
            _state.depth -= 1
            signum = _state.signum if _state.depth == 0 and main else None
            if _state.depth == 0:
                for sig, previous in _state.installed.items():
                    if signal.getsignal(sig) is _handler:
                        signal.signal(sig, previous)
                _state.installed.clear()
        if signum is not None and not failed:
            raise Stopped(signum, _state.what)


@contextmanager
def listening(callback: Callable[[], None]) -> Iterator[None]:
    """Call `callback` (on the main thread, inside the signal handler) on every caught signal."""
    with _lock:
        _state.listeners.append(callback)
    try:
        yield
    finally:
        with _lock:
            _state.listeners.remove(callback)
