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

from ufcctl.domain.inventory.model import ETCD_GROUPS, Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import templated
from ufcctl.errors import shown

# Linux's dev_valid_name (net/core/dev.c): under IFNAMSIZ (16) bytes, no '/', ':' or whitespace, not
# "." or ".."; ufcctl also keeps to the characters interface names use in practice.
_INTERFACE = re.compile(r"[A-Za-z0-9_.@-]{1,15}")
# an absolute path a config line can carry as one word: no whitespace, quote, '#' or control character
_PATH = re.compile(r"/[^\s\"'#\\\x00-\x1f\x7f]*")
# Kubernetes label values (apimachinery validation.IsValidLabelValue): at most 63 characters,
# alphanumerics at both ends, '-', '_' and '.' inside; no ',' or '=' to split kubelet's --node-labels
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


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


def _label(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not _LABEL_VALUE.fullmatch(str(value)):
        return ("is not a Kubernetes label value (at most 63 letters, digits, '-', '_', '.', alphanumeric "
                "at both ends; no ',' or '=')")
    return None


RULES_BY_VAR: Mapping[str, Callable[[Any], str | None]] = {
    "ufc_vip_interface": _interface,
    "apiserver_lb_vip_interface": _interface,
    "apiserver_lb_check_ca_file": path_problem,
    "npu_tor_id": _label,
    **{f"{group}_data_dir": path_problem for group in ETCD_GROUPS},
}
Rule = Callable[[Any], str | None]
_FIX: dict[Rule, str] = {_interface: "use the interface's name as `ip link` shows it, e.g. eth0 or bond0.100",
        path_problem: "use an absolute path such as /etc/kubernetes/pki/ca.crt",
        _label: "use letters, digits, '-', '_' and '.', e.g. tor-01"}


def check_config_values(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    for name, host in inv.hosts.items():
        for var, rule in RULES_BY_VAR.items():
            if var not in host.vars or templated(host.vars[var]):
                continue
            why = rule(host.vars[var])
            if why:
                problems.append(Problem(inv.var_origin(name, var), f"host {name}",
                                        f"{var} {shown(host.vars[var])} {why}", _FIX[rule]))
        extra = host.vars.get("kube_node_labels")
        if isinstance(extra, Mapping):
            for key, value in extra.items():
                why = None if templated(value) else _label(value)
                if why:
                    problems.append(Problem(inv.var_origin(name, "kube_node_labels"), f"host {name}",
                                            f"kube_node_labels {shown(key)}: {shown(value)} {why}",
                                            _FIX[_label]))


RULES = (check_config_values,)
