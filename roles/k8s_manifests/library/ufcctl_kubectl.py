#!/usr/bin/python
"""Node side of k8s_manifests on the apply host: probe kubectl and the kubeconfig, apply, label, untaint,
drain and delete nodes."""

from __future__ import annotations

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_cordon import CORDON_MARK  # roles/k8s_manifests/module_utils

DOCUMENTATION = r"""
module: ufcctl_kubectl
short_description: Probe kubectl and a kubeconfig, server-side apply manifests, label nodes, in one run
description:
  - Runs on the host that applies (the first control-plane host). Called by the k8s_manifests role's
    probe task and by the C(ufcctl_manifests) action, which renders and validates on the controller
    and sends the manifests here; a role calls the action, not this module for apply or label.
  - I(mode=probe) says whether I(kubectl) is on the PATH and I(kubeconfig) is readable (C(ready))
    and, when not, why (C(reason)). Nothing is changed.
  - I(mode=apply) pipes each manifest, in the order given, to C(kubectl diff --server-side) and,
    when it differs, to C(kubectl apply --server-side --field-manager=ufcctl), both with
    C(--force-conflicts), so fields an add-on's own program set first (vc-scheduler creates the Queue
    C(default)) are taken over instead of a 409 Conflict (one file after the
    other, so a namespace exists before the objects in it are diffed). After a manifest that holds
    CustomResourceDefinitions (its C(crds)), C(kubectl wait --for=condition=Established) waits for
    them before the next manifest, whose custom resources need them served. Nothing is written on
    the node. Check mode diffs only.
  - >-
    I(mode=label) runs C(kubectl label) once per argument list (C(labeled) in the output: changed).
    Check mode runs nothing. With I(node) set (one node's labels, from roles/kube_node after its join),
    a missing kubectl or kubeconfig changes nothing and says why (C(ready) false), as for I(mode=untaint).
  - >-
    I(mode=untaint) reads node I(node) (C(kubectl get node -o json)) and, when it carries the taint
    I(taint) (same key and effect), removes it with C(kubectl taint nodes <node> <key>:<effect>-).
    A node without the taint is unchanged (so a second run changes nothing); check mode reads only.
    When kubectl or the kubeconfig is missing it changes nothing and says why (C(ready) false): the
    caller reports the step SKIPPED.
  - >-
    I(mode=drain) reads node I(node) and, when it exists, runs C(kubectl drain <node> --ignore-daemonsets
    --delete-emptydir-data --timeout=<timeout>s): cordon, then every pod but DaemonSet ones evicted through
    the Eviction API (PodDisruptionBudgets honoured; kubectl retries a refused eviction until the
    timeout). Pods no controller owns make kubectl refuse (they would be lost): the module fails with
    kubectl's message. A node that does not exist (already removed) is unchanged; one already cordoned
    with no pod left to evict is unchanged. Check mode reads only. Missing kubectl or kubeconfig:
    C(ready) false, nothing done (roles/kube_node_remove fails the node then: it never resets a node it
    could not drain).
    With I(mark), a node that is still schedulable is first annotated C(ufcctl.io/cordoned-for=<mark>)
    (before the cordon, so a run killed in between leaves the record): I(mode=release) later uncordons only
    nodes carrying that mark, never one an operator cordoned.
  - I(mode=delete_node) deletes node I(node) (C(kubectl delete node --wait)) when it exists; a missing
    node is unchanged. Check mode reads only.
  - >-
    I(mode=release) waits (up to I(timeout) seconds) until node I(node) is Ready and, with I(version),
    reports that kubelet version (C(status.nodeInfo.kubeletVersion): the new kubelet runs), then, when the
    node carries C(ufcctl.io/cordoned-for=<mark>), uncordons it and removes the mark (changed). A node
    without the mark stays as it is. Check mode reads only (no wait).
  - >-
    I(mode=hold) keeps node I(node) out of scheduling with a reason: it sets the annotation I(annotation)
    to I(reason) and, when the node is schedulable, marks it C(ufcctl.io/cordoned-for=<mark>) and
    cordons it (roles/ascend_driver: an NPU node whose fabric failed tier 1; its taint stays). A node
    already held for the same reason is unchanged. Check mode reads only.
  - >-
    I(mode=untaint) with I(annotation) also lifts such a hold: the annotation is removed and, when the
    node carries C(ufcctl.io/cordoned-for=<mark>), it is uncordoned and the mark removed.
  - >-
    I(mode=untaint) with I(labels) also sets those node labels where they differ (one C(kubectl label
    --overwrite)), and with I(release_mark) uncordons a node carrying C(ufcctl.io/cordoned-for=<release_mark>)
    and removes the mark (roles/ascend_driver: the driver labels, and a node its play drained).
  - >-
    I(mode=rollout) reads DaemonSet I(daemonset) (C(<namespace>/<name>)) and, when its update strategy is not
    RollingUpdate with C(maxUnavailable) I(max_unavailable), sets both with one strategic-merge C(kubectl
    patch) (roles/kube_control_plane: kubeadm's kube-proxy, which kubeadm creates and rewrites at the
    apiserver's default of one node at a time). An absent C(maxUnavailable) counts as 1, the apiserver's
    default. A DaemonSet that does not exist is unchanged (C(exists) false: the caller reports it). Check
    mode reads only. Missing kubectl or kubeconfig: C(ready) false, nothing done.
options:
  mode:
    description: What to do.
    type: str
    choices: [probe, apply, label, untaint, drain, delete_node, release, hold, rollout]
    default: probe
  kubectl:
    {description: kubectl command (a name on the PATH or a path)., type: str, default: kubectl}
  kubeconfig:
    {description: Kubeconfig kubectl uses., type: path, default: /etc/kubernetes/admin.conf}
  manifests:
    description: I(mode=apply) - the manifests in apply order.
    type: list
    elements: dict
    default: []
    suboptions:
      name: {description: File name (for messages)., type: str, required: true}
      text: {description: YAML text., type: str, required: true}
      crds:
        description: Names of the CustomResourceDefinitions in the manifest (waited for after it).
        type: list
        elements: str
        default: []
  label_args:
    description: I(mode=label) - argument lists after C(kubectl --kubeconfig=...), one call each.
    type: list
    elements: list
    default: []
  node:
    description: I(mode=untaint) - the node's name; I(mode=label) - the one node labelled (optional).
    type: str
    default: ""
  annotation:
    description: I(mode=hold) - the node annotation holding the reason; I(mode=untaint) - the hold to lift.
    type: str
    default: ""
  reason: {description: I(mode=hold) - the annotation's value (why the node is held)., type: str, default: ""}
  mark:
    description: I(mode=drain) and I(mode=release) - the value of the node annotation ufcctl.io/cordoned-for.
    type: str
    default: ""
  version:
    description: I(mode=release) - the kubelet version the node must report (empty - Ready only).
    type: str
    default: ""
  labels:
    description: I(mode=untaint) - node labels to set (key to value) where they differ.
    type: dict
    default: {}
  release_mark:
    description: I(mode=untaint) - uncordon the node when its C(ufcctl.io/cordoned-for) has this value.
    type: str
    default: ""
  refuse_resource:
    description: >-
      I(mode=drain) - fail, touching nothing, when a running pod on the node requests a resource whose name
      starts with this (e.g. C(huawei.com/), NPU pods); empty - drain whatever runs.
    type: str
    default: ""
  taint:
    description: I(mode=untaint) - the taint to remove (C(key) and C(effect); C(value) is ignored).
    type: dict
    default: {}
  timeout:
    description: I(mode=drain) and I(mode=delete_node) - seconds kubectl may wait (C(--timeout)).
    type: int
    default: 900
  daemonset:
    description: I(mode=rollout) - the DaemonSet, C(<namespace>/<name>).
    type: str
    default: ""
  max_unavailable:
    description: I(mode=rollout) - its C(rollingUpdate.maxUnavailable), a count (C(50)) or a percentage.
    type: str
    default: ""
"""

RETURN = r"""
ready: {description: kubectl and the kubeconfig are usable., type: bool, returned: always}
reason: {description: Why not ready (C(ready) when ready)., type: str, returned: always}
applied:
  description: Manifests that differed from the cluster and were applied (or would be in check mode).
  type: list
  returned: mode=apply
unchanged: {description: Manifests the cluster already matched., type: list, returned: mode=apply}
labelled:
  description: >-
    mode=label, an int: the kubectl label calls that changed a node; mode=untaint, a bool: I(labels)
    differed and were set (or would be).
  type: raw
  returned: mode=label or mode=untaint
untainted:
  description: The taint was on the node and was removed (or would be).
  type: bool
  returned: mode=untaint
held:
  description: The node was annotated or cordoned by this run (or would be).
  type: bool
  returned: mode=hold
unheld:
  description: A hold was lifted (annotation removed, or uncordoned by mark).
  type: bool
  returned: mode=untaint
exists:
  description: The node (mode=drain, delete_node) or the DaemonSet (mode=rollout) existed before this run.
  type: bool
  returned: mode=drain, delete_node, rollout
max_unavailable_was:
  description: The DaemonSet's maxUnavailable as read, before any patch (1 when the apiserver defaulted it).
  type: str
  returned: mode=rollout
uncordoned:
  description: The node carried the mark and was uncordoned.
  type: bool
  returned: mode=release, untaint
kubelet_version: {description: The kubelet version the node reported last., type: str, returned: mode=release}
evicted: {description: Pods kubectl evicted (none listed in check mode)., type: list, returned: mode=drain}
"""

FIELD_MANAGER = "ufcctl"
# How long a CRD may take to be Established after its apply. The apiserver establishes a CRD in
# about a second (names accepted, then served); a minute covers 3 apiservers behind the VIP each
# picking the CRD up, at 16,000 nodes as at 3, without hiding a CRD that never becomes served.
CRD_WAIT_TIMEOUT = "60s"
# kubectl wait's answer for a CRD that has no conditions yet, and how long it is asked again meanwhile
NO_STATUS_YET = ".status.conditions accessor error"
CRD_NO_STATUS_RETRY = 60.0
# The annotation a drain with a mark leaves on a node it cordoned: release uncordons only those.
MARK = CORDON_MARK
RELEASE_POLL = 2.0  # seconds between reads of the node while release waits for it


def probe(module: AnsibleModule) -> tuple[bool, str]:
    kubectl = module.params["kubectl"]
    kubeconfig = module.params["kubeconfig"]
    if not module.get_bin_path(kubectl):
        return False, f"{kubectl} not found in PATH"
    if not os.access(kubeconfig, os.R_OK):
        return False, f"kubeconfig {kubeconfig} does not exist or is not readable"
    return True, "ready"


def _kubectl(module: AnsibleModule, args: list, data: str | None = None) -> tuple[int, str, str]:
    argv = [module.params["kubectl"], f"--kubeconfig={module.params['kubeconfig']}", *args]
    return module.run_command(argv, data=data)


def _failure(what: str, rc: int, out: str, err: str) -> str:
    return f"kubectl {what} failed (rc {rc}): {(err or out).strip()}"


def _wait_established(module: AnsibleModule, manifest: dict, applied: list, unchanged: list) -> None:
    """kubectl wait for the manifest's CRDs (also when unchanged: an earlier run may have stopped here)."""
    if not manifest.get("crds") or module.check_mode:
        return
    wait = ["wait", "--for=condition=Established", f"--timeout={CRD_WAIT_TIMEOUT}"]
    deadline = time.monotonic() + CRD_NO_STATUS_RETRY
    while True:
        rc, out, err = _kubectl(module, [*wait, *(f"crd/{crd}" for crd in manifest["crds"])])
        # a CRD read before the apiserver gave it any condition: kubectl wait stops at once ("error:
        # .status.conditions accessor error: <nil> is of the type <nil>") instead of waiting; ask again
        # (met on the real kube-apiserver in the lab, a second after the apply)
        if rc == 0 or NO_STATUS_YET not in err or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    if rc != 0:
        failure = _failure(f"wait for the CRDs of {manifest['name']} to be Established", rc, out, err)
        module.fail_json(msg=failure, applied=applied, unchanged=unchanged)


def apply(module: AnsibleModule) -> dict:
    applied, unchanged = [], []
    # --force-conflicts: ufcctl's manifests are the desired state; a field another manager set first (the
    # default Queue vc-scheduler creates at start) would otherwise answer 409 Conflict on every change
    # (docs/reference/components.md §9.4; issue 44, D21)
    server_side = ["--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "--filename=-"]
    for manifest in module.params["manifests"]:
        name, text = manifest["name"], manifest["text"]
        rc, out, err = _kubectl(module, ["diff", *server_side], data=text)
        if rc == 0:  # kubectl diff: 0 same, 1 differs, anything else an error
            unchanged.append(name)
        elif rc != 1:
            module.fail_json(msg=_failure(f"diff {name}", rc, out, err), applied=applied, unchanged=unchanged)
        else:
            if not module.check_mode:
                rc, out, err = _kubectl(module, ["apply", *server_side], data=text)
                if rc != 0:
                    failure = _failure(f"apply {name}", rc, out, err)
                    module.fail_json(msg=failure, applied=applied, unchanged=unchanged)
            applied.append(name)
        _wait_established(module, manifest, applied, unchanged)
    return {"changed": bool(applied), "applied": applied, "unchanged": unchanged}


def _labelled(line: str) -> bool:
    """kubectl label prints `node/x labeled` for a change and `node/x not labeled` for none."""
    words = line.split()
    return len(words) >= 2 and words[-1] == "labeled" and words[-2] != "not"


def label(module: AnsibleModule) -> dict:
    labelled = 0
    if module.check_mode:
        return {"changed": False, "labelled": 0}
    for args in module.params["label_args"]:
        rc, out, err = _kubectl(module, [str(a) for a in args])
        if rc != 0:
            module.fail_json(msg=_failure(" ".join(args[:3]), rc, out, err), labelled=labelled)
        labelled += any(_labelled(line) for line in out.splitlines())
    return {"changed": labelled > 0, "labelled": labelled}


def untaint(module: AnsibleModule) -> dict:
    node, taint = module.params["node"], module.params["taint"]
    key, effect = taint.get("key"), taint.get("effect")
    if not node or not key or not effect:
        module.fail_json(msg="mode=untaint needs node and a taint with key and effect")
    rc, out, err = _kubectl(module, ["get", "node", node, "--output=json"])
    if rc != 0:
        module.fail_json(msg=_failure(f"get node {node}", rc, out, err))
    try:
        taints = json.loads(out).get("spec", {}).get("taints") or []
    except ValueError:
        module.fail_json(msg=f"kubectl get node {node}: the answer is not JSON: {out[:200]}")
    found = json.loads(out)
    unheld = _unhold(module, found) if module.params["annotation"] else False
    untainted = any(t.get("key") == key and t.get("effect") == effect for t in taints)
    if untainted and not module.check_mode:
        rc, out, err = _kubectl(module, ["taint", "nodes", node, f"{key}:{effect}-"])
        if rc != 0:
            module.fail_json(msg=_failure(f"taint nodes {node} {key}:{effect}-", rc, out, err))
    labelled = _relabel(module, found)
    released = _release(module, found)
    return {"changed": untainted or unheld or labelled or released, "untainted": untainted, "unheld": unheld,
            "labelled": labelled, "uncordoned": released}


def _relabel(module: AnsibleModule, found: dict) -> bool:
    """Set I(labels) on the node read as `found` where they differ (one kubectl label call)."""
    node, wanted = module.params["node"], module.params["labels"] or {}
    have = (found.get("metadata") or {}).get("labels") or {}
    changes = [f"{k}={v}" for k, v in sorted(wanted.items()) if have.get(k) != str(v)]
    if changes and not module.check_mode:
        rc, out, err = _kubectl(module, ["label", "node", node, "--overwrite", *changes])
        if rc != 0:
            module.fail_json(msg=_failure(f"label node {node}", rc, out, err))
    return bool(changes)


def _release(module: AnsibleModule, found: dict) -> bool:
    """Uncordon the node read as `found` when a drain with I(release_mark) cordoned it (and drop the mark)."""
    node, mark = module.params["node"], module.params["release_mark"]
    if not mark or _annotations(found).get(MARK) != mark:
        return False
    if not module.check_mode:
        for args in (["uncordon", node], ["annotate", "node", node, f"{MARK}-"]):
            rc, out, err = _kubectl(module, args)
            if rc != 0:
                module.fail_json(msg=_failure(" ".join(args[:2]) + f" {node}", rc, out, err))
    return True


def _annotations(found: dict) -> dict:
    return (found.get("metadata") or {}).get("annotations") or {}


def _unhold(module: AnsibleModule, found: dict) -> bool:
    """Lift a hold (mode=hold) from the node read as `found`: whether anything changed (or would)."""
    node, annotation, mark = module.params["node"], module.params["annotation"], module.params["mark"]
    annotations = _annotations(found)
    steps = []
    if annotation in annotations:
        steps.append(["annotate", "node", node, f"{annotation}-"])
    if mark and annotations.get(MARK) == mark:
        steps += [["uncordon", node], ["annotate", "node", node, f"{MARK}-"]]
    if not module.check_mode:
        for args in steps:
            rc, out, err = _kubectl(module, args)
            if rc != 0:
                module.fail_json(msg=_failure(" ".join(args[:2]) + f" {node}", rc, out, err))
    return bool(steps)


def hold(module: AnsibleModule) -> dict:
    node, annotation, mark = module.params["node"], module.params["annotation"], module.params["mark"]
    if not annotation or not mark:
        module.fail_json(msg="mode=hold needs node, annotation and mark")
    found = _node(module)
    if found is None:
        module.fail_json(msg=f"node {node} is not registered: nothing to hold")
    annotations = _annotations(found)
    steps = []
    if annotations.get(annotation) != module.params["reason"]:
        steps.append(["annotate", "node", node, "--overwrite", f"{annotation}={module.params['reason']}"])
    if not (found.get("spec") or {}).get("unschedulable"):
        steps += [["annotate", "node", node, "--overwrite", f"{MARK}={mark}"], ["cordon", node]]
    if not module.check_mode:
        for args in steps:
            rc, out, err = _kubectl(module, args)
            if rc != 0:
                module.fail_json(msg=_failure(" ".join(args[:2]) + f" {node}", rc, out, err))
    return {"changed": bool(steps), "held": bool(steps)}


def _node(module: AnsibleModule) -> dict | None:
    """The node object, or None when the apiserver says it does not exist."""
    node = module.params["node"]
    if not node:
        module.fail_json(msg=f"mode={module.params['mode']} needs node")
    rc, out, err = _kubectl(module, ["get", "node", node, "--output=json"])
    if rc != 0:
        if "NotFound" in err:  # kubectl: Error from server (NotFound): nodes "x" not found
            return None
        module.fail_json(msg=_failure(f"get node {node}", rc, out, err))
    try:
        return json.loads(out)
    except ValueError:
        module.fail_json(msg=f"kubectl get node {node}: the answer is not JSON: {out[:200]}")
    return None


def drain(module: AnsibleModule) -> dict:
    node = module.params["node"]
    found = _node(module)
    if found is None:
        return {"changed": False, "exists": False, "evicted": []}
    cordoned = bool((found.get("spec") or {}).get("unschedulable"))
    prefix = module.params.get("refuse_resource") or ""
    refused = _pods_requesting(module, node, prefix)
    if refused:
        shown = ", ".join(refused[:3]) + (" ..." if len(refused) > 3 else "")
        module.fail_json(msg=f"node {node} NOT drained: pods requesting {prefix}* run on it ({shown}); "
                             "nothing was touched (ufcctl: --force drains them)", exists=True)
    if module.check_mode:
        return {"changed": not cordoned, "exists": True, "evicted": []}
    mark = module.params["mark"]
    if mark and not cordoned:
        rc, out, err = _kubectl(module, ["annotate", "node", node, "--overwrite", f"{MARK}={mark}"])
        if rc != 0:
            module.fail_json(msg=_failure(f"annotate node {node} {MARK}", rc, out, err), exists=True)
    timeout = int(module.params["timeout"])
    rc, out, err = _kubectl(module, ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                                     f"--timeout={timeout}s"])
    if rc != 0:
        module.fail_json(msg=_failure(f"drain {node} (within {timeout} s)", rc, out, err), exists=True)
    lines = (out + "\n" + err).splitlines()
    evicted = [line.split()[-1] for line in lines if line.startswith("evicting pod ")]
    cordoned_now = any(line.strip() == f"node/{node} cordoned" for line in out.splitlines())
    return {"changed": cordoned_now or bool(evicted), "exists": True, "evicted": evicted}


def _pods_requesting(module: AnsibleModule, node: str, prefix: str) -> list:
    """namespace/name of the running pods on `node` that request or limit a resource named `prefix`*
    (the Ascend device plugin's huawei.com/...); [] without a prefix."""
    if not prefix:
        return []
    rc, out, err = _kubectl(module, ["get", "pods", "--all-namespaces", "--field-selector",
                                     f"spec.nodeName={node},status.phase=Running", "--output=json"])
    if rc != 0:
        module.fail_json(msg=_failure(f"get pods on {node}", rc, out, err), exists=True)
    found = []
    for pod in json.loads(out or "{}").get("items") or []:
        containers = (pod.get("spec") or {}).get("containers") or []
        wanted = [name for c in containers for section in ("requests", "limits")
                  for name in ((c.get("resources") or {}).get(section) or {})]
        if any(name.startswith(prefix) for name in wanted):
            meta = pod.get("metadata") or {}
            found.append(f"{meta.get('namespace', '?')}/{meta.get('name', '?')}")
    return found


def delete_node(module: AnsibleModule) -> dict:
    node = module.params["node"]
    if _node(module) is None:
        return {"changed": False, "exists": False}
    if not module.check_mode:
        rc, out, err = _kubectl(module, ["delete", "node", node, "--ignore-not-found", "--wait=true",
                                         f"--timeout={int(module.params['timeout'])}s"])
        if rc != 0:
            module.fail_json(msg=_failure(f"delete node {node}", rc, out, err), exists=True)
    return {"changed": True, "exists": True}


def _ready(found: dict) -> bool:
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def release(module: AnsibleModule) -> dict:
    node, mark, version = module.params["node"], module.params["mark"], module.params["version"]
    deadline = time.monotonic() + int(module.params["timeout"])
    while True:
        found = _node(module)
        if found is None:
            module.fail_json(msg=f"node {node} is not registered: its kubelet did not come back")
        seen = ((found.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
        healthy = _ready(found) and (not version or seen == version)
        if healthy or module.check_mode:
            break
        if time.monotonic() >= deadline:
            want = f"Ready with kubelet {version}" if version else "Ready"
            module.fail_json(msg=f"node {node} is not {want} after {module.params['timeout']} s (kubelet "
                                 f"{seen or 'unknown'}, Ready {_ready(found)}); it stays cordoned",
                             kubelet_version=seen)
        time.sleep(RELEASE_POLL)
    annotations = (found.get("metadata") or {}).get("annotations") or {}
    if not mark or annotations.get(MARK) != mark:
        return {"changed": False, "uncordoned": False, "kubelet_version": seen}
    if not module.check_mode:
        for args in (["uncordon", node], ["annotate", "node", node, f"{MARK}-"]):
            rc, out, err = _kubectl(module, args)
            if rc != 0:
                module.fail_json(msg=_failure(" ".join(args[:2]) + f" {node}", rc, out, err))
    return {"changed": True, "uncordoned": True, "kubelet_version": seen}


def _int_or_percent(value: str) -> int | str:
    """maxUnavailable as the API takes it: an integer, or a string ending in %."""
    return int(value) if value.isdigit() else value


def rollout(module: AnsibleModule) -> dict:
    namespace, _, name = module.params["daemonset"].partition("/")
    wanted = str(module.params["max_unavailable"]).strip()
    if not namespace or not name or not wanted:
        module.fail_json(msg="mode=rollout needs daemonset (<namespace>/<name>) and max_unavailable")
    rc, out, err = _kubectl(module, ["get", "daemonset", name, f"--namespace={namespace}", "--output=json"])
    if rc != 0:
        if "NotFound" in err:  # Error from server (NotFound): daemonsets.apps "x" not found
            return {"changed": False, "exists": False, "max_unavailable_was": ""}
        module.fail_json(msg=_failure(f"get daemonset {namespace}/{name}", rc, out, err))
    try:
        strategy = (json.loads(out).get("spec") or {}).get("updateStrategy") or {}
    except ValueError:
        module.fail_json(msg=f"kubectl get daemonset {namespace}/{name}: the answer is not JSON: {out[:200]}")
    # apps/v1 defaulting: RollingUpdate, maxUnavailable 1 (what kubeadm's kube-proxy gets)
    was = str((strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1))
    if strategy.get("type", "RollingUpdate") == "RollingUpdate" and was == wanted:
        return {"changed": False, "exists": True, "max_unavailable_was": was}
    if not module.check_mode:
        patch = {"spec": {"updateStrategy": {"type": "RollingUpdate",
                                             "rollingUpdate": {"maxUnavailable": _int_or_percent(wanted)}}}}
        rc, out, err = _kubectl(module, ["patch", "daemonset", name, f"--namespace={namespace}",
                                         "--type=strategic", f"--patch={json.dumps(patch)}"])
        if rc != 0:
            module.fail_json(msg=_failure(f"patch daemonset {namespace}/{name}", rc, out, err),
                             max_unavailable_was=was)
    return {"changed": True, "exists": True, "max_unavailable_was": was}


MODES = {"apply": apply, "label": label, "untaint": untaint, "drain": drain, "delete_node": delete_node,
         "release": release, "hold": hold, "rollout": rollout}


def main() -> None:
    manifest = {"name": {"type": "str", "required": True}, "text": {"type": "str", "required": True},
                "crds": {"type": "list", "elements": "str", "default": []}}
    module = AnsibleModule(
        argument_spec={
            "mode": {"type": "str", "choices": ["probe", *MODES], "default": "probe"},
            "kubectl": {"type": "str", "default": "kubectl"},
            "kubeconfig": {"type": "path", "default": "/etc/kubernetes/admin.conf"},
            "manifests": {"type": "list", "elements": "dict", "default": [], "options": manifest},
            "label_args": {"type": "list", "elements": "list", "default": []},
            "node": {"type": "str", "default": ""},
            "taint": {"type": "dict", "default": {}},
            "mark": {"type": "str", "default": ""},
            "labels": {"type": "dict", "default": {}},
            "release_mark": {"type": "str", "default": ""},
            "refuse_resource": {"type": "str", "default": ""},
            "annotation": {"type": "str", "default": ""},
            "reason": {"type": "str", "default": ""},
            "version": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 900},
            "daemonset": {"type": "str", "default": ""},
            "max_unavailable": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    ready, reason = probe(module)
    result = {"changed": False, "ready": ready, "reason": reason}
    mode = module.params["mode"]
    one_node = ("untaint", "label", "drain", "delete_node", "release", "hold")
    if (mode in one_node and not ready and module.params["node"]) or (mode == "rollout" and not ready):
        module.exit_json(**result)  # a step with nothing to act with: the caller reports SKIPPED
    if mode != "probe":
        if not ready:
            module.fail_json(msg=f"cannot {mode}: {reason}", **result)
        result.update(MODES[mode](module))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
