"""Bad input, third round (issue 24): host names ssh dials, hosts that are one machine, `--limit`
terms that match nothing, special files in an inventory, huge numbers and huge values. Each is exit
2 with one bounded `Error:` line (or a problem line) naming the file, host, flag or value."""

from __future__ import annotations

import inspect
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.domain.inventory.resolve import resolve
from ufcctl.engine.inventory_files import read_inventory_dir

ROOT = Path(__file__).resolve().parents[3]
_SEPARATE = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}
BIG = "9" * 5000  # past Python's 4,300-digit int() limit
MAX_OUTPUT = 2000  # no message may quote more than a bounded part of a value
MEMORY_CAP = 2 << 30  # address space of the subprocess reading special files


def run(*args: str) -> Result:
    return CliRunner(**_SEPARATE).invoke(cli, list(args))


def clean(result: Result) -> None:
    assert result.exit_code in (0, 1, 2), result.output
    assert "internal error" not in result.output and "Traceback" not in result.output, result.output[:500]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert len(result.output) < MAX_OUTPUT, result.output[:500]


@pytest.fixture()
def inv(tmp_path: Path) -> Path:
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=8, nodes_per_tor=4), "explicit")


def check(inv: Path, files: dict[str, str]) -> Result:
    for name, text in files.items():
        path = inv / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = run("inventory", "check", "-i", str(inv))
    clean(result)
    return result


def _extra(name: str, host_vars: str = "") -> dict[str, str]:
    return {"extra.yml": f"extra:\n  hosts:\n    {json.dumps(name)}:{host_vars}\n"}


NAME_HINT = "has no ansible_host, so ssh dials its name, which is not an IP address or a host name"

# (files written into a valid 8-node inventory, exit code, texts the output must hold)
CASES = [
    # -- host names that become addresses (no ansible_host)
    *[
        pytest.param(_extra(name), 2, [f"extra.yml: host {shown}: {NAME_HINT}"], id=f"name {case}")
        for case, name, shown in [
            ("with ;", "a;reboot", "a;reboot"),
            ("with a space", "a b", "a b"),
            ("leading -", "-oProxyCommand=x", "-oProxyCommand=x"),
            ("label of 64", "a" * 64, "a" * 64),
            ("of 254", ".".join(["a" * 50] * 5), "'" + "a" * 50 + "." + "a" * 28 + "…'"),
            ("a template", "{{ x }}", "{{ x }}"),  # Ansible never renders a host name
            ("with _", "node_1", "node_1"),
        ]
    ],
    pytest.param(
        {"extra.yml": "extra:\n  hosts:\n    10.1.2.3:\n    'fe80::1':\n    n1.dc1.example.com.:\n"},
        0,
        ["OK"],
        id="names that are addresses",
    ),
    pytest.param(_extra("a b", "\n      ansible_host: 10.9.9.9"), 0, ["OK"], id="odd name with ansible_host"),
    pytest.param(
        _extra("a b", "\n      ansible_connection: local"), 0, ["OK"], id="odd name, local connection"
    ),
    # -- two hosts of one service group on one machine
    pytest.param(
        {
            "host_vars/etcd-pods1.yml": "ansible_host: 10.0.0.50\nansible_port: 2222\n",
            "host_vars/etcd-pods2.yml": "ansible_host: 10.0.0.50\nansible_port: 2223\n",
        },
        2,
        [
            "host_vars/etcd-pods2.yml: host etcd-pods2: is at 10.0.0.50 like host etcd-pods1, "
            "and both are in etcd_pods"
        ],
        id="etcd members on one IP, two SSH ports",
    ),
    pytest.param(
        {"host_vars/cp2.yml": "etcd_address: 10.0.0.11\n"},
        2,
        [
            "host_vars/cp2.yml: host cp2: is at 10.0.0.11 like host cp1, "
            "and both are in etcd_core, etcd_events"
        ],
        id="etcd_address of another member",
    ),
    pytest.param(
        {"host_vars/cp3.yml": "ansible_host: 10.0.0.11\nansible_port: 2200\n"},
        2,
        [
            "host cp3: is at 10.0.0.11 like host cp1, "
            "and both are in etcd_core, etcd_events, kube_control_plane, apiserver_lb"
        ],
        id="control plane on one IP, two SSH ports",
    ),
    pytest.param(
        {
            "host_vars/cp1.yml": "ansible_host: 'fd00::1'\n",
            "host_vars/cp2.yml": "ansible_host: 'fd00:0::1'\nansible_port: 23\n",
        },
        2,
        ["host cp2: is at fd00::1 like host cp1"],
        id="one IPv6 address spelled two ways",
    ),
    pytest.param(
        {"host_vars/npu00002.yml": "ansible_host: 10.16.0.1\nansible_port: 2200\n"},
        0,
        ["OK"],
        id="workers on one IP, two SSH ports: fine",
    ),
    pytest.param(
        {
            "host_vars/npu00002.yml": "ansible_connection: local\n",
            "host_vars/npu00003.yml": "ansible_connection: ansible.builtin.local\n",
        },
        2,
        [
            "host_vars/npu00003.yml: host npu00003: ansible_connection local, like host npu00002: both are "
            "this machine"
        ],
        id="two local hosts",
    ),
    pytest.param({"host_vars/npu00002.yml": "ansible_connection: local\n"}, 0, ["OK"], id="one local host"),
    # -- numbers past int()'s limit, and huge values quoted in messages
    pytest.param(
        {"host_vars/npu00001.yml": f"x: {BIG}\n"},
        2,
        ["host_vars/npu00001.yml:1:4: a number of 5,000 characters: more than the 4,300 digits"],
        id="YAML int of 5,000 digits",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": f"ansible_port: 0x{'f' * 5000}\n"},
        2,
        ["host_vars/npu00001.yml:1:15: a number of 5,002 characters"],
        id="YAML hex int of 5,000 digits",
    ),
    pytest.param(
        {"host_vars/npu00001.json": f'{{"ansible_port": {BIG}}}'},
        2,
        ["host_vars/npu00001.json: a number of 5,000 characters"],
        id="JSON int of 5,000 digits",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": f"ansible_port: '{BIG}'\n"},
        2,
        ["ansible_port '99999999", "…' is outside 1..65535"],
        id="port string of 5,000 digits",
    ),
    pytest.param(
        {"host_vars/cp1.yml": f"etcd_core_client_port: '{BIG}'\n"},
        2,
        ["etcd_core_client_port '9999", "…' is not a port number"],
        id="etcd port string of 5,000 digits",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": "npu_slice_id: 1.0e+308\n"},
        2,
        ["npu_slice_id 1e+308 is not a whole number >= 0"],
        id="1e308 as an id",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": f"ansible_host: {'a' * 1_000_000}\n"},
        2,
        ["ansible_host 'aaaa", "…' is not an IP address"],
        id="ansible_host of 1 MB",
    ),
    pytest.param(
        {"group_vars/all.yml": f"ufc_vip: {'x' * 100_000}\n"},
        2,
        ["ufc_vip: 'xxx", "…' is not an IP"],
        id="ufc_vip of 100 kB",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": "x: *" + "a" * 100_000 + "\n"},
        2,
        ["invalid YAML: found undefined alias 'aaa", "…"],
        id="undefined alias of 100 kB",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": ("? " + "k" * 100_000 + "\n: 1\n") * 2},
        2,
        ["duplicate key 'kkk", "…"],
        id="duplicate key of 100 kB",
    ),
]


@pytest.mark.parametrize(("files", "code", "texts"), CASES)
def test_inventory_input(inv: Path, files: dict[str, str], code: int, texts: list[str]) -> None:
    result = check(inv, files)
    assert result.exit_code == code, result.output
    for text in texts:
        assert text in result.output, result.output


# -- --limit: a term that matches nothing is an error whatever its operator


@pytest.mark.parametrize(
    ("pattern", "term"),
    [
        pytest.param("kube_node:!nosuch", "!nosuch", id="exclude"),
        pytest.param("kube_node:&nosuch", "&nosuch", id="intersect"),
        pytest.param("kube_node,!npu9*", "!npu9*", id="exclude glob"),
        pytest.param("kube_node,&~^x", "&~^x", id="intersect regex"),
        pytest.param("nosuch", "nosuch", id="include"),
    ],
)
def test_limit_term_matching_nothing(inv: Path, pattern: str, term: str) -> None:
    inventory = resolve(read_inventory_dir(inv)).inventory
    with pytest.raises(PatternError, match=re.escape(f"pattern term '{term}' matches no host or group")):
        select_hosts(inventory, pattern)
    result = run("plan", "upgrade-drivers", "-i", str(inv), "--batch", "2", "--limit", pattern)
    clean(result)
    assert result.exit_code == 2 and f"pattern term {term!r} matches no host or group" in result.output


def test_limit_terms_that_match_still_work(inv: Path) -> None:
    inventory = resolve(read_inventory_dir(inv)).inventory
    assert select_hosts(inventory, "kube_node:!npu00001:&npu0000[1-3]") == ["npu00002", "npu00003"]


# -- only regular files are read from an inventory tree


def _memory_cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link(target: str) -> object:
    return lambda path: path.symlink_to(target)


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        pytest.param("extra.yml", _fifo, "FIFO (named pipe)", id="FIFO as an inventory file"),
        pytest.param("group_vars/npu_node.yml", _fifo, "FIFO (named pipe)", id="FIFO in group_vars"),
        pytest.param("zero.yml", _link("/dev/zero"), "character device", id="link to /dev/zero"),
        pytest.param(
            "host_vars/npu00001", _link("/dev/urandom"), "character device", id="link to /dev/urandom"
        ),
        pytest.param("other", _link("/dev/zero"), "character device", id="no-suffix link to /dev/zero"),
    ],
)
def test_special_files_are_problems_not_hangs(inv: Path, name: str, make: object, kind: str) -> None:
    path = inv / name
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)  # type: ignore[operator]
    # A subprocess with a timeout and a memory cap: without the fix the read blocks (FIFO) or reads
    # /dev/zero until the memory runs out.
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = "import sys; from ufcctl.cli.main import cli; sys.argv[0] = 'ufcctl'; cli()"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, "inventory", "check", "-i", str(inv)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
            preexec_fn=_memory_cap,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {name} hung")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{name}: is a {kind}, not a regular file" in proc.stdout + proc.stderr


# -- placement input


@pytest.mark.parametrize(
    ("name", "content", "text"),
    [
        pytest.param(
            "s.json",
            '{"kind": "Node", "metadata": {"name": "n1", "generation": ' + BIG + "}}",
            "FILE: a number of 5,000 characters: more than the 4,300 digits",
            id="JSON int",
        ),
        pytest.param(
            "s.yaml",
            "kind: Node\nmetadata: {name: n1, generation: " + BIG + "}\n",
            "FILE: a number of 5,000 characters: more than the 4,300 digits Python reads at line 2",
            id="YAML int",
        ),
        pytest.param(
            "s.json",
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": "n1"},
                    "status": {"allocatable": {"huawei.com/Ascend910": BIG}},
                }
            ),
            "Node n1: status.allocatable[huawei.com/Ascend910] must be an integer, got '9999",
            id="quantity string of 5,000 digits",
        ),
    ],
)
def test_placement_huge_numbers(tmp_path: Path, name: str, content: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    result = run("placement", "validate", str(path))
    clean(result)
    assert result.exit_code == 2 and text.replace("FILE", str(path)) in result.output, result.output


# -- flags


@pytest.mark.parametrize(
    ("args", "text"),
    [
        pytest.param(
            ["health", "--timeout", "1e10"],
            "'--timeout': '1e10' is not a finite number from 0.001 to",
            id="health --timeout 1e10",
        ),
        pytest.param(
            ["plan", "deploy", "--join-rate", "1e308"], "'--join-rate': '1e308' is not", id="join-rate"
        ),
        pytest.param(
            ["plan", "upgrade-drivers", "--node-seconds", "1e308"],
            "'--node-seconds': '1e308' is not",
            id="node-seconds",
        ),
        pytest.param(
            ["plan", "upgrade-drivers", "--canary", BIG], "'--canary': '99999", id="canary of 5,000 digits"
        ),
        pytest.param(
            ["inventory", "check", "-i", "a" * 100_000], "Error: --inventory: a path of 100000 bytes",
            id="--inventory 100 kB"
        ),
        pytest.param(
            ["inventory", "check", "-i", "./" + "a" * 100_000], "a path of 100002 bytes (at most 4095)",
            id="path of 100 kB"
        ),
    ],
)
def test_huge_flag_values(args: list[str], text: str) -> None:
    result = run(*args)
    clean(result)
    assert result.exit_code == 2 and text in result.output, result.output
