"""Bad inventory and placement input, one table per class: exit 2 (or a warning) naming the file, line,
host or flag; never an internal error, a crash or a run on the wrong hosts."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli

ROOT = Path(__file__).resolve().parents[3]
_SEPARATE = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner(**_SEPARATE).invoke(cli, list(args), input=stdin)


def clean(result: Result) -> None:
    """Exit 0, 1 or 2 through the CLI's own handling: no traceback, no internal error."""
    assert result.exit_code in (0, 1, 2), result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


@pytest.fixture()
def inv(tmp_path: Path) -> Path:
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=8, nodes_per_tor=4), "explicit")


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def check(inv: Path, files: dict[str, str]) -> Result:
    write(inv, files)
    result = run("inventory", "check", "-i", str(inv))
    clean(result)
    return result


def _groups_nested(depth: int) -> str:
    text, indent = "deep:\n  children:\n", "    "
    for i in range(depth):
        text += f"{indent}d{i}:\n{indent}  children:\n"
        indent += "    "
    return text + f"{indent}leaf:\n"


def _chain(length: int) -> str:
    lines = ["chain0:", "  children:", "    chain1:"]
    for i in range(1, length):
        lines += [f"chain{i}:", "  children:", f"    chain{i + 1}:"]
    return "\n".join(lines) + "\n"


def _bomb() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


# (files written into a valid inventory, exit code, texts the output must hold)
INVENTORY_CASES = [
    # -- host ranges: counted before they are expanded
    pytest.param(
        {"big.yml": "big:\n  hosts:\n    node[0:99999999]:\n"},
        2,
        ["big.yml: group big: host range 'node[0:99999999]' stands for 100,000,000 hosts, more than 200,000"],
        id="range past the cap",
    ),
    pytest.param(
        {"big.yml": "big:\n  hosts:\n    a[0:120000]:\n    b[0:120000]:\n    c[0:9]:\n"},
        2,
        ["big.yml: group big: the inventory has more than 200,000 hosts once 'b[0:120000]' is added"],
        id="inventory past the cap",
    ),
    pytest.param(
        {"big.yml": "big:\n  hosts:\n    n" + "[1:3]" * 40 + ":\n"},
        2,
        ["stands for over 1,000,000,000,000 hosts"],
        id="many ranges in one entry",
    ),
    # -- duplicate keys: an error naming file and line, wherever they are
    pytest.param(
        {"extra.yml": "extra:\n  hosts:\n    x1:\n      ansible_host: 10.9.0.1\n    x1:\n      rack: r9\n"},
        2,
        ["extra.yml:5:5: duplicate key 'x1' (also at line 3)"],
        id="host twice in one hosts mapping",
    ),
    pytest.param(
        {"group_vars/kube_node.yml": "a: 1\nufc_x: 2\nufc_x: 3\n"},
        2,
        ["group_vars/kube_node.yml:3:1: duplicate key 'ufc_x' (also at line 2)"],
        id="var twice in group_vars",
    ),
    pytest.param(
        {"host_vars/npu00001.yml": "ansible_host: 10.16.0.1\nrack: r1\nansible_host: 10.16.0.9\n"},
        2,
        ["host_vars/npu00001.yml:3:1: duplicate key 'ansible_host' (also at line 1)"],
        id="var twice in host_vars",
    ),
    pytest.param(
        {"host_vars/npu00001.json": '{"rack": "r1", "rack": "r2"}'},
        2,
        ["host_vars/npu00001.json: duplicate key 'rack' in one JSON object"],
        id="key twice in a JSON vars file",
    ),
    # -- YAML alias expansion and nesting, in every file the inventory reads
    pytest.param(
        {"group_vars/npu_node/bomb.yml": _bomb()},
        2,
        ["group_vars/npu_node/bomb.yml:7:", "aliases expand to more than"],
        id="alias bomb in group_vars",
    ),
    pytest.param(
        {"host_vars/npu00002.yml": "a: &a [1, *a]\n"}, 2, ["host_vars/npu00002.yml:1:11: alias *a is inside"],
        id="recursive alias",
    ),
    pytest.param(
        {"deep.yml": _groups_nested(60)}, 2, ["deep.yml:", "nested more than 100 levels deep"],
        id="groups nested 60 deep in YAML",
    ),
    pytest.param(
        {"group_vars/npu_node/deep.json": '{"x": ' + "[" * 3000 + "]" * 3000 + "}"},
        2,
        ["group_vars/npu_node/deep.json: nested more than 100 levels deep"],
        id="JSON nested past the recursion limit",
    ),
    pytest.param(
        {"group_vars/npu_node/deep.json": '{"x": ' + "[" * 120 + "]" * 120 + "}"},
        2,
        ["group_vars/npu_node/deep.json: nested more than 100 levels deep"],
        id="JSON nested past the limit",
    ),
    pytest.param(
        {"group_vars/npu_node/deep.yml": "x: " + "[" * 60000 + "]" * 60000 + "\n"},
        2,
        ["group_vars/npu_node/deep.yml:1:", "nested more than 100 levels deep"],
        id="YAML deep enough to crash libyaml",
    ),
    pytest.param({"chain.yml": _chain(3000)}, 0, ["OK"], id="3,000 groups chained across keys"),
    # -- connection variables
    *[
        pytest.param(
            {"host_vars/npu00003.yml": f"{var}: {value}\n"},
            2,
            [f"host_vars/npu00003.yml: host npu00003: {var} {message}"],
            id=f"{var} {value}",
        )
        for var, value, message in [
            ("ansible_host", '""', "is empty"),
            ("ansible_host", "", "is empty"),
            ("ansible_host", "10.0.0.300", "'10.0.0.300' is not an IP address or a host name"),
            ("ansible_host", '"1.2.3.4; rm -rf /"', "'1.2.3.4; rm -rf /' is not an IP address"),
            ("ansible_host", "[10.0.0.1]", "is a list, not an address"),
            ("ansible_host", "-oProxyCommand=x", "'-oProxyCommand=x' is not an IP address or a host name"),
            ("ansible_host", "node_1.dc", "'node_1.dc' is not an IP address or a host name"),
            ("ansible_ssh_host", "a..b", "'a..b' is not an IP address or a host name"),
            ("ansible_port", "70000", "70000 is outside 1..65535"),
            ("ansible_port", "0", "0 is outside 1..65535"),
            ("ansible_port", '"22x"', "'22x' is not a port number"),
            ("ansible_port", "true", "is a boolean, not a port"),
            ("ansible_port", '""', "is empty, not a port"),
            ("ansible_user", "'root; reboot'", "'root; reboot' is not a user name"),
            ("ansible_user", "-oProxyCommand=x", "'-oProxyCommand=x' is not a user name"),
            ("ansible_user", "'a b'", "'a b' is not a user name"),
            ("ansible_user", '""', "is empty, not a user name"),
            ("ansible_ssh_user", "'$(id)'", "'$(id)' is not a user name"),
        ]
    ],
    pytest.param(
        {"host_vars/npu00003.yml": "ansible_host: fe80::1\nansible_port: '2222'\nansible_user: ops.admin\n"},
        0,
        ["OK"],
        id="valid connection vars",
    ),
    pytest.param(
        {"host_vars/npu00003.yml": "ansible_host: npu3.dc1.example.com.\nansible_user: !unsafe 'x{{'\n"},
        2,
        ["ansible_user 'x{{' is not a user name"],
        id="unsafe values are checked as written",
    ),
    pytest.param(
        {"group_vars/kube_node.yml": "ansible_user: \"{{ admin_user }}\"\n"},
        0,
        ["Warning: ", "group_vars/kube_node.yml: hosts npu[00001:00008]: ansible_user is a template"],
        id="templated ansible_user: a warning",
    ),
    # -- lookups run on the controller
    pytest.param(
        {"group_vars/npu_node/secret.yml": "token: \"{{ lookup('file', '/etc/shadow') }}\"\n"},
        0,
        ["Warning: ", "group_vars/npu_node/secret.yml: token calls lookup(...) in a template"],
        id="lookup in group_vars",
    ),
    pytest.param(
        {"host_vars/npu00004.yml": "keys:\n  - \"{{ query('fileglob', '/root/*') }}\"\n"},
        0,
        ["host_vars/npu00004.yml: keys calls query(...)"],
        id="query nested in a list",
    ),
    pytest.param(
        {"extra.yml": "extra:\n  hosts:\n    x1:\n      k: \"{{ q('env', 'HOME') }}\"\n"},
        0,
        ["extra.yml: host x1: k calls q(...)"],
        id="q in an inventory file",
    ),
]


@pytest.mark.parametrize(("files", "code", "texts"), INVENTORY_CASES)
def test_inventory_input(inv: Path, files: dict[str, str], code: int, texts: list[str]) -> None:
    result = check(inv, files)
    assert result.exit_code == code, result.output
    for text in texts:
        assert text in result.output, result.output


def test_a_file_that_does_not_parse_brings_no_ghost_warnings(inv: Path) -> None:
    # Its hosts are missing, so their host_vars/ would look unused: only the file's error is shown.
    hosts = (inv / "hosts.yml").read_text()
    result = check(inv, {"hosts.yml": hosts + "all:\n  vars: {}\n", "host_vars/npu00001.yml": "rack: r1\n"})
    assert result.exit_code == 2, result.output
    assert "hosts.yml:" in result.output and "duplicate key 'all' (also at line 1)" in result.output
    assert "Warning" not in result.output, result.output


def test_unsafe_lookup_is_no_warning(inv: Path) -> None:
    result = check(inv, {"group_vars/npu_node.yml": "t: !unsafe \"{{ lookup('file', '/x') }}\"\n"})
    assert result.exit_code == 0 and "Warning" not in result.output, result.output


# -- empty flags are errors, not wildcards, for every command that takes them


@pytest.fixture()
def no_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing may be run or contacted: a run would mean the bad flag got through."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a playbook run was started")

    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", refuse)
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", refuse)
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


INVENTORY_COMMANDS = [
    ["inventory", "check"],
    ["inventory", "show"],
    ["deploy", "--check"],
    ["plan", "upgrade-drivers", "--batch", "2"],
    ["upgrade-drivers", "--batch", "2", "--dry-run"],
    ["etcd", "status"],
    ["etcd", "defrag", "--dry-run"],
    ["etcd", "prune", "--cluster", "core"],
]


@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
@pytest.mark.parametrize("command", INVENTORY_COMMANDS, ids=[" ".join(c[:2]) for c in INVENTORY_COMMANDS])
def test_empty_inventory_flag_is_refused(
    command: list[str], value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_runs: None
) -> None:
    # The working directory holds an inventory: an empty --inventory used to read it.
    write_cluster_inventory(tmp_path / "cwd" / "inv", ClusterShape(npu_nodes=4), "explicit")
    monkeypatch.chdir(tmp_path / "cwd")
    result = run(*command, "--inventory", value)
    clean(result)
    assert result.exit_code == 2, result.output
    assert f"Error: --inventory {value!r}: empty" in result.output


LIMIT_COMMANDS = [
    ["deploy", "--check"],
    ["plan", "upgrade-drivers", "--batch", "2"],
    ["upgrade-drivers", "--batch", "2", "--dry-run"],
]


@pytest.mark.parametrize("value", ["", " ", ",", " : "], ids=["empty", "blank", "comma", "colon"])
@pytest.mark.parametrize("command", LIMIT_COMMANDS, ids=[" ".join(c[:2]) for c in LIMIT_COMMANDS])
def test_empty_limit_is_refused(command: list[str], value: str, inv: Path, no_runs: None) -> None:
    result = run(*command, "-i", str(inv), "--limit", value)
    clean(result)
    assert result.exit_code == 2, result.output
    assert f"Error: --limit {value!r}: the pattern is empty" in result.output


# -- placement input


def _lists(depth: int) -> dict[str, object]:
    doc: dict[str, object] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    for _ in range(depth):
        doc = {"apiVersion": "v1", "kind": "List", "items": [doc]}
    return doc


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}

# (file name, content, exit code, texts the output must hold; FILE stands for the file's path)
PLACEMENT_CASES = [
    pytest.param("s.json", "", 2, ["Error: FILE: no Kubernetes objects (empty input)", "probably failed"],
                 id="0-byte file"),
    pytest.param("s.yaml", "---\n", 2, ["Error: FILE: no Kubernetes objects (empty input)"], id="--- only"),
    pytest.param("s.yaml", "# nothing\n---\n...\n", 2, ["FILE: no Kubernetes objects"], id="comments only"),
    pytest.param("s.json", "{}", 2, ["Error: FILE: document 1: an empty object ({})", "probably failed"],
                 id="{}"),
    pytest.param("s.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": []}), 2,
                 ["Error: FILE: no Kubernetes objects (only empty Lists)", "found nothing"], id="empty List"),
    pytest.param("s.yaml", "kind: PodList\nitems: []\n---\nkind: NodeList\nitems: []\n", 2,
                 ["no Kubernetes objects (only empty Lists)"], id="empty Lists in YAML"),
    pytest.param("s.json", json.dumps(_lists(2)), 0, ["checked 1 node(s)"], id="List in a List"),
    pytest.param("s.json", json.dumps(_lists(4)), 0, ["checked 1 node(s)"], id="Lists 4 deep"),
    pytest.param("s.json", json.dumps(_lists(5)), 2,
                 ["Error: FILE: document 1 items[0] items[0] items[0] items[0]: Lists nested more than 4"],
                 id="Lists 5 deep"),
    pytest.param("s.json", '{"kind": "List", "items": ' + "[" * 3000 + "]" * 3000 + "}", 2,
                 ["Error: FILE: JSON nested too deeply to read"], id="JSON past the recursion limit"),
    pytest.param("s.json", "".join(['{"kind":"List","items":['] * 3000) + "]}" * 3000, 2,
                 ["Error: FILE: JSON nested too deeply to read"], id="3,000 nested Lists"),
    pytest.param("s.yaml", "kind: List\nitems: " + "[" * 60000 + "]" * 60000 + "\n", 2,
                 ["Error: FILE: nested more than 100 levels deep at line 2"], id="YAML deep enough to crash"),
    pytest.param("s.yaml", _bomb(), 2, ["Error: FILE: aliases expand to more than 1,000,000 nodes"],
                 id="alias bomb"),
    pytest.param("s.yaml", "kind: Node\nmetadata: &m {name: n1, x: *m}\n", 2, ["alias *m is inside"],
                 id="recursive alias"),
    pytest.param("s.bin", b"\xff\xfe\x00garbage", 2, ["Error: FILE: not UTF-8 text (byte 0)"], id="binary"),
]


@pytest.mark.parametrize(("name", "content", "code", "texts"), PLACEMENT_CASES)
def test_placement_input(
    tmp_path: Path, name: str, content: str | bytes, code: int, texts: list[str]
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    result = run("placement", "validate", str(path))
    clean(result)
    assert result.exit_code == code, result.output
    for text in texts:
        assert text.replace("FILE", str(path)) in result.output, result.output


def test_empty_list_beside_objects_is_fine(tmp_path: Path) -> None:
    # `kubectl get ascendjobs -A -o json` with no jobs is an empty List: a true answer, not a failure.
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(_lists(1)))
    result = run("placement", "validate", str(nodes), str(jobs))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("stdin", "text"),
    [
        pytest.param("", "Error: -: no Kubernetes objects (empty input)", id="empty"),
        pytest.param(b"\xff\xfe\x00bad", "Error: -: not UTF-8 text (byte 0)", id="binary"),
        pytest.param(b"kind: Node\nmetadata: {name: \xe9t\xe9}\n", "Error: -: not UTF-8 text (byte 28)",
                     id="latin-1"),
        pytest.param("{}", "Error: -: document 1: an empty object ({})", id="{}"),
    ],
)
def test_placement_stdin(stdin: str | bytes, text: str) -> None:
    result = run("placement", "validate", "-", stdin=stdin)
    clean(result)
    assert result.exit_code == 2 and text in result.output, result.output


def _console(
    args: list[str], stdin: Callable[[], None] | None = None, data: bytes | None = None
) -> tuple[int, str]:
    script = Path(sys.executable).parent / "ufcctl"
    if not script.exists():
        pytest.skip("ufcctl console script not installed in this environment")
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore", LC_ALL="C")
    proc = subprocess.run(
        [str(script), *args],
        input=data,
        preexec_fn=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stderr.decode(errors="replace")


def test_placement_stdin_closed() -> None:
    code, err = _console(["placement", "validate", "-"], stdin=lambda: os.close(0))
    assert code == 2, err
    assert "Error: -: standard input is closed" in err and "internal error" not in err


def test_placement_binary_stdin_in_a_c_locale() -> None:
    # Python's text stdin turns bad bytes into surrogates in a C locale; they used to crash later.
    code, err = _console(["placement", "validate", "-"], data=b"\xff\xfe\x00bad")
    assert code == 2, err
    assert "Error: -: not UTF-8 text" in err and "internal error" not in err
