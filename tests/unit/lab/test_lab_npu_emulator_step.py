"""`lab up`'s NPU emulator step without podman: what it asks of the emulator process, what the lab keeps
(the mirror's labels, group_vars/npu_node.yml), the skip without a checkout, and failures reported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.errors import RunFailed
from ufcctl.lab import emulators
from ufcctl.lab.image import ImageResult
from ufcctl.lab.inventory import NPU_NODE_VARS, InventoryPaths, render_inventory
from ufcctl.lab.lab import UpResult, _write_files
from ufcctl.lab.layout import plan_layout
from ufcctl.lab.npu import SKIPPED, NpuEmulator, prepare_npu_emulator, setup_args

LAYOUT = plan_layout("t1", 2, "10.89.70.0/24")
VARS = {"ascend_driver_artifact_url": "http://10.89.70.5:8080/hdk", "ufc_npu_driver_version": "24.1.rc2"}
REPLY = {"mirror": {"name": "t1-hdk-mirror", "url": VARS["ascend_driver_artifact_url"], "changed": True},
         "npu_node_vars": VARS}


def _option(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_setup_args_carry_the_lab_network_address_and_labels(tmp_path: Path) -> None:
    args = setup_args("t1", LAYOUT, tmp_path / "emu", "localhost/ufcctl-node:bookworm")
    assert args[0] == "setup"
    assert _option(args, "--network") == ["ufcctl-lab-t1"]
    assert _option(args, "--ip") == ["10.89.70.5"] and _option(args, "--name") == ["t1-hdk-mirror"]
    assert _option(args, "--workdir") == [str(tmp_path / "emu")]
    # the labels `lab down` and `lab status` find the mirror by
    labels = ["ufcctl.lab.name=t1", "ufcctl.lab.role=npu_mirror", "ufcctl.lab=1"]
    assert sorted(_option(args, "--label")) == labels
    assert "--no-inventory" in args and "--json" in args  # lab up writes the vars file itself


def test_without_a_checkout_the_emulator_is_skipped_and_not_run(tmp_path: Path) -> None:
    def run(args: list[str]) -> dict:
        raise AssertionError("the emulator must not run without a checkout")

    result = prepare_npu_emulator("t1", LAYOUT, tmp_path, "img", present=lambda: False, run=run)
    assert result.status == "skipped" and result.node_vars is None and not result.changed
    assert result.describe() == "skipped (needs a source checkout: tests/lab_standins/npu_emulator)"


def test_ready_emulator_hands_back_its_vars(tmp_path: Path) -> None:
    result = prepare_npu_emulator("t1", LAYOUT, tmp_path, "img", present=lambda: True, run=lambda a: REPLY)
    assert (result.status, result.mirror, result.changed) == ("ready", "t1-hdk-mirror", True)
    assert result.node_vars == VARS
    assert result.describe() == f"mirror t1-hdk-mirror serves {VARS['ascend_driver_artifact_url']}"


@pytest.mark.parametrize(
    ("reply", "message"),
    [(RunFailed("the lab NPU emulator failed (exit 1): boom", "run it by hand"), "boom"),
     ({"mirror": {"name": "x"}}, "lacks"), ({"npu_node_vars": {}}, "lacks")],
    ids=["process-failed", "mirror-incomplete", "no-mirror"],
)
def test_a_failing_emulator_is_returned_not_raised(tmp_path: Path, reply, message: str) -> None:
    def run(args: list[str]) -> dict:
        if isinstance(reply, RunFailed):
            raise reply
        return reply

    result = prepare_npu_emulator("t1", LAYOUT, tmp_path, "img", present=lambda: True, run=run)
    assert result.status == "failed" and result.node_vars is None
    assert result.error is not None and message in result.error.message


def _inventory(tmp_path: Path, node_vars: dict | None) -> dict[str, str]:
    keys = {n.name: "ssh-ed25519 AAAA" for n in LAYOUT.nodes}
    return render_inventory(LAYOUT, InventoryPaths(tmp_path, tmp_path / "key"), keys, node_vars)


def test_npu_node_vars_are_part_of_the_inventory_lab_up_writes(tmp_path: Path) -> None:
    files = _inventory(tmp_path, VARS)
    assert yaml.safe_load(files[NPU_NODE_VARS]) == VARS
    assert "tests/lab_standins/npu_emulator" in files[NPU_NODE_VARS]
    assert "not Huawei software" in files[NPU_NODE_VARS]
    assert NPU_NODE_VARS not in _inventory(tmp_path, None)


def test_a_second_lab_up_keeps_the_npu_node_vars_and_changes_nothing(tmp_path: Path) -> None:
    inventory = tmp_path / "inv"
    files = _inventory(tmp_path, VARS)
    assert _write_files(inventory, files) is True
    (inventory / "group_vars" / "stray.yml").write_text("not written by lab up\n")
    assert _write_files(inventory, files) is True  # the stray file is pruned ...
    assert (inventory / NPU_NODE_VARS).read_text() == files[NPU_NODE_VARS]  # ... the emulator's vars kept
    assert not (inventory / "group_vars" / "stray.yml").exists()
    assert _write_files(inventory, files) is False


def test_the_mirror_address_is_outside_every_node_vip_and_gateway() -> None:
    for layout in (LAYOUT, plan_layout("t1", 1, "10.89.70.0/27"), plan_layout("t1", 5, "10.89.70.0/27")):
        taken = {n.ip for n in layout.nodes} | {layout.vip, layout.gateway}
        assert layout.npu_mirror.ip not in taken
        assert layout.npu_mirror.name not in {n.name for n in layout.nodes}
        assert layout.npu_mirror.name.startswith("t1-")  # the lab's prefix: `lab down` removes it


def _fake_checkout(tmp_path: Path, main: str) -> Path:
    package = tmp_path / "tests" / "lab_standins" / "npu_emulator"
    package.mkdir(parents=True)
    (tmp_path / "tests" / "lab_standins" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(main)
    return tmp_path


def test_runner_runs_the_checkouts_emulator_as_a_process(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path, "import json, os, sys\n"
                                       "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd()}))\n")
    assert emulators.npu_emulator_present(checkout)
    data = emulators.run_npu_emulator(["setup", "--json"], checkout)
    assert data == {"argv": ["setup", "--json"], "cwd": str(checkout)}


def test_runner_failure_names_the_emulator_and_how_to_rerun_it(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path, "import sys\nprint('podman: no such network', file=sys.stderr)\n"
                                       "sys.exit(3)\n")
    with pytest.raises(RunFailed) as err:
        emulators.run_npu_emulator(["setup"], checkout)
    assert "tests/lab_standins/npu_emulator" in err.value.message and "exit 3" in err.value.message
    assert "podman: no such network" in err.value.message
    hint = err.value.hint or ""
    assert f"cd {checkout}" in hint and sys.executable in hint


def test_runner_refuses_output_that_is_not_json(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path, "print('mirror up')\n")
    with pytest.raises(RunFailed, match="printed no JSON"):
        emulators.run_npu_emulator(["setup"], checkout)


def test_this_checkout_has_the_emulator_and_an_empty_directory_has_not(tmp_path: Path) -> None:
    assert emulators.npu_emulator_present()
    assert not emulators.npu_emulator_present(tmp_path)


def _up_result(npu: NpuEmulator, created: tuple[str, ...] = ()) -> UpResult:
    return UpResult(layout=LAYOUT, inventory_dir=Path("/tmp/inv"), created=created, removed=(), restarted=(),
                    inventory_changed=False, image=ImageResult("img", "hash", built=False), npu_emulator=npu)


@pytest.mark.parametrize(
    ("npu", "line"),
    [(NpuEmulator("skipped"), f"NPU emulator: {SKIPPED}"),
     (NpuEmulator("ready", "t1-hdk-mirror", "http://10.89.70.5:8080/hdk", False, VARS),
      "NPU emulator: mirror t1-hdk-mirror serves http://10.89.70.5:8080/hdk")],
    ids=["skipped", "ready"],
)
def test_lab_up_says_what_became_of_the_emulator(monkeypatch: pytest.MonkeyPatch, npu, line: str) -> None:
    monkeypatch.setattr("ufcctl.cli.lab.lab_up", lambda *a, **k: _up_result(npu))
    result = CliRunner().invoke(cli, ["lab", "up", "--lab", "t1"])
    assert result.exit_code == 0, result.output
    assert "is already up" in result.output  # a kept mirror is part of a no-op rerun
    assert line in result.output


def test_a_restarted_mirror_is_not_a_no_op() -> None:
    npu = NpuEmulator("ready", "t1-hdk-mirror", "http://x", True, VARS)
    assert not _up_result(npu).already_up
    assert _up_result(NpuEmulator("ready", "t1-hdk-mirror", "http://x", False, VARS)).already_up
