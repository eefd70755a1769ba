"""exports(5) checks and lines (roles/nfs_server/templates/exports.j2, fed by the domain's values), and
their translation to nfs-ganesha settings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from tests.helpers.role_templates import render
from ufcctl.domain.nfs.exports import (
    client_problems,
    export_problems,
    ganesha_settings,
    kernel_export,
    option_problems,
    path_problems,
)

HEADER = "# Managed by ufcctl (roles/nfs_server); local edits are overwritten.\n"


def kernel_exports_line(path: str, clients: str | Iterable[str], options: Sequence[str]) -> str:
    """The export's line of the file the role writes (templates/exports.j2, below its header)."""
    text = render("nfs_server", "exports.j2", {"__nfs_server_plan": {"kernel_exports": [
        kernel_export(path, clients, options)]}})
    assert text.startswith(HEADER) and text.endswith("\n") and text.count("\n") == 2, text
    return text[len(HEADER) : -1]

SEED = ["rw", "sync", "no_root_squash", "no_subtree_check"]


@pytest.mark.parametrize(
    ("path", "clients", "options", "line"),
    [
        ("/data", "192.168.0.0/16", SEED, "/data 192.168.0.0/16(rw,sync,no_root_squash,no_subtree_check)"),
        (
            "/srv/nfs",
            ["10.0.0.0/8", "cp1"],
            ["ro", "async", "subtree_check"],
            "/srv/nfs 10.0.0.0/8(ro,async,subtree_check) cp1(ro,async,subtree_check)",
        ),
        (
            "/data",
            ("*",),
            ["rw", "sync", "no_subtree_check", "anonuid=1000", "anongid=1000"],
            "/data *(rw,sync,no_subtree_check,anonuid=1000,anongid=1000)",
        ),
    ],
    ids=["seed-export", "two-clients-ro", "wildcard-anon-ids"],
)
def test_kernel_exports_line(path, clients, options, line) -> None:
    assert export_problems(path, clients, options, "e") == []
    assert kernel_exports_line(path, clients, options) == line


@pytest.mark.parametrize(
    ("client", "fragment"),
    [
        ("192.168.200.0/16", "has host bits set; did you mean 192.168.0.0/16?"),
        ("10.0.0.0/33", "is not a network"),
        ("fd00::1/64", "did you mean fd00::/64?"),
        ("bad host!", "is neither a network"),
        ("", "empty client"),
    ],
    ids=["seed-host-bits", "prefix-too-long", "ipv6-host-bits", "garbage", "empty"],
)
def test_bad_clients_are_named(client, fragment) -> None:
    problems = client_problems(client, "c")
    assert len(problems) == 1 and fragment in problems[0]


@pytest.mark.parametrize(
    "client",
    ["10.0.0.0/16", "10.0.0.5", "fd00::/64", "node[01-09].example.org", "*.cluster.local", "@trainers", "*"],
    ids=["network", "address", "ipv6-network", "hostname-pattern", "wildcard-domain", "netgroup", "everyone"],
)
def test_good_clients(client) -> None:
    assert client_problems(client, "c") == []


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        (["rw", "ro", "sync", "no_subtree_check"], ["ro and rw exclude each other"]),
        (["rw", "no_subtree_check"], ["say async or sync"]),
        (["rw", "sync"], ["say no_subtree_check or subtree_check"]),
        (["rw", "sync", "no_subtree_check", "norootsquash"], ["unknown exports(5) option 'norootsquash'"]),
        (["rw", "sync", "no_subtree_check", "anonuid=nobody"], ["anonuid needs a numeric id"]),
        (["rw", "sync", "no_subtree_check", "anonuid"], ["anonuid needs a value"]),
        (["rw", "sync", "no_subtree_check", "sec=krb6"], ["sec=krb6 must be"]),
        (["rw", "sync", "no_subtree_check", "rw=1"], ["unknown exports(5) option 'rw=1'"]),
        (["rw", "rw", "sync", "no_subtree_check"], ["option 'rw' given twice"]),
        (
            ["rw", "sync", "no_subtree_check", "root_squash", "no_root_squash"],
            ["no_root_squash and root_squash exclude each other"],
        ),
        ("rw,sync", ["must be a list"]),
    ],
    ids=[
        "rw-and-ro",
        "no-sync-choice",
        "no-subtree-choice",
        "typo",
        "anonuid-name",
        "anonuid-bare",
        "bad-sec",
        "value-on-flag",
        "duplicate",
        "squash-conflict",
        "string-not-list",
    ],
)
def test_bad_options_are_named(options, fragments) -> None:
    problems = option_problems(options, "o")
    assert len(problems) == len(fragments), problems
    for fragment, problem in zip(fragments, problems, strict=True):
        assert fragment in problem


def test_lock_synonyms_do_not_conflict() -> None:
    assert option_problems(["rw", "sync", "no_subtree_check", "secure_locks", "auth_nlm"], "o") == []
    assert option_problems(["rw", "sync", "no_subtree_check", "secure_locks", "no_auth_nlm"], "o") != []


@pytest.mark.parametrize(
    "path",
    ["data", "/da ta", "/data/../etc", "/data//x", '/da"ta', "/./data"],
    ids=["relative", "space", "dotdot", "double-slash", "quote", "dot"],
)
def test_bad_paths(path) -> None:
    assert path_problems(path, "p")


def test_export_without_clients_lists_every_problem() -> None:
    problems = export_problems("rel", [], ["rw"], "nfs_server_export")
    assert any("absolute path" in p for p in problems)
    assert any("no client network" in p for p in problems)
    assert any("say async or sync" in p for p in problems)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (SEED, ("RW", "No_Root_Squash", ("sys",), None, None, ("no_subtree_check", "sync"))),
        (
            ["ro", "async", "subtree_check"],
            ("RO", "Root_Squash", ("sys",), None, None, ("async", "subtree_check")),
        ),
        (
            ["rw", "sync", "no_subtree_check", "all_squash", "anonuid=1000", "anongid=100", "sec=krb5:krb5p"],
            ("RW", "All_Squash", ("krb5", "krb5p"), 1000, 100, ("no_subtree_check", "sync")),
        ),
        (
            ["sync", "no_subtree_check"],
            ("RO", "Root_Squash", ("sys",), None, None, ("no_subtree_check", "sync")),
        ),
    ],
    ids=["seed", "read-only", "all-squash-anon-krb5", "defaults-ro-root-squash"],
)
def test_ganesha_settings(options, expected) -> None:
    s = ganesha_settings(options)
    assert (s.access_type, s.squash, s.sectype, s.anonymous_uid, s.anonymous_gid, s.kernel_only) == expected
