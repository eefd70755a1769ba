"""Kubernetes RBAC evaluated on rendered objects: would a ServiceAccount be allowed an API call?

The rules follow the RBAC authorizer (k8s.io/kubernetes pkg/apis/rbac/v1/evaluation_helpers.go:
VerbMatches, APIGroupMatches, ResourceMatches, ResourceNameMatches): `*` matches any verb, group or
resource (subresources included), `*/<sub>` any resource's subresource, a rule with resourceNames
matches only calls that name one of them (never a list, watch or create of the collection). A
ClusterRoleBinding grants its ClusterRole everywhere; a RoleBinding grants its role's rules in its
own namespace only. Aggregated ClusterRoles and the cluster's default roles are not modelled:
ufcctl renders neither for its add-ons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.addons.apicalls import ApiCall  # what an add-on asks; judged here

RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Rule:
    verbs: tuple[str, ...]
    groups: tuple[str, ...]
    resources: tuple[str, ...]
    names: tuple[str, ...]
    namespace: str  # "" when granted cluster-wide (ClusterRoleBinding)

    def allows(self, call: ApiCall) -> bool:
        if self.namespace and call.namespace != self.namespace:
            return False
        return (
            _matches(self.verbs, call.verb)
            and _matches(self.groups, call.group)
            and _resource_matches(self.resources, call.resource)
            and (not self.names or call.name in self.names)
        )


def _matches(allowed: Sequence[str], wanted: str) -> bool:
    return "*" in allowed or wanted in allowed


def _resource_matches(allowed: Sequence[str], wanted: str) -> bool:
    sub = wanted.partition("/")[2]
    return any(r == "*" or r == wanted or (sub and r == f"*/{sub}") for r in allowed)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _role_rules(body: Mapping[str, Any], namespace: str) -> list[Rule]:
    return [
        Rule(_strings(r.get("verbs")), _strings(r.get("apiGroups")), _strings(r.get("resources")),
             _strings(r.get("resourceNames")), namespace)
        for r in body.get("rules") or [] if isinstance(r, Mapping)
    ]


def account_rules(objects: Iterable[Mapping[str, Any]], namespace: str, account: str) -> list[Rule]:
    """Every rule the ServiceAccount namespace/account holds through the bindings among `objects`."""
    bodies = [o for o in objects if isinstance(o, Mapping)]
    roles = {(str(o.get("kind")), str((o.get("metadata") or {}).get("namespace") or ""),
              str((o.get("metadata") or {}).get("name"))): o
             for o in bodies if o.get("kind") in ("ClusterRole", "Role")}
    rules: list[Rule] = []
    for binding in bodies:
        if binding.get("kind") not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        meta = binding.get("metadata") or {}
        subject_matches = any(
            s.get("kind") == "ServiceAccount" and s.get("name") == account
            and (s.get("namespace") or meta.get("namespace")) == namespace
            for s in binding.get("subjects") or [] if isinstance(s, Mapping)
        )
        if not subject_matches:
            continue
        ref = binding.get("roleRef") or {}
        scope = str(meta.get("namespace") or "") if binding["kind"] == "RoleBinding" else ""
        role_ns = scope if ref.get("kind") == "Role" else ""
        role = roles.get((str(ref.get("kind")), role_ns, str(ref.get("name"))))
        if role is not None:
            rules.extend(_role_rules(role, scope))
    return rules


def denied(objects: Iterable[Mapping[str, Any]], namespace: str, account: str,
           calls: Iterable[ApiCall]) -> list[ApiCall]:
    """The calls no rule of the account allows, in the order given."""
    rules = account_rules(list(objects), namespace, account)
    return [c for c in calls if not any(r.allows(c) for r in rules)]
