"""CPU priority of the full lane's parallel workers (scripts/test.sh: pytest-xdist, `--dist loadgroup`).

The shared lab's modules (the `stack` group, tests/integration/conftest.py) are the run's critical path:
they run one after the other on one worker from the first minute to the last, while the other workers
finish the unit tests, the molecule scenarios and the other labs well before the end. The machine has
fewer cores than busy processes, and the kernel shares CPU time evenly among them, so the stack's
ansible runs waited behind unit tests and linters while the end of the run left cores idle.

So a worker runs every test outside the stack at nice SIDE_NICE (what it starts, ansible, molecule,
podman, inherits it) and the stack's tests at 0: the other lanes take the CPU time the stack leaves.
It applies only where it can be undone (root: lowering a nice value needs CAP_SYS_NICE) and only with
more than one worker; a run in one process (UFC_TEST_WORKERS=0) is untouched. Processes inside
containers are not affected: each container is its own CPU cgroup. Wired in by tests/conftest.py.
"""

from __future__ import annotations

import os

import pytest

# nice 10: a weight of 110 against 1024 for a nice-0 process (the kernel's sched_prio_to_weight)
SIDE_NICE = 10
STACK_GROUP = "stack"


def wanted_nice(item: pytest.Item, workers: int, euid: int) -> int | None:
    """The nice value a worker should run `item` at; None: leave the process alone."""
    if workers < 2 or euid != 0:
        return None
    marker = item.get_closest_marker("xdist_group")
    in_stack = marker is not None and marker.args[:1] == (STACK_GROUP,)
    return 0 if in_stack else SIDE_NICE


def apply(item: pytest.Item) -> None:
    want = wanted_nice(item, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0), os.geteuid())
    if want is not None and os.getpriority(os.PRIO_PROCESS, 0) != want:
        os.setpriority(os.PRIO_PROCESS, 0, want)
