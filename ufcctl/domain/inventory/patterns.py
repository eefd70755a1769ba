"""Ansible host patterns (`--limit`), resolved by ufcctl so Ansible only ever sees the chosen hosts."""

from __future__ import annotations

import fnmatch
import re

from ufcctl.domain.inventory.model import Inventory
from ufcctl.errors import shown


class PatternError(ValueError):
    """A pattern that matches nothing or cannot be parsed."""


def _terms(pattern: str) -> list[str]:
    # Ansible splits on commas, and on colons when no comma is present (colons are legacy but
    # common: `kube_node:!npu_node`). IPv6 addresses are not used as host names here.
    parts = pattern.split(",") if "," in pattern else pattern.split(":")
    return [p.strip() for p in parts if p.strip()]


def _match(inventory: Inventory, term: str) -> list[str]:
    if term in inventory.groups or term == "all":
        return inventory.group_hosts(term) if term != "all" else list(inventory.hosts)
    if term in inventory.hosts:
        return [term]
    if term.startswith("~"):
        try:
            regex = re.compile(term[1:])
        except re.error as err:
            raise PatternError(f"bad regular expression in pattern {shown(term)}: {err}") from err
        names = [h for h in inventory.hosts if regex.match(h)]
        groups = [g for g in inventory.groups if regex.match(g)]
    elif any(c in term for c in "*?["):
        names = fnmatch.filter(list(inventory.hosts), term)
        groups = fnmatch.filter(list(inventory.groups), term)
    else:
        return []
    seen = dict.fromkeys(names)
    for group in groups:
        seen.update(dict.fromkeys(inventory.group_hosts(group)))
    return list(seen)


def select_hosts(inventory: Inventory, pattern: str | None) -> list[str]:
    """Hosts matching an Ansible pattern (union, `&` intersection, `!` exclusion), in inventory order.

    None means every host; an empty pattern is an error, not a wildcard (an unset shell variable
    in `--limit "$NODES"` must not widen a run to the whole fleet).
    """
    if pattern is None:
        return list(inventory.hosts)
    if not _terms(pattern):
        raise PatternError("the pattern is empty; leave --limit out (or write `all`) to select every host")
    included: dict[str, None] = {}
    intersections: list[set[str]] = []
    excluded: set[str] = set()
    for term in _terms(pattern):
        # A term that matches nothing is a typo whatever its operator: `!npu0001` that excludes
        # nothing would run on the host meant to be spared, `&tor-9` that keeps nothing hides why.
        matched = _match(inventory, term[1:] if term[:1] in ("!", "&") else term)
        if not matched:
            raise PatternError(f"pattern term {shown(term)} matches no host or group")
        if term.startswith("!"):
            excluded.update(matched)
        elif term.startswith("&"):
            intersections.append(set(matched))
        else:
            included.update(dict.fromkeys(matched))
    if not included and (excluded or intersections):
        included = dict.fromkeys(inventory.hosts)
    order = {h: i for i, h in enumerate(inventory.hosts)}
    result = [h for h in included if h not in excluded and all(h in s for s in intersections)]
    return sorted(result, key=order.__getitem__)
