#!/usr/bin/python
"""Documentation of the `ufcctl_manifests` action (the work is done by action_plugins/ufcctl_manifests.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: ufcctl_manifests
short_description: One Kubernetes component from templates to the cluster - render, validate, write, apply
description:
  - Renders every C(*.yaml.j2) of I(templates) with the task's variables, parses every file, adds the
    missing Namespace objects, validates every object (built-in kinds against kubernetes-validate's
    strict schemas of C(k8s_manifests_kube_version), custom resources against the CRDs among the
    objects, the roles' C(files/crds/) and C(k8s_manifests_crd_files)) and only then writes the files
    to C(<k8s_manifests_state_dir>/manifests/<k8s_manifests_inventory_name>/<component>/), removing
    stale C(*.yaml) files there. Fails with one line per bad object; nothing is written or applied.
  - With I(labels) instead, writes the label plan as C(plan.json) there.
  - >-
    Then applies through the C(ufcctl_kubectl) module on the host the task is delegated to
    (C(k8s_manifests_apply_host)) - server-side apply of each file that C(kubectl diff) finds
    different, or C(kubectl label --overwrite) per label group - when C(k8s_manifests_apply) is true,
    not in check mode, and the role's probe (or, without it, its own) found kubectl and the
    kubeconfig there. Otherwise C(msg) says C(<component>: apply SKIPPED) and why.
  - Runs on the controller as an action plugin; this file only documents it.
options:
  component:
    description: Component name (directory and message prefix; lower-case letters, digits and -).
    type: str
    required: true
  templates:
    description: Directory of C(*.yaml.j2) templates; default the calling role's C(templates/manifests).
    type: path
  namespaces:
    description: Namespaces the objects live in; missing ones are generated.
    type: list
    elements: str
  labels:
    description: 'A node label plan C({nodes, groups: [{labels, nodes, args}]}) instead of templates.'
    type: dict
  note:
    description: Text appended to the report line.
    type: str
"""

if __name__ == "__main__":
    import json

    print(json.dumps({"failed": True, "msg": "ufcctl_manifests runs as an action plugin on the controller"}))
