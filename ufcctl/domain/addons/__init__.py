"""Cluster add-ons computed from the inventory: ToR map, node labels, MindCluster version compatibility."""
