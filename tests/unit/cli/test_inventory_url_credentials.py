"""`ufcctl inventory check` refuses URLs with credentials in any variable, and never prints the password."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ufcctl.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[3] / "inventories" / "sample"
SECRET = "s3cr3t-pw"
_SEPARATE = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}

# (file under the inventory, its vars, the masked URL the problem must show); None: no problem
CASES: dict[str, tuple[str, dict[str, object], str | None]] = {
    "artifact-url": ("group_vars/all/zz.yml", {"ufc_artifact_url": f"https://ops:{SECRET}@files.example/ufc"},
                     "ufc_artifact_url holds a URL with credentials (https://ops:***@files.example/ufc)"),
    "registry-upstream-url": (
        "group_vars/all/zz.yml",
        {"registry_cache_upstreams": [{"name": "hub", "registry": "docker.io", "port": 5001,
                                       "url": f"https://bot:{SECRET}@registry-1.docker.io"}]},
        "registry_cache_upstreams holds a URL with credentials (https://bot:***@registry-1.docker.io)"),
    "monitoring-url-token-as-user": (
        "group_vars/all/zz.yml", {"monitoring_remote_write_url": f"http://{SECRET}@vm.example:8428/api/v1/write"},
        "monitoring_remote_write_url holds a URL with credentials (http://***@vm.example:8428/api/v1/write)"),
    "host-var": ("host_vars/npu016.yml", {"ufc_artifact_url": f"http://u:{SECRET}@10.0.0.5/"},
                 "ufc_artifact_url holds a URL with credentials (http://u:***@10.0.0.5/)"),
    "no-credentials": ("group_vars/all/zz.yml", {"ufc_artifact_url": "https://files.example/a@b"}, None),
}


@pytest.mark.parametrize(("where", "values", "problem"), CASES.values(), ids=CASES.keys())
def test_urls_with_credentials_are_refused_masked(where: str, values: dict[str, object], problem: str | None,
                                                  tmp_path: Path) -> None:
    inventory = tmp_path / "inv"
    shutil.copytree(SAMPLE, inventory)
    target = inventory / where
    target.parent.mkdir(parents=True, exist_ok=True)
    existing = yaml.safe_load(target.read_text()) if target.exists() else {}
    target.write_text(yaml.safe_dump({**(existing or {}), **values}))
    result = CliRunner(**_SEPARATE).invoke(cli, ["inventory", "check", "--inventory", str(inventory)])
    output = result.stdout + result.stderr
    assert SECRET not in output
    if problem is None:
        assert result.exit_code == 0, output
    else:
        assert result.exit_code == 2
        assert problem in output
