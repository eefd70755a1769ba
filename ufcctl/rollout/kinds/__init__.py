"""Kinds of rollout, one module each (what to run, its marker task, its extra vars and gate hooks).

Importing this package registers every kind in `ufcctl.rollout.kind.KINDS`; `resume` finds a
stored run's kind there by name.
"""

from ufcctl.rollout.kinds import deploy_nodes, preheat_images, upgrade_drivers

__all__ = ["deploy_nodes", "preheat_images", "upgrade_drivers"]
