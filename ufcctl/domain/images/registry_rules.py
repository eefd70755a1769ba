"""`ufc_image_registries` checked before any add-on is rendered (`ufcctl inventory check`; issue 44, D13):
the old single prefix `ufc_image_registry` is refused naming what replaced it, a malformed mapping is
refused, and a mirror that no registry cache serves is a warning when the inventory has caches."""

from __future__ import annotations

from ufcctl.domain.images import mirrors, registries
from ufcctl.domain.inventory.model import REGISTRY_CACHE, Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import templated

SANDBOX = "ufc_sandbox_image"
FIX = "see docs/images.md (\"Where the images come from\")"


def check_image_registries(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Each file that sets the variables is judged once (they are cluster-wide: group_vars/all)."""
    cached = _cache_registries(inv)
    seen: set[tuple[str, str]] = set()
    for name, host in inv.hosts.items():
        for var in (registries.OLD_VAR, registries.VAR):
            if var not in host.vars or (where := inv.var_origin(name, var), var) in seen:
                continue
            seen.add((where, var))
            if var == registries.OLD_VAR:
                message, fix = registries.old_prefix_problem(host.vars[var])
                problems.append(Problem(where, "", message, fix))
            elif not templated(host.vars[var]):
                _check_mapping(host.vars[var], where, cached, problems, warnings)
                _check_sandbox(inv, name, registries.parse(host.vars[var])[0], seen, warnings)


def _check_mapping(raw: object, where: str, cached: set[str] | None, problems: list[Problem],
                   warnings: list[Problem]) -> None:
    found, wrong = registries.parse(raw)
    problems += [Problem(where, "", text, FIX) for text in wrong]
    if cached is None:
        return
    for upstream, prefix in found.items():
        mirror = prefix.split("/", 1)[0]
        if mirror not in cached:
            warnings.append(Problem(
                where, "",
                f"{registries.VAR} sends {upstream}'s images to {mirror}, which no registry cache mirrors "
                "(registry_cache_upstreams): nodes pull them from it directly",
                f"add {mirror} to registry_cache_upstreams, or map {upstream} to a registry the caches "
                "mirror"))


def _check_sandbox(inv: Inventory, name: str, found: dict[str, str], seen: set[tuple[str, str]],
                   warnings: list[Problem]) -> None:
    """`ufc_sandbox_image` (the sample sets it) wins over the mapping: named when it still names an
    upstream the mapping moves."""
    sandbox = inv.hosts[name].vars.get(SANDBOX)
    if not isinstance(sandbox, str) or templated(sandbox):
        return
    upstream, _ = registries.split(sandbox)
    where = inv.var_origin(name, SANDBOX)
    if upstream in found and (where, SANDBOX) not in seen:
        seen.add((where, SANDBOX))
        warnings.append(Problem(where, "", f"{SANDBOX} {sandbox} is pulled from {upstream}, which "
                                f"{registries.VAR} maps to {found[upstream]}",
                                f"set it to {registries.mapped(sandbox, found)}, or delete it (the default "
                                "follows the mapping)"))


def _cache_registries(inv: Inventory) -> set[str] | None:
    """The registries the caches mirror; None without caches (or a list that does not parse:
    check_registry_caches reports it)."""
    hosts = inv.group_hosts(REGISTRY_CACHE)
    if not hosts:
        return None
    upstreams, problems = mirrors.parse_upstreams(inv.hosts[hosts[0]].vars.get("registry_cache_upstreams"))
    return None if problems else {u.registry for u in upstreams}


RULES = (check_image_registries,)
