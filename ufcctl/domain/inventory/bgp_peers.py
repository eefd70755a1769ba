"""Calico's BGP peers in `tor` mode (roles/cni), checked before any host is touched (issue 44, D14).

`tor` mode turns the node-to-node mesh off: a node reaches other nodes' pods only through a BGP peer.
roles/cni renders one BGPPeer per ToR id of the kube_node hosts (selecting `<tor label> == '<id>'`)
and one per `cni_calico_extra_peers` entry. So (a) every kube_node host's npu_tor_id needs an entry in
`cni_calico_tor_peers` (the role would skip that ToR's peer), and (b) every Kubernetes node without a
ToR label - every control plane, any worker without npu_tor_id - needs an extra peer whose
`node_selector` selects it, judged against the labels ufcctl gives it (domain/manifests/preapply.py).

Selectors are evaluated in a small subset of Calico's syntax (SUPPORTED); another form cannot be
judged: it is refused where a node would be left without a peer, else a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ufcctl.domain.inventory.model import CONTROL_PLANE, KUBE_NODE, NPU_NODE, Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import templated
from ufcctl.domain.manifests.preapply import planned_nodes
from ufcctl.errors import shown

MODE, TOR_PEERS, EXTRA_PEERS, TOR_LABEL = ("cni_calico_bgp_peering", "cni_calico_tor_peers",
                                           "cni_calico_extra_peers", "cni_calico_tor_label")
DEFAULT_TOR_LABEL = "npu-tor-id"  # roles/cni/defaults/main.yml
SUPPORTED = "all(), has(label), label == 'v', label != 'v' or label in {'a', 'b'}, joined by &&"
README = "roles/cni/README.md"

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_QUOTED = r"'[^']*'|\"[^\"]*\""
_TERM = re.compile(rf"\s*(?:(?P<all>all\(\))|has\((?P<has>{_KEY})\)"
                   rf"|(?P<key>{_KEY})\s*(?:(?P<op>==|!=)\s*(?P<value>{_QUOTED})"
                   rf"|in\s*\{{(?P<set>\s*(?:{_QUOTED})(?:\s*,\s*(?:{_QUOTED}))*)\s*\}}))\s*")
_IN_VALUE = re.compile(_QUOTED)

Term = tuple[str, str, frozenset[str]]  # (operator, label, values): ("all", "", {}), ("has", k, {}), ...


def parse_selector(text: Any) -> tuple[Term, ...] | None:
    """The selector's terms (all must hold), or None when it is not one of the SUPPORTED forms."""
    if not isinstance(text, str) or not text.strip():
        return None
    terms: list[Term] = []
    for part in text.split("&&"):
        m = _TERM.fullmatch(part)
        if m is None:
            return None
        if m["all"]:
            terms.append(("all", "", frozenset()))
        elif m["has"]:
            terms.append(("has", m["has"], frozenset()))
        elif m["op"]:
            terms.append((m["op"], m["key"], frozenset({m["value"][1:-1]})))
        else:
            terms.append(("in", m["key"], frozenset(v[1:-1] for v in _IN_VALUE.findall(m["set"]))))
    return tuple(terms)


def selects(terms: Sequence[Term], labels: Mapping[str, str]) -> bool:
    """Whether the node with `labels` is selected. Every term but all() needs its label: Calico's selector
    documentation says `k != 'v'` matches a resource with label k and another value; whether its code
    also matches a node without k was not checked, so a node without it counts as not covered (a
    refusal the operator can answer with has(), never an unreachable node passed as peered)."""
    for op, key, values in terms:
        value = labels.get(key)
        wanted = op in ("==", "in")  # the value must be among `values`; for !=, must not be
        held = op == "all" or (value is not None and (op == "has" or wanted == (value in values)))
        if not held:
            return False
    return True


def _unset(value: Any) -> bool:
    return value is None or value == ""


def check_bgp_peers(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """(a) a ToR BGP peer for every kube_node's npu_tor_id, (b) an extra peer for every other node."""
    control = inv.group_hosts(CONTROL_PLANE)
    if not control:
        return  # check_control_plane says so; the role reads these settings on the first control plane
    first = inv.hosts[control[0]].vars
    mode = first.get(MODE, "tor")
    if templated(mode) or mode == "none":
        return
    # a setting not written yet belongs beside the Calico settings that are (group_vars/all/addons.yml)
    written = [inv.var_origin(control[0], v) for v in (TOR_PEERS, EXTRA_PEERS, MODE) if v in first]
    where = {v: inv.var_origin(control[0], v) if v in first else (written or [_main_file(inv)])[0]
             for v in (MODE, TOR_PEERS, EXTRA_PEERS)}
    if mode != "tor":
        problems.append(Problem(where[MODE], MODE, f"{shown(mode)} is not tor or none",
                                "use tor (every node peers with its ToR switch) or none (no switches, "
                                f"a lab); {README}"))
        return
    _check_tor_peers(inv, first.get(TOR_PEERS, {}), where[TOR_PEERS], problems)
    _check_extra_peers(inv, control, first, where[EXTRA_PEERS], problems, warnings)


def _main_file(inv: Inventory) -> str:
    return inv.groups["all"].source if "all" in inv.groups else inv.path


def _check_tor_peers(inv: Inventory, peers: Any, where: str, problems: list[Problem]) -> None:
    if templated(peers):
        return
    if not isinstance(peers, Mapping):
        problems.append(Problem(where, TOR_PEERS, f"is {type(peers).__name__}, not a mapping",
                                "write {tor_id: {ip: ..., as_number: ...}}, one entry per npu_tor_id; "
                                + README))
        return
    known = {str(k) for k in peers}
    for name in inv.group_hosts(KUBE_NODE):
        tor = inv.hosts[name].vars.get("npu_tor_id")
        if _unset(tor) or templated(tor) or str(tor) in known:
            continue
        problems.append(Problem(where, f"host {name}",
                                f"npu_tor_id {shown(tor)} has no entry in {TOR_PEERS}: "
                                "its nodes would get no BGP peer and no route to other nodes' pods",
                                f"add {tor}: {{ip: ..., as_number: ...}} (the switch's BGP address and AS) "
                                f"under {TOR_PEERS}, or set {MODE}: none where there are no switches"))


def _check_extra_peers(inv: Inventory, control: list[str], first: Mapping[str, Any], where: str,
                       problems: list[Problem], warnings: list[Problem]) -> None:
    extra = first.get(EXTRA_PEERS, [])
    if templated(extra):
        return
    if not isinstance(extra, list):
        problems.append(Problem(where, EXTRA_PEERS, f"is {type(extra).__name__}, not a list",
                                f"write [{{name, ip, as_number, node_selector}}, ...]; {README}"))
        return
    label = first.get(TOR_LABEL, DEFAULT_TOR_LABEL)
    label = DEFAULT_TOR_LABEL if templated(label) or _unset(label) else str(label)
    cps = set(control)
    # the nodes that carry no ToR label: the control planes (kubeadm labels them, roles/kube_node
    # does not) and the workers without npu_tor_id
    bare = [h for h in inv.group_hosts(KUBE_NODE)
            if h not in cps and _unset(inv.hosts[h].vars.get("npu_tor_id"))]
    nodes = planned_nodes({CONTROL_PLANE: control, KUBE_NODE: bare, NPU_NODE: inv.group_hosts(NPU_NODE)},
                          {h: inv.hosts[h].vars for h in [*control, *bare]}, npu_taint={}, tor_label=label)
    parsed, unknown = [], []
    for i, entry in enumerate(extra):
        selector = entry.get("node_selector") if isinstance(entry, Mapping) else None
        terms = parse_selector(selector)
        if terms is None:
            name = entry.get("name", f"#{i + 1}") if isinstance(entry, Mapping) else f"#{i + 1}"
            unknown.append(Problem(
                where, f"{EXTRA_PEERS} {shown(name)}",
                f"node_selector {shown(selector)} is not a selector form ufcctl evaluates, "
                "so it cannot tell which nodes that peer serves", f"write it as {SUPPORTED}"))
        else:
            parsed.append(terms)
    left = [n for n in nodes if not any(selects(t, n.labels) for t in parsed)]
    (problems if left else warnings).extend(unknown)
    for node in left:
        kind, example = (("control plane", "has(node-role.kubernetes.io/control-plane)") if node.name in cps
                         else ("worker", "kubernetes.io/hostname == '<name>'"))
        problems.append(Problem(where, f"host {node.name}",
                                f"{kind} with no npu_tor_id (no ToR BGP peer) and no {EXTRA_PEERS} entry "
                                f"selects it: without the node mesh ({MODE} tor) its pods are unreachable "
                                "from other nodes",
                                f"add {{name, ip, as_number, node_selector: \"{example}\"}} to {EXTRA_PEERS} "
                                f"for the switch it hangs off ({README})"))


RULES = (check_bgp_peers,)
