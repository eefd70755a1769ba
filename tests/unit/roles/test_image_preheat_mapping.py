"""roles/image_preheat pulls each image under the site's mirror of its registry (issue 44, D13): the
filter the role's loop calls, over ufcctl/domain/images/registries.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.helpers.pyimports import load_file

ROLE = Path(__file__).resolve().parents[3] / "roles" / "image_preheat"
FILTERS = load_file(ROLE / "filter_plugins" / "ufcctl_image_preheat.py")


def test_the_role_loops_over_the_mapped_names() -> None:
    task = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())[0]
    loop = "{{ image_preheat_images | ufcctl_image_preheat_mapped(image_preheat_registries) }}"
    assert task["loop"] == loop


def test_each_image_is_pulled_under_its_registrys_mirror() -> None:
    images = ["quay.io/calico/node:v3.29.3", "10.0.0.5:5000/lab/preheat-test:v1"]
    assert FILTERS.ufcctl_image_preheat_mapped(images, {"quay.io": "m.example/quay"}) == [
        "m.example/quay/calico/node:v3.29.3", "10.0.0.5:5000/lab/preheat-test:v1"]
    assert FILTERS.ufcctl_image_preheat_mapped(images, {}) == images


def test_a_malformed_mapping_fails_the_task() -> None:
    with pytest.raises(AnsibleFilterError, match="must be a mapping"):
        FILTERS.ufcctl_image_preheat_mapped(["quay.io/a:1"], "m.example")
