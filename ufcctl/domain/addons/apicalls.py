"""The Kubernetes API calls each add-on's pinned release makes, per ServiceAccount, with their source.

The RBAC that ufcctl renders must allow each of them (`ufcctl/domain/manifests/rbac.py` evaluates it,
importing ApiCall from here: manifests reads the add-ons' facts, never the other way round):
a call denied here is a 403 on a real apiserver, and for an informer a cache that never syncs
(docs/reference/components.md §9 lists the facts and why each one matters). An informer is a list and a
watch over all namespaces. Releases: Calico v3.29.3, Volcano v1.9.0 with MindCluster v26.0.0's build,
MindCluster v26.0.0 (Ascend Operator, ClusterD, NodeD, Device Plugin). Where a call is known from the
release's own RBAC rather than from a read of its code, the source says so. Also calico-kube-controllers
v3.29.3, NodeLocal DNSCache 1.26.4 with cluster-proportional-autoscaler v1.8.9, and
nfs-subdir-external-provisioner v4.0.2, each read in its source at that tag.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiCall:
    """One request a program makes: `verb` on `group`/`resource` (`pods/status` for a subresource),
    naming the object `name` (a get, update, patch or subresource create), in `namespace` ("" for a
    cluster-scoped object or an all-namespaces list/watch). `source` is where upstream makes it."""

    verb: str
    resource: str
    group: str = ""
    name: str = ""
    namespace: str = ""
    source: str = ""

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" {self.name!r}" if self.name else ""
        group = self.group or "core"
        return f"{self.verb} {group}/{self.resource}{named}{where} ({self.source})"


CALICO_YAML = "calico v3.29.3 manifests/calico-typha.yaml"
VOLCANO_CACHE = "volcano v1.9.0 pkg/scheduler/cache/cache.go"
VOLCANO_YAML = "mind-cluster v26.0.0 component/ascend-for-volcano/build/volcano-v1.9.0.yaml"
OPERATOR_GO = "mind-cluster v26.0.0 component/ascend-operator/pkg/controllers/v1/ascendjob_controller.go"
CLUSTERD_YAML = "mind-cluster v26.0.0 component/clusterd/build/clusterd.yaml"
NODED_YAML = "mind-cluster v26.0.0 component/noded/build/noded.yaml"
DEVICE_PLUGIN_YAML = "mind-cluster v26.0.0 component/ascend-device-plugin/build/ascendplugin-volcano.yaml"


def informer(resource: str, group: str = "", source: str = "") -> tuple[ApiCall, ApiCall]:
    """An informer's list and watch, over all namespaces."""
    return ApiCall("list", resource, group, source=source), ApiCall("watch", resource, group, source=source)


def _informers(resources: list[tuple[str, str]], source: str) -> list[ApiCall]:
    return [call for resource, group in resources for call in informer(resource, group, source)]


CALICO = "crd.projectcalico.org"

# calico-node's own token: install-cni (init container) and calico-node (Felix, BIRD/confd, startup).
CALICO_NODE = [
    # install-cni asks a token for the CNI plugin's account and exits without writing the CNI config
    # when refused (cni-plugin/pkg/install/install.go:471-478, before writeCNIConfig at :245-249)
    ApiCall("create", "serviceaccounts/token", name="calico-cni-plugin", namespace="kube-system",
            source="calico v3.29.3 cni-plugin/pkg/install/install.go:471-478, "
                   "node/pkg/cni/token_watch.go:25"),
    # Felix finds Typha through the Endpoints of its Service
    ApiCall("get", "endpoints", name="calico-typha", namespace="kube-system",
            source="calico v3.29.3 typha/pkg/discovery/discovery.go:189"),
    ApiCall("create", "tiers", CALICO, source=f"{CALICO_YAML}, ClusterRole calico-node (default tier)"),
    ApiCall("get", "nodes", name="<node>", source=f"{CALICO_YAML}, ClusterRole calico-node"),
    ApiCall("patch", "nodes/status", name="<node>", source=f"{CALICO_YAML}, ClusterRole calico-node"),
]

# The CNI plugin, run by the kubelet with the calico-cni-plugin token install-cni wrote into its kubeconfig.
CALICO_CNI_PLUGIN = [
    ApiCall("get", "pods", name="<pod>", namespace="<ns>",
            source=f"{CALICO_YAML}, ClusterRole calico-cni-plugin"),
    ApiCall("get", "namespaces", name="<ns>", source=f"{CALICO_YAML}, ClusterRole calico-cni-plugin"),
    ApiCall("get", "nodes", name="<node>", source=f"{CALICO_YAML}, ClusterRole calico-cni-plugin"),
    ApiCall("patch", "pods/status", name="<pod>", namespace="<ns>",
            source=f"{CALICO_YAML}, ClusterRole calico-cni-plugin"),
    *[ApiCall(verb, resource, CALICO, source=f"{CALICO_YAML}, ClusterRole calico-cni-plugin (IPAM)")
      for resource in ("ipamblocks", "blockaffinities", "ipamhandles")
      for verb in ("get", "list", "create", "update", "delete")],
    *[ApiCall(verb, resource, CALICO, source=f"{CALICO_YAML}, ClusterRole calico-cni-plugin")
      for resource in ("ippools", "ipamconfigs", "clusterinformations") for verb in ("get", "list")],
]

FELIX_SYNCER = "calico v3.29.3 libcalico-go/lib/backend/syncersv1/felixsyncer/felixsyncerv1.go"
BGP_SYNCER = "calico v3.29.3 libcalico-go/lib/backend/syncersv1/bgpsyncer/bgpsyncer.go"

# Typha: the syncers it serves list and watch every type below; one refused list keeps it out of sync.
CALICO_TYPHA = [
    *_informers([(r, CALICO) for r in ("clusterinformations", "felixconfigurations", "globalnetworkpolicies",
                                       "globalnetworksets", "ippools", "networkpolicies", "networksets",
                                       "hostendpoints", "bgpconfigurations", "ipamblocks")], FELIX_SYNCER),
    *_informers([("tiers", CALICO)], f"{FELIX_SYNCER}:78"),
    *_informers([("adminnetworkpolicies", "policy.networking.k8s.io")], f"{FELIX_SYNCER}:98"),
    *_informers([("nodes", ""), ("namespaces", ""), ("serviceaccounts", ""), ("pods", ""), ("services", ""),
                 ("networkpolicies", "networking.k8s.io"), ("endpointslices", "discovery.k8s.io")],
                FELIX_SYNCER),
    *_informers([("bgppeers", CALICO)], BGP_SYNCER),
    *_informers([("bgpfilters", CALICO)], f"{BGP_SYNCER}:49"),
]

# vc-scheduler v1.9.0 with the Ascend plugin. SchedulerCache.Run waits for every informer before the
# first session (cache.go:785-815, scheduler.go:89-92).
VOLCANO_SCHEDULER = [
    *_informers([("pods", ""), ("nodes", ""), ("persistentvolumeclaims", ""), ("persistentvolumes", ""),
                 ("resourcequotas", ""), ("namespaces", ""), ("services", ""),
                 ("storageclasses", "storage.k8s.io"), ("csinodes", "storage.k8s.io"),
                 ("csidrivers", "storage.k8s.io"), ("csistoragecapacities", "storage.k8s.io"),
                 ("priorityclasses", "scheduling.k8s.io"), ("podgroups", "scheduling.volcano.sh"),
                 ("queues", "scheduling.volcano.sh"), ("numatopologies", "nodeinfo.volcano.sh")],
                f"{VOLCANO_CACHE}:660-780"),
    # WorkLoadSupport, on by default (pkg/features/volcano_features.go:53)
    *_informers([("replicationcontrollers", ""), ("replicasets", "apps"), ("statefulsets", "apps")],
                f"{VOLCANO_CACHE}:612-616"),
    ApiCall("create", "pods/binding", name="<pod>", namespace="<ns>", source=f"{VOLCANO_CACHE}:180"),
    ApiCall("update", "pods/status", name="<pod>", namespace="<ns>", source=f"{VOLCANO_CACHE}:238"),
    ApiCall("update", "podgroups", "scheduling.volcano.sh", name="<pg>", namespace="<ns>",
            source=f"{VOLCANO_CACHE}:298"),
    ApiCall("update", "queues/status", "scheduling.volcano.sh", name="<queue>",
            source=f"{VOLCANO_CACHE}:321"),
    ApiCall("create", "queues", "scheduling.volcano.sh", source=f"{VOLCANO_CACHE}:504"),
    ApiCall("create", "events", namespace="<ns>", source=f"{VOLCANO_CACHE}:568"),
    ApiCall("get", "leases", "coordination.k8s.io", name="vc-scheduler", namespace="volcano-system",
            source="volcano v1.9.0 cmd/scheduler/app/server.go:129"),
    ApiCall("update", "leases", "coordination.k8s.io", name="vc-scheduler", namespace="volcano-system",
            source="volcano v1.9.0 cmd/scheduler/app/server.go:129"),
    # the Ascend plugin reads the cluster-info ConfigMaps ClusterD writes (useClusterInfoManager)
    *_informers([("configmaps", "")], f"{VOLCANO_YAML}, ClusterRole volcano-scheduler"),
]

# vc-controller-manager v1.9.0's jobflow controller (its CRDs are what was missing, issue 44 D21).
VOLCANO_CONTROLLERS = [
    *_informers([("jobflows", "flow.volcano.sh"), ("jobtemplates", "flow.volcano.sh")],
                f"{VOLCANO_YAML}, ClusterRole volcano-controllers and CRDs"),
]

# Ascend Operator v26.0.0: controller-runtime starts a watch per kind in watchRelatedResource
# (:240-340); one that cannot list fails Controller.Start after CacheSyncTimeout and the manager exits.
ASCEND_OPERATOR = [
    *_informers([("ascendjobs", "mindxdl.gitee.com"), ("pods", ""), ("services", ""),
                 ("podgroups", "scheduling.volcano.sh")], f"{OPERATOR_GO}:253-287"),
    *_informers([("jobs", "batch.volcano.sh")], f"{OPERATOR_GO}:289-299"),
    *_informers([("deployments", "apps")], f"{OPERATOR_GO}:301-327"),
    *_informers([("statefulsets", "apps")], f"{OPERATOR_GO}:329-340"),
    ApiCall("create", "pods", namespace="<ns>", source=f"{OPERATOR_GO} (the job's pods)"),
    ApiCall("create", "podgroups", "scheduling.volcano.sh", namespace="<ns>", source=f"{OPERATOR_GO} (gang)"),
    ApiCall("update", "ascendjobs/status", "mindxdl.gitee.com", name="<job>", namespace="<ns>",
            source=f"{OPERATOR_GO} (job status)"),
]

# ClusterD v26.0.0: what its release grants for its informers and for fault rescheduling.
CLUSTERD = [
    *_informers([("pods", ""), ("configmaps", ""), ("nodes", ""), ("podgroups", "scheduling.volcano.sh"),
                 ("jobs", "batch.volcano.sh"), ("ascendjobs", "mindxdl.gitee.com")],
                f"{CLUSTERD_YAML}:26-52"),
    ApiCall("get", "services", name="clusterd-grpc-svc", namespace="mindx-dl",
            source=f"{CLUSTERD_YAML}:29-31"),
    ApiCall("patch", "nodes/status", name="<node>", source=f"{CLUSTERD_YAML}:38-40"),
    ApiCall("update", "podgroups", "scheduling.volcano.sh", name="<pg>", namespace="<ns>",
            source=f"{CLUSTERD_YAML}:44-46"),
    ApiCall("patch", "podgroups", "scheduling.volcano.sh", name="<pg>", namespace="<ns>",
            source=f"{CLUSTERD_YAML}:44-46"),
    ApiCall("update", "jobs", "batch.volcano.sh", name="<job>", namespace="<ns>",
            source=f"{CLUSTERD_YAML}:41-43"),
    ApiCall("delete", "jobs", "batch.volcano.sh", name="<job>", namespace="<ns>",
            source=f"{CLUSTERD_YAML}:41-43"),
    ApiCall("update", "ascendjobs", "mindxdl.gitee.com", name="<job>", namespace="<ns>",
            source=f"{CLUSTERD_YAML}:50-52"),
    ApiCall("get", "jobs", "batch", name="<job>", namespace="<ns>", source=f"{CLUSTERD_YAML}:47-49"),
]

NODED = [
    ApiCall("list", "nodes", source=f"{NODED_YAML}:15-17"),
    ApiCall("patch", "nodes", name="<node>", source=f"{NODED_YAML}:15-17"),
    *_informers([("configmaps", "")], f"{NODED_YAML}:12-14"),
    ApiCall("delete", "configmaps", name="<cm>", namespace="mindx-dl", source=f"{NODED_YAML}:12-14"),
]

DEVICE_PLUGIN = [
    # the kubelet's /pods through the apiserver's node proxy; refused, it logs and falls back to a list
    ApiCall("get", "nodes/proxy", name="<node>", source=f"{DEVICE_PLUGIN_YAML}:18-20"),
    *_informers([("pods", ""), ("configmaps", "")], f"{DEVICE_PLUGIN_YAML}:12-26"),
    ApiCall("patch", "nodes/status", name="<node>", source=f"{DEVICE_PLUGIN_YAML}:21-23"),
    ApiCall("create", "events", namespace="<ns>", source=f"{DEVICE_PLUGIN_YAML}:27-29"),
]

KC = "calico v3.29.3 kube-controllers"
KC_NODE = f"{KC}/pkg/controllers/node"

# calico-kube-controllers v3.29.3 with ENABLED_CONTROLLERS=node (roles/cni): datastore initialisation, its
# KubeControllersConfiguration, and the node controller's IPAM garbage collection and auto host endpoints.
CALICO_KUBE_CONTROLLERS = [
    # EnsureInitialized before anything else, looping 60 s then Fatal (cmd/kube-controllers/main.go:116-140)
    ApiCall("get", "clusterinformations", CALICO, name="default",
            source="calico v3.29.3 libcalico-go/lib/clientv3/client.go:278-300 (ensureClusterInformation)"),
    ApiCall("create", "clusterinformations", CALICO,
            source="calico v3.29.3 libcalico-go/lib/clientv3/client.go:278-300"),
    ApiCall("update", "clusterinformations", CALICO, name="default",
            source="calico v3.29.3 libcalico-go/lib/clientv3/client.go:278-300"),
    # its configuration, created when missing, then listed and watched (pkg/config/runconfig.go)
    ApiCall("get", "kubecontrollersconfigurations", CALICO, name="default",
            source=f"{KC}/pkg/config/runconfig.go:285"),
    ApiCall("create", "kubecontrollersconfigurations", CALICO, source=f"{KC}/pkg/config/runconfig.go:290"),
    ApiCall("update", "kubecontrollersconfigurations", CALICO, name="default",
            source=f"{KC}/pkg/config/runconfig.go:180,245 (status)"),
    *_informers([("kubecontrollersconfigurations", CALICO)], f"{KC}/pkg/config/runconfig.go:191,210"),
    # the node controller's informers and its Calico data feed (KDD: Calico Nodes are Kubernetes Nodes)
    *_informers([("nodes", ""), ("pods", "")], f"{KC}/cmd/kube-controllers/main.go:431-432; "
                f"{KC_NODE}/controller.go:162-167 (cache sync)"),
    *_informers([("clusterinformations", CALICO), ("ipamblocks", CALICO), ("ippools", CALICO)],
                f"{KC_NODE}/syncer.go:36-49"),
    # IPAM garbage collection: a leaked address released, a gone node's blocks and affinities freed
    *[ApiCall(verb, resource, CALICO, name="<name>", source=f"{KC_NODE}/ipam.go:683,1039,1068 (libcalico-go)")
      for resource in ("ipamblocks", "blockaffinities", "ipamhandles")
      for verb in ("get", "update", "delete")],
    ApiCall("list", "blockaffinities", CALICO, source=f"{KC_NODE}/ipam.go:1068 (ReleaseHostAffinities)"),
    ApiCall("get", "pods", name="<pod>", namespace="<ns>", source=f"{KC_NODE}/ipam.go:882"),
    # auto host endpoints: always started, even when disabled, to remove what an earlier setting created;
    # at in-sync it lists every HostEndpoint and, refused five times, exits (hostendpoints.go:63-70,145-175)
    ApiCall("list", "hostendpoints", CALICO, source=f"{KC_NODE}/controller.go:108-111, hostendpoints.go:222"),
    ApiCall("delete", "hostendpoints", CALICO, name="<hep>", source=f"{KC_NODE}/hostendpoints.go:242"),
]

CPA = "cluster-proportional-autoscaler v1.8.9 pkg/autoscaler/k8sclient/k8sclient.go"

# NodeLocal DNSCache's node-cache (k8s-dns-node-cache 1.26.4) makes no API call: it reads kube-dns-upstream's
# ClusterIP from the Service environment variable (kubernetes/dns cmd/node-cache/app/cache_app.go:280-292)
# and its Corefile from the mounted ConfigMap. The CoreDNS autoscaler the role runs beside it:
COREDNS_AUTOSCALER = [
    *_informers([("nodes", "")], f"{CPA}:86-97"),
    ApiCall("get", "configmaps", name="coredns-autoscaler", namespace="kube-system", source=f"{CPA}:131-132"),
    # the scale subresource of --target=Deployment/coredns through apps/v1 (GET, then PUT)
    ApiCall("get", "deployments/scale", "apps", name="coredns", namespace="kube-system",
            source=f"{CPA}:260-285"),
    ApiCall("update", "deployments/scale", "apps", name="coredns", namespace="kube-system",
            source=f"{CPA}:260-285"),
]

NFS_LIB = "sig-storage-lib-external-provisioner v6.0.0 controller/controller.go"
NFS_CMD = "nfs-subdir-external-provisioner v4.0.2 cmd/nfs-subdir-external-provisioner/provisioner.go"

# nfs-subdir-external-provisioner v4.0.2 on its provisioner library v6.0.0 (its go.mod).
NFS_PROVISIONER = [
    *_informers([("persistentvolumeclaims", ""), ("persistentvolumes", ""),
                 ("storageclasses", "storage.k8s.io")], f"{NFS_LIB}:692,716,727"),
    # leader election on an Endpoints lock named after the provisioner, in the pod's namespace
    *[ApiCall(verb, "endpoints", name="<provisioner>", namespace="nfs-system", source=f"{NFS_LIB}:877-880")
      for verb in ("get", "update")],
    ApiCall("create", "endpoints", namespace="nfs-system", source=f"{NFS_LIB}:877-880"),
    ApiCall("create", "persistentvolumes", source="sig-storage-lib-external-provisioner v6.0.0 "
                                                  "controller/volume_store.go:155,214"),
    ApiCall("get", "persistentvolumes", name="<pv>", source=f"{NFS_LIB}:1323,1456"),
    ApiCall("delete", "persistentvolumes", name="<pv>", source=f"{NFS_LIB}:1481"),
    ApiCall("update", "persistentvolumeclaims", name="<pvc>", namespace="<ns>", source=f"{NFS_LIB}:1291"),
    ApiCall("get", "storageclasses", "storage.k8s.io", name="<class>", source=f"{NFS_CMD}:196"),
    # a claim of a WaitForFirstConsumer class names the scheduler's node; refused, provisioning fails
    # ("failed to get target node"); the project's chart and deploy/rbac.yaml grant it since 2cad8da
    ApiCall("get", "nodes", name="<node>", source=f"{NFS_LIB}:1362-1370"),
    *[ApiCall(verb, "events", namespace="<ns>", source=f"{NFS_LIB}:620 (event recorder)")
      for verb in ("create", "patch")],
]

# (component, ServiceAccount namespace, ServiceAccount, calls)
ADDON_CALLS: tuple[tuple[str, str, str, list[ApiCall]], ...] = (
    ("cni", "kube-system", "calico-node", CALICO_NODE),
    ("cni", "kube-system", "calico-cni-plugin", CALICO_CNI_PLUGIN),
    ("cni", "kube-system", "calico-typha", CALICO_TYPHA),
    ("cni", "kube-system", "calico-kube-controllers", CALICO_KUBE_CONTROLLERS),
    ("nodelocaldns", "kube-system", "node-local-dns", []),
    ("nodelocaldns", "kube-system", "coredns-autoscaler", COREDNS_AUTOSCALER),
    ("nfs-provisioner", "nfs-system", "nfs-subdir-external-provisioner", NFS_PROVISIONER),
    ("volcano", "volcano-system", "volcano-scheduler", VOLCANO_SCHEDULER),
    ("volcano", "volcano-system", "volcano-controllers", VOLCANO_CONTROLLERS),
    ("ascend-operator", "mindx-dl", "ascend-operator-manager", ASCEND_OPERATOR),
    ("clusterd", "mindx-dl", "clusterd", CLUSTERD),
    ("noded", "mindx-dl", "noded", NODED),
    ("device-plugin", "kube-system", "ascend-device-plugin-sa", DEVICE_PLUGIN),
)
