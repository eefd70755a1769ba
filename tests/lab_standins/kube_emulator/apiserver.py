"""LAB API STAND-IN for kube-apiserver: NOT Kubernetes' API server.

The lab cannot install kube-apiserver, so `kubeadm __apiserver` (the lab kube emulator) serves this on
every control plane, behind the real haproxy and keepalived VIP, with the cluster CA's serving
certificate. The real kubectl (the one the roles install) is its client. It keeps every object in the
real etcd core cluster (etcd's v3 JSON gateway, the apiserver's etcd client certificate), so the three
control planes answer alike, and it refuses what kube-apiserver refuses for everything ufcctl uses:

- discovery (/api, /apis, per group-version resource lists with short names) and the OpenAPI v3 index
  kubectl's default `--validate=strict` reads to learn that PATCH takes `fieldValidation`;
- create (POST), get, list (label and field selectors, Table output for `kubectl get`), watch (events as
  newline-delimited JSON, for `kubectl rollout status` and `kubectl wait`), update (PUT, resourceVersion
  preconditions), patch (server-side apply with managed fields per manager and dry run, JSON merge,
  strategic merge on built-in kinds only (415 on custom resources, as the real one), JSON patch), delete;
- NamespaceLifecycle: objects need their namespace (404), the system namespaces cannot be deleted (403);
- a custom resource needs its CRD, and its group-version is in discovery only once the CRD is
  Established; built-in kinds are checked against Kubernetes' published OpenAPI definitions (the
  kubernetes-validate strict data of the cluster's minor), custom resources against their CRD's
  structural schema: unknown fields are a 400 under fieldValidation=Strict (pruned otherwise), other
  schema errors a 422 Invalid;
- requests need the admin client certificate (kubeadm's admin.conf) except the paths kube-apiserver
  serves to anyone (/version, /healthz, /livez, /readyz, cluster-info in kube-public);
- Nodes exist once a node registered (kubeadm init or join: `register_node`), with the labels and taints
  the kubelet and kubeadm give them, so labelling or tainting a node that has not joined is NotFound;
- a minimal scheduler, run on every read: the pods of each Deployment, StatefulSet and DaemonSet are
  derived from the nodes (nodeSelector, required node affinity, taints against tolerations with the
  DaemonSet controller's automatic tolerations, required pod anti-affinity by hostname), Pending with the
  scheduler's reason when nothing fits; workload status (what `rollout status` reads) follows from it.
  A node is Ready (and loses the node controller's `node.kubernetes.io/not-ready:NoSchedule` taint) once
  a CNI DaemonSet (a hostPath volume at /etc/cni/net.d) has a pod on it;
- what `kubectl drain` uses: cordon (a patch of spec.unschedulable), pods listed by
  `fieldSelector=spec.nodeName=...`, and the policy/v1 Eviction subresource (`pods/eviction` in /api/v1
  discovery, so kubectl evicts instead of deleting): an eviction refused by a PodDisruptionBudget is a 429
  (kubectl retries), a pod matched by two budgets a 500, as kube-apiserver's eviction REST handler; an
  evicted pod is replaced by a new one (a new name for a ReplicaSet's, a new uid for a StatefulSet's or a
  DaemonSet's), and a replacement is never placed on an unschedulable node. Deleting a Node is a plain
  delete (the kubelet that would register it again is the caller's business).

What it does NOT check is listed in tests/lab_standins/README.md. Standard library plus the lab image's
python3-yaml and python3-jsonschema.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import hashlib
import http.client
import http.server
import json
import re
import ssl
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REGISTRY = "/ufc-kube-emulator/registry/"
# Evictions per pod slot (workload kind, namespace, name, replica index or node): the replacement pod's
# incarnation. Outside every resource's prefix (no group is named like it).
EVICTIONS = REGISTRY + "ufc-lab-evictions/"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
CNI_CONF_DIR = "/etc/cni/net.d"
WATCH_POLL = 0.5  # seconds between two looks at the store while a watch is open
WATCH_MAX = 300  # seconds: a watch ends (the client re-lists and watches again), as timeoutSeconds does


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short: tuple[str, ...] = ()
    crd: str = ""  # name of the CRD serving it ("" for built-in kinds)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()


def _r(group: str, version: str, kind: str, plural: str, namespaced: bool, *short: str) -> Resource:
    return Resource(group, version, kind, plural, namespaced, tuple(short))


# The built-in kinds served: what ufcctl writes and reads, and what kubectl's commands touch. A kind
# missing here is missing from discovery, so kubectl refuses it as the real server would an unknown kind.
BUILTIN: tuple[Resource, ...] = (
    _r("", "v1", "Namespace", "namespaces", False, "ns"),
    _r("", "v1", "Node", "nodes", False, "no"),
    _r("", "v1", "Pod", "pods", True, "po"),
    _r("", "v1", "ConfigMap", "configmaps", True, "cm"),
    _r("", "v1", "Secret", "secrets", True),
    _r("", "v1", "Service", "services", True, "svc"),
    _r("", "v1", "ServiceAccount", "serviceaccounts", True, "sa"),
    _r("", "v1", "Endpoints", "endpoints", True, "ep"),
    _r("", "v1", "Event", "events", True, "ev"),
    _r("", "v1", "PersistentVolume", "persistentvolumes", False, "pv"),
    _r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc"),
    _r("", "v1", "ResourceQuota", "resourcequotas", True, "quota"),
    _r("", "v1", "LimitRange", "limitranges", True, "limits"),
    _r("apps", "v1", "Deployment", "deployments", True, "deploy"),
    _r("apps", "v1", "DaemonSet", "daemonsets", True, "ds"),
    _r("apps", "v1", "StatefulSet", "statefulsets", True, "sts"),
    _r("apps", "v1", "ReplicaSet", "replicasets", True, "rs"),
    _r("batch", "v1", "Job", "jobs", True),
    _r("batch", "v1", "CronJob", "cronjobs", True, "cj"),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _r("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _r(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        "crd",
        "crds",
    ),
    _r("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, "sc"),
    _r("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False),
    _r("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, "pc"),
    _r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "pdb"),
    _r("coordination.k8s.io", "v1", "Lease", "leases", True),
    _r("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    _r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, "netpol"),
    _r("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", False),
    _r(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        False,
    ),
    _r(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
    _r(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
    ),
)
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
# Kinds the apiserver keeps a generation for (bumped when anything but metadata and status changes).
_NO_GENERATION = ("Namespace", "Node", "Pod", "ConfigMap", "Secret", "Event", "Endpoints")


class ApiError(Exception):
    """A Kubernetes Status failure."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self) -> dict[str, Any]:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        }


def not_found(res: Resource, name: str) -> ApiError:
    qualified = f"{res.plural}.{res.group}" if res.group else res.plural
    return ApiError(
        404,
        "NotFound",
        f'{qualified} "{name}" not found',
        {"name": name, "group": res.group, "kind": res.plural},
    )


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the store: etcd (the lab) or memory (unit tests) ---------------------------------------------


class MemoryStore:
    """Keys to JSON values with etcd's revisions, in this process (unit tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rev = 1
        self._data: dict[str, tuple[str, int]] = {}

    def range(self, prefix: str) -> tuple[list[tuple[str, str, int]], int]:
        with self._lock:
            rows = [(k, v, r) for k, (v, r) in sorted(self._data.items()) if k.startswith(prefix)]
            return rows, self._rev

    def get(self, key: str) -> tuple[str, int] | None:
        with self._lock:
            return self._data.get(key)

    def put_if(self, key: str, value: str, mod_rev: int) -> int | None:
        """Write when the key's revision is `mod_rev` (0: absent); the new revision, or None."""
        with self._lock:
            current = self._data.get(key)
            if (current[1] if current else 0) != mod_rev:
                return None
            self._rev += 1
            self._data[key] = (value, self._rev)
            return self._rev

    def delete(self, key: str) -> bool:
        with self._lock:
            if self._data.pop(key, None) is None:
                return False
            self._rev += 1
            return True


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _prefix_end(prefix: str) -> str:
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class EtcdStore:
    """The same operations on the real etcd cluster, through its v3 JSON gateway over mutual TLS (one
    keep-alive connection per thread; the next endpoint on a connection error)."""

    def __init__(self, settings: dict[str, Any]):
        self.endpoints = [urllib.parse.urlsplit(e) for e in settings["endpoints"]]
        self.context = ssl.create_default_context(cafile=settings["caFile"])
        self.context.load_cert_chain(settings["certFile"], settings["keyFile"])
        self._local = threading.local()

    def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        last: Exception | None = None
        for attempt in range(2 * len(self.endpoints)):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                url = self.endpoints[(getattr(self._local, "index", 0) + attempt) % len(self.endpoints)]
                conn = http.client.HTTPSConnection(url.hostname, url.port, context=self.context, timeout=10)
                self._local.conn = conn
            try:
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                reply = conn.getresponse()
                data = reply.read()
                if reply.status != 200:
                    raise ApiError(500, "InternalError", f"etcd {path}: {reply.status} {data[:300]!r}")
                return json.loads(data)
            except (OSError, http.client.HTTPException) as err:
                last = err
                conn.close()
                self._local.conn = None
                self._local.index = getattr(self._local, "index", 0) + 1
        raise ApiError(500, "InternalError", f"etcd: no endpoint answered: {last}")

    def range(self, prefix: str) -> tuple[list[tuple[str, str, int]], int]:
        reply = self._call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(_prefix_end(prefix))})
        rows = [
            (
                base64.b64decode(kv["key"]).decode(),
                base64.b64decode(kv.get("value", "")).decode(),
                int(kv["mod_revision"]),
            )
            for kv in reply.get("kvs") or []
        ]
        return rows, int(reply["header"]["revision"])

    def get(self, key: str) -> tuple[str, int] | None:
        kvs = self._call("/v3/kv/range", {"key": _b64(key)}).get("kvs") or []
        return (
            (base64.b64decode(kvs[0].get("value", "")).decode(), int(kvs[0]["mod_revision"])) if kvs else None
        )

    def put_if(self, key: str, value: str, mod_rev: int) -> int | None:
        reply = self._call(
            "/v3/kv/txn",
            {
                "compare": [
                    {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(mod_rev)}
                ],
                "success": [{"request_put": {"key": _b64(key), "value": _b64(value)}}],
            },
        )
        return int(reply["header"]["revision"]) if reply.get("succeeded") else None

    def delete(self, key: str) -> bool:
        return int(self._call("/v3/kv/deleterange", {"key": _b64(key)}).get("deleted") or 0) > 0


# -- schemas ---------------------------------------------------------------------------------------


class Schemas:
    """Kubernetes' OpenAPI definitions (kubernetes-validate's strict JSON schemas, `$defs`), by kind."""

    def __init__(self, definitions: dict[str, Any] | None):
        self.defs = (definitions or {}).get("$defs") or {}
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        for name, schema in self.defs.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                self.by_gvk[(gvk["group"], gvk["version"], gvk["kind"])] = name

    def schema(self, res: Resource) -> dict[str, Any] | None:
        name = self.by_gvk.get((res.group, res.version, res.kind))
        return {"$defs": self.defs, "$ref": f"#/$defs/{name}"} if name else None


def crd_json_schema(node: Any, top: bool = False) -> Any:
    """A CRD's structural openAPIV3Schema as a JSON schema that refuses unknown fields (kube-apiserver
    prunes or, under fieldValidation=Strict, refuses them), int-or-string and nullable translated."""
    if isinstance(node, list):
        return [crd_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {k: crd_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") or key in ("allOf", "anyOf", "oneOf"):
            out[key] = crd_json_schema(value)
        elif not key.startswith("x-kubernetes-") and key not in (
            "nullable",
            "format",
            "example",
            "externalDocs",
        ):
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if top:
        out.setdefault("properties", {})
        out["properties"] = {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            **out["properties"],
        }
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def validate(schema: dict[str, Any], obj: dict[str, Any], strict: bool) -> list[str]:
    """Unknown fields refused (strict) or pruned (else, returned as warnings); ApiError 422 for the rest."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    unknown: list[str] = []
    invalid: list[tuple[str, str]] = []
    for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        leaves = [error] if not error.context else list(error.context)
        extra = [e for e in leaves if e.validator == "additionalProperties"]
        if error.validator == "additionalProperties" or (extra and len(extra) == len(leaves)):
            for err in [error] if error.validator == "additionalProperties" else extra:
                allowed = err.schema.get("properties") or {}
                for key in [k for k in err.instance if k not in allowed]:
                    unknown.append(_path([*err.absolute_path, key]))
                    if not strict:
                        err.instance.pop(key, None)
        else:
            invalid.append((_path(error.absolute_path) or "<root>", error.message[:200]))
    if unknown and strict:
        raise ApiError(
            400,
            "BadRequest",
            "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in sorted(set(unknown))),
        )
    if invalid:
        kind, name = obj.get("kind", ""), (obj.get("metadata") or {}).get("name", "")
        raise ApiError(
            422,
            "Invalid",
            f'{kind} "{name}" is invalid: ' + "; ".join(f"{p}: Invalid value: {m}" for p, m in invalid),
            {"name": name, "kind": kind, "causes": [{"field": p, "message": m} for p, m in invalid]},
        )
    return [f'unknown field "{u}"' for u in unknown]


# -- merging: server-side apply, merge patch, strategic merge, JSON patch ----------------------------


def fieldset(applied: Any, top: bool = True) -> dict[str, Any]:
    """The fields an apply sets, in FieldsV1's shape ({"f:spec": {"f:replicas": {}}}); lists are atomic."""
    if not isinstance(applied, dict):
        return {}
    out = {}
    for key, value in applied.items():
        if top and key in ("apiVersion", "kind"):
            continue
        if top and key == "metadata":
            value = {k: v for k, v in value.items() if k not in ("name", "namespace")}
            if not value:
                continue
        out[f"f:{key}"] = fieldset(value, False) if isinstance(value, dict) and value else {}
    return out


def managed_entry(manager: str, operation: str, api_version: str, fields: dict[str, Any]) -> dict[str, Any]:
    """One metadata.managedFields entry (FieldsV1)."""
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": _now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def _remove(obj: dict[str, Any], old: dict[str, Any], keep: dict[str, Any]) -> None:
    """Drop from `obj` the fields of `old` that `keep` no longer sets."""
    for fkey, sub in old.items():
        key = fkey[2:]
        if key not in obj:
            continue
        if fkey not in keep:
            del obj[key]
        elif sub and isinstance(obj[key], dict):
            _remove(obj[key], sub, keep[fkey])


def _overlay(base: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    for key, value in applied.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _overlay(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def server_side_apply(live: dict[str, Any], applied: dict[str, Any], manager: str) -> dict[str, Any]:
    new = copy.deepcopy(live)
    fields = fieldset(applied)
    managed = [m for m in (live.get("metadata") or {}).get("managedFields") or []]
    mine = next((m for m in managed if m.get("manager") == manager and m.get("operation") == "Apply"), None)
    if mine is not None:
        _remove(new, mine.get("fieldsV1") or {}, fields)
    _overlay(new, {k: v for k, v in applied.items() if k not in ("apiVersion", "kind")})
    entry = managed_entry(manager, "Apply", applied.get("apiVersion", ""), fields)
    new.setdefault("metadata", {})["managedFields"] = [*(m for m in managed if m is not mine), entry]
    return new


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Strategic merge keys of the list fields ufcctl's objects and kubectl's commands patch.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}


def strategic_merge(target: Any, patch: Any) -> Any:
    """Strategic merge patch for built-in kinds: maps merged, `$patch: delete|replace`, the lists above
    merged by key, other lists replaced; `$setElementOrder`/`$retainKeys` directives dropped."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in _MERGE_KEYS and isinstance(result.get(key), list):
            mkey = _MERGE_KEYS[key]
            items = {item.get(mkey): item for item in result[key] if isinstance(item, dict)}
            order = [item.get(mkey) for item in result[key] if isinstance(item, dict)]
            for item in value:
                ident = item.get(mkey)
                if item.get("$patch") == "delete":
                    items.pop(ident, None)
                    continue
                if ident not in items:
                    order.append(ident)
                items[ident] = strategic_merge(items.get(ident), item)
            result[key] = [items[i] for i in order if i in items]
        elif isinstance(value, dict):
            result[key] = strategic_merge(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json_patch(target: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902: add, remove, replace, test, move, copy."""
    doc = copy.deepcopy(target)

    def walk(parts: list[str]) -> tuple[Any, str]:
        node: Any = doc
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node, parts[-1]

    try:
        for op in ops:
            parts = _pointer(op["path"])
            parent, last = walk(parts)
            kind = op["op"]
            if kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent[last]
                if current != op["value"]:
                    raise ApiError(422, "Invalid", f"the test operation at {op['path']} failed")
            elif kind in ("remove", "replace"):
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            if kind in ("add", "replace", "move", "copy"):
                if kind in ("move", "copy"):
                    src_parent, src_last = walk(_pointer(op["from"]))
                    value = (
                        src_parent[int(src_last)] if isinstance(src_parent, list) else src_parent[src_last]
                    )
                    if kind == "move":
                        del src_parent[int(src_last) if isinstance(src_parent, list) else src_last]
                else:
                    value = op["value"]
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(value))
                else:
                    parent[last] = copy.deepcopy(value)
    except (KeyError, IndexError, ValueError, TypeError) as err:
        raise ApiError(422, "Invalid", f"the JSON patch cannot be applied: {err}") from err
    return doc


# -- selectors and scheduling ------------------------------------------------------------------------


_REQ = re.compile(r"^\s*(!?)([\w./-]+)\s*(?:(==|=|!=)\s*([\w./-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_selector(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in [*parts, current] if p.strip()]


def label_selector_matches(text: str, labels: dict[str, str]) -> bool:
    for requirement in _split_selector(text):
        match = _REQ.match(requirement)
        if not match:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {requirement!r}")
        neg, key, op, value, setop, values = match.groups()
        if setop:
            members = {v.strip() for v in values.split(",")}
            ok = (labels.get(key) in members) if setop == "in" else (labels.get(key) not in members)
        elif op:
            ok = (labels.get(key) == value) if op in ("=", "==") else (labels.get(key) != value)
        else:
            ok = (key in labels) != bool(neg)
        if not ok:
            return False
    return True


def _field_value(obj: dict[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def field_selector_matches(text: str, obj: dict[str, Any]) -> bool:
    for requirement in _split_selector(text):
        match = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", requirement)
        if not match:
            raise ApiError(400, "BadRequest", f"invalid field selector: {requirement!r}")
        path, op, value = match.groups()
        if (_field_value(obj, path) == value) != (op != "!="):
            return False
    return True


def match_expressions(expressions: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    for expr in expressions or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op in ("Gt", "Lt"):
            try:
                number, bound = int(labels.get(key, "")), int(values[0])
            except (ValueError, IndexError):
                return False
            if (op == "Gt" and not number > bound) or (op == "Lt" and not number < bound):
                return False
    return True


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions)."""
    selector = selector or {}
    return all(
        labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()
    ) and match_expressions(selector.get("matchExpressions") or [], labels)


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        operator = tol.get("operator") or "Equal"
        if not tol.get("key"):
            if operator == "Exists":
                return True
            continue
        if tol["key"] != taint.get("key"):
            continue
        if operator == "Exists" or (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


# The DaemonSet controller's automatic tolerations (all Exists): not the control-plane taint.
_DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
_HOSTNETWORK_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def _untolerated(spec: dict[str, Any], taints: list[dict[str, Any]]) -> dict[str, Any] | None:
    tolerations = spec.get("tolerations") or []
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return taint
    return None


def _affinity_fits(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    name = node["metadata"]["name"]
    for term in terms:
        fields_ok = all(
            (f.get("operator") == "In" and name in (f.get("values") or []))
            or (f.get("operator") == "NotIn" and name not in (f.get("values") or []))
            for f in term.get("matchFields") or []
        )
        if fields_ok and match_expressions(term.get("matchExpressions") or [], labels):
            return True
    return False


def _anti_affinity_terms(spec: dict[str, Any]) -> list[dict[str, Any]]:
    anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
    return [
        t
        for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        if t.get("topologyKey") == "kubernetes.io/hostname"
    ]


def _hash(text: str, size: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's safe encoding alphabet
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    out = ""
    for _ in range(size):
        digest, index = divmod(digest, len(alphabet))
        out += alphabet[index]
    return out


def _is_cni(template_spec: dict[str, Any]) -> bool:
    return any(
        ((v.get("hostPath") or {}).get("path") or "").rstrip("/") == CNI_CONF_DIR
        for v in template_spec.get("volumes") or []
    )


@dataclass
class Placement:
    """What the minimal scheduler decided for the whole cluster at one store revision."""

    pods: list[dict[str, Any]] = field(default_factory=list)
    status: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)  # kind, ns, name
    ready: dict[str, bool] = field(default_factory=dict)  # node -> Ready
    revision: int = 0  # the store's revision it was computed at
    slots: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, pod) -> eviction slot


def effective_taints(node: dict[str, Any], ready: bool) -> list[dict[str, Any]]:
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != NOT_READY["key"]]
    return taints if ready else [*taints, dict(NOT_READY)]


def _pod(
    owner: dict[str, Any],
    name: str,
    spec: dict[str, Any],
    node: str | None,
    running: bool,
    reason: str,
    extra_labels: dict[str, str],
    incarnation: int = 0,
) -> dict[str, Any]:
    meta = owner["metadata"]
    template = (owner.get("spec") or {}).get("template") or {}
    labels = {**((template.get("metadata") or {}).get("labels") or {}), **extra_labels}
    pod_spec = copy.deepcopy(spec)
    if node:
        pod_spec["nodeName"] = node
    containers = [
        {
            "name": c.get("name"),
            "image": c.get("image"),
            "ready": running,
            "restartCount": 0,
            "started": running,
            "state": {"running": {"startedAt": meta.get("creationTimestamp")}}
            if running
            else {"waiting": {"reason": "ContainerCreating"}},
        }
        for c in spec.get("containers") or []
    ]
    if node is None:
        conditions = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": reason}
        ]
    else:
        flag = "True" if running else "False"
        conditions = [
            {"type": t, "status": flag if t != "PodScheduled" else "True"}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            "labels": labels,
            "uid": str(
                uuid.uuid5(
                    uuid.NAMESPACE_URL,
                    f"{meta.get('uid')}/{name}" + (f"#{incarnation}" if incarnation else ""),
                )
            ),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": meta["name"],
                    "uid": meta.get("uid"),
                    "controller": True,
                }
            ],
        },
        "spec": pod_spec,
        "status": {
            "phase": "Running" if running else "Pending",
            "conditions": conditions,
            "containerStatuses": containers if node else [],
            **({"hostIP": node} if node else {}),
        },
    }


def _unschedulable_message(
    nodes: list[dict[str, Any]], spec: dict[str, Any], ready: dict[str, bool], taken: set[str]
) -> str:
    reasons: dict[str, int] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        taint = _untolerated(spec, effective_taints(node, ready[name]))
        if not _affinity_fits(spec, node):
            why = "node(s) didn't match Pod's node affinity/selector"
        elif taint is not None:
            value = f": {taint['value']}" if taint.get("value") else ""
            why = f"node(s) had untolerated taint {{{taint['key']}{value}}}"
        elif name in taken:
            why = "node(s) didn't match pod anti-affinity rules"
        else:
            continue
        reasons[why] = reasons.get(why, 0) + 1
    detail = ", ".join(f"{count} {why}" for why, count in sorted(reasons.items()))
    return (
        f"0/{len(nodes)} nodes are available: {detail}." if detail else f"0/{len(nodes)} nodes are available."
    )


def eviction_slot(kind: str, namespace: str, name: str, index: object) -> str:
    return f"{kind}/{namespace}/{name}/{index}"


def _unschedulable(node: dict[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def schedule(
    nodes: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    evictions: dict[str, int] | None = None,
    bound: dict[str, str] | None = None,
) -> Placement:
    """Place every workload's pods (see the module docstring); deterministic for one input.

    `evictions` counts the evictions of each pod slot: an evicted pod's replacement (incarnation > 0)
    gets a new name (ReplicaSet) or uid (StatefulSet, DaemonSet) and, but for a DaemonSet's, which
    tolerates `unschedulable`, never lands on an unschedulable (cordoned) node. `bound` is the node each
    replacement was bound to when its eviction was recorded (API.evict): it stays there while that node
    exists, as kube-scheduler binds a pod once, so uncordoning the node it came from moves nothing back.
    Pods never evicted keep the node they have without any eviction (where it still fits), cordoned or
    not: a cordon alone moves no pod, and an eviction moves only the evicted one.
    """
    evictions = evictions or {}
    bound = bound or {}
    kept: dict[str, str] = {}
    if evictions:
        first = schedule(nodes, workloads)
        where = {
            (p["metadata"]["namespace"], p["metadata"]["name"]): p["spec"].get("nodeName") for p in first.pods
        }
        kept = {slot: str(where[pod]) for pod, slot in first.slots.items() if where.get(pod)}
    out = Placement()
    nodes = sorted(nodes, key=lambda n: n["metadata"]["name"])
    by_name = {n["metadata"]["name"]: n for n in nodes}
    daemons = [w for w in workloads if w["kind"] == "DaemonSet"]

    def daemon_fits(ds: dict[str, Any], node: dict[str, Any], ready: bool) -> bool:
        spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        tolerations = [
            *(spec.get("tolerations") or []),
            *_DAEMON_TOLERATIONS,
            *([_HOSTNETWORK_TOLERATION] if spec.get("hostNetwork") else []),
        ]
        return (
            _affinity_fits(spec, node)
            and _untolerated({"tolerations": tolerations}, effective_taints(node, ready)) is None
        )

    for node in nodes:
        name = node["metadata"]["name"]
        out.ready[name] = any(
            _is_cni(((d.get("spec") or {}).get("template") or {}).get("spec") or {})
            and daemon_fits(d, node, False)
            for d in daemons
        )
    placed: dict[str, list[tuple[str, dict[str, str]]]] = {n["metadata"]["name"]: [] for n in nodes}
    for work in sorted(
        workloads,
        key=lambda w: (w["kind"] != "DaemonSet", w["metadata"].get("namespace", ""), w["metadata"]["name"]),
    ):
        meta, spec = work["metadata"], work.get("spec") or {}
        template = spec.get("template") or {}
        pod_spec = template.get("spec") or {}
        key = (work["kind"], meta.get("namespace", ""), meta["name"])
        template_hash = _hash(json.dumps(template, sort_keys=True), 10)
        running = scheduled = 0
        generation = meta.get("generation", 1)
        if work["kind"] == "DaemonSet":
            chosen = [n for n in nodes if daemon_fits(work, n, out.ready[n["metadata"]["name"]])]
            for node in chosen:
                name = node["metadata"]["name"]
                up = out.ready[name] or bool(pod_spec.get("hostNetwork"))
                slot = eviction_slot(work["kind"], meta.get("namespace", ""), meta["name"], name)
                incarnation = evictions.get(slot, 0)
                pod_name = f"{meta['name']}-{_hash(meta['name'] + '/' + name, 5)}"
                out.slots[(meta.get("namespace", ""), pod_name)] = slot
                out.pods.append(
                    _pod(
                        work,
                        pod_name,
                        pod_spec,
                        name,
                        up,
                        "",
                        {"controller-revision-hash": template_hash[:10]},
                        incarnation,
                    )
                )
                running += up
            desired = len(chosen)
            out.status[key] = {
                "observedGeneration": generation,
                "desiredNumberScheduled": desired,
                "currentNumberScheduled": desired,
                "updatedNumberScheduled": desired,
                "numberReady": running,
                "numberAvailable": running,
                "numberUnavailable": desired - running,
                "numberMisscheduled": 0,
            }
            continue
        replicas = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        terms = _anti_affinity_terms(pod_spec)
        pod_labels = (template.get("metadata") or {}).get("labels") or {}
        for index in range(replicas):
            slot = eviction_slot(work["kind"], meta.get("namespace", ""), meta["name"], index)
            incarnation = evictions.get(slot, 0)
            again = f"#{incarnation}" if incarnation else ""
            pod_name = (
                f"{meta['name']}-{index}"
                if work["kind"] == "StatefulSet"
                else f"{meta['name']}-{template_hash}-{_hash(meta['name'] + str(index) + again, 5)}"
            )
            out.slots[(meta.get("namespace", ""), pod_name)] = slot
            extra = (
                {"statefulset.kubernetes.io/pod-name": pod_name}
                if work["kind"] == "StatefulSet"
                else {"pod-template-hash": template_hash}
            )
            # bound when its eviction was recorded: it stays, whatever the node's state now
            node = by_name.get(bound.get(slot, "")) if incarnation else None
            if node is None:
                taken = {
                    n
                    for n, pods in placed.items()
                    for ns, labels in pods
                    for term in terms
                    if ns == meta.get("namespace") and selector_matches(term.get("labelSelector"), labels)
                }
                feasible = [
                    n
                    for n in nodes
                    if _affinity_fits(pod_spec, n)
                    and n["metadata"]["name"] not in taken
                    and not (incarnation and _unschedulable(n))
                    and _untolerated(pod_spec, effective_taints(n, out.ready[n["metadata"]["name"]])) is None
                ]
                if not feasible:
                    reason = _unschedulable_message(nodes, pod_spec, out.ready, taken)
                    out.pods.append(_pod(work, pod_name, pod_spec, None, False, reason, extra, incarnation))
                    continue
                home = None if incarnation else kept.get(slot)
                node = next((n for n in feasible if n["metadata"]["name"] == home), None) or min(
                    feasible, key=lambda n: (len(placed[n["metadata"]["name"]]), n["metadata"]["name"])
                )
            name = node["metadata"]["name"]
            placed[name].append((meta.get("namespace", ""), pod_labels))
            up = out.ready[name] or bool(pod_spec.get("hostNetwork"))
            out.pods.append(_pod(work, pod_name, pod_spec, name, up, "", extra, incarnation))
            scheduled += 1
            running += up
        if work["kind"] == "Deployment":
            available = "True" if running >= replicas else "False"
            out.status[key] = {
                "observedGeneration": generation,
                "replicas": scheduled,
                "updatedReplicas": scheduled,
                "readyReplicas": running,
                "availableReplicas": running,
                "unavailableReplicas": replicas - running,
                "conditions": [
                    {"type": "Available", "status": available},
                    {
                        "type": "Progressing",
                        "status": "True",
                        "reason": "NewReplicaSetAvailable" if available == "True" else "ReplicaSetUpdated",
                    },
                ],
            }
        else:
            revision = f"{meta['name']}-{template_hash}"
            out.status[key] = {
                "observedGeneration": generation,
                "replicas": scheduled,
                "readyReplicas": running,
                "currentReplicas": scheduled,
                "updatedReplicas": scheduled,
                "availableReplicas": running,
                "currentRevision": revision,
                "updateRevision": revision,
            }
    return out


# -- the API ---------------------------------------------------------------------------------------


def _defaults(obj: dict[str, Any]) -> None:
    """The defaults kube-apiserver sets that kubectl reads (rollout status needs the strategy types)."""
    kind, spec = obj.get("kind"), obj.get("spec")
    if kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {})["phase"] = "Active"
    if not isinstance(spec, dict):
        return
    if kind in ("Deployment", "StatefulSet"):
        spec.setdefault("replicas", 1)
    if kind == "Deployment":
        spec.setdefault("strategy", {}).setdefault("type", "RollingUpdate")
    if kind == "DaemonSet":
        strategy = spec.setdefault("updateStrategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":  # apps/v1 SetDefaults_DaemonSet: one node at a time
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", 1)
            rolling.setdefault("maxSurge", 0)
    if kind == "StatefulSet":
        spec.setdefault("updateStrategy", {}).setdefault("type", "RollingUpdate")
        spec.setdefault("podManagementPolicy", "OrderedReady")
    if kind == "Service":
        spec.setdefault("type", "ClusterIP")


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {
        k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("managedFields", "resourceVersion")
    }
    return {**obj, "metadata": meta}


class API:
    """Kubernetes' REST semantics over a store (see the module docstring)."""

    def __init__(self, store: Any, schemas: Schemas, version: str):
        self.store, self.schemas, self.version = store, schemas, version
        self._placement: tuple[int, Placement] | None = None
        self._lock = threading.Lock()

    # resources ---------------------------------------------------------------------------------
    def resources(self) -> list[Resource]:
        found = list(BUILTIN)
        for crd in self._items(self._builtin("customresourcedefinitions"))[0]:
            established = any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (crd.get("status") or {}).get("conditions") or []
            )
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            if not established:
                continue
            for version in spec.get("versions") or []:
                if version.get("served"):
                    found.append(
                        Resource(
                            spec.get("group", ""),
                            version["name"],
                            names.get("kind", ""),
                            names.get("plural", ""),
                            spec.get("scope") == "Namespaced",
                            tuple(names.get("shortNames") or ()),
                            crd["metadata"]["name"],
                        )
                    )
        return found

    def resource(self, group: str, version: str, plural: str) -> Resource:
        for res in self.resources():
            if (res.group, res.version, res.plural) == (group, version, plural):
                return res
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    @staticmethod
    def _builtin(plural: str) -> Resource:
        return next(r for r in BUILTIN if r.plural == plural)

    @staticmethod
    def key(res: Resource, namespace: str | None, name: str = "") -> str:
        scope = (namespace or "") if res.namespaced else "_"
        return f"{REGISTRY}{res.group or 'core'}/{res.plural}/{scope}/{name}"

    def _items(self, res: Resource, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]:
        prefix = (
            self.key(res, namespace)
            if (namespace or not res.namespaced)
            else f"{REGISTRY}{res.group or 'core'}/{res.plural}/"
        )
        rows, revision = self.store.range(prefix)
        items = []
        for _key, value, mod_rev in rows:
            obj = json.loads(value)
            obj["metadata"]["resourceVersion"] = str(mod_rev)
            items.append(obj)
        return items, revision

    # derived state -----------------------------------------------------------------------------
    def placement(self) -> Placement:
        nodes, revision = self._items(self._builtin("nodes"))
        with self._lock:
            if self._placement and self._placement[0] == revision:
                return self._placement[1]
        workloads = [
            w
            for plural in ("deployments", "statefulsets", "daemonsets")
            for w in self._items(self._builtin(plural))[0]
        ]
        evictions, bound = self._evictions()
        result = schedule(nodes, workloads, evictions, bound)
        result.revision = revision
        with self._lock:
            self._placement = (revision, result)
        return result

    def _evictions(self) -> tuple[dict[str, int], dict[str, str]]:
        """Evictions per pod slot, and the node each slot's replacement was bound to (if it was)."""
        rows = self.store.range(EVICTIONS)[0]
        records = {key[len(EVICTIONS) :]: json.loads(value) for key, value, _ in rows}
        return (
            {slot: int(r["count"]) for slot, r in records.items()},
            {slot: str(r["node"]) for slot, r in records.items() if r.get("node")},
        )

    def _derive(
        self, res: Resource, obj: dict[str, Any], placement: Placement | None = None
    ) -> dict[str, Any]:
        if res.group == "apps" and res.kind in WORKLOADS:
            placement = placement or self.placement()
            key = (res.kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            obj["status"] = placement.status.get(
                key, {"observedGeneration": obj["metadata"].get("generation", 1)}
            )
        if res.kind == "Node" and not res.group:
            placement = placement or self.placement()
            ready = placement.ready.get(obj["metadata"]["name"], False)
            obj.setdefault("spec", {})["taints"] = effective_taints(obj, ready)
            if not obj["spec"]["taints"]:
                del obj["spec"]["taints"]
            status = obj.setdefault("status", {})
            status["conditions"] = [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status"
                    if ready
                    else "container runtime network not ready: NetworkReady=false "
                    "reason:NetworkPluginNotReady message:Network plugin returns error: "
                    "cni plugin not initialized",
                }
            ]
        return obj

    # reads ---------------------------------------------------------------------------------------
    def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        if res.kind == "Pod" and not res.group:
            for pod in self.placement().pods:
                if pod["metadata"]["name"] == name and pod["metadata"]["namespace"] == namespace:
                    return copy.deepcopy(pod)
            raise not_found(res, name)
        found = self.store.get(self.key(res, namespace, name))
        if found is None:
            raise not_found(res, name)
        obj = json.loads(found[0])
        obj["metadata"]["resourceVersion"] = str(found[1])
        return self._derive(res, obj)

    def list(
        self, res: Resource, namespace: str | None, labels: str = "", fields: str = ""
    ) -> tuple[list[dict[str, Any]], int]:
        if res.kind == "Pod" and not res.group:
            placement = self.placement()
            revision = placement.revision
            items = [
                copy.deepcopy(p)
                for p in placement.pods
                if not namespace or p["metadata"]["namespace"] == namespace
            ]
        else:
            items, revision = self._items(res, namespace)
            placement = self.placement() if (res.kind in WORKLOADS or res.kind == "Node") else None
            items = [self._derive(res, i, placement) for i in items]
        items = [
            i
            for i in items
            if (not labels or label_selector_matches(labels, (i["metadata"].get("labels") or {})))
            and (not fields or field_selector_matches(fields, i))
        ]
        return items, revision

    # writes --------------------------------------------------------------------------------------
    def _check_namespace(self, res: Resource, namespace: str | None) -> None:
        if not res.namespaced:
            return
        if not namespace:
            raise ApiError(400, "BadRequest", "the namespace of the object must be set")
        if self.store.get(self.key(self._builtin("namespaces"), None, namespace)) is None:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            )

    def _validate(self, res: Resource, obj: dict[str, Any], validation: str) -> list[str]:
        if obj.get("apiVersion") != res.api_version or obj.get("kind") != res.kind:
            raise ApiError(
                400,
                "BadRequest",
                f"the object's apiVersion/kind {obj.get('apiVersion')}/"
                f"{obj.get('kind')} does not match the request's {res.api_version}/{res.kind}",
            )
        if validation == "Ignore":
            return []
        if res.crd:
            crd = self.get(self._builtin("customresourcedefinitions"), None, res.crd)
            version = next(v for v in crd["spec"]["versions"] if v["name"] == res.version)
            raw = (version.get("schema") or {}).get("openAPIV3Schema")
            schema = crd_json_schema(raw, top=True) if raw else None
        else:
            schema = self.schemas.schema(res)
        return validate(schema, obj, validation == "Strict") if schema else []

    def _prepare(self, res: Resource, obj: dict[str, Any], live: dict[str, Any] | None) -> None:
        meta = obj.setdefault("metadata", {})
        if live is not None:
            for key in ("uid", "creationTimestamp"):
                meta[key] = live["metadata"].get(key)
            generation = live["metadata"].get("generation", 1)
            if res.kind not in _NO_GENERATION:
                meta["generation"] = generation + (_spec_part(obj) != _spec_part(live))
        else:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = _now()
            if res.kind not in _NO_GENERATION:
                meta["generation"] = 1
        meta.pop("resourceVersion", None)
        if res.kind in WORKLOADS:
            obj.pop("status", None)  # derived by the scheduler on every read; never stored
        if res.kind == "Node" and isinstance(obj.get("spec"), dict) and "taints" in obj["spec"]:
            obj["spec"]["taints"] = [
                t for t in obj["spec"]["taints"] or [] if t.get("key") != NOT_READY["key"]
            ]
            if not obj["spec"]["taints"]:
                del obj["spec"]["taints"]
        if res.kind == "Node" and live is None:
            obj.pop("status", None)
        elif res.kind == "Node":  # the kubelet's status stays; Ready is derived on read
            obj["status"] = {k: v for k, v in (live.get("status") or {}).items() if k != "conditions"}
        if res.kind == "CustomResourceDefinition":
            self._crd_status(obj)
        _defaults(obj)

    @staticmethod
    def _crd_status(crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        expected = f"{names.get('plural')}.{spec.get('group')}"
        if crd["metadata"].get("name") != expected:
            raise ApiError(
                422,
                "Invalid",
                f"CustomResourceDefinition.apiextensions.k8s.io "
                f'"{crd["metadata"].get("name")}" is invalid: metadata.name: Invalid value: '
                f'must be spec.names.plural+"."+spec.group ({expected})',
            )
        for version in spec.get("versions") or []:
            if not (version.get("schema") or {}).get("openAPIV3Schema"):
                raise ApiError(
                    422,
                    "Invalid",
                    f'CustomResourceDefinition.apiextensions.k8s.io "{expected}" '
                    f"is invalid: spec.versions[{version.get('name')}].schema.openAPIV3Schema: "
                    "Required value: schemas are required",
                )
        stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
        now = _now()
        crd["status"] = {
            "acceptedNames": names,
            "storedVersions": stored,
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "lastTransitionTime": now,
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "lastTransitionTime": now,
                },
            ],
        }

    def _write(
        self, res: Resource, obj: dict[str, Any], live: dict[str, Any] | None, dry_run: bool, validation: str
    ) -> tuple[dict[str, Any], list[str], bool]:
        """Validate and store `obj` (the whole new object); (stored object, warnings, created)."""
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name"), meta.get("namespace")
        if not name:
            raise ApiError(
                422, "Invalid", f"{res.kind}: metadata.name: Required value: name or generateName is required"
            )
        self._prepare(res, obj, live)
        warnings = self._validate(res, obj, validation)
        if live is not None and _comparable({**obj, "status": None}) == _comparable({**live, "status": None}):
            return live, warnings, False
        if dry_run:
            obj["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"] if live else ""
            return self._derive(res, obj), warnings, live is None
        expect = int(live["metadata"]["resourceVersion"]) if live else 0
        revision = self.store.put_if(self.key(res, namespace, name), json.dumps(obj), expect)
        if revision is None:
            if live is None:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{res.plural} "{name}" already exists',
                    {"name": name, "kind": res.plural},
                )
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {res.plural} "{name}": the '
                "object has been modified; please apply your changes to the latest version and "
                "try again",
            )
        obj["metadata"]["resourceVersion"] = str(revision)
        return self._derive(res, obj), warnings, live is None

    def create(
        self,
        res: Resource,
        namespace: str | None,
        obj: dict[str, Any],
        manager: str,
        dry_run: bool,
        validation: str,
    ) -> tuple[dict[str, Any], list[str]]:
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = namespace or meta.get("namespace")
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + _hash(str(uuid.uuid4()), 5)
        self._check_namespace(res, meta.get("namespace"))
        if res.kind == "Pod" and not res.group:
            raise ApiError(
                403,
                "Forbidden",
                "LAB API STAND-IN: pods are derived from workloads here; creating a bare pod is not emulated",
            )
        meta["managedFields"] = [managed_entry(manager, "Update", res.api_version, fieldset(obj))]
        stored, warnings, _ = self._write(res, obj, None, dry_run, validation)
        return stored, warnings

    def replace(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        dry_run: bool,
        validation: str,
    ) -> tuple[dict[str, Any], list[str]]:
        live = self.get(res, namespace, name)
        wanted = (obj.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != live["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {res.plural} "{name}": the object '
                "has been modified; please apply your changes to the latest version and try again",
            )
        obj.setdefault("metadata", {}).update(
            {"name": name, **({"namespace": namespace} if res.namespaced else {})}
        )
        obj["metadata"].setdefault("managedFields", live["metadata"].get("managedFields"))
        stored, warnings, _ = self._write(res, obj, live, dry_run, validation)
        return stored, warnings

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        kind: str,
        body: bytes,
        manager: str,
        dry_run: bool,
        validation: str,
        force: bool,
    ) -> tuple[dict[str, Any], list[str], bool]:
        del force  # field ownership conflicts are not emulated (tests/lab_standins/README.md)
        if kind == "application/apply-patch+yaml":
            if not manager:
                raise ApiError(
                    422,
                    "Invalid",
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
                    "value: is required for apply patch",
                )
            try:
                applied = yaml.safe_load(body)
            except yaml.YAMLError as err:
                raise ApiError(400, "BadRequest", f"error decoding YAML: {err}") from err
            if not isinstance(applied, dict):
                raise ApiError(400, "BadRequest", "the apply configuration is not an object")
            if (applied.get("metadata") or {}).get("name") != name:
                raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
            try:
                live = self.get(res, namespace, name)
            except ApiError as err:
                if err.code != 404:
                    raise
                meta = applied.setdefault("metadata", {})
                if res.namespaced:
                    meta["namespace"] = namespace
                self._check_namespace(res, namespace)
                new = server_side_apply({"metadata": {}}, applied, manager)
                new["apiVersion"], new["kind"] = applied.get("apiVersion"), applied.get("kind")
                stored, warnings, _ = self._write(res, new, None, dry_run, validation)
                return stored, warnings, True
            new = server_side_apply(live, applied, manager)
        else:
            live = self.get(res, namespace, name)
            try:
                patch = json.loads(body or b"{}")
            except ValueError as err:
                raise ApiError(400, "BadRequest", f"error decoding patch: {err}") from err
            if kind == "application/merge-patch+json":
                new = merge_patch(live, patch)
            elif kind == "application/strategic-merge-patch+json":
                if res.crd:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown "
                        "format - accepted media types include: application/json-patch+json, "
                        "application/merge-patch+json, application/apply-patch+yaml",
                    )
                new = strategic_merge(live, patch)
            elif kind == "application/json-patch+json":
                new = json_patch(live, patch)
            else:
                raise ApiError(
                    415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {kind}"
                )
            managed = [
                m
                for m in live["metadata"].get("managedFields") or []
                if not (m.get("manager") == manager and m.get("operation") == "Update")
            ]
            new.setdefault("metadata", {})["managedFields"] = [
                *managed,
                managed_entry(manager or "unknown", "Update", res.api_version, fieldset(patch)),
            ]
        new["metadata"]["name"], new["metadata"]["resourceVersion"] = (
            name,
            live["metadata"]["resourceVersion"],
        )
        if res.namespaced:
            new["metadata"]["namespace"] = namespace
        stored, warnings, _ = self._write(res, new, live, dry_run, validation)
        return stored, warnings, False

    def patch_node_status(self, name: str, body: bytes) -> dict[str, Any]:
        """PATCH nodes/NAME/status (JSON merge): the kubelet's own report (nodeInfo: its version after an
        upgrade). Conditions stay derived on read; the rest of the Node is not touched."""
        res = self._builtin("nodes")
        key = self.key(res, None, name)
        try:
            patch = json.loads(body or b"{}")
        except ValueError as err:
            raise ApiError(400, "BadRequest", f"error decoding patch: {err}") from err
        if not isinstance(patch, dict) or set(patch) - {"status"}:
            raise ApiError(422, "Invalid", "LAB API STAND-IN: a status patch changes status only")
        while True:
            found = self.store.get(key)
            if found is None:
                raise not_found(res, name)
            obj = json.loads(found[0])
            status = merge_patch(obj.get("status") or {}, patch.get("status") or {})
            obj["status"] = {k: v for k, v in (status or {}).items() if k != "conditions"}
            revision = self.store.put_if(key, json.dumps(obj), found[1])
            if revision is not None:
                obj["metadata"]["resourceVersion"] = str(revision)
                return self._derive(res, obj)

    def delete(self, res: Resource, namespace: str | None, name: str, dry_run: bool) -> dict[str, Any]:
        live = self.get(res, namespace, name)
        if res.kind == "Namespace" and not res.group and name in SYSTEM_NAMESPACES[:3]:
            raise ApiError(
                403,
                "Forbidden",
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                {"name": name, "kind": "namespaces"},
            )
        if res.kind == "Pod" and not res.group:
            raise ApiError(
                403,
                "Forbidden",
                "LAB API STAND-IN: pods are derived from workloads here; deleting one is not emulated",
            )
        if dry_run:
            return live
        if res.kind == "Namespace" and not res.group:  # the namespace controller, at once
            for other in self.resources():
                if other.namespaced:
                    for key, _value, _rev in self.store.range(self.key(other, name))[0]:
                        self.store.delete(key)
        if res.kind == "CustomResourceDefinition":
            spec = live.get("spec") or {}
            for key, _value, _rev in self.store.range(
                f"{REGISTRY}{spec.get('group')}/{(spec.get('names') or {}).get('plural')}/"
            )[0]:
                self.store.delete(key)
        self.store.delete(self.key(res, namespace, name))
        return live

    def evict(self, namespace: str, name: str, body: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        """POST pods/<name>/eviction (kube-apiserver pkg/registry/core/pod/storage/eviction.go): the pod's
        PodDisruptionBudget must allow a disruption (429 otherwise, which kubectl retries; 500 for a pod
        under two budgets); then the pod is replaced by its controller (a new incarnation of its slot)."""
        if body.get("kind") != "Eviction" or body.get("apiVersion") not in ("policy/v1", "policy/v1beta1"):
            raise ApiError(400, "BadRequest", f"the body is not a policy/v1 Eviction: {body.get('kind')!r}")
        if (body.get("metadata") or {}).get("name") != name:
            raise ApiError(400, "BadRequest", "name in URL does not match name in Eviction object")
        placement = self.placement()
        pods = [p for p in placement.pods if p["metadata"]["namespace"] == namespace]
        pod = next((p for p in pods if p["metadata"]["name"] == name), None)
        if pod is None:
            raise not_found(self._builtin("pods"), name)
        labels = pod["metadata"].get("labels") or {}
        budgets = [
            b
            for b in self._items(self._builtin("poddisruptionbudgets"), namespace)[0]
            if selector_matches((b.get("spec") or {}).get("selector"), labels)
        ]
        if len(budgets) > 1:
            raise ApiError(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
                "support.",
            )
        if budgets and pod["status"]["phase"] == "Running":
            self._check_budget(budgets[0], pods)
        if not dry_run:
            slot = placement.slots[(namespace, name)]
            key = EVICTIONS + slot
            found = self.store.get(key)
            count = (json.loads(found[0])["count"] if found else 0) + 1
            # kube-scheduler binds the replacement now, to a node that is schedulable now: recorded, so a
            # later uncordon (or any other change) does not move it (a Pending one is bound when it fits)
            nodes = self._items(self._builtin("nodes"))[0]
            workloads = [
                w
                for plural in ("deployments", "statefulsets", "daemonsets")
                for w in self._items(self._builtin(plural))[0]
            ]
            evictions, bound = self._evictions()
            bound.pop(slot, None)  # the evicted incarnation's binding: its replacement is scheduled afresh
            trial = schedule(nodes, workloads, {**evictions, slot: count}, bound)
            node = next(
                (p["spec"].get("nodeName") for p in trial.pods
                 if trial.slots.get((p["metadata"]["namespace"], p["metadata"]["name"])) == slot),
                None,
            )
            record = {"count": count, **({"node": node} if node else {})}
            if self.store.put_if(key, json.dumps(record), found[1] if found else 0) is None:
                raise ApiError(
                    409, "Conflict", f'Operation cannot be fulfilled on pods "{name}": please try again'
                )
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    @staticmethod
    def _check_budget(budget: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        """The disruption controller's arithmetic (pkg/controller/disruption): expected = the pods the
        selector matches, healthy = those Running; percentages round up."""
        spec = budget.get("spec") or {}
        matched = [
            p for p in pods if selector_matches(spec.get("selector"), p["metadata"].get("labels") or {})
        ]
        expected = len(matched)
        healthy = sum(p["status"]["phase"] == "Running" for p in matched)

        def scaled(value: Any) -> int:
            text = str(value)
            return -(-int(text[:-1]) * expected // 100) if text.endswith("%") else int(text)

        if spec.get("minAvailable") is not None:
            desired = scaled(spec["minAvailable"])
        else:
            desired = max(0, expected - scaled(spec.get("maxUnavailable", 0)))
        if healthy - desired <= 0:
            name = budget["metadata"]["name"]
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {name} needs {desired} healthy pods "
                            f"and has {healthy} currently",
                        }
                    ]
                },
            )


# -- nodes and the system namespaces (kubelet, kubeadm and the apiserver's own start) -------------


def _put_new(api: API, res: Resource, namespace: str | None, obj: dict[str, Any]) -> bool:
    """Create `obj` unless it exists (a second init or join leaves what is there)."""
    if api.store.get(api.key(res, namespace, obj["metadata"]["name"])) is not None:
        return False
    obj["metadata"].update({"uid": str(uuid.uuid4()), "creationTimestamp": _now()})
    _defaults(obj)
    return api.store.put_if(api.key(res, namespace, obj["metadata"]["name"]), json.dumps(obj), 0) is not None


def bootstrap(api: API) -> None:
    """What kube-apiserver creates when it starts: the system namespaces."""
    for name in SYSTEM_NAMESPACES:
        _put_new(
            api,
            API._builtin("namespaces"),
            None,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            },
        )


def put_configmap(api: API, namespace: str, name: str, data: dict[str, str]) -> None:
    _put_new(
        api,
        API._builtin("configmaps"),
        namespace,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        },
    )


CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def register_node(
    api: API,
    name: str,
    kubelet_version: str,
    labels: dict[str, str],
    taints: list[dict[str, Any]] | None,
    control_plane: bool,
) -> bool:
    """The Node as the kubelet registers it (its well-known labels, --node-labels, --register-with-taints)
    and, on a control plane, as kubeadm's mark-control-plane phase leaves it (the control-plane label, the
    exclude-from-external-load-balancers label, and the control-plane NoSchedule taint when the
    configuration sets no taints: nil means kubeadm's default, an empty list none). False: it existed."""
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **labels,
    }
    node_taints = list(taints or [])
    if control_plane:
        node_labels.update(
            {
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            }
        )
        if taints is None:
            node_taints = [dict(CONTROL_PLANE_TAINT)]
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": {
            "taints": [{k: v for k, v in t.items() if k in ("key", "value", "effect")} for t in node_taints]
        }
        if node_taints
        else {},
        "status": {
            "nodeInfo": {
                "kubeletVersion": kubelet_version,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "lab",
                "containerRuntimeVersion": "containerd://1.6",
                "machineID": hashlib.md5(name.encode()).hexdigest(),  # noqa: S324
                "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                "bootID": str(uuid.uuid4()),
            },
            "addresses": [{"type": "Hostname", "address": name}],
        },
    }
    return _put_new(api, API._builtin("nodes"), None, node)


# -- OpenAPI v3 (what kubectl's query-parameter check reads) and discovery -------------------------


def openapi_paths(api: API) -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    for res in api.resources():
        prefix = f"apis/{res.group}/{res.version}" if res.group else "api/v1"
        scope = "namespaces/{namespace}/" if res.namespaced else ""
        gvk = {"group": res.group, "version": res.version, "kind": res.kind}
        params = [
            {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for n in ("dryRun", "fieldManager", "fieldValidation", "force")
        ]
        doc = docs.setdefault(
            prefix,
            {
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes (LAB API STAND-IN)", "version": api.version},
                "paths": {},
                "components": {"schemas": {}},
            },
        )
        doc["paths"][f"/{prefix}/{scope}{res.plural}/{{name}}"] = {
            "patch": {
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": {"200": {"description": "OK"}},
            }
        }
    return docs


def discovery(api: API, path: str) -> dict[str, Any] | None:
    resources = api.resources()

    def resource_list(group: str, version: str) -> dict[str, Any]:
        entries = []
        for res in resources:
            if (res.group, res.version) != (group, version):
                continue
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            entries.append(
                {
                    "name": res.plural,
                    "singularName": res.singular,
                    "namespaced": res.namespaced,
                    "kind": res.kind,
                    "verbs": verbs,
                    **({"shortNames": list(res.short)} if res.short else {}),
                }
            )
            if res.kind == "Pod" and not res.group:  # kubectl drain evicts when it finds this entry
                entries.append(
                    {
                        "name": "pods/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
            if res.kind in WORKLOADS or res.kind in ("Node", "CustomResourceDefinition", "Namespace"):
                entries.append(
                    {
                        "name": f"{res.plural}/status",
                        "singularName": "",
                        "namespaced": res.namespaced,
                        "kind": res.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": entries,
        }

    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }
    if path == "/api/v1":
        return resource_list("", "v1")
    groups: dict[str, list[str]] = {}
    for res in resources:
        if res.group and res.version not in groups.setdefault(res.group, []):
            groups[res.group].append(res.version)

    def group_entry(name: str) -> dict[str, Any]:
        versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
        return {"name": name, "versions": versions, "preferredVersion": versions[0]}

    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_entry(g) for g in groups]}
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[1] in groups:
        return {"kind": "APIGroup", "apiVersion": "v1", **group_entry(parts[1])}
    if len(parts) == 3 and parts[1] in groups and parts[2] in groups[parts[1]]:
        return resource_list(parts[1], parts[2])
    return None


# -- Table output (kubectl get's columns) ----------------------------------------------------------


def _age(obj: dict[str, Any]) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    seconds = int(
        time.time() - dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    )
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _columns(obj: dict[str, Any]) -> list[tuple[str, Any, int]]:
    kind, status, spec = obj.get("kind"), obj.get("status") or {}, obj.get("spec") or {}
    if kind == "Pod":
        ready = sum(1 for c in status.get("containerStatuses") or [] if c.get("ready"))
        reason = (
            status["phase"]
            if status.get("phase") == "Running" or not spec.get("nodeName")
            else "ContainerCreating"
        )
        return [
            ("Ready", f"{ready}/{len(spec.get('containers') or [])}", 0),
            ("Status", reason, 0),
            ("Restarts", 0, 0),
            ("Age", _age(obj), 0),
            ("Node", spec.get("nodeName") or "<none>", 1),
        ]
    if kind == "Node":
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        )
        roles = (
            ",".join(
                sorted(
                    k.split("/", 1)[1]
                    for k in ((obj.get("metadata") or {}).get("labels") or {})
                    if k.startswith("node-role.kubernetes.io/")
                )
            )
            or "<none>"
        )
        return [
            ("Status", "Ready" if ready else "NotReady", 0),
            ("Roles", roles, 0),
            ("Age", _age(obj), 0),
            ("Version", (status.get("nodeInfo") or {}).get("kubeletVersion", ""), 0),
        ]
    if kind == "Deployment":
        return [
            ("Ready", f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", 0),
            ("Up-to-date", status.get("updatedReplicas", 0), 0),
            ("Available", status.get("availableReplicas", 0), 0),
            ("Age", _age(obj), 0),
        ]
    if kind == "DaemonSet":
        return [
            ("Desired", status.get("desiredNumberScheduled", 0), 0),
            ("Current", status.get("currentNumberScheduled", 0), 0),
            ("Ready", status.get("numberReady", 0), 0),
            ("Up-to-date", status.get("updatedNumberScheduled", 0), 0),
            ("Available", status.get("numberAvailable", 0), 0),
            ("Age", _age(obj), 0),
        ]
    if kind == "CustomResourceDefinition":
        return [("Created At", (obj.get("metadata") or {}).get("creationTimestamp", ""), 0)]
    if kind == "Namespace":
        return [("Status", status.get("phase", "Active"), 0), ("Age", _age(obj), 0)]
    return [("Age", _age(obj), 0)]


def table(items: list[dict[str, Any]], revision: int, kind: str) -> dict[str, Any]:
    sample = _columns(items[0]) if items else _columns({"kind": kind})
    definitions = [
        {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}
    ] + [{"name": n, "type": "string", "format": "", "description": n, "priority": p} for n, _v, p in sample]
    rows = [
        {
            "cells": [i["metadata"]["name"], *(v for _n, v, _p in _columns(i))],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {k: v for k, v in i["metadata"].items() if k != "managedFields"},
            },
        }
        for i in items
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(revision)},
        "columnDefinitions": definitions,
        "rows": rows,
    }


# -- HTTP ------------------------------------------------------------------------------------------


_PUBLIC = (
    "/version",
    "/healthz",
    "/livez",
    "/readyz",
    "/api/v1/namespaces/kube-public/configmaps/cluster-info",
)


class Handler(http.server.BaseHTTPRequestHandler):
    """kube-apiserver's HTTP surface over `API`; `routes` adds the lab emulator's own POST paths."""

    protocol_version = "HTTP/1.1"
    timeout = 120  # an idle keep-alive connection is closed after this many seconds
    api: API
    host = "standin"
    unready: Path | None = None
    routes: dict[str, Callable[[Handler, bytes], tuple[int, dict[str, Any]]]] = {}

    # plumbing ------------------------------------------------------------------------------------
    def _send(
        self, code: int, body: Any, kind: str = "application/json", headers: dict[str, str] | None = None
    ) -> None:
        data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Standin-Backend", self.host)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # haproxy's health checks every 2 s would flood the journal

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _user(self) -> str | None:
        cert = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        for rdn in (cert or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return str(value)
        return None

    def _dispatch(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        path = url.path.rstrip("/") or "/"
        try:
            if method == "POST" and path in self.routes:
                code, reply = self.routes[path](self, self._body())
                self._send(code, reply)
                return
            if method == "GET" and path in ("/healthz", "/livez", "/readyz"):
                if path == "/readyz" and self.unready is not None and self.unready.exists():
                    self._send(503, f"unready {self.host}\n".encode(), "text/plain")
                else:
                    self._send(200, b"ok", "text/plain")
                return
            if method == "GET" and path == "/version":
                major, minor = self.api.version.lstrip("v").split(".")[:2]
                self._send(
                    200,
                    {
                        "major": major,
                        "minor": minor,
                        "gitVersion": self.api.version,
                        "platform": "linux/amd64",
                        "goVersion": "LAB API STAND-IN",
                    },
                )
                return
            if self._user() is None and path not in _PUBLIC:
                self._body()
                raise ApiError(
                    403,
                    "Forbidden",
                    f'forbidden: User "system:anonymous" cannot {method.lower()} path "{path}"',
                )
            self._api(method, path, query)
        except ApiError as err:
            self._send(err.code, err.status())
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as err:  # noqa: BLE001 - an apiserver answers 500, it does not die
            self._send(
                500, ApiError(500, "InternalError", f"LAB API STAND-IN: {type(err).__name__}: {err}").status()
            )

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    # the API -----------------------------------------------------------------------------------
    def _api(self, method: str, path: str, query: dict[str, str]) -> None:
        if (
            method == "GET"
            and (path in ("/api", "/apis", "/api/v1") or path.startswith("/apis/"))
            and path.count("/") <= 3
            and (found := discovery(self.api, path)) is not None
        ):
            self._send(200, found)
            return
        if method == "GET" and path.startswith("/openapi/"):
            self._openapi(path)
            return
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] != "status":
            namespace, rest = rest[1], rest[2:]
        res = self.api.resource(group, version, rest[0])
        if res.namespaced != bool(namespace) and not (
            namespace is None and method == "GET" and len(rest) == 1
        ):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub == "eviction" and res.kind == "Pod" and not res.group and method == "POST" and name:
            self._send(
                201,
                self.api.evict(
                    str(namespace), name, self._decode(self._body()), query.get("dryRun") == "All"
                ),
            )
            return
        if sub not in (None, "status"):
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({sub})")
        if sub == "status" and res.kind == "Node" and method == "PATCH" and name:
            user = self._user() or ""
            if user.startswith("system:node:") and user != f"system:node:{name}":
                self._body()
                raise ApiError(403, "Forbidden", f'nodes "{name}" is forbidden: node "{user[12:]}" is not '
                               "allowed to modify node status of another node (NodeRestriction)")
            self._send(200, self.api.patch_node_status(name, self._body()))
            return
        dry_run = query.get("dryRun") == "All"
        validation = query.get("fieldValidation") or "Warn"
        manager = query.get("fieldManager", "")
        if method == "GET" and name is None:
            if query.get("sendInitialEvents") == "true":  # client-go falls back to LIST then WATCH
                raise ApiError(
                    422,
                    "Invalid",
                    'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: '
                    "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature "
                    "gate is enabled (the LAB API STAND-IN serves no watch-list stream; Kubernetes 1.34 "
                    "enables the gate)",
                )
            if query.get("watch") in ("true", "1"):
                self._watch(res, namespace, query)
            else:
                items, revision = self.api.list(
                    res, namespace, query.get("labelSelector", ""), query.get("fieldSelector", "")
                )
                self._send_list(res, items, revision)
            return
        if method == "GET":
            obj = self.api.get(res, namespace, name)
            self._send(200, table([obj], 0, res.kind) if self._wants_table() else obj)
            return
        body = self._body()
        if method == "POST" and name is None:
            obj, warnings = self.api.create(
                res, namespace, self._decode(body), manager or "unknown", dry_run, validation
            )
            self._send(201, obj, headers=self._warn(warnings))
        elif method == "PUT" and name:
            obj, warnings = self.api.replace(res, namespace, name, self._decode(body), dry_run, validation)
            self._send(200, obj, headers=self._warn(warnings))
        elif method == "PATCH" and name:
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            obj, warnings, created = self.api.patch(
                res, namespace, name, kind, body, manager, dry_run, validation, query.get("force") == "true"
            )
            self._send(201 if created else 200, obj, headers=self._warn(warnings))
        elif method == "DELETE" and name:
            self._send(200, self.api.delete(res, namespace, name, dry_run))
        else:
            raise ApiError(
                405,
                "MethodNotAllowed",
                f"the server does not allow this method on the requested resource ({method} {path})",
            )

    @staticmethod
    def _decode(body: bytes) -> dict[str, Any]:
        try:
            obj = json.loads(body)
        except ValueError:
            try:
                obj = yaml.safe_load(body)
            except yaml.YAMLError as err:
                raise ApiError(400, "BadRequest", f"error decoding the body: {err}") from err
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the body is not an object")
        return obj

    @staticmethod
    def _warn(warnings: list[str]) -> dict[str, str]:
        return {"Warning": "; ".join(f'299 - "{w}"' for w in warnings)} if warnings else {}

    def _wants_table(self) -> bool:
        return "as=Table" in (self.headers.get("Accept") or "")

    def _send_list(self, res: Resource, items: list[dict[str, Any]], revision: int) -> None:
        if self._wants_table():
            self._send(200, table(items, revision, res.kind))
            return
        self._send(
            200,
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(revision)},
                "items": items,
            },
        )

    def _openapi(self, path: str) -> None:
        docs = openapi_paths(self.api)
        if path.rstrip("/") == "/openapi/v3":
            paths = {}
            for prefix, doc in docs.items():
                digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
                paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
            self._send(200, {"paths": paths})
            return
        prefix = path.removeprefix("/openapi/v3/")
        if prefix in docs:
            self._send(200, docs[prefix])
            return
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _watch(self, res: Resource, namespace: str | None, query: dict[str, str]) -> None:
        """Newline-delimited watch events, in chunks, until timeoutSeconds (at most WATCH_MAX)."""
        since = int(query.get("resourceVersion") or 0)
        deadline = time.time() + min(float(query.get("timeoutSeconds") or WATCH_MAX), WATCH_MAX)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def emit(kind: str, obj: dict[str, Any]) -> None:
            data = (json.dumps({"type": kind, "object": obj}) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        seen: dict[str, str] = {}
        first = True
        try:
            while True:
                items, revision = self.api.list(
                    res, namespace, query.get("labelSelector", ""), query.get("fieldSelector", "")
                )
                now = {}
                for item in items:
                    ident = f"{item['metadata'].get('namespace', '')}/{item['metadata']['name']}"
                    text = json.dumps(item, sort_keys=True)
                    now[ident] = text
                    if first:
                        if since == 0 or int(item["metadata"].get("resourceVersion") or 0) > since:
                            emit("ADDED", item)
                    elif ident not in seen:
                        emit("ADDED", item)
                    elif seen[ident] != text:
                        item["metadata"]["resourceVersion"] = str(
                            max(revision, int(item["metadata"].get("resourceVersion") or 0))
                        )
                        emit("MODIFIED", item)
                if not first:
                    for ident in set(seen) - set(now):
                        ns, _, name = ident.partition("/")
                        emit(
                            "DELETED",
                            {
                                "apiVersion": res.api_version,
                                "kind": res.kind,
                                "metadata": {
                                    "name": name,
                                    **({"namespace": ns} if ns else {}),
                                    "resourceVersion": str(revision),
                                },
                            },
                        )
                seen, first = now, False
                if time.time() >= deadline:
                    break
                time.sleep(WATCH_POLL)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        self.close_connection = True


def server(
    api: API,
    port: int,
    cert: str,
    key: str,
    ca: str,
    address: str = "0.0.0.0",
    routes: dict[str, Callable[[Handler, bytes], tuple[int, dict[str, Any]]]] | None = None,
    host: str = "standin",
    unready: Path | None = None,
) -> http.server.ThreadingHTTPServer:
    """A TLS server (client certificates of the cluster CA optional: anonymous requests reach only the
    public paths) answering with `api`; call serve_forever() on it."""
    handler = type(
        "BoundHandler",
        (Handler,),
        {"api": api, "routes": dict(routes or {}), "host": host, "unready": unready},
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(ca)
    context.verify_mode = ssl.CERT_OPTIONAL
    httpd = _TLSServer((address, port), handler)
    httpd.context = context
    return httpd


class _TLSServer(http.server.ThreadingHTTPServer):
    """TLS per connection, the handshake in the connection's own thread (one slow client cannot stall
    the accept loop)."""

    daemon_threads = True
    context: ssl.SSLContext

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        sock.settimeout(30)
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


def load_schemas(path: Path | None) -> Schemas:
    return Schemas(json.loads(path.read_text()) if path is not None and path.is_file() else None)
