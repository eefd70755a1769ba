"""The registry caches' rules about the inventory (`ufcctl inventory check`,
ufcctl/domain/inventory_check.py): cache specs, upstreams and scheme, over the mirror rules in mirrors.py.

They live with the images package, over the inventory's model: the inventory package never imports
images (tests/unit/test_import_graph.py, no two-way tie between domain packages).
"""

from __future__ import annotations

from ufcctl.domain.images import mirrors
from ufcctl.domain.inventory.model import REGISTRY_CACHE, Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.validate import group_file, truthy


def check_registry_caches(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Cache specs, upstreams and scheme (ufcctl/domain/images/mirrors.py), before the role or any
    node's mirror list meets them."""
    hosts = inv.group_hosts(REGISTRY_CACHE)
    if not hosts:
        return
    fix = "see roles/registry_cache/README.md (variables and tiers)"
    _, found = mirrors.parse_caches({REGISTRY_CACHE: hosts}, {h: inv.hosts[h].vars for h in hosts})
    for text in found:  # "host NAME: what"
        subject, _, message = text.partition(": ")
        host = subject[len("host "):]
        problems.append(Problem(inv.var_origin(host, "registry_cache_tier"), subject, message, fix))
    first = inv.hosts[hosts[0]].vars
    upstreams, found = mirrors.parse_upstreams(first.get("registry_cache_upstreams"))
    if not upstreams and not found:
        found = ["registry_cache_upstreams is not set: list at least one {name, registry, url, port}"]
    found += mirrors.scheme_problems(first.get("registry_cache_scheme", "https"),
                                     truthy(first.get("registry_cache_insecure")))
    for text in found:
        problems.append(Problem(group_file(inv, REGISTRY_CACHE), f"group {REGISTRY_CACHE}", text, fix))
