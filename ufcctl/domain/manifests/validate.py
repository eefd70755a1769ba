"""Validate every object of a component before anything is applied: schema, scope, identity."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from ufcctl.domain.manifests.crds import CustomKind, custom_kinds
from ufcctl.domain.manifests.objects import K8sObject, Problem

# Built-in kinds without a namespace (`kubectl api-resources --namespaced=false`, the ones add-ons use).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "StorageClass", "CSIDriver", "PriorityClass",
        "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService",
        "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "RuntimeClass",
        "IngressClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "FlowSchema", "PriorityLevelConfiguration",
    }
)


class SchemaValidator(Protocol):
    def iter_errors(self, instance: Any) -> Iterable[ValidationError]: ...


class BuiltinSchemas(Protocol):
    """Schemas of the built-in kinds of one Kubernetes version (loaded by ufcctl.engine.k8s_schemas)."""

    version: str

    def validator(self, api_version: str, kind: str) -> SchemaValidator | None: ...


@dataclass(frozen=True)
class Validation:
    objects: tuple[K8sObject, ...]
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _path(error: ValidationError) -> str:
    text = ""
    for part in error.absolute_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _schema_problem(obj: K8sObject, validator: SchemaValidator, against: str) -> Problem | None:
    errors = list(validator.iter_errors(dict(obj.body)))
    if not errors:
        return None
    error = best_match(errors)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return Problem(obj.source, obj.ref, f"{error.message} at {_path(error)} [{against}]{more}")


def _scope_problem(obj: K8sObject, namespaced: bool, namespaces: set[str]) -> str | None:
    if not namespaced:
        return "is cluster-scoped: remove metadata.namespace" if obj.namespace else None
    if not obj.namespace:
        return "metadata.namespace is missing (it would land in the kubeconfig's default namespace)"
    if obj.namespace not in namespaces:
        return f"namespace {obj.namespace!r} is neither created by this component nor in its namespaces"
    return None


def validate_objects(
    objects: Sequence[K8sObject],
    builtin: BuiltinSchemas,
    namespaces: Iterable[str] = (),
    extra_crds: Sequence[K8sObject] = (),
) -> Validation:
    """Every problem of every object (empty: all fine). Nothing stops at the first bad object.

    Custom resources are checked against the CRDs among `objects` and `extra_crds` (CRDs other
    roles ship); a kind known to neither the built-in schemas nor a CRD is an error.
    """
    kinds, problems = custom_kinds([*extra_crds, *objects])
    known_namespaces = set(namespaces) | {o.name for o in objects if o.kind == "Namespace" and not o.group}
    validators = {key: jsonschema.Draft202012Validator(kind.schema) for key, kind in kinds.items()}
    seen: dict[tuple[str, str, str, str], K8sObject] = {}
    for obj in objects:
        problem = _check_one(obj, builtin, kinds, validators, known_namespaces)
        if problem:
            problems.append(problem)
            continue
        if obj.key in seen:
            first = seen[obj.key]
            problems.append(Problem(obj.source, obj.ref, f"defined twice (first in {first.source})"))
        seen.setdefault(obj.key, obj)
    return Validation(tuple(objects), tuple(problems))


def _check_one(
    obj: K8sObject,
    builtin: BuiltinSchemas,
    kinds: Mapping[tuple[str, str], CustomKind],
    validators: Mapping[tuple[str, str], SchemaValidator],
    namespaces: set[str],
) -> Problem | None:
    if not obj.api_version or not obj.kind:
        return Problem(obj.source, obj.ref, "apiVersion and kind are required")
    if not obj.name:
        return Problem(obj.source, obj.ref, "metadata.name is required")
    custom = kinds.get((obj.api_version, obj.kind))
    if custom is not None:
        validator: SchemaValidator = validators[(obj.api_version, obj.kind)]
        namespaced, against = custom.namespaced, f"CRD from {custom.source}"
    else:
        found = builtin.validator(obj.api_version, obj.kind)
        if found is None:
            return Problem(
                obj.source, obj.ref,
                f"unknown kind {obj.kind} in {obj.api_version}: not built into Kubernetes {builtin.version} "
                "and no shipped CustomResourceDefinition defines it",
            )
        validator, namespaced = found, obj.kind not in CLUSTER_SCOPED
        against = f"Kubernetes {builtin.version}"
    scope = _scope_problem(obj, namespaced, namespaces)
    if scope:
        return Problem(obj.source, obj.ref, scope)
    return _schema_problem(obj, validator, against)
