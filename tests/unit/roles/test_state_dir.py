"""The roles' controller paths: one state-directory expression everywhere, never inside the package.

An installed wheel ships the roles in site-packages/ufcctl/share/; a role that fell back to
`playbook_dir/../.ufc` there kept CA keys inside the package, lost on the next reinstall.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleUndefinedVariable
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

from tests.helpers.ansible_values import trusted

ROOT = Path(__file__).resolve().parents[3]
# (role, file under the role, variable, path under the state directory)
STATE_PATHS = [
    ("etcd", "defaults/main.yml", "etcd_pki_controller_dir", "pki/c1/etcd"),
    ("kube_node", "defaults/main.yml", "kube_node_pki_controller_dir", "pki/c1/kubernetes"),
    ("kube_control_plane", "defaults/main.yml", "kube_control_plane_pki_controller_dir", "pki/c1/kubernetes"),
    ("k8s_manifests", "defaults/main.yml", "k8s_manifests_state_dir", ""),
    ("apiserver_lb", "vars/main.yml", "__apiserver_lb_state_dir", ""),
]
IDS = [row[2] for row in STATE_PATHS]
FALLBACK_MARKERS = ("UFC_STATE_DIR", "ufc_state_dir", "playbook_dir ~ '/../", "/.ufc")


def _value(role: str, file: str, var: str) -> str:
    return yaml.safe_load((ROOT / "roles" / role / file).read_text())[var]


def _state_expression(value: str) -> str:
    """The `{{ ... }}` holding the state directory (the first one: the path's leading component)."""
    return value[: value.index("}}") + 2]


def test_every_controller_path_default_uses_the_one_expression() -> None:
    expressions = {var: _state_expression(_value(role, file, var)) for role, file, var, _ in STATE_PATHS}
    assert len(set(expressions.values())) == 1, expressions
    # and no other role value falls back to a state directory of its own
    listed = {(role, file, var) for role, file, var, _ in STATE_PATHS}
    roles = ROOT / "roles"
    for path in sorted([*roles.glob("*/defaults/main.yml"), *roles.glob("*/vars/main.yml")]):
        role, file = path.parts[-3], "/".join(path.parts[-2:])
        for var, value in (yaml.safe_load(path.read_text()) or {}).items():
            text = str(value)
            if (role, file, var) not in listed and any(m in text for m in FALLBACK_MARKERS):
                assert "__apiserver_lb_state_dir" in text, f"{role}/{file}: {var} computes a state dir itself"


@pytest.fixture()
def layouts(tmp_path: Path) -> dict[str, Path]:
    """A ufcctl checkout and an installed wheel, each with the roles in it."""
    checkout = tmp_path / "checkout"
    (checkout / "pyproject.toml").parent.mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'ufcctl'\n")
    package = tmp_path / "venv/lib/python3.11/site-packages/ufcctl"
    for root in (checkout, package / "share"):
        for role, *_ in STATE_PATHS:
            (root / "roles" / role).mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    return {"checkout": checkout, "installed": package / "share", "package": package}


@pytest.fixture(scope="module", autouse=True)
def _plugins() -> None:
    init_plugin_loader()


def _render(value: str, role_path: Path, extra: dict[str, str]) -> str:
    variables = {"role_path": str(role_path), "playbook_dir": str(role_path.parent.parent / "playbooks"),
                 "ufc_cluster_name": "c1", **extra}
    return str(Templar(loader=DataLoader(), variables=variables).template(trusted(value)))


# (layout, UFC_STATE_DIR or None, ufc_state_dir extra var or None) -> expected state dir (or None: fails)
CASES = [
    pytest.param("installed", None, "/given/state", "/given/state", id="installed-ufcctl-passes-it"),
    pytest.param("installed", "/abs/state", None, "/abs/state", id="installed-absolute-env"),
    pytest.param("installed", None, None, None, id="installed-nothing-set-fails"),
    pytest.param("installed", "rel/state", None, None, id="installed-relative-env-fails"),
    pytest.param("checkout", None, None, "{checkout}/.ufc", id="checkout-default"),
    pytest.param("checkout", "rel/state", None, "{checkout}/rel/state", id="checkout-relative-env"),
    pytest.param("checkout", "/abs/state", "/given/state", "/given/state", id="checkout-extra-var-wins"),
]


@pytest.mark.parametrize(("layout", "env_value", "given", "expected"), CASES)
@pytest.mark.parametrize(("role", "file", "var", "leaf"), STATE_PATHS, ids=IDS)
def test_the_state_directory_is_never_inside_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, layouts: dict[str, Path], layout: str,
    env_value: str | None, given: str | None, expected: str | None, role: str, file: str, var: str, leaf: str,
) -> None:
    if env_value is None:
        monkeypatch.delenv("UFC_STATE_DIR", raising=False)
    else:
        monkeypatch.setenv("UFC_STATE_DIR", env_value)
    # Ansible's working directory must not matter (ansible-runner runs it in a directory of its own)
    (tmp_path / "ansible-cwd").mkdir()
    monkeypatch.chdir(tmp_path / "ansible-cwd")
    role_path = layouts[layout] / "roles" / role
    extra = {"ufc_state_dir": given} if given else {}
    value = _value(role, file, var)
    if expected is None:
        with pytest.raises(AnsibleUndefinedVariable, match="UFC_STATE_DIR to an absolute directory"):
            _render(value, role_path, extra)
        return
    rendered = _render(value, role_path, extra)
    want = Path(expected.format(checkout=layouts["checkout"])) / leaf
    assert Path(rendered) == want
    assert not Path(rendered).is_relative_to(layouts["package"])
