"""Strict JSON schemas of the kubeadm v1beta4, kubelet v1beta1, kube-scheduler v1 and kube-proxy v1alpha1
fields ufcctl renders.

There is no official JSON schema for these files. These were written from the upstream API reference
(kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4, kubelet-config.v1beta1,
kube-scheduler-config.v1, kube-proxy-config.v1alpha1) and cover only the fields the
kube_control_plane role renders, with `additionalProperties: false`: a typo'd or misplaced key
fails here instead of being silently ignored by kubeadm's lenient decoding. Fields ufcctl does not
render are refused too: add them here (from the reference) when a template starts rendering them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

KUBEADM = "kubeadm.k8s.io/v1beta4"
KUBELET = "kubelet.config.k8s.io/v1beta1"
SCHEDULER = "kubescheduler.config.k8s.io/v1"
KUBE_PROXY = "kubeproxy.config.k8s.io/v1alpha1"

DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}
STR = {"type": "string", "minLength": 1}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
IP = {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}
POS_INT = {"type": "integer", "minimum": 1}


def _obj(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def _list(item: Mapping[str, Any], min_items: int = 0) -> dict[str, Any]:
    return {"type": "array", "items": dict(item), "minItems": min_items}


def _header(api: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": {"const": api}, "kind": {"const": kind}}


# v1beta4 replaced the string maps of v1beta3 with lists of {name, value} (duplicates allowed).
ARGS = _list(_obj({"name": STR, "value": {"type": "string"}}, ("name", "value")))
TAINT = _obj(
    {
        "key": STR,
        "value": {"type": "string"},
        "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
    },
    ("key", "effect"),
)
NODE_REGISTRATION = _obj(
    {
        "name": STR,
        "criSocket": {"type": "string", "pattern": r"^unix:///"},
        "taints": _list(TAINT),
        "kubeletExtraArgs": ARGS,
        "ignorePreflightErrors": _list(STR),
        "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
    },
    ("name", "criSocket"),
)
API_ENDPOINT = _obj({"advertiseAddress": IP, "bindPort": PORT}, ("advertiseAddress", "bindPort"))
BOOTSTRAP_TOKEN = _obj(
    {
        "token": {"type": "string", "pattern": r"^[a-z0-9]{6}\.[a-z0-9]{16}$"},
        "description": {"type": "string"},
        "ttl": DURATION,
        "usages": _list({"enum": ["signing", "authentication"]}, 1),
        "groups": _list({"type": "string", "pattern": r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$"}),
    },
    ("token",),
)
CERT_KEY = {"type": "string", "pattern": r"^[0-9a-fA-F]{64}$"}  # hex of a 32-byte AES key
VOLUME = _obj(
    {
        "name": STR,
        "hostPath": STR,
        "mountPath": STR,
        "readOnly": {"type": "boolean"},
        "pathType": {
            "enum": [
                "",
                "DirectoryOrCreate",
                "Directory",
                "FileOrCreate",
                "File",
                "Socket",
                "CharDevice",
                "BlockDevice",
            ]
        },
    },
    ("name", "hostPath", "mountPath"),
)
COMPONENT = _obj({"extraArgs": ARGS, "extraVolumes": _list(VOLUME)})

INIT = _obj(
    {
        **_header(KUBEADM, "InitConfiguration"),
        "bootstrapTokens": _list(BOOTSTRAP_TOKEN),
        "certificateKey": CERT_KEY,
        "localAPIEndpoint": API_ENDPOINT,
        "nodeRegistration": NODE_REGISTRATION,
        "skipPhases": _list(STR),
    },
    ("apiVersion", "kind", "localAPIEndpoint", "nodeRegistration"),
)
CLUSTER = _obj(
    {
        **_header(KUBEADM, "ClusterConfiguration"),
        "clusterName": STR,
        "kubernetesVersion": {"type": "string", "pattern": r"^v[0-9]+\.[0-9]+\.[0-9]+"},
        "controlPlaneEndpoint": {
            "type": "string",
            "pattern": r"^[^:\s]+:[0-9]{1,5}$|^\[[0-9a-fA-F:]+\]:[0-9]{1,5}$",
        },
        "certificatesDir": STR,
        "imageRepository": STR,
        "dns": _obj({"imageRepository": STR}),
        "networking": _obj({"serviceSubnet": STR, "podSubnet": STR, "dnsDomain": STR}),
        "etcd": _obj(
            {
                "external": _obj(
                    {
                        "endpoints": _list({"type": "string", "pattern": r"^https?://"}, 1),
                        "caFile": STR,
                        "certFile": STR,
                        "keyFile": STR,
                    },
                    ("endpoints",),
                )
            },
            ("external",),
        ),
        "apiServer": _obj({"extraArgs": ARGS, "extraVolumes": _list(VOLUME), "certSANs": _list(STR)}),
        "controllerManager": COMPONENT,
        "scheduler": COMPONENT,
    },
    ("apiVersion", "kind", "kubernetesVersion", "controlPlaneEndpoint", "etcd"),
)
JOIN = _obj(
    {
        **_header(KUBEADM, "JoinConfiguration"),
        "nodeRegistration": NODE_REGISTRATION,
        "caCertPath": STR,
        "discovery": _obj(
            {
                "bootstrapToken": _obj(
                    {
                        "token": BOOTSTRAP_TOKEN["properties"]["token"],
                        "apiServerEndpoint": STR,
                        "caCertHashes": _list({"type": "string", "pattern": r"^sha256:[0-9a-f]{64}$"}, 1),
                        "unsafeSkipCAVerification": {"const": False},
                    },
                    ("token", "apiServerEndpoint", "caCertHashes"),
                ),
                "tlsBootstrapToken": BOOTSTRAP_TOKEN["properties"]["token"],
            },
            ("bootstrapToken",),
        ),
        "controlPlane": _obj(
            {"localAPIEndpoint": API_ENDPOINT, "certificateKey": CERT_KEY}, ("localAPIEndpoint",)
        ),
        "skipPhases": _list(STR),
    },
    ("apiVersion", "kind", "nodeRegistration", "discovery"),
)
KUBELET_CONFIG = _obj(
    {
        **_header(KUBELET, "KubeletConfiguration"),
        "cgroupDriver": {"enum": ["systemd", "cgroupfs"]},
        "clusterDNS": _list(IP, 1),
        "clusterDomain": STR,
        "serializeImagePulls": {"type": "boolean"},
        "maxParallelImagePulls": POS_INT,
        "registryPullQPS": {"type": "integer", "minimum": 0},
        "registryBurst": {"type": "integer", "minimum": 0},
        "nodeStatusUpdateFrequency": DURATION,
        "nodeStatusReportFrequency": DURATION,
        "maxPods": POS_INT,
        "kubeAPIQPS": {"type": "integer", "minimum": 0},
        "kubeAPIBurst": {"type": "integer", "minimum": 0},
        "rotateCertificates": {"type": "boolean"},
        "failCgroupV1": {"type": "boolean"},
    },
    ("apiVersion", "kind", "clusterDNS"),
)
# kubelet's validation: maxParallelImagePulls other than 1 needs serializeImagePulls false.
KUBELET_CONFIG["if"] = {
    "properties": {"serializeImagePulls": {"const": True}},
    "required": ["serializeImagePulls"],
}
KUBELET_CONFIG["then"] = {
    "properties": {
        "maxParallelImagePulls": {
            "const": 1,
            "description": "maxParallelImagePulls above 1 needs serializeImagePulls: false",
        }
    }
}
SCHEDULER_CONFIG = _obj(
    {
        **_header(SCHEDULER, "KubeSchedulerConfiguration"),
        "clientConnection": _obj(
            {
                "kubeconfig": STR,
                "qps": {"type": "number", "minimum": 0},
                "burst": {"type": "integer", "minimum": 0},
            }
        ),
        "leaderElection": _obj({"leaderElect": {"type": "boolean"}}),
        # 0 lets the scheduler pick adaptively; otherwise a percentage (kube-scheduler-config.v1).
        "percentageOfNodesToScore": {"type": "integer", "minimum": 0, "maximum": 100},
    },
    ("apiVersion", "kind"),
)

SYNC = _obj({"syncPeriod": DURATION, "minSyncPeriod": DURATION})
KUBE_PROXY_CONFIG = _obj(
    {
        **_header(KUBE_PROXY, "KubeProxyConfiguration"),
        # the modes NodeLocal DNSCache is set up for (roles/nodelocaldns); nftables not yet
        "mode": {"enum": ["iptables", "ipvs"]},
        "clusterCIDR": {"type": "string", "pattern": r"^[0-9a-fA-F.:]+/[0-9]+$"},
        "clientConnection": _obj({"qps": {"type": "number", "minimum": 0},
                                  "burst": {"type": "integer", "minimum": 0}}),
        "conntrack": _obj({"maxPerCore": {"type": "integer", "minimum": 0},
                           "min": {"type": "integer", "minimum": 0}}),
        "iptables": SYNC,
        "ipvs": SYNC,
    },
    ("apiVersion", "kind", "mode"),
)

SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    (KUBEADM, "InitConfiguration"): INIT,
    (KUBEADM, "ClusterConfiguration"): CLUSTER,
    (KUBEADM, "JoinConfiguration"): JOIN,
    (KUBELET, "KubeletConfiguration"): KUBELET_CONFIG,
    (SCHEDULER, "KubeSchedulerConfiguration"): SCHEDULER_CONFIG,
    (KUBE_PROXY, "KubeProxyConfiguration"): KUBE_PROXY_CONFIG,
}
_FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def schema_errors(doc: Any) -> list[str]:
    """Every problem of one document as "Kind: path: message" (empty: valid); unknown kinds are errors."""
    if not isinstance(doc, Mapping):
        return [f"document is a {type(doc).__name__}, not a mapping"]
    key = (str(doc.get("apiVersion")), str(doc.get("kind")))
    schema = SCHEMAS.get(key)
    if schema is None:
        known = ", ".join(f"{k} ({a})" for a, k in SCHEMAS)
        return [f"unknown document {key[1]} ({key[0]}); ufcctl renders only {known}"]
    validator = jsonschema.Draft202012Validator(schema, format_checker=_FORMATS)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{key[1]}: {_where(err)}: {err.schema.get('description') or err.message}" for err in errors]


def _where(err: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in err.absolute_path) or "(top)"


def documents_errors(docs: list[Any]) -> list[str]:
    """schema_errors of each document of a multi-document file, and kinds rendered twice."""
    problems = [p for doc in docs for p in schema_errors(doc)]
    kinds = [str(doc.get("kind")) for doc in docs if isinstance(doc, Mapping)]
    problems += [
        f"{k}: rendered {kinds.count(k)} times in one file" for k in sorted(set(kinds)) if kinds.count(k) > 1
    ]
    return problems
