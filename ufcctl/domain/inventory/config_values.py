"""Inventory values that become root-run configuration, checked as what they are before any template or
flag sees them (`ufcctl inventory check`).

A value here lands in a file a daemon parses line by line (keepalived.conf, haproxy.cfg, etcd.env) or in
a flag with its own separators (kubelet's comma-separated `--node-labels`): a newline, a space or a comma
in it adds directives, `server` lines or labels. So each variable has one rule for what it is (an
interface name, an absolute path, a label value), and a problem names the host, the variable and the rule.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from ufcctl.domain import label_syntax
from ufcctl.domain.inventory.model import ETCD_GROUPS, Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import templated
from ufcctl.domain.npu.fabric_plan import PORT_FORMAT_VAR, port_format_problem
from ufcctl.errors import shown

# Linux's dev_valid_name (net/core/dev.c): under IFNAMSIZ (16) bytes, no '/', ':' or whitespace, not
# "." or ".."; ufcctl also keeps to the characters interface names use in practice.
_INTERFACE = re.compile(r"[A-Za-z0-9_.@-]{1,15}")
# an absolute path a config line can carry as one word: no whitespace, quote, '#' or control character
_PATH = re.compile(r"/[^\s\"'#\\\x00-\x1f\x7f]*")


def _interface(value: Any) -> str | None:
    text = str(value)
    if isinstance(value, str) and _INTERFACE.fullmatch(text) and text not in (".", ".."):
        return None
    return "is not a network interface name (1-15 letters, digits, '_', '.', '@', '-')"


def path_problem(value: Any) -> str | None:
    if value in ("", None):
        return None
    text = str(value)
    if not isinstance(value, str) or not _PATH.fullmatch(text):
        return "is not an absolute path without spaces, quotes, '#' or control characters"
    if posixpath.normpath(text) != text.rstrip("/") and text != "/":
        return "is not a normal absolute path (no '.', '..' or '//' parts)"
    return None


def _port_format(value: Any) -> str | None:
    if not isinstance(value, str):
        return "is not a text"
    return port_format_problem(value)


RULES_BY_VAR: Mapping[str, Callable[[Any], str | None]] = {
    "ufc_vip_interface": _interface,
    "apiserver_lb_vip_interface": _interface,
    "apiserver_lb_check_ca_file": path_problem,
    # the values and keys of the labels a worker registers with (domain/addons/labels.worker_labels;
    # npu_accelerator_type must be a known type, validate.check_npu_nodes)
    "npu_tor_id": label_syntax.value_problem,
    "npu_host_arch": label_syntax.value_problem,
    "kube_node_tor_label": label_syntax.key_problem,
    "cni_calico_tor_label": label_syntax.key_problem,
    # formatted into each chip's expected switch port, with or without a fabric plan on the host
    PORT_FORMAT_VAR: _port_format,
    **{f"{group}_data_dir": path_problem for group in ETCD_GROUPS},
}
Rule = Callable[[Any], str | None]
_FIX: dict[Rule, str] = {_interface: "use the interface's name as `ip link` shows it, e.g. eth0 or bond0.100",
        path_problem: "use an absolute path such as /etc/kubernetes/pki/ca.crt",
        label_syntax.value_problem: "use letters, digits, '-', '_' and '.', e.g. tor-01",
        label_syntax.key_problem: "use a key such as npu-tor-id or example.com/rack",
        _port_format: "use the fields {port}, {slot}, {chip}, e.g. 200GE1/0/{port} or Eth1/{slot}/{chip:02d}"}


def check_config_values(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    for name, host in inv.hosts.items():
        for var, rule in RULES_BY_VAR.items():
            if var not in host.vars or templated(host.vars[var]):
                continue
            why = rule(host.vars[var])
            if why:
                problems.append(Problem(inv.var_origin(name, var), f"host {name}",
                                        f"{var} {shown(host.vars[var])} {why}", _FIX[rule]))
        problems.extend(_extra_labels(inv, name, host.vars.get("kube_node_labels")))


def _extra_labels(inv: Inventory, name: str, extra: Any) -> list[Problem]:
    """kube_node_labels: a mapping of label keys to label values, each checked as what it is."""
    where, var = inv.var_origin(name, "kube_node_labels"), "kube_node_labels"
    if extra is None or templated(extra):
        return []
    if not isinstance(extra, Mapping):
        return [Problem(where, f"host {name}", f"{var} {shown(extra)} is not a mapping of label keys to "
                        "values", "write it as a mapping, e.g. {team: infra}")]
    out = []
    for key, value in extra.items():
        why = label_syntax.key_problem(key)
        if why:
            out.append(Problem(where, f"host {name}", f"{var} key {shown(key)} {why}",
                               _FIX[label_syntax.key_problem]))
        why = None if templated(value) else label_syntax.value_problem(value)
        if why:
            out.append(Problem(where, f"host {name}", f"{var} {shown(key)}: {shown(value)} {why}",
                               _FIX[label_syntax.value_problem]))
    return out


RULES = (check_config_values,)
