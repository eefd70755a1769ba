"""Action plugin: one component from templates to the cluster in one task.

Checks the name, renders the templates (the calling role's variables), validates every object,
checks it against the run's nodes and CRDs (ufcctl/domain/manifests/preapply.py), writes the
files under .ufc/manifests/<inventory>/<component>/ on the controller, then applies them
through the ufcctl_kubectl module on the apply host (the task is delegated there), or says in the
result's message why the apply is SKIPPED. Runs in the controller's Python, so it uses ufcctl's own
code (ufcctl/domain/manifests) and the kubernetes-validate schemas installed beside it.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core < 2.19 templates every string
    def trust_as_template(value: Any) -> Any:
        return value

from ufcctl.domain.manifests.apply import COMPONENT_NAME, decide_apply, report_line
from ufcctl.domain.manifests.component import prepare_component
from ufcctl.domain.manifests.preapply import label_target_problems, planned_nodes
from ufcctl.engine.k8s_schemas import KubernetesSchemas
from ufcctl.errors import UfcError

# The role's variables this action reads (k8s_manifests/defaults/main.yml), templated in the task's context.
SETTINGS = (
    "kube_version", "crd_files", "state_dir", "inventory_name", "apply", "apply_host", "kubectl",
    "kubeconfig", "cluster_crds", "npu_taint", "tor_label",
)
# The CRDs applied by the components before this one in the same run (a fact, set on the apply host).
RUN_CRDS = "__k8s_manifests_run_crds"
LABEL_PLAN = "plan.json"
# CRDs shipped by the roles beside this one, read whatever role or playbook calls the action.
SHIPPED_CRDS = str(Path(__file__).resolve().parents[2] / "*" / "files" / "crds" / "*.yaml")


class Failed(Exception):
    """Ends the task with `msg` (and any extra result keys)."""

    def __init__(self, msg: str, **extra: Any) -> None:
        super().__init__(msg)
        self.result = {"failed": True, "msg": msg, **extra}


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
    _VALID_ARGS = frozenset(("component", "templates", "namespaces", "labels", "note"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        try:
            return {**result, **self._component(task_vars)}
        except Failed as failed:
            return {**result, **failed.result}

    def _setting(self, name: str) -> Any:
        return self._templar.template(trust_as_template(f"{{{{ k8s_manifests_{name} }}}}"))

    def _component(self, task_vars: dict[str, Any]) -> dict[str, Any]:
        args = self._task.args
        component = str(args.get("component") or "")
        if not COMPONENT_NAME.match(component):
            raise Failed(
                f"k8s_manifests: component {json.dumps(component)}: the name must be lower-case letters, "
                "digits and '-'"
            )
        settings = {name: self._setting(name) for name in SETTINGS}
        dest = Path(str(settings["state_dir"])) / "manifests" / str(settings["inventory_name"]) / component
        check = bool(self._task.check_mode)
        if args.get("labels") is not None:
            plan = args["labels"]
            targets = label_target_problems(plan["groups"], self._nodes(settings, task_vars))
            if targets:
                raise Failed(f"{component}: " + "; ".join(targets), problems=targets)
            files = {LABEL_PLAN: json.dumps(plan, indent=4, sort_keys=True) + "\n"}
            validated = f"{plan['nodes']} nodes planned"
            work: dict[str, Any] = {"mode": "label", "label_args": [g["args"] for g in plan["groups"]]}
            out: dict[str, Any] = {}
        else:
            files, order, validated, out = self._validated(component, settings, task_vars)
            crds = out.pop("crds")
            manifests = [{"name": n, "text": files[n], "crds": list(crds.get(n, ()))} for n in order]
            work = {"mode": "apply", "manifests": manifests}
        written, removed = _write(dest, files, check)
        out.update(dest=str(dest), written=written, removed=removed)
        skipped, applied = self._apply(component, settings, work, task_vars, out)
        out["msg"] = report_line(
            component, validated=validated, dest=str(dest), apply_host=str(settings["apply_host"] or ""),
            skipped=skipped, applied=applied, note=str(args.get("note") or ""),
        )
        # shown without -v, as the debug task that reported the outcome before this action was
        out["_ansible_verbose_always"] = True
        out["changed"] = bool(written or removed or out.get("applied") or out.get("labelled"))
        return out

    def _nodes(self, settings: dict[str, Any], task_vars: dict[str, Any]) -> list[Any]:
        """The run's nodes with the labels and taints ufcctl gives them (inventory groups and vars)."""
        taint = settings["npu_taint"] if isinstance(settings["npu_taint"], dict) else {}
        return planned_nodes(task_vars.get("groups") or {}, task_vars.get("hostvars") or {},
                             npu_taint=taint, tor_label=str(settings["tor_label"] or ""))

    def _validated(
        self, component: str, settings: dict[str, Any], task_vars: dict[str, Any]
    ) -> tuple[dict[str, str], list[str], str, dict[str, Any]]:
        """Rendered, checked files (name -> text), their apply order, and a summary; Failed on any problem."""
        templates = self._task.args.get("templates")
        if not templates:
            role = getattr(self._task, "_role", None)
            if role is None:
                raise Failed(
                    f"k8s_manifests: component {component}: say where its templates are (templates:)"
                )
            templates = str(Path(role._role_path) / "templates" / "manifests")
        sources = sorted(glob.glob(str(Path(str(templates)) / "*.yaml.j2")))
        if not sources:
            raise Failed(
                f"k8s_manifests: component {component} with templates {templates}: the directory must "
                "hold *.yaml.j2 files (found 0)"
            )
        lookup = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        texts = lookup.run(sources, variables=task_vars)
        rendered = {Path(s).name: str(t) for s, t in zip(sources, texts, strict=True)}
        try:
            schemas = KubernetesSchemas(str(settings["kube_version"]))
        except UfcError as err:
            raise Failed(f"{err.message} ({err.hint})") from err
        # the calling role's files/crds are applied with the component (before its other files);
        # every other role's, and k8s_manifests_crd_files, only validate
        role = getattr(self._task, "_role", None)
        own_glob = str(Path(role._role_path) / "files" / "crds" / "*.yaml") if role else ""
        own_paths = sorted(glob.glob(own_glob)) if own_glob else []
        patterns = [SHIPPED_CRDS, *(settings["crd_files"] or [])]
        paths = sorted({p for pattern in patterns for p in glob.glob(str(pattern))} - set(own_paths))
        crd_texts = {Path(p).name: Path(p).read_text(encoding="utf-8") for p in paths}
        own_crds = {Path(p).name: Path(p).read_text(encoding="utf-8") for p in own_paths}
        namespaces = [str(n) for n in self._task.args.get("namespaces") or []]
        earlier = [str(n) for n in task_vars.get(RUN_CRDS) or []]
        nodes = self._nodes(settings, task_vars)
        prepared = prepare_component(
            rendered, namespaces, schemas, crd_texts, own_crd_texts=own_crds, nodes=nodes,
            available_crds={*earlier, *(str(n) for n in settings["cluster_crds"] or [])},
        )
        if not prepared.ok:
            lines = [str(p) for p in prepared.problems]
            head = f"{component}: {len(lines)} problem(s) in the manifests; nothing written or applied"
            raise Failed("\n".join([head, *lines]), problems=lines)
        summary = f"{prepared.objects} objects valid against Kubernetes {schemas.version}"
        if nodes:
            summary += f", placeable on the run's {len(nodes)} nodes"
        applied_crds = [n for names in prepared.crds.values() for n in names]
        out = {"objects": prepared.objects, "crds": prepared.crds,
               "ansible_facts": {RUN_CRDS: list(dict.fromkeys([*earlier, *applied_crds]))}}
        return dict(prepared.files), list(prepared.order), summary, out

    def _apply(
        self,
        component: str,
        settings: dict[str, Any],
        work: dict[str, Any],
        task_vars: dict[str, Any],
        out: dict[str, Any],
    ) -> tuple[str, str]:
        """(why the apply was skipped, what it changed); runs ufcctl_kubectl on the delegated apply host."""
        decision = decide_apply(
            enabled=boolean(settings["apply"], strict=False),
            check_mode=bool(self._task.check_mode),
            apply_host=str(settings["apply_host"] or ""),
            probe=task_vars.get("__k8s_manifests_probe"),
        )
        kube = {"kubectl": settings["kubectl"], "kubeconfig": settings["kubeconfig"]}
        if decision.probe:  # the role's probe task did not run for this play: ask now
            probed = self._execute_module("ufcctl_kubectl", {"mode": "probe", **kube}, task_vars=task_vars)
            if probed.get("failed"):
                host = settings["apply_host"]
                raise Failed(f"{component}: probing kubectl on {host} failed: {probed.get('msg')}")
            decision = decide_apply(
                enabled=True, check_mode=False, apply_host=str(settings["apply_host"]), probe=probed
            )
        if not decision.apply:
            out["apply"] = "skipped"
            return decision.reason, ""
        done = self._execute_module("ufcctl_kubectl", {**work, **kube}, task_vars=task_vars)
        if done.get("failed"):
            partial = {k: done[k] for k in ("applied", "unchanged", "labelled") if k in done}
            raise Failed(f"{component}: {done.get('msg')}", **partial)
        out["apply"] = "applied"
        if work["mode"] == "label":
            out["labelled"] = labelled = done.get("labelled", 0)
            calls = len(work["label_args"])
            return "", f"labels ({labelled} of {calls} kubectl label calls changed nodes)" if labelled else ""
        out["applied"], out["unchanged"] = done.get("applied", []), done.get("unchanged", [])
        files = ", ".join(out["applied"])
        return "", f"{files} (server-side, field manager ufcctl)" if files else ""
