"""Every CustomResourceDefinition a role applies in a group the apiserver protects (`k8s.io`,
`kubernetes.io` and their subdomains) names its API approval (`api-approved.kubernetes.io`): the real
kube-apiserver refuses it otherwise ("protected groups must have approval annotation"), as it refused
Calico's AdminNetworkPolicy CRD in the lab."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
PROTECTED = ("k8s.io", "kubernetes.io")


def _crds() -> list[tuple[Path, dict]]:
    found = []
    for path in sorted((ROOT / "roles").glob("*/files/**/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                found.append((path, doc))
    return found


def test_crds_of_protected_groups_carry_the_approval_annotation() -> None:
    crds = _crds()
    assert crds, "no CRD found under roles/*/files"
    protected = [(p, d) for p, d in crds
                 if any(d["spec"]["group"] == g or d["spec"]["group"].endswith("." + g) for g in PROTECTED)]
    assert protected, "the AdminNetworkPolicy CRD (policy.networking.k8s.io) should be among them"
    missing = [str(p.relative_to(ROOT)) for p, d in protected
               if not str(((d.get("metadata") or {}).get("annotations") or {})
                          .get("api-approved.kubernetes.io", "")).startswith("https://")]
    assert not missing, missing
