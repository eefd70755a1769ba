"""One component's files checked as a whole: parse, add namespaces, validate, pre-apply checks, order."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from ufcctl.domain.manifests.crds import CRD_KIND
from ufcctl.domain.manifests.objects import K8sObject, Problem, namespace_object, parse_manifest
from ufcctl.domain.manifests.order import file_order
from ufcctl.domain.manifests.preapply import PlannedNode, crd_problems, placement_problems
from ufcctl.domain.manifests.validate import BuiltinSchemas, validate_objects

NAMESPACES_FILE = "00-namespaces.yaml"


@dataclass(frozen=True)
class PreparedComponent:
    files: Mapping[str, str]  # file name -> YAML text to write
    order: tuple[str, ...]  # files in apply order
    objects: int
    problems: tuple[Problem, ...]
    # file name -> the CRDs it holds (kubectl waits for them to be Established before the next file)
    crds: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

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
    *,
    own_crd_texts: Mapping[str, str] | None = None,
    nodes: Sequence[PlannedNode] = (),
    available_crds: Collection[str] = (),
) -> PreparedComponent:
    """Check every object of `rendered` (template name -> text); nothing is usable unless `ok`.

    `own_crd_texts` (the calling role's files/crds) are applied with the component, before its other
    objects; `crd_texts` (other roles' CRDs, the inventory's) only validate. A custom resource needs
    its CRD applied here or among `available_crds`; each workload must fit on `nodes`.
    """
    files = {_manifest_name(name): text for name, text in rendered.items()}
    clash = sorted(set(files) & set(own_crd_texts or {}))
    files.update(own_crd_texts or {})
    objects: list[K8sObject] = []
    problems = [Problem(n, "", "a template and a files/crds file have this name") for n in clash]
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
    if result.ok:  # placement and CRDs are judged on objects that are valid
        own = [o for o in objects if o.kind == CRD_KIND and o.group == "apiextensions.k8s.io"]
        problems += crd_problems(objects, own, crds, available_crds)
        problems += placement_problems(objects, nodes)
    held: dict[str, tuple[str, ...]] = {}
    for obj in objects:
        if obj.kind == CRD_KIND and obj.group == "apiextensions.k8s.io":
            held[obj.source] = (*held.get(obj.source, ()), obj.name)
    order = tuple(file_order(list(files), objects))
    return PreparedComponent(files, order, len(objects), tuple(problems), held)
