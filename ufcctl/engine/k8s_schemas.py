"""Built-in Kubernetes JSON schemas (the kubernetes-validate package's strict set) for one version."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from ufcctl.errors import EnvironmentMissing, InputError

_PACKAGE = "kubernetes_validate"
_DIR = "kubernetes-json-schema"
_VERSION_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")


def _root() -> Any:
    try:
        return resources.files(_PACKAGE).joinpath(_DIR)
    except ModuleNotFoundError as err:
        raise EnvironmentMissing(
            "kubernetes-validate is not installed (needed to validate manifests)",
            "pip install -e . (it is a runtime dependency of ufcctl)",
        ) from err


def supported_versions() -> list[tuple[int, int]]:
    """Kubernetes minor versions the installed kubernetes-validate has strict schemas for."""
    found = []
    for entry in _root().iterdir():
        match = _VERSION_DIR.match(entry.name)
        if match:
            found.append((int(match.group(1)), int(match.group(2))))
    return sorted(found)


def _minor(version: str) -> tuple[int, int]:
    match = re.match(r"^v?(\d+)\.(\d+)", str(version))
    if not match:
        raise InputError(f"kube version {version!r}: expected MAJOR.MINOR[.PATCH], e.g. 1.34.4")
    return int(match.group(1)), int(match.group(2))


class KubernetesSchemas:
    """Strict schemas of built-in kinds of one version: unknown fields are errors (--validate=strict)."""

    def __init__(self, version: str):
        wanted = _minor(version)
        available = supported_versions()
        if wanted not in available:
            shown = ", ".join(f"{a}.{b}" for a, b in available)
            raise InputError(
                f"kube version {version}: kubernetes-validate has no schemas for {wanted[0]}.{wanted[1]}",
                f"pick one of {shown}, or upgrade kubernetes-validate",
            )
        self.version = f"{wanted[0]}.{wanted[1]}"
        self._dir = _root().joinpath(f"v{self.version}.0-local-strict")
        self._validators: dict[tuple[str, str], Any] = {}

    def validator(self, api_version: str, kind: str) -> Any:
        """A jsonschema validator for the kind, or None when this version has no such built-in kind."""
        key = (api_version, kind)
        if key not in self._validators:
            self._validators[key] = self._load(api_version, kind)
        return self._validators[key]

    def _load(self, api_version: str, kind: str) -> Any:
        import jsonschema
        from referencing import Registry, Resource

        # kubernetes-validate's file naming: rbac.authorization.k8s.io/v1 -> rbac-v1, v1 -> v1
        group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        path = self._dir.joinpath(f"{kind.lower()}-{group_version}.json")
        if not path.is_file():
            return None
        schema = json.loads(path.read_text(encoding="utf-8"))
        if not _kind_matches(schema, api_version, kind):
            return None  # e.g. a "rbac-v1" file of another group named like this one
        registry = Resource.from_contents(schema) @ Registry()
        registry = Resource.from_contents(_definitions(self.version)) @ registry
        return jsonschema.Draft202012Validator(schema, registry=registry)


def _kind_matches(schema: dict[str, Any], api_version: str, kind: str) -> bool:
    group, _, version = api_version.rpartition("/")
    tags = schema.get("x-kubernetes-group-version-kind") or []
    if not tags:
        return True
    return any((t.get("group", ""), t.get("version"), t.get("kind")) == (group, version, kind) for t in tags)


@lru_cache(maxsize=4)
def _definitions(version: str) -> Any:
    """The shared definitions every kind's schema refers to (several MB: read once per version)."""
    path = _root().joinpath(f"v{version}.0-local-strict").joinpath("_definitions.json")
    return json.loads(path.read_text(encoding="utf-8"))
