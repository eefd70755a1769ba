"""Kubernetes label keys and values as text, and kubelet's `--node-labels` flag built from them: one module
below every domain package, so the inventory's rule (domain/inventory/config_values.py), the node labels
(domain/addons/labels.py) and the worker's join (domain/controlplane/join.py) share one definition.

`--node-labels` is one comma-separated list of `key=value` (kubelet's flag parsing, a ConfigurationMap):
a ',' or '=' in a key or value adds labels of its own, so the flag is only ever built from checked parts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ufcctl.errors import shown

# apimachinery validation.IsValidLabelValue: at most 63 characters, alphanumeric at both ends, '-', '_'
# and '.' inside, or empty
_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
# IsQualifiedName: an optional DNS subdomain prefix (at most 253) and '/', then a name like a value but
# not empty
_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_PREFIX = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
MAX_PREFIX = 253

VALUE_RULE = "a Kubernetes label value (at most 63 letters, digits, '-', '_', '.', alphanumeric at both ends)"
KEY_RULE = ("a Kubernetes label key (an optional DNS prefix and '/', then at most 63 letters, digits, '-', "
            "'_', '.', alphanumeric at both ends)")


def value_problem(value: Any) -> str | None:
    """Why `value` cannot be a label value (None: it can). Numbers are taken as YAML writes them."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not _VALUE.fullmatch(str(value)):
        return f"is not {VALUE_RULE}; no ',' or '='"
    return None


def key_problem(key: Any) -> str | None:
    """Why `key` cannot be a label key (None: it can)."""
    text = str(key) if isinstance(key, str) else ""
    prefix, _, name = text.rpartition("/")
    if (not _NAME.fullmatch(name) or ("/" in text and not (_PREFIX.fullmatch(prefix)
                                                           and len(prefix) <= MAX_PREFIX))):
        return f"is not {KEY_RULE}; no ',' or '='"
    return None


def node_labels_flag(labels: Mapping[str, str]) -> str:
    """kubelet's `--node-labels` value for `labels`; ValueError naming the first key or value that would
    split it or is no label (the inventory check refuses them first: this is the refusal at use)."""
    for key, value in sorted(labels.items()):
        why = key_problem(key)
        if why is None:
            why = value_problem(value)
            if why is not None:
                raise ValueError(f"label {shown(key)}: value {shown(value)} {why}")
        else:
            raise ValueError(f"label key {shown(key)} {why}")
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
