"""Issue 44: every API call an add-on's pinned release makes (ufcctl/domain/addons/apicalls.py, each with
its upstream source) is allowed by the RBAC ufcctl renders for that add-on's ServiceAccount.

The roles' templates are rendered for inventories/sample with Ansible's Templar (the roles' defaults and
vars); the rules are evaluated as the RBAC authorizer does (ufcctl/domain/manifests/rbac.py). The lab's
apiserver stand-in enforces no RBAC, so this is the check that catches a missing rule (D8, D10, D11,
D15, D21) before a real cluster does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.addon_render import render_addons
from ufcctl.domain.addons.apicalls import ADDON_CALLS
from ufcctl.domain.manifests.rbac import ApiCall, account_rules, denied

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return render_addons()


@pytest.mark.parametrize(("component", "namespace", "account", "calls"), ADDON_CALLS,
                         ids=[f"{c}-{a}" for c, _, a, _ in ADDON_CALLS])
def test_release_api_calls_are_allowed(rendered, component: str, namespace: str, account: str,
                                       calls: list[ApiCall]) -> None:
    objects = rendered[component]
    accounts = {(o["metadata"].get("namespace"), o["metadata"]["name"])
                for o in objects if o["kind"] == "ServiceAccount"}
    assert (namespace, account) in accounts
    refused = denied(objects, namespace, account, calls)
    assert not refused, f"{component}: {namespace}/{account} is refused:\n" + "\n".join(map(str, refused))


def _rules(text: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(text))


ROLE_AND_BINDING = """
kind: ClusterRole
metadata: {name: r}
rules:
  - {apiGroups: [""], resources: [serviceaccounts/token], resourceNames: [cni], verbs: [create]}
  - {apiGroups: [apps], resources: ["*"], verbs: [list]}
  - {apiGroups: ["*"], resources: ["*/status"], verbs: ["*"]}
---
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: sa, namespace: ns}]
---
kind: Role
metadata: {name: local, namespace: ns}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
kind: RoleBinding
metadata: {name: local, namespace: ns}
roleRef: {kind: Role, name: local}
subjects: [{kind: ServiceAccount, name: sa}]
"""


@pytest.mark.parametrize(("call", "allowed"), [
    (ApiCall("create", "serviceaccounts/token", name="cni", namespace="ns"), True),
    (ApiCall("create", "serviceaccounts/token", name="other", namespace="ns"), False),
    (ApiCall("create", "serviceaccounts", name="cni", namespace="ns"), False),  # not the subresource
    (ApiCall("list", "statefulsets", "apps"), True),
    (ApiCall("watch", "statefulsets", "apps"), False),
    (ApiCall("patch", "nodes/status", name="n1"), True),  # */status
    (ApiCall("patch", "nodes", name="n1"), False),
    (ApiCall("get", "configmaps", name="c", namespace="ns"), True),  # RoleBinding: its namespace only
    (ApiCall("get", "configmaps", name="c", namespace="other"), False),
    (ApiCall("get", "configmaps", name="c"), False),
], ids=str)
def test_rules_are_evaluated_as_the_rbac_authorizer_does(call: ApiCall, allowed: bool) -> None:
    objects = _rules(ROLE_AND_BINDING)
    assert (not denied(objects, "ns", "sa", [call])) is allowed
    assert account_rules(objects, "ns", "someone-else") == []


BUILT_IN_GROUPS = {"", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io", "networking.k8s.io",
                   "scheduling.k8s.io", "storage.k8s.io", "policy"}


def test_every_custom_resource_a_release_lists_has_its_crd(rendered) -> None:
    """A list of a kind with no CRD is a 404, which keeps an informer (Typha's AdminNetworkPolicies, D8;
    Volcano's JobFlows, D21) from ever syncing: each must ship with some role."""
    crds = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in ROLES.glob("*/files/crds/*.yaml")}
    crds |= {o["metadata"]["name"] for objects in rendered.values() for o in objects
             if o["kind"] == "CustomResourceDefinition"}
    listed = {f"{c.resource.partition('/')[0]}.{c.group}" for _, _, _, calls in ADDON_CALLS for c in calls
              if c.group not in BUILT_IN_GROUPS}
    assert listed - crds == set()
