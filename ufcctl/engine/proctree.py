"""The processes of one Ansible run, wherever they went, and stopping every one of them.

ansible-runner starts ansible-playbook on a pty (pexpect, whose child calls setsid), so the
playbook runs in its own session and process group. That group is not the whole run: ansible-core
2.19 workers call setsid() themselves (ansible/executor/process/worker.py, `_detach`) and the ssh
connection plugin starts ssh with start_new_session=True (ansible/plugins/connection/ssh.py), so
ansible-runner's own cancel, a SIGKILL to the playbook's group (Runner.handle_termination), leaves
every worker and ssh running, now children of init. What every process of the run keeps is its
environment: the run is started with `UFC_ANSIBLE_RUN=<token>` and its processes are found by that
entry in /proc/<pid>/environ, whoever their parent is by then. ssh master connections the run
opened (ControlPersist) carry it too and are closed with the run; the next run opens new ones.

Linux only (/proc): elsewhere no process is found and only ansible-runner's own cancel applies.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = "UFC_ANSIBLE_RUN"
# SIGTERM first: ansible-playbook forwards it to its workers, each worker signals its own group and
# exits (worker.py `_term`), ssh closes its session. 10 s is ample for that on a busy controller; a
# process still there is stuck (an ssh in uninterruptible I/O) and gets SIGKILL. Kept short because
# a CI cancel or a service stop waits for ufcctl: Kubernetes gives 30 s by default, GitHub Actions
# follows its SIGINT with SIGTERM after 7.5 s (a second signal here: SIGKILL at once).
GRACE_SECONDS = 10.0
# After SIGKILL a process goes at once unless the kernel holds it (D state); waiting longer would
# only keep the node lock for a process that no longer runs anything.
KILL_WAIT_SECONDS = 10.0
POLL_SECONDS = 0.1
PROC = Path("/proc")


def token(run_id: str) -> str:
    """The marker value of one Ansible run started by this ufcctl process (a resume gets another)."""
    return f"{os.getpid()}-{run_id}"


def marker_env(value: str) -> dict[str, str]:
    return {MARKER: value}


def members(value: str) -> list[int]:
    """The live processes carrying `UFC_ANSIBLE_RUN=value` (a zombie's environ reads empty)."""
    needle = f"{MARKER}={value}".encode()
    me = os.getpid()
    found = []
    try:
        entries = list(os.scandir(PROC))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (PROC / entry.name / "environ").read_bytes()
        except OSError:  # gone meanwhile, or another user's process
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _send(pid: int, signum: int) -> None:
    """To the process and to its group (a worker's or ssh's own), never to ufcctl's own group."""
    try:
        group = os.getpgid(pid)
        if group != os.getpgrp():
            os.killpg(group, signum)
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop(value: str, *, hurry: Callable[[], bool] = lambda: False, signum: int = signal.SIGTERM,
         grace: float | None = None) -> bool:
    """Signal every process of the run, wait for them to end, SIGKILL what is left after `grace`
    seconds (at once when `hurry()` turns true). Returns whether none is left."""
    grace = GRACE_SECONDS if grace is None else grace
    deadline = time.monotonic() + grace
    signalled: set[int] = set()
    while pids := members(value):
        if hurry() or time.monotonic() >= deadline:
            break
        for pid in pids:
            if pid not in signalled:  # once each: a second SIGTERM would cut Ansible's own cleanup short
                _send(pid, signum)
                signalled.add(pid)
        time.sleep(POLL_SECONDS)
    else:
        return True
    log.warning("ansible run %s: %d process(es) still there, sending SIGKILL", value, len(pids))
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while pids := members(value):
        if time.monotonic() >= deadline:
            log.error("ansible run %s: processes %s survived SIGKILL", value, pids)
            return False
        for pid in pids:
            _send(pid, signal.SIGKILL)
        time.sleep(POLL_SECONDS)
    return True
