"""`ufcctl init NAME` and where `--inventory NAME` and `.ufc/` are looked up: the working directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.paths import SAMPLE_INVENTORY, resolve_inventory, state_dir


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_scaffolds_the_sample_and_it_checks_clean(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("UFC_STATE_DIR", raising=False)
    code, out = _invoke("init", "prod")
    assert code == 0, out
    assert _tree_digest(tmp_path / "inventories" / "prod") == _tree_digest(SAMPLE_INVENTORY)
    code, out = _invoke("inventory", "check", "--inventory", "prod")
    assert code == 0, out
    assert "inventories/prod" in out


def test_init_never_overwrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "inventories" / "prod"
    target.mkdir(parents=True)
    (target / "hosts.yml").write_text("all: {}\n")
    code, out = _invoke("init", "prod")
    assert code == 2
    assert "already exists" in out and "inventories/prod" in out
    assert (target / "hosts.yml").read_text() == "all: {}\n"
    assert sorted(p.name for p in target.iterdir()) == ["hosts.yml"]


@pytest.mark.parametrize("name", ["", "../x", "a/b", ".hidden", "-rf", "a b"])
def test_init_refuses_names_that_are_not_plain(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _invoke("init", name)
    assert code == 2, out
    assert "Error:" in out and "Traceback" not in out
    assert not (tmp_path / "inventories").exists()


def test_inventory_name_is_looked_up_in_the_working_directory_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "inventories" / "sample"
    mine.mkdir(parents=True)
    assert resolve_inventory("sample") == Path("inventories/sample").absolute()
    mine.rmdir()
    # no ./inventories/sample: the sample ufcctl ships
    assert resolve_inventory("sample") == SAMPLE_INVENTORY


def test_unknown_inventory_names_both_places_and_the_init_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _invoke("inventory", "check", "--inventory", "prod")
    assert code == 2
    assert str(tmp_path / "inventories" / "prod") in out
    assert "ufcctl init prod" in out


def test_state_goes_to_the_working_directory_unless_ufc_state_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("UFC_STATE_DIR", raising=False)
    assert state_dir() == tmp_path / ".ufc"
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "elsewhere"))
    assert state_dir() == tmp_path / "elsewhere"
