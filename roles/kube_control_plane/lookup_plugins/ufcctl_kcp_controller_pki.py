"""Lookup: what kube_control_plane's controller-side CA tasks would change (empty list: nothing).

    query('ufcctl_kcp_controller_pki', kube_control_plane_pki_controller_dir)

Reads the CA key and certificate where they live (the key never leaves this plugin: only the list
of problems is returned) and judges them with ufcctl/domain/controlplane/pki.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.plugins.lookup import LookupBase

from ufcctl.domain.controlplane.pki import MODES, CaFiles, ca_problems
from ufcctl.engine.pki_files import bytes_of, mode_of, modes_of


def problems(directory: str) -> list[str]:
    base = Path(directory)
    files = CaFiles(
        directory_mode=mode_of(base) if base.is_dir() else None,
        key=bytes_of(base / "ca.key"),
        cert=bytes_of(base / "ca.crt"),
        modes=modes_of(base, MODES),
    )
    return [f"{directory}: {problem}" for problem in ca_problems(files)]


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: Any = None, **kwargs: Any) -> list[str]:
        return [problem for term in terms for problem in problems(str(term))]
