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
    "ansible_failed_result", "ansible_sudo_pass", "ansible_become_pass", "ansible_become_password",
    "ansible_password", "ansible_ssh_pass",
})
IGNORED_PREFIXES = ("ansible_play_", "ufc_rollout_", "ufc_node_state")
# The groups whose members a node-phase role may read (the cluster's hosts: the first control plane,
# the NFS server, the monitoring hosts, the registry caches, the LB, etcd).
CONTEXT_GROUPS = ("kube_control_plane", "apiserver_lb", "nfs_server", "monitoring", "registry_cache",
                  "etcd_core", "etcd_events", "etcd_pods")
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


def inputs_digest(task_vars: Mapping[str, Any], code: Iterable[str], controller_files: Iterable[str]) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(host_inputs(task_vars), sort_keys=True, default=repr).encode())
    for path in sorted(set(controller_files)):
        try:
            with open(path, "rb") as handle:
                digest.update(path.encode() + b"\0" + hashlib.sha256(handle.read()).digest())
        except OSError:
            digest.update(path.encode() + b"\0missing")
    domain = domain_dir()
    digest.update(tree_digest([*sorted(set(code)), *([domain] if domain else [])]).encode())
    return digest.hexdigest()


class ActionModule(ActionBase):
    _supports_check_mode = True
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        mode = args.pop("mode", "probe")
        path = args.pop("path")
        if mode == "probe":
            code = [str(p) for p in args.pop("code", [])]
            files = [str(p) for p in args.pop("controller_files", [])]
            full = str(args.pop("full", False)).lower() in ("true", "yes", "1")
            digest = inputs_digest(task_vars, code, files)
            if full:
                result.update(changed=False, at_target=False, digest=digest,
                              why=["a full run was asked for (--full)"])
                return result
            module_args = {"mode": "probe", "path": path, "digest": digest}
        else:
            module_args = {"mode": "record", "path": path, **args}
            digest = args.get("digest", "")
        out = self._execute_module(module_name="ufc_node_state", module_args=module_args, task_vars=task_vars)
        result.update(out)
        result["digest"] = digest
        result["changed"] = False
        return result
