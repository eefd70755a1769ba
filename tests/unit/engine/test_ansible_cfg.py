"""ufcctl runs use ansible.cfg's settings and no others: the environment the runner builds, and the
settings a real run sees compared with a plain `ansible-playbook` run of the same playbook."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine import ansible_cfg
from ufcctl.engine.runner import RunOptions, run_playbook

ROOT = Path(__file__).resolve().parents[3]
CFG = ROOT / "ansible.cfg"
# Plugins whose options ansible.cfg sets (beside Ansible's base settings).
PLUGINS = (("connection", "ssh"), ("callback", "default"))


def _cfg() -> dict[tuple[str, str], str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(CFG)
    return {(s, key): parser.get(s, key) for s in parser.sections() for key in parser[s]}


def _definitions() -> list[tuple[str, str | None, str | None, dict[str, Any]]]:
    """(setting, plugin type, plugin name, definition) for Ansible's base settings and PLUGINS' options."""
    import ansible.constants as C
    from ansible.plugins.loader import callback_loader, connection_loader

    connection_loader.get("ssh", class_only=True)  # loading registers the plugin's options
    callback_loader.get("default", class_only=True)
    found = [(name, None, None, d) for name, d in C.config.get_configuration_definitions().items()]
    for kind, plugin in PLUGINS:
        options = C.config.get_configuration_definitions(kind, plugin)
        found += [(name, kind, plugin, d) for name, d in options.items()]
    return found


def _ini_keys(definition: dict[str, Any]) -> set[tuple[str, str]]:
    return {(i["section"], i["key"]) for i in definition.get("ini") or ()}


def _runner_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The envvars run_playbook hands ansible-runner (ansible_runner replaced by a recorder)."""
    seen: dict[str, str] = {}

    class Stop(Exception):
        pass

    def run(**kwargs: Any) -> None:
        seen.update(kwargs["envvars"])
        raise Stop

    monkeypatch.setitem(sys.modules, "ansible_runner", types.SimpleNamespace(run=run))
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "play.yml").write_text("- hosts: all\n  tasks: []\n")
    with pytest.raises(Stop):
        run_playbook(tmp_path / "play.yml", [Host("h", {}, frozenset({"all"}))], RunOptions(forks=1))
    return seen


def test_every_key_of_ansible_cfg_is_a_setting_ansible_knows() -> None:
    """Guards the comparisons below: a key they cannot map would be compared by nobody."""
    known = set().union(*(_ini_keys(d) for *_, d in _definitions()))
    assert set(_cfg()) <= known, set(_cfg()) - known


def test_the_runner_sets_no_setting_of_ansible_cfg_but_the_documented_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = _runner_env(monkeypatch, tmp_path)
    cfg = _cfg()
    by_env = {e["name"]: (name, _ini_keys(d)) for name, _, _, d in _definitions() for e in d.get("env") or ()}
    overlapping = {
        var: by_env[var][0] for var in env if var in by_env and by_env[var][1] & set(cfg)
    }
    # ansible_cfg.RUNNER_OVERRIDDEN says why each one is passed; its value must be the file's own.
    assert set(overlapping) <= set(ansible_cfg.RUNNER_OVERRIDDEN), overlapping
    for var in overlapping:
        section, key, _ = ansible_cfg.RUNNER_OVERRIDDEN[var]
        assert env[var].lower() == cfg[(section, key)].lower(), var
    assert env["ANSIBLE_CONFIG"] == str(CFG)


def test_the_overridden_settings_are_in_ansible_cfg() -> None:
    cfg = _cfg()
    for var, (section, key, _) in ansible_cfg.RUNNER_OVERRIDDEN.items():
        assert (section, key) in cfg, f"{var}: ansible.cfg has no [{section}] {key}"


LOOKUP_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Write the settings this run sees
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ settings | to_json }}"
        mode: "0600"
      vars:
        settings: %s
"""


def _lookup_play() -> str:
    """A play writing, for every setting ansible.cfg sets, the value the running Ansible sees."""
    cfg = set(_cfg())
    exprs = {}
    for name, kind, plugin, d in _definitions():
        if not _ini_keys(d) & cfg:
            continue
        where = f", plugin_type='{kind}', plugin_name='{plugin}'" if kind else ""
        exprs[f"{kind or 'base'}:{name}"] = f"{{{{ lookup('ansible.builtin.config', '{name}'{where}) }}}}"
    return LOOKUP_PLAY % json.dumps(exprs)


def test_a_ufcctl_run_sees_the_settings_a_plain_ansible_playbook_run_sees(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for var in [v for v in os.environ if v.startswith("ANSIBLE_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    play = tmp_path / "play.yml"
    play.write_text(_lookup_play())
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}

    out_ufcctl = tmp_path / "ufcctl.json"
    host = Host("localhost", {**local, "out": str(out_ufcctl)}, frozenset({"all"}))
    result = run_playbook(play, [host], RunOptions(forks=1))
    assert result.status == "successful", result

    out_plain = tmp_path / "plain.json"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(play),
         "-e", json.dumps({**local, "out": str(out_plain)})],
        env={**os.environ, "ANSIBLE_CONFIG": str(CFG)}, cwd=ROOT, capture_output=True, text=True,
        timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    plain, ufcctl = json.loads(out_plain.read_text()), json.loads(out_ufcctl.read_text())
    assert len(plain) >= len(_cfg())  # every key of the file is looked up (several by two names)
    differ = {k: (plain[k], ufcctl.get(k)) for k in plain if ufcctl.get(k) != plain[k]}
    assert differ == {}, "setting: (ansible-playbook, ufcctl)"
