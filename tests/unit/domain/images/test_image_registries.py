"""`ufc_image_registries`: the site's mirror of each upstream registry; the old single prefix refused
(issue 44, D13)."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.domain.images import registries

SAMPLE = Path(__file__).resolve().parents[4] / "inventories" / "sample"
_SEPARATE = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}
MIRRORS = {"registry.k8s.io": "mirror.example:5000/k8s", "quay.io": "mirror.example:5000/quay",
           registries.HUAWEI: "mirror.example:5000/swr"}


@pytest.mark.parametrize(("reference", "expected"), [
    ("quay.io/calico/node:v3.29.3", "mirror.example:5000/quay/calico/node:v3.29.3"),
    (f"{registries.HUAWEI}/ascendhub/noded:v26.0.0", "mirror.example:5000/swr/ascendhub/noded:v26.0.0"),
    ("registry.k8s.io/pause:3.10.1", "mirror.example:5000/k8s/pause:3.10.1"),
    ("docker.io/library/busybox:1.36", "docker.io/library/busybox:1.36"),  # not mapped: upstream
    ("10.0.0.5:5000/lab/preheat-test:v1", "10.0.0.5:5000/lab/preheat-test:v1"),
    ("noded:v26.0.0", "noded:v26.0.0"),  # a bare name names no registry
])
def test_a_reference_keeps_its_path_under_the_mirror(reference: str, expected: str) -> None:
    assert registries.mapped(reference, MIRRORS) == expected


@pytest.mark.parametrize(("raw", "expected", "problem"), [
    pytest.param(None, {}, None, id="unset"),
    pytest.param(MIRRORS, MIRRORS, None, id="good"),
    pytest.param({"quay.io": "", "docker.io": None}, {}, None, id="empty-means-upstream"),
    pytest.param("mirror.example", {}, "must be a mapping", id="a-single-prefix"),
    pytest.param({"https://quay.io": "m.example"}, {}, "key 'https://quay.io' is not a registry",
                 id="scheme-key"),
    pytest.param({"quay.io": "https://m.example/quay"}, {}, "is not a mirror prefix", id="scheme-value"),
    pytest.param({"quay.io": "m.example/quay/"}, {}, "is not a mirror prefix", id="trailing-slash"),
])
def test_the_mapping_is_parsed_or_refused(raw: Any, expected: dict[str, str], problem: str | None) -> None:
    found, problems = registries.parse(raw)
    assert found == expected
    assert (problem is None and not problems) or (problem is not None and problem in problems[0]), problems


def _check(tmp_path: Path, values: dict[str, Any], *, caches: bool = False) -> tuple[int, str]:
    inventory = tmp_path / "inv"
    shutil.copytree(SAMPLE, inventory)
    (inventory / "group_vars" / "all" / "zz.yml").write_text(yaml.safe_dump(values))
    if caches:
        hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
        hosts["all"]["children"]["registry_cache"] = {"hosts": {"cp1": {"registry_cache_serves": ["tor-01"]}}}
        (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
        (inventory / "group_vars" / "all" / "zy.yml").write_text(yaml.safe_dump({"registry_cache_upstreams": [
            {"name": "k8s", "registry": "mirror.example:5000", "url": "https://mirror.example:5000",
             "port": 5001}]}))
    result = CliRunner(**_SEPARATE).invoke(cli, ["inventory", "check", "--inventory", str(inventory)])
    return result.exit_code, result.stdout + result.stderr


def test_the_old_single_prefix_is_refused_with_one_line_saying_what_to_set(tmp_path: Path) -> None:
    code, output = _check(tmp_path, {registries.OLD_VAR: "harbor.example/mirror"})
    assert code == 2, output
    line = next(line for line in output.splitlines() if f"{registries.OLD_VAR} is no longer read" in line)
    assert "group_vars/all/zz.yml" in line and f"set {registries.VAR}" in line
    assert "quay.io: harbor.example/mirror" in line and "ascendhub/" in line


def test_a_malformed_mapping_is_refused_naming_the_file(tmp_path: Path) -> None:
    code, output = _check(tmp_path, {registries.VAR: {"quay.io": "https://m.example"}})
    assert code == 2 and "group_vars/all/zz.yml" in output and "is not a mirror prefix" in output, output


def test_a_good_mapping_passes(tmp_path: Path) -> None:
    code, output = _check(tmp_path, {registries.VAR: MIRRORS})
    assert code == 0, output


def test_a_mirror_no_cache_serves_is_a_warning(tmp_path: Path) -> None:
    mapping = {**MIRRORS, "quay.io": "other.example/quay"}
    code, output = _check(tmp_path, {registries.VAR: mapping}, caches=True)
    assert code == 0, output
    assert "zz.yml: ufc_image_registries sends quay.io's images to other.example, which no registry" in output
    assert "sends registry.k8s.io's" not in output  # mirror.example:5000 is the caches' upstream


def test_a_sandbox_image_left_on_a_mapped_upstream_is_a_warning(tmp_path: Path) -> None:
    # the sample sets ufc_sandbox_image: registry.k8s.io/pause:3.10.1, which the mapping does not touch
    code, output = _check(tmp_path, {registries.VAR: MIRRORS})
    assert code == 0, output
    assert "ufc_sandbox_image registry.k8s.io/pause:3.10.1 is pulled from registry.k8s.io" in output
    assert "set it to mirror.example:5000/k8s/pause:3.10.1" in output
