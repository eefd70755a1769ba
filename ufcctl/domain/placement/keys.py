"""The Kubernetes names (labels, annotations, resources, ConfigMaps) the placement validator reads."""

from __future__ import annotations

# Sources: MindCluster docs/en/scheduling/api/{k8s,volcano,ascend_device_plugin,
# hccl.json_file_description}.md,
# ascend-for-volcano common/util/constants.go, plugin/tor.go (see docs/reference/ascend.md §3).
NPU_RESOURCE = "huawei.com/Ascend910"
ALLOCATION_ANNOTATION = "huawei.com/Ascend910"  # "Ascend910-0,Ascend910-1": physical chip ids
CHIP_NAME_PREFIX = "Ascend910-"
ACCELERATOR_TYPE_LABEL = "accelerator-type"
SUPER_POD_ID_ANNOTATION = "superPodID"
RANK_INDEX_ANNOTATION = "hccl/rankIndex"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
JOB_NAME_LABEL = "job-name"
TOR_AFFINITY_LABEL = "tor-affinity"
SP_BLOCK_ANNOTATION = "sp-block"

ASCEND_JOB_KIND = "AscendJob"
ASCEND_JOB_GROUP = "mindxdl.gitee.com"
POD_GROUP_KIND = "PodGroup"
POD_GROUP_GROUP = "scheduling.volcano.sh"

# ConfigMaps
SYSTEM_NAMESPACE = "kube-system"
DEVICE_INFO_PREFIX = "mindx-dl-deviceinfo-"
DEVICE_INFO_KEY = "DeviceInfoCfg"
UNHEALTHY_KEY = "huawei.com/Ascend910-Unhealthy"
NETWORK_UNHEALTHY_KEY = "huawei.com/Ascend910-NetworkUnhealthy"
TOR_CONFIGMAP = "basic-tor-node-cm"
TOR_INFO_KEY = "tor_info"
RANK_TABLE_PREFIX = "rings-config-"
RANK_TABLE_KEY = "hccl.json"

# Pod phases after which a pod holds nothing (contract: placed = nodeName set and not these).
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
