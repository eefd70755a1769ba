"""Action plugin: validate a component's rendered manifests on the controller, then write them.

Runs in the controller's Python (action plugins always do), so it uses ufcctl's own code
(ufcctl/domain/manifests) and the kubernetes-validate schemas installed beside it, whatever
interpreter the managed hosts use.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

try:
    from ufcctl.domain.manifests.component import prepare_component
    from ufcctl.engine.k8s_schemas import KubernetesSchemas
    from ufcctl.errors import UfcError
except ImportError:  # plain ansible-playbook from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from ufcctl.domain.manifests.component import prepare_component
    from ufcctl.engine.k8s_schemas import KubernetesSchemas
    from ufcctl.errors import UfcError


def _write(dest: Path, files: dict[str, str], check: bool) -> tuple[list[str], list[str]]:
    """(written, removed) file names; writes nothing in check mode. Stale *.yaml files are removed."""
    written = [n for n, t in files.items() if not (dest / n).is_file() or (dest / n).read_text() != t]
    removed = sorted(p.name for p in dest.glob("*.yaml") if p.name not in files) if dest.is_dir() else []
    if not check:
        dest.mkdir(parents=True, exist_ok=True)
        for name in written:
            (dest / name).write_text(files[name], encoding="utf-8")
        for name in removed:
            (dest / name).unlink()
    return written, removed


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _VALID_ARGS = frozenset(("component", "rendered", "namespaces", "kube_version", "crd_files", "dest"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        component = str(args["component"])
        try:
            schemas = KubernetesSchemas(str(args["kube_version"]))
        except UfcError as err:
            return {**result, "failed": True, "msg": f"{err.message} ({err.hint})"}
        paths = sorted({p for pattern in args.get("crd_files") or [] for p in glob.glob(str(pattern))})
        crd_texts = {Path(p).name: Path(p).read_text(encoding="utf-8") for p in paths}
        rendered = {str(k): str(v) for k, v in (args.get("rendered") or {}).items()}
        namespaces = [str(n) for n in args.get("namespaces") or []]
        prepared = prepare_component(rendered, namespaces, schemas, crd_texts)
        if not prepared.ok:
            lines = [str(p) for p in prepared.problems]
            head = f"{component}: {len(lines)} problem(s) in the manifests; nothing written or applied"
            return {**result, "failed": True, "msg": "\n".join([head, *lines]), "problems": lines}
        dest = Path(str(args["dest"]))
        written, removed = _write(dest, dict(prepared.files), bool(self._task.check_mode))
        return {
            **result,
            "changed": bool(written or removed),
            "dest": str(dest),
            "order": list(prepared.order),
            "files": [str(dest / name) for name in prepared.order],
            "objects": prepared.objects,
            "written": written,
            "removed": removed,
            "kube_version": schemas.version,
            "msg": f"{component}: {prepared.objects} objects valid against Kubernetes {schemas.version}",
        }
