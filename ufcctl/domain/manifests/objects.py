"""Kubernetes objects parsed from rendered YAML text, each remembering the file it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class Problem:
    """One bad object (or file): printed as `file: Kind/namespace/name: what`."""

    source: str
    ref: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.ref}: {self.message}" if self.ref else f"{self.source}: {self.message}"


@dataclass(frozen=True)
class K8sObject:
    source: str  # rendered file name, for messages
    index: int  # position of the document in its file, from 0
    body: Mapping[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion") or "")

    @property
    def kind(self) -> str:
        return str(self.body.get("kind") or "")

    @property
    def group(self) -> str:
        """API group ('' for the core group), as CRDs name it."""
        return self.api_version.rpartition("/")[0]

    @property
    def metadata(self) -> Mapping[str, Any]:
        meta = self.body.get("metadata")
        return meta if isinstance(meta, Mapping) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def ref(self) -> str:
        """Kind/namespace/name (Kind/name when cluster-scoped), document index when unnamed."""
        name = self.name or f"<document {self.index + 1}, no metadata.name>"
        kind = self.kind or "<no kind>"
        return f"{kind}/{self.namespace}/{name}" if self.namespace else f"{kind}/{name}"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Identity on the apiserver: two objects with one key would overwrite each other."""
        return (self.group, self.kind, self.namespace, self.name)


def parse_manifest(text: str, source: str) -> tuple[list[K8sObject], list[Problem]]:
    """The objects of one rendered file (empty documents skipped), or the YAML error as a problem."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        return [], [Problem(source, "", f"not valid YAML{where}: {problem}")]
    objects: list[K8sObject] = []
    problems: list[Problem] = []
    for index, doc in enumerate(documents):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            problems.append(Problem(source, f"<document {index + 1}>", "is not a mapping (an object)"))
            continue
        objects.append(K8sObject(source, index, doc))
    return objects, problems


def namespace_object(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
