"""Jinja filter over ufcctl/domain/images/registries.py: the names the nodes pull under the site's mirror
of each upstream registry (`ufc_image_registries`), the same the add-ons' pods run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

from ufcctl.domain.images import registries
from ufcctl.domain.inventory.values import plain


def ufcctl_image_preheat_mapped(images: Sequence[Any], mapping: Any) -> list[str]:
    """Each reference under its registry's mirror (unchanged when its registry is not mapped)."""
    found, problems = registries.parse(plain(mapping) if isinstance(mapping, Mapping) else mapping)
    if problems:
        raise AnsibleFilterError(f"{problems[0]} (`ufcctl inventory check` names the file)")
    return [registries.mapped(str(image), found) for image in images]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_image_preheat_mapped": ufcctl_image_preheat_mapped}
