"""Export checking and rendering: one option list (exports(5) syntax) for the kernel server and nfs-ganesha.

The inventory states an export once, the way the seed does (`/data 192.168.200.0/16(rw,sync,
no_root_squash,no_subtree_check)`), whichever server runs it. This module checks the path, the
client networks and the options, renders the kernel's /etc/exports lines, and translates the
options into nfs-ganesha EXPORT settings.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# exports(5) (nfs-utils 2.6) flags without a value, grouped where they exclude each other.
EXCLUSIVE_FLAGS: tuple[frozenset[str], ...] = (
    frozenset({"rw", "ro"}),
    frozenset({"sync", "async"}),
    frozenset({"secure", "insecure"}),
    frozenset({"wdelay", "no_wdelay"}),
    frozenset({"hide", "nohide"}),
    frozenset({"subtree_check", "no_subtree_check"}),
    frozenset({"secure_locks", "auth_nlm", "insecure_locks", "no_auth_nlm"}),
    frozenset({"root_squash", "no_root_squash"}),
    frozenset({"all_squash", "no_all_squash"}),
    frozenset({"pnfs", "no_pnfs"}),
)
_LOCK_PAIRS = ({"secure_locks", "auth_nlm"}, {"insecure_locks", "no_auth_nlm"})  # synonyms, not rivals
OTHER_FLAGS = frozenset({"crossmnt", "no_acl", "nordirplus", "security_label", "mountpoint", "mp"})
FLAGS = frozenset().union(*EXCLUSIVE_FLAGS) | OTHER_FLAGS
VALUED = frozenset({"fsid", "anonuid", "anongid", "sec", "refer", "replicas", "mountpoint", "mp"})
SEC_FLAVOURS = frozenset({"sys", "krb5", "krb5i", "krb5p"})
# exportfs warns when a client's export says neither, so an export must choose (Debian NEWS,
# nfs-utils 1:1.0.1-1: "All exports should be marked as either sync or async").
MUST_CHOOSE = (frozenset({"sync", "async"}), frozenset({"subtree_check", "no_subtree_check"}))

# Options with no nfs-ganesha counterpart: accepted for both servers, written only for the kernel.
KERNEL_ONLY = frozenset({
    "sync", "async", "wdelay", "no_wdelay", "hide", "nohide", "subtree_check", "no_subtree_check",
    "secure_locks", "auth_nlm", "insecure_locks", "no_auth_nlm", "crossmnt", "no_acl", "nordirplus",
    "security_label", "mountpoint", "mp", "fsid", "refer", "replicas", "pnfs", "no_pnfs",
    "secure", "insecure",
})

_HOSTNAME = re.compile(r"^[A-Za-z0-9*?\[\]]([A-Za-z0-9.*?\[\]-]*[A-Za-z0-9*?\]])?$")
_NETGROUP = re.compile(r"^@[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class GaneshaExportSettings:
    """nfs-ganesha's EXPORT/CLIENT values equivalent to one exports(5) option list."""

    access_type: str  # RW or RO
    squash: str  # No_Root_Squash, Root_Squash or All_Squash
    sectype: tuple[str, ...]
    anonymous_uid: int | None
    anonymous_gid: int | None
    kernel_only: tuple[str, ...]  # options accepted but without a ganesha counterpart


def _split(option: str) -> tuple[str, str | None]:
    name, sep, value = option.partition("=")
    return name.strip(), (value.strip() if sep else None)


def path_problems(path: str, what: str) -> list[str]:
    """An exported path must be absolute and plain: exports(5) would need quoting for the rest."""
    if not isinstance(path, str) or not path.startswith("/"):
        return [f"{what} {path!r} must be an absolute path such as /data"]
    if re.search(r"[\s\"'\\]", path) or "//" in path or "/../" in f"{path}/" or "/./" in f"{path}/":
        return [f"{what} {path!r} must not contain whitespace, quotes, backslashes, '//', '.' or '..'"]
    return []


def client_problems(client: str, what: str) -> list[str]:
    """A network (CIDR, host bits clear), an IP address, a host name or wildcard, a @netgroup, or *."""
    if not isinstance(client, str) or not client.strip():
        return [f"{what}: empty client; give a network such as 10.0.0.0/16"]
    if client == "*" or _NETGROUP.match(client):
        return []
    if "/" in client:
        try:
            ipaddress.ip_network(client, strict=True)
        except ValueError as err:
            try:
                fixed = ipaddress.ip_network(client, strict=False)
            except ValueError:
                return [f"{what} {client!r} is not a network: {err}"]
            # The seed's own example (192.168.200.0/16) is one of these: exportfs silently widens it.
            return [f"{what} {client!r} has host bits set; did you mean {fixed}?"]
        return []
    try:
        ipaddress.ip_address(client)
        return []
    except ValueError:
        pass
    if _HOSTNAME.match(client):
        return []
    return [f"{what} {client!r} is neither a network, an address, a host name, a @netgroup nor *"]


def _value_problem(name: str, value: str, what: str) -> str | None:
    if name in ("anonuid", "anongid"):
        if not value.isdigit() or int(value) > 0xFFFFFFFF:
            return f"{what}: {name} needs a numeric id, e.g. {name}=65534"
    elif name == "sec":
        flavours = (value or "").split(":")
        if not value or any(f not in SEC_FLAVOURS for f in flavours):
            return f"{what}: sec={value} must be ':'-separated flavours of {', '.join(sorted(SEC_FLAVOURS))}"
    elif name == "fsid":
        if not value or not (value.isdigit() or value == "root" or re.fullmatch(r"[0-9a-fA-F-]{8,}", value)):
            return f"{what}: fsid={value} must be a number, root, or a UUID"
    elif not value:
        return f"{what}: {name}= needs a value"
    return None


def option_problems(options: Sequence[str], what: str) -> list[str]:
    """Unknown options, options that exclude each other, missing values, and required choices."""
    if isinstance(options, str) or not isinstance(options, Sequence):
        return [f"{what} must be a list of exports(5) options, e.g. [rw, sync, no_subtree_check]"]
    problems: list[str] = []
    names: list[str] = []
    for raw in options:
        name, value = _split(str(raw))
        if value is None and name not in FLAGS:
            problems.append(f"{what}: {name} needs a value" if name in VALUED
                            else f"{what}: unknown exports(5) option {raw!r}")
            continue
        if value is not None:
            if name not in VALUED:
                problems.append(f"{what}: unknown exports(5) option {raw!r}")
                continue
            problem = _value_problem(name, value, what)
            if problem:
                problems.append(problem)
        if name in names:
            problems.append(f"{what}: option {name!r} given twice")
        names.append(name)
    present = set(names)
    for group in EXCLUSIVE_FLAGS:
        chosen = present & group
        if len(chosen) > 1 and not any(chosen <= pair for pair in _LOCK_PAIRS):
            problems.append(f"{what}: {' and '.join(sorted(chosen))} exclude each other")
    for group in MUST_CHOOSE:
        if not present & group:
            choice = " or ".join(sorted(group))
            problems.append(f"{what}: say {choice} (exportfs warns when neither is given)")
    return problems


def normalize_clients(clients: str | Iterable[str]) -> tuple[str, ...]:
    """One client or a list of them, as a tuple (inventories may give either)."""
    if isinstance(clients, str):
        return (clients,)
    return tuple(str(c) for c in clients)


def export_problems(path: str, clients: str | Iterable[str], options: Sequence[str], what: str) -> list[str]:
    """Every problem of one export (path, each client, the options); empty when it can be rendered."""
    problems = path_problems(path, f"{what} path")
    found = normalize_clients(clients) if clients else ()
    if not found:
        problems.append(f"{what}: no client network; set the nodes' network, e.g. 10.0.0.0/16")
    for client in found:
        problems += client_problems(client, f"{what} client")
    if len(set(found)) != len(found):
        problems.append(f"{what}: a client is listed twice")
    return problems + option_problems(options, f"{what} options")


def kernel_export(path: str, clients: str | Iterable[str], options: Sequence[str]) -> dict[str, Any]:
    """One export as roles/nfs_server/templates/exports.j2 writes it, one line as exports(5) reads it:
    `<path> <client>(<options>) ...`."""
    return {"path": path, "clients": list(normalize_clients(clients)), "options": [str(o) for o in options]}


def ganesha_settings(options: Sequence[str]) -> GaneshaExportSettings:
    """The ganesha values for an option list that option_problems() accepted."""
    present = {_split(str(o))[0]: _split(str(o))[1] for o in options}
    if "all_squash" in present:
        squash = "All_Squash"
    elif "no_root_squash" in present:
        squash = "No_Root_Squash"
    else:  # root_squash is exports(5)'s default, and ganesha's
        squash = "Root_Squash"
    sec, uid, gid = present.get("sec"), present.get("anonuid"), present.get("anongid")
    return GaneshaExportSettings(
        access_type="RW" if "rw" in present else "RO",  # ro is exports(5)'s default
        squash=squash,
        sectype=tuple(sec.split(":")) if sec else ("sys",),
        anonymous_uid=int(uid) if uid else None,
        anonymous_gid=int(gid) if gid else None,
        kernel_only=tuple(sorted(name for name in present if name in KERNEL_ONLY)),
    )
