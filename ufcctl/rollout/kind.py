"""A kind of rollout: what one node's work is (playbook, marker task, extra vars, gate hooks).

Everything else (plan, start order, window, budget, canary, topology alignment, state, resume,
--retry-failed, the node lock) is the engine's and the same for every kind (`runs.py`,
`executor.py`). Every kind this ufcctl ships is listed once, in `catalog.py`; a stored run names its
kind, so `ufcctl resume` finds the kind again from the run alone.

A kind's playbook must start its play with the rollout gate and run `strategy: host_pinned`
(playbooks/tasks/rollout-gate.yml says how; tests/unit/rollout/test_kinds.py checks every
registered kind), and its role must end with the marker task: that task's ok/changed event is
what marks a node done.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ufcctl.domain.inventory.model import Host, Inventory
from ufcctl.domain.rollout.order import LONGEST
from ufcctl.errors import shown

# Nodes per long-lived ansible-playbook process. 2,000 (8 processes for 16,000 nodes) because:
# - a process start costs ~2.3 s of controller CPU (docs/reference/scale.md §1.2): ~1 ms per node at 2,000;
# - the host_pinned loop walks the play's host list on every pass: measured with 10 hosts waiting at
#   the gate and internal_poll_interval 0.01, an idle process took 2.9 % of a core with 200 hosts and
#   8.4 % with 2,000, so much larger chunks make every waiting pass dearer;
# - one broken process (killed, out of memory) costs at most one chunk's nodes in flight.
DEFAULT_CHUNK = 2000


class NodeGuard(Protocol):
    """Work around each node outside Ansible (cordon/drain); prepare returns a skip reason or None.
    at_target names the hosts that need no preparation at all (read once per run, before the first)."""

    def at_target(self, hosts: Sequence[Host]) -> set[str]: ...

    def prepare(self, host: Host) -> str | None: ...

    def release(self, host: Host, ok: bool) -> None: ...


@dataclass(frozen=True)
class RolloutRequest:
    """A rollout of any kind: targets, window, budget, canary, alignment, and the kind's own options."""

    inventory_dir: Path
    batch: int
    window: int = 1
    max_fail: float = 0.0
    canary: int = 0
    align: str = "none"
    limit: str | None = None  # Ansible pattern inside the kind's group
    dry_run: bool = False  # Ansible check mode: report what would change, touch nothing
    force: bool = False  # drain nodes even when NPU pods run on them (only with a kubeconfig)
    forks: int | None = None  # per Ansible process; default: the window's capacity plus a few
    accelerate: str | None = None  # "mitogen" (opt-in)
    order: str = LONGEST  # start order: longest expected first, or "plan"
    chunk_size: int = DEFAULT_CHUNK
    rate: float | None = None  # nodes admitted per second at most (join pacing); None: no ceiling
    options: Mapping[str, Any] = field(default_factory=dict)  # the kind's own settings

    def params(self) -> dict[str, Any]:
        """What the store keeps: flat, the kind's options beside the common settings."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "options"}
        data["inventory_dir"] = str(self.inventory_dir)
        return {**data, **dict(self.options)}

    @classmethod
    def from_params(cls, data: Mapping[str, Any], kind: RolloutKind) -> RolloutRequest:
        """The request a stored run was made with (settings added since take their defaults). ValueError
        naming the setting when a stored value is missing or not of its field's type, or a kind's option
        is no JSON scalar or list of them (a hand-edited state.db: never a run driven by it)."""
        hints = typing.get_type_hints(cls)
        common = {f.name for f in dataclasses.fields(cls)} - {"options"}
        values = {k: v for k, v in data.items() if k in common}
        if "inventory_dir" not in values:
            raise ValueError("setting inventory_dir is missing")
        for name, value in values.items():
            if not _fits(value, hints[name]):
                raise ValueError(f"setting {name} holds {type(value).__name__} {shown(value)}")
        values["inventory_dir"] = Path(values["inventory_dir"])
        options = {k: data[k] for k in kind.options if k in data}
        for name, value in options.items():
            if not _plain(value) and not (isinstance(value, list) and all(_plain(v) for v in value)):
                raise ValueError(f"option {name} holds {type(value).__name__} {shown(value)}")
        return cls(**values, options=options)


_STORED_AS: dict[Any, Any] = {Path: str, float: (int, float)}


def _fits(value: Any, hint: Any) -> bool:
    """`value` (read from JSON) is of the annotated type: a Path is stored as text, an int is a float."""
    for wanted in typing.get_args(hint) or (hint,):
        if wanted is type(None):
            if value is None:
                return True
        elif isinstance(value, bool) or wanted is bool:
            if isinstance(value, bool) and wanted is bool:
                return True
        elif isinstance(value, _STORED_AS.get(wanted, wanted)):
            return True
    return False


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def no_extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {}


def no_deadline(options: Mapping[str, Any]) -> float | None:
    return None


GuardFactory = Callable[[RolloutRequest], tuple[NodeGuard | None, str]]


def no_guard(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
    """Nothing around each node (a kind that drains names its hooks itself: drain.drain_guard)."""
    return None, "none"


@dataclass(frozen=True)
class RolloutKind:
    name: str  # the command and the stored run's kind, e.g. "upgrade-drivers"
    playbook: str  # a file under playbooks/
    marker_task: str  # the last task of the node's work: its ok/changed event means done
    group: str  # the inventory group whose hosts are the targets
    options: tuple[str, ...] = ()  # names of the kind's own settings (RolloutRequest.options)
    extravars: Callable[[Mapping[str, Any]], dict[str, Any]] = no_extravars
    # seconds after which a node with no result is failed as hung (None: never)
    node_deadline: Callable[[Mapping[str, Any]], float | None] = no_deadline
    hooks: GuardFactory = no_guard  # prepare/release around each node, and the report's line
    # hosts of `group` that are not targets (e.g. control planes that are also kube_node)
    exclude_groups: tuple[str, ...] = ()
    # groups whose hosts go into every chunk's inventory as context, never run on: what the node's
    # work delegates to or reads (`groups[...]`, `hostvars`): the first control plane for kubectl,
    # the NFS server's existence for the NFS client, the monitoring hosts for the node exporter
    context_groups: tuple[str, ...] = ()
    # extra vars computed once per run from the whole inventory, so no node's templating scans the
    # fleet (e.g. the registry cache index: seconds per node when 2,000 cache hosts are read instead)
    inventory_extravars: Callable[[Inventory], dict[str, Any]] | None = None
    # run once before any node starts (a new run and every resume), e.g. a join token; returns the
    # line the report shows for it. Raises InputError/RunFailed to stop before any node is touched.
    prepare: Callable[[RolloutRequest, Inventory], str] | None = None
    # a new run first checks that the running apiservers run the inventory's Kubernetes version
    # (app/upgrade_plan.refuse_version_change, run by app/fleet.start): the kind installs kubelets
    version_guard: bool = False


class KindRegistry:
    """Kinds by name; a second kind under a taken name is refused."""

    def __init__(self, kinds: Iterable[RolloutKind] = ()) -> None:
        self._kinds: dict[str, RolloutKind] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: RolloutKind) -> RolloutKind:
        if kind.name in self._kinds:
            raise ValueError(f"a rollout kind named {kind.name!r} is already registered")
        self._kinds[kind.name] = kind
        return kind

    def get(self, name: str) -> RolloutKind | None:
        return self._kinds.get(name)

    def names(self) -> list[str]:
        return sorted(self._kinds)

    def __iter__(self) -> Iterator[RolloutKind]:
        return iter(list(self._kinds.values()))

