"""Jinja filter: the certificate files a host holds, from ufcctl's one list (ufcctl/domain/certs)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ufcctl.domain.certs.catalog import expected_on_host


def ufcctl_cert_paths(group_names: Iterable[str], etcd_pki_dir: str = "", etcd_apiserver_pki_dir: str = "",
                      registry_cache_scheme: str = "https") -> list[str]:
    """Every certificate path the catalog lists for a host in these groups, optional ones included
    (ufcctl-cert-metrics leaves out what is absent)."""
    hostvars = {"etcd_pki_dir": str(etcd_pki_dir or ""),
                "etcd_apiserver_pki_dir": str(etcd_apiserver_pki_dir or ""),
                "registry_cache_scheme": str(registry_cache_scheme or "https")}
    return [e.path for e in expected_on_host("", [str(g) for g in group_names], hostvars)]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_cert_paths": ufcctl_cert_paths}
