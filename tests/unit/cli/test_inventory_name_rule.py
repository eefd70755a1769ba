"""One rule for `--inventory` in every command: a bare NAME is ./inventories/NAME (then a shipped
inventory), never a folder of that name in the working directory; a path is a path.

The decoy is what broke the README's main job: the repository root once held `lab/` (Python
emulators), and `ufcctl deploy --inventory lab` read that folder instead of inventories/lab."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.errors import InputError
from ufcctl.paths import SAMPLE_INVENTORY, inventory_candidates, resolve_inventory

_SEPARATE = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}

# Every command that takes --inventory, with the other arguments it needs to get past click's parsing.
COMMANDS = [
    pytest.param(["deploy"], id="deploy"),
    pytest.param(["inventory", "check"], id="inventory-check"),
    pytest.param(["inventory", "show"], id="inventory-show"),
    pytest.param(["health"], id="health"),
    pytest.param(["upgrade-drivers", "--batch", "4"], id="upgrade-drivers"),
    pytest.param(["images", "preheat", "registry.example/img:v1"], id="images-preheat"),
    pytest.param(["etcd", "status"], id="etcd-status"),
    pytest.param(["etcd", "defrag"], id="etcd-defrag"),
    pytest.param(["etcd", "prune"], id="etcd-prune"),
    pytest.param(["add-nodes", "--limit", "npu001"], id="add-nodes"),
    pytest.param(["plan", "deploy"], id="plan-deploy"),
    pytest.param(["plan", "upgrade-drivers", "--batch", "4"], id="plan-upgrade-drivers"),
]


@pytest.fixture()
def decoy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory like a checkout: a `lab/` folder of Python files and no inventories/lab."""
    (tmp_path / "lab" / "npu_emulator").mkdir(parents=True)
    (tmp_path / "lab" / "__init__.py").write_text("")
    (tmp_path / "lab" / "npu_emulator" / "main.py").write_text("print('not an inventory')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


@pytest.mark.parametrize("args", COMMANDS)
def test_a_folder_named_like_the_inventory_does_not_hijack_it(decoy: Path, args: list[str]) -> None:
    result = CliRunner(**_SEPARATE).invoke(cli, [*args, "--inventory", "lab"])
    assert result.exit_code == 2, result.output
    # the error names every place looked at, and the decoy is not among them
    assert str(decoy / "inventories" / "lab") in result.stderr
    assert "no such directory" in result.stderr and "ufcctl lab up" in result.stderr
    assert "no inventory file found" not in result.stderr


@pytest.mark.parametrize(
    ("value", "where"),
    [
        pytest.param("lab", "inventories/lab", id="name-beside-decoy"),
        pytest.param("./lab", "lab", id="dot-slash-is-a-path"),
        pytest.param("inventories/lab", "inventories/lab", id="relative-path"),
        pytest.param("sample", None, id="shipped-sample"),
    ],
)
def test_names_and_paths_resolve_by_the_rule(decoy: Path, value: str, where: str | None) -> None:
    shutil.copytree(SAMPLE_INVENTORY, decoy / "inventories" / "lab")
    resolved = resolve_inventory(value)
    if where is None:
        assert resolved == SAMPLE_INVENTORY
    else:
        assert resolved.resolve() == (decoy / where).resolve()


def test_the_named_inventory_is_used_by_a_command(decoy: Path) -> None:
    shutil.copytree(SAMPLE_INVENTORY, decoy / "inventories" / "lab")
    result = CliRunner(**_SEPARATE).invoke(cli, ["inventory", "check", "--inventory", "lab"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("value", "count"),
    [("prod", 1), ("sample", 2), ("lab", 1), ("./prod", 1), ("a/b", 1), (".", 1), ("..", 1)],
)
def test_candidates(decoy: Path, value: str, count: int) -> None:
    assert len(inventory_candidates(value)) == count


def test_an_unknown_name_lists_every_place(decoy: Path) -> None:
    with pytest.raises(InputError) as err:
        resolve_inventory("prod")
    assert str(decoy / "inventories" / "prod") in str(err.value)


def test_a_name_never_reaches_the_checkouts_own_inventories(decoy: Path) -> None:
    """In a checkout, SHARE/inventories/ is the checkout's inventories/, which holds a developer's lab: from
    another directory `--inventory lab` must not find it (only the shipped `sample` is looked up there)."""
    checkout_lab = SAMPLE_INVENTORY.parent / "lab"
    with pytest.raises(InputError) as err:
        resolve_inventory("lab")
    assert str(checkout_lab) not in str(err.value)
    assert checkout_lab not in inventory_candidates("lab")
