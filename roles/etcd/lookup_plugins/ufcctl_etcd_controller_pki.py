"""Lookup: what the etcd role's controller-side CA tasks would change (empty list: nothing).

    query('ufcctl_etcd_controller_pki', etcd_pki_controller_dir,
          renew_days=etcd_cert_renew_days, renew_issued_before=etcd_cert_renew_issued_before)

Reads the CA and ufcctl's client key and certificate where they live (the keys never leave this
plugin: only the list of problems is returned), and judges them with ufcctl/domain/etcd/pki.py, so
a converged run skips the seven tasks that would only confirm them. A renewal reason (ufcctl.crt
only, never the CA) reads `<dir>: ufcctl.crt: renew: ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.plugins.lookup import LookupBase

from ufcctl.domain.etcd.pki import ControllerFiles, Renewal, controller_problems
from ufcctl.engine.pki_files import bytes_of, mode_of, modes_of

FILES = ("ca.key", "ca.crt", "ufcctl.key", "ufcctl.crt")


def problems(directory: str, renewal: Renewal | None = None) -> list[str]:
    base = Path(directory)
    data = {name: bytes_of(base / name) for name in FILES}
    files = ControllerFiles(
        directory_mode=mode_of(base) if base.is_dir() else None,
        ca_key=data["ca.key"],
        ca_cert=data["ca.crt"],
        client_key=data["ufcctl.key"],
        client_cert=data["ufcctl.crt"],
        modes=modes_of(base, FILES),
    )
    return [f"{directory}: {problem}" for problem in controller_problems(files, renewal)]


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: Any = None, **kwargs: Any) -> list[str]:
        renewal = Renewal.from_role(kwargs.get("renew_days", 0), kwargs.get("renew_issued_before", ""))
        return [problem for term in terms for problem in problems(str(term), renewal)]
