"""Action `ufc_node_state`: deploy-nodes' fast path, the controller's half (library/ufc_node_state.py).

`mode: probe` computes the digest of the run's inputs for this host and asks the node, in one module
run, whether its record of the last full run carries the same digest and whether the node still looks
as it did then. `mode: record` (the play's last task, after a full run succeeded) writes that record
with the digest the probe computed. docs/architecture.md decision 18 says what is and is not covered.

The digest is a sha256 over:
- every variable of the host as Ansible holds it before templating (inventory host and group vars,
  the play's role defaults and vars, extra vars such as the registry cache index), except Ansible's
  run-specific magic variables (IGNORED, IGNORED_PREFIXES): a template's text is hashed, and what it
  reads is hashed too: the host's own variables and `group_names`, the members of the cluster groups
  (CONTEXT_GROUPS; the node phase's roles read no other host's variables), and the controller files
  the task names (`controller_files`: the cluster CA);
- the content of the code that renders: the directories the task names (`code`: the playbooks and
  the roles) and ufcctl's domain package, which the roles' filters import.
Not hashed: the join token (`kube_node`'s only per-run input; a joined node no longer uses it: the
probe requires the kubelet's kubeconfig) and Ansible's own version.

Standard library only (like ufc_gate): it must load where ufcctl cannot be imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.plugins.action import ActionBase

# Magic variables Ansible sets per run, per play or per task: never inputs of a role's work.
IGNORED = frozenset({
    "hostvars", "groups", "vars", "omit", "environment", "playbook_dir", "inventory_dir", "inventory_file",
    "play_hosts", "role_names", "role_name", "role_path", "role_uuid", "ansible_config_file",
    "ansible_playbook_python", "ansible_run_tags", "ansible_skip_tags", "ansible_check_mode",
    "ansible_diff_mode", "ansible_forks", "ansible_inventory_sources", "ansible_limit", "ansible_verbosity",
    "ansible_version", "ansible_search_path", "ansible_facts", "ansible_local", "ansible_role_names",
    "ansible_dependent_role_names", "ansible_role_name", "ansible_collection_name",
    "ansible_parent_role_names", "ansible_parent_role_paths", "ansible_loop_var", "ansible_index_var",
    "ansible_loop", "ansible_failed_task",
    # set by the strategy on every task (StrategyBase.add_tqm_variables): the chunk's hosts in the
    # order the engine started them, which changes from run to run (longest recorded first)
    "ansible_current_hosts", "ansible_failed_hosts",
    "ansible_failed_result", "ansible_sudo_pass", "ansible_become_pass", "ansible_become_password",
    "ansible_password", "ansible_ssh_pass",
})
IGNORED_PREFIXES = ("ansible_play_", "ufc_rollout_", "ufc_node_state")
# The groups whose members a node-phase role may read (the cluster's hosts: the first control plane,
# the NFS server, the monitoring hosts, the registry caches, the LB, etcd).
CONTEXT_GROUPS = ("kube_control_plane", "apiserver_lb", "nfs_server", "monitoring", "registry_cache",
                  "etcd_core", "etcd_events", "etcd_pods")
# the node's one-line report the rollout engine keeps as its reason (ufcctl/rollout/chunks.py, same name)
NODE_REPORT = "ufc_node_report"
# the module's reason for a digest that differs (library/ufc_node_state.py judge), made specific here
INPUTS_CHANGED = "the run's inputs changed"
CODE_SKIP = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache")


def host_inputs(task_vars: Mapping[str, Any]) -> dict[str, Any]:
    """The host's variables that can change what the roles do, untemplated."""
    inputs = {k: v for k, v in task_vars.items()
              if k not in IGNORED and not k.startswith(IGNORED_PREFIXES)}
    groups = task_vars.get("groups") or {}
    inputs["__groups"] = {g: list(groups.get(g) or []) for g in CONTEXT_GROUPS}
    return inputs


def tree_digest(paths: Iterable[str]) -> str:
    """sha256 over every file under the paths (names relative to each path, and contents)."""
    digest = hashlib.sha256()
    for top in paths:
        if os.path.isfile(top):
            with open(top, "rb") as handle:
                digest.update(b"F" + os.path.basename(top).encode() + b"\0" + handle.read())
            continue
        for directory, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in CODE_SKIP)
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(directory, name)
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                digest.update(b"F" + os.path.relpath(path, top).encode() + b"\0" + data)
    return digest.hexdigest()


def domain_dir() -> str | None:
    """ufcctl's domain package (the roles' filters import it), located without importing ufcctl."""
    spec = importlib.util.find_spec("ufcctl")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "domain")
    return path if os.path.isdir(path) else None


def _short(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def input_parts(task_vars: Mapping[str, Any], code: Iterable[str],
                controller_files: Iterable[str]) -> dict[str, str]:
    """A short digest of each input by name: `var:<name>` per host variable (and `var:__groups`),
    `file:<path>` per controller file, `code` for the code's tree. The record keeps them, so a probe
    that misses can say which inputs changed (`changed_inputs`)."""
    parts = {"var:" + k: _short(json.dumps(v, sort_keys=True, default=repr).encode())
             for k, v in host_inputs(task_vars).items()}
    for path in sorted(set(controller_files)):
        try:
            with open(path, "rb") as handle:
                parts["file:" + path] = _short(handle.read())
        except OSError:
            parts["file:" + path] = "missing"
    domain = domain_dir()
    parts["code"] = tree_digest([*sorted(set(code)), *([domain] if domain else [])])
    return parts


def parts_digest(parts: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(parts), sort_keys=True).encode()).hexdigest()


def inputs_digest(task_vars: Mapping[str, Any], code: Iterable[str], controller_files: Iterable[str]) -> str:
    return parts_digest(input_parts(task_vars, code, controller_files))


def changed_inputs(recorded: Mapping[str, str], now: Mapping[str, str], limit: int = 8) -> str:
    """Which inputs differ from the record's, for the probe's `why` (names only, never values)."""
    names = sorted(k for k in set(recorded) | set(now) if recorded.get(k) != now.get(k))
    shown = ", ".join(n.removeprefix("var:") if n.startswith("var:") else n for n in names[:limit])
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"inputs changed since the last full run: {shown}{more}" if names else ""


def node_report(at_target: bool, why: list[str]) -> str:
    """The node's reason in the rollout's summary (rollout/chunks.py NODE_REPORT): which path, and why."""
    if at_target:
        return "at target (fast path)"
    return "full path: " + "; ".join(why[:3]) + ("; ..." if len(why) > 3 else "")


class ActionModule(ActionBase):
    _supports_check_mode = True
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        mode = args.pop("mode", "probe")
        path = args.pop("path")
        parts: dict[str, str] = {}
        if mode == "probe":
            code = [str(p) for p in args.pop("code", [])]
            files = [str(p) for p in args.pop("controller_files", [])]
            full = str(args.pop("full", False)).lower() in ("true", "yes", "1")
            parts = input_parts(task_vars, code, files)
            digest = parts_digest(parts)
            if full:
                why = ["a full run was asked for (--full)"]
                result.update(changed=False, at_target=False, digest=digest, parts=parts, why=why,
                              **{NODE_REPORT: node_report(False, why)})
                return result
            module_args = {"mode": "probe", "path": path, "digest": digest}
        else:
            module_args = {"mode": "record", "path": path, **args}
            digest = args.get("digest", "")
        out = self._execute_module(module_name="ufc_node_state", module_args=module_args, task_vars=task_vars)
        recorded = out.pop("recorded_parts", None)
        if isinstance(recorded, dict) and out.get("why"):
            named = changed_inputs(recorded, parts)
            out["why"] = [named if w.startswith(INPUTS_CHANGED) and named else w for w in out["why"]]
        result.update(out)
        result["digest"] = digest
        if mode == "probe":
            why = [str(w) for w in out.get("why") or []]
            result[NODE_REPORT] = node_report(bool(out.get("at_target")), why)
            if not out.get("at_target"):
                result["parts"] = parts  # for the record the full path writes (tasks/node-state-record.yml)
        result["changed"] = False
        return result
