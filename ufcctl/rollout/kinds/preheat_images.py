"""The preheat-images kind: `ufcctl images preheat` pulls images onto every worker before a job needs them.

Each worker (kube_node, not a control plane) pulls the images into containerd's k8s.io namespace
through its registry mirrors (playbooks/preheat-images.yml, roles/image_preheat). What is
particular to this kind: before any node starts (a new run and every resume), the registry caches
that serve at least one target node are filled (playbooks/preheat-caches.yml), so a node's pull
comes from its ToR or super pod cache and the upstream sends each image once per cache; without
caches the nodes pull from the upstream directly. No drain: a pull disturbs no pod.
Window, budget, canary, alignment, state, resume and `--retry-failed` are the engine's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.images import registries
from ufcctl.domain.images.mirrors import Upstream, caches_used, index_caches, parse_caches, parse_upstreams
from ufcctl.domain.images.preheat import ImageRef, Traffic, parse_image, traffic, upstream_for, upstream_url
from ufcctl.domain.inventory.model import KUBE_NODE, REGISTRY_CACHE, Host, Inventory
from ufcctl.domain.inventory.phases import NODE_PHASE_EXCLUDES
from ufcctl.engine.registry_client import image_size
from ufcctl.engine.runner import RunOptions, run_playbook
from ufcctl.errors import InputError, RunFailed, shown
from ufcctl.paths import playbook
from ufcctl.rollout import planning
from ufcctl.rollout.kind import NodeGuard, RolloutKind, RolloutRequest
from ufcctl.rollout.planning import PlanReport
from ufcctl.rollout.store import StateStore

log = logging.getLogger(__name__)

# The last task of roles/image_preheat: its ok/changed event means the node is done.
MARKER_TASK = "Report the node done to the rollout engine"
# Seconds one node may take (and one pull on it): a few GiB from a warm ToR cache take minutes;
# 30 min fails a node whose pull hangs on a dead mirror.
DEFAULT_NODE_TIMEOUT = 1800
CACHE_PLAYBOOK = "preheat-caches.yml"
UPSTREAMS_VAR = "registry_cache_upstreams"
MAX_CACHE_FORKS = 50
CHECK_HINT = "`ufcctl inventory check` lists every problem"


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"image_preheat_images": list(options.get("images", ())),
            "image_preheat_pull_timeout": int(options.get("node_timeout", DEFAULT_NODE_TIMEOUT))}


def _deadline(options: Mapping[str, Any]) -> float:
    return float(options.get("node_timeout", DEFAULT_NODE_TIMEOUT))


def _no_drain(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
    return None, "none (pulling an image disturbs no pod)"


def parse_images(values: Sequence[str]) -> list[ImageRef]:
    """The command's IMAGE arguments, fully qualified; InputError names the first bad one."""
    if not values:
        raise InputError("no IMAGE given: name at least one image, e.g. registry.example:5000/team/app:1.0")
    found: list[ImageRef] = []
    for value in values:
        try:
            ref = parse_image(value)
        except ValueError as err:
            raise InputError(f"image {shown(value)}: {err}") from None
        if ref not in found:
            found.append(ref)
    return found


def _upstreams(inventory: Inventory, hosts: Sequence[Host]) -> list[Upstream]:
    """registry_cache_upstreams as the hosts see it (a global var: the first host that has it)."""
    for host in list(hosts) + inventory.subset(inventory.group_hosts(REGISTRY_CACHE)):
        if UPSTREAMS_VAR in host.vars:
            found, problems = parse_upstreams(host.vars[UPSTREAMS_VAR])
            if problems:
                raise InputError(f"{inventory.path}: {problems[0]}", CHECK_HINT)
            return found
    return []


def mapped_images(inventory: Inventory, hosts: Sequence[Host], images: Sequence[str]) -> list[ImageRef]:
    """The images under the site's mirror of their registries (`ufc_image_registries`, a global var: the
    first host that has it): the names the pods run, which roles/image_preheat pulls and the caches warm."""
    mapping: dict[str, str] = {}
    for host in hosts:
        if registries.VAR in host.vars:
            mapping, problems = registries.parse(host.vars[registries.VAR])
            if problems:
                raise InputError(f"{inventory.path}: {problems[0]}", CHECK_HINT)
            break
    return [parse_image(registries.mapped(i, mapping)) for i in images]


@dataclass(frozen=True)
class CachePlan:
    caches: list[str]  # registry_cache hosts serving at least one target node, super pod caches first
    all_caches: int
    warm: list[dict[str, Any]]  # image_preheat_cache_images
    upstreams: list[Upstream]
    waves: tuple[list[str], ...] = ()  # warmed one after the other: the super pod caches, then the ToR caches
    upstream_fills: int = 0  # caches that fetch from the upstream: super pod caches, ToR caches without one


def cache_plan(inventory: Inventory, targets: Sequence[Host], images: Sequence[ImageRef]) -> CachePlan:
    cache_names = inventory.group_hosts(REGISTRY_CACHE)
    known = _upstreams(inventory, targets)
    caches, problems = parse_caches({REGISTRY_CACHE: cache_names},
                                    {n: inventory.hosts[n].vars for n in cache_names})
    if problems:
        raise InputError(f"{inventory.path}: {problems[0]}", CHECK_HINT)
    used = caches_used((h.vars for h in targets), index_caches(caches))
    # a ToR cache fills from its super pod's cache (roles/registry_cache): that one is warmed first,
    # so the upstream sends each blob once per super pod cache and the ToR caches copy it nearby
    waves = tuple(w for w in ([c.host for c in used if c.tier == "super_pod"],
                              [c.host for c in used if c.tier != "super_pod"]) if w)
    serving = [h for wave in waves for h in wave]
    index = index_caches(caches)
    fillers: set[str] = {c.host for c in used if c.tier == "super_pod"}
    for cache in (c for c in used if c.tier != "super_pod"):
        hv = inventory.hosts[cache.host].vars
        pod = hv.get("registry_cache_super_pod", hv.get("npu_super_pod_id"))
        parents = index.by_domain.get(("super_pod", str(pod)), ()) if pod not in (None, "") else ()
        fillers.add(parents[0].host if parents else cache.host)
    warm = []
    for image in images:
        upstream = upstream_for(image, known)
        if upstream is not None:
            warm.append({"image": str(image), "repository": image.repository, "reference": image.reference,
                         "port": upstream.port})
    return CachePlan(serving, len(cache_names), warm, known, waves, len(fillers))


def _targets(request: RolloutRequest, inventory: Inventory) -> list[Host]:
    return planning.targets(KIND, inventory, request)  # the engine's target rule (group, excludes, --limit)


def prepare_caches(request: RolloutRequest, inventory: Inventory) -> str:
    """Fill the registry caches serving the targets (playbooks/preheat-caches.yml): once per run and
    on every resume, before any node pulls."""
    targets = _targets(request, inventory)
    images = mapped_images(inventory, targets, request.options.get("images", ()))
    plan = cache_plan(inventory, targets, images)
    if plan.all_caches == 0:
        return f"no registry caches (group {REGISTRY_CACHE} is empty): nodes pull from upstream directly"
    if not plan.warm:
        listed = ", ".join(u.registry for u in plan.upstreams) or "none"
        return f"no image's registry has a cache ({UPSTREAMS_VAR} lists {listed}): nodes pull from upstream"
    if not plan.caches:
        return f"none of the {plan.all_caches} registry caches serves a target node: nodes pull from upstream"
    results = [run_playbook(playbook(CACHE_PLAYBOOK), inventory.subset(wave),
                            RunOptions(forks=min(len(wave), MAX_CACHE_FORKS), check=request.dry_run,
                                       extravars={"image_preheat_cache_images": plan.warm}))
               for wave in plan.waves]
    failed = {h: r for r, wave in zip(results, plan.waves, strict=True) for h in r.failed_of(wave)}
    bad = list(failed)
    seconds = sum(r.seconds for r in results)
    if bad:
        why = failed[bad[0]].why(bad[0])
        names = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        if len(bad) == len(plan.caches):  # the upstream (or every cache) is down: no node could pull
            raise RunFailed(f"warming registry cache(s) {names}: {failed[bad[0]].outcome}: {why}",
                            f"fix the caches or their upstream, then `ufcctl images preheat` again; details "
                            f"in {failed[bad[0]].run_dir}/failures.jsonl; no worker was touched")
        # a dead ToR cache must not hold back a whole preheat: its nodes' hosts.toml lists the next
        # mirror (the super pod cache, then the upstream), which containerd tries in turn
        log.warning("registry cache(s) %s not warmed: %s", names, why)
    mode = "would warm (check mode)" if request.dry_run else "warmed"
    line = (f"{mode} {len(plan.caches) - len(bad)} of {len(plan.caches)} registry cache(s) with "
            f"{len(plan.warm)} image(s) ({seconds:.0f} s, {len(results)} wave(s): super pod caches first; "
            f"per-blob results in {', '.join(str(r.run_dir) for r in results)})")
    if bad:
        line += f"; NOT warmed: {names} ({why}): their nodes fall back to their next mirror"
    return line


KIND = RolloutKind(
    name="preheat-images",
    playbook="preheat-images.yml",
    marker_task=MARKER_TASK,
    group=KUBE_NODE,
    options=("images", "node_timeout"),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=_no_drain,
    exclude_groups=NODE_PHASE_EXCLUDES,
    prepare=prepare_caches,
)


def preheat_options(*, images: Sequence[str], node_timeout: int = DEFAULT_NODE_TIMEOUT) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options); InputError names the first bad image."""
    return {"images": [str(r) for r in parse_images(images)], "node_timeout": node_timeout}


@dataclass(frozen=True)
class DryRun:
    report: PlanReport
    caches: CachePlan
    traffic: list[Traffic]
    why_unknown: dict[str, str]


# The dry run's registry reads together: one deadline for all of them (a silent registry costs its
# per-request 5 s once, never once per image), and a registry that did not answer is not asked again.
READ_DEADLINE = 20.0
PER_READ = 5.0
_SILENT = ("no answer within", "not all of the answer within", "connection refused")


def dry_run(request: RolloutRequest, store: StateStore, inventory: Inventory, *,
            node_seconds: float | None = None, size_of: Any = image_size,
            clock: Any = time.monotonic) -> DryRun:
    """The plan and the expected upstream traffic; reads the inventory and the upstreams' manifests,
    never contacts a node or a cache."""
    report = planning.plan(KIND, request, store, inventory, node_seconds=node_seconds)
    targets = _targets(request, inventory)
    images = mapped_images(inventory, targets, request.options["images"])
    caches = cache_plan(inventory, targets, images)
    rows, unknown = [], {}
    deadline = clock() + READ_DEADLINE
    silent: dict[str, str] = {}  # registry URL -> why it is not asked again
    for image in images:
        upstream = upstream_for(image, caches.upstreams)
        base = upstream_url(image, upstream)
        left = deadline - clock()
        if base in silent:
            size, why = None, f"not asked: {silent[base]}"
        elif left <= 0:
            size, why = None, f"not asked: the dry run's {READ_DEADLINE:g} s for registry reads are spent"
        else:
            size, why = size_of(base, image.repository, image.reference, timeout=min(PER_READ, left))
            if size is None and any(mark in why for mark in _SILENT):
                silent[base] = f"{base} did not answer earlier in this run"
        if size is None:
            unknown[str(image)] = why
        rows.append(traffic(str(image), size, upstream is not None, caches.upstream_fills, len(targets)))
    return DryRun(report, caches, rows, unknown)

