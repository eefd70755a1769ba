"""The etcd snapshot store both roles read (ufcctl/domain/nfs/backup_store.py): its clients, its URL, and
the default path roles/nfs_server declares."""

from __future__ import annotations

from pathlib import Path

import yaml

from ufcctl.domain.nfs import backup_store

ROOT = Path(__file__).resolve().parents[4]


def test_the_default_path_is_the_nfs_server_roles() -> None:
    defaults = yaml.safe_load((ROOT / "roles/nfs_server/defaults/main.yml").read_text())
    assert defaults["nfs_server_backup_path"] == backup_store.STORE_PATH


def test_url_is_the_first_nfs_servers_store_or_nothing() -> None:
    hostvars = {"nfs1": {"ansible_host": "10.0.0.5"}, "nfs2": {}}
    assert backup_store.url({"nfs_server": ["nfs1", "nfs2"]}, hostvars) == f"nfs://10.0.0.5{backup_store.STORE_PATH}"
    assert backup_store.url({"nfs_server": []}, hostvars) == ""
    assert backup_store.url({}, hostvars) == ""
    hostvars["nfs1"]["nfs_server_backup_path"] = "/tank/etcd/"
    assert backup_store.url({"nfs_server": ["nfs1"]}, hostvars) == "nfs://10.0.0.5/tank/etcd"
    hostvars["nfs1"]["nfs_server_backup_path"] = "{{ site_store }}"  # only Ansible renders it: the default
    assert backup_store.url({"nfs_server": ["nfs1"]}, hostvars) == f"nfs://10.0.0.5{backup_store.STORE_PATH}"
    hostvars["nfs1"]["nfs_server_backup_path"] = ""  # the server keeps no store
    assert backup_store.url({"nfs_server": ["nfs1"]}, hostvars) == ""


def test_clients_are_every_members_address_once() -> None:
    groups = {"etcd_core": ["a", "b"], "etcd_pods": ["b", "c"], "kube_node": ["w"]}
    hostvars = {"a": {"ansible_host": "10.0.0.2"}, "b": {"ansible_host": "10.0.0.1"}, "c": {}, "w": {}}
    assert backup_store.clients(groups, hostvars) == ["10.0.0.1", "10.0.0.2", "c"]
