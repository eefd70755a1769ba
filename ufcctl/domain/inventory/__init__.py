"""Inventory model: read, resolved (as Ansible does), validated, and summarised by topology."""
