"""One component's rendered files checked as a whole: parse, add missing namespaces, validate, order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import yaml

from ufcctl.domain.manifests.objects import K8sObject, Problem, namespace_object, parse_manifest
from ufcctl.domain.manifests.order import file_order
from ufcctl.domain.manifests.validate import BuiltinSchemas, validate_objects

NAMESPACES_FILE = "00-namespaces.yaml"


@dataclass(frozen=True)
class PreparedComponent:
    files: Mapping[str, str]  # file name -> YAML text to write
    order: tuple[str, ...]  # files in apply order
    objects: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _manifest_name(template_name: str) -> str:
    return template_name[:-3] if template_name.endswith(".j2") else template_name


def prepare_component(
    rendered: Mapping[str, str],
    namespaces: Iterable[str],
    builtin: BuiltinSchemas,
    crd_texts: Mapping[str, str] | None = None,
) -> PreparedComponent:
    """Check every object of `rendered` (template name -> text); nothing is usable unless `ok`."""
    files = {_manifest_name(name): text for name, text in rendered.items()}
    objects: list[K8sObject] = []
    problems: list[Problem] = []
    for name, text in files.items():
        found, bad = parse_manifest(text, name)
        objects += found
        problems += bad
    crds: list[K8sObject] = []
    for name, text in (crd_texts or {}).items():
        found, bad = parse_manifest(text, name)
        crds += found
        problems += bad
    wanted = list(dict.fromkeys(namespaces))
    defined = {o.name for o in objects if o.kind == "Namespace" and not o.group}
    missing = [ns for ns in wanted if ns not in defined]
    if missing and NAMESPACES_FILE in files:
        problems.append(Problem(NAMESPACES_FILE, "", "file name is reserved for the generated namespaces"))
    elif missing:
        docs = [namespace_object(ns) for ns in missing]
        files[NAMESPACES_FILE] = yaml.safe_dump_all(docs, sort_keys=False)
        objects += [K8sObject(NAMESPACES_FILE, i, doc) for i, doc in enumerate(docs)]
    result = validate_objects(objects, builtin, wanted, crds)
    problems += result.problems
    return PreparedComponent(files, tuple(file_order(list(files), objects)), len(objects), tuple(problems))
