"""Every rule of `ufcctl inventory check`, in one order, and the check itself: the inventory package's own
rules (domain/inventory/: validate, addresses, connection, config_values, contradictions, names,
bgp_peers, arch) and the rules its neighbours own about it (domain/etcd/inventory_rules.py: sizes, ports,
data directories; domain/images/inventory_rules.py: registry caches; domain/images/registry_rules.py: the
site's mirror of each upstream registry).

The list is composed here, above the packages, so that the inventory package never imports etcd or
images while they import its model (tests/unit/test_import_graph.py: no two-way tie between domain
packages). Pure, like the rules.
"""

from __future__ import annotations

from ufcctl.domain.etcd.inventory_rules import check_etcd_data_dirs, check_etcd_ports, check_etcd_sizes
from ufcctl.domain.images.inventory_rules import check_registry_caches
from ufcctl.domain.images.registry_rules import RULES as IMAGE_REGISTRY_RULES
from ufcctl.domain.inventory.addresses import RULES as ADDRESS_RULES
from ufcctl.domain.inventory.arch import RULES as ARCH_RULES
from ufcctl.domain.inventory.bgp_peers import RULES as BGP_RULES
from ufcctl.domain.inventory.config_values import RULES as VALUE_RULES
from ufcctl.domain.inventory.connection import RULES as CONNECTION_RULES
from ufcctl.domain.inventory.contradictions import RULES as CONTRADICTION_RULES
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.names import check_path_names
from ufcctl.domain.inventory.validate import (
    Rule,
    ValidationReport,
    check_control_plane,
    check_npu_fabric,
    check_npu_nodes,
    check_topology_values,
    check_vip,
    run_rules,
)

RULES: tuple[Rule, ...] = (
    check_control_plane,
    check_etcd_sizes,
    check_etcd_ports,
    check_vip,
    check_npu_nodes,
    check_topology_values,
    check_npu_fabric,
    check_registry_caches,
    check_path_names,
)
# Hosts that are one machine (addresses.py), connection variables and controller-side lookups
# (connection.py).
RULES += ADDRESS_RULES + CONNECTION_RULES
# Values that land in config files and kubelet flags, each checked as what it is (config_values.py), and
# two etcd clusters never sharing a data directory.
RULES += VALUE_RULES + (check_etcd_data_dirs,) + CONTRADICTION_RULES
# ufc_arch and the role variables that name an architecture agree (inventory/arch.py; issue 44, D12).
RULES += ARCH_RULES
# The site's mirror of each upstream registry, and the single prefix it replaced (images/registry_rules.py).
RULES += IMAGE_REGISTRY_RULES
# Rules of what a deploy builds, checked by `ufcctl inventory check` and before a deploy, not by every
# command that reads the inventory (a day-2 command on a running cluster does not build its network):
# Calico's BGP peers in tor mode, a ToR peer per npu_tor_id and an extra peer per other node (bgp_peers.py).
DEPLOY_RULES: tuple[Rule, ...] = BGP_RULES


def validate(inv: Inventory, deploy: bool = False) -> ValidationReport:
    """Check every rule (with `deploy`, DEPLOY_RULES too); nothing is contacted and nothing stops at the
    first problem."""
    return run_rules(inv, RULES + (DEPLOY_RULES if deploy else ()))
