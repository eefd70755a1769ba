"""ufcctl's cordon mark, defined once: the Node annotation a drain by ufcctl writes before it cordons
(its value says why), so that only ufcctl uncordons a node ufcctl cordoned and an operator's cordon from
before stays; and the value of a driver rollout's drain, shared by the engine (ufcctl/rollout/drain.py)
and roles/ascend_driver's in-play drain, so the role's admission uncordons a node either one drained.

Pure and stdlib-only, with no ufcctl import: roles/k8s_manifests/module_utils/ufcctl_cordon.py is a
relative symlink to this file (the ufcctl_kubectl module's drain, release, hold and untaint read it as
ansible.module_utils.ufcctl_cordon on the node), and roles/ascend_driver/vars/main/generated.yml carries
the driver rollout's value (`python -m ufcctl.app.role_vars`).
"""

from __future__ import annotations

# the annotation; its value is the reason (npu-driver, npu-fabric, upgrade-cluster, a runtime upgrade)
CORDON_MARK = "ufcctl.io/cordoned-for"
# the reason of an NPU driver rollout's drain, by the engine or by the role in its play
NPU_DRIVER = "npu-driver"
