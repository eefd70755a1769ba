"""Every default image of the roles names its true upstream registry and path, and a site's
`ufc_image_registries` moves each one under its mirror keeping the path (issue 44, D13).

The roles' defaults (and ascend_components' vars) are evaluated with Ansible's templating, as a play
would; the add-on templates are rendered for the image lines the pods run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from tests.helpers.ansible_values import trusted
from ufcctl.domain.images import registries

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"
IMAGE_ROLES = ("cni", "nodelocaldns", "nfs_provisioner", "volcano", "ascend_components", "container_runtime",
               "kube_control_plane")
MIRRORS = {"registry.k8s.io": "mirror.example:5000/k8s", "quay.io": "mirror.example:5000/quay",
           "docker.io": "mirror.example:5000/hub", registries.HUAWEI: "mirror.example:5000/swr"}
IMAGE_LINE = re.compile(r"^\s*image:\s*(.+?)\s*$", re.M)


def _defaults() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for role in IMAGE_ROLES:
        merged.update(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()))
    merged.update(yaml.safe_load((ROLES / "ascend_components" / "vars" / "main.yml").read_text()))
    return trusted(merged)


def _templar(inventory: dict[str, Any]) -> Templar:
    return Templar(loader=DataLoader(), variables={**_defaults(), **inventory, "groups": {}})


def _value(templar: Templar, name: str) -> str:
    return str(templar.template(trust_as_template("{{ " + name + " }}")))


def _pod_images(templar: Templar) -> set[str]:
    """The image of every container the add-on templates render (ascend_components' five, Volcano's)."""
    found: set[str] = set()
    for role in ("ascend_components", "volcano"):
        for path in (ROLES / role / "templates").rglob("*.yaml.j2"):
            lines = IMAGE_LINE.finditer(path.read_text())
            found.update(_value_of(templar, m.group(1)).strip('"') for m in lines)
    return found


def _value_of(templar: Templar, text: str) -> str:
    return str(templar.template(trust_as_template(text)))


def _upstream_images() -> set[str]:
    mindcluster = {f"{registries.HUAWEI}/ascendhub/{n}:v26.0.0" for n in registries.MINDCLUSTER_IMAGES}
    volcano = {ref for var, ref in registries.DEFAULT_IMAGES if var.startswith("volcano_")}
    return mindcluster | volcano


def test_every_default_image_is_its_upstream_reference() -> None:
    templar = _templar({})
    defaults = {var: _value(templar, var) for var, _ in registries.DEFAULT_IMAGES}
    assert defaults == dict(registries.DEFAULT_IMAGES)
    assert _value(templar, "kube_control_plane_image_repository") == "registry.k8s.io"
    # Volcano's MindCluster build and the MindCluster components come from Huawei's registry (ascendhub/),
    # never Docker Hub (it has no vc-scheduler:v1.9.0-v26.0.0) nor bare names nothing loads
    assert _pod_images(templar) == _upstream_images()


def test_a_mapping_moves_every_image_under_its_mirror_keeping_the_path() -> None:
    templar = _templar({registries.VAR: MIRRORS})
    for var, upstream in registries.DEFAULT_IMAGES:
        assert _value(templar, var) == registries.mapped(upstream, MIRRORS), var
    scheduler = "mirror.example:5000/swr/ascendhub/vc-scheduler:v1.9.0-v26.0.0"
    assert _value(templar, "volcano_scheduler_image") == scheduler
    assert _value(templar, "cni_calico_node_image") == "mirror.example:5000/quay/calico/node:v3.29.3"
    assert _value(templar, "kube_control_plane_image_repository") == "mirror.example:5000/k8s"
    assert _pod_images(templar) == {registries.mapped(ref, MIRRORS) for ref in _upstream_images()}


@pytest.mark.parametrize(("inventory", "expected"), [
    pytest.param({registries.VAR: {"quay.io": "m.example/q"}}, {"quay.io": "m.example/q"}, id="one-mapped"),
    pytest.param({registries.VAR: {"quay.io": "", registries.HUAWEI: None}}, {}, id="empty-is-upstream"),
])
def test_an_unmapped_or_empty_entry_keeps_the_upstream(inventory: dict[str, Any],
                                                      expected: dict[str, str]) -> None:
    templar = _templar(inventory)
    for var, upstream in registries.DEFAULT_IMAGES:
        assert _value(templar, var) == registries.mapped(upstream, expected), var


def test_explicit_bare_names_stay_possible_for_hand_loaded_images() -> None:
    templar = _templar({"ascend_components_image_registry": ""})
    assert "noded:v26.0.0" in _pod_images(templar)


def test_no_role_reads_the_old_single_prefix() -> None:
    texts = [p.read_text() for p in ROLES.rglob("*") if p.is_file() and p.suffix in (".yml", ".j2", ".md")]
    assert not [t for t in texts if re.search(rf"\b{registries.OLD_VAR}\b(?!s)", t)]
