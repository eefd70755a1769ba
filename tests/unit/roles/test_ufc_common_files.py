"""roles/ufc_common's `ufc_files` action, run by ansible-playbook against localhost into a tmp dir:
what it writes, idempotence, check mode, --diff, owners and modes, validate, secrets, bad input."""

from __future__ import annotations

import base64
import grp
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
SECRET = "s3cr3t-do-not-show-4f9a"
TEMPLATE = """\
# {{ ansible_managed }}
name={{ demo_name }}
{% for item in demo_items %}
item={{ item }}
{% endfor %}
path={{ template_destpath }}
"""


def _role(base: Path, tasks: list[dict[str, Any]]) -> None:
    """A role `demo` that depends on ufc_common and runs `tasks` (templates/files of its own)."""
    role = base / "roles" / "demo"
    for sub in ("tasks", "meta", "templates", "files"):
        (role / sub).mkdir(parents=True, exist_ok=True)
    (role / "meta" / "main.yml").write_text(yaml.safe_dump({"dependencies": [{"role": "ufc_common"}]}))
    (role / "templates" / "conf.j2").write_text(TEMPLATE)
    (role / "files" / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (role / "tasks" / "main.yml").write_text(yaml.safe_dump(tasks, sort_keys=False))


def _run(base: Path, tasks: list[dict[str, Any]], *flags: str) -> dict[str, Any]:
    """ansible-playbook of role demo on localhost (local connection); the json callback's report."""
    _role(base, tasks)
    play = [
        {
            "name": "demo",
            "hosts": "localhost",
            "gather_facts": False,
            "roles": ["demo"],
            "vars": {"demo_items": ["a", "b"], "ansible_python_interpreter": sys.executable},
        }
    ]
    (base / "play.yml").write_text(yaml.safe_dump(play))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": f"{base / 'roles'}:{ROOT / 'roles'}",
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    }
    proc = subprocess.run(
        [str(PLAYBOOK_BIN), "-i", "localhost,", "-c", "local", *flags, str(base / "play.yml")],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    start = proc.stdout.find("{\n")  # ansible.cfg's profile_tasks prints its recap too
    assert start >= 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report, _ = json.JSONDecoder().raw_decode(proc.stdout[start:])
    report["raw"] = proc.stdout + proc.stderr
    return dict(report)


def _result(report: dict[str, Any], name: str) -> dict[str, Any]:
    found = [
        t["hosts"]["localhost"]
        for p in report["plays"]
        for t in p["tasks"]
        if t["task"]["name"] in (name, f"demo : {name}")
    ]
    assert len(found) == 1, f"task {name!r}: {len(found)} results"
    return dict(found[0])


def _files_task(out: Path, name: str = "files", **extra: Any) -> dict[str, Any]:
    """One ufc_files task writing a directory, a template, a literal, a binary and a secret file."""
    args = {
        "directories": [{"path": str(out / "conf.d"), "mode": "0750"}],
        "files": [
            {
                "dest": str(out / "conf.d" / "app.conf"),
                "template": "conf.j2",
                "vars": {"demo_name": "one"},
                "mode": "0640",
            },
            {"dest": str(out / "conf.d" / "plain.txt"), "content": "plain text\n", "mode": "0644"},
            {"dest": str(out / "conf.d" / "blob.bin"), "src": "blob.bin", "mode": "0600"},
            {"dest": str(out / "conf.d" / "token"), "content": SECRET + "\n", "mode": "0600", "secret": True},
        ],
    }
    return {"name": name, "ufc_files": args, **extra}


def _mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o7777)


def _drift(name: str, module: str, **args: Any) -> dict[str, Any]:
    """A task that changes a written file behind ufc_files' back (its own diff not shown)."""
    return {"name": name, module: args, "diff": False}


def test_writes_like_the_template_module_then_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    reference = {
        "name": "reference",
        "ansible.builtin.template": {"src": "conf.j2", "dest": str(out / "reference.conf"), "mode": "0640"},
        "vars": {"demo_name": "one"},
    }
    report = _run(tmp_path, [_files_task(out, "first"), _files_task(out, "again"), reference])
    first, again = _result(report, "first"), _result(report, "again")
    conf = out / "conf.d"
    names = ("app.conf", "plain.txt", "blob.bin", "token")
    assert first["changed"] is True and [f["changed"] for f in first["files"]] == [True] * 4
    assert first["changed_paths"] == [str(conf), *(str(conf / n) for n in names)]
    assert again["changed"] is False and again["changed_paths"] == []
    assert not any(f["changed"] for f in again["files"])
    # byte for byte what ansible.builtin.template writes (template_destpath aside: it names the file)
    ours = (conf / "app.conf").read_text().replace(str(conf / "app.conf"), "DEST")
    theirs = (out / "reference.conf").read_text().replace(str(out / "reference.conf"), "DEST")
    assert ours == theirs and "item=a\nitem=b\n" in ours and ours.endswith("path=DEST\n")
    assert (conf / "blob.bin").read_bytes() == bytes(range(256)) * 4
    assert (conf / "token").read_text() == SECRET + "\n"
    assert [_mode(conf / n) for n in names] == ["0o640", "0o644", "0o600", "0o600"]
    assert _mode(conf) == "0o750"
    assert not [p.name for p in conf.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_check_mode_reports_each_change_and_writes_nothing(tmp_path: Path) -> None:
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    out.mkdir()
    fresh.mkdir()
    conf = out / "conf.d"
    tasks = [
        _files_task(out, "converge"),
        _drift("drift content", "ansible.builtin.copy", dest=str(conf / "plain.txt"), content="drifted\n"),
        _drift("drift mode", "ansible.builtin.file", path=str(conf / "blob.bin"), mode="0644"),
        _files_task(out, "drifted", check_mode=True, diff=True),
        _files_task(fresh, "new", check_mode=True),
    ]
    report = _run(tmp_path, tasks)
    drifted, new = _result(report, "drifted"), _result(report, "new")
    assert drifted["changed_paths"] == [str(conf / "plain.txt"), str(conf / "blob.bin")]
    by_dest = {Path(f["dest"]).name: f for f in drifted["files"]}
    assert (by_dest["plain.txt"]["content"], by_dest["blob.bin"]["content"]) == (True, False)
    assert by_dest["blob.bin"]["attributes"] is True
    assert (conf / "plain.txt").read_text() == "drifted\n" and _mode(conf / "blob.bin") == "0o644"
    texts = [d for d in drifted["diff"] if d.get("before_header") == str(conf / "plain.txt")]
    assert texts and texts[0]["before"] == "drifted\n" and texts[0]["after"] == "plain text\n"
    assert new["changed"] is True and all(f["created"] for f in new["files"])
    assert list(fresh.iterdir()) == []  # not even the directory


def test_owner_group_and_mode_drift_is_fixed_in_place(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    conf = out / "conf.d"
    tasks = [
        _files_task(out, "converge"),
        {"name": "inode", "ansible.builtin.stat": {"path": str(conf / "app.conf")}, "register": "before"},
        _drift("drift file", "ansible.builtin.file", path=str(conf / "app.conf"), mode="0666"),
        _drift("drift directory", "ansible.builtin.file", path=str(conf), mode="0755"),
        _files_task(out, "fix"),
    ]
    report = _run(tmp_path, tasks)
    fix = _result(report, "fix")
    assert fix["changed_paths"] == [str(conf), str(conf / "app.conf")]
    entry = next(f for f in fix["files"] if f["dest"] == str(conf / "app.conf"))
    assert (entry["content"], entry["attributes"]) == (False, True)
    assert _mode(conf / "app.conf") == "0o640" and _mode(conf) == "0o750"
    assert (conf / "app.conf").stat().st_ino == _result(report, "inode")["stat"]["inode"]  # not rewritten


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_owner_and_group_by_name(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    owned = {
        "dest": str(out / "owned"),
        "content": "x\n",
        "mode": "0640",
        "owner": "nobody",
        "group": "nogroup",
    }
    unknown = {"dest": str(out / "other"), "content": "x\n", "mode": "0640", "group": "no-such-group-ufc"}
    tasks = [
        {"name": "owned", "ufc_files": {"files": [owned]}},
        {"name": "unknown", "ignore_errors": True, "ufc_files": {"files": [unknown]}},
        {"name": "unknown checked", "check_mode": True, "ufc_files": {"files": [unknown]}},
    ]
    report = _run(tmp_path, tasks)
    assert _result(report, "owned")["changed"] is True
    st = (out / "owned").stat()
    assert (st.st_uid, st.st_gid) == (pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)
    failed = _result(report, "unknown")
    assert failed["failed"] is True
    assert f"{out / 'other'}: group no-such-group-ufc does not exist" in failed["msg"]
    # in check mode a group that an earlier task (a package) would create is "would change"
    assert _result(report, "unknown checked")["changed"] is True
    assert not (out / "other").exists()


def test_a_failed_validate_replaces_no_file_of_the_call(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    conf = out / "conf.d"
    files = [
        {
            "dest": str(conf / "app.conf"),
            "template": "conf.j2",
            "vars": {"demo_name": "two"},
            "mode": "0640",
            "validate": "grep -q name=two %s",
        },
        {
            "dest": str(conf / "plain.txt"),
            "content": "new text\n",
            "mode": "0644",
            "validate": "grep -q ^valid %s",
        },
    ]
    accepted = [{**files[0]}, {**files[1], "content": "valid text\n"}]
    tasks = [
        _files_task(out, "converge"),
        {"name": "refused", "ignore_errors": True, "ufc_files": {"files": files}},
        {"name": "kept app", "ansible.builtin.slurp": {"src": str(conf / "app.conf")}},
        {"name": "kept plain", "ansible.builtin.slurp": {"src": str(conf / "plain.txt")}},
        {"name": "accepted", "ufc_files": {"files": accepted}},
    ]
    report = _run(tmp_path, tasks)
    refused = _result(report, "refused")
    assert refused["failed"] is True
    assert f"{conf / 'plain.txt'}: validate failed (rc 1)" in refused["msg"]
    assert "no file of this call was replaced" in refused["msg"]
    assert str(conf / "app.conf") not in refused["msg"]  # its own check passed...
    kept = base64.b64decode(_result(report, "kept app")["content"]).decode()
    assert "name=one" in kept  # ...yet it was not replaced either
    assert base64.b64decode(_result(report, "kept plain")["content"]) == b"plain text\n"
    assert _result(report, "accepted")["changed"] is True
    assert (conf / "plain.txt").read_text() == "valid text\n" and "name=two" in (
        conf / "app.conf"
    ).read_text()
    assert not [p.name for p in conf.iterdir() if p.name.startswith(".")]


def test_secret_contents_never_reach_the_output(tmp_path: Path) -> None:
    conf = tmp_path / "out" / "conf.d"
    conf.mkdir(parents=True)
    (conf / "token").write_text("old " + SECRET + "\n")
    secret_check = {
        "dest": str(conf / "token"),
        "content": SECRET + "-2\n",
        "mode": "0600",
        "secret": True,
        "validate": "grep -q nothing-matches %s",
    }
    tasks = [
        _files_task(tmp_path / "out", "diffed"),
        {"name": "secret check", "ignore_errors": True, "ufc_files": {"files": [secret_check]}},
    ]
    report = _run(tmp_path, tasks, "--diff", "-vvv")
    diffed = _result(report, "diffed")
    names = ("app.conf", "plain.txt", "blob.bin", "token")
    assert diffed["changed_paths"] == [str(conf), *(str(conf / n) for n in names)]
    secret_line = f"{conf / 'token'}: content changed (not shown: secret)"
    assert any(d.get("prepared") == secret_line for d in diffed["diff"])
    assert any(d.get("after") == "plain text\n" for d in diffed["diff"])  # other files' diffs are shown
    expected = {"directories": [str(conf)], "files": [str(conf / n) for n in names]}
    assert diffed["invocation"] == {"module_args": expected}
    failed = _result(report, "secret check")
    assert failed["failed"] is True and "(hidden: secret file)" in failed["msg"]
    assert (conf / "token").read_text() == SECRET + "\n"  # written by the first task, kept by the second
    for text in (SECRET, base64.b64encode(f"{SECRET}\n".encode()).decode()):
        assert text not in report["raw"]  # stdout (json report at -vvv) and stderr


BAD_ENTRIES = [
    ({"content": "x"}, "files[0] (DEST): mode is required"),
    (
        {"content": "x", "src": "blob.bin", "mode": "0644"},
        "files[0] (DEST): give exactly one of template, content, src (got content, src)",
    ),
    ({"content": "x", "mode": "0644", "backup": True}, "files[0] (DEST): unknown option(s) backup"),
    ({"content": "x", "mode": "0644", "vars": {"a": 1}}, "files[0] (DEST): vars applies to template only"),
    ({"content": "x", "mode": "rw-r--r--"}, "DEST: mode 'rw-r--r--' is not an octal number"),
    ({"content": "x", "mode": "0644", "validate": "true"}, "DEST: validate must contain %s"),
    ({"content": "x = \n", "mode": "0644", "format": "toml"}, "files[0] (DEST): not valid TOML"),
    ({"content": "x = 1\n", "mode": "0644", "format": "yaml"}, "files[0] (DEST): format 'yaml' unknown"),
]


def test_bad_entries_name_the_file_and_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    tasks = [
        {
            "name": f"bad {i}",
            "ignore_errors": True,
            "ufc_files": {"files": [{"dest": str(out / f"f{i}"), **entry}]},
        }
        for i, (entry, _) in enumerate(BAD_ENTRIES)
    ]
    orphan = tmp_path / "nowhere" / "file"
    tasks.append(
        {
            "name": "orphan",
            "ignore_errors": True,
            "check_mode": True,  # refused before anything would be written
            "ufc_files": {"files": [{"dest": str(orphan), "content": "x", "mode": "0644"}]},
        }
    )
    report = _run(tmp_path, tasks)
    for i, (_, message) in enumerate(BAD_ENTRIES):
        result = _result(report, f"bad {i}")
        assert result["failed"] is True and message.replace("DEST", str(out / f"f{i}")) in result["msg"], (
            result
        )
    assert list(out.iterdir()) == []
    result = _result(report, "orphan")
    assert result["failed"] is True
    assert f"{orphan}: directory {orphan.parent} does not exist (list it under directories)" in result["msg"]


def test_numeric_ids_that_name_nobody_are_used_as_ids() -> None:
    # ansible.builtin.file takes "1000" for a uid that has no user (the NFS dataset owner need not
    # exist on the server); a number that does name a user still resolves by name first
    library = ROOT / "roles" / "ufc_common" / "library" / "ufc_files.py"
    module = load_file(library, "ufc_files_module")
    assert module.resolve_ids("4242", "4243", "/x", False) == (4242, 4243)  # no user/group is named "4242"
    assert module.resolve_ids("root", "0", "/x", False) == (0, 0)
    with pytest.raises(module.Refused, match="/x: user no-such-user-ufc does not exist"):
        module.resolve_ids("no-such-user-ufc", None, "/x", False)



CONFIG_LINE_VALUES = {
    "interface": ("ufc_vip_interface", "eth0\n    notify /tmp/x.sh", "is not a network interface name"),
    "ca-file": ("apiserver_lb_check_ca_file", "/ca\n    server evil 6.6.6.6:6443", "is not an absolute path"),
    "tor-id": ("npu_tor_id", "tor-1,evil=1", "is not a Kubernetes label value"),
}
LINE_BREAK_ITEMS = {
    "newline": ["a", "b\n  notify_master /tmp/x.sh"],
    "carriage-return": ["a\rb"],
    "escape": ["\x1b]0;title\x07"],
}


@pytest.fixture(scope="module")
def refused_values(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One ansible-playbook run for the refusal cases below: one ufc_files task per case, each with its
    own vars, its own output directory (out-<case>) and ignore_errors, so every case is refused (or not)
    on its own. (report, base directory)"""
    base = tmp_path_factory.mktemp("refused")
    cases = {**{case: {var: value} for case, (var, value, _) in CONFIG_LINE_VALUES.items()},
             **{case: {"demo_items": items} for case, items in LINE_BREAK_ITEMS.items()}}
    tasks = []
    for case, variables in cases.items():
        (base / f"out-{case}").mkdir()
        tasks.append({**_files_task(base / f"out-{case}", f"files {case}"), "ignore_errors": True,
                      "vars": variables})
    return _run(base, tasks), base


@pytest.mark.parametrize("case", list(CONFIG_LINE_VALUES))
def test_a_value_that_would_add_config_lines_renders_nothing(refused_values: tuple[dict[str, Any], Path],
                                                             case: str) -> None:
    """Plain ansible-playbook, no `ufcctl inventory check`: the action refuses before rendering (issue 42)."""
    report, base = refused_values
    var, _, message = CONFIG_LINE_VALUES[case]
    result = _result(report, f"files {case}")
    assert result["failed"] is True and f"ufc_files: {var} " in result["msg"] and message in result["msg"]
    assert list((base / f"out-{case}").iterdir()) == []


@pytest.mark.parametrize("case", list(LINE_BREAK_ITEMS))
def test_no_variable_prints_a_line_break_into_a_template(refused_values: tuple[dict[str, Any], Path],
                                                         case: str) -> None:
    """Any variable the template reads, not only those config_values knows (issue 42): refused, nothing
    written, the template and the variable named."""
    report, base = refused_values
    result = _result(report, f"files {case}")
    assert result["failed"] is True, result
    assert "template conf.j2: demo_items" in result["msg"] and "holds a line break" in result["msg"]
    assert list((base / f"out-{case}").iterdir()) == []


def test_template_names_are_what_the_template_reads_from_outside() -> None:
    plugin = load_file(ROOT / "roles/ufc_common/action_plugins/ufc_files.py")
    text = ("{% set me = plan.peers[host] %}{% for p in me.list | to_json %}{{ p }}{{ x | ufcctl_x }}"
            "{% endfor %}")
    assert plugin.template_names(text) == {"plan", "host", "x"}
    assert plugin.line_breaking({"a": "ok", "b": "x\ny"}) == "x\ny"
    assert plugin.line_breaking(["ok", 1, "tab\tok"]) is None
