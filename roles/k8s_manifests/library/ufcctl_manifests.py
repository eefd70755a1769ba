#!/usr/bin/python
"""Documentation of the `ufcctl_manifests` action (the work is done by action_plugins/ufcctl_manifests.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: ufcctl_manifests
short_description: Validate a component's rendered Kubernetes manifests on the controller and write them
description:
  - Parses every rendered file, adds the missing Namespace objects, validates every object
    (built-in kinds against kubernetes-validate's strict schemas of I(kube_version), custom
    resources against the CRDs among the objects and in I(crd_files)) and only then writes the
    files to I(dest), removing stale C(*.yaml) files there. Fails with one line per bad object.
  - Runs on the controller as an action plugin; this file only documents it.
options:
  component:
    {description: Component name (for messages)., type: str, required: true}
  rendered:
    {description: Template file name -> rendered text., type: dict, required: true}
  namespaces:
    {description: Namespaces the objects live in; missing ones are generated., type: list, elements: str}
  kube_version:
    {description: Kubernetes version whose schemas apply (MAJOR.MINOR[.PATCH])., type: str, required: true}
  crd_files:
    {description: Glob patterns of CRD files used for validation., type: list, elements: str}
  dest:
    {description: Controller directory the manifests are written to., type: path, required: true}
"""

if __name__ == "__main__":
    import json

    print(json.dumps({"failed": True, "msg": "ufcctl_manifests runs as an action plugin on the controller"}))
