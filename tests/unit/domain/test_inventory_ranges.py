"""Host entries: ranges expand as Ansible's do, `host:port` splits, names compact back to ranges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ufcctl.domain.inventory.ranges import (
    HostPatternError,
    compact_host_names,
    expand_host_pattern,
    split_port,
)

EXPANSIONS = [
    ("plain", "node1", ["node1"]),
    ("numeric", "n[1:3]", ["n1", "n2", "n3"]),
    ("padding kept", "node[00001:00003]", ["node00001", "node00002", "node00003"]),
    ("empty begin is 0", "n[:2]", ["n0", "n1", "n2"]),
    ("zero alone is not padding", "n[0:10:5]", ["n0", "n5", "n10"]),
    ("stride", "n[1:10:3]", ["n1", "n4", "n7", "n10"]),
    ("padded stride", "npu[001:016:8]", ["npu001", "npu009"]),
    ("alphabetic", "rack[a:c]", ["racka", "rackb", "rackc"]),
    ("alphabetic runs a-z then A-Z", "x[y:B]", ["xy", "xz", "xA", "xB"]),
    ("alphabetic stride", "r[a:e:2]", ["ra", "rc", "re"]),
    ("two ranges, first slowest", "r[a:b]-n[1:2]", ["ra-n1", "ra-n2", "rb-n1", "rb-n2"]),
    ("range inside a dotted name", "db[1:2].example.com", ["db1.example.com", "db2.example.com"]),
    ("ipv4 range", "10.0.0.[1:3]", ["10.0.0.1", "10.0.0.2", "10.0.0.3"]),
    ("unpadded crosses widths", "n[9:11]", ["n9", "n10", "n11"]),
]


@pytest.mark.parametrize(("pattern", "expected"), [c[1:] for c in EXPANSIONS], ids=[c[0] for c in EXPANSIONS])
def test_expand(pattern: str, expected: list[str]) -> None:
    assert expand_host_pattern(pattern) == expected


def test_expand_16k_nodes_keeps_width() -> None:
    names = expand_host_pattern("node[00001:16000]")
    assert (len(names), names[0], names[-1], len(set(names))) == (16000, "node00001", "node16000", 16000)


BAD = [
    ("one bound", "n[1]", "begin:end"),
    ("four parts", "n[1:2:3:4]", "begin:end"),
    ("no end", "n[1:]", "no end"),
    ("padding width differs", "n[001:16]", "same width"),
    ("begin after end", "n[5:1]", "greater than end"),
    ("letters reversed", "n[c:a]", "after end"),
    ("zero step", "n[1:5:0]", "at least 1"),
    ("letter step", "n[1:5:x]", "not a number"),
    ("mixed bounds", "n[1:c]", "two numbers or two letters"),
    ("unclosed", "n[1:3", "unbalanced"),
]


@pytest.mark.parametrize(("pattern", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_ranges_name_the_problem(pattern: str, message: str) -> None:
    with pytest.raises(HostPatternError, match=message):
        expand_host_pattern(pattern)


PORTS = [
    ("name", "node1", ("node1", None)),
    ("name and port", "node1:2222", ("node1", 2222)),
    ("range and port", "n[1:3]:22", ("n[1:3]", 22)),
    ("ipv4 and port", "10.0.0.1:2200", ("10.0.0.1", 2200)),
    ("bracketed ipv6 and port", "[fe80::1]:22", ("fe80::1", 22)),
    ("bare ipv6 has no port", "fe80::1", ("fe80::1", None)),
    ("invalid host keeps the whole entry", "bad_:22", ("bad_:22", None)),
]


@pytest.mark.parametrize(("entry", "expected"), [c[1:] for c in PORTS], ids=[c[0] for c in PORTS])
def test_split_port(entry: str, expected: tuple[str, int | None]) -> None:
    assert split_port(entry) == expected


COMPACT = [
    ("consecutive padded", ["npu001", "npu002", "npu003"], ["npu[001:003]"]),
    ("stride", ["npu001", "npu005", "npu009"], ["npu[001:009:4]"]),
    ("pair with a gap stays apart", ["a1", "a3"], ["a1", "a3"]),
    ("mixed", ["x", "a1", "a2", "b"], ["x", "a[1:2]", "b"]),
    ("width change ends a padded run", ["n08", "n09", "n100"], ["n[08:09]", "n100"]),
]


@pytest.mark.parametrize(("names", "expected"), [c[1:] for c in COMPACT], ids=[c[0] for c in COMPACT])
def test_compact(names: list[str], expected: list[str]) -> None:
    assert compact_host_names(names) == expected


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b-", "n0"]),
            st.sampled_from(["", "0", "00"]),
            st.integers(0, 40),
            st.sampled_from(["", ".x"]),
        ),
        max_size=30,
    )
)
def test_compact_then_expand_gives_back_the_names(parts: list[tuple[str, str, int, str]]) -> None:
    names = list(dict.fromkeys(f"{p}{z}{n}{s}" for p, z, n, s in parts))
    assert [n for item in compact_host_names(names) for n in expand_host_pattern(item)] == names
