"""Rules on the variables Ansible connects with, and on templates Ansible runs on the controller.

Connection variables reach ssh as its host, port and user arguments, so a value that is no
address (`10.0.0.300`, `1.2.3.4; rm -rf /`), no port or no user name is refused before any host
is contacted. A value that is a Jinja template (`{{ ... }}`) only has a value once Ansible renders
it at run time: ufcctl cannot check it and says so in a warning (one line per file and variable,
the hosts folded into ranges), and accepts it.
`!unsafe` values are never templated by Ansible, so they are checked as written; `!vault` values
are encrypted and left to Ansible.
A URL with credentials in it (`https://user:password@host`, in any variable: registry upstreams,
`ufc_artifact_url`, monitoring URLs) is refused: ufcctl and Ansible print URLs in messages and logs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import UnsafeText, VaultedValue
from ufcctl.domain.urls import has_credentials, mask
from ufcctl.errors import shown

# RFC 1123 section 2.1: labels of letters, digits and hyphens, 1-63 long, no hyphen at either end;
# at most 253 characters; a trailing dot (fully qualified) is allowed. An all-numeric dotted name
# is meant as an IPv4 address and must be a valid one (`10.0.0.300` is neither).
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
_DOTTED_NUMBERS = re.compile(r"[0-9.]+\Z")
# A portable user name (POSIX "portable filename characters", not starting with `-` so ssh never
# reads it as an option); the trailing `$` of Samba machine accounts is allowed; 32 is Linux's
# useradd limit.
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\$?\Z")
# What makes Ansible template a string (its `is_template` looks for these openings).
_TEMPLATE_MARKS = ("{{", "{%", "{#")
# Lookup plugins called from a template: `lookup('file', ...)`, `query(...)`, `q(...)`.
_LOOKUP = re.compile(r"(?<![\w.])(lookup|query|q)\s*\(")

HOST_VARS = ("ansible_host", "ansible_ssh_host")
PORT_VARS = ("ansible_port", "ansible_ssh_port")
USER_VARS = ("ansible_user", "ansible_ssh_user")
# Connection plugins that dial `ansible_host`, or the inventory name without it (short names; the
# `ansible.builtin.` prefix is stripped). Others (local, podman, docker ...) name no address.
SSH_CONNECTIONS = ("ssh", "smart", "paramiko", "paramiko_ssh")
MAX_NAME = 253  # RFC 1123: the longest host name


def is_template(value: Any) -> bool:
    """True for a string Ansible renders as a template (not `!unsafe`, which Ansible never renders)."""
    if not isinstance(value, str) or isinstance(value, UnsafeText):
        return False
    return any(mark in value for mark in _TEMPLATE_MARKS)


def valid_host_address(value: str) -> bool:
    """An IPv4/IPv6 address or an RFC 1123 host name."""
    dotted_numbers = _DOTTED_NUMBERS.match(value)
    # ip_address takes only ASCII digits and dots (IPv4) or a string with colons (IPv6): a name is not
    # tried (its ValueError costs more than the name check, 200,000 times in a big inventory)
    if dotted_numbers or ":" in value:
        try:
            ipaddress.ip_address(value)
            return True
        except ValueError:
            pass
    if dotted_numbers:
        return False  # looks like an IPv4 address and is not one
    name = value[:-1] if value.endswith(".") else value
    return 0 < len(name) <= 253 and all(_LABEL.match(label) for label in name.split("."))


def _address_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return f"is {_kind(value)}, not an address"
    if not valid_host_address(value):
        return f"{shown(value)} is not an IP address or a host name (RFC 1123)"
    return None


def _port_problem(value: Any) -> str | None:
    number: Any = value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        # Past 10 digits it is out of range anyway; int() of 4,301 digits or more raises.
        number = int(value) if len(value.strip()) <= 10 else 1 << 64
    if isinstance(number, bool) or not isinstance(number, int):
        if isinstance(value, str) and value:
            return f"{shown(value)} is not a port number"
        return f"is {_kind(value)}, not a port"
    if not 0 < number < 65536:
        return f"{shown(value)} is outside 1..65535"
    return None


def _user_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return f"is {_kind(value)}, not a user name"
    if not _USER.match(value):
        return (f"{shown(value)} is not a user name "
                "(letters, digits, `_`, `.`, `-`; no spaces or shell characters)")
    return None


_CHECKS: tuple[tuple[tuple[str, ...], Callable[[Any], str | None], str], ...] = (
    (HOST_VARS, _address_problem, "use an IPv4 or IPv6 address or a DNS name, e.g. 10.0.0.11 or npu001.dc1"),
    (PORT_VARS, _port_problem, "use a whole number from 1 to 65535, e.g. 22"),
    (USER_VARS, _user_problem, "use a plain login name, e.g. root or ops"),
)


def _kind(value: Any) -> str:
    if value is None or value == "":
        return "empty"
    return {dict: "a mapping", list: "a list", bool: "a boolean"}.get(type(value), type(value).__name__)


def _name_is_address(hvars: Mapping[str, Any]) -> bool:
    """True when ssh dials the host's inventory name: no ansible_host, and an ssh connection."""
    if any(var in hvars for var in HOST_VARS):
        return False
    connection = hvars.get("ansible_connection", "ssh")
    return isinstance(connection, str) and connection.rpartition(".")[2] in SSH_CONNECTIONS


def check_host_names(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """A host without ansible_host is reached at its inventory name: the name must be an address.

    Ansible never renders a host name as a template (ansible-core 2.19 `InventoryData.add_host`
    strips its trust), so a name with `{{` reaches ssh as written and is checked like any other.
    """
    for name, host in inv.hosts.items():
        if not _name_is_address(host.vars):
            continue
        if valid_host_address(name):
            continue
        problems.append(
            Problem(
                host.source,
                f"host {name}" if len(name) <= MAX_NAME else f"host {shown(name)}",
                "has no ansible_host, so ssh dials its name, which is not an IP address or a host name "
                "(RFC 1123: letters, digits, `-` and `.`; no leading `-`; labels up to 63, names up to 253 "
                "characters)",
                "rename the host to its DNS name or IP address, or set its ansible_host",
            )
        )


def check_connection_vars(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """ansible_host, ansible_port and ansible_user (and their ansible_ssh_* aliases) of every host."""
    verdicts: dict[tuple[str, type, Any], str | None] = {}  # 16,000 hosts share a handful of users and ports
    for name, host in inv.hosts.items():
        hvars = host.vars
        for variables, check, fix in _CHECKS:
            for var in variables:
                if var not in hvars:
                    continue
                value = hvars[var]
                if isinstance(value, VaultedValue):
                    continue
                if is_template(value):
                    warnings.append(
                        Problem(
                            inv.var_origin(name, var),
                            f"host {name}",
                            f"{var} is a template: ufcctl cannot check it, Ansible renders it at run time",
                            "make sure it renders to a valid value, or write the value itself",
                        )
                    )
                    continue
                key = (var, type(value), value)  # the type too: True == 1
                try:
                    problem = verdicts[key]
                except KeyError:
                    problem = verdicts[key] = check(value)
                except TypeError:  # an unhashable value (list, mapping): not cached
                    problem = check(value)
                if problem is not None:
                    where = inv.var_origin(name, var)
                    problems.append(Problem(where, f"host {name}", f"{var} {problem}", fix))


def check_lookups(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Warn about vars holding `lookup(`/`query(`/`q(` templates: Ansible runs them on the controller."""
    for file, subject, var, value in _own_vars(inv):
        call = _first(value, _lookup_call)
        if call is not None:
            warnings.append(
                Problem(
                    file,
                    subject,
                    f"{var} calls {call}(...) in a template: Ansible runs it on the controller, "
                    "ufcctl's machine, each time the variable is used",
                    "make sure that is intended (it reads files, env and commands of this machine)",
                )
            )


def check_url_credentials(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Refuse URLs that carry a user or password, wherever they sit in a variable (lists, maps)."""
    for file, subject, var, value in _own_vars(inv):
        url = _first(value, lambda text: text if "@" in text and has_credentials(text) else None)
        if url is not None:
            problems.append(Problem(
                file, subject, f"{var} holds a URL with credentials ({mask(url)})",
                "remove user:password@ from the URL (ufcctl and Ansible print URLs); give "
                "credentials their own vaulted variables, e.g. an upstream's username and password",
            ))


def _own_vars(inv: Inventory) -> Iterator[tuple[str, str, str, Any]]:
    """(file, subject, var, value) of each file's own vars, each file once (host vars are merged
    copies of them), in inventory order."""
    seen: set[int] = set()
    for file, subject, values in _var_sources(inv):
        if id(values) not in seen:
            seen.add(id(values))
            for var, value in values.items():
                yield file, subject, var, value


def _var_sources(inv: Inventory) -> Iterator[tuple[str, str, Mapping[Any, Any]]]:
    for group in inv.groups.values():
        if group.file_vars:
            yield group.source, f"group {group.name}", group.file_vars
        for source in group.vars_files:
            if isinstance(source.data, Mapping):
                yield source.path, "", source.data
    for host in inv.hosts.values():
        if host.file_vars:
            yield host.source, f"host {host.name}", host.file_vars
        for source in host.vars_files:
            if isinstance(source.data, Mapping):
                yield source.path, "", source.data


def _first(value: Any, found: Callable[[str], str | None]) -> str | None:
    """The first non-None `found(text)` over the strings anywhere in `value` (walked without recursion)."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            hit = found(item)
            if hit is not None:
                return hit
        elif isinstance(item, Mapping):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return None


def _lookup_call(text: str) -> str | None:
    """The lookup plugin a template calls (`lookup`, `query`, `q`), if any."""
    if "{" in text and is_template(text):
        match = _LOOKUP.search(text)
        if match:
            return match.group(1)
    return None


RULES = (check_host_names, check_connection_vars, check_lookups, check_url_credentials)
