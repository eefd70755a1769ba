"""Schemas of custom resources, taken from CustomResourceDefinition objects (openAPIV3Schema)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.manifests.objects import K8sObject, Problem

CRD_KIND = "CustomResourceDefinition"
CRD_API = "apiextensions.k8s.io/v1"
# Every object has these at the top, whether or not a CRD's schema lists them.
_TOP_LEVEL = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}


@dataclass(frozen=True)
class CustomKind:
    api_version: str  # group/version
    kind: str
    namespaced: bool
    schema: Mapping[str, Any]  # JSON schema (strict: unknown fields refused), ready for jsonschema
    source: str  # file of the CRD, for messages


def strict_schema(node: Any, top: bool = False) -> Any:
    """An OpenAPI v3 structural schema turned into a JSON schema that refuses unknown fields.

    The apiserver prunes unknown fields of a structural schema silently; refusing them here turns a
    typo into an error before apply. `x-kubernetes-preserve-unknown-fields` keeps a subtree open,
    `nullable` admits null, `x-kubernetes-int-or-string` admits both types.
    """
    if isinstance(node, list):
        return [strict_schema(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") or key in ("allOf", "anyOf", "oneOf"):
            out[key] = strict_schema(value)
        elif key.startswith("x-kubernetes-") or key == "nullable":
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    if top:
        out["properties"] = {**_TOP_LEVEL, **out.get("properties", {})}
        out.setdefault("type", "object")
    open_ended = node.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in node
    if "properties" in out and not open_ended:
        out["additionalProperties"] = False
    return out


def custom_kinds(objects: Iterable[K8sObject]) -> tuple[dict[tuple[str, str], CustomKind], list[Problem]]:
    """(group/version, kind) -> CustomKind for every served version of every CRD among `objects`."""
    found: dict[tuple[str, str], CustomKind] = {}
    problems: list[Problem] = []
    for obj in objects:
        if obj.kind != CRD_KIND:
            continue
        spec = obj.body.get("spec") or {}
        group = spec.get("group", "")
        kind = (spec.get("names") or {}).get("kind", "")
        namespaced = spec.get("scope") == "Namespaced"
        for version in spec.get("versions") or []:
            schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
            if not version.get("served", True):
                continue
            if not isinstance(schema, Mapping):
                missing = f"version {version.get('name')}: no openAPIV3Schema"
                problems.append(Problem(obj.source, obj.ref, missing))
                continue
            key = (f"{group}/{version.get('name')}", kind)
            found[key] = CustomKind(key[0], kind, namespaced, strict_schema(schema, top=True), obj.source)
    return found, problems
