"""The kinds of rollout this ufcctl ships, listed once: the top of the rollout package's imports.

Nothing in `ufcctl/rollout/` imports this module (a kind imports kind.py and the engine's types,
never the list it is on); the commands pass `KINDS` to `runs.resume`, which finds a stored run's
kind in it by name.
"""

from __future__ import annotations

from ufcctl.rollout.kind import KindRegistry
from ufcctl.rollout.kinds import (
    deploy_nodes,
    npu_check,
    preheat_images,
    remove_control_plane,
    remove_nodes,
    upgrade_cluster,
    upgrade_drivers,
)

KINDS = KindRegistry((upgrade_drivers.KIND, deploy_nodes.KIND, preheat_images.KIND, remove_nodes.KIND,
                     upgrade_cluster.KIND, remove_control_plane.KIND, npu_check.KIND))
