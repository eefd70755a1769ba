"""The order objects are applied in: namespaces, then CRDs, then everything else, file by file."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ufcctl.domain.manifests.objects import K8sObject

# Namespaces before anything that lives in them; CRDs before their custom resources.
_RANK = {"Namespace": 0, "CustomResourceDefinition": 1}
_OTHER = 2


def object_rank(obj: K8sObject) -> int:
    return _RANK.get(obj.kind, _OTHER) if obj.group in ("", "apiextensions.k8s.io") else _OTHER


def file_order(files: Sequence[str], objects: Iterable[K8sObject]) -> list[str]:
    """Files sorted by the earliest-needed object they hold, then by name (10-, 20- prefixes)."""
    rank = {name: _OTHER for name in files}
    for obj in objects:
        if obj.source in rank:
            rank[obj.source] = min(rank[obj.source], object_rank(obj))
    return sorted(files, key=lambda name: (rank[name], name))
